"""One command for a lent GPU: everything this repository wants to know about one, written to ``OUT/gpu.json`` and
``OUT/gpu.md`` (paste the latter into BENCHMARKS.md), in calls of at most 10 minutes each.

    bash benchmarks/gpu.sh                                    # on the GPU host: set up .venv-gpu, then this
    bash benchmarks/gpu.sh --only-notebook --merge FIRST/gpu.json   # a second call: notebook 03 on the GPU, merged
    python benchmarks/gpu.py --device cuda --out build/gpu    # the same, in an existing environment
    python benchmarks/gpu.py --dry --out build/gpu-dry        # CPU, smoke preset (what the test runs)

Sections of the default call, each under its own time budget (``BUDGETS``, cut to what is left of ``--budget``,
default 540 s) and its own exception capture (out of memory and compile errors included): a section that fails or
runs past its budget is recorded as an error or as timed out and the next one runs. ``gpu.json`` and ``gpu.md`` are
rewritten after every section, so a call killed at 10 minutes keeps every finished one.

1. ``peak matmul``: a large square bf16 matmul, the denominator of every MFU;
2. ``step batch B eager|compiled`` (B = 256, 512): the training step of docs/full_scale.md's recipe — the thesis
   preset's config as the recipe trains it (``tte_after_ls``; the teacher on its own augmented view every step, the
   preset's ``data.teacher_view``; bf16 autocast, the preset's ``train.precision``; fp32 matmuls as training leaves
   them: no TF32) and its step as ``training.engine.train_loop`` takes it (loss, backward, AdamW, schedule, logit
   scale clamp) — on one synthetic batch of the real shapes (224 px, 64 tokens, random weights) made on the device,
   so the step is timed without the data path. "eager" is the recipe's step; "compiled" is the same config with
   ``train.compile=true`` (the option training has: ``torch.compile`` of the student; dynamo reset before each shape),
   measured to say whether the recipe should use it — it does not yet. Each row records the options it ran with.
   pairs/s, ms/step, MFU, the teacher's share of the step, peak memory. FLOPs: 3 × the student's forward + the
   frozen teacher's forward, counted by ``torch.utils.flop_counter.FlopCounterMode`` (``bench.forward_flops``);
3. ``data path`` (``data_pipeline.py``): decode + both views per CPU core for each decoder training has
   (``data.decoder``; it has no GPU decoder).

``--only-notebook`` (a second call): ``demo assets`` (world and the demo pretraining, which thesis_lib computes on the
CPU, on one thread) and ``notebook 03`` at the demo preset
with ``-p device cuda`` (time, and its Table 2 means beside the committed CPU ones). Its runs are written under
``--notebook-dir``; a call cut short is resumed by the next (finished runs and cached assets are reused).

``--merge PATH``: the ``gpu.json`` of an earlier call (on a lent machine ``$OUT`` is emptied before every command:
bring the first call's file along); its sections are kept and this call's added, a section run again replacing its
earlier record, so one report holds both calls. A sticky CUDA error (an illegal address, a device-side assert:
every later CUDA call of the process fails) ends the call: the sections after it are recorded as skipped, the report
is written with what was measured, and the command says so and exits with status 3.
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
from thesis_lib.training.engine import grad_scaler, resolve_precision  # noqa: E402

HERE = Path(__file__).resolve().parent
# seconds per section: (default call on a GPU, --dry on CPU). The default call's sections (peak, 2 eager and 2 compiled
# steps, the data path) sum to 470 s: with start-up they fit in --budget 540
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


def fp32_matmul() -> dict:
    """How fp32 matmuls run, as training leaves them (thesis_lib never enables TF32): recorded, not changed."""
    matmul = torch.backends.cuda.matmul
    return {"float32_matmul_precision": torch.get_float32_matmul_precision(),
            "cuda_matmul": getattr(matmul, "fp32_precision", "tf32" if matmul.allow_tf32 else "ieee")}


def fresh_compile(model, **kwargs):
    """``torch.compile(model)`` after ``torch._dynamo.reset()``: each batch size gets its own static-shape graph
    (without the reset, a second shape of the same code is recompiled as a dynamic-shape graph)."""
    torch._dynamo.reset()
    return torch.compile(model, **kwargs)


def step_config(preset: str, batch: int, compiled: bool):
    """The recipe's training config at ``batch`` (random weights: no files); the dry run's smoke preset takes the
    thesis preset's teacher view and precision, so that it runs the same code path."""
    thesis = get_config("thesis")
    return get_config(preset, "tte_after_ls", overrides={
        "train.batch_size": batch, "weights.source": "random", "train.compile": compiled,
        "data.teacher_view": thesis.data.teacher_view, "train.precision": thesis.train.precision})


def step_options(cfg, device: torch.device) -> dict:
    """What a timed step ran with: the config fields that change its speed, and fp32 matmuls as in effect."""
    return {"train.precision": resolve_precision(cfg.train.precision, device), "data.teacher_view":
            cfg.data.teacher_view, "train.compile": cfg.train.compile, **fp32_matmul()}


def step_rate(preset: str, batch: int, device: torch.device, steps: int, compiled: bool) -> dict:
    """The recipe's training step at ``batch`` (``train.compile=compiled``) on one synthetic batch made on
    ``device``, as ``training.engine.train_loop`` takes it."""
    cfg = step_config(preset, batch, compiled)
    model, teacher, pairs, _, opt, sched = bench.build(cfg, device, synthetic=True)
    run_model = fresh_compile(model) if cfg.train.compile else model       # training.run: torch.compile(model)
    batch_t = pairs.batch(0)                                      # already on the device
    amp, scaler = bench.autocast(cfg.train.precision, device), grad_scaler(cfg.train.precision, device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()

    def steps_of(n):
        for _ in range(n):
            loss, _ = bench.compute_loss(run_model, model, batch_t, teacher, cfg.train, bench.SINGLE, amp)
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            sched.step()
            with torch.no_grad():
                model.logit_scale.clamp_(0, cfg.train.logit_scale_max)
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
            "flop_per_s": flops / step_s, "teacher_share": teacher_s / step_s, "peak_memory_gib": memory,
            "options": step_options(cfg, device)}


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
             f"preset {report['preset']}; the timed step is the recipe's training step (docs/full_scale.md)", "",
             "| section | status | seconds | budget s |", "|---|---|---:|---:|"]
    lines += [f"| {name} | {s['status']} | {s['seconds']:.0f} | {s['budget_s']:.0f} |"
              for name, s in report["sections"].items()]
    peak = _fmt(report.get("peak_tflops"), ".3g", " TFLOP/s")
    lines += ["", f"{report.get('peak_dtype', '')} matmul peak: {peak}", ""]
    if report.get("steps"):
        lines += ["| step (synthetic tensors) | pairs/s | ms/step | MFU | teacher share | peak memory | ran with |",
                  "|---|---:|---:|---:|---:|---:|---|"]
        lines += [f"| batch {r['batch']}, {'compiled' if r['compiled'] else 'eager'} | {r['pairs_per_s']:.0f} | "
                  f"{r['ms_per_step']:.1f} | {_fmt(r['mfu'] and 100 * r['mfu'], '.0f', ' %')} | "
                  f"{100 * r['teacher_share']:.0f} % | {_fmt(r['peak_memory_gib'], '.1f', ' GiB')} | "
                  + ", ".join(f"{k} {v}" for k, v in r.get("options", {}).items()) + " |" for r in report["steps"]]
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
    if report.get("sticky"):
        lines += [f"stopped: {report['sticky']}"]
    lines += [f"skipped: {s}" for s in report["skipped"]]
    return "\n".join(lines) + "\n"


def header(device: torch.device, preset: str, budget: float) -> dict:
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu (dry run)"
    return {"device": name, "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"), "preset": preset,
            "budget_s": budget, "peak_tflops": None, "steps": [], "data": {}, "sections": {}, "errors": [],
            "skipped": []}


def merged(earlier: dict, report: dict, where: str) -> dict:
    """``report`` (this call's, nothing measured yet) on top of an earlier call's: its sections, steps, data and
    notebook kept; refused when it was measured on another device (their numbers would sit in one table)."""
    if earlier.get("device") != report["device"]:
        raise SystemExit(f"gpu.py: --merge {where} was measured on {earlier.get('device')!r}, this call runs on "
                         f"{report['device']!r}; merge only calls on the same device")
    calls = earlier.get("calls") or [{k: earlier.get(k) for k in ("date", "torch", "preset")}]
    return {**earlier, "calls": calls + [{k: report[k] for k in ("date", "torch", "preset")}], "sticky": None}


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
                report["steps"] = [s for s in report["steps"] if (s["batch"], s["compiled"]) != (batch, compiled)]
                report["steps"].append(r)
    jpegs = functools.cache(lambda: data.coco_like_jpegs(4 if dry else 100))      # made inside a section
    rates = run("data path", BUDGETS["data path"][i], lambda: cpu_data_rates(jpegs()), minimum=MINIMUM)
    report["data"] = rates if rates is not None else report.get("data", {})
    if "notebook 03" not in report["sections"]:
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
    p.add_argument("--force-sticky", action="append", default=[], metavar="SECTION",
                   help="(checks) raise CUDA's illegal-address error in it")
    p.add_argument("--merge", default=None, metavar="GPU_JSON",
                   help="an earlier call's gpu.json: its sections are kept and this call's added")
    args = p.parse_args(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    args.notebook_dir = Path(args.notebook_dir).resolve()
    device = torch.device("cpu" if args.dry else args.device)
    report = header(device, "smoke" if args.dry else "demo" if args.only_notebook else "thesis", args.budget)
    if args.merge:
        report = merged(json.loads(Path(args.merge).read_text()), report, args.merge)
    write = sections.json_writer(out, markdown)
    runner = sections.Sections(report, write, args.budget, args.force_error, args.force_timeout, start=STARTED,
                               force_sticky=args.force_sticky)
    write(report)
    if args.only_notebook:
        notebook(runner, report, args, out)
    else:
        measure(runner, report, device, args.dry)
    print(markdown(report))
    if report.get("sticky"):
        print(f"gpu.py: stopped after a sticky CUDA error ({report['sticky']}); what was measured before it is in "
              f"{out / 'gpu.json'} and gpu.md; run the remaining sections in a new call with --merge "
              f"{out / 'gpu.json'}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
