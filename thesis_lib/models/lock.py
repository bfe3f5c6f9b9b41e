"""``CKPT/checkpoints.lock.json``: each file of a checkpoint folder (name, size, SHA-256, and the URL it came from
when ``models.download`` wrote it), recorded once the folder passed its check (``models.check``). Afterwards every
check compares the files with it: a file replaced, re-downloaded from elsewhere or damaged is a problem, named, and
so is a file the lock file has no entry for (it would otherwise pass unchecked); ``models.check --add-to-lock``
records such a file, once the check passes, and says so.

    {"files": [{"name": "nlp_base.pt", "size": 1234, "sha256": "…", "url": "https://…"}, …]}
"""
from __future__ import annotations

import json
from pathlib import Path

from ..cache import write_json_atomic
from ..errors import CheckpointError

LOCK = "checkpoints.lock.json"


def lock_path(folder: Path) -> Path:
    return Path(folder) / LOCK


def read_lock(folder: Path) -> dict[str, dict] | None:
    """The locked files by name, or None when the folder has no lock file."""
    path = lock_path(folder)
    if not path.exists():
        return None
    try:
        files = json.loads(path.read_text())["files"]
        return {f["name"]: {"size": int(f["size"]), "sha256": str(f["sha256"]), **f} for f in files}
    except (ValueError, KeyError, TypeError) as err:
        raise CheckpointError(f"{path} is not a lock file ({err!r}); delete it, and the next check writes it "
                              "anew from the files as they are") from None


def write_lock(folder: Path, rows, urls: dict[str, str] | None = None) -> Path:
    """Record every checked file (rows: ``models.check.FileCheck``; those without a size are not files)."""
    urls = urls or {}
    files = [{"name": r.name, "size": r.size, "sha256": r.sha256, **({"url": urls[r.name]} if r.name in urls else {})}
             for r in rows if r.size is not None]
    return write_json_atomic(lock_path(folder), {"files": files})


def compare(rows, locked: dict[str, dict], add: bool = False) -> list:
    """Mark every row whose size or SHA-256 differs from the lock file's as a problem, and every file the lock file
    has no entry for; with ``add``, such a file is no problem but marked ``unlocked`` and returned (the rows to add
    to the lock file)."""
    unlocked = []
    for r in rows:
        want = locked.get(r.name)
        if r.size is None or (want is not None and (r.size, r.sha256) == (want["size"], want["sha256"])):
            continue
        if want is None:
            if add:
                r.unlocked = True
                unlocked.append(r)
                continue
            absent = (f"not in {LOCK}: its size and SHA-256 were never recorded, so it cannot be compared; if it "
                      "is the file you want, record it: python -m thesis_lib.models.check CKPT --add-to-lock")
            r.problem = f"{r.problem}; {absent}" if r.problem else absent
            continue
        what = (f"size {r.size:,} bytes, locked {want['size']:,}" if r.size != want["size"] else
                f"SHA-256 {r.sha256[:12]}…, locked {want['sha256'][:12]}…")
        change = (f"changed since {LOCK}: {what}; if the new file is the one you want, delete {LOCK} and check "
                  "again (it is written anew)")
        r.problem = f"{r.problem}; {change}" if r.problem else change
    return unlocked


def add_to_lock(folder: Path, rows) -> Path:
    """The lock file with ``rows`` (files it had no entry for) added; its other entries as they were."""
    files = list((read_lock(folder) or {}).values())
    files += [{"name": r.name, "size": r.size, "sha256": r.sha256} for r in rows]
    return write_json_atomic(lock_path(folder), {"files": files})
