"""The chapter's study as functions the notebooks call: check the papermill parameters, train what is missing over
variants × seeds (reusing finished runs), and turn result files into the tables (mean ± 95 % CI over seeds, paired
differences to the baseline, a verdict per claim) with the thesis's numbers as labelled reference columns.
"""
from __future__ import annotations

import dataclasses

import pandas as pd

from ..training.results import load_results, read_jsonl
from ..variants import TTE_VARIANTS, VARIANT_LABELS, VARIANT_SPECS, VariantSpec
from . import reference
from .runs import StudyParams
from .stats import ALPHA, PairedTest, decide, fmt, holm, mean_ci, paired_difference, seeds_for_power

TABLE_METRICS = ("imagenet_top1", "imagenet_top5", "coco_mean", "flickr_mean")
METRIC_LABELS = {"imagenet_top1": "ImageNet top-1", "imagenet_top5": "ImageNet top-5",
                 "coco_mean": "COCO retrieval", "flickr_mean": "Flickr retrieval",
                 "flickr_itm_acc": "Flickr ITM acc. (hard negative)", "flickr_itm_acc_random": "Flickr ITM acc. (random)",
                 "flickr_rerank_mean": "Flickr retrieval, re-ranked"}
TEACHER_AUC_MIN = 0.9      # preconditions (notebook 01): the teacher recognises colour and shape
TOP1_MIN = 40.0            # the baseline learns the world: ImageNet stand-in top-1 (percent)
OFF_THE_FLOOR = 5.0        # retrieval: at least this many times what a random ranking scores
PRECISION_TARGETS = {"imagenet_top1": 0.5, "coco_mean": 0.5, "flickr_mean": 0.75}  # 95 % half-width, points


def declared_variants(variants) -> pd.DataFrame:
    """What each variant changes, read from the registry (``thesis_lib/variants.py``): fields left at their
    defaults are blank."""
    default = VariantSpec("")
    rows = [{"variant": v, "label": VARIANT_SPECS[v].label,
             **{f.name: getattr(VARIANT_SPECS[v], f.name) for f in dataclasses.fields(VariantSpec)
                if f.name != "label" and getattr(VARIANT_SPECS[v], f.name) != getattr(default, f.name)}}
            for v in variants]
    return pd.DataFrame(rows).set_index("variant").fillna("")


def declared_claims(claims=reference.CLAIMS) -> pd.DataFrame:
    """The claims as decided: the paired comparison, the direction, the primary metric and its equivalence margin
    (the thesis's own effect), fixed before any run; the verdict is one of ``stats.VERDICTS``."""
    arm = lambda a: a[0] + ("" if a[1] == "none" else f", TTE {a[1]} at evaluation")  # noqa: E731
    return pd.DataFrame([{"claim": c.text, "treated − control": f"{arm(c.treated)} − {arm(c.control)}",
                          "says": "higher" if c.direction > 0 else "lower",
                          "decided on": METRIC_LABELS[reference.PRIMARY_METRIC],
                          "margin": f"±{reference.thesis_effect(c.margin_from, reference.PRIMARY_METRIC):.2f}"}
                         for c in claims]).set_index("claim")


def results_frame(params: StudyParams, variants=TTE_VARIANTS) -> pd.DataFrame:
    """One row per finished run of the selected seeds: variant, seed, metrics, LayerScale statistics."""
    rows = []
    for r in load_results(params.results_root, params.preset):
        if r["variant"] in variants and r["seed"] in params.seeds:
            ls = {f"gamma_{k}": v for k, v in r.get("layerscale", {}).items() if isinstance(v, (int, float))}
            tc = {f"tte_ratio_{k}": v for k, v in r.get("tte_contribution", {}).items()}
            ab = {f"{mode}:{m}": v for mode, ms in r.get("tte_ablation", {}).items() for m, v in ms.items()}
            rows.append({"variant": r["variant"], "seed": r["seed"], **r["metrics"], **ls, **tc, **ab,
                         "train_s": r["train"]["time_s"]})
    return pd.DataFrame(rows)


def runs_of(df: pd.DataFrame, variant: str) -> pd.DataFrame:
    """The rows (one per seed) of one variant."""
    return df[df["variant"].eq(variant)]


def summary(df: pd.DataFrame, variants, metrics=TABLE_METRICS, suffix: str = "") -> pd.DataFrame:
    """Mean ± 95 % CI over seeds (``stats.mean_ci``, Student t) per variant and metric: the one summary every
    notebook, the README's results block and the figures use."""
    rows = [{"variant": VARIANT_LABELS[v], "seeds": len(runs_of(df, v)),
             **{METRIC_LABELS[m] + suffix: fmt(*mean_ci(runs_of(df, v)[m])) for m in metrics}} for v in variants]
    return pd.DataFrame(rows).set_index("variant")


def results_table(df: pd.DataFrame, variants, metrics=TABLE_METRICS, version: str | None = None) -> pd.DataFrame:
    """``summary`` with the thesis's numbers as reference columns beside each of ours (both versions)."""
    ours = summary(df, variants, metrics, suffix=" (ours)")
    rows = []
    for v in variants:
        row = {"variant": VARIANT_LABELS[v], "seeds": ours.loc[VARIANT_LABELS[v], "seeds"]}
        for m in metrics:
            row[f"{METRIC_LABELS[m]} (ours)"] = ours.loc[VARIANT_LABELS[v], f"{METRIC_LABELS[m]} (ours)"]
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
    sub = runs_of(df, variant)
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
        path = params.results_root / params.preset / variant / f"seed{seed}" / "metrics.jsonl"
        for r in read_jsonl(path):
            ls = r.pop("layerscale", None) or {}
            rows.append({**r, **{f"gamma_{k}": v for k, v in ls.items()}, "seed": seed, "variant": variant})
    return pd.DataFrame(rows)


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
