"""What Table 2's two designs (``designs``) show, computed from their stored runs as data the pages format
(``pages/table2.py``): the TTE' at the thesis's budget confirmed on fresh seeds beside its 4-seed record, and the whole
model at the thesis's summed learning rate (γ beside the thesis's, the TTE's share, "is used" decided, "helps" with
the seeds it would need, the baseline beside the 600-step one, the held-out curves). ``facts`` gathers docs/results.md's
sections, ``summary_facts`` the README's sentence.
"""
from __future__ import annotations

import statistics

import pandas as pd

from thesis_lib.paths import ROOT
from thesis_lib.metrics import HEADLINE, PRIMARY, TTE_SHARE_IMAGE, TTE_SHARE_TEXT, label
from thesis_lib.variants import VARIANT_LABELS
from .. import reference, results
from ..grids import BASELINE, TTE_AFTER_LS
from ..runs.designs import design_params
from . import designs, paired, verdicts, verify
from .designs import BUDGET_CONFIRM, THESIS_LR_SUM
from .stats import PairedTest, fmt, fmt_count, fmt_seeds, robust_seeds_needed, seeds_at_observed, seeds_needed
from .tables import study_frame, summary

COLUMNS = ("seeds", "difference (95 % CI)", "equivalence interval", "smallest effect of interest", "p (Holm, family)",
           "verdict", "seeds to decide")


def _primary(table: pd.DataFrame) -> pd.DataFrame:
    """The primary rows of a ``paired.claim_table`` (none where no claim's arms have runs)."""
    if table.empty:
        return pd.DataFrame(columns=list(COLUMNS), index=pd.Index([], name="claim"))
    return table[table.role.eq("primary")].set_index("claim")[list(COLUMNS)]


def budget_rows(params) -> pd.DataFrame | None:
    """The budget arm's 4-seed record (family "TTE' at the thesis's budget") above its confirmatory claims on seeds
    4-23 (fixed n = 20, Holm over the two); None before the confirmatory runs exist."""
    df = results.design_frame(params, BUDGET_CONFIRM)
    if df.empty or designs.BUDGET_VARIANT not in set(df.variant):
        return None
    record_df = study_frame(params, (BASELINE, designs.BUDGET_VARIANT))
    record = _primary(paired.claim_table(record_df, [c for c in reference.CLAIMS if c.family == reference.BUDGET]))
    record.index = [f"{c} (the record, seeds 0-3)" for c in record.index]
    confirm = _fixed_n(params, df, BUDGET_CONFIRM)
    return pd.concat([t for t in (record, confirm) if len(t)]).rename_axis("claim")


HIDDEN = ("difference (95 % CI)", "equivalence interval", "× the thesis's drop", "p (Holm, family)", "seeds to decide")


def pending_word(n: int, planned: int) -> str:
    """The verdict of a fixed-n claim on ``n`` of its ``planned`` seeds."""
    return f"pending ({n} of {planned} seeds)"


def pending(table: pd.DataFrame, planned: int, keep=(), expected=()) -> pd.DataFrame:
    """A fixed-n design has one look, when every claim holds its n: until then each of its claims reads "pending (k of n
    seeds)", k the fewest seeds of any of them (0 for a claim of ``expected`` without a row: no runs yet), and its
    difference, ratio and p (whichever of ``HIDDEN`` the table has) are not shown either, so that no one reads one claim
    of the family before the look (``keep``: rows left as they are, e.g. a descriptive claim or another design's)."""
    hidden, rows = [c for c in HIDDEN if c in table.columns], [c for c in table.index if c not in keep]
    fewest = min([table.loc[c, "seeds"] for c in rows] + [0 for c in expected if c not in table.index], default=planned)
    if fewest < planned:
        table.loc[rows, "verdict"] = pending_word(fewest, planned)
        table.loc[rows, hidden] = "–"
    return table


def _fixed_n(params, df: pd.DataFrame, design, keep=(), **kwargs) -> pd.DataFrame:
    """A fixed-n design's primary rows on ``df``, "pending" while short of its n (``pending``)."""
    return pending(_primary(paired.claim_table(df, designs.claims_of(params, design, **kwargs))),
                   len(design.seeds_for(params.preset)), keep, [c.text for c in design.claims])


def long_frame(params) -> pd.DataFrame:
    return results.design_frame(params, THESIS_LR_SUM)


def long_rows(params, df: pd.DataFrame) -> pd.DataFrame:
    """The long schedule's claims on the seeds trained so far: "is used" (decided only at its n = 8: before, its
    verdict reads "pending") and "helps" (descriptive: the seeds it would need, normal-theory and robust; the rule's
    own reading kept in ``attrs["helps by the rule"]``)."""
    helps = designs.LONG_HELPS.text
    table = _fixed_n(params, df, THESIS_LR_SUM, keep=(helps,), descriptive=True)
    diffs = list(results.contrast_values(df, designs.LONG_HELPS.contrast, PRIMARY).values())
    if len(diffs) >= 2:
        table.attrs["helps by the rule"] = table.loc[helps, "verdict"]      # what the rule would read, said beside
        table.loc[helps, "verdict"] = "descriptive"
        table.loc[helps, "seeds to decide"] = seeds_to_decide(diffs, designs.margin(THESIS_LR_SUM))
    return table


def seeds_to_decide(diffs: list, margin: float) -> str:
    """The seeds "helps" would need if its true difference is 0 (normal theory, with the SD's 95 % range; from a
    robust SD) and if it is the measured one (normal theory), as its table's cell."""
    mean, sd = statistics.fmean(diffs), statistics.stdev(diffs)
    need = seeds_at_observed(mean, sd, margin)
    return (f"{fmt_seeds(seeds_needed(PairedTest.of(diffs), margin))} if the true difference is 0; robust: "
            f"{fmt_seeds(robust_seeds_needed(diffs, margin))}; if it is the measured {mean:+.3f}: "
            f"{fmt_count(need['equivalent'])} to show equivalence, {fmt_count(need['different'])} to show it differs "
            f"from 0")


def all_long(params) -> pd.DataFrame:
    """The runs of every long-schedule design with the TTE' (the record, seeds 1-8; the confirmation, seeds 9-40)."""
    frames = [f for d in (THESIS_LR_SUM, designs.THESIS_LR_SUM_CONFIRM) if len(f := results.design_frame(params, d))]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def pilot(params) -> tuple | None:
    """The retrained pilot's baseline COCO beside the value the long schedule's margin was fixed from (the values of
    ``sentences.j2``'s ``pilot``); None without the pilot."""
    found = designs.pilot_baseline_coco(params)
    return None if found is None else (designs.PILOT_STEPS, label(PRIMARY), found[0], designs.PILOT_BASELINE_COCO,
                                       found[1])


def confirm_rows(params) -> pd.DataFrame | None:
    """The long schedule's 8-seed record (seeds 1-8: "is used" decided, "helps" descriptive) above the confirmation on
    seeds 9-40 (``THESIS_LR_SUM_CONFIRM``: fixed n = 32, Holm over the two; "pending (k of 32 seeds)" before its n);
    never pooled. None before either exists."""
    record_df, df = long_frame(params), results.design_frame(params, designs.THESIS_LR_SUM_CONFIRM)
    parts = []
    if not record_df.empty:
        record = long_rows(params, record_df)
        record.index = [f"{c} (the record, seeds 1-8)" for c in record.index]
        parts.append(record)
    if not df.empty:
        parts.append(_fixed_n(params, df, designs.THESIS_LR_SUM_CONFIRM))
    return pd.concat(parts).rename_axis("claim") if parts else None


def pairs_trained(df: pd.DataFrame) -> int:
    """The seeds with both a baseline and a TTE' run in a long-schedule design's frame (those "helps" pairs)."""
    return 0 if df.empty else len(results.contrast_values(df, designs.LONG_HELPS.contrast, PRIMARY))


def confirmation(params) -> pd.DataFrame | None:
    """The long confirmation's rows ("helps", then "is used") as ``confirm_rows`` shows them, once the family holds
    its n (no row reads "pending": ``pending``), its one look; None before."""
    df, claims = results.design_frame(params, designs.THESIS_LR_SUM_CONFIRM), designs.THESIS_LR_SUM_CONFIRM.claims
    rows = pd.DataFrame() if df.empty else _fixed_n(params, df, designs.THESIS_LR_SUM_CONFIRM)
    texts = [c.text for c in claims]
    if not set(texts) <= set(rows.index) or rows.loc[texts, "verdict"].str.startswith("pending").any():
        return None
    return rows.loc[texts]


def secondary_rows(df: pd.DataFrame, claims) -> pd.DataFrame:
    """The secondary metrics (Flickr, ImageNet) of ``claims`` on ``df``: reported, deciding nothing (unadjusted p)."""
    table = paired.claim_table(df, claims)
    if table.empty:
        return table
    rows = table[table.role.eq("secondary")]
    index = pd.Index([f"{c}: {m}" for c, m in zip(rows.claim, rows.metric)], name="claim: secondary metric")
    return rows.set_index(index)[["seeds", "difference (95 % CI)", "p (unadjusted)", "verdict"]]


def baseline_rows(params, df: pd.DataFrame) -> pd.DataFrame:
    """The baseline at the thesis's summed learning rate beside the 600-step baseline (the study's seeds 0-3), mean ±
    95 % CI over seeds, on the headline metrics."""
    seeds = ", ".join(map(str, sorted(results.runs_of(df, BASELINE).seed))) or "none"
    regimes = {f"baseline, {_steps(params)} steps (seeds {seeds})": df,
               "baseline, 600 steps (seeds 0-3)": study_frame(params, (BASELINE,))}
    return pd.concat([summary(frame, (BASELINE,), HEADLINE).set_axis([name])
                      for name, frame in regimes.items()]).rename_axis("run")


def _steps(params) -> str:
    return f"{designs.long_steps(params.preset):,}"


def curve_rows(params, design=THESIS_LR_SUM) -> pd.DataFrame:
    """Held-out COCO retrieval along the long schedule (snapshots every ``designs.KEEP_EVERY`` steps and the end),
    mean over the ``design``'s seeds trained, per variant."""
    curve = results.curves_frame(params, design)
    if curve.empty:
        return curve
    table = curve.pivot_table(index="step", columns="variant", values=PRIMARY, aggfunc="mean")
    return table.rename(columns=lambda v: f"{label(PRIMARY)}, {VARIANT_LABELS[v]}").round(2)


def overfit(params, design=THESIS_LR_SUM) -> list[dict]:
    """Whether the held-out score falls late in the long schedule: its end against its best snapshot, per variant
    (the ``design``'s seeds; empty without curves)."""
    curve, parts = results.curves_frame(params, design), []
    for v, sub in curve.groupby("variant") if len(curve) else ():
        mean = sub.groupby("step")[PRIMARY].mean()
        parts.append({"variant": VARIANT_LABELS[v], "end": float(mean.iloc[-1]), "best": float(mean.max()),
                      "best_step": int(mean.idxmax()), "best_is_end": int(mean.idxmax()) == mean.index[-1],
                      "drop": float(mean.max()) - float(mean.iloc[-1])})
    return parts


def _curve(params, design) -> dict:
    """The held-out curve's table and its end against its best (``curve_rows``, ``overfit``); empty without curves."""
    curve = curve_rows(params, design)
    return {"curve": curve, "overfit": overfit(params, design)} if len(curve) else {"curve": ""}


def facts(params) -> dict:
    """docs/results.md's sections on Table 2's designs and the long 2 × 2 (``templates/table2.j2``) as data: tables
    (frames), the values of their sentences; None for a design without runs."""
    out = {"primary": label(PRIMARY), "budget": budget_rows(params), "long": None, "confirm": None,
           "table1": long_table1(params)}
    df = long_frame(params)
    if not df.empty:
        out["long"] = {"steps": designs.long_steps(params.preset), "done": len(results.runs_of(df, TTE_AFTER_LS)),
                       "wanted": len(THESIS_LR_SUM.seeds_for(params.preset)), "margin": designs.margin(THESIS_LR_SUM),
                       "rows": long_rows(params, df),
                       "secondary": secondary_rows(df, designs.claims_of(params, THESIS_LR_SUM, descriptive=True)),
                       "baselines": baseline_rows(params, df),
                       "gamma": verdicts.gamma_table(all_long(params), (TTE_AFTER_LS,)),
                       **_curve(params, THESIS_LR_SUM), "pilot": pilot(params)}
    if (confirm := confirm_rows(params)) is not None:
        design = designs.THESIS_LR_SUM_CONFIRM
        df_c = results.design_frame(params, design)
        looked = confirmation(params) is not None                 # shown only at its one look, like its verdicts
        out["confirm"] = {"n": len(design.seeds_for(params.preset)), "margin": designs.margin(design),
                          "done": pairs_trained(df_c), "power": designs.confirm_power(params), "rows": confirm,
                          "looked": looked,
                          "secondary": looked and secondary_rows(df_c, designs.claims_of(params, design)),
                          **(_curve(params, design) if looked else {"curve": ""})}
    return out


def long_table1(params) -> dict | None:
    """Table 1's 2 × 2 on the long schedule beside the 600-step one: each main effect, its verdict and its size as
    a multiple of the thesis's drop (None before any of its runs exist)."""
    design = designs.LONG_TABLE1
    df = results.design_frame(params, design)
    if df.empty or len(set(df.variant)) < 2:
        return None
    claims = designs.claims_of(params, design, descriptive=True)
    short = study_frame(params, design.variants)
    planned, rows, short_rows = len(design.seeds_for(params.preset)), {}, []
    described = {c.text for c in design.descriptive}
    for claim in claims:
        study = next(c for c in reference.CLAIMS if c.text == claim.short)
        for regime, frame, c in ((f"{_steps(params)} steps", df, claim), ("600 steps", short, study)):
            r = paired.primary_row(frame, c.text, (c,))
            if r is None:
                continue
            name = f"{claim.short}, {regime}"
            if c is not claim:                 # the 600-step rows: another design's, shown as they are
                short_rows.append(name)
            rows[name] = {"seeds": r["test"].n, "difference (95 % CI)": fmt(r["test"].mean, r["test"].half95, 3),
                          "× the thesis's drop": f"{r['ratio'][0]:.1f}", "verdict":
                              "descriptive" if c.text in described else r["words"], "seeds to decide": "–"}
            if claim.text in described:        # at both budgets, each against its own margin
                diffs = list(results.contrast_values(frame, c.contrast, PRIMARY).values())
                rows[name]["seeds to decide"] = seeds_to_decide(diffs, r["margin"])
    table = pending(pd.DataFrame.from_dict(rows, orient="index"), planned, keep=short_rows)
    return {"steps": designs.long_steps(params.preset), "planned": planned, "margin": designs.margin(design),
            "done": len(results.runs_of(df, design.variants[-1])), "rows": table.rename_axis("main effect"),
            "machines": machines(params, design)}


def machines(params, design) -> dict:
    """Where the 2 × 2's arms ran, and its baseline arm against the record's baselines of the same seeds and config
    trained on another machine (``verify.runs_against``): how far one run moves between machines."""
    df = results.design_frame(params, design)
    m = {"arms": "; ".join(f"{v}: {', '.join(sorted(set(results.runs_of(df, v).machine)))}" for v in design.variants),
         "committed_machine": None}
    roots = (design_params(params, d).results_root for d in (design, designs.THESIS_LR_SUM))
    rows = pd.DataFrame(verify.runs_against(*roots, params.preset))
    rows = rows[rows.variant.eq(BASELINE) & rows.metric.eq(PRIMARY)] if len(rows) else rows
    if len(rows):
        m |= {"committed_machine": rows.committed_machine.iloc[0], "low": rows.difference.abs().min(),
              "high": rows.difference.abs().max(), "metric": label(PRIMARY), "within": int(rows.within.sum()),
              "n": len(rows), "forked": rows.curve.str.startswith("forked").all(), "tolerance": rows.tolerance.max(),
              "same_bits": _same_bits()}
    return m


def _same_bits() -> dict | None:
    """Whether the two AMD EPYC families computed the same bits: the shipped models' runs, retrained on one, beside
    the confirmation's runs of the same seed made on the other (results/shipped.csv); None where they differ."""
    path = ROOT / "results" / "shipped.csv"      # written by report (make figures) from the shipped runs
    shipped = pd.read_csv(path) if path.exists() else pd.DataFrame()
    if shipped.empty or not shipped.difference.eq(0).all():
        return None
    return {"machine": shipped.machine.iloc[0], "committed_machine": shipped.committed_machine.iloc[0]}


def _said(row) -> dict:
    return {"seeds": row.seeds, "verdict": row.verdict, "difference": row["difference (95 % CI)"],
            "margin": row["smallest effect of interest"]}


def summary_facts(params) -> dict:
    """What the two designs let the repository say about Table 2, and what they do not (``sentences.j2``'s
    ``table2_summary``): each design's "helps" and "is used", the TTE's share on the long schedule."""
    budget, df = budget_rows(params), long_frame(params)
    out = {"budget": budget is not None and {"helps": _said(budget.iloc[-2]), "used": _said(budget.iloc[-1])},
           "long": None, "confirm": None}
    if not df.empty:
        share = results.runs_of(df, TTE_AFTER_LS)
        out["long"] = {"used": _said(long_rows(params, df).iloc[0]), "pairs": len(share),
                       "all": len(share) >= len(THESIS_LR_SUM.seeds_for(params.preset)),
                       "image": share[TTE_SHARE_IMAGE].mean(), "text": share[TTE_SHARE_TEXT].mean()}
        confirm = confirmation(params)
        out["confirm"] = confirm is not None and {"helps": _said(confirm.iloc[0]), "used": _said(confirm.iloc[1])}
    return out
