"""The chapter's study as functions the notebooks call: check the papermill parameters, train what is missing over
variants × seeds (reusing finished runs), and turn result files into the tables (mean ± 95 % CI over seeds, paired
differences to the baseline, a verdict per claim) with the thesis's numbers as labelled reference columns.
"""
from __future__ import annotations

import dataclasses
import math

import pandas as pd

from thesis_lib.config import get_config
from thesis_lib.data.world import CLASSES
from thesis_lib.metrics import CLAIMED, HEADLINE, METRICS, PRECISION, PRIMARY, TABLE, label
from thesis_lib.training.results import RunPaths, load_results, read_jsonl
from thesis_lib.variants import VARIANT_LABELS, VARIANT_SPECS, VariantSpec
from .. import grids, reference
from ..statistics import sequential
from ..grids import BASELINE
from ..runs import StudyParams
from ..statistics.stats import (ALPHA, PairedTest, decide, fmt, fmt_p, fmt_seeds, holm, mean_ci, paired_difference, seeds_needed,
                    words)

TEACHER_AUC_MIN = 0.9      # preconditions (notebook 01): the teacher recognises colour and shape
TOP1_MIN = 40.0            # the baseline learns the world: ImageNet stand-in top-1 (percent)
OFF_THE_FLOOR = 5.0        # retrieval: at least this many times what a random ranking scores


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
                          "says": "higher" if c.direction > 0 else "lower",
                          "decided on": label(PRIMARY),
                          "smallest effect of interest": f"±{abs(rel(c)) * 100:.2f} % of the baseline"}
                         for c in claims]).set_index("claim")


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


def results_frame(params: StudyParams, variants=grids.TTE, sequential_seeds: bool = False) -> pd.DataFrame:
    """One row per finished run of the selected seeds: variant, seed, metrics, LayerScale statistics.
    ``sequential_seeds``: also the seeds a sequential design added (``claims_frame``)."""
    seeds = set(params.seeds) | (set(range(max((d.looks[-1] for d in sequential.DESIGNS.values()), default=0)))
                                 if sequential_seeds else set())
    rows = []
    for r in load_results(params.results_root, params.preset):
        if r["variant"] in variants and r["seed"] in seeds:
            ls = {f"gamma_{k}": v for k, v in r.get("layerscale", {}).items() if isinstance(v, (int, float))}
            tc = {f"tte_ratio_{k}": v for k, v in r.get("tte_contribution", {}).items()}
            tc |= {f"probe_{k}": v for k, v in r.get("modality_probe", {}).items()}
            ab = {f"{mode}:{m}": v for mode, ms in r.get("tte_ablation", {}).items() for m, v in ms.items()}
            rows.append({"preset": r["preset"], "variant": r["variant"], "seed": r["seed"], **r["metrics"], **ls, **tc, **ab,
                         "train_s": r["train"]["time_s"]})
    return pd.DataFrame(rows)


def runs_of(df: pd.DataFrame, variant: str) -> pd.DataFrame:
    """The rows (one per seed) of one variant."""
    return df[df["variant"].eq(variant)]


def column(df: pd.DataFrame, metric: str):
    """A metric's column of a results frame; empty where no stored result holds the metric (a table shows "–")."""
    return df[metric] if metric in df else pd.Series(dtype=float)


def summary(df: pd.DataFrame, variants, metrics=TABLE, suffix: str = "") -> pd.DataFrame:
    """Mean ± 95 % CI over seeds (``stats.mean_ci``, Student t) per variant and metric: the one summary every
    notebook, the README's results block and the figures use; "–" for a metric the variant's results lack."""
    rows = [{"variant": VARIANT_LABELS[v], "seeds": len(runs_of(df, v)),
             **{label(m) + suffix: fmt(*mean_ci(column(runs_of(df, v), m))) for m in metrics}} for v in variants]
    return pd.DataFrame(rows).set_index("variant")


def results_table(df: pd.DataFrame, variants, metrics=TABLE, version: str | None = None) -> pd.DataFrame:
    """``summary`` with the thesis's numbers as reference columns beside each of ours (both versions, or
    ``version``), under a two-level column index (metric, source): sources "ours", "thesis Aug 2024" (the chapter's
    EMKUM, Data2Vec2 text) and "thesis final" (the final text, BERT text); ``reference.SOURCES`` spells them out.
    The final text reports no ImageNet top-5."""
    short = {"aug": "thesis Aug 2024", "final": "thesis final"}
    ours = summary(df, variants, metrics)
    columns = [("seeds", "ours")] + [
        (label(m), source) for m in metrics
        for source in ["ours"] + [short[ver] for ver in ([version] if version else ["aug", "final"])
                                  if not (ver == "final" and m == "imagenet_top5")]]
    rows = []
    for v in variants:
        row = {("seeds", "ours"): ours.loc[VARIANT_LABELS[v], "seeds"]}
        for m in metrics:
            row[(label(m), "ours")] = ours.loc[VARIANT_LABELS[v], label(m)]
            for ver in ([version] if version else ["aug", "final"]):
                if ver == "final" and m == "imagenet_top5":
                    continue
                value = reference.thesis_value(ver, v, m)
                row[(label(m), short[ver])] = "–" if value is None else f"{value:.2f}"
        rows.append(row)
    table = pd.DataFrame(rows, index=pd.Index([VARIANT_LABELS[v] for v in variants], name="variant"))
    return table.reindex(columns=pd.MultiIndex.from_tuples(columns, names=["metric", "source"]))


def difference_table(df: pd.DataFrame, variants, metrics=TABLE) -> pd.DataFrame:
    """Paired (by seed) difference to the baseline, with its own 95 % CI, per variant and metric."""
    rows = []
    for v in variants:
        if v == BASELINE:
            continue
        row = {"variant": VARIANT_LABELS[v]}
        for m in metrics:
            mean, half, n = paired_difference(arm_values(df, (v, "none"), m), arm_values(df, (BASELINE, "none"), m))
            row[f"Δ {label(m)}"] = fmt(mean, half)
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


def paired_test(df: pd.DataFrame, treated: tuple, control: tuple, metric: str, resolution: float = 0.0) -> PairedTest:
    """treated − control per seed (over the seeds both arms have), as a PairedTest."""
    return contrast_test(df, ((treated, 1.0), (control, -1.0)), metric, resolution)


def contrast_values(df: pd.DataFrame, contrast, metric: str) -> dict:
    """seed -> Σ weight × metric over the contrast's arms (the seeds every arm has)."""
    values = [arm_values(df, arm, metric) for arm, _ in contrast]
    seeds = sorted(set.intersection(*(set(v) for v in values))) if values else []
    return {s: sum(w * v[s] for (_, w), v in zip(contrast, values)) for s in seeds}


def contrast_test(df: pd.DataFrame, contrast, metric: str, resolution: float = 0.0) -> PairedTest:
    """The contrast per seed as a PairedTest."""
    return PairedTest.of(list(contrast_values(df, contrast, metric).values()), resolution)


def claim_seeds(claim, values: dict) -> list:
    """The seeds a claim is decided on: all its arms share, or, for a sequential claim
    (``sequential.DESIGNS``), the first seeds up to its last look reached."""
    seeds, design = sorted(values), sequential.DESIGNS.get(claim.text)
    if design is None or len(seeds) < design.looks[0]:
        return seeds
    return seeds[:max(n for n in design.looks if n <= len(seeds))]


def _claim_rows(df: pd.DataFrame, claims) -> list[dict]:
    """Per claim and metric whose arms have runs: the per-seed contrasts, their PairedTest (at the metric's
    resolution), the smallest effect of interest and the thesis's effect carried to our baseline's mean (over the
    claim's seeds), the levels of its tests (a sequential claim's look: ``sequential``), the Holm p within the
    claim's family (primary metric), the verdict (``stats.decide``) and its words (``stats.words``)."""
    declared = tuple(dict.fromkeys((*reference.CLAIMS, *claims)))   # a family is every declared claim, shown or not
    families = tuple(dict.fromkeys(c.family for c in declared))
    items, sizes = items_of(df), {f: sum(c.family == f for c in declared) for f in families}
    rows = []
    for claim in claims:
        design = sequential.DESIGNS.get(claim.text)
        for metric in CLAIMED:
            values = contrast_values(df, claim.contrast, metric)
            seeds = claim_seeds(claim, values)
            if not seeds:
                continue
            base = arm_values(df, (BASELINE, "none"), metric)
            control = _mean_over(base, seeds)
            rel = reference.relative_effect(claim.margin_from, metric)
            primary = metric == PRIMARY
            first_look = seeds[:design.looks[0]] if design else seeds   # the margin is fixed at the first look
            margin = claim.margin if primary and claim.margin is not None else \
                reference.sesoi(claim.margin_from, metric, _mean_over(base, first_look))
            levels = design.levels(len(seeds)) if design and primary else (ALPHA, ALPHA)
            rows.append({"claim": claim, "metric": metric, "primary": primary, "seeds": seeds,
                         "diffs": [values[s] for s in seeds], "control": control, "relative": rel,
                         "test": PairedTest.of([values[s] for s in seeds], METRICS[metric].resolution(items)),
                         "margin": margin, "levels": levels,
                         # the thesis's effect in the claim's direction: "removing the TTE' costs" is −|effect|
                         "thesis": None if rel is None else claim.direction * abs(rel) * control,
                         "family_size": sizes[claim.family]})
    for family in families:
        members = [r for r in rows if r["primary"] and r["claim"].family == family]
        for r, p in zip(members, holm([r["test"].p for r in members], family=sizes[family])):
            r["p_adjusted"] = p                          # the family is every declared claim, shown or not
    for r in rows:
        r["verdict"] = decide(r["test"], r.get("p_adjusted", r["test"].p), r["claim"].direction, r["margin"] or 0.0,
                              *r["levels"])
        r["ratio"] = ratio_to_thesis(r)
        r["words"] = words(r["verdict"], r["claim"].in_thesis, r["ratio"])
    return rows


def _mean_over(values: dict, seeds) -> float:
    """The mean of ``values`` (seed -> value) over the ``seeds`` it has; nan if none."""
    have = [values[s] for s in seeds if s in values]
    return sum(have) / len(have) if have else float("nan")


def ratio_to_thesis(row: dict) -> tuple:
    """Our relative effect in the claimed direction over the size of the thesis's (the declared version's), with its
    95 % interval (from our contrast's): (ratio, low, high); negative: the other way; nan where the thesis reports
    no effect."""
    t, rel, control, sign = row["test"], row["relative"], row["control"], row["claim"].direction
    if not rel or not control or math.isnan(t.mean):
        return (math.nan,) * 3
    scale = sign / control / abs(rel)
    ends = sorted(((t.mean - t.half95) * scale, (t.mean + t.half95) * scale))
    return t.mean * scale, *ends


def claim_table(df: pd.DataFrame, claims=reference.CLAIMS) -> pd.DataFrame:
    """One row per claim and metric whose arms have runs: the paired contrast (95 % CI, and the interval the
    equivalence test uses: 90 %, or a sequential look's), the smallest effect of interest at this scale (the
    thesis's relative effect × our baseline's mean) and the thesis's effect carried the same way, our relative
    effect over the thesis's (95 % CI), the p-values (Holm-adjusted within the claim's declared family on the
    primary metric; unadjusted, and labelled so, for all; printed by ``stats.fmt_p``: "< 0.001" or three decimals),
    the verdict in words (``stats.words``) and, where it is undecided, the seeds that would give 80 % power to
    decide it (``stats.seeds_needed``, at the family's strictest Holm level; in parentheses the range from the SD's
    own 95 % interval). Secondary metrics decide nothing: their verdicts, in parentheses, use the unadjusted p.
    The p-values as numbers, unrounded, are the private columns ``_p_holm`` (nan for a secondary metric) and
    ``_p_unadjusted``, last (``family_claims`` leaves them out)."""
    out = []
    for r in _claim_rows(df, claims):
        t, margin, c, v, digits = r["test"], r["margin"], r["claim"], r["verdict"], _digits(r["margin"])
        sig, tost = r["levels"]
        out.append({"claim": c.text, "family": c.family, "metric": label(r["metric"]),
                    "role": "primary" if r["primary"] else "secondary",
                    "difference (95 % CI)": fmt(t.mean, t.half95, digits),
                    "equivalence interval": f"{fmt(t.mean, t.half(1 - 2 * tost), digits)} (TOST α {tost:.2g})",
                    "smallest effect of interest": "–" if margin is None else f"±{margin:.{digits}f}",
                    "thesis effect (carried)": "–" if r["thesis"] is None else f"{r['thesis']:+.{digits}f}",
                    "ours ÷ thesis": _ratio(r["ratio"]), "seeds": t.n,
                    "p (Holm, family)": fmt_p(r["p_adjusted"]) if r["primary"] else None,
                    "p (unadjusted)": fmt_p(t.p), "verdict": r["words"] if r["primary"] else f"({r['words']})",
                    "seeds to decide": fmt_seeds(seeds_needed(t, margin or 0.0, sig / r["family_size"] if r["primary"]
                                                              else sig, tost)) if v == "undecided" else "–",
                    "_p_holm": r["p_adjusted"] if r["primary"] else math.nan, "_p_unadjusted": t.p})
    return pd.DataFrame(out)


def family_claims(claims: pd.DataFrame, family: str | None = None, role: str = "primary") -> pd.DataFrame:
    """The rows of ``claim_table`` of one role (and one family; None: every family), indexed by claim, without the
    columns that are then constant: the role, the family if one is chosen, the metric of the primary rows (the
    primary metric), and what a secondary metric lacks (it decides nothing: no Holm p, no seeds to decide); and
    without the private columns (``_…``: the p-values as numbers)."""
    drop = ["role"] + (["family"] if family else []) + (["p (Holm, family)", "seeds to decide"]
                                                       if role == "secondary" else ["metric"])
    drop += [c for c in claims.columns if c.startswith("_")]
    rows = claims.role.eq(role) & (claims.family.eq(family) if family else True)
    return claims[rows].drop(columns=drop).set_index("claim")


def _ratio(ratio: tuple) -> str:
    mid, low, high = ratio
    return "–" if math.isnan(mid) else f"{mid:.2g} × [{low:.2g}, {high:.2g}]"


def difference_frame(df: pd.DataFrame, family: str, metrics=CLAIMED,
                     claims=reference.CLAIMS) -> pd.DataFrame:
    """The forest plot's data (``forest.forest``): one row per claim of ``family`` and metric whose arms have
    runs: the per-seed contrasts, their mean, the 95 % CI's half-width (``half95``) and the 90 % one the equivalence
    test reads (``half90``, the TOST's), the smallest effect of interest, the thesis's effect carried to our scale
    (signed) and the verdict (as in ``claim_table``, Holm over the whole family)."""
    rows = [r for r in _claim_rows(df, claims) if r["claim"].family == family and r["metric"] in metrics]
    rows.sort(key=lambda r: list(metrics).index(r["metric"]))          # claims in declared order within each metric
    rows.sort(key=lambda r: claims.index(r["claim"]))
    return pd.DataFrame([{"comparison": r["claim"].text, "metric": label(r["metric"]), "diffs": r["diffs"],
                          "mean": r["test"].mean, "half95": r["test"].half95,
                          "half90": r["test"].half90, "half_eq": r["test"].half(1 - 2 * r["levels"][1]),
                          "eq_level": f"{(1 - 2 * r['levels'][1]) * 100:.4g} %",
                          "margin": float("nan") if r["margin"] is None else r["margin"],
                          "thesis": float("nan") if r["thesis"] is None else r["thesis"],
                          "verdict": r["words"] if r["primary"] else f"({r['words']})"}
                         for r in rows])


def _digits(margin) -> int:
    """Enough decimals to show a difference against its margin (two for a margin ≥ 0.1, three below)."""
    return 2 if margin is None or margin >= 0.1 else 3


def factorial_means(df: pd.DataFrame, metric: str = PRIMARY, variants=grids.TABLE1) -> pd.DataFrame:
    """Table 1 as a 2 × 2 (notebook 02): the mean ± 95 % CI of each cell, input LayerNorm kept / skipped × TTE
    before no / yes, each variant placed by what its registry entry changes; the effects and their interaction are
    rows of ``claim_table``."""
    cells = {("kept" if VARIANT_SPECS[v].image_input_norm else "skipped", "yes" if VARIANT_SPECS[v].tte else "no"): v
             for v in variants}
    table = pd.DataFrame({f"TTE before: {t}": {f"input LayerNorm {ln}": fmt(*mean_ci(column(runs_of(df, v), metric)))
                                               for (ln, tt), v in cells.items() if tt == t} for t in ("no", "yes")})
    table.index.name = label(metric)
    return table


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
    for v in variants:
        for mode in ("removed", "swapped"):
            row = {"variant": VARIANT_LABELS[v], "TTE at evaluation": mode}
            for m in metrics:
                t = paired_test(df, (v, mode), (v, "none"), m)
                row[f"Δ {label(m)}"] = fmt(t.mean, t.half95)
            row["seeds"] = t.n
            rows.append(row)
    return pd.DataFrame(rows)


def curves(params: StudyParams, variant: str) -> pd.DataFrame:
    """Training curves (metrics.jsonl) of a variant, all seeds, one row per logged step."""
    rows = []
    for seed in params.seeds:
        for r in read_jsonl(RunPaths(params.results_root, params.preset, variant, seed).metrics):
            ls, ratio = r.pop("layerscale", None) or {}, r.pop("tte_ratio", None) or {}
            rows.append({**r, **{f"gamma_{k}": v for k, v in ls.items()},
                         **{f"tte_ratio_{k}": v for k, v in ratio.items()}, "seed": seed, "variant": variant})
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
                     fmt(mean, half), "CI above 0" if m == "imagenet_top1" else "reported",
                     bool(mean - half > 0) if m == "imagenet_top1" else None))
    top1 = pretrained.imagenet_top1.mean()
    rows.append(("baseline ImageNet top-1 (mean over seeds)", f"{top1:.2f}",
                 f"≥ {TOP1_MIN:g} (chance {chance['imagenet_top1']:.2f})", bool(top1 >= TOP1_MIN)))
    for m in ("coco_mean", "flickr_mean"):
        value = pretrained[m].mean()
        rows.append((f"baseline {label(m)} (mean over seeds)", f"{value:.2f}",
                     f"≥ {OFF_THE_FLOOR:g} × chance ({OFF_THE_FLOOR * chance[m]:.2f})",
                     bool(value >= OFF_THE_FLOOR * chance[m])))
    return pd.DataFrame(rows, columns=["check", "measured", "threshold", "pass"])


def paired_comparison(a: pd.DataFrame, b: pd.DataFrame, labels=("a", "b"),
                      metrics=HEADLINE) -> pd.DataFrame:
    """Two sets of runs of the same seeds side by side, with the paired difference a − b and its 95 % CI."""
    rows = {}
    for m in metrics:
        diff = paired_difference(dict(zip(a.seed, a[m])), dict(zip(b.seed, b[m])))
        rows[label(m)] = {labels[0]: fmt(*mean_ci(a[m])), labels[1]: fmt(*mean_ci(b[m])),
                                  f"Δ {labels[0]} − {labels[1]}": fmt(diff[0], diff[1])}
    return pd.DataFrame(rows).T


def markdown(df: pd.DataFrame) -> str:
    """A table as GitHub markdown, its index the first column (docs/results.md, the README's block)."""
    cols = list(df.columns)
    head = "| " + " | ".join([df.index.name or ""] + cols) + " |"
    sep = "|" + "---|" * (len(cols) + 1)
    def cell(v):
        return str(v).replace("|", "\\|")
    rows = ["| " + " | ".join([cell(i)] + [cell(v) for v in r]) + " |"
            for i, r in zip(df.index, df.itertuples(index=False))]
    return "\n".join([head, sep, *rows])
