"""Web-scale training pairs stored the way the field stores them: webdataset shards as img2dataset writes them
(``00000.tar`` … each holding ``<key>.jpg``, ``<key>.txt`` (the caption) and ``<key>.json``), selected with a brace
range (several braces expand in turn) or a shard list (a path ending in ``.txt``: one shard path a line, relative
paths relative to the list's folder, blank lines and ``#`` comments ignored), optionally followed by ``@N``::

    --set data.train_sets=coco,wds:/data/cc3m/{00000..00331}.tar
    --set data.train_sets=coco,wds:/data/cc3m/{00000..00331}.tar@1516133    # the first 1,516,133 usable pairs
    --set data.train_sets=coco,wds:/data/cc3m/shards.txt@1516133

Each shard is indexed once (its tar headers and captions; cached under ``THESIS_DATA/shard-index/``, keyed by the
shard's path, size and modification time): a sample becomes a ``PairRecord`` whose image is a ``TarMember`` (shard,
offset, size), read by seeking into the tar. With ``@N`` the shards are read in order until N usable pairs are held;
the shards after that one are neither opened nor indexed. ``python -m thesis_lib.data.shard_index "<train_sets>"``
indexes a mixture in one process before a multi-process launch, whose ranks then read the cache. The training pairs
stay map-style (``data/train_pairs.py``): an epoch is a seeded permutation of all pairs of all sets, each rank takes
its slice of every step and the DataLoader workers decode the items they are handed. Every sample is seen exactly
once per epoch across ranks × workers, and a resumed run continues at its step with the batches it would have had:
no shard is replayed or skipped.

Broken samples are counted, never dropped silently: a key without an image, with an image whose bytes are not a
JPEG, PNG or WebP, whose image is cut short (a JPEG without its end-of-image marker FF D9, a PNG without its IEND
chunk, a WebP shorter than its RIFF header says), without a caption or with an empty one, is left out of the index
and counted in ``ShardReport``, which the run's result records (``train.shards``); the index is the same at every
start, so a resumed run sees the same pairs in the same order. An image that passes these cheap checks and still
fails to decode is found only when a DataLoader worker decodes it for a batch: its pair is replaced by the next one
that decodes, a ``DataWarning`` names it and the result counts it (data/train_pairs.py, docs/bad_inputs.md).

A shard that is missing (a gap in a download) is skipped: a ``DataWarning`` names it and the report counts it
(``missing_shards``, ``missing_shard_names``). A shard that ends without tar's end-of-archive blocks (two 512-byte
blocks of zeros) was cut short, possibly exactly at a member's header, where the tar reads as complete: its whole
samples are kept, the samples after the cut are lost uncounted, so a ``DataWarning`` names the shard and the report
counts it (``cut_shards``, ``cut_shard_names``). More than ``MAX_MISSING`` of the shards looked at missing or cut
short is a ``DataError`` (a wrong path or an unfinished download, not a gap). A shard that exists but cannot be read as
a tar file stays a ``DataError`` naming it: a corrupt file is not a gap (delete it to have it skipped as missing, or
download it again).
"""
from __future__ import annotations

import json
import os
import re
import tarfile
import warnings
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from ..cache import fingerprint, write_json_atomic
from ..errors import DataError, DataWarning
from ..paths import data_dir
from .datasets import PairRecord, TarMember

IMAGE_EXTS = ("jpg", "jpeg", "png", "webp")
MAGIC = (b"\xff\xd8\xff", b"\x89PNG", b"RIFF")
END_MARKERS = {b"\xff\xd8": b"\xff\xd9", b"\x89PNG": b"IEND"}   # JPEG end of image, PNG's last chunk
TAIL = 1024                       # an end marker may be followed by a little padding: looked for in the last KiB
INDEX_VERSION = 3                 # 2: truncated images are left out of the index; 3: cut shards are counted
MAX_MISSING = 0.05                # the largest fraction of the shards looked at that may be missing or cut short
END_OF_ARCHIVE = bytes(1024)      # tar's end: two 512-byte blocks of zeros after the last member
BROKEN = ("missing_image", "unreadable_image", "truncated_image", "missing_caption", "empty_caption")
KEPT = 20                         # names of broken samples and missing shards kept in a report


@dataclass
class ShardReport:
    """What the shards held: shards read and missing, samples (keys), usable pairs, each kind of broken sample."""
    shards: int = 0                                       # read (indexed or from the cache)
    samples: int = 0
    pairs: int = 0
    missing_image: int = 0
    unreadable_image: int = 0                             # not a JPEG, PNG or WebP
    truncated_image: int = 0                              # cut short (found when indexing)
    missing_caption: int = 0
    empty_caption: int = 0
    requested: int | None = None                          # ``@N``: the subset size asked for
    broken_keys: list = field(default_factory=list)       # the first few, to look at
    missing_shards: int = 0                               # named but not there: skipped
    missing_shard_names: list = field(default_factory=list)   # the first few
    cut_shards: int = 0                                   # read, but ending without tar's end-of-archive blocks
    cut_shard_names: list = field(default_factory=list)   # the first few

    def add(self, other: "ShardReport") -> "ShardReport":
        for f in fields(self):                                # the counters; the request and the names are not summed
            if f.name not in ("requested", "broken_keys", "missing_shard_names", "cut_shard_names"):
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        self.broken_keys = (self.broken_keys + other.broken_keys)[:KEPT]
        self.missing_shard_names = (self.missing_shard_names + other.missing_shard_names)[:KEPT]
        self.cut_shard_names = (self.cut_shard_names + other.cut_shard_names)[:KEPT]
        return self

    def count(self, problem: str, key: str) -> None:
        """One more broken sample of kind ``problem`` (a counter's name); the first KEPT keys are kept."""
        setattr(self, problem, getattr(self, problem) + 1)
        if len(self.broken_keys) < KEPT:
            self.broken_keys.append(f"{key} ({problem})")

    def miss(self, shard: str) -> None:
        """One more missing shard; the first KEPT names are kept."""
        self.missing_shards += 1
        if len(self.missing_shard_names) < KEPT:
            self.missing_shard_names.append(shard)


def expand(pattern: str) -> list[str]:
    """``/d/{00000..00002}.tar`` → the three paths (zero padding kept); a comma list ``a.tar,b.tar`` is not split
    here (``data.train_sets`` is already comma-separated)."""
    m = re.search(r"\{(\d+)\.\.(\d+)\}", pattern)
    if not m:
        return [pattern]
    lo, hi, width = int(m.group(1)), int(m.group(2)), len(m.group(1))
    if hi < lo:
        raise DataError(f"empty shard range in {pattern!r}")
    return [p for k in range(lo, hi + 1) for p in expand(pattern[:m.start()] + f"{k:0{width}d}" + pattern[m.end():])]


def shard_paths(spec: str) -> list[str]:
    """The shards a spec names, in order: a shard list (a path ending in ``.txt``; one shard a line, relative to the
    list's folder; blank lines and ``#`` comments ignored) or a brace pattern (``expand``)."""
    if not spec.endswith(".txt"):
        return expand(spec)
    listing = Path(spec)
    try:
        lines = listing.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise DataError(f"cannot read shard list {listing}: {err}; give a text file with one shard path a line "
                        f"(or a brace pattern such as /data/cc3m/{{00000..00331}}.tar)") from None
    names = [re.sub(r"(^|\s)#.*", "", line).strip() for line in lines]
    paths = [str(listing.parent / name) for name in names if name]
    if not paths:
        raise DataError(f"shard list {listing} names no shard (one path a line; # starts a comment)")
    return paths


def split_limit(spec: str) -> tuple[str, int | None]:
    """``/d/{0..9}.tar@100`` → (``/d/{0..9}.tar``, 100); no ``@N``: (spec, None)."""
    m = re.search(r"@(\d+)$", spec)
    return (spec[:m.start()], int(m.group(1))) if m else (spec, None)


def _index_file(shard: Path) -> Path:
    st = shard.stat()
    return (data_dir() / "shard-index"
            / f"{fingerprint([INDEX_VERSION, str(shard.resolve()), st.st_size, st.st_mtime_ns])}.json")


def index_shard(shard: str | os.PathLike, fresh: bool = False) -> tuple[list[dict], ShardReport]:
    """The usable samples of one shard as ``{"key", "offset", "size", "caption"}`` and its report (cached; ``fresh``:
    read from the shard itself even when cached, and the cache written anew: how a staged copy is checked)."""
    shard = Path(shard)
    if not shard.is_file():
        raise DataError(f"shard not found: {shard}")
    cached = _index_file(shard)
    if cached.exists() and not fresh:
        blob = json.loads(cached.read_text())
        return blob["samples"], ShardReport(**blob["report"])
    members: dict[str, dict] = {}
    try:
        with tarfile.open(shard, "r:") as tar, open(shard, "rb") as raw:
            for info in tar:                      # ends at the end-of-archive blocks, or silently at a cut header
                if not info.isfile():
                    continue
                key, _, ext = Path(info.name).name.partition(".")
                entry = members.setdefault(str(Path(info.name).parent / key), {})
                ext = ext.lower()
                if ext in IMAGE_EXTS:
                    entry["image"] = (info.offset_data, info.size, *_head_and_whole(raw, info.offset_data, info.size))
                elif ext == "txt":
                    entry["caption"] = tar.extractfile(info).read().decode("utf-8", errors="replace").strip()
            raw.seek(tar.offset)                  # where the member headers stopped
            whole = raw.read(len(END_OF_ARCHIVE)) == END_OF_ARCHIVE
    except (tarfile.TarError, OSError, EOFError) as err:
        raise DataError(f"cannot read shard {shard}: {err}; the file is not a (complete) tar archive: download it "
                        f"again, or delete it to have it skipped as a missing shard") from None
    samples, report = [], ShardReport(shards=1, samples=len(members))
    if not whole:
        report.cut_shards, report.cut_shard_names = 1, [str(shard)]
    for key, entry in members.items():
        problem = None
        if "image" not in entry:
            problem = "missing_image"
        elif not entry["image"][2].startswith(MAGIC):
            problem = "unreadable_image"
        elif not entry["image"][3]:
            problem = "truncated_image"
        elif "caption" not in entry:
            problem = "missing_caption"
        elif not entry["caption"]:
            problem = "empty_caption"
        if problem:
            report.count(problem, f"{shard.name}:{key}")
            continue
        offset, size, _, _ = entry["image"]
        samples.append({"key": key, "offset": offset, "size": size, "caption": entry["caption"]})
    report.pairs = len(samples)
    write_json_atomic(cached, {"shard": str(shard), "samples": samples, "report": asdict(report)})
    return samples, report


def _head_and_whole(raw, offset: int, size: int) -> tuple[bytes, bool]:
    """An image member's first bytes and whether it looks whole: its end marker within the last KiB (a JPEG whose
    marker is further from the end, e.g. one followed by a camera's trailer, is read whole to find it), or for a
    WebP the length its RIFF header states. A cheap check (two short reads); an image it passes may still fail to
    decode."""
    raw.seek(offset)
    head = raw.read(12)
    if head.startswith(b"RIFF"):
        return head, 8 + int.from_bytes(head[4:8], "little") <= size
    marker = next((m for start, m in END_MARKERS.items() if head.startswith(start)), None)
    if marker is None:
        return head, True                                  # not an image: ``unreadable_image`` says so
    raw.seek(offset + max(0, size - TAIL))
    if marker in raw.read(min(size, TAIL)):
        return head, True
    raw.seek(offset)
    return head, marker in raw.read(size)


def load_shards(spec: str, progress=None) -> tuple[list[PairRecord], ShardReport]:
    """Every usable pair of the shards a spec names (``shard_paths``), in shard order, and the summed report;
    ``spec@N`` keeps the first N and reads no shard after the one that completes them (fewer, if the shards hold
    fewer, as the report then shows). A missing shard is skipped, warned of and counted; more than MAX_MISSING of the
    shards looked at missing is a DataError. ``progress(read, listed, pairs)`` is called after each shard read."""
    spec, limit = split_limit(spec)
    paths = shard_paths(spec)
    records, total = [], ShardReport(requested=limit)
    for path in paths:
        if limit is not None and len(records) >= limit:
            break
        if not Path(path).is_file():
            total.miss(path)
            continue
        samples, report = index_shard(path)
        total.add(report)
        records += [PairRecord(f"{Path(path).name}:{s['key']}", TarMember(path, s["offset"], s["size"]),
                               (s["caption"],), "train") for s in samples]
        if progress:
            progress(total.shards, len(paths), len(records))
    _check_missing(spec, total)
    if limit is not None:
        records = records[:limit]
        total.pairs = len(records)
    if not records:
        raise DataError(f"no usable image-caption pair in {spec!r} ({total.samples} samples; broken: "
                        f"{total.broken_keys[:3]})")
    return records, total


def _check_missing(spec: str, total: ShardReport) -> None:
    """A DataError past MAX_MISSING of the shards looked at missing or cut short, else a DataWarning for each."""
    looked, names = total.shards + total.missing_shards, total.missing_shard_names
    if total.missing_shards > MAX_MISSING * looked:
        raise DataError(f"{total.missing_shards} of {looked} shards of {spec!r} are missing (e.g. "
                        f"{', '.join(names[:3])}), more than MAX_MISSING = {MAX_MISSING:.0%} of those looked at: check "
                        f"the path, or finish the download (or leave the missing shards out of the list)")
    gaps, cut = total.missing_shards + total.cut_shards, total.cut_shard_names
    if gaps > MAX_MISSING * looked:
        raise DataError(f"{total.cut_shards} of {looked} shards of {spec!r} are cut short (e.g. {', '.join(cut[:3])}: "
                        "no end-of-archive blocks)"
                        f"{f' and {total.missing_shards} missing' * bool(total.missing_shards)}"
                        f", more than MAX_MISSING = {MAX_MISSING:.0%} of those looked at: download them again")
    for name in cut:
        warnings.warn(f"shard cut short: {name} ends without tar's end-of-archive blocks; its whole samples are "
                      f"kept, those after the cut are lost: download it again ({total.cut_shards} of {looked} shards "
                      f"of {spec!r} cut short)", DataWarning, stacklevel=3)
    if total.cut_shards > len(cut):
        warnings.warn(f"… and {total.cut_shards - len(cut)} more shards of {spec!r} cut short", DataWarning,
                      stacklevel=3)
    for name in names:
        warnings.warn(f"shard not found: {name}; skipped ({total.missing_shards} of {looked} shards of {spec!r} "
                      f"missing, at most {MAX_MISSING:.0%} allowed)", DataWarning, stacklevel=3)
    if total.missing_shards > len(names):
        warnings.warn(f"… and {total.missing_shards - len(names)} more missing shards of {spec!r}", DataWarning,
                      stacklevel=3)
