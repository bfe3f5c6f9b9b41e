"""Notebook 04's figures of the learned TTE LayerScale γ (one value per channel). One hue per seed, distinct from one
another and from the thesis's ink and ours (``SEED_INKS``, cycled past the six)."""
from __future__ import annotations

from itertools import cycle

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from ..reference import LAYERSCALE
from .front import say
from .plotting import INK, THESIS_INK, sci, seeds_text

# Paul Tol's "bright" hues without its red (the thesis's ink is a red), the blue's neighbour cyan last
SEED_INKS = tuple(map(mcolors.to_rgb, ("#4477AA", "#228833", "#AA3377", "#CCBB44", "#66CCEE", "#BBBBBB")))
INIT_INK = "0.45"


def _regime(regime: str, seeds) -> str:
    """`` (600 steps, seeds 0-3)``: what a title says of the runs drawn."""
    return f" ({', '.join(filter(None, (regime, seeds_text(seeds))))})"


def histogram(gammas: dict, init: float, variant: str = "the TTE'", regime: str = ""):
    """The learned γ per seed, one step histogram each, beside the thesis's statistics (``reference.LAYERSCALE``).
    Left: the signed γ (linear), the thesis's mean and standard deviation of the signed γ and ours (seeds pooled)
    written in the panel. Right: |γ| on a log axis (the channels span decades), with γ's initial value ``init``, the
    thesis's max γ and our max |γ| as vertical lines."""
    thesis, pooled = LAYERSCALE["aug"], np.concatenate(list(gammas.values()))
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.6), layout="constrained")
    edge = 1.1 * np.abs(pooled).max()
    for (seed, g), ink in zip(gammas.items(), cycle(SEED_INKS)):
        a.hist(g, bins=np.linspace(-edge, edge, 41), histtype="step", lw=1.6, color=ink, label=f"seed {seed}")
    a.axvline(0, color="0.6", lw=0.8, zorder=0)
    a.set(xlabel="γ_d, signed (one value per channel; linear)", ylabel="channels (per seed)")
    a.set_title("signed γ_d, one histogram per seed", fontsize=10.5)
    a.text(0.02, 0.97, "\n".join(say("figures.j2", f"gamma_statistics{k}", *v) for k, v in (
        ("", ()), ("_2", (sci(thesis["mean"]), sci(thesis["std"]))), ("_3", (sci(pooled.mean()), sci(pooled.std()))))),
           transform=a.transAxes, ha="left", va="top", fontsize=8.5, linespacing=1.4, gid="statistics",
           bbox=dict(boxstyle="round,pad=0.3", fc="white", ec="0.8"))
    a.set_ylim(0, a.get_ylim()[1] * 1.3)                                            # room for the statistics
    magnitude = np.abs(pooled)
    low = max(magnitude[magnitude > 0].min(initial=1.0), 1e-8)
    bins = np.logspace(np.log10(min(low, init) / 1.5), np.log10(1.5 * max(magnitude.max(), thesis["max"])), 40)
    for g, ink in zip(gammas.values(), cycle(SEED_INKS)):
        b.hist(np.abs(g), bins=bins, histtype="step", lw=1.6, color=ink)
    b.set_xscale("log")
    b.axvline(init, color=INIT_INK, ls=":", lw=1.5, label=f"γ's initial value {sci(init)}")
    b.axvline(magnitude.max(), color=INK, ls="-.", label=f"this study: max |γ| = {magnitude.max():.2g}")
    b.axvline(thesis["max"], color=THESIS_INK, ls="-.", label=f"thesis: max γ = {thesis['max']:g}")
    b.set(xlabel="|γ_d| (log scale)", ylabel="channels (per seed)")
    b.set_title("|γ_d| on a log axis, one histogram per seed", fontsize=10.5)
    handles, labels = [sum(x, []) for x in zip(a.get_legend_handles_labels(), b.get_legend_handles_labels())]
    fig.legend(handles, labels, loc="outside lower center", ncol=len(handles), fontsize=8, frameon=False)
    runs = ", ".join(filter(None, (regime, seeds_text(gammas), f"γ initialised at {sci(init)}")))
    fig.suptitle(f"The learned LayerScale γ of {variant}: {runs} ({len(pooled) // len(gammas)} channels per seed)",
                 fontsize=11)
    return fig


def per_channel(gammas: dict, init: float, variant: str, regime: str = ""):
    """γ_d of every channel after training, per seed, as a sorted profile: the channels have no order of their own,
    so each seed's values are drawn from the smallest to the largest (x: the channel's rank), as points. Seeds that
    learned the same spread of γ draw the same profile."""
    fig, ax = plt.subplots(figsize=(8, 3.8), layout="constrained")
    for (seed, g), ink in zip(gammas.items(), cycle(SEED_INKS)):
        ax.plot(np.arange(1, len(g) + 1), np.sort(g), "o", ms=3.2, color=ink, label=f"seed {seed}")
    ax.axhline(init, color=INIT_INK, ls=":", lw=1.5, label=f"γ's initial value ({sci(init)}, every channel)")
    n = len(next(iter(gammas.values())))
    ax.set(xlim=(0, n + 1), xlabel=f"channel, ranked by its γ_d (1 = smallest of the {n})",
           ylabel="γ_d after training (linear)")
    ax.set_title(f"γ of {variant} per channel, sorted{_regime(regime, gammas)}", fontsize=11)
    ax.legend(fontsize=8, loc="upper left", frameon=False)
    return fig


STATISTICS = {"gamma_mean": "mean γ", "gamma_std": "std γ", "gamma_abs_max": "max |γ|"}


def evolution(curves: pd.DataFrame, init: float, variant: str, regime: str = ""):
    """γ's mean, std and max |γ| over the channels at each logged step, one line per seed, beside each statistic's
    value at initialisation (every channel at ``init``: mean and max ``init``, std 0)."""
    fig, axes = plt.subplots(1, len(STATISTICS), figsize=(12, 3.9), layout="constrained")
    for ax, (col, title) in zip(axes, STATISTICS.items()):
        for (seed, sub), ink in zip(curves.groupby("seed"), cycle(SEED_INKS)):
            ax.plot(sub.step, sub[col], color=ink, lw=1.6, label=f"seed {seed}")
        ax.axhline(0 if col == "gamma_std" else init, color=INIT_INK, ls=":", lw=1.5)
        ax.set(title=title, xlabel="training step")
    handles, labels = axes[0].get_legend_handles_labels()
    handles.append(Line2D([], [], color=INIT_INK, ls=":", lw=1.5))
    labels.append(f"at initialisation (every γ_d = {sci(init)}: std 0)")
    fig.legend(handles, labels, loc="outside lower center", ncol=len(handles), fontsize=8, frameon=False)
    fig.suptitle(f"γ of {variant} along training, per seed{_regime(regime, set(curves.seed))}", fontsize=11)
    return fig
