"""One place for paths. Nothing in thesis_lib uses an absolute path of its own.

ROOT is the repository (the folder holding ``pyproject.toml`` above this package) or, for an installed copy,
the current directory; ``THESIS_ROOT``, ``THESIS_DATA``, ``THESIS_RESULTS`` and ``THESIS_FIGURES`` override.
"""
from __future__ import annotations

import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
ASSETS = PACKAGE / "assets"


def _root() -> Path:
    if "THESIS_ROOT" in os.environ:
        return Path(os.environ["THESIS_ROOT"]).resolve()
    if (PACKAGE.parent / "pyproject.toml").exists():
        return PACKAGE.parent
    return Path.cwd()


ROOT = _root()


def data_dir() -> Path:
    """Generated data and caches (the embedded world, demo pretraining, teacher targets)."""
    return Path(os.environ.get("THESIS_DATA", ROOT / "data"))


def results_dir(output_dir: str | os.PathLike | None = None) -> Path:
    if output_dir:
        return Path(output_dir) / "results"
    return Path(os.environ.get("THESIS_RESULTS", ROOT / "results"))


def figures_dir(preset: str, output_dir: str | os.PathLike | None = None, committed: bool = False) -> Path:
    """``figures/`` holds the committed preset's figures (``config.Preset.committed``); another preset writes to
    ``figures/<preset>/``."""
    if output_dir:
        base = Path(output_dir) / "figures"
    else:
        base = Path(os.environ.get("THESIS_FIGURES", ROOT / "figures"))
    return base if committed else base / preset


def show_progress() -> bool:
    """Progress bars on, unless ``THESIS_PROGRESS=0`` (tests and CI set it)."""
    return os.environ.get("THESIS_PROGRESS", "1") != "0"
