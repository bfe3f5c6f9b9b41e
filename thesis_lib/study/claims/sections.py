"""docs/results.md and the README's opening as data (``pages/report.py`` formats them): the chapter's rows beside the
thesis's, the claims' tables (the declared families, the sequential design, the margin sensitivity, the thesis's
noise, γ, the ablations, the mechanisms), and the values of the sentences under them; the scale of every answer; the
tolerances and the shipped runs ``make verify`` quotes.
"""
from __future__ import annotations

import functools
import math
from types import SimpleNamespace

import pandas as pd

from thesis_lib.config import get_config
from thesis_lib.metrics import CLAIMED, HEADLINE, PRIMARY, PROBE_VECTOR, TABLE, TTE_SHARE, label, short
from thesis_lib.paths import ROOT, results_dir
from thesis_lib.training.results import load_results
from thesis_lib.variants import VARIANT_LABELS
from .. import grids, reference, results, runs
from ..runs.designs import store
from . import designs, mechanisms, paired, sequential, tables, verdicts, verify
from .stats import fmt, paired_difference
from .table import parameters

ALIKE = 0.05   # points: a row this close to the baseline's on every metric gets a note beside the table
SHIPPED_STORE = ROOT / "results" / "_shipped" / "results"   # the shipped models' runs, retrained (api.MODELS)


class Verdicts:
    """The runs a page reads (``df``: the chapter's rows over the study's seeds; ``claimed``: every claimed variant
    over the seeds its claims use, a sequential claim's added seeds included) and, each computed on first use, the
    claim table, the margin sensitivity and the thesis-noise table: what the page's opening (``summary``) and its
    sections both read, once a page."""

    def __init__(self, params):
        self.params = params
        self.df = results.results_frame(params, grids.TTE + grids.CONTROLS)
        self.claimed = paired.claims_frame(params, grids.CLAIMED)

    @functools.cached_property
    def claims(self) -> pd.DataFrame:
        return paired.claim_table(self.claimed)

    @functools.cached_property
    def sensitivity(self) -> pd.DataFrame:
        return verdicts.sensitivity(self.claimed)

    @functools.cached_property
    def noise(self) -> pd.DataFrame:
        return verdicts.thesis_noise(self.claimed,
                                     agreement=results.recorded_agreement(self.params, designs.THESIS_LR_SUM))


def scale(preset: str) -> dict:
    """The scale of every answer, from the config: width, parameters (ours and the thesis's), steps, batch, world,
    test sets."""
    cfg = get_config(preset)
    return {"width": cfg.model.dim, "parameters": parameters(preset, grids.BASELINE),
            "thesis_parameters": parameters("thesis", grids.BASELINE), "steps": cfg.train.steps,
            "batch": cfg.train.batch_size, "pictures": cfg.data.world.n_train, "test_sets": results.eval_items(preset)}


def summary(v: Verdicts) -> dict:
    """The values of docs/results.md's opening (``results_page.j2``'s summary): one line's values per claim, the
    chapter's rows beside the thesis's, the rows that look copied, the thesis's noise and the margin sensitivity
    (``table2_summary``: what Table 2's designs show, for ``read`` to fill in)."""
    params, df = v.params, v.df
    out = {"empty": df.empty, "preset": params.preset, "seeds": sorted(params.seeds), "primary": label(PRIMARY)}
    if df.empty:
        return out
    present = [x for x in grids.TTE if x in set(df.variant)]
    table = tables.summary(df, present).drop(columns="seeds")
    for m in TABLE:
        table[f"thesis: {label(m)}"] = ["/".join("–" if (x := reference.thesis_value(ver, v, m)) is None else f"{x:g}"
                                                 for ver in ("aug", "final")) for v in present]
    out |= {"table": table, "missing": [x for x in grids.TTE if x not in present]}
    if out["missing"]:                              # e.g. one run from the command line: show it, name the rest
        return out
    return out | {"alike": alike(df, present),
                  "lines": [r for family in reference.FAMILIES for r in verdicts.conclusion_rows(v.claimed, family)],
                  "noise": verdicts.thesis_noise_counts(v.noise) if len(v.noise) else None,
                  "sensitivity": verdicts.sensitivity_changed(v.sensitivity) if len(v.sensitivity) else None}


def page(params) -> dict:
    """docs/results.md's data below its opening: ``t`` its tables (frames; "" or None for one without runs), ``s``
    the values of its sentences, ``seq`` the sequential design's; with ``v`` the opening's (``summary``)."""
    computed = Verdicts(params)
    claimed, v = computed.claimed, summary(computed)
    if v["empty"]:
        return {"v": v}
    ablation = tables.ablation_table(claimed, [x for x in grids.TTE_USED if x in set(claimed.variant)])
    design = sequential.TABLE1_PRIMARY
    t = {"claims": paired.family_claims(computed.claims),
         "sequential": pd.DataFrame(sequential.design_table(design)).set_index("look"),
         "sensitivity": computed.sensitivity, "noise": verdicts.shown(computed.noise).set_index("comparison"),
         "factorial": tables.factorial_means(results.results_frame(params, grids.TABLE1)),
         "secondary": paired.family_claims(computed.claims, role="secondary"),
         "precision": tables.precision_table(computed.df).set_index("variant"),
         "ablation": ablation.set_index("variant") if len(ablation) else "",
         "gamma": verdicts.gamma_table(claimed), "why": why(params), "fidelity": fidelity(params),
         **mechanisms_tables(params)}
    s = {"procedure": verdicts.procedure_rows(claimed, design), "worst_ratios": verdicts.WORST_RATIOS,
         "budget": budget(claimed), "travel": verdicts.gamma_travel(claimed)}
    seq = {"claim": design.claim, "looks": design.looks, "naive": sequential.naive_error(design.looks)}
    return {"v": v, "t": t, "s": s, "seq": seq}


def alike(df: pd.DataFrame, variants) -> list[dict]:
    """The rows whose means match the baseline's to within ``ALIKE`` points on every metric (they look like a copied
    row), with how many of their per-seed values differ from the baseline's."""
    metrics = [m for m in TABLE if m in df]                 # a metric no stored result holds is left out
    base = results.runs_of(df, grids.BASELINE).set_index("seed")[metrics]
    notes = []
    for v in [v for v in variants if v != grids.BASELINE]:
        runs_v = results.runs_of(df, v).set_index("seed")[metrics]
        seeds = base.index.intersection(runs_v.index)
        diff = runs_v.loc[seeds] - base.loc[seeds]
        gap = float(diff.mean().abs().max()) if len(seeds) else float("nan")
        if gap < ALIKE:
            notes.append({"variant": VARIANT_LABELS[v], "gap": at_most(gap), "size": diff.size,
                          "differ": int((diff != 0).to_numpy().sum())})
    return notes


def at_most(x: float) -> str:
    """``x`` (≥ 0) rounded up to two significant digits: a bound a reader can quote ("within 0.0042")."""
    if x == 0:
        return "0"
    scale_ = 10 ** (1 - math.floor(math.log10(x)))
    return f"{math.ceil(round(x * scale_, 6)) / scale_:.{max(0, 1 - math.floor(math.log10(x)))}f}"   # not float dust


def why(params) -> pd.DataFrame | str:
    """Notebook 04's two measurements beside the TTE's verdicts: the modality probe on the shared block's input
    without TTE (is the modality decodable there already? decodable is not the same as used), and the TTE's share
    of that input (the γ-init doses' claims are in the claims table)."""
    df = results.results_frame(params, grids.WHY)
    if df.empty or PROBE_VECTOR not in df:
        return ""
    return tables.summary(df, [v for v in grids.WHY if v in set(df.variant)], grids.WHY_METRICS, name=short)


def budget(df: pd.DataFrame) -> dict | None:
    """What the TTE' given the thesis's learning-rate budget shows, from its claim and its γ (``sentences.j2``'s
    ``budget``); None without its runs."""
    sub = results.runs_of(df, grids.BUDGET[1])
    rows = paired.claim_table(df, [c for c in reference.CLAIMS if c.family == reference.BUDGET])
    if not len(sub) or rows.empty:
        return None
    row, thesis = rows[rows.role.eq("primary")].iloc[0], reference.LAYERSCALE["aug"]
    return {"variant": VARIANT_LABELS[grids.BUDGET[1]], "n": len(sub), "sd": sub.gamma_std.mean(),
            "thesis_sd": thesis["std"], "max_sds": (sub.gamma_abs_max / sub.gamma_std).mean(),
            "thesis_max_sds": thesis["max"] / thesis["std"], "image": sub[TTE_SHARE["image"]].mean(),
            "text": sub[TTE_SHARE["text"]].mean(), "verdict": row.verdict, "difference": row["difference (95 % CI)"],
            "margin": row["smallest effect of interest"]}


def fidelity(params) -> pd.DataFrame | str:
    """The thesis's text dropout and weight-decay rule, applied to the baseline (seeds of the study): their
    effect on each metric, paired by seed (results/_ablations/thesis-regularisation)."""
    root = results_dir(runs.ablation_dir(params, runs.ABLATIONS[1]))
    stored = [r for r in load_results(root, params.preset) if r["seed"] in params.seeds] if root.exists() else []
    if not stored:
        return ""
    ours = results.runs_of(results.results_frame(params, (grids.BASELINE,)), grids.BASELINE)
    rows = {}
    for m in CLAIMED:
        mean, half, n = paired_difference({r["seed"]: r["metrics"][m] for r in stored}, dict(zip(ours.seed, ours[m])))
        rows[label(m)] = {"thesis's regularisation − ours (95 % CI)": fmt(mean, half), "seeds": n}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("metric")


def mechanisms_tables(params) -> dict:
    """Notebook 05 (beyond the chapter), when its runs exist: MoME against TTE', the fusion heads."""
    df = results.results_frame(params, grids.DUAL + grids.FUSION)
    if df.empty or "mome" not in set(df.variant):
        return {}
    fusion = [v for v in grids.FUSION if v in set(df.variant)]
    out = {"dual": mechanisms.comparisons(df, grids.DUAL_PAIRS, HEADLINE).set_index("comparison")}
    if fusion:
        out |= {"fusion": tables.summary(df, fusion, grids.FUSION_METRICS),
                "rerank": mechanisms.rerank_gain(df, fusion)}
    return out


def shipped_text(preset: str = "demo") -> str:
    """results/shipped.csv: each shipped model's run, retrained for shipping, against the committed run of the same
    variant and seed in the long confirmation's store (``verify.runs_against``)."""
    committed = store(SimpleNamespace(results_root=ROOT / "results"), designs.THESIS_LR_SUM_CONFIRM) / "results"
    rows = pd.DataFrame(verify.runs_against(SHIPPED_STORE, committed, preset))
    return rows.to_csv(index=False, float_format="%.6g", lineterminator="\n")


def tolerances(preset: str = "demo") -> dict[str, float]:
    """``make verify``'s tolerances on the committed results (docs/reproducibility.md quotes them)."""
    return verify.tolerances(load_results(ROOT / "results", preset))
