"""The frozen teacher's targets for every training image, computed once and cached on disk (exact when the teacher
sees a fixed view, ``data.teacher_view="fixed"``), by one process or by several in parts joined bit for bit.
A cache is keyed by what computes it, the kernels included (docs/reproducibility.md)."""
from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path

import torch

from ..cache import build_once, fingerprint, torch_save_atomic
from ..config import ExperimentConfig
from ..data.train_pairs import TrainPairs
from ..models.sources import part_source
from ..numerics import one_thread
from ..paths import data_dir
from .distributed import check_shared_folder, on_every_rank, on_main


@torch.no_grad()
def teacher_targets(cfg: ExperimentConfig, teacher, pairs: TrainPairs, device, info) -> torch.Tensor | None:
    """The teacher's CLS of every training image, computed once and cached on disk. Exact only when the teacher
    sees a fixed view (``data.teacher_view="fixed"``); with augmented views the teacher runs every step. Several
    processes build it in parts, each with its own teacher on its own device (``build_in_parts``)."""
    if cfg.data.teacher_view != "fixed" or not cfg.train.cache_teacher:
        return None
    n, batch = len(pairs.image_files), cfg.eval.batch_size
    key = fingerprint({"teacher": asdict(cfg.teacher), "weights": _teacher_identity(cfg), "views": asdict(cfg.data),
                       "size": cfg.model.image.img_size, "n": n, "first": str(pairs.image_files[0]),
                       "kernels": _kernels(torch.device(device))})
    path = data_dir() / "teacher-targets" / f"{cfg.preset}-{key}.pt"

    def compute(start: int, stop: int) -> torch.Tensor:
        with one_thread():                               # alike on any core count
            return torch.cat([teacher(x.to(device)).float().cpu()
                              for x in pairs.teacher_view_images(batch, start, stop)])

    if info.world_size == 1:
        build_once(path, lambda: torch_save_atomic(compute(0, n), path))   # parallel runs compute it once
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        check_shared_folder(path.parent, info, "teacher-target cache", "THESIS_DATA on a file system every node "
                            "mounts: every rank writes its part of the teacher-target cache there and reads it all")
        build_in_parts(path, compute, n, batch, info)
    return on_every_rank(info, lambda: torch.load(path, mmap=True),   # memory-mapped: 3.3 M × 768 floats are
                         "to read the teacher-target cache")          # 10 GB at the thesis mixture


def _kernels(device: torch.device) -> str:
    """The kernels that compute the cache on ``device`` (``cpu-AVX512``, ``cuda``, …): a cache written by others (a
    data folder shared between machines, a GPU run) differs in the last bits and must not stand in, or the same
    run on one machine would not be the same bits every time."""
    return f"cpu-{torch.backends.cpu.get_cpu_capability()}" if device.type == "cpu" else device.type


def build_in_parts(path: Path, compute, n: int, batch: int, info) -> None:
    """The cache of ``n`` rows at ``path``, built by every process: rank r of W computes ``compute(start, stop)``
    for its contiguous slice (``rank_slice``: whole batches, each the batch one process computes, so that the
    parts join to one process's tensor bit for bit) and writes it atomically to ``<path>.part-r-of-W``; rank 0
    joins the parts into ``path`` and removes them. A cache that exists (rank 0 looks) is reused by every rank."""
    if on_main(info, path.exists, "rank 0 to look for the teacher-target cache"):
        return
    slices = [rank_slice(n, batch, r, info.world_size) for r in range(info.world_size)]
    parts = {r: path.with_name(f"{path.name}.part-{r}-of-{info.world_size}") for r, (a, b) in enumerate(slices)
             if b > a}                                   # fewer batches than ranks: some have none

    def write_part():
        if info.rank in parts:
            (start, stop), part = slices[info.rank], parts[info.rank]
            print(f"rank {info.rank} of {info.world_size}: teacher targets of images [{start}, {stop}) of {n} -> "
                  f"{part.name}", file=sys.stderr, flush=True)
            torch_save_atomic(compute(start, stop), part)
    on_every_rank(info, write_part, "to build the teacher-target cache in parts")

    def join():
        build_once(path, lambda: torch_save_atomic(torch.cat([torch.load(p, mmap=True) for p in parts.values()]),
                                                   path))   # another job may have joined it: then kept
        for p in parts.values():
            p.unlink(missing_ok=True)
    on_main(info, join, "rank 0 to join the parts of the teacher-target cache")


def rank_slice(n: int, batch: int, rank: int, world_size: int) -> tuple[int, int]:
    """Rank ``rank``'s contiguous share [start, stop) of ``n`` rows taken in batches of ``batch``: the batches
    [rank·B/W, (rank+1)·B/W) (rounded down) of the B = ceil(n / batch): every slice starts at a batch boundary."""
    batches = -(-n // batch)
    return (min(rank * batches // world_size * batch, n), min((rank + 1) * batches // world_size * batch, n))


def _teacher_identity(cfg: ExperimentConfig) -> str:
    src = part_source(cfg, "teacher")
    p = Path(src) if src and not src.startswith(("hf:", "timm:")) else None
    return f"{src}:{p.stat().st_size}:{p.stat().st_mtime_ns}" if p and p.exists() else src
