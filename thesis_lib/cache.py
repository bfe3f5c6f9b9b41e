"""Files a reader never sees half-written, and cached assets built exactly once.

* ``write_atomic(path, write)``: ``write(tmp)`` fills a temporary file beside ``path`` (``.<name>.<pid>.tmp``); it
  is flushed to disk and renamed over ``path``. A kill or a full disk leaves the previous file (or none), never a
  truncated one, and the temporary is removed on failure. ``write_text_atomic``, ``write_json_atomic`` and
  ``torch_save_atomic`` are the three uses.
* ``build_once(path, build)``: the asset at ``path`` is made by ``build()`` unless it exists, under a file lock
  (``<path>.lock``), so parallel processes build it once and the others wait for it and reuse it.
* ``fingerprint(obj)``: a short, stable hash of a JSON-able object or dataclass, naming a cache entry by its inputs.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock


def fingerprint(obj) -> str:
    blob = json.dumps(dataclasses.asdict(obj) if dataclasses.is_dataclass(obj) else obj, sort_keys=True)
    return hashlib.sha1(blob.encode()).hexdigest()[:10]


def temporary(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def write_atomic(path: str | os.PathLike, write: Callable[[Path], None]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary(path)
    try:
        write(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    return write_atomic(path, lambda tmp: tmp.write_text(text))


def write_json_atomic(path: str | os.PathLike, obj) -> Path:
    return write_text_atomic(path, json.dumps(obj, indent=1, sort_keys=False))


def torch_save_atomic(obj, path: str | os.PathLike) -> Path:
    import torch
    return write_atomic(path, lambda tmp: torch.save(obj, tmp))


def build_once(path: str | os.PathLike, build: Callable[[], None]) -> Path:
    """``path`` (a file, or a folder's completion marker such as ``DONE``) after ``build()`` made it, once."""
    path = Path(path)
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{path}.lock"):
        if not path.exists():
            build()
    return path
