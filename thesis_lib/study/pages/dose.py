"""Table 2's two claims against the TTE's dose: each regime's paired effect on the primary metric, in units of the
thesis's effect carried to that regime's scale (y, with its 95 % interval), against the TTE's share of the shared
block's input (x, log scale: ‖γ ⊙ T_type‖ / ‖H_L‖ on the images, mean over the regime's seeds). Regimes: the
600-step demo (the TTE' and the γ-init doses), the thesis's learning-rate budget for the TTE (its 4-seed record and
its confirmation), the whole model at the thesis's summed learning rate (the 8-seed record and, once trained, its
confirmation). It is what "too small a dose" rests on, and how far a verdict at one dose carries to another.

Table 1's claims are not on it: their TTE enters before the encoders, where no share of the shared block's input
measures it.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from thesis_lib.config import get_config
from thesis_lib.metrics import PRIMARY, label
from .. import grids, results
from ..reference import AFTER, Claim, vs
from ..claims import designs
from ..claims.paired import primary_row
from . import table2
from .tables import study_frame, tte_share

HELPS, USED = "helps", "is used"


def _claims(variant: str) -> dict:
    """{"helps": the variant against the baseline, "is used": the variant against itself with its TTE removed}."""
    return {HELPS: Claim(f"{variant} helps", vs(variant, grids.BASELINE), +1, AFTER, "dose"),
            USED: Claim(f"{variant} is used", vs(variant, variant, "removed"), -1, AFTER, "dose")}


def regimes(params) -> list[tuple[str, pd.DataFrame, str]]:
    """(label, results frame, the TTE variant) of every regime with stored runs, in order of training budget."""
    short = study_frame(params, grids.DOSE_ARMS + grids.BUDGET[1:])
    inits = {v: get_config(params.preset, v).model.tte.gamma_init for v in grids.DOSE}
    out = [(f"600 steps, γ init {inits[v]:g}", short, v) for v in grids.DOSE]
    out.append(("600 steps, the thesis's budget for the TTE (seeds 0-3)", short, grids.BUDGET[1]))
    out.append(("600 steps, the thesis's budget for the TTE (seeds 4-23)",
                results.design_frame(params, designs.BUDGET_CONFIRM), grids.BUDGET[1]))
    steps = f"{designs.long_steps(params.preset):,}"
    out.append((f"{steps} steps, the thesis's summed learning rate (seeds 1-8)",
                results.design_frame(params, designs.THESIS_LR_SUM), grids.TTE_AFTER_LS))
    out.append((f"{steps} steps, the thesis's summed learning rate (seeds 9-40)",
                results.design_frame(params, designs.THESIS_LR_SUM_CONFIRM), grids.TTE_AFTER_LS))
    if table2.confirmation(params) is None:
        out.pop()                                  # a fixed-n design is shown at its one look, not before
    return [(name, df, v) for name, df, v in out if not df.empty and v in set(df.variant)]


def frame(params) -> pd.DataFrame:
    """One row per (regime, claim) with at least two seeds: share (%), ratio and its 95 % low / high, seeds."""
    rows = []
    for name, df, v in regimes(params):
        share = tte_share(df, v)
        for claim_name, claim in _claims(v).items():
            r = primary_row(df, claim.text, (claim,))
            if r is None or r["test"].n < 2:
                continue
            mid, low, high = r["ratio"]
            rows.append({"regime": name, "claim": claim_name, "share %": share, "ratio": mid, "low": low,
                         "high": high, "seeds": r["test"].n, "difference": r["test"].mean})
    return pd.DataFrame(rows)


def draw(points: pd.DataFrame, title: str | None = None):
    """Two panels (helps, is used) sharing a log x axis: each regime a point with its 95 % interval; 1 marks the
    thesis's effect, 0 none; each point labelled with its regime once, in the legend."""
    import matplotlib.pyplot as plt
    from .plotting import INK, THESIS_INK
    if points is None or not len(points):
        raise ValueError("dose: no regime has two seeds of a Table 2 claim")
    names = list(dict.fromkeys(points.regime))
    colours = dict(zip(names, plt.get_cmap("tab10").colors))
    fig, axes = plt.subplots(1, 2, figsize=(10, 5.4), sharex=True, layout="constrained")
    for ax, claim in zip(axes, (HELPS, USED)):
        sub = points[points.claim.eq(claim)]
        for (_, r), x in zip(sub.iterrows(), spread_apart(sub["share %"].tolist())):
            ax.errorbar(x, r.ratio, yerr=[[r.ratio - r.low], [r.high - r.ratio]], fmt="o", ms=7,
                        capsize=3, color=colours[r.regime], mfc="white", mew=1.8, lw=1.6, gid="regime")
        ax.axhline(0, color=INK, lw=1.0, gid="no_effect")
        ax.axhline(1, color=THESIS_INK, lw=1.4, ls="--", gid="thesis_effect")
        ax.set_xscale("log")
        ax.set_xlabel("the TTE's share of the shared block's input (%, images, log)", fontsize=9)
        ax.set_title(f"\"{claim}\": the TTE' − {'the baseline' if claim == HELPS else 'the TTE removed'}", fontsize=10)
        ax.tick_params(labelsize=8.5)
    axes[0].set_ylabel(f"our effect in the claimed direction ÷ the thesis's\n({label(PRIMARY)}, 95 % CI)", fontsize=9)
    handles = [plt.Line2D([], [], color=colours[n], marker="o", mfc="white", mew=1.8, ls="none", label=n)
               for n in names]
    handles += [plt.Line2D([], [], color=THESIS_INK, ls="--",
                           label="1: the thesis's Table 2 effect (for \"is used\", "
                                 "the margin's basis: the thesis reports no removal)"),
                plt.Line2D([], [], color=INK, label="0: no effect"),
                plt.Line2D([], [], ls="none", label=f"points within × {NEAR:g} of another's share are moved right by "
                                                    f"× {STEP:g} each, to stay apart")]
    fig.legend(handles=handles, loc="outside lower center", ncol=2, fontsize=8, frameon=False)
    if title:
        fig.suptitle(title, fontsize=10.5)
    return fig


NEAR = 1.2     # points whose shares lie within this factor of each other are spread sideways, so none hides another
STEP = 1.1     # the factor between spread points


def spread_apart(shares: list[float]) -> list[float]:
    """The x of each point: its share, moved by ``STEP`` per point already drawn within ``NEAR`` of it (the legend
    says so), so that two regimes at nearly the same dose stay distinct."""
    out = []
    for x in shares:
        k = sum(1 for y in shares[:len(out)] if max(x, y) / min(x, y) < NEAR)
        out.append(x * STEP ** k)
    return out


def spread(points: pd.DataFrame) -> float:
    """The x range the regimes span, as a factor (largest share ÷ smallest): what the figure's log axis shows."""
    x = points["share %"].to_numpy()
    return float(np.max(x) / np.min(x)) if len(x) else float("nan")

