"""Sections of a benchmark call, each under its own time budget and its own exception capture, with the report
rewritten after every section (``benchmarks/gpu.py`` uses this; a kill keeps every finished section).

A section's budget is enforced in the main thread by ``time_limit``: ``signal.setitimer`` (POSIX) delivers SIGALRM
when it runs out, and the handler raises ``SectionTimeout`` at the next Python bytecode, which also interrupts
``time.sleep``, lock and subprocess waits. Long C calls (one CUDA kernel, one C++ compile) finish first. Subprocesses
are started in their own session (``run_subprocess``) so that a timeout kills their whole process group.

A sticky CUDA error (``STICKY_CUDA``: an illegal address, a device-side assert) leaves the process's CUDA context
unusable, so every later section would fail with it: it is recorded under ``report["sticky"]`` and every later
section is skipped, the report written each time.
"""
from __future__ import annotations

import contextlib
import gc
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

FORCED_TIMEOUT_S = 1.0          # the budget of a section named in --force-timeout
ERROR_CHARS = 300               # the end of an exception's message kept in the report
# CUDA errors after which the context is corrupt and every later CUDA call of the process fails (the CUDA runtime's
# cudaErrorIllegalAddress, cudaErrorAssert, cudaErrorLaunchFailure, cudaErrorMisalignedAddress,
# cudaErrorIllegalInstruction, as torch words them)
STICKY_CUDA = ("an illegal memory access was encountered", "device-side assert triggered",
               "unspecified launch failure", "misaligned address", "an illegal instruction was encountered")
FORCED_STICKY = "CUDA error: an illegal memory access was encountered (forced by --force-sticky)"


def is_sticky(err: BaseException) -> bool:
    return any(text in str(err) for text in STICKY_CUDA)


class SectionTimeout(BaseException):
    """A section ran past its budget. A BaseException (like KeyboardInterrupt), so that no ``except Exception``
    inside torch (dynamo, inductor) catches it and carries on."""


@contextlib.contextmanager
def time_limit(seconds: float):
    """Raise ``SectionTimeout`` in the main thread once ``seconds`` have passed inside the block. Without
    ``signal.setitimer`` (Windows) or off the main thread the block runs unlimited."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum, frame):
        raise SectionTimeout(f"ran past its budget of {seconds:.0f} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_subprocess(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, capture_output=True, text=True, **kwargs)`` in a new session; on any exception while it
    runs (a ``SectionTimeout`` included) its whole process group (a notebook's kernel too) is killed first."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            **kwargs)
    try:
        stdout, stderr = proc.communicate()
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)


def error_text(err: BaseException) -> str:
    """``"<type>: <the last ERROR_CHARS characters of the message>"``."""
    return f"{type(err).__name__}: {str(err)[-ERROR_CHARS:]}"


def _hang():
    while True:
        time.sleep(0.05)


def _free_memory():
    gc.collect()
    try:
        import torch
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:
        pass


class Sections:
    """Runs named sections of one call and records each in ``report``: ``report["sections"][name]`` (status ok,
    error, timed out, skipped or interrupted; seconds; budget), an ``{"section", "error"}`` entry in
    ``report["errors"]`` (with ``"timed_out": true`` for a timeout) or a line in ``report["skipped"]``. After every
    section ``write(report)`` rewrites the report files. ``force_error`` / ``force_timeout``: names of sections made
    to raise at their start / to hang under a budget of ``FORCED_TIMEOUT_S`` (the dry run checks the capture)."""

    def __init__(self, report: dict, write, total_budget: float, force_error=(), force_timeout=(), start=None,
                 force_sticky=()):
        self.report, self.write, self.total = report, write, total_budget
        self.force_error, self.force_timeout = set(force_error), set(force_timeout)
        self.force_sticky = set(force_sticky)
        self.start = time.perf_counter() if start is None else start       # perf_counter() when the call began
        for key in ("sections", "errors", "skipped"):
            report.setdefault(key, {} if key == "sections" else [])

    def left(self) -> float:
        """Seconds of the call's total budget not yet spent."""
        return self.total - (time.perf_counter() - self.start)

    def skip(self, name: str, reason: str) -> None:
        self._forget(name)
        self.report["sections"][name] = {"status": "skipped", "seconds": 0.0, "budget_s": 0.0}
        self.report["skipped"].append(f"{name}: {reason}")
        self.write(self.report)

    def run(self, name: str, budget: float, body, minimum: float = 0.0):
        """``body()`` under ``min(budget, time left)`` seconds; its return value, or None when it failed, timed out
        or was skipped (less than ``minimum`` seconds left, or a sticky CUDA error earlier)."""
        if self.report.get("sticky"):
            self.skip(name, f"the CUDA context is broken by a sticky error ({self.report['sticky'][:120]})")
            return None
        if self.left() < max(minimum, 1.0):
            self.skip(name, f"time (the call's budget of {self.total:.0f} s is spent)")
            return None
        budget = FORCED_TIMEOUT_S if name in self.force_timeout else min(budget, self.left())
        self._forget(name)
        result, status, t = None, "interrupted", time.perf_counter()      # stays so on KeyboardInterrupt
        try:
            with time_limit(budget):
                if name in self.force_error:
                    raise RuntimeError(f"forced by --force-error {name!r}")
                if name in self.force_sticky:
                    raise RuntimeError(FORCED_STICKY)
                result = _hang() if name in self.force_timeout else body()
            status = "ok"
        except SectionTimeout as err:
            status = "timed out"
            self.report["errors"].append({"section": name, "error": error_text(err), "timed_out": True})
        except Exception as err:                      # torch.cuda.OutOfMemoryError and compile errors included
            status = "error"
            self.report["errors"].append({"section": name, "error": error_text(err)})
            if is_sticky(err):
                self.report["sticky"] = f"{name}: {error_text(err)}"
        finally:
            self.report["sections"][name] = {"status": status, "seconds": round(time.perf_counter() - t, 2),
                                             "budget_s": round(budget, 1)}
            if not self.report.get("sticky"):              # a broken context fails in empty_cache too
                _free_memory()
            self.write(self.report)
        return result

    def _forget(self, name: str) -> None:
        """Drop what an earlier call recorded about ``name`` (a report merged from an earlier call is updated)."""
        self.report["errors"] = [e for e in self.report["errors"] if e["section"] != name]
        self.report["skipped"] = [s for s in self.report["skipped"] if not s.startswith(f"{name}: ")]


def json_writer(out: Path, markdown):
    """``write(report)``: ``out/gpu.json`` and ``out/gpu.md`` (``markdown(report)``), each replaced atomically."""
    def write(report: dict) -> None:
        for name, text in (("gpu.json", json.dumps(report, indent=1)), ("gpu.md", markdown(report))):
            tmp = out / f".{name}.tmp"
            tmp.write_text(text)
            tmp.replace(out / name)
    return write
