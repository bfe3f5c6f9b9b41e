"""Train and evaluate one run: the one entry point of the CLI, the notebooks and the tests.

    python -m thesis_lib.training.run --preset demo --variant tte_after_ls --seed 0 --out . [--resume]
    torchrun --nproc_per_node 2 -m thesis_lib.training.run --preset thesis --variant baseline --device cuda \\
        --data-root /data --checkpoints /ckpt                 # DDP; on CPU the same code runs with gloo

``run_experiment(...)`` returns the result dict that is also written to ``results/<preset>/<variant>/seed<N>.json``.
A finished run with the same config is reused; an unfinished one continues with ``resume=True``.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import os
import signal
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from filelock import Timeout

from ..analysis import PROBE_ITEMS, modality_probe, tte_ablation_metrics, tte_contribution, tte_monitor
from ..cache import write_json_atomic
from ..config import PRESETS, ExperimentConfig, get_config
from ..config_checks import location_overrides, parse_sets
from ..data.eval_sets import build_eval_sets, image_batches
from ..data.tokenizer import load_tokenizer, trim
from ..data.train_pairs import TrainPairs
from ..errors import CliErrors, ConfigError, DeviceError, ResultConflictError, ThesisError
from ..evaluation import EvalContext, chance_levels, evaluate
from ..models.emkum import build_model
from ..models.sources import load_teacher
from ..numerics import machine, one_thread
from ..paths import results_dir
from ..variants import VARIANTS
from ..version import __version__
from .distributed import (barrier, check_in_sync, check_shared_folder, init_distributed, on_every_rank, on_main,
                          rank_device, sum_over_ranks)
from .engine import (
    STOP,
    StopRequested,
    TrainState,
    autocast,
    budget_summed_lr,
    grad_scaler,
    layerscale_stats,
    load_checkpoint,
    make_optimizer,
    request_stop,
    train_loop,
)
from ..metrics import COCO_MEAN, FLICKR_MEAN, IMAGENET_TOP1, IMAGENET_TOP5
from .prepare import prepare_assets
from .teacher_targets import teacher_targets
from .results import RunPaths, check_writable, existing_result, read_result
from .same_view import check_same_view


def seed_everything(seed: int) -> None:
    import random
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise DeviceError(f"device {name!r} was requested but no CUDA GPU is visible (torch {torch.__version__}); "
                          "use device='cpu' or 'auto'")
    try:
        return torch.device(name)
    except RuntimeError:
        raise DeviceError(f"unknown device {name!r}; use cpu, cuda, cuda:N or auto") from None


def run_experiment(preset: str | None = None, variant: str | None = None, seed: int | None = None, out_dir=None,
                   device: str = "cpu", resume=False, overwrite: bool = False, overrides: dict | None = None,
                   config: ExperimentConfig | None = None, dist_timeout: str | float | None = None) -> dict:
    """Train one run and evaluate it; returns the result (also written to disk). The run is named either by
    ``preset`` (default demo), ``variant`` (baseline), ``seed`` (0) and ``overrides``, or by a resolved ``config``
    alone (giving both is an error, not a silent choice). ``out_dir``, ``device``, ``resume`` and ``overwrite`` say
    where and how it runs; ``dist_timeout``, how long a process of several waits for another (seconds or e.g. "6h";
    default THESIS_DIST_TIMEOUT, else 6 h: training.distributed). On CPU the run computes on one thread, so that
    its numbers do not depend on the machine's core count (thesis_lib.numerics).

    It reads top to bottom: config, data, model, loop (``train_loop``, where the loss is), evaluation."""
    cfg = run_config(preset, variant, seed, overrides, config)                             # config
    dev = resolve_device(device)
    info = init_distributed(dev, dist_timeout)
    dev = rank_device(dev, info)
    paths = RunPaths(results_dir(out_dir), cfg.preset, cfg.model.variant, cfg.seed)
    with run_folder(paths, cfg, info, overwrite) as found:
        if found is not None:                                                               # finished before
            return found if info.is_main else {}
        with one_thread() if dev.type == "cpu" else contextlib.nullcontext():
            data = RunData.load(cfg, info)                                                  # data
            raw = build_model(cfg, pretrained=cfg.weights.source != "random").to(dev)      # model
            teacher = load_teacher(cfg).to(dev)
            state, ckpt = training_state(cfg, raw, teacher, dev, info, paths, resume)
            targets = teacher_targets(cfg, teacher, data.pairs, dev, info)
            data_rate = data.pairs.data_path_rate(targets is not None) if info.is_main else None   # files: can
            if data_rate:                                                                   # the data path keep up?
                print(data_rate.message(), file=sys.stderr)
            barrier(info, "rank 0 to prepare the evaluation sets and measure the data path")   # before DDP's
            state.model = wrapped(raw, cfg, dev, info)                                             # collectives
            start = resumed(state, ckpt, cfg, info)
            probe = probe_inputs(cfg, data.eval_sets, data.tokenizer, dev) if info.is_main else None
            monitor = tte_monitor(raw, *probe) if probe else None      # ‖γ ⊙ t‖ / ‖H‖ along training (notebook 04)
            stats = train_loop(state, data.pairs, targets, cfg, paths, start, data_rate, monitor)   # loop
            return finish(cfg, raw, data, dev, info, paths, stats, probe)                   # evaluation


LOCK_WAIT_S = 10        # how long rank 0 of several processes waits for the run's lock file


@contextlib.contextmanager
def run_folder(paths: RunPaths, cfg: ExperimentConfig, info, overwrite: bool):
    """The run's folder, checked writable and seen alike by every process, held by rank 0's file lock while the run
    trains; yields the finished result of the same run when one exists (decided on rank 0: every process reuses it,
    or none does), else None. Rank 0 of several waits ``LOCK_WAIT_S`` for it, not as long as one process (the others
    wait in a collective): then another job of the run is an error, and two never write one checkpoint."""
    on_main(info, lambda: check_writable(paths.dir), "rank 0 to create the output folder")
    check_shared_folder(paths.dir, info)        # several processes: every one must see what rank 0 writes
    check_same_view(info, *data_folder(cfg))     # ... and run the same code and environment on the same data
    lock = paths.lock(timeout=-1 if info.world_size == 1 else LOCK_WAIT_S)
    on_main(info, lambda: take(lock), "rank 0 to take the run's lock file")
    try:
        yield on_main(info, lambda: existing_result(paths, asdict(cfg), overwrite, info.world_size),
                      "rank 0 to look for a finished result")
    finally:
        if info.is_main:
            lock.release()


def take(lock) -> None:
    """Acquire ``lock`` (a run's ``RunPaths.lock``); held by another process past its timeout: a ResultConflictError."""
    try:
        lock.acquire()
    except Timeout:
        raise ResultConflictError(f"another process is training this run (its lock file {lock.lock_file} is held); "
                                  "wait for it, or stop it first") from None


def data_folder(cfg: ExperimentConfig) -> tuple[Path | None, bool]:
    """The data folder every process of a run must see alike, and whether the run generates it: the embedded world's
    folder, or the real data root (None when not given: data_root says so on every rank)."""
    if cfg.data.source == "world":
        from ..data.world_files import world_folder
        return world_folder(cfg.data.world, cfg.data.root or None), True
    return (Path(cfg.data.root) if cfg.data.root else None), False


def run_config(preset=None, variant=None, seed=None, overrides=None, config=None) -> ExperimentConfig:
    """The config a run is named by: ``config`` alone, or preset (demo), variant (baseline), seed (0), overrides."""
    named = {k: v for k, v in (("preset", preset), ("variant", variant), ("seed", seed), ("overrides", overrides))
             if v is not None}
    if config is None:
        return get_config(preset or "demo", variant or "baseline", 0 if seed is None else seed, overrides)
    if named:
        raise ConfigError(f"run_experiment got config= and {', '.join(named)}: a config already names the run "
                          "(apply overrides with get_config or config.replace_path)")
    return config


@dataclasses.dataclass
class RunData:
    """What a run reads: its prepared assets' folder, the tokenizer, the evaluation sets (rank 0) and the training
    pairs of this process."""
    root: Path
    tokenizer: object
    eval_sets: tuple | None
    pairs: TrainPairs

    @classmethod
    def load(cls, cfg: ExperimentConfig, info) -> "RunData":
        root = prepare_assets(cfg)          # world, tokenizer, demo pretraining: built once, cached on disk
        seed_everything(cfg.seed)
        tokenizer = load_tokenizer(cfg, root)
        eval_sets = build_eval_sets(cfg, tokenizer, root) if info.is_main else None   # fail early on bad eval data
        return cls(root, tokenizer, eval_sets, TrainPairs.of(cfg, tokenizer, root, info.rank, info.world_size))


def training_state(cfg: ExperimentConfig, raw, teacher, device, info, paths: RunPaths, resume) -> tuple:
    """What the loop trains with (the optimiser on the model as defined; ``wrapped`` sets the model as stepped) and
    the checkpoint to continue from (rank 0 decides; ``resumed`` loads it)."""
    optimiser = make_optimizer(raw, cfg.train, info.world_size, budget_summed_lr(cfg.model.spec.tte_budget))
    state = TrainState(raw, raw, teacher, *optimiser, info, device, grad_scaler(cfg.train.precision, device))
    return state, on_main(info, lambda: _checkpoint_to_resume(resume, paths), "rank 0 to look for a checkpoint")


def wrapped(raw, cfg: ExperimentConfig, device, info):
    """The model as the loop steps it: DDP over several processes, compiled where the config says."""
    model = raw
    if info.world_size > 1:
        model = torch.nn.parallel.DistributedDataParallel(raw, device_ids=[device.index] if device.type == "cuda"
                                                          else None)
    return torch.compile(model) if cfg.train.compile else model


def resumed(state: TrainState, ckpt: Path | None, cfg: ExperimentConfig, info) -> int:
    """The step to start from: 0, or the checkpoint's (every process continues from rank 0's, or none does)."""
    if ckpt is None:
        return 0
    return on_every_rank(info, lambda: load_checkpoint(ckpt, state, asdict(cfg)), f"to load {ckpt}")


def finish(cfg: ExperimentConfig, raw, data: RunData, device, info, paths: RunPaths, stats: dict, probe) -> dict:
    """After the loop: the data path's counts, the processes checked in sync, and on rank 0 the evaluation, written
    as the run's result."""
    pairs = data.pairs
    if pairs.shard_reports:
        stats["shards"] = {name: dataclasses.asdict(r) for name, r in pairs.shard_reports.items()}
    if pairs.images is None:                    # files: samples whose image did not decode (since start or resume),
        stats["replaced_samples"] = sum_over_ranks(info, pairs.replaced_samples, "replaced samples")   # all ranks
    check_in_sync(raw, info)
    if not info.is_main:
        barrier(info, "rank 0 to evaluate the run")
        return {}
    result = _result(cfg, raw, data.tokenizer, data.eval_sets, device, paths, stats, probe)
    write_json_atomic(paths.result, result)
    barrier(info, "rank 0 to evaluate the run")
    return read_result(paths.result)           # the same form a later reuse returns (lists, not tuples)


def _checkpoint_to_resume(resume, paths: RunPaths) -> Path | None:
    """The checkpoint to continue from: the given file (which must exist), the run's own if ``resume`` is True and
    it has one, else None."""
    ckpt = Path(resume) if isinstance(resume, (str, Path)) else paths.checkpoint
    if resume and ckpt.exists():
        return ckpt
    if resume and isinstance(resume, (str, Path)):
        raise ThesisError(f"checkpoint to resume from not found: {ckpt}")
    return None


def probe_inputs(cfg, eval_sets, tokenizer, device) -> tuple[torch.Tensor, torch.Tensor]:
    """The first ``PROBE_ITEMS`` pictures and captions of the COCO-like test set, in memory or read from files: what
    the analyses of ``thesis_lib.analysis`` look at."""
    coco, ctx = eval_sets[0][0], EvalContext.of(cfg, device, tokenizer.pad_id)
    with torch.random.fork_rng(devices=[]):                  # a DataLoader draws its seed: training's stream stays
        images = next(image_batches(coco.images[:PROBE_ITEMS], ctx.view, PROBE_ITEMS, ctx.num_workers))
    return images.to(device), trim(coco.tokens[:PROBE_ITEMS], tokenizer.pad_id).to(device)


def _result(cfg, raw, tokenizer, eval_sets, device, paths: RunPaths, stats: dict, probe) -> dict:
    found = evaluate_trained(cfg, raw, tokenizer, eval_sets, device, probe)
    return result_record(cfg, raw, found, paths.layerscale, paths.result.parent,
                         train={**stats, "device": str(device)}, machine=machine(device))


def result_record(cfg, raw, found: dict, values_file: Path, beside: Path, **about) -> dict:
    """A measured model's record (a run's result, a checkpoint's evaluation): its names, its metrics and chance
    levels, ``about`` (how it was trained, or which checkpoint it is), its config and versions, then the rest of
    ``found`` (``evaluate_trained``); γ's values saved to ``values_file``, named relative to ``beside``."""
    result = {"preset": cfg.preset, "variant": cfg.model.variant, "seed": cfg.seed, "metrics": found.pop("metrics"),
              "chance": found.pop("chance"), **about, "config": asdict(cfg),
              "created": datetime.datetime.now().isoformat(timespec="seconds"),
              "versions": {"thesis_lib": __version__, "torch": torch.__version__}, **found}
    if "layerscale" in result:
        np.save(values_file, raw.tte_scale.gamma.detach().float().cpu().numpy())
        result["layerscale"]["values_file"] = str(values_file.relative_to(beside))
    return result


def evaluate_trained(cfg, raw, tokenizer, eval_sets, device, probe, say=lambda what: None) -> dict:
    """What a run measures on its trained model at its end, the sections of its result in their order: metrics,
    chance, fusion (fusion variants), modality_probe, tte_ablation and tte_contribution (a TTE after the encoders),
    layerscale (γ's statistics and initial value, tte_after_ls). ``probe``: ``probe_inputs``'s. Also what
    ``python -m thesis_lib.evaluate`` measures on a checkpoint; ``say(what)`` is told each step before it starts."""
    retrieval, zero_shot = eval_sets
    extras, ctx = {}, EvalContext.of(cfg, device, tokenizer.pad_id, autocast(cfg.train.precision, device))
    say("metrics")
    out = {"metrics": evaluate(raw, retrieval, zero_shot, ctx, extras), "chance": chance_levels(retrieval, zero_shot)}
    if extras:
        out["fusion"] = extras                                   # the switches' hard choices (notebook 05)
    say("modality probe")
    out["modality_probe"] = modality_probe(raw, *probe)          # is the modality readable without a TTE? (04)
    if cfg.model.tte.place == "after":                           # is the TTE used? (notebook 04)
        say("TTE ablation")
        out["tte_ablation"] = tte_ablation_metrics(raw, retrieval, zero_shot, ctx)
        out["tte_contribution"] = tte_contribution(raw, *probe)  # the TTE's share of the encoder output
    ls = layerscale_stats(raw)
    if ls is not None:
        out["layerscale"] = {**ls, "init": cfg.model.tte.gamma_init}
    return out


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m thesis_lib.training.run", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="demo", help=f"one of {', '.join(PRESETS)}")
    p.add_argument("--variant", default="baseline", help=f"one of {', '.join(VARIANTS)}")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None,
                   help="output folder (results go to OUT/results); default: the repo's results/")
    p.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N or auto")
    p.add_argument("--resume", nargs="?", const=True, default=False,
                   help="continue the run from its last checkpoint (or from the given checkpoint file)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing result of this run")
    add_source_args(p)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config field, e.g. --set train.steps=100 (repeatable)")
    p.add_argument("--dist-timeout", default=None, metavar="TIME",
                   help="several processes: how long one waits for another, e.g. for the slowest building its part "
                        "of the teacher cache, or rank 0 evaluating (seconds, or 45m, 6h; default "
                        "$THESIS_DIST_TIMEOUT, else 6h)")
    add_user_args(p)
    return p.parse_args(argv)


def add_source_args(p: argparse.ArgumentParser) -> None:
    """The flags that say where the thesis scale's real data and original weights are (this CLI, the evaluation's)."""
    p.add_argument("--data-root", default=None, help="real data: folder with coco/, flickr30k/, imagenet/val/")
    p.add_argument("--checkpoints", default=None, help="folder with the original checkpoint and tokenizer files")


def add_user_args(p: argparse.ArgumentParser) -> None:
    """Progress and tracebacks (this CLI, the evaluation's)."""
    p.add_argument("--no-progress", action="store_true", help="no progress lines")
    p.add_argument("--debug", action="store_true", help="show the full traceback of user errors")


def overrides_of(args: argparse.Namespace) -> dict:
    """The config overrides the parsed command line names: every ``--set KEY=VALUE``, ``--data-root`` and
    ``--checkpoints`` (what docs/full_scale.md's check compares with the notebooks' own)."""
    return {**parse_sets(args.set), **location_overrides(args.data_root, args.checkpoints)}


REQUEUE_EXIT = 75       # EX_TEMPFAIL: stopped on SIGUSR1 with its checkpoint written, to be continued


def requeue(stop: StopRequested) -> int:
    """After a stop on SIGUSR1 (``sbatch --signal=USR1@…``): under SLURM rank 0 requeues its job, ``scontrol requeue
    $SLURM_JOB_ID`` (an exit code requeues only where the cluster sets RequeueExit), which starts again and continues
    from the checkpoint (--resume). Rank 0 exits ``REQUEUE_EXIT``, the others 0: ``srun --kill-on-bad-exit`` must not
    end rank 0 before it has requeued the job."""
    if not stop.is_main:
        return 0
    job, said = os.environ.get("SLURM_JOB_ID"), str(stop)
    try:
        done = subprocess.run(["scontrol", "requeue", job], capture_output=True, text=True) if job else None
        said += "" if not job else f"; job {job} requeued" if done.returncode == 0 else f"; {done.stderr.strip()}"
    except OSError as err:
        said += f"; scontrol requeue: {err}"
    print(said + "; the same command with --resume continues the run", file=sys.stderr, flush=True)
    return REQUEUE_EXIT


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.no_progress:
        os.environ["THESIS_PROGRESS"] = "0"
    previous = signal.signal(signal.SIGUSR1, request_stop)     # before any DataLoader worker forks: they inherit it
    try:
        with CliErrors(args.debug, "interrupted; any checkpoint written so far is kept: run the same command with "
                                   "--resume to continue") as cli:
            result = run_experiment(args.preset, args.variant, args.seed, args.out, args.device, args.resume,
                                    args.overwrite, overrides_of(args), dist_timeout=args.dist_timeout)
    except StopRequested as stop:
        return requeue(stop)
    finally:
        signal.signal(signal.SIGUSR1, previous)
        STOP["requested"] = False
    if cli.code:
        return cli.code
    if result:
        m = result["metrics"]
        print(f"{result['variant']} seed {result['seed']}: ImageNet top-1 {m[IMAGENET_TOP1]:.2f}  "
              f"top-5 {m[IMAGENET_TOP5]:.2f}  COCO {m[COCO_MEAN]:.2f}  Flickr {m[FLICKR_MEAN]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

