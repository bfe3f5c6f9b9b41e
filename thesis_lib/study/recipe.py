"""The full-scale recipe (docs/full_scale.md), computed from the study's own declarations so that it cannot drift:
every run the notebooks read at the thesis preset, what each costs in GPU-hours and disk, and the commands that
train each run once from the command line (one GPU, one node of 8, SLURM) so that the notebooks then reuse it.

    python -m thesis_lib.study.recipe table                          # the run table of docs/full_scale.md
    python -m thesis_lib.study.recipe commands --layout 8gpu > train.bash   # every training command, 4 runs at a time

A command trains exactly the job the notebook would (``runs.grid_jobs`` / ``runs.ablation_jobs``): the same config
with the global batch of 512 split over its processes, so the notebook finds the result and reuses it
(``training.results.existing_result``) instead of training it again.
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
from pathlib import Path

from ..config import get_config
from . import grids, sequential
from .runs import (SEEDS, THESIS_REGULARISATION, StudyParams, ablation_jobs, grid_jobs, random_init_overrides)

GLOBAL_BATCH = 512          # the thesis's: 256 per GPU on 2 GPUs (docs/sources.md §3)
THESIS_HOURS, THESIS_GPUS = 6.9, 2   # its run's wall time and GPUs (TimCares/MasterThesis, docs/thesis/experiments/
#                                      differences_to_unimodal_kd.typ), for 44,632 steps of 512 pairs
THESIS_PAIRS_PER_S = 44632 * GLOBAL_BATCH / (THESIS_HOURS * 3600)        # ≈ 920 on the two GPUs together (derived)
H100_PAIRS_PER_S = 2500     # this repository's goal for one H100 (issue 38), NOT a measurement: an estimate
BYTES_PER_PARAMETER = 12    # checkpoint.pt: fp32 weights + AdamW's two fp32 moments
NB05_SEEDS, NB05_FUSION = (0, 1, 2), grids.FUSION_TRAINED    # notebook 05's seeds, fusion_variants
LAYOUTS = ("1gpu", "8gpu", "slurm")
LANES, FIRST_PORT = 4, 29500          # 8gpu: four runs side by side, 2 GPUs each, one master port each


def notebook_params(notebook: str) -> StudyParams:
    """The parameters the recipe's papermill command gives ``notebook``: its default seeds; the folders and the
    mixture as the shell variables DATA, CKPT, OUT and MIX (the commands quote them, the shell fills them in); the
    global batch of 512 on one process."""
    data_root, checkpoints, output_dir, mix = "$DATA", "$CKPT", "$OUT", "$MIX"
    extra = {"data.train_sets": mix, "train.batch_size": GLOBAL_BATCH}
    return StudyParams("thesis", NB05_SEEDS if notebook == "05" else SEEDS, "cuda", output_dir, data_root, checkpoints,
                       True, tuple(sorted(extra.items())))


def notebook_jobs(notebook: str, params: StudyParams, table1_seeds: int | None = None) -> list[dict]:
    """``run_experiment``'s arguments for every run ``notebook`` reads, as it builds them. Notebook 02 adds the
    sequential design's looks (``verdicts.run_sequential``) up to ``table1_seeds`` (default: the first look)."""
    if notebook == "01":
        return (grid_jobs(params, ("baseline",)) + ablation_jobs(params, "random-init", random_init_overrides(params))
                + ablation_jobs(params, "thesis-regularisation", THESIS_REGULARISATION))
    if notebook == "02":
        from .verdicts import sequential_claim
        design = sequential.TABLE1_PRIMARY
        looks = [n for n in design.looks_for(params.preset) if n <= (table1_seeds or design.looks[0])]
        arms = sequential_claim(design).arms_variants
        return grid_jobs(params, grids.TABLE1) + [
            job for n in looks for job in grid_jobs(dataclasses.replace(params, seeds=tuple(range(n))), arms)]
    if notebook == "05":
        return grid_jobs(params, grids.NOTEBOOKS["05"] + NB05_FUSION)
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

    from ..models.emkum import build_model
    with torch.device("meta"):
        model = build_model(get_config("thesis", variant, overrides={"weights.source": "random"}), pretrained=False)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def checkpoint_gb(variant: str) -> float:
    return parameters(variant) * BYTES_PER_PARAMETER / 1e9


def run_hours() -> tuple[float, float]:
    """GPU-hours of one run of 44,636 steps × 512 pairs: at the thesis's rate, and at the (estimated) H100 goal."""
    pairs = get_config("thesis").train.steps * GLOBAL_BATCH
    return pairs / (THESIS_PAIRS_PER_S / THESIS_GPUS) / 3600, pairs / H100_PAIRS_PER_S / 3600


def table(table1_seeds: int | None = None) -> str:
    """The run table of docs/full_scale.md: per notebook, the runs it reads that no earlier notebook trained."""
    thesis_h, h100_h = run_hours()
    first = sequential.TABLE1_PRIMARY.looks[0]
    rows = []
    groups: dict = {}
    for nb, job in planned_jobs(table1_seeds or sequential.TABLE1_PRIMARY.looks[-1]):
        later = nb == "02" and job["seed"] >= first
        groups.setdefault((nb, later), []).append(job)
    lines = ["| notebook | runs it adds (variant × seeds) | runs | GPU-hours at the thesis's rate | GPU-hours on one "
             "H100, estimated | checkpoints (GB) |", "|---|---|---:|---:|---:|---:|"]
    for (nb, later), jobs in groups.items():
        by = {}
        for j in jobs:
            name = j["variant"] + (f" ({Path(str(j['out_dir'])).name})" if "_ablations" in str(j["out_dir"]) else "")
            by.setdefault(name, []).append(j["seed"])
        what = ", ".join(f"`{v}` × {_seeds(s)}" for v, s in by.items())
        gb = sum(checkpoint_gb(j["variant"]) for j in jobs)
        label = f"{nb}, looks 2-{len(sequential.TABLE1_PRIMARY.looks)} (only while inconclusive)" if later else nb
        lines.append(f"| {label} | {what} | {len(jobs)} | {len(jobs) * thesis_h:,.0f} | {len(jobs) * h100_h:,.0f} | "
                     f"{gb:,.0f} |")
        rows.append((later, len(jobs), gb))
    for scope, keep in (("without the later looks", lambda later: not later), ("at most", lambda later: True)):
        n, gb = sum(r[1] for r in rows if keep(r[0])), sum(r[2] for r in rows if keep(r[0]))
        lines.append(f"| **all, {scope}** | | **{n}** | **{n * thesis_h:,.0f}** | **{n * h100_h:,.0f}** | "
                     f"**{gb:,.0f}** |")
    return "\n".join(lines)


def _seeds(seeds: list) -> str:
    s = sorted(seeds)
    return f"seeds {s[0]}-{s[-1]}" if s == list(range(s[0], s[-1] + 1)) and len(s) > 1 else f"seed {s[0]}"


def cli_args(job: dict, processes: int, quote=lambda v: f'"{v}"') -> list[str]:
    """``python -m thesis_lib.training.run``'s arguments for ``job`` on ``processes`` processes (train.batch_size =
    512 / processes: the same global batch, the same result)."""
    over = dict(job["overrides"])
    root, ckpt = over.pop("data.root"), over.pop("weights.checkpoint_dir")
    over["train.batch_size"] = GLOBAL_BATCH // processes
    return (["-m", "thesis_lib.training.run", "--preset", job["preset"], "--variant", job["variant"], "--seed",
             str(job["seed"]), "--device", "cuda", "--data-root", quote(root), "--checkpoints", quote(ckpt),
             "--out", quote(job["out_dir"])] + [a for k, v in over.items() for a in ("--set", quote(f"{k}={v}"))]
            + ["--resume"])


def commands(layout: str, table1_seeds: int | None = None) -> str:
    """A bash script training every run of the recipe once on ``layout`` (``LAYOUTS``); DATA, CKPT, OUT and MIX
    come from the environment."""
    jobs = [job for _, job in planned_jobs(table1_seeds)]
    head = [f"# python -m thesis_lib.study.recipe commands --layout {layout}"
            + (f" --table1-seeds {table1_seeds}" if table1_seeds else "") + f": {len(jobs)} runs",
            'set -u; : "$DATA" "$CKPT" "$OUT" "$MIX"   # docs/full_scale.md']
    if layout == "1gpu":
        return "\n".join(head + ["python " + " ".join(cli_args(j, 1)) for j in jobs]) + "\n"
    if layout == "8gpu":
        lanes = [jobs[i::LANES] for i in range(LANES)]
        out = head[:]
        for i, lane in enumerate(lanes):
            gpus = f"{2 * i},{2 * i + 1}"
            out.append(f"(   # GPUs {gpus}: {len(lane)} runs one after another")
            out += [f"CUDA_VISIBLE_DEVICES={gpus} torchrun --nproc_per_node 2 --master_port {FIRST_PORT + i} "
                    + " ".join(cli_args(j, 2)) for j in lane]
            out.append(f') > lane{i}.log 2>&1 &')
        return "\n".join(out + ["wait"]) + "\n"
    if layout == "slurm":
        return "\n".join(head + [
            f"sbatch --job-name=tte-{j['variant']}-{j['seed']} --nodes=1 --ntasks=2 --gpus-per-task=1 "
            f"--cpus-per-task=8 --time=12:00:00 --wrap \"srun --kill-on-bad-exit=1 python "
            + " ".join(cli_args(j, 2, quote=lambda v: f"'{v}'")) + '"' for j in jobs]) + "\n"
    raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m thesis_lib.study.recipe", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    sub.add_parser("table", help="the run table (markdown)")
    c = sub.add_parser("commands", help="a bash script training every run once")
    c.add_argument("--layout", choices=LAYOUTS, required=True)
    c.add_argument("--table1-seeds", type=int, default=None,
                   help="train notebook 02's sequential looks up to this many seeds (default: the first look, 4)")
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    print(table() if args.what == "table" else commands(args.layout, args.table1_seeds), end="\n" if
          args.what == "table" else "")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
