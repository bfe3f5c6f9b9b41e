"""The claims table: every claim in every regime that tested it, one row per claim × regime × metric, computed from
the result files through the results stage and written once to ``results/claims.csv`` (its columns:
docs/claims_table.md). Every page, figure and notebook conclusion reads this table, never the statistics code.

The regimes, nearest the thesis's first: the whole model trained to the thesis's summed learning rate (5,952 steps:
its confirmation on seeds 9-40, its 8-seed record, Table 1's 2 × 2), the TTE' given the thesis's learning-rate budget
within 600 steps (at widths 384 and 192, the width ladder; at 96, its confirmation), and the 600-step default. Whether
a regime could test a claim is one rule (``can_test``).
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import io
import math

import pandas as pd
import torch

from thesis_lib.cache import write_text_atomic
from thesis_lib.config import get_config
from thesis_lib.errors import ThesisError
from thesis_lib.metrics import PRIMARY
from thesis_lib.models.emkum import build_model
from thesis_lib.paths import ROOT
from thesis_lib.training.engine import budget_summed_lr, summed_lr, thesis_summed_lr
from thesis_lib.variants import VARIANT_SPECS
from .. import grids, reference, results
from ..runs import study_params
from . import designs, ladder, paired
from .stats import seeds_needed
from .tables import tte_share

PATH = ROOT / "results" / "claims.csv"
UNTESTED_SHARE = 10
"""The one rule for "could this regime test the claim?" (``can_test``): a claim on a TTE after the encoders can be
tested where the TTE could have mattered, by its training budget or by its dose: its parameters trained to at least
the thesis's summed learning rate, or its share of the shared block's image input at least 1/``UNTESTED_SHARE`` of
the share the TTE' reaches given the thesis's learning-rate budget within 600 steps (the budget arm, 2.3 %). A claim
with no TTE after the encoders has no such limit here."""

DISAGREE = ("equivalent", "trivial", "contradicted", "refuted")   # the thesis's effect is not here (in size or sign)
THESIS_TOPICS = ("before", "code", "helps", "used")                # what the chapter's three claims are about


def reading(row: dict) -> str:
    """What a row says of the chapter's claim it is about, one rule for every page: "pending", "not testable"
    (``can_test``), "disagrees" (no effect as large as the thesis's, the other way, or reproduced at another size),
    "undecided", "agrees"; "" for a question the chapter did not ask (``THESIS_TOPICS``). "Is used" states no size
    (its margin is borrowed from Table 2): a significant cost agrees, one the other way disagrees, else undecided."""
    verdict = row["verdict"]
    if row["topic"] not in THESIS_TOPICS:
        return ""
    if row["status"] == "pending":
        return "pending"
    if not row["can_test"]:
        return "not testable"
    if row["topic"] == "used":    # the thesis says "a little" and reports no size: any real cost agrees
        significant = verdict in ("trivial", "reproduced", "confirmed") or verdict.startswith("reproduced in")
        return "agrees" if significant else "disagrees" if verdict in ("contradicted", "refuted") else "undecided"
    if verdict in DISAGREE or verdict.startswith("reproduced in direction"):
        return "disagrees"
    return "agrees" if verdict in ("reproduced", "confirmed") else "undecided"


COLUMNS = ("topic", "claim", "family", "regime", "steps", "design", "seeds", "n", "seeds_declared", "machines", "width",
           "parameters", "metric", "primary", "baseline_mean", "difference", "half95", "eq_low", "eq_high", "eq_level",
           "margin", "thesis_aug", "thesis_final", "thesis_carried", "ratio", "ratio_low", "ratio_high", "p", "p_holm",
           "verdict", "status", "decide_alpha", "seeds_to_decide", "tte_share", "tte_summed_lr", "can_test",
           "in_thesis", "reading")   # results/claims.csv's columns, in order (docs/claims_table.md)
HIDDEN = ("difference", "half95", "eq_low", "eq_high", "ratio", "ratio_low", "ratio_high", "p", "p_holm")
TOPICS = {   # what each declared claim is about: the first screen shows the nearest regime's row of each topic
    reference.BEFORE_HURTS: "before", reference.TTE_MAIN_EFFECT: "before", reference.CODE_HURTS: "code",
    reference.LN_MAIN_EFFECT: "layernorm", reference.INTERACTION: "interaction",
    designs.LONG_TABLE1.claims[0].text: "layernorm", designs.LONG_TABLE1.descriptive[0].text: "before",
    **{c.text: "helps" if c.direction > 0 else "used"
       for c in (*designs.THESIS_LR_SUM_CONFIRM.claims, *designs.BUDGET_CONFIRM.claims,
                 *designs.THESIS_LR_SUM.claims, designs.LONG_HELPS,
                 *(c for d in designs.WIDTH_LADDER.values() for c in d.claims + d.descriptive),
                 *(c for c in reference.CLAIMS if c.family in (reference.TABLE2, reference.BUDGET)))},
    **{c.text: f"dose {c.contrast[0][0][0].rsplit('init', 1)[1]}" for c in reference.CLAIMS
       if c.family == reference.DOSE},
}


@dataclasses.dataclass(frozen=True)
class Regime:
    """A set of runs decided together: ``design`` (a fixed-n design's store) or the study's own runs (None)."""
    name: str
    steps: int
    design: designs.FixedDesign | None = None


def regimes(preset: str) -> tuple:
    long = designs.long_steps(preset)
    steps = get_config(preset).train.steps
    return (Regime("summed learning rate, confirmation", long, designs.THESIS_LR_SUM_CONFIRM),
            Regime("summed learning rate, record", long, designs.THESIS_LR_SUM),
            Regime("summed learning rate, 2 × 2", long, designs.LONG_TABLE1),
            *(Regime(ladder.regime_name(w), steps, designs.WIDTH_LADDER[w])
              for w in sorted(designs.WIDTH_LADDER, reverse=True)),
            Regime(ladder.RUNG, steps, designs.BUDGET_CONFIRM),
            Regime("default", steps))


def seed_ranges(seeds) -> str:
    """[0, 1, 2, 5] -> '0-2, 5'."""
    out, seeds = [], sorted(seeds)
    for s in seeds:
        if out and s == out[-1][1] + 1:
            out[-1][1] = s
        else:
            out.append([s, s])
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in out)


@functools.lru_cache(maxsize=None)
def parameters(preset: str, variant: str, overrides: tuple = ()) -> int:
    """The variant's parameter count at ``preset`` with the config fields ``overrides`` ((field, value) pairs)."""
    cfg = get_config(preset, variant, overrides=dict(overrides))
    with torch.device("meta"):
        return sum(p.numel() for p in build_model(cfg, pretrained=False).parameters())


def model_overrides(preset: str, design) -> tuple:
    """The config fields a design sets on the model and its teacher (the width ladder's width,
    ``designs.width_overrides``), as (field, value) pairs; none for the study's own runs."""
    fields = design.overrides_for(preset).items() if design else ()
    return tuple((k, v) for k, v in fields if k.startswith(("model.", "teacher.")))


def shape(preset: str, design, variant: str) -> dict:
    """The ``width`` and ``parameters`` cells of a row: the model's width and the variant's parameter count, in the
    design's config (its ``model_overrides``) or the preset's."""
    fields = model_overrides(preset, design)
    return {"width": get_config(preset, overrides=dict(fields)).model.dim,
            "parameters": parameters(preset, variant, fields)}


def thesis_difference(claim, metric: str, version: str):
    """The thesis's own difference for the chapter claim a row is about (its rows ``margin_from``; the 2 × 2's TTE
    main effect is about Table 1's), else None: a question the chapter did not ask, or an arm it never measured (a
    TTE removed at evaluation: its margin is borrowed)."""
    if TOPICS[claim.text] not in THESIS_TOPICS or any(mode != "none" for _, mode in claim.arms):
        return None
    treated, control = (reference.thesis_value(version, v, metric) for v in claim.margin_from)
    return None if treated is None or control is None else treated - control


def tte_summed_lr(preset: str, variant: str, steps: int) -> float:
    """The summed learning rate a variant's TTE parameters get in a run of ``steps``, ÷ the thesis run's; nan for a
    variant without a TTE."""
    cfg = get_config(preset, variant)
    if not cfg.model.tte.place:
        return math.nan
    t = dataclasses.replace(cfg.train, steps=steps)
    budget = budget_summed_lr(VARIANT_SPECS[variant].tte_budget)
    return (budget or summed_lr(t, t.batch_size)) / thesis_summed_lr()


def _tte_share(df: pd.DataFrame, claim) -> float:
    """The TTE's share (percent) of the shared block's image input in the claim's treated arm; nan without one."""
    share = tte_share(df, claim.contrast[0][0][0])
    return math.nan if share is None else share


def _machines(df: pd.DataFrame, claim, seeds) -> str:
    """The machines the claim's runs on ``seeds`` were computed on (``results.machine_label``), joined."""
    runs = df[df.variant.isin(claim.arms_variants) & df.seed.isin(seeds)]
    return "; ".join(sorted(set(runs["machine"]))) if "machine" in runs else ""


def _regime_name(regime: Regime, variant: str) -> str:
    """The study's own runs of the TTE' at the thesis's budget form a regime of their own (its record, seeds 0-3)."""
    return "TTE budget, record" if regime.design is None and VARIANT_SPECS[variant].tte_budget else regime.name


def _missing(found: list[dict], claims, design) -> list:
    """The claims of a design without a row in ``found`` (no runs of their arms yet)."""
    return [c for c in claims if design and not any(r["claim"] == c for r in found)]


def _fewest(params, found: list[dict], claims, design) -> int:
    """The fewest seeds any claim of a design's family holds (0 for one without runs; its descriptive claims aside):
    the family has one look, when this reaches its n."""
    descriptive = {c.text for c in design.descriptive} if design else set()
    return min([r["test"].n for r in found if r["primary"] and r["claim"].text not in descriptive]
               + [0 for c in _missing(found, claims, design) if c.text not in descriptive],
               default=len(design.seeds_for(params.preset)) if design else 0)


def _unrun(params, regime: Regime, claim) -> dict:
    """A design's claim without runs: a pending row of what its declaration fixes (seeds, width, parameters, margin;
    ``can_test`` where the rule needs no run: a TTE given the thesis's summed learning rate, or none after the
    encoders)."""
    design, variant = regime.design, claim.contrast[0][0][0]
    lr_sum = tte_summed_lr(params.preset, variant, regime.steps)
    row = {"topic": TOPICS[claim.text], "claim": claim.text, "family": claim.family, "regime": regime.name,
           "steps": regime.steps, "design": design.name, "n": 0, **shape(params.preset, design, variant),
           "metric": PRIMARY, "primary": True, "seeds_declared": seed_ranges(design.seeds_for(params.preset)),
           "margin": claim.margin, "verdict": "pending", "status": "pending", "tte_summed_lr": lr_sum,
           "can_test": True if math.isnan(lr_sum) or lr_sum >= 1 else None, "in_thesis": claim.in_thesis}
    return {**row, "reading": reading(row)}


def _rows(params, regime: Regime, df: pd.DataFrame, claims, budget_share: float, found: list | None = None,
          fewest: int | None = None, hold: bool = False) -> list[dict]:
    """The table's rows of ``claims`` on ``df`` (``found``: their ``paired.claim_rows``, computed here when None):
    a fixed-n design's family reads "pending", its difference and p hidden, until every claim holds its n (its one
    look; ``fewest``: the family's fewest seeds where it spans regimes, the width ladder's), a descriptive claim until
    it holds its own n (``hold``: until the family's look too); a design's claim without runs is a pending row."""
    design, out = regime.design, []
    planned = len(design.seeds_for(params.preset)) if design else 0
    descriptive = {c.text for c in design.descriptive} if design else set()
    found = (paired.claim_rows(df, claims) if len(df) else []) if found is None else found
    fewest = _fewest(params, found, claims, design) if fewest is None else fewest
    out += [_unrun(params, regime, c) for c in _missing(found, claims, design)]
    for r in found:
        c, t, m, tost = r["claim"], r["test"], r["metric"], r["levels"][1]
        short = t.n < planned if c.text in descriptive and not hold else fewest < planned   # one look, at its n
        status = "pending" if design and short else "descriptive" if c.text in descriptive else "decided"
        variant = c.contrast[0][0][0]
        share, lr_sum = _tte_share(df, c), tte_summed_lr(params.preset, variant, regime.steps)
        need = (seeds_needed(t, r["margin"], r["decide_alpha"], tost)["seeds"]
                if r["primary"] and r["margin"] and status != "pending" and r["verdict"] == "undecided" else None)
        row = {"topic": TOPICS[c.text], "claim": c.text, "family": c.family,
               "regime": _regime_name(regime, variant), "steps": regime.steps,
               "design": design.name if design else "study", "seeds": seed_ranges(r["seeds"]), "n": t.n,
               "seeds_declared": seed_ranges(design.seeds_for(params.preset)) if design else "",
               "machines": _machines(df, c, r["seeds"]), **shape(params.preset, design, variant), "metric": m,
               "primary": r["primary"],
               "baseline_mean": r["control"], "difference": t.mean, "half95": t.half95,
               "eq_low": t.mean - t.half(1 - 2 * tost), "eq_high": t.mean + t.half(1 - 2 * tost),
               "eq_level": 1 - 2 * tost, "margin": r["margin"],
               "thesis_aug": thesis_difference(c, m, "aug"), "thesis_final": thesis_difference(c, m, "final"),
               "thesis_carried": r["thesis"], "ratio": r["ratio"][0], "ratio_low": r["ratio"][1],
               "ratio_high": r["ratio"][2], "p": t.p, "p_holm": r.get("p_adjusted"),
               "verdict": "pending" if status == "pending" else r["words"], "status": status,
               "decide_alpha": r["decide_alpha"], "seeds_to_decide": need, "tte_share": share,
               "tte_summed_lr": lr_sum,
               "can_test": math.isnan(share) or lr_sum >= 1 or share * UNTESTED_SHARE >= budget_share,
               "in_thesis": c.in_thesis}
        if status == "pending":                  # nothing of a family is read before its look
            row.update(dict.fromkeys(HIDDEN))
        out.append({**row, "reading": reading(row)})
    return out


def claims_table(params) -> pd.DataFrame:
    """Every declared claim in every regime that has runs of it, one row per claim × regime × claimed metric."""
    study = paired.claims_frame(params, grids.CLAIMED)
    budget_share = _tte_share(study, next(c for c in reference.CLAIMS if c.family == reference.BUDGET))
    rows, widths = [], _ladder_rows(params, budget_share)
    for regime in regimes(params.preset):
        if regime.design is None:
            rows += _rows(params, regime, study, reference.CLAIMS, budget_share)
            continue
        if not regime.design.runs_at(params.preset):
            continue                             # at the thesis's scale every run has its budget and length
        if regime.name in widths:
            rows += widths[regime.name]
            continue
        try:
            claims = designs.claims_of(params, regime.design, descriptive=True)
        except ThesisError:                      # its margin needs the study's baseline runs, absent here
            continue
        rows += _rows(params, regime, results.design_frame(params, regime.design), claims, budget_share)
    return pd.DataFrame(rows, columns=list(COLUMNS)).astype({"seeds_to_decide": "Int64"})


def _ladder_rows(params, budget_share: float) -> dict:
    """The width ladder's rows by regime: one family over its widths (``designs.LADDER_FAMILY``), Holm over them
    (``ladder.holm_across``), one look when every width holds its n and its margin; until then every row of every
    width is pending, its descriptive "is used" too (nothing of the ladder is shown before it is complete)."""
    rungs = [r for r in regimes(params.preset) if r.design in designs.WIDTH_LADDER.values()
             and r.design.runs_at(params.preset)]
    inputs = []
    for regime in rungs:
        claims, fixed = ladder.claims_at(regime.design)
        df = results.design_frame(params, regime.design)
        found = ladder.claim_rows(df, claims, fixed)
        inputs.append((regime, df, claims, found, _fewest(params, found, claims, regime.design) if fixed else 0))
    ladder.holm_across([found for _, _, _, found, _ in inputs])
    fewest = min((n for *_, n in inputs), default=0)
    return {regime.name: _rows(params, regime, df, claims, budget_share, found, fewest, hold=True)
            for regime, df, claims, found, _ in inputs}


def csv_text(table: pd.DataFrame) -> str:
    """The table as results/claims.csv holds it (six significant digits)."""
    return table.to_csv(index=False, float_format="%.6g", lineterminator="\n")


def read(source=PATH) -> pd.DataFrame:
    """The claims table as written (a path, or the text ``csv_text`` gives): what every page reads."""
    source = io.StringIO(source) if isinstance(source, str) else source
    try:
        table = pd.read_csv(source, dtype={"seeds": str, "seeds_declared": str, "machines": str},
                            keep_default_na=False, na_values=[""])
    except pd.errors.EmptyDataError:             # written by an older version without its header: nothing
        return pd.DataFrame(columns=list(COLUMNS))
    return table.astype({"seeds_to_decide": "Int64"})


def write(params, path=PATH) -> pd.DataFrame:
    """Compute the table from the result files, write it to ``path``, and return it as written."""
    text = csv_text(claims_table(params))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, text)
    return read(text)


def main(argv=None) -> int:
    """``python -m thesis_lib.study.claims.table [--preset demo]``: write results/claims.csv from the result files."""
    p = argparse.ArgumentParser(prog="python -m thesis_lib.study.claims.table", description=main.__doc__)
    p.add_argument("--preset", default="demo")
    args = p.parse_args(argv)
    table = write(study_params(args.preset, need_data=False))
    print(f"{PATH.relative_to(ROOT)}: {len(table)} rows ({table['primary'].sum()} on {PRIMARY})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
