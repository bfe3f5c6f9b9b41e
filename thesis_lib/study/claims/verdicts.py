"""What the claims' verdicts rest on, computed from the same rows as the claims table (``paired.claim_rows``):

- ``sensitivity``: each primary verdict under other ways of carrying the thesis's effect to our scale (the declared
  margin stays the one that decides);
- ``thesis_noise``: the thesis's own differences against the noise of a single run (test-set sampling, and the seed
  noise the demo measures, carried to the thesis's scale);
- ``conclusions``: one plain line per claim, the template every notebook ends with and the README's summary uses;
- ``gamma_table``: the learned LayerScale γ beside the thesis's, which its "the TTE is used" claim rests on.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
from scipy import stats as sps

from thesis_lib.metrics import TTE_SHARE_IMAGE, TTE_SHARE_TEXT, label
from thesis_lib.variants import VARIANT_LABELS
from .. import grids, reference
from . import sequential
from .stats import decide, fmt, fmt_seeds, outlying_seeds, robust_seeds_needed, seeds_needed, words
from ..results import results_frame, runs_of
from ..runs import Log, run_grid
from .paired import margin_digits, paired_test, primary_row, primary_rows

def sensitivity(df: pd.DataFrame, family: str | None = None) -> pd.DataFrame:
    """One row per primary claim (of ``family``, if given): the contrast's equivalence interval and, under each
    margin convention (``reference.margin_conventions``), the margin and the verdict it gives (same test, same Holm
    p, same levels)."""
    claims, rows = [c for c in reference.CLAIMS if family is None or c.family == family], []
    for r in primary_rows(df, claims):
        t, digits, tost = r["test"], margin_digits(r["margin"]), r["levels"][1]
        row = {"claim": r["claim"].text, "difference (equivalence interval)": fmt(t.mean, t.half(1 - 2 * tost), digits)}
        margins = reference.margin_conventions(r["claim"].margin_from, r["metric"], r["control"])
        for key, margin in margins.items():
            row[key] = "–" if margin is None else f"±{margin:.{digits}f}: " + words(decide(
                t, r["p_adjusted"], r["claim"].direction, margin, *r["levels"]), r["claim"].in_thesis, r["ratio"])
        rows.append(row)
    return pd.DataFrame(rows).set_index("claim")


def sensitivity_changed(table: pd.DataFrame) -> dict:
    """Of ``sensitivity``'s rows: how many, the other conventions' count, and the claims whose verdict changes under
    some other convention (``pages.sentences.sensitivity_note`` says it)."""
    verdict = lambda cell: cell.split(": ", 1)[-1]  # noqa: E731
    others = [c for c in table if c not in ("declared", "difference (equivalence interval)")]   # the other margins
    changed = [claim for claim, row in table.iterrows()
               if any(row[c] != "–" and verdict(row[c]) != verdict(row["declared"]) for c in others)]
    return {"n": len(table), "others": len(others), "changed": changed}

Z_CRIT = float(sps.norm.isf(0.025))            # 1.96: a single difference told from noise at 5 %, two-sided


def shown(table: pd.DataFrame) -> pd.DataFrame:
    """A table without its private columns (``_…``: what the notes count)."""
    return table.drop(columns=[c for c in table if c.startswith("_")])


def thesis_noise(df: pd.DataFrame, variants=None, agreement: dict | None = None) -> pd.DataFrame:
    """Each difference of the thesis's Tables 1-2 (both versions) against the noise of a single run:

    * its test-set SE as two independent samples of the test set (√2 × one model's binomial SE; a retrieval mean's
      six recalls' errors independent … perfectly correlated: the smaller … the larger SE, ``reference.binomial_se``),
      z at the larger SE (the conservative case) … at the smaller (the more favourable of the two unpaired SEs);
    * the paired SE: two models scored on the same items agree item by item, which shrinks the SE of their
      difference by √(1 − φ) (``item_agreement``); φ as measured between paired demo variants (``agreement``:
      {metric: φ}, None: not measured, "–");
    * the seed noise the demo measures for the same paired contrast, carried to the thesis's score on the logit
      scale (the delta method: an SD at score p becomes SD × p_t(1 − p_t) / (p(1 − p)) at p_t), taken from a variant
      that trains (``grids.NOISE_SEED_FROM``: the TTE' barely moves at the demo's budget), added to the larger SE.

    ``variants``: only the differences whose treated row is one of them (a notebook's grid)."""
    rows = []
    for treated, control in [p for p in grids.THESIS_DIFFERENCES if variants is None or p[0] in variants]:
        source = dict(grids.NOISE_SEED_FROM).get(treated, treated)
        for metric in grids.NOISE_METRICS:
            for version in ("aug", "final"):
                a, b = (reference.thesis_value(version, v, metric) for v in (treated, control))
                if a is None or b is None:
                    continue
                low, high = [math.sqrt(2) * x for x in reference.binomial_se(metric, b)]
                seed = _seed_sd(df, source, control, metric, b)
                phi = (agreement or {}).get(metric)
                paired = high * math.sqrt(1 - phi) if phi is not None else math.nan
                both = math.sqrt(high ** 2 + (seed if not math.isnan(seed) else 0.0) ** 2)
                d = a - b
                rows.append({"comparison": f"{treated} − {control}", "metric": label(metric),
                             "version": reference.SOURCES[version].removeprefix("thesis, "), "difference": round(d, 2),
                             "test-set SE": f"{low:.2f}-{high:.2f}",
                             "z, larger … smaller SE": f"{d / high:+.1f} … {d / low:+.1f}",
                             "φ": "–" if phi is None else f"{phi:.2f}",
                             "z, paired (larger SE)": "–" if phi is None else f"{_z(d, paired):+.1f}",
                             "seed SD (carried)": "–" if math.isnan(seed) else f"{seed:.2f} ({source})",
                             "z, larger SE + seeds": "–" if math.isnan(seed) else f"{d / both:+.1f}",
                             "_z_conservative": abs(d) / high, "_z_best": abs(d) / low,
                             "_z_paired": abs(_z(d, paired)),       # nan without φ (paired) or a seed SD (seed)
                             "_z_seeds": math.nan if math.isnan(seed) else abs(d) / both,
                             "_z_seeds_best": abs(d) / math.hypot(low, seed),
                             "_z_seeds_paired": _z(d, math.hypot(paired, seed))})
    return pd.DataFrame(rows)


def _z(d: float, se: float) -> float:
    """d / se; a paired SE of 0 (φ = 1: the two models agree on every item) makes any difference infinitely many SEs
    (0 / 0: nan)."""
    return d / se if se else math.copysign(math.inf, d) if d else math.nan


def _seed_sd(df: pd.DataFrame, treated: str, control: str, metric: str, thesis_control: float) -> float:
    """The demo's paired SD of treated − control over seeds, carried from our control's mean to the thesis's
    control value on the logit scale (nan without both arms' runs)."""
    t = paired_test(df, (treated, "none"), (control, "none"), metric)
    base = df[df.variant.eq(control)][metric] if metric in df else []
    if t.n < 2 or not len(base):
        return math.nan
    ours, theirs = float(base.mean()) / 100, thesis_control / 100
    return t.sd * (theirs * (1 - theirs)) / (ours * (1 - ours))


def thesis_noise_counts(table: pd.DataFrame) -> dict:
    """What one run per variant could show, counted from ``thesis_noise``'s table: how many of the thesis's
    differences clear ``Z_CRIT`` at each standard error (``pages.sentences.thesis_noise_note`` says it)."""
    count = lambda col: int((table[col].dropna() >= Z_CRIT).sum())  # noqa: E731
    both = table.dropna(subset=["_z_seeds_paired"])
    clear = both[both["_z_seeds_paired"].abs() >= Z_CRIT]
    return {"n": len(table), "bar": Z_CRIT, "conservative": count("_z_conservative"), "best": count("_z_best"),
            "paired_n": int(table["_z_paired"].notna().sum()), "paired": count("_z_paired"),
            "seeds_n": int(table["_z_seeds"].notna().sum()), "seeds": count("_z_seeds"),
            "seeds_best": count("_z_seeds_best"), "both_n": len(both),
            "cleared": [{**r[["metric", "comparison", "version", "difference"]].to_dict(), "z": r["_z_seeds_paired"]}
                      for _, r in clear.iterrows()]}

def conclusion_rows(df: pd.DataFrame, family: str) -> list[dict]:
    """One row per claim of ``family``, from the claims' own rows: claim, verdict, difference ± 95 % CI on the
    primary metric, seeds (a sequential claim: its look), and the seeds an open claim would need."""
    rows = []
    for r in primary_rows(df, family=family):
        t, digits = r["test"], margin_digits(r["margin"])
        design = sequential.DESIGNS.get(r["claim"].text)
        need = (fmt_seeds(seeds_needed(t, r["margin"] or 0.0, r["decide_alpha"], r["levels"][1]))
                if r["verdict"] == "undecided" else None)
        rows.append({"claim": r["claim"].text, "verdict": r["verdict"], "words": r["words"],
                     "difference": fmt(t.mean, t.half95, digits), "metric": label(r["metric"]),
                     "margin": f"{r['margin']:.{digits}f}", "n": t.n, "need": need,
                     "look": design.looks.index(t.n) + 1 if design and t.n in design.looks else None,
                     "looks": len(design.looks) if design else None})
    return rows

def sequential_claim(design: sequential.SequentialDesign):
    return next(c for c in reference.CLAIMS if c.text == design.claim)


def run_sequential(params) -> dict:
    """Train the claim's arms block by block, seeds 0 … n − 1 for each look n of Table 1's sequential design at this
    scale (``design.looks_for``), and stop at the first look whose verdict is not undecided (or at the cap); finished
    runs are reused. Prints one line per look to the terminal, not into the notebook (``runs.Log.terminal``); returns
    the last look's seeds and verdict. With ``params.train`` False a later look whose runs are missing is not taken:
    the next block's runs and the command that trains them are printed, and the verdict so far is returned."""
    from thesis_lib.errors import MissingRunsError
    from ..runs import missing_runs
    design = sequential.TABLE1_PRIMARY
    claim = sequential_claim(design)
    for k, n in enumerate(design.looks_for(params.preset)):
        try:
            run_grid(dataclasses.replace(params, seeds=tuple(range(n))), claim.arms_variants)
        except MissingRunsError as missing:
            if k == 0:                            # no verdict yet: the notebook stops, as at any missing run
                raise
            print(f"{claim.text}: look {k + 1} ({n} seeds) is not taken, its runs are not trained; the design stops "
                  f"at look {k}.\n{missing_runs(params, missing.jobs, table1_seeds=n)}")
            break
        df = results_frame(params, grids.CLAIMED, seeds={*range(n), *params.seeds})
        row = next(r for r in primary_rows(df) if r["claim"] == claim)
        Log.terminal(f"{claim.text}: look {k + 1} of {len(design.looks)} ({n} seeds): {row['words']}")
        look = {"seeds": n, "verdict": row["verdict"], "looks": k + 1}
        if row["verdict"] != "undecided":
            break
    return look


def _gamma_row(sub: pd.DataFrame) -> dict:
    """γ's statistics over its channels, averaged over the runs of ``sub`` (one row of ``gamma_table``)."""
    return {"seeds": len(sub), "mean": f"{sub.gamma_mean.mean():.2g}", "SD": f"{sub.gamma_std.mean():.2g}",
            "max |γ|": f"{sub.gamma_abs_max.mean():.2g}",
            "max in SDs": f"{(sub.gamma_abs_max / sub.gamma_std).mean():.1f}",
            "share ‖γ⊙t‖/‖H‖ (image, text)": f"{sub[TTE_SHARE_IMAGE].mean() * 100:.2g} %, "
                                              f"{sub[TTE_SHARE_TEXT].mean() * 100:.2g} %"}


def gamma_table(df: pd.DataFrame, variants=(grids.DOSE[0], grids.BUDGET[1]), per_seed: bool = False) -> pd.DataFrame:
    """The learned TTE LayerScale γ over its channels (mean over seeds; ``per_seed``: each seed's row before it)
    beside the thesis's (``reference.LAYERSCALE``): signed mean, SD, largest |γ|, it in SDs, and the TTE's share of
    the shared block's input. The README's results page and notebook 04 show it."""
    rows = {}
    for v in [v for v in variants if v in set(df.variant)]:
        sub = runs_of(df, v)
        if per_seed:
            rows |= {f"{VARIANT_LABELS[v]}, seed {s}": _gamma_row(sub[sub.seed.eq(s)]) for s in sub.seed}
        rows[VARIANT_LABELS[v] + (", mean over seeds" if per_seed else "")] = _gamma_row(sub)
    for version, name in (("aug", "thesis, Aug 2024 chapter"), ("final", "thesis, final text")):
        t = reference.LAYERSCALE[version]
        rows[name] = {"seeds": 1, "mean": f"{t['mean']:.2g}", "SD": f"{t['std']:.2g}" if "std" in t else "–",
                       "max |γ|": f"{t['max']:.2g}", "max in SDs": f"{t['max'] / t['std']:.0f}" if "std" in t else "–",
                       "share ‖γ⊙t‖/‖H‖ (image, text)": "–"}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("γ after training")


WORST_RATIOS = tuple(float(r) for r in np.geomspace(0.1, 3.0, 13))   # margin / SD over which the worst case is sought
WORST_REPS = 40_000                                                 # simulated procedures per ratio


def procedure_rows(df: pd.DataFrame, design: sequential.SequentialDesign = sequential.TABLE1_PRIMARY) -> dict:
    """What the sequential claim's procedure as run did, computed from its rows: its error rates as run (the first
    look at an unadjusted 5 %, before the design was declared) against the design's own, simulated at the measured
    margin / SD (``sequential.procedure_error``); how far a margin recomputed at every look would have moved; the
    robust seeds to decide and the seeds far out."""
    row = primary_row(df, design.claim)
    if row is None or row["test"].n < 2:
        return {}
    t, margin = row["test"], row["margin"]
    ratio = margin / t.sd_used
    firsts = {"as run": sequential.FIRST_LOOK_AS_RUN, "as declared": None}
    rates = {name: {kind: sequential.procedure_error(design, effect, ratio, first=first)[kind]
                    for kind, effect in (("significant", 0.0), ("equivalent", ratio))}
             for name, first in firsts.items()}
    worst = {name: max((sequential.procedure_error(design, r, r, first=first, reps=WORST_REPS)["equivalent"], r)
                       for r in WORST_RATIOS) for name, first in firsts.items()}
    base = dict(zip(runs_of(df, grids.BASELINE).seed, runs_of(df, grids.BASELINE)[row["metric"]]))
    moving = [reference.sesoi(row["claim"].margin_from, row["metric"], sum(base[s] for s in row["seeds"][:n]) / n)
              for n in design.looks if n <= len(row["seeds"])]
    level, tost = row["decide_alpha"], row["levels"][1]
    return {"claim": design.claim, "seeds": t.n, "margin": margin, "sd": t.sd_used, "rates": rates, "worst": worst,
            "moving_margin": (min(moving), max(moving)),
            "robust": fmt_seeds(robust_seeds_needed(row["diffs"], margin, level, tost)),
            "normal": fmt_seeds(seeds_needed(t, margin, level, tost)),
            "outliers": outlying_seeds(dict(zip(row["seeds"], row["diffs"])))}




def gamma_travel(df: pd.DataFrame) -> list[dict]:
    """How far γ travelled against how far AdamW could move it: a channel whose gradient kept one sign would move by
    about the summed learning rate of its group (``engine.adamw_drift``); γ's mean |γ| over channels (from 1e-5) as a
    share of that sum says how much smaller its steps were (gradients whose sign flips, or not much above AdamW's ε,
    both shrink them; the two are not told apart). One row per variant, with AdamW's ε."""
    from thesis_lib.config import get_config
    from thesis_lib.training.engine import budget_summed_lr, summed_lr, tte_lr_scale
    rows = []
    for v in [v for v in (grids.DOSE[0], grids.BUDGET[1]) if v in set(df.variant)]:
        sub = runs_of(df, v)
        cfg = get_config(str(sub.preset.iloc[0]), v)
        t = cfg.train
        total = summed_lr(t, t.batch_size) * (tte_lr_scale(t, t.batch_size, budget_summed_lr(cfg.model.spec.tte_budget))
                                              or 1.0)
        rows.append({"variant": VARIANT_LABELS[v], "travel": float(sub.gamma_abs_mean.mean()),   # γ₀ = 1e-5
                     "sd": float(sub.gamma_std.mean()), "total": total, "eps": cfg.train.eps})
    return rows
