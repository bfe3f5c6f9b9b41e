"""Preparing a run's assets before training: the embedded world, its tokenizer and the demo pretraining.

Each is cached on disk under a fingerprint of what it depends on, so this is instant after the first time. The study
calls it once in its own process before it starts parallel runs, so that no two workers build the same asset.
"""
from __future__ import annotations

from ..config import ExperimentConfig


def prepare_assets(cfg: ExperimentConfig) -> None:
    from ..data.roots import data_root
    from ..models.sources import part_source
    from .run import load_tokenizer
    root = data_root(cfg)
    load_tokenizer(cfg, root)
    for part in ("image", "text", "teacher"):
        part_source(cfg, part)         # a "demo" part pretrains on first use; a file or "" is only named
