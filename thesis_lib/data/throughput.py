"""Does the training data path keep up with the training step?

A run that reads its images from files (``data.in_memory=False``: the thesis preset) decodes every image and draws
both views of it in DataLoader workers. At the thesis scale that costs 9-20 ms per image and CPU core
(``benchmarks/data_pipeline.py``), so 8 workers deliver a few hundred pairs/s where a GPU could step thousands. Two
numbers say whether that is the case, both measured on the run itself:

* at the start, ``measure_data_path`` decodes a few of the run's own training samples on the main process exactly as
  a worker does (the run's decoder and views, the run's images) and multiplies the rate by the workers that can run
  at once: the pairs/s the data path can deliver (printed);
* during training, ``WaitClock`` adds up the time the loop waits for its next batch after the first one (which
  waits for the workers to start); at the first log point ``MIN_STEPS`` steps later, ``wait_warning`` warns when
  waiting took more than ``WAIT_WARN`` of the time, with the data path's rate beside the rate the loop reached and
  the levers that raise it. Shorter runs are not judged.
"""
from __future__ import annotations

import math
import os
import time
import warnings
from dataclasses import dataclass

import torch

WAIT_WARN = 0.25          # share of the training time spent waiting for batches above which the run warns
SAMPLES = 12              # training samples decoded at the start to measure the rate (after 2 of warm-up)
MIN_STEPS = 20            # steps after the first batch before the loop's waiting is judged


class DataPathWarning(UserWarning):
    """The data path delivers fewer pairs per second than the training step could consume."""


@dataclass(frozen=True)
class DataPathRate:
    decoder: str
    per_core: float       # pairs/s of one process: decode + the student's and the teacher's view
    workers: int          # data.num_workers (0: the training process decodes)
    parallel: int         # processes decoding at once: the workers, at most the CPU cores this process may use

    @property
    def pairs_per_s(self) -> float:
        return self.per_core * self.parallel

    def message(self) -> str:
        who = f"{self.workers} workers" if self.workers else "the training process (data.num_workers=0)"
        capped = f", {self.parallel} CPU cores" if self.parallel < max(self.workers, 1) else ""
        return (f"data path: {who}{capped} × {self.per_core:.0f} pairs/s each ({self.decoder} decoder + both views, "
                f"measured on {SAMPLES} training samples) ≈ {self.pairs_per_s:,.0f} pairs/s")


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:                                   # macOS, Windows
        return os.cpu_count() or 1


def measure_data_path(stream, batch_size: int, decoder: str, workers: int) -> DataPathRate:
    """Times ``stream[k]`` (one training sample, decoded and viewed as a worker would) on this process. The
    samples' own seeding must not leak into the run: torch's global RNG is restored afterwards."""
    n = min(SAMPLES + 2, len(stream))
    with torch.random.fork_rng(devices=[]):
        for k in range(min(2, n - 1)):
            stream[k]
        start = time.perf_counter()
        for k in range(2, n):
            stream[k]
        seconds = time.perf_counter() - start
    per_core = max(n - 2, 1) / max(seconds, 1e-9)
    return DataPathRate(decoder, per_core, workers, min(max(workers, 1), usable_cores()))


def steps_to_measure(batch_size: int) -> int:
    """Steps of the sample stream that hold ``SAMPLES`` + 2 samples."""
    return math.ceil((SAMPLES + 2) / batch_size)


class WaitClock:
    """Wraps the batch iterator; ``waited`` is the seconds spent in ``next`` (the loop waiting for data) after the
    first batch, which arrived at ``first_at`` (``time.perf_counter``; None before)."""

    def __init__(self, batches):
        self.batches, self.waited, self.first_at = iter(batches), 0.0, None

    def __iter__(self):
        return self

    def __next__(self):
        start = time.perf_counter()
        try:
            return next(self.batches)
        finally:
            now = time.perf_counter()
            if self.first_at is None:
                self.first_at = now
            else:
                self.waited += now - start

    def since_first(self) -> float:
        return time.perf_counter() - self.first_at if self.first_at is not None else 0.0


def wait_warning(waited: float, elapsed: float, pairs_per_s: float, rate: DataPathRate | None) -> str | None:
    """The warning for a loop that waited ``waited`` of ``elapsed`` seconds for its batches, or None."""
    if elapsed <= 0 or waited / elapsed <= WAIT_WARN:
        return None
    expected = f"; {rate.message()}" if rate else ""
    return (f"the data path limits training: {100 * waited / elapsed:.0f} % of the time went into waiting for "
            f"batches ({pairs_per_s:,.0f} pairs/s reached{expected}). Raise data.num_workers (up to the CPU cores), "
            "use --set data.decoder=pil_draft (2.2 × faster, not bit-identical views), or "
            "--set data.teacher_view=fixed (the teacher's targets computed once and cached: one view per sample, "
            "not two)")


def warn_if_waiting(waited: float, elapsed: float, pairs_per_s: float, rate: DataPathRate | None) -> bool:
    message = wait_warning(waited, elapsed, pairs_per_s, rate)
    if message:
        warnings.warn(message, DataPathWarning, stacklevel=3)
    return message is not None
