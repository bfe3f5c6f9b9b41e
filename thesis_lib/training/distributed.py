"""Process-group helpers: the same code runs as one process, under ``torchrun`` on GPUs (NCCL), or as several CPU
processes (gloo). Features are gathered *with* gradients for the contrastive loss (open_clip's
``--local-loss --gather-with-grad``, the form its maintainers verified equal to the global loss)."""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass

import torch
import torch.distributed as dist

from ..errors import DeviceError, DistributedError, ThesisError


@dataclass(frozen=True)
class DistInfo:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

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


def init_distributed(device: torch.device) -> DistInfo:
    """Join the process group the launcher described in the environment (``launch_from_env``: torchrun, or srun
    without torchrun); else one process. On GPUs each process first makes its own GPU the current one
    (``gpu_index``), so that NCCL and every later ``.to("cuda")`` use it instead of GPU 0 (``rank_device``)."""
    launch = launch_from_env()
    if launch.world_size == 1:
        return DistInfo()
    if device.type == "cuda":
        torch.cuda.set_device(gpu_index(launch.local_rank))
    if not dist.is_initialized():
        backend = "nccl" if device.type == "cuda" else "gloo"
        if launch.init_method is None:
            dist.init_process_group(backend)
        else:
            dist.init_process_group(backend, init_method=launch.init_method, rank=launch.rank,
                                    world_size=launch.world_size)
    return DistInfo(dist.get_rank(), dist.get_world_size(), launch.local_rank)


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
    if info.world_size == 1:
        return x
    from torch.distributed import _functional_collectives as fc
    if hasattr(fc, "all_gather_single"):     # autograd-aware; its backward reduce-scatters the sum
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


def barrier(info: DistInfo) -> None:
    if info.world_size > 1:
        dist.barrier()
