"""The figures' one seaborn style and one colour per variant (``COLOURS``), ``save`` (PNG and PDF), and the figures
that need no module of their own; ``figures.draw`` draws every figure of the notebooks by name."""
from __future__ import annotations

from pathlib import Path

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from thesis_lib.metrics import TTE_SHARE, TTE_SHARE_IMAGE
from thesis_lib.variants import VARIANT_SHORT, VARIANTS
from ..claims.stats import mean_ci
from ..results import runs_of

sns.set_theme(style="whitegrid", context="notebook", palette="colorblind")
_CB = sns.color_palette("colorblind")
# one colour per variant: the colour-blind palette has 10, the 5 variants beyond it (notebook 05's and the budget arm)
# take Paul Tol's dark tones, which no colour of that palette resembles (a cycled palette drew MoME in the baseline's
# blue; a variant past the list got no colour at all)
COLOURS = dict(zip(VARIANTS, [*_CB, *map(mcolors.to_rgb, ("#332288", "#117733", "#882255", "#999933", "#661100"))]))
INK, SEED_INK, THESIS_INK, BAND = "0.15", "0.45", _CB[3], _CB[2]
VERDICT_INK = {"reproduced": _CB[2], "contradicted": _CB[3], "equivalent": _CB[0], "trivial": _CB[0],
               "undecided": "0.35", "confirmed": _CB[2], "refuted": _CB[3]}

ZOOM = 6.0     # a value reaching less than 1/ZOOM of the largest one gets a zoomed view (linear, like every axis)


def finite(*values) -> np.ndarray:
    """The values (scalars or arrays, None skipped) as one flat float array, nan and ±inf dropped."""
    x = np.asarray([v for v in values if v is not None], dtype=float).ravel()
    return x[np.isfinite(x)]


def zoom_edge(reaches) -> float | None:
    """The reach a zoomed view must cover: None unless some value (> 0) reaches less than 1/ZOOM of the largest;
    else the largest value below the largest jump (ratio) between consecutive values, so that the zoom holds every
    small value and none of the large ones."""
    reach = sorted(r for r in reaches if r > 0)
    if len(reach) < 2 or reach[0] >= reach[-1] / ZOOM:
        return None
    return reach[max(range(len(reach) - 1), key=lambda i: reach[i + 1] / reach[i])]


def save(fig, folder: Path, name: str) -> None:
    """``fig`` as ``name``.png and .pdf in ``folder``, without the dates and versions that would change their bytes."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    fig.savefig(folder / f"{name}.png", dpi=150, bbox_inches="tight", metadata={"Software": None})
    fig.savefig(folder / f"{name}.pdf", bbox_inches="tight", metadata={"CreationDate": None, "Producer": None,
                                                                       "Creator": None})


# ------------------------------------------------------------------------------------------ results

def results_bars(df: pd.DataFrame, variants, metrics: dict, chance: dict | None = None, ticks: dict | None = None):
    """The levels: per variant its mean over seeds with the 95 % CI (a marker, not a bar: a bar's length from an axis
    that does not start at 0 is not the value), the seeds as dots beside it, one panel per metric. Each panel's
    y-axis spans only its seeds and intervals, so it does NOT start at 0: a secondary view, the forest shows the
    differences. ``chance``: {metric: what a random scorer gets}, drawn as a line (and kept inside the axis).
    ``ticks``: {variant: its name on the axis, upright} (default: its short name, slanted)."""
    chance = chance or {}
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.4 * len(metrics), 3.8 + 0.3 * bool(chance)), squeeze=False,
                             layout="constrained")
    for ax, (m, label) in zip(axes[0], metrics.items()):
        ends = [chance[m]] if m in chance else []
        for i, v in enumerate(variants):
            values = runs_of(df, v)[m].dropna()
            mean, half = mean_ci(values)
            ax.errorbar(i, mean, yerr=None if np.isnan(half) else half, fmt="o", ms=9, color=COLOURS.get(v),
                        mec=INK, elinewidth=2.2, capsize=5, zorder=3)
            ax.scatter(i + 0.22 + np.linspace(-0.04, 0.04, len(values)), values, color=SEED_INK, s=10, zorder=3)
            ends += [*values, mean - np.nan_to_num(half), mean + np.nan_to_num(half)]
        if m in chance:
            ax.axhline(chance[m], color=INK, ls="--", lw=1.3, zorder=2, gid="chance")
        ends = finite(*ends)
        if len(ends):
            pad = 0.15 * (ends.max() - ends.min()) or 0.05 * max(abs(ends.max()), 1.0)
            ax.set_ylim(ends.min() - pad, ends.max() + pad)
        ax.set_xlim(-0.6, len(variants) - 0.4)
        ax.set_xticks(range(len(variants)), [(ticks or VARIANT_SHORT)[v] for v in variants],
                      **(dict(fontsize=9) if ticks else dict(rotation=25, ha="right")))
        ax.set_title(label)
    cut = any(not ax.get_ylim()[0] <= 0 <= ax.get_ylim()[1] for ax in axes[0])      # some panel leaves out 0
    axes[0][0].set_ylabel("percent" + (", axis does not start at 0" if cut else "")
                          + "\n(mean ± 95 % CI over seeds; dots: seeds)")
    if chance:
        levels = ", ".join(f"{c:g} %" for c in dict.fromkeys(chance.values()))
        fig.legend(handles=[Line2D([], [], color=INK, ls="--", lw=1.3, label=f"chance ({levels}: a random scorer)")],
                   loc="outside lower center", frameon=False)
    return fig


LOSS_TITLES = {"loss": "L = L_KD + L_ITC", "itc": "L_ITC", "kd": "L_KD (MSE to teacher CLS)"}   # the panels, in order


def _spread(ax, by_step, colour, **style) -> None:
    """A line of ``by_step``'s mean (a groupby by step) over a band from its min to its max (over seeds)."""
    mean = by_step.mean()
    ax.plot(mean.index, mean.values, color=colour, lw=1.6, **style)
    ax.fill_between(mean.index, by_step.min().values, by_step.max().values, color=colour, alpha=0.15, lw=0)


def loss_curves(curves: pd.DataFrame, control: str = "baseline"):
    """The training losses per logged step, mean over seeds (band: min to max over seeds), one panel per loss; the
    control solid, each other variant dashed with hollow markers, so that coinciding curves stay visible. With a
    control and another variant, a second row draws each one's difference to the control, paired by seed and step
    (mean over seeds, band: min to max): what the first row cannot show when the curves coincide."""
    variants = list(dict.fromkeys(curves.variant))
    others = [v for v in variants if v != control] if control in variants else []

    def dashed(k: int) -> dict:
        return dict(ls="--", marker="osD^v"[k % 5], mfc="none", ms=5, markevery=(k, 3))

    fig, axes = plt.subplots(1 + bool(others), len(LOSS_TITLES), squeeze=False, sharex=True, layout="constrained",
                             figsize=(4.2 * len(LOSS_TITLES), 3.2 + 2.6 * bool(others)))
    for ax, (col, title) in zip(axes[0], LOSS_TITLES.items()):
        for k, v in enumerate(variants):
            _spread(ax, curves[curves.variant.eq(v)].groupby("step")[col], COLOURS[v], label=VARIANT_SHORT[v],
                    **({} if v == control else dashed(k)))
        ax.set(title=title, ylabel="training loss (mean over seeds)" if col == "loss" else None)
    if others:
        paired = curves.pivot_table(index=["seed", "step"], columns="variant", values=list(LOSS_TITLES))
        for ax, (col, title) in zip(axes[1], LOSS_TITLES.items()):
            for k, v in enumerate(others, start=1):
                _spread(ax, (paired[(col, v)] - paired[(col, control)]).dropna().groupby("step"), COLOURS[v],
                        gid="difference", **dashed(k))
            ax.axhline(0, color=INK, lw=1)
            ax.set_title(f"{title}: variant − {VARIANT_SHORT[control]}", fontsize=10)
            ax.set_ylabel(f"Δ loss vs. {VARIANT_SHORT[control]}\n(paired by seed)" if col == "loss" else None)
            ax.yaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:.2g}".replace("e-0", "e-")))   # no offset
    for ax in axes[-1]:
        ax.set_xlabel("step")
    handles, _ = axes[0][0].get_legend_handles_labels()
    handles.append(Patch(color="0.5", alpha=0.3, lw=0, label="band: min to max over seeds"))
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), frameon=False)
    return fig


def sci(x: float) -> str:
    return f"{x:.1e}".replace("e-0", "e-").replace("e+00", "")


MODALITY_INK = {"image": "#33638D", "text": "#9DC3E6"}       # one ink per modality, no variant's colour


def _share_bars(ax, df: pd.DataFrame, variants, right: float | None = None):
    """‖γ ⊙ t_type‖ / ‖H_L‖ per variant (a row, named on the axis) and modality (image dark, text light): mean ± 95 %
    CI over seeds (dots: seeds), linear from 0, each bar labelled with its mean. ``right``: the axis' end; a bar
    beyond it is cut there and marked by a triangle."""
    highest = 0.0
    for i, v in enumerate(variants):
        for k, modality in enumerate(MODALITY_INK):
            values = runs_of(df, v)[TTE_SHARE[modality]].dropna()
            mean, half = mean_ci(values)
            highest = max(highest, np.nan_to_num(mean + np.nan_to_num(half)), *values)
            y = i + (k - 0.5) * 0.4
            ax.barh(y, mean, 0.38, xerr=0 if np.isnan(half) else half, color=MODALITY_INK[modality], capsize=2,
                    error_kw=dict(lw=1, ecolor=INK), gid=f"{v}|{modality}")
            ax.scatter(values, np.full(len(values), y), color="black", s=6, zorder=3)
            if right is not None and mean > right:
                ax.plot(0.97 * right, y, ">", color=INK, ms=7, zorder=4, gid="off_scale")
            else:
                ax.annotate(sci(mean), (mean + np.nan_to_num(half), y), xytext=(3, 0), textcoords="offset points",
                            ha="left", va="center", fontsize=7.5)
    ax.set_yticks(range(len(variants)), [VARIANT_SHORT[v] for v in variants])
    ax.set_ylim(len(variants) - 0.5, -0.5)
    ax.grid(axis="y", visible=False)
    ax.set_xlim(0, right or 1.3 * highest or None)                 # room for the labels beside the bars


def _end_labels(ax, ends: dict, inks: dict) -> None:
    """Each line named at its right end, outside the axes, the names spread so that none covers another (a thin
    leader from the line's end to its name): the lines need no legend, and two that coincide keep both names."""
    lo, hi = (np.log10(y) for y in ax.get_ylim())
    order = sorted(ends, key=lambda v: ends[v][1])
    gap, placed = 0.05 * (hi - lo), [np.log10(ends[v][1]) for v in order]
    for i in range(1, len(placed)):                                  # upwards: each at least a gap above the last
        placed[i] = max(placed[i], placed[i - 1] + gap)
    placed[-1] = min(placed[-1], hi - 0.02 * (hi - lo))
    for i in range(len(placed) - 2, -1, -1):                         # downwards: the top one inside the axis
        placed[i] = min(placed[i], placed[i + 1] - gap)
    for v, at in zip(order, placed):
        ax.annotate(VARIANT_SHORT[v], ends[v], xytext=(1.03, 10 ** at), textcoords=ax.get_yaxis_transform(),
                    va="center", fontsize=8, color=INK, arrowprops=dict(arrowstyle="-", color=inks[v], lw=0.8),
                    annotation_clip=False, gid="line_label")


def tte_contribution(df: pd.DataFrame, curves: pd.DataFrame | None = None, order=()):
    """‖γ ⊙ t_type‖ / ‖H_L‖, the share of the shared block's input that is TTE: after training as ``_share_bars``
    (a bar's length is the share); where the bars differ more than ZOOM ×, a second panel zooms (linear) on the small
    ones. With ``curves``: the image tokens' share along training on the same test items, mean over seeds, on a log
    axis (positions, not lengths), each line named at its end. ``order``: the variants' order (the others after)."""
    variants = sorted(dict.fromkeys(df.variant), key=lambda v: list(order).index(v) if v in order else len(order))
    ends = [m + np.nan_to_num(h) for v in variants for k in MODALITY_INK
            for m, h in [mean_ci(runs_of(df, v)[TTE_SHARE[k]].dropna())]]
    top = ends and zoom_edge(ends)
    along = curves is not None and len(curves) > 0
    widths = [1.0] * (1 + bool(top)) + [1.15] * along
    fig, axes = plt.subplots(1, len(widths), figsize=(4.3 * sum(widths) + 2.4, 0.55 * len(variants) + 3.2),
                             squeeze=False, layout="constrained", gridspec_kw={"width_ratios": widths})
    _share_bars(axes[0][0], df, variants)
    axes[0][0].set_title("after training (linear from 0)", fontsize=10)
    if top:
        _share_bars(axes[0][1], df, variants, right=1.3 * top)
        axes[0][1].set_yticklabels([])
        axes[0][1].set_title(f"the same, zoomed to 0-{sci(1.3 * top)} (linear)", fontsize=10)
    for ax in axes[0][:1 + bool(top)]:
        ax.set_xlabel("‖γ ⊙ t_type‖ / ‖H_L‖ per token")
    handles = [Patch(color=MODALITY_INK["image"], label="image tokens: mean over the seeds, 95 % interval; dots: the "
                     "seeds"), Patch(color=MODALITY_INK["text"], label="caption tokens")]
    if top:
        handles.append(Line2D([], [], color=INK, marker=">", ls="none", ms=7,
                              label="bar beyond the zoom (drawn whole on the left)"))
    if along:
        ax = axes[0][-1]
        last, drawn = {}, []
        for v in (v for v in variants if v in set(curves.variant)):
            mean = curves[curves.variant.eq(v)].groupby("step")[TTE_SHARE_IMAGE].mean()
            on = any(np.abs(np.log(mean / other).dropna()).max() < np.log(1.25) for other in drawn)  # on another?
            ax.plot(mean.index, mean.values, color=COLOURS[v], lw=1.4 if on else 2.4, ls="--" if on else "-", gid=v)
            drawn.append(mean)
            last[v] = (mean.index[-1], mean.values[-1])
        ax.set(yscale="log", ylabel="image tokens' share (log scale)", xlabel="training step")
        ax.set_title("image tokens along training (log scale;\na dashed line lies on a solid one)", fontsize=10)
        _end_labels(ax, last, COLOURS)
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=8, frameon=False)
    return fig


ABLATION = {"removed": ("o", INK, "TTE removed"), "swapped": ("D", "#AA3377", "the two type vectors swapped")}


def tte_ablation(df: pd.DataFrame, variants, metrics: dict):
    """Is the TTE used? Each trained model evaluated with its TTE removed (a filled circle) and with the type vectors
    swapped (a diamond): the change of each metric against the model as trained, mean with its 95 % interval over
    seeds (dots: seeds), one panel per metric, the variants named on the axis. Points, not bars: a change of 0.001
    is a point at 0, not an invisible bar, and no colour stands for a variant."""
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.9 * len(metrics), 4.1), squeeze=False, layout="constrained")
    for ax, (m, label) in zip(axes[0], metrics.items()):
        for i, v in enumerate(variants):
            sub = runs_of(df, v)
            for k, (mode, (marker, ink, _)) in enumerate(ABLATION.items()):
                if f"{mode}:{m}" not in sub:
                    continue
                d = (sub[f"{mode}:{m}"] - sub[m]).dropna()
                mean, half = mean_ci(d)
                x = i + (k - 0.5) * 0.36
                ax.errorbar(x, mean, yerr=None if np.isnan(half) else half, fmt=marker, ms=6.5, color=ink,
                            mfc=ink if mode == "removed" else "white", mew=1.6, elinewidth=1.4, capsize=3, zorder=4,
                            gid=f"{v}|{mode}")
                ax.scatter(np.full(len(d), x + 0.1), d, color=SEED_INK, s=8, lw=0, zorder=3)
        ax.axhline(0, color=INK, lw=0.9, zorder=2)
        ax.set_xlim(-0.6, len(variants) - 0.4)
        ax.set_xticks(range(len(variants)), [VARIANT_SHORT[v] for v in variants], rotation=20, ha="right")
        ax.grid(axis="x", visible=False)
        ax.set_title(label)
    axes[0][0].set_ylabel("change vs. the model as trained (points)")
    handles = [Line2D([], [], marker=marker, color=ink, mfc=ink if mode == "removed" else "white", mew=1.6, ms=6.5,
                      label=f"{what} at evaluation (mean change, 95 % interval)")
               for mode, (marker, ink, what) in ABLATION.items()]
    handles.append(Line2D([], [], color=SEED_INK, marker="o", ls="none", ms=4, label="dots: the seeds"))
    fig.legend(handles=handles, loc="outside lower center", ncol=3, fontsize=9, frameon=False)
    return fig


def _last_difference(heldout: pd.DataFrame, variants: list, metric: str) -> tuple[int, str, int]:
    """The second variant minus the first at the last held-out snapshot, paired by seed: (step, "−0.07", seeds)."""
    paired = heldout.pivot_table(index=["seed", "step"], columns="variant", values=metric).dropna()
    step = paired.index.get_level_values("step").max()
    last = paired.xs(step, level="step")
    return step, f"{(last[variants[1]] - last[variants[0]]).mean():+.2f}".replace("-", "−"), len(last)


def long_schedule(heldout: pd.DataFrame, train: pd.DataFrame, metric: str, metric_label: str, short_baseline: float,
                  confirm: pd.DataFrame | None = None):
    """The long schedule (notebook 04): a held-out score per kept snapshot (the 600-step baseline's dotted) beside the
    training loss, means over seeds: a held-out score falling while the loss still falls is overfitting. The arms
    coincide, so the first is drawn wide and pale, the second thin and dashed on top, and the left title gives their
    paired difference at the last snapshot (and, given ``confirm``'s fresh seeds, the difference there: said, not
    drawn)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.5, 4.0), layout="constrained")
    variants = list(dict.fromkeys(heldout.variant))
    styles = [dict(lw=4.5, alpha=0.45, marker="o", ms=9), dict(lw=1.6, ls="--", marker="s", ms=5, mfc="white")]
    for k, v in enumerate(variants):
        style = {**styles[min(k, 1)], "color": COLOURS[v], "zorder": 3 + k}
        mean = heldout[heldout.variant.eq(v)].groupby("step")[metric].mean()
        left.plot(mean.index, mean.values, label=VARIANT_SHORT[v], **style)
        loss = train[train.variant.eq(v)].groupby("step")["loss"].mean()
        right.plot(loss.index, loss.values, **{**style, "marker": None})
    left.axhline(short_baseline, color=INK, ls=":", lw=1.2, label="baseline after the demo's 600 steps")
    title = "held-out score along the schedule"
    if len(variants) == 2:
        step, d, n = _last_difference(heldout, variants, metric)
        title += (f"\n{VARIANT_SHORT[variants[1]]} − {VARIANT_SHORT[variants[0]]} at step {step:,}: {d} points "
                  f"(paired, {n} seeds)")
        if confirm is not None and len(confirm):
            _, d, n = _last_difference(confirm, variants, metric)
            title += f"\non the confirmation's {n} fresh seeds: {d} points"
    left.set(xlabel="step", ylabel=f"held-out {metric_label} (mean over seeds)")
    left.set_title(title, fontsize=10)
    right.set(xlabel="step", ylabel="training loss (KD + ITC)")
    right.set_title("training loss (mean over seeds)", fontsize=10)
    fig.legend(*left.get_legend_handles_labels(), loc="outside lower center", ncol=3, frameon=False, fontsize=9)
    return fig
