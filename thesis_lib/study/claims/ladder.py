"""The width ladder (``designs.WIDTH_LADDER``, declared there): Table 2's budget regime at widths 192 and 384, beside
width 96's budget confirmation (``designs.BUDGET_CONFIRM``), its first rung. What the claims table needs of it: each
width's claims with that width's margin (``claims_at``) and Holm over the widths (``holm_across``: one family,
``designs.LADDER_FAMILY``); and what it shows descriptively, read from the claims table's rows: our effect in units of
the thesis's per width, its trend against log2 width (``points``, ``ladder_trend``, ``trend``), the rows its figure
draws (``figure_frame``), γ and the TTE's share per width (``gamma_rows``). Nothing is read of a width short of its
runs: its rows are pending (``claims.table``), and the trend waits for every width.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
from scipy import stats as sps

from thesis_lib.errors import ThesisError
from .. import results
from . import designs, paired, verdicts
from .stats import decide, holm, words

RUNG = "TTE budget, confirmation"     # width 96's rung: the budget confirmation's regime in the claims table
TOPICS = {"helps": "helps", "used": "is used"}   # the claims table's topic -> the claim as the figure names it


def regime_name(width: int) -> str:
    """The claims table's regime of the ladder's design at ``width``."""
    return f"TTE budget, width {width}"


REGIMES = {96: RUNG, **{w: regime_name(w) for w in designs.WIDTH_LADDER}}   # width -> its regime, every rung
RUNGS = {96: designs.BUDGET_CONFIRM, **designs.WIDTH_LADDER}                # width -> the design whose runs it reads


def claims_at(design: designs.FixedDesign) -> tuple[tuple, bool]:
    """The design's claims, primary then descriptive, with its width's margin (``designs.margin``: its pilot's
    baseline); before that baseline is recorded, with no margin and False (its rows stay pending)."""
    try:
        fixed = designs.margin(design)
    except ThesisError:
        fixed = None
    claims = design.claims + design.descriptive
    return tuple(dataclasses.replace(c, margin=fixed) for c in claims), fixed is not None


def claim_rows(df: pd.DataFrame, claims, fixed: bool) -> list[dict]:
    """``paired.claim_rows`` of one width (none without runs); without its declared margin (``fixed`` False), no
    margin either: the one ``claim_rows`` would carry from the runs' own baseline is not the declared one."""
    found = paired.claim_rows(df, claims) if len(df) else []
    for r in found if not fixed else ():
        r["margin"] = None
    return found


def holm_across(found: list[list[dict]], family: str = designs.LADDER_FAMILY) -> None:
    """Holm over the widths: the primary rows of ``family`` in every width's ``claim_rows`` adjusted together (the
    family: one claim per declared width, ``designs.WIDTH_LADDER``), each row's verdict and words decided again at
    its adjusted p, its seeds to decide counted at the family's strictest level. In place."""
    size = len(designs.WIDTH_LADDER)
    members = [r for rows in found for r in rows if r["primary"] and r["claim"].family == family]
    for r, p in zip(members, holm([r["test"].p for r in members], family=size)):
        r["p_adjusted"], r["decide_alpha"] = p, r["levels"][0] / size
        r["verdict"] = decide(r["test"], p, r["claim"].direction, r["margin"] or 0.0, *r["levels"])
        r["words"] = words(r["verdict"], r["claim"].in_thesis, r["ratio"])


def points(table: pd.DataFrame, topic: str = "helps") -> pd.DataFrame:
    """The claims table's primary rows of ``topic`` at every rung of the ladder (96, 192, 384), by width."""
    rows = table[table.primary & table.topic.eq(topic) & table.regime.isin(REGIMES.values())]
    return rows.assign(width=rows.regime.map({r: w for w, r in REGIMES.items()})).sort_values("width")


def standard_error(rows: pd.DataFrame) -> np.ndarray:
    """Each row's standard error of its ratio (our effect ÷ the thesis's): its 95 % interval (Student t, n − 1
    degrees of freedom: ``paired.ratio_to_thesis``) as a width, ÷ 2 t."""
    n = rows.n.to_numpy(float)
    t = sps.t.ppf(0.975, np.maximum(n - 1, 1))
    return np.where(n >= 2, (rows.ratio_high.to_numpy(float) - rows.ratio_low.to_numpy(float)) / (2 * t), np.nan)


def ladder_trend(rows: pd.DataFrame, level: float = 0.95) -> dict:
    """The ratio (our effect ÷ the thesis's) against log2 width, fitted by weighted least squares with weights
    1 / SE² (``standard_error``): slope (ratio per doubling of width), its ``level`` interval and standard error,
    intercept (at log2 width 0), and the per-width points. The interval treats each width's SE as known (a fixed-
    effect meta-regression: normal quantile, statsmodels' WLS with ``cov_type="fixed scale"``); ``residual``: the
    same fit with the scale estimated from the residuals (Student t, k − 2 degrees of freedom, statsmodels' WLS
    default), at three widths one degree of freedom and so far wider, shown beside it."""
    x, y, se = np.log2(rows.width.to_numpy(float)), rows.ratio.to_numpy(float), standard_error(rows)
    if len(x) < 2 or not np.all(np.isfinite(np.concatenate([x, y, se]))) or np.any(se <= 0):
        raise ValueError("ladder_trend: needs two or more widths, each with a finite ratio and its interval")
    w = 1 / se ** 2
    xbar, ybar = np.average(x, weights=w), np.average(y, weights=w)
    sxx = float(np.sum(w * (x - xbar) ** 2))
    slope = float(np.sum(w * (x - xbar) * (y - ybar)) / sxx)
    intercept = float(ybar - slope * xbar)
    known, z = 1 / math.sqrt(sxx), sps.norm.ppf(0.5 + level / 2)
    dof = len(x) - 2
    scale = float(np.sum(w * (y - intercept - slope * x) ** 2) / dof) if dof > 0 else math.nan
    resid, t = math.sqrt(scale / sxx), sps.t.ppf(0.5 + level / 2, dof) if dof > 0 else math.nan
    return {"slope": slope, "low": slope - z * known, "high": slope + z * known, "se": known,
            "intercept": intercept, "level": level,
            "residual": {"se": resid, "low": slope - t * resid, "high": slope + t * resid, "dof": dof},
            "points": pd.DataFrame({"width": rows.width.to_numpy(int), "ratio": y, "se": se,
                                    "low": rows.ratio_low.to_numpy(float), "high": rows.ratio_high.to_numpy(float),
                                    "n": rows.n.to_numpy(int)})}


def trend(table: pd.DataFrame, topic: str = "helps") -> dict | None:
    """``ladder_trend`` of the claims table's ``topic`` over the ladder's widths; None while any rung is missing or
    pending (no trend from a partial ladder)."""
    rows = points(table, topic)
    if set(rows.width) != set(REGIMES) or rows.status.eq("pending").any():
        return None
    return ladder_trend(rows)


def figure_frame(table: pd.DataFrame) -> pd.DataFrame:
    """The ladder figure's rows (``pages/widths.py``): per rung and claim ("helps", "is used"), the width, our effect
    in units of the thesis's with its 95 % interval (nan while pending), the margin in the same units (margin ÷ the
    thesis's carried difference), seeds, verdict and status."""
    out = []
    for topic, claim in TOPICS.items():
        for r in points(table, topic).itertuples():
            unit = abs(r.thesis_carried) if pd.notna(r.thesis_carried) and r.thesis_carried else math.nan
            out.append({"width": int(r.width), "claim": claim, "regime": r.regime, "steps": int(r.steps),
                        "seeds": int(r.n), "ratio": _number(r.ratio), "low": _number(r.ratio_low),
                        "high": _number(r.ratio_high), "margin": _number(r.margin) / unit,
                        "verdict": str(r.verdict).split(",")[0], "status": r.status})
    return pd.DataFrame(out, columns=["width", "claim", "regime", "steps", "seeds", "ratio", "low", "high", "margin",
                                      "verdict", "status"])


def _number(x) -> float:
    return math.nan if x is None or pd.isna(x) else float(x)


def complete(params, design: designs.FixedDesign) -> bool:
    """Whether every declared seed of ``design`` has a stored result of each of its arms (its variants)."""
    df = results.design_frame(params, design)
    wanted = set(design.seeds_for(params.preset))
    return len(df) > 0 and all(wanted <= set(results.runs_of(df, v).seed) for v in design.variants)


def gamma_rows(params) -> pd.DataFrame | None:
    """The TTE' γ after training and the TTE's share of the shared block's input at each rung that holds all its
    runs (``verdicts.gamma_table``, one row per width, the thesis's rows once below); None while no rung does."""
    variant, parts, thesis = designs.BUDGET_VARIANT, [], None
    for width, design in RUNGS.items():
        if not complete(params, design):
            continue
        table = verdicts.gamma_table(results.design_frame(params, design), (variant,))
        parts.append(table.iloc[:1].set_axis([f"width {width}"]))
        thesis = table.iloc[1:]
    return pd.concat(parts + [thesis]).rename_axis("γ after training") if parts else None
