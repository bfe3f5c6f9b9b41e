"""One command for a lent GPU: everything this repository wants to know about one, written to ``OUT/gpu.json`` and
``OUT/gpu.md`` (paste the latter into BENCHMARKS.md), in calls of at most 10 minutes each.

    bash benchmarks/gpu.sh                                    # on the GPU host: set up .venv-gpu, then this
    bash benchmarks/gpu.sh --only-notebook                    # a second call: notebook 03 on the GPU
    python benchmarks/gpu.py --device cuda --out build/gpu    # the same, in an existing environment
    python benchmarks/gpu.py --dry --out build/gpu-dry        # CPU, smoke preset (what the test runs)

Sections of the default call, each under its own time budget (``BUDGETS``, cut to what is left of ``--budget``,
default 540 s) and its own exception capture (out of memory and compile errors included): a section that fails or
runs past its budget is recorded as an error or as timed out and the next one runs. ``gpu.json`` and ``gpu.md`` are
rewritten after every section, so a call killed at 10 minutes keeps every finished one.

1. ``peak matmul``: a large square bf16 matmul, the denominator of every MFU;
2. ``step batch B eager|compiled`` (B = 256, 512): the thesis preset's training step on one synthetic batch of the
   real shapes (224 px, 64 tokens, random weights) made on the device, so the step is timed without the data path;
   eager and ``torch.compile`` (dynamo reset before each shape, so each compiles a static-shape graph); pairs/s,
   ms/step, MFU, the teacher's share of the step, peak memory. FLOPs: 3 × the student's forward + the frozen
   teacher's forward (every thesis step runs it), counted by ``torch.utils.flop_counter.FlopCounterMode``
   (``bench.forward_flops``). fp32 matmuls run as TF32 on CUDA (recorded under ``fp32_matmul``);
3. ``data path`` (``data_pipeline.py``): decode + both views per CPU core for each decoder; ``data path, GPU
   decode``: ``decode_jpeg`` on the GPU, batched, and the views there.

``--only-notebook`` (a second call, merged into the same report): ``demo assets`` (world and the demo pretraining,
which thesis_lib computes on the CPU, on one thread) and
``notebook 03`` at the demo preset with ``-p device cuda`` (time, and its Table 2 means beside the committed CPU
ones). Its runs are written under ``--notebook-dir``; a call cut short is resumed by the next (finished runs and
cached assets are reused).
"""
from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

STARTED = time.perf_counter()   # the call's budget counts from here: torch's import and CUDA's start included

import torch  # noqa: E402

from thesis_lib import get_config  # noqa: E402

HERE = Path(__file__).resolve().parent
# seconds per section: (default call on a GPU, --dry on CPU). The default call's sections (peak, 2 eager and 2 compiled
# steps, 2 data paths) sum to 510 s: with start-up they fit in --budget 540
BUDGETS = {"peak matmul": (30, 30), "step eager": (60, 90), "step compiled": (140, 150), "data path": (40, 60),
           "demo assets": (420, 300), "notebook 03": (540, 300)}
DEFAULT_BUDGET = 540.0          # seconds for one call: 9 of a 10-minute limit, a minute kept for start-up and writing
MINIMUM = 10                    # seconds below which a section is skipped for time


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench, data, sections = _module("bench"), _module("data_pipeline"), _module("sections")


def fp32_matmul(device: torch.device) -> dict:
    """On CUDA, fp32 matmuls as TF32 (``torch.set_float32_matmul_precision("high")``, which sets the legacy and the
    new TF32 flags alike; cuDNN convolutions use TF32 by default); returns what is in effect."""
    if device.type == "cuda":
        torch.set_float32_matmul_precision("high")
    matmul = torch.backends.cuda.matmul
    return {"float32_matmul_precision": torch.get_float32_matmul_precision(),
            "cuda_matmul": getattr(matmul, "fp32_precision", "tf32" if matmul.allow_tf32 else "ieee"),
            "applies": device.type == "cuda"}


def fresh_compile(model, **kwargs):
    """``torch.compile(model)`` after ``torch._dynamo.reset()``: each batch size gets its own static-shape graph
    (without the reset, a second shape of the same code is recompiled as a dynamic-shape graph)."""
    torch._dynamo.reset()
    return torch.compile(model, **kwargs)


def step_config(preset: str, batch: int, device: torch.device):
    return get_config(preset, "tte_after_ls", overrides={
        "train.batch_size": batch, "weights.source": "random", "data.teacher_view": "fixed",
        "train.cache_teacher": False, "train.precision": "bf16" if device.type == "cuda" else "fp32"})


def step_rate(preset: str, batch: int, device: torch.device, steps: int, compiled: bool) -> dict:
    """One training step of ``preset`` at ``batch`` on one synthetic batch made on ``device``."""
    cfg = step_config(preset, batch, device)
    model, teacher, pairs, _, opt, _ = bench.build(cfg, device, synthetic=True)
    run_model = fresh_compile(model) if compiled else model
    batch_t = pairs.batch(0)                                      # already on the device
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
    memory = torch.cuda.max_memory_allocated() / 2 ** 30 if device.type == "cuda" else None
    with amp:
        flops = 3 * bench.forward_flops(model, batch_t["images"], batch_t["tokens"])
        flops += bench.forward_flops(teacher, batch_t["teacher_images"])
        teacher_s = _teacher_seconds(teacher, batch_t["teacher_images"], device)
    return {"batch": batch, "compiled": compiled, "pairs_per_s": batch / step_s, "ms_per_step": 1000 * step_s,
            "flop_per_s": flops / step_s, "teacher_share": teacher_s / step_s, "peak_memory_gib": memory}


def _teacher_seconds(teacher, images, device, repeats: int = 3) -> float:
    with torch.no_grad():
        teacher(images)
        bench.sync(device)
        t = time.perf_counter()
        for _ in range(repeats):
            teacher(images)
        bench.sync(device)
    return (time.perf_counter() - t) / repeats


def cpu_data_rates(jpegs: list[bytes]) -> dict:
    return {f"{name}, per CPU core": data.cpu_rate(name, jpegs) for name in data.DECODERS}


def gpu_data_rate(jpegs: list[bytes], device: torch.device) -> dict:
    return {"decode_jpeg on the GPU + views on the GPU": data.gpu_rate(jpegs, str(device))}


def notebook_env(preset: str) -> dict:
    """The environment of the notebook's processes: the preset, no progress bars."""
    return {**os.environ, "THESIS_PRESET": preset, "THESIS_PROGRESS": "0"}


def prepare_demo(preset: str) -> dict:
    """World, tokenizer and demo pretraining of ``preset`` (cached: instant when done before)."""
    t = time.perf_counter()
    done = sections.run_subprocess([sys.executable, "-m", "thesis_lib.training.prepare", "--preset", preset],
                                   cwd=HERE.parent, env=notebook_env(preset))
    if done.returncode:
        raise RuntimeError(f"prepare exited {done.returncode}: {done.stderr}")
    return {"seconds": time.perf_counter() - t}


def notebook_run(preset: str, device: str, out: Path, runs_dir: Path) -> dict:
    """Notebook 03 at ``preset`` on ``device``: the executed notebook to ``out``, its runs under ``runs_dir``."""
    t = time.perf_counter()
    done = sections.run_subprocess(
        [sys.executable, "-m", "papermill", "-k", "python3", "--no-progress-bar", "notebooks/03_tte_layerscale.ipynb",
         str(out / "03_tte_layerscale.ipynb"), "-p", "device", device, "-p", "output_dir", str(runs_dir)],
        cwd=HERE.parent, env=notebook_env(preset))
    if done.returncode:
        raise RuntimeError(f"papermill exited {done.returncode}: {done.stderr}")
    return {"seconds": time.perf_counter() - t}


def table2_means(preset: str, runs_dir: Path) -> dict:
    """Per variant, the mean of each Table 2 metric over the runs on the device and over the committed ones."""
    table = {}
    for where, root in (("device", runs_dir / "results"), ("cpu (committed)", HERE.parent / "results")):
        for f in sorted((root / preset).glob("*/seed*.json")):
            r = json.loads(f.read_text())
            for m in ("imagenet_top1", "coco_mean", "flickr_mean"):
                table.setdefault(r["variant"], {}).setdefault(f"{m} {where}", []).append(r["metrics"][m])
    return {v: {k: sum(x) / len(x) for k, x in row.items()} for v, row in table.items()}


def _fmt(x, spec: str, unit: str = "") -> str:
    return "—" if x is None else f"{x:{spec}}{unit}"


def markdown(report: dict) -> str:
    lines = [f"# GPU measurements: {report['device']}, torch {report['torch']}, {report['date']}", "",
             f"preset {report['preset']}; fp32 matmul: {report['fp32_matmul']}", "",
             "| section | status | seconds | budget s |", "|---|---|---:|---:|"]
    lines += [f"| {name} | {s['status']} | {s['seconds']:.0f} | {s['budget_s']:.0f} |"
              for name, s in report["sections"].items()]
    peak = _fmt(report.get("peak_tflops"), ".3g", " TFLOP/s")
    lines += ["", f"{report.get('peak_dtype', '')} matmul peak: {peak}", ""]
    if report.get("steps"):
        lines += ["| step (synthetic tensors) | pairs/s | ms/step | MFU | teacher share | peak memory |",
                  "|---|---:|---:|---:|---:|---:|"]
        lines += [f"| batch {r['batch']}, {'compiled' if r['compiled'] else 'eager'} | {r['pairs_per_s']:.0f} | "
                  f"{r['ms_per_step']:.1f} | {_fmt(r['mfu'] and 100 * r['mfu'], '.0f', ' %')} | "
                  f"{100 * r['teacher_share']:.0f} % | {_fmt(r['peak_memory_gib'], '.1f', ' GiB')} |"
                  for r in report["steps"]]
    if report.get("data"):
        lines += ["", "| data path | images/s (both views) |", "|---|---:|"]
        lines += [f"| {k} | {v:.0f} |" for k, v in report["data"].items()]
    nb = report.get("notebook")
    if nb:
        lines += ["", f"notebook 03 on the device: {_fmt(nb.get('seconds'), '.0f', ' s')}, "
                      f"{nb.get('runs_done', 0)} runs finished"]
        lines += [f"- {v}: " + ", ".join(f"{k} {x:.2f}" for k, x in row.items())
                  for v, row in nb.get("table2_means", {}).items()]
    lines += [""] + [f"error in {e['section']}: {e['error']}" for e in report["errors"]]
    lines += [f"skipped: {s}" for s in report["skipped"]]
    return "\n".join(lines) + "\n"


def header(device: torch.device, preset: str, budget: float) -> dict:
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu (dry run)"
    return {"device": name, "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"), "preset": preset,
            "budget_s": budget, "fp32_matmul": fp32_matmul(device), "peak_tflops": None, "steps": [], "data": {},
            "sections": {}, "errors": [], "skipped": []}


def measure(runner, report: dict, device: torch.device, dry: bool) -> None:
    """The default call: peak matmul, the steps, the data path."""
    i, run = (1 if dry else 0), runner.run
    preset, batches, steps = ("smoke", (4, 8), 2) if dry else ("thesis", (256, 512), 10)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    peak = run("peak matmul", BUDGETS["peak matmul"][i],
               lambda: bench.peak_matmul(device, dtype, n=512 if dry else None, seconds=0.5 if dry else 2.0) / 1e12)
    report.update(peak_tflops=peak, peak_dtype=str(dtype).removeprefix("torch."))
    for compiled in (False, True):
        kind = "compiled" if compiled else "eager"
        for batch in batches:
            r = run(f"step batch {batch} {kind}", BUDGETS[f"step {kind}"][i],
                    lambda: step_rate(preset, batch, device, steps, compiled), minimum=MINIMUM)
            if r is not None:
                r["mfu"] = r["flop_per_s"] / (peak * 1e12) if peak else None
                report["steps"].append(r)
    jpegs = functools.cache(lambda: data.coco_like_jpegs(4 if dry else 100))      # made inside a section
    report["data"] = run("data path", BUDGETS["data path"][i], lambda: cpu_data_rates(jpegs()), minimum=MINIMUM) or {}
    if device.type == "cuda":
        report["data"].update(run("data path, GPU decode", BUDGETS["data path"][i],
                                  lambda: gpu_data_rate(jpegs(), device), minimum=MINIMUM) or {})
        runner.write(report)
    else:
        runner.skip("data path, GPU decode", "CUDA only")
    runner.skip("notebook 03", "not in this call (a second call: --only-notebook)")


def notebook(runner, report: dict, args, out: Path) -> None:
    """The second call: the demo assets, then notebook 03 on the device."""
    i, run = (1 if args.dry else 0), runner.run
    preset, runs_dir = ("smoke" if args.dry else "demo"), args.notebook_dir
    run("demo assets", BUDGETS["demo assets"][i], lambda: prepare_demo(preset), minimum=MINIMUM)
    device = "cpu" if args.dry else args.device
    report["notebook"] = run("notebook 03", BUDGETS["notebook 03"][i],
                             lambda: notebook_run(preset, device, out, runs_dir), minimum=60) or {}
    report["notebook"]["runs_done"] = len(list((runs_dir / "results" / preset).glob("*/seed*.json")))
    report["notebook"].update(preset=preset, table2_means=table2_means(preset, runs_dir))
    runner.write(report)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--out", default="build/gpu")
    p.add_argument("--budget", type=float, default=DEFAULT_BUDGET, help="seconds for the whole call")
    p.add_argument("--dry", action="store_true", help="CPU, smoke preset, tiny batches: checks the command runs")
    p.add_argument("--only-notebook", action="store_true", help="the second call: demo assets + notebook 03")
    p.add_argument("--notebook-dir", default="build/gpu-notebook", help="where notebook 03's runs are written")
    p.add_argument("--force-error", action="append", default=[], metavar="SECTION", help="(checks) raise in it")
    p.add_argument("--force-timeout", action="append", default=[], metavar="SECTION", help="(checks) hang in it")
    args = p.parse_args(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    args.notebook_dir = Path(args.notebook_dir).resolve()
    device = torch.device("cpu" if args.dry else args.device)
    report = header(device, "smoke" if args.dry else "demo" if args.only_notebook else "thesis", args.budget)
    if args.only_notebook and (out / "gpu.json").exists():       # merged into the default call's report
        report = {**json.loads((out / "gpu.json").read_text()), "fp32_matmul": report["fp32_matmul"]}
    write = sections.json_writer(out, markdown)
    runner = sections.Sections(report, write, args.budget, args.force_error, args.force_timeout, start=STARTED)
    write(report)
    if args.only_notebook:
        notebook(runner, report, args, out)
    else:
        measure(runner, report, device, args.dry)
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
