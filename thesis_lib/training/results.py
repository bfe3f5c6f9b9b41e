"""Result files: one JSON per run at ``results/<preset>/<variant>/seed<N>.json`` (with the resolved config, the
metrics, the training time and, for ``tte_after_ls``, the LayerScale statistics), beside a run folder
``seed<N>/`` holding ``metrics.jsonl`` (the training curve), ``layerscale.npy`` (the final γ) and the resumable
``checkpoint.pt``. Every file is written to a temporary name and renamed, so a killed run never leaves a torn file;
a lock file keeps two processes from training the same run at once.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePath

from filelock import FileLock

from ..cache import write_text_atomic
from ..config import WANTED, field_metadata, fields_with
from ..stored_config import config_diff
from ..errors import OutputDirError, ResultConflictError
from ..metrics import HEADLINE

# The fields' roles are declared on the fields (config.knob): how a run is executed or logged, not what it computes;
# where the data and the checkpoints lie on this machine (the same files in another folder give the same run); a
# part's own source (a hub id or "demo" counts as written, a file or folder by its name, not where it lies); the
# training mixture (its sets' names and ``@N``, not the folders their files were staged to).
OPERATIONAL, PATHS, SOURCES, MIXTURES = (fields_with(role=r) for r in ("operational", "path", "source", "mixture"))


@dataclass(frozen=True)
class RunPaths:
    root: Path
    preset: str
    variant: str
    seed: int

    @property
    def result(self) -> Path:
        return self.root / self.preset / self.variant / f"seed{self.seed}.json"

    @property
    def dir(self) -> Path:
        return self.root / self.preset / self.variant / f"seed{self.seed}"

    @property
    def checkpoint(self) -> Path:
        return self.dir / "checkpoint.pt"

    def snapshot(self, step: int) -> Path:
        """A checkpoint kept at ``step`` (``train.keep_every``)."""
        return self.dir / f"checkpoint-step{step}.pt"

    @property
    def metrics(self) -> Path:
        return self.dir / "metrics.jsonl"

    @property
    def layerscale(self) -> Path:
        return self.dir / "layerscale.npy"

    def lock(self, timeout: float = -1) -> FileLock:
        return FileLock(str(self.result.with_suffix(".lock")), timeout=timeout)

    @classmethod
    def results(cls, root, preset: str) -> list[Path]:
        """Every result file of a preset under ``root`` (any variant, any seed), sorted: ``result`` left open."""
        root = Path(root)
        return sorted(root.glob(str(cls(root, preset, "*", "*").result.relative_to(root))))


# Fields added after results were stored (config.knob's ``absent``): a stored config without one is compared as if
# it held the wanted value (WANTED: fields that change nothing for the runs stored before them, notebook 05's), or
# the value every run had before.
ADDED = {name: meta["absent"] for name, meta in field_metadata().items() if "absent" in meta}


def _with_added_fields(stored: dict, wanted: dict) -> dict:
    stored = json.loads(json.dumps(stored))
    for key, absent in ADDED.items():
        *groups, name = key.split(".")
        want = wanted
        for g in groups:
            want = want.get(g, {})
        if absent == WANTED and name not in want:
            continue
        have = stored
        for g in groups:
            have = have.setdefault(g, {})
        have.setdefault(name, want[name] if absent == WANTED else absent)
    return stored


def differences(stored: dict, wanted: dict, stored_world: int | None = None, world_size: int = 1) -> list[str]:
    """Config differences that matter for a result (operational fields ignored), and a different number of
    processes (the global batch is ``train.batch_size`` × processes; ``stored_world`` None = 1, older files)."""
    diffs = [d for d in config_diff(_with_added_fields(stored, wanted), wanted)
             if not d.split(":")[0].startswith(OPERATIONAL)]
    if (stored_world or 1) != world_size:
        diffs.append(f"processes: {stored_world or 1} -> {world_size}")
    return diffs


def _by_name(value: str) -> str:
    """A source as its name: a hub id or a file or folder by its last component (``hf:``/``timm:`` kept)."""
    prefix = next((p for p in ("hf:", "timm:") if value.startswith(p)), "")
    return prefix + os.path.basename(value[len(prefix):].rstrip("/"))


def mixture_entry(entry: str) -> str:
    """A training set as what it holds, not where its files lie: ``wds:<list or pattern>@N`` as ``wds:<the shards'
    folder name>@N`` (``wds:/local/scratch/cc3m/shards.txt@1516133`` and ``wds:/data/cc3m/{0..9}.tar@1516133`` are
    ``wds:cc3m@1516133``: a staged copy is the same set), ``hf:<folder>`` by its name, a named set (``coco``) as is."""
    entry = entry.strip()
    if not entry.startswith("wds:"):
        return _by_name(entry) if entry.startswith("hf:") else entry
    spec, at, limit = entry[4:].rpartition("@") if re.search(r"@\d+$", entry) else (entry[4:], "", "")
    return f"wds:{PurePath(spec).parent.name}{at}{limit}"


def _identity(config: dict, world_size: int) -> dict:
    """A config as a run's identity: paths dropped, sources by name, the training mixture by its sets' names and
    ``@N`` (``mixture_entry``), the batch as the global batch (``train.batch_size`` × processes: one process of 512
    pairs or two of 256 train the same model)."""
    out = json.loads(json.dumps(config))
    for key in PATHS + SOURCES + MIXTURES:
        section, name = key.split(".")
        value = out.get(section, {}).get(name)
        if key in MIXTURES and isinstance(value, (list, tuple)):
            out[section][name] = [mixture_entry(str(v)) for v in value]
        elif isinstance(value, str):
            out[section][name] = "" if key in PATHS else _by_name(value)
    if "batch_size" in out.get("train", {}):
        out["train"]["batch_size"] *= world_size
    return out


def identity_differences(stored: dict, wanted: dict, stored_world: int | None = None, world_size: int = 1) -> list[str]:
    """What makes a stored result another run than the one wanted: the config differences that change what is
    computed (``differences``), with paths and the split of the global batch over processes left out."""
    diffs = differences(_identity(stored, stored_world or 1), _identity(wanted, world_size))
    return [d.replace("train.batch_size", "global batch (train.batch_size × processes)", 1) for d in diffs]


def resume_differences(stored: dict, wanted: dict, stored_world: int | None = None, world_size: int = 1) -> list[str]:
    """What keeps a checkpoint from being continued by this run: the ``differences`` of the two runs' identities
    (``_identity``: a checkpoint continues with its data, checkpoints or mixture staged to another folder), the
    batch compared as the global batch (``train.batch_size`` × processes). How the global batch is split over
    processes is none: a sample's pair and views depend on its place in the global batch (data/train_pairs.py), the
    learning rate on the global batch, and the contrastive loss is gathered over every process. Another global batch
    says which setting keeps it."""
    stored_world = stored_world or 1
    diffs = differences(_identity(stored, stored_world), _identity(wanted, world_size))
    out = []
    for d in diffs:
        if d.startswith("train.batch_size:"):
            total = stored.get("train", {}).get("batch_size", 0) * stored_world
            keep = (f"--set train.batch_size={total // world_size} on {world_size} process"
                    f"{'es' if world_size > 1 else ''}" if total % world_size == 0 else
                    f"a number of processes that divides {total}, with train.batch_size = {total} / processes")
            d = d.replace("train.batch_size", "global batch (train.batch_size × processes)", 1) + \
                f" (to continue this checkpoint keep its global batch: {keep})"
        out.append(d)
    return out


RESULT_FIELDS = ("preset", "variant", "seed", "metrics", "config", "train")


def read_result(path: Path) -> dict:
    """A stored result; a file that is not one (corrupt, not UTF-8, not an object, a field or one of the metrics the
    claims read missing: ``metrics.HEADLINE``) is a ResultConflictError that names it."""
    try:
        result = json.loads(Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ResultConflictError(f"result file {path} is corrupt ({getattr(err, 'msg', err)}); delete it to "
                                  "recompute the run") from None
    missing = [k for k in RESULT_FIELDS if k not in result] if isinstance(result, dict) else list(RESULT_FIELDS)
    if not missing and not all(k in result["metrics"] for k in HEADLINE):
        missing = ["metrics." + " / ".join(HEADLINE)]
    if missing:
        raise ResultConflictError(f"result file {path} is not a result of thesis_lib (missing: {', '.join(missing)}); "
                                  "delete it to recompute the run")
    return result


def existing_result(paths: RunPaths, config: dict, overwrite: bool, world_size: int = 1) -> dict | None:
    """The stored result of this run if it is the same run (``identity_differences``: a result trained by torchrun
    is reused by a one-process notebook with the same global batch, data in another folder is the same data); None
    if there is none (or ``overwrite``); a result of another run raises, so nothing is silently replaced."""
    if not paths.result.exists() or overwrite:
        return None
    stored = read_result(paths.result)
    diffs = identity_differences(stored.get("config", {}), config, stored.get("train", {}).get("world_size"),
                                 world_size)
    if diffs:
        raise ResultConflictError(f"{paths.result} holds a result of another config ({'; '.join(diffs[:4])}); "
                                  "pass overwrite=True (--overwrite) to replace it, or another output folder")
    return stored


def check_writable(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".write-test-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as err:
        raise OutputDirError(f"cannot write to output folder {folder}: {err.strerror or err}; "
                             "choose another --out / output_dir") from None


def load_results(results_root: Path, preset: str) -> list[dict]:
    """Every finished result of a preset (any variant, seed), sorted by variant and seed."""
    return [read_result(f) for f in RunPaths.results(results_root, preset)]


def append_jsonl(path: Path, row: dict) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")
        f.flush()
        os.fsync(f.fileno())


def read_jsonl(path: Path) -> list[dict]:
    if not Path(path).exists():
        return []
    rows = []
    for line in Path(path).read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:  # a line torn by a kill; the resumed run rewrites it
            break
    return rows


def trim_curve(paths: RunPaths, start_step: int) -> None:
    """Before a run continues from its checkpoint at ``start_step``: drop the training curve's rows after it (a
    killed run logged them, the resumed one logs them again). A row is logged at every checkpoint, so the curve must
    reach the checkpoint's step, in order; one that does not was cut or edited, and continuing would lose part of it:
    a ResultConflictError. A fresh run (``start_step`` 0) starts an empty curve."""
    rows = [r for r in read_jsonl(paths.metrics) if r["step"] <= start_step]
    steps = [0] + [r["step"] for r in rows]
    in_order = all(b > a for a, b in zip(steps, steps[1:]))
    if start_step and paths.metrics.exists() and (steps[-1] != start_step or not in_order):
        raise ResultConflictError(
            f"{paths.metrics} does not reach the checkpoint's step {start_step} (it holds {len(rows)} rows, the "
            f"last at step {steps[-1]}): the training curve was cut or edited, and resuming would lose part of "
            f"it. Delete {paths.dir} to train this run again, or restore the file")
    write_text_atomic(paths.metrics, "".join(json.dumps(r) + "\n" for r in rows))
