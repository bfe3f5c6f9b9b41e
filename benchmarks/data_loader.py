"""The training data path end to end, as a run at the thesis preset reads web-scale pairs: webdataset shards as
img2dataset writes them (``<key>.jpg`` / ``.txt`` / ``.json`` in ``00000.tar`` …, JPEG quality 95, its
``encode_quality`` default), half 256 × 256 (its default output: ``image_size=256``, ``resize_mode="border"``), half
683 × 512 (a 4:3 picture at a short edge of 512, ``resize_mode="keep_ratio"``), indexed by
``thesis_lib.data.shards`` and read by ``TrainPairs.batches``: a multi-worker torch DataLoader decoding each picture
and drawing both views (the student's, the teacher's augmented one), the batches pinned and copied to the device.

    python benchmarks/data_loader.py [--preset thesis] [--images 256] [--batch 256] [--workers 8] [--device cuda]
                                     [--prepared]

``--prepared``: the shards are first written anew by ``thesis_lib.data.prepare_pictures`` (pictures at the shorter
side the crops need, 249 px: 256 × 256 becomes 249 × 249, 683 × 512 becomes 332 × 249) and the loader reads those.

The rate is pairs per second after the first batch (the workers' start is not counted), for ``workers`` =
min(8, the CPU cores this process may use); ``benchmarks/gpu.py`` prints it beside the training step's pairs/s.
The captions are tokenized by a stand-in (characters to ids): tokenization happens once, when the pairs are
loaded, not on the timed path. img2dataset's defaults: ``download(image_size=256, resize_mode="border",
encode_quality=95)`` in rom1504/img2dataset@11a9cce, img2dataset/main.py.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from thesis_lib import get_config
from thesis_lib.data.prepare_pictures import prepare, prepared_side
from thesis_lib.data.throughput import usable_cores
from thesis_lib.data.tokenizer import CaptionTokenizer
from thesis_lib.data.train_pairs import TrainPairs
from thesis_lib.full_scale.fixtures import write_shard

SIZES = ((256, 256), (683, 512))   # width × height: img2dataset's default output; a short edge of 512 (keep_ratio)
QUALITY = 95                       # img2dataset's encode_quality default
PER_SHARD = 64


def picture(w: int, h: int, g: np.random.Generator) -> bytes:
    """A smooth random ``w`` × ``h`` picture (JPEG compresses it like a photograph, unlike white noise)."""
    small = Image.fromarray(g.integers(0, 255, (12, 16, 3), dtype=np.uint8)).resize((w, h), Image.BICUBIC)
    noisy = np.asarray(small, dtype=np.int16) + g.integers(-8, 9, (h, w, 3), dtype=np.int16)
    buf = io.BytesIO()
    Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8)).save(buf, "JPEG", quality=QUALITY)
    return buf.getvalue()


def write_shards(folder: Path, images: int, seed: int = 0) -> str:
    """``images`` pairs in shards of ``PER_SHARD``, the sizes alternating over ``SIZES``; returns the
    ``wds:`` pattern of ``data.train_sets``."""
    g = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    shards = max(1, -(-images // PER_SHARD))
    for s in range(shards):
        keys = range(s * PER_SHARD, min(images, (s + 1) * PER_SHARD))
        write_shard(folder / f"{s:05d}.tar", {
            f"{k:09d}": {"jpg": picture(*SIZES[k % len(SIZES)], g), "txt": f"a synthetic picture {k}",
                         "json": {"key": f"{k:09d}", "status": "success"}} for k in keys})
    return f"wds:{folder}/{{00000..{shards - 1:05d}}}.tar"


def stand_in_tokenizer(cfg) -> CaptionTokenizer:
    t = cfg.model.text
    return CaptionTokenizer(lambda caps: [[5 + ord(c) % 40 for c in cap] for cap in caps], 64, t.bos_id, t.eos_id,
                            t.pad_id, t.mask_id, t.max_len, "characters (stand-in)")


@contextlib.contextmanager
def data_folder(folder: Path):
    """``THESIS_DATA`` pointed at ``folder`` inside the block: the shard index is cached beside the shards."""
    before = os.environ.get("THESIS_DATA")
    os.environ["THESIS_DATA"] = str(folder)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("THESIS_DATA", None)
        else:
            os.environ["THESIS_DATA"] = before


def loader_config(preset: str, pattern: str, batch: int, workers: int):
    """The recipe's config (``tte_after_ls``) reading ``pattern``; a smaller preset takes the thesis preset's data
    path (files, not memory; the teacher's augmented view) so that the same code runs."""
    thesis = get_config("thesis").data
    return get_config(preset, "tte_after_ls", overrides={
        "data.train_sets": pattern, "data.num_workers": workers, "data.in_memory": False, "train.batch_size": batch,
        "data.teacher_view": thesis.teacher_view, "data.decoder": thesis.decoder})


def loader_rate(folder: Path, preset: str, batch: int, workers: int, batches: int, device: torch.device,
                images: int, prepared: bool = False) -> dict:
    """Pairs/s of ``TrainPairs.batches`` over ``images`` pairs of fresh shards in ``folder`` (``prepared``: as
    ``prepare_pictures`` writes them), ``batches`` batches (the first not timed), each copied to ``device``."""
    t = time.perf_counter()
    pattern = write_shards(folder / "shards", images)
    written = time.perf_counter() - t
    with data_folder(folder):
        if prepared:
            pattern = prepare(pattern, folder / "prepared", jobs=usable_cores(), say=lambda line: None)
        cfg = loader_config(preset, pattern, batch, workers)
        pairs = TrainPairs.of(cfg, stand_in_tokenizer(cfg), folder)
    stream = pairs.batches(0, batches)
    t = time.perf_counter()
    _to(next(stream), device)
    first, t = time.perf_counter() - t, time.perf_counter()
    for b in stream:
        _to(b, device)
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t
    return {"pairs_per_s": (batches - 1) * batch / seconds, "workers": workers, "batch": batch, "batches": batches,
            "images": images, "sizes_px": [list(s) for s in SIZES], "view_px": cfg.model.image.img_size,
            "decoder": cfg.data.decoder, "teacher_view": cfg.data.teacher_view, "first_batch_s": first,
            "prepared_side": prepared_side() if prepared else None,
            "shards_written_s": written, "replaced_samples": pairs.replaced_samples}


def _to(batch: dict, device: torch.device) -> dict:
    return {k: v.to(device, non_blocking=True) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


def default_workers() -> int:
    return min(8, usable_cores())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="thesis")
    p.add_argument("--images", type=int, default=256)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--workers", type=int, default=default_workers())
    p.add_argument("--batches", type=int, default=None, help="default: 4 per worker + 1")
    p.add_argument("--device", default="cpu")
    p.add_argument("--prepared", action="store_true", help="read the shards as prepare_pictures writes them")
    args = p.parse_args(argv)
    batches = args.batches or 4 * max(args.workers, 1) + 1
    with tempfile.TemporaryDirectory() as tmp:
        r = loader_rate(Path(tmp), args.preset, args.batch, args.workers, batches, torch.device(args.device),
                        args.images, args.prepared)
    print(f"{r['pairs_per_s']:.0f} pairs/s: {r['workers']} workers, batch {r['batch']} × {r['batches'] - 1} timed, "
          f"{r['decoder']} decoder, {r['view_px']} px views (teacher {r['teacher_view']}), JPEGs of "
          f"{' and '.join(f'{w} × {h}' for w, h in SIZES)} px"
          f"{f', prepared to a shorter side of {prepared_side()} px' if args.prepared else ''}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
