"""The chapter's study as functions the notebooks call: check the papermill parameters, train what is missing over
variants × seeds (reusing finished runs), and turn result files into the tables (mean ± 95 % CI over seeds, paired
differences to the baseline, a verdict per claim) with the thesis's numbers as labelled reference columns.
"""
from __future__ import annotations

import dataclasses
import itertools

import pandas as pd

from thesis_lib.metrics import (CLAIMED, COCO_MEAN, FLICKR_MEAN, HEADLINE, IMAGENET_TOP1, IMAGENET_TOP5, METRICS,
                                PRECISION, PRIMARY, TABLE, TTE_SHARE_IMAGE, label)
from thesis_lib.variants import VARIANT_LABELS, VARIANT_SPECS, VariantSpec
from .. import grids, reference, runs
from ..grids import BASELINE
from ..results import arm_values, column, results_frame, runs_of
from .paired import paired_test
from .stats import fmt, mean_ci, paired_difference

TEACHER_AUC_MIN = 0.9      # preconditions (notebook 01): the teacher recognises colour and shape
TOP1_MIN = 40.0            # the baseline learns the world: ImageNet stand-in top-1 (percent)
OFF_THE_FLOOR = 5.0        # retrieval: at least this many times what a random ranking scores


def study_frame(params, variants) -> pd.DataFrame:
    """``results_frame`` of ``variants`` over the study's seeds (``runs.SEEDS``), whatever ``params`` selects."""
    return results_frame(dataclasses.replace(params, seeds=runs.SEEDS), variants)


def tte_share(df: pd.DataFrame, variant: str) -> float | None:
    """The TTE's mean share of the shared block's image input (percent) over ``variant``'s runs; None without."""
    runs = runs_of(df, variant)
    return float(runs[TTE_SHARE_IMAGE].mean()) * 100 if len(runs) and TTE_SHARE_IMAGE in runs else None


def declared_variants(variants) -> pd.DataFrame:
    """What each variant changes, read from the registry (``thesis_lib/variants.py``): fields left at their
    defaults are blank."""
    default = VariantSpec("")
    rows = [{"variant": v, "label": VARIANT_SPECS[v].label,
             **{f.name: getattr(VARIANT_SPECS[v], f.name) for f in dataclasses.fields(VariantSpec)
                if f.name not in ("label", "short") and getattr(VARIANT_SPECS[v], f.name) != getattr(default, f.name)}}
            for v in variants]
    return pd.DataFrame(rows).set_index("variant").fillna("")


def declared_claims(families=None, claims=reference.CLAIMS) -> pd.DataFrame:
    """The claims as decided, fixed before any run: the paired contrast, the direction, the Holm family, the
    primary metric and the thesis's relative effect that becomes the smallest effect of interest (``sesoi``).
    ``families``: only the claims of these families (a name or several; default all)."""
    families = (families,) if isinstance(families, str) else families
    claims = [c for c in claims if families is None or c.family in families]
    def arm(a):
        return a[0] + ("" if a[1] == "none" else f" (TTE {a[1]} at evaluation)")

    def contrast(c):
        return " ".join(f"{'+' if w > 0 else '−'} {'' if abs(w) == 1 else f'{abs(w):g}·'}{arm(a)}"
                        for a, w in c.contrast).lstrip("+ ")
    rel = lambda c: reference.relative_effect(c.margin_from, PRIMARY)  # noqa: E731
    return pd.DataFrame([{"claim": c.text, "family (Holm)": c.family, "contrast": contrast(c),
                          "says": "higher" if c.direction > 0 else "lower", "decided on": label(PRIMARY),
                          "smallest effect of interest": f"±{abs(rel(c)) * 100:.2f} % of the baseline"}
                         for c in claims]).set_index("claim")


def summary(df: pd.DataFrame, variants, metrics=TABLE, name=label) -> pd.DataFrame:
    """Mean ± 95 % CI over seeds (``stats.mean_ci``, Student t) per variant and metric: the one summary every
    notebook, the README's results block and the figures use; "–" for a metric the variant's results lack."""
    rows = [{"variant": VARIANT_LABELS[v], "seeds": len(runs_of(df, v)),
             **{name(m): fmt(*mean_ci(column(runs_of(df, v), m)), METRICS[m].digits) for m in metrics}}
            for v in variants]
    return pd.DataFrame(rows).set_index("variant")


def results_table(df: pd.DataFrame, variants, metrics=TABLE) -> pd.DataFrame:
    """``summary`` with the thesis's numbers as reference columns beside each of ours, under a two-level column index
    (metric, source): sources "ours", "thesis Aug 2024" (the chapter's EMKUM, Data2Vec2 text) and "thesis final" (the
    final text, BERT text); ``reference.SOURCES`` spells them out. The final text reports no ImageNet top-5."""
    names = {"aug": "thesis Aug 2024", "final": "thesis final"}
    ours = summary(df, variants, metrics).set_index(pd.Index(variants))
    table = pd.DataFrame({("seeds", "ours"): ours["seeds"]})
    for m in metrics:
        table[(label(m), "ours")] = ours[label(m)]
        for ver in [ver for ver in names if not (ver == "final" and m == IMAGENET_TOP5)]:
            table[(label(m), names[ver])] = [
                "–" if (x := reference.thesis_value(ver, v, m)) is None else f"{x:.2f}" for v in variants]
    table.index = pd.Index([VARIANT_LABELS[v] for v in variants], name="variant")
    return table.reindex(columns=pd.MultiIndex.from_tuples(table.columns, names=["metric", "source"]))


def difference_table(df: pd.DataFrame, variants, metrics=TABLE) -> pd.DataFrame:
    """Paired (by seed) difference to the baseline, with its own 95 % CI, per variant and metric."""
    def cell(v, m) -> str:
        mean, half, _ = paired_difference(arm_values(df, (v, "none"), m), arm_values(df, (BASELINE, "none"), m))
        return fmt(mean, half)
    rows = [{"variant": VARIANT_LABELS[v], **{f"Δ {label(m)}": cell(v, m) for m in metrics}}
            for v in variants if v != BASELINE]
    return pd.DataFrame(rows).set_index("variant")


def factorial_means(df: pd.DataFrame, metric: str = PRIMARY, variants=grids.TABLE1) -> pd.DataFrame:
    """Table 1 as a 2 × 2 (notebook 02): the mean ± 95 % CI of each cell, input LayerNorm kept / skipped × TTE
    before no / yes, each variant placed by what its registry entry changes; the effects and their interaction are
    rows of ``claim_table``."""
    cells = {("kept" if VARIANT_SPECS[v].image_input_norm else "skipped", "yes" if VARIANT_SPECS[v].tte else "no"): v
             for v in variants}
    table = pd.DataFrame({f"TTE before: {t}": {f"input LayerNorm {ln}": fmt(*mean_ci(column(runs_of(df, v), metric)))
                                               for (ln, tt), v in cells.items() if tt == t} for t in ("no", "yes")})
    return table.rename_axis(label(metric))


def precision_table(df: pd.DataFrame, variants=grids.PRECISION) -> pd.DataFrame:
    """The 95 % half-width of each paired difference to the baseline against its target (``metrics.PRECISION``)."""
    rows = []
    for v in variants:
        for m, target in PRECISION.items():
            t = paired_test(df, (v, "none"), (BASELINE, "none"), m)
            rows.append({"variant": VARIANT_LABELS[v], "metric": label(m), "seeds": t.n,
                         "SD of the paired difference": round(t.sd, 3), "95 % half-width": round(t.half95, 3),
                         "target": f"≤ {target}", "pass": bool(t.half95 <= target)})
    return pd.DataFrame(rows)


def ablation_table(df: pd.DataFrame, variants, metrics=CLAIMED) -> pd.DataFrame:
    """Each trained TTE model evaluated with its TTE removed and with the two type vectors swapped: the change of
    each metric against the same model as trained, mean ± 95 % CI over seeds."""
    rows = []
    for v, mode in itertools.product(variants, ("removed", "swapped")):
        tests = {m: paired_test(df, (v, mode), (v, "none"), m) for m in metrics}
        rows.append({"variant": VARIANT_LABELS[v], "TTE at evaluation": mode,
                     **{f"Δ {label(m)}": fmt(t.mean, t.half95) for m, t in tests.items()},
                     "seeds": tests[metrics[-1]].n})
    return pd.DataFrame(rows)


def preconditions(teacher: dict, pretrained: pd.DataFrame, random_init: pd.DataFrame, chance: dict) -> pd.DataFrame:
    """What the chapter's question needs of the demo, computed: the frozen teacher recognises both attributes, the
    pretrained encoders beat random ones (paired by seed), the baseline learns the world. One row per check with
    what was measured, the threshold and whether it passes (None: reported, not a condition)."""
    rows = [(f"teacher recognises {a} (held-out AUC, object-centric pictures)", f"{teacher[f'held_out_auc_{a}']:.3f}",
             f"≥ {TEACHER_AUC_MIN}", teacher[f"held_out_auc_{a}"] >= TEACHER_AUC_MIN) for a in ("colour", "shape")]
    rows += [(f"teacher recognises {a} (held-out AUC, scenes of 1-4 objects: what distillation trains on)",
              f"{teacher[key]:.3f}", f"≥ {TEACHER_AUC_MIN} {'met' if teacher[key] >= TEACHER_AUC_MIN else 'NOT met'}"
              " (reported, decides nothing)", None)
             for a in ("colour", "shape") if (key := f"held_out_auc_{a}_scenes") in teacher]
    for m in HEADLINE:
        mean, half, n = paired_difference(dict(zip(pretrained.seed, pretrained[m])),
                                          dict(zip(random_init.seed, random_init[m])))
        rows.append((f"pretrained − random encoders, {label(m)} ({n} seeds, paired 95 % CI)",
                     fmt(mean, half), "CI above 0" if m == IMAGENET_TOP1 else "reported",
                     bool(mean - half > 0) if m == IMAGENET_TOP1 else None))
    top1 = pretrained[IMAGENET_TOP1].mean()
    rows.append(("baseline ImageNet top-1 (mean over seeds)", f"{top1:.2f}",
                 f"≥ {TOP1_MIN:g} (chance {chance[IMAGENET_TOP1]:.2f})", bool(top1 >= TOP1_MIN)))
    for m in (COCO_MEAN, FLICKR_MEAN):
        value = pretrained[m].mean()
        rows.append((f"baseline {label(m)} (mean over seeds)", f"{value:.2f}",
                     f"≥ {OFF_THE_FLOOR:g} × chance ({OFF_THE_FLOOR * chance[m]:.2f})",
                     bool(value >= OFF_THE_FLOOR * chance[m])))
    return pd.DataFrame(rows, columns=["check", "measured", "threshold", "pass"])
