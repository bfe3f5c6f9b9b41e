"""Stage 3 of the study, the claims: each declared ``reference.Claim`` tested on the results frame, one row per claim
and metric (``claim_rows``); the claims table and the difference frames the pages draw are made of these rows."""
from __future__ import annotations

import math

import pandas as pd

from thesis_lib.metrics import CLAIMED, HEADLINE, METRICS, PRIMARY, label
from .. import grids, reference
from ..grids import BASELINE
from ..results import arm_values, contrast_values, items_of, results_frame
from . import sequential
from .stats import (ALPHA, PairedTest, decide, fmt, fmt_p, fmt_seeds, holm, mean_ci, paired_difference,
                    seeds_needed, words)


def claims_frame(params, variants=grids.CLAIMED) -> pd.DataFrame:
    """``results.results_frame`` over the study's seeds and those a sequential design added (its looks up to the
    last, ``sequential.DESIGNS``): what the claims are decided on."""
    extra = set(range(max((d.looks[-1] for d in sequential.DESIGNS.values()), default=0)))
    return results_frame(params, variants, seeds=set(params.seeds) | extra)


def paired_test(df: pd.DataFrame, treated: tuple, control: tuple, metric: str) -> PairedTest:
    """treated − control per seed (over the seeds both arms have), as a PairedTest."""
    return PairedTest.of(list(contrast_values(df, ((treated, 1.0), (control, -1.0)), metric).values()))


def claim_seeds(claim, values: dict) -> list:
    """The seeds a claim is decided on: all its arms share, or, for a sequential claim
    (``sequential.DESIGNS``), the first seeds up to its last look reached."""
    seeds, design = sorted(values), sequential.DESIGNS.get(claim.text)
    if design is None or len(seeds) < design.looks[0]:
        return seeds
    return seeds[:max(n for n in design.looks if n <= len(seeds))]


def claim_rows(df: pd.DataFrame, claims) -> list[dict]:
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
                         # the level its seeds to decide are counted at: the family's strictest Holm level
                         # (a secondary metric, which decides nothing: unadjusted)
                         "decide_alpha": levels[0] / sizes[claim.family] if primary else levels[0]})
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


def primary_rows(df: pd.DataFrame, claims=reference.CLAIMS, family: str | None = None) -> list[dict]:
    """The primary metric's ``claim_rows`` of ``claims`` (those of ``family``, when given)."""
    return [r for r in claim_rows(df, claims) if r["primary"] and family in (None, r["claim"].family)]


def primary_row(df: pd.DataFrame, text: str, claims=reference.CLAIMS) -> dict | None:
    """The primary row of the claim ``text`` (None where its arms have no runs)."""
    return next((r for r in primary_rows(df, claims) if r["claim"].text == text), None)


def claim_table(df: pd.DataFrame, claims=reference.CLAIMS) -> pd.DataFrame:
    """``claim_rows`` as printed cells, one row per claim and metric: the paired contrast (95 % CI, and the interval
    the equivalence test uses: 90 %, or a sequential look's), the margin and the thesis's effect carried to our scale,
    our relative effect over the thesis's (95 % CI), the p-values (``stats.fmt_p``; Holm within the declared family on
    the primary metric, unadjusted for all), the verdict (``stats.words``; a secondary metric's, in parentheses, from
    the unadjusted p: it decides nothing) and, where undecided, the seeds that would give 80 % power to decide it
    (``stats.seeds_needed`` at the family's strictest Holm level, with the range from the SD's own 95 % interval).
    Last, the private columns ``_p_holm`` (nan for a secondary metric) and ``_p_unadjusted``: the p-values unrounded
    (``family_claims`` leaves them out)."""
    out = []
    for r in claim_rows(df, claims):
        t, margin, c, v, digits = r["test"], r["margin"], r["claim"], r["verdict"], margin_digits(r["margin"])
        tost = r["levels"][1]
        out.append({"claim": c.text, "family": c.family, "metric": label(r["metric"]),
                    "role": "primary" if r["primary"] else "secondary",
                    "difference (95 % CI)": fmt(t.mean, t.half95, digits),
                    "equivalence interval": f"{fmt(t.mean, t.half(1 - 2 * tost), digits)} (TOST α {tost:.2g})",
                    "smallest effect of interest": "–" if margin is None else f"±{margin:.{digits}f}",
                    "thesis effect (carried)": "–" if r["thesis"] is None else f"{r['thesis']:+.{digits}f}",
                    "ours ÷ thesis": "–" if math.isnan(r["ratio"][0])
                    else "{:.2g} × [{:.2g}, {:.2g}]".format(*r["ratio"]), "seeds": t.n,
                    "p (Holm, family)": fmt_p(r["p_adjusted"]) if r["primary"] else None,
                    "p (unadjusted)": fmt_p(t.p), "verdict": r["words"] if r["primary"] else f"({r['words']})",
                    "seeds to decide": fmt_seeds(seeds_needed(t, margin or 0.0, r["decide_alpha"], tost))
                    if v == "undecided" else "–",
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


def difference_frame(df: pd.DataFrame, family: str, metrics=CLAIMED, claims=reference.CLAIMS) -> pd.DataFrame:
    """The forest plot's data: the ``claim_rows`` of ``family`` (among ``claims``: the study's, or a design's) on
    ``metrics`` as the columns ``forest.forest`` reads (``half_eq`` at ``eq_level``: the TOST's; the verdict as in
    ``claim_table``, Holm over the whole family)."""
    rows = [r for r in claim_rows(df, claims) if r["claim"].family == family and r["metric"] in metrics]
    rows.sort(key=lambda r: (claims.index(r["claim"]), list(metrics).index(r["metric"])))
    return pd.DataFrame([{"comparison": r["claim"].text, "metric": label(r["metric"]), "diffs": r["diffs"],
                          "mean": r["test"].mean, "half95": r["test"].half95,
                          "half90": r["test"].half90, "half_eq": r["test"].half(1 - 2 * r["levels"][1]),
                          "eq_level": f"{(1 - 2 * r['levels'][1]) * 100:.4g} %",
                          "margin": float("nan") if r["margin"] is None else r["margin"],
                          "thesis": float("nan") if r["thesis"] is None else r["thesis"],
                          "verdict": r["words"] if r["primary"] else f"({r['words']})"} for r in rows])


def margin_digits(margin) -> int:
    """Enough decimals to show a difference against its margin (two for a margin ≥ 0.1, three below)."""
    return 2 if margin is None or margin >= 0.1 else 3


def paired_comparison(a: pd.DataFrame, b: pd.DataFrame, labels=("a", "b")) -> pd.DataFrame:
    """Two sets of runs of the same seeds side by side, with the paired difference a − b and its 95 % CI."""
    rows = {}
    for m in HEADLINE:
        diff = paired_difference(dict(zip(a.seed, a[m])), dict(zip(b.seed, b[m])))
        rows[label(m)] = {labels[0]: fmt(*mean_ci(a[m])), labels[1]: fmt(*mean_ci(b[m])),
                                  f"Δ {labels[0]} − {labels[1]}": fmt(diff[0], diff[1])}
    return pd.DataFrame(rows).T
