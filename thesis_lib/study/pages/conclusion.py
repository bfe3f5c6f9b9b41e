"""Each notebook's last cell, in sentences generated from its numbers: what it asked, what it found and in which
regime (steps, seeds, the TTE's share of the shared block's input), and what that does and does not show. The
verdict lines (``verdicts.conclusions``) stay above it as the record; this is the reading."""
from __future__ import annotations

import pandas as pd

from thesis_lib.metrics import CLAIMED, PRIMARY, label
from thesis_lib.variants import VARIANT_LABELS
from .. import grids, reference
from ..claims import paired
from ..claims.stats import fmt
from .tables import tte_share


def _said(r: dict) -> str:
    t, digits = r["test"], paired.margin_digits(r["margin"])
    return (f"\"{r['claim'].text}\" is {r['words']} ({fmt(t.mean, t.half95, digits)} {label(PRIMARY)} points "
            f"against ±{r['margin']:.{digits}f}, {t.n} seeds)")


def table1(df: pd.DataFrame, steps: int) -> str:
    """Notebook 02: Table 1, the thesis code's path and the 2 × 2."""
    rows = {r["claim"].text: r for r in paired.primary_rows(df, family=reference.TABLE1)}
    if not rows:
        return "No Table 1 claim has runs of both arms yet."
    first = rows.get(reference.CLAIMS[0].text)
    out = [f"This notebook asked whether a TTE added before the encoders hurts (Table 1) and why the thesis saw a "
           f"drop. At {steps:,} steps: " + "; ".join(_said(r) for r in rows.values()) + "."]
    ln, tte = rows.get(reference.LN_MAIN_EFFECT), rows.get(reference.TTE_MAIN_EFFECT)
    ln_big = bool(ln) and ln["verdict"] in ("reproduced", "contradicted")
    if ln and tte:
        out.append(("The 2 × 2 places the drop on the skipped input LayerNorm, not on the TTE vector itself"
                    if ln_big and tte["verdict"] not in ("reproduced", "contradicted") else
                    "The 2 × 2 does not separate the two causes at these seeds") + ".")
    if first and first["verdict"] == "undecided":
        out.append("The TTE's own effect stays undecided: its interval still holds an effect of the thesis's size, "
                   "so this does not show the TTE is harmless"
                   + (" — only that its effect, if any, is small beside the LayerNorm's" if ln and tte and ln_big
                      else "") + ". The long schedule's 2 × 2 (docs/results.md) asks whether this holds when the "
                   "model trains to the thesis's summed learning rate.")
    return " ".join(out)


READING = {   # what a pair of Table 2 verdicts ("helps", "is used") means, where the pair reads plainly
    ("equivalent", "trivial"): "removing it costs a little, and adding it gains nothing as large as the thesis's "
                               "effect",
    ("equivalent", "equivalent"): "neither adding nor removing it changes anything as large as the thesis's effect"}


def _pair(rows: pd.DataFrame, where: str, scope: str = "") -> str:
    """A design's "helps" and "is used" (its rows' last two, in that order) in one sentence, read by ``READING``
    (``scope``: where the reading holds, said before it)."""
    helps, used = rows.iloc[-2], rows.iloc[-1]
    reading = READING.get((helps.verdict, used.verdict))
    return (f"{where}, on {helps.seeds} fresh seeds, \"helps\" is {helps.verdict} ({helps['difference (95 % CI)']} "
            f"{label(PRIMARY)} points against {helps['smallest effect of interest']}) and \"is used\" is "
            f"{used.verdict} ({used['difference (95 % CI)']}){': ' + scope + reading if reading else ''}.")


def layerscale(df: pd.DataFrame, budget: pd.DataFrame | None = None, long: pd.DataFrame | None = None) -> str:
    """Notebook 04: Table 2 with every parameter trained to the thesis's summed learning rate (``long``: the long
    confirmation's rows at its one look, ``table2.confirmation``; the regime nearest the thesis's, so said first),
    what γ learned, the dose-response, and Table 2 at the thesis's budget for the TTE."""
    out = ["This notebook asked what the LayerScale weights learn and whether the model uses its TTE, at doses from "
           "γ = 1e-5 to 1, at the thesis's learning-rate budget for the TTE and with every parameter trained to the "
           "thesis's summed learning rate."]
    if long is not None:
        out.append(_pair(long, "With every parameter trained to the thesis's summed learning rate"))
    doses = [(v, share) for v in grids.DOSE if (share := tte_share(df, v)) is not None]
    if len(doses) >= 2:
        (_, lo), (_, hi) = min(doses, key=lambda d: d[1]), max(doses, key=lambda d: d[1])
        out.append(f"Across the doses the TTE's share of the shared block's input runs from {lo:.3f} % to "
                   f"{hi:.2f} % ({hi / lo:.0f} ×).")
    dose_rows = paired.primary_rows(df, family=reference.DOSE)
    if dose_rows:
        out.append("At 600 steps: " + "; ".join(_said(r) for r in dose_rows) + ".")
    if budget is not None and len(budget) >= 2:
        out.append(_pair(budget, "With the thesis's budget for the TTE", "where the TTE can grow, "))
    out.append("What this does not show: how a 768-wide model trained on 3.3 M real pairs uses its TTE" +
               ("." if long is not None else "; the long schedule's confirmation (docs/results.md) is the nearest "
                                                "this demo comes."))
    return " ".join(out)


def ablation_note(df: pd.DataFrame, variants=grids.TTE_USED, metrics=CLAIMED) -> str:
    """Where removing a trained model's TTE at evaluation *raises* a metric with a 95 % interval above 0: the opposite
    of what "is used" expects, said with its size (notebook 04, under the ablation table)."""
    found = []
    for v in [v for v in variants if v in set(df.variant)]:
        for m in metrics:
            t = paired.paired_test(df, (v, "removed"), (v, "none"), m)
            if t.n >= 2 and t.mean - t.half95 > 0:
                found.append(f"removing it from {VARIANT_LABELS[v]} raises {label(m)} by {fmt(t.mean, t.half95)} "
                             f"points ({t.n} seeds)")
    if not found:
        return "Removing the TTE at evaluation raises no metric of any variant beyond its 95 % interval."
    return ("Against what \"is used\" expects, " + "; ".join(found) + ": there the type vector costs the metric "
            "rather than carrying it. The model never trained without it, so the gain says only that the vector shifts "
            "what that metric compares; it is no evidence that the model relies on the vector.")


def rerank_note(rerank: pd.DataFrame) -> str:
    """Notebook 05: what re-ranking by a fusion head did to its own run's retrieval, in words, from ``rerank_gain``."""
    col = next(c for c in rerank.columns if c.endswith("(95 % CI)"))
    worse = [(v, r) for v, r in rerank.iterrows() if r.verdict == "worse"]
    better = [(v, r) for v, r in rerank.iterrows() if r.verdict == "better"]
    out = []
    if worse:
        out.append("Re-ranking makes retrieval worse for " + "; ".join(f"{v} ({r[col]} points, {r.seeds} seeds)"
                                                                       for v, r in worse)
                   + ": re-ordering the dual encoder's top candidates by the head's pair score moves true matches "
                     "down more often than up, so at this scale the head scores a pair less well than the dual "
                     "encoder ranks it.")
    if better:
        out.append("Re-ranking improves retrieval for " + "; ".join(f"{v} ({r[col]} points)" for v, r in better) + ".")
    return " ".join(out) or "Re-ranking changes no run's retrieval significantly."


def mechanisms(dual: pd.DataFrame, rerank: pd.DataFrame | None, fusion: pd.DataFrame | None = None) -> str:
    """Notebook 05: the dual-encoder comparison (MoME, the TTE', the baseline) and the fusion heads' re-ranking, in
    sentences from their tables (``mechanisms.comparisons``, ``rerank_gain``)."""
    out = ["This notebook asked whether another way of telling the shared block the modality — VLMo's per-modality "
           "experts (MoME) — does what the TTE' does not, and what a fusion head adds when it re-ranks retrieval."]
    decided = dual[dual.verdict.isin(("better", "worse"))]
    seeds = sorted(set(dual.seeds))
    if len(decided):
        out.append("Significant after Holm over the table: " + "; ".join(
            f"{r.comparison} is {r.verdict} on {r.metric} ({r['difference (95 % CI)']} points)"
            for _, r in decided.iterrows()) + ".")
    out.append(f"{len(dual) - len(decided)} of the {len(dual)} dual-encoder comparisons are undecided on "
               f"{', '.join(map(str, seeds))} seeds: no margin is declared beyond the chapter, so undecided means too "
               f"few seeds to tell, not equal.")
    if rerank is not None and len(rerank):
        out.append(rerank_note(rerank))
    if fusion is not None and len(fusion):
        moved = fusion[fusion.verdict.isin(("better", "worse"))]
        out.append(f"Between the fusion heads, {len(moved)} of {len(fusion)} comparisons are significant.")
    out.append("What this does not show: any of it at the thesis's scale; these mechanisms are beyond the chapter.")
    return " ".join(out)
