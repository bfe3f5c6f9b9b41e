"""Notebook 05: other ways of telling a shared Transformer which modality it sees, side by side with the chapter's
TTE' — VLMo's MoME block (dual-encoder use) and fusion heads for image-text matching (VLMo's joint attention,
Switch-BERT's Switch-Attention and Switch-Input Blocks). Tables of results and the switches' learned choices (each
mechanism's cost: ``thesis_lib.costs``).
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from thesis_lib.metrics import FLICKR_ITM, FLICKR_ITM_RANDOM, FLICKR_MEAN, FLICKR_RERANK_MEAN, METRICS, label
from thesis_lib.models.fusion import INPUTS, MODES
from thesis_lib.training.results import load_results
from thesis_lib.variants import VARIANT_LABELS, VARIANT_SHORT
from ..grids import SWITCHES
from ..claims.stats import PairedTest, compare, fmt, fmt_p, holm
from ..results import contrast_values, items_of, runs_of


def _with_holm(rows: list[dict], tests: list[PairedTest]) -> pd.DataFrame:
    """The table's rows with the unadjusted and the Holm-adjusted p (the family: every row of this table, the same
    in the notebook and in the README; printed by ``stats.fmt_p``: "< 0.001" or three decimals) and the verdict
    from the adjusted one."""
    for row, t, p in zip(rows, tests, holm([t.p for t in tests])):
        row.update({"p (unadjusted)": fmt_p(t.p), "p (Holm, this table)": fmt_p(p), "verdict": compare(t, p)})
    return pd.DataFrame(rows)


def _pair_tests(df: pd.DataFrame, pairs, metrics) -> list[tuple]:
    """(a, b, metric, per-seed differences a − b, their PairedTest at the metric's resolution) per pair and metric,
    every row over the same seeds: those every variant of the table has (one seed set per comparison, wherever the
    table is shown)."""
    items, out = items_of(df), []
    arms = {v for pair in pairs for v in pair}
    df = df[df.seed.isin(set.intersection(*(set(runs_of(df, v).seed) for v in arms)))] if arms else df
    for a, b in pairs:
        for m in metrics:
            diffs = list(contrast_values(df, (((a, "none"), 1.0), ((b, "none"), -1.0)), m).values())
            out.append((a, b, m, diffs, PairedTest.of(diffs, METRICS[m].resolution(items))))
    return out


def comparisons(df: pd.DataFrame, pairs, metrics, tests=None) -> pd.DataFrame:
    """Paired (by seed) differences a − b with their 95 % CI, p-values and a verdict (better / worse /
    undecided), Holm over every row of the table (``tests``: ``_pair_tests`` of the same, when computed already)."""
    tests = tests or _pair_tests(df, pairs, metrics)
    rows = [{"comparison": f"{VARIANT_LABELS[a]} − {VARIANT_LABELS[b]}", "metric": label(m),
             "difference (95 % CI)": fmt(t.mean, t.half95), "seeds": t.n} for a, b, m, _, t in tests]
    return _with_holm(rows, [t for *_, t in tests])


def conclusions(table: pd.DataFrame) -> list[str]:
    """One line per row of a notebook-05 table (``comparisons``, ``rerank_gain``; the template notebook 05 ends
    with): what is compared: verdict, difference ± 95 % CI, seeds, Holm p."""
    ci = next(c for c in table.columns if c.endswith("(95 % CI)"))
    flat = table.reset_index()
    what = [" − ".join(filter(None, (r.get("comparison"), r.get("variant")))) + (f", {r['metric']}" if "metric" in r
            else f", {ci.removesuffix(' (95 % CI)')}") for _, r in flat.iterrows()]
    return [f"{w}: {r['verdict']}, {r[ci]} points (95 % CI), {r['seeds']} seeds, p (Holm, this table) "
            f"{r['p (Holm, this table)']}" for w, (_, r) in zip(what, flat.iterrows())]


def forest_frame(df: pd.DataFrame, pairs, metrics) -> pd.DataFrame:
    """``comparisons`` as ``forest.forest`` draws it: per-seed differences, no margin (none is declared here)."""
    tests = _pair_tests(df, pairs, metrics)
    table = comparisons(df, pairs, metrics, tests)
    return pd.DataFrame([{"comparison": row.comparison, "metric": row.metric, "diffs": diffs, "mean": t.mean,
                          "half95": t.half95, "margin": float("nan"), "thesis": float("nan"), "verdict": row.verdict}
                         for (_, _, _, diffs, t), row in zip(tests, table.itertuples())])


def rerank_gain(df: pd.DataFrame, variants) -> pd.DataFrame:
    """What the ITM head adds to the same run's dual-encoder retrieval on Flickr (paired within each run), Holm
    over the table's rows."""
    items, rows, tests = items_of(df), [], []
    for v in variants:
        sub = runs_of(df, v)
        t = PairedTest.of(sub[FLICKR_RERANK_MEAN] - sub[FLICKR_MEAN], METRICS[FLICKR_MEAN].resolution(items))
        tests.append(t)
        rows.append({"variant": VARIANT_LABELS[v], "re-ranked − dual encoder (95 % CI)": fmt(t.mean, t.half95),
                     "seeds": len(sub)})
    return _with_holm(rows, tests).set_index("variant")


def switch_choices(params, variants=SWITCHES) -> pd.DataFrame:
    """The switches' hard choices on the re-ranking pairs, per run: one row per (variant, seed, kind, layer, option)."""
    rows = []
    for r in load_results(params.results_root, params.preset):
        if r["variant"] not in variants or r["seed"] not in params.seeds:
            continue
        choices = r.get("fusion", {}).get("flickr_switch_choices", {})
        for kind, names in (("modes", MODES), ("inputs", INPUTS)):
            for layer, fractions in enumerate(choices.get(kind, [])):
                rows += [{"variant": r["variant"], "seed": r["seed"], "kind": kind,
                          "layer": layer + (1 if kind == "modes" else 2), "option": name, "fraction": f}
                         for name, f in zip(names, fractions)]
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------- figures

FUSION_TICKS = {"fusion_joint": "joint attention\n(VLMo)", "switch": "Switch-Attention\n(Switch-BERT)",
                "switch_sib": "Switch-Attention\n+ Switch-Input"}           # 05_fusion_bars: the heads, in words
FUSION_TITLES = {FLICKR_ITM_RANDOM: "true caption above\nan unrelated one",
                 FLICKR_ITM: "true caption above the dual\nencoder's closest wrong one",
                 FLICKR_MEAN: "the dual encoder alone",
                 FLICKR_RERANK_MEAN: "its top candidates\nre-scored by the ITM head"}
MODE_WORDS = {"self-self": "image → image, text → text", "self-cross": "image → image, text → image",
              "cross-self": "image → text, text → text", "joint": "both → both"}    # Switch-BERT Table 1, X = image
_DEEP = sns.color_palette("deep")
SWITCH_INKS = {"modes": _DEEP[:4], "inputs": [_DEEP[k] for k in (4, 5, 6, 8)]}   # no colour means two things


def fusion_title(metric: str) -> str:
    """A 05_fusion_bars panel's title: the metric's label and what it measures."""
    return f"{label(metric)}:\n{FUSION_TITLES[metric]}" if metric in FUSION_TITLES else label(metric)


def _input_words(option: str, layers) -> str:
    """A Switch-Input candidate, "(l-1, l-2)", in words: where the image and the text come from, with the layers'
    numbers where every row is the same layer (else l−1, l−2: the previous fusion layer and the one before it)."""
    image, text = (part.strip() for part in option.strip("()").split(","))
    if len(set(layers)) == 1:
        (layer,) = set(layers)
        image, text = ("the head's input" if layer == int(p[-1]) else f"layer {layer - int(p[-1])}"
                       for p in (image, text))
    return f"image from {image}, text from {text}".replace("l-", "l−")


def draw_switch_choices(df: pd.DataFrame):
    """Switch-BERT Fig. 4 style: per layer, how often each interaction mode (left) and each Switch-Input candidate
    (right) is selected (hard selection on the evaluation pairs), mean over seeds, one row per variant and layer;
    every mode and candidate named in words (who attends to whom; which layer each modality comes from)."""
    kinds = [k for k in ("modes", "inputs") if k in set(df.kind)] if len(df) else []
    variants = list(dict.fromkeys(df.variant)) if len(df) else []
    fig, axes = plt.subplots(1, max(len(kinds), 1), figsize=(7.0 * max(len(kinds), 1), 3.4), squeeze=False,
                             layout="constrained")
    for ax, kind in zip(axes[0], kinds):
        sub = df[df.kind == kind].groupby(["variant", "layer", "option"], sort=False).fraction.mean().unstack()
        sub = sub[list(dict.fromkeys(df[df.kind == kind].option))]
        left = np.zeros(len(sub))
        rows = [f"{VARIANT_SHORT[v]} · layer {layer}" if len(variants) > 1 else f"layer {layer}"
                for v, layer in sub.index]
        layers = [layer for _, layer in sub.index]
        for j, option in enumerate(sub.columns):
            name = (f"{option} ({MODE_WORDS[option]})" if option in MODE_WORDS else option) if kind == "modes" \
                else _input_words(option, layers)
            ax.barh(rows, sub[option].values, left=left, color=SWITCH_INKS[kind][j % 4], label=name)
            left += sub[option].values
        ax.set(xlim=(0, 1), xlabel="fraction of evaluation pairs (hard selection)")
        ax.set_title("Switch-Attention: who attends to whom" if kind == "modes" else
                     "Switch-Input: which layer's output feeds the layer", fontsize=10.5)
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False,
                  title="(→: attends to)" if kind == "modes" else None, title_fontsize=8)
        ax.invert_yaxis()
    if len(variants) == 1:
        fig.suptitle(f"the switches' choices, mean over seeds: {VARIANT_LABELS[variants[0]]}", fontsize=11)
    return fig
