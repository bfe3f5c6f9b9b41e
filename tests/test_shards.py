"""webdataset shards as img2dataset writes them, on tiny shards written here: reading, broken samples counted, clear
errors for a missing or corrupt shard, the split across ranks × workers (every pair once per epoch) and resume."""
import pytest
import torch

from thesis_lib import get_config
from thesis_lib.data.datasets import open_image
from thesis_lib.data.shards import expand, load_shards
from thesis_lib.data.tokenizer import CaptionTokenizer
from thesis_lib.data.train_pairs import TrainPairs
from thesis_lib.errors import DataError
from thesis_lib.study.fixtures import jpeg_bytes, write_shard


def _jpeg(seed: int) -> bytes:
    return jpeg_bytes(seed, (48, 64))


@pytest.fixture
def shards(tmp_path, monkeypatch):
    monkeypatch.setenv("THESIS_DATA", str(tmp_path / "cache"))
    for s in range(2):
        samples = {f"{s:05d}{k:04d}": {"jpg": _jpeg(10 * s + k), "txt": f"caption {k} of shard {s}",
                                       "json": {"url": "x", "status": "success"}} for k in range(8)}
        if s == 1:                                          # img2dataset's failure modes
            samples["000190"] = {"jpg": b"<html>not an image</html>", "txt": "an error page"}
            samples["000191"] = {"jpg": _jpeg(99), "txt": "   "}
            samples["000192"] = {"txt": "no image", "json": {"status": "failed_to_download"}}
            samples["000193"] = {"jpg": _jpeg(98)}
            samples["000194"] = {"jpg": _jpeg(97)[:400], "txt": "a download cut short"}     # truncated JPEG
        write_shard(tmp_path / f"{s:05d}.tar", samples)
    return tmp_path / "{00000..00001}.tar"


def test_shards_are_read_and_broken_samples_counted(shards):
    records, report = load_shards(str(shards))
    assert (report.shards, report.samples, report.pairs) == (2, 21, 16)
    assert (report.unreadable_image, report.empty_caption, report.missing_image, report.missing_caption) == (1, 1, 1, 1)
    assert report.truncated_image == 1 and "00001.tar:000194 (truncated_image)" in report.broken_keys
    assert len(report.broken_keys) == 5 and all("00001.tar" in k for k in report.broken_keys)
    assert records[9].captions == ("caption 1 of shard 1",)
    assert open_image(records[9].image).size == (64, 48)
    again, report2 = load_shards(str(shards))              # from the cached index
    assert [r.image for r in again] == [r.image for r in records] and report2 == report


def test_a_missing_or_corrupt_shard_is_a_clear_error(shards, tmp_path):
    with pytest.raises(DataError, match="shard not found: .*00002.tar"):
        load_shards(str(tmp_path / "{00000..00002}.tar"))
    (tmp_path / "bad.tar").write_bytes(b"\x00garbage" * 100)
    with pytest.raises(DataError, match="cannot read shard .*bad.tar"):
        load_shards(str(tmp_path / "bad.tar"))
    assert expand("/d/{008..010}.tar") == ["/d/008.tar", "/d/009.tar", "/d/010.tar"]


def _pairs(shards, rank=0, world_size=1, workers=0):
    cfg = get_config("thesis", overrides={
        "data.train_sets": f"wds:{shards}", "data.root": str(shards.parent), "data.num_workers": workers,
        "train.batch_size": 4, "model.image.img_size": 32, "model.image.patch_size": 8, "model.dim": 32,
        "model.num_heads": 2, "teacher.dim": 32, "teacher.num_heads": 2, "teacher.patch_size": 8})
    tok = CaptionTokenizer(lambda caps: [[5 + ord(c) % 40 for c in cap] for cap in caps], 64, 0, 2, 1, 3, 16, "chars")
    return TrainPairs.of(cfg, tok, shards.parent, rank, world_size)


def test_every_pair_once_per_epoch_across_ranks_and_workers(shards):
    ranks = [_pairs(shards, rank=r, world_size=2, workers=2) for r in range(2)]
    assert ranks[0].shard_reports[f"wds:{shards}"].pairs == 16
    steps = ranks[0].steps_per_epoch                        # 16 pairs / (4 × 2) = 2 steps
    for epoch in range(2):
        seen = torch.cat([p.indices(s) for s in range(epoch * steps, (epoch + 1) * steps) for p in ranks])
        assert sorted(seen.tolist()) == list(range(16))      # each pair exactly once per epoch
    for p in ranks:                                         # the workers decode exactly the items of each step
        for step, batch in enumerate(p.batches(0, steps)):
            assert torch.equal(batch["image_index"], p.pair_image[p.indices(step)])
            assert batch["images"].shape == (4, 3, 32, 32) and batch["teacher_images"].shape == (4, 3, 32, 32)


def test_a_resumed_run_gets_the_batches_it_would_have_had(shards):
    whole = list(_pairs(shards, workers=2).batches(0, 6))
    resumed = list(_pairs(shards, workers=2).batches(3, 6))   # steps 3-5 cross the epoch boundary (4 per epoch)
    for a, b in zip(whole[3:], resumed):
        assert all(torch.equal(a[k], b[k]) for k in a)


def test_the_batches_depend_on_what_train_pairs_is_given_and_nothing_else(shards):
    """TrainPairs takes the data group, seed, batch size, image size and the ITM flag: a config differing anywhere
    else (learning rate, model width, variant) draws the same batches, and the explicit call equals ``of(cfg)``."""
    a = _pairs(shards)
    cfg = get_config("thesis", variant="tte_after_ls", overrides={
        "data.train_sets": f"wds:{shards}", "data.root": str(shards.parent), "data.num_workers": 0,
        "train.batch_size": 4, "train.base_lr": 3e-3, "model.image.img_size": 32, "model.dim": 48})
    tok = CaptionTokenizer(lambda caps: [[5 + ord(c) % 40 for c in cap] for cap in caps], 64, 0, 2, 1, 3, 16, "chars")
    b = TrainPairs(cfg.data, tok, shards.parent, seed=cfg.seed, batch_size=4, img_size=32, itm=False)
    c = TrainPairs(cfg.data, tok, shards.parent, seed=cfg.seed + 1, batch_size=4, img_size=32, itm=False)
    for x, y, z in zip(a.batches(0, 3), b.batches(0, 3), c.batches(0, 3)):
        assert x.keys() == y.keys() and all(torch.equal(x[k], y[k]) for k in x)
        assert not torch.equal(x["image_index"], z["image_index"]) or not torch.equal(x["images"], z["images"])
    assert "fits" in next(TrainPairs(cfg.data, tok, shards.parent, seed=0, batch_size=4, img_size=32,
                                     itm=True).batches(0, 1))


def test_a_subset_size_keeps_the_first_pairs_and_says_how_many(shards):
    records, report = load_shards(f"{shards}@10")
    assert len(records) == 10 and (report.requested, report.pairs) == (10, 10)
    records, report = load_shards(f"{shards}@1000")              # fewer than asked: all of them, and the report says
    assert len(records) == 16 and (report.requested, report.pairs) == (1000, 16)


def test_an_image_that_does_not_decode_is_replaced_deterministically_and_counted(tmp_path, monkeypatch):
    """Complete on disk (JPEG start and end markers) but corrupt inside: the index cannot see it without decoding
    every image; training replaces its pair by the next decodable one, the same after a resume, and counts it."""
    monkeypatch.setenv("THESIS_DATA", str(tmp_path / "cache"))
    samples = {f"{k:04d}": {"jpg": _jpeg(k), "txt": f"caption {k}"} for k in range(8)}
    samples["0003"]["jpg"] = _jpeg(3)[:20] + bytes(range(256)) * 4 + b"\xff\xd9"      # JPEG header, then garbage
    write_shard(tmp_path / "00000.tar", samples)
    pattern = tmp_path / "00000.tar"
    assert load_shards(str(pattern))[1].pairs == 8                # not visible to the index
    pairs = _pairs(pattern, workers=2)
    whole = list(pairs.batches(0, 6))                             # 3 epochs of 2 steps: the bad pair once each
    assert pairs.replaced_samples == 3
    shown = torch.cat([b["image_index"] for b in whole])
    assert 3 not in shown.tolist() and shown.numel() == 24        # its replacement is shown in its place
    resumed = list(_pairs(pattern, workers=2).batches(3, 6))
    for a, b in zip(whole[3:], resumed):
        assert all(torch.equal(a[k], b[k]) for k in a)


def test_the_fixed_teacher_views_of_a_set_with_an_undecodable_image_are_built_with_nans_in_its_place(tmp_path,
                                                                                                     monkeypatch):
    """The teacher-target cache (data.teacher_view=fixed) decodes every training image once: an image that does
    not decode must not stop the run there (its pairs are replaced in training, so its target is never read)."""
    monkeypatch.setenv("THESIS_DATA", str(tmp_path / "cache"))
    samples = {f"{k:04d}": {"jpg": _jpeg(k), "txt": f"caption {k}"} for k in range(8)}
    samples["0003"]["jpg"] = _jpeg(3)[:20] + bytes(range(256)) * 4 + b"\xff\xd9"
    write_shard(tmp_path / "00000.tar", samples)
    pairs = _pairs(tmp_path / "00000.tar", workers=2)
    views = torch.cat(list(pairs.teacher_view_images(3)))     # workers: their DataWarning goes to stderr
    assert views.shape == (8, 3, 32, 32)
    bad = views.flatten(1).isnan().all(1)
    assert bad.tolist() == [k == 3 for k in range(8)]
    good = open_image(pairs.image_files[0])
    assert torch.isfinite(views[~bad]).all() and good.size == (64, 48)
