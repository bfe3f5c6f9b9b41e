"""The training mixture's shards on the storage they are read from: how fast they read at random with a cold cache,
and a copy of them staged to node-local disk and checked.

    python -m thesis_lib.data.stage "$MIX" --rate                          # the cold random-read rate, where they lie
    export MIX=$(python -m thesis_lib.data.stage "$MIX" --to /local/scratch)   # staged; prints the staged mixture

The argument is the value of ``--set data.train_sets=...``; only its ``wds:`` entries have shards (``coco`` and other
entries pass through unchanged). The shards of an entry are those training reads (``data/shards.py``): with ``@N``,
in order until the shard that completes N usable pairs, the rest never opened; a missing shard is left out, as
training skips it.

``read_rate`` reads ``reads`` samples drawn at random from all of them (each image member by its offset and size,
as a DataLoader worker reads it) on ``threads`` threads at once — the pilot gives the run's DataLoader workers over
all its GPUs — after dropping the files' pages from the page cache with ``posix_fadvise(POSIX_FADV_DONTNEED)``,
which needs no root: the rate the storage itself delivers, not the memory's. Pages another process holds mapped
are not dropped, nor a network file server's own cache; where ``posix_fadvise`` is missing (macOS) the rate is said
to be a warm one. The pilot (``full_scale/pilot.py``) prints it beside the pairs/s the GPUs need.

``stage`` copies each entry's shards to ``<to>/<the shard list's folder name>/`` (a copy already there with the
source's size is kept), writes the shard list of the copies and prints the mixture that reads them (the same
``@N``). Every copy is checked: its size, and its shard index read anew from the copy (``index_shard(fresh=True)``),
which must equal the source's — every sample's key, offset, size and caption, the counts of usable pairs and of
each kind of broken sample. That finds a copy cut short or a changed member header, image start or end; a changed
byte inside an image's body only ``--sha256`` finds (each copy hashed again from the disk, its pages dropped first,
against the source's hash taken while copying). A kept copy that fails is copied again; a fresh copy that fails
stops the command, naming it. The copies keep their source's modification time, so the index a node writes for
``/local/scratch/...`` is the one every node with the same path reads from the shared ``THESIS_DATA``.
"""
from __future__ import annotations

import argparse
import bisect
import hashlib
import os
import random
import shutil
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..cache import write_text_atomic
from ..errors import DataError, ThesisError
from .shard_index import wds_sets
from .shards import BROKEN, index_shard, shard_paths, split_limit

READS = 2000            # random reads the rate is measured on
SECONDS = 60.0          # … or fewer, when the storage is so slow that they take longer than this
CHUNK = 8 << 20
COUNTS = ("shards", "samples", "pairs", *BROKEN, "cut_shards")    # a shard's index counts, compared after a copy


@dataclass
class ShardSet:
    """One ``wds:`` entry of the mixture: the shards training reads and the usable pairs it takes from each."""
    entry: str
    limit: int | None
    shards: list[tuple[Path, int]] = field(default_factory=list)

    @property
    def pairs(self) -> int:
        return sum(n for _, n in self.shards)


def shard_sets(train_sets: str) -> list[ShardSet]:
    """The ``wds:`` entries of ``train_sets`` with the shards training reads (``@N``: up to the one completing N)."""
    out = []
    for entry in wds_sets(train_sets):
        spec, limit = split_limit(entry[4:])
        found = ShardSet(entry, limit)
        for path in shard_paths(spec):
            if limit is not None and found.pairs >= limit:
                break
            if not Path(path).is_file():
                continue                                        # skipped, as training skips it
            samples, _ = index_shard(path)
            take = len(samples) if limit is None else min(len(samples), limit - found.pairs)
            found.shards.append((Path(path), take))
        out.append(found)
    return out


# ------------------------------------------------------------------------------------------ the cold read rate

def drop_cache(fd: int) -> bool:
    """Drop one open file's pages from the page cache (no root needed); False where the platform cannot."""
    if not hasattr(os, "posix_fadvise"):
        return False
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    return True


@dataclass(frozen=True)
class ReadRate:
    reads: int            # samples read
    bytes: int
    seconds: float
    threads: int
    files: int            # shards the reads fell in
    cold: bool            # their pages were dropped from the page cache first

    @property
    def pairs_per_s(self) -> float:
        return self.reads / max(self.seconds, 1e-9)

    @property
    def mb_per_s(self) -> float:
        return self.bytes / 1e6 / max(self.seconds, 1e-9)

    def message(self) -> str:
        cache = ("cold cache (the shards' pages dropped first)" if self.cold else
                 "warm or unknown cache (no posix_fadvise here: an upper bound)")
        return (f"{self.reads:,} random reads of the mixture's shards ({self.files:,} shards, {self.threads} threads, "
                f"{cache}): {self.pairs_per_s:,.0f} pairs/s, {self.mb_per_s:,.1f} MB/s "
                f"({self.bytes / 1e6:,.1f} MB in {self.seconds:.2f} s)")


def _draw(sets: list[ShardSet], reads: int, seed: int) -> list[tuple[Path, int, int]]:
    """(shard, offset, size) of ``reads`` samples drawn uniformly without replacement from all the sets' pairs."""
    shards = [(path, n) for s in sets for path, n in s.shards if n]
    ends = [0]
    for _, n in shards:
        ends.append(ends[-1] + n)
    if not ends[-1]:
        raise DataError("the mixture's shards hold no usable pair to read")
    picks: dict[int, list[int]] = {}
    for k in random.Random(seed).sample(range(ends[-1]), min(reads, ends[-1])):
        s = bisect.bisect_right(ends, k) - 1
        picks.setdefault(s, []).append(k - ends[s])
    out = []
    for s, locals_ in picks.items():
        samples, _ = index_shard(shards[s][0])
        out += [(shards[s][0], samples[i]["offset"], samples[i]["size"]) for i in locals_]
    random.Random(seed + 1).shuffle(out)
    return out


def read_rate(sets: list[ShardSet] | str, reads: int = READS, threads: int = 8, seed: int = 0,
              seconds: float = SECONDS, cold: bool = True) -> ReadRate:
    """The random-read rate of the mixture's shards (see the module's docstring): ``reads`` samples, read on
    ``threads`` threads after their files' pages were dropped (``cold``), stopping early after ``seconds``."""
    sets = shard_sets(sets) if isinstance(sets, str) else sets
    todo = _draw(sets, reads, seed)
    fds = {path: os.open(path, os.O_RDONLY) for path in dict.fromkeys(p for p, _, _ in todo)}
    lock, done = threading.Lock(), [0, 0]
    try:
        dropped = all([drop_cache(fd) for fd in fds.values()]) if cold else False
        start = time.perf_counter()
        deadline = start + seconds

        def read(item) -> None:
            path, offset, size = item
            if time.perf_counter() > deadline:
                return
            got = 0
            while got < size:
                block = os.pread(fds[path], size - got, offset + got)
                if not block:
                    raise DataError(f"{path}: ends before the sample at {offset:,} ({size:,} bytes) its index names: "
                                    "the shard changed since it was indexed")
                got += len(block)
            with lock:
                done[0] += 1
                done[1] += got

        with ThreadPoolExecutor(max(1, min(threads, len(todo)))) as pool:
            list(pool.map(read, todo))
        elapsed = time.perf_counter() - start
    finally:
        for fd in fds.values():
            os.close(fd)
    return ReadRate(done[0], done[1], elapsed, max(1, min(threads, len(todo))), len(fds), dropped)


# ---------------------------------------------------------------------------------------------------- staging

def _hash_from_disk(path: Path) -> str:
    """The SHA-256 of ``path`` as the disk holds it: its pages written out and dropped first, then read."""
    h = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            os.fsync(fd)                       # a copy just written: its dirty pages cannot be dropped unwritten
        except OSError:
            pass
        drop_cache(fd)
        with os.fdopen(os.dup(fd), "rb") as f:
            while block := f.read(CHUNK):
                h.update(block)
    finally:
        os.close(fd)
    return h.hexdigest()


def copy_shard(src: Path, dest: Path) -> str:
    """``src`` copied to ``dest`` through ``<dest>.part`` (renamed when complete), its modification time kept;
    returns the source's SHA-256, taken on the way."""
    part = dest.with_name(dest.name + ".part")
    h = hashlib.sha256()
    try:
        with open(src, "rb") as fin, open(part, "wb") as fout:
            while block := fin.read(CHUNK):
                fout.write(block)
                h.update(block)
        shutil.copystat(src, part)
        os.replace(part, dest)
    finally:
        part.unlink(missing_ok=True)
    return h.hexdigest()


def differences(src: Path, copy: Path) -> list[str]:
    """How a staged copy differs from its source: size, then the shard index read anew from the copy against the
    source's (each count, then each sample's key, offset, size and caption); empty when it is the same."""
    if copy.stat().st_size != src.stat().st_size:
        return [f"{copy.stat().st_size:,} bytes, the source {src.stat().st_size:,}"]
    (want, want_report), (got, got_report) = index_shard(src), index_shard(copy, fresh=True)
    out = [f"{kind} {getattr(got_report, kind):,}, the source {getattr(want_report, kind):,}"
           for kind in COUNTS if getattr(got_report, kind) != getattr(want_report, kind)]
    if not out and got != want:
        k = next(i for i, (a, b) in enumerate(zip(got, want)) if a != b)
        out.append(f"sample {k} ({want[k]['key']}) indexed as {got[k]}, the source as {want[k]}")
    return out


def stage_set(shard_set: ShardSet, folder: Path, sha256: bool = False, say=print) -> tuple[str, dict]:
    """One entry's shards copied into ``folder`` and checked (see the module's docstring): the staged entry and what
    was done (copied, kept, copied again, bytes)."""
    folder.mkdir(parents=True, exist_ok=True)
    todo = [(src, folder / src.name) for src, _ in shard_set.shards]
    if len({dest.name for _, dest in todo}) != len(todo):
        raise DataError(f"{shard_set.entry}: two of its shards share a file name; they cannot be staged in one folder")
    need = sum(src.stat().st_size for src, dest in todo
               if not (dest.is_file() and dest.stat().st_size == src.stat().st_size))
    free = shutil.disk_usage(folder).free
    if need > free:
        raise DataError(f"staging {shard_set.entry} needs {need / 1e9:,.1f} GB under {folder}; {free / 1e9:,.1f} GB "
                        "are free")
    done = {"copied": 0, "kept": 0, "copied again": 0, "bytes": 0}
    for src, dest in todo:
        kept = dest.is_file() and dest.stat().st_size == src.stat().st_size
        digest, found = None, differences(src, dest) if kept else []
        if kept and not found:
            done["kept"] += 1
        else:
            if kept:
                say(f"{dest}: differs from {src} ({'; '.join(found)}); copying it again")
            digest = copy_shard(src, dest)
            done["copied again" if kept else "copied"] += 1
            problems = differences(src, dest)
            if problems:
                raise DataError(f"{dest}, staged from {src}, differs from it: {'; '.join(problems)}; check the disk "
                                "under it and run again")
        if sha256:
            source_hash = digest or _hash_from_disk(src)
            if _hash_from_disk(dest) != source_hash:
                dest.unlink()
                raise DataError(f"{dest}, staged from {src}: its SHA-256 read back from the disk is not the source's; "
                                "deleted: check the disk under it and run again")
        done["bytes"] += dest.stat().st_size
    listing = folder / "shards.txt"
    write_text_atomic(listing, "".join(f"{dest.name}\n" for _, dest in todo))
    limit = f"@{shard_set.limit}" if shard_set.limit is not None else ""
    return f"wds:{listing}{limit}", done


def stage(train_sets: str, to: Path, sha256: bool = False, say=print) -> str:
    """Every ``wds:`` entry's shards staged under ``to`` and checked; returns ``train_sets`` reading the copies."""
    sets, staged, used = {s.entry: s for s in shard_sets(train_sets)}, {}, set()
    for entry, shard_set in sets.items():
        if not shard_set.shards:
            raise DataError(f"{entry}: none of its shards is there to stage")
        spec = split_limit(entry[4:])[0]
        name = Path(spec).parent.name or "shards"
        folder, k = Path(to) / name, 1
        while folder in used:
            k += 1
            folder = Path(to) / f"{name}-{k}"
        used.add(folder)
        start = time.perf_counter()
        staged[entry], done = stage_set(shard_set, folder, sha256, say)
        say(f"{entry}: {len(shard_set.shards):,} shards, {shard_set.pairs:,} pairs, {done['bytes'] / 1e9:,.1f} GB in "
            f"{folder} ({done['copied']:,} copied, {done['kept']:,} kept, {done['copied again']:,} copied again; "
            f"each checked{' with its SHA-256' * sha256}) in {time.perf_counter() - start:.0f} s")
    return ",".join(staged.get(name.strip(), name.strip()) for name in train_sets.split(",") if name.strip())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m thesis_lib.data.stage", description=__doc__.split("\n\n")[0])
    p.add_argument("train_sets", help="the data.train_sets value, e.g. \"$MIX\"")
    p.add_argument("--to", type=Path, help="node-local folder to stage the shards to; prints the staged mixture")
    p.add_argument("--sha256", action="store_true", help="also compare each copy's SHA-256, read back from the disk")
    p.add_argument("--rate", action="store_true", help="measure the cold random-read rate (of the staged copies "
                                                        "with --to)")
    p.add_argument("--reads", type=int, default=READS, help=f"random reads for --rate (default {READS:,})")
    p.add_argument("--threads", type=int, default=8, help="reads at once for --rate: the run's DataLoader workers over "
                                                          "all its GPUs (default 8)")
    args = p.parse_args(argv)
    if not (args.to or args.rate):
        p.error("give --to FOLDER (stage the shards) or --rate (measure them), or both")
    if args.reads < 1 or args.threads < 1:
        p.error("--reads and --threads must be at least 1")
    if not wds_sets(args.train_sets):
        p.error(f"{args.train_sets!r} names no wds: shard set")
    try:
        train_sets = args.train_sets
        if args.to:
            train_sets = stage(train_sets, args.to, args.sha256, say=lambda line: print(line, file=sys.stderr))
            print(train_sets)
        if args.rate:
            rate = read_rate(train_sets, args.reads, args.threads)
            print(f"storage: {rate.message()}", file=sys.stderr if args.to else sys.stdout)
    except (ThesisError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
