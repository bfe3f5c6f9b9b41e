"""The study's runs: its parameters (one object per notebook) and the grid of (variant, seed) runs, trained in
parallel one-thread worker processes on CPU."""
from __future__ import annotations

import ast
import contextlib
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
from tqdm import tqdm

from thesis_lib.config import PRESET_SPECS, PRESETS, get_config
from thesis_lib.config_checks import location_overrides
from thesis_lib.data.lifetime import die_with_parent
from thesis_lib.data.throughput import usable_cores
from thesis_lib.errors import ConfigError, MissingRunsError
from thesis_lib.paths import figures_dir, results_dir, show_progress
from thesis_lib.training.results import RunPaths, existing_result
from thesis_lib.training.run import resolve_device, run_config, run_experiment
from thesis_lib.variants import VARIANTS


@dataclass(frozen=True)
class StudyParams:
    preset: str
    seeds: tuple
    device: str
    output_dir: str | None
    data_root: str | None
    checkpoints: str | None
    reuse: bool
    extra: tuple = ()        # further config overrides as (dotted field, value) pairs
    train: bool = True       # False: collect stored runs only (a batch job); a missing run stops (``collected``)

    @property
    def results_root(self) -> Path:
        return results_dir(self.output_dir)

    @property
    def figures(self) -> Path:
        return figures_dir(self.preset, self.output_dir, PRESET_SPECS[self.preset].committed)

    def overrides(self) -> dict:
        return {**location_overrides(self.data_root, self.checkpoints), **dict(self.extra)}


SEEDS = (0, 1, 2, 3)   # the study's paired seeds: four meet every precision target at the demo scale (the measured
                       # paired SDs, BENCHMARKS.md "Seeds × steps"); the thesis trained one (42)
NOTEBOOK_SEEDS = {"00": (0, 1, 2),       # trains nothing
                  "05": (0, 1, 2)}       # its fusion runs cost twice a baseline run; every other notebook: SEEDS
REHEARSAL_SEEDS = (0,)                   # make rehearsal: one run of each


class Parameters(NamedTuple):
    """A notebook's papermill parameters (``papermill -p NAME VALUE``, docs/commands.md), declared once: each
    notebook's parameters cell assigns every field from ``defaults(<notebook>)``, one line each."""
    preset: str                     # demo | smoke | thesis; default $THESIS_PRESET, else demo (CI: smoke)
    seeds: tuple                    # paired seeds: every variant starts from the baseline's weights
    device: str = "cpu"             # "cuda" on a GPU machine
    data_root: str | None = None    # thesis scale: the data folder (docs/full_scale.md)
    checkpoints: str | None = None  # thesis scale: the checkpoints folder (docs/full_scale.md)
    output_dir: str | None = None   # None: the repository's results/ and figures/
    reuse: bool = True              # reuse finished runs of the same config (False: retrain and replace them)
    overrides: dict | None = None   # config fields to change, e.g. {"train.steps": 600} (thesis_lib/config.py)
    train: bool = True              # False (a batch job collecting the recipe's runs): a missing run stops the
                                    # notebook before anything trains, naming the runs and the command that trains them


def seeds_of(notebook: str) -> tuple:
    """A notebook's default seeds, by its number or file name ("05", "05_modality_mechanisms")."""
    return NOTEBOOK_SEEDS.get(notebook[:2], SEEDS)


def defaults(notebook: str) -> Parameters:
    """The default parameters of a notebook (by number or file name)."""
    return Parameters(os.environ.get("THESIS_PRESET", "demo"), seeds_of(notebook), overrides={})


def study_params(preset="demo", seeds=None, device="cpu", output_dir=None, data_root=None, checkpoints=None,
                 reuse=True, need_data: bool = True, overrides: dict | None = None, train=True) -> StudyParams:
    """Validate the notebook parameters (papermill passes ``-p`` values as YAML: wrong types arrive as strings).
    ``need_data=False``: a notebook that trains nothing (00) runs at the thesis scale without data or weights."""
    if preset not in PRESETS:
        raise ConfigError(f"parameter preset must be one of {', '.join(PRESETS)}, got {preset!r}")
    seeds = SEEDS if seeds is None else seeds
    if isinstance(seeds, str):
        try:
            seeds = ast.literal_eval(seeds)
        except (ValueError, SyntaxError):
            raise ConfigError(f"parameter seeds must be a list of integers, got the string {seeds!r}; "
                              "pass e.g. -p seeds '[0, 1, 2]'") from None
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        seeds = [seeds]
    if not isinstance(seeds, (list, tuple)) or not seeds or not all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds):
        raise ConfigError(f"parameter seeds must be a non-empty list of non-negative integers, got {seeds!r}")
    for name, value in (("reuse", reuse), ("train", train)):
        if not isinstance(value, bool):
            raise ConfigError(f"parameter {name} must be True or False, got {value!r}")
    if not (train or reuse):
        raise ConfigError("parameters train=False and reuse=False contradict: retraining is training")
    resolve_device(device)                                   # DeviceError when the device does not exist
    if need_data and PRESET_SPECS[preset].real_data and not (data_root and checkpoints):
        raise ConfigError(f"preset {preset!r} needs data_root (coco/, flickr30k/, imagenet/val/) and checkpoints "
                          "(base_imagenet.pt, nlp_base.pt, beitv2_base_patch16_224_pt1k.pth, tokenizer files)")
    if not isinstance(overrides or {}, dict):
        raise ConfigError(f"parameter overrides must be a mapping of config fields, e.g. {{'train.steps': 100}}, "
                          f"got {overrides!r}")
    get_config(preset, overrides=overrides or {})           # unknown fields and wrong types fail here, early
    return StudyParams(preset, tuple(seeds), device, output_dir, data_root, checkpoints, reuse,
                       tuple(sorted((overrides or {}).items())), train)


def start(preset="demo", seeds=None, device="cpu", output_dir=None, data_root=None, checkpoints=None, reuse=True,
          overrides: dict | None = None, need_data: bool = True, train: bool = True) -> StudyParams:
    """A notebook's first step: its parameters cell checked (``study_params``) and torch's generator seeded with the
    first seed (for what the notebook itself draws; every run seeds its own)."""
    params = study_params(preset, seeds, device, output_dir, data_root, checkpoints, reuse, need_data, overrides, train)
    torch.manual_seed(params.seeds[0])
    return params


MIN_LEARNING_STEPS = 100   # shorter runs (smoke: 6 steps, the rehearsal: 1) are not expected to beat chance


def expects_learning(result: dict) -> bool:
    """Whether a run trained long enough for the precondition "it scores above chance" to apply."""
    return result["train"]["steps"] >= MIN_LEARNING_STEPS


def run_grid(params: StudyParams, variants) -> list[dict]:
    """Every (variant, seed): reuse a finished result of the same config, resume an unfinished one, train the rest
    (``params.train`` False: ``collected``)."""
    return run_or_collect(params, grid_jobs(params, variants))


def run_or_collect(params: StudyParams, jobs: list[dict]) -> list[dict]:
    """``run_many(jobs)``, or with ``params.train`` False their stored results (``collected``)."""
    return run_many(jobs) if params.train else collected(params, jobs)


def collected(params: StudyParams, jobs: list[dict]) -> list[dict]:
    """The stored result of every job, as ``run_many`` would reuse it; a job without one raises ``MissingRunsError``
    before anything is prepared, trained or written: a batch job that collects what the recipe trained (a GPU held
    for hours, docs/full_scale.md) must not start training in a notebook, one run after another."""
    results = [finished_result(job) for job in jobs]
    missing = [job for job, r in zip(jobs, results) if r is None]
    if missing:
        raise MissingRunsError(missing_runs(params, missing), missing)
    return results


def missing_runs(params: StudyParams, jobs: list[dict], table1_seeds: int | None = None) -> str:
    """What a notebook with train=False says of the runs it does not find: each one's variant, seed and result file,
    and how to train them (``how_to_train``)."""
    where = [RunPaths(results_dir(j["out_dir"]), j["preset"], j["variant"], j["seed"]).result for j in jobs]
    runs = "".join(f"\n  {j['variant']} seed {j['seed']}: {path}" for j, path in zip(jobs, where))
    return (f"train=False: {len(jobs)} run(s) this notebook reads have no result; nothing was trained:{runs}\n"
            + how_to_train(params, table1_seeds))


def how_to_train(params: StudyParams, table1_seeds: int | None = None) -> str:
    """The command that trains the missing runs: on the real data, the recipe's script of the runs it finds missing
    (docs/full_scale.md; ``table1_seeds``: notebook 02's sequential looks up to that many seeds); else the notebook
    with train=True, which trains only what it does not find, or, into the repository's results, the make target."""
    if not PRESET_SPECS[params.preset].real_data:
        make = "" if params.output_dir else f", or every notebook with `make reproduce PRESET={params.preset}`"
        return f"Train them by running the notebook with train=True (it trains only the missing runs){make}."
    seeds = f" --table1-seeds {table1_seeds}" if table1_seeds else ""
    return (f"Train them: `python -m thesis_lib.full_scale.recipe commands --layout <1gpu|8gpu|slurm>{seeds} "
            f"--missing-only --out {params.output_dir or '$OUT'} > train.bash`, then `bash train.bash` "
            "(docs/full_scale.md); then run the notebook again.")


def grid_jobs(params: StudyParams, variants) -> list[dict]:
    """``run_experiment``'s arguments for every (variant, seed) of ``run_grid`` (the recipe of docs/full_scale.md
    trains the same runs from the command line)."""
    for v in variants:
        if v not in VARIANTS:
            raise ConfigError(f"unknown variant {v!r}; choose from {', '.join(VARIANTS)}")
    return [dict(preset=params.preset, variant=v, seed=s, out_dir=params.output_dir, device=params.device, resume=True,
                 overwrite=not params.reuse, overrides=params.overrides()) for v in variants for s in params.seeds]


def cpu_workers() -> int:
    """How many runs train at once on CPU: ``THESIS_WORKERS`` when set, else one per core this process may use."""
    if os.environ.get("THESIS_WORKERS"):
        return max(1, int(os.environ["THESIS_WORKERS"]))
    return usable_cores()


def _worker_started(parent: int) -> None:
    """A grid worker's initializer: it ends as soon as the process that started it is gone, whatever ended that one
    (``data/lifetime.py``: else, blocked on its pipe, it stays forever); one thread, no progress bars of its own (the
    study's bar counts the runs); its data loaders start their processes as a normally started process's would (fork
    on Linux), not as it was started itself (spawn, which it inherits: every loader's workers would import torch and
    thesis_lib anew, which at the thesis preset on a CPU took most of a run's time)."""
    die_with_parent(parent)
    torch.set_num_threads(1)
    os.environ["THESIS_PROGRESS"] = "0"
    multiprocessing.set_start_method(None, force=True)     # the platform's default again


def run_many(jobs: list[dict]) -> list[dict]:
    """``run_experiment(**job)`` for every job, in order. A job whose finished result of the same config is on disk
    returns it here, with nothing prepared and no worker started. On CPU the others train in worker processes on one
    thread each, ``cpu_workers()`` at once: at the demo's width two one-thread runs do 1.5 × the work of one
    two-thread run (BENCHMARKS.md), and a result does not depend on how many cores the machine has; with one worker
    they train here (``_trained``); the world and the demo pretraining are prepared first, once. On a GPU the runs
    go one after another in this process."""
    if not jobs or resolve_device(jobs[0]["device"]).type != "cpu":
        return [run_experiment(**job) for job in jobs]
    from thesis_lib.training.prepare import prepare_assets
    started = time.monotonic()
    results = [finished_result(job) for job in jobs]
    todo = [i for i, r in enumerate(results) if r is None]
    configs = {repr(c): c for c in (get_config(jobs[i]["preset"], jobs[i]["variant"], 0, jobs[i].get("overrides"))
                                    for i in todo)}
    for cfg in configs.values():
        prepare_assets(cfg)
    log, workers = Log(len(jobs), started, len(todo)), max(1, min(cpu_workers(), len(todo)))
    with tqdm(total=len(jobs), desc="runs", unit="run", disable=not show_progress()) as bar:
        for r in results:
            if r is not None:
                bar.update()
                log.run_done(f"{r.get('variant')} seed {r.get('seed')}", 0.0, workers)
        for i, (r, seconds) in _trained(jobs, todo, workers):   # a failed run stops the study with its error
            results[i] = r
            bar.set_postfix_str(f"{r.get('variant')} seed {r.get('seed')}")
            bar.update()
            log.run_done(f"{r.get('variant')} seed {r.get('seed')}", seconds, workers)
    return results


def _trained(jobs: list[dict], todo: list[int], workers: int):
    """(index, (result, seconds)) of every job in ``todo`` as it finishes: in ``workers`` spawned worker processes,
    or, with one worker (``THESIS_WORKERS=1``), here, one after another, each run's random streams forked so that
    this process's stay as they were (as a worker's would leave them): the same result bits either way."""
    if workers == 1:
        for i in todo:
            with torch.random.fork_rng(devices=[]), _numpy_and_python_streams_kept():
                yield i, _timed_run(jobs[i])
        return
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_worker_started, initargs=(os.getpid(),)) as pool:
        futures = {pool.submit(_timed_run, jobs[i]): i for i in todo}
        for done in as_completed(futures):
            yield futures[done], done.result()


@contextlib.contextmanager
def _numpy_and_python_streams_kept():
    """A run in this process as in a worker: numpy's and Python's random streams restored after it, and no progress
    bar of its own (the grid's counts the runs)."""
    import random
    from unittest import mock
    state = np.random.get_state(), random.getstate()
    try:
        with mock.patch.dict(os.environ, {"THESIS_PROGRESS": "0"}):
            yield
    finally:
        np.random.set_state(state[0])
        random.setstate(state[1])


def finished_result(job: dict) -> dict | None:
    """The stored result ``run_experiment(**job)`` would return without training (same config, not ``overwrite``), else
    None; a stored result of another config raises ``ResultConflictError`` here, as the run would."""
    if job.get("overwrite"):
        return None
    cfg = run_config(*(job.get(k) for k in ("preset", "variant", "seed", "overrides", "config")))
    paths = RunPaths(results_dir(job.get("out_dir")), cfg.preset, cfg.model.variant, cfg.seed)
    return existing_result(paths, asdict(cfg), overwrite=False)


def _timed_run(job: dict) -> tuple[dict, float]:
    started = time.monotonic()
    return run_experiment(**job), time.monotonic() - started


REUSED_S = 5.0     # a run that returns faster than this found its result on disk


class Log:
    """Without progress bars (``THESIS_PROGRESS=0``: make demo, make reproduce), one plain line per finished run: how
    many of how many, time elapsed since the grid started (asset preparation included) and an estimate of what is
    left. The lines go to the terminal, never into a notebook's outputs (``Log.terminal``)."""

    def __init__(self, total: int, started: float, to_train: int | None = None):
        self.total, self.done, self.started, self.trained = total, 0, started, []
        self.say(f"runs: 0/{total}, " + ("all reused (nothing to prepare)" if to_train == 0 else "assets ready"))

    def run_done(self, what: str, seconds: float, workers: int = 1) -> None:
        """``seconds``: how long the run took; one of a few seconds was a finished result reused, and does not
        count towards the estimate (the mean trained run × the runs left ÷ the runs at once)."""
        self.done += 1
        if seconds > REUSED_S:
            self.trained.append(seconds)
        per_run = sum(self.trained) / len(self.trained) if self.trained else 0.0
        left = per_run * (self.total - self.done) / workers
        self.say(f"runs: {self.done}/{self.total} ({what} {'done' if seconds > REUSED_S else 'reused'}), "
                 f"≈ {_minutes(left)} left")

    def say(self, line: str) -> None:
        if not show_progress():
            self.terminal(f"[{_minutes(time.monotonic() - self.started)}] {line}")

    @staticmethod
    def terminal(line: str) -> None:
        """One line on the process's real stderr, so that it reaches the terminal but not a notebook. In a Jupyter
        kernel (papermill, JupyterLab) ``sys.__stderr__`` is no way out: ipykernel (≥ 6) redirects file descriptor 2
        into a pipe whose every byte it copies both into the executing cell's outputs and to the kernel's original
        stderr, the terminal papermill runs in. ``sys.stderr.fileno()`` is, there, a copy of that original descriptor
        (``OutStream.fileno``); elsewhere it is descriptor 2 itself. A stream without a descriptor (pytest's
        ``capsys``, an ipykernel that captures nothing) falls back to ``sys.__stderr__``."""
        try:
            fd = sys.stderr.fileno()
        except (AttributeError, OSError, ValueError):       # io.UnsupportedOperation is both OSError and ValueError
            if sys.__stderr__ is not None:
                sys.__stderr__.write(line + "\n")
                sys.__stderr__.flush()
        else:
            sys.stderr.flush()
            os.write(fd, (line + "\n").encode("utf-8", "replace"))


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def run_random_init(params: StudyParams) -> list[dict]:
    """The baseline on the same budget from randomly initialised encoders; the teacher stays the pretrained one.
    Stored apart, under ``results/_ablations/random-init/``."""
    return run_or_collect(params, ablation_jobs(params, "random-init", random_init_overrides(params)))


def random_init_overrides(params: StudyParams) -> dict:
    """Random encoders, the pretrained teacher kept (named by its file, or the demo's)."""
    from thesis_lib.models.sources import part_source
    cfg = get_config(params.preset, overrides=params.overrides())
    teacher = "demo" if cfg.weights.source == "demo" and not cfg.weights.teacher else part_source(cfg, "teacher")
    return {"weights.source": "random", "weights.teacher": teacher}


THESIS_REGULARISATION = {"model.text_dropout": 0.1, "train.decay_rule": "thesis"}
"""What the thesis code trains with and this code does not (docs/sources.md §9): dropout 0.1 in the text path, weight
decay on the type vectors, text positions and image CLS."""


def run_thesis_regularisation(params: StudyParams) -> list[dict]:
    """The baseline with the thesis's regularisation (``THESIS_REGULARISATION``), paired by seed with ours: the
    measured cost of a deliberate difference. Stored under ``results/_ablations/thesis-regularisation/``."""
    return run_or_collect(params, ablation_jobs(params, "thesis-regularisation", THESIS_REGULARISATION))


ABLATIONS = ("random-init", "thesis-regularisation")   # results/_ablations/<name>/results/<preset>/


def ablation_dir(params: StudyParams, name: str) -> Path:
    """The output folder of an ablation's runs (their results under ``results_dir(<it>)``, as any run's)."""
    return params.results_root / "_ablations" / name


def ablation_jobs(params: StudyParams, name: str, overrides: dict) -> list[dict]:
    """``run_experiment``'s arguments for an ablation: the baseline over the study's seeds with ``overrides``, stored
    apart (another config of the same variant)."""
    out = ablation_dir(params, name)
    return [dict(preset=params.preset, variant="baseline", seed=s, out_dir=out, device=params.device,
                 resume=True, overrides={**params.overrides(), **overrides}) for s in params.seeds]
