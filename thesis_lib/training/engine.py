"""The training step and loop: AdamW, cosine schedule with warmup, KD + ITC, logging, atomic checkpoints.

Optimiser as the thesis (docs/sources.md §3): AdamW β = (0.9, 0.98), ε = 1e-6, weight decay 0.01 except on biases,
norms, embeddings (tokens, positions, I_CLS, TTE) and LayerScale vectors; LR = base_lr × global batch / 256; HF's
cosine schedule with 10 % warmup, stepped every step. Host syncs happen only every ``log_every`` steps: losses are
summed on the device and read then (that is also when a non-finite loss is detected, before any checkpoint).
"""
from __future__ import annotations

import contextlib
import shutil
import time
from dataclasses import asdict, dataclass

import numpy as np
import torch
from tqdm import tqdm

from ..cache import torch_save_atomic
from ..config import THESIS_GLOBAL_BATCH, THESIS_STEPS_RUN, ExperimentConfig, ModelConfig, TrainConfig
from ..data.throughput import MIN_STEPS, DataPathRate, WaitClock, warn_if_waiting
from ..errors import CheckpointError, NonFiniteLossError, OutputDirError
from ..models.fusion import anneal, itm_loss
from ..paths import show_progress
from .distributed import DistInfo, barrier, sum_over_ranks
from .losses import clip_loss, kd_contrastive, kd_mse
from .results import RunPaths, append_jsonl, resume_differences, trim_curve

NO_DECAY = ("embed_tokens", "embed_positions", "cls_token", "pos_embed", "token_type_embeddings", "embeddings.")
TTE_PARAMS = ("token_type_embeddings.", "tte_scale.")     # what a variant's ``tte_budget`` gives its own learning rate


def exempt(name: str, p: torch.Tensor, rule: str = "ours") -> bool:
    """Whether a parameter is exempt from weight decay: ours, every vector and embedding (``NO_DECAY``); the
    thesis's, 1-D parameters, biases and the token table only (docs/sources.md §9)."""
    if rule == "thesis":
        return p.ndim == 1 or name.endswith(".bias") or "embed_tokens" in name
    return p.ndim < 2 or any(k in name for k in NO_DECAY)


def param_groups(model: torch.nn.Module, weight_decay: float, tte_lr: float | None = None,
                 rule: str = "ours") -> list[dict]:
    """AdamW's groups: decayed weights, then everything exempt from decay (``exempt`` by ``rule``); with
    ``tte_lr``, a third group holds the TTE's parameters (type vectors and γ, no decay) at that learning rate."""
    decay, no_decay, tte = [], [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        if tte_lr is not None and name.startswith(TTE_PARAMS):
            tte.append(p)
        else:
            (no_decay if exempt(name, p, rule) else decay).append(p)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return groups + ([{"params": tte, "weight_decay": 0.0, "lr": tte_lr}] if tte else [])


def peak_lr(t: TrainConfig, global_batch: int) -> float:
    return t.base_lr * global_batch / 256                                  # linear scaling rule


def summed_lr(t: TrainConfig, global_batch: int, run_steps: int | None = None) -> float:
    """Σ over the run's steps (the first ``run_steps`` of the schedule, default all) of the learning rate its
    schedule gives (HF's cosine with linear warmup, stepped every step): about how far AdamW can move one
    parameter, since it moves it by ≈ one learning rate per step."""
    warmup, steps = int(t.warmup_frac * t.steps), t.steps
    k = np.arange(steps if run_steps is None else run_steps, dtype=np.float64)
    cosine = 0.5 * (1 + np.cos(np.pi * (k - warmup) / max(1, steps - warmup)))
    factor = np.where(k < warmup, k / max(1, warmup), np.maximum(0.0, cosine))
    return float(peak_lr(t, global_batch) * factor.sum())


def tte_lr_scale(t: TrainConfig, global_batch: int, target: float | None) -> float | None:
    """The factor on the TTE's learning rate that makes its summed learning rate ``target`` (e.g.
    ``thesis_summed_lr()``); None for no target (the run's own learning rate)."""
    return None if target is None else target / summed_lr(t, global_batch)


def thesis_summed_lr() -> float:
    """The thesis run's summed learning rate (≈ 4.46: 44,632 steps of its cosine schedule at a peak of 1e-4 × 512 /
    256 = 2e-4; its schedule is ``TrainConfig``'s defaults, docs/sources.md §3)."""
    return summed_lr(TrainConfig(), THESIS_GLOBAL_BATCH, THESIS_STEPS_RUN)


def budget_summed_lr(budget: str) -> float | None:
    """The summed learning rate a variant's ``tte_budget`` asks for its TTE: "thesis" the thesis run's, "" none."""
    return thesis_summed_lr() if budget == "thesis" else None


def steps_for_summed_lr(t: TrainConfig, global_batch: int, target: float) -> int:
    """The fewest steps of ``t``'s schedule (its shape, peak and warmup fraction, only the length changed) whose
    summed learning rate (``summed_lr``) reaches ``target``: the demo "trained as long as the thesis" in the sense of
    ``tte_lr_scale`` (the same function, applied to every parameter by lengthening the run instead of raising one
    group's rate)."""
    import dataclasses
    per_step = summed_lr(t, global_batch) / t.steps            # ≈ peak / 2 for a cosine with warmup
    steps = max(1, int(target / per_step) - 2)
    while summed_lr(dataclasses.replace(t, steps=steps), global_batch) < target:
        steps += 1
    return steps


@dataclass
class TrainState:
    """What the loop trains and with what: the model as stepped (DDP/compiled wrapper) and as defined (``raw``),
    the frozen teacher, the optimiser and its schedule, the process group, the device and the loss scaler (active
    for fp16 only: ``grad_scaler``)."""
    model: torch.nn.Module
    raw: torch.nn.Module
    teacher: torch.nn.Module
    opt: torch.optim.Optimizer
    sched: object
    info: DistInfo
    device: torch.device
    scaler: torch.amp.GradScaler | None = None

    def __post_init__(self):
        if self.scaler is None:
            self.scaler = torch.amp.GradScaler(self.device.type, enabled=False)


def make_optimizer(model: torch.nn.Module, t: TrainConfig, world_size: int, tte_summed_lr: float | None = None):
    """AdamW and its schedule; with ``tte_summed_lr``, the TTE's parameters get the learning rate whose sum over the
    run is that (``tte_lr_scale`` × the lr; a variant's ``tte_budget`` "thesis": ``thesis_summed_lr()``)."""
    from transformers import get_cosine_schedule_with_warmup
    lr, scale = peak_lr(t, t.batch_size * world_size), tte_lr_scale(t, t.batch_size * world_size, tte_summed_lr)
    groups = param_groups(model, t.weight_decay, None if scale is None else lr * scale, t.decay_rule)
    opt = torch.optim.AdamW(groups, lr=lr, betas=t.betas, eps=t.eps, fused=True)
    sched = get_cosine_schedule_with_warmup(opt, int(t.warmup_frac * t.steps), t.steps)
    return opt, sched


def adamw_drift(t: TrainConfig, grad_scales=(1e-7, 1e-5, 1e-3, 1.0), steps: int = 100, width: int = 96,
                init: float | None = None, seed: int = 0) -> dict:
    """How far ``steps`` steps of the optimiser as configured (``make_optimizer``: AdamW, its schedule, no decay on a
    vector) move a LayerScale vector γ (``width`` channels at ``init``) under gradients of each scale, of a fixed
    sign per channel and a size drawn in [0.5, 1.5] × scale per step: the mean |Δγ| per channel, and it over the
    summed learning rates (``init``: None, the configured γ's, ``ModelConfig.tte``). Adam divides by the
    gradient's own running scale, so once the gradient is well above ``eps`` the drift is about one learning rate
    per step however small it is (Kingma & Ba 2015, arXiv:1412.6980, §2.1): γ leaving its initial value says
    nothing about whether the TTE is useful (notebook 04's ablation)."""
    out, init = {}, ModelConfig().tte.gamma_init if init is None else init
    for scale in grad_scales:
        gamma = torch.nn.Parameter(torch.full((width,), init))
        opt, sched = make_optimizer(torch.nn.ParameterList([gamma]), t, world_size=1)
        g = torch.Generator().manual_seed(seed)
        sign = torch.randn(width, generator=g).sign()
        lr_sum = 0.0
        for _ in range(steps):
            gamma.grad = scale * sign * (0.5 + torch.rand(width, generator=g))
            lr_sum += opt.param_groups[1]["lr"]
            opt.step()
            sched.step()
        drift = (gamma.detach() - init).abs().mean().item()
        out[scale] = {"mean |Δγ|": drift, "over the summed lr": drift / lr_sum}
    return out


def resolve_precision(precision: str, device: torch.device) -> str:
    return ("bf16" if device.type == "cuda" else "fp32") if precision == "auto" else precision


def autocast(precision: str, device: torch.device):
    precision = resolve_precision(precision, device)
    if precision == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=torch.bfloat16 if precision == "bf16" else torch.float16)


def grad_scaler(precision: str, device: torch.device) -> torch.amp.GradScaler:
    """fp16 needs its loss scaled so that small gradients do not flush to zero (bf16 and fp32 do not): a
    ``torch.amp.GradScaler``, disabled (a pass-through: ``step`` is ``opt.step()``) for any other precision."""
    return torch.amp.GradScaler(device.type, enabled=resolve_precision(precision, device) == "fp16")


def compute_loss(model, raw, batch: dict, teacher, t: TrainConfig, info: DistInfo, amp):
    """L = L_KD + L_ITC for one batch; returns the loss and its parts (device tensors)."""
    with amp:
        image, text = model(batch["images"], batch["tokens"])
        target = batch["targets"] if "targets" in batch else teacher(batch["teacher_images"])
        kd_fn = kd_mse if t.kd_loss == "mse" else kd_contrastive
        kd, kd_image, kd_text = kd_fn(image.kd, text.kd, target)
        scale = raw.logit_scale.exp()
        itc = clip_loss(image.x.float(), text.x.float(), scale[0], info)
        if image.x_fc1 is not None:                          # the thesis code's second tap, averaged
            itc = (itc + clip_loss(image.x_fc1.float(), text.x_fc1.float(), scale[1], info)) / 2
        parts = {"kd": kd, "kd_image": kd_image, "kd_text": kd_text, "itc": itc}
        if raw.fusion is not None:                          # notebook 05: ITM on hard negatives
            parts["itm"] = itm_loss(raw.fusion, image, text, scale[0].detach(), batch["fits"], t.itm_batch,
                                    t.itm_negatives)
    return kd + itc + t.itm_weight * parts.get("itm", 0.0), parts


def layerscale_stats(raw) -> dict | None:
    """Statistics of the TTE LayerScale γ (tte_after_ls only), the quantities the chapter reports."""
    if not hasattr(raw.tte_scale, "gamma"):
        return None
    g = raw.tte_scale.gamma.detach().float().cpu()
    a = g.abs()
    return {"mean": g.mean().item(), "std": g.std().item(), "min": g.min().item(), "max": g.max().item(),
            "abs_mean": a.mean().item(), "abs_max": a.max().item(),
            "abs_q50": a.quantile(0.5).item(), "abs_q90": a.quantile(0.9).item(), "abs_q99": a.quantile(0.99).item()}


def save_checkpoint(paths: RunPaths, s: TrainState, step: int, config: dict) -> None:
    state = {"model": s.raw.state_dict(), "optimizer": s.opt.state_dict(), "scheduler": s.sched.state_dict(),
             "step": step, "config": config, "world_size": s.info.world_size, "rng": torch.get_rng_state(),
             "numpy_rng": np.random.get_state(), "scaler": s.scaler.state_dict()}
    try:
        torch_save_atomic(state, paths.checkpoint)           # a kill leaves the previous checkpoint intact
    except (OSError, RuntimeError) as err:                   # a full disk: torch raises RuntimeError
        raise OutputDirError(f"cannot write the checkpoint at step {step} to {paths.dir}: {err}; free disk space "
                             "and resume (the previous checkpoint is intact)") from None


def remove_stale_temporaries(paths: RunPaths) -> None:
    """Temporary files a killed process left in this run's folder (a checkpoint-sized one at the thesis scale)."""
    for tmp in [*paths.dir.glob(".*.tmp"), *paths.result.parent.glob(f".{paths.result.name}.*.tmp")]:
        tmp.unlink(missing_ok=True)


def load_checkpoint(path, s: TrainState, config: dict) -> int:
    """Restore a run; refuses a checkpoint of another variant, seed, config or global batch (``train.batch_size`` ×
    processes: the data order depends on it, not on the number of processes). Returns the step to continue from."""
    from ..models.checkpoints import torch_load
    state = torch_load(path)
    if not isinstance(state, dict) or "config" not in state or "optimizer" not in state:
        raise CheckpointError(f"{path} is not a training checkpoint of thesis_lib (no config/optimizer state)")
    diffs = resume_differences(state["config"], config, state.get("world_size"), s.info.world_size)
    if diffs:
        raise CheckpointError(f"cannot resume from {path}: it belongs to another run ({'; '.join(diffs[:4])})")
    s.raw.load_state_dict(state["model"])
    s.opt.load_state_dict(state["optimizer"])
    s.sched.load_state_dict(state["scheduler"])
    if state.get("scaler"):
        s.scaler.load_state_dict(state["scaler"])
    torch.set_rng_state(state["rng"])
    np.random.set_state(state["numpy_rng"])
    return int(state["step"])


def optimiser_step(s: TrainState, loss: torch.Tensor, t: TrainConfig) -> None:
    """Backward and one optimiser step: the loss scaled for fp16, the gradients clipped, the schedule stepped, the
    logit scale clamped (no host sync)."""
    s.opt.zero_grad(set_to_none=True)
    s.scaler.scale(loss).backward()
    if t.grad_clip:
        s.scaler.unscale_(s.opt)                             # clip the true gradients (no-op unless fp16)
        torch.nn.utils.clip_grad_norm_(s.raw.parameters(), t.grad_clip)
    s.scaler.step(s.opt)                                     # skipped when fp16 gradients overflowed
    s.scaler.update()
    s.sched.step()
    with torch.no_grad():
        s.raw.logit_scale.clamp_(0, t.logit_scale_max)


def log_row(s: TrainState, step: int, means: dict, monitor=None) -> dict:
    """A row of ``metrics.jsonl``: the step, the window's mean losses, the learning rate, the logit scale, γ's
    statistics, the fp16 loss scale (when active) and, on rank 0, ``monitor``'s entries."""
    row = {"step": step, **means, "lr": s.sched.get_last_lr()[0],
           "logit_scale": s.raw.logit_scale[0].exp().item(), "layerscale": layerscale_stats(s.raw)}
    if s.scaler.is_enabled():
        row["grad_scale"] = s.scaler.get_scale()
    if s.info.is_main and monitor is not None:
        row.update(monitor(s.raw))
    return row


def raise_if_non_finite(bad_step: torch.Tensor, paths: RunPaths) -> None:
    """``bad_step`` (a device scalar: the first step whose loss was not finite, or −1) read once per logged window."""
    if int(bad_step) >= 0:
        kept = (f"the last good checkpoint ({paths.checkpoint}) is kept" if paths.checkpoint.exists()
                else "no checkpoint had been written yet")
        raise NonFiniteLossError(f"the loss became non-finite at step {int(bad_step)}; {kept}; lower the learning rate")


def data_path_checked(clock: WaitClock, steps_done: int, batch: int, data_rate: DataPathRate) -> bool:
    """Warn (once) if the loop mostly waited for its batches (data/throughput.py); the workers' start-up is not
    judged. True: checked."""
    elapsed = clock.since_first()
    warn_if_waiting(clock.waited, elapsed, (steps_done - 1) * batch / max(elapsed, 1e-9), data_rate)
    return True


STOP = {"requested": False}      # set by ``request_stop`` (the training CLI's SIGUSR1 handler)


class StopRequested(Exception):
    """Training stopped on request (SIGUSR1: SLURM's warning before the job's time limit) with its checkpoint written
    at ``step``; the same command with --resume continues from it."""

    def __init__(self, step: int, is_main: bool):
        super().__init__(f"stopped on request at step {step}, its checkpoint written")
        self.step, self.is_main = step, is_main


def request_stop(signum=None, frame=None) -> None:
    """A signal handler: the loop stops at its next logged step, after writing its checkpoint there."""
    STOP["requested"] = True


def train_loop(s: TrainState, pairs, targets, cfg: ExperimentConfig, paths: RunPaths, start_step: int = 0,
               data_rate: DataPathRate | None = None, monitor=None) -> dict:
    """Steps ``start_step .. cfg.train.steps``; logs to ``paths.metrics`` and checkpoints on rank 0. With
    ``data_rate`` (a run reading files), warns once, after the first logged window, if the loop mostly waited for
    its batches (data/throughput.py). ``monitor(raw) -> dict``, if given, adds its entries to every log row on rank
    0 (it must neither train nor draw random numbers: thesis_lib.analysis.tte_monitor). Asked to stop
    (``request_stop``), it checkpoints at its next logged step, where it reads the losses anyway, and raises
    ``StopRequested``."""
    t, info, amp = cfg.train, s.info, autocast(cfg.train.precision, s.device)
    if info.is_main:
        remove_stale_temporaries(paths)                   # the run's lock (or rank 0 alone) owns the folder
        trim_curve(paths, start_step)
    sums, bad_step, checked_data = None, torch.full((), -1, device=s.device), data_rate is None
    window_start, t0, steps_done = start_step, time.perf_counter(), 0
    bar = tqdm(total=t.steps, initial=start_step, desc=f"{cfg.model.variant} seed {cfg.seed}", unit="step",
               disable=not (show_progress() and info.is_main), dynamic_ncols=True)
    s.model.train()
    clock = WaitClock(pairs.batches(start_step, t.steps, targets, device=s.device))   # data.decoder=device: there
    for step, batch in enumerate(clock, start=start_step):
        batch = {k: v.to(s.device, non_blocking=True) for k, v in batch.items()}
        if s.raw.fusion is not None:
            s.raw.fusion.set_tau(anneal(cfg.model.switch_tau, step / t.steps))
        loss, parts = compute_loss(s.model, s.raw, batch, s.teacher, t, info, amp)     # L = L_KD + L_ITC
        optimiser_step(s, loss, t)
        with torch.no_grad():
            values = torch.stack([loss.detach().float()] + [v.detach().float() for v in parts.values()])
            sums = values if sums is None else sums + values
            bad_step = torch.where((bad_step < 0) & ~torch.isfinite(values[0]), step + 1, bad_step)
        steps_done, done = steps_done + 1, step + 1
        if done % t.log_every == 0 or done % t.ckpt_every == 0 or done == t.steps:
            raise_if_non_finite(bad_step, paths)
            stop = done < t.steps and sum_over_ranks(info, STOP["requested"], "requests to stop") > 0   # all or none
            row = log_row(s, done, dict(zip(["loss", *parts], (sums / (done - window_start)).tolist())), monitor)
            if info.is_main:
                append_jsonl(paths.metrics, row)
                if stop or done % t.ckpt_every == 0 or done == t.steps:
                    save_checkpoint(paths, s, done, asdict(cfg))
                    if t.keep_every and done % t.keep_every == 0:        # a snapshot kept for a held-out curve
                        shutil.copyfile(paths.checkpoint, paths.snapshot(done))
            bar.set_postfix(loss=f"{row['loss']:.3f}", itc=f"{row['itc']:.3f}", kd=f"{row['kd']:.4f}")
            sums, window_start = None, done
            if stop:
                barrier(info, "rank 0 to write the checkpoint before stopping")
                raise StopRequested(done, info.is_main)
            if not checked_data and steps_done > MIN_STEPS and info.is_main:
                checked_data = data_path_checked(clock, steps_done, t.batch_size * info.world_size, data_rate)
        bar.update()
    bar.close()
    seconds = time.perf_counter() - t0
    return {"steps": t.steps, "resumed_from": start_step, "time_s": seconds, "world_size": info.world_size,
            "pairs_per_s": steps_done * t.batch_size * info.world_size / max(seconds, 1e-9),
            "data_wait_s": clock.waited}
