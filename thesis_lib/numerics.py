"""CPU numerics: one thread per run, the machine a stored number was computed on, and the few elementary functions
whose torch versions differ between CPU vendors (docs/reproducibility.md).

* **the thread count**: reductions split across threads sum in another order. ``one_thread`` runs a block on one
  thread; every CPU run and the preparation of its assets use it (parallelism comes from running runs side by side).
* **the CPU's vendor**: on CPU, ``torch.exp``, ``log``, ``sqrt``, ``tanh``, ``erfinv`` and a few more call MKL's
  vector math library (VML), whose code paths differ between Intel and AMD. ``exp``, ``log``,
  ``sqrt``, ``tanh`` below compute the same functions from ATen's own kernels (``exp2``, ``log1p``, ``rsqrt``,
  ``sigmoid``) in float64 on CPU, and plain torch elsewhere; ``portable_init`` gives ``trunc_normal_`` (torch's and
  timm's, which call ``Tensor.erfinv_``) an erfinv built the same way. ``MKL_VML_OPS`` lists the torch operators
  that must not run on the compared path (tests/test_numerics.py checks every variant's training and evaluation).
  MKL's GEMMs differ between the vendors for thin ones (fewer than ``MIN_GEMM_ROWS`` rows or
  ``MIN_GEMM_COLUMNS`` columns, measured): ``SmallLinear`` computes a layer with few outputs element-wise, and
  captions are padded to at least ``MIN_GEMM_COLUMNS`` tokens (``data.tokenizer.trim``), so attention is never thin.
"""
from __future__ import annotations

import contextlib
import math
import platform

import torch

# ATen operators whose CPU float results come from MKL's VML (measured with torch 2.14: they change with MKL_CBWR)
MKL_VML_OPS = ("exp", "log", "log2", "log10", "sqrt", "tanh", "tan", "erf", "erfc", "erfinv", "atan", "asin", "acos")
# the thinnest (rows × K) @ (K × columns) float32 product whose MKL result is the same on Intel and AMD
MIN_GEMM_ROWS, MIN_GEMM_COLUMNS = 4, 12


@contextlib.contextmanager
def one_thread():
    """CPU work on one thread inside the block (its float results then do not depend on the machine's cores)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)


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
    """Where stored numbers were computed, recorded beside them (tests/golden, results/<preset>, the stand-ins)."""
    return {"cpu_vendor": cpu_vendor(), "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "torch": torch.__version__}


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

