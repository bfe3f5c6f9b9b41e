"""benchmarks/bench.py: the FLOP counts the throughput figures rest on, the synthetic batches, and the step-time
breakdown."""
import importlib.util
from pathlib import Path

import pytest
import torch
from timm.layers import Attention, PatchEmbed
from torch import nn
from torch.nn import functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench", Path(__file__).parents[1] / "benchmarks" / "bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_flops_are_counted_analytically_for_linear_conv_and_attention(bench):
    B, N, D, H = 3, 5, 16, 2
    lin = nn.Linear(D, 4 * D)
    assert bench.forward_flops(lin, torch.randn(B, N, D)) == 2 * B * N * D * 4 * D
    embed = PatchEmbed(img_size=16, patch_size=8, in_chans=3, embed_dim=D)
    assert bench.forward_flops(embed, torch.randn(B, 3, 16, 16)) == 2 * (B * 4 * D) * (3 * 8 * 8)   # 4 patches
    attn = Attention(D, H, qkv_bias=True)
    qkv, proj, scores = 2 * B * N * D * 3 * D, 2 * B * N * D * D, 2 * 2 * B * N * N * D
    x = torch.randn(B, N, D)
    assert bench.forward_flops(attn, x) == qkv + proj + scores
    attn.requires_grad_(False)
    with torch.no_grad():                                          # a call that builds no graph (classifier_rate's)
        assert bench.counted_flops(lambda: attn(x)) == qkv + proj + scores


def test_step_breakdown_shares_cover_the_whole_step(bench):
    from thesis_lib import get_config
    shares, ms = bench.step_breakdown(get_config("smoke", "tte_after_ls"), torch.device("cpu"), steps=2)
    assert ms > 0 and all(v >= 0 for v in shares.values())
    assert sum(shares.values()) == pytest.approx(1.0, abs=0.02)
    assert shares["matmul (mm, addmm, bmm, convolution)"] > 0.05


def test_forward_flops_counts_functional_calls(bench):
    B, N, D, D_out = 3, 5, 4, 8

    class Functional(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(D_out, D))

        def forward(self, x):
            return F.linear(x, self.weight)

    module, x = Functional(), torch.randn(B, N, D)
    assert bench.forward_flops(module, x) == 2 * B * N * D * D_out
    assert module.weight.requires_grad                              # frozen only during the count
    H = 2
    attn = Attention(16, H, qkv_bias=True)                          # fused SDPA, whose CPU kernel has no formula
    qkv, proj, scores = 2 * B * N * 16 * 3 * 16, 2 * B * N * 16 * 16, 2 * 2 * B * N * N * 16
    assert bench.forward_flops(attn, torch.randn(B, N, 16)) == qkv + proj + scores


def test_synthetic_pairs_are_made_on_the_requested_device(bench):
    """Pictures and captions are drawn on the device (here meta): nothing of their size is made on the CPU."""
    from thesis_lib import get_config
    cfg, n = get_config("smoke"), 64
    largest = []

    class CpuTensors(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            largest.extend(t.numel() for t in tree_leaves(out)
                           if isinstance(t, torch.Tensor) and t.device.type == "cpu")
            return out

    with CpuTensors():
        pairs = bench.SyntheticPairs(cfg, n_images=n, device="meta")
    assert pairs.images.device.type == pairs.tokens.device.type == "meta"
    assert pairs.images.shape == (n, 3, cfg.model.image.img_size, cfg.model.image.img_size)
    assert max(largest, default=0) < n * cfg.model.text.max_len
    cpu = bench.SyntheticPairs(cfg, n_images=n)
    lengths = cpu.tokens.ne(cfg.model.text.pad_id).sum(1)
    assert cpu.tokens.dtype == torch.int32 and lengths.min() >= 10 and lengths.max() <= 25
    batch = cpu.batch(0)                                            # drawn as TrainPairs draws its batches
    assert batch["images"].shape == (cfg.train.batch_size, 3, cfg.model.image.img_size, cfg.model.image.img_size)
    assert batch["tokens"].shape[1] <= 25 and batch["teacher_images"].shape == batch["images"].shape


def test_classifier_rate_counts_the_prompts_flops_on_a_call_of_their_own(bench):
    out = bench.classifier_rate(torch.device("cpu"), n_classes=3, n_templates=4, preset="smoke")
    assert out["prompts"] == 12 and out["batched s"] > 0 and out["FLOP/s batched"] > 0
