"""Preparing a run's assets, the one step that generates data or trains before a run: the embedded world, the demo
tokenizer and the demo's pretrained stand-ins (image encoder, text encoder, teacher). Each is cached on disk under a
fingerprint of what it depends on, so this is instant after the first time; loading (``build_model``, the data
loaders) only reads these files and names this step when one is missing.

    python -m thesis_lib.training.prepare --preset demo [--set KEY=VALUE ...]

``run_experiment`` calls ``prepare_assets`` first; the study calls it once in its own process before it starts
parallel runs, so that no two workers build the same asset.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..config import PRESETS, ExperimentConfig, get_config
from ..config_checks import parse_sets
from ..data.roots import data_root
from ..data.tokenizer import prepare_demo_tokenizer, uses_demo_tokenizer
from ..data.world_files import ensure_world
from ..errors import ThesisError
from ..numerics import one_thread

PARTS = ("image", "text", "teacher")


def prepare_world(cfg: ExperimentConfig) -> Path:
    """The data root; the embedded world is generated here unless it exists (real data is only checked)."""
    if cfg.data.source == "world":
        ensure_world(cfg.data.world, cfg.data.root or None)
    return data_root(cfg)


def prepare_assets(cfg: ExperimentConfig, pretrained: bool = True) -> Path:
    """World, tokenizer and (``pretrained``) the demo parts the config asks for; returns the data root. Computed on
    one thread, so that the files are the same bits whatever the machine's core count (thesis_lib.numerics)."""
    with one_thread():
        return _prepare(cfg, pretrained)


def _prepare(cfg: ExperimentConfig, pretrained: bool) -> Path:
    root = prepare_world(cfg)
    if uses_demo_tokenizer(cfg):
        prepare_demo_tokenizer(root, cfg.model.text)
    w = cfg.weights
    if pretrained and any(getattr(w, part) == "demo" or (w.source == "demo" and not getattr(w, part))
                          for part in PARTS):
        from .pretrain import demo_weights
        demo_weights(cfg)
    return root


def ship_demo_weights(cfg: ExperimentConfig) -> Path:
    """Pretrain the preset's stand-ins from scratch (whatever is cached) into the package's ``assets/``, replacing the
    ones shipped before: ``make pretrained``, only on purpose, like a golden file."""
    import shutil
    import tempfile

    from ..models.sources import shipped_folder
    from .pretrain import build_demo_weights
    target = shipped_folder(cfg)
    with one_thread():
        _prepare(cfg, pretrained=False)                           # the world and tokenizer it trains on
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
            build_demo_weights(cfg, Path(tmp) / "parts")
            for old in target.parent.glob(f"pretrained-{cfg.preset}-*"):
                shutil.rmtree(old)
            (Path(tmp) / "parts").rename(target)
    return target


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m thesis_lib.training.prepare", description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="demo", help=f"one of {', '.join(PRESETS)}")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a config field")
    p.add_argument("--ship", action="store_true", help="rebuild the pretrained stand-ins the package ships (make "
                   "pretrained): from scratch, into thesis_lib/assets/")
    args = p.parse_args(argv)
    try:
        overrides = parse_sets(args.set)
        cfg = get_config(args.preset, overrides=overrides)
        if args.ship:
            print(f"shipped: {ship_demo_weights(cfg)}")
            return 0
        root = prepare_assets(cfg)
    except ThesisError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"prepared: {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
