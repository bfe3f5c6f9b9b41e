"""The chapter's study as functions the notebooks call: check the papermill parameters, train what is missing over
variants × seeds (reusing finished runs), and turn result files into the tables (mean ± 95 % CI over seeds, paired
differences to the baseline, a verdict per claim) with the thesis's numbers as labelled reference columns.
"""
from __future__ import annotations

import ast
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch
from tqdm import tqdm

from . import reference
from .config import PRESETS, TTE_VARIANTS, VARIANTS, VARIANT_LABELS, get_config
from .errors import ConfigError
from .paths import figures_dir, results_dir
from .results import load_results, read_jsonl
from .stats import ALPHA, PairedTest, decide, fmt, holm, mean_ci, paired_difference, seeds_for_power
from .train import resolve_device, run_experiment

TABLE_METRICS = ("imagenet_top1", "imagenet_top5", "coco_mean", "flickr_mean")
METRIC_LABELS = {"imagenet_top1": "ImageNet top-1", "imagenet_top5": "ImageNet top-5",
                 "coco_mean": "COCO retrieval", "flickr_mean": "Flickr retrieval"}
TEACHER_AUC_MIN = 0.9      # preconditions (notebook 01): the teacher recognises colour and shape
TOP1_MIN = 40.0            # the baseline learns the world: ImageNet stand-in top-1 (percent)
OFF_THE_FLOOR = 5.0        # retrieval: at least this many times what a random ranking scores
PRECISION_TARGETS = {"imagenet_top1": 0.5, "coco_mean": 0.5, "flickr_mean": 0.75}  # 95 % half-width, points


@dataclass(frozen=True)
class StudyParams:
    scale: str
    seeds: tuple
    device: str
    output_dir: str | None
    data_root: str | None
    checkpoints: str | None
    reuse: bool
    extra: tuple = ()        # further config overrides as (dotted field, value) pairs

    @property
    def results_root(self) -> Path:
        return results_dir(self.output_dir)

    @property
    def figures(self) -> Path:
        return figures_dir(self.scale, self.output_dir)

    def overrides(self) -> dict:
        out = {}
        if self.data_root:
            out["data.root"] = self.data_root
        if self.checkpoints:
            out["weights.checkpoint_dir"] = self.checkpoints
        return {**out, **dict(self.extra)}


def default_scale() -> str:
    """The notebooks' default scale: ``THESIS_SCALE`` when set (CI runs them at ``smoke``), else ``demo``."""
    return os.environ.get("THESIS_SCALE", "demo")


def study_params(scale="demo", seeds=(0, 1, 2, 3, 4), device="cpu", output_dir=None, data_root=None, checkpoints=None,
                 reuse=True, need_data: bool = True, overrides: dict | None = None) -> StudyParams:
    """Validate the notebook parameters (papermill passes ``-p`` values as YAML: wrong types arrive as strings).
    ``need_data=False``: a notebook that trains nothing (00) runs at the thesis scale without data or weights."""
    if scale not in PRESETS:
        raise ConfigError(f"parameter scale must be one of {', '.join(PRESETS)}, got {scale!r}")
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
    if not isinstance(reuse, bool):
        raise ConfigError(f"parameter reuse must be True or False, got {reuse!r}")
    resolve_device(device)                                   # DeviceError when the device does not exist
    if need_data and scale == "thesis" and not (data_root and checkpoints):
        raise ConfigError("scale 'thesis' needs data_root (coco/, flickr30k/, imagenet/val/) and checkpoints "
                          "(base_imagenet.pt, nlp_base.pt, beitv2_base_patch16_224_pt1k.pth, tokenizer files)")
    if not isinstance(overrides or {}, dict):
        raise ConfigError(f"parameter overrides must be a mapping of config fields, e.g. {{'train.steps': 100}}, "
                          f"got {overrides!r}")
    get_config(scale, overrides=overrides or {})           # unknown fields and wrong types fail here, early
    return StudyParams(scale, tuple(seeds), device, output_dir, data_root, checkpoints, reuse,
                       tuple(sorted((overrides or {}).items())))


def run_grid(params: StudyParams, variants, progress: bool = True) -> list[dict]:
    """Every (variant, seed): reuse a finished result of the same config, resume an unfinished one, train the rest."""
    for v in variants:
        if v not in VARIANTS:
            raise ConfigError(f"unknown variant {v!r}; choose from {', '.join(VARIANTS)}")
    jobs = [dict(preset=params.scale, variant=v, seed=s, out_dir=params.output_dir, device=params.device, resume=True,
                 overwrite=not params.reuse, overrides=params.overrides()) for v in variants for s in params.seeds]
    return run_many(jobs, progress)


def cpu_workers() -> int:
    """How many runs train at once on CPU: ``THESIS_WORKERS`` when set, else one per core this process may use."""
    if os.environ.get("THESIS_WORKERS"):
        return max(1, int(os.environ["THESIS_WORKERS"]))
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def run_many(jobs: list[dict], progress: bool = True) -> list[dict]:
    """``run_experiment(**job)`` for every job, in order. On CPU each run trains in a worker process on one thread,
    ``cpu_workers()`` runs at once: at the demo's width two one-thread runs do 1.5 × the work of one two-thread run
    (BENCHMARKS.md), and a result does not depend on how many cores the machine has. The world and the demo
    pretraining are prepared here first, once. On a GPU the runs go one after another in this process."""
    if not jobs or resolve_device(jobs[0]["device"]).type != "cpu":
        return [run_experiment(**job, progress=progress) for job in jobs]
    from .prepare import prepare_assets
    for job in {(j["preset"], j["variant"], repr(sorted(j["overrides"].items()))): j for j in jobs}.values():
        prepare_assets(get_config(job["preset"], job["variant"], 0, job["overrides"]))
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(min(cpu_workers(), len(jobs)), mp_context=ctx, initializer=torch.set_num_threads,
                             initargs=(1,)) as pool, \
            tqdm(total=len(jobs), desc="runs", unit="run", disable=not progress) as bar:
        futures = [pool.submit(run_experiment, **job, progress=False) for job in jobs]
        for done in as_completed(futures):
            r = done.result()                                   # a failed run stops the study with its error
            bar.set_postfix_str(f"{r.get('variant')} seed {r.get('seed')}")
            bar.update()
    return [f.result() for f in futures]


def results_frame(params: StudyParams, variants=TTE_VARIANTS) -> pd.DataFrame:
    """One row per finished run of the selected seeds: variant, seed, metrics, LayerScale statistics."""
    rows = []
    for r in load_results(params.results_root, params.scale):
        if r["variant"] in variants and r["seed"] in params.seeds:
            ls = {f"gamma_{k}": v for k, v in r.get("layerscale", {}).items() if isinstance(v, (int, float))}
            tc = {f"tte_ratio_{k}": v for k, v in r.get("tte_contribution", {}).items()}
            ab = {f"{mode}:{m}": v for mode, ms in r.get("tte_ablation", {}).items() for m, v in ms.items()}
            rows.append({"variant": r["variant"], "seed": r["seed"], **r["metrics"], **ls, **tc, **ab,
                         "train_s": r["train"]["time_s"]})
    return pd.DataFrame(rows)


def results_table(df: pd.DataFrame, variants, metrics=TABLE_METRICS, version: str | None = None) -> pd.DataFrame:
    """Mean ± 95 % CI per variant and metric, with the thesis's numbers as reference columns (both versions)."""
    rows = []
    for v in variants:
        sub = df[df.variant == v]
        row = {"variant": VARIANT_LABELS[v], "seeds": len(sub)}
        for m in metrics:
            row[f"{METRIC_LABELS[m]} (ours)"] = fmt(*mean_ci(sub[m]))
            for ver in ([version] if version else ["aug", "final"]):
                value = reference.thesis_value(ver, v, m)
                if ver == "final" and m == "imagenet_top5":
                    continue
                row[f"{METRIC_LABELS[m]} ({reference.SOURCES[ver]})"] = "–" if value is None else f"{value:.2f}"
        rows.append(row)
    return pd.DataFrame(rows).set_index("variant")


def difference_table(df: pd.DataFrame, variants, metrics=TABLE_METRICS) -> pd.DataFrame:
    """Paired (by seed) difference to the baseline, with its own 95 % CI, per variant and metric."""
    rows = []
    for v in variants:
        if v == "baseline":
            continue
        row = {"variant": VARIANT_LABELS[v]}
        for m in metrics:
            mean, half, n = paired_difference(arm_values(df, (v, "none"), m), arm_values(df, ("baseline", "none"), m))
            row[f"Δ {METRIC_LABELS[m]}"] = fmt(mean, half)
        rows.append(row)
    return pd.DataFrame(rows).set_index("variant")


def arm_values(df: pd.DataFrame, arm: tuple, metric: str) -> dict:
    """seed -> metric of one arm of a comparison: (variant, TTE ablation), ablation "none" = as trained."""
    variant, ablation = arm
    column = metric if ablation == "none" else f"{ablation}:{metric}"
    sub = df[df.variant == variant]
    if column not in sub:
        return {}
    return {s: v for s, v in zip(sub.seed, sub[column]) if pd.notna(v)}


def paired_test(df: pd.DataFrame, treated: tuple, control: tuple, metric: str) -> PairedTest:
    """treated − control per seed (over the seeds both arms have), as a PairedTest."""
    a, b = arm_values(df, treated, metric), arm_values(df, control, metric)
    return PairedTest.of([a[s] - b[s] for s in sorted(set(a) & set(b))])


def claim_table(df: pd.DataFrame, claims=reference.CLAIMS) -> pd.DataFrame:
    """One row per claim and metric: the paired difference (95 % and 90 % CI), the thesis's own effect (the
    equivalence margin), the p-value (Holm-adjusted across the claims on the primary metric), the verdict, and the
    seeds a test at that level would need for 80 % power against the thesis's effect at the measured SD.
    Secondary metrics are reported with unadjusted p-values and decide nothing."""
    rows = []
    for claim in claims:
        for metric in (reference.PRIMARY_METRIC, *reference.SECONDARY_METRICS):
            test = paired_test(df, claim.treated, claim.control, metric)
            if test.n == 0:
                continue
            rows.append({"claim": claim, "metric": metric, "primary": metric == reference.PRIMARY_METRIC, "test": test,
                         "margin": reference.thesis_effect(claim.margin_from, metric)})
    primary = [r for r in rows if r["primary"]]
    for r, p in zip(primary, holm([r["test"].p for r in primary], family=len(claims))):
        r["p_adjusted"] = p                                    # the family is every claim, shown or not
    alpha = ALPHA / len(claims)                                # Holm's strictest step
    out = []
    for r in rows:
        t, margin, c = r["test"], r["margin"], r["claim"]
        p = r.get("p_adjusted", t.p)
        out.append({"claim": c.text, "metric": METRIC_LABELS[r["metric"]],
                    "role": "primary" if r["primary"] else "secondary",
                    "difference (95 % CI)": fmt(t.mean, t.half95), "90 % CI": fmt(t.mean, t.half90),
                    "thesis effect (margin)": "–" if margin is None else f"±{margin:.2f}", "seeds": t.n,
                    "p (Holm)" if r["primary"] else "p": round(p, 3),
                    "verdict": decide(t, p, c.direction, margin or 0.0) if r["primary"] else
                    f"({decide(t, p, c.direction, margin or 0.0)})",
                    "seeds for 80 % power": seeds_for_power(margin or 0.0, t.sd, alpha if r["primary"] else ALPHA)})
    table = pd.DataFrame(out)
    if "p" in table:
        table["p (Holm)"] = table["p (Holm)"].fillna(table.pop("p"))
    return table


def precision_table(df: pd.DataFrame, variants=("tte_before", "tte_after_ls")) -> pd.DataFrame:
    """The 95 % half-width of each paired difference to the baseline against its target (PRECISION_TARGETS)."""
    rows = []
    for v in variants:
        for m, target in PRECISION_TARGETS.items():
            t = paired_test(df, (v, "none"), ("baseline", "none"), m)
            rows.append({"variant": VARIANT_LABELS[v], "metric": METRIC_LABELS[m], "seeds": t.n,
                         "SD of the paired difference": round(t.sd, 3), "95 % half-width": round(t.half95, 3),
                         "target": f"≤ {target}", "pass": bool(t.half95 <= target)})
    return pd.DataFrame(rows)


def ablation_table(df: pd.DataFrame, variants, metrics=("coco_mean", "imagenet_top1", "flickr_mean")) -> pd.DataFrame:
    """Each trained TTE model evaluated with its TTE removed and with the two type vectors swapped: the change of
    each metric against the same model as trained, mean ± 95 % CI over seeds."""
    rows = []
    for v in variants:
        for mode in ("removed", "swapped"):
            row = {"variant": VARIANT_LABELS[v], "TTE at evaluation": mode}
            for m in metrics:
                t = paired_test(df, (v, mode), (v, "none"), m)
                row[f"Δ {METRIC_LABELS[m]}"] = fmt(t.mean, t.half95)
            row["seeds"] = t.n
            rows.append(row)
    return pd.DataFrame(rows)


def curves(params: StudyParams, variant: str) -> pd.DataFrame:
    """Training curves (metrics.jsonl) of a variant, all seeds, one row per logged step."""
    rows = []
    for seed in params.seeds:
        path = params.results_root / params.scale / variant / f"seed{seed}" / "metrics.jsonl"
        for r in read_jsonl(path):
            ls = r.pop("layerscale", None) or {}
            rows.append({**r, **{f"gamma_{k}": v for k, v in ls.items()}, "seed": seed, "variant": variant})
    return pd.DataFrame(rows)


def run_random_init(params: StudyParams, progress: bool = True) -> list[dict]:
    """The baseline on the same budget from randomly initialised encoders; the teacher stays the pretrained one.
    Stored apart, under ``results/_ablations/random-init/``."""
    from .checkpoints import part_source
    cfg = get_config(params.scale, overrides=params.overrides())
    teacher = "demo" if cfg.weights.source == "demo" and not cfg.weights.teacher else part_source(cfg, "teacher")
    overrides = {**params.overrides(), "weights.source": "random", "weights.teacher": teacher}
    out = params.results_root / "_ablations" / "random-init"
    return run_many([dict(preset=params.scale, variant="baseline", seed=s, out_dir=out, device=params.device,
                          resume=True, overrides=overrides) for s in params.seeds], progress)


def preconditions(teacher: dict, pretrained: pd.DataFrame, random_init: pd.DataFrame, chance: dict) -> pd.DataFrame:
    """What the chapter's question needs of the demo, computed: the frozen teacher recognises both attributes, the
    pretrained encoders beat random ones (paired by seed), the baseline learns the world. One row per check with
    what was measured, the threshold and whether it passes (None: reported, not a condition)."""
    rows = [(f"teacher recognises {a} (held-out AUC, object-centric pictures)", f"{teacher[f'held_out_auc_{a}']:.3f}",
             f"≥ {TEACHER_AUC_MIN}", teacher[f"held_out_auc_{a}"] >= TEACHER_AUC_MIN) for a in ("colour", "shape")]
    rows += [(f"teacher recognises {a} (held-out AUC, scenes of 1-4 objects)", f"{teacher[key]:.3f}", "reported", None)
             for a in ("colour", "shape") if (key := f"held_out_auc_{a}_scenes") in teacher]
    for m in ("imagenet_top1", "coco_mean", "flickr_mean"):
        mean, half, n = paired_difference(dict(zip(pretrained.seed, pretrained[m])),
                                          dict(zip(random_init.seed, random_init[m])))
        rows.append((f"pretrained − random encoders, {METRIC_LABELS[m]} ({n} seeds, paired 95 % CI)",
                     fmt(mean, half), "CI above 0" if m == "imagenet_top1" else "reported",
                     bool(mean - half > 0) if m == "imagenet_top1" else None))
    top1 = pretrained.imagenet_top1.mean()
    rows.append(("baseline ImageNet top-1 (mean over seeds)", f"{top1:.2f}",
                 f"≥ {TOP1_MIN:g} (chance {chance['imagenet_top1']:.2f})", bool(top1 >= TOP1_MIN)))
    for m in ("coco_mean", "flickr_mean"):
        value = pretrained[m].mean()
        rows.append((f"baseline {METRIC_LABELS[m]} (mean over seeds)", f"{value:.2f}",
                     f"≥ {OFF_THE_FLOOR:g} × chance ({OFF_THE_FLOOR * chance[m]:.2f})",
                     bool(value >= OFF_THE_FLOOR * chance[m])))
    return pd.DataFrame(rows, columns=["check", "measured", "threshold", "pass"])


def paired_comparison(a: pd.DataFrame, b: pd.DataFrame, labels=("a", "b"),
                      metrics=("imagenet_top1", "coco_mean", "flickr_mean")) -> pd.DataFrame:
    """Two sets of runs of the same seeds side by side, with the paired difference a − b and its 95 % CI."""
    rows = {}
    for m in metrics:
        diff = paired_difference(dict(zip(a.seed, a[m])), dict(zip(b.seed, b[m])))
        rows[METRIC_LABELS[m]] = {labels[0]: fmt(*mean_ci(a[m])), labels[1]: fmt(*mean_ci(b[m])),
                                  f"Δ {labels[0]} − {labels[1]}": fmt(diff[0], diff[1])}
    return pd.DataFrame(rows).T
