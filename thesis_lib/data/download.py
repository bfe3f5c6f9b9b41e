"""Download the real data sets into one data root, in the layout ``data/roots.py`` reads, and count what landed.

    python -m thesis_lib.data.download coco DATA                  # COCO 2014 images + Karpathy's splits
    python -m thesis_lib.data.download flickr30k DATA --archive flickr30k-images.tar.gz
    python -m thesis_lib.data.download imagenet DATA --archive ILSVRC2012_img_val.tar
    python -m thesis_lib.data.download cc3m DATA --pairs 2000000  # webdataset shards until N usable pairs
    python -m thesis_lib.data.download cc12m DATA --pairs 8000000

``SOURCES`` declares each set once: its URLs, its folder under DATA, the counts it must reach, the archive sizes.

* ``coco``: ``train2014.zip`` and ``val2014.zip`` (images.cocodataset.org) → ``coco/images/{train2014,val2014}/``;
  Karpathy's ``caption_datasets.zip`` → ``coco/dataset_coco.json`` and ``flickr30k/dataset_flickr30k.json``. The
  folders must hold 82,783 and 40,504 JPEGs, and every image the JSON names must be there.
* ``flickr30k --archive``: the images archive of the Flickr30K request form (no public URL) →
  ``flickr30k/flickr30k-images/`` (31,783 JPEGs, each one named by ``dataset_flickr30k.json``).
* ``imagenet --archive``: ``ILSVRC2012_img_val.tar`` (image-net.org, after login) → ``imagenet/val/<wnid>/*.JPEG``,
  sorted by the mapping of soumith/imagenetloader.torch's ``valprep.sh``, which is parsed here (its ``mkdir -p
  <wnid>`` and ``mv <file> <wnid>/`` lines), never executed; 1,000 folders of 50 images.
* ``cc3m`` / ``cc12m --pairs N``: the webdataset shards pixparse made with img2dataset on the Hugging Face hub,
  fetched one at a time in order into ``cc3m/`` (``cc12m/``), each indexed as it lands
  (``thesis_lib.data.shards.index_shard``: the training index is built here, once, under ``THESIS_DATA``) until the
  usable pairs reach N. A shard that fails (missing, cut off — mid-member, or at a member's header, found by its
  missing end-of-archive blocks —, not a tar) is skipped and counted; the command fails
  only when more than 5 % of the shards tried failed. ``shards.txt`` lists the landed shards, one file name a line,
  for ``data.train_sets=wds:DATA/cc3m/shards.txt@N``.

Archives are kept in ``DATA/downloads/`` (delete them once the counts pass); a file already in place with the
archive member's size is not written again, and an archive or shard already downloaded is not fetched again.
``THESIS_MIRROR`` reads every URL from a mirror folder instead (``thesis_lib/fetch.py``).
"""
from __future__ import annotations

import argparse
import gzip
import json
import re
import shutil
import sys
import tarfile
import time
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..cache import write_text_atomic
from ..errors import DataError, ThesisError
from ..fetch import CHUNK, EVERY_S, fetch, file_name, say
from .shards import index_shard

COCO = "http://images.cocodataset.org/zips/"
KARPATHY = "https://cs.stanford.edu/people/karpathy/deepimagesent/caption_datasets.zip"
KARPATHY_JSON = {"dataset_coco.json": "coco", "dataset_flickr30k.json": "flickr30k"}   # member -> folder
VALPREP = "https://raw.githubusercontent.com/soumith/imagenetloader.torch/master/valprep.sh"
HF = "https://huggingface.co/datasets/pixparse/"
MAX_FAILED = 0.05          # the share of the shards tried that may fail
MIN_TRIED = 20             # shards tried before a failure rate above MAX_FAILED stops the download early


@dataclass(frozen=True)
class Source:
    folder: str                                                 # under DATA
    urls: dict[str, str]                                        # file -> URL ("shard": a template with {index})
    expected: dict[str, int]                                    # what the check counts
    sizes: dict[str, int] = field(default_factory=dict)         # archive -> bytes as served (a note if different)
    note: str = ""


SOURCES = {
    "coco": Source("coco", {"train2014.zip": COCO + "train2014.zip", "val2014.zip": COCO + "val2014.zip",
                            "caption_datasets.zip": KARPATHY},
                   {"train2014": 82_783, "val2014": 40_504},
                   {"train2014.zip": 13_510_573_713, "val2014.zip": 6_645_013_297}),
    "flickr30k": Source("flickr30k", {"caption_datasets.zip": KARPATHY}, {"flickr30k-images": 31_783},
                        note="no public URL: request the images at https://shannon.cs.illinois.edu/DenotationGraph/ "
                             "and pass the archive you receive as --archive"),
    "imagenet": Source("imagenet", {"valprep.sh": VALPREP}, {"classes": 1_000, "per_class": 50},
                       {"ILSVRC2012_img_val.tar": 6_744_924_160},
                       note="download ILSVRC2012_img_val.tar from https://image-net.org (after login) and pass it "
                            "as --archive"),
    "cc3m": Source("cc3m", {"shard": HF + "cc3m-wds/resolve/main/cc3m-train-{index:04d}.tar"},
                   {"first": 0, "last": 575, "samples": 2_905_954},     # 576 shards, per pixparse/cc3m-wds's README
                   note="img2dataset fetched 2,905,954 of CC3M's 3,318,333 training pairs (2021-12-22)"),
    "cc12m": Source("cc12m", {"shard": HF + "cc12m-wds/resolve/main/cc12m-train-{index:04d}.tar"},
                    {"first": 0, "last": 2175},
                    note="2175: an upper bound to try (the last shard index a listing of the repository showed); "
                         "indices past the real end fail as missing shards"),
}


# ----------------------------------------------------------------------------------------------------- archives

def _base(member: str) -> str:
    return PurePosixPath(member.replace("\\", "/")).name


def _is_jpeg(member: str) -> bool:
    base = _base(member)
    return not base.startswith(".") and base.lower().endswith((".jpg", ".jpeg"))


def _members(archive: Path):
    """Each regular file of a zip or tar (.gz, .bz2, .xz) archive as (name, size, stream), in archive order."""
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
    there with the member's size is kept. Returns how many were written, kept and left out."""
    if not archive.is_file():
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


def _archive(root: Path, name: str, source: Source) -> Path:
    """``DATA/downloads/<name>``, fetched unless it is there; a size other than the declared one is noted."""
    path, declared = root / "downloads" / name, source.sizes.get(name)
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        free = shutil.disk_usage(path.parent).free
        if declared and free < 2 * declared:
            raise DataError(f"{name} needs about {2 * declared / 1e9:,.1f} GB free under {root} (the archive and its "
                            f"images); {free / 1e9:,.1f} GB are")
        fetch(source.urls[name], path)
    if declared and path.stat().st_size != declared:
        say(f"note: {path} has {path.stat().st_size:,} bytes, {declared:,} were declared; the counts decide")
    return path


def count_images(folder: Path, suffixes=(".jpg", ".jpeg")) -> int:
    return sum(1 for p in folder.iterdir() if p.suffix.lower() in suffixes) if folder.is_dir() else 0


def _named(json_path: Path) -> list[str]:
    """The image paths (``filepath/filename``) a Karpathy JSON names, each once."""
    images = json.loads(json_path.read_text())["images"]
    return sorted({str(PurePosixPath(img.get("filepath", ""), img["filename"])) for img in images})


def _all_named_exist(json_path: Path, image_root: Path) -> int:
    """How many images a Karpathy JSON names; a ``DataError`` when any of them is not under ``image_root``."""
    named = _named(json_path)
    missing = [rel for rel in named if not (image_root / rel).is_file()]
    if missing:
        raise DataError(f"{len(missing):,} of the {len(named):,} images {json_path.name} names are not under "
                        f"{image_root} (first: {missing[:3]})")
    return len(named)


# ------------------------------------------------------------------------------------------------------- the sets

def karpathy(root: Path, source: Source) -> None:
    """Karpathy's split files (``caption_datasets.zip``) into ``coco/`` and ``flickr30k/`` unless both are there."""
    targets = {name: root / folder / name for name, folder in KARPATHY_JSON.items()}
    if all(p.is_file() for p in targets.values()):
        return
    archive = _archive(root, "caption_datasets.zip", source)
    extract(archive, lambda name: targets.get(_base(name)))
    absent = [name for name, p in targets.items() if not p.is_file()]
    if absent:
        raise DataError(f"{archive} holds no {', '.join(absent)}; it is not Karpathy's caption_datasets.zip: "
                        "delete it and run again")


def coco(root: Path, source: Source = SOURCES["coco"]) -> dict[str, int]:
    images, counts = root / source.folder / "images", {}
    for split, want in source.expected.items():
        folder = images / split
        if count_images(folder) != want:
            extract(_archive(root, f"{split}.zip", source), lambda n, f=folder: f / _base(n) if _is_jpeg(n) else None)
        counts[split] = count_images(folder)
        if counts[split] != want:
            raise DataError(f"{folder} holds {counts[split]:,} JPEGs after extracting {split}.zip, expected "
                            f"{want:,}: delete {root / 'downloads' / f'{split}.zip'} and run again")
    karpathy(root, source)
    return {**counts, "dataset_coco.json": _all_named_exist(root / source.folder / "dataset_coco.json", images)}


def flickr30k(root: Path, archive: Path, source: Source = SOURCES["flickr30k"]) -> dict[str, int]:
    folder = root / source.folder / "flickr30k-images"
    if not Path(archive).is_file():
        raise DataError(f"archive not found: {archive}; {source.note}")
    karpathy(root, source)
    extract(Path(archive), lambda n: folder / _base(n) if _is_jpeg(n) else None)
    n, want = count_images(folder), source.expected["flickr30k-images"]
    if n != want:
        raise DataError(f"{folder} holds {n:,} JPEGs, expected {want:,}: {archive} is incomplete or another archive")
    return {folder.name: n,
            "dataset_flickr30k.json": _all_named_exist(root / source.folder / "dataset_flickr30k.json", folder)}


WNID = re.compile(r"n\d{8}$")
VAL_IMAGE = re.compile(r"[\w-]+\.JPEG$")


def parse_valprep(text: str) -> dict[str, str]:
    """valprep.sh's mapping, image file name -> wnid, from its ``mkdir -p <wnid>`` and ``mv <file> <wnid>/`` lines
    (any other line is ignored; nothing is executed)."""
    folders, mapping = set(), {}
    for line in text.splitlines():
        words = line.split()
        if len(words) == 3 and words[:2] == ["mkdir", "-p"] and WNID.match(words[2]):
            folders.add(words[2])
        elif len(words) == 3 and words[0] == "mv" and VAL_IMAGE.match(words[1]) and WNID.match(words[2].rstrip("/")):
            mapping[words[1]] = words[2].rstrip("/")
    if not mapping:
        raise DataError("valprep.sh holds no 'mv <file> <wnid>/' line: it is not soumith/imagenetloader.torch's "
                        f"script ({VALPREP})")
    unmade = sorted(set(mapping.values()) - folders)
    if unmade:
        raise DataError(f"valprep.sh moves images into folders it never makes: {unmade[:3]}")
    return mapping


def imagenet(root: Path, archive: Path, source: Source = SOURCES["imagenet"]) -> dict[str, int]:
    if not Path(archive).is_file():
        raise DataError(f"archive not found: {archive}; {source.note}")
    script = root / "downloads" / "valprep.sh"
    fetch(source.urls["valprep.sh"], script)
    mapping = parse_valprep(script.read_text())
    val = root / source.folder / "val"
    done = extract(Path(archive), lambda n: val / mapping[_base(n)] / _base(n) if _base(n) in mapping else None)
    counts = {wnid: count_images(val / wnid, (".jpeg",)) for wnid in sorted(set(mapping.values()))}
    classes, per_class = source.expected["classes"], source.expected["per_class"]
    wrong = {wnid: n for wnid, n in counts.items() if n != per_class}
    if len(counts) != classes or wrong:
        raise DataError(f"{val}: {len(counts):,} class folders (expected {classes:,}), {len(wrong):,} of them without "
                        f"{per_class} images (first: {dict(list(wrong.items())[:3])}); {done['left out']:,} files of "
                        f"{Path(archive).name} are not in valprep.sh: is it ILSVRC2012_img_val.tar?")
    return {"classes": len(counts), "images": sum(counts.values())}


def download_shards(root: Path, what: str, pairs: int, source: Source | None = None,
                    max_failed: float = MAX_FAILED) -> dict:
    """The shards of ``what`` in order until their usable pairs reach ``pairs``; writes ``shards.txt`` (see the
    module's docstring) and prints the summary. A ``DataError`` when too many shards failed or too few pairs landed."""
    source = source or SOURCES[what]
    folder = root / source.folder
    folder.mkdir(parents=True, exist_ok=True)
    landed, failed, total, tried = [], [], 0, 0
    for index in range(source.expected.get("first", 0), source.expected["last"] + 1):
        if total >= pairs or (tried >= MIN_TRIED and len(failed) > max_failed * tried):
            break
        url = source.urls["shard"].format(index=index)
        dest, tried = folder / file_name(url), tried + 1
        try:
            if not dest.is_file():
                fetch(url, dest)
            _, report = index_shard(dest)
            if report.cut_shards:                                 # cut at a member's header: reads as a tar
                raise DataError("cut short: no end-of-archive blocks, the samples after the cut are lost")
        except DataError as err:                                  # missing, cut off, not a tar
            failed.append(f"{dest.name}: {err}")
            dest.unlink(missing_ok=True)
            say(f"{dest.name}: skipped ({err})")
            continue
        landed.append(dest.name)
        total += report.pairs
        say(f"{dest.name}: {report.pairs:,} usable pairs of {report.samples:,} samples; {total:,} of {pairs:,}")
    write_text_atomic(folder / "shards.txt", "".join(f"{name}\n" for name in landed))
    size = sum((folder / name).stat().st_size for name in landed)
    summary = {"shards": len(landed), "pairs": total, "bytes": size, "failed": len(failed), "tried": tried}
    print(f"{what}: {len(landed):,} shards, {total:,} usable pairs, {size / 1e9:,.1f} GB in {folder}; "
          f"{len(failed):,} of {tried:,} shards tried failed")
    if len(failed) > max_failed * tried:
        raise DataError(f"{len(failed)} of the {tried} {what} shards tried failed (more than {max_failed:.0%}; first: "
                        f"{failed[0]}); check the network or the mirror and run again (landed shards are kept)")
    if total < pairs:
        raise DataError(f"{what}'s shards up to index {source.expected['last']} hold {total:,} usable pairs, fewer "
                        f"than the {pairs:,} asked for; {folder / 'shards.txt'} lists them")
    print(f"train with: --set data.train_sets=coco,wds:{folder / 'shards.txt'}@{pairs}")
    return summary


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m thesis_lib.data.download", description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=list(SOURCES), help="the data set")
    p.add_argument("data", type=Path, help="the data root (later passed as data_root)")
    p.add_argument("--archive", type=Path, help="flickr30k, imagenet: the archive you downloaded")
    p.add_argument("--pairs", type=int, help="cc3m, cc12m: stop once this many usable pairs landed")
    args = p.parse_args(argv)
    if args.what in ("flickr30k", "imagenet") and not args.archive:
        p.error(f"{args.what} needs --archive: {SOURCES[args.what].note}")
    if args.what in ("cc3m", "cc12m") and not (args.pairs and args.pairs > 0):
        p.error(f"{args.what} needs --pairs N (N > 0): the usable pairs to download")
    try:
        if args.what in ("cc3m", "cc12m"):
            download_shards(args.data, args.what, args.pairs)
            return 0
        counts = (coco(args.data) if args.what == "coco" else
                  flickr30k(args.data, args.archive) if args.what == "flickr30k" else imagenet(args.data, args.archive))
    except ThesisError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{args.what}: " + ", ".join(f"{k} {v:,}" for k, v in counts.items()) + f" (all as expected) in {args.data}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
