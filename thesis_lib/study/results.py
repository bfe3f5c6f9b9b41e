"""Stage 2 of the study, the results: the result files of finished runs read into one table (the results frame: one
row per run, one column per metric and statistic) and the per-seed values of a comparison's arms, which the claims
(stage 3) test and the pages (stage 4) show. It reads what the runs (stage 1) wrote and decides nothing."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from thesis_lib.config import get_config
from thesis_lib.data.world import CLASSES
from thesis_lib.metrics import IMAGENET_TOP1, IMAGENET_TOP5, TTE_SHARE, key
from thesis_lib.training.results import RunPaths, load_results, read_jsonl
from . import grids, reference
from .runs import StudyParams
from .runs.designs import agreement_file, design_params


def items_of(df: pd.DataFrame) -> dict:
    """The test-set sizes of the runs in a results frame (the real ones when it does not say its preset)."""
    return eval_items(df["preset"].iloc[0]) if "preset" in df and len(df) else reference.TEST_ITEMS


def eval_items(preset: str) -> dict:
    """{"coco" | "flickr": (images, captions), "imagenet": (images, classes)} of the preset's test sets: the
    world's when it makes them (5 captions per image, 48 classes), else the real ones (``reference.TEST_ITEMS``)."""
    cfg = get_config(preset)
    if cfg.data.source != "world":
        return reference.TEST_ITEMS
    w = cfg.data.world
    return {"coco": (w.n_coco_test, 5 * w.n_coco_test), "flickr": (w.n_flickr_test, 5 * w.n_flickr_test),
            "imagenet": (w.n_zeroshot_per_class * len(CLASSES), len(CLASSES))}


def results_frame(params: StudyParams, variants=grids.TTE, seeds=None) -> pd.DataFrame:
    """One row per finished run of the selected seeds (``seeds``, else ``params.seeds``): variant, seed, metrics,
    LayerScale statistics, the TTE's share, the modality probe, the TTE ablations, the training time."""
    seeds = set(params.seeds if seeds is None else seeds)
    rows, known = [], recorded_machines(params.results_root)
    for r in load_results(params.results_root, params.preset):
        if r["variant"] in variants and r["seed"] in seeds:
            ls = {f"gamma_{k}": v for k, v in r.get("layerscale", {}).items() if isinstance(v, (int, float))}
            tc = {TTE_SHARE[k]: v for k, v in r.get("tte_contribution", {}).items()}
            tc |= {f"probe_{k}": v for k, v in r.get("modality_probe", {}).items()}
            ab = {f"{mode}:{m}": v for mode, ms in r.get("tte_ablation", {}).items() for m, v in ms.items()}
            rows.append({"preset": r["preset"], "variant": r["variant"], "seed": r["seed"], **r["metrics"], **ls, **tc,
                         **ab, "train_s": r["train"]["time_s"],
                         "machine": machine_label(r.get("machine"), known(r["preset"], r["variant"], r["seed"]))})
    return pd.DataFrame(rows, columns=None if rows else ["preset", "variant", "seed"])   # no runs: still a table


def recorded_machines(results_root):
    """(preset, variant, seed) -> the machine ``machines.csv`` beside a store's results names for runs written before
    result files recorded their own (2026-12-07), from the commits and measurements that trained them; None where
    it names none."""
    path = Path(results_root) / "machines.csv"
    rows = pd.read_csv(path, dtype=str).to_dict("records") if path.exists() else []

    def seeds(spec: str) -> set:
        return {s for part in spec.split(",") for a, _, b in [part.strip().partition("-")]
                for s in range(int(a), int(b or a) + 1)}

    def known(at: str, variant: str, seed: int):
        for row in reversed(rows):              # the last line that matches: a narrower one follows a broader one
            if row["preset"] == at and (row["variants"] == "*" or variant in row["variants"].split()) and \
                    (row["seeds"] == "*" or seed in seeds(row["seeds"])):
                return row["machine"]
        return None
    return known


def machine_label(machine: dict | None, recorded: str | None = None) -> str:
    """A result's machine as a table names it: the CPU by family and model, the GPU where one was used; for a result
    written before machines were recorded, ``recorded`` (``recorded_machines``), else "not recorded"."""
    if not machine:
        return recorded or "not recorded"
    cpu = f"{machine['cpu']} (family {machine['cpu_family']} model {machine['cpu_model']})"
    return f"{machine['gpu']} on {cpu}" if machine.get("gpu") else cpu


def runs_of(df: pd.DataFrame, variant: str) -> pd.DataFrame:
    """The rows (one per seed) of one variant."""
    return df[df["variant"].eq(variant)]


def column(df: pd.DataFrame, metric: str):
    """A metric's column of a results frame; empty where no stored result holds the metric (a table shows "–")."""
    return df[metric] if metric in df else pd.Series(dtype=float)


def arm_values(df: pd.DataFrame, arm: tuple, metric: str) -> dict:
    """seed -> metric of one arm of a comparison: (variant, TTE ablation), ablation "none" = as trained."""
    variant, ablation = arm
    column = metric if ablation == "none" else f"{ablation}:{metric}"
    sub = runs_of(df, variant)
    if column not in sub:
        return {}
    return {s: v for s, v in zip(sub.seed, sub[column]) if pd.notna(v)}


def contrast_values(df: pd.DataFrame, contrast, metric: str) -> dict:
    """seed -> Σ weight × metric over the contrast's arms (the seeds every arm has)."""
    values = [arm_values(df, arm, metric) for arm, _ in contrast]
    seeds = sorted(set.intersection(*(set(v) for v in values))) if values else []
    return {s: sum(w * v[s] for (_, w), v in zip(contrast, values)) for s in seeds}


def curves(params: StudyParams, variant: str) -> pd.DataFrame:
    """Training curves (metrics.jsonl) of a variant, all seeds, one row per logged step."""
    rows = []
    for seed in params.seeds:
        for r in read_jsonl(RunPaths(params.results_root, params.preset, variant, seed).metrics):
            ls, ratio = r.pop("layerscale", None) or {}, r.pop("tte_ratio", None) or {}
            rows.append({**r, **{f"gamma_{k}": v for k, v in ls.items()},
                         **{TTE_SHARE[k]: v for k, v in ratio.items()}, "seed": seed, "variant": variant})
    return pd.DataFrame(rows)


def design_frame(params, design):
    """``results_frame`` of the design's runs on its seeds: its own variants from its store, the shared ones
    from the study's results."""
    own = [v for v in design.variants if v not in design.shared]
    frames = [results_frame(design_params(params, design), own)]
    if design.shared:
        frames.append(results_frame(design_params(params, design, own=False), design.shared))
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def curves_frame(params, design):
    """The held-out curves (``heldout_curves``) of the design's runs: one row per (variant, seed, step)."""
    root, rows = design_params(params, design).results_root, []
    for v in [v for v in design.variants if v not in design.shared]:
        for s in design.seeds_for(params.preset):
            path = RunPaths(root, params.preset, v, s).dir / "heldout.jsonl"          # [] where none was written
            rows += [{"variant": v, "seed": s, **row} for row in read_jsonl(path)]
    return pd.DataFrame(rows)


def recorded_agreement(params, design) -> dict | None:
    """{metric: φ} as recorded by ``measure_agreement`` (None before it ran): ImageNet top-1 and top-5 from the
    top-1 items, a retrieval mean from its R@1 items both ways (mean φ over the seeds)."""
    path = agreement_file(params, design)
    if not path.exists():
        return None
    per = json.loads(path.read_text())["mean_phi"]
    out = {IMAGENET_TOP1: per[IMAGENET_TOP1], IMAGENET_TOP5: per[IMAGENET_TOP1]}
    for test in ("coco", "flickr"):
        kinds = [per[k] for k in (key(test, "ir@1"), key(test, "tr@1")) if k in per]
        if kinds:
            out[key(test, "mean")] = sum(kinds) / len(kinds)
    return out
