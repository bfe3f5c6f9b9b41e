import hashlib

from thesis_lib import get_config
from thesis_lib.data import world
from thesis_lib.data.datasets import load_karpathy_split
from thesis_lib.data.world_files import ensure_world, summary


def _digest(root):
    h = hashlib.sha256()
    for f in sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("tokenizer-")):
        h.update(str(f.relative_to(root)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path, smoke_world):
    cfg = get_config("smoke").data.world
    again = ensure_world(cfg, tmp_path / "again")
    assert _digest(again) == _digest(smoke_world)
    import dataclasses
    other = ensure_world(dataclasses.replace(cfg, seed=1), tmp_path / "other")
    assert _digest(other) != _digest(smoke_world)


def test_world_is_read_by_the_real_loaders(smoke_world):
    cfg = get_config("smoke").data.world
    coco = load_karpathy_split(smoke_world / "coco/dataset_coco.json", smoke_world / "coco/images", "test")
    flickr = load_karpathy_split(smoke_world / "flickr30k/dataset_flickr30k.json",
                                 smoke_world / "flickr30k/flickr30k-images", "test")
    train = load_karpathy_split(smoke_world / "coco/dataset_coco.json", smoke_world / "coco/images", "train")
    assert (len(coco), len(flickr), len(train)) == (cfg.n_coco_test, cfg.n_flickr_test, cfg.n_train)
    assert all(len(set(r.captions)) == len(r.captions) >= 5 for r in coco + flickr)   # five different captions


def test_summary_counts(smoke_world):
    s = summary(smoke_world)
    cfg = get_config("smoke").data.world
    assert s["coco/test"]["images"] == cfg.n_coco_test and s["flickr30k/test"]["captions"] == 5 * cfg.n_flickr_test
    assert s["imagenet/val"] == {"images": 2 * 48, "classes": 48}
    assert s["corpus"]["captions"] == cfg.n_text_corpus


def test_image_corpus_is_half_scenes_half_object_centric(smoke_world):
    import json
    entries = json.loads((smoke_world / "corpus/labels.json").read_text())["images"]
    kinds = [e["kind"] for e in entries]
    assert kinds[:4] == ["scene", "object", "scene", "object"] and kinds.count("object") == len(kinds) // 2
    assert all(1 <= len(e["labels"]) <= 2 for e in entries if e["kind"] == "object")   # + a small distractor


def test_styles_differ_visibly():
    import numpy as np
    rng = np.random.default_rng(0)
    coco = [len(world.captions(world.sample_scene(rng, "coco"), rng)[0].split()) for _ in range(50)]
    flickr = [len(world.captions(world.sample_scene(rng, "flickr"), rng)[0].split()) for _ in range(50)]
    assert np.mean(flickr) > 1.5 * np.mean(coco)                # Flickr-like captions are longer


def test_scene_labels_name_its_objects():
    import numpy as np
    rng = np.random.default_rng(3)
    scene = world.sample_scene(rng, "coco", things=[("star", "red", "small"), ("circle", "blue", "large")])
    on = {world.CLASSES[i] for i in np.flatnonzero(scene.labels())}
    assert on == {"red star", "blue circle"}
    picture = np.asarray(world.render(scene, 32, rng))
    assert picture.shape == (32, 32, 3)


def test_each_shape_has_a_surface_of_its_own():
    """Categories have a look of their own (stripes at three angles, checks, dots, plain), with both tones."""
    import numpy as np
    rng = np.random.default_rng(0)
    masks = {shape: world._pattern(shape, 64, 16, 0.0, rng) for shape in world.SHAPES}
    assert not masks["circle"].any()
    for shape in set(world.SHAPES) - {"circle"}:
        assert 0.1 < masks[shape].mean() < 0.6, shape
    flat = {k: v.tobytes() for k, v in masks.items()}
    assert len(set(flat.values())) == len(world.SHAPES)
    stripes = masks["square"]                                    # stripes across x, constant down a column
    assert (stripes == stripes[:1]).all() and not (stripes == stripes[:, :1]).all()


def test_a_caption_names_only_what_its_scene_shows_and_five_captions_name_it_all():
    """The ground truth of true ITM negatives (world.Descriptions): a caption's named colour-shape pairs are the
    scene's; the union over its five captions is the whole scene for almost every scene."""
    import numpy as np
    import torch
    rng = np.random.default_rng(7)
    complete, scenes = 0, [world.sample_scene(rng, style) for style in ("coco", "flickr") for _ in range(300)]
    captions = [world.captions(s, rng) for s in scenes]
    for scene, caps in zip(scenes, captions):
        truth = scene.labels().astype(bool)
        named = np.stack([world.named_classes(c) for c in caps])
        assert named.any(1).all() and not (named & ~truth).any()          # each names something, nothing absent
        complete += np.array_equal(named.any(0), truth)
    assert complete >= 0.99 * len(scenes)
    flat = [c for caps in captions for c in caps]
    d = world.Descriptions.of(flat, torch.arange(len(scenes)).repeat_interleave(5), len(scenes))
    fits = d.fits(torch.arange(len(scenes)), torch.arange(len(flat)))
    own = torch.arange(len(scenes))[:, None] == torch.arange(len(flat))[None, :] // 5
    assert fits[own].all() and fits.sum() > own.sum()                   # another scene's caption can fit too
    wrong = (np.stack([world.named_classes(c) for c in flat])[None]
             & ~np.stack([s.labels() for s in scenes]).astype(bool)[:, None])
    assert not (fits.numpy() & wrong.any(-1)).any()                      # what fits names nothing absent
