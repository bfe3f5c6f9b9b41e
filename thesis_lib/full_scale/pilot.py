"""A pilot before the recipe's runs: one run of a few hundred steps on the real data, as the recipe launches it, then
what it measured (pairs/s end to end, the share of the time the loop waited for its batches, GPU utilisation, the
shards' cold random-read rate beside the pairs/s the GPUs need) and what that projects for the whole recipe
(``cost.days``).

    python -m thesis_lib.full_scale.pilot --gpus 2 --steps 300        # DATA, CKPT, OUT and MIX from the environment

It trains ``baseline`` seed 0 with ``train.steps`` set to ``--steps`` (a shorter schedule than the recipe's: its result
is stored in a new folder of its own under ``$OUT/pilot``, so that each pilot measures afresh, and nothing else reads
it) on ``--gpus`` processes at the recipe's global batch of 512, with the DataLoader workers the recipe gives them
(``cost.workers``), and ends with the run's evaluation, like every run. It starts them as the recipe's sbatch lines
start a run (``tasks``): inside a SLURM job by srun, one task per GPU, the group meeting on a port derived from the job;
elsewhere as the same tasks with srun's variables, on a free port (``--master-port``). GPU utilisation is
``nvidia-smi``'s, sampled once a second over the whole run (training and evaluation); without ``nvidia-smi`` it is not
measured and the report says so. ``--device cpu --preset …`` and ``--set`` run it in miniature (tests/test_pilot.py).
The run is started under ``data/lifetime.py``'s watcher: killed, the pilot takes its tasks with it.

Before the run it reads ``--read-samples`` samples of MIX's shards at random where they lie, their pages dropped from
the page cache first (``data/stage.py``'s ``read_rate``; no root needed), on as many threads as the run has
DataLoader workers: the pairs/s the storage delivers cold. The report sets it beside the pairs/s the GPUs need — the
step's pace without its waits for data (the pairs trained over the training time less the wait), else the recipe's
goal per GPU — and, when the storage is the slower, says to stage the shards to node-local disk first
(``python -m thesis_lib.data.stage "$MIX" --to /local/scratch``).

Its arguments and folders are checked before anything starts (argparse's one-line error, exit 2): ``--gpus`` divides
the global batch of 512, ``--steps`` and ``--cores-per-gpu`` are at least 1, DATA, CKPT, OUT and MIX are set, DATA
and CKPT are folders, the shard lists MIX names exist, and a CUDA device has as many GPUs as ``--gpus``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from thesis_lib.config import THESIS_GLOBAL_BATCH
from thesis_lib.data.lifetime import watched
from thesis_lib.data.shards import split_limit
from thesis_lib.data.stage import READS, ReadRate, read_rate
from thesis_lib.errors import ThesisError

from . import cost, recipe
from .kill_resume import free_port


def command(gpus: int, steps: int, device: str, preset: str, cores_per_gpu: int, sets: list[str],
            out: Path) -> list[str]:
    """The training command of one pilot task: the recipe's (``recipe.cli_args``, as its sbatch lines' srun starts
    it), shortened to ``steps`` and written to ``out``; DATA, CKPT and MIX from the environment."""
    env = os.environ
    missing = [v for v in ("DATA", "CKPT", "OUT", "MIX") if not env.get(v)]
    if missing:
        raise SystemExit(f"pilot: set {', '.join(missing)} first (docs/full_scale.md, the quick start's exports)")
    over = {"data.root": env["DATA"], "weights.checkpoint_dir": env["CKPT"], "data.train_sets": env["MIX"],
            "train.steps": steps}
    job = {"preset": preset, "variant": "baseline", "seed": 0, "out_dir": str(out), "overrides": over}
    return [sys.executable] + [a for a in recipe.cli_args(job, gpus, str, cores_per_gpu, device) if a != "--resume"
                               ] + [a for s in sets for a in ("--set", s)]


def fresh_folder(pilots: Path) -> Path:
    """A new folder under ``pilots`` ($OUT/pilot) for this pilot alone: a pilot measures afresh, never reusing an
    earlier pilot's result, and two pilots at once do not meet."""
    pilots.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=time.strftime("%Y%m%d-%H%M%S-"), dir=pilots))


def tasks(cmd: list[str], gpus: int, cores_per_gpu: int, port: int | None = None, env=None
          ) -> list[tuple[list[str], dict]]:
    """How the run starts, as (argv, environment) per process the pilot starts: one GPU, the command itself; inside a
    SLURM job, srun with one task per GPU as the recipe's sbatch lines start a run (its group meets on a port derived
    from the job, ``training.distributed.slurm_port``); elsewhere the same tasks started here with the variables srun
    gives each (as the rehearsal's srun-style launch, ``launches.srun_launch``), meeting on ``port`` (default: one
    that is free) — never torchrun's 29500, which another job on a shared node may hold."""
    env = dict(os.environ if env is None else env)
    if gpus == 1:
        return [(cmd, env)]
    if env.get("SLURM_JOB_ID") and shutil.which("srun", path=env.get("PATH")):
        return [(["srun", "--kill-on-bad-exit=1", f"--ntasks={gpus}", f"--cpus-per-task={cores_per_gpu}", *cmd], env)]
    port = port or free_port()
    return [(cmd, {**env, "SLURM_PROCID": str(rank), "SLURM_LOCALID": str(rank), "SLURM_STEP_NUM_TASKS": str(gpus),
                   "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}) for rank in range(gpus)]


def run_tasks(started: list[tuple[list[str], dict]]) -> int:
    """Start every task under the lifetime watcher and wait for all; a task that fails ends the others (as srun
    --kill-on-bad-exit=1 does). The first failing exit status, else 0."""
    procs = [subprocess.Popen(watched(argv), env=env) for argv, env in started]
    while any(p.poll() is None for p in procs):
        if any(p.returncode for p in procs):
            for p in procs:
                if p.poll() is None:
                    p.kill()
        time.sleep(0.5)
    return next((p.returncode for p in procs if p.returncode), 0)


def problems(gpus: int, device: str, env=os.environ) -> list[str]:
    """What keeps the pilot from starting, each a sentence (none: it can start): the launch's arguments and the
    folders and shard lists of the environment, checked here so that no process is started to fail on them."""
    out = []
    if THESIS_GLOBAL_BATCH % gpus:
        out.append(f"--gpus {gpus} does not divide the recipe's global batch of {THESIS_GLOBAL_BATCH}")
    missing = [v for v in ("DATA", "CKPT", "OUT", "MIX") if not env.get(v)]
    if missing:
        out.append(f"set {', '.join(missing)} first (docs/full_scale.md, the quick start's exports)")
    for var in ("DATA", "CKPT"):
        if env.get(var) and not Path(env[var]).is_dir():
            out.append(f"{var}={env[var]} is not a folder")
    for entry in (e.strip() for e in env.get("MIX", "").split(",")):
        listing = _shard_list(entry)
        if listing and not Path(listing).is_file():
            out.append(f"MIX names the shard list {listing}, which does not exist")
    if device.startswith("cuda"):
        import torch
        have = torch.cuda.device_count()
        if have < gpus:
            out.append(f"--device {device} --gpus {gpus} needs {gpus} GPU{'s' * (gpus > 1)}; this host has {have} "
                       "(--device cpu for a miniature pilot)")
    return out


def _shard_list(entry: str) -> str | None:
    """The shard list (``.txt``) a ``data.train_sets`` entry names, else None."""
    if not entry.startswith("wds:"):
        return None
    spec, _ = split_limit(entry[4:])
    return spec if spec.endswith(".txt") else None


class Utilisation(threading.Thread):
    """``nvidia-smi``'s GPU utilisation (%, all GPUs), sampled once a second until ``stop``."""

    def __init__(self):
        super().__init__(daemon=True)
        self.samples: list[float] = []
        self.halt = threading.Event()
        self.tool = shutil.which("nvidia-smi")

    def run(self):
        while self.tool and not self.halt.wait(1.0):
            out = subprocess.run([self.tool, "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True).stdout.split()
            self.samples += [float(v) for v in out if v.replace(".", "", 1).isdigit()]

    def stop(self) -> str:
        self.halt.set()
        self.join(timeout=5)
        if not self.tool:
            return "not measured (no nvidia-smi)"
        return f"{sum(self.samples) / len(self.samples):.0f} % (mean of {len(self.samples)} samples)" if \
            self.samples else "not measured (no sample)"


def result_file(out: Path) -> Path:
    """The result this pilot's run wrote in its own folder ``out``."""
    found = sorted(out.rglob("seed0.json"))
    if not found:
        raise SystemExit(f"pilot: the run wrote no result under {out}; its log above says why")
    return found[0]


def storage(mix: str, reads: int, threads: int) -> ReadRate | str:
    """The cold random-read rate of MIX's shards (``data/stage.py``), or why it was not measured."""
    if reads < 1:
        return "not measured (--read-samples 0)"
    try:
        return read_rate(mix, reads, threads)
    except (ThesisError, OSError) as err:
        return f"not measured ({err})"


def need(result: dict, gpus: int) -> tuple[float, str]:
    """The pairs/s the GPUs need and how it was found: the step's pace without its waits for data, else (a loop that
    only waited) the recipe's goal per GPU."""
    train = result["train"]
    stepping = train["time_s"] - train["data_wait_s"]
    if stepping > 0 and train["pairs_per_s"] > 0:
        return train["pairs_per_s"] * train["time_s"] / stepping, "the step's pace without its waits for data"
    return cost.H100_PAIRS_PER_S * gpus, f"the recipe's goal of {cost.H100_PAIRS_PER_S:,} per GPU"


def storage_lines(rate: ReadRate | str | None, result: dict, gpus: int) -> list[str]:
    if rate is None:
        return []
    if isinstance(rate, str):
        return [f"  storage: {rate}"]
    wanted, how = need(result, gpus)
    verdict = ("below what the GPUs need: stage the shards to node-local disk before the runs (python -m "
               "thesis_lib.data.stage \"$MIX\" --to /local/scratch; docs/full_scale.md)" if rate.pairs_per_s < wanted
               else "the storage keeps up: train from where the shards lie")
    return [f"  storage: {rate.message()}",
            f"  the GPUs need {wanted:,.0f} pairs/s ({how}); the storage reads {rate.pairs_per_s:,.0f} cold: {verdict}"]


def report(result: dict, gpus: int, utilisation: str, wall_s: float, rate: ReadRate | str | None = None) -> str:
    """What the pilot measured and what it projects for the recipe's runs on 1, 8 and 16 GPUs; ``rate``: the
    shards' cold random-read rate (``storage``), set beside the pairs/s the GPUs need."""
    train = result["train"]
    per_gpu = train["pairs_per_s"] / gpus
    waited = train["data_wait_s"] / train["time_s"]
    runs = len(recipe.planned_jobs())
    lines = [f"pilot: {train['steps']} steps on {gpus} process(es) ({train['device']}), {wall_s:.0f} s in all "
             f"(training {train['time_s']:.0f} s, then the evaluation)",
             f"  pairs/s end to end: {train['pairs_per_s']:,.0f} ({per_gpu:,.0f} per GPU); the loop waited for its "
             f"batches {100 * waited:.0f} % of the training time"
             + (" (the data path is the bottleneck: more cores per GPU, or data.decoder)" if waited > 0.1 else ""),
             f"  GPU utilisation: {utilisation}",
             f"  projected, the recipe's {runs} runs at {per_gpu:,.0f} pairs/s per GPU: "
             + ", ".join(f"{cost.days(runs, g, per_gpu):.1f} days on {g} GPU{'s' * (g > 1)}" for g in (1, 8, 16))]
    return "\n".join(lines + storage_lines(rate, result, gpus))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m thesis_lib.full_scale.pilot", description=__doc__.split("\n\n")[0])
    p.add_argument("--gpus", type=recipe.positive_int, default=2, help="processes (one per GPU); 2: the recipe's split")
    p.add_argument("--steps", type=recipe.positive_int, default=300)
    p.add_argument("--cores-per-gpu", type=recipe.positive_int, default=None, help=cost.CORES_HELP)
    p.add_argument("--device", default="cuda")
    p.add_argument("--preset", default="thesis")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="more config overrides (e.g. a shrunk model for a miniature pilot)")
    p.add_argument("--master-port", type=recipe.positive_int, default=None,
                   help="outside SLURM: the port the processes meet on (default: a free one)")
    p.add_argument("--read-samples", type=int, default=READS, metavar="N",
                   help=f"samples of MIX's shards read at random, cold, before the run (default {READS:,}; 0: none)")
    args = p.parse_args(argv)
    found = problems(args.gpus, args.device)
    if found:
        p.error("; ".join(found))
    args.cores_per_gpu = cost.resolve_cores(args.cores_per_gpu, args.gpus, "pilot")
    out = fresh_folder(Path(os.environ["OUT"]) / "pilot")
    cmd = command(args.gpus, args.steps, args.device, args.preset, args.cores_per_gpu, args.sets, out)
    threads = args.gpus * cost.workers(args.cores_per_gpu)
    rate = storage(os.environ["MIX"], args.read_samples, threads)
    print("pilot: storage: " + (rate if isinstance(rate, str) else rate.message()), file=sys.stderr, flush=True)
    started = tasks(cmd, args.gpus, args.cores_per_gpu, args.master_port)
    print(f"pilot: {len(started)} × " + " ".join(started[0][0]), file=sys.stderr, flush=True)
    gpu = Utilisation()
    gpu.start()
    start = time.perf_counter()
    status = run_tasks(started)                               # the run ends with the pilot, whatever ends it
    utilisation, wall = gpu.stop(), time.perf_counter() - start
    if status:
        print(f"pilot: the training run failed (exit {status})", file=sys.stderr)
        return status
    result = json.loads(result_file(out).read_text())
    print(report(result, args.gpus, utilisation, wall, rate))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
