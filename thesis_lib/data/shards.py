"""Web-scale training pairs stored the way the field stores them: webdataset shards as img2dataset writes them
(``00000.tar`` … each holding ``<key>.jpg``, ``<key>.txt`` (the caption) and ``<key>.json``), selected with

    --set data.train_sets=coco,wds:/data/cc3m/{00000..00331}.tar
    --set data.train_sets=coco,wds:/data/cc3m/{00000..00331}.tar@1516133    # the first 1,516,133 usable pairs

Each shard is indexed once (its tar headers and captions; cached under ``THESIS_DATA/shard-index/``, keyed by the
shard's path, size and modification time): a sample becomes a ``PairRecord`` whose image is a ``TarMember`` (shard,
offset, size), read by seeking into the tar. The training pairs therefore stay map-style
(``data/train_pairs.py``): an epoch is a seeded permutation of all pairs of all sets, each rank takes its slice of
every step and the DataLoader workers decode the items they are handed. Every sample is seen exactly once per epoch
across ranks × workers, and a resumed run continues at its step with the batches it would have had: no shard is
replayed or skipped.

Broken samples are counted, never dropped silently: a key without an image, with an image whose bytes are not a
JPEG, PNG or WebP, whose image is cut short (a JPEG without its end-of-image marker FF D9, a PNG without its IEND
chunk, a WebP shorter than its RIFF header says), without a caption or with an empty one, is left out of the index
and counted in ``ShardReport``, which the run's result records (``train.shards``); the index is the same at every
start, so a resumed run sees the same pairs in the same order. An image that passes these cheap checks and still
fails to decode is found only when a DataLoader worker decodes it for a batch: its pair is replaced by the next one
that decodes, a ``DataWarning`` names it and the result counts it (data/train_pairs.py, docs/bad_inputs.md). A shard
that is missing or cannot be read as a tar file is a ``DataError`` naming it.
"""
from __future__ import annotations

import json
import os
import re
import tarfile
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from ..cache import fingerprint, write_json_atomic
from ..errors import DataError
from ..paths import data_dir
from .datasets import PairRecord, TarMember

IMAGE_EXTS = ("jpg", "jpeg", "png", "webp")
MAGIC = (b"\xff\xd8\xff", b"\x89PNG", b"RIFF")
END_MARKERS = {b"\xff\xd8": b"\xff\xd9", b"\x89PNG": b"IEND"}   # JPEG end of image, PNG's last chunk
TAIL = 1024                       # an end marker may be followed by a little padding: looked for in the last KiB
INDEX_VERSION = 2                 # 2: truncated images are left out of the index


@dataclass
class ShardReport:
    """What the shards held: samples (keys), usable pairs, and each kind of broken sample."""
    shards: int = 0
    samples: int = 0
    pairs: int = 0
    missing_image: int = 0
    unreadable_image: int = 0                             # not a JPEG, PNG or WebP
    truncated_image: int = 0                              # cut short (found when indexing)
    missing_caption: int = 0
    empty_caption: int = 0
    requested: int | None = None                          # ``@N``: the subset size asked for
    broken_keys: list = field(default_factory=list)       # the first few, to look at

    def add(self, other: "ShardReport") -> "ShardReport":
        for f in fields(self):                                # the counters; the request and the keys are not summed
            if f.name not in ("requested", "broken_keys"):
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        self.broken_keys = (self.broken_keys + other.broken_keys)[:20]
        return self

    def count(self, problem: str, key: str) -> None:
        """One more broken sample of kind ``problem`` (a counter's name); the first 20 keys are kept."""
        setattr(self, problem, getattr(self, problem) + 1)
        if len(self.broken_keys) < 20:
            self.broken_keys.append(f"{key} ({problem})")


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


def _index_file(shard: Path) -> Path:
    st = shard.stat()
    return data_dir() / "shard-index" / f"{fingerprint([INDEX_VERSION, str(shard.resolve()), st.st_size, st.st_mtime_ns])}.json"


def index_shard(shard: str | os.PathLike) -> tuple[list[dict], ShardReport]:
    """The usable samples of one shard as ``{"key", "offset", "size", "caption"}`` and its report (cached)."""
    shard = Path(shard)
    if not shard.is_file():
        raise DataError(f"shard not found: {shard}")
    cached = _index_file(shard)
    if cached.exists():
        blob = json.loads(cached.read_text())
        return blob["samples"], ShardReport(**blob["report"])
    members: dict[str, dict] = {}
    try:
        with tarfile.open(shard, "r:") as tar, open(shard, "rb") as raw:
            for info in tar:
                if not info.isfile():
                    continue
                key, _, ext = Path(info.name).name.partition(".")
                entry = members.setdefault(str(Path(info.name).parent / key), {})
                ext = ext.lower()
                if ext in IMAGE_EXTS:
                    entry["image"] = (info.offset_data, info.size, *_head_and_whole(raw, info.offset_data, info.size))
                elif ext == "txt":
                    entry["caption"] = tar.extractfile(info).read().decode("utf-8", errors="replace").strip()
    except (tarfile.TarError, OSError, EOFError) as err:
        raise DataError(f"cannot read shard {shard}: {err}; the file is not a (complete) tar archive") from None
    samples, report = [], ShardReport(shards=1, samples=len(members))
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


def load_shards(pattern: str) -> tuple[list[PairRecord], ShardReport]:
    """Every usable pair of the shards a pattern names, in shard order, and the summed report; ``pattern@N`` keeps
    the first N (a subset of the thesis's size; fewer, if the shards hold fewer, as the report then shows)."""
    pattern, _, limit = pattern.rpartition("@") if re.search(r"@\d+$", pattern) else (pattern, "", "")
    records, total = [], ShardReport(requested=int(limit) if limit else None)
    for path in expand(pattern):
        samples, report = index_shard(path)
        total.add(report)
        records += [PairRecord(f"{Path(path).name}:{s['key']}", TarMember(path, s["offset"], s["size"]),
                               (s["caption"],), "train") for s in samples]
    if limit:
        records = records[:int(limit)]
        total.pairs = len(records)
    if not records:
        raise DataError(f"no usable image-caption pair in {pattern!r} ({total.samples} samples; broken: "
                        f"{total.broken_keys[:3]})")
    return records, total
