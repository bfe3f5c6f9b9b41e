"""One command for a lent GPU: everything this repository wants to know about one, in a single call of at most
9 minutes on one H100, written to ``OUT/gpu.json`` and ``OUT/gpu.md`` (paste the latter into BENCHMARKS.md).

    bash benchmarks/gpu.sh                                    # on the GPU host: set up .venv, then this
    python benchmarks/gpu.py --device cuda --out build/gpu    # the same, in an existing environment
    python benchmarks/gpu.py --dry --out build/gpu-dry        # CPU, smoke preset, seconds (what the test runs)

Sections, each skipped with a note when the time budget (``--budget``, seconds) is spent:
1. the bf16 matmul peak (a large square matmul, the denominator of every MFU);
2. the thesis preset's training step on synthetic tensors of the real shapes (224 px, 64 tokens, random weights),
   one fixed batch kept on the device, so the step is timed without the data path: batch 256 and 512, eager and
   ``torch.compile``; pairs/s, ms/step, MFU (analytic FLOPs, ``bench.FlopCounter``; the frozen teacher's forward
   included, as every thesis step runs it), the teacher's share of the step, peak memory;
3. the data path (``data_pipeline.py``): decode + both views per CPU core for each decoder, and ``decode_jpeg``
   on the GPU;
4. notebook 03 (the main job) at the demo preset with ``-p device cuda`` (time, and Table 2 beside the CPU results).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import torch

from thesis_lib import get_config

HERE = Path(__file__).resolve().parent


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def step_rate(preset: str, batch: int, device: torch.device, steps: int, compiled: bool) -> dict:
    """One training step of ``preset`` at ``batch`` on one device-resident synthetic batch."""
    bench = _module("bench")
    cfg = get_config(preset, "tte_after_ls", overrides={
        "train.batch_size": batch, "weights.source": "random", "data.teacher_view": "fixed",
        "train.cache_teacher": False, "train.precision": "bf16" if device.type == "cuda" else "fp32"})
    model, teacher, pairs, _, opt, _ = bench.build(cfg, device, synthetic=True)
    run_model = torch.compile(model) if compiled else model
    batch_t = {k: v.to(device) for k, v in pairs.batch(0).items()}
    amp = bench.autocast(cfg.train.precision, device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()

    def steps_of(n):
        for _ in range(n):
            loss, _ = bench.compute_loss(run_model, model, batch_t, teacher, cfg.train, bench.SINGLE, amp)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        bench.sync(device)

    steps_of(3)                                                   # warm-up (and compilation)
    t = time.perf_counter()
    steps_of(steps)
    step_s = (time.perf_counter() - t) / steps
    with amp:
        flops = 3 * bench._forward_flops(model, batch_t["images"], batch_t["tokens"])
        flops += bench._forward_flops(teacher, batch_t["teacher_images"])
        bench.sync(device)
        t = time.perf_counter()
        with torch.no_grad():
            for _ in range(3):
                teacher(batch_t["teacher_images"])
        bench.sync(device)
        teacher_s = (time.perf_counter() - t) / 3
    memory = torch.cuda.max_memory_allocated() if device.type == "cuda" else float("nan")
    return {"batch": batch, "compiled": compiled, "pairs_per_s": batch / step_s, "ms_per_step": 1000 * step_s,
            "flop_per_s": flops / step_s, "teacher_share": teacher_s / step_s, "peak_memory_gib": memory / 2 ** 30}


def notebook_run(device: str, out: Path) -> dict:
    """Notebook 03 at the demo preset on ``device`` into ``out``; its Table 2 means beside the committed CPU ones."""
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "papermill", "-k", "python3", "--no-progress-bar",
                           "notebooks/03_tte_layerscale.ipynb", str(out / "03_tte_layerscale.ipynb"),
                           "-p", "device", device, "-p", "output_dir", str(out)], cwd=HERE.parent,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - t
    if done.returncode:
        return {"seconds": seconds, "error": done.stderr[-2000:]}
    table = {}
    for where, root in (("gpu", out / "results"), ("cpu (committed)", HERE.parent / "results")):
        for f in sorted((root / "demo").glob("*/seed*.json")):
            r = json.loads(f.read_text())
            for m in ("imagenet_top1", "coco_mean", "flickr_mean"):
                table.setdefault(r["variant"], {}).setdefault(f"{m} {where}", []).append(r["metrics"][m])
    means = {v: {k: sum(x) / len(x) for k, x in row.items()} for v, row in table.items()}
    return {"seconds": seconds, "table2_means": means}


def markdown(report: dict) -> str:
    lines = [f"# GPU measurements: {report['device']}, torch {report['torch']}, {report['date']}", "",
             f"bf16 matmul peak: {report['peak_tflops']:.1f} TFLOP/s", "",
             "| step (thesis preset, synthetic tensors) | pairs/s | ms/step | MFU | teacher share | peak memory |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in report["steps"]:
        lines.append(f"| batch {r['batch']}, {'compiled' if r['compiled'] else 'eager'} | {r['pairs_per_s']:.0f} | "
                     f"{r['ms_per_step']:.1f} | {100 * r['mfu']:.0f} % | {100 * r['teacher_share']:.0f} % | "
                     f"{r['peak_memory_gib']:.1f} GiB |")
    lines += ["", "| data path | images/s (both views) |", "|---|---:|"]
    lines += [f"| {k} | {v:.0f} |" for k, v in report["data"].items()]
    nb = report.get("notebook")
    if nb:
        lines += ["", f"notebook 03 at the demo preset on the GPU: {nb['seconds']:.0f} s"
                  + (f" (failed: {nb['error'][-300:]})" if "error" in nb else "")]
        for v, row in nb.get("table2_means", {}).items():
            lines.append(f"- {v}: " + ", ".join(f"{k} {x:.2f}" for k, x in row.items()))
    lines += [""] + [f"skipped: {s}" for s in report["skipped"]]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--out", default="build/gpu")
    p.add_argument("--budget", type=float, default=540.0, help="seconds for the whole call (default 9 minutes)")
    p.add_argument("--dry", action="store_true", help="CPU, smoke preset, tiny batches: checks the command runs")
    p.add_argument("--skip-notebook", action="store_true")
    args = p.parse_args(argv)
    start, out = time.perf_counter(), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    device = torch.device("cpu" if args.dry else args.device)
    preset, batches, steps = ("smoke", (4, 8), 2) if args.dry else ("thesis", (256, 512), 10)
    bench, data = _module("bench"), _module("data_pipeline")
    left = lambda: args.budget - (time.perf_counter() - start)  # noqa: E731
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    report = {"device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu (dry run)",
              "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"), "preset": preset, "skipped": [],
              "peak_tflops": bench.peak_matmul(device, dtype, seconds=0.5 if args.dry else 2.0) / 1e12, "steps": []}
    for compiled in (False, True):
        for batch in batches:
            if left() < (30 if args.dry else 120):
                report["skipped"].append(f"step at batch {batch}, {'compiled' if compiled else 'eager'} (time)")
                continue
            try:
                r = step_rate(preset, batch, device, steps, compiled)
            except torch.cuda.OutOfMemoryError:
                report["skipped"].append(f"step at batch {batch}: out of memory")
                torch.cuda.empty_cache()
                continue
            r["mfu"] = r["flop_per_s"] / (report["peak_tflops"] * 1e12)
            report["steps"].append(r)
    jpegs = data.coco_like_jpegs(4 if args.dry else 100)
    report["data"] = {f"{name}, per CPU core": data.cpu_rate(name, jpegs) for name in data.DECODERS}
    if device.type == "cuda":
        report["data"]["decode_jpeg on the GPU + views on the GPU"] = data.gpu_rate(jpegs, str(device))
    if args.dry or args.skip_notebook:
        report["skipped"].append("notebook 03 on the device (dry run or --skip-notebook)")
    elif left() < 240:
        report["skipped"].append("notebook 03 on the device (time)")
    else:
        report["notebook"] = notebook_run(args.device, out / "notebook")
    (out / "gpu.json").write_text(json.dumps(report, indent=1))
    (out / "gpu.md").write_text(markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
