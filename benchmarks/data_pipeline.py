"""Where a training pair's CPU time goes, on one thread: JPEGs written here in the shapes the thesis's mixture holds,
full size and prepared, each decoded and turned into the two views a thesis step needs (the student's and the
teacher's, 224 px), with every decoder; and what that projects for a 16-core GPU host against the compiled step.

    python benchmarks/data_pipeline.py [--images 200] [--device cuda] [--json OUT.json]

Shapes (``SHAPES``): ``coco`` 640 × 480 at quality 90 (COCO's typical size; 566,747 of the mixture's 3,264,868 pairs);
``shard512`` 683 × 512 at quality 95, a CC3M/CC12M image as the ``pixparse/cc3m-wds`` and ``cc12m-wds`` shards hold it
(img2dataset, shortest edge resized to 512 when larger; the mixture's other 2.7 M pairs on the recommended download
route); ``shard256`` 256 × 256 at quality 95, img2dataset's default output (``image_size=256``, ``encode_quality=95``),
the fallback route's shards. Forms: ``full`` as written; ``prepared`` as ``thesis_lib.data.prepare_pictures`` writes
it (shorter side ``prepared_side()`` = 249 px, Lanczos, quality 95: 332 × 249 and 249 × 249).

Decoders (``data.decoder``): ``pil`` (PIL decode, torchvision v2 transforms: the default), ``pil_draft`` (PIL's
JPEG draft mode: the DCT decodes at 1/2, 1/4 or 1/8 scale, the largest reduction that keeps both sides ≥ the view
size, then the same transforms), ``torchvision`` (``torchvision.io.decode_jpeg`` to a uint8 tensor, the same
transforms on tensors). With ``--device cuda`` also ``decode_jpeg`` on the GPU, batched.

Timed per pair: decode, the student's view, the teacher's view (the rate, pairs/s per core, is decode + both views,
as the earlier tables and the recipe's days count it); tokenisation of one caption (``gpt2_fairseq_tokenizer``, the
thesis's path, over the fixtures' tiny GPT-2 BPE: its 4 merges leave more tokens per caption than GPT-2's 50 k; a run
tokenises every caption once when it loads the pairs, not in the workers); collation (``default_collate`` of a
batch of both views, tokens and pair ids, as a worker collates). Not timed: a batch's transfer from a worker to the
training process, pinning and the main process's share; the two H100 hosts' loaders delivered 0.48 and 0.59 × the
per-core rate end to end, and the projection, 16 × rate × factor ÷ the compiled step's 2,745 pairs/s, carries both.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch.utils.data import default_collate

from thesis_lib import get_config
from thesis_lib.data.decode import DECODERS, decode
from thesis_lib.data.prepare_pictures import prepare_image, prepared_side
from thesis_lib.data.tokenizer import gpt2_fairseq_tokenizer
from thesis_lib.data.transforms import student_transform, teacher_transform
from thesis_lib.full_scale.cost import MIXTURE, per_core_pairs
from thesis_lib.full_scale.fixtures import gpt2_tokenizer_files

STEP = 2745                  # pairs/s of the compiled training step on one H100, batch 256 (BENCHMARKS.md)
CORES, FACTORS = 16, (0.48, 0.59)   # the GPU host's cores; loader ÷ per-core projection on the two H100 hosts
SHAPES = {"coco": (640, 480, 90), "shard512": (683, 512, 95), "shard256": (256, 256, 95)}   # width, height, quality
FORMS = ("full", "prepared")


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


def prepared(jpegs: list[bytes]) -> list[bytes]:
    """The pictures as the preparation step writes them (a picture at or under the side unchanged)."""
    side = prepared_side()
    return [prepare_image(j, side) or j for j in jpegs]


@contextlib.contextmanager
def one_thread():
    """torch on one thread inside the block, as in a DataLoader worker; the thread count restored after."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def stage_ms(decoder: str, jpegs: list[bytes], size: int = 224) -> dict:
    """Milliseconds per picture for decode, the student's and the teacher's view, on one CPU thread."""
    student, teacher, spent = student_transform(size), teacher_transform(size), np.zeros(3)
    with one_thread():
        for data in jpegs[:5]:                                          # warm-up
            img = decode(data, decoder, size)
            student(img), teacher(img)
        for data in jpegs:
            t0 = time.perf_counter()
            img = decode(data, decoder, size)
            t1 = time.perf_counter()
            student(img)
            t2 = time.perf_counter()
            teacher(img)
            spent += (t1 - t0, t2 - t1, time.perf_counter() - t2)
    return dict(zip(("decode", "student", "teacher"), (1000 * spent / len(jpegs)).tolist()))


def cpu_rate(decoder: str, jpegs: list[bytes], size: int = 224) -> float:
    """Pairs per second (decode + both views) on one CPU thread."""
    return 1000 / sum(stage_ms(decoder, jpegs, size).values())


def tokenise_ms(n: int) -> float:
    """Milliseconds to tokenise one caption, one call per caption, through the thesis's tokenizer path."""
    with tempfile.TemporaryDirectory() as tmp:
        gpt2_tokenizer_files(Path(tmp))
        tok = gpt2_fairseq_tokenizer(tmp, get_config("thesis").model.text.max_len)
    captions = [f"a photograph of {k % 7 + 2} people standing near a red car on a sunny day, number {k}"
                for k in range(max(n, 20))]
    tok(captions[:5])
    t = time.perf_counter()
    for c in captions:
        tok([c])
    return 1000 * (time.perf_counter() - t) / len(captions)


def collate_ms(batch: int = 64, size: int = 224, max_len: int = 64) -> float:
    """Milliseconds per pair to collate a batch of (student view, teacher view, tokens, pair, replaced)."""
    items = [(torch.randn(3, size, size), torch.randn(3, size, size), torch.zeros(max_len, dtype=torch.int32), k, 0)
             for k in range(batch)]
    with one_thread():
        default_collate(items)
        t = time.perf_counter()
        for _ in range(5):
            default_collate(items)
        return 1000 * (time.perf_counter() - t) / (5 * batch)


def view_difference(full: list[bytes], small: list[bytes], size: int = 224) -> float:
    """Mean |difference| (8-bit levels) of the whole picture resized to ``size`` (bicubic), full size vs prepared."""
    view = lambda data: np.asarray(decode(data).resize((size, size), Image.BICUBIC), dtype=np.float64)  # noqa: E731
    return float(np.mean([np.abs(view(a) - view(b)).mean() for a, b in zip(full[:20], small[:20])]))


def cpu_model() -> dict:
    """The CPU as /proc/cpuinfo names it (model name, cpu family, model) and the logical CPUs this process sees."""
    info = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "cpu family", "model") and key.strip() not in info:
                info[key.strip()] = value.strip()
    except OSError:
        pass
    return {**info, "logical_cpus": os.cpu_count(), "threads_timed": 1}


def projected(rate: float) -> list[float]:
    """16 cores × the per-core rate × each host factor ÷ the compiled step's pairs/s."""
    return [CORES * rate * f / STEP for f in FACTORS]


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


def _ratio(rate: float) -> str:
    return " / ".join(f"{r:.2f}" for r in projected(rate))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--images", type=int, default=200)
    p.add_argument("--device", default="cpu")
    p.add_argument("--shapes", default=",".join(SHAPES), help=f"comma-separated, of {', '.join(SHAPES)}")
    p.add_argument("--json", type=Path, default=None, help="also write the rates (pairs/s per core) here")
    args = p.parse_args(argv)
    cpu = cpu_model()
    print(f"{args.images} JPEGs per shape, two 224 px views each, one thread; {cpu.get('model name', '?')} (family "
          f"{cpu.get('cpu family', '?')} model {cpu.get('model', '?')}), {cpu['logical_cpus']} logical CPUs, torch "
          f"{torch.__version__}; prepared: shorter side {prepared_side()} px. Last column: {CORES} cores × rate × "
          f"{' / '.join(map(str, FACTORS))} ÷ the compiled step's {STEP:,} pairs/s (goal ≥ 1)\n")
    print("| shape | form | px | KiB | decoder | decode ms | student ms | teacher ms | pairs/s per core | vs full pil "
          f"| ÷ step at {CORES} cores |")
    print("|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|")
    rates: dict = {form: {} for form in FORMS}
    ms: dict = {form: {} for form in FORMS}
    differ, gpu = {}, {}
    for shape in args.shapes.split(","):
        full = coco_like_jpegs(args.images, shape=shape)
        pictures = dict(zip(FORMS, (full, prepared(full))))
        differ[shape] = view_difference(full, pictures["prepared"])
        for form, jpegs in pictures.items():
            kib, px = sum(map(len, jpegs)) / len(jpegs) / 1024, "{} × {}".format(*Image.open(io.BytesIO(jpegs[0])).size)
            ms[form][shape] = {name: stage_ms(name, jpegs) for name in DECODERS}
            rates[form][shape] = {name: 1000 / sum(t.values()) for name, t in ms[form][shape].items()}
            for name, t in ms[form][shape].items():
                rate = rates[form][shape][name]
                print(f"| {shape} | {form} | {px} | {kib:.0f} | {name} | {t['decode']:.2f} | {t['student']:.2f} | "
                      f"{t['teacher']:.2f} | {rate:.0f} | {rate / rates['full'][shape]['pil']:.2f}× | "
                      f"{_ratio(rate)} |", flush=True)
            if args.device.startswith("cuda"):
                gpu[f"{shape} {form}"] = gpu_rate(jpegs, args.device)
                print(f"| {shape} | {form} | {px} | {kib:.0f} | decode_jpeg on {torch.cuda.get_device_name()} "
                      f"(batched) + views on the GPU | | | | {gpu[f'{shape} {form}']:.0f} (whole GPU) | | |")
    mixture = {}
    if {shape for _, _, shape, _ in MIXTURE} <= set(args.shapes.split(",")):
        mixes = {"full": rates["full"], "prepared": rates["prepared"],
                 "prepared, coco full size": {**rates["prepared"], "coco": rates["full"]["coco"]}}
        mixture = {form: {name: per_core_pairs({"rates": r}, name) for name in DECODERS} for form, r in mixes.items()}
        print(f"\n| the thesis's mixture (COCO + CC3M + CC12M at 683 × 512) | decoder | pairs/s per core | "
              f"÷ step at {CORES} cores |\n|---|---|---:|---:|")
        for form, by_decoder in mixture.items():
            for name, rate in by_decoder.items():
                print(f"| {form} | {name} | {rate:.0f} | {_ratio(rate)} |")
    tokens, collate = tokenise_ms(args.images), collate_ms()
    print(f"\ntokenisation: {tokens:.3f} ms per caption (once per run, when the pairs load); collation: "
          f"{collate:.3f} ms per pair (batch 64); the whole picture at 224 px, full size vs prepared: mean |Δ| "
          f"{', '.join(f'{s} {d:.2f}' for s, d in differ.items())} (8-bit levels)")
    if args.json:
        args.json.write_text(json.dumps({
            "cpu": cpu, "torch": torch.__version__, "images": args.images, "rates": rates["full"],
            "prepared_rates": rates["prepared"], "prepared_side": prepared_side(), "stage_ms": ms,
            "tokenise_ms_per_caption": tokens, "collate_ms_per_pair": collate, "view_difference": differ,
            "mixture": mixture, "gpu": gpu, "projection": {
                "step_pairs_per_s": STEP, "cores": CORES, "factors": FACTORS,
                "shapes": {form: {shape: {name: projected(r) for name, r in by.items()} for shape, by in rs.items()}
                           for form, rs in rates.items()},
                "mixture": {form: {name: projected(r) for name, r in by.items()} for form, by in mixture.items()}},
        }, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
