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

from thesis_lib.variants import VARIANT_SHORT, VARIANTS

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


def seeds_text(seeds) -> str:
    """``seed 0``, ``seeds 0-3`` (consecutive) or ``seeds 0, 2``: the seeds a figure draws, for its title."""
    s = sorted(int(x) for x in seeds)
    if len(s) == 1:
        return f"seed {s[0]}"
    return f"seeds {s[0]}-{s[-1]}" if s == list(range(s[0], s[-1] + 1)) else f"seeds {', '.join(map(str, s))}"


def save(fig, folder: Path, name: str) -> None:
    """``fig`` as ``name``.png and .pdf in ``folder``, without the dates and versions that would change their bytes."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    fig.savefig(folder / f"{name}.png", dpi=150, bbox_inches="tight", metadata={"Software": None})
    fig.savefig(folder / f"{name}.pdf", bbox_inches="tight", metadata={"CreationDate": None, "Producer": None,
                                                                       "Creator": None})


# ------------------------------------------------------------------------------------------ results

def results_bars(levels: pd.DataFrame, metrics: dict, title: str | None = None):
    """The levels (``read.levels``: per variant and metric the seeds' values, mean and 95 % half-width): per variant
    its mean with the 95 % CI (a marker, not a bar: a bar's length from an axis that does not start at 0 is not the
    value), the seeds as dots beside it, one panel per metric. Each panel's y-axis spans only its seeds and intervals,
    so it does NOT start at 0: a secondary view, the forest shows the differences."""
    variants = list(dict.fromkeys(levels.variant))
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.4 * len(metrics), 3.8), squeeze=False, layout="constrained")
    for ax, (m, label) in zip(axes[0], metrics.items()):
        ends = []
        for i, r in enumerate(levels[levels.metric.eq(m)].itertuples()):
            v, values, mean, half = r.variant, r.values, r.mean, r.half
            ax.errorbar(i, mean, yerr=None if np.isnan(half) else half, fmt="o", ms=9, color=COLOURS.get(v),
                        mec=INK, elinewidth=2.2, capsize=5, zorder=3)
            ax.scatter(i + 0.22 + np.linspace(-0.04, 0.04, len(values)), values, color=SEED_INK, s=10, zorder=3)
            ends += [*values, mean - np.nan_to_num(half), mean + np.nan_to_num(half)]
        ends = finite(*ends)
        if len(ends):
            pad = 0.15 * (ends.max() - ends.min()) or 0.05 * max(abs(ends.max()), 1.0)
            ax.set_ylim(ends.min() - pad, ends.max() + pad)
        ax.set_xlim(-0.6, len(variants) - 0.4)
        ax.set_xticks(range(len(variants)), [VARIANT_SHORT[v] for v in variants], rotation=25, ha="right")
        ax.set_title(label)
    cut = any(not ax.get_ylim()[0] <= 0 <= ax.get_ylim()[1] for ax in axes[0])      # some panel leaves out 0
    axes[0][0].set_ylabel("percent" + (", axis does not start at 0" if cut else "")
                          + "\n(mean ± 95 % CI over seeds; dots: seeds)")
    if title:
        fig.suptitle(title, fontsize=11)
    return fig


LOSS_TITLES = {"loss": "L = L_KD + L_ITC", "itc": "L_ITC", "kd": "L_KD (MSE to teacher CLS)"}   # the panels, in order


def _spread(ax, by_step, colour, **style) -> None:
    """A line of ``by_step``'s mean (a groupby by step) over a band from its min to its max (over seeds)."""
    mean = by_step.mean()
    ax.plot(mean.index, mean.values, color=colour, lw=1.6, **style)
    ax.fill_between(mean.index, by_step.min().values, by_step.max().values, color=colour, alpha=0.15, lw=0)


def loss_curves(curves: pd.DataFrame, control: str = "baseline", title: str | None = None):
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
    for ax, (col, name) in zip(axes[0], LOSS_TITLES.items()):
        for k, v in enumerate(variants):
            _spread(ax, curves[curves.variant.eq(v)].groupby("step")[col], COLOURS[v], label=VARIANT_SHORT[v],
                    **({} if v == control else dashed(k)))
        ax.set(title=name, ylabel="training loss (mean over seeds)" if col == "loss" else None)
    if others:
        paired = curves.pivot_table(index=["seed", "step"], columns="variant", values=list(LOSS_TITLES))
        for ax, (col, name) in zip(axes[1], LOSS_TITLES.items()):
            for k, v in enumerate(others, start=1):
                _spread(ax, (paired[(col, v)] - paired[(col, control)]).dropna().groupby("step"), COLOURS[v],
                        gid="difference", **dashed(k))
            ax.axhline(0, color=INK, lw=1)
            ax.set_title(f"{name}: variant − {VARIANT_SHORT[control]}", fontsize=10)
            ax.set_ylabel(f"Δ loss vs. {VARIANT_SHORT[control]}\n(paired by seed)" if col == "loss" else None)
            ax.yaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:.2g}".replace("e-0", "e-")))   # no offset
    for ax in axes[-1]:
        ax.set_xlabel("step")
    handles, _ = axes[0][0].get_legend_handles_labels()
    handles.append(Patch(color="0.5", alpha=0.3, lw=0, label="band: min to max over seeds"))
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), frameon=False)
    if title:
        fig.suptitle(title, fontsize=11)
    return fig


def sci(x: float) -> str:
    return f"{x:.1e}".replace("e-0", "e-").replace("e+00", "")


ABLATION = {"removed": ("o", INK, "TTE removed"), "swapped": ("D", "#AA3377", "the two type vectors swapped")}


def tte_ablation(points: pd.DataFrame, variants, metrics: dict, title: str | None = None):
    """Is the TTE used? Each trained model evaluated with its TTE removed (a filled circle) and with the type vectors
    swapped (a diamond): the change of each metric against the model as trained (``read.ablation_points``), mean
    with its 95 % interval over seeds (dots: seeds), one panel per metric, the variants named on the axis. Points, not
    bars: a change of 0.001 is a point at 0, not an invisible bar, and no colour stands for a variant."""
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.9 * len(metrics), 4.1), squeeze=False, layout="constrained")
    for ax, (m, label) in zip(axes[0], metrics.items()):
        for r in points[points.metric.eq(m)].itertuples():
            i, k, (marker, ink, _) = list(variants).index(r.variant), list(ABLATION).index(r.mode), ABLATION[r.mode]
            x = i + (k - 0.5) * 0.36
            ax.errorbar(x, r.mean, yerr=None if np.isnan(r.half) else r.half, fmt=marker, ms=6.5, color=ink,
                        mfc=ink if r.mode == "removed" else "white", mew=1.6, elinewidth=1.4, capsize=3, zorder=4,
                        gid=f"{r.variant}|{r.mode}")
            ax.scatter(np.full(len(r.diffs), x + 0.1), r.diffs, color=SEED_INK, s=8, lw=0, zorder=3)
        ax.axhline(0, color=INK, lw=0.9, zorder=2)
        ax.set_xlim(-0.6, len(variants) - 0.4)
        ax.set_xticks(range(len(variants)), [VARIANT_SHORT[v] for v in variants], rotation=20, ha="right")
        ax.grid(axis="x", visible=False)
        ax.set_title(label)
    axes[0][0].set_ylabel("change vs. the model\nas trained (points)")
    handles = [Line2D([], [], marker=marker, color=ink, mfc=ink if mode == "removed" else "white", mew=1.6, ms=6.5,
                      label=f"{what} at evaluation (mean change, 95 % interval)")
               for mode, (marker, ink, what) in ABLATION.items()]
    handles.append(Line2D([], [], color=SEED_INK, marker="o", ls="none", ms=4, label="dots: the seeds"))
    fig.legend(handles=handles, loc="outside lower center", ncol=3, fontsize=9, frameon=False)
    if title:
        fig.suptitle(title, fontsize=11)
    return fig
