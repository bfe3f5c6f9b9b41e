"""What the pages read (stage 4 imports this module of the claims stage and no other): the claims table as
results/claims.csv holds it, the claims stage's other data (the tables and sentence values of docs/results.md's
sections, the notebooks' conclusions) and every figure's numbers (runs, per-seed values, means with their intervals,
difference frames), each computed from the result files. The pages format and draw what they are given.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from thesis_lib.metrics import CLAIMED, HEADLINE
from thesis_lib.config import get_config
from thesis_lib.training.results import RunPaths
from .. import grids, reference, results
from ..results import curves, runs_of  # noqa: F401 (a figure's training curves)
from ..runs import SEEDS, study_params  # noqa: F401 (the parameters a page's command line reads)
from . import designs, mechanisms, paired, sections, sequential, table, tables
from .designs import long_steps  # noqa: F401
from .ladder import figure_frame as ladder_frame, trend as width_trend  # noqa: F401 (the width ladder's figure)
from .sections import SHIPPED_STORE, page, scale, shipped_text, tolerances  # noqa: F401 (docs/results.md's data)
from .stats import fmt, mean_ci  # noqa: F401
from .table import write as write_claims  # noqa: F401 (results/claims.csv, written and returned as written)
from .table2 import facts as table2_sections, overfit, summary_facts as table2_summary  # noqa: F401
from .verdicts import conclusion_rows  # noqa: F401 (one decided claim a line, as the conclusions say it)


def claims(params) -> pd.DataFrame:
    """The claims table of ``params``'s results as results/claims.csv would hold it (what every page reads)."""
    return table.read(table.csv_text(table.claims_table(params)))


def opening(params) -> dict:
    """The values of docs/results.md's opening, which the README's block shows while a claim's runs are missing."""
    return sections.summary(sections.Verdicts(params))


def lacking(params, variants) -> list:
    """The variants of ``variants`` without a stored result of ``params.seeds`` (by the files' presence)."""
    return [v for v in variants
            if not any(RunPaths(params.results_root, params.preset, v, s).result.exists() for s in params.seeds)]


def runs(params, variants, claimed: bool = False, shared: bool = False) -> pd.DataFrame:
    """The results frame of ``variants`` (``claimed``: with a sequential claim's added seeds; ``shared``: only the
    seeds every variant present has, so that levels compare the same seeds)."""
    df = (paired.claims_frame if claimed else results.results_frame)(params, variants)
    if shared and len(df):
        df = df[df.seed.isin(set.intersection(*(set(g.seed) for _, g in df.groupby("variant"))))]
    return df


def gammas(params, variant: str) -> dict:
    """seed -> the final LayerScale γ (``seed<N>/layerscale.npy``) of ``variant``, for the seeds that have one."""
    paths = {seed: RunPaths(params.results_root, params.preset, variant, seed).layerscale for seed in params.seeds}
    return {seed: np.load(path) for seed, path in paths.items() if path.exists()}


def levels(df: pd.DataFrame, variants, metrics) -> pd.DataFrame:
    """Per variant and metric: the seeds' values, their mean and 95 % half-width (``stats.mean_ci``)."""
    rows = []
    for v in variants:
        for m in metrics:
            values = runs_of(df, v)[m].dropna()
            rows.append({"variant": v, "metric": m, "values": values.to_numpy(), **dict(zip(("mean", "half"),
                                                                                             mean_ci(values)))})
    return pd.DataFrame(rows)


def ablation_points(df: pd.DataFrame, variants, metrics) -> pd.DataFrame:
    """Per variant, TTE ablation ("removed", "swapped") and metric the runs hold: the change against the model as
    trained per seed, its mean and 95 % half-width."""
    rows = []
    for v in variants:
        sub = runs_of(df, v)
        for mode in ("removed", "swapped"):
            for m in [m for m in metrics if f"{mode}:{m}" in sub]:
                d = (sub[f"{mode}:{m}"] - sub[m]).dropna()
                rows.append({"variant": v, "mode": mode, "metric": m, "diffs": d.to_numpy(),
                             **dict(zip(("mean", "half"), mean_ci(d)))})
    return pd.DataFrame(rows, columns=["variant", "mode", "metric", "diffs", "mean", "half"])


def differences(df: pd.DataFrame, family: str, metrics=CLAIMED) -> pd.DataFrame:
    """``paired.difference_frame`` of one declared family of claims on ``df`` (``runs(claimed=True)``), with each
    row's sequential looks (``sequential.DESIGNS``; None for a fixed-n claim)."""
    frame = paired.difference_frame(df, family, metrics=metrics)
    frame["looks"] = [d.looks if (d := sequential.DESIGNS.get(c)) else None for c in frame.get("comparison", [])]
    return frame


def confirmation(params) -> pd.DataFrame:
    """The long schedule's confirmation as a difference frame (empty before its runs); ``attrs["design"]``: its name."""
    design = designs.THESIS_LR_SUM_CONFIRM
    df = results.design_frame(params, design)
    frame = paired.difference_frame(df, design.family, claims=designs.claims_of(params, design)) if len(df) \
        else pd.DataFrame()
    frame.attrs["design"] = design.name
    return frame


def dose_claims(preset: str) -> dict:
    """dose -> (variant, its claim): per variant of ``grids.DOSE`` the claim that it beats the baseline, at γ's
    initial value in its config (``ModelConfig.tte``). The TTE' arm's claim is Table 2's ("TTE after the encoders with
    LayerScale helps"), the others the γ-init family's."""
    out = {}
    for v in grids.DOSE:
        (claim,) = [c for c in reference.CLAIMS if c.arms == ((v, "none"), (grids.BASELINE, "none"))]
        out[get_config(preset, v).model.tte.gamma_init] = (v, claim)
    return out


def dose_rows(df: pd.DataFrame, preset: str) -> pd.DataFrame:
    """The dose-response's rows on ``df`` (``runs(claimed=True)``): each dose's claim (``dose_claims``) as its
    family's difference frame has it, with ``dose``, ``variant`` and ``family``."""
    doses = dose_claims(preset)
    frames = {family: paired.difference_frame(df, family) for family in {c.family for _, c in doses.values()}}
    return pd.DataFrame([{**r.to_dict(), "dose": gamma0, "variant": v, "family": claim.family}
                         for gamma0, (v, claim) in doses.items() for _, r in frames[claim.family].iterrows()
                         if r["comparison"] == claim.text])


def dual_differences(df: pd.DataFrame) -> pd.DataFrame:
    """Notebook 05's dual-encoder comparisons on ``df`` as a forest's frame (``mechanisms.forest_frame``)."""
    return mechanisms.forest_frame(df, grids.DUAL_PAIRS, HEADLINE)


def dose_shares(df: pd.DataFrame) -> dict | None:
    """The lowest and highest TTE share (percent) over the γ-init doses that have runs; None with fewer than two."""
    shares = [share for v in grids.DOSE if (share := tables.tte_share(df, v)) is not None]
    return {"low": min(shares), "high": max(shares)} if len(shares) >= 2 else None
