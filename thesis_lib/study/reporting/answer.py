"""The README's first screen, written from the stored results: the chapter's three claims, each with this
repository's answer in plain words (one short template per verdict word), the image-LayerNorm finding behind Table 1,
and the demo described in one line. Every number is read from the claims' own rows (``tables._claim_rows``, the
designs' tables of ``table2``); nothing here is typed by hand. ``report`` writes it between the README's
``<!-- answer:start -->`` and ``<!-- answer:end -->`` markers.
"""
from __future__ import annotations

import dataclasses
import re

from thesis_lib.config import get_config
from thesis_lib.metrics import PRIMARY, label
from ..statistics import designs
from .. import grids, reference, runs
from . import table2, tables
from ..statistics.stats import fmt, fmt_seeds, seeds_needed

GLOSS = {   # each verdict word the first screen uses, glossed below it
    "equivalent": "its 90 % interval lies inside ± the thesis's own effect carried to this scale",
    "trivial": "inside that margin, and yet significantly different from zero: real, but smaller than the thesis's",
    "undecided": "neither inside the margin nor significant: more seeds would decide it",
    "reproduced": "significant in the thesis's direction (\"in direction, N ×\": at N times its size)",
    "confirmed": "significant in the stated direction (a contrast the thesis did not test)",
    "pending": "its fixed number of seeds is not trained yet",
}


def _row(df, text: str, claims=reference.CLAIMS) -> dict | None:
    return next((r for r in tables._claim_rows(df, claims) if r["primary"] and r["claim"].text == text), None)


def _said(r: dict) -> str:
    """One claim row as words: its verdict word (glossed once elsewhere), its difference ± 95 % CI in COCO points
    against ± the margin, its seeds; an undecided one with the seeds that would decide it."""
    t, digits = r["test"], tables._digits(r["margin"])
    word = r["words"]
    where = f"{fmt(t.mean, t.half95, digits)} COCO points against ±{r['margin']:.{digits}f}, {t.n} seeds"
    if r["verdict"] == "undecided":
        sig, tost = r["levels"]
        where += f"; ≈ {fmt_seeds(seeds_needed(t, r['margin'], sig / r['family_size'], tost)).split()[0]} would decide it"
    return f"**{word}** ({where})"


def demo_line(params) -> str:
    """The demo in one line: parameters, steps, the generated world, the test sets' sizes (from the config)."""
    from thesis_lib.models.emkum import build_model
    cfg = get_config(params.preset)
    n = sum(p.numel() for p in build_model(cfg, pretrained=False).parameters())
    w, t = cfg.data.world, cfg.train
    items = tables.eval_items(params.preset)
    return (f"*Scale of every answer here*: the demo, EMKUM's classes at width {cfg.model.dim} ({n / 1e6:.2f} M "
            f"parameters against the thesis's {_thesis_parameters() / 1e6:.0f} M) trained for {t.steps} steps of {t.batch_size} pairs on a "
            f"generated world of {w.n_train:,} pictures × 5 captions; tested on a COCO-like set of "
            f"{items['coco'][0]:,} pictures, a Flickr-like set of {items['flickr'][0]:,} and {items['imagenet'][0]:,} "
            f"pictures of {items['imagenet'][1]} classes for zero-shot; COCO retrieval decides every claim.")


MEANING = {   # what a verdict says about the thesis's effect, in plain words
    "equivalent": "no effect as large as the thesis's",
    "trivial": "a real effect, smaller than the thesis's",
    "undecided": "not decided yet",
    "reproduced": "the thesis's effect",
    "contradicted": "an effect the other way",
    "confirmed": "confirmed",
    "refuted": "the other way",
}


def _meaning(verdict: str) -> str:
    return next((m for w, m in MEANING.items() if verdict.startswith(w)), "")


def _thesis_parameters() -> int:
    import torch

    from thesis_lib.models.emkum import build_model
    with torch.device("meta"):
        return sum(p.numel() for p in build_model(get_config("thesis", "baseline")).parameters())


def markdown(params) -> str | None:
    """The first screen's answer: three numbered claims, the LayerNorm finding, the glossary of verdict words; None
    while a claim's runs are missing."""
    claimed = tables.results_frame(params, grids.CLAIMED, sequential_seeds=True)
    short = tables.results_frame(dataclasses.replace(params, seeds=runs.SEEDS), grids.CLAIMED)
    before = _row(claimed, reference.CLAIMS[0].text)
    noln = _row(short, "2 × 2 main effect of skipping the input LayerNorm")
    tte22 = _row(short, "2 × 2 main effect of the TTE before")
    code = _row(short, "Table 1 as the thesis code ran it (TTE before, input LayerNorm skipped) hurts")
    helps = _row(short, "TTE after the encoders with LayerScale helps")
    used = _row(short, "The TTE' is used: removing it at evaluation costs accuracy")
    if any(r is None or r["test"].n < 2 for r in (before, noln, tte22, code, helps, used)):
        return None                              # some claim's runs are missing: report says which
    share = tables.runs_of(short, grids.TTE_AFTER_LS).tte_ratio_image.mean() * 100
    budget = table2.budget_rows(params)
    budget_share = tables.runs_of(short, designs.BUDGET_VARIANT).tte_ratio_image.mean() * 100
    long = table2.long_frame(params)
    first = (f"1. **A TTE before the encoders hurts (Table 1).** Here: {_said(before)}. The thesis code's TTE path "
             f"also skipped the image encoder's input LayerNorm; run that way, COCO changes by "
             f"{fmt(code['test'].mean, code['test'].half95)} points ({_said_short(code)}). Crossed in a 2 × 2, "
             f"skipping the LayerNorm changes it by {fmt(noln['test'].mean, noln['test'].half95)} "
             f"({noln['words']}) and the TTE by {fmt(tte22['test'].mean, tte22['test'].half95, 3)} "
             f"({tte22['words']}).")
    if noln["verdict"] == "reproduced" and tte22["verdict"] != "reproduced":
        first += " **Table 1's drop is the skipped LayerNorm, not the TTE.**"
    second = (f"2. **A TTE after the encoders, scaled by LayerScale, helps (Table 2).** At the demo's budget the TTE "
              f"is {share:.3f} % of the shared block's input, {budget_share / share:.0f} × less than with the "
              f"thesis's learning-rate budget for the TTE: too small a dose to test the claim, so its verdict there, "
              f"{_said(helps)}, is no disagreement.")
    if budget is not None:
        b = budget.iloc[-2]
        second += (f" With that budget ({budget_share:.1f} % of the input), on fresh seeds: **{b.verdict}** "
                   f"({b['difference (95 % CI)']} points against {b['smallest effect of interest']}, {b.seeds} "
                   f"seeds): {_meaning(b.verdict)}.")
    third = (f"3. **The TTE is used, a little (the LayerScale weights).** Removing the TTE' from the trained demo "
             f"model: {_said(used)}.")
    if budget is not None:
        u = budget.iloc[-1]
        third += (f" At the thesis's budget for the TTE: **{u.verdict}** ({u['difference (95 % CI)']} points, "
                  f"{u.seeds} seeds): {_meaning(u.verdict)}.")
    if not long.empty:
        row = table2.long_rows(params, long).iloc[0]
        third += (f" With the whole model trained to the thesis's summed learning rate, removing it: "
                  f"{row['difference (95 % CI)']} points, **{row.verdict}**.")
    text = "\n".join([first, second, third])
    gloss = "; ".join(f"*{w}*: {g}" for w, g in GLOSS.items() if re.search(rf"\b{w}\b", text))
    return text + "\n\n" + demo_line(params) + \
        f" Verdict words ({label(PRIMARY)}, paired by seed): {gloss}."


def _said_short(r: dict) -> str:
    ratio = r["ratio"][0]
    return f"{r['words']}" if r["verdict"] != "reproduced" or "×" in r["words"] else f"{ratio:.1f} × the thesis's"
