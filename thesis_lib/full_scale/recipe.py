"""The full-scale recipe (docs/full_scale.md), computed from the study's own declarations so that it cannot drift:
every run the notebooks read at the thesis preset, what each costs in GPU-hours and disk, and the commands that
train each run once from the command line (one GPU, one node of 8, SLURM) so that the notebooks then reuse it.

    python -m thesis_lib.full_scale.recipe mix "$DATA"                   # the training mixture, as data.train_sets
    python -m thesis_lib.full_scale.recipe table [--cores-per-gpu 14]    # the run table of docs/full_scale.md
    python -m thesis_lib.full_scale.recipe days  [--cores-per-gpu 14]    # the whole recipe's days on 1, 8 and 16 GPUs
    python -m thesis_lib.full_scale.recipe commands --layout 8gpu > train.bash
                                                                         # every training command, 4 runs at a time

Times use the slower of the GPU and the data path (``pace``): a GPU steps ``H100_PAIRS_PER_S`` (a goal, not a
measurement), and the DataLoader workers of its process decode ``workers × r`` pairs/s, r being the per-core rate
``benchmarks/data_pipeline.py`` measured (``benchmarks/measured.json``, ``data_path``) for the mixture's image shapes,
weighted by their pairs. The assumption is printed with every table.

A command trains exactly the job the notebook would (``runs.grid_jobs`` / ``runs.ablation_jobs``): the same config
with the global batch of 512 split over its processes, so the notebook finds the result and reuses it
(``training.results.existing_result``) instead of training it again.
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import os
import sys
from pathlib import Path

from thesis_lib.config import THESIS_GLOBAL_BATCH, THESIS_STEPS_RUN, get_config
from ..study import grids
from ..study.claims import sequential
from ..study.runs import (THESIS_REGULARISATION, StudyParams, ablation_jobs, grid_jobs, random_init_overrides, seeds_of)

THESIS_HOURS, THESIS_GPUS = 6.9, 2   # its run's wall time and GPUs (TimCares/MasterThesis, docs/thesis/experiments/
#                                      differences_to_unimodal_kd.typ), for 44,632 steps of 512 pairs
THESIS_PAIRS_PER_S = THESIS_STEPS_RUN * THESIS_GLOBAL_BATCH / (THESIS_HOURS * 3600)   # ≈ 920 on the two GPUs
#                                                                                       together (derived)
H100_PAIRS_PER_S = 2500     # this repository's goal for one H100, NOT a measurement: the step measured on one H100
#                             (BENCHMARKS.md, measured.json gpu_h100) is printed beside it (caveats)
BYTES_PER_PARAMETER = 12    # checkpoint.pt: fp32 weights + AdamW's two fp32 moments
LAYOUTS = ("1gpu", "8gpu", "slurm")
LANES, FIRST_PORT = 4, 29500          # 8gpu: four runs side by side, 2 GPUs each, one master port each
# The thesis's mixture (docs/sources.md): set, pairs, the image shape its recommended download holds
# (benchmarks/data_pipeline.py SHAPES), and the shard list the data download writes
MIXTURE = (("coco", 566_747, "coco", ""), ("cc3m", 1_516_133, "shard512", "cc3m/shards.txt"),
           ("cc12m", 1_181_988, "shard512", "cc12m/shards.txt"))
CORES_PER_GPU = 14           # an 8-GPU H100 node with 112 physical cores (DGX H100: 2 × 56; 224 with hyperthreads)
#                              the reference node of the planning; --cores-per-gpu's default reads yours (cores_per_gpu)
DECODER = "pil"              # data.decoder of the recipe (the default)


def _count(env, name: str) -> int | None:
    try:
        value = int(str(env.get(name, "")).split("(")[0])
    except ValueError:
        return None
    return value if value > 0 else None


def threads_per_core() -> int | None:
    """Hardware threads per physical core of this machine (2 where hyperthreading is on), from Linux's CPU topology;
    None where it cannot be read."""
    try:
        cpu = min(os.sched_getaffinity(0))
        text = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list").read_text().strip()
    except (AttributeError, OSError, ValueError):
        return None
    n = 0
    for part in text.split(","):
        low, _, high = part.partition("-")
        n += int(high or low) - int(low) + 1
    return n or None


def cores_per_gpu(task_gpus: int | None = None, env=None) -> tuple[int, str]:
    """``--cores-per-gpu``'s default where none is given, and where it came from ("" for the reference node's).

    The job's CPUs on this node over its GPUs on this node (SLURM_CPUS_ON_NODE / SLURM_GPUS_ON_NODE: right whether a
    job runs one task per GPU, as the recipe's sbatch lines do, or one task for all its GPUs, as the pilot and the
    8-GPU lanes do); else SLURM_CPUS_PER_TASK over the GPUs the task drives (``task_gpus``, default 1); else the CPUs
    this process may use over the node's GPUs (torch's count, or ``task_gpus``); else, with no GPU in sight (a login
    node), ``CORES_PER_GPU``. SLURM's CPUs, like ``os.cpu_count()``'s, are often hyperthreads, two to a physical
    core, while the data path's decode rate is per physical core: ``cores_warning`` says so."""
    env = os.environ if env is None else env
    node_gpus, counted = _count(env, "SLURM_GPUS_ON_NODE"), "SLURM_GPUS_ON_NODE"
    if node_gpus is None:
        counted = "GPUs torch sees"
        try:
            import torch
            node_gpus = torch.cuda.device_count() or None
        except Exception:                                            # noqa: BLE001 - no torch, no driver: no count
            node_gpus = None
    node_cpus, task_cpus = _count(env, "SLURM_CPUS_ON_NODE"), _count(env, "SLURM_CPUS_PER_TASK")
    if node_cpus and node_gpus:
        return max(1, node_cpus // node_gpus), f"SLURM_CPUS_ON_NODE={node_cpus} / {node_gpus} ({counted})"
    if task_cpus:
        gpus = task_gpus or 1
        return max(1, task_cpus // gpus), f"SLURM_CPUS_PER_TASK={task_cpus}" + (f" / {gpus} GPUs" if gpus > 1 else "")
    gpus = node_gpus or task_gpus
    if gpus:
        try:
            cpus = len(os.sched_getaffinity(0))
        except AttributeError:
            cpus = os.cpu_count() or 1
        return max(1, cpus // gpus), f"this host's {cpus} CPUs / {gpus} GPU{'s' * (gpus > 1)}"
    return CORES_PER_GPU, ""


def cores_warning(cores: int, source: str, threads: int | None = None) -> str:
    """The warning printed with a ``--cores-per-gpu`` read from SLURM or the host (``cores_per_gpu``)."""
    threads = threads_per_core() if threads is None else threads
    here = (f" (here {threads} threads per core: {cores} CPUs are about {max(1, cores // threads)} physical cores)"
            if threads and threads > 1 else "")
    return (f"--cores-per-gpu {cores}, from {source}. Warning: SLURM's CPUs (and os.cpu_count()'s) are often "
            f"hyperthreads, not physical cores{here}, and the data path's decode rate is per physical core: the "
            "recipe's days assume physical cores; give --cores-per-gpu the physical cores per GPU to plan with them.")


def mix(data: str = "$DATA") -> str:
    """``data.train_sets`` of the thesis's mixture: COCO, and the CC3M / CC12M subsets from their shard lists."""
    return ",".join(name if not shards else f"wds:{data}/{shards}@{pairs}" for name, pairs, _, shards in MIXTURE)


def workers(cores_per_gpu: int) -> int:
    """DataLoader workers per process (one process per GPU): every core but two, which the training process and
    the loader's pin-memory thread use."""
    return max(1, cores_per_gpu - 2)


def decode_rates() -> dict:
    """Measured images/s per CPU core (decode + both views) per image shape and decoder (``rates``), the command and
    the machine (``machine_name``): ``benchmarks/measured.json``'s ``data_path_shapes``."""
    from ..study.pages.measured import load, value
    data = load()
    return {**data["data_path_shapes"], "machine_name": value(data, "data_path_shapes.machine.with_isa")}


SHARDS_GB = 260    # the hub's shards of the mixture's CC3M + CC12M pairs: ≈ 140 + ≈ 120 GB (docs/full_scale.md, Disk)


@functools.cache
def _measured() -> dict:
    from ..study.pages.measured import load
    return load()


def caveats(rates: dict | None = None) -> str:
    """What the pace leaves out, with the measurements that say so (``benchmarks/measured.json``): the GPU's goal
    beside its measured step, the cores per GPU as physical cores, the slower CPU measured, the storage's reads."""
    from ..study.pages.measured import value
    data, rates = _measured(), rates or decode_rates()
    other, here = float(value(data, "data_path.pil")), float(rates["rates"]["coco"][DECODER])
    ratio = other / here
    said = "about half" if 0.4 <= ratio <= 0.6 else f"{ratio:.1f} ×"
    return (f"The H100's {H100_PAIRS_PER_S:,} is the goal: measured on one H100 on one synthetic batch, the step ran "
            f"{value(data, 'gpu_h100.eager_256.pairs_per_s')} pairs/s eager at batch 256 and "
            f"{value(data, 'gpu_h100.compiled_256.pairs_per_s')} compiled (BENCHMARKS.md). The cores are physical "
            f"cores decoding at the rate of a {value(data, 'data_path_shapes.machine.short')} VM; SLURM's CPUs are "
            f"often hyperthreads, two to a physical core, and the same benchmark decoded COCO at {other:.0f} images/s "
            f"per core on an {value(data, 'data_path.machine.name')}, {said} the rate above. Only decoding is "
            f"modelled: random reads of the mixture's ≈ {SHARDS_GB} GB of tar shards from shared storage may be the "
            "real limit. The pilot measures both on your nodes.")


def per_core_pairs(rates: dict, decoder: str = DECODER) -> float:
    """Pairs/s one CPU core decodes for the mixture: its shapes' measured rates weighted by their pairs."""
    per_shape = rates["rates"]
    seconds = sum(n / float(per_shape[shape][decoder]) for _, n, shape, _ in MIXTURE)
    return sum(n for _, n, _, _ in MIXTURE) / seconds


def data_pairs_per_s(cores_per_gpu: int, rates: dict | None = None, decoder: str = DECODER) -> float:
    """Pairs/s one process's workers decode for the mixture."""
    return workers(cores_per_gpu) * per_core_pairs(rates or decode_rates(), decoder)


def pace(cores_per_gpu: int = CORES_PER_GPU, rates: dict | None = None) -> tuple[float, str]:
    """Pairs/s per GPU (the slower of the GPU and its data path) and the sentence stating the assumption."""
    rates = rates or decode_rates()
    data = data_pairs_per_s(cores_per_gpu, rates)
    slower = "the data path" if data < H100_PAIRS_PER_S else "the GPU"
    shapes = ", ".join(f"{shape} {float(rates['rates'][shape][DECODER]):.0f}" for shape in
                       dict.fromkeys(s for _, _, s, _ in MIXTURE))
    return min(data, H100_PAIRS_PER_S), (
        f"Assumed: one H100 steps {H100_PAIRS_PER_S:,} pairs/s (the goal); its process's "
        f"{workers(cores_per_gpu)} DataLoader workers ({cores_per_gpu} physical cores per GPU, less 2) decode "
        f"{data:,.0f} pairs/s at the per-core rates measured with data.decoder={DECODER} ({shapes} images/s per core; "
        f"{rates['machine_name']}, `{rates['command']}`). The slower, {slower}, sets the pace: "
        f"{min(data, H100_PAIRS_PER_S):,.0f} pairs/s per GPU. " + caveats(rates))


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


@functools.cache
def parameters(variant: str) -> int:
    """The thesis preset's trainable parameters of ``variant`` (built on the meta device: no memory, no weights)."""
    import torch

    from thesis_lib.models.emkum import build_model
    with torch.device("meta"):
        model = build_model(get_config("thesis", variant, overrides={"weights.source": "random"}), pretrained=False)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def checkpoint_gb(variant: str) -> float:
    return parameters(variant) * BYTES_PER_PARAMETER / 1e9


def run_hours(per_gpu: float | None = None) -> tuple[float, float]:
    """GPU-hours of one run of 44,636 steps × 512 pairs: at the thesis's rate, and at ``per_gpu`` pairs/s (default:
    ``pace()``, the slower of the H100 goal and the data path)."""
    pairs = get_config("thesis").train.steps * THESIS_GLOBAL_BATCH
    return pairs / (THESIS_PAIRS_PER_S / THESIS_GPUS) / 3600, pairs / (per_gpu or pace()[0]) / 3600


def days(runs: int, gpus: int, per_gpu: float) -> float:
    """Wall days of ``runs`` runs on ``gpus`` GPUs, each run on 2 GPUs (1 on a single GPU) and the runs in rounds of
    ``gpus // 2`` side by side (the recipe's layouts)."""
    per_run, lanes = (1, 1) if gpus == 1 else (2, gpus // 2)
    rounds = -(-runs // lanes)
    return rounds * run_hours(per_gpu)[1] / per_run / 24


def days_table(cores_per_gpu: int = CORES_PER_GPU, table1_seeds: int | None = None) -> str:
    """The whole recipe's wall days on 1, 8 and 16 GPUs, at the pace and, beside it, at the GPU's goal alone."""
    rates = decode_rates()
    per_gpu, assumption = pace(cores_per_gpu, rates)
    first = len(planned_jobs(table1_seeds))
    most = len(planned_jobs(sequential.TABLE1_PRIMARY.looks[-1]))
    lines = ["| GPUs | layout | days, the recipe's runs (" + f"{first})" + f" | days, at most ({most} runs) | "
             "days if the data path kept up |", "|---:|---|---:|---:|---:|"]
    for gpus, layout in ((1, "1gpu"), (8, "8gpu: 4 runs × 2 GPUs"), (16, "slurm: 8 runs × 2 GPUs")):
        lines.append(f"| {gpus} | {layout} | {days(first, gpus, per_gpu):.1f} | {days(most, gpus, per_gpu):.1f} | "
                     f"{days(first, gpus, H100_PAIRS_PER_S):.1f} |")
    return "\n".join(lines) + "\n\n" + assumption + " " + fed_sentence(rates)


def cores_to_feed(rates: dict, decoder: str = DECODER, goal: float = H100_PAIRS_PER_S) -> int:
    """CPU cores per GPU whose workers decode ``goal`` pairs/s of the mixture (two more: see ``workers``)."""
    return math.ceil(goal / per_core_pairs(rates, decoder)) + 2


def fed_sentence(rates: dict) -> str:
    cores = cores_to_feed(rates)
    return (f"To feed one H100 at {H100_PAIRS_PER_S:,} pairs/s a node needs {cores} physical cores per GPU "
            f"({8 * cores} for 8 GPUs) at these rates, or {cores_to_feed(rates, 'pil_draft')} with "
            "data.decoder=pil_draft, which decodes at reduced scale and so changes what a run computes.")


def table(table1_seeds: int | None = None, cores_per_gpu: int = CORES_PER_GPU) -> str:
    """The run table of docs/full_scale.md: per notebook, the runs it reads that no earlier notebook trained."""
    per_gpu, assumption = pace(cores_per_gpu)
    thesis_h, h100_h = run_hours(per_gpu)
    first = sequential.TABLE1_PRIMARY.looks[0]
    rows = []
    groups: dict = {}
    for nb, job in planned_jobs(table1_seeds or sequential.TABLE1_PRIMARY.looks[-1]):
        later = nb == "02" and job["seed"] >= first
        groups.setdefault((nb, later), []).append(job)
    lines = ["| notebook | runs it adds (variant × seeds) | runs | GPU-hours at the thesis's rate | "
             "GPU-hours on H100s, estimated | checkpoints (GB) |", "|---|---|---:|---:|---:|---:|"]
    for (nb, later), jobs in groups.items():
        by = {}
        for j in jobs:
            name = j["variant"] + (f" ({Path(str(j['out_dir'])).name})" if "_ablations" in str(j["out_dir"]) else "")
            by.setdefault(name, []).append(j["seed"])
        what = ", ".join(f"`{v}` × {_seeds(s)}" for v, s in by.items())
        gb = sum(checkpoint_gb(j["variant"]) for j in jobs)
        label = f"{nb}, looks 2-{len(sequential.TABLE1_PRIMARY.looks)} (only while undecided)" if later else nb
        lines.append(f"| {label} | {what} | {len(jobs)} | {len(jobs) * thesis_h:,.0f} | {len(jobs) * h100_h:,.0f} | "
                     f"{gb:,.0f} |")
        rows.append((later, len(jobs), gb))
    for scope, keep in (("without the later looks", lambda later: not later), ("at most", lambda later: True)):
        n, gb = sum(r[1] for r in rows if keep(r[0])), sum(r[2] for r in rows if keep(r[0]))
        lines.append(f"| **all, {scope}** | | **{n}** | **{n * thesis_h:,.0f}** | **{n * h100_h:,.0f}** | "
                     f"**{gb:,.0f}** |")
    return "\n".join(lines) + "\n\n" + assumption


def _seeds(seeds: list) -> str:
    s = sorted(seeds)
    return f"seeds {s[0]}-{s[-1]}" if s == list(range(s[0], s[-1] + 1)) and len(s) > 1 else f"seed {s[0]}"


def cli_args(job: dict, processes: int, quote=lambda v: f'"{v}"', cores_per_gpu: int = CORES_PER_GPU,
             device: str = "cuda") -> list[str]:
    """``python -m thesis_lib.training.run``'s arguments for ``job`` on ``processes`` processes (train.batch_size =
    the job's global batch (512) / processes: the same global batch, the same result; data.num_workers from the cores
    per GPU, operational: the result does not depend on it)."""
    over = dict(job["overrides"])
    root, ckpt = over.pop("data.root"), over.pop("weights.checkpoint_dir")
    over["train.batch_size"] = int(over.get("train.batch_size", THESIS_GLOBAL_BATCH)) // processes
    over["data.num_workers"] = workers(cores_per_gpu)
    return (["-m", "thesis_lib.training.run", "--preset", job["preset"], "--variant", job["variant"], "--seed",
             str(job["seed"]), "--device", device, "--data-root", quote(root), "--checkpoints", quote(ckpt),
             "--out", quote(job["out_dir"])] + [a for k, v in over.items() for a in ("--set", quote(f"{k}={v}"))]
            + ["--resume"])


MEM_PER_GPU_GB = 64     # SLURM --mem per job: 2 processes, each its model, batch and workers' decode buffers
SLURM_HOURS = 12        # --time: 2.5 h per run at the GPU's goal; the data path may take several times that
SLURM_GPUS = 2          # GPUs (and tasks) of one run's SLURM job, on one node


def sbatch(job: dict, cores_per_gpu: int, device: str = "cuda") -> str:
    """One SLURM job of ``job`` on 2 GPUs of one node: partition and account from $PARTITION / $ACCOUNT, the log under
    $OUT/slurm/; srun is given --cpus-per-task itself (SLURM 22.05+ no longer passes sbatch's on to srun). The GPUs
    are asked per node (--gpus-per-node), not per task: where each task is confined to its own GPU
    (--gpus-per-task=1 on a cluster that binds GPUs to tasks), NCCL cannot reach the other rank's GPU over NVLink
    (NVIDIA/nccl#1066, NVIDIA/pyxis#73); every task sees the node's GPUs and takes its own by its local rank
    (``training.distributed.gpu_index``)."""
    return (f"sbatch --job-name=tte-{job['variant']}-{job['seed']} --partition=\"$PARTITION\" --account=\"$ACCOUNT\" "
            f"--nodes=1 --ntasks={SLURM_GPUS} --gpus-per-node={SLURM_GPUS} --cpus-per-task={cores_per_gpu} "
            f"--mem={SLURM_GPUS * MEM_PER_GPU_GB}G "
            f"--time={SLURM_HOURS}:00:00 --output=\"$OUT/slurm/%x-%j.out\" --wrap \"srun --kill-on-bad-exit=1 "
            f"--cpus-per-task={cores_per_gpu} python "
            + " ".join(cli_args(job, SLURM_GPUS, lambda v: f"'{v}'", cores_per_gpu, device))
            + '"')


def commands(layout: str, table1_seeds: int | None = None, cores_per_gpu: int = CORES_PER_GPU,
             jobs: list[dict] | None = None, device: str = "cuda") -> str:
    """A bash script training every run of the recipe once on ``layout`` (``LAYOUTS``); DATA, CKPT, OUT and MIX
    (and for SLURM PARTITION and ACCOUNT) come from the environment. ``jobs`` and ``device``: other runs than the
    recipe's, elsewhere (the rehearsal's, in miniature)."""
    if cores_per_gpu < 1:
        raise ValueError(f"cores_per_gpu must be at least 1, got {cores_per_gpu}")
    jobs = jobs if jobs is not None else [job for _, job in planned_jobs(table1_seeds)]
    need = '"$DATA" "$CKPT" "$OUT" "$MIX"' + (' "$PARTITION" "$ACCOUNT"' if layout == "slurm" else "")
    head = [f"# python -m thesis_lib.full_scale.recipe commands --layout {layout}"
            + (f" --table1-seeds {table1_seeds}" if table1_seeds else "")
            + (f" --cores-per-gpu {cores_per_gpu}" if cores_per_gpu != CORES_PER_GPU else "") + f": {len(jobs)} runs",
            f'set -eu; : {need}   # docs/full_scale.md',
            'python -m thesis_lib.data.shard_index "$MIX"   # the shard index, once, before any run reads it']
    if layout == "1gpu":
        return "\n".join(head + ["python " + " ".join(cli_args(j, 1, cores_per_gpu=cores_per_gpu, device=device))
                                 for j in jobs]) + "\n"
    if layout == "8gpu":                 # a lane stops at its first failed run; the script fails if any lane did
        lanes = [jobs[i::LANES] for i in range(LANES)]
        out = head + ["pids=()"]
        for i, lane in enumerate(lane for lane in lanes if lane):
            gpus = f"{2 * i},{2 * i + 1}"
            out.append(f"(   # GPUs {gpus}: {len(lane)} runs one after another")
            out += [f"CUDA_VISIBLE_DEVICES={gpus} torchrun --nproc_per_node 2 --master_port {FIRST_PORT + i} "
                    + " ".join(cli_args(j, 2, cores_per_gpu=cores_per_gpu, device=device)) for j in lane]
            out.append(f') > lane{i}.log 2>&1 & pids+=($!)')
        return "\n".join(
            out + ['status=0; for pid in "${pids[@]}"; do wait "$pid" || status=1; done; exit $status']) + "\n"
    if layout == "slurm":
        return "\n".join(head + ['mkdir -p "$OUT/slurm"'] + [sbatch(j, cores_per_gpu, device) for j in jobs]) + "\n"
    raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (GPUs, steps, cores per GPU, seeds)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not at least 1")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m thesis_lib.full_scale.recipe", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    m = sub.add_parser("mix", help="the thesis's training mixture, as data.train_sets")
    m.add_argument("data", nargs="?", default="$DATA", help="the data folder (default: the text $DATA)")
    t = sub.add_parser("table", help="the run table (markdown)")
    d = sub.add_parser("days", help="the whole recipe's days on 1, 8 and 16 GPUs (markdown)")
    c = sub.add_parser("commands", help="a bash script training every run once")
    c.add_argument("--layout", choices=LAYOUTS, required=True)
    c.add_argument("--table1-seeds", type=positive_int, default=None,
                   help="train notebook 02's sequential looks up to this many seeds (default: the first look, 4)")
    for sp in (t, d, c):
        sp.add_argument("--cores-per-gpu", type=positive_int, default=None, help=CORES_HELP)
    return p


CORES_HELP = (f"CPU cores of the node per GPU (default: SLURM_CPUS_ON_NODE / SLURM_GPUS_ON_NODE, else "
              f"SLURM_CPUS_PER_TASK, else this host's CPUs / its GPUs, else {CORES_PER_GPU}: 112 cores for 8 GPUs; "
              "SLURM's CPUs are often hyperthreads: give physical cores)")


def resolve_cores(given: int | None, task_gpus: int | None = None, who: str = "recipe") -> int:
    """``--cores-per-gpu`` as given, else its default (``cores_per_gpu``), with its warning on stderr."""
    if given is not None:
        return given
    cores, source = cores_per_gpu(task_gpus)
    if source:
        print(f"{who}: {cores_warning(cores, source)}", file=sys.stderr)
    return cores


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    first = sequential.TABLE1_PRIMARY.looks[0]
    if getattr(args, "table1_seeds", None) is not None and args.table1_seeds < first:
        parser.error(f"argument --table1-seeds: {args.table1_seeds} is fewer than the sequential design's first look "
                     f"({first} seeds), which notebook 02 always reads")
    if args.what != "mix":
        args.cores_per_gpu = resolve_cores(args.cores_per_gpu)
    if args.what == "mix":
        print(mix(args.data))
    elif args.what == "table":
        print(table(cores_per_gpu=args.cores_per_gpu))
    elif args.what == "days":
        print(days_table(args.cores_per_gpu))
    else:
        print(commands(args.layout, args.table1_seeds, args.cores_per_gpu), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
