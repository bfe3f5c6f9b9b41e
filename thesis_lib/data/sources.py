"""The real data sets' sources and the machinery every set's download shares (``data/download.py`` installs each set
and is the command line): ``SOURCES`` declares each set once (its files and their links, tried in order, its folder
under DATA, the counts it must reach, the archive sizes); ``obtain`` finds one file (``--source``, ``DATA/downloads/``,
its links) and checks it, ``extract`` writes an archive's members, and the counts (JPEGs, Karpathy's splits) say
whether what landed is complete.
"""
from __future__ import annotations

import gzip
import json
import shutil
import tarfile
import time
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..errors import DataError, DownloadError
from ..fetch import CHUNK, EVERY_S, fetch, file_name, say

COCO = "http://images.cocodataset.org/zips/"
KARPATHY = "https://cs.stanford.edu/people/karpathy/deepimagesent/caption_datasets.zip"
KARPATHY_ZIP = "caption_datasets.zip"
KARPATHY_JSON = {"dataset_coco.json": "coco", "dataset_flickr30k.json": "flickr30k"}   # member -> folder
# Karpathy's split files: the images of each split (train + restval counted together), each image once
KARPATHY_SPLITS = {"dataset_coco.json": {"train+restval": 113_287, "val": 5_000, "test": 5_000},
                   "dataset_flickr30k.json": {"train": 29_000, "val": 1_014, "test": 1_000}}
# Second sources, tried when caption_datasets.zip cannot be had: candidates named from the hub's listings (the
# openflamingo evaluation benchmark's copies, 144 MB and 111 MB), never fetched from the machines this was written on
# (they reach package registries only): their split counts decide whether they are Karpathy's files.
FLAMINGO = "https://huggingface.co/datasets/openflamingo/eval_benchmark/resolve/main/"
KARPATHY_SECOND = {"dataset_coco.json": (FLAMINGO + "mscoco_karpathy/karpathy_coco.json",),
                   "dataset_flickr30k.json": (FLAMINGO + "flickr30k/dataset_flickr30k.json",)}
# Flickr30K's images on the hub (4.39 GB; a candidate, not fetched here): counted like the request form's archive
FLICKR30K_HUB = "https://huggingface.co/datasets/nlphuji/flickr30k/resolve/main/flickr30k-images.zip"
COCO_ZIPS = ("train2014", "val2014")
VALPREP = "https://raw.githubusercontent.com/soumith/imagenetloader.torch/master/valprep.sh"
HF = "https://huggingface.co/datasets/pixparse/"


@dataclass(frozen=True)
class Source:
    folder: str                                                 # under DATA
    urls: dict[str, str | tuple[str, ...]]                      # file -> its links, tried in order ("shard": a
    #                                                             template with {index})
    expected: dict[str, int | dict]                             # what the check counts (a Karpathy JSON: its splits;
    #                                                             left out, as in the tests' tiny sets: not counted)
    sizes: dict[str, int] = field(default_factory=dict)         # archive -> bytes as served (a note if different)
    note: str = ""


_SPLIT_FILES = {KARPATHY_ZIP: KARPATHY, **KARPATHY_SECOND}

SOURCES = {
    "coco": Source("coco", {"train2014.zip": COCO + "train2014.zip", "val2014.zip": COCO + "val2014.zip",
                            **_SPLIT_FILES},
                   {"train2014": 82_783, "val2014": 40_504, **KARPATHY_SPLITS},
                   {"train2014.zip": 13_510_573_713, "val2014.zip": 6_645_013_297}),
    "flickr30k": Source("flickr30k", {**_SPLIT_FILES, "flickr30k-images.zip": FLICKR30K_HUB},
                        {"flickr30k-images": 31_783, **KARPATHY_SPLITS},
                        note="the request form (https://shannon.cs.illinois.edu/DenotationGraph/) was reported to "
                             "answer 404 in 2025-11: pass the archive you have as --archive, or leave --archive out to "
                             "try the copy on the Hugging Face hub (nlphuji/flickr30k)"),
    "imagenet": Source("imagenet", {"valprep.sh": VALPREP}, {"classes": 1_000, "per_class": 50},
                       {"ILSVRC2012_img_val.tar": 6_744_924_160},
                       note="download ILSVRC2012_img_val.tar from https://image-net.org (after login) and pass it "
                            "as --archive"),
    "cc3m": Source("cc3m", {"shard": HF + "cc3m-wds/resolve/main/cc3m-train-{index:04d}.tar"},
                   {"first": 0, "last": 575, "samples": 2_905_954},     # 576 shards, per pixparse/cc3m-wds's README
                   note="img2dataset fetched 2,905,954 of CC3M's 3,318,333 training pairs (2021-12-22)"),
    "cc12m": Source("cc12m", {"shard": HF + "cc12m-wds/resolve/main/cc12m-train-{index:04d}.tar"},
                    {"first": 0, "last": 2175},
                    note="2175: the last of the 2,176 shards open_clip's README gives for CC12M (10,968,539 samples); "
                         "indices past the real end fail as missing shards"),
}


# ----------------------------------------------------------------------------------------------------- archives

def base(member: str) -> str:
    return PurePosixPath(member.replace("\\", "/")).name


def is_jpeg(member: str) -> bool:
    name = base(member)
    return not name.startswith(".") and name.lower().endswith((".jpg", ".jpeg"))


def _members(archive: Path):
    """Each regular file of a zip or tar (.gz, .bz2, .xz) archive as (name, size, stream), in archive order; of a
    folder (an archive extracted already, e.g. ImageNet's ``val/``), each file under it, by its path in it."""
    if archive.is_dir():
        for path in sorted(p for p in archive.rglob("*") if p.is_file()):
            with open(path, "rb") as stream:
                yield str(path.relative_to(archive)), path.stat().st_size, stream
        return
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                if not info.is_dir():
                    with zf.open(info) as stream:
                        yield info.filename, info.file_size, stream
        return
    try:
        with tarfile.open(archive, "r|*") as tar:
            for info in tar:
                if info.isfile():
                    yield info.name, info.size, tar.extractfile(info)
    except (tarfile.TarError, EOFError, OSError) as err:
        raise DataError(f"{archive} cannot be read as a zip or tar archive ({err}); it is cut off or another file: "
                        "download it again") from None


def extract(archive: Path, place) -> dict[str, int]:
    """Write each member of ``archive`` that ``place(member name)`` maps to a path (None: left out); a file already
    there with the member's size is kept (a folder given as the archive: its files). Returns how many were written,
    kept and left out."""
    if not archive.exists():
        raise DataError(f"archive not found: {archive}")
    done, last = {"written": 0, "kept": 0, "left out": 0}, time.monotonic()
    try:
        for name, size, stream in _members(archive):
            target = place(name)
            if target is None:
                done["left out"] += 1
            elif target.is_file() and target.stat().st_size == size:
                done["kept"] += 1
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                with open(target, "wb") as out:
                    shutil.copyfileobj(stream, out, CHUNK)
                done["written"] += 1
            if time.monotonic() - last >= EVERY_S:
                last = time.monotonic()
                say(f"  {archive.name}: {done['written'] + done['kept']:,} files")
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, gzip.BadGzipFile, zlib.error) as err:
        raise DataError(f"{archive} is damaged ({err}) after {sum(done.values()):,} files; download it again") from None
    return done


def links(source: Source, name: str) -> tuple[str, ...]:
    """The links of one of ``source``'s files, in the order they are tried."""
    found = source.urls.get(name, ())
    return (found,) if isinstance(found, str) else tuple(found)


def _room(path: Path, root: Path, declared: int | None) -> None:
    free = shutil.disk_usage(path.parent).free
    if declared and free < 2 * declared:
        raise DataError(f"{path.name} needs about {2 * declared / 1e9:,.1f} GB free under {root} (the archive and its "
                        f"images); {free / 1e9:,.1f} GB are")


def _accepted(path: Path, check, said: str) -> Path:
    """``path`` if ``check`` accepts it; a DataError naming ``said`` (where the file came from) if not."""
    if check is not None:
        try:
            check(path)
        except DataError as err:
            raise DataError(f"{said}: {err}") from None
    return path


def obtain(root: Path, name: str, source: Source, given: dict | None = None, check=None) -> Path:
    """Where the file ``name`` of ``source`` is read from (see ``data/download.py``'s docstring), checked by
    ``check(path)`` (a ``DataError`` for a wrong file; None: the counts after extraction decide):

    1. ``given[name]`` (``--source NAME=PATH_OR_URL``): a local file is read where it lies; a URL is fetched to
       ``DATA/downloads/NAME``, ``THESIS_MIRROR`` left aside;
    2. ``DATA/downloads/NAME``, placed there by hand or by an earlier run;
    3. each link of the file in order (``THESIS_MIRROR`` applies), fetched to ``DATA/downloads/`` under the link's
       file name, until one answers with a file ``check`` accepts; a fetched file it refuses is deleted.

    A given or placed file ``check`` refuses is a ``DataError`` (never deleted: it is yours); no link left is a
    ``DownloadError`` naming what each one answered."""
    downloads, declared = root / "downloads", source.sizes.get(name)
    downloads.mkdir(parents=True, exist_ok=True)
    where = (given or {}).get(name)
    if where and "://" not in where:
        path = Path(where).expanduser()
        if not path.is_file():
            raise DataError(f"--source {name}={where}: no such file")
        say(f"{name}: reading {path} (--source)")
        return _accepted(path, check, f"--source {name}={where}")
    if where:
        dest = downloads / name
        if not dest.is_file():
            _room(dest, root, declared)
            fetch(where, dest, mirror=False)
        try:
            return _accepted(dest, check, f"{dest} (from --source {name}={where})")
        except DataError:
            dest.unlink(missing_ok=True)
            raise
    placed = downloads / name
    if placed.is_file():
        say(f"{name}: using {placed}, already there")
        return _note_size(_accepted(placed, check, f"{placed} (already in {downloads}: replace it, or delete it to "
                                                   "fetch it)"), declared)
    failures = []
    for url in links(source, name):
        dest = downloads / file_name(url)
        if not dest.is_file():
            _room(dest, root, declared)
            try:
                fetch(url, dest)
            except DownloadError as err:
                failures.append(str(err))
                say(f"{name}: {err}" + ("; trying the next link" if url != links(source, name)[-1] else ""))
                continue
        try:
            return _note_size(_accepted(dest, check, f"{dest} (from {url})"), declared)
        except DataError as err:
            failures.append(str(err))
            dest.unlink(missing_ok=True)
            say(f"{name}: {err}; deleted")
    raise DownloadError(f"{name}: no link gave it ({' | '.join(failures) or 'no link declared'}); place the file in "
                        f"{downloads}/ or pass --source {name}=PATH_OR_URL")


def _note_size(path: Path, declared: int | None) -> Path:
    if declared and path.stat().st_size != declared:
        say(f"note: {path} has {path.stat().st_size:,} bytes, {declared:,} were declared; the counts decide")
    return path


def count_images(folder: Path, suffixes=(".jpg", ".jpeg")) -> int:
    return sum(1 for p in folder.iterdir() if p.suffix.lower() in suffixes) if folder.is_dir() else 0


def _named(json_path: Path) -> list[str]:
    """The image paths (``filepath/filename``) a Karpathy JSON names, each once."""
    images = json.loads(json_path.read_text())["images"]
    return sorted({str(PurePosixPath(img.get("filepath", ""), img["filename"])) for img in images})


def all_named_exist(json_path: Path, image_root: Path) -> int:
    """How many images a Karpathy JSON names; a ``DataError`` when any of them is not under ``image_root``."""
    named = _named(json_path)
    missing = [rel for rel in named if not (image_root / rel).is_file()]
    if missing:
        raise DataError(f"{len(missing):,} of the {len(named):,} images {json_path.name} names are not under "
                        f"{image_root} (first: {missing[:3]})")
    return len(named)


def split_counts(path: Path, groups=None) -> dict[str, int]:
    """The images of each split of a Karpathy JSON (``filepath/filename``, each once); ``groups`` (e.g.
    ``("train+restval", "val", "test")``) counts the splits a group joins with ``+`` together. A ``DataError`` when
    the file is not a Karpathy JSON."""
    try:
        images = json.loads(Path(path).read_bytes())["images"]
        per_split: dict[str, set] = {}
        for img in images:
            per_split.setdefault(img["split"], set()).add(str(PurePosixPath(img.get("filepath", ""), img["filename"])))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise DataError(f"{Path(path).name} is not a Karpathy split file (a JSON whose 'images' each have a 'split' "
                        f"and a 'filename'): {type(err).__name__} {err}") from None
    if groups is None:
        return {split: len(names) for split, names in sorted(per_split.items())}
    return {group: len(set().union(*(per_split.get(s, set()) for s in group.split("+")))) for group in groups}


def said(counts: dict[str, int]) -> str:
    return ", ".join(f"{group} {n:,}" for group, n in counts.items())


def check_splits(path: Path, name: str, source: Source) -> dict[str, int]:
    """A Karpathy JSON's images per split, checked against ``source.expected[name]`` (Karpathy's, ``KARPATHY_SPLITS``;
    not counted where a test's ``Source`` leaves them out)."""
    want = source.expected.get(name)
    got = split_counts(path, tuple(want) if want else None)
    if want and got != want:
        raise DataError(f"it holds {said(got)} images, Karpathy's {name} {said(want)}: another split file")
    return got
