"""thesis_lib.numerics: the machine's record names vendor, kernels and torch; the portable functions equal their torch
counterparts and do not move with MKL's code path, and no training or evaluation step of any variant (nor the
preparation of the demo assets) calls an operator that runs in MKL's vector math library or a thin GEMM (whose
MKL kernels differ between Intel and AMD CPUs)."""
import math
import os
import subprocess
import sys
from collections import defaultdict

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from thesis_lib import numerics


def test_portable_functions_equal_torchs_to_float_precision():
    torch.manual_seed(0)
    x = torch.rand(10_000) * 6 - 3
    pos = x.abs() + 1e-3
    exact = lambda f, v: f(v.double()).float()  # noqa: E731
    assert torch.allclose(numerics.exp(x), exact(torch.exp, x), rtol=3e-7, atol=0)
    assert torch.allclose(numerics.log(pos), exact(torch.log, pos), rtol=3e-7, atol=1e-7)
    assert torch.equal(numerics.sqrt(pos), exact(torch.sqrt, pos))
    assert torch.allclose(numerics.tanh(x), exact(torch.tanh, x), rtol=3e-7, atol=1e-7)
    u = torch.rand(10_000) * 1.9 - 0.95
    assert torch.allclose(numerics.erfinv(u), exact(torch.erfinv, u), rtol=1e-6, atol=1e-7)
    edges = torch.tensor([-1.0, 1.0, 1.5, 0.0])           # trunc_normal_ draws exactly ±1 now and then: ±inf, clamped
    assert torch.equal(numerics.erfinv(edges).isinf(), torch.erfinv(edges).isinf())
    assert numerics.erfinv(edges)[:2].tolist() == [-math.inf, math.inf] and numerics.erfinv(edges)[2].isnan()
    assert numerics.sqrt(torch.tensor([0.0, -1.0])).tolist()[0] == 0 and numerics.sqrt(torch.tensor([-1.0])).isnan()
    x.requires_grad_(True)
    numerics.exp(x).sum().backward()
    assert torch.allclose(x.grad, torch.exp(x.detach()), rtol=1e-6)


_DIGESTS = """
import hashlib, torch
from thesis_lib import numerics
torch.manual_seed(0)
x = torch.rand(4096) * 3 + 0.1
u = torch.rand(4096) * 1.8 - 0.9
h = lambda t: hashlib.sha1(t.numpy().tobytes()).hexdigest()
for name in ("exp", "log", "sqrt", "tanh"):
    print(name, h(getattr(numerics, name)(x)), h(getattr(torch, name)(x)))
print("erfinv", h(numerics.erfinv(u)), h(torch.erfinv(u)))
"""


def test_portable_functions_do_not_move_with_mkls_code_path():
    """Two MKL branches stand in for two CPU vendors: torch's functions change with the branch, ours do not."""
    runs = []
    for branch in ("AVX2,STRICT", "COMPATIBLE"):
        out = subprocess.run([sys.executable, "-c", _DIGESTS], env={**os.environ, "MKL_CBWR": branch},
                             capture_output=True, text=True, check=True).stdout
        runs.append({line.split()[0]: line.split()[1:] for line in out.splitlines()})
    for name in ("exp", "log", "sqrt", "tanh", "erfinv"):
        ours, theirs = zip(*(run[name] for run in runs))
        assert ours[0] == ours[1], f"numerics.{name} depends on MKL's code path"
    moved = sum(runs[0][n][1] != runs[1][n][1] for n in runs[0])
    if moved == 0 and numerics.cpu_vendor() != "GenuineIntel":    # MKL takes one path on AMD whatever MKL_CBWR says
        pytest.skip(f"on this {numerics.cpu_vendor()} CPU MKL's branches do not move torch's VML results either, so "
                    "this machine cannot show that ours are the stable ones (an Intel CPU can)")
    assert moved >= 3, "torch's VML functions no longer move with MKL's branch on this Intel CPU: re-check"


GEMMS = {"mm": (0, 1), "addmm": (1, 2), "bmm": (0, 1), "baddbmm": (1, 2)}    # operator -> its two matrix arguments


class NonPortableCalls(TorchDispatchMode):
    """Records every call of an operator in numerics.MKL_VML_OPS (and pow with exponent 0.5, which is a sqrt) and
    every float GEMM thinner than numerics.MIN_GEMM_ROWS × MIN_GEMM_COLUMNS."""

    def __init__(self):
        super().__init__()
        self.calls = defaultdict(int)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func._opname.rstrip("_").removeprefix("_foreach_")
        if name in numerics.MKL_VML_OPS or (name == "pow" and len(args) > 1 and isinstance(args[1], float)
                                            and args[1] == 0.5):
            self.calls[str(func)] += 1
        elif name in GEMMS and args[GEMMS[name][0]].is_floating_point():
            rows, columns = args[GEMMS[name][0]].shape[-2], args[GEMMS[name][1]].shape[-1]
            if rows < numerics.MIN_GEMM_ROWS or columns < numerics.MIN_GEMM_COLUMNS:
                self.calls[f"{func} {rows} x {columns}"] += 1
        return func(*args, **(kwargs or {}))


def test_no_variant_trains_or_evaluates_through_vendor_specific_kernels(tmp_path, monkeypatch):
    from thesis_lib.config import get_config
    from thesis_lib.training.prepare import prepare_assets
    from thesis_lib.training.run import run_experiment
    from thesis_lib.variants import VARIANTS
    monkeypatch.setenv("THESIS_DATA", str(tmp_path / "data"))
    with NonPortableCalls() as seen:
        prepare_assets(get_config("smoke"))
        for variant in VARIANTS:
            run_experiment("smoke", variant, 0, out_dir=tmp_path, overrides={"train.steps": 2})
    assert not seen.calls, f"vendor-specific CPU kernels (see thesis_lib.numerics): {dict(seen.calls)}"
    with NonPortableCalls() as check:                           # the recorder does see such calls
        torch.exp(torch.ones(3))
        torch.nn.Linear(8, 2)(torch.ones(5, 8))
    assert len(check.calls) == 2


def test_small_linear_is_a_linear_computed_element_wise():
    torch.manual_seed(0)
    small, plain = numerics.SmallLinear(16, 2), torch.nn.Linear(16, 2)
    plain.load_state_dict(small.state_dict())
    x = torch.randn(5, 3, 16)
    assert torch.allclose(small(x), plain(x), atol=1e-6) and isinstance(small, torch.nn.Linear)


def test_the_record_of_the_machine_names_vendor_kernels_and_torch():
    record = numerics.written_on()
    assert set(record) == {"cpu_vendor", "cpu_capability", "torch"}
    assert record["torch"] == torch.__version__ and record["cpu_vendor"]
