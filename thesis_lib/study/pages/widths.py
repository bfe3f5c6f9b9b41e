"""The width ladder's figure: Table 2's two claims at the thesis's learning-rate budget for the TTE (600 steps)
against the model's width, drawn by ``draw`` from the rows the claims stage gives (``claims/read.py``'s
``ladder_frame``: per rung and claim, our effect in units of the thesis's with its 95 % interval, the margin in the
same units, the verdict). x: width on a log2 axis (96, 192, 384); y: our effect ÷ the thesis's; "helps" filled,
"is used" hollow, each beside the other at its width; ± the margin shaded; lines at 1 (the thesis's effect) and 0.
A rung still pending is named at 0, with no point. Not in the drawn set (``figures.FIGURES``) before its runs.
"""
from __future__ import annotations

import math
import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .forest import legend_below, verdict_ink
from .front import say
from .plotting import BAND, INK, THESIS_INK

HELPS, USED = "helps", "is used"
APART = 2 ** 0.06        # "helps" and "is used" at one width stand this factor apart (left, right)


def title(frame: pd.DataFrame, metric: str) -> str:
    """The figure's title (``templates/figures.j2``): its regime (the rows' steps) and what y is."""
    steps = f"{int(frame.steps.max()):,} steps"
    lines = [say("figures.j2", "ladder_title", steps), say("figures.j2", "ladder_title_2", metric)]
    return "\n".join(textwrap.fill(line, 92) for line in lines)


def _band(ax, frame: pd.DataFrame, edges: tuple) -> None:
    """± each width's margin (in units of the thesis's effect), shaded across the widths that have one and on to the
    axis's ``edges`` at the outermost widths' margins."""
    margin = frame.groupby("width").margin.mean().dropna()
    if len(margin):
        x = np.concatenate([[edges[0]], margin.index.to_numpy(float), [edges[1]]])
        m = np.concatenate([margin.to_numpy()[:1], margin.to_numpy(), margin.to_numpy()[-1:]])
        ax.fill_between(x, -m, m, color=BAND, alpha=0.2, lw=0, zorder=0, gid="band")


def _point(ax, r) -> None:
    """One rung's claim: its mean and 95 % interval (filled: "helps", hollow: "is used"), its verdict beside it; a
    pending rung's name at 0 instead."""
    helps = r.claim == HELPS
    x = r.width / APART if helps else r.width * APART
    if not np.isfinite(r.ratio):
        ax.annotate("pending", (x, 0), xytext=(0, 6), textcoords="offset points", ha="center", fontsize=8,
                    color=INK, gid="pending")
        return
    ax.errorbar(x, r.ratio, yerr=[[r.ratio - r.low], [r.high - r.ratio]], fmt="o", ms=7, color=INK,
                mfc=INK if helps else "white", mec=INK, mew=1.6, lw=1.5, capsize=3, zorder=4,
                gid=f"{r.claim}|{r.width}")
    ax.annotate(f"{r.verdict}\n({r.seeds} seeds)", (x, r.ratio), xytext=(-7 if helps else 7, 0),
                textcoords="offset points", ha="right" if helps else "left", va="center", fontsize=7.5,
                color=verdict_ink(r.verdict), gid="verdict", zorder=5,
                bbox=dict(boxstyle="round,pad=0.1", fc="white", ec="none", alpha=0.8))


def _trend(ax, trend: dict, widths) -> Line2D:
    """The weighted fit of "helps" on log2 width over the drawn widths (``claims.ladder.ladder_trend``)."""
    x = np.array([min(widths), max(widths)], dtype=float)
    line, = ax.plot(x, trend["intercept"] + trend["slope"] * np.log2(x), color="0.45", lw=1.2, ls=":", zorder=3,
                    gid="trend", label=say("figures.j2", "ladder_trend", trend["slope"], trend["low"], trend["high"]))
    return line


def draw(frame: pd.DataFrame, title: str | None = None, trend: dict | None = None):
    """The figure the module describes; ``trend``: the fit of "helps" on log2 width, drawn as a dotted line."""
    if frame is None or not len(frame):
        raise ValueError("widths: no rung of the width ladder in the claims table")
    widths = sorted(set(frame.width))
    fig, ax = plt.subplots(figsize=(7.4, 5.6), layout="constrained")
    edges = (min(widths) / 1.5, max(widths) * 1.5)
    _band(ax, frame, edges)
    for r in frame.itertuples():
        _point(ax, r)
    ax.axhline(0, color=INK, lw=1.0, zorder=2, gid="no_effect")
    ax.axhline(1, color=THESIS_INK, lw=1.4, ls="--", zorder=2, gid="thesis_effect")
    for y, text, ink in ((1, "1: the thesis's effect", THESIS_INK), (0, "0: no effect", INK)):
        ax.annotate(text, (1.005, y), xycoords=ax.get_yaxis_transform(), ha="left", va="center", fontsize=8.5,
                    color=ink, annotation_clip=False, gid=f"label_{y}")
    ax.set_xscale("log", base=2)
    ax.set_xticks(widths, [f"{w}" for w in widths])
    ax.xaxis.set_minor_locator(plt.NullLocator())
    ax.set_xlim(*edges)
    finite = frame[np.isfinite(frame.ratio.astype(float))]
    lo = min([0.0, *finite.low, *(-frame.margin.dropna())])
    hi = max([1.0, *finite.high, *frame.margin.dropna()])
    ax.set_ylim(lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo))
    ax.set_xlabel(say("figures.j2", "ladder_xlabel"), fontsize=9)
    ax.set_ylabel(say("figures.j2", "ladder_ylabel"), fontsize=9)
    handles = [Line2D([], [], color=INK, marker="o", ms=7, mew=1.6, lw=1.5, label=say("figures.j2", "ladder_helps")),
               Line2D([], [], color=INK, marker="o", ms=7, mfc="white", mew=1.6, lw=1.5,
                      label=say("figures.j2", "ladder_used"))]
    if frame.margin.notna().any():
        handles.append(Patch(color=BAND, alpha=0.2, lw=0, label=say("figures.j2", "ladder_band")))
    if trend is not None and not math.isnan(trend["slope"]):
        handles.append(_trend(ax, trend, widths))
    legend_below(fig, handles, 100, 1)
    if title:
        fig.suptitle(title, fontsize=10.5)
    return fig
