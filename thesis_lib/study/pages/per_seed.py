"""Notebook 03's second figure (``03_table2_bars``): Table 2 seed by seed. Its two arms' levels are the same to the
eye (a seed moves both by the same point or two), so it draws what differs: each seed's paired difference (the
variant − the control, at the same seed) as a stem from 0, its length the number's size, and their mean with its
95 % interval, one panel per column of the table; each panel's title gives the control's level and the range of its
own seeds, the scale the differences are read against."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.legend_handler import HandlerLine2D
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, MaxNLocator

from thesis_lib.metrics import PRIMARY, TABLE, label
from thesis_lib.variants import VARIANT_SHORT
from ..claims.stats import mean_ci
from .plotting import COLOURS, INK
from ..results import contrast_values, runs_of


def draw(df: pd.DataFrame, variants, metrics=TABLE):
    """``variants`` = (control, variant), one panel per metric of ``metrics`` (the primary one marked), on a linear
    axis symmetric about 0; the seeds both arms have."""
    control, variant = variants
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.3 * len(metrics) + 0.6, 4.0), squeeze=False,
                             layout="constrained")
    ink = COLOURS[variant]
    for ax, m in zip(axes[0], metrics):
        diffs = contrast_values(df, (((variant, "none"), 1.0), ((control, "none"), -1.0)), m)
        seeds, values = list(diffs), np.asarray(list(diffs.values()), dtype=float)
        for x, v in enumerate(values):
            ax.plot([x, x], [0, v], color=ink, lw=3, solid_capstyle="butt", zorder=3, gid="stem")
            ax.plot(x, v, "o", color=ink, ms=6, zorder=4, gid="seed")
        mean, half = mean_ci(values)
        at = len(values) + 0.4
        ax.errorbar(at, mean, yerr=None if np.isnan(half) else half, fmt="o", ms=8, mfc="white", mec=INK, mew=1.6,
                    ecolor=INK, elinewidth=1.4, capsize=5, zorder=5, gid="mean")
        ax.axhline(0, color=INK, lw=1, zorder=2)
        reach = 1.2 * max(np.abs([*values, mean - np.nan_to_num(half), mean + np.nan_to_num(half)]).max(), 1e-9)
        ax.set_ylim(-reach, reach)
        ax.yaxis.set_major_locator(MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10], symmetric=True))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
        ax.set(xlim=(-0.6, at + 0.6), xticks=[*range(len(values)), at], xticklabels=[*map(str, seeds), "mean"],
               xlabel="seed")
        ax.grid(axis="x", visible=False)
        base = runs_of(df, control).set_index("seed")[m].reindex(seeds)
        ax.set_title(f"{label(m)}{' (primary)' if m == PRIMARY else ''}\n{VARIANT_SHORT[control]}: mean "
                     f"{base.mean():.1f}, seeds {base.min():.1f} to {base.max():.1f}", fontsize=10)
        ax.set_gid(m)
    axes[0][0].set_ylabel(f"{VARIANT_SHORT[variant]} − {VARIANT_SHORT[control]} (points)")
    whisker = Line2D([], [], color=INK, lw=1.4, marker="o", ms=8, mfc="white", mec=INK, mew=1.6)
    handles = [Line2D([], [], color=ink, lw=3, marker="o", ms=6), whisker, Line2D([], [], color=INK, lw=1)]
    labels = [f"stem: one seed's paired difference, {VARIANT_SHORT[variant]} − {VARIANT_SHORT[control]} at that seed",
              "circle with bar: their mean and its 95 % interval", "line at 0: no difference"]
    fig.legend(handles, labels, loc="outside lower center", ncol=3, fontsize=8.5, frameon=False,
               handler_map={whisker: HandlerLine2D(numpoints=1)})
    fig.suptitle(f"Table 2 seed by seed: {VARIANT_SHORT[variant]} − {VARIANT_SHORT[control]}, paired "
                 f"(the levels: notebook 03's table)", fontsize=11)
    return fig
