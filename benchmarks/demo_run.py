"""One committed CPU run trained again on another device, its metrics beside the committed ones within the
repository's declared cross-machine tolerance (docs/reproducibility.md):

* ``demo``: ``results/demo/baseline/seed0.json`` (600 steps), held to ``thesis_lib.study.claims.verify``'s rule, as
  ``make verify`` holds a retrained run: ``TOLERANCE_SDS`` × the metric's between-seed SD over the committed demo
  results for a replay of the committed loss curve (or a run that is not one), ``FORKED_SDS`` for a run that
  follows the curve and then forks (``verify.tolerance_sds``);
* ``smoke`` (the dry run): the golden smoke run ``tests/golden/smoke_seed0.json`` (6 steps), held to
  ``GOLDEN_RTOL`` of ``tests/test_reproducible.py`` relative to each value (read from there, not restated).

The run is the CLI's (``RUN_COMMAND``) at the precision the committed CPU run computed in: the preset's
``train.precision`` is ``auto``, fp32 on a CPU and bf16 on a GPU, and bf16 is another computation, not the same one
on another device (``--set train.precision=fp32``).
"""
from __future__ import annotations

import importlib.util
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch

from thesis_lib import get_config
from thesis_lib.metrics import HEADLINE
from thesis_lib.paths import ROOT, results_dir
from thesis_lib.study.claims import verify
from thesis_lib.training.engine import resolve_precision
from thesis_lib.training.results import RunPaths, load_results, read_jsonl, read_result

VARIANT, SEED = "baseline", 0        # the smallest committed demo run: the plain model, seed 0
GOLDEN = ROOT / "tests" / "golden" / "smoke_seed0.json"


def committed_precision(preset: str) -> str:
    """What the preset's ``train.precision`` resolves to on the CPU that wrote the committed results."""
    return resolve_precision(get_config(preset).train.precision, torch.device("cpu"))


def run_command(preset: str, device: str, out: Path) -> list[str]:
    return [sys.executable, "-m", "thesis_lib.training.run", "--preset", preset, "--variant", VARIANT, "--seed",
            str(SEED), "--device", device, "--out", str(out), "--no-progress", "--set",
            f"train.precision={committed_precision(preset)}"]


def golden_rtol() -> float:
    """``GOLDEN_RTOL`` as tests/test_reproducible.py declares it."""
    spec = importlib.util.spec_from_file_location("test_reproducible", ROOT / "tests" / "test_reproducible.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.GOLDEN_RTOL


def reference(preset: str, curve: list[dict]) -> tuple[dict, dict, str]:
    """The committed metrics of the run, each one's tolerance for ours (whose loss curve is ``curve``), and the
    rule in words."""
    if preset == "smoke":
        golden = json.loads(GOLDEN.read_text())[VARIANT]["metrics"]
        rtol = golden_rtol()
        return golden, {m: rtol * abs(v) for m, v in golden.items()}, (
            f"GOLDEN_RTOL = {rtol:g} relative (tests/test_reproducible.py), against {GOLDEN.relative_to(ROOT)}")
    paths = RunPaths(results_dir(), preset, VARIANT, SEED)
    committed = read_result(paths.result)["metrics"]
    sds, why = verify.tolerance_sds(read_jsonl(paths.metrics), curve)
    sd = verify.tolerances(load_results(results_dir(), preset))
    factor = sds / verify.TOLERANCE_SDS
    return committed, {m: factor * s for m, s in sd.items()}, (
        f"{sds:.3g} between-seed SD of the committed {preset} results ({why}; thesis_lib.study.claims.verify, as make "
        f"verify), against results/{preset}/{VARIANT}/seed{SEED}.json")


def compare(ours: dict, committed: dict, tolerance: dict) -> list[dict]:
    """One row per committed metric: ours, committed, |difference|, tolerance, within (None: no tolerance)."""
    rows = []
    for metric in sorted(committed, key=lambda m: HEADLINE.index(m) if m in HEADLINE else len(HEADLINE)):
        theirs = committed[metric]
        mine, tol = ours.get(metric), tolerance.get(metric)
        diff = None if mine is None else abs(mine - theirs)
        rows.append({"metric": metric, "headline": metric in HEADLINE, "ours": mine, "committed": theirs,
                     "diff": diff, "tolerance": tol, "within": None if diff is None or tol is None else diff <= tol})
    return rows


def demo_run(preset: str, device: str, keep: Path, run_subprocess, env: dict) -> dict:
    """Train the run on ``device`` in a temporary folder (``run_subprocess(cmd, cwd=, env=)``), keep its result and
    curve under ``keep`` and compare its metrics with the committed ones."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = run_command(preset, device, Path(tmp))
        t = time.perf_counter()
        done = run_subprocess(cmd, cwd=ROOT, env=env)
        seconds = time.perf_counter() - t
        if done.returncode:
            raise RuntimeError(f"the run exited {done.returncode}: {done.stderr}")
        paths = RunPaths(Path(tmp) / "results", preset, VARIANT, SEED)
        result, curve = read_result(paths.result), read_jsonl(paths.metrics)
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(paths.result, keep / paths.result.name)
        shutil.copyfile(paths.metrics, keep / paths.metrics.name)
    committed, tolerance, rule = reference(preset, curve)
    rows = compare(result["metrics"], committed, tolerance)
    shown = ["python" if c == sys.executable else c for c in cmd]
    return {"preset": preset, "variant": VARIANT, "seed": SEED, "device": device, "seconds": seconds,
            "command": " ".join(str(c) for c in shown).replace(tmp, "TMP"), "train": result["train"], "rule": rule,
            "metrics": rows, "within": sum(bool(r["within"]) for r in rows), "compared": len(rows)}
