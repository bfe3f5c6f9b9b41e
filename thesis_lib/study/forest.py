"""The study's main figure: paired differences to a control, one panel per metric, one row per comparison, with the
seeds, the smallest effect of interest, the thesis's effect carried to this scale and the verdict (``forest``).

Every axis is linear, so that a drawn length is the number's size: where one row reaches ``plotting.ZOOM`` × further
than another, the figure gets a second tier of panels zoomed on the small rows (still linear), and marks the rows
that lie beyond it, instead of a logarithmic axis that draws a ±0.7 interval shorter than a ±0.1 one."""
from __future__ import annotations

import math
import textwrap

import matplotlib.pyplot as plt
import matplotlib.transforms as mtransforms
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.legend_handler import HandlerLine2D
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator

from .plotting import BAND, INK, SEED_INK, THESIS_INK, VERDICT_INK, zoom_edge

EQ_LEVEL = "90 %"   # the TOST at 5 % reads the 90 % interval (``stats.decide``), unless a row says otherwise
EQ_INKS = [INK, *sns.color_palette("colorblind")[4:6]]     # one ink per equivalence level, the usual one first
ZOOM_INK = "0.55"


def _num(value) -> float:
    """A frame cell as a float: nan for None, a missing column or anything not a number."""
    try:
        return math.nan if value is None else float(value)
    except (TypeError, ValueError):
        return math.nan


def _finite(*values) -> np.ndarray:
    x = np.asarray([v for v in values if v is not None], dtype=float).ravel()
    return x[np.isfinite(x)]


def _row(r) -> dict:
    """One (comparison, metric) row as numbers. ``eq``: the half-width of the interval the equivalence verdict reads,
    ``half_eq`` where the frame has it (at ``eq_level``), else ``half90`` (the TOST's, at 90 %); nan where the row has
    no margin to be equivalent within."""
    out = {k: _num(r.get(k)) for k in ("mean", "half95", "margin", "thesis")}
    out["diffs"] = _finite(*np.atleast_1d(r["diffs"]))
    eq, level = _num(r.get("half_eq")), r.get("eq_level")
    if not np.isfinite(eq):
        eq, level = _num(r.get("half90")), EQ_LEVEL
    has_margin = np.isfinite(out["margin"]) and out["margin"] > 0
    out["eq"] = eq if has_margin else math.nan
    out["eq_level"] = level if isinstance(level, str) and level else EQ_LEVEL
    out["verdict"] = str(r["verdict"])
    m, h, e = out["mean"], out["half95"], out["eq"]
    out["reach"] = np.abs(_finite(m - h, m + h, m - e, m + e, m, out["margin"], out["thesis"],
                                  *out["diffs"])).max(initial=0)
    return out


def _edges(reaches: list[float]) -> tuple[float, float | None]:
    """x half-range of the full panel (every row) and of the zoomed one (``plotting.zoom_edge``; None: no zoom)."""
    zoom = zoom_edge(reaches)
    return 1.15 * max([r for r in reaches if r > 0] or [1.0]), None if zoom is None else 1.15 * zoom


def _draw_row(ax, row: dict, y: int, edge: float, inks: dict, verdict: bool):
    """One row: the margin band, the seeds, the 95 % interval (thin, capped), the equivalence interval (thick), the
    mean, the thesis's effect; a triangle at the panel's edge where the mean lies beyond it; the verdict above."""
    mean, half, eq, margin, thesis = (row[k] for k in ("mean", "half95", "eq", "margin", "thesis"))
    if np.isfinite(margin) and margin > 0:
        ax.fill_betweenx([y - 0.5, y + 0.5], -margin, margin, color=BAND, alpha=0.18, lw=0, zorder=0)
    diffs = row["diffs"]
    if len(diffs):
        jitter = np.linspace(-0.06, 0.06, len(diffs)) if len(diffs) > 1 else np.zeros(1)
        ax.scatter(diffs, y + 0.24 + jitter, s=14, color=SEED_INK, alpha=0.8, lw=0, zorder=3)
    if np.isfinite(mean) and np.isfinite(half):
        bars = ax.errorbar(mean, y, xerr=half, fmt="none", ecolor=INK, elinewidth=1.3, capsize=4, zorder=4)
        bars.lines[2][0].set_gid("ci95")
    if np.isfinite(mean) and np.isfinite(eq):
        ax.hlines(y, mean - eq, mean + eq, colors=[inks[row["eq_level"]]], lw=6, zorder=4, gid="ci_eq")
    if np.isfinite(mean):
        ax.plot(mean, y, "o", ms=7, mfc="white", mec=INK, mew=1.6, zorder=5)
        if abs(mean) > edge:
            ax.plot(0.975 * math.copysign(edge, mean), y, ">" if mean > 0 else "<", color=INK, ms=8, zorder=5,
                    gid="off_scale")
    if np.isfinite(thesis):
        ax.scatter(thesis, y, marker="D", s=70, facecolors="none", edgecolors=THESIS_INK, lw=1.8, zorder=5)
    if verdict:
        right = mtransforms.blended_transform_factory(ax.transAxes, ax.transData)     # x: panel fraction, y: row
        text = row["verdict"]
        ax.text(0.985, y - 0.29, text, transform=right, ha="right", va="center", fontsize=8.5,
                color=VERDICT_INK.get(text.strip("() ").split(" ")[0].lower(), INK), gid="verdict",
                bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.85), zorder=6)


def _legend(fig, rows: list[dict], inks: dict, zoomed: bool, ncol: int):
    handles = [Line2D([], [], color=INK, marker="o", ls="none", mfc="white", mew=1.6, ms=7, label="mean over seeds")]
    whisker = Line2D([], [], color=INK, lw=1.3, marker="|", ms=9, label="95 % CI of the difference (unadjusted)")
    if any(np.isfinite(r["half95"]) for r in rows):
        handles.append(whisker)
    for level in dict.fromkeys(r["eq_level"] for r in rows if np.isfinite(r["eq"])):
        handles.append(Line2D([], [], color=inks[level], lw=6,
                              label=f"{level} CI: what the equivalence test (TOST) reads"))
    handles.append(Line2D([], [], color=SEED_INK, marker="o", ls="none", ms=4, label="seeds (paired differences)"))
    if any(np.isfinite(r["margin"]) and r["margin"] > 0 for r in rows):
        handles.append(Patch(color=BAND, alpha=0.18, lw=0, label="± smallest effect of interest (margin)"))
    if any(np.isfinite(r["thesis"]) for r in rows):
        handles.append(Line2D([], [], marker="D", ls="none", mfc="none", mec=THESIS_INK, mew=1.8, ms=7,
                              label="thesis effect, carried to this scale"))
    if zoomed:
        handles += [Line2D([], [], color=ZOOM_INK, ls=":", lw=1.2, label="extent of the zoomed panel below"),
                    Line2D([], [], color=INK, marker=">", ls="none", ms=8, label="mean beyond the zoom (see above)")]
    lines = math.ceil(len(handles) / ncol)                     # as few legend lines as ncol allows, filled evenly
    fig.legend(handles=handles, loc="outside lower center", ncol=math.ceil(len(handles) / lines), frameon=False,
               handler_map={whisker: HandlerLine2D(numpoints=2)})      # its caps at both ends


def forest(frame: pd.DataFrame, title: str | None = None):
    """Paired differences to a control: one column of panels per metric, one row per comparison; x linear and
    symmetric about 0. Per row: the seeds as dots, the mean with its 95 % interval (thin, capped) and, where the row
    has a margin, the interval its equivalence verdict reads (thick: ``half_eq`` at ``eq_level`` if the frame has
    them, else ``half90``, the TOST's 90 %), ± the smallest effect of interest as a band, the thesis's effect carried
    to this scale as a hollow diamond, the verdict above the row at the right. Where a metric's rows differ more than
    ``plotting.ZOOM`` × in reach, a second tier zooms on the small ones (rows beyond: a triangle at the edge).

    ``frame``: one row per (comparison, metric) with comparison, metric, diffs, mean, half95, margin, thesis,
    verdict; optional half90, half_eq, eq_level."""
    if frame is None or not len(frame):
        raise ValueError("forest: no (comparison, metric) rows to draw (are the runs of both arms there?)")
    comparisons = list(dict.fromkeys(frame["comparison"]))
    metrics = list(dict.fromkeys(frame["metric"]))
    rows = {m: [(comparisons.index(r["comparison"]), _row(r)) for _, r in frame[frame["metric"].eq(m)].iterrows()]
            for m in metrics}
    every = [row for m in metrics for _, row in rows[m]]
    levels = list(pd.Series([r["eq_level"] for r in every if np.isfinite(r["eq"])]).value_counts().index)
    inks = {level: EQ_INKS[min(i, len(EQ_INKS) - 1)] for i, level in enumerate(levels)}
    edges = {m: _edges([row["reach"] for _, row in rows[m]]) for m in metrics}
    zoomed = any(zoom is not None for _, zoom in edges.values())
    n, width = len(comparisons), max(2.6 + 3.4 * len(metrics), 6.5)
    heights = [0.55 * n + 0.6, 0.8 * n] if zoomed else [0.8 * n]
    fig, axes = plt.subplots(len(heights), len(metrics), figsize=(width, sum(heights) + 2.6), sharey=True,
                             squeeze=False, layout="constrained", gridspec_kw={"height_ratios": heights})
    for j, metric in enumerate(metrics):
        full, zoom = edges[metric]
        for tier, ax in enumerate(axes[:, j]):
            edge = full if tier == 0 else zoom or full
            for y, row in rows[metric]:
                _draw_row(ax, row, y, edge, inks, verdict=tier == len(heights) - 1)
            ax.set_xlim(-edge, edge)
            ax.xaxis.set_major_locator(MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10], symmetric=True))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
            ax.axvline(0, color=INK, lw=1, zorder=2)
            if tier == 0 and zoom is not None:
                for x in (-zoom, zoom):
                    ax.axvline(x, color=ZOOM_INK, ls=":", lw=1.2, zorder=1)
            for k in range(1, n):
                ax.axhline(k - 0.5, color="0.85", lw=0.8, zorder=1)
            ax.grid(axis="y", visible=False)
            ax.set_xlabel("paired difference (points)")
            ax.set_gid(f"{metric}|{'full' if tier == 0 else 'zoom'}")
            ax.set_title(metric if tier == 0 else
                         f"{metric}: zoom to ±{zoom:.2g}" if zoom else f"{metric}: every row fits, same scale")
    axes[0][0].set_ylim(n - 0.5, -0.5)
    for tier, ax in enumerate(axes[:, 0]):
        ax.set_yticks(range(n), [textwrap.fill(c, 30) for c in comparisons])
        if zoomed:
            ax.set_ylabel("all rows, one linear scale" if tier == 0 else "zoomed on the small rows (linear)")
    _legend(fig, every, inks, zoomed, ncol=4 if width >= 10 else 2)
    if title:
        fig.suptitle(title)
    return fig
