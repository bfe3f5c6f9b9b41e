"""The recipe's status and missing-only commands on a half-finished rehearsal (the rehearsal's stage 4).

After the torchrun stage the rehearsal's runs folder holds one of the recipe's runs, finished: the recipe's own run
of it (``recipe.planned_jobs``: the thesis preset, ``$OUT`` its output folder) lies where the rehearsal's run lies,
so ``recipe status --out <runs>`` and ``recipe commands --layout slurm --missing-only --out <runs>`` are run as a lab
runs them, against that folder. ``status`` must show that run done and every other one missing; the missing-only
script must submit every other run and not that one (its SLURM job name, ``recipe.job_name``).
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from thesis_lib.data.lifetime import watched
from thesis_lib.paths import ROOT

from . import recipe

STATUS = ("status",)
MISSING = ("commands", "--layout", "slurm", "--missing-only")


def done_name(variant: str, seed: int) -> str:
    """The recipe's name of its own (grid) run of ``variant`` seed ``seed``: its SLURM job name."""
    return recipe.job_name({"variant": variant, "seed": seed, "out_dir": "$OUT"})


def recipe_cli(args: tuple[str, ...], runs: Path, log: Path) -> str:
    """``python -m thesis_lib.full_scale.recipe <args> --out <runs>``: its output, also written to ``log`` (with the
    command and its stderr); raises SystemExit if it fails."""
    cmd = [sys.executable, "-m", "thesis_lib.full_scale.recipe", *args, "--out", str(runs)]
    done = subprocess.run(watched(cmd), cwd=ROOT, capture_output=True, text=True)
    log.write_text(f"$ python -m thesis_lib.full_scale.recipe {' '.join(args)} --out {runs}\n{done.stdout}"
                   + (f"\n[stderr]\n{done.stderr}" if done.stderr else ""))
    if done.returncode:
        raise SystemExit(f"rehearsal: `recipe {' '.join(args)}` failed (exit {done.returncode}); log {log}\n"
                         f"{done.stderr[-3000:]}")
    return done.stdout


def check(status_text: str, script: str, done: str) -> list[str]:
    """Raise SystemExit unless ``status_text`` shows the run ``done`` done and every other run missing, and the
    missing-only ``script`` submits every other run and not ``done``; else one line for each."""
    rows = [line.split() for line in status_text.splitlines()[:-1]]
    states = {row[1]: row[0] for row in rows}
    others = sorted(name for name, state in states.items() if name != done and state != "missing")
    n = len(rows)
    total = f"{n} runs: 1 done, 0 running, 0 failed, {n - 1} missing"
    if states.get(done) != "done" or others or status_text.splitlines()[-1] != total:
        raise SystemExit(f"rehearsal: `recipe status` on the half-finished runs does not show {done} done and the "
                         f"others missing ({done}: {states.get(done)}; not missing: {others[:5]}): "
                         f"{status_text.splitlines()[-1] if status_text else 'no output'}")
    submitted = [line.split("--job-name=")[1].split()[0] for line in script.splitlines()
                 if line.startswith("sbatch ")]
    if done in submitted or sorted(submitted) != sorted(set(states) - {done}):
        raise SystemExit(f"rehearsal: `recipe commands --layout slurm --missing-only` submits {len(submitted)} "
                         f"runs, {'among them' if done in submitted else 'not'} {done} (done); "
                         f"{n - 1} missing ones expected")
    return [f"`recipe status` on the half-finished rehearsal: {total} ({done}, the torchrun run, done)",
            f"`recipe commands --layout slurm --missing-only`: {len(submitted)} sbatch jobs, every missing run "
            f"once, none named {done}"]


def half_finished(runs: Path, logs: Path, variant: str, seed: int) -> list[str]:
    """The stage: both commands against ``runs``, their outputs in ``logs``, checked (``check``)."""
    status_text = recipe_cli(STATUS, runs, logs / "recipe-status.txt")
    script = recipe_cli(MISSING, runs, logs / "recipe-missing-only.txt")
    return check(status_text, script, done_name(variant, seed))
