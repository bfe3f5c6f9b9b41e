"""The README's first screen, written from the stored results: the chapter's three claims, each with this
repository's answer in plain words (one short template per verdict word), the image-LayerNorm finding behind Table 1,
and the demo described in one line. Every number is read from the claims' own rows (``paired.claim_rows``, the
designs' tables of ``table2``); nothing here is typed by hand. ``report`` writes it between the README's
``<!-- results:start -->`` and ``<!-- results:end -->`` markers.
"""
from __future__ import annotations

import math
import re

import torch

from thesis_lib.config import get_config
from thesis_lib.metrics import PRIMARY, label
from thesis_lib.models.emkum import build_model
from .. import grids, reference, results
from . import table2
from .tables import study_frame, tte_share
from ..claims import designs, paired
from ..claims.stats import (fmt, fmt_count, fmt_seeds, outlying_seeds, robust_seeds_needed, seeds_at_observed,
                           seeds_needed)

GLOSS = {   # each verdict word the first screen uses, glossed below it
    "equivalent": "its 90 % interval lies inside ± the thesis's own effect carried to this scale (its size relative "
                  "to the thesis's baseline, times ours)",
    "trivial": "inside that margin, and yet significantly different from zero: real, but smaller than the thesis's",
    "undecided": "neither inside the margin nor significant: more seeds could decide it (a design of fixed n adds "
                 "none after its one look)",
    "reproduced": "significant in the thesis's direction (\"in direction, N ×\": at N times its size)",
    "contradicted": "significant against the thesis's direction",
    "confirmed": "significant in the stated direction (a contrast the thesis did not test)",
    "refuted": "significant against the stated direction (a contrast the thesis did not test)",
    "descriptive": "reported with the seeds that would decide it; declared before its runs to decide nothing",
    "pending": "its fixed number of seeds is not trained yet",
}


def _said(r: dict) -> str:
    """One claim row as words: its verdict word (glossed once elsewhere), its difference ± 95 % CI in COCO points
    against ± the margin, its seeds; an undecided one with the seeds that would decide it."""
    t, digits = r["test"], paired.margin_digits(r["margin"])
    where = f"{fmt(t.mean, t.half95, digits)} COCO points against ±{r['margin']:.{digits}f}, {t.n} seeds"
    if r["verdict"] == "undecided":
        where += f"; {_would_decide(r)}"
    return f"**{r['words']}** ({where})"


def _would_decide(r: dict) -> str:
    """The seeds that would decide an undecided claim if its true difference is 0, by normal theory and from a robust SD
    (with the seeds lying far out), as docs/results.md gives them, and to show equivalence if it is the measured one."""
    t, level, tost = r["test"], r["decide_alpha"], r["levels"][1]
    normal = fmt_count(seeds_needed(t, r["margin"], level, tost)["seeds"], about="≈ ")
    robust = fmt_seeds(robust_seeds_needed(r["diffs"], r["margin"], level, tost))
    far = outlying_seeds(dict(zip(r["seeds"], r["diffs"])))
    at = seeds_at_observed(t.mean, t.sd_used, r["margin"])["equivalent"]
    out = (f"if its true difference is 0, {normal} seeds would decide it by normal theory, {robust} from a robust "
           f"SD; if it is the measured {t.mean:+.3f}, "
           + (f"{at} to show equivalence" if at else "no number of seeds up to 10,000 shows equivalence"))
    return out + "".join(f"; seed {s} lies {z:+.1f} robust SDs from the median" for s, z in far.items())


def demo_line(params) -> str:
    """The demo in one line: parameters, steps, the generated world, the test sets' sizes (from the config)."""
    cfg = get_config(params.preset)
    n = sum(p.numel() for p in build_model(cfg, pretrained=False).parameters())
    with torch.device("meta"):                                  # the thesis's model, its shapes alone
        thesis_n = sum(p.numel() for p in build_model(get_config("thesis", "baseline")).parameters())
    w, t = cfg.data.world, cfg.train
    items = results.eval_items(params.preset)
    return (f"*Scale of every answer here*: the demo, EMKUM's classes at width {cfg.model.dim} ({n / 1e6:.2f} M "
            f"parameters against the thesis's {thesis_n / 1e6:.0f} M) trained for {t.steps} steps of "
            f"{t.batch_size} pairs (the long schedule: {designs.long_steps(params.preset):,}) on a generated world "
            f"of {w.n_train:,} pictures × 5 captions; tested on a COCO-like "
            f"set of {items['coco'][0]:,} pictures, a Flickr-like set of {items['flickr'][0]:,} and "
            f"{items['imagenet'][0]:,} pictures of {items['imagenet'][1]} classes for zero-shot; COCO retrieval "
            "decides every claim.")


MEANING = {   # what a verdict says about the thesis's effect, in plain words
    "equivalent": "no effect as large as the thesis's",
    "trivial": "a real effect, smaller than the thesis's",    # for "is used", see ``USED_MEANING``
    "undecided": "not decided yet", "reproduced": "the thesis's effect", "contradicted": "an effect the other way",
    "confirmed": "confirmed", "refuted": "the other way",
}

USED_MEANING = {   # "is used": the thesis reports no removal effect; its margin is the thesis's "helps" effect
    "trivial": "a real effect, smaller than the thesis's Table 2 effect (the thesis reports no removal effect; the "
               "margin is borrowed from its \"helps\" difference)",
    "equivalent": "no effect as large as the thesis's Table 2 effect, whose size sets the margin",
    "confirmed": "removing it costs accuracy, by an amount not shown to be smaller than the thesis's Table 2 effect "
                 "(whose size sets the margin)",
    "refuted": "removing it raises accuracy",
}


def _meaning(verdict: str) -> str:
    return next((m for w, m in MEANING.items() if verdict.startswith(w)), "")


def markdown(params) -> str | None:
    """The first screen's answer: three numbered claims, the LayerNorm finding, the glossary of verdict words; None
    while a claim's runs are missing."""
    claimed = paired.claims_frame(params, grids.CLAIMED)
    short = study_frame(params, grids.CLAIMED)
    before = paired.primary_row(claimed, reference.BEFORE_HURTS)
    noln, tte22, code, helps, used = (paired.primary_row(short, text) for text in (
        reference.LN_MAIN_EFFECT, reference.TTE_MAIN_EFFECT, reference.CODE_HURTS, reference.HELPS, reference.USED))
    if any(r is None or r["test"].n < 2 for r in (before, noln, tte22, code, helps, used)):
        return None                              # some claim's runs are missing: report says which
    share, budget_share = (tte_share(short, v) for v in (grids.TTE_AFTER_LS, designs.BUDGET_VARIANT))
    budget = table2.budget_rows(params)
    long = table2.long_frame(params)
    code_said = (code["words"] if code["verdict"] != "reproduced" or "×" in code["words"]
                 else f"{code['ratio'][0]:.1f} × the thesis's")
    steps = f"{designs.long_steps(params.preset):,}"
    first = (f"1. **A TTE before the encoders hurts (Table 1).** {_long_table1(params, steps)}At 600 steps: "
             f"{_said(before)}. The thesis code's TTE path "
             f"also skipped the image encoder's input LayerNorm; run that way, COCO changes by "
             f"{fmt(code['test'].mean, code['test'].half95)} points ({code_said}). Crossed in a 2 × 2, "
             f"skipping the LayerNorm changes it by {fmt(noln['test'].mean, noln['test'].half95)} "
             f"({noln['words']}) and the TTE by {fmt(tte22['test'].mean, tte22['test'].half95, 3)} "
             f"({tte22['words']}).")
    first += " " + attribution(noln, tte22, before)
    second = "2. **A TTE after the encoders, scaled by LayerScale (the TTE'), helps (Table 2).** "
    third = "3. **The TTE is used, a little (the LayerScale weights).** "
    if not long.empty:
        record = table2.long_rows(params, long)
        used_long, helps_long = record.iloc[0], record.loc[designs.LONG_HELPS.text]
        by_rule, confirm = record.attrs.get("helps by the rule", helps_long.verdict), _confirmation(params)
        long_helps = (f"{helps_long['difference (95 % CI)']} COCO points against "
                      f"{helps_long['smallest effect of interest']}, **{helps_long.verdict}** ({by_rule} by the rule; "
                      f"no n was planned for it)")
        long_used = (f"**{used_long.verdict}** ({used_long['difference (95 % CI)']} points, {used_long.seeds} seeds): "
                     f"{USED_MEANING.get(used_long.verdict, _meaning(used_long.verdict))}")
        second += (f"Trained as long as the thesis (every parameter to the thesis's summed learning rate, the "
                   f"learning rate added up over all steps: {steps} steps instead of 600), ")
        third += "Trained as long as the thesis, removing the TTE' at evaluation: "
        if isinstance(confirm, str):
            second += f"on {helps_long.seeds} seeds: {long_helps}; {confirm}. "
            third += f"{long_used}; {confirm}. "
        else:
            (h, h_row), (u, u_row) = confirm
            second += (f"on {h.seeds} fresh seeds (the confirmation, fixed n): {_confirmed(h, h_row)}; the "
                       f"{helps_long.seeds}-seed record beside it: {long_helps}. ")
            third += (f"on {u.seeds} fresh seeds (the confirmation): {_confirmed(u, u_row, used=True)}; the "
                      f"{used_long.seeds}-seed record beside it: {long_used}. ")
    second += (f"At 600 steps the TTE is {share:.3f} % of the shared block's image input, "
               f"{budget_share / share:.0f} × less than with the thesis's learning-rate budget for the TTE (its "
               f"vectors and γ alone given the thesis's summed learning rate within the 600 steps): too small a dose "
               f"(how much TTE reaches the shared block) to test the claim, so its verdict there, {_said(helps)}, is "
               f"no disagreement.")
    third += f"At 600 steps, removing the TTE' from the trained model: {_said(used)}."
    if budget is not None:
        b, u = budget.iloc[-2], budget.iloc[-1]
        second += (f" With that budget ({budget_share:.1f} % of the image input), on fresh seeds: **{b.verdict}** "
                   f"({b['difference (95 % CI)']} points against {b['smallest effect of interest']}, {b.seeds} "
                   f"seeds): {_meaning(b.verdict)}.")
        third += (f" At the thesis's budget for the TTE: **{u.verdict}** ({u['difference (95 % CI)']} points, "
                  f"{u.seeds} seeds): {USED_MEANING.get(u.verdict, _meaning(u.verdict))}.")
    text = "\n".join([first, second, third])
    gloss = "; ".join(f"*{w}*: {g}" for w, g in GLOSS.items() if re.search(rf"\b{w}\b", text))
    return text + "\n\n" + demo_line(params) + \
        f" Verdict words ({label(PRIMARY)}, paired by seed): {gloss}. The thesis's numbers beside ours, claim by " \
        f"claim and regime by regime: [`docs/results.md`](docs/results.md#the-thesis-beside-us); every term: " \
        f"[`docs/glossary.md`](docs/glossary.md)."


def _confirmation(params):
    """The long confirmation at its one look (``table2.confirmation``): per claim ("helps", then "is used") its row of
    docs/results.md's table and its claim row (``paired.claim_rows``); before that, how far it is, in words."""
    design = designs.THESIS_LR_SUM_CONFIRM
    n, df = len(design.seeds_for(params.preset)), results.design_frame(params, design)
    table = table2.confirmation(params)
    if table is None:
        return (f"its confirmation on {n} fresh seeds is pending ({table2.pairs_trained(df)} of {n} seed pairs "
                "trained)")
    rows = {r["claim"].text: r for r in paired.primary_rows(df, designs.claims_of(params, design))}
    return [(table.loc[c.text], rows[c.text]) for c in design.claims]


def _confirmed(shown, row: dict, used: bool = False) -> str:
    """A confirmatory claim in words: its verdict, difference ± 95 % CI against the margin and Holm p as
    docs/results.md shows them (``shown``), then what the verdict means (``_reading`` of its claim ``row``)."""
    return (f"**{shown.verdict}** ({shown['difference (95 % CI)']} COCO points against "
            f"{shown['smallest effect of interest']}, Holm p {shown['p (Holm, family)']}): {_reading(row, used)}")


def _reading(row: dict, used: bool = False) -> str:
    """What a fixed-n claim's verdict (its ``words``: confirmed / refuted for a claim the thesis did not make) means
    in plain words (``used``: "is used", whose margin is borrowed); a trivial difference running against the
    claim's direction is said to be the other way, an undecided one to stay so (its design adds no seeds)."""
    verdict, said = row["verdict"], row["words"]
    if verdict == "trivial" and math.copysign(1, row["test"].mean) != row["claim"].direction:
        return "a real effect the other way, smaller than the thesis's" + (" Table 2 effect" if used else "")
    if verdict == "undecided":
        return "not decided by its fixed number of seeds, and no seeds are added after its one look"
    if said.startswith("reproduced in direction"):
        return f"an effect in the thesis's direction, at a size unlike the thesis's ({said.split(', ', 1)[1]})"
    return USED_MEANING.get(said, _meaning(said)) if used else _meaning(said)


def _long_table1(params, steps: str) -> str:
    """The long schedule's 2 × 2 in words, leading the Table 1 answer: where its drop lies when the model trains as
    long as the thesis's, or that its runs are pending."""
    design = designs.LONG_TABLE1
    df = results.design_frame(params, design)
    claims = designs.claims_of(params, design, descriptive=True)
    noln, tte = (paired.primary_row(df, c.text, claims) for c in claims)
    if noln is None or tte is None or noln["test"].n < len(design.seeds_for(params.preset)):
        done = 0 if noln is None else noln["test"].n
        return (f"Trained as long as the thesis ({steps} steps), its 2 × 2 is pending ({done} of "
                f"{len(design.seeds_for(params.preset))} seeds). ")
    said = (f"Trained as long as the thesis ({steps} steps, {noln['test'].n} seeds), skipping the LayerNorm changes "
            f"COCO by {fmt(noln['test'].mean, noln['test'].half95)} ({noln['words']}, {noln['ratio'][0]:.1f} × the "
            f"thesis's drop) and the TTE by {fmt(tte['test'].mean, tte['test'].half95, 3)} (descriptive; "
            f"{_would_decide(tte)}). ")
    return said + attribution(noln, tte, tte, "Trained as long as the thesis", "not decided (descriptive)",
                              "as the 2 × 2's main effect") + " "


def attribution(noln: dict, tte: dict, before: dict, regime: str = "At 600 steps", words: str | None = None,
                measured: str = "alone") -> str:
    """Where Table 1's drop lies in ``regime``, said no further than the rows bear: the LayerNorm's main effect
    reproduced and the TTE's not (``words``: the TTE's verdict as said, its own by default); and whether the TTE's
    primary interval (``before``, ``measured`` so: alone, or as the 2 × 2's main effect) still holds the thesis's
    own drop."""
    if noln["verdict"] != "reproduced" or tte["verdict"] == "reproduced":
        return ""
    t, thesis = before["test"], before["thesis"]
    low, high = t.mean - t.half95, t.mean + t.half95
    holds = thesis is not None and low <= thesis <= high
    return (f"**{regime}, the drop we measure on the thesis code's path is the skipped LayerNorm's**; the TTE's own "
            f"is {words or tte['words']}"
            + (f": {measured}, on {t.n} seeds, its 95 % interval ({low:+.3f} … {high:+.3f}) still holds the "
               f"thesis's drop carried to this scale ({thesis:+.3f}), so a TTE effect of the thesis's size is not "
               f"ruled out, and whether the thesis's own, smaller drop is the TTE's stays open." if holds else "."))
