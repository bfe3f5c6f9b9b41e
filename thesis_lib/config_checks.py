"""What a config value may be. An override is coerced to its field's type (``replace_path``); each field's own range
is a ``Rule`` declared on the field itself (``config.knob``'s ``rule=``, read here from the field's metadata); the
constraints between fields are written out in ``problems``. A value that would crash later, or silently do something
else than asked (``train.precision=fp8``, ``train.warmup_frac=2``), is a ``ConfigError`` naming the field.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Callable

from .errors import ConfigError
from .variants import VARIANTS


def parse_sets(items) -> dict:
    """``--set KEY=VALUE`` items (every CLI's) as overrides, values as text (``replace_path`` coerces them); an item
    without ``=`` is a ``ConfigError`` naming it."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--set expects KEY=VALUE, got {item!r}")
        out[key] = value
    return out


def location_overrides(data_root: str | None, checkpoints: str | None) -> dict:
    """Where the data and the pretrained checkpoints lie, as config overrides (``data.root``,
    ``weights.checkpoint_dir``; none for what is not given): the command line's ``--data-root`` and ``--checkpoints``,
    a notebook's ``data_root`` and ``checkpoints`` parameters."""
    return {k: v for k, v in (("data.root", data_root), ("weights.checkpoint_dir", checkpoints)) if v}


@dataclass(frozen=True)
class Rule:
    """A field's range: ``holds(value)``, and what it says when it does not (``"must be an integer ≥ 1"``)."""
    holds: Callable[[object], bool]
    says: str

    def problem(self, name: str, value) -> str | None:
        try:
            ok = bool(self.holds(value))
        except TypeError:                             # a value of another type than the field's (built by hand)
            ok = False
        return None if ok else f"{name} {self.says}, got {value!r}"


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def one_of(*options: str) -> Rule:
    return Rule(lambda v: v in options, f"must be one of {', '.join(options)}")


AT_LEAST_ONE = Rule(lambda v: v >= 1, "must be an integer ≥ 1")
AT_LEAST_ZERO = Rule(lambda v: v >= 0, "must be an integer ≥ 0")
POSITIVE = Rule(lambda v: _is_number(v) and v > 0, "must be a finite number > 0")
NON_NEGATIVE = Rule(lambda v: _is_number(v) and v >= 0, "must be a finite number ≥ 0")
FINITE = Rule(_is_number, "must be a finite number")
UNIT_OPEN = Rule(lambda v: _is_number(v) and 0 < v < 1, "must lie strictly between 0 and 1")
UNIT_HALF_OPEN = Rule(lambda v: _is_number(v) and 0 <= v < 1,
                      "must be in [0, 1) (at 1 or more the peak is never reached)")
DROPOUT = Rule(lambda v: _is_number(v) and 0 <= v < 1, "must be a dropout rate in [0, 1)")
SEED = Rule(lambda v: 0 <= v < 2 ** 32, "must be in [0, 2^32)")


def _floats(values) -> list[float] | None:
    try:
        out = [float(v) for v in values]
    except (TypeError, ValueError):
        return None
    return out if all(math.isfinite(v) for v in out) else None


def pair(holds: Callable[[float, float], bool], says: str) -> Rule:
    """Two finite numbers ``(a, b)`` for which ``holds(a, b)``."""
    return Rule(lambda v: (x := _floats(v)) is not None and len(x) == 2 and holds(*x), says)


BETAS = pair(lambda a, b: 0 <= a < 1 and 0 <= b < 1, "must be two numbers in [0, 1)")
CROP_SCALE = pair(lambda low, high: 0 < low <= high <= 1, "must be two numbers 0 < low ≤ high ≤ 1")
TEMPERATURES = pair(lambda start, end: start > 0 and end > 0,
                    "must be two numbers > 0 (start, end of the annealing)")


def field_problems(cfg, prefix: str = "") -> list[str]:
    """Every field of ``cfg`` (nested groups included) whose value breaks the rule declared on it."""
    out = []
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if dataclasses.is_dataclass(value):
            out += field_problems(value, f"{prefix}{f.name}.")
        elif "rule" in f.metadata and (problem := f.metadata["rule"].problem(prefix + f.name, value)):
            out.append(problem)
    return out


def problems(cfg) -> list[str]:
    """Every violated constraint of ``cfg`` as a sentence (empty: the config is sound): the fields' own rules, then
    the constraints between fields."""
    out = field_problems(cfg)
    t, m, d = cfg.train, cfg.model, cfg.data
    mean, std = _floats(d.mean), _floats(d.std)
    for group, width, heads in (("model", m.dim, m.num_heads), ("teacher", cfg.teacher.dim, cfg.teacher.num_heads)):
        if heads >= 1 and width % heads:
            out.append(f"{group}.dim ({width}) must be divisible by {group}.num_heads ({heads})")
    for what, patch in (("model.image.patch_size", m.image.patch_size), ("teacher.patch_size", cfg.teacher.patch_size)):
        if patch >= 1 and m.image.img_size % patch:
            out.append(f"model.image.img_size ({m.image.img_size}) must be divisible by {what} ({patch})")
    if not 3 <= m.text.max_len <= m.text.max_positions:
        out.append(f"model.text.max_len must be between 3 and model.text.max_positions ({m.text.max_positions}), "
                   f"got {m.text.max_len}")
    channels = m.image.in_chans
    if mean is None or std is None or len(mean) != channels or len(std) != channels or not all(s > 0 for s in std):
        out.append(f"data.mean and data.std must hold {channels} numbers each (model.image.in_chans), std > 0; "
                   f"got {d.mean!r}, {d.std!r}")
    if m.variant in VARIANTS and m.spec.sib and m.fusion_depth < 2:
        out.append(f"variant {m.variant} (Switch-Input Block) needs model.fusion_depth ≥ 2, got {m.fusion_depth}")
    if d.source == "world" and t.batch_size > d.world.n_train * 5:
        out.append(f"train.batch_size ({t.batch_size}) exceeds the {d.world.n_train * 5} pairs of the world's "
                   "training set (data.world.n_train × 5 captions)")
    if d.source == "world" and d.world.img_size != m.image.img_size:
        out.append(f"data.world.img_size ({d.world.img_size}) must equal model.image.img_size ({m.image.img_size})")
    if m.text_dropout and m.text_encoder != "data2vec2":
        out.append(f"model.text_dropout ({m.text_dropout}) sets the Data2Vec2 text encoder's dropout; "
                   f"model.text_encoder={m.text_encoder} keeps its transformers config's")
    if d.decoder == "device" and d.in_memory:
        out.append("data.decoder=device decodes the batches a DataLoader reads from files (data.in_memory=False); "
                   "with data.in_memory=True every image is decoded once at the start and no decoder is used")
    if t.logit_scale_max < t.logit_scale_init:
        out.append(f"train.logit_scale_max ({t.logit_scale_max}) must be ≥ train.logit_scale_init "
                   f"({t.logit_scale_init})")
    return out


def check_config(cfg) -> None:
    found = problems(cfg)
    if found:
        raise ConfigError("invalid config: " + "; ".join(found))


def replace_path(cfg, dotted: str, value, _done: str = ""):
    """``dataclasses.replace`` on a nested field: ``replace_path(cfg, "train.steps", 10)``; type-checked."""
    head, _, rest = dotted.partition(".")
    names = {f.name for f in dataclasses.fields(cfg)}
    full = _done + dotted
    if head not in names:
        raise ConfigError(f"unknown config field {full!r}; {type(cfg).__name__} has: {', '.join(sorted(names))}")
    current = getattr(cfg, head)
    if rest:
        if not dataclasses.is_dataclass(current):
            raise ConfigError(f"config field {_done + head!r} has no sub-field {rest!r}")
        return dataclasses.replace(cfg, **{head: replace_path(current, rest, value, f"{_done}{head}.")})
    return dataclasses.replace(cfg, **{head: _coerce(full, current, value)})


def _coerce(name, current, value):
    if dataclasses.is_dataclass(current):
        raise ConfigError(f"config field {name!r} is a group; set one of its fields, e.g. {name}.<field>")
    if isinstance(current, bool):
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0"):
            return value.lower() in ("true", "1")
        if not isinstance(value, bool):
            raise ConfigError(f"config field {name!r} expects a bool, got {value!r}")
        return value
    if isinstance(current, tuple):
        items = (tuple(value.split(",")) if isinstance(value, str)
                 else tuple(value) if isinstance(value, (list, tuple)) else (value,))
        if current and all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in current):
            try:                                              # numeric tuples stay numeric ("0.8,1.0" -> floats)
                return tuple(float(v) for v in items)
            except (TypeError, ValueError):
                raise ConfigError(f"config field {name!r} expects numbers, got {value!r}") from None
        return items
    if isinstance(current, int) and (isinstance(value, bool) or isinstance(value, float) and not value.is_integer()):
        raise ConfigError(f"config field {name!r} expects int, got {value!r}")
    try:
        return type(current)(value)
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"config field {name!r} expects {type(current).__name__}, got {value!r}") from None
