"""The runs of the fixed designs (``claims/designs.py`` declares them): what a design's block trains, where its runs
lie, and what is measured once a block is done (the held-out curves of the long schedule's snapshots, the paired
models' per-item agreement). A design is passed in; nothing here decides a claim."""
from __future__ import annotations

import dataclasses
import json

from thesis_lib.metrics import COCO_MEAN, FLICKR_MEAN, IMAGENET_TOP1
from thesis_lib.training.results import RunPaths
from . import Log, grid_jobs, run_grid, run_or_collect


def store(params, design):
    """Where the design's own runs lie: ``results/_designs/<name>/`` (under it, ``results/<preset>/…``)."""
    return params.results_root / "_designs" / design.name


def design_jobs(params, design, block: int | None = None) -> list[dict]:
    """``run_experiment``'s arguments for the design's runs (of one block, 1-based; None: all), the study's shared
    runs left out; the study's parameters (preset, device, paths) with the design's overrides."""
    blocks = design.blocks_for(params.preset)
    seeds = blocks[block - 1] if block else tuple(s for b in blocks for s in b)
    block_params = dataclasses.replace(params, seeds=tuple(seeds), output_dir=str(store(params, design)),
                                       extra=tuple(sorted({**dict(params.extra),
                                                           **design.overrides_for(params.preset)}.items())))
    jobs = grid_jobs(block_params, [v for v in design.variants if v not in design.shared])
    return sorted(jobs, key=lambda j: seeds.index(j["seed"]))     # seed by seed: a block cut short leaves whole pairs


def run_design(params, design, block: int | None = None) -> list[dict]:
    """Train the design's runs (one block, or all), reusing finished ones (none where ``design.runs_at`` says no);
    the runs of ``design.shared`` are the study's, trained into its results where missing (at the demo, Table 1's
    sequential design trained the baseline's seeds 4-23: nothing to train)."""
    if not design.runs_at(params.preset):
        Log.terminal(f"{design.name}: nothing to train at {params.preset}, where runs have the thesis's length")
        return []
    if design.shared:                             # the study's own runs: reused where they exist (at the demo: all)
        run_grid(dataclasses.replace(params, seeds=design.seeds_for(params.preset)), design.shared)
    return run_or_collect(params, design_jobs(params, design, block))


def design_params(params, design, own: bool = True):
    """The study's parameters at the design's seeds, reading the design's own store (``own``) or the study's, where
    its shared runs lie."""
    where = store(params, design) if own else params.output_dir
    return dataclasses.replace(params, seeds=design.seeds_for(params.preset), output_dir=str(where) if where else None)


def _evaluated(checkpoints, measure, device: str):
    """(step, ``measure(model, *sets, ctx)``) of each checkpoint in turn, on one thread. The evaluation sets and context
    are the first checkpoint's run's, as it evaluated itself: what every checkpoint of the designs is measured on."""
    from thesis_lib.analysis import load_trained, read_checkpoint
    from thesis_lib.evaluate import evaluation_inputs
    from thesis_lib.evaluation import EvalContext
    from thesis_lib.numerics import one_thread
    from thesis_lib.stored_config import config_of
    from thesis_lib.training.run import resolve_device
    sets, dev = None, resolve_device(device)
    with one_thread():
        for path in checkpoints:
            state = read_checkpoint(path)
            if sets is None:
                cfg = config_of(state["config"])
                tokenizer, sets = evaluation_inputs(cfg)
                ctx = EvalContext.of(cfg, dev, tokenizer.pad_id)
            yield int(state["step"]), measure(load_trained(state, dev), *sets, ctx)


def heldout_curves(params, design, device: str = "cpu") -> None:
    """For each finished run of the design: its kept snapshots and final checkpoint evaluated on the held-out sets,
    written beside its curve (``<run>/heldout.jsonl``: one line per step, ImageNet, COCO and Flickr as
    ``evaluation.evaluate`` measures them); a run whose file exists is skipped."""
    from thesis_lib.evaluation import evaluate
    root = design_params(params, design).results_root
    for v in [v for v in design.variants if v not in design.shared]:
        for s in design.seeds_for(params.preset):
            paths = RunPaths(root, params.preset, v, s)
            out = paths.dir / "heldout.jsonl"
            if out.exists() or not paths.result.exists():
                continue
            final = int(json.loads(paths.result.read_text())["train"]["steps"])
            snaps = [p for p in sorted(paths.dir.glob("checkpoint-step*.pt"), key=_step) if _step(p) != final]
            rows = [{"step": step, **{k: m[k] for k in (IMAGENET_TOP1, COCO_MEAN, FLICKR_MEAN)}}
                    for step, m in _evaluated([p for p in snaps + [paths.checkpoint] if p.exists()], evaluate, device)]
            out.write_text("".join(json.dumps(r) + "\n" for r in sorted(rows, key=lambda r: r["step"])))


def _step(snapshot) -> int:
    """The step of a kept snapshot, ``checkpoint-step<N>.pt``."""
    return int(snapshot.stem.split("step")[1])


def agreement_file(params, design):
    """Where the per-item agreement measured on the design's paired checkpoints is recorded."""
    return design_params(params, design).results_root / params.preset / "item_agreement.json"


def merged_agreement(path, measured: dict) -> dict:
    """The seeds measured now and those recorded in ``path`` before (their checkpoints, git-ignored, may be gone: a
    block trained in an earlier session or on another machine), a seed measured now replacing its record."""
    recorded = {int(k): v for k, v in json.loads(path.read_text())["per_seed"].items()} if path.exists() else {}
    return dict(sorted({**recorded, **measured}.items()))


def measure_agreement(params, design, device: str = "cpu") -> dict:
    """The per-item agreement φ of each seed's two paired models (the design's baseline and TTE', final checkpoints;
    seeds recorded before kept, ``merged_agreement``), and its mean over the seeds, written to ``agreement_file``: how
    much closer than two independent samples of the test set two paired models' scores are (``item_agreement``)."""
    from .item_agreement import agreement, item_hits
    root, pairs = design_params(params, design).results_root, {}
    for s in design.seeds_for(params.preset):
        pair = [RunPaths(root, params.preset, v, s) for v in design.variants]
        if all(r.result.exists() and r.checkpoint.exists() for r in pair):   # finished runs only: a run in training
            pairs[s] = [r.checkpoint for r in pair]                           # has a checkpoint of its last step
    hits = [h for _, h in _evaluated([c for pair in pairs.values() for c in pair], item_hits, device)]
    measured = {s: agreement(*hits[2 * i:2 * i + 2]) for i, s in enumerate(pairs)}
    per_seed = merged_agreement(agreement_file(params, design), measured)
    kinds = sorted({k for a in per_seed.values() for k in a})
    out = {"pairs": f"{design.variants[0]} vs {design.variants[1]}", "seeds": sorted(per_seed), "per_seed": per_seed,
           "mean_phi": {k: sum(a[k]["phi"] for a in per_seed.values()) / len(per_seed) for k in kinds}}
    if per_seed:
        agreement_file(params, design).write_text(json.dumps(out, indent=1) + "\n")
    return out
