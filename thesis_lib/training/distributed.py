"""Process-group helpers: the same code runs as one process, under ``torchrun`` or ``srun`` on GPUs (NCCL), or as
several CPU processes (gloo). Features are gathered *with* gradients for the contrastive loss (open_clip's
``--local-loss --gather-with-grad``, the form its maintainers verified equal to the global loss).

Some phases run on rank 0 alone while the other processes wait in a ``barrier`` (preparing the evaluation sets,
evaluating the trained model), and in one every process waits for the slowest (each building its part of the
teacher-target cache, ``data.teacher_view=fixed``). At the thesis scale they take far longer than a collective's
usual timeout (NCCL's watchdog: 10 min), so the process group is created with an explicit one, ``--dist-timeout``
/ ``THESIS_DIST_TIMEOUT`` (default ``DEFAULT_TIMEOUT``, 6 h), and those waits run in a gloo group beside NCCL's,
where a wait past the timeout is an error that says which phase it waited for (``DistributedTimeoutError``) instead
of a process killed by the watchdog."""
from __future__ import annotations

import datetime
import os
import re
import socket
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.distributed as dist

from ..errors import (ConfigError, DeviceError, DistributedError, DistributedTimeoutError, SharedFolderError,
                      ThesisError)


DEFAULT_TIMEOUT = 6 * 3600.0        # seconds: the longest a process waits for another (teacher cache, evaluation)
TIMEOUT_ENV = "THESIS_DIST_TIMEOUT"


@dataclass(frozen=True)
class DistInfo:
    """This process's rank among ``world_size``, its rank on its node; for several processes, the gloo group the
    waits run in (``barrier``; None: the default group) and the process-group timeout in seconds."""
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    group: object = field(default=None, compare=False, repr=False)
    timeout_s: float = field(default=DEFAULT_TIMEOUT, compare=False)

    @property
    def is_main(self) -> bool:
        return self.rank == 0


@dataclass(frozen=True)
class Launch:
    """How this process was started: its rank among ``world_size`` processes, its rank on its node, where the
    process group meets (``init_method``; None: torchrun's MASTER_ADDR / MASTER_PORT, ``env://``) and by whom."""
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    init_method: str | None = None
    launcher: str = "single"


def launch_from_env(environ=None) -> Launch:
    """This process's place in the run, read from the environment:

    * torchrun (or any launcher that sets them): RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT;
    * else srun without torchrun (``srun python -m thesis_lib.training.run ...``): SLURM_PROCID, SLURM_LOCALID and
      the step's task count SLURM_STEP_NUM_TASKS; the group meets at MASTER_ADDR if set, else the first host of
      SLURM_STEP_NODELIST / SLURM_JOB_NODELIST / SLURM_NODELIST (``first_host``), on MASTER_PORT if set, else a port
      derived from SLURM_JOB_ID and SLURM_STEP_ID (``slurm_port``);
    * else one process. A batch script or ``salloc`` shell that runs python itself, not through srun, is one process
      whatever SLURM_NTASKS says (Slurm sets SLURM_STEP_NUM_TASKS in the tasks srun starts, not there); it says so
      when SLURM_NTASKS is above 1."""
    env = os.environ if environ is None else environ
    if "RANK" in env:
        world = _int(env, "WORLD_SIZE", 1)
        if world == 1:
            return Launch()
        return Launch(_int(env, "RANK"), world, _int(env, "LOCAL_RANK", 0), None, "torchrun")
    if "SLURM_PROCID" not in env:
        return Launch()
    if "SLURM_STEP_NUM_TASKS" not in env:
        if _int(env, "SLURM_NTASKS", 1) > 1:
            print(f"SLURM_NTASKS={env['SLURM_NTASKS']} but this process was not started by srun: it runs as one "
                  "process; start it with srun (or torchrun) to run one process per task", file=sys.stderr)
        return Launch()
    world = _int(env, "SLURM_STEP_NUM_TASKS")
    if world == 1:
        return Launch()
    nodelist = next((env[k] for k in NODELISTS if env.get(k)), None)
    address = env.get("MASTER_ADDR") or (first_host(nodelist) if nodelist else None)
    port = env.get("MASTER_PORT") or (slurm_port(env["SLURM_JOB_ID"], env.get("SLURM_STEP_ID", "0"))
                                      if env.get("SLURM_JOB_ID") else None)
    missing = [name for name, value in ((f"MASTER_ADDR (or {' / '.join(NODELISTS)})", address),
                                        ("MASTER_PORT (or SLURM_JOB_ID)", port),
                                        ("SLURM_LOCALID", env.get("SLURM_LOCALID"))) if not value]
    if missing:
        raise DistributedError(f"srun started {world} tasks (SLURM_STEP_NUM_TASKS), but the environment lacks "
                               f"{', '.join(missing)}: set them, or launch with torchrun")
    return Launch(_int(env, "SLURM_PROCID"), world, _int(env, "SLURM_LOCALID"), f"tcp://{address}:{port}", "srun")


NODELISTS = ("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST")


def first_host(nodelist: str) -> str:
    """The first host of a Slurm host list in its compact form, as ``scontrol show hostnames`` would list it first
    (without calling scontrol): ``gpu[01-04],gpu07`` -> ``gpu01``, ``rack[2-3]-n[08,11]`` -> ``rack2-n08``."""
    entry, depth = "", 0
    for ch in nodelist.strip():
        depth += (ch == "[") - (ch == "]")
        if depth < 0 or depth > 1:
            break
        if ch == "," and depth == 0:
            break
        entry += ch
    if depth != 0 or not entry:
        raise DistributedError(f"cannot read the Slurm host list {nodelist!r} (expected e.g. gpu[01-04],gpu07); set "
                               "MASTER_ADDR to the host of task 0")
    return re.sub(r"\[([^\]]*)\]", lambda m: m.group(1).split(",")[0].split("-")[0], entry)


def slurm_port(job_id: str, step_id: str = "0") -> int:
    """The port a srun step's process group meets on: 10000 + (16 × SLURM_JOB_ID + SLURM_STEP_ID) mod 20000, so that
    steps of one job, and jobs sharing a node, seldom meet on the same port (MASTER_PORT overrides it)."""
    step = int(step_id) if str(step_id).isdigit() else 0
    return 10000 + (16 * _int({"SLURM_JOB_ID": job_id}, "SLURM_JOB_ID") + step) % 20000


def _int(env, name: str, default: int | None = None) -> int:
    value = env.get(name)
    if value is None and default is not None:
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        raise DistributedError(f"environment variable {name}={value!r} is not an integer") from None


def dist_timeout(value: str | float | None = None) -> float:
    """The process-group timeout in seconds: ``value`` if given, else THESIS_DIST_TIMEOUT, else 6 h. A number of
    seconds, or with a unit: ``90s``, ``45m``, ``6h``."""
    raw = os.environ.get(TIMEOUT_ENV) if value is None else value
    if raw is None or raw == "":
        return DEFAULT_TIMEOUT
    text = str(raw).strip().lower()
    unit = {"s": 1, "m": 60, "h": 3600}.get(text[-1:], None)
    try:
        seconds = float(text[:-1] if unit else text) * (unit or 1)
    except ValueError:
        seconds = -1
    if not seconds > 0:
        raise ConfigError(f"process-group timeout {raw!r} (--dist-timeout / {TIMEOUT_ENV}) is not a positive time; "
                          "give seconds or e.g. 45m, 6h")
    return seconds


def init_distributed(device: torch.device, timeout: str | float | None = None) -> DistInfo:
    """Join the process group the launcher described in the environment (``launch_from_env``: torchrun, or srun
    without torchrun); else one process. On GPUs each process first makes its own GPU the current one
    (``gpu_index``), so that NCCL and every later ``.to("cuda")`` use it instead of GPU 0 (``rank_device``).
    ``timeout`` (``dist_timeout``) bounds every collective and wait; with NCCL the waits run in a gloo group."""
    launch = launch_from_env()
    if launch.world_size == 1:
        return DistInfo()
    seconds = dist_timeout(timeout)
    limit = datetime.timedelta(seconds=seconds)
    if device.type == "cuda":
        torch.cuda.set_device(gpu_index(launch.local_rank))
    if not dist.is_initialized():
        backend = "nccl" if device.type == "cuda" else "gloo"
        if launch.init_method is None:
            dist.init_process_group(backend, timeout=limit)
        else:
            dist.init_process_group(backend, init_method=launch.init_method, rank=launch.rank,
                                    world_size=launch.world_size, timeout=limit)
    group = None
    if dist.get_backend() != "gloo":
        global _WAIT_GROUP
        if _WAIT_GROUP is None:
            _WAIT_GROUP = (dist.new_group(backend="gloo", timeout=limit), seconds)
        group, seconds = _WAIT_GROUP
    return DistInfo(dist.get_rank(), dist.get_world_size(), launch.local_rank, group, seconds)


_WAIT_GROUP = None          # (gloo group, its timeout) beside an NCCL group, made once per process


def gpu_index(local_rank: int) -> int:
    """The GPU of the process with this node rank: GPU ``local_rank``, or GPU 0 where each process sees one GPU
    only (``srun --gpus-per-task=1`` or ``--gpu-bind`` give each task its own CUDA_VISIBLE_DEVICES)."""
    count = torch.cuda.device_count()
    if count == 1:
        return 0
    if 0 < count <= local_rank:
        raise DeviceError(f"process {local_rank} of its node needs GPU {local_rank}, but it sees {count} GPUs: start "
                          "at most one process per GPU")
    return local_rank


def rank_device(device: torch.device, info: DistInfo) -> torch.device:
    """This process's device: its own GPU (``gpu_index``) for a CUDA run, ``device`` otherwise."""
    return torch.device("cuda", gpu_index(info.local_rank)) if device.type == "cuda" else device


def gather_with_grad(x: torch.Tensor, info: DistInfo) -> torch.Tensor:
    """Concatenate ``x`` of every rank along dim 0; gradients flow back to every rank's own slice."""
    return x if info.world_size == 1 else all_gather_with_grad(x)


def all_gather_with_grad(x: torch.Tensor) -> torch.Tensor:
    """The collective of ``gather_with_grad`` over the default group, whatever its size (tests/test_cuda.py runs it
    in a one-process NCCL group): ``all_gather_single`` where torch has it (2.14 has; its backward
    reduce-scatters the sum), else ``torch.distributed.nn.functional.all_gather`` (2.11 has only that)."""
    from torch.distributed import _functional_collectives as fc
    if hasattr(fc, "all_gather_single"):
        return fc.all_gather_single(x.contiguous(), 0, dist.group.WORLD)
    import torch.distributed.nn.functional as dist_fn  # older torch (deprecated in newer ones)
    return torch.cat(dist_fn.all_gather(x), dim=0)


def check_in_sync(module: torch.nn.Module, info: DistInfo) -> None:
    """Raise if any parameter differs between ranks (a part trained outside DDP's gradient averaging would).
    Compares each parameter's float64 sum and sum of squares; identical tensors give identical sums."""
    if info.world_size == 1:
        return
    named = list(module.named_parameters())
    stats = torch.stack([torch.stack([p.detach().double().sum(), p.detach().double().square().sum()])
                         for _, p in named])
    every = [torch.empty_like(stats) for _ in range(info.world_size)]
    dist.all_gather(every, stats)
    differ = [name for k, (name, _) in enumerate(named) if any(not torch.equal(s[k], every[0][k]) for s in every)]
    if differ:
        raise ThesisError(f"parameters differ between ranks after training: {', '.join(differ[:5])}"
                          f"{' …' if len(differ) > 5 else ''}; their gradients were not averaged")


def barrier(info: DistInfo, waiting_for: str = "the other processes") -> None:
    """Wait until every process is here. A wait longer than the process-group timeout raises
    ``DistributedTimeoutError`` naming what was waited for; a process that left raises ``DistributedError``."""
    if info.world_size > 1:
        collective(info, waiting_for, lambda: dist.barrier(group=info.group))


def collective(info: DistInfo, waiting_for: str, call):
    start = time.monotonic()
    try:
        return call()
    except RuntimeError as err:        # gloo: "Timed out waiting ...", or "Connection closed by peer"
        waited = time.monotonic() - start
        if waited >= 0.9 * info.timeout_s:
            raise DistributedTimeoutError(
                f"rank {info.rank} waited {_duration(waited)} for {waiting_for}, longer than the process-group "
                f"timeout ({_duration(info.timeout_s)}); raise it with --dist-timeout or {TIMEOUT_ENV} "
                f"(default {_duration(DEFAULT_TIMEOUT)})") from err
        raise DistributedError(f"rank {info.rank}: another process left while this one waited for {waiting_for} "
                               f"(see that process's error): {str(err).splitlines()[0][:200]}") from err


def on_main(info: DistInfo, decide, waiting_for: str):
    """``decide()`` on rank 0 alone; its value on every rank, or the ThesisError it raised raised on every rank.
    For what every process must agree on although only rank 0 may see it right (is there a finished result, a
    checkpoint to resume from?): a process that decided otherwise would start at another step and wait forever."""
    if info.world_size == 1:
        return decide()
    box, failure = [None], None
    if info.is_main:
        try:
            box[0] = ("value", decide())
        except ThesisError as err:
            box[0] = ("error", err) if _picklable(err) else ("bug", f"{type(err).__name__}: {err}")
            failure = None if _picklable(err) else err
        except BaseException as err:                       # a bug: the others stop too, rank 0 keeps the traceback
            failure, box[0] = err, ("bug", f"{type(err).__name__}: {err}")
    collective(info, waiting_for, lambda: dist.broadcast_object_list(box, src=0, group=info.group))
    kind, value = box[0]
    if failure is not None:
        raise failure
    if kind == "error":
        raise value
    if kind == "bug":
        raise DistributedError(f"rank 0 failed while the others waited for {waiting_for}: {value}")
    return value


def on_every_rank(info: DistInfo, work, doing: str):
    """``work()`` on every rank; if it raises on any, every rank raises (the one that failed its own error, the
    others a DistributedError naming it), so that no process waits in a collective for one that has left."""
    if info.world_size == 1:
        return work()
    value, failure, report = None, None, None
    try:
        value = work()
    except BaseException as err:
        failure, report = err, f"{type(err).__name__}: {err}"
    every = [None] * info.world_size
    collective(info, f"the other processes {doing}", lambda: dist.all_gather_object(every, report, group=info.group))
    if failure is not None:
        raise failure
    failed = [(r, m) for r, m in enumerate(every) if m is not None]
    if failed:
        rank, message = failed[0]
        raise DistributedError(f"rank {rank} failed {doing}: {message}")
    return value


def sum_over_ranks(info: DistInfo, value: int, counting: str) -> int:
    """The sum of ``value`` over every process (each must call it), e.g. what each one's own data loader met."""
    if info.world_size == 1:
        return value
    every = [None] * info.world_size
    collective(info, f"the other processes to count {counting}",
                lambda: dist.all_gather_object(every, value, group=info.group))
    return sum(every)


def _picklable(obj) -> bool:
    import pickle
    try:
        pickle.dumps(obj)
        return True
    except Exception:
        return False


SHARED_WAIT_S = 5.0     # how long a rank looks for rank 0's file before it calls the folder not shared


OUTPUT_FOLDER_NEEDS = ("--out (or THESIS_RESULTS) on a file system every node mounts: rank 0 writes the checkpoints "
                       "and the result there, every rank reads a checkpoint to resume")


def check_shared_folder(folder: Path, info: DistInfo, what: str = "output folder",
                        needs: str = OUTPUT_FOLDER_NEEDS) -> None:
    """Require that every process sees ``folder`` as rank 0 does: rank 0 writes a file of a fresh name there, every
    rank looks for it (up to ``SHARED_WAIT_S``); if one does not see it, every rank raises ``SharedFolderError``
    naming the ranks and hosts and what the run ``needs``."""
    if info.world_size == 1:
        return
    folder = Path(folder)

    def write_token():
        name, content = f".shared-check-{uuid.uuid4().hex}", f"{socket.gethostname()} {time.time()}"
        try:
            (folder / name).write_text(content)
        except OSError as err:
            raise SharedFolderError(f"rank 0 cannot write to the {what} {folder}: {err.strerror or err}") from None
        return name, content

    name, content = on_main(info, write_token, f"rank 0 to write to the {what}")
    token, seen, deadline = folder / name, False, time.monotonic() + SHARED_WAIT_S
    while not seen:
        try:
            seen = token.read_text() == content
        except OSError:
            pass
        if seen or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    every = [None] * info.world_size
    collective(info, f"the other processes to look at the {what}",
                lambda: dist.all_gather_object(every, (seen, socket.gethostname()), group=info.group))
    if info.is_main:
        token.unlink(missing_ok=True)
    blind = [f"{r} (on {host})" for r, (ok, host) in enumerate(every) if not ok]
    if blind:
        raise SharedFolderError(
            f"the {what} {folder} is not shared by all processes: rank{'s' if len(blind) > 1 else ''} "
            f"{', '.join(blind)} do{'' if len(blind) > 1 else 'es'} not see the file rank 0 (on {every[0][1]}) "
            f"wrote there within {SHARED_WAIT_S:g} s. A run of several processes needs {needs}")


def _duration(seconds: float) -> str:
    return f"{seconds / 3600:g} h" if seconds >= 3600 else f"{seconds / 60:g} min" if seconds >= 60 else \
        f"{seconds:.3g} s"
