"""Download the real data sets into one data root, in the layout ``data/roots.py`` reads, and count what landed.

    python -m thesis_lib.data.download coco DATA                  # Karpathy's splits, then the COCO 2014 images
    python -m thesis_lib.data.download flickr30k DATA             # the hub's copy (the request form's links are dead)
    python -m thesis_lib.data.download imagenet DATA --archive ILSVRC2012_img_val.tar
    python -m thesis_lib.data.download cc3m DATA --pairs 2000000  # webdataset shards until N usable pairs
    python -m thesis_lib.data.download cc12m DATA --pairs 8000000
    python -m thesis_lib.data.download coco DATA --source caption_datasets.zip=/elsewhere/caption_datasets.zip

``SOURCES`` (``data/sources.py``, with the fetching, extracting and counting every set shares) declares each set
once: its files and their links (tried in order), its folder under DATA, the counts it must reach, the archive sizes.

* ``coco``: Karpathy's splits first (small: a dead link shows before the 20 GB of images), then ``train2014.zip`` and
  ``val2014.zip`` (images.cocodataset.org) → ``coco/images/{train2014,val2014}/``. The splits come from Karpathy's
  ``caption_datasets.zip`` (cs.stanford.edu, reported 404 since 2023-09: ruotianluo/ImageCaptioning.pytorch issue
  184) → ``coco/dataset_coco.json`` and ``flickr30k/dataset_flickr30k.json``; when it cannot be had, each JSON from
  its second source (``KARPATHY_SECOND``: copies on the Hugging Face hub, candidates never fetched from the machines
  this was written on; their content is what decides). Each JSON must hold Karpathy's images per split
  (``KARPATHY_SPLITS``: COCO 113,287 train + restval, 5,000 val, 5,000 test; Flickr30K 29,000 / 1,014 / 1,000), the
  image folders 82,783 and 40,504 JPEGs, and every image the JSON names must be there.
* ``flickr30k [--archive F]``: the images archive of the Flickr30K request form (whose links were reported 404 in
  2025-11: iSEE-Laboratory/LLMDet issue 70), or without ``--archive`` the copy on the Hugging Face hub
  (``nlphuji/flickr30k``'s ``flickr30k-images.zip``, a candidate, not fetched here) → ``flickr30k/flickr30k-images/``
  (31,783 JPEGs, each one named by ``dataset_flickr30k.json``).
* ``imagenet --archive``: ``ILSVRC2012_img_val.tar`` (image-net.org, after login), or the ``val/`` folder it was
  extracted to → ``imagenet/val/<wnid>/*.JPEG``,
  sorted by the mapping of soumith/imagenetloader.torch's ``valprep.sh``, which is parsed here (its ``mkdir -p
  <wnid>`` and ``mv <file> <wnid>/`` lines), never executed; 1,000 folders of 50 images.
* ``cc3m`` / ``cc12m --pairs N``: the webdataset shards pixparse made with img2dataset on the Hugging Face hub,
  fetched one at a time in order into ``cc3m/`` (``cc12m/``), each indexed as it lands
  (``thesis_lib.data.shards.index_shard``: the training index is built here, once, under ``THESIS_DATA``) until the
  usable pairs reach N. A shard that fails (missing, cut off — mid-member, or at a member's header, found by its
  missing end-of-archive blocks —, not a tar) is skipped and counted; the command fails
  only when more than 5 % of the shards tried failed. ``shards.txt`` lists the landed shards, one file name a line,
  for ``data.train_sets=wds:DATA/cc3m/shards.txt@N``.

Where each file comes from (``obtain``), the first that exists deciding: ``--source NAME=PATH_OR_URL`` (a local file
is read where it lies, a URL is fetched into ``DATA/downloads/``, past ``THESIS_MIRROR``); the file already in
``DATA/downloads/NAME`` (placed there by hand, or by an earlier run); then the file's links in order. Every file is
checked as it would be from its first link (the split counts, the JPEG counts, valprep.sh's lines, a shard's index):
a fetched file that fails is deleted and the next link tried; a given or placed one that fails stops the command
with the reason (it is never deleted). Archives are kept in ``DATA/downloads/`` (delete them once the counts pass); a
file already in place with the archive member's size is not written again. ``THESIS_MIRROR`` reads every link from a
mirror folder instead (``thesis_lib/fetch.py``).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
from pathlib import Path

from ..cache import write_text_atomic
from ..errors import DataError, DownloadError, ThesisError
from ..fetch import fetch, file_name, say
from .shards import index_shard
from .sources import (COCO_ZIPS, KARPATHY_JSON, KARPATHY_ZIP, SOURCES, VALPREP, Source, all_named_exist, base,
                      check_splits, count_images, extract, is_jpeg, obtain, said)

MAX_FAILED = 0.05          # the share of the shards tried that may fail
MIN_TRIED = 20             # shards tried before a failure rate above MAX_FAILED stops the download early


def _install(src: Path, target: Path) -> None:
    """``src`` copied to ``target`` atomically (a JSON from downloads/ or from --source)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    shutil.copyfile(src, part)
    os.replace(part, target)


def _from_zip(names: dict[str, Path], source: Source):
    """The check of a ``caption_datasets.zip``: it holds each JSON of ``names`` with Karpathy's split counts; each is
    extracted beside its target as ``<target>.part`` on the way (moved into place once the zip is accepted)."""
    def check(archive: Path) -> None:
        parts = {name: target.with_name(target.name + ".part") for name, target in names.items()}
        try:
            extract(archive, lambda member: parts.get(base(member)))
            absent = [name for name, part in parts.items() if not part.is_file()]
            if absent:
                raise DataError(f"it holds no {', '.join(absent)}: not Karpathy's {KARPATHY_ZIP}")
            for name, part in parts.items():
                check_splits(part, name, source)
        except DataError:
            for part in parts.values():
                part.unlink(missing_ok=True)
            raise
    return check


# ------------------------------------------------------------------------------------------------------- the sets

def karpathy(root: Path, source: Source = SOURCES["coco"], given: dict | None = None,
             wanted: tuple[str, ...] = tuple(KARPATHY_JSON)) -> dict[str, dict[str, int]]:
    """Karpathy's split files into ``coco/`` and ``flickr30k/`` (those of ``wanted`` not there yet), each checked by
    its images per split; returns them. Each JSON given on its own (``--source dataset_coco.json=…``, or placed in
    ``DATA/downloads/``) first, then ``caption_datasets.zip`` (``--source``, placed, or its link), then each JSON from
    its second source (``KARPATHY_SECOND``). A JSON already in place is counted too:
    a wrong one is an error naming it."""
    given, downloads = given or {}, root / "downloads"
    targets = {name: root / KARPATHY_JSON[name] / name for name in wanted}
    absent = [name for name, target in targets.items() if not target.is_file()]
    alone = [name for name in absent if name in given or (downloads / name).is_file()]
    for name in alone:
        _install(obtain(root, name, source, given, lambda p, n=name: check_splits(p, n, source)), targets[name])
    rest, failures = [name for name in absent if name not in alone], []
    if rest:
        try:
            obtain(root, KARPATHY_ZIP, source, given, _from_zip({name: targets[name] for name in rest}, source))
        except DownloadError as err:                          # no link answered (a given one's failure is final)
            if KARPATHY_ZIP in given:
                raise
            failures.append(str(err))
            say(f"{err}; trying the split files' second sources")
        else:
            for name in rest:
                part = targets[name].with_name(targets[name].name + ".part")
                os.replace(part, targets[name])
            rest = []
    for name in rest:
        try:
            _install(obtain(root, name, source, given, lambda p, n=name: check_splits(p, n, source)), targets[name])
        except DownloadError as err:
            failures.append(str(err))
    missing = [name for name, target in targets.items() if not target.is_file()]
    if missing:
        raise DownloadError(f"Karpathy's {', '.join(missing)} could not be had: " + " || ".join(failures))
    counts = {}
    for name, target in targets.items():
        try:
            counts[name] = check_splits(target, name, source)
        except DataError as err:
            raise DataError(f"{target}: {err}; delete it and run again") from None
    say("Karpathy's splits: " + "; ".join(f"{name} {said(c)}" for name, c in counts.items()))
    return counts


def coco(root: Path, source: Source = SOURCES["coco"], given: dict | None = None) -> dict[str, int]:
    karpathy(root, source, given)                 # the small files first: a dead link shows before the 20 GB of zips
    images, counts = root / source.folder / "images", {}
    for split in COCO_ZIPS:
        folder, want = images / split, source.expected[split]
        archive = None
        if count_images(folder) != want:
            archive = obtain(root, f"{split}.zip", source, given)
            extract(archive, lambda n, f=folder: f / base(n) if is_jpeg(n) else None)
        counts[split] = count_images(folder)
        if counts[split] != want:
            raise DataError(f"{folder} holds {counts[split]:,} JPEGs after extracting {split}.zip, expected "
                            f"{want:,}: delete {archive} and run again (or give another with --source "
                            f"{split}.zip=PATH_OR_URL)")
    return {**counts, "dataset_coco.json": all_named_exist(root / source.folder / "dataset_coco.json", images)}


def flickr30k(root: Path, archive: Path | None = None, source: Source = SOURCES["flickr30k"],
              given: dict | None = None) -> dict[str, int]:
    """Flickr30K's images from ``archive`` (the request form's), else from ``flickr30k-images.zip`` (``--source``,
    placed in ``DATA/downloads/``, or its link: the copy on the hub), after Karpathy's Flickr30K split file."""
    folder = root / source.folder / "flickr30k-images"
    if archive is not None and not Path(archive).exists():
        raise DataError(f"archive not found: {archive}; {source.note}")
    karpathy(root, source, given, wanted=("dataset_flickr30k.json",))
    archive = Path(archive) if archive is not None else obtain(root, "flickr30k-images.zip", source, given)
    extract(archive, lambda n: folder / base(n) if is_jpeg(n) else None)
    n, want = count_images(folder), source.expected["flickr30k-images"]
    if n != want:
        raise DataError(f"{folder} holds {n:,} JPEGs, expected {want:,}: {archive} is incomplete or another archive")
    return {folder.name: n,
            "dataset_flickr30k.json": all_named_exist(root / source.folder / "dataset_flickr30k.json", folder)}


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


def imagenet(root: Path, archive: Path, source: Source = SOURCES["imagenet"], given: dict | None = None
             ) -> dict[str, int]:
    """ImageNet's validation images from ``archive`` (``ILSVRC2012_img_val.tar``, or the folder it was extracted to,
    flat or already in class folders) sorted by valprep.sh's mapping into ``imagenet/val/<wnid>/``, then counted."""
    if not Path(archive).exists():
        raise DataError(f"archive not found: {archive}; {source.note}")
    script = obtain(root, "valprep.sh", source, given, lambda p: parse_valprep(p.read_text(errors="replace")))
    mapping = parse_valprep(script.read_text())
    val = root / source.folder / "val"
    done = extract(Path(archive), lambda n: val / mapping[base(n)] / base(n) if base(n) in mapping else None)
    counts = {wnid: count_images(val / wnid, (".jpeg",)) for wnid in sorted(set(mapping.values()))}
    classes, per_class = source.expected["classes"], source.expected["per_class"]
    wrong = {wnid: n for wnid, n in counts.items() if n != per_class}
    if len(counts) != classes or wrong:
        raise DataError(f"{val}: {len(counts):,} class folders (expected {classes:,}), {len(wrong):,} of them without "
                        f"{per_class} images (first: {dict(list(wrong.items())[:3])}); {done['left out']:,} files of "
                        f"{Path(archive).name} are not in valprep.sh: is it ILSVRC2012_img_val.tar?")
    return {"classes": len(counts), "images": sum(counts.values())}


def shard_names(source: Source) -> list[str]:
    """The file names of every shard ``source`` may fetch, in order."""
    return [file_name(source.urls["shard"].format(index=index))
            for index in range(source.expected.get("first", 0), source.expected["last"] + 1)]


def download_shards(root: Path, what: str, pairs: int, source: Source | None = None,
                    max_failed: float = MAX_FAILED, given: dict | None = None) -> dict:
    """The shards of ``what`` in order until their usable pairs reach ``pairs``; writes ``shards.txt`` (see the
    module's docstring) and prints the summary. A ``DataError`` when too many shards failed or too few pairs landed.
    ``given``: shard file name -> a local file or URL to copy it from instead of its link."""
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
                where = (given or {}).get(dest.name)
                fetch(where, dest, mirror=False) if where else fetch(url, dest)
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


def files_of(what: str, source: Source | None = None) -> list[str]:
    """The file names ``--source`` may name for ``what``."""
    source = source or SOURCES[what]
    return shard_names(source) if "shard" in source.urls else sorted(source.urls)


def _given(p: argparse.ArgumentParser, what: str, pairs: list[str]) -> dict[str, str]:
    given, known = {}, files_of(what)
    for pair in pairs:
        name, sep, where = pair.partition("=")
        if not sep or not name or not where:
            p.error(f"--source {pair}: give NAME=PATH_OR_URL")
        if name not in known:
            shown = ", ".join(known[:3]) + (f", …, {known[-1]}" if len(known) > 3 else "")
            p.error(f"--source {name}: {what} reads no file of that name (its files: {shown})")
        given[name] = where
    return given


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m thesis_lib.data.download", description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=list(SOURCES), help="the data set")
    p.add_argument("data", type=Path, help="the data root (later passed as data_root)")
    p.add_argument("--archive", type=Path, help="imagenet: the archive you downloaded, or the folder it was extracted "
                                                "to (val/); flickr30k: the request form's archive (left out: the copy "
                                                "on the Hugging Face hub)")
    p.add_argument("--pairs", type=int, help="cc3m, cc12m: stop once this many usable pairs landed")
    p.add_argument("--source", dest="sources", action="append", default=[], metavar="NAME=PATH_OR_URL",
                   help="read the file NAME (e.g. caption_datasets.zip, dataset_coco.json, train2014.zip, a shard's "
                        "name) from a local file or another URL, checked like the original; repeatable")
    args = p.parse_args(argv)
    if args.what == "imagenet" and not args.archive:
        p.error(f"{args.what} needs --archive: {SOURCES[args.what].note}")
    if args.what in ("cc3m", "cc12m") and not (args.pairs and args.pairs > 0):
        p.error(f"{args.what} needs --pairs N (N > 0): the usable pairs to download")
    given = _given(p, args.what, args.sources)
    if args.what == "flickr30k" and args.archive and "flickr30k-images.zip" in given:
        p.error("flickr30k: --archive and --source flickr30k-images.zip name the same file; give one")
    try:
        source = SOURCES[args.what]
        if args.what in ("cc3m", "cc12m"):
            download_shards(args.data, args.what, args.pairs, source, given=given)
            return 0
        counts = (coco(args.data, source, given) if args.what == "coco" else
                  flickr30k(args.data, args.archive, source, given) if args.what == "flickr30k" else
                  imagenet(args.data, args.archive, source, given))
    except ThesisError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{args.what}: " + ", ".join(f"{k} {v:,}" for k, v in counts.items()) + f" (all as expected) in {args.data}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
