"""A run of 2 ``torchrun`` processes, killed as a scheduler or a crash kills it and continued with ``--resume``, must
end exactly where the same run without the kill ends (the rehearsal's stage 3, full_scale/rehearsal.py).

The resume reads the mixture from a copy staged elsewhere (``data.stage``, as a job stages it to node-local disk
first): the same sets and ``@N``, so the same run (``training.results.mixture_entry``). The finished uninterrupted run
started again with that staged mixture must be reused, untouched; with another ``@N`` it is another run, refused
(``staged_reuse``).

The kill is SIGKILL to every process of the run (the launcher, both training processes, which torchrun starts in
sessions of their own, and their DataLoader workers), as a failed node or a scheduler's kill of the job's processes
does, once the run's training log (``metrics.jsonl``, a row per checkpointed step) passes a step: nothing gets to
clean up. The comparison is bit for bit: the result (metrics and every analysis, all
but the ``train`` section's timings and the ``created`` stamp), every row of the training curve, and every tensor of
the final checkpoint (model, optimiser, scheduler, RNG state).
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from thesis_lib.data.lifetime import descendants, watched
from thesis_lib.paths import ROOT, results_dir
from thesis_lib.training.results import RunPaths, identity_differences

PROCESSES = 2
NOT_COMPARED = ("created", "train")      # when it ran; how long it took, where it resumed, what it met since then
MIX = "data.train_sets"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class Torchrun:
    """One run at the thesis preset (``overrides`` on top), trained by ``torchrun`` on ``PROCESSES`` processes with
    half the global batch each: the run a one-process notebook with the same overrides would train."""
    variant: str
    seed: int
    device: str
    data: Path
    checkpoints: Path
    overrides: dict

    def command(self, out: Path, *extra: str) -> list[str]:
        sets = {**self.overrides, "train.batch_size": self.overrides["train.batch_size"] // PROCESSES}
        return [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(PROCESSES), "--master_port",
                str(free_port()), "-m", "thesis_lib.training.run", "--preset", "thesis", "--variant", self.variant,
                "--seed", str(self.seed), "--device", self.device, "--data-root", str(self.data), "--checkpoints",
                str(self.checkpoints), "--out", str(out), "--no-progress", *extra] + \
            [a for k, v in sets.items() for a in ("--set", f"{k}={v}")]

    def with_mix(self, mix: str) -> "Torchrun":
        """The same run reading the mixture ``mix`` (a staged copy: the same run; another @N: another run)."""
        return dataclasses.replace(self, overrides={**self.overrides, MIX: mix})

    def paths(self, out: Path) -> RunPaths:
        return RunPaths(results_dir(out), "thesis", self.variant, self.seed)

    def run(self, out: Path, log: Path, *extra: str) -> dict:
        """Train (or continue, with ``--resume`` in ``extra``) to the end; the result."""
        with open(log, "a") as f:
            done = subprocess.run(watched(self.command(out, *extra)), cwd=ROOT, stdout=f,
                                  stderr=subprocess.STDOUT, env=_env())
        if done.returncode:
            raise SystemExit(f"rehearsal: torchrun failed (exit {done.returncode}); log {log}\n{_tail(log)}")
        return json.loads(self.paths(out).result.read_text())


def _env() -> dict:
    return {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}


def _tail(log: Path, n: int = 3000) -> str:
    return log.read_text(errors="replace")[-n:]


def last_step(metrics: Path) -> int:
    """The step of the last complete row of a training log (0 if none)."""
    try:
        lines = metrics.read_text().splitlines()
    except FileNotFoundError:
        return 0
    for line in reversed(lines):
        try:
            return int(json.loads(line)["step"])
        except (ValueError, KeyError):
            continue                                    # a row being written
    return 0


def kill_tree(pid: int) -> None:
    """SIGKILL ``pid`` and every process it started: all are stopped first (SIGSTOP), so that none reacts to the
    others' end (torchrun would stop the workers itself), then killed."""
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        for p in [pid, *descendants(pid)]:
            try:
                os.kill(p, sig)
            except ProcessLookupError:                  # it had ended
                pass


def kill_after(job: Torchrun, out: Path, step: int, log: Path, timeout_s: float = 300.0) -> int:
    """Start the run and SIGKILL its process group once its log passes ``step``; the last step it logged. Raises
    SystemExit if the run ended (or failed) first."""
    metrics = job.paths(out).metrics
    with open(log, "w") as f:
        proc = subprocess.Popen(watched(job.command(out)), cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, env=_env())
    deadline = time.monotonic() + timeout_s
    try:
        while proc.poll() is None and last_step(metrics) < step and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        kill_tree(proc.pid)
        proc.wait()
    reached = last_step(metrics)
    if proc.returncode != -signal.SIGKILL or reached < step:
        raise SystemExit(f"rehearsal: the run to kill ended before the kill (exit {proc.returncode}, last step "
                         f"{reached}); log {log}\n{_tail(log)}")
    return reached


def killed_and_resumed(job: Torchrun, out: Path, step: int, logs: Path,
                       staged: Path | None = None) -> tuple[int, dict, Torchrun]:
    """The run killed after ``step`` (``kill_after``), then continued to its end with ``--resume``: the step it
    was killed after, the resumed run's result and the job that resumed it. With ``staged``, the mixture's shards are
    staged there between the kill and the resume (``stage_mix``) and the resume reads the copies."""
    reached = kill_after(job, out, step, logs / "torchrun-killed.log")
    resumer = stage_mix(job, staged, logs / "stage.log") if staged else job
    result = resumer.run(out, logs / "torchrun-resumed.log", "--resume")
    if not 0 < result["train"]["resumed_from"] < result["train"]["steps"]:
        raise SystemExit(f"rehearsal: the resumed run started at step {result['train']['resumed_from']}, not from a "
                         "checkpoint written before the kill")
    return reached, result, resumer


def stage_mix(job: Torchrun, to: Path, log: Path) -> Torchrun:
    """``job`` reading its mixture's shards staged under ``to`` by ``data.stage.stage`` (each copy checked), as a job
    stages them to node-local disk; what staging said goes to ``log``."""
    from thesis_lib.data.stage import stage
    said: list[str] = []
    mix = stage(job.overrides[MIX], to, say=said.append)
    log.write_text("\n".join(said + [f"staged mixture: {mix}"]) + "\n")
    return job.with_mix(mix)


def read_staged(result: dict, staged: Path) -> str:
    """Raise SystemExit unless every shard set the run read (``train.shards``) lies under ``staged``; else say so."""
    sets = list(result["train"].get("shards", {}))
    away = [s for s in sets if not s[4:].startswith(str(staged))]
    if not sets or away:
        raise SystemExit(f"rehearsal: the resumed run did not read the staged copy in {staged}: {away or 'no sets'}")
    return f"its {len(sets)} shard sets from the staged copy in {staged} (train.shards)"


def other_mix(mix: str) -> tuple[str, str]:
    """``mix`` with its first ``@N`` one less (another training mixture, so another run), and what changed."""
    found = re.search(r"@(\d+)", mix)
    if not found:
        raise ValueError(f"{mix!r} has no @N to change")
    n = int(found.group(1))
    return mix[:found.start()] + f"@{n - 1}" + mix[found.end():], f"@{n - 1} in place of its @{n}"


def _files(paths: RunPaths) -> dict:
    """A finished run's files as they are: modification time and bytes of its result, curve and final checkpoint."""
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in (paths.result, paths.metrics, paths.checkpoint)}


def staged_reuse(job: Torchrun, out: Path, logs: Path) -> list[str]:
    """The finished run in ``out`` started again by torchrun as ``job`` (its mixture staged elsewhere: the same run)
    must be reused: no training, its files untouched (``_files``). ``job`` with ``other_mix`` must be refused as
    another run (``results.existing_result``: a ResultConflictError naming data.train_sets), its files untouched."""
    paths, log = job.paths(out), logs / "torchrun-reused.log"
    before = _files(paths)
    log.write_text("")
    job.run(out, log)
    changed = [name for name, state in _files(paths).items() if state != before[name]]
    if changed:
        raise SystemExit(f"rehearsal: the finished run started again with the staged mixture was trained again "
                         f"({', '.join(changed)} rewritten); log {log}")
    with open(log, "a") as f:
        f.write(f"rehearsal: {paths.result} reused: its result, curve and checkpoint untouched (modification time and "
                "bytes); nothing trained\n")
    mix, change = other_mix(job.overrides[MIX])
    other, refused = job.with_mix(mix), logs / "torchrun-other-mixture.log"
    with open(refused, "w") as f:
        done = subprocess.run(watched(other.command(out)), cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, env=_env())
    said = re.search(r"error: .*holds a result of another config \((.*)\); pass", refused.read_text())
    if not done.returncode or not said or MIX not in said.group(1):
        raise SystemExit(f"rehearsal: a run with another mixture ({other.overrides[MIX]}) was not refused as another "
                         f"run (exit {done.returncode}); log {refused}\n{_tail(refused)}")
    if _files(paths) != before:
        raise SystemExit(f"rehearsal: the refused run with another mixture changed {paths.dir}; log {refused}")
    return [f"the finished run started again by torchrun with the staged mixture: reused, not trained (its result, "
            f"curve and checkpoint untouched: modification time and bytes; log {log.name})",
            f"the same run with {change} is another run: refused (exit {done.returncode}, "
            f"the result untouched): {said.group(1)[:160]}"]


def compare_runs(job: Torchrun, reference: Path, resumed: Path) -> str:
    """Raise SystemExit unless the resumed run equals the reference bit for bit (result, curve, final checkpoint; the
    config as the run's identity, ``results.identity_differences``: a mixture staged elsewhere is the same); else say
    what was compared."""
    import torch

    from thesis_lib.models.checkpoints import torch_load
    a, b = job.paths(reference), job.paths(resumed)
    ra, rb = (json.loads(p.result.read_text()) for p in (a, b))
    differ = sorted(k for k in set(ra) | set(rb) if k not in (*NOT_COMPARED, "config") and ra.get(k) != rb.get(k))
    if identity_differences(ra["config"], rb["config"], ra["train"]["world_size"], rb["train"]["world_size"]):
        differ.append("config")                 # as the run's identity: the mixture by its sets' names and @N
    curve_a, curve_b = a.metrics.read_text().splitlines(), b.metrics.read_text().splitlines()
    if curve_a != curve_b:
        differ.append(f"training curve ({len(curve_a)} vs {len(curve_b)} rows)")
    ca, cb = torch_load(a.checkpoint), torch_load(b.checkpoint)
    tensors = _tensors(ca)
    other = _tensors(cb)
    if ca["step"] != cb["step"] or tensors.keys() != other.keys() or \
            any(not torch.equal(v, other[k]) for k, v in tensors.items()):
        differ.append("final checkpoint")
    if differ:
        raise SystemExit(f"rehearsal: the killed and resumed run differs from the uninterrupted one in "
                         f"{', '.join(differ)} ({a.dir} vs {b.dir})")
    return (f"equal to the uninterrupted run bit for bit: result ({len(ra) - len(NOT_COMPARED)} sections, "
            f"{len(ra['metrics'])} metrics), {len(curve_a)} training-curve rows, {len(tensors)} tensors of the "
            f"final checkpoint (model, optimiser, RNG)")


def _tensors(state, prefix: str = "") -> dict:
    """Every tensor of a nested checkpoint (dicts, lists, tuples), by its path; numpy arrays as tensors."""
    import numpy as np
    import torch
    if torch.is_tensor(state):
        return {prefix: state}
    if isinstance(state, np.ndarray):
        return {prefix: torch.from_numpy(state)}
    items = state.items() if isinstance(state, dict) else enumerate(state) if isinstance(state, (list, tuple)) else ()
    out = {}
    for k, v in items:
        out.update(_tensors(v, f"{prefix}/{k}"))
    return out
