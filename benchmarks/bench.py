"""Throughput of the training step and of evaluation, against the hardware's measured limit and a naive path.

    python benchmarks/bench.py --preset demo                     # CPU, the embedded world (under 5 minutes)
    python benchmarks/bench.py --preset thesis --device cuda     # GPU, synthetic 224 px batches, batch 256

FLOPs are counted from the shapes that actually run by ``torch.utils.flop_counter.FlopCounterMode``
(``counted_flops``, ``forward_flops``): 2 · (multiply-adds) of every matmul and convolution operator, functional calls
(``F.linear``) included, and attention through SDPA's math backend, so that QKᵀ and AV count
2 · 2 · B · heads · N² · d_head on every device (the CPU's fused SDPA kernel has no FLOP formula); a training step costs
3 × the student's forward (backward = 2 × forward) plus the teacher's forward when its targets are not cached. The
zero-shot classifier's FLOPs are counted on a call of their own, so that the counter does not slow the timed call.
Achieved FLOP/s are divided by the peak matmul FLOP/s measured in the same run, same device and dtype (a large square
matmul). Results are printed as Markdown tables (copy them into BENCHMARKS.md).
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import platform
import resource
import time
from functools import partial

import torch
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from thesis_lib import get_config
from thesis_lib.data.train_pairs import TrainPairs
from thesis_lib.evaluation import retrieval_recalls
from thesis_lib.training.distributed import DistInfo
from thesis_lib.training.engine import (TrainState, autocast, compute_loss, grad_scaler, make_optimizer,
                                        optimiser_step)

SINGLE = DistInfo()


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def peak_matmul(device, dtype, n=None, seconds=2.0) -> float:
    n = n or (8192 if device.type == "cuda" else 2048)
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    for _ in range(3):
        a @ b
    sync(device)
    t, k = time.perf_counter(), 0
    while time.perf_counter() - t < seconds:
        a @ b
        k += 1
    sync(device)
    return 2 * n ** 3 * k / (time.perf_counter() - t)


def counted_flops(call) -> int:
    """FLOPs of ``call()``: ``FlopCounterMode``'s count of every matmul, convolution and attention operator it
    dispatches (functional calls included), attention on SDPA's math backend (the same FLOPs as the fused kernels,
    which are not counted on CPU)."""
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        call()
    return counter.get_total_flops()


def forward_flops(module, *inputs) -> int:
    """FLOPs of one forward call ``module(*inputs)`` (``counted_flops``). No graph is built: the parameters are
    frozen for the call (not ``no_grad``, under which the counter's module tracker fails on tensors that require
    grad)."""
    trainable = [p for p in module.parameters() if p.requires_grad]
    try:
        for p in trainable:
            p.requires_grad_(False)
        return counted_flops(lambda: module(*inputs))
    finally:
        for p in trainable:
            p.requires_grad_(True)


class SyntheticPairs(TrainPairs):
    """Stands in for TrainPairs at the thesis preset (no data on the machine): random uint8 pictures at the model's
    size, captions of 10-25 BPE tokens padded to 64, batches drawn as TrainPairs draws them (same vectorised views,
    same per-batch trimming). Pictures and captions are drawn on ``device`` (a GPU's own generator there), so its
    batches are made there, not copied."""

    def __init__(self, cfg, n_images: int = 1024, device=None):
        device = torch.device(device or "cpu")
        g = _generator(device)
        S, L, pad = cfg.model.image.img_size, cfg.model.text.max_len, cfg.model.text.pad_id
        self.images = torch.randint(0, 256, (n_images, 3, S, S), generator=g, dtype=torch.uint8, device=device)
        lengths = torch.randint(10, 26, (n_images, 1), generator=g, device=device)
        words = torch.randint(4, cfg.model.text.vocab_size - 1, (n_images, L), generator=g, device=device)
        self.tokens = torch.where(torch.arange(L, device=device) < lengths, words, pad).int()
        self.pair_image = torch.arange(n_images)
        self.image_files = [f"synthetic-{i}" for i in range(n_images)]
        self.descriptions, self.shard_reports = None, {}
        self._sample(cfg.data, pad, cfg.seed, cfg.train.batch_size, S, bool(cfg.model.spec.fusion), 0, 1)


def _generator(device: torch.device, seed: int = 0):
    """A seeded generator of ``device``; None for a device without one (meta), which then draws from the global."""
    try:
        return torch.Generator(device).manual_seed(seed)
    except RuntimeError:
        return None


def build(cfg, device, fused_attn=True, synthetic=False):
    """Model, teacher, data and optimiser of a config, the way thesis_lib.training.run builds them."""
    import timm.layers.config as timm_cfg

    from thesis_lib.data.tokenizer import load_tokenizer
    from thesis_lib.models.emkum import build_model
    from thesis_lib.models.sources import load_teacher
    from thesis_lib.training.prepare import prepare_assets
    from thesis_lib.training.teacher_targets import teacher_targets
    root = (prepare_assets(cfg, pretrained=cfg.weights.source == "demo")
            if not synthetic or cfg.weights.source == "demo" else None)
    old = timm_cfg._USE_FUSED_ATTN
    timm_cfg.set_fused_attn(fused_attn)
    try:
        model = build_model(cfg, pretrained=cfg.weights.source != "random").to(device)
        teacher = load_teacher(cfg).to(device)
    finally:
        timm_cfg._USE_FUSED_ATTN = old
    if synthetic:
        pairs = SyntheticPairs(cfg, device=device)
        targets = None
        if cfg.train.cache_teacher and cfg.data.teacher_view == "fixed":
            with torch.no_grad():
                targets = torch.cat([teacher(x.to(device)).float() for x in pairs.teacher_view_images(64)])
    else:
        pairs = TrainPairs.of(cfg, load_tokenizer(cfg, root), root)
        targets = teacher_targets(cfg, teacher, pairs, device, SINGLE)
    opt, sched = make_optimizer(model, cfg.train, 1)
    return model, teacher, pairs, targets, opt, sched


# Where a step's time goes: every operator's self time, by kind (torch.profiler), plus what no operator accounts for.
KINDS = (
    ("matmul (mm, addmm, bmm, convolution)", ("aten::mm", "aten::addmm", "aten::bmm", "aten::mkldnn_convolution",
                                             "aten::convolution_backward")),
    ("attention kernels (SDPA forward and backward)", ("scaled_dot_product",)),
    ("GELU forward and backward", ("aten::gelu",)),
    ("LayerNorm forward and backward", ("layer_norm",)),
    ("copies, fills, cat/stack (bias broadcast, layout changes)", ("aten::copy_", "aten::fill_", "aten::cat",
                                                                   "aten::zero_", "aten::clone", "aten::stack")),
    ("bias-gradient and other reductions", ("aten::sum", "aten::mean", "aten::amax", "aten::logsumexp")),
    ("augmentation of the batch (affine grid + sampling)", ("grid_sampler", "affine_grid")),
    ("optimiser (fused AdamW)", ("adamw",)),
)


def step_breakdown(cfg, device, steps=10) -> tuple[dict, float]:
    """Share of the profiled wall time of ``steps`` training steps per kind of operator (KINDS), the rest
    element-wise; "no operator" is wall time outside every operator: Python, autograd bookkeeping, dispatch."""
    from torch.profiler import ProfilerActivity, profile
    run = _step_runner(cfg, device)
    run(3)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        t = time.perf_counter()
        run(steps)
        wall = time.perf_counter() - t
    shares = {name: 0.0 for name, _ in KINDS}
    shares["other element-wise (add, mul, softmax, losses, ...)"] = 0.0
    for e in prof.key_averages():
        if not e.key.startswith("aten::") or e.self_cpu_time_total <= 0:
            continue
        kind = next((name for name, keys in KINDS if any(k in e.key for k in keys)),
                    "other element-wise (add, mul, softmax, losses, ...)")
        shares[kind] += e.self_cpu_time_total / 1e6
    shares["no operator (Python, autograd engine, dispatch)"] = max(wall - sum(shares.values()), 0.0)
    return {k: v / wall for k, v in shares.items()}, 1000 * wall / steps


def _step_runner(cfg, device, fused_attn=True, compile_model=False, synthetic=False):
    """A closure ``run(n)`` doing n training steps the way thesis_lib.training.run does; it returns the last batch."""
    model, teacher, pairs, targets, opt, sched = build(cfg, device, fused_attn, synthetic)
    runner = torch.compile(model) if compile_model else model
    amp, batches = autocast(cfg.train.precision, device), pairs.batches(0, 10 ** 6, targets)
    state = TrainState(runner, model, teacher, opt, sched, SINGLE, device, grad_scaler(cfg.train.precision, device))

    def run(n):
        for _ in range(n):
            batch = {k: v.to(device, non_blocking=True) for k, v in next(batches).items()}
            loss, _ = compute_loss(runner, model, batch, teacher, cfg.train, SINGLE, amp)
            optimiser_step(state, loss, cfg.train)          # the loop's own step
        sync(device)
        return batch
    run.model, run.teacher, run.amp = model, teacher, amp
    return run


def train_step_rate(cfg, device, steps, fused_attn=True, compile_model=False, synthetic=False) -> dict:
    run = _step_runner(cfg, device, fused_attn, compile_model, synthetic)
    model, teacher, amp = run.model, run.teacher, run.amp
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    run(3)                                          # warm-up (and compilation, if any)
    t0 = time.perf_counter()
    batch = run(steps)
    step_s = (time.perf_counter() - t0) / steps
    memory = torch.cuda.max_memory_allocated() if device.type == "cuda" else \
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    batch = {k: v.to(device) for k, v in batch.items()}
    with amp:                                       # FLOPs of the last batch's shapes (captions trimmed as trained)
        flops = 3 * forward_flops(model, batch["images"], batch["tokens"])
        teacher_s = 0.0
        if "teacher_images" in batch:
            flops += forward_flops(teacher, batch["teacher_images"])
            sync(device)
            t = time.perf_counter()
            for _ in range(3):
                teacher(batch["teacher_images"])
            sync(device)
            teacher_s = (time.perf_counter() - t) / 3
    return {"pairs/s": cfg.train.batch_size / step_s, "ms/step": 1000 * step_s, "FLOP/s": flops / step_s,
            "teacher share": teacher_s / step_s, "peak memory": memory}


def retrieval_rate(device, n_img=5000, n_txt=25010, dim=768) -> dict:
    g = torch.Generator().manual_seed(0)
    img = nn.functional.normalize(torch.randn(n_img, dim, generator=g), dim=-1).to(device)
    txt = nn.functional.normalize(torch.randn(n_txt, dim, generator=g), dim=-1).to(device)
    t2i = torch.arange(n_txt) % n_img
    sync(device)
    t = time.perf_counter()
    retrieval_recalls(img, txt, t2i)
    sync(device)
    fast = time.perf_counter() - t
    t = time.perf_counter()
    _naive_recalls(img.cpu(), txt.cpu(), t2i)
    return {"chunked top-k (ours)": fast, "naive: full matrix, full sort, per-image loop": time.perf_counter() - t}


def _naive_recalls(img, txt, t2i):
    sims = img @ txt.T                                            # 5,000 × 25,010 at once
    ranks = sims.argsort(dim=1, descending=True)
    hits = [any(int(t2i[j]) == i for j in ranks[i, :10]) for i in range(len(img))]
    ranks_t = sims.T.argsort(dim=1, descending=True)[:, :10]
    return sum(hits), (ranks_t == t2i[:, None]).any(1).sum()


def classifier_rate(device, n_classes=20, n_templates=80, preset="thesis") -> dict:
    """Building the zero-shot classifier at the thesis preset on a class subset; per prompt, batched vs per class."""
    from thesis_lib.evaluation import embed_texts
    from thesis_lib.models.emkum import build_model
    cfg = get_config(preset)
    model = build_model(cfg).to(device).eval()
    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(8, 18, (n_classes * n_templates,), generator=g)
    tokens = torch.full((len(lengths), cfg.model.text.max_len), cfg.model.text.pad_id, dtype=torch.int32)
    for i, n in enumerate(lengths.tolist()):
        tokens[i, :n] = torch.randint(4, cfg.model.text.vocab_size - 1, (n,), generator=g)
    amp = autocast(cfg.train.precision, device)
    model.requires_grad_(False)
    embed = partial(embed_texts, model, tokens, cfg.model.text.pad_id, device, 256, amp)
    flops = counted_flops(embed)                                   # counted on a call of its own, not the timed one
    sync(device)
    t = time.perf_counter()
    embed()
    sync(device)
    batched = time.perf_counter() - t
    t = time.perf_counter()
    with torch.no_grad():
        for c in range(n_classes):                                 # open_clip's legacy loop: one class at a time,
            rows = tokens[c * n_templates:(c + 1) * n_templates].long().to(device)   # padded to the full 64
            with amp:
                model.encode_text(rows)
    sync(device)
    naive = time.perf_counter() - t
    prompts = n_classes * n_templates
    return {"prompts": prompts, "batched s": batched, "per-class s": naive, "FLOP/s batched": flops / batched,
            "1000 × 80 extrapolated s": batched / prompts * 80_000}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="demo")
    p.add_argument("--device", default="cpu")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=None, help="batch size (default: the preset's)")
    p.add_argument("--compile", action="store_true", help="also time the torch.compile'd step")
    p.add_argument("--skip-eval", action="store_true")
    args = p.parse_args(argv)
    device = torch.device(args.device)
    over = {"train.batch_size": args.batch} if args.batch else {}
    synthetic = args.preset == "thesis"
    if synthetic:                                   # random weights, synthetic pictures and captions
        over.update({"weights.source": "random", "data.teacher_view": "fixed"})
    cfg = get_config(args.preset, "tte_after_ls", overrides=over)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    peak = peak_matmul(device, dtype)
    print(f"# {args.preset} preset on {device} "
          f"({torch.cuda.get_device_name() if device.type == 'cuda' else platform.processor() or platform.machine()}, "
          f"{torch.get_num_threads()} threads), torch {torch.__version__}, {datetime.date.today()}")
    print(f"peak matmul {dtype}: {peak / 1e9:.1f} GFLOP/s")
    if device.type == "cpu":
        print(f"peak matmul bfloat16 on this CPU: {peak_matmul(device, torch.bfloat16) / 1e9:.1f} GFLOP/s")
    print()
    naive = get_config(args.preset, "tte_after_ls",
                       overrides={**over, "data.in_memory": False, "train.cache_teacher": False,
                                  "train.precision": "fp32", "data.num_workers": 0})
    rows = {"optimised (ours)": train_step_rate(cfg, device, args.steps, synthetic=synthetic)}
    rows["- teacher targets not cached"] = train_step_rate(
        get_config(args.preset, "tte_after_ls", overrides={**over, "train.cache_teacher": False}), device, args.steps,
        synthetic=synthetic)
    rows["- no fused attention"] = train_step_rate(cfg, device, args.steps, fused_attn=False, synthetic=synthetic)
    if not synthetic:
        rows["- images decoded per step"] = train_step_rate(
            get_config(args.preset, "tte_after_ls", overrides={**over, "data.in_memory": False, "data.num_workers": 0}),
            device, args.steps)
    if device.type == "cuda":
        rows["- fp32 (no bf16 autocast)"] = train_step_rate(
            get_config(args.preset, "tte_after_ls", overrides={**over, "train.precision": "fp32"}), device, args.steps,
            synthetic=synthetic)
    if device.type == "cpu":                        # does bf16 pay on this CPU? (AVX-512 BF16 / AMX, where present)
        rows["+ bf16 autocast"] = train_step_rate(
            get_config(args.preset, "tte_after_ls", overrides={**over, "train.precision": "bf16"}), device, args.steps,
            synthetic=synthetic)
    if args.compile:
        rows["+ torch.compile"] = train_step_rate(cfg, device, args.steps, compile_model=True, synthetic=synthetic)
    rows["naive (fp32, eager, no fused attention, uncached teacher" + ("" if synthetic else ", per-image decoding")
         + ")"] = train_step_rate(naive, device, args.steps, fused_attn=False, synthetic=synthetic)
    peak_after = peak_matmul(device, dtype)           # the clock of a shared machine drifts: keep the higher
    print(f"peak matmul {dtype} again after the steps: {peak_after / 1e9:.1f} GFLOP/s; ratios use the higher\n")
    peak = max(peak, peak_after)
    base = rows["optimised (ours)"]["pairs/s"]
    print(f"## training step, batch {cfg.train.batch_size}\n")
    print("| path | pairs/s | ms/step | GFLOP/s | % of peak | teacher share | peak memory | speed vs ours |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in rows.items():
        print(f"| {name} | {r['pairs/s']:.0f} | {r['ms/step']:.1f} | {r['FLOP/s'] / 1e9:.1f} | "
              f"{100 * r['FLOP/s'] / peak:.0f} % | {100 * r['teacher share']:.0f} % | "
              f"{r['peak memory'] / 2**30:.2f} GiB | {r['pairs/s'] / base:.2f}× |")
    if device.type == "cpu" and not synthetic:
        shares, ms = step_breakdown(cfg, device)
        print(f"\n## where the optimised step's time goes (torch.profiler, operator self time; {ms:.0f} ms/step "
              "profiled)\n")
        print("| kind of work | share of the step |\n|---|---|")
        for name, share in sorted(shares.items(), key=lambda kv: -kv[1]):
            print(f"| {name} | {100 * share:.1f} % |")
    if not args.skip_eval:
        print("\n## retrieval scoring at COCO-5K size (5,000 images × 25,010 captions)\n")
        print("| path | D = 768 (thesis) s | D = 96 (demo) s |\n|---|---|---|")
        big, small = retrieval_rate(device, dim=768), retrieval_rate(device, dim=96)
        for k in big:
            print(f"| {k} | {big[k]:.2f} | {small[k]:.2f} |")
        cr = classifier_rate(device)
        print(f"\n## zero-shot classifier at the thesis preset ({cr['prompts']} prompts measured)\n")
        print("| path | seconds | GFLOP/s | % of peak | 1,000 classes × 80 templates (extrapolated) |\n"
              "|---|---|---|---|---|")
        print(f"| batched, sorted by length (ours) | {cr['batched s']:.2f} | {cr['FLOP/s batched'] / 1e9:.1f} | "
              f"{100 * cr['FLOP/s batched'] / peak:.0f} % | {cr['1000 × 80 extrapolated s']:.0f} s |")
        print(f"| per class, padded to 64 (naive) | {cr['per-class s']:.2f} | | | "
              f"{cr['per-class s'] / cr['prompts'] * 80_000:.0f} s |")


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
