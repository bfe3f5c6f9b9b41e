"""The study's figures of paired differences to a control: a forest (``forest``) and a dose-response
(``dose_response``); the headline figure is ``headline.py``'s. Every legend entry says in words what its mark is
(``LEGEND``: "name: explanation").

Every axis of a difference is linear, so that a drawn length is the number's size (a logarithmic axis drew a ±0.7
interval shorter than a ±0.1 one), and every row is drawn once: where a group of rows (Table 1's 2 × 2) reaches far
beyond another (its claim), each group gets panels of its own, scaled to its rows. The legends are short and name only
the marks and verdict words a figure shows."""
from __future__ import annotations

import math
import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.legend_handler import HandlerLine2D
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullLocator

from .plotting import BAND, INK, SEED_INK, THESIS_INK, VERDICT_INK, finite

EQ_LEVEL = "90 %"   # the TOST at 5 % reads the 90 % interval (``stats.decide``), unless a row says otherwise

LEGEND = {  # the legend entries of these figures, short: (name, what it is); the label is "name: explanation"
    "mean": ("circle", "the mean paired difference (variant − control, same seed)"),
    "ci95": ("thin bar", "its 95 % interval"),
    "seeds": ("dots", "the seeds, one paired difference each"),
    "band": ("green band", "± the smallest effect of interest (the margin)"),
    "thesis": ("diamond", "the thesis's effect carried to this scale"),
    "zero": ("line at 0", "no difference to the baseline"),
    "verdict": ("word at the right", "the verdict"),
}
MEANING = {  # each verdict word (``stats.WORDS``) in a few words, for the legend of a figure that shows it
    "equivalent": "thick bar inside the band", "trivial": "inside the band, yet significant",
    "reproduced": "significant in the thesis's direction", "contradicted": "significant against the thesis's direction",
    "confirmed": "significant in the claimed direction", "refuted": "significant against the claimed direction",
    "better": "significant, higher", "worse": "significant, lower", "descriptive": "no seeds planned, decides nothing",
    "pending": "short of its planned seeds",
}


def legend_label(key: str, explanation: str | None = None, name: str | None = None) -> str:
    """A legend entry, "name: explanation" (``LEGEND``'s, unless given)."""
    default_name, text = LEGEND[key]
    return f"{name or default_name}: {explanation or text}"


def verdict_word(text: str) -> str:
    """A verdict's word: "reproduced in direction, 36 × …" → reproduced, "(equivalent)" → equivalent."""
    return text.strip("() ").split(" ")[0].split(",")[0].lower()


def verdict_label(verdicts, band: bool, name: str = LEGEND["verdict"][0]) -> str:
    """The verdict's legend entry, explaining only the words ``verdicts`` holds (in ``MEANING``'s order): "undecided"
    is "neither" where rows have a band, "not significant" where none has; significance is after Holm."""
    words = {verdict_word(v) for v in verdicts}
    meaning = {**MEANING, "undecided": "neither inside the band nor significant" if band else "not significant"}
    parts = [f"{w}: {meaning[w]}" for w in meaning if w in words]
    secondary = any(str(v).startswith("(") for v in verdicts)
    return (f"{name}: the verdict — " + "; ".join(parts)
            + (" (significant: after Holm)" if words - {"equivalent", "undecided", "descriptive", "pending"} else "")
            + ("; (in parentheses): a secondary metric's, which decides nothing" if secondary else ""))


def eq_label(levels: list[str], notes: dict | None = None) -> str:
    """The thick bar's legend entry: the interval the equivalence verdict reads, at each of ``levels`` (the usual
    90 % first; another level with its ``notes``, e.g. a sequential claim's look)."""
    notes = notes or {}
    others = [f"{notes[lv]}: {lv}" if lv in notes else lv for lv in levels if lv != EQ_LEVEL]
    level = EQ_LEVEL + (f" ({'; '.join(others)})" if others else "") if EQ_LEVEL in levels else "; ".join(others)
    return f"thick bar: the interval read for equivalence, {level}"


def _row(r) -> dict:
    """One (comparison, metric) row as numbers. ``eq``: the half-width of the interval the equivalence verdict reads,
    ``half_eq`` where the frame has it (at ``eq_level``), else ``half90`` (the TOST's, at 90 %); nan where the row has
    no margin to be equivalent within."""
    def num(k):                                        # a cell as a number; nan: None, a missing column, "–"
        return pd.to_numeric(r.get(k), errors="coerce")

    out = {k: num(k) for k in ("mean", "half95", "margin", "thesis")}
    out["diffs"] = finite(*np.atleast_1d(r["diffs"]))
    eq, level = num("half_eq"), r.get("eq_level")
    if not np.isfinite(eq):
        eq, level = num("half90"), EQ_LEVEL
    has_margin = np.isfinite(out["margin"]) and out["margin"] > 0
    out["eq"] = eq if has_margin else math.nan
    out["eq_level"] = level if isinstance(level, str) and level else EQ_LEVEL
    out["verdict"] = str(r["verdict"])
    m, h, e = out["mean"], out["half95"], out["eq"]
    out["reach"] = np.abs(finite(m - h, m + h, m - e, m + e, m, out["margin"], out["thesis"],
                                 *out["diffs"])).max(initial=0)
    return out


def legend_below(fig, handles: list, width: int, ncol: int, **kwargs) -> None:
    """The figure's legend below its panels, each entry wrapped at ``width`` characters (continuation indented)."""
    for h in handles:
        h.set_label(textwrap.fill(h.get_label(), width, subsequent_indent="    "))
    fig.legend(handles=handles, loc="outside lower center", ncol=ncol, frameon=False, fontsize=8, **kwargs)


def verdict_ink(text: str):
    return VERDICT_INK.get(verdict_word(text), INK)


def _interval(ax, at: float, mean: float, half: float, eq: float, vertical: bool, capsize: int) -> None:
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
        (ax.vlines if vertical else ax.hlines)(at, mean - eq, mean + eq, colors=[INK], lw=6, zorder=4, gid="ci_eq")
    ax.plot(*point, "o", ms=7, mfc="white", mec=INK, mew=1.6, zorder=5, gid="mean")


def _draw_row(ax, row: dict, y: float):
    """One row: the margin band, the seeds, its ``_interval``, the thesis's effect; its verdict above, at the right."""
    margin, thesis = row["margin"], row["thesis"]
    if np.isfinite(margin) and margin > 0:
        ax.fill_betweenx([y - 0.5, y + 0.5], -margin, margin, color=BAND, alpha=0.18, lw=0, zorder=0)
    diffs = row["diffs"]
    if len(diffs):
        jitter = np.linspace(-0.06, 0.06, len(diffs)) if len(diffs) > 1 else np.zeros(1)
        ax.scatter(diffs, y + 0.24 + jitter, s=14, color=SEED_INK, alpha=0.8, lw=0, zorder=3)
    _interval(ax, y, row["mean"], row["half95"], row["eq"], vertical=False, capsize=4)
    if np.isfinite(thesis):
        ax.scatter(thesis, y, marker="D", s=70, facecolors="none", edgecolors=THESIS_INK, lw=1.8, zorder=5)
    ax.text(0.985, y - 0.29, row["verdict"], transform=ax.get_yaxis_transform(), ha="right", va="center", fontsize=8.5,
            color=verdict_ink(row["verdict"]), gid="verdict",
            bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.85), zorder=6)


def _marks(rows: list[dict], whisker, thesis, eq_notes: dict | None = None, zero: bool = False,
           verdict_name: str = LEGEND["verdict"][0]) -> list:
    """The legend's entries of the marks ``rows`` draw, every entry "name: what it is": ``whisker`` the 95 %
    interval's, ``thesis`` the thesis's effect's, ``zero`` the line at 0; the verdict last."""
    levels = sorted(dict.fromkeys(r["eq_level"] for r in rows if np.isfinite(r["eq"])), key=lambda lv: lv != EQ_LEVEL)
    band = any(np.isfinite(r["margin"]) and r["margin"] > 0 for r in rows)
    handles = [Line2D([], [], color=INK, marker="o", ls="none", mfc="white", mew=1.6, ms=7, label=legend_label("mean"))]
    handles += [whisker] if any(np.isfinite(r["half95"]) for r in rows) else []
    handles += [Line2D([], [], color=INK, lw=6, label=eq_label(levels, eq_notes))] if levels else []
    handles.append(Line2D([], [], color=SEED_INK, marker="o", ls="none", ms=4, label=legend_label("seeds")))
    handles += [Patch(color=BAND, alpha=0.18, lw=0, label=legend_label("band"))] if band else []
    handles += [thesis] if any(np.isfinite(r["thesis"]) for r in rows) else []
    handles += [Line2D([], [], color=INK, lw=1, label=legend_label("zero"))] if zero else []
    verdicts = [r["verdict"] for r in rows]
    return handles + [Line2D([], [], color=verdict_ink(verdicts[0]), ls="none", marker=r"$\mathsf{Aa}$", ms=12,
                             label=verdict_label(verdicts, band, verdict_name))]


def _seeds_text(rows) -> str:
    counts = sorted({len(r["diffs"]) for r in rows})
    if not counts or counts == [0]:
        return ""
    n = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
    return f"({n} seed{'' if counts == [1] else 's'})"


def forest(frame: pd.DataFrame, title: str | None = None, primary: str | None = None, eq_notes: dict | None = None):
    """One column of panels per metric, one row per comparison (``_draw_row``; x symmetric about 0), its label
    ending with its number of seeds.

    ``frame``: one row per (comparison, metric) with comparison, metric, diffs, mean, half95, margin, thesis,
    verdict; optional half90, half_eq, eq_level, and group: a group's rows get panels of their own, titled with the
    group and scaled to its rows (a group of large effects does not shrink another's small ones). ``primary``: the
    metric that decides (its panel is titled so, the others "secondary"). ``eq_notes``: {equivalence level: what
    that interval is, in a few words} for the legend (a sequential look's level)."""
    if frame is None or not len(frame):
        raise ValueError("forest: no (comparison, metric) rows to draw (are the runs of both arms there?)")
    groups = dict(zip(frame["comparison"], frame["group"])) if "group" in frame else {}
    comparisons = list(dict.fromkeys(frame["comparison"]))
    order = list(dict.fromkeys(groups[c] for c in comparisons)) if groups else [None]
    members = {g: [c for c in comparisons if groups.get(c) == g] for g in order}
    metrics = list(dict.fromkeys(frame["metric"]))
    rows = {(m, c): _row(r) for m in metrics for _, r in frame[frame["metric"].eq(m)].iterrows()
            for c in [r["comparison"]]}
    width = 2.6 + 3.4 * len(metrics) if len(metrics) > 1 else 9.0
    heights = [0.85 * len(members[g]) + (0.35 if g else 0) for g in order]
    fig, axes = plt.subplots(len(order), len(metrics), figsize=(width, sum(heights) + 2.9), squeeze=False,
                             layout="constrained", gridspec_kw={"height_ratios": heights})
    for i, group in enumerate(order):
        names = members[group]
        for j, metric in enumerate(metrics):
            ax, shown = axes[i][j], [rows[(metric, c)] for c in names if (metric, c) in rows]
            for y, c in enumerate(names):
                if (metric, c) in rows:
                    _draw_row(ax, rows[(metric, c)], y)
            edge = 1.15 * max([r["reach"] for r in shown if r["reach"] > 0] or [1.0])    # every row's, with room
            ax.set(xlim=(-edge, edge), ylim=(len(names) - 0.5, -0.5))
            ax.xaxis.set_major_locator(MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10], symmetric=True))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
            ax.axvline(0, color=INK, lw=1, zorder=2)
            for y in range(1, len(names)):
                ax.axhline(y - 0.5, color="0.85", lw=0.8, zorder=1)
            ax.grid(axis="y", visible=False)
            ax.set_gid(metric if group is None else f"{metric}|{group}")
            role = "" if primary is None else " (primary: decides)" if metric == primary else " (secondary)"
            head = f"{metric}{role}" if group is None or len(metrics) > 1 else ""
            if group is not None:
                ax.set_title("\n".join(filter(None, (head if i == 0 else "", group))), loc="left", fontsize=9.5,
                             fontweight="bold", color="0.2", gid="heading")
            else:
                ax.set_title(head)
            if i == len(order) - 1:
                ax.set_xlabel("paired difference (points)" if len(metrics) > 1 else
                              "paired difference to the baseline (points)")
            if j == 0:
                wrap = 30 if len(metrics) > 1 else 40
                ax.set_yticks(range(len(names)), [
                    f"{textwrap.fill(c, wrap)}\n{_seeds_text([rows[(m, c)] for m in metrics if (m, c) in rows])}"
                    .strip() for c in names])
            else:
                ax.set_yticks(range(len(names)), [""] * len(names))
    ncol = 2 if width >= 10 else 1
    whisker = Line2D([], [], color=INK, lw=1.3, marker="|", ms=9, label=legend_label("ci95"))
    thesis = Line2D([], [], marker="D", ls="none", mfc="none", mec=THESIS_INK, mew=1.8, ms=7,
                    label=legend_label("thesis"))
    legend_below(fig, _marks(list(rows.values()), whisker, thesis, eq_notes), 62 if ncol > 1 else 100, ncol,
                 handler_map={whisker: HandlerLine2D(numpoints=2)})
    if title:
        fig.suptitle(title)
    return fig


# ------------------------------------------------------------------------------------------ dose-response

def dose_tick(dose: float) -> str:
    return f"1e{math.log10(dose):.0f}" if dose < 0.01 and math.log10(dose).is_integer() else f"{dose:g}"


def dose_response(frame: pd.DataFrame, primary: str, title: str | None = None, notes: dict | None = None):
    """Paired differences on the ``primary`` metric only (the secondary ones are in the notebook's tables) against
    the dose, on a log x axis (one position per dose): per dose the seeds beside its ``_interval``, its verdict above
    it, upright.

    ``frame``: one row per (dose, metric) with dose, metric, diffs, mean, half95, margin, thesis, verdict; optional
    half_eq, eq_level, tick (the dose's tick label). ``notes``: {dose: a line under its verdict} (e.g. the claim's
    family where it differs)."""
    frame = frame[frame["metric"].eq(primary)] if frame is not None and len(frame) else frame
    if frame is None or not len(frame):
        raise ValueError(f"dose_response: no (dose, {primary}) rows to draw")
    notes = notes or {}
    doses = sorted(dict.fromkeys(frame["dose"]))
    ticks = {d: (frame[frame.dose.eq(d)]["tick"].iloc[0] if "tick" in frame else dose_tick(d)) for d in doses}
    fig, ax = plt.subplots(figsize=(8.2, 6.2), layout="constrained")
    rows = {d: _row(frame.set_index("dose").loc[d]) for d in doses}
    lo, hi = math.log10(doses[0]) - 0.9, math.log10(doses[-1]) + 0.9
    margins = {round(r["margin"], 12) for r in rows.values() if np.isfinite(r["margin"]) and r["margin"] > 0}
    theses = {round(r["thesis"], 12) for r in rows.values() if np.isfinite(r["thesis"])}
    for d, r in rows.items():                    # the band and the thesis's effect: across the panel where one value
        if np.isfinite(r["margin"]) and r["margin"] > 0:
            x0, x1 = (10 ** lo, 10 ** hi) if len(margins) <= 1 else (d / 6, d * 6)
            ax.fill_between([x0, x1], -r["margin"], r["margin"], color=BAND, alpha=0.18, lw=0, zorder=0, gid="band")
        if np.isfinite(r["thesis"]):
            x0, x1 = (10 ** lo, 10 ** hi) if len(theses) <= 1 else (d / 6, d * 6)
            ax.plot([x0, x1], [r["thesis"]] * 2, color=THESIS_INK, ls="--", lw=1.5, zorder=1, gid="thesis")
        if len(margins) <= 1 and len(theses) <= 1:
            break
    ax.axhline(0, color=INK, lw=1, zorder=2)
    ends = [0.0]
    for d, r in rows.items():
        diffs = r["diffs"]
        if len(diffs):
            spread = np.linspace(-0.07, 0.07, len(diffs)) if len(diffs) > 1 else np.zeros(1)
            ax.scatter(d * 10 ** (0.3 + spread), diffs, s=14, color=SEED_INK, alpha=0.85, lw=0, zorder=3, gid="seeds")
        _interval(ax, d, r["mean"], r["half95"], r["eq"], vertical=True, capsize=5)
        ends += [*diffs, *finite(r["mean"] - r["half95"], r["mean"] + r["half95"], r["margin"], -r["margin"],
                                 r["thesis"])]
    low, high = min(ends), max(ends)
    span = (high - low) or 1.0
    ax.set_ylim(low - 0.08 * span, high + 0.3 * span)                  # room for the verdicts at the top
    tier, last = 0, None
    for d, r in rows.items():
        # a dose within 1.5 decades of the last one writes its verdict one line lower than that one's
        tier = 1 - tier if last is not None and math.log10(d / last) < 1.5 else 0
        last = d
        note = notes.get(d)
        ax.text(d, 0.975 - 0.085 * tier, r["verdict"] + (f"\n{note}" if note else ""), ha="center", va="top",
                transform=ax.get_xaxis_transform(), fontsize=9, color=verdict_ink(r["verdict"]), gid="verdict",
                linespacing=1.1, bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.85), zorder=6)
    ax.set(xscale="log", xlim=(10 ** lo, 10 ** hi))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticks(doses, [ticks[d] for d in doses], fontsize=9)
    ax.grid(axis="x", visible=False)
    locator = MaxNLocator(nbins=9, steps=[1, 2, 2.5, 5, 10])
    ax.set_yticks([t for t in locator.tick_values(low, high) if low - 0.08 * span <= t <= high + 0.05 * span])
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    ax.set(gid=primary, xlabel="γ's initial value (log scale)", ylabel="paired difference to the baseline (points)")
    ax.set_title(f"{primary} (the primary metric: decides the claims)", fontsize=10.5)
    edge = len(margins) == 1 and len(theses) == 1 and np.isclose(abs(next(iter(theses))), next(iter(margins)))
    whisker = Line2D([], [], color=INK, lw=1.3, marker="_", ms=9, label=legend_label("ci95"))
    thesis = Line2D([], [], color=THESIS_INK, ls="--", lw=1.5, label=legend_label("thesis", name="dashed line") + (
        " (the band's upper edge)" if edge else ""))
    legend_below(fig, _marks(list(rows.values()), whisker, thesis, zero=True, verdict_name="word above a dose"), 60, 2)
    if title:
        fig.suptitle(title, fontsize=11)
    return fig
