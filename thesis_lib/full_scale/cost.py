"""What the full-scale recipe's runs cost (``full_scale/recipe.py`` plans them and writes their commands): the pace
of one GPU and its data path, the cores per GPU it is planned with (``cores_per_gpu``, ``--cores-per-gpu``), each
run's GPU-hours, the whole recipe's days and each checkpoint's size.

Times use the slower of the GPU and the data path (``pace``): a GPU steps ``H100_PAIRS_PER_S`` (a goal, not a
measurement), and the DataLoader workers of its process decode ``workers × r`` pairs/s, r being the per-core rate
``benchmarks/data_pipeline.py`` measured (``benchmarks/measured.json``, ``data_path``) for the mixture's image shapes,
weighted by their pairs. The assumption is printed with every table.
"""
from __future__ import annotations

import functools
import math
import os
import sys
from pathlib import Path

from thesis_lib.config import THESIS_GLOBAL_BATCH, THESIS_STEPS_RUN, get_config
from . import measured

THESIS_HOURS, THESIS_GPUS = 6.9, 2   # its run's wall time and GPUs (TimCares/MasterThesis, docs/thesis/experiments/
#                                      differences_to_unimodal_kd.typ), for 44,632 steps of 512 pairs
THESIS_PAIRS_PER_S = THESIS_STEPS_RUN * THESIS_GLOBAL_BATCH / (THESIS_HOURS * 3600)   # ≈ 920 on the two GPUs
#                                                                                       together (derived)
H100_PAIRS_PER_S = 2500     # this repository's goal for one H100, NOT a measurement: the step measured on one H100
#                             (BENCHMARKS.md, measured.json gpu_h100) is printed beside it (caveats)
BYTES_PER_PARAMETER = 12    # checkpoint.pt: fp32 weights + AdamW's two fp32 moments
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


def workers(cores_per_gpu: int) -> int:
    """DataLoader workers per process (one process per GPU): every core but two, which the training process and
    the loader's pin-memory thread use."""
    return max(1, cores_per_gpu - 2)


def decode_rates() -> dict:
    """Measured images/s per CPU core (decode + both views) per image shape and decoder (``rates``), the command and
    the machine (``machine_name``): ``benchmarks/measured.json``'s ``data_path_shapes``."""
    data = measured.load()
    return {**data["data_path_shapes"], "machine_name": measured.value(data, "data_path_shapes.machine.with_isa")}


SHARDS_GB = 260    # the hub's shards of the mixture's CC3M + CC12M pairs: ≈ 140 + ≈ 120 GB (docs/full_scale.md, Disk)
SHARD_SETS = {"cc3m": (576, 2_905_954), "cc12m": (2_176, 10_968_539)}   # the hub's shards, samples (data/sources.py)
FLICKR30K_GB, INDEX_GB = 4, 0.4     # Flickr30K's images extracted; THESIS_DATA/shard-index (≈ 150 B × 2.7 M samples)
FILES_PER_RUN = 6    # inodes a run leaves: result JSON, its lock, its folder, checkpoint.pt, metrics.jsonl, its log


def shards(name: str) -> int:
    """Shards of the hub's set ``name`` the mixture's subset takes (at the set's mean samples per shard)."""
    count, samples = SHARD_SETS[name]
    return math.ceil(next(n for s, n, _, _ in MIXTURE if s == name) / (samples / count))


def checkpoint_writes(variant: str) -> tuple[int, float]:
    """How often a run of ``variant`` writes its checkpoint (every ``train.ckpt_every`` steps) and the GB written."""
    train = get_config("thesis", variant).train
    writes = train.steps // train.ckpt_every
    return writes, writes * checkpoint_gb(variant)


def totals(variants: list[str]) -> dict:
    """What the recipe's runs (one a variant of ``variants``) take on the shared storage: GB on disk (the data sets
    extracted, the shards and their index, every run's checkpoint), GB of archives kept until the counts pass, inodes
    (every image file, shard, index file, run file) and TB of checkpoints written over the runs."""
    from thesis_lib.data.sources import SOURCES
    coco, imagenet = SOURCES["coco"], SOURCES["imagenet"]
    images = sum(coco.sizes.values()) / 1e9 + sum(imagenet.sizes.values()) / 1e9 + FLICKR30K_GB
    files = (coco.expected["train2014"] + coco.expected["val2014"] + SOURCES["flickr30k"].expected["flickr30k-images"]
             + imagenet.expected["classes"] * (imagenet.expected["per_class"] + 1) + 2 * sum(map(shards, SHARD_SETS))
             + FILES_PER_RUN * len(variants))
    return {"disk_gb": images + SHARDS_GB + INDEX_GB + sum(map(checkpoint_gb, variants)), "archives_gb": images,
            "inodes": files, "writes_tb": sum(checkpoint_writes(v)[1] for v in variants) / 1e3}


@functools.cache
def _measured() -> dict:
    return measured.load()


def caveats(rates: dict | None = None) -> str:
    """What the pace leaves out, with the measurements that say so (``benchmarks/measured.json``): the GPU's goal
    beside its measured step, the cores per GPU as physical cores, the slower CPU measured, the storage's reads."""
    value, data, rates = measured.value, _measured(), rates or decode_rates()
    other, here = float(value(data, "data_path.pil")), float(rates["rates"]["coco"][DECODER])
    ratio = other / here
    said = "about half" if 0.4 <= ratio <= 0.6 else f"{ratio:.1f} ×"
    return (f"The H100's {H100_PAIRS_PER_S:,} is the goal: measured on one H100 on one synthetic batch, the step ran "
            f"{value(data, 'gpu_h100.eager_256.pairs_per_s')} pairs/s eager at batch 256 and "
            f"{value(data, 'gpu_h100.compiled_256.pairs_per_s')} compiled (BENCHMARKS.md). The cores are physical "
            f"cores decoding at the rate of a {value(data, 'data_path_shapes.machine.short')} VM; SLURM's CPUs are "
            f"often hyperthreads, two to a physical core, and the same benchmark decoded COCO at {other:.0f} images/s "
            f"per core on an {value(data, 'data_path.machine.name')}, {said} the rate above. {loader_note(rates)}"
            f"Only decoding is modelled: random reads of the mixture's ≈ {SHARDS_GB} GB of tar shards from shared "
            "storage may be the real limit. The pilot measures both on your nodes.")


LOADER_RUNS = ("gpu_h100", "gpu_h100_rerun")    # benchmarks/measured.json: the DataLoader measured on GPU hosts


def loader_note(rates: dict) -> str:
    """The DataLoader measured end to end on the H100 hosts (``benchmarks/gpu.py``'s shards: half 256 × 256, half
    683 × 512) against what the per-core rates above give for the same shards; "" where they give none."""
    data, shards = _measured(), ("shard256", "shard512")
    if not set(shards) <= set(rates["rates"]):
        return ""
    priced = len(shards) / sum(1 / float(rates["rates"][shape][DECODER]) for shape in shards)
    runs = [(float(measured.value(data, f"{k}.loader.pairs_per_s").replace(",", "")),
             int(measured.value(data, f"{k}.loader.workers"))) for k in LOADER_RUNS]
    per_worker = [pairs / workers for pairs, workers in runs]
    workers = "/".join(sorted({str(w) for _, w in runs}))
    return (f"On the two H100 hosts a DataLoader of {workers} workers over shards half 256 × 256, "
            f"half 683 × 512 px delivered {' and '.join(f'{p:,.0f}' for p, _ in runs)} pairs/s end to end, "
            f"{' and '.join(f'{w:.0f}' for w in per_worker)} per worker, where the rates above give {priced:.0f} per "
            f"core for those shards ({' and '.join(f'{w / priced:.2f}' for w in per_worker)} ×): on such hosts the "
            "data path's pace above is optimistic by as much. ")


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


def cores_to_feed(rates: dict, decoder: str = DECODER, goal: float = H100_PAIRS_PER_S) -> int:
    """CPU cores per GPU whose workers decode ``goal`` pairs/s of the mixture (two more: see ``workers``)."""
    return math.ceil(goal / per_core_pairs(rates, decoder)) + 2


def fed_sentence(rates: dict) -> str:
    cores = cores_to_feed(rates)
    return (f"To feed one H100 at {H100_PAIRS_PER_S:,} pairs/s a node needs {cores} physical cores per GPU "
            f"({8 * cores} for 8 GPUs) at these rates, or {cores_to_feed(rates, 'pil_draft')} with "
            "data.decoder=pil_draft, which decodes at reduced scale and so changes what a run computes.")
