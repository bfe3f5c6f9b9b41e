"""What the full-scale recipe's runs cost (``full_scale/recipe.py`` plans them and writes their commands): the pace
of one GPU and its data path, the cores per GPU it is planned with (``cores_per_gpu``, ``--cores-per-gpu``), each
run's GPU-hours, evaluation included, the whole recipe's days, queueing included, and each checkpoint's size.

Times use measured rates (``benchmarks/measured.json``), per lent H100 host (``hosts``; the tables give the range
over the two): a GPU's pace is the slower of the recipe's step, eager at 256 pairs per GPU (the compiled step beside
it, what it would be), and its data path. The rule for the data path: the per-core model (the mixture's image shapes
at the per-core decode rates ``benchmarks/data_pipeline.py`` measured, ``data_path_shapes``, × the process's DataLoader
workers) times the factor by which that host's DataLoader, measured end to end, fell short of the model for its own
shards (``loader_factors``: 0.48-0.59). A run's evaluation is an ESTIMATE (``Host.eval_hours``: no evaluation has
been timed on a GPU); the queueing is an assumption (``QUEUE_HOURS``, ``--queue-hours``). The assumptions are
printed with every table.
"""
from __future__ import annotations

import dataclasses
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
H100_PAIRS_PER_S = 2500     # this repository's goal for one H100, NOT a measurement (the pilot's fallback need): the
#                             tables price the step measured on two H100 hosts (hosts; measured.json gpu_h100*)
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


_measured = functools.cache(measured.load)     # benchmarks/measured.json, read once


def _number(key: str) -> float:
    """A measured figure of ``benchmarks/measured.json`` as a number ("2,298" → 2298.0, "34 %" → 0.34)."""
    text = str(measured.value(_measured(), key)).replace(",", "")
    return float(text.rstrip(" %")) / 100 if text.endswith("%") else float(text)


LOADER_RUNS = ("gpu_h100", "gpu_h100_rerun")    # benchmarks/measured.json: the step and the DataLoader on H100 hosts
LOADER_SHAPES = ("shard256", "shard512")        # benchmarks/gpu.py's shards: half 256 × 256, half 683 × 512


def loader_per_worker() -> list[float]:
    """Per H100 host: its DataLoader's pairs/s end to end per worker."""
    return [_number(f"{k}.loader.pairs_per_s") / _number(f"{k}.loader.workers") for k in LOADER_RUNS]


def shards_per_core(rates: dict) -> float:
    """Pairs/s one core decodes of the loader's shards at the per-core rates (their shapes' harmonic mean)."""
    return len(LOADER_SHAPES) / sum(1 / float(rates["rates"][shape][DECODER]) for shape in LOADER_SHAPES)


def loader_factors(rates: dict) -> list[float]:
    """Per H100 host: what its DataLoader delivered per worker over what the per-core rates give for its shards."""
    return [w / shards_per_core(rates) for w in loader_per_worker()]


def per_core_pairs(rates: dict, decoder: str = DECODER) -> float:
    """Pairs/s one CPU core decodes for the mixture: its shapes' measured rates weighted by their pairs."""
    per_shape = rates["rates"]
    seconds = sum(n / float(per_shape[shape][decoder]) for _, n, shape, _ in MIXTURE)
    return sum(n for _, n, _, _ in MIXTURE) / seconds


def data_pairs_per_s(cores_per_gpu: int, rates: dict | None = None, decoder: str = DECODER) -> float:
    """Pairs/s one process's workers decode for the mixture at the per-core rates (before ``hosts``'s factor)."""
    return workers(cores_per_gpu) * per_core_pairs(rates or decode_rates(), decoder)


QUEUE_HOURS = 1.0        # ASSUMED, not measured: hours a job waits for its GPUs (--queue-hours: your cluster's)
EVAL_IMAGES = 50_000 + 5_000 + 1_000     # one evaluation's pictures: ImageNet-1K val, COCO 5K, Flickr30K 1K test
EVAL_TEXTS = 1_000 * 80 + 25_010 + 5_000  # its texts: 1,000 classes × 80 prompts, COCO's and Flickr's test captions
FORWARDS_PER_STEP = 3    # a training step's forward + backward ≈ 3 forwards


@dataclasses.dataclass(frozen=True)
class Host:
    """One lent H100 host's measurements pricing a GPU: its step at 256 pairs per GPU (512 over 2 processes), eager
    (the recipe's) and compiled, and the teacher's share of it; ``factor`` (``loader_factors``); the data path."""
    eager: float
    compiled: float
    teacher_share: float
    factor: float
    data: float

    def per_gpu(self, step: str = "measured") -> float:
        """Pairs/s per GPU: the slower of the eager step and the data path, or the step alone ("eager", "compiled")."""
        return min(self.eager, self.data) if step == "measured" else getattr(self, step)

    def eval_hours(self) -> float:
        """An ESTIMATE of one evaluation's wall hours on a run's rank 0 (no evaluation was timed on a GPU): its
        pictures decoded at the data path's pace, as training pairs (it makes one view, not two: an overestimate),
        then every picture and text encoded at a pair's forward, (1 - the teacher's share) / 3 of the eager step."""
        forward_s = (1 - self.teacher_share) / (FORWARDS_PER_STEP * self.eager)
        return (EVAL_IMAGES / self.data + (EVAL_IMAGES + EVAL_TEXTS) * forward_s) / 3600


def hosts(cores_per_gpu: int = CORES_PER_GPU, rates: dict | None = None) -> list[Host]:
    """The recipe's GPU priced at each H100 host's measurements (``LOADER_RUNS``). The rule: its data path is the
    per-core model (``data_pairs_per_s``) × that host's factor (``loader_factors``), not the loader's pairs/s per
    worker as measured: its shards, half 256 px, decode faster than the mixture's. The teacher's share: host 1's."""
    rates = rates or decode_rates()
    modelled, share = data_pairs_per_s(cores_per_gpu, rates), _number(f"{LOADER_RUNS[0]}.eager_256.teacher_share")
    return [Host(_number(f"{k}.eager_256.pairs_per_s"), _number(f"{k}.compiled_256.pairs_per_s"), share, f,
                 modelled * f) for k, f in zip(LOADER_RUNS, loader_factors(rates))]


def span(values, form: str = "{:,.0f}") -> str:
    """The range of ``values`` as the tables print it: "525-649", or one figure where both ends print alike."""
    low, high = form.format(min(values)), form.format(max(values))
    return low if low == high else f"{low}-{high}"


@functools.cache
def eval_passes(variant: str) -> int:
    """Evaluations a run of ``variant`` makes (``training.run.evaluate_trained``): one at its end, two more (TTE
    removed, swapped) with a TTE after the encoders; none during training (the thesis preset: train.keep_every 0)."""
    return 1 + 2 * (get_config("thesis", variant).model.tte.place == "after")


def gpu_hours(host: Host, variants: list[str], step: str = "measured", gpus: int = 2) -> tuple[float, float]:
    """(training, evaluation) GPU-hours of a run of each of ``variants`` on ``gpus`` GPUs (evaluating, all held)."""
    passes = sum(map(eval_passes, variants))
    return len(variants) * run_hours(host.per_gpu(step))[1], passes * host.eval_hours() * gpus


def recipe_days(host: Host, variants: list[str], gpus: int, queue_hours: float = QUEUE_HOURS,
                step: str = "measured") -> tuple[float, float]:
    """Wall days of a run of each of ``variants`` on ``gpus`` GPUs (``days``), and the days of queueing among them."""
    eval_h = host.eval_hours() * sum(map(eval_passes, variants)) / len(variants)
    total = days(len(variants), gpus, host.per_gpu(step), eval_h, queue_hours)
    return total, total - days(len(variants), gpus, host.per_gpu(step), eval_h)


def caveats(rates: dict | None = None) -> str:
    """What the pace leaves out: the cores per GPU as physical cores, the slower CPU measured, the storage's reads."""
    value, data, rates = measured.value, _measured(), rates or decode_rates()
    other, here = float(value(data, "data_path.pil")), float(rates["rates"]["coco"][DECODER])
    said = "about half" if 0.4 <= other / here <= 0.6 else f"{other / here:.1f} ×"
    return (f"The cores are physical cores; SLURM's CPUs are often hyperthreads, two to a physical core, and the same "
            f"benchmark decoded COCO at {other:.0f} images/s per core on an {value(data, 'data_path.machine.name')}, "
            f"{said} the rate above. The hosts' loaders read shards just written to a local folder: random reads of "
            f"the mixture's ≈ {SHARDS_GB} GB of tar shards from shared storage may be the real limit. "
            "The pilot measures both on your nodes.")


def loader_note(rates: dict) -> str:
    """The DataLoader measured end to end on the H100 hosts against what the per-core rates give for its shards."""
    runs = [(_number(f"{k}.loader.pairs_per_s"), _number(f"{k}.loader.workers")) for k in LOADER_RUNS]
    return (f"a DataLoader of {'/'.join(sorted({f'{w:.0f}' for _, w in runs}))} workers over shards half 256 × 256, "
            f"half 683 × 512 px delivered {' and '.join(f'{p:,.0f}' for p, _ in runs)} pairs/s end to end, "
            f"{' and '.join(f'{w:.0f}' for w in loader_per_worker())} per worker, where the rates give "
            f"{shards_per_core(rates):.0f} per core for those shards: "
            f"{' and '.join(f'{f:.2f}' for f in loader_factors(rates))} ×")


def pace(cores_per_gpu: int = CORES_PER_GPU, rates: dict | None = None) -> tuple[tuple[float, float], str]:
    """Pairs/s per GPU, the slower host's and the faster's (``hosts``), and the sentences stating the assumption:
    the pace, the evaluation's estimate, the caveats."""
    rates = rates or decode_rates()
    found = hosts(cores_per_gpu, rates)
    paces = [h.per_gpu() for h in found]
    slower = "the data path" if all(h.data < h.eager for h in found) else "the GPU" if all(
        h.eager <= h.data for h in found) else "the GPU on one host, the data path on the other"
    shapes = ", ".join(f"{shape} {float(rates['rates'][shape][DECODER]):.0f}" for shape in
                       dict.fromkeys(s for _, _, s, _ in MIXTURE))
    either = " and ".join
    return (min(paces), max(paces)), (
        f"Measured on two lent H100 hosts ({either(measured.value(_measured(), f'{k}.date') for k in LOADER_RUNS)}; "
        f"each range runs from one host to the other): the recipe's step, eager at 256 pairs per GPU (train.compile "
        f"false), ran {either(f'{h.eager:,.0f}' for h in found)} pairs/s (compiled: "
        f"{either(f'{h.compiled:,.0f}' for h in found)}). Its data path is the per-core model times each host's "
        f"measured factor: {per_core_pairs(rates):.0f} pairs/s per core for the mixture at the per-core rates measured "
        f"with data.decoder={DECODER} ({shapes} images/s per core; {rates['machine_name']}, `{rates['command']}`), "
        f"× {workers(cores_per_gpu)} DataLoader workers ({cores_per_gpu} physical cores per GPU, less 2), × the "
        f"factor by which each host's loader fell short of those rates ({loader_note(rates)}): "
        f"{either(f'{h.data:,.0f}' for h in found)} pairs/s. (Not the loader's rate per worker as it stands: its "
        f"shards decode {shards_per_core(rates) / per_core_pairs(rates):.1f} × faster per core than the mixture's.) "
        f"The slower, {slower}, sets the pace: {span(paces)} pairs/s per GPU. " + eval_sentence(found) + " "
        + caveats(rates))


def eval_sentence(found: list[Host]) -> str:
    """How the evaluation's time is estimated (``Host.eval_hours``), said as an estimate."""
    return (f"Evaluation, an ESTIMATE (no evaluation has been timed on a GPU; benchmarks/measured.json's eval_bench "
            f"timed parts of one on a CPU): a run evaluates once, at its end (the thesis preset evaluates nowhere "
            f"else), and twice more (its TTE removed, swapped) with a TTE after the encoders; one evaluation decodes "
            f"{EVAL_IMAGES:,} pictures (ImageNet-1K val, COCO 5K, Flickr30K 1K) at the data path's pace, as if each "
            f"were a training pair (it makes one view, not two: an overestimate), and encodes them and {EVAL_TEXTS:,} "
            f"texts (1,000 classes × 80 prompts, the test captions) each at a pair's forward, (1 - the teacher's "
            f"{100 * found[0].teacher_share:.0f} % of the step) / {FORWARDS_PER_STEP} of the eager step: "
            f"{span([3600 * h.eval_hours() for h in found])} s on rank 0, the run's other GPU held waiting.")


def queue_sentence(queue_hours: float) -> str:
    return (f"Queueing, ASSUMED (not measured): {queue_hours:g} h per job before its GPUs are free (--queue-hours "
            "gives your cluster's): the SLURM layout submits each run as a job, side by side in rounds, and each "
            "round waits; the 1gpu and 8gpu scripts run as one job and wait once. It adds days, not GPU-hours.")


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
    """GPU-hours of a run's training (44,636 × 512 pairs) at the thesis's rate and at ``per_gpu`` (or pace()'s low)."""
    pairs = get_config("thesis").train.steps * THESIS_GLOBAL_BATCH
    return pairs / (THESIS_PAIRS_PER_S / THESIS_GPUS) / 3600, pairs / (per_gpu or pace()[0][0]) / 3600


def days(runs: int, gpus: int, per_gpu: float, eval_h: float = 0.0, queue_h: float = 0.0) -> float:
    """Wall days of ``runs`` runs on ``gpus`` GPUs, each run on 2 GPUs (1 on a single GPU) and the runs in rounds of
    ``gpus // 2`` side by side (the recipe's layouts): each run trains at ``per_gpu`` pairs/s per GPU, then evaluates
    for ``eval_h`` hours; a job waits ``queue_h`` hours (``queue_sentence``): each round on 16 GPUs (SLURM), or once."""
    per_run, lanes = (1, 1) if gpus == 1 else (2, gpus // 2)
    rounds = -(-runs // lanes)
    waits = rounds if gpus > 8 else 1
    return (rounds * (run_hours(per_gpu)[1] / per_run + eval_h) + waits * queue_h) / 24


def cores_to_feed(rates: dict, decoder: str = DECODER, goal: float = H100_PAIRS_PER_S, factor: float = 1.0) -> int:
    """CPU cores per GPU whose workers decode ``goal`` pairs/s at ``factor`` × the per-core rates (+ 2: ``workers``)."""
    return math.ceil(goal / (factor * per_core_pairs(rates, decoder))) + 2


def fed_sentence(rates: dict, found: list[Host]) -> str:
    need = [cores_to_feed(rates, goal=h.eager, factor=h.factor) for h in found]
    draft = [cores_to_feed(rates, "pil_draft", h.eager, h.factor) for h in found]
    return (f"To keep up with the eager step a node needs {span(need)} physical cores per GPU "
            f"({span([8 * n for n in need])} for 8 GPUs) at these rates, or {span(draft)} with data.decoder=pil_draft "
            "(the factor measured with pil assumed for it), which decodes at reduced scale and so changes what a run "
            "computes.")
