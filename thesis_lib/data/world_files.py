"""Writes the embedded world to disk in the real datasets' formats, once per config, and summarises it.

Layout under ``data_dir()/world-<fingerprint>/`` (the same loaders read it as read the real data):

* ``coco/dataset_coco.json`` + ``coco/images/{train2014,val2014}/COCO_*.jpg``: Karpathy format, splits
  train / restval / val / test (5K test images; 0.2 % of them have a sixth caption, like COCO's 25,010).
* ``flickr30k/dataset_flickr30k.json`` + ``flickr30k/flickr30k-images/*.jpg``: Karpathy format, 1K test images.
* ``imagenet/val/<wnid>/*.JPEG`` + ``imagenet/classnames.json`` + ``imagenet/templates.json``: the zero-shot split.
* ``corpus/images/*.jpg`` + ``corpus/labels.json`` (image-only) and ``corpus/captions.txt`` (text-only). Half of
  the image corpus is scenes like the caption sets', half object-centric pictures like the ImageNet stand-in's
  (``kind`` "scene" | "object" per entry), as the real encoders and teacher were pretrained on ImageNet-1K.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
from filelock import FileLock
from tqdm import tqdm

from ..cache import fingerprint
from ..config import WorldConfig
from ..errors import DataError
from ..paths import data_dir, show_progress
from . import world

JPEG_QUALITY = 90
WORLD_VERSION = 3   # bump when the world's code draws other pictures or captions (2: patterned object surfaces,
                    # 3: object-centric half of the image corpus)
PARTIAL_MARKER = "WORLD_BEING_WRITTEN"   # in a world folder still being written; only such a folder is removed
_SPLIT_STREAMS = {"coco": 1, "flickr": 2, "imagenet": 3, "corpus_images": 4, "corpus_text": 5}


def world_folder(cfg: WorldConfig, root: str | os.PathLike | None = None) -> Path:
    return (Path(root) if root
            else data_dir() / f"world-{fingerprint({'version': WORLD_VERSION, **dataclasses.asdict(cfg)})}")


def _check_foreign(root: Path) -> None:
    if root.exists() and not (root / "DONE").exists() and (not root.is_dir() or any(root.iterdir())):
        raise DataError(f"{root} is not a generated world (it has no DONE marker) and is not empty; the demo and smoke "
                        "scales generate their own data, so leave data_root unset there (it is for the real data at "
                        "the thesis scale) or name an empty or new folder")


def world_root(cfg: WorldConfig, root: str | os.PathLike | None = None) -> Path:
    """The generated world's folder; an error naming the preparation step if it is not there (never generates)."""
    root = world_folder(cfg, root)
    _check_foreign(root)
    if not (root / "DONE").exists():
        raise DataError(f"the embedded world is not generated at {root}; generate it first: python -m "
                        "thesis_lib.training.prepare --preset <preset> "
                        "(thesis_lib.training.prepare.prepare_assets(cfg)); "
                        "run_experiment and the notebooks do this themselves")
    return root


def ensure_world(cfg: WorldConfig, root: str | os.PathLike | None = None) -> Path:
    """The world's folder, generated unless it exists. Safe against concurrent callers and interrupted writes:
    it is written to a temporary folder under a lock and renamed into place when complete. A ``root`` given by the
    user is used only if it holds a finished world or is empty or absent: nothing the project did not create is ever
    removed or overwritten."""
    root = world_folder(cfg, root)
    if (root / "DONE").exists():
        return root
    _check_foreign(root)
    root.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(root) + ".lock"):
        if (root / "DONE").exists():
            return root
        tmp = root.with_name(root.name + ".partial")
        if tmp.exists():
            if not ((tmp / PARTIAL_MARKER).exists() or (tmp / "DONE").exists()):
                raise DataError(f"{tmp} exists but holds no marker of this project's world writer (a folder of "
                                "yours, or a leftover of an older version); move it away to generate the world")
            shutil.rmtree(tmp)                                       # our own unfinished world: start it over
        tmp.mkdir()
        (tmp / PARTIAL_MARKER).write_text("")
        write_world(cfg, tmp)
        (tmp / PARTIAL_MARKER).unlink()
        (tmp / "DONE").write_text(json.dumps(dataclasses.asdict(cfg), indent=1))
        if root.exists():
            root.rmdir()                                             # empty, checked above
        os.replace(tmp, root)
    return root


def _rng(cfg: WorldConfig, stream: str) -> np.random.Generator:
    return np.random.default_rng([cfg.seed, _SPLIT_STREAMS[stream]])


def _tokens(caption: str) -> list[str]:  # Karpathy's "tokens": lower-case words without punctuation
    return re.findall(r"[a-z0-9]+", caption.lower())


def _save(img, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path, format="JPEG", quality=JPEG_QUALITY)


def _karpathy(cfg, style, splits, root: Path, name_of) -> dict:
    rng = _rng(cfg, style)
    images, sentid = [], 0
    for split, count in splits:
        n_six = round(count * 0.002) if (style == "coco" and split == "test") else 0  # COCO test: 25,010 captions
        for k in range(count):
            scene = world.sample_scene(rng, style)
            caps = world.captions(scene, rng, n=6 if k < n_six else 5)
            imgid = len(images)
            entry = name_of(split, imgid)
            _save(world.render(scene, cfg.img_size, rng), root / entry.get("filepath", "") / entry["filename"])
            sents = [{"tokens": _tokens(c), "raw": c, "imgid": imgid, "sentid": sentid + j} for j, c in enumerate(caps)]
            images.append({**entry, "split": split, "imgid": imgid, "sentids": [s["sentid"] for s in sents],
                           "sentences": sents})
            sentid += len(caps)
    return images


def _coco_entry(split, imgid):
    folder = "train2014" if split == "train" else "val2014"
    cocoid = 100000 + imgid
    return {"filepath": folder, "filename": f"COCO_{folder}_{cocoid:012d}.jpg", "cocoid": cocoid}


def _flickr_entry(split, imgid):
    return {"filename": f"{1000000000 + 7919 * imgid}.jpg"}


def _write_coco(cfg: WorldConfig, out: Path) -> None:
    n_restval = cfg.n_train // 5
    coco = _karpathy(cfg, "coco", [("train", cfg.n_train - n_restval), ("restval", n_restval), ("val", cfg.n_val),
                                   ("test", cfg.n_coco_test)], out / "coco" / "images", _coco_entry)
    _write_json(out / "coco" / "dataset_coco.json", {"images": coco, "dataset": "coco"})


def _write_flickr(cfg: WorldConfig, out: Path) -> None:
    flickr = _karpathy(cfg, "flickr", [("test", cfg.n_flickr_test)], out / "flickr30k" / "flickr30k-images",
                       _flickr_entry)
    _write_json(out / "flickr30k" / "dataset_flickr30k.json", {"images": flickr, "dataset": "flickr30k"})


def write_world(cfg: WorldConfig, out: Path) -> None:
    """Four independent parts, each from its own random stream (so the bytes do not depend on the order or the
    number of processes that write them), written by up to two processes, which end with this one whatever ends it
    (``data/lifetime.py``: a worker left behind would hold the world's lock)."""
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from .lifetime import die_with_parent
    parts = [_write_coco, _write_corpora, _write_flickr, _write_zero_shot]
    with ProcessPoolExecutor(max_workers=min(2, os.cpu_count() or 1), initializer=die_with_parent,
                             initargs=(os.getpid(),)) as pool, \
            tqdm(total=len(parts), desc="generating the embedded world", unit="part",
                 disable=not show_progress()) as bar:
        for done in as_completed([pool.submit(part, cfg, out) for part in parts]):
            done.result()
            bar.update()


def _write_zero_shot(cfg: WorldConfig, out: Path) -> None:
    out = out / "imagenet"
    rng = _rng(cfg, "imagenet")
    for label, _ in enumerate(world.CLASSES):
        for k in range(cfg.n_zeroshot_per_class):
            image_no = label * cfg.n_zeroshot_per_class + k + 1
            img = world.render(world.class_scene(rng, label), cfg.img_size, rng)
            _save(img, out / "val" / f"w{label:08d}" / f"WORLD_val_{image_no:08d}.JPEG")
    _write_json(out / "classnames.json", {"source": "thesis_lib.data.world.CLASSES", "classnames": world.CLASSES})
    _write_json(out / "templates.json", {"source": "thesis_lib.data.world.ZERO_SHOT_TEMPLATES",
                                         "templates": world.ZERO_SHOT_TEMPLATES})


def _write_corpora(cfg: WorldConfig, out: Path) -> None:
    out = out / "corpus"
    rng = _rng(cfg, "corpus_images")
    labels = []
    for k in range(cfg.n_image_corpus):  # scene (COCO-like), object, scene (Flickr-like), object, ...
        if k % 2:
            kind, scene = "object", world.class_scene(rng, int(rng.integers(len(world.CLASSES))))
        else:
            kind, scene = "scene", world.sample_scene(rng, "coco" if k % 4 == 0 else "flickr")
        _save(world.render(scene, cfg.img_size, rng), out / "images" / f"{k:06d}.jpg")
        labels.append({"file": f"images/{k:06d}.jpg", "kind": kind, "labels": np.flatnonzero(scene.labels()).tolist()})
    _write_json(out / "labels.json", {"classes": world.CLASSES, "images": labels})
    rng = _rng(cfg, "corpus_text")
    lines = []
    while len(lines) < cfg.n_text_corpus:  # scenes that are described but never drawn
        scene = world.sample_scene(rng, "coco" if len(lines) % 2 == 0 else "flickr")
        lines += world.captions(scene, rng, n=2)
    (out / "captions.txt").write_text("\n".join(lines[:cfg.n_text_corpus]) + "\n")


def _write_json(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj))


def summary(root: str | os.PathLike) -> dict:
    """Counts of the world on disk: images, captions, unique captions per split, classes, corpora."""
    root = Path(root)
    out = {}
    for name, rel in (("coco", "coco/dataset_coco.json"), ("flickr30k", "flickr30k/dataset_flickr30k.json")):
        data = json.loads((root / rel).read_text())
        for split in sorted({im["split"] for im in data["images"]}):
            caps = [s["raw"] for im in data["images"] if im["split"] == split for s in im["sentences"]]
            out[f"{name}/{split}"] = {"images": sum(im["split"] == split for im in data["images"]),
                                      "captions": len(caps), "unique_captions": len(set(caps))}
    classes = json.loads((root / "imagenet/classnames.json").read_text())["classnames"]
    out["imagenet/val"] = {"images": sum(1 for _ in (root / "imagenet/val").rglob("*.JPEG")), "classes": len(classes)}
    corpus = (root / "corpus/captions.txt").read_text().splitlines()
    out["corpus"] = {"images": len(json.loads((root / "corpus/labels.json").read_text())["images"]),
                     "captions": len(corpus), "unique_captions": len(set(corpus))}
    return out
