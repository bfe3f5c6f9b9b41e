"""What only a CUDA GPU runs, each test short (skipped on a machine without CUDA; the GPU command's ``cuda tests``
section runs them: ``pytest -m cuda tests/test_cuda.py``):

* bf16 autocast at the thesis preset (its ``train.precision``, "auto", is bf16 on a GPU) gives a finite loss and
  finite gradients, within ``BF16_LOSS_RTOL`` / ``BF16_GRAD_RTOL`` of the same step in fp32;
* a one-process NCCL process group all-reduces and all-gathers with gradients (``clip_loss``'s gather);
* fused AdamW (``training.engine.make_optimizer`` builds it with ``fused=True``) steps as the unfused one does;
* the fused SDPA kernels (flash, memory-efficient) give what the math backend gives.

The tolerances, stated here, compare relative L2 norms ‖a − b‖ / ‖b‖ (robust to entries near zero):

* ``BF16_*``: bf16 keeps 8 significant bits (a relative rounding of 2⁻⁹ ≈ 0.2 % per value); measured on a CPU (bf16
  autocast, the thesis model at batch 4, random weights) the loss was within 4.5e-5 and the gradient within 1.2 % of
  fp32: the tolerances are 100 × and 4 × those; a broken cast (fp16 overflow, an op left in bf16 that should
  accumulate in fp32) is off by far more or not finite;
* ``FP32_RTOL``: two fp32 computations of the same values in another order (a fused kernel, another reduction tree)
  differ by a few units in the last place, ~1e-6 relative; 1e-4 leaves room and still fails a wrong result;
* ``SDPA_BF16_RTOL``: a kernel in bf16 against the math backend in fp32 on the same (bf16-rounded) inputs: bf16's
  rounding of the output and of the probabilities, ~0.4 %; 2 % leaves room.
"""
import contextlib

import pytest
import torch
import torch.distributed as dist
from torch.nn import functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (none visible to torch)")]

BF16_LOSS_RTOL = 5e-3
BF16_GRAD_RTOL = 5e-2
FP32_RTOL = 1e-4
SDPA_BF16_RTOL = 2e-2
CUDA = torch.device("cuda")


def relative(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


@contextlib.contextmanager
def no_tf32():
    """fp32 as fp32: no TF32 in matmuls or cuDNN's convolutions inside the block (the reference computations)."""
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def _loss_and_grad(model, teacher, batch, cfg, amp):
    from thesis_lib.training.distributed import DistInfo
    from thesis_lib.training.engine import compute_loss
    model.zero_grad(set_to_none=True)
    loss, _ = compute_loss(model, model, batch, teacher, cfg.train, DistInfo(), amp)
    loss.backward()
    grads = [p.grad.flatten() for p in model.parameters() if p.grad is not None]
    return loss.detach().float(), torch.cat(grads)


def test_bf16_autocast_at_the_thesis_preset_is_finite_and_close_to_fp32():
    from thesis_lib import get_config
    from thesis_lib.data.tokenizer import trim
    from thesis_lib.models.emkum import build_model
    from thesis_lib.models.sources import load_teacher
    from thesis_lib.training.engine import autocast, resolve_precision
    cfg = get_config("thesis", "tte_after_ls", overrides={"weights.source": "random", "train.batch_size": 16})
    assert resolve_precision(cfg.train.precision, CUDA) == "bf16"
    torch.manual_seed(0)
    model, teacher = build_model(cfg, pretrained=False).to(CUDA), load_teacher(cfg).to(CUDA)
    B, S, L, pad = 16, cfg.model.image.img_size, cfg.model.text.max_len, cfg.model.text.pad_id
    tokens = torch.randint(4, cfg.model.text.vocab_size - 1, (B, L), device=CUDA)
    tokens = torch.where(torch.arange(L, device=CUDA) < torch.randint(10, 26, (B, 1), device=CUDA), tokens, pad)
    batch = {"images": torch.randn(B, 3, S, S, device=CUDA), "teacher_images": torch.randn(B, 3, S, S, device=CUDA),
             "tokens": trim(tokens, pad)}
    loss16, grad16 = _loss_and_grad(model, teacher, batch, cfg, autocast(cfg.train.precision, CUDA))
    with no_tf32():
        loss32, grad32 = _loss_and_grad(model, teacher, batch, cfg, contextlib.nullcontext())
    assert torch.isfinite(loss16) and torch.isfinite(grad16).all()
    assert abs(loss16 - loss32).item() <= BF16_LOSS_RTOL * abs(loss32).item(), (loss16.item(), loss32.item())
    assert relative(grad16, grad32) <= BF16_GRAD_RTOL, relative(grad16, grad32)


def test_a_one_process_nccl_group_all_reduces_and_gathers(tmp_path):
    from thesis_lib.training.distributed import all_gather_with_grad
    assert dist.is_nccl_available()
    dist.init_process_group("nccl", init_method=f"file://{tmp_path / 'rendezvous'}", rank=0, world_size=1)
    try:
        x = torch.arange(6.0, device=CUDA)
        dist.all_reduce(x)
        assert torch.equal(x.cpu(), torch.arange(6.0))
        feats = torch.randn(4, 8, device=CUDA, requires_grad=True)
        gathered = all_gather_with_grad(feats)                                  # as clip_loss gathers features
        upstream = torch.arange(32.0, device=CUDA).view(4, 8)
        (gathered * upstream).sum().backward()
        assert torch.equal(gathered.detach(), feats.detach()) and torch.equal(feats.grad, upstream)
    finally:
        dist.destroy_process_group()


def test_fused_adamw_steps_as_the_unfused_one():
    """The thesis preset's AdamW settings, a learning rate large enough (1e-2) that the updates stand far above
    fp32's rounding of the parameters: five steps of each, the updates compared."""
    from thesis_lib import get_config
    t = get_config("thesis").train
    g = torch.Generator(CUDA).manual_seed(0)
    start = [torch.randn(s, device=CUDA, generator=g) for s in ((768, 768), (768,), (3, 16, 16))]
    grads = [[torch.randn(p.shape, device=CUDA, generator=g) for p in start] for _ in range(5)]
    moved = {}
    for fused in (True, False):
        params = [torch.nn.Parameter(p.clone()) for p in start]
        opt = torch.optim.AdamW(params, lr=1e-2, betas=t.betas, eps=t.eps, weight_decay=t.weight_decay,
                                fused=fused, foreach=None if fused else False)
        for step in grads:
            for p, grad in zip(params, step):
                p.grad = grad.clone()
            opt.step()
        moved[fused] = torch.cat([(p.detach() - s).flatten() for p, s in zip(params, start)])
    assert moved[False].norm() > 0.1
    assert relative(moved[True], moved[False]) <= FP32_RTOL, relative(moved[True], moved[False])


@pytest.mark.parametrize("backend, dtype", [(SDPBackend.FLASH_ATTENTION, torch.bfloat16),
                                            (SDPBackend.EFFICIENT_ATTENTION, torch.bfloat16),
                                            (SDPBackend.EFFICIENT_ATTENTION, torch.float32)],
                         ids=["flash-bf16", "efficient-bf16", "efficient-fp32"])
def test_the_fused_attention_kernels_give_what_the_math_backend_gives(backend, dtype):
    """The image encoder's shape at the thesis preset (12 heads of 64, 196 patches + CLS), forward and backward; the
    reference is the math backend in fp32 (TF32 off) on the same inputs."""
    g = torch.Generator(CUDA).manual_seed(0)
    q, k, v = (torch.randn(8, 12, 197, 64, device=CUDA, generator=g).to(dtype).requires_grad_() for _ in range(3))
    up = torch.randn(8, 12, 197, 64, device=CUDA, generator=g)
    with sdpa_kernel(backend):
        out = F.scaled_dot_product_attention(q, k, v)
    out.backward(up.to(dtype))
    ref_in = [x.detach().float().requires_grad_() for x in (q, k, v)]
    with sdpa_kernel(SDPBackend.MATH), no_tf32():
        ref = F.scaled_dot_product_attention(*ref_in)
        ref.backward(up.to(dtype).float())
    rtol = FP32_RTOL if dtype == torch.float32 else SDPA_BF16_RTOL
    assert relative(out.float(), ref) <= rtol, relative(out.float(), ref)
    for x, r in zip((q, k, v), ref_in):
        assert relative(x.grad.float(), r.grad) <= rtol, relative(x.grad.float(), r.grad)
