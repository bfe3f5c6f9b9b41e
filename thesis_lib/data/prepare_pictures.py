"""The training pictures written once at the smallest size the thesis's crops need, as shards training reads::

    export MIX=$(python -m thesis_lib.data.prepare_pictures "$MIX" --to /data/prepared [--jobs 16])
    export MIX=$(python -m thesis_lib.data.prepare_pictures "$MIX" --to /data/prepared --coco-root "$DATA")

The argument is the value of ``--set data.train_sets=...``. Each ``wds:`` entry's shards, those training reads (with
``@N``, up to the one completing N: ``stage.shard_sets``), are written anew under ``<to>/<the list's folder name>/``
with a shard list of their own; the printed mixture reads them, ``@N`` kept. In each shard every member keeps its
place and name, its captions and JSON are copied unchanged, and every picture whose shorter side exceeds
``prepared_side()`` (249 px for the thesis's 224 px views at crop scale 0.9) is resized to it (Lanczos, aspect kept)
and written as a JPEG at quality 95 (a PNG or WebP one under ``<key>.jpg``, its key kept); a smaller one, or one
that does not decode, is copied byte for byte, so the shard index counts the same pairs and broken samples, and
``@N`` takes the same pairs. A shard already there is kept when its keys and captions are its source's; each is
written through a temporary file renamed when complete. ``coco`` passes through unchanged unless ``--coco-root`` (the
run's data root) is given: then COCO's Karpathy train + restval is written as shards too, one sample per caption in
the ``coco`` entry's pair order (``<cocoid>_<k>``), each picture stored once per caption (≈ 5 ×).

What this changes in what a run computes: both views are cropped and resampled from the reduced picture, not from
the full-size one, so no view is bit-identical to full-size decoding — a resampling (Lanczos) and a JPEG
re-encoding (quality 95) lie before the view's own bicubic resize, and the teacher's colour jitter (drawn before
the crop) and the fixed evaluation view of the teacher-target cache see the reduced picture. The crop is drawn from
the same seeds and distribution (its area and ratio from the same numbers, relative to the picture), but its corner
is an integer drawn over the reduced picture's range, so a seed's crop covers another region than at full size. No
crop is upsampled (``prepared_side``). The pairs, their order and the epochs are unchanged. The copied JSON keeps the
full-size picture's width and height. With
``--coco-root`` each COCO caption becomes a picture of its own: the pairs and their order are the ``coco`` entry's,
but the teacher-target cache computes each COCO picture once per caption (the same target) and, in the fusion
variants, the image-text matching head no longer knows two captions of one picture as a match (a batch holding two
of them may take one as a negative).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import math
import sys
import tarfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from PIL import Image

from ..cache import write_atomic, write_text_atomic
from ..errors import DataError, ThesisError
from .datasets import open_image
from .shard_index import wds_sets
from .shards import IMAGE_EXTS, index_shard, split_limit
from .stage import shard_sets
from .throughput import usable_cores

QUALITY = 95
PER_SHARD = 5000          # COCO's samples (captions) per shard


def prepared_side(view: int = 224, min_scale: float = 0.9) -> int:
    """The smallest shorter side at which ``RandomResizedCrop(view, scale=(min_scale, 1))`` never upsamples.

    A crop it accepts lies inside the W × H picture (w ≤ W, h ≤ H) and covers at least ``min_scale`` of its area, so
    h = area / w ≥ min_scale · H and w ≥ min_scale · W whatever the ratio range; its fallback (the whole picture or a
    centre crop at the extreme ratio) keeps the shorter side. Hence ceil(view / min_scale); with the sides rounded to
    integers as torchvision does, w < W + 0.5 still gives h > view - 0.5. One pixel less and a square picture's crop
    at scale ``min_scale`` with w = W can round to view - 1. (The extreme ratio 3/4 at scale 0.9 would leave a side of
    0.82 × the shorter one, but it only fits a picture at least 1.2 × as wide as high, whose shorter crop side is
    then ≥ 0.9 × too.)"""
    return math.ceil(view / min_scale - 1e-9)


def prepare_image(data: bytes, side: int) -> bytes | None:
    """A picture's bytes with its shorter side reduced to ``side`` (Lanczos, JPEG quality 95); None where it is to be
    copied unchanged: its shorter side is ≤ ``side`` (never upscaled) or it does not decode."""
    try:
        img = open_image(data)
    except DataError:
        return None
    w, h = img.size
    if min(w, h) <= side:
        return None
    size = (side, round(h * side / w)) if w <= h else (round(w * side / h), side)
    out = io.BytesIO()
    img.resize(size, Image.LANCZOS).save(out, "JPEG", quality=QUALITY)
    return out.getvalue()


def _same_pairs(shard: Path, pairs: list[tuple[str, str]]) -> bool:
    """Whether a prepared shard is there, whole, and holds ``pairs`` (key, caption), in order."""
    try:
        return shard.is_file() and [(s["key"], s["caption"]) for s in index_shard(shard)[0]] == pairs
    except DataError:
        return False


def _write_shard(src: Path, dest: Path, side: int) -> str:
    """One shard's pictures prepared into ``dest`` (see the module's docstring): ``"written"`` or ``"kept"``."""
    if _same_pairs(dest, [(s["key"], s["caption"]) for s in index_shard(src)[0]]):
        return "kept"

    def write(tmp: Path) -> None:
        with tarfile.open(src, "r:") as fin, tarfile.open(tmp, "w") as fout:
            for info in fin:
                data = fin.extractfile(info).read() if info.isfile() else None
                name = Path(info.name)
                small = prepare_image(data, side) if name.name.partition(".")[2].lower() in IMAGE_EXTS else None
                if small is None:
                    fout.addfile(info, io.BytesIO(data) if data is not None else None)
                    continue
                new = tarfile.TarInfo(str(name.with_name(name.name.partition(".")[0] + ".jpg")))
                new.size, new.mtime, new.mode = len(small), info.mtime, info.mode
                fout.addfile(new, io.BytesIO(small))
    write_atomic(dest, write)
    return "written"


def _write_coco(records: list, dest: Path, side: int) -> str:
    """``records`` ((key, image path, caption) each) as one shard of prepared pictures: ``"written"``/``"kept"``."""
    if _same_pairs(dest, [(key, caption) for key, _, caption in records]):
        return "kept"

    def write(tmp: Path) -> None:
        with tarfile.open(tmp, "w") as tar:
            for key, path, caption in records:
                data = Path(path).read_bytes()
                for ext, blob in (("jpg", prepare_image(data, side) or data), ("txt", caption.encode())):
                    info = tarfile.TarInfo(f"{key}.{ext}")
                    info.size = len(blob)
                    tar.addfile(info, io.BytesIO(blob))
    write_atomic(dest, write)
    return "written"


def _run(jobs: int, tasks: list, say, what: str) -> list[str]:
    """Each task's outcome, in order, on ``jobs`` processes; a progress line every 10 % of 20 or more."""
    every, out = (len(tasks) // 10 if len(tasks) >= 20 else len(tasks)), []
    with ProcessPoolExecutor(jobs) if jobs > 1 else contextlib.nullcontext() as pool:
        pending = [pool.submit(fn, *args) for fn, *args in tasks] if pool else tasks
        for k, task in enumerate(pending, 1):
            out.append(task.result() if pool else task[0](*task[1:]))
            if k % every == 0 and k < len(tasks):
                say(f"{what}: {k:,} of {len(tasks):,} shards")
    return out


def prepare(train_sets: str, to: Path, jobs: int = 1, side: int | None = None, coco_root: Path | None = None,
            say=print) -> str:
    """Every ``wds:`` entry (and ``coco`` with ``coco_root``) written as prepared shards under ``to``; returns
    ``train_sets`` reading them."""
    side, to, done, used = side or prepared_side(), Path(to).absolute(), {}, set()

    def folder_for(name: str) -> Path:
        folder, k = to / name, 1
        while folder in used:
            k += 1
            folder = to / f"{name}-{k}"
        used.add(folder)
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    for shard_set in shard_sets(train_sets):
        if not shard_set.shards:
            raise DataError(f"{shard_set.entry}: none of its shards is there to prepare")
        folder = folder_for(Path(split_limit(shard_set.entry[4:])[0]).parent.name or "shards")
        if len({src.name for src, _ in shard_set.shards}) != len(shard_set.shards):
            raise DataError(f"{shard_set.entry}: two of its shards share a file name; they cannot share one folder")
        outcome = _run(jobs, [(_write_shard, src, folder / src.name, side) for src, _ in shard_set.shards], say,
                       shard_set.entry)
        write_text_atomic(folder / "shards.txt", "".join(f"{src.name}\n" for src, _ in shard_set.shards))
        limit = f"@{shard_set.limit}" if shard_set.limit is not None else ""
        done[shard_set.entry] = f"wds:{folder / 'shards.txt'}{limit}"
        say(f"{shard_set.entry}: {len(outcome):,} shards in {folder} ({outcome.count('written'):,} written, "
            f"{outcome.count('kept'):,} kept), pictures at a shorter side of at most {side} px")
    if coco_root is not None and "coco" in [name.strip() for name in train_sets.split(",")]:
        from .roots import TRAIN_SETS
        from .datasets import load_karpathy_split
        rel_json, rel_images = TRAIN_SETS["coco"]
        records = [(f"{r.image_id}_{k}", r.image, c) for r in
                   load_karpathy_split(Path(coco_root) / rel_json, Path(coco_root) / rel_images, "train")
                   for k, c in enumerate(r.captions)]
        folder = folder_for("coco")
        chunks = [records[i:i + PER_SHARD] for i in range(0, len(records), PER_SHARD)]
        names = [f"{k:05d}.tar" for k in range(len(chunks))]
        outcome = _run(jobs, [(_write_coco, chunk, folder / name, side) for chunk, name in zip(chunks, names)], say,
                       "coco")
        write_text_atomic(folder / "shards.txt", "".join(f"{name}\n" for name in names))
        done["coco"] = f"wds:{folder / 'shards.txt'}"
        say(f"coco: {len(records):,} pairs in {len(names):,} shards in {folder} ({outcome.count('written'):,} "
            f"written, {outcome.count('kept'):,} kept), one sample per caption")
    return ",".join(done.get(name.strip(), name.strip()) for name in train_sets.split(",") if name.strip())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m thesis_lib.data.prepare_pictures", description=__doc__.split("\n\n")[0])
    p.add_argument("train_sets", help="the data.train_sets value, e.g. \"$MIX\"")
    p.add_argument("--to", type=Path, required=True, help="folder to write the prepared shards to")
    p.add_argument("--jobs", type=int, default=usable_cores(), help="shards prepared at once (default: the cores)")
    p.add_argument("--coco-root", type=Path, default=None, help="the run's data root: write coco as shards too")
    p.add_argument("--view", type=int, default=224, help="the views' size in px (default 224, the thesis's)")
    p.add_argument("--min-scale", type=float, default=0.9, help="the crop's smallest scale (default 0.9)")
    args = p.parse_args(argv)
    if not (wds_sets(args.train_sets) or args.coco_root):
        p.error(f"{args.train_sets!r} names no wds: shard set (and no --coco-root is given)")
    side = prepared_side(args.view, args.min_scale)
    print(f"prepared pictures: shorter side {side} px (views of {args.view} px, crop scale ≥ {args.min_scale})",
          file=sys.stderr)
    try:
        print(prepare(args.train_sets, args.to, max(1, args.jobs), side, args.coco_root,
                      say=lambda line: print(line, file=sys.stderr)))
    except (ThesisError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
