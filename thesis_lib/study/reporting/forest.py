"""The study's result figures: paired differences to a control with the seeds, the smallest effect of interest, the
thesis's effect carried to this scale and the verdict, as a forest (``forest``: one row per comparison, one panel per
metric) and as a dose-response (``dose_response``: notebook 04's γ initial values on a log x axis); the chapter's
headline figure is ``headline.py``'s. Every legend entry says in words what its mark is (``LEGEND``: "name:
explanation").

Every axis of a difference is linear, so that a drawn length is the number's size: where one row reaches
``plotting.ZOOM`` × further than another, the forest gets a second tier of panels zoomed on the small rows (still
linear), and marks the rows that lie beyond it, instead of a logarithmic axis that draws a ±0.7 interval shorter than
a ±0.1 one."""
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
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullLocator

from .plotting import BAND, INK, SEED_INK, THESIS_INK, VERDICT_INK, zoom_edge

EQ_LEVEL = "90 %"   # the TOST at 5 % reads the 90 % interval (``stats.decide``), unless a row says otherwise
EQ_INKS = [INK, *sns.color_palette("colorblind")[4:6]]     # one ink per equivalence level, the usual one first
ZOOM_INK = "0.55"
HEADING_BAND = "0.93"

LEGEND = {  # the legend entries of these figures: (name, what it is, in words); the label is "name: explanation"
    #          (the equivalence intervals' entries name their level: ``_eq_label``)
    "mean": ("○ mean", "the paired difference (variant − control, at the same seed) averaged over the seeds"),
    "ci95": ("thin capped bar", "its 95 % confidence interval (Student t over the seeds; not adjusted for Holm or "
                                "for a sequential claim's looks)"),
    "seeds": ("grey dots", "the seeds, one paired difference each"),
    "band": ("green band", "± the smallest effect of interest: the thesis's own relative effect × our baseline's "
                           "mean"),
    "thesis": ("◇ thesis", "the thesis's effect carried to our scale: its relative difference × our baseline's "
                           "mean, in the claim's direction"),
    "thesis_line": ("dashed red line", "the thesis's effect carried to our scale: its relative difference × our "
                                       "baseline's mean"),
    "zero": ("black line at 0", "no difference to the baseline"),
    "zoom": ("dotted lines", "the extent of the zoomed panel below"),
    "off_scale": ("▶ at the edge", "a mean beyond the zoom: its row is drawn to scale in the upper panel"),
    "verdict": ("word at the right", "the verdict on the primary metric: equivalent (thick bar inside the band), "
                                     "reproduced / confirmed (significant in the claimed direction, Holm within the "
                                     "claim's family; contradicted / refuted: the other way), undecided "
                                     "(neither); in parentheses: a secondary metric, which decides nothing"),
}


def legend_label(key: str, explanation: str | None = None, name: str | None = None) -> str:
    """A legend entry, "name: explanation" (``LEGEND``'s, unless given)."""
    default_name, text = LEGEND[key]
    return f"{name or default_name}: {explanation or text}"


def _eq_label(level: str, note: str | None, others: bool = False) -> str:
    """The equivalence interval's legend entry at ``level`` (e.g. "92.08 % CI (thick bar): ..."); ``others``: the
    figure has rows at another level too."""
    what = note or (f"the equivalence interval, TOST at 5 % each side{' (every other row)' if others else ''}"
                    if level == EQ_LEVEL else "the equivalence interval at this row's own TOST level")
    return f"{level} CI (thick bar): {what}; 'equivalent' when it lies inside the band"


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


def legend_below(fig, handles: list, width: int, ncol: int, **kwargs) -> None:
    """The figure's legend below its panels, each entry wrapped at ``width`` characters (continuation indented)."""
    for h in handles:
        h.set_label(textwrap.fill(h.get_label(), width, subsequent_indent="    "))
    fig.legend(handles=handles, loc="outside lower center", ncol=ncol, frameon=False, fontsize=8, **kwargs)


def verdict_ink(text: str):
    return VERDICT_INK.get(text.strip("() ").split(" ")[0].split(",")[0].lower(), INK)


def _edges(reaches: list[float]) -> tuple[float, float | None]:
    """x half-range of the full panel (every row) and of the zoomed one (``plotting.zoom_edge``; None: no zoom)."""
    zoom = zoom_edge(reaches)
    return 1.15 * max([r for r in reaches if r > 0] or [1.0]), None if zoom is None else 1.15 * zoom


def _interval(ax, at: float, mean: float, half: float, eq: float, eq_ink, vertical: bool, capsize: int,
              mean_gid: str | None = None) -> None:
    """A paired difference's marks at ``at``: its 95 % interval (thin, capped), its equivalence interval (thick),
    its mean (a circle); along x (a forest's row) or, ``vertical``, along y (a dose of the dose-response)."""
    if not np.isfinite(mean):
        return
    point = (at, mean) if vertical else (mean, at)
    if np.isfinite(half):
        bars = ax.errorbar(*point, **{"yerr" if vertical else "xerr": half}, fmt="none", ecolor=INK, elinewidth=1.3,
                           capsize=capsize, zorder=4)
        bars.lines[2][0].set_gid("ci95")
    if np.isfinite(eq):
        (ax.vlines if vertical else ax.hlines)(at, mean - eq, mean + eq, colors=[eq_ink], lw=6, zorder=4, gid="ci_eq")
    ax.plot(*point, "o", ms=7, mfc="white", mec=INK, mew=1.6, zorder=5, gid=mean_gid)


def _draw_row(ax, row: dict, y: float, edge: float, inks: dict, verdict: bool):
    """One row: the margin band, the seeds, the 95 % interval (thin, capped), the equivalence interval (thick), the
    mean, the thesis's effect; a triangle at the panel's edge where the mean lies beyond it; the verdict above."""
    mean, half, eq, margin, thesis = (row[k] for k in ("mean", "half95", "eq", "margin", "thesis"))
    if np.isfinite(margin) and margin > 0:
        ax.fill_betweenx([y - 0.5, y + 0.5], -margin, margin, color=BAND, alpha=0.18, lw=0, zorder=0)
    diffs = row["diffs"]
    if len(diffs):
        jitter = np.linspace(-0.06, 0.06, len(diffs)) if len(diffs) > 1 else np.zeros(1)
        ax.scatter(diffs, y + 0.24 + jitter, s=14, color=SEED_INK, alpha=0.8, lw=0, zorder=3)
    _interval(ax, y, mean, half, eq, inks.get(row["eq_level"]), vertical=False, capsize=4)
    if np.isfinite(mean):
        if abs(mean) > edge:
            ax.plot(0.975 * math.copysign(edge, mean), y, ">" if mean > 0 else "<", color=INK, ms=8, zorder=5,
                    gid="off_scale")
            ax.text(0.93 * math.copysign(edge, mean), y, f"mean {mean:+.2f} (upper panel)".replace("-", "−"),
                    fontsize=8,
                    ha="right" if mean > 0 else "left", va="center", color=INK, gid="off_scale_value", zorder=6)
    if np.isfinite(thesis):
        ax.scatter(thesis, y, marker="D", s=70, facecolors="none", edgecolors=THESIS_INK, lw=1.8, zorder=5)
    if verdict:
        right = mtransforms.blended_transform_factory(ax.transAxes, ax.transData)     # x: panel fraction, y: row
        text = row["verdict"]
        ax.text(0.985, y - 0.29, text, transform=right, ha="right", va="center", fontsize=8.5,
                color=verdict_ink(text), gid="verdict",
                bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.85), zorder=6)


def _legend(fig, rows: list[dict], inks: dict, zoomed: bool, ncol: int, eq_notes: dict | None = None):
    """One figure legend below the panels; every entry "name: what it is, in words" (``LEGEND``)."""
    eq_notes = eq_notes or {}
    handles = [Line2D([], [], color=INK, marker="o", ls="none", mfc="white", mew=1.6, ms=7, label=legend_label("mean"))]
    whisker = Line2D([], [], color=INK, lw=1.3, marker="|", ms=9, label=legend_label("ci95"))
    if any(np.isfinite(r["half95"]) for r in rows):
        handles.append(whisker)
    levels = list(dict.fromkeys(r["eq_level"] for r in rows if np.isfinite(r["eq"])))
    for level in levels:
        handles.append(Line2D([], [], color=inks[level], lw=6,
                              label=_eq_label(level, eq_notes.get(level), others=len(levels) > 1)))
    handles.append(Line2D([], [], color=SEED_INK, marker="o", ls="none", ms=4, label=legend_label("seeds")))
    if any(np.isfinite(r["margin"]) and r["margin"] > 0 for r in rows):
        handles.append(Patch(color=BAND, alpha=0.18, lw=0, label=legend_label("band")))
    if any(np.isfinite(r["thesis"]) for r in rows):
        handles.append(Line2D([], [], marker="D", ls="none", mfc="none", mec=THESIS_INK, mew=1.8, ms=7,
                              label=legend_label("thesis")))
    if zoomed:
        handles += [Line2D([], [], color=ZOOM_INK, ls=":", lw=1.2, label=legend_label("zoom")),
                    Line2D([], [], color=INK, marker=">", ls="none", ms=8, label=legend_label("off_scale"))]
    secondary = any(r["verdict"].startswith("(") for r in rows)
    handles.append(Line2D([], [], color=VERDICT_INK["equivalent"], ls="none", marker=r"$\mathsf{Aa}$", ms=12,
                          label=legend_label("verdict", None if secondary else LEGEND["verdict"][1].split("; in paren")[0])))
    legend_below(fig, handles, 95 if ncol == 1 else 70, ncol,
                 handler_map={whisker: HandlerLine2D(numpoints=2)})      # its caps at both ends


def _seeds_text(rows) -> str:
    counts = sorted({len(r["diffs"]) for r in rows})
    if not counts or counts == [0]:
        return ""
    n = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
    return f"({n} seed{'' if counts == [1] else 's'})"


def _layout(comparisons: list[str], groups: dict) -> tuple[dict, list[tuple[str, float, float]], float]:
    """y of each comparison, the group headings as (text, y top, y bottom), and the y extent. A heading takes
    ``HEADING`` of a row's height, above its group's rows; no heading when the frame has no groups."""
    ys, headings, y = {}, [], 0.0
    order = list(dict.fromkeys(groups.get(c, "") for c in comparisons)) if groups else [""]
    for group in order:
        members = [c for c in comparisons if (groups.get(c, "") if groups else "") == group]
        if group:
            headings.append((group, y - 0.5, y - 0.5 + HEADING))
            y += HEADING
        for c in members:
            ys[c] = y
            y += 1
    return ys, headings, y - 0.5


HEADING = 0.8    # a group heading's height, in rows


def forest(frame: pd.DataFrame, title: str | None = None, primary: str | None = None, eq_notes: dict | None = None):
    """Paired differences to a control: one column of panels per metric, one row per comparison; x linear and
    symmetric about 0. Per row: the seeds as dots, the mean with its 95 % interval (thin, capped) and, where the row
    has a margin, the interval its equivalence verdict reads (thick: ``half_eq`` at ``eq_level`` if the frame has
    them, else ``half90``, the TOST's 90 %), ± the smallest effect of interest as a band, the thesis's effect carried
    to this scale as a hollow diamond, the verdict above the row at the right. Where a metric's rows differ more than
    ``plotting.ZOOM`` × in reach, a second tier zooms on the small ones (rows beyond: a triangle at the edge). Each
    row's label ends with its number of seeds.

    ``frame``: one row per (comparison, metric) with comparison, metric, diffs, mean, half95, margin, thesis,
    verdict; optional half90, half_eq, eq_level, and group (rows of one group are drawn together under its
    heading). ``primary``: the metric that decides (its panel is titled so, the others "secondary").
    ``eq_notes``: {equivalence level: what that interval is, in words} for the legend (a sequential look's level)."""
    if frame is None or not len(frame):
        raise ValueError("forest: no (comparison, metric) rows to draw (are the runs of both arms there?)")
    groups = dict(zip(frame["comparison"], frame["group"])) if "group" in frame else {}
    comparisons = list(dict.fromkeys(frame["comparison"]))
    if groups:                                           # a group's rows together, groups in order of appearance
        order = list(dict.fromkeys(groups[c] for c in comparisons))
        comparisons.sort(key=lambda c: order.index(groups[c]))
    metrics = list(dict.fromkeys(frame["metric"]))
    ys, headings, bottom = _layout(comparisons, groups)
    rows = {m: [(ys[r["comparison"]], _row(r)) for _, r in frame[frame["metric"].eq(m)].iterrows()]
            for m in metrics}
    every = [row for m in metrics for _, row in rows[m]]
    levels = list(pd.Series([r["eq_level"] for r in every if np.isfinite(r["eq"])], dtype=object)
                  .value_counts().index)
    inks = {level: EQ_INKS[min(i, len(EQ_INKS) - 1)] for i, level in enumerate(levels)}
    edges = {m: _edges([row["reach"] for _, row in rows[m]]) for m in metrics}
    zoomed = any(zoom is not None for _, zoom in edges.values())
    n, width = bottom + 0.5, 2.6 + 3.4 * len(metrics) if len(metrics) > 1 else 9.0
    heights = [0.65 * n + 0.6, 0.85 * n] if zoomed else [0.85 * n]
    fig, axes = plt.subplots(len(heights), len(metrics), figsize=(width, sum(heights) + 3.4), sharey=True,
                             squeeze=False, layout="constrained", gridspec_kw={"height_ratios": heights})
    for j, metric in enumerate(metrics):
        full, zoom = edges[metric]
        role = "" if primary is None else " (primary: decides)" if metric == primary else " (secondary)"
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
            for y in sorted(ys.values())[1:]:
                if not any(abs(top - (y - 0.5)) < 1e-9 or abs(low - (y - 0.5)) < 1e-9 for _, top, low in headings):
                    ax.axhline(y - 0.5, color="0.85", lw=0.8, zorder=1)
            left = mtransforms.blended_transform_factory(ax.transAxes, ax.transData)
            for text, top, low in headings:
                ax.axhspan(top, low, color=HEADING_BAND, lw=0, zorder=0.5)
                ax.axhline(top, color=INK, lw=1.2, zorder=2)
                ax.text(0.012, (top + low) / 2, text, transform=left, ha="left", va="center", fontsize=9,
                        fontweight="bold", gid="heading", zorder=6)
            ax.grid(axis="y", visible=False)
            ax.set_xlabel("paired difference (points)" if len(metrics) > 1 else
                          "paired difference to the baseline (points)")
            ax.set_gid(f"{metric}|{'full' if tier == 0 else 'zoom'}")
            ax.set_title(f"{metric}{role}" if tier == 0 else
                         f"{metric}: zoom to ±{zoom:.2g}" if zoom else f"{metric}: every row fits, same scale")
    axes[0][0].set_ylim(bottom, -0.5)
    wrap = 30 if len(metrics) > 1 else 40
    labels = [f"{textwrap.fill(c, wrap)}\n{_seeds_text([r for m in metrics for y, r in rows[m] if y == ys[c]])}"
              .strip() for c in comparisons]
    for tier, ax in enumerate(axes[:, 0]):
        ax.set_yticks([ys[c] for c in comparisons], labels)
        if zoomed:
            ax.set_ylabel("all rows, one linear scale" if tier == 0 else "zoomed on the small rows (linear)")
    _legend(fig, every, inks, zoomed, ncol=2 if width >= 10 else 1, eq_notes=eq_notes)
    if title:
        fig.suptitle(title)
    return fig


# ------------------------------------------------------------------------------------------ dose-response

def dose_tick(dose: float) -> str:
    return "1" if dose == 1 else f"{dose:g}" if dose >= 0.01 else f"1e{math.log10(dose):.0f}" \
        if math.log10(dose).is_integer() else f"{dose:g}"


def dose_response(frame: pd.DataFrame, primary: str, title: str | None = None, notes: dict | None = None):
    """A dose-response of paired differences: x the dose on a log axis (one position per dose), y the difference to
    the baseline (linear, points): per dose the seeds (dots, beside it), the mean with its 95 % interval (thin,
    capped) and the equivalence interval (thick), the means joined by a thin line; ± the smallest effect of interest
    as a band and the thesis's effect carried to this scale as a dashed line; each dose's verdict above it. One panel
    per metric, ``primary``'s first and wider, the others (secondary: they decide nothing) small beside it.

    ``frame``: one row per (dose, metric) with dose, metric, diffs, mean, half95, margin, thesis, verdict; optional
    half_eq, eq_level, tick (the dose's tick label). ``notes``: {dose: a line under its verdict} (e.g. the claim's
    family where it differs)."""
    if frame is None or not len(frame):
        raise ValueError("dose_response: no (dose, metric) rows to draw")
    notes = notes or {}
    metrics = [primary] + [m for m in dict.fromkeys(frame["metric"]) if m != primary]
    doses = sorted(dict.fromkeys(frame["dose"]))
    ticks = {d: (frame[frame.dose.eq(d)]["tick"].iloc[0] if "tick" in frame else dose_tick(d)) for d in doses}
    ratios = [2.3] + [1.0] * (len(metrics) - 1)
    fig, axes = plt.subplots(1, len(metrics), figsize=(5.2 + 2.9 * (len(metrics) - 1), 5.6), squeeze=False,
                             layout="constrained", gridspec_kw={"width_ratios": ratios})
    every, inks = [], {}
    edge = all(np.isfinite(r.thesis) and np.isclose(abs(r.thesis), r.margin) for r in frame.itertuples())
    for ax, metric in zip(axes[0], metrics):
        sub = frame[frame.metric.eq(metric)].set_index("dose")
        rows = {d: _row(sub.loc[d]) for d in doses if d in sub.index}
        every += list(rows.values())
        for r in rows.values():
            inks.setdefault(r["eq_level"], EQ_INKS[min(len(inks), len(EQ_INKS) - 1)])
        margins = {round(r["margin"], 12) for r in rows.values() if np.isfinite(r["margin"]) and r["margin"] > 0}
        theses = {round(r["thesis"], 12) for r in rows.values() if np.isfinite(r["thesis"])}
        lo, hi = math.log10(doses[0]) - 0.9, math.log10(doses[-1]) + 0.9
        for d, r in rows.items():                # the band and the thesis's effect: across the panel where one value
            x0, x1 = (10 ** lo, 10 ** hi) if len(margins) <= 1 else (d / 6, d * 6)
            if np.isfinite(r["margin"]) and r["margin"] > 0:
                ax.fill_between([x0, x1], -r["margin"], r["margin"], color=BAND, alpha=0.18, lw=0, zorder=0,
                                gid="band")
            if np.isfinite(r["thesis"]):
                x0, x1 = (10 ** lo, 10 ** hi) if len(theses) <= 1 else (d / 6, d * 6)
                ax.plot([x0, x1], [r["thesis"]] * 2, color=THESIS_INK, ls="--", lw=1.5, zorder=1, gid="thesis")
            if len(margins) <= 1 and len(theses) <= 1:
                break
        ax.axhline(0, color=INK, lw=1, zorder=2)
        xs = [d for d in doses if d in rows and np.isfinite(rows[d]["mean"])]
        ax.plot(xs, [rows[d]["mean"] for d in xs], color=INK, lw=0.8, ls=":", zorder=3, gid="trend")
        ends = [0.0]
        for d, r in rows.items():
            mean, half, eq = r["mean"], r["half95"], r["eq"]
            diffs = r["diffs"]
            if len(diffs):
                spread = np.linspace(-0.07, 0.07, len(diffs)) if len(diffs) > 1 else np.zeros(1)
                beside = 0.3 if metric == primary else 0.2                 # decades right of the dose
                ax.scatter(d * 10 ** (beside + spread), diffs, s=14, color=SEED_INK, alpha=0.85, lw=0, zorder=3,
                           gid="seeds")
            _interval(ax, d, mean, half, eq, inks.get(r["eq_level"]), vertical=True, capsize=5, mean_gid="mean")
            ends += [*diffs, *_finite(mean - half, mean + half, r["margin"], -r["margin"], r["thesis"])]
        low, high = min(ends), max(ends)
        span = (high - low) or 1.0
        room = 0.42 if metric == primary else 0.75                   # for the verdicts at the top (secondary: upright)
        ax.set_ylim(low - 0.08 * span, high + room * span)
        top = mtransforms.blended_transform_factory(ax.transData, ax.transAxes)
        tier, last = 0, None
        for d, r in rows.items():
            note = notes.get(d) if metric == primary else None
            # a dose within 1.5 decades of the last one writes its verdict one line lower than that one's
            tier = 1 - tier if metric == primary and last is not None and math.log10(d / last) < 1.5 else 0
            last = d
            ax.text(d, 0.975 - 0.085 * tier, r["verdict"] + (f"\n{note}" if note else ""), transform=top,
                    ha="center", va="top", fontsize=8.5 if metric == primary else 7.5,
                    color=verdict_ink(r["verdict"]), gid="verdict", rotation=0 if metric == primary else 90,
                    linespacing=1.1, bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.85), zorder=6)
        ax.set_xscale("log")
        ax.set_xlim(10 ** lo, 10 ** hi)
        ax.xaxis.set_major_locator(FixedLocator(doses))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticks(doses, [ticks[d] if metric == primary else dose_tick(d) for d in doses],
                      fontsize=9 if metric == primary else 8)
        ax.grid(axis="x", visible=False)
        locator = MaxNLocator(nbins=9 if metric == primary else 6, steps=[1, 2, 2.5, 5, 10])
        ax.set_yticks([t for t in locator.tick_values(low, high) if low - 0.08 * span <= t <= high + 0.05 * span])
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
        ax.set_gid(metric)
        ax.set_title(f"{metric}\n(primary: decides the claims)" if metric == primary
                     else f"{metric}\n(secondary: decides nothing)", fontsize=11 if metric == primary else 9.5)
        ax.set_xlabel("γ's initial value (log scale)")
    axes[0][0].set_ylabel("paired difference to the baseline (points)")
    handles = [Line2D([], [], color=INK, marker="o", ls="none", mfc="white", mew=1.6, ms=7, label=legend_label("mean")),
               Line2D([], [], color=INK, lw=1.3, marker="_", ms=9, label=legend_label("ci95"))]
    handles += [Line2D([], [], color=inks[level], lw=6, label=_eq_label(level, None, others=len(inks) > 1))
                for level in inks]
    handles += [Line2D([], [], color=SEED_INK, marker="o", ls="none", ms=4, label=legend_label("seeds")),
                Line2D([], [], color=INK, ls=":", lw=0.8, label="dotted line: joins the means, dose to dose"),
                Patch(color=BAND, alpha=0.18, lw=0, label=legend_label("band")),
                Line2D([], [], color=THESIS_INK, ls="--", lw=1.5,
                       label=legend_label("thesis_line") + (" (the band's upper edge: the band is its size)"
                                                      if edge else "")),
                Line2D([], [], color=INK, lw=1, label=legend_label("zero")),
                Line2D([], [], color=VERDICT_INK["equivalent"], ls="none", marker=r"$\mathsf{Aa}$", ms=12,
                       label=legend_label("verdict", name="word above each dose",
                                    explanation="its verdict on the claim 'this γ initial value helps': equivalent "
                                                "(thick bar inside the band), reproduced / confirmed (significant, "
                                                "Holm within the claim's family; contradicted / refuted: the other "
                                                "way), undecided (neither); in parentheses: a secondary metric's, "
                                                "which decides nothing"))]
    legend_below(fig, handles, 80, 2)
    if title:
        fig.suptitle(title, fontsize=11)
    return fig
