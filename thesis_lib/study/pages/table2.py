"""What Table 2's two designs (``designs``) show, written from their stored runs: the TTE' at the thesis's budget
confirmed on fresh seeds beside its 4-seed record, and the whole model at the thesis's summed learning rate (γ beside
the thesis's, the TTE's share, "is used" decided, "helps" with the seeds it would need, the baseline beside the
600-step one, the held-out curves). docs/results.md renders ``markdown``; the README's block, ``sentence``.
"""
from __future__ import annotations

import statistics

import pandas as pd

from thesis_lib.paths import ROOT
from thesis_lib.metrics import HEADLINE, PRIMARY, TTE_SHARE_IMAGE, TTE_SHARE_TEXT, label
from thesis_lib.variants import VARIANT_LABELS
from .. import reference, results
from ..claims import designs, paired, verdicts, verify
from ..runs.designs import design_params
from ..claims.designs import BUDGET_CONFIRM, THESIS_LR_SUM
from ..grids import BASELINE, TTE_AFTER_LS
from ..claims.stats import PairedTest, fmt, fmt_count, fmt_seeds, robust_seeds_needed, seeds_at_observed, seeds_needed
from .tables import markdown as _markdown, study_frame, summary

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
        table.loc[helps, "seeds to decide"] = _seeds_to_decide(diffs, designs.margin(THESIS_LR_SUM))
    return table


def _seeds_to_decide(diffs: list, margin: float) -> str:
    """The seeds "helps" would need if its true difference is 0 (normal theory, with the SD's 95 % range; from a
    robust SD) and if it is the measured one (normal theory)."""
    mean, sd = statistics.fmean(diffs), statistics.stdev(diffs)
    need = seeds_at_observed(mean, sd, margin)
    return (f"{fmt_seeds(seeds_needed(PairedTest.of(diffs), margin))} if the true difference is 0; robust: "
            f"{fmt_seeds(robust_seeds_needed(diffs, margin))}; if it is the measured {mean:+.3f}: "
            f"{fmt_count(need['equivalent'])} to show equivalence, {fmt_count(need['different'])} to show it differs "
            "from 0")


def all_long(params) -> pd.DataFrame:
    """The runs of every long-schedule design with the TTE' (the record, seeds 1-8; the confirmation, seeds 9-40)."""
    frames = [f for d in (THESIS_LR_SUM, designs.THESIS_LR_SUM_CONFIRM) if len(f := results.design_frame(params, d))]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def pilot_sentence(params) -> str:
    """The retrained pilot's baseline COCO beside the value the long schedule's margin was fixed from."""
    found = designs.pilot_baseline_coco(params)
    if found is None:
        return ""
    value, tolerance = found
    return (f"The pilot (seed 0, {designs.PILOT_STEPS:,} steps), retrained and committed: its baseline's "
            f"{label(PRIMARY)} is {value:.2f}, {value - designs.PILOT_BASELINE_COCO:+.2f} from the "
            f"{designs.PILOT_BASELINE_COCO} the margin was fixed from (make verify's tolerance for a run: ±"
            f"{tolerance:.2f}, one between-seed SD of the long record); "
            f"{'within' if abs(value - designs.PILOT_BASELINE_COCO) <= tolerance else 'outside'} it. Neither the "
            f"constant nor the margin changes with it.")


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


def overfit_sentence(params, design=THESIS_LR_SUM) -> str:
    """Whether the held-out score falls late in the long schedule: its end against its best snapshot, per variant
    (the ``design``'s seeds)."""
    curve = results.curves_frame(params, design)
    if curve.empty:
        return ""
    parts = []
    for v, sub in curve.groupby("variant"):
        mean = sub.groupby("step")[PRIMARY].mean()
        best_step, end = int(mean.idxmax()), float(mean.iloc[-1])
        drop = float(mean.max()) - end
        parts.append(f"{VARIANT_LABELS[v]}: {end:.2f} at the end, "
                     + ("its highest" if best_step == mean.index[-1] else
                        f"{drop:.2f} below its highest ({mean.max():.2f} at step {best_step:,})"))
    return (f"Held-out {label(PRIMARY)} along the schedule (mean over seeds): " + "; ".join(parts) + ".")


def markdown(params) -> str:
    """docs/results.md's section on Table 2's designs (empty before any of their runs exist)."""
    parts = []
    budget = budget_rows(params)
    if budget is not None:
        parts += ["## Table 2 at the thesis's budget for the TTE, confirmed on fresh seeds",
                  f"The TTE' with the thesis's summed learning rate for its type vectors and γ, paired with the "
                  f"baseline; the 4-seed record (seeds 0-3) stays as it was, and the confirmatory test on seeds 4-23 "
                  "(fixed n = 20, declared before its runs in `thesis_lib/study/claims/designs.py`) is a family of "
                  f"two (Holm), decided on {label(PRIMARY)} against a margin fixed from the study's seeds 0-3:",
                  _markdown(budget)]
    df = long_frame(params)
    if not df.empty:
        done, wanted = len(results.runs_of(df, TTE_AFTER_LS)), len(THESIS_LR_SUM.seeds_for(params.preset))
        trained = f"all {wanted} of the design's seeds trained" if done >= wanted else \
            f"{done} of the design's {wanted} seeds trained so far"
        parts += ["## The whole model at the thesis's summed learning rate",
                  f"Every parameter trained for {_steps(params)} steps of the demo's schedule (its summed learning "
                  f"rate equals the thesis run's, ≈ 4.46; the demo's 600 steps sum to 0.45): a rule of thumb for "
                  f"\"trained as long as the thesis\" on a width-96 model, not the thesis's regime. Baseline and "
                  f"TTE', paired by seed; {trained}. The margin "
                  f"(±{designs.margin(THESIS_LR_SUM):.3f}) is fixed from the pilot's baseline.",
                  _markdown(long_rows(params, df)),
                  "The secondary metrics of both claims (reported; they decide nothing, their p unadjusted):",
                  _markdown(secondary_rows(df, designs.claims_of(params, THESIS_LR_SUM, descriptive=True))),
                  _markdown(baseline_rows(params, df)),
                  "γ and the TTE's share of the shared block's input over every long seed trained (the record's "
                  "and the confirmation's), beside the thesis's γ:",
                  _markdown(verdicts.gamma_table(all_long(params), (TTE_AFTER_LS,)))]
        curve = curve_rows(params)
        if len(curve):
            parts += [_markdown(curve), overfit_sentence(params)]
        parts.append(pilot_sentence(params))                                  # "" without the pilot's files
    confirm = confirm_rows(params)
    if confirm is not None:
        design = designs.THESIS_LR_SUM_CONFIRM
        power = designs.fmt_power(designs.confirm_power(params))
        df_c = results.design_frame(params, design)
        done = pairs_trained(df_c)
        parts += ["## Table 2 on the long schedule: the 8-seed record and its confirmation on fresh seeds",
                  f"The same schedule on seeds 9-40 (fixed n = {len(design.seeds_for(params.preset))}, one look at "
                  f"the end; declared before its runs in `thesis_lib/study/claims/designs.py`): \"helps\" and "
                  f"\"is used\" one Holm family, decided on {label(PRIMARY)} against ±{designs.margin(design):.3f}; "
                  f"the 8-seed record is reported beside it, never pooled; {done} of "
                  f"{len(design.seeds_for(params.preset))} seed pairs trained. {power[0].upper() + power[1:]}.",
                  _markdown(confirm)]
        if confirmation(params) is not None:                      # shown only at its one look, like its verdicts
            parts += ["The confirmation's secondary metrics for both claims (reported; they decide nothing, their p "
                      "unadjusted), and its held-out curves:",
                      _markdown(secondary_rows(df_c, designs.claims_of(params, design)))]
            curve = curve_rows(params, design)
            if len(curve):
                parts += [_markdown(curve), overfit_sentence(params, design)]
    parts += long_table1_markdown(params)
    return "\n\n".join(part for part in parts if part)


def long_table1_markdown(params) -> list[str]:
    """Table 1's 2 × 2 on the long schedule beside the 600-step one: each main effect, its verdict and its size as
    a multiple of the thesis's drop (empty before any of its runs exist)."""
    design = designs.LONG_TABLE1
    df = results.design_frame(params, design)
    if df.empty or len(set(df.variant)) < 2:
        return []
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
                rows[name]["seeds to decide"] = _seeds_to_decide(diffs, r["margin"])
    table = pending(pd.DataFrame.from_dict(rows, orient="index"), planned, keep=short_rows)
    done = len(results.runs_of(df, design.variants[-1]))
    return ["## Table 1's 2 × 2 on the long schedule",
            f"All four arms on seeds 1-4 at {_steps(params)} steps, each in this design's store (fixed n = {planned}, "
            f"{done} trained); the LayerNorm's main effect decided against ±{designs.margin(design):.3f}, the TTE's "
            f"descriptive (with the seeds that would decide it); each beside its 600-step value:",
            _markdown(table.rename_axis("main effect")), _machines_note(params, design)]


def _machines_note(params, design) -> str:
    """Where the 2 × 2's arms ran, and its baseline arm against the record's baselines of the same seeds and config
    trained on another machine (``verify.runs_against``): how far one run moves between machines."""
    df = results.design_frame(params, design)
    machines = "; ".join(f"{v}: {', '.join(sorted(set(results.runs_of(df, v).machine)))}" for v in design.variants)
    roots = (design_params(params, d).results_root for d in (design, designs.THESIS_LR_SUM))
    rows = pd.DataFrame(verify.runs_against(*roots, params.preset))
    rows = rows[rows.variant.eq(BASELINE) & rows.metric.eq(PRIMARY)] if len(rows) else rows
    if rows.empty:
        return f"Machines: {machines}."
    return (f"Machines: {machines}. The baseline arm was declared on 2026-12-07 to replace a pairing with the "
            f"8-seed record's baselines of the same seeds and config, trained on {rows.committed_machine.iloc[0]}; "
            f"the same runs on the two machines end {rows.difference.abs().min():.2f}-{rows.difference.abs().max():.2f}"
            f" {label(PRIMARY)} points apart ({int(rows.within.sum())} of {len(rows)} within make verify's "
            f"tolerance{' for runs whose curves forked' if rows.curve.str.startswith('forked').all() else ''}, "
            f"±{rows.tolerance.max():.2f})." + _same_bits())


def _same_bits() -> str:
    """Whether the two AMD EPYC families computed the same bits: the shipped models' runs, retrained on one, beside
    the confirmation's runs of the same seed made on the other (results/shipped.csv)."""
    path = ROOT / "results" / "shipped.csv"      # written by report (make figures) from the shipped runs
    if not path.exists():
        return ""
    shipped = pd.read_csv(path)
    if shipped.empty or not shipped.difference.eq(0).all():
        return ""
    return (f" The two AMD EPYC families computed the same bits where both ran the same run: seed 9's baseline and "
            f"TTE' of the confirmation, retrained on {shipped.machine.iloc[0]} for shipping, equal the runs made on "
            f"{shipped.committed_machine.iloc[0]} in every metric and every logged loss (results/shipped.csv): as far "
            "as these two runs show, the baseline arm is the run the other arms' machine would have computed.")


def sentence(params) -> str:
    """One computed sentence on what the two designs let the repository say about Table 2, and what they do not."""
    budget = budget_rows(params)
    df = long_frame(params)
    bits = []
    if budget is not None:
        helps, used = budget.iloc[-2], budget.iloc[-1]
        bits.append(f"given the thesis's learning-rate budget for the TTE alone, on {helps.seeds} fresh seeds the TTE' "
                    f"\"helps\" is **{helps.verdict}** ({helps['difference (95 % CI)']} COCO points against "
                    f"{helps['smallest effect of interest']}) and \"is used\" is **{used.verdict}** "
                    f"({used['difference (95 % CI)']})")
    if not df.empty:
        used = long_rows(params, df).iloc[0]
        share = results.runs_of(df, TTE_AFTER_LS)
        bits.append(f"with the whole model trained to the thesis's summed learning rate ({len(share)} seed pairs"
                    f"{'' if len(share) >= len(THESIS_LR_SUM.seeds_for(params.preset)) else ' so far'}), the TTE's "
                    f"share of the shared block's input is {share[TTE_SHARE_IMAGE].mean() * 100:.2f} % (images) and "
                    f"{share[TTE_SHARE_TEXT].mean() * 100:.2f} % (captions), and removing it moves COCO by "
                    f"{used['difference (95 % CI)']} ({used.verdict})")
        confirm = confirmation(params)
        if confirm is not None:
            helps, used = confirm.iloc[0], confirm.iloc[1]
            bits.append(f"its confirmation on {helps.seeds} fresh seeds finds \"helps\" **{helps.verdict}** "
                        f"({helps['difference (95 % CI)']} COCO points against {helps['smallest effect of interest']}) "
                        f"and \"is used\" **{used.verdict}** ({used['difference (95 % CI)']})")
    if not bits:
        return ""
    return ("At budgets where the TTE can matter, " + "; ".join(bits) + ". What the demo cannot say is how a "
            "768-wide model trained on 3.3 M real pairs uses its TTE.")
