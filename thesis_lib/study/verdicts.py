"""What the claims' verdicts rest on, computed from the same rows as the claims table (``tables._claim_rows``):

- ``sensitivity``: each primary verdict under other ways of carrying the thesis's effect to our scale (the declared
  margin stays the one that decides);
- ``thesis_noise``: the thesis's own differences against the noise of a single run (test-set sampling, and the seed
  noise the demo measures, carried to the thesis's scale);
- ``conclusions``: one plain line per claim, the template every notebook ends with and the README's summary uses;
- ``gamma_table``: the learned LayerScale γ beside the thesis's, which its "the TTE is used" claim rests on.
"""
from __future__ import annotations

import math

import pandas as pd
from scipy import stats as sps

from ..metrics import label
from ..variants import VARIANT_LABELS
from . import grids, reference, sequential
from .stats import decide, fmt, fmt_seeds, seeds_needed, words
from .tables import _claim_rows, _digits, paired_test, runs_of

CONVENTIONS = {"declared": "declared: the smaller relative effect of the two versions",
               "other version": "the other version's relative effect",
               "log-odds": "the same change of log-odds", "error rate": "the same relative change of the error rate"}


def sensitivity(df: pd.DataFrame, claims=reference.CLAIMS, family: str | None = None) -> pd.DataFrame:
    """One row per primary claim (of ``family``, if given): the contrast's equivalence interval and, under each
    margin convention (``reference.margin_conventions``), the margin and the verdict it gives (same test, same Holm
    p, same levels)."""
    claims, rows = [c for c in claims if family is None or c.family == family], []
    for r in [r for r in _claim_rows(df, claims) if r["primary"]]:
        t, digits, tost = r["test"], _digits(r["margin"]), r["levels"][1]
        row = {"claim": r["claim"].text, "difference (equivalence interval)": fmt(t.mean, t.half(1 - 2 * tost), digits)}
        margins = reference.margin_conventions(r["claim"].margin_from, r["metric"], r["control"])
        for key, margin in margins.items():
            verdict = "–" if margin is None else words(
                decide(t, r["p_adjusted"], r["claim"].direction, margin, *r["levels"]), r["claim"].in_thesis, r["ratio"])
            row[key] = "–" if margin is None else f"±{margin:.{digits}f}: {verdict}"
        rows.append(row)
    return pd.DataFrame(rows).set_index("claim")


def sensitivity_note(table: pd.DataFrame) -> str:
    """How many primary verdicts change under some other convention (a sentence made from ``table``)."""
    if table.empty:
        return ""
    verdict = lambda cell: cell.split(": ", 1)[-1]  # noqa: E731
    others = [c for c in CONVENTIONS if c != "declared" and c in table]
    changed = [claim for claim, row in table.iterrows()
               if any(row[c] != "–" and verdict(row[c]) != verdict(row["declared"]) for c in others)]
    if not changed:
        return f"Every one of the {len(table)} primary verdicts is the same under the {len(others)} other conventions."
    return (f"{len(changed)} of the {len(table)} primary verdicts change under some other convention: "
            + "; ".join(changed) + ". The declared convention decides.")


Z_CRIT = float(sps.norm.isf(0.025))            # 1.96: a single difference told from noise at 5 %, two-sided


def shown(table: pd.DataFrame) -> pd.DataFrame:
    """A table without its private columns (``_…``: what the notes count)."""
    return table.drop(columns=[c for c in table if c.startswith("_")])


def thesis_noise(df: pd.DataFrame, variants=None) -> pd.DataFrame:
    """Each difference of the thesis's Tables 1-2 (both versions), its test-set standard error (two models on the
    same-sized test set, taken as independent samples of it; a range for a retrieval mean: its six recalls'
    errors independent … perfectly correlated, ``reference.binomial_se``), z = difference / SE, and the seed
    noise the demo measures for the same contrast (its paired SD relative to our baseline, carried to the
    thesis's baseline) added to it. ``variants``: only the differences whose treated row is one of them (a
    notebook's grid)."""
    rows = []
    for treated, control in [p for p in grids.THESIS_DIFFERENCES if variants is None or p[0] in variants]:
        for metric in grids.NOISE_METRICS:
            for version in ("aug", "final"):
                a = reference.thesis_value(version, treated, metric)
                b = reference.thesis_value(version, control, metric)
                if a is None or b is None:
                    continue
                se = [math.sqrt(2) * x for x in reference.binomial_se(metric, b)]   # low, high
                seed = _seed_sd(df, treated, control, metric, b)
                both = [math.sqrt(x * x + (seed if not math.isnan(seed) else 0.0) ** 2) for x in se]
                d = a - b
                rows.append({"comparison": f"{treated} − {control}", "metric": label(metric),
                             "version": reference.SOURCES[version].removeprefix("thesis, "), "difference": round(d, 2),
                             "test-set SE": f"{se[0]:.2f}-{se[1]:.2f}",
                             "z (test set)": f"{d / se[1]:+.1f} … {d / se[0]:+.1f}",
                             "seed SD (carried)": "–" if math.isnan(seed) else f"{seed:.2f}",
                             "z (test set + seeds)": "–" if math.isnan(seed) else f"{d / both[1]:+.1f} … {d / both[0]:+.1f}",
                             "_z_best": abs(d) / se[0], "_z_seeds_best": math.nan if math.isnan(seed) else abs(d) / both[0]})
    return pd.DataFrame(rows)


def _seed_sd(df: pd.DataFrame, treated: str, control: str, metric: str, thesis_control: float) -> float:
    """The demo's paired SD of treated − control over seeds, relative to our control's mean, × the thesis's
    control value (nan without both arms' runs)."""
    t = paired_test(df, (treated, "none"), (control, "none"), metric)
    base = df[df.variant.eq(control)][metric] if metric in df else []
    if t.n < 2 or not len(base):
        return math.nan
    return t.sd / float(base.mean()) * thesis_control


def thesis_noise_note(table: pd.DataFrame) -> str:
    """What one run per variant could show, counted from ``table``."""
    if table.empty:
        return ""
    n, clear = len(table), int((table["_z_best"] >= Z_CRIT).sum())
    seeds = table["_z_seeds_best"].dropna()
    with_seeds = int((seeds >= Z_CRIT).sum())
    return (f"Of the thesis's {n} differences in Tables 1-2, {clear} exceed{'s' if clear == 1 else ''} {Z_CRIT:.2f} "
            f"test-set standard errors even at the smaller SE; with the seed noise the demo measures for the same "
            f"contrast added ({len(seeds)} of them), {with_seeds} do{'es' if with_seeds == 1 else ''}. One run per "
            "variant tells an effect of this size from noise only where its z clears that bar; elsewhere a single run "
            "cannot tell the thesis's difference from noise.")


def conclusions(df: pd.DataFrame, family: str, claims=reference.CLAIMS) -> list[str]:
    """One line per claim of ``family``, from the claims' own rows: claim: verdict, difference ± 95 % CI on the
    primary metric, seeds (a sequential claim: its look), and the seeds an open claim would need."""
    lines = []
    for r in [r for r in _claim_rows(df, claims) if r["primary"] and r["claim"].family == family]:
        t, digits = r["test"], _digits(r["margin"])
        design = sequential.DESIGNS.get(r["claim"].text)
        seeds = f"{t.n} seeds" + (f", look {design.looks.index(t.n) + 1} of {len(design.looks)}"
                                  if design and t.n in design.looks else "")
        line = (f"{r['claim'].text}: {r['words']}, {fmt(t.mean, t.half95, digits)} points "
                f"(95 % CI) on {label(r['metric'])} against ±{r['margin']:.{digits}f}, {seeds}")
        if r["verdict"] == "inconclusive":
            sig, tost = r["levels"]
            line += f"; {fmt_seeds(seeds_needed(t, r['margin'] or 0.0, sig / r['family_size'], tost))} seeds would decide it"
        lines.append(line)
    return lines


def sequential_claim(design: sequential.SequentialDesign, claims=reference.CLAIMS):
    return next(c for c in claims if c.text == design.claim)


def run_sequential(params, design: sequential.SequentialDesign = sequential.TABLE1_PRIMARY) -> dict:
    """Train the claim's arms block by block, seeds 0 … n − 1 for each look n of the design at this scale
    (``design.looks_for``), and stop at the first look whose verdict is not inconclusive (or at the cap); finished
    runs are reused. Prints one line per look to the terminal, not into the notebook (``runs.Log.terminal``); returns
    the last look's seeds and verdict."""
    import dataclasses

    from .grids import CLAIMED
    from .runs import Log, run_grid
    from .tables import results_frame
    claim = sequential_claim(design)
    looks = design.looks_for(params.preset)
    for k, n in enumerate(looks):
        block = dataclasses.replace(params, seeds=tuple(range(n)))
        run_grid(block, claim.arms_variants)
        df = results_frame(dataclasses.replace(params, seeds=tuple(sorted({*range(n), *params.seeds}))), CLAIMED)
        row = next(r for r in _claim_rows(df, reference.CLAIMS) if r["primary"] and r["claim"] == claim)
        Log.terminal(f"{claim.text}: look {k + 1} of {len(design.looks)} ({n} seeds): {row['words']}")
        if row["verdict"] != "inconclusive":
            break
    return {"seeds": n, "verdict": row["verdict"], "looks": k + 1}


def _gamma_row(sub: pd.DataFrame) -> dict:
    """γ's statistics over its channels, averaged over the runs of ``sub`` (one row of ``gamma_table``)."""
    return {"seeds": len(sub), "mean": f"{sub.gamma_mean.mean():.2g}", "SD": f"{sub.gamma_std.mean():.2g}",
            "max |γ|": f"{sub.gamma_abs_max.mean():.2g}",
            "max in SDs": f"{(sub.gamma_abs_max / sub.gamma_std).mean():.1f}",
            "share ‖γ⊙t‖/‖H‖ (image, text)": f"{sub.tte_ratio_image.mean() * 100:.2g} %, "
                                              f"{sub.tte_ratio_text.mean() * 100:.2g} %"}


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
                       "max |γ|": f"{t['max']:.2g}",
                       "max in SDs": f"{t['max'] / t['std']:.0f}" if "std" in t else "–",
                       "share ‖γ⊙t‖/‖H‖ (image, text)": "–"}
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "γ after training"
    return table
