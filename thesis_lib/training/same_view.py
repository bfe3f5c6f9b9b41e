"""At the start of a run of several processes: every process runs the same code in the same environment and sees
the same data as rank 0. On a cluster each node may see its own copy of the clone, of the venv or of the data folder
(a node-local disk, a stale copy, another module loaded); the run would then train on unequal processes or stop
hours later. One gather of a few kB compares, cheaply, what each process sees with rank 0's; a difference stops every
rank with an error naming the rank, its host and the path. (The output folder and the teacher-target cache, which
rank 0 writes for the others to read: ``distributed.check_shared_folder``.)"""
from __future__ import annotations

import hashlib
import platform
import socket
import sys
from pathlib import Path

import torch
import torch.distributed as dist

from ..errors import DistributedError, SharedFolderError, ThesisError
from .distributed import DistInfo, collective, check_shared_folder, on_main

SAME_CODE_NEEDS = ("one clone of the repository on a file system every node mounts (or the same commit, unchanged, "
                   "on every node), every process started from it")
SAME_ENV_NEEDS = ("one environment on every node: the clone's .venv (make setup) on a file system every node mounts, "
                  "every process started by its python or torchrun")
DATA_NEEDS = {True: "THESIS_DATA (or data.root) on a file system every node mounts: the embedded world is generated "
                    "there once and read by every rank",
              False: "--data-root (data.root) on a file system every node mounts, holding the same data for every rank"}


def check_same_view(info: DistInfo, data: Path | None, generated: bool = False) -> None:
    """Require that every process runs the code rank 0 runs (the content of each of thesis_lib's files), in the same
    environment (Python, torch and thesis_lib versions), and sees the data folder ``data`` as rank 0 does (its
    entries two levels down and the files' sizes; None: none to check). A folder the run generates (``generated``:
    the embedded world) that rank 0 does not see yet must be seen by every rank in its parent, where rank 0 writes
    a file (``check_shared_folder``). Any difference raises on every rank, so that none waits for the others."""
    if info.world_size == 1:
        return
    every = [None] * info.world_size
    mine = process_view(data)
    collective(info, "the other processes to compare their code, environment and data",
                lambda: dist.all_gather_object(every, mine, group=info.group))
    error = view_difference(every, generated)
    if error is not None:
        raise error
    if data is not None and generated and every[0]["data"] is None:
        parent = Path(data).parent
        on_main(info, lambda: _make_folder(parent), "rank 0 to create the data folder")
        check_shared_folder(parent, info, "data folder", DATA_NEEDS[True])


def process_view(data: Path | None) -> dict:
    """What this process runs and sees: its host; thesis_lib's folder and a digest of each of its files; Python,
    torch and thesis_lib versions and the interpreter's prefix; the data folder's path and ``folder_listing``."""
    from ..version import __version__
    package = Path(__file__).resolve().parent.parent
    code = {p.relative_to(package).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()[:16]
            for p in sorted(package.rglob("*.py"))}
    return {"host": socket.gethostname(), "package": str(package), "code": code, "prefix": sys.prefix,
            "env": f"Python {platform.python_version()}, torch {torch.__version__}, thesis_lib {__version__}",
            "data_path": str(data), "data": None if data is None else folder_listing(Path(data))}


def folder_listing(folder: Path) -> tuple[str, int] | None:
    """A digest of the folder's entries two levels down (their names, and the files' sizes) and their number; None
    where it is not a folder. Two levels hold the data layout (coco/dataset_coco.json, imagenet/val, ...) without
    reading the images' folders."""
    if not folder.is_dir():
        return None
    entries = []
    try:
        for first in sorted(folder.iterdir()):
            entries.append(_entry(first, folder))
            if first.is_dir():
                entries += [_entry(p, folder) for p in sorted(first.iterdir())]
    except OSError as err:
        return f"unreadable ({err.strerror or err})", len(entries)
    return hashlib.sha256("\n".join(entries).encode()).hexdigest()[:16], len(entries)


def _entry(path: Path, folder: Path) -> str:
    name = path.relative_to(folder).as_posix()
    return f"{name}/" if path.is_dir() else f"{name} {path.stat().st_size}"


def view_difference(every: list[dict], generated: bool = False) -> ThesisError | None:
    """The error for the first way in which the processes' views (``process_view``, in rank order) differ from rank
    0's, or None: other code (SharedFolderError), another environment (DistributedError), another data folder
    (SharedFolderError)."""
    main, at = every[0], lambda r: f"rank {r} (on {every[r]['host']})"
    code = {r: sorted(f for f in set(v["code"]) | set(main["code"]) if v["code"].get(f) != main["code"].get(f))
            for r, v in enumerate(every)}
    if any(code.values()):
        r, *others = [r for r, files in code.items() if files]
        return SharedFolderError(
            f"{at(r)} runs other code than rank 0 (on {main['host']}): thesis_lib at {every[r]['package']} differs "
            f"from rank 0's at {main['package']} in {_some(code[r])}{_also(others, at)}. A run of several processes "
            f"needs {SAME_CODE_NEEDS}")
    differ = {key: [r for r, v in enumerate(every) if v[key] != main[key]] for key in ("env", "data")}
    if differ["env"]:
        r, *others = differ["env"]
        return DistributedError(
            f"{at(r)} runs {every[r]['env']} (interpreter at {every[r]['prefix']}), rank 0 (on {main['host']}) "
            f"{main['env']} (at {main['prefix']}){_also(others, at)}. A run of several processes needs "
            f"{SAME_ENV_NEEDS}")
    if differ["data"]:
        r, *others = differ["data"]
        return SharedFolderError(
            f"the data folder is not the same for every process: {at(r)} sees {_seen(every[r])} at "
            f"{every[r]['data_path']}, rank 0 (on {main['host']}) {_seen(main)} at {main['data_path']}"
            f"{_also(others, at)}. A run of several processes needs {DATA_NEEDS[generated]}")
    return None


def _seen(view: dict) -> str:
    return ("no folder" if view["data"] is None
            else f"{view['data'][1]} entries two levels down (digest {view['data'][0]})")


def _some(names: list[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more files" if len(names) > 3 else "")


def _also(ranks: list[int], at) -> str:
    return f"; so do{'es' if len(ranks) == 1 else ''} {', '.join(at(r) for r in ranks[:3])}" \
           f"{' …' if len(ranks) > 3 else ''}" if ranks else ""


def _make_folder(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise SharedFolderError(f"rank 0 cannot create the data folder {folder}: {err.strerror or err}") from None
