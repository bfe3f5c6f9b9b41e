"""webdataset shards as img2dataset writes them, on tiny shards written here: reading, broken samples counted, a
missing shard skipped and counted (too many of them an error), a corrupt shard a clear error, shard lists, indexing
that stops at ``@N``, the one-process index command, the split across ranks × workers (every pair once per epoch)
and resume."""
import os
import subprocess
import sys

import pytest
import torch

from thesis_lib import get_config
from thesis_lib.data import shard_index, shards as shards_module
from thesis_lib.data.datasets import open_image
from thesis_lib.data.shards import MAX_MISSING, expand, load_shards
from thesis_lib.data.tokenizer import CaptionTokenizer
from thesis_lib.data.train_pairs import TrainPairs
from thesis_lib.errors import DataError, DataWarning
from thesis_lib.paths import ROOT
from thesis_lib.full_scale.fixtures import jpeg_bytes, write_shard


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


def test_too_many_missing_shards_or_a_corrupt_one_is_a_clear_error(shards, tmp_path):
    with pytest.raises(DataError, match=r"1 of 3 shards .* are missing \(e.g. .*00002.tar\), more than MAX_MISSING"):
        load_shards(str(tmp_path / "{00000..00002}.tar"))
    (tmp_path / "bad.tar").write_bytes(b"\x00garbage" * 100)
    with pytest.raises(DataError, match="cannot read shard .*bad.tar"):
        load_shards(str(tmp_path / "bad.tar"))
    assert expand("/d/{008..010}.tar") == ["/d/008.tar", "/d/009.tar", "/d/010.tar"]
    assert expand("/d/{0..1}/{08..09}.tar") == ["/d/0/08.tar", "/d/0/09.tar", "/d/1/08.tar", "/d/1/09.tar"]


def _one_pair_shards(folder, count):
    for s in range(count):
        write_shard(folder / f"{s:05d}.tar", {f"{s:05d}0000": {"jpg": _jpeg(s), "txt": f"caption of shard {s}"}})


def test_a_missing_shard_is_skipped_counted_and_warned_of_while_few_are(tmp_path, monkeypatch):
    monkeypatch.setenv("THESIS_DATA", str(tmp_path / "cache"))
    _one_pair_shards(tmp_path, 21)
    (tmp_path / "00007.tar").unlink()                                  # 1 of 21 missing: under 5 %
    assert 1 / 21 <= MAX_MISSING < 2 / 21
    with pytest.warns(DataWarning, match=r"shard not found: .*00007.tar; skipped \(1 of 21"):
        records, report = load_shards(str(tmp_path / "{00000..00020}.tar"))
    assert (report.shards, report.missing_shards, report.pairs) == (20, 1, 20)
    assert report.missing_shard_names == [str(tmp_path / "00007.tar")]
    assert [r.captions[0] for r in records] == [f"caption of shard {s}" for s in range(21) if s != 7]
    (tmp_path / "00013.tar").unlink()                                  # 2 of 21: the run stops, naming them
    with pytest.raises(DataError, match=r"2 of 21 shards .* missing \(e.g. .*00007.tar, .*00013.tar\)"):
        load_shards(str(tmp_path / "{00000..00020}.tar"))


def test_a_shard_list_names_shards_relative_to_its_folder(shards, tmp_path, monkeypatch):
    (tmp_path / "lists").mkdir()
    listing = tmp_path / "lists" / "shards.txt"
    listing.write_text(f"# cc3m, as downloaded\n\n../00000.tar\n   {tmp_path / '00001.tar'}   # the last one\n")
    (tmp_path / "elsewhere" / "deep").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "elsewhere" / "deep")               # relative to the list, not to the cwd
    by_list, report = load_shards(str(listing))
    by_range, _ = load_shards(str(shards))
    assert [(r.image_id, r.captions) for r in by_list] == [(r.image_id, r.captions) for r in by_range]
    assert report.shards == 2 and report.pairs == 16
    assert open_image(by_list[3].image).size == (64, 48)
    subset, report = load_shards(f"{listing}@10")
    assert len(subset) == 10 and (report.requested, report.pairs) == (10, 10)
    (tmp_path / "lists" / "empty.txt").write_text("# nothing yet\n\n")
    with pytest.raises(DataError, match="shard list .*empty.txt names no shard"):
        load_shards(str(tmp_path / "lists" / "empty.txt"))


def test_indexing_stops_at_the_shard_that_completes_the_subset(shards, tmp_path):
    (tmp_path / "00002.tar").write_bytes(b"\x00garbage" * 100)          # would raise if it were opened
    whole, _ = load_shards(str(shards))
    records, report = load_shards(str(tmp_path / "{00000..00003}.tar@10"))  # 00003 is missing: never looked at
    assert [r.image for r in records] == [r.image for r in whole[:10]]
    assert (report.shards, report.missing_shards, report.samples, report.pairs) == (2, 0, 21, 10)
    records, report = load_shards(str(tmp_path / "{00000..00002}.tar@8"))    # shard 0 holds 8: shard 1 not read
    assert [r.image for r in records] == [r.image for r in whole[:8]] and report.shards == 1
    assert (report.samples, report.pairs, report.broken_keys) == (8, 8, [])
    with pytest.raises(DataError, match="cannot read shard .*00002.tar"):
        load_shards(str(tmp_path / "{00000..00002}.tar@17"))


def test_a_subset_reads_no_later_shard_and_indexes_none(tmp_path, monkeypatch):
    monkeypatch.setenv("THESIS_DATA", str(tmp_path / "cache"))
    _one_pair_shards(tmp_path, 3)
    load_shards(str(tmp_path / "{00000..00002}.tar@2"))
    assert len(list((tmp_path / "cache" / "shard-index").glob("*.json"))) == 2     # shard 2 has no index


def test_the_index_command_caches_what_every_rank_then_reads(shards, tmp_path, monkeypatch, capsys):
    listing = tmp_path / "shards.txt"
    listing.write_text("00000.tar\n00001.tar\n")
    mixture = f"coco,wds:{listing}@10,wds:{shards}"
    env = {**os.environ, "THESIS_DATA": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "thesis_lib.data.shard_index", mixture], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"wds:{listing}@10: 2 shards read, 0 missing; 10 pairs of 10 "
                                                   f"requested from 21 samples; broken: 1 missing_image")
    assert "16 pairs from 21 samples" in lines[1] and "1 truncated_image" in lines[1]
    assert len(list((tmp_path / "cache" / "shard-index").glob("*.json"))) == 2
    monkeypatch.setattr(shards_module.tarfile, "open", _no_tar)               # a rank: every shard from the cache
    records, report = load_shards(f"{listing}@10")
    assert len(records) == 10 and report.shards == 2
    assert shard_index.main([f"coco,wds:{tmp_path / 'elsewhere' / '{0..1}.tar'},wds:{shards}"]) == 1
    out = capsys.readouterr().out
    assert "elsewhere/{0..1}.tar: FAILED" in out and "2 of 2 shards" in out and "16 pairs" in out
    assert shard_index.main(["coco,flickr30k"]) == 0


def _no_tar(*args, **kwargs):
    raise AssertionError("a shard was indexed again instead of read from the cache")


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


def _cut_at_header(shard, keep: int) -> None:
    """Cut ``shard`` exactly at the header of the first member of its sample ``keep`` (block-aligned, no
    end-of-archive blocks after it): tarfile reads what is left as a complete archive."""
    import tarfile
    with tarfile.open(shard) as tar:
        keys = list(dict.fromkeys(m.name.partition(".")[0] for m in tar.getmembers()))
        offset = next(m.offset for m in tar.getmembers() if m.name.startswith(keys[keep] + "."))
    assert offset % 512 == 0
    with open(shard, "r+b") as f:
        f.truncate(offset)


def test_a_shard_cut_at_a_members_header_is_counted_as_cut_not_read_as_complete(tmp_path, monkeypatch, capsys):
    """A shard of 8 samples cut exactly at the 6th's header read as a whole shard of 5, the 3 lost samples counted
    nowhere: the missing end-of-archive blocks mark it cut short — kept, counted, warned of, in the index command's
    line — and more than MAX_MISSING of the shards looked at missing or cut is an error."""
    import tarfile
    monkeypatch.setenv("THESIS_DATA", str(tmp_path / "cache"))
    for s in range(21):
        write_shard(tmp_path / f"{s:05d}.tar", {f"{s:05d}{k:04d}": {"jpg": _jpeg(k), "txt": f"caption {k} of {s}",
                                                                     "json": {"status": "success"}} for k in range(8)})
    shard = tmp_path / "00003.tar"
    _cut_at_header(shard, 5)
    with tarfile.open(shard) as tar:                                  # what made it invisible: a complete tar
        assert len(tar.getmembers()) == 15
    samples, report = shards_module.index_shard(shard)
    assert (len(samples), report.samples, report.pairs) == (5, 5, 5)
    assert (report.cut_shards, report.cut_shard_names) == (1, [str(shard)])
    assert shards_module.index_shard(shard)[1] == report                 # from the cache, the same
    whole, whole_report = shards_module.index_shard(tmp_path / "00000.tar")
    assert (len(whole), whole_report.cut_shards, whole_report.cut_shard_names) == (8, 0, [])
    pattern = str(tmp_path / "{00000..00020}.tar")
    with pytest.warns(DataWarning, match=r"shard cut short: .*00003.tar ends without tar's end-of-archive blocks"):
        records, total = load_shards(pattern)
    assert (total.shards, total.cut_shards, total.missing_shards, total.pairs) == (21, 1, 0, 20 * 8 + 5)
    assert total.cut_shard_names == [str(shard)] and len(records) == 165
    with pytest.warns(DataWarning, match="shard cut short"):
        assert shard_index.main([f"wds:{pattern}"]) == 0
    assert f"0 missing, 1 cut short ({shard}; no end-of-archive blocks: samples lost); 165 pairs" in \
        capsys.readouterr().out
    _cut_at_header(tmp_path / "00011.tar", 2)                           # 2 of 21 cut: past MAX_MISSING
    with pytest.raises(DataError, match=r"2 of 21 shards .* are cut short \(e\.g\. .*00003.tar, .*00011.tar"):
        load_shards(pattern)
    (tmp_path / "00011.tar").unlink()                                   # 1 cut and 1 missing: gaps, together
    with pytest.raises(DataError, match=r"1 of 21 shards .* cut short .* and 1 missing, more than MAX_MISSING"):
        load_shards(pattern)
