"""Decode + transform throughput of the training data path, on one CPU thread: JPEGs written here in the shapes the
thesis's mixture holds, each turned into the two views a thesis step needs (the student's and the teacher's, 224 px).

    python benchmarks/data_pipeline.py [--images 200] [--device cuda] [--json OUT.json]

Shapes (``SHAPES``): ``coco`` 640 × 480 at quality 90 (COCO's typical size; 566,747 of the mixture's 3,264,868 pairs);
``shard512`` 683 × 512 at quality 95, a CC3M/CC12M image as the ``pixparse/cc3m-wds`` and ``cc12m-wds`` shards hold it
(img2dataset, shortest edge resized to 512 when larger; the mixture's other 2.7 M pairs on the recommended download
route); ``shard256`` 256 × 256 at quality 95, img2dataset's default output (``image_size=256``, ``encode_quality=95``),
the fallback route's shards.

Decoders (``data.decoder``): ``pil`` (PIL decode, torchvision v2 transforms: the default), ``pil_draft`` (PIL's
JPEG draft mode: the DCT decodes at 1/2, 1/4 or 1/8 scale, the largest reduction that keeps both sides ≥ the view
size, then the same transforms), ``torchvision`` (``torchvision.io.decode_jpeg`` to a uint8 tensor, the same
transforms on tensors). With ``--device cuda`` also ``decode_jpeg`` on the GPU, batched. Rates are images per second
(both views) per core; the 16-core GPU host of the full-scale goal needs 2,500 / 16 ≈ 160 per core.
"""
from __future__ import annotations

import argparse
import io
import json
import platform
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from thesis_lib.data.decode import DECODERS, decode
from thesis_lib.data.transforms import student_transform, teacher_transform

GOAL_PER_CORE = 2500 / 16


SHAPES = {"coco": (640, 480, 90), "shard512": (683, 512, 95), "shard256": (256, 256, 95)}   # width, height, quality


def coco_like_jpegs(n: int, seed: int = 0, shape: str = "coco") -> list[bytes]:
    """Smooth random pictures (JPEG compresses them like photographs, unlike white noise) of a ``SHAPES`` entry."""
    width, height, quality = SHAPES[shape]
    g = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        small = g.integers(0, 255, (12, 16, 3), dtype=np.uint8)
        img = Image.fromarray(small).resize((width, height), Image.BICUBIC)
        noise = g.normal(0, 8, (height, width, 3))
        arr = np.clip(np.asarray(img, dtype=np.float64) + noise, 0, 255).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(arr).save(buf, "JPEG", quality=quality)
        out.append(buf.getvalue())
    return out


def cpu_rate(decoder: str, jpegs: list[bytes], size: int = 224) -> float:
    """Images per second (decode + both views) on one CPU thread; the thread count is restored after."""
    student, teacher = student_transform(size), teacher_transform(size)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for data in jpegs[:5]:                                          # warm-up
            img = decode(data, decoder, size)
            student(img), teacher(img)
        start = time.perf_counter()
        for data in jpegs:
            img = decode(data, decoder, size)
            student(img), teacher(img)
        return len(jpegs) / (time.perf_counter() - start)
    finally:
        torch.set_num_threads(threads)


def gpu_rate(jpegs: list[bytes], device: str, batch: int = 64) -> float:
    from torchvision.io import decode_jpeg
    from torchvision.transforms import v2 as T
    views = T.Compose([T.RandomResizedCrop(224, scale=(0.9, 1.0), antialias=True), T.RandomHorizontalFlip()])
    data = [torch.frombuffer(bytearray(j), dtype=torch.uint8) for j in jpegs]
    for _ in range(2):
        decode_jpeg(data[:batch], device=device)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for i in range(0, len(data), batch):
        for img in decode_jpeg(data[i:i + batch], device=device):
            views(img), views(img)
    torch.cuda.synchronize()
    return len(data) / (time.perf_counter() - start)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--images", type=int, default=200)
    p.add_argument("--device", default="cpu")
    p.add_argument("--shapes", default=",".join(SHAPES), help=f"comma-separated, of {', '.join(SHAPES)}")
    p.add_argument("--json", type=Path, default=None, help="also write the rates (images/s per core) here")
    args = p.parse_args(argv)
    print(f"{args.images} JPEGs per shape, two 224 px views each; {platform.processor() or platform.machine()}, "
          f"torch {torch.__version__}\n")
    print("| shape | KiB each | decoder | images/s per core (both views) | vs pil | 16 cores (estimate) | "
          "goal 160 / core |")
    print("|---|---:|---|---:|---:|---:|---|")
    rates: dict = {}
    for shape in args.shapes.split(","):
        jpegs = coco_like_jpegs(args.images, shape=shape)
        kib = sum(map(len, jpegs)) / len(jpegs) / 1024
        rates[shape] = {name: cpu_rate(name, jpegs) for name in DECODERS}
        for name, rate in rates[shape].items():
            print(f"| {shape} {SHAPES[shape][0]} × {SHAPES[shape][1]} | {kib:.0f} | {name} | {rate:.0f} | "
                  f"{rate / rates[shape]['pil']:.2f}× | {16 * rate:,.0f} | "
                  f"{'met' if rate >= GOAL_PER_CORE else 'not met'} |", flush=True)
        if args.device.startswith("cuda"):
            rate = gpu_rate(jpegs, args.device)
            print(f"| {shape} | {kib:.0f} | decode_jpeg on {torch.cuda.get_device_name()} (batched) + views on the "
                  f"GPU | {rate:.0f} (whole GPU) | | | |")
    if args.json:
        args.json.write_text(json.dumps({"cpu": platform.processor(), "torch": torch.__version__,
                                         "images": args.images, "rates": rates}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
