"""The study's main figure: paired differences to a control, one panel per metric, one row per comparison, with the
seeds, the smallest effect of interest, the thesis's effect carried to this scale and the verdict (``forest``)."""
from __future__ import annotations

import math
import textwrap

import matplotlib.pyplot as plt
import matplotlib.transforms as mtransforms
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .plotting import BAND, INK, SEED_INK, THESIS_INK, VERDICT_INK


def _finite(*values) -> np.ndarray:
    x = np.asarray([v for v in values if v is not None], dtype=float).ravel()
    return x[np.isfinite(x)]


def _symmetric_axis(ax, reach: list[float]):
    """x from −edge to +edge around 0 covering every row. Where one row reaches 6 × further than the others, the
    axis is linear over the small rows and logarithmic beyond, so that no row's difference is squeezed to a dot."""
    reach = sorted(r for r in reach if r > 0) or [1.0]
    edge = 1.15 * reach[-1]
    small = [r for r in reach if r < reach[-1] / 6]
    if not small:
        ax.set_xlim(-edge, edge)
        return
    t, edge = 1.15 * small[-1], 1.4 * reach[-1]
    decades = np.log10(edge / t)
    ax.set_xscale("symlog", linthresh=t, linscale=max(decades, 0.5))
    ax.set_xlim(-edge, edge)
    inner = [x for x in plt.MaxNLocator(nbins=4, steps=[1, 2, 2.5, 5, 10]).tick_values(0, t) if 0 < x <= t][-1:]
    outer = [x for x in (m * 10.0 ** k for k in range(-6, 7) for m in (1, 2, 5)) if 2.5 * t <= x < edge / 1.05][-1:]
    ticks = sorted({0.0, *inner, *(-x for x in inner), *outer, *(-x for x in outer)})
    ax.set_xticks(ticks, [f"{x:g}" for x in ticks])
    ax.xaxis.set_minor_locator(plt.NullLocator())
    for x in (-t, t):
        ax.axvline(x, color="0.6", lw=0.8, ls=":", zorder=1)


def forest(frame: pd.DataFrame, title: str | None = None):
    """The study's main figure: paired differences to a control, one panel per metric, one row per comparison. Mean
    with its 95 % CI, the seeds as dots under it, ± the smallest effect of interest as a band, the thesis's effect
    (carried to this scale) as a hollow diamond, the verdict above the row at the panel's right; x symmetric about 0.
    ``frame``: one row per (comparison, metric) with comparison, metric, diffs, mean, half95, margin, thesis,
    verdict."""
    if frame is None or not len(frame):
        raise ValueError("forest: no (comparison, metric) rows to draw (are the runs of both arms there?)")
    comparisons = list(dict.fromkeys(frame["comparison"]))
    metrics = list(dict.fromkeys(frame["metric"]))
    n = len(comparisons)
    width = max(2.6 + 3.4 * len(metrics), 6.5)
    fig, axes = plt.subplots(1, len(metrics), figsize=(width, 0.8 * n + 2.4), sharey=True, squeeze=False,
                             layout="constrained")
    for ax, metric in zip(axes[0], metrics):
        right = mtransforms.blended_transform_factory(ax.transAxes, ax.transData)     # x: panel fraction, y: row
        reach = []
        for _, r in frame[frame["metric"].eq(metric)].iterrows():
            y = comparisons.index(r["comparison"])
            diffs = _finite(*np.atleast_1d(r["diffs"]))
            mean, half, margin, thesis = (math.nan if r[k] is None else float(r[k])
                                          for k in ("mean", "half95", "margin", "thesis"))
            if np.isfinite(margin) and margin > 0:
                ax.fill_betweenx([y - 0.5, y + 0.5], -margin, margin, color=BAND, alpha=0.18, lw=0, zorder=0)
            if len(diffs):
                jitter = np.linspace(-0.06, 0.06, len(diffs)) if len(diffs) > 1 else np.zeros(1)
                ax.scatter(diffs, y + 0.24 + jitter, s=14, color=SEED_INK, alpha=0.8, lw=0, zorder=3)
            if np.isfinite(mean):
                ax.errorbar(mean, y, xerr=half if np.isfinite(half) else None, fmt="o", color=INK, ms=7, lw=2,
                            capsize=4, zorder=4)
            if np.isfinite(thesis):
                ax.scatter(thesis, y, marker="D", s=70, facecolors="none", edgecolors=THESIS_INK, lw=1.8, zorder=5)
            verdict = str(r["verdict"])
            ax.text(0.985, y - 0.29, verdict, transform=right, ha="right", va="center", fontsize=8.5,
                    color=VERDICT_INK.get(verdict.strip("() ").split(" ")[0].lower(), INK), gid="verdict",
                    bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.85), zorder=6)
            reach.append(np.abs(_finite(mean - half, mean + half, mean, margin, thesis, *diffs)).max(initial=0))
        _symmetric_axis(ax, reach)
        ax.axvline(0, color=INK, lw=1, zorder=2)
        for k in range(1, n):
            ax.axhline(k - 0.5, color="0.85", lw=0.8, zorder=1)
        ax.grid(axis="y", visible=False)
        ax.set_title(metric)
        ax.set_xlabel("paired difference (points)" if ax.get_xscale() == "linear" else
                      f"paired difference (points)\n(log scale beyond ±{ax.xaxis.get_transform().linthresh:.2g})")
    axes[0][0].set_ylim(n - 0.5, -0.5)
    axes[0][0].set_yticks(range(n), [textwrap.fill(c, 30) for c in comparisons])
    handles = [Line2D([], [], color=INK, marker="o", lw=2, label="mean ± 95 % CI over seeds"),
               Line2D([], [], color=SEED_INK, marker="o", ls="none", ms=4, label="seeds (paired differences)")]
    if (pd.to_numeric(frame["margin"]) > 0).any():
        handles.append(Patch(color=BAND, alpha=0.18, lw=0, label="smallest effect of interest"))
    if np.isfinite(pd.to_numeric(frame["thesis"])).any():
        handles.append(Line2D([], [], marker="D", ls="none", mfc="none", mec=THESIS_INK, mew=1.8, ms=7,
                              label="thesis effect, carried to this scale"))
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles) if width >= 10 else 2, frameon=False)
    if title:
        fig.suptitle(title)
    return fig
