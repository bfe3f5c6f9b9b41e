"""The full-scale recipe (docs/full_scale.md), computed from the study's own declarations so that it cannot drift:
every run the notebooks read at the thesis preset, what each costs in GPU-hours and disk, and the commands that
train each run once from the command line (one GPU, one node of 8, SLURM) so that the notebooks then reuse it.

    python -m thesis_lib.full_scale.recipe mix "$DATA"                   # the training mixture, as data.train_sets
    python -m thesis_lib.full_scale.recipe table [--cores-per-gpu 14]    # the run table of docs/full_scale.md
    python -m thesis_lib.full_scale.recipe days  [--cores-per-gpu 14] [--queue-hours 1]
                                                                         # its GPU-hours and days on 1, 8 and 16 GPUs
    python -m thesis_lib.full_scale.recipe commands --layout 8gpu > train.bash
                                                                         # every training command, 4 runs at a time
    python -m thesis_lib.full_scale.recipe status                        # each run done, running, failed or missing
    python -m thesis_lib.full_scale.recipe commands --layout slurm --missing-only > submit.bash   # those left

Times and sizes come from the cost model (``full_scale/cost.py``): the slower of the step and the data path measured
on two lent H100 hosts sets the pace (``cost.hosts``, ``cost.pace``), a run's evaluation is estimated and queueing
assumed (``--queue-hours``). The assumptions are printed with every table.

A command trains exactly the job the notebook would (``runs.grid_jobs`` / ``runs.ablation_jobs``): the same config
with the global batch of 512 split over its processes, so the notebook finds the result and reuses it
(``training.results.existing_result``) instead of training it again.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import re
import time
from pathlib import Path

from thesis_lib.config import THESIS_GLOBAL_BATCH
from thesis_lib.paths import results_dir
from thesis_lib.training.results import RunPaths
from ..study import grids
from ..study.claims import sequential
from ..study.runs import (THESIS_REGULARISATION, StudyParams, ablation_jobs, grid_jobs, random_init_overrides, seeds_of)
from . import cost

LAYOUTS = ("1gpu", "8gpu", "slurm")
LANES, FIRST_PORT = 4, 29500          # 8gpu: four runs side by side, 2 GPUs each, one master port each


def mix(data: str = "$DATA") -> str:
    """``data.train_sets`` of the thesis's mixture: COCO, and the CC3M / CC12M subsets from their shard lists."""
    return ",".join(name if not shards else f"wds:{data}/{shards}@{pairs}" for name, pairs, _, shards in cost.MIXTURE)


def notebook_params(notebook: str) -> StudyParams:
    """The parameters the recipe's papermill command gives ``notebook``: its default seeds; the folders and the
    mixture as the shell variables DATA, CKPT, OUT and MIX (the commands quote them, the shell fills them in); the
    global batch of 512 on one process."""
    data_root, checkpoints, output_dir, mix = "$DATA", "$CKPT", "$OUT", "$MIX"
    extra = {"data.train_sets": mix, "train.batch_size": THESIS_GLOBAL_BATCH}
    return StudyParams("thesis", seeds_of(notebook), "cuda", output_dir, data_root, checkpoints,
                       True, tuple(sorted(extra.items())))


def notebook_jobs(notebook: str, params: StudyParams, table1_seeds: int | None = None) -> list[dict]:
    """``run_experiment``'s arguments for every run ``notebook`` reads, as it builds them. Notebook 02 adds the
    sequential design's looks (``verdicts.run_sequential``) up to ``table1_seeds`` (default: the first look)."""
    if notebook == "01":
        return (grid_jobs(params, ("baseline",)) + ablation_jobs(params, "random-init", random_init_overrides(params))
                + ablation_jobs(params, "thesis-regularisation", THESIS_REGULARISATION))
    if notebook == "02":
        from ..study.claims.verdicts import sequential_claim
        design = sequential.TABLE1_PRIMARY
        looks = [n for n in design.looks_for(params.preset) if n <= (table1_seeds or design.looks[0])]
        arms = sequential_claim(design).arms_variants
        return grid_jobs(params, grids.TABLE1) + [
            job for n in looks for job in grid_jobs(dataclasses.replace(params, seeds=tuple(range(n))), arms)]
    if notebook == "05":
        return grid_jobs(params, grids.NOTEBOOKS["05"] + grids.FUSION_TRAINED)
    return grid_jobs(params, grids.NOTEBOOKS[notebook])


NOTEBOOKS = ("01", "02", "03", "04", "05")


def planned_jobs(table1_seeds: int | None = None) -> list[tuple[str, dict]]:
    """(notebook, job) for every run of the recipe, each once, under the first notebook that reads it."""
    seen, out = set(), []
    for nb in NOTEBOOKS:
        for job in notebook_jobs(nb, notebook_params(nb), table1_seeds):
            key = (str(job["out_dir"]), job["variant"], job["seed"])
            if key not in seen:
                seen.add(key)
                out.append((nb, job))
    return out


LAYOUT_GPUS = ((1, "1gpu"), (8, "8gpu: 4 runs × 2 GPUs"), (16, "slurm: 8 runs × 2 GPUs"))


def _variants(table1_seeds: int | None = None) -> list[str]:
    return [job["variant"] for _, job in planned_jobs(table1_seeds)]


def days_table(cores_per_gpu: int = cost.CORES_PER_GPU, table1_seeds: int | None = None,
               queue_hours: float = cost.QUEUE_HOURS) -> str:
    """The recipe's GPU-hours and wall days on 1, 8 and 16 GPUs at the measured rates (``cost.hosts``: each figure
    the range over the two H100 hosts), evaluation and queueing included, and beside them what the step alone
    (eager, compiled) would give; then the assumptions."""
    rates = cost.decode_rates()
    found, (_, assumption) = cost.hosts(cores_per_gpu, rates), cost.pace(cores_per_gpu, rates)
    first, most = _variants(table1_seeds), _variants(sequential.TABLE1_PRIMARY.looks[-1])
    return (hours_table(found, first, most) + "\n\n" + days_rows(found, first, most, queue_hours) + "\n\n"
            + assumption + " " + cost.queue_sentence(queue_hours) + " " + cost.fed_sentence(rates, found))


def hours_table(found: list, first: list[str], most: list[str]) -> str:
    """GPU-hours of one run (``baseline``), of the recipe's runs and at most: training, evaluation, both; and both
    were the data path to keep up with the eager (compiled) step."""
    def cells(part, step="measured"):
        return [cost.span([part(cost.gpu_hours(h, runs, step)) for h in found], form)
                for runs, form in ((["baseline"], "{:,.1f}"), (first, "{:,.0f}"), (most, "{:,.0f}"))]
    evals = [cost.span([cost.gpu_hours(h, [v])[1] for h in found], "{:.2f}")
             for v in (grids.BASELINE, grids.TTE_AFTER_LS)]
    pace = cost.span([h.per_gpu() for h in found])
    rows = [(f"training at {pace} pairs/s per GPU", cells(lambda t: t[0])),
            ("evaluation, an estimate", [f"{evals[0]} ({evals[1]} with a TTE after the encoders)"]
             + cells(lambda t: t[1])[1:]),
            ("**training + evaluation**", [f"**{c}**" for c in cells(sum)])]
    for step in ("eager", "compiled"):
        rows.append((f"were the data path to keep up: the {step} step, "
                     f"{cost.span([h.per_gpu(step) for h in found])} pairs/s", cells(sum, step)))
    head = (f"| GPU-hours on H100s | a run (`baseline`, 2 GPUs) | the recipe's runs ({len(first)}) | "
            f"at most ({len(most)} runs) |")
    return "\n".join([head, "|---|---:|---:|---:|"] + [f"| {what} | {' | '.join(c)} |" for what, c in rows])


def days_rows(found: list, first: list[str], most: list[str], queue_hours: float) -> str:
    """Wall days per layout: the recipe's runs (queueing among them beside), at most, and the step alone."""
    lines = [f"| GPUs | layout | days, the recipe's runs ({len(first)}) | of it queueing, h ({queue_hours:g} per job) "
             f"| days, at most ({len(most)} runs) | days were the data path to keep up: eager (compiled) |",
             "|---:|---|---:|---:|---:|---:|"]
    for gpus, layout in LAYOUT_GPUS:
        def d(runs, step="measured", part=0, form="{:.1f}"):
            return cost.span([cost.recipe_days(h, runs, gpus, queue_hours, step)[part] * (24 if part else 1)
                              for h in found], form)
        lines.append(f"| {gpus} | {layout} | {d(first)} | {d(first, part=1, form='{:g}')} | {d(most)} | "
                     f"{d(first, 'eager')} ({d(first, 'compiled')}) |")
    return "\n".join(lines)


def table(table1_seeds: int | None = None, cores_per_gpu: int = cost.CORES_PER_GPU) -> str:
    """The run table of docs/full_scale.md: per notebook, the runs it reads that no earlier notebook trained."""
    found, (_, assumption) = cost.hosts(cores_per_gpu), cost.pace(cores_per_gpu)
    thesis_h = cost.run_hours(found[0].per_gpu())[0]
    first = sequential.TABLE1_PRIMARY.looks[0]
    rows = []
    groups: dict = {}
    for nb, job in planned_jobs(table1_seeds or sequential.TABLE1_PRIMARY.looks[-1]):
        later = nb == "02" and job["seed"] >= first
        groups.setdefault((nb, later), []).append(job)
    lines = ["| notebook | runs it adds (variant × seeds) | runs | GPU-hours at the thesis's rate | "
             "GPU-hours on H100s, measured rates (training + evaluation) | checkpoints (GB) |",
             "|---|---|---:|---:|---:|---:|"]
    for (nb, later), jobs in groups.items():
        by = {}
        for j in jobs:
            name = j["variant"] + (f" ({ablation(j)})" if ablation(j) else "")
            by.setdefault(name, []).append(j["seed"])
        what = ", ".join(f"`{v}` × {_seeds(s)}" for v, s in by.items())
        gb = sum(cost.checkpoint_gb(j["variant"]) for j in jobs)
        label = f"{nb}, looks 2-{len(sequential.TABLE1_PRIMARY.looks)} (only while undecided)" if later else nb
        h100 = [sum(cost.gpu_hours(h, [j["variant"] for j in jobs])) for h in found]
        lines.append(f"| {label} | {what} | {len(jobs)} | {len(jobs) * thesis_h:,.0f} | {cost.span(h100)} | "
                     f"{gb:,.0f} |")
        rows.append((later, len(jobs), gb, h100))
    for scope, keep in (("without the later looks", lambda later: not later), ("at most", lambda later: True)):
        kept = [r for r in rows if keep(r[0])]
        n, gb = sum(r[1] for r in kept), sum(r[2] for r in kept)
        h100 = [sum(r[3][i] for r in kept) for i in range(len(found))]
        lines.append(f"| **all, {scope}** | | **{n}** | **{n * thesis_h:,.0f}** | **{cost.span(h100)}** | "
                     f"**{gb:,.0f}** |")
    return "\n".join(lines) + "\n\n" + assumption


def ablation(job: dict) -> str:
    """The ablation a run belongs to (notebook 01's, stored apart under ``_ablations/<name>/``), "" for a grid's."""
    out = Path(str(job["out_dir"]))
    return out.name if "_ablations" in out.parts else ""


def job_name(job: dict) -> str:
    """A run's name, unique in the recipe (its SLURM job, its log): tte-<variant>-<seed>[-<ablation>]. Notebook 01's
    ablations train ``baseline`` under its own seeds, elsewhere: without the ablation three runs had one name."""
    return "-".join(["tte", job["variant"], str(job["seed"])] + ([ablation(job)] if ablation(job) else []))


def _seeds(seeds: list) -> str:
    s = sorted(seeds)
    return f"seeds {s[0]}-{s[-1]}" if s == list(range(s[0], s[-1] + 1)) and len(s) > 1 else f"seed {s[0]}"


def cli_args(job: dict, processes: int, quote=lambda v: f'"{v}"', cores_per_gpu: int = cost.CORES_PER_GPU,
             device: str = "cuda") -> list[str]:
    """``python -m thesis_lib.training.run``'s arguments for ``job`` on ``processes`` processes (train.batch_size =
    the job's global batch (512) / processes: the same global batch, the same result; data.num_workers from the cores
    per GPU, operational: the result does not depend on it)."""
    over = dict(job["overrides"])
    root, ckpt = over.pop("data.root"), over.pop("weights.checkpoint_dir")
    over["train.batch_size"] = int(over.get("train.batch_size", THESIS_GLOBAL_BATCH)) // processes
    over["data.num_workers"] = cost.workers(cores_per_gpu)
    return (["-m", "thesis_lib.training.run", "--preset", job["preset"], "--variant", job["variant"], "--seed",
             str(job["seed"]), "--device", device, "--data-root", quote(root), "--checkpoints", quote(ckpt),
             "--out", quote(job["out_dir"])] + [a for k, v in over.items() for a in ("--set", quote(f"{k}={v}"))]
            + ["--resume"])


MEM_PER_GPU_GB = 64     # SLURM --mem per job: 2 processes, each its model, batch and workers' decode buffers
SLURM_HOURS = 12        # --time: 2.5 h per run at the GPU's goal; the data path may take several times that
SLURM_GPUS = 2          # GPUs (and tasks) of one run's SLURM job, on one node
SIGNAL_S = 600          # --signal=USR1@600: warned 10 min before --time, a run checkpoints and requeues itself
BATCH_ENV = "export PYTHONUNBUFFERED=1 THESIS_PROGRESS=0"     # batch logs: unbuffered, no progress bars
STAGED = "$STAGE/data"  # where $STAGE (a node-local folder, given once) is set: the copy of DATA the runs read


def staging(layout: str) -> str:
    """The script's line that stages the data where ``$STAGE`` is set, and does nothing where it is not: DATA's sets
    (COCO's pictures, the shards, the evaluation sets; not downloads/) copied by rsync to ``STAGED`` on the node that
    trains (a file already there with the source's size and time is skipped), the copies' shard index, then DATA and
    MIX pointed at the copy (``mix``: the same sets and @N, so the same runs as from DATA: ``results.mixture_entry``).
    1gpu and 8gpu scripts run on the node and stage at once; the SLURM script runs on the login node, so there each
    job's --wrap starts with the copy (``$stage``)."""
    mix_there = f'MIX=$(python -m thesis_lib.full_scale.recipe mix "{STAGED}")'
    if layout != "slurm":
        return (f'if [ -n "${{STAGE:-}}" ]; then rsync -a --exclude downloads/ "$DATA/" "{STAGED}/"; {mix_there}; '
                f'DATA="{STAGED}"; python -m thesis_lib.data.shard_index "$MIX"; fi   # $STAGE: a node-local copy')
    copy = f"rsync -a --exclude downloads/ '$DATA/' '{STAGED}/' && python -m thesis_lib.data.shard_index '$MIX' && "
    return (f'stage=""; if [ -n "${{STAGE:-}}" ]; then {mix_there}; stage="{copy}"; DATA="{STAGED}"; fi'
            '   # $STAGE: each job copies DATA to its node first')


def sbatch(job: dict, cores_per_gpu: int, device: str = "cuda") -> str:
    """One SLURM job of ``job`` on 2 GPUs of one node: partition and account from $PARTITION / $ACCOUNT; srun is given
    --cpus-per-task itself (SLURM 22.05+ no longer passes sbatch's on to srun). The GPUs are asked per node
    (--gpus-per-node), not per task: where each task is confined to its own GPU (--gpus-per-task=1 on a cluster that
    binds GPUs to tasks), NCCL cannot reach the other rank's GPU over NVLink (NVIDIA/nccl#1066, NVIDIA/pyxis#73);
    every task sees the node's GPUs and takes its own by its local rank (``training.distributed.gpu_index``).
    Resubmitting is safe: the job's name is the run's (``job_name``) and --dependency=singleton starts it only once
    no job of that name is queued or running; SIGUSR1 ``SIGNAL_S`` before the time limit makes the run checkpoint and
    requeue its job (--requeue; ``training.run.requeue``); every attempt appends to one log, $OUT/slurm/<name>.out."""
    return (f"sbatch --job-name={job_name(job)} --dependency=singleton --requeue --signal=USR1@{SIGNAL_S} "
            f"--partition=\"$PARTITION\" --account=\"$ACCOUNT\" "
            f"--nodes=1 --ntasks={SLURM_GPUS} --gpus-per-node={SLURM_GPUS} --cpus-per-task={cores_per_gpu} "
            f"--mem={SLURM_GPUS * MEM_PER_GPU_GB}G --time={SLURM_HOURS}:00:00 --output=\"$OUT/slurm/%x.out\" "
            f"--open-mode=append --wrap \"${{stage}}srun --kill-on-bad-exit=1 --cpus-per-task={cores_per_gpu} python "
            + " ".join(cli_args(job, SLURM_GPUS, lambda v: f"'{v}'", cores_per_gpu, device))
            + '"')


def commands(layout: str, table1_seeds: int | None = None, cores_per_gpu: int = cost.CORES_PER_GPU,
             jobs: list[dict] | None = None, device: str = "cuda", which: str = "") -> str:
    """A bash script training every run of the recipe once on ``layout`` (``LAYOUTS``); DATA, CKPT, OUT and MIX (and for
    SLURM PARTITION and ACCOUNT; STAGE where set: ``staging``) come from the environment. ``jobs`` and ``device``: other
    runs than the recipe's, elsewhere (the rehearsal's, in miniature); ``which``: what the header says of them. The
    8-GPU and SLURM scripts export ``BATCH_ENV`` (sbatch passes the environment on); a refused sbatch, or a failed run
    of a lane, is named on stderr, the others go on, and the script exits 1 at its end."""
    if cores_per_gpu < 1:
        raise ValueError(f"cores_per_gpu must be at least 1, got {cores_per_gpu}")
    jobs = jobs if jobs is not None else [job for _, job in planned_jobs(table1_seeds)]
    need = '"$DATA" "$CKPT" "$OUT" "$MIX"' + (' "$PARTITION" "$ACCOUNT"' if layout == "slurm" else "")
    head = [f"# python -m thesis_lib.full_scale.recipe commands --layout {layout}"
            + (f" --table1-seeds {table1_seeds}" if table1_seeds else "")
            + (f" --cores-per-gpu {cores_per_gpu}" if cores_per_gpu != cost.CORES_PER_GPU else "")
            + f": {len(jobs)} runs{which}",
            f"set -eu; : {need}" + ("" if layout == "1gpu" else f"; {BATCH_ENV}") + "   # docs/full_scale.md",
            'python -m thesis_lib.data.shard_index "$MIX"   # the shard index, once, before any run reads it']
    head.append(staging(layout))
    if layout == "1gpu":
        return "\n".join(head + ["python " + " ".join(cli_args(j, 1, cores_per_gpu=cores_per_gpu, device=device))
                                 for j in jobs]) + "\n"
    if layout == "8gpu":
        return "\n".join(head + lanes(jobs, cores_per_gpu, device)) + "\n"
    if layout == "slurm":
        return "\n".join(head + ['mkdir -p "$OUT/slurm"', 'refused=0; refuse() { echo "submit: sbatch refused $1 '
                                 '(exit $2); the others go on" >&2; refused=$((refused + 1)); }']
                         + [f"{sbatch(j, cores_per_gpu, device)} || refuse {job_name(j)} $?" for j in jobs]
                         + [f'[ "$refused" = 0 ] || {{ echo "submit: $refused of {len(jobs)} jobs refused" >&2; '
                            'exit 1; }']) + "\n"
    raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")


def lanes(jobs: list[dict], cores_per_gpu: int, device: str) -> list[str]:
    """The 8-GPU script's body: ``LANES`` lanes side by side, each its runs one after another on its 2 GPUs, its log
    appended to laneN.log. A failed run does not stop its lane: the lane names its failed runs at its end and exits
    1; the script waits for every lane, repeats each failed lane's last line on stderr, and exits 1 if any failed."""
    out = ["pids=()"]
    for i, lane in enumerate(lane for lane in (jobs[i::LANES] for i in range(LANES)) if lane):
        gpus = f"{2 * i},{2 * i + 1}"
        out += [f"(   # GPUs {gpus}: {len(lane)} runs one after another", "failed=()"]
        out += [f"CUDA_VISIBLE_DEVICES={gpus} torchrun --nproc_per_node 2 --master_port {FIRST_PORT + i} "
                + " ".join(cli_args(j, 2, cores_per_gpu=cores_per_gpu, device=device)) + f" || failed+=({job_name(j)})"
                for j in lane]
        out += [f'[ ${{#failed[@]}} = 0 ] || {{ echo "lane {i}: ${{#failed[@]}} of {len(lane)} runs failed: '
                f'${{failed[*]}}" >&2; exit 1; }}', f") >> lane{i}.log 2>&1 & pids+=($!)"]
    return out + ['status=0; for i in "${!pids[@]}"; do wait "${pids[$i]}" || { tail -n 1 "lane$i.log" >&2; '
                  'status=1; }; done; exit $status']


FAILED = re.compile(r"^(Traceback \(most recent call last\):|error: )", re.M)   # Python's, or the CLI's one line
FRESH_MINUTES = 30      # a checkpoint written since: its run counts as running (thesis: one every 200 steps)


def run_files(job: dict, out: str) -> tuple[RunPaths, Path]:
    """A run's files with $OUT the folder ``out``: its ``RunPaths`` (result, checkpoint, lock) and its SLURM log."""
    folder = str(job["out_dir"]).replace("$OUT", out)
    return (RunPaths(results_dir(folder), job["preset"], job["variant"], job["seed"]),
            Path(out) / "slurm" / f"{job_name(job)}.out")


def lock_held(paths: RunPaths) -> bool:
    """Whether a process holds the run's lock file now (``training.run.run_folder``: the one process, or rank 0)."""
    from filelock import Timeout
    if not Path(paths.lock().lock_file).exists():
        return False
    try:
        with paths.lock(timeout=0):
            return False
    except Timeout:
        return True


def run_state(job: dict, out: str, fresh_minutes: float = FRESH_MINUTES) -> tuple[str, Path]:
    """A run's state and its log: done (its result exists), running (its lock held, or a checkpoint written in the
    last ``fresh_minutes``: a lock may not reach across nodes on some shared file systems), failed (its log holds a
    traceback or an error line) or missing."""
    paths, log = run_files(job, out)
    if paths.result.exists():
        return "done", log
    ckpt = paths.checkpoint
    if lock_held(paths) or (ckpt.exists() and time.time() - ckpt.stat().st_mtime < 60 * fresh_minutes):
        return "running", log
    if log.exists() and FAILED.search(log.read_text(errors="replace")):
        return "failed", log
    return "missing", log


def status(jobs: list[dict], out: str, fresh_minutes: float = FRESH_MINUTES) -> str:
    """One line per run (state, name, log), then the count of each state."""
    states = [(*run_state(j, out, fresh_minutes), job_name(j)) for j in jobs]
    lines = [f"{state:8} {name:44} {log if log.exists() else '-'}" for state, log, name in states]
    counts = ", ".join(f"{sum(st == k for st, _, _ in states)} {k}" for k in ("done", "running", "failed", "missing"))
    return "\n".join(lines + [f"{len(jobs)} runs: {counts}"]) + "\n"


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (GPUs, steps, cores per GPU, seeds)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not at least 1")
    return value


def non_negative(text: str) -> float:
    """An argparse type: a number of hours, at least 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{value:g} is not at least 0")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m thesis_lib.full_scale.recipe", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    m = sub.add_parser("mix", help="the thesis's training mixture, as data.train_sets")
    m.add_argument("data", nargs="?", default="$DATA", help="the data folder (default: the text $DATA)")
    t = sub.add_parser("table", help="the run table (markdown)")
    d = sub.add_parser("days", help="the whole recipe's GPU-hours and days on 1, 8 and 16 GPUs (markdown)")
    d.add_argument("--queue-hours", type=non_negative, default=cost.QUEUE_HOURS,
                   help=f"hours a job waits for its GPUs (default {cost.QUEUE_HOURS:g}: an assumption, not a "
                        "measurement; give your cluster's)")
    c = sub.add_parser("commands", help="a bash script training every run once")
    c.add_argument("--layout", choices=LAYOUTS, required=True)
    c.add_argument("--missing-only", action="store_true", help="only the runs `status` finds missing or failed")
    s = sub.add_parser("status", help="each run of the recipe: done, running, failed or missing, and its log")
    for sp in (c, s):
        sp.add_argument("--table1-seeds", type=positive_int, default=None,
                        help="train notebook 02's sequential looks up to this many seeds (default: the first look, 4)")
        sp.add_argument("--out", default=os.environ.get("OUT"), help="the runs' folder (default: $OUT)")
        sp.add_argument("--fresh-minutes", type=positive_int, default=FRESH_MINUTES,
                        help=f"a checkpoint this recent means running (default {FRESH_MINUTES})")
    for sp in (t, d, c):
        sp.add_argument("--cores-per-gpu", type=positive_int, default=None, help=cost.CORES_HELP)
    return p


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    first = sequential.TABLE1_PRIMARY.looks[0]
    if getattr(args, "table1_seeds", None) is not None and args.table1_seeds < first:
        parser.error(f"argument --table1-seeds: {args.table1_seeds} is fewer than the sequential design's first look "
                     f"({first} seeds), which notebook 02 always reads")
    if (args.what == "status" or getattr(args, "missing_only", False)) and not args.out:
        parser.error("where are the runs? give --out or set OUT")
    if args.what not in ("mix", "status"):
        args.cores_per_gpu = cost.resolve_cores(args.cores_per_gpu)
    if args.what == "mix":
        print(mix(args.data))
    elif args.what == "table":
        print(table(cores_per_gpu=args.cores_per_gpu))
    elif args.what == "days":
        print(days_table(args.cores_per_gpu, queue_hours=args.queue_hours))
    elif args.what == "status":
        print(status([job for _, job in planned_jobs(args.table1_seeds)], args.out, args.fresh_minutes), end="")
    else:
        jobs = [job for _, job in planned_jobs(args.table1_seeds) if not args.missing_only
                or run_state(job, args.out, args.fresh_minutes)[0] in ("missing", "failed")]
        print(commands(args.layout, args.table1_seeds, args.cores_per_gpu, jobs,
                       which=" (missing or failed only)" * args.missing_only), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
