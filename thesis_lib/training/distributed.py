"""Process-group helpers: the same code runs as one process, under ``torchrun`` on GPUs (NCCL), or as several CPU
processes (gloo). Features are gathered *with* gradients for the contrastive loss (open_clip's
``--local-loss --gather-with-grad``, the form its maintainers verified equal to the global loss)."""
from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from ..errors import ThesisError


@dataclass(frozen=True)
class DistInfo:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def init_distributed(device: torch.device) -> DistInfo:
    """Join the process group torchrun described in the environment (RANK, WORLD_SIZE, LOCAL_RANK); else single.
    On GPUs each process first makes its own GPU (LOCAL_RANK) the current one, so that NCCL and every later
    ``.to("cuda")`` use it instead of GPU 0 (``rank_device``)."""
    if "RANK" not in os.environ or int(os.environ.get("WORLD_SIZE", 1)) == 1:
        return DistInfo()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if device.type == "cuda":
        torch.cuda.set_device(local_rank)
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return DistInfo(dist.get_rank(), dist.get_world_size(), local_rank)


def rank_device(device: torch.device, info: DistInfo) -> torch.device:
    """This process's device: ``cuda:LOCAL_RANK`` for a CUDA run, ``device`` otherwise."""
    return torch.device("cuda", info.local_rank) if device.type == "cuda" else device


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
