"""Notebook 05: other ways of telling a shared Transformer which modality it sees, side by side with the chapter's
TTE' — VLMo's MoME block (dual-encoder use) and fusion heads for image-text matching (VLMo's joint attention,
Switch-BERT's Switch-Attention and Switch-Input Blocks). Tables of results and the switches' learned choices (each
mechanism's cost: ``thesis_lib.costs``).
"""
from __future__ import annotations

import pandas as pd

from thesis_lib.metrics import FLICKR_MEAN, FLICKR_RERANK_MEAN, METRICS, label
from thesis_lib.models.fusion import INPUTS, MODES
from thesis_lib.training.results import load_results
from thesis_lib.variants import VARIANT_LABELS
from ..grids import SWITCHES
from ..results import contrast_values, items_of, runs_of
from .stats import PairedTest, compare, fmt, fmt_p, holm


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
