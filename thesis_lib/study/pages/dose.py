"""``04_effect_vs_dose``: Table 2's two claims against the TTE's dose, read from the claims table (``frame``) and
drawn by ``draw``. x: the TTE's share of the shared block's image input (percent, log); y: our effect on the primary
metric in units of the thesis's, with its 95 % interval; one point per regime and claim ("helps": the TTE' and the
γ-init doses against the baseline; "is used": the TTE removed at evaluation), each labelled in the plot with its
regime, claim and verdict, hollow where the regime could not test the claim (``can_test``).

Table 1's claims are not on it: their TTE enters before the encoders, where no share of the shared block's input
measures it.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from .forest import legend_below, verdict_ink
from .front import say
from .plotting import INK, THESIS_INK

HELPS, USED = "helps", "is used"
PANELS = {HELPS: say("figures.j2", "dose_panel", "helps"), USED: say("figures.j2", "dose_panel", "used")}
NEAR = 1.35    # points whose shares lie within this factor of a cluster's first are one cluster, set apart sideways
STEP = 1.13    # the factor between the points of a cluster


def frame(table: pd.DataFrame, tte_init: float | None = None) -> pd.DataFrame:
    """The claims table's primary rows of "helps", "is used" and the γ-init doses that have a ratio and a share, in
    the table's order: panel, regime, steps, claim (in words; ``tte_init``: γ's initial value in the TTE', named in
    the default regime beside the doses), seeds, share (%), ratio and its 95 % low / high, verdict, can_test."""
    rows = table[table.primary & table.status.ne("pending")
                 & (table.topic.isin(("helps", "used")) | table.topic.str.startswith("dose"))]
    rows = rows[np.isfinite(rows.ratio.astype(float)) & np.isfinite(rows.tte_share.astype(float))]
    doses = rows.topic.str.startswith("dose").any()

    def claim(r) -> str:
        if r.topic.startswith("dose"):
            return f"γ init {r.topic.split()[1]}"
        own = tte_init is not None and doses and r.regime == "default"
        return "the TTE'" + (f" (γ init {tte_init:g})".replace("e-0", "e-") if own else "")
    return pd.DataFrame([{"panel": USED if r.topic == "used" else HELPS, "regime": r.regime, "steps": int(r.steps),
                          "claim": claim(r), "seeds": int(r.n), "share": float(r.tte_share), "ratio": float(r.ratio),
                          "low": float(r.ratio_low), "high": float(r.ratio_high),
                          "verdict": str(r.verdict).split(",")[0], "can_test": bool(r.can_test)}
                         for r in rows.itertuples()],
                        columns=["panel", "regime", "steps", "claim", "seeds", "share", "ratio", "low", "high",
                                 "verdict", "can_test"])


def spread(points: pd.DataFrame) -> float:
    """The x range the points span, as a factor (largest share ÷ smallest): what the figure's log axis shows."""
    x = points["share"].to_numpy()
    return float(np.max(x) / np.min(x)) if len(x) else float("nan")


def clusters(shares) -> list[list[int]]:
    """The indices of ``shares`` grouped into clusters (ascending): each holds the shares within ``NEAR`` of its
    smallest."""
    order = np.argsort(shares, kind="stable")
    out: list[list[int]] = []
    for i in order:
        if out and shares[i] < NEAR * shares[out[-1][0]]:
            out[-1].append(int(i))
        else:
            out.append([int(i)])
    return out


def _verdict(r) -> str:
    return r.verdict + ("" if r.can_test else " (not testable here)")


def _place(wanted: list[float], gap: float, lo: float, hi: float) -> list[float]:
    """``wanted`` positions (ascending) moved apart to at least ``gap`` from each other, kept within [lo, hi]."""
    placed = list(wanted)
    for i in range(1, len(placed)):
        placed[i] = max(placed[i], placed[i - 1] + gap)
    placed[-1] = min(placed[-1], hi)
    for i in range(len(placed) - 2, -1, -1):
        placed[i] = min(placed[i], placed[i + 1] - gap)
    shift = max(0.0, lo - placed[0])
    return [p + shift for p in placed]


def _points(ax, sub: pd.DataFrame) -> list:
    """One panel's points at their shares (a cluster set apart sideways by ``STEP``), each with its 95 % interval;
    the lines at 0 and 1. Returns (x, row) per point, by cluster, for ``_labels``."""
    shares = sub.share.to_numpy()
    rows, out = list(sub.itertuples()), []
    for group in clusters(shares):
        centre = np.exp(np.log(shares[group]).mean())
        out.append([(centre * STEP ** (k - (len(group) - 1) / 2), rows[i]) for k, i in enumerate(group)])
    for x, r in (p for group in out for p in group):
        ax.errorbar(x, r.ratio, yerr=[[r.ratio - r.low], [r.high - r.ratio]], fmt="o", ms=7, color=INK,
                    mfc=INK if r.can_test else "white", mec=INK, mew=1.6, lw=1.5, capsize=3, zorder=4,
                    gid=f"{r.regime}|{r.claim}")
    lo, hi = min(0.0, *sub.low), max(1.0, *sub.high)
    ax.set_ylim(lo - 0.08 * (hi - lo), hi + 0.08 * (hi - lo))
    ax.axhline(0, color=INK, lw=1.0, zorder=2, gid="no_effect")
    ax.axhline(1, color=THESIS_INK, lw=1.4, ls="--", zorder=2, gid="thesis_effect")
    for y, text, ink in ((1, "1: the thesis's effect", THESIS_INK), (0, "0: no effect", INK)):
        ax.annotate(text, (1.005, y), xycoords=ax.get_yaxis_transform(), ha="left", va="center", fontsize=8.5,
                    color=ink, annotation_clip=False, gid=f"label_{y}")
    ax.set_xscale("log")
    ax.tick_params(labelsize=8.5)
    return out


LEADER = "0.55"
LINES = 0.5    # inches a label takes up and down (two lines of its name above its point's height, its verdict below)


def _labels(ax, groups: list) -> None:
    """Each point's label beside its cluster (left of the leftmost cluster, right of the others) at its point's
    height, the labels of a cluster spread so that none covers another, a thin leader to its point: the regime and
    the claim with its seeds above, the verdict below in its ink. Call once the layout has placed ``ax``."""
    ylo, yhi = ax.get_ylim()
    gap = LINES / (ax.get_window_extent().height / ax.figure.dpi)                 # in axes units
    for g, group in enumerate(groups):
        left = g == 0 and len(groups) > 1
        group = sorted(group, key=lambda p: p[1].ratio)
        at = _place([(r.ratio - ylo) / (yhi - ylo) for _, r in group], gap, gap * 0.6, 1 - gap * 0.6)
        xs = [x for x, _ in group]
        bend, edge = (min(xs) / 1.07, min(xs) / 1.3) if left else (max(xs) * 1.07, max(xs) * 1.3)
        for (x, r), y in zip(group, at):
            side = dict(xytext=(edge, y), textcoords=ax.get_xaxis_transform(), ha="right" if left else "left",
                        fontsize=7.5, zorder=5, bbox=dict(boxstyle="round,pad=0.12", fc="white", ec="none", alpha=0.85))
            ax.plot([x, bend], [r.ratio, r.ratio], color=LEADER, lw=0.7, zorder=3, gid="leader")  # level: no crossing
            ax.annotate("", (bend, r.ratio), xytext=(edge, y), textcoords=ax.get_xaxis_transform(), zorder=3,
                        arrowprops=dict(arrowstyle="-", color=LEADER, lw=0.7, shrinkA=0, shrinkB=0), gid="leader")
            ax.annotate(f"{r.regime}\n{r.claim}, {r.seeds} seeds", (x, r.ratio), va="bottom", linespacing=1.15,
                        color=INK, gid="point_label", **side)
            ax.annotate(_verdict(r), (x, r.ratio), va="top", fontweight="bold", color=verdict_ink(r.verdict),
                        gid="verdict", **side)


def draw(points: pd.DataFrame, title: str | None = None):
    """The figure the module describes: one panel per claim ("helps" above "is used") sharing the log x axis."""
    if points is None or not len(points):
        raise ValueError("dose: no regime has a decided Table 2 claim with a TTE share")
    panels = [p for p in (HELPS, USED) if p in set(points.panel)]
    fig, axes = plt.subplots(len(panels), 1, figsize=(11, 4.3 * len(panels) + 1.4), sharex=True, squeeze=False,
                             layout="constrained", height_ratios=[1.3, 1][:len(panels)])
    drawn = []
    for ax, panel in zip(axes[:, 0], panels):
        drawn.append(_points(ax, points[points.panel.eq(panel)].reset_index(drop=True)))
        ax.set_title(PANELS[panel], fontsize=10, loc="left")
        ax.set_ylabel("our effect ÷ the thesis's\n(95 % interval)", fontsize=9)
    shares = points.share.to_numpy()
    axes[-1, 0].set_xlim(shares.min() / 9, shares.max() * 12)                      # room for the labels
    axes[-1, 0].set_xlabel(say("figures.j2", "dose_xlabel"), fontsize=9)
    handles = [Line2D([], [], color=INK, marker="o", ms=7, mew=1.6, lw=1.5,
                      label=say("figures.j2", "dose_filled")),
               Line2D([], [], color=INK, marker="o", ms=7, mfc="white", mew=1.6, lw=1.5,
                      label=say("figures.j2", "dose_hollow")),
               Line2D([], [], ls="none",
                      label=say("figures.j2", "dose_apart", STEP))]
    legend_below(fig, handles, 100, 1)
    if title:
        fig.suptitle(title, fontsize=10.5)
    fig.canvas.draw()                                              # the layout, which the labels' spacing reads
    for ax, groups in zip(axes[:, 0], drawn):
        _labels(ax, groups)
    return fig
