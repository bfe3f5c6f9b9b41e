"""data/stage: the cold random-read rate over a mixture's shards, and the shards staged to another disk and checked,
in miniature: a few tiny shards written by the fixtures (full_scale/fixtures.py)."""
import os

import pytest

from thesis_lib.data import stage as st
from thesis_lib.data.shards import index_shard, load_shards
from thesis_lib.errors import DataError
from thesis_lib.full_scale.fixtures import jpeg_bytes, web_shards, write_shard


@pytest.fixture
def mix(tmp_path, monkeypatch):
    """Two shard sets as the downloads leave them (a shard list each, one with a broken sample of every kind) and the
    mixture that reads them, COCO first; the shard index under a THESIS_DATA of the test's own."""
    monkeypatch.setenv("THESIS_DATA", str(tmp_path / "cache"))
    data = tmp_path / "shared"
    web_shards(data / "cc3m", "cc3m", shards=3, per_shard=6)
    (data / "cc3m" / "shards.txt").write_text("".join(f"{s:05d}.tar\n" for s in range(3)))
    (data / "cc12m").mkdir()
    for s in range(4):
        write_shard(data / "cc12m" / f"cc12m-train-{s:04d}.tar",
                    {f"{s:04d}{k:03d}": {"jpg": jpeg_bytes(50 + 10 * s + k, (40, 56)), "txt": f"pair {k} of {s}"}
                     for k in range(5)})
    (data / "cc12m" / "shards.txt").write_text("".join(f"cc12m-train-{s:04d}.tar\n" for s in range(4)))
    return f"coco,wds:{data}/cc3m/shards.txt,wds:{data}/cc12m/shards.txt@12"


def test_the_shards_training_reads_are_those_of_the_mixture(mix):
    """With @12 of 5-pair shards training opens three shards and takes 2 pairs of the third; the rest never."""
    cc3m, cc12m = st.shard_sets(mix)
    assert [p.name for p, _ in cc12m.shards] == ["cc12m-train-0000.tar", "cc12m-train-0001.tar",
                                                 "cc12m-train-0002.tar"]
    assert [n for _, n in cc12m.shards] == [5, 5, 2] and cc12m.pairs == 12 == len(load_shards(cc12m.entry[4:])[0])
    assert cc3m.pairs == len(load_shards(cc3m.entry[4:])[0]) and cc3m.limit is None


def test_the_cold_read_rate_is_positive_counts_its_bytes_and_drops_each_file_first(mix, monkeypatch):
    """Every file read has its pages dropped (posix_fadvise DONTNEED) before the first read; the rate is positive
    and the bytes are the sum of the drawn samples' sizes (all of them: fewer pairs than reads asked)."""
    events, real_drop, real_pread = [], st.drop_cache, os.pread

    def drop(fd):
        events.append(("drop", os.fstat(fd).st_ino))
        return real_drop(fd)

    def pread(fd, n, offset):
        events.append(("read", os.fstat(fd).st_ino))
        return real_pread(fd, n, offset)
    monkeypatch.setattr(st, "drop_cache", drop)
    monkeypatch.setattr(st.os, "pread", pread)
    sets = st.shard_sets(mix)
    total = sum(s.pairs for s in sets)
    rate = st.read_rate(sets, reads=1000, threads=4)
    sizes = sum(sample["size"] for s in sets for path, n in s.shards for sample in index_shard(path)[0][:n])
    assert rate.reads == total and rate.bytes == sizes and rate.pairs_per_s > 0 and rate.mb_per_s > 0
    assert rate.cold is hasattr(os, "posix_fadvise") and rate.files == 6 and rate.threads == 4
    first_read = next(i for i, e in enumerate(events) if e[0] == "read")
    assert {ino for kind, ino in events if kind == "read"} <= {ino for kind, ino in events[:first_read] if
                                                                kind == "drop"}
    few = st.read_rate(mix, reads=5, threads=2, seed=3)                   # a sample of the pairs, seeded
    assert few.reads == 5 and 0 < few.bytes < sizes
    assert "5 random reads of the mixture's shards" in few.message() and "pairs/s" in few.message()


def test_staging_copies_checks_and_prints_the_mixture_that_reads_the_copies(mix, tmp_path, capsys):
    local = tmp_path / "local"
    assert st.main([mix, "--to", str(local), "--sha256"]) == 0
    out, err = capsys.readouterr()
    staged = out.strip()
    assert staged == f"coco,wds:{local}/cc3m/shards.txt,wds:{local}/cc12m/shards.txt@12"
    assert (local / "cc12m" / "shards.txt").read_text().split() == [f"cc12m-train-{s:04d}.tar" for s in range(3)]
    for src_set, copy_set in zip(st.shard_sets(mix), st.shard_sets(staged)):
        assert [p.name for p, _ in src_set.shards] == [p.name for p, _ in copy_set.shards]
        for (src, _), (copy, _) in zip(src_set.shards, copy_set.shards):
            assert copy.read_bytes() == src.read_bytes() and copy.stat().st_mtime_ns == src.stat().st_mtime_ns
    records, report = load_shards(staged.split(",")[2][4:])
    assert len(records) == 12 and report.pairs == 12
    assert "3 shards, 12 pairs" in err and "3 copied, 0 kept" in err and "with its SHA-256" in err
    assert st.main([mix, "--to", str(local)]) == 0                          # again: every copy kept, checked
    assert "0 copied, 3 kept, 0 copied again" in capsys.readouterr().err
    assert st.main([staged, "--rate", "--reads", "20", "--threads", "3"]) == 0
    assert "storage: 20 random reads of the mixture's shards" in capsys.readouterr().out


def test_a_corrupted_copy_is_found(mix, tmp_path, monkeypatch, capsys):
    """A staged copy changed on the disk (same size: an image's first bytes) is found by its index and copied
    again; a copy that comes out wrong stops the command naming it; one cut short is found by its size; a changed
    byte inside an image's body only the SHA-256 finds."""
    local = tmp_path / "local"
    st.stage(mix, local)
    copy = local / "cc12m" / "cc12m-train-0001.tar"
    sample = index_shard(copy)[0][2]
    with open(copy, "r+b") as f:                                            # the JPEG's start marker gone
        f.seek(sample["offset"])
        f.write(b"<ht")
    assert st.differences(tmp_path / "shared" / "cc12m" / "cc12m-train-0001.tar", copy) == \
        ["pairs 4, the source 5", "unreadable_image 1, the source 0"]
    said = []
    st.stage(mix, local, say=said.append)
    assert any("cc12m-train-0001.tar: differs from" in line and "copying it again" in line for line in said)
    assert any("cc12m" in line and "(0 copied, 2 kept, 1 copied again;" in line for line in said)
    assert st.differences(tmp_path / "shared" / "cc12m" / "cc12m-train-0001.tar", copy) == []

    real = st.copy_shard

    def cut(src, dest):                                                     # a copy that comes out short
        digest = real(src, dest)
        if dest.name == "cc12m-train-0002.tar":
            with open(dest, "r+b") as f:
                f.truncate(dest.stat().st_size - 700)
        return digest
    monkeypatch.setattr(st, "copy_shard", cut)
    with pytest.raises(DataError, match=r"cc12m-train-0002.tar, staged from .* differs from it: [\d,]+ bytes, the "
                                        r"source [\d,]+"):
        st.stage(mix, tmp_path / "other")
    monkeypatch.setattr(st, "copy_shard", real)

    body = index_shard(copy)[0][1]                                          # a byte inside an image's body
    with open(copy, "r+b") as f:
        f.seek(body["offset"] + body["size"] // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    assert st.differences(tmp_path / "shared" / "cc12m" / "cc12m-train-0001.tar", copy) == []
    with pytest.raises(DataError, match="cc12m-train-0001.tar, staged from .*: its SHA-256 read back from the disk"):
        st.stage(mix, local, sha256=True)
    assert not copy.exists()                                                # deleted: the next run copies it anew


def test_the_command_says_what_it_needs(mix, capsys):
    for argv, said in [([mix], "give --to FOLDER"), (["coco", "--rate"], "names no wds: shard set"),
                       ([mix, "--rate", "--reads", "0"], "--reads and --threads must be at least 1")]:
        with pytest.raises(SystemExit) as stop:
            st.main(argv)
        assert stop.value.code == 2 and said in capsys.readouterr().err.splitlines()[-1]
