"""benchmarks/bench.py: the analytic FLOP count the throughput figures rest on, and the step-time breakdown."""
import importlib.util
from pathlib import Path

import pytest
import torch
from timm.layers import Attention, PatchEmbed
from torch import nn


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench", Path(__file__).parents[1] / "benchmarks" / "bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_flop_counter_counts_linear_conv_and_attention_analytically(bench):
    B, N, D, H = 3, 5, 16, 2
    lin = nn.Linear(D, 4 * D)
    counter = bench.FlopCounter(lin)
    lin(torch.randn(B, N, D))
    assert counter.flops == 2 * B * N * D * 4 * D
    embed = PatchEmbed(img_size=16, patch_size=8, in_chans=3, embed_dim=D)
    counter = bench.FlopCounter(embed)
    embed(torch.randn(B, 3, 16, 16))
    assert counter.flops == 2 * (B * 4 * D) * (3 * 8 * 8)           # 4 patches, each a 3·8·8 -> D map
    attn = Attention(D, H, qkv_bias=True)
    counter = bench.FlopCounter(attn)
    attn(torch.randn(B, N, D))
    qkv, proj, scores = 2 * B * N * D * 3 * D, 2 * B * N * D * D, 2 * 2 * B * N * N * D
    assert counter.flops == qkv + proj + scores
    counter.close()
    attn(torch.randn(B, N, D))
    assert counter.flops == qkv + proj + scores                     # closed: nothing counted any more


def test_step_breakdown_shares_cover_the_whole_step(bench):
    from thesis_lib import get_config
    shares, ms = bench.step_breakdown(get_config("smoke", "tte_after_ls"), torch.device("cpu"), steps=2)
    assert ms > 0 and all(v >= 0 for v in shares.values())
    assert sum(shares.values()) == pytest.approx(1.0, abs=0.02)
    assert shares["matmul (mm, addmm, bmm, convolution)"] > 0.05
