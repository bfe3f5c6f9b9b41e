"""One command for a lent GPU: everything this repository wants to know about one, written to ``OUT/gpu.json`` and
``OUT/gpu.md`` (paste the latter into BENCHMARKS.md), in calls of at most 10 minutes each.

    bash benchmarks/gpu.sh                                    # on the GPU host: set up .venv-gpu, then this
    bash benchmarks/gpu.sh --only-notebook --merge FIRST/gpu.json   # a second call: notebook 03 on the GPU, merged
    python benchmarks/gpu.py --device cuda --out build/gpu    # the same, in an existing environment
    python benchmarks/gpu.py --dry --out build/gpu-dry        # CPU, smoke preset, every section tiny (the test's)

Sections of the default call, in this order, each under its own time budget (``BUDGETS``: at most 485 s together,
cut to what is left of ``--budget``, default 540 s counted from the start of the process, torch's import and CUDA's
start included) and its own exception capture (out of memory and compile errors included): a section that fails or
runs past its budget is recorded as an error or as timed out and the next one runs. ``gpu.json`` and ``gpu.md`` are
rewritten after every section, so a call killed at 10 minutes keeps every finished one.

1. ``peak matmul``: a large square bf16 matmul, the denominator of every MFU;
2. ``step batch B eager`` (B = 256, 512): the training step of docs/full_scale.md's recipe — the thesis preset's
   config as the recipe trains it (``tte_after_ls``; the teacher on its own augmented view every step, the preset's
   ``data.teacher_view``; bf16 autocast, the preset's ``train.precision``; fp32 matmuls as training leaves them: no
   TF32) and its step as ``training.engine.train_loop`` takes it (loss, backward, AdamW, schedule, logit scale clamp)
   — on one synthetic batch of the real shapes (224 px, 64 tokens, random weights) made on the device, so the step
   is timed without the data path: pairs/s, ms/step, MFU, the teacher's share of the step, peak memory. FLOPs: 3 ×
   the student's forward + the frozen teacher's forward (``bench.forward_flops``). A batch that does not fit is
   recorded as out of memory, with the memory reached; it is not retried with gradient accumulation
   (``NO_ACCUMULATION``: the contrastive loss takes its negatives from the batch);
3. ``data path`` (``data_pipeline.py``): decode + both views per CPU core for each decoder training has;
4. ``data loader`` (``data_loader.py``): the training data path end to end — webdataset shards as img2dataset
   writes them (256 × 256 and 683 × 512 JPEGs: its default output and a short edge of 512) in a temporary folder,
   ``TrainPairs.batches``' DataLoader with min(8, cores) workers, batches copied to the device — pairs/s, beside the
   step's at batch 256;
5. ``cuda tests``: ``pytest -m cuda tests/test_cuda.py`` in a process of its own (bf16 autocast at the thesis preset
   against fp32, a one-process NCCL group, fused against unfused AdamW, fused SDPA kernels against the math
   backend), each test's outcome recorded (on a CPU every one is skipped);
6. ``demo assets`` (the world; the demo's pretrained stand-ins are shipped) and ``demo run`` (``demo_run.py``): the
   committed ``results/demo/baseline/seed0.json`` trained again on the device (``python -m
   thesis_lib.training.run --preset demo --variant baseline --seed 0 --device cuda --set train.precision=fp32``),
   every metric beside the committed one within the declared cross-machine tolerance
   (``thesis_lib.study.claims.verify``, as make verify); its result and curve are kept under ``OUT/demo_run/``;
7. ``step batch B compiled``: the step of 2. with ``train.compile=true`` (``torch.compile`` of the student; dynamo
   reset before each shape), measured to say whether the recipe should use it — it does not yet. Last, as the
   least needed: each may stretch into the time the sections before left unused (``COMPILE_STRETCH_S``).

``--only-notebook`` (a second call): ``demo assets`` and ``notebook 03`` at the demo preset with ``-p device cuda``
(time, and its Table 2 means beside the committed CPU ones). Its runs are written under ``--notebook-dir``; a call
cut short is resumed by the next (finished runs and cached assets are reused).

``--dry``: every section on the CPU at the smoke preset and tiny sizes (the compiled steps with the ``aot_eager``
backend: dynamo and AOTAutograd as on the GPU, without inductor's C++ code generation, which the GPU does not use);
the demo run is compared with the golden smoke run (``tests/golden``) within its ``GOLDEN_RTOL``.

``--merge PATH``: the ``gpu.json`` of an earlier call (on a lent machine ``$OUT`` is emptied before every command:
bring the first call's file along); its sections are kept and this call's added, a section run again replacing its
earlier record, so one report holds both calls. A sticky CUDA error (an illegal address, a device-side assert:
every later CUDA call of the process fails) ends the call: the sections after it are recorded as skipped, the report
is written with what was measured, and the command says so and exits with status 3. A ``--device cuda`` that is not
there (``torch.cuda.is_available()`` false: no driver, no GPU, a CPU build of torch; or a ``cuda:N`` past the host's
GPUs) is one line and exit status 2, checked before the report is started: nothing is written to ``OUT``.
"""
from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

STARTED = time.perf_counter()   # the call's budget counts from here: torch's import and CUDA's start included

import torch  # noqa: E402

from thesis_lib import get_config  # noqa: E402
from thesis_lib.paths import results_dir  # noqa: E402
from thesis_lib.training.engine import TrainState, grad_scaler, optimiser_step, resolve_precision  # noqa: E402
from thesis_lib.training.results import RunPaths  # noqa: E402

HERE = Path(__file__).resolve().parent
# seconds per section: (default call on a GPU, --dry on CPU). The default call's sections (``plan``: peak; 2 eager
# steps; data path; data loader; cuda tests; demo assets and run; 2 compiled steps) sum to 485 s on a GPU: with
# STARTUP_S they fit in DEFAULT_BUDGET. Measured on a bare H100 host (benchmarks/gpu/, 2026-11-27 and -28): peak 3;
# eager 11 and 7; data path 7; data loader 17-21; cuda tests 16-18; demo assets 65 and > 60 (the world and the demo's
# pretraining on the host's CPU: 60 s, the first budget, cut them short on 2026-11-28 and the demo run after them);
# demo run 31-33; compiled 30-39.
BUDGETS = {"peak matmul": (15, 30), "step eager": (25, 60), "data path": (20, 30), "data loader": (40, 60),
           "cuda tests": (40, 90), "demo assets": (120, 120), "demo run": (80, 120), "step compiled": (60, 90)}
COMPILE_STRETCH_S = 140         # a compiled step may run this long where the sections before it left time unused
NOTEBOOK_BUDGETS = {"demo assets": (420, 300), "notebook 03": (540, 300)}      # the second call (--only-notebook)
DEFAULT_BUDGET = 540.0          # seconds for one call: 9 of a 10-minute limit, a minute kept for start-up and writing
STARTUP_S = 50                  # not in any section: gpu.sh's set-up of .venv-gpu, torch's import, CUDA's start
MINIMUM = 10                    # seconds below which a section is skipped for time
COMPILE_BACKEND = ("inductor", "aot_eager")    # torch.compile's backend: (GPU, --dry)


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench, data, sections = _module("bench"), _module("data_pipeline"), _module("sections")
loader, demo, gpu_report = _module("data_loader"), _module("demo_run"), _module("gpu_report")
markdown = gpu_report.markdown


def fp32_matmul() -> dict:
    """How fp32 matmuls and convolutions run, as training leaves them (thesis_lib never enables TF32; cuDNN's
    convolutions take TF32 by default): recorded, not changed."""
    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    conv = getattr(getattr(cudnn, "conv", None), "fp32_precision", None)
    return {"float32_matmul_precision": torch.get_float32_matmul_precision(),
            "cuda_matmul": getattr(matmul, "fp32_precision", "tf32" if matmul.allow_tf32 else "ieee"),
            "cudnn_conv": conv or ("tf32" if cudnn.allow_tf32 else "ieee")}


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


def step_options(cfg, device: torch.device, backend: str) -> dict:
    """What a timed step ran with: the config fields that change its speed, and fp32 matmuls as in effect."""
    return {"train.precision": resolve_precision(cfg.train.precision, device), "data.teacher_view":
            cfg.data.teacher_view, "train.compile": cfg.train.compile,
            "compile_backend": backend if cfg.train.compile else None, **fp32_matmul()}


def step_rate(preset: str, batch: int, device: torch.device, steps: int, compiled: bool, backend: str) -> dict:
    """The recipe's training step at ``batch`` (``train.compile=compiled``, with ``backend``) on one synthetic batch
    made on ``device``, as ``training.engine.train_loop`` takes it."""
    cfg = step_config(preset, batch, compiled)
    model, teacher, pairs, _, opt, sched = bench.build(cfg, device, synthetic=True)
    run_model = fresh_compile(model, backend=backend) if cfg.train.compile else model   # training.run: compile
    batch_t = pairs.batch(0)                                      # already on the device
    amp = bench.autocast(cfg.train.precision, device)
    state = TrainState(run_model, model, teacher, opt, sched, bench.SINGLE, device,
                       grad_scaler(cfg.train.precision, device))
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()

    def steps_of(n):
        for _ in range(n):
            loss, _ = bench.compute_loss(run_model, model, batch_t, teacher, cfg.train, bench.SINGLE, amp)
            optimiser_step(state, loss, cfg.train)              # the loop's own step
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
            "options": step_options(cfg, device, backend)}


def _teacher_seconds(teacher, images, device, repeats: int = 3) -> float:
    with torch.no_grad():
        teacher(images)
        bench.sync(device)
        t = time.perf_counter()
        for _ in range(repeats):
            teacher(images)
        bench.sync(device)
    return (time.perf_counter() - t) / repeats


def step_section(runner, report: dict, batch: int, compiled: bool, budget: float, body, device: torch.device):
    """One step row: ``body()``'s measurement, or, when the batch does not fit, a row saying so with the memory
    reached (``gpu_report.NO_ACCUMULATION`` says why it is not retried with accumulated micro-batches)."""
    name = f"step batch {batch} {'compiled' if compiled else 'eager'}"
    oom = {}

    def measured():
        try:
            return body()
        except torch.cuda.OutOfMemoryError:
            cuda = device.type == "cuda" and torch.cuda.is_available()
            oom.update(batch=batch, compiled=compiled, out_of_memory=True, options={}, peak_memory_gib=(
                torch.cuda.max_memory_allocated(device) / 2 ** 30 if cuda else None), capacity_gib=(
                torch.cuda.get_device_properties(device).total_memory / 2 ** 30 if cuda else None))
            raise

    r = runner.run(name, budget, measured, minimum=MINIMUM) or (oom or None)
    if r is not None:
        peak = report.get("peak_tflops")
        if not r.get("out_of_memory"):
            r["mfu"] = r["flop_per_s"] / (peak * 1e12) if peak else None
        report["steps"] = [s for s in report["steps"] if (s["batch"], s["compiled"]) != (batch, compiled)] + [r]
        runner.write(report)
    return r


def cpu_data_rates(jpegs: list[bytes]) -> dict:
    return {f"{name}, per CPU core": data.cpu_rate(name, jpegs) for name in data.DECODERS}


def notebook_env(preset: str) -> dict:
    """The environment of the notebook's (and the demo run's) processes: the preset, no progress bars."""
    return {**os.environ, "THESIS_PRESET": preset, "THESIS_PROGRESS": "0"}


def prepare_demo(preset: str) -> dict:
    """World, tokenizer and demo pretraining of ``preset`` (cached: instant when done before)."""
    t = time.perf_counter()
    done = sections.run_subprocess([sys.executable, "-m", "thesis_lib.training.prepare", "--preset", preset],
                                   cwd=HERE.parent, env=notebook_env(preset))
    if done.returncode:
        raise RuntimeError(f"prepare exited {done.returncode}: {done.stderr}")
    return {"seconds": time.perf_counter() - t}


def cuda_tests(report: dict) -> dict:
    """``pytest -m cuda tests/test_cuda.py`` in a process of its own (its own CUDA context), each test's outcome
    into ``report["cuda_tests"]``; an error when one failed or none ran. The repository's pytest options (nbval's)
    are left out (``-o addopts=``): the GPU host has no nbval."""
    args = ["-m", "pytest", "-m", "cuda", "-q", "-o", "addopts=", "-p", "no:cacheprovider", "tests/test_cuda.py"]
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        done = sections.run_subprocess([sys.executable, *args, f"--junitxml={junit}"], cwd=HERE.parent,
                                       env={**os.environ, "THESIS_PROGRESS": "0"})
        tests = junit_outcomes(junit) if junit.exists() else []
    report["cuda_tests"] = {"command": "python " + " ".join(args), "exit_code": done.returncode, "tests": tests}
    failed = [t["test"] for t in tests if t["outcome"] in ("failed", "error")]
    if failed or done.returncode not in (0,) or not tests:
        raise RuntimeError(f"pytest exited {done.returncode}; failed: {', '.join(failed) or 'none'}; "
                           f"{(done.stdout + done.stderr)[-sections.ERROR_CHARS:]}")
    return report["cuda_tests"]


OUTCOMES = {"failure": "failed", "error": "error", "skipped": "skipped"}    # a JUnit test case's child: outcome


def junit_outcomes(path: Path) -> list[dict]:
    """Each test case of a JUnit XML file: name, outcome (passed, failed, error, skipped), seconds, message."""
    out = []
    for case in ET.parse(path).getroot().iter("testcase"):
        child = next((c for c in case if c.tag in OUTCOMES), None)
        outcome = "passed" if child is None else OUTCOMES[child.tag]
        message = "" if child is None else (child.get("message") or child.text or "")
        out.append({"test": case.get("name"), "outcome": outcome, "seconds": float(case.get("time") or 0),
                    "message": " ".join(message.split())[:sections.ERROR_CHARS]})
    return out


def data_loader_section(report: dict, preset: str, batch: int, device: torch.device, dry: bool) -> dict:
    """``data_loader.loader_rate`` over fresh shards in a temporary folder: min(8, cores) workers (2 in --dry), 3
    batches per worker after the first, 256 pictures (8 in --dry)."""
    workers = min(2 if dry else 8, loader.default_workers())
    with tempfile.TemporaryDirectory() as tmp:
        report["data_loader"] = loader.loader_rate(Path(tmp), preset, batch, workers, 3 * workers + 1, device,
                                                   8 if dry else 256)
    return report["data_loader"]


def demo_section(report: dict, preset: str, device: str, out: Path) -> dict:
    r = demo.demo_run(preset, device, out / "demo_run", sections.run_subprocess, notebook_env(preset))
    r["options"] = {"train.precision": demo.committed_precision(preset), **fp32_matmul()}
    report["demo_run"] = r
    return r


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
    for where, root in (("device", results_dir(runs_dir)), ("cpu (committed)", results_dir())):
        for f in RunPaths.results(root, preset):
            r = json.loads(f.read_text())
            for m in ("imagenet_top1", "coco_mean", "flickr_mean"):
                table.setdefault(r["variant"], {}).setdefault(f"{m} {where}", []).append(r["metrics"][m])
    return {v: {k: sum(x) / len(x) for k, x in row.items()} for v, row in table.items()}


def header(device: torch.device, preset: str, budget: float) -> dict:
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu (dry run)"
    return {"device": name, "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"), "preset": preset,
            "budget_s": budget, "peak_tflops": None, "steps": [], "data": {}, "sections": {}, "errors": [],
            "skipped": []}


def plan(batches: tuple[int, ...]) -> list[tuple[str, str]]:
    """The default call's sections in the order ``measure`` runs them, each with its key in ``BUDGETS``."""
    return ([("peak matmul", "peak matmul")] + [(f"step batch {b} eager", "step eager") for b in batches]
            + [(name, name) for name in ("data path", "data loader", "cuda tests", "demo assets", "demo run")]
            + [(f"step batch {b} compiled", "step compiled") for b in batches])


def measure(runner, report: dict, device: torch.device, dry: bool, out: Path) -> None:
    """The default call: the sections 1-7 of the module's docstring, in that order."""
    i, run = (1 if dry else 0), runner.run
    preset, batches, steps = ("smoke", (4, 8), 2) if dry else ("thesis", (256, 512), 10)
    dtype, backend = (torch.bfloat16 if device.type == "cuda" else torch.float32), COMPILE_BACKEND[i]
    peak = run("peak matmul", BUDGETS["peak matmul"][i],
               lambda: bench.peak_matmul(device, dtype, n=512 if dry else None, seconds=0.5 if dry else 2.0) / 1e12)
    report.update(peak_tflops=peak, peak_dtype=str(dtype).removeprefix("torch."))

    def step(batch, compiled, budget):
        step_section(runner, report, batch, compiled, budget,
                     lambda: step_rate(preset, batch, device, steps, compiled, backend), device)

    for batch in batches:
        step(batch, False, BUDGETS["step eager"][i])
    jpegs = functools.cache(lambda: data.coco_like_jpegs(4 if dry else 100))      # made inside a section
    rates = run("data path", BUDGETS["data path"][i], lambda: cpu_data_rates(jpegs()), minimum=MINIMUM)
    report["data"] = rates if rates is not None else report.get("data", {})
    run("data loader", BUDGETS["data loader"][i], lambda: data_loader_section(report, preset, batches[0], device, dry),
        minimum=MINIMUM)
    run("cuda tests", BUDGETS["cuda tests"][i], lambda: cuda_tests(report), minimum=MINIMUM)
    demo_preset = "smoke" if dry else "demo"             # the committed run it is compared with
    run("demo assets", BUDGETS["demo assets"][i], lambda: prepare_demo(demo_preset), minimum=MINIMUM)
    run("demo run", BUDGETS["demo run"][i], lambda: demo_section(report, demo_preset, str(device), out),
        minimum=MINIMUM)
    compiled_budget = BUDGETS["step compiled"][i]
    for k, batch in enumerate(batches):                  # the time the sections before left unused, kept for the rest
        later = compiled_budget * (len(batches) - 1 - k)
        step(batch, True, max(compiled_budget, min(COMPILE_STRETCH_S, runner.left() - later)))
    if "notebook 03" not in report["sections"]:
        runner.skip("notebook 03", "not in this call (a second call: --only-notebook)")


def notebook(runner, report: dict, args, out: Path) -> None:
    """The second call: the demo assets, then notebook 03 on the device."""
    i, run = (1 if args.dry else 0), runner.run
    preset, runs_dir = ("smoke" if args.dry else "demo"), args.notebook_dir
    run("demo assets", NOTEBOOK_BUDGETS["demo assets"][i], lambda: prepare_demo(preset), minimum=MINIMUM)
    device = "cpu" if args.dry else args.device
    if args.with_demo_run:
        run("demo run", BUDGETS["demo run"][i], lambda: demo_section(report, preset, device, out), minimum=MINIMUM)
    report["notebook"] = run("notebook 03", NOTEBOOK_BUDGETS["notebook 03"][i],
                             lambda: notebook_run(preset, device, out, runs_dir), minimum=60) or {}
    report["notebook"]["runs_done"] = len(RunPaths.results(results_dir(runs_dir), preset))
    report["notebook"].update(preset=preset, table2_means=table2_means(preset, runs_dir))
    runner.write(report)


def device_problem(name: str) -> str | None:
    """Why ``name`` cannot be measured on here (a sentence), or None: checked before the report is started, so that
    a host without a GPU gets one line and no half-written ``OUT``."""
    import warnings
    try:
        device = torch.device(name)
    except RuntimeError as err:
        return f"--device {name!r} is not a device torch knows ({err})"
    if device.type != "cuda":
        return None
    with warnings.catch_warnings():              # "CUDA initialization: Found no NVIDIA driver …": said below
        warnings.simplefilter("ignore")
        available, count = torch.cuda.is_available(), torch.cuda.device_count()
    if not available:
        why = (f"this torch ({torch.__version__}) is built without CUDA" if torch.version.cuda is None else
               "no NVIDIA driver or GPU is visible (nvidia-smi, CUDA_VISIBLE_DEVICES)")
        return f"--device {name}: torch.cuda.is_available() is False here: {why}; nothing was measured"
    if device.index is not None and device.index >= count:
        return f"--device {name}: this host has {count} GPU{'s' * (count != 1)}; nothing was measured"
    return None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--out", default="build/gpu")
    p.add_argument("--budget", type=float, default=DEFAULT_BUDGET, help="seconds for the whole call")
    p.add_argument("--dry", action="store_true", help="CPU, smoke preset, tiny sizes: checks the command runs")
    p.add_argument("--only-notebook", action="store_true", help="the second call: demo assets + notebook 03")
    p.add_argument("--with-demo-run", action="store_true",
                   help="with --only-notebook: the demo run before the notebook (its world is prepared there too)")
    p.add_argument("--notebook-dir", default="build/gpu-notebook", help="where notebook 03's runs are written")
    p.add_argument("--force-error", action="append", default=[], metavar="SECTION", help="(checks) raise in it")
    p.add_argument("--force-timeout", action="append", default=[], metavar="SECTION", help="(checks) hang in it")
    p.add_argument("--force-sticky", action="append", default=[], metavar="SECTION",
                   help="(checks) raise CUDA's illegal-address error in it")
    p.add_argument("--merge", default=None, metavar="GPU_JSON",
                   help="an earlier call's gpu.json: its sections are kept and this call's added")
    args = p.parse_args(argv)
    problem = None if args.dry else device_problem(args.device)
    if problem:
        print(f"gpu.py: {problem}", file=sys.stderr)
        return 2
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    args.notebook_dir = Path(args.notebook_dir).resolve()
    device = torch.device("cpu" if args.dry else args.device)
    report = header(device, "smoke" if args.dry else "demo" if args.only_notebook else "thesis", args.budget)
    if args.merge:
        report = gpu_report.merged(json.loads(Path(args.merge).read_text()), report, args.merge)
    write = sections.json_writer(out, markdown)
    runner = sections.Sections(report, write, args.budget, args.force_error, args.force_timeout, start=STARTED,
                               force_sticky=args.force_sticky)
    write(report)
    if args.only_notebook:
        notebook(runner, report, args, out)
    else:
        measure(runner, report, device, args.dry, out)
    print(markdown(report))
    if report.get("sticky"):
        print(f"gpu.py: stopped after a sticky CUDA error ({report['sticky']}); what was measured before it is in "
              f"{out / 'gpu.json'} and gpu.md; run the remaining sections in a new call with --merge "
              f"{out / 'gpu.json'}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
