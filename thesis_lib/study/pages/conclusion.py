"""Notebooks 02, 04 and 05's last cells and the notes under their tables, from ``templates/conclusions.j2``: what each
asked, what it found and in which regime, and what that does and does not show. The claims stage gives each claim as
decided (``read.conclusion_rows``) and the tables' rows; every sentence lives in the template. The verdict lines
(``sentences.conclusions``) stay above it as the record; this is the reading."""
from __future__ import annotations

import pandas as pd

from thesis_lib.metrics import CLAIMED, PRIMARY, label
from thesis_lib.variants import VARIANT_LABELS
from .. import grids, reference
from ..claims import read
from . import front


def _say(macro: str, *args) -> str:
    return front.say("conclusions.j2", macro, *args)


def table1(df: pd.DataFrame, steps: int) -> str:
    """Notebook 02: Table 1, the thesis code's path and the 2 × 2."""
    rows = {r["claim"]: r for r in read.conclusion_rows(df, reference.TABLE1)}
    decided = lambda r: bool(r) and r["verdict"] in ("reproduced", "contradicted")  # noqa: E731
    ln, tte = rows.get(reference.LN_MAIN_EFFECT), rows.get(reference.TTE_MAIN_EFFECT)
    first = rows.get(reference.CLAIMS[0].text)
    return _say("table1", steps, list(rows.values()), bool(ln), bool(tte), first, decided(ln), decided(tte))


def _pair(rows: pd.DataFrame) -> dict:
    """A design's "helps" and "is used" (its rows' last two, in that order) as the template's ``pair`` reads them."""
    helps, used = rows.iloc[-2], rows.iloc[-1]
    return {"seeds": helps.seeds, "helps": helps.verdict, "difference": helps["difference (95 % CI)"],
            "metric": label(PRIMARY), "margin": helps["smallest effect of interest"], "used": used.verdict,
            "used_difference": used["difference (95 % CI)"]}


def layerscale(df: pd.DataFrame, budget: pd.DataFrame | None = None, long: pd.DataFrame | None = None) -> str:
    """Notebook 04: Table 2 with every parameter trained to the thesis's summed learning rate (``long``: the long
    confirmation's rows at its one look, ``table2.confirmation``; the regime nearest the thesis's, so said first),
    what γ learned, the dose-response, and Table 2 at the thesis's budget for the TTE."""
    return _say("layerscale", long is not None and _pair(long), read.dose_shares(df),
                read.conclusion_rows(df, reference.DOSE),
                budget is not None and len(budget) >= 2 and _pair(budget))


def ablation_note(df: pd.DataFrame, variants=grids.TTE_USED, metrics=CLAIMED) -> str:
    """Where removing a trained model's TTE at evaluation *raises* a metric with a 95 % interval above 0: the opposite
    of what "is used" expects, said with its size (notebook 04, under the ablation table)."""
    points = read.ablation_points(df, [v for v in variants if v in set(df.variant)], metrics)
    found = [{"variant": VARIANT_LABELS[p.variant], "metric": label(p.metric), "difference": read.fmt(p.mean, p.half),
              "n": len(p.diffs)} for p in points[points["mode"].eq("removed")].itertuples()
             if len(p.diffs) >= 2 and p.mean - p.half > 0]
    return _say("ablation", found)


def rerank_note(rerank: pd.DataFrame) -> str:
    """Notebook 05: what re-ranking by a fusion head did to its own run's retrieval, from ``rerank_gain``."""
    col = next(c for c in rerank.columns if c.endswith("(95 % CI)"))
    rows = lambda verdict: [{"variant": v, "difference": r[col], "seeds": r.seeds}  # noqa: E731
                            for v, r in rerank.iterrows() if r.verdict == verdict]
    return _say("rerank", rows("worse"), rows("better"))


def mechanisms(dual: pd.DataFrame, rerank: pd.DataFrame | None, fusion: pd.DataFrame | None = None) -> str:
    """Notebook 05: the dual-encoder comparison (MoME, the TTE', the baseline) and the fusion heads' re-ranking, from
    their tables (``mechanisms.comparisons``, ``rerank_gain``)."""
    decided = [{"comparison": r.comparison, "verdict": r.verdict, "metric": r.metric,
                "difference": r["difference (95 % CI)"]}
               for _, r in dual.iterrows() if r.verdict in ("better", "worse")]
    moved = None if fusion is None or not len(fusion) else {
        "moved": int(fusion.verdict.isin(("better", "worse")).sum()), "n": len(fusion)}
    return _say("mechanisms", decided, len(dual), sorted(set(dual.seeds)),
                rerank_note(rerank) if rerank is not None and len(rerank) else "", moved)


def lines(table: pd.DataFrame) -> list[str]:
    """One line per row of a notebook-05 table (``mechanisms.comparisons``, ``rerank_gain``; the template notebook 05
    ends with): what is compared: verdict, difference ± 95 % CI, seeds, Holm p."""
    ci = next(c for c in table.columns if c.endswith("(95 % CI)"))
    return [_say("line", " − ".join(filter(None, (r.get("comparison"), r.get("variant")))),
                 r.get("metric", ci.removesuffix(" (95 % CI)")), r[ci], r) for _, r in table.reset_index().iterrows()]
