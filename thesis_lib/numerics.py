"""CPU numerics that give the same bits on every x86-64 machine: the instruction-set pin, one thread per run, and the
few elementary functions whose torch versions would not (docs/reproducibility.md).

Three things make a CPU float result depend on the machine, each measured in docs/reproducibility.md:

* **the instruction set**: ATen, oneDNN and MKL pick AVX-512 kernels where the CPU has them, AVX2 ones otherwise,
  and the two round differently. ``PIN`` (declared in ``assets/cpu_pin.env``, which the Makefile and the tests
  export before torch is imported) caps all three at AVX2; MKL's ``AVX2,STRICT`` branch also makes most of its GEMMs
  equal on Intel and AMD CPUs (not all: a few last bits still differ, docs/reproducibility.md). ``pin_problems`` says what is not in effect; runs at a preset whose results are committed warn
  once (``warn_if_unpinned``).
* **the thread count**: reductions split across threads sum in another order. ``one_thread`` runs a block on one
  thread; every CPU run and the preparation of its assets use it (parallelism comes from running runs side by side).
* **the CPU's vendor**: on CPU, ``torch.exp``, ``log``, ``sqrt``, ``tanh``, ``erfinv`` and a few more call MKL's
  vector math library (VML), whose code paths differ between Intel and AMD whatever the pin. ``exp``, ``log``,
  ``sqrt``, ``tanh`` below compute the same functions from ATen's own kernels (``exp2``, ``log1p``, ``rsqrt``,
  ``sigmoid``) in float64 on CPU, and plain torch elsewhere; ``portable_init`` gives ``trunc_normal_`` (torch's and
  timm's, which call ``Tensor.erfinv_``) an erfinv built the same way. ``MKL_VML_OPS`` lists the torch operators
  that must not run on the compared path (tests/test_numerics.py checks every variant's training and evaluation).
  MKL's GEMMs are equal on both vendors under the pin except for thin ones (fewer than ``MIN_GEMM_ROWS`` rows or
  ``MIN_GEMM_COLUMNS`` columns, measured): ``SmallLinear`` computes a layer with few outputs element-wise, and
  captions are padded to at least ``MIN_GEMM_COLUMNS`` tokens (``data.tokenizer.trim``), so attention is never thin.
"""
from __future__ import annotations

import contextlib
import math
import os
import platform
import warnings

import torch

from .paths import ASSETS

PIN_FILE = ASSETS / "cpu_pin.env"
COMMITTED_PRESETS = ("demo", "smoke")      # presets whose numbers are stored (results/, tests/golden/)
# ATen operators whose CPU float results come from MKL's VML (measured with torch 2.14: they change with MKL_CBWR)
MKL_VML_OPS = ("exp", "log", "log2", "log10", "sqrt", "tanh", "tan", "erf", "erfc", "erfinv", "atan", "asin", "acos")
# the thinnest (rows × K) @ (K × columns) float32 product whose MKL result is the same on Intel and AMD under the pin
MIN_GEMM_ROWS, MIN_GEMM_COLUMNS = 4, 12


def _read_pin() -> dict[str, str]:
    lines = (line.strip() for line in PIN_FILE.read_text().splitlines())
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


PIN = _read_pin()


def pin_problems() -> list[str]:
    """What keeps the pin from being in effect in this process (empty: it is)."""
    problems = []
    capability = torch.backends.cpu.get_cpu_capability()
    if capability != PIN["ATEN_CPU_CAPABILITY"].upper():
        problems.append(f"ATen runs {capability} kernels")
    problems += [f"{k}={os.environ.get(k, '(unset)')}" for k, v in PIN.items()
                 if k != "ATEN_CPU_CAPABILITY" and os.environ.get(k) != v]
    return problems


def pin_message() -> str | None:
    """One line saying the pin is not in effect and how to set it, or None when it is."""
    problems = pin_problems()
    if not problems:
        return None
    setting = " ".join(f"{k}={v}" for k, v in PIN.items())
    return (f"the CPU instruction-set pin is not in effect ({'; '.join(problems)}): run through make (make test, "
            f"make verify, …), or export {setting} before Python starts (docs/reproducibility.md)")


_warned = False


def warn_if_unpinned(preset: str, device: torch.device) -> None:
    """Warn once per process when a CPU run at a preset whose results are committed runs without the pin."""
    global _warned
    if _warned or device.type != "cpu" or preset not in COMMITTED_PRESETS:
        return
    message = pin_message()
    if message:
        _warned = True
        warnings.warn(f"{message}; its numbers may differ in the last bits from the committed ones", stacklevel=3)


def cpu_vendor() -> str:
    """The CPU's vendor (``GenuineIntel``, ``AuthenticAMD``, …): /proc/cpuinfo's ``vendor_id``, else the platform's."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def written_on() -> dict:
    """What stored numbers depend on besides the code: recorded beside them (tests/golden, results/<preset>)."""
    return {"cpu_vendor": cpu_vendor(), "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "torch": torch.__version__, "pin": not pin_problems()}


def kernels(device: torch.device) -> str:
    """Which kernels compute on ``device``, for the key of a cached result (teacher targets): pinned and unpinned
    CPU results differ in the last bits, so one must never stand in for the other."""
    if device.type != "cpu":
        return device.type
    return f"cpu-{torch.backends.cpu.get_cpu_capability()}-{'pinned' if not pin_problems() else 'unpinned'}"


def vendor_message(record: dict, what: str) -> str | None:
    """One line when this CPU's vendor is not the one ``what`` was written on (None when it is)."""
    if record.get("cpu_vendor") == cpu_vendor():
        return None
    return (f"{what} were written on a {record.get('cpu_vendor')} CPU and this is a {cpu_vendor()} CPU: even under the "
            f"pin their MKL builds round a few products differently in the last bit (docs/reproducibility.md)")


@contextlib.contextmanager
def one_thread():
    """CPU work on one thread inside the block (its float results then do not depend on the machine's cores)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)


# --- elementary functions without MKL's VML (float64 on CPU, so the float32 result is rounded once) ----------------

LOG2_E = 1 / math.log(2)


def _portable(x: torch.Tensor) -> bool:
    return x.device.type == "cpu"


def exp(x: torch.Tensor) -> torch.Tensor:
    return torch.exp2(x.double() * LOG2_E).to(x.dtype) if _portable(x) else torch.exp(x)


def log(x: torch.Tensor) -> torch.Tensor:
    return torch.log1p(x.double() - 1).to(x.dtype) if _portable(x) else torch.log(x)


def sqrt(x: torch.Tensor) -> torch.Tensor:
    if not _portable(x):
        return torch.sqrt(x)
    d = x.double()
    return torch.where(d > 0, d * torch.rsqrt(d), torch.where(d == 0, d, math.nan)).to(x.dtype)


def tanh(x: torch.Tensor) -> torch.Tensor:
    return (2 * torch.sigmoid(2 * x.double()) - 1).to(x.dtype) if _portable(x) else torch.tanh(x)


class SmallLinear(torch.nn.Linear):
    """``nn.Linear`` (same parameters, same initialisation) for a layer with fewer than ``MIN_GEMM_COLUMNS``
    outputs, computed as a broadcast product and a sum, so that neither it nor its gradients is a thin GEMM."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = (x.unsqueeze(-2) * self.weight).sum(-1)
        return y if self.bias is None else y + self.bias


class Tanh(torch.nn.Module):
    """``nn.Tanh`` through ``tanh`` above."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return tanh(x)


_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                   -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                0.00943887047, 1.00167406, 2.83297682)


def _horner(coefficients, w: torch.Tensor) -> torch.Tensor:
    p = torch.full_like(w, coefficients[0])
    for c in coefficients[1:]:
        p = p * w + c
    return p


def erfinv(x: torch.Tensor) -> torch.Tensor:
    """The inverse error function, Giles (2010), "Approximating the erfinv function" (GPU Computing Gems), single
    precision, evaluated in float64 on CPU (relative error about 1e-7: fine for drawing initial weights)."""
    if not _portable(x):
        return torch.erfinv(x)
    d = x.double()
    w = -torch.log1p(-d * d)
    central = _horner(_ERFINV_CENTRAL, w - 2.5)
    tail = _horner(_ERFINV_TAIL, w * torch.rsqrt(w) - 3)
    out = torch.where(w < 5, central, tail) * d
    return torch.where(d.abs() == 1, d * math.inf, out).to(x.dtype)     # ±1 -> ±inf, as torch.erfinv


@contextlib.contextmanager
def portable_init():
    """Inside the block ``Tensor.erfinv_`` (which ``torch.nn.init.trunc_normal_`` and timm's ``trunc_normal_``
    call to draw initial weights) runs ``erfinv`` above instead of MKL's VML."""
    original = torch.Tensor.erfinv_

    def erfinv_(self):
        with torch.no_grad():
            return self.copy_(erfinv(self))

    torch.Tensor.erfinv_ = erfinv_
    try:
        yield
    finally:
        torch.Tensor.erfinv_ = original

