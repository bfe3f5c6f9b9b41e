"""The README's results block, written from the stored results (never by hand):

    python -m thesis_lib.study.pages.report [--preset demo] [--update-readme]

prints the README's block (the claims table through the first screen's template, ``front``); ``--update-readme``
writes results/claims.csv (the committed results), replaces the block between the ``<!-- results:start -->`` and
``<!-- results:end -->`` markers of README.md and writes docs/results.md, every table the claims rest on.
"""
from __future__ import annotations

import argparse
import functools
from types import SimpleNamespace
import math
import re
import sys

import pandas as pd
import torch

from thesis_lib.cache import write_text_atomic
from thesis_lib.training.results import load_results
from thesis_lib.config import PRESET_SPECS, get_config
from thesis_lib.errors import ThesisError
from thesis_lib.metrics import CLAIMED, HEADLINE, PRIMARY, PROBE_VECTOR, TABLE, TTE_SHARE, label, short
from thesis_lib.models.emkum import build_model
from thesis_lib.paths import ROOT, results_dir
from thesis_lib.variants import VARIANT_LABELS
from . import front, mechanisms, sentences, table2, tables
from .. import grids, reference, results, runs
from ..claims import designs, paired, sequential, verdicts, verify
from ..claims import table as claims_table
from ..claims.stats import fmt, paired_difference
from ..runs.designs import store as _store
from .tables import markdown as _markdown

START, END = "<!-- results:start -->", "<!-- results:end -->"


class _Verdicts:
    """The runs a page reads (``df``: the chapter's rows over the study's seeds; ``claimed``: every claimed variant
    over the seeds its claims use, a sequential claim's added seeds included) and, each computed on first use, the
    claim table, the margin sensitivity and the thesis-noise table: what the page's opening (``_summary``)
    and its sections both read, once a page."""

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


def as_written(params) -> pd.DataFrame:
    """The claims table of ``params``'s results as results/claims.csv would hold it (what every page reads)."""
    return claims_table.read(claims_table.csv_text(claims_table.claims_table(params)))


def scale(preset: str) -> dict:
    """The scale of every answer, from the config: width, parameters (ours and the thesis's), steps, batch, world,
    test sets."""
    cfg = get_config(preset)
    with torch.device("meta"):
        ours, thesis = (sum(p.numel() for p in build_model(get_config(p, "baseline"), pretrained=False).parameters())
                        for p in (preset, "thesis"))
    return {"width": cfg.model.dim, "parameters": ours, "thesis_parameters": thesis, "steps": cfg.train.steps,
            "batch": cfg.train.batch_size, "pictures": cfg.data.world.n_train, "test_sets": results.eval_items(preset)}


def results_markdown(params, table: pd.DataFrame | None = None) -> str:
    """The README's block: the claims table (``claims.table``, as written) through the first screen's template
    (``front``); every line and table behind it is ``results_page``'s (docs/results.md); while a claim's runs are
    missing, the table of what exists and what is missing (``results_page.j2``'s summary)."""
    table = as_written(params) if table is None else table
    if front.complete(table):
        return front.markdown(table, scale(params.preset))
    return _page(summary_only=True, v=_summary(_Verdicts(params))).strip()


def _page(**context) -> str:
    """``templates/results_page.j2`` with ``context``, each prose paragraph joined onto one line (as Markdown reads
    it; tables, lists and headings keep their lines)."""
    text = front.environment().get_template("results_page.j2").render(**context)
    blocks = [b if any(line.startswith(("|", "- ", "#")) for line in b.splitlines()) else " ".join(b.split())
              for b in re.split(r"\n\s*\n", text.strip())]
    return "\n\n".join(b for b in blocks if b.strip()) + "\n"


def _summary(v: _Verdicts) -> dict:
    """The values of docs/results.md's opening (``results_page.j2``'s summary): where the demo disagrees with the
    thesis, one line per claim, what Table 2's designs show, the chapter's rows beside the thesis's."""
    params, df = v.params, v.df
    out = {"empty": df.empty, "preset": params.preset, "seeds": sorted(params.seeds), "primary": label(PRIMARY)}
    if df.empty:
        return out
    present = [x for x in grids.TTE if x in set(df.variant)]
    table = tables.summary(df, present).drop(columns="seeds")
    for m in TABLE:
        table[f"thesis: {label(m)}"] = ["/".join("–" if (x := reference.thesis_value(ver, v, m)) is None else f"{x:g}"
                                                 for ver in ("aug", "final")) for v in present]
    out |= {"table": _markdown(table), "missing": [x for x in grids.TTE if x not in present]}
    if out["missing"]:                              # e.g. one run from the command line: show it, name the rest
        return out
    return out | {"table2": table2.sentence(params), "alike": alike_note(df, present),
                  "lines": [line for family in reference.FAMILIES
                            for line in sentences.conclusions(v.claimed, family)],
                  "noise": sentences.thesis_noise_note(v.noise),
                  "sensitivity": sentences.sensitivity_note(v.sensitivity)}


def results_page(params, table: pd.DataFrame | None = None) -> str:
    """docs/results.md, generated whole (``templates/results_page.j2``): every table the claims rest on; it opens
    with the claims table (``table``, as written; computed from ``params``'s results when None) through its
    template."""
    computed, table = _Verdicts(params), as_written(params) if table is None else table
    claimed, v = computed.claimed, _summary(computed)
    if v["empty"]:
        return _page(summary_only=False, v=v)
    ablation = tables.ablation_table(claimed, [x for x in grids.TTE_USED if x in set(claimed.variant)])
    design = sequential.TABLE1_PRIMARY
    t = {"claims": _markdown(paired.family_claims(computed.claims)),
         "sequential": _markdown(pd.DataFrame(sequential.design_table(design)).set_index("look")),
         "sensitivity": _markdown(computed.sensitivity),
         "noise": _markdown(verdicts.shown(computed.noise).set_index("comparison")),
         "factorial": _markdown(tables.factorial_means(results.results_frame(params, grids.TABLE1))),
         "secondary": _markdown(paired.family_claims(computed.claims, role="secondary")),
         "precision": _markdown(tables.precision_table(computed.df).set_index("variant")),
         "ablation": _markdown(ablation.set_index("variant")) if len(ablation) else "",
         "gamma": _markdown(verdicts.gamma_table(claimed)), "why": why_table(params),
         "fidelity": fidelity_table(params), **mechanisms_tables(params)}
    s = {"procedure": sentences.procedure_note(verdicts.procedure_rows(claimed, design)),
         "budget": budget_sentence(claimed), "travel": sentences.gamma_travel_note(claimed)}
    seq = {"claim": design.claim, "looks": design.looks, "naive": sequential.naive_error(design.looks)}
    return _page(summary_only=False, v=v, t=t, s=s, seq=seq, beside=front.results_beside(table),
                 table2=table2.markdown(params))


ALIKE = 0.05   # points: a row this close to the baseline's on every metric gets a note beside the table


def alike_note(df: pd.DataFrame, variants) -> str:
    """Beside the results table: the rows whose means match the baseline's to within ``ALIKE`` points on every
    metric (they look like a copied row), with how many of their per-seed values differ from the baseline's."""
    metrics = [m for m in TABLE if m in df]                 # a metric no stored result holds is left out
    base = results.runs_of(df, grids.BASELINE).set_index("seed")[metrics]
    notes = []
    for v in [v for v in variants if v != grids.BASELINE]:
        runs = results.runs_of(df, v).set_index("seed")[metrics]
        seeds = base.index.intersection(runs.index)
        diff = runs.loc[seeds] - base.loc[seeds]
        gap = float(diff.mean().abs().max()) if len(seeds) else float("nan")
        if gap < ALIKE:
            notes.append({"variant": VARIANT_LABELS[v], "gap": _at_most(gap), "size": diff.size,
                          "differ": int((diff != 0).to_numpy().sum())})
    return sentences.say("alike", notes) if notes else ""


def _at_most(x: float) -> str:
    """``x`` (≥ 0) rounded up to two significant digits: a bound a reader can quote ("within 0.0042")."""
    if x == 0:
        return "0"
    scale = 10 ** (1 - math.floor(math.log10(x)))
    return f"{math.ceil(round(x * scale, 6)) / scale:.{max(0, 1 - math.floor(math.log10(x)))}f}"   # not float dust


def why_table(params) -> str:
    """Notebook 04's two measurements beside the TTE's verdicts: the modality probe on the shared block's input
    without TTE (is the modality decodable there already? decodable is not the same as used), and the TTE's share
    of that input (the γ-init doses' claims are in the claims table)."""
    df = results.results_frame(params, grids.WHY)
    if df.empty or PROBE_VECTOR not in df:
        return ""
    return _markdown(tables.summary(df, [v for v in grids.WHY if v in set(df.variant)], grids.WHY_METRICS, name=short))


def budget_sentence(df: pd.DataFrame) -> str:
    """What the TTE' given the thesis's learning-rate budget shows, from its claim and its γ."""
    sub = results.runs_of(df, grids.BUDGET[1])
    rows = paired.claim_table(df, [c for c in reference.CLAIMS if c.family == reference.BUDGET])
    if not len(sub) or rows.empty:
        return ""
    row, thesis = rows[rows.role.eq("primary")].iloc[0], reference.LAYERSCALE["aug"]
    return sentences.say("budget", {
        "variant": VARIANT_LABELS[grids.BUDGET[1]], "n": len(sub), "sd": sub.gamma_std.mean(),
        "thesis_sd": thesis["std"], "max_sds": (sub.gamma_abs_max / sub.gamma_std).mean(),
        "thesis_max_sds": thesis["max"] / thesis["std"], "image": sub[TTE_SHARE["image"]].mean(),
        "text": sub[TTE_SHARE["text"]].mean(), "verdict": row.verdict, "difference": row["difference (95 % CI)"],
        "margin": row["smallest effect of interest"]})


def fidelity_table(params) -> str:
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
    return _markdown(pd.DataFrame.from_dict(rows, orient="index").rename_axis("metric"))


def mechanisms_tables(params) -> dict:
    """Notebook 05 (beyond the chapter), when its runs exist: MoME against TTE', the fusion heads."""
    df = results.results_frame(params, grids.DUAL + grids.FUSION)
    if df.empty or "mome" not in set(df.variant):
        return {}
    fusion = [v for v in grids.FUSION if v in set(df.variant)]
    out = {"dual": _markdown(mechanisms.comparisons(df, grids.DUAL_PAIRS, HEADLINE).set_index("comparison"))}
    if fusion:
        out |= {"fusion": _markdown(tables.summary(df, fusion, grids.FUSION_METRICS)),
                "rerank": _markdown(mechanisms.rerank_gain(df, fusion))}
    return out


RESULTS_PAGE = ROOT / "docs" / "results.md"
REPRODUCIBILITY_PAGE = ROOT / "docs" / "reproducibility.md"
TOLERANCES = ("<!-- tolerances:start -->", "<!-- tolerances:end -->")   # its generated sentence (verify.py)


SHIPPED_STORE = ROOT / "results" / "_shipped" / "results"   # the shipped models' runs, retrained (api.MODELS)
SHIPPED_TABLE = ROOT / "results" / "shipped.csv"


def shipped_text(preset: str = "demo") -> str:
    """results/shipped.csv: each shipped model's run, retrained for shipping, against the committed run of the same
    variant and seed in the long confirmation's store (``verify.runs_against``)."""
    committed = _store(SimpleNamespace(results_root=ROOT / "results"), designs.THESIS_LR_SUM_CONFIRM) / "results"
    rows = pd.DataFrame(verify.runs_against(SHIPPED_STORE, committed, preset))
    return rows.to_csv(index=False, float_format="%.6g", lineterminator="\n")


def update_readme(text: str, path=ROOT / "README.md", marks=(START, END), joint: str = "\n") -> None:
    """Replace the block between ``marks`` in ``path`` (the README's results block; any generated block)."""
    readme, (start, end) = path.read_text(), marks
    if start not in readme or end not in readme:
        raise SystemExit(f"{path} has no {start} ... {end} block")
    write_text_atomic(path, re.sub(re.escape(start) + ".*?" + re.escape(end), lambda _: f"{start}{joint}{text}"
                                   f"{joint}{end}", readme, flags=re.S))


def tolerances_text(preset: str = "demo") -> str:
    """``make verify``'s tolerances on the committed results, as docs/reproducibility.md quotes them."""
    return sentences.tolerance_sentence(verify.tolerances(load_results(ROOT / "results", preset)))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m thesis_lib.study.pages.report", description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="demo")
    p.add_argument("--seeds", default=None, help=f"default: {list(runs.SEEDS)}")
    p.add_argument("--output-dir", default=None, help="read OUTPUT_DIR/results instead of the repository's results/")
    p.add_argument("--update-readme", action="store_true", help="also rewrite the README's block and docs/results.md")
    args = p.parse_args(argv)
    try:
        params = runs.study_params(args.preset, args.seeds, "cpu", args.output_dir, need_data=False)
        committed = PRESET_SPECS[args.preset].committed and args.output_dir is None
        table = claims_table.write(params) if args.update_readme and committed else None
        if args.update_readme and committed and SHIPPED_STORE.exists():
            write_text_atomic(SHIPPED_TABLE, shipped_text(args.preset))
        table = as_written(params) if table is None else table
        text, page = results_markdown(params, table), results_page(params, table) if args.update_readme else ""
    except ThesisError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.update_readme:
        update_readme(text)
        write_text_atomic(RESULTS_PAGE, page)
        if committed:                                                         # the committed results' tolerances
            update_readme(tolerances_text(), REPRODUCIBILITY_PAGE, TOLERANCES, joint="")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
