"""A run's config as stored (``dataclasses.asdict`` in a result file or checkpoint): read back into an
``ExperimentConfig`` through the same checks as any override, and two stored configs compared field by field."""
from __future__ import annotations

import dataclasses

from .config import ExperimentConfig, get_config


def config_diff(a: dict, b: dict, prefix: str = "") -> list[str]:
    """Human-readable differences between two resolved configs (``asdict`` form)."""
    out = []
    for k in sorted(set(a) | set(b)):
        va, vb = a.get(k), b.get(k)
        if isinstance(va, dict) and isinstance(vb, dict):
            out += config_diff(va, vb, f"{prefix}{k}.")
        elif (list(va) if isinstance(va, (list, tuple)) else va) != (list(vb) if isinstance(vb, (list, tuple)) else vb):
            out.append(f"{prefix}{k}: {va!r} -> {vb!r}")
    return out



def config_of(stored: dict) -> ExperimentConfig:
    """A run's config from its stored form (``asdict``: a checkpoint's or a result's ``config``): its preset, variant
    and seed, with every field that differs from them as an override (checked as any override is)."""
    base = dataclasses.asdict(get_config(stored["preset"], stored["model"]["variant"], stored["seed"]))

    def changed(a: dict, b: dict, prefix: str = ""):
        for k, vb in b.items():
            if isinstance(vb, dict):
                yield from changed(a.get(k, {}), vb, f"{prefix}{k}.")
            elif config_diff({k: a.get(k)}, {k: vb}):
                yield f"{prefix}{k}", vb
    return get_config(stored["preset"], stored["model"]["variant"], stored["seed"], dict(changed(base, stored)))
