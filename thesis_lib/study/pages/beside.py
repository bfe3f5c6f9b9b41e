"""One table, the thesis beside us: for each chapter claim, the thesis's own numbers (its tables' COCO retrieval,
both versions), then ours in every regime that tested it — the 600-step demo, the thesis's learning-rate budget for
the TTE, the long schedule (its record and its confirmation; Table 1's 2 × 2) — each with its difference, seeds and
verdict. docs/results.md opens with it; every cell is read from the claims' rows, nothing typed.
"""
from __future__ import annotations

import pandas as pd

from thesis_lib.metrics import PRIMARY
from .. import grids, reference, results
from ..reference import THESIS_AUG, THESIS_FINAL
from ..claims import designs, paired
from ..claims.stats import fmt
from . import table2, tables
from .tables import study_frame

BEFORE, CODE, HELPS, USED = reference.BEFORE_HURTS, reference.CODE_HURTS, reference.HELPS, reference.USED
LN, TTE22 = reference.LN_MAIN_EFFECT, reference.TTE_MAIN_EFFECT


def thesis_cell(claim: reference.Claim) -> str:
    """The thesis's COCO retrieval for the claim's two rows, both versions ("66.3 → 66.0 (Aug 2024); …"), or what
    it does not report."""
    if claim.text == USED:
        return "not reported (no removal ablation; the margin is its \"helps\" effect)"
    treated, control = claim.margin_from
    cells = [f"{t[control][PRIMARY]} → {t[treated][PRIMARY]} ({name})"
             for name, t in (("Aug 2024", THESIS_AUG), ("final", THESIS_FINAL))
             if PRIMARY in t.get(treated, {}) and PRIMARY in t.get(control, {})]
    said = "; ".join(cells)
    return said if claim.in_thesis else f"not a thesis claim (its Table 1 drop: {said})"


def _ours(r: dict | None, planned: int = 0) -> dict:
    """A claim row as cells; pending (no difference shown) while short of the ``planned`` seeds of a fixed-n design;
    None: pending where a design plans seeds, else not run."""
    n = 0 if r is None else r["test"].n
    if n < planned or r is None:
        return {"ours (95 % CI)": "–", "seeds": n, "verdict": table2.pending_word(n, planned) if planned else "not run"}
    t, digits = r["test"], paired.margin_digits(r["margin"])
    return {"ours (95 % CI)": fmt(t.mean, t.half95, digits), "seeds": t.n, "verdict": r["words"]}


def _from_table(row: pd.Series) -> dict:
    return {"ours (95 % CI)": row["difference (95 % CI)"], "seeds": row.seeds, "verdict": row.verdict}


def frame(params) -> pd.DataFrame:
    """The rows: (claim, regime) → the thesis's numbers, ours, seeds, verdict."""
    claimed = paired.claims_frame(params, grids.CLAIMED)
    short = study_frame(params, grids.CLAIMED)
    by_text = {c.text: c for c in reference.CLAIMS}
    steps = f"{designs.long_steps(params.preset):,} steps"
    rows = []

    def add(claim_text: str, regime: str, ours: dict):
        rows.append({"claim": claim_text, "thesis (COCO)": thesis_cell(by_text[claim_text]), "regime": regime, **ours})

    add(BEFORE, "600 steps (sequential design)", _ours(paired.primary_row(claimed, BEFORE)))
    add(CODE, "600 steps", _ours(paired.primary_row(short, CODE)))
    long22 = results.design_frame(params, designs.LONG_TABLE1)
    long_claims = designs.claims_of(params, designs.LONG_TABLE1, descriptive=True)
    long_n = len(designs.LONG_TABLE1.seeds_for(params.preset))
    for text in (LN, TTE22):
        add(text, "600 steps, 2 × 2", _ours(paired.primary_row(short, text)))
        long_text = f"At the thesis's summed learning rate, {text}"
        ours = _ours(None if long22.empty else paired.primary_row(long22, long_text, long_claims), long_n)
        if text == TTE22 and ours["seeds"] >= long_n:
            ours["verdict"] = "descriptive"
        add(text, f"{steps}, 2 × 2 (seeds 1-4)", ours)
    budget = table2.budget_rows(params)
    record = table2.confirm_rows(params)
    for text, k in ((HELPS, -2), (USED, -1)):
        add(text, "600 steps", _ours(paired.primary_row(short, text)))
        if budget is not None:
            add(text, "600 steps, the thesis's budget for the TTE (fresh seeds 4-23)", _from_table(budget.iloc[k]))
        confirmed = False
        for name, row in (record.iterrows() if record is not None else ()):
            if (text == HELPS) == ("helps" in name):
                confirmed |= "the record" not in name
                where = "the record, seeds 1-8" if "the record" in name else "confirmation, seeds 9-40"
                add(text, f"{steps} ({where})", _from_table(row))
        if not confirmed:
            add(text, f"{steps} (confirmation, seeds 9-40)", _ours(None, len(designs.THESIS_LR_SUM_CONFIRM.seeds)))
    return pd.DataFrame(rows).set_index(["claim", "regime"])


def markdown(params) -> str:
    table = frame(params).reset_index()
    table.loc[table.claim.duplicated(), ["claim", "thesis (COCO)"]] = ""      # each claim named once
    return tables.markdown(table.set_index("claim"))
