"""Range and cross-field checks of a resolved config: a value that would crash later, or silently do something
else than asked (``train.precision=fp8``, ``train.warmup_frac=2``), is a ``ConfigError`` naming the field here.
"""
from __future__ import annotations

import math

from .errors import ConfigError
from .variants import VARIANTS

CHOICES = {
    "train.precision": ("auto", "fp32", "bf16", "fp16"), "train.kd_loss": ("mse", "contrastive"),
    "train.itm_negatives": ("hard", "random"),
    "data.source": ("world", "karpathy"), "data.teacher_view": ("augmented", "fixed"),
    "data.decoder": ("pil", "pil_draft", "torchvision"),
    "data.zeroshot_templates": ("openai", "world"), "weights.source": ("thesis", "demo", "random"),
    "model.image.pos_embed": ("sincos", "learned"), "model.text.cls_position": ("learned", "zero"),
}
AT_LEAST_ONE = (
    "train.batch_size", "train.steps", "train.log_every", "train.ckpt_every", "eval.batch_size",
    "eval.retrieval_chunk", "eval.rerank_k", "model.dim", "model.num_heads", "model.image_depth", "model.text_depth",
    "model.shared_depth", "model.fusion_depth", "model.image.img_size", "model.image.patch_size",
    "model.image.in_chans", "model.text.vocab_size", "model.text.max_positions", "teacher.dim", "teacher.depth",
    "teacher.num_heads", "teacher.patch_size", "pretrain.batch_size", "pretrain.depth_factor",
    "data.world.img_size", "data.world.n_train", "data.world.n_coco_test", "data.world.n_flickr_test",
    "data.world.n_zeroshot_per_class", "data.world.n_image_corpus", "data.world.n_text_corpus",
)
AT_LEAST_ZERO = ("train.itm_batch", "data.num_workers", "data.world.n_val", "data.world.seed", "pretrain.image_steps",
                 "pretrain.text_steps", "pretrain.teacher_steps")
POSITIVE = ("train.base_lr", "train.eps", "model.mlp_ratio", "teacher.mlp_ratio", "pretrain.lr")
NON_NEGATIVE = ("train.weight_decay", "train.grad_clip", "train.itm_weight", "model.tte_layer_scale",
                "model.shared_layer_scale", "teacher.init_values", "pretrain.teacher_shape_weight")
FINITE = ("train.logit_scale_init", "train.logit_scale_max")
UNIT_OPEN = ("pretrain.mask_ratio", "pretrain.mlm_prob")          # strictly between 0 and 1


def _get(cfg, dotted: str):
    for name in dotted.split("."):
        cfg = getattr(cfg, name)
    return cfg


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _floats(values) -> list[float] | None:
    try:
        out = [float(v) for v in values]
    except (TypeError, ValueError):
        return None
    return out if all(math.isfinite(v) for v in out) else None


def problems(cfg) -> list[str]:
    """Every violated constraint of ``cfg`` as a sentence (empty: the config is sound)."""
    out = [f"{k} must be one of {', '.join(v)}, got {_get(cfg, k)!r}" for k, v in CHOICES.items()
           if _get(cfg, k) not in v]
    out += [f"{k} must be an integer ≥ 1, got {_get(cfg, k)!r}" for k in AT_LEAST_ONE if _get(cfg, k) < 1]
    out += [f"{k} must be an integer ≥ 0, got {_get(cfg, k)!r}" for k in AT_LEAST_ZERO if _get(cfg, k) < 0]
    out += [f"{k} must be a finite number > 0, got {_get(cfg, k)!r}" for k in POSITIVE
            if not (_is_number(_get(cfg, k)) and _get(cfg, k) > 0)]
    out += [f"{k} must be a finite number ≥ 0, got {_get(cfg, k)!r}" for k in NON_NEGATIVE
            if not (_is_number(_get(cfg, k)) and _get(cfg, k) >= 0)]
    out += [f"{k} must be a finite number, got {_get(cfg, k)!r}" for k in FINITE if not _is_number(_get(cfg, k))]
    out += [f"{k} must lie strictly between 0 and 1, got {_get(cfg, k)!r}" for k in UNIT_OPEN
            if not (_is_number(_get(cfg, k)) and 0 < _get(cfg, k) < 1)]
    t, m, d = cfg.train, cfg.model, cfg.data
    if m.variant not in VARIANTS:
        out.append(f"model.variant must be one of {', '.join(VARIANTS)}, got {m.variant!r}")
    if not 0 <= cfg.seed < 2 ** 32:
        out.append(f"seed must be in [0, 2^32), got {cfg.seed}")
    if not (_is_number(t.warmup_frac) and 0 <= t.warmup_frac < 1):
        out.append(f"train.warmup_frac must be in [0, 1), got {t.warmup_frac!r} (at 1 or more the peak is never reached)")
    betas, crop, mean, std = _floats(t.betas), _floats(d.crop_scale), _floats(d.mean), _floats(d.std)
    if betas is None or len(betas) != 2 or not all(0 <= b < 1 for b in betas):
        out.append(f"train.betas must be two numbers in [0, 1), got {t.betas!r}")
    for group, width, heads in (("model", m.dim, m.num_heads), ("teacher", cfg.teacher.dim, cfg.teacher.num_heads)):
        if heads >= 1 and width % heads:
            out.append(f"{group}.dim ({width}) must be divisible by {group}.num_heads ({heads})")
    for what, patch in (("model.image.patch_size", m.image.patch_size), ("teacher.patch_size", cfg.teacher.patch_size)):
        if patch >= 1 and m.image.img_size % patch:
            out.append(f"model.image.img_size ({m.image.img_size}) must be divisible by {what} ({patch})")
    if not 3 <= m.text.max_len <= m.text.max_positions:
        out.append(f"model.text.max_len must be between 3 and model.text.max_positions ({m.text.max_positions}), "
                   f"got {m.text.max_len}")
    if crop is None or len(crop) != 2 or not 0 < crop[0] <= crop[1] <= 1:
        out.append(f"data.crop_scale must be two numbers 0 < low ≤ high ≤ 1, got {d.crop_scale!r}")
    channels = m.image.in_chans
    if mean is None or std is None or len(mean) != channels or len(std) != channels or not all(s > 0 for s in std):
        out.append(f"data.mean and data.std must hold {channels} numbers each (model.image.in_chans), std > 0; "
                   f"got {d.mean!r}, {d.std!r}")
    tau = _floats(m.switch_tau)
    if tau is None or len(tau) != 2 or not all(x > 0 for x in tau):
        out.append(f"model.switch_tau must be two numbers > 0 (start, end of the annealing), got {m.switch_tau!r}")
    if m.variant in VARIANTS and m.spec.sib and m.fusion_depth < 2:
        out.append(f"variant {m.variant} (Switch-Input Block) needs model.fusion_depth ≥ 2, got {m.fusion_depth}")
    if d.source == "world" and t.batch_size > d.world.n_train * 5:
        out.append(f"train.batch_size ({t.batch_size}) exceeds the {d.world.n_train * 5} pairs of the world's "
                   "training set (data.world.n_train × 5 captions)")
    if d.source == "world" and d.world.img_size != m.image.img_size:
        out.append(f"data.world.img_size ({d.world.img_size}) must equal model.image.img_size ({m.image.img_size})")
    if t.logit_scale_max < t.logit_scale_init:
        out.append(f"train.logit_scale_max ({t.logit_scale_max}) must be ≥ train.logit_scale_init "
                   f"({t.logit_scale_init})")
    return out


def check_config(cfg) -> None:
    found = problems(cfg)
    if found:
        raise ConfigError("invalid config: " + "; ".join(found))
