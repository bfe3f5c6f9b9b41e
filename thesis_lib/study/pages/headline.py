"""The README's headline figure: every claim of the chapter (and the 2 × 2 factor where Table 1's drop lies) in every
regime that decided it, nearest the thesis's first, as our paired effect on the primary metric in units of the
thesis's effect carried to our scale, read from the claims table (``frame``), drawn by ``draw``: one row per claim and
regime, its 95 % interval, ± the smallest effect of interest as a band, the verdict beside it; its axis clipped where
one row reaches far beyond the others, that row's value written at the edge."""
from __future__ import annotations

import math
import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator

from .forest import legend_below, legend_label, verdict_ink
from .front import say
from .plotting import BAND, INK, THESIS_INK, VERDICT_INK, zoom_edge

SHOWN = ("before", "code", "layernorm", "helps", "used")   # the chapter's claims and the 2 × 2 factor behind Table 1
LABELS = {topic: say("figures.j2", "headline_label", topic) for topic in SHOWN}   # the rows' names, people's words


def frame(table: pd.DataFrame) -> pd.DataFrame:
    """One row per chapter claim in each regime that decided it (the claims table's primary rows; a fixed-n design's
    record left out where its confirmation stands beside it; pending families left out), nearest the thesis's regime
    first: our effect in units of the thesis's carried to our scale (ratio, its 95 % interval), the margin in the
    same units, the seeds, the verdict; the regime as the row's second line."""
    rows = table[table.primary & table.topic.isin(SHOWN) & table.status.ne("pending")
                 & ~table.regime.str.endswith("record")]
    rows = rows.assign(order=rows.topic.map(SHOWN.index)).sort_values("order", kind="stable")
    rows = rows.iloc[np.argsort([list(dict.fromkeys(table.regime)).index(r) for r in rows.regime], kind="stable")]
    def name(r) -> str:
        return LABELS[r.topic] + (" as the 2 × 2's main effect" if r.topic == "before" and "2 × 2" in r.claim else "")
    return pd.DataFrame([{"label": textwrap.fill(f"{name(r)} ({r.n} seeds)", 72),
                          "note": f"({r.regime}, {r.steps:,} steps{', not testable there' if not r.can_test else ''})",
                          "seeds": r.n, "ratio": r.ratio, "low": r.ratio_low, "high": r.ratio_high,
                          "margin": r.margin / abs(r.thesis_carried) if r.margin and r.thesis_carried else math.nan,
                          "verdict": r.verdict.split(",")[0], "regime": r.regime} for r in rows.itertuples()])


def draw(frame: pd.DataFrame, title: str | None = None):
    """The figure the module describes: each row labelled above its bar, the verdicts in a column at the right; the
    axis ends where the other rows do (``plotting.zoom_edge``), and the legend says where it is clipped.

    ``frame``: one row per claim with label, ratio, low, high, verdict, margin (the smallest effect of interest in
    the same units) and note (a second line of the label)."""
    if frame is None or not len(frame):
        raise ValueError("headline: no claims to draw")
    rows = list(frame.reset_index(drop=True).itertuples())
    reaches = [max(abs(r.low), abs(r.high), 1.0) for r in rows if np.isfinite(r.ratio)]
    cut = zoom_edge(reaches)
    fits = [r for r in rows if np.isfinite(r.ratio) and (cut is None or max(abs(r.low), abs(r.high)) <= cut)]
    margins = [r.margin for r in fits if np.isfinite(r.margin)]
    lo = min([-0.5, *(r.low for r in fits), *(-m for m in margins)])
    hi = max([1.5, *(r.high for r in fits), *margins])
    lo, hi = lo - 0.08 * (hi - lo), hi + 0.08 * (hi - lo)
    if len(fits) < sum(np.isfinite(r.ratio) for r in rows):
        hi = max(hi, 2.6)                        # room beyond the thesis's effect for the clipped rows' values
    n = len(rows)
    fig, (ax, side) = plt.subplots(1, 2, figsize=(6.4, 0.95 * n + 2.3), sharey=True, layout="constrained",
                                   gridspec_kw={"width_ratios": [1, 0.27], "wspace": 0.01})
    clipped = []
    for y, r in enumerate(rows):
        if np.isfinite(r.margin) and r.margin > 0:
            ax.fill_between([-r.margin, r.margin], y - 0.02, y + 0.26, color=BAND, alpha=0.2, lw=0, zorder=0,
                            gid="band")
        ax.text(lo + 0.012 * (hi - lo), y - 0.44, r.label + (f"\n{r.note}" if r.note else ""), ha="left", va="top",
                fontsize=9, linespacing=1.15, gid="row_label", zorder=6,
                bbox=dict(boxstyle="round,pad=0.1", fc="white", ec="none", alpha=0.8))
        side.text(0.04, y + 0.12, textwrap.fill(r.verdict, 13), ha="left", va="center", fontsize=9.5,
                  fontweight="bold", color=verdict_ink(r.verdict), gid="verdict", linespacing=1.1)
        if not np.isfinite(r.ratio):
            continue
        yb = y + 0.12                            # the bar, below the label
        shown_lo, shown_hi = max(r.low, lo), min(r.high, hi)
        if shown_lo <= shown_hi:
            ax.plot([shown_lo, shown_hi], [yb, yb], color=INK, lw=1.8, zorder=4, gid="ci95", solid_capstyle="butt")
            for end in (r.low, r.high):
                if lo <= end <= hi:
                    ax.plot([end, end], [yb - 0.09, yb + 0.09], color=INK, lw=1.8, zorder=4, gid="cap")
        if lo <= r.ratio <= hi:
            ax.plot(r.ratio, yb, "o", ms=8, mfc="white", mec=INK, mew=1.8, zorder=5, gid="mean")
        if r.high > hi or r.low < lo:
            right = r.high > hi
            edge, inward = (hi, -(hi - lo)) if right else (lo, hi - lo)
            ax.plot(edge + 0.03 * inward, yb, ">" if right else "<", color=INK, ms=9, zorder=5, gid="off_scale")
            digits = ".0f" if abs(r.ratio) >= 10 else ".2g"
            value = f"{r.ratio:{digits}} × [{r.low:{digits}}, {r.high:{digits}}]"
            ax.text(edge + 0.07 * inward, yb, f"{value} →" if right else f"← {value}", ha="right" if right else "left",
                    va="center", fontsize=9, fontweight="bold", gid="off_scale_value", zorder=6,
                    bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none"))
            clipped.append(r.label)
    ax.axvline(0, color=INK, lw=1.2, zorder=2, gid="no_effect")
    ax.axvline(1, color=THESIS_INK, lw=1.6, ls="--", zorder=2, gid="thesis_effect")
    top = ax.get_xaxis_transform()
    ax.text(0, 1.005, "0: no effect", transform=top, ha="right", va="bottom", fontsize=9, gid="label_0")
    ax.text(1, 1.005, "1: the thesis's effect", transform=top, ha="left", va="bottom", fontsize=9, color=THESIS_INK,
            gid="label_1")
    side.text(0.04, 1.005, "verdict", transform=side.transAxes, ha="left", va="bottom", fontsize=9)
    for a in (ax, side):
        for k in range(1, n):
            a.axhline(k - 0.5, color="0.8", lw=0.8, zorder=1)
    ax.set(xlim=(lo, hi), ylim=(n - 0.5, -0.5), yticks=[])
    ax.grid(axis="y", visible=False)
    side.set(xlim=(0, 1), xticks=[])
    side.grid(False)
    side.spines[["top", "right", "bottom"]].set_visible(False)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=8, steps=[1, 2, 2.5, 5, 10]))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    ax.set_xlabel(say("figures.j2", "headline_xlabel"))
    handles = [Line2D([], [], color=INK, marker="o", ls="-", lw=1.8, mfc="white", mew=1.8, ms=8,
                      label=say("figures.j2", "headline_ci"))]
    if margins:
        handles.append(Patch(color=BAND, alpha=0.2, lw=0,
                             label=legend_label("band", say("figures.j2", "headline_band"))))
    if clipped:
        handles.append(Line2D([], [], color=INK, marker=">", ls="none", ms=9,
                              label=say("figures.j2", "headline_clipped", hi)))
    handles.append(Line2D([], [], color=VERDICT_INK["equivalent"], ls="none", marker=r"$\mathsf{Aa}$", ms=12,
                          label=legend_label("verdict", name="verdict column",
                                             explanation=say("figures.j2", "headline_verdict"))))
    legend_below(fig, handles, 86, 1)
    if title:
        fig.suptitle(title, fontsize=10.5)
    return fig
