"""The recipe's generated launches, run as a lab would run them, in miniature (the rehearsal's stage 5):

* a lane of ``recipe commands --layout 8gpu``: the script the recipe writes, with the rehearsal's run in place of the
  recipe's, run by bash — its shard-index line, then ``torchrun`` on 2 processes;
* an ``srun``-style launch: the training command of ``recipe commands --layout slurm``'s sbatch line (its
  ``--wrap``), started twice with the variables srun gives each task (``SLURM_PROCID``, ``SLURM_LOCALID``,
  ``SLURM_STEP_NUM_TASKS``, ``SLURM_JOB_ID``, ``SLURM_STEP_NODELIST``), no torchrun;
* the pilot (``full_scale/pilot.py``) for a few steps.

Each trains with the recipe's own teacher view (augmented, the thesis preset's) unless ``sets`` says otherwise, and
runs under ``data/lifetime.py``'s watcher: nothing it starts outlives the rehearsal.
"""
from __future__ import annotations

import json
import os
import shlex
import string
import subprocess
import sys
from pathlib import Path

from thesis_lib.config_checks import location_overrides
from thesis_lib.data.lifetime import watched
from thesis_lib.paths import ROOT, results_dir
from thesis_lib.training.results import RunPaths

from . import recipe

CORES_PER_GPU = 3            # 1 DataLoader worker per process: the rehearsal's machine may have 2 cores


def job(variant: str, seed: int, out: Path, data: Path, ckpt: Path, sets: dict) -> dict:
    """A run in the form ``recipe.planned_jobs`` gives one."""
    return {"preset": "thesis", "variant": variant, "seed": seed, "out_dir": str(out),
            "overrides": {**location_overrides(str(data), str(ckpt)), **sets}}


def _env(data: Path, ckpt: Path, out: Path, mix: str) -> dict:
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "DATA": str(data), "CKPT": str(ckpt), "OUT": str(out), "MIX": mix, "STAGE": "",
            "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), "OMP_NUM_THREADS": "1"}


def _result(spec: dict) -> dict:
    path = RunPaths(results_dir(spec["out_dir"]), spec["preset"], spec["variant"], spec["seed"]).result
    if not path.exists():
        raise SystemExit(f"rehearsal: the launch wrote no result {path}")
    return json.loads(path.read_text())


def _check(done: subprocess.CompletedProcess, what: str, log: Path) -> None:
    log.write_text(done.stdout + done.stderr)
    if done.returncode:
        raise SystemExit(f"rehearsal: {what} failed (exit {done.returncode}); log {log}\n"
                         f"{(done.stdout + done.stderr)[-3000:]}")


def lane(spec: dict, device: str, data: Path, ckpt: Path, mix: str, logs: Path) -> tuple[dict, str]:
    """Lane 0 of the 8-GPU script, holding ``spec`` alone, run by bash; its result and the script's first lines."""
    script = recipe.commands("8gpu", cores_per_gpu=CORES_PER_GPU, jobs=[spec], device=device)
    (logs / "train.bash").write_text(script)
    done = subprocess.run(watched(["bash", str((logs / "train.bash").resolve())]), cwd=logs, capture_output=True,
                          text=True, env=_env(data, ckpt, Path(spec["out_dir"]), mix))
    _check(done, "the 8-GPU script's lane", logs / "train.bash.log")
    lane_log = logs / "lane0.log"
    if "Traceback" in lane_log.read_text():
        raise SystemExit(f"rehearsal: the lane's log holds a traceback ({lane_log})")
    return _result(spec), script.splitlines()[2]


def srun_command(spec: dict, device: str, env: dict) -> list[str]:
    """The training command inside the sbatch line's ``--wrap``, its variables filled in from ``env`` (as the
    shell that submits it would), without srun."""
    args = shlex.split(string.Template(recipe.sbatch(spec, CORES_PER_GPU, device)).safe_substitute({"stage": "",
                                                                                                     **env}))
    wrap = shlex.split(args[args.index("--wrap") + 1] if "--wrap" in args else
                       next(a.split("=", 1)[1] for a in args if a.startswith("--wrap=")))
    if wrap[0] != "srun":
        raise SystemExit(f"rehearsal: the sbatch line does not wrap srun: {wrap[:3]}")
    at = wrap.index("python")
    return [sys.executable] + wrap[at + 1:]


def srun_launch(spec: dict, device: str, data: Path, ckpt: Path, mix: str, logs: Path, port: int) -> dict:
    """The sbatch line's training command on 2 tasks, each with the variables srun sets; its result."""
    env = _env(data, ckpt, Path(spec["out_dir"]), mix)
    cmd = srun_command(spec, device, env)
    (logs / "srun.command").write_text(shlex.join(cmd) + "\n")
    tasks = []
    for rank in range(2):
        task_env = {**env, "SLURM_PROCID": str(rank), "SLURM_LOCALID": str(rank), "SLURM_STEP_NUM_TASKS": "2",
                    "SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0", "SLURM_STEP_NODELIST": "localhost",
                    "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        tasks.append(subprocess.Popen(watched(cmd), cwd=ROOT, env=task_env,
                                      stdout=open(logs / f"srun-task{rank}.log", "w"), stderr=subprocess.STDOUT))
    codes = [t.wait(timeout=900) for t in tasks]
    if any(codes):
        raise SystemExit(f"rehearsal: the srun-style launch failed (exit {codes}); logs {logs}/srun-task*.log\n"
                         + (logs / "srun-task0.log").read_text(errors="replace")[-3000:])
    return _result(spec)


def pilot(data: Path, ckpt: Path, out: Path, mix: str, sets: dict, device: str, logs: Path) -> str:
    """The pilot for 2 steps on 1 process: its report."""
    own = ("train.steps", "data.num_workers", "data.train_sets")       # the pilot's: --steps, its workers, $MIX
    cmd = [sys.executable, "-m", "thesis_lib.full_scale.pilot", "--gpus", "1", "--steps", "2", "--device", device,
           "--cores-per-gpu", str(CORES_PER_GPU)] + [a for k, v in sets.items() if k not in own
                                                      for a in ("--set", f"{k}={v}")]
    done = subprocess.run(watched(cmd), cwd=ROOT, capture_output=True, text=True, env=_env(data, ckpt, out, mix))
    _check(done, "the pilot", logs / "pilot.log")
    return done.stdout.strip()
