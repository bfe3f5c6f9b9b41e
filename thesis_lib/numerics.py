"""CPU runs whose numbers do not depend on the machine's core count, and the machine a stored number was computed on
(docs/reproducibility.md).

A reduction split over threads sums in another order, so every CPU run, and the preparation of its assets, computes on
one thread (``one_thread``; parallelism comes from running runs side by side): on one machine a run is then the same
bits every time. Across machines PyTorch promises no identical bits (other kernels, other libraries); the stored
numbers record where they were computed (``written_on``) and are compared within a declared tolerance
(``thesis_lib.study.claims.verify``).
"""
from __future__ import annotations

import contextlib
import os
import platform

import torch


@contextlib.contextmanager
def one_thread():
    """CPU work on one thread inside the block (its float results then do not depend on the machine's cores)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)


def _cpuinfo() -> dict:
    """The first processor's fields of /proc/cpuinfo (empty where there is none)."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
    except OSError:
        pass
    return fields


def cpu_vendor() -> str:
    """The CPU's vendor (``GenuineIntel``, ``AuthenticAMD``, …): /proc/cpuinfo's ``vendor_id``, else the platform's."""
    return _cpuinfo().get("vendor_id") or platform.processor() or "unknown"


def written_on() -> dict:
    """Where stored numbers were computed, recorded beside them (tests/golden, results/<preset>, the stand-ins)."""
    return {"cpu_vendor": cpu_vendor(), "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "torch": torch.__version__}


def machine(device="cpu") -> dict:
    """The machine a result was computed on, recorded in every result file: the CPU by name, family and model (two
    "AMD EPYC" of other generations differ in family), its kernels, and the GPU where the run used one."""
    info = _cpuinfo()
    record = {"cpu": info.get("model name") or platform.processor() or "unknown", "cpu_vendor": cpu_vendor(),
              "cpu_family": info.get("cpu family"), "cpu_model": info.get("model"),
              "cpu_capability": torch.backends.cpu.get_cpu_capability(), "cores": os.cpu_count()}
    if torch.device(device).type == "cuda":
        record["gpu"] = torch.cuda.get_device_name(torch.device(device))
    return record
