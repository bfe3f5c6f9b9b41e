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
from . import front, mechanisms, table2, tables
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
    claim table, the margin sensitivity and the thesis-noise table: what the page's opening (``summary_markdown``)
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
    missing, the table of what exists and what is missing (``summary_markdown``)."""
    table = as_written(params) if table is None else table
    return front.markdown(table, scale(params.preset)) if front.complete(table) else summary_markdown(_Verdicts(params))


def summary_markdown(v: _Verdicts) -> str:
    """docs/results.md's opening: where the demo disagrees with the thesis, one line per claim
    (``verdicts.conclusions``), what Table 2's designs show, the chapter's rows beside the thesis's."""
    params, df, claimed = v.params, v.df, v.claimed
    if df.empty:
        return f"_No results of the {params.preset} scale yet: run `make reproduce`._"
    seeds = sorted(params.seeds)
    present = [v for v in grids.TTE if v in set(df.variant)]
    missing = [v for v in grids.TTE if v not in present]
    table = tables.summary(df, present).drop(columns="seeds")
    for m in TABLE:
        table[f"thesis: {label(m)}"] = ["/".join("–" if (x := reference.thesis_value(ver, v, m)) is None else f"{x:g}"
                                                 for ver in ("aug", "final")) for v in present]
    table = _markdown(table)
    if missing:                                     # e.g. one run from the command line: show it, name the rest
        return "\n\n".join([f"Scale `{params.preset}`, seeds {seeds}; ours: mean ± 95 % CI over seeds (percent).",
                             table, f"No results yet for {', '.join(missing)}: the claims need every "
                             "variant of Table 2 (run notebook 03, or `make reproduce`)."])
    lines = [f"- {line}" for family in reference.FAMILIES for line in verdicts.conclusions(claimed, family)]
    return "\n\n".join(part for part in [
        table2.sentence(params),
        f"Every claim, decided on {label(PRIMARY)} by the rule of "
        "`docs/decision_rule.md` (size first, against the thesis's relative effect carried to our baseline):",
        "\n".join(lines),
        verdicts.thesis_noise_note(v.noise) + " " + verdicts.sensitivity_note(v.sensitivity),
        f"Scale `{params.preset}`, seeds {seeds}; ours: mean ± 95 % CI over seeds (percent). Thesis columns: "
        "August 2024 chapter (EMKUM, Data2Vec2 text) / final text (BERT text; docs/sources.md §5); '–' = not reported.",
        table, alike_note(df, present),
        "The sections below hold every table behind these lines: the claims with their intervals and p-values, the "
        "sequential design, the margin conventions, the thesis's differences against their noise, γ, the ablations, "
        "Table 2's designs."]
        if part).strip()


def results_page(params, table: pd.DataFrame | None = None) -> str:
    """docs/results.md, generated whole: every table the claims rest on; it opens with the claims table
    (``table``, as written; computed from ``params``'s results when None) through its template."""
    computed, table = _Verdicts(params), as_written(params) if table is None else table
    df, claimed = computed.df, computed.claimed
    if df.empty:
        return f"_No results of the {params.preset} scale yet: run `make reproduce`._"
    claims, sensitivity, noise = computed.claims, computed.sensitivity, computed.noise
    ablation = tables.ablation_table(claimed, [v for v in grids.TTE_USED if v in set(claimed.variant)])
    design = sequential.TABLE1_PRIMARY
    return "\n\n".join(part for part in [
        "# Results at the demo scale (generated)",
        "Written by `python -m thesis_lib.study.pages.report --update-readme` (`make figures`) from `results/demo/`; "
        "never edited by hand. Who needs it: a reader checking what a verdict in the README rests on.",
        "## The thesis beside us", front.results_beside(table),
        "## Every claim in one line", summary_markdown(computed),
        "## The claims",
        f"Paired by seed, decided on the primary metric ({label(PRIMARY)}) by the "
        "rule of `docs/decision_rule.md`; Holm within each declared family; 'seeds to decide': 80 % power to decide "
        "an open claim if its true difference is 0 when the measured one lies inside the margin (an equivalence "
        "test's planning convention), else at the measured difference; in parentheses the range from the SD's own "
        "95 % interval.",
        _markdown(paired.family_claims(claims)),
        "## Table 1's primary claim, sequentially",
        f"\"{design.claim}\" is decided by a group-sequential design (`thesis_lib/study/claims/sequential.py`): "
        f"looks at {', '.join(map(str, design.looks))} seeds, α spent by the O'Brien-Fleming-type function of Lan & "
        f"DeMets (1983); the nominal levels of each look (testing {len(design.looks)} times at an unadjusted 5 % "
        f"would raise the chance of a false 'significant' to {sequential.naive_error(design.looks) * 100:.0f} %):",
        _markdown(pd.DataFrame(sequential.design_table(design)).set_index("look")),
        "### The procedure as run", verdicts.procedure_note(verdicts.procedure_rows(claimed, design)),
        "## How much the verdicts rest on the margin's convention",
        "The declared margin is the thesis's relative effect (the smaller of its two versions) carried to our "
        "baseline; beside it, the other version's, the same change of log-odds, the same relative change of the "
        "error rate (each: margin, and the verdict it gives):",
        _markdown(sensitivity), verdicts.sensitivity_note(sensitivity),
        "## The thesis's own differences against their noise",
        "Each difference the thesis reports between two single runs; its test-set standard error as two "
        "independent samples of the test set (a range for a retrieval mean: its six recalls' errors independent … "
        "perfectly correlated; every recall taken at the reported mean) and z at the larger SE (conservative) … "
        "the smaller; z paired: the larger SE × √(1 − φ), φ the per-item agreement of two paired demo models "
        "(`thesis_lib/study/runs/item_agreement.py`; the baseline and the TTE' of the long schedule, two models that "
        "differ little, so their φ is the high end for a pair of variants; for a retrieval mean the R@1 items' φ, for "
        "top-5 the top-1 items'); and "
        "the seed noise the demo measures for the same paired contrast, from a variant that trains (the TTE' "
        "rows take TTE after's: the TTE' barely moves at the demo's budget), carried to the thesis's score on the "
        "logit scale and added to the larger SE:",
        _markdown(verdicts.shown(noise).set_index("comparison")),
        verdicts.thesis_noise_note(noise),
        "## Table 1 as a 2 × 2",
        "COCO retrieval, mean ± 95 % CI over the study's seeds; its effects are the Table 1 rows above:",
        _markdown(tables.factorial_means(results.results_frame(params, grids.TABLE1))),
        "## Secondary metrics",
        "Unadjusted p; their verdicts, in parentheses, decide nothing:",
        _markdown(paired.family_claims(claims, role="secondary")),
        "## Precision of the paired differences to the baseline",
        _markdown(tables.precision_table(df).set_index("variant")),
        "## Is the TTE used?",
        "Each trained model evaluated with its TTE removed or the type vectors swapped:",
        _markdown(ablation.set_index("variant")) if len(ablation) else "",
        "## The learned LayerScale γ beside the thesis's",
        _markdown(verdicts.gamma_table(claimed)), budget_sentence(claimed), verdicts.gamma_travel_note(claimed),
        table2.markdown(params),
        why_markdown(params), fidelity_markdown(params), mechanisms_markdown(params)]
        if part).strip() + "\n"


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
            differ = int((diff != 0).to_numpy().sum())
            notes.append(f"{VARIANT_LABELS[v]} matches the baseline to within {_at_most(gap)} points on every metric, "
                         + (f"and {differ} of its {diff.size} per-seed values differ from the baseline's" if differ
                            else f"and all {diff.size} of its per-seed values equal the baseline's"))
    if not notes:
        return ""
    return ("Rows that look alike: " + "; ".join(notes) + ". Paired by seed, a variant starts from the baseline's "
            "weights and sees its batches, so one that changes training little changes the metrics little; the "
            "claims decide whether that little matters.")


def _at_most(x: float) -> str:
    """``x`` (≥ 0) rounded up to two significant digits: a bound a reader can quote ("within 0.0042")."""
    if x == 0:
        return "0"
    scale = 10 ** (1 - math.floor(math.log10(x)))
    return f"{math.ceil(round(x * scale, 6)) / scale:.{max(0, 1 - math.floor(math.log10(x)))}f}"   # not float dust


def why_markdown(params) -> str:
    """Notebook 04's two measurements beside the TTE's verdicts: the modality probe on the shared block's input
    without TTE (is the modality decodable there already? decodable is not the same as used), and the TTE's share
    of that input (the γ-init doses' claims are in the claims table)."""
    df = results.results_frame(params, grids.WHY)
    if df.empty or PROBE_VECTOR not in df:
        return ""
    table = tables.summary(df, [v for v in grids.WHY if v in set(df.variant)], grids.WHY_METRICS, name=short)
    return ("## Two measurements beside the TTE's verdicts (notebook 04)\n\nThe held-out accuracy of a linear probe "
            "telling a picture's token from a caption's on the shared block's input with any TTE removed (chance 50 %; "
            "it shows the modality is decodable there, not that the block uses it), and the TTE's share of that input "
            "after training (per token, first 256 COCO-like test items):\n\n" + _markdown(table))


def budget_sentence(df: pd.DataFrame) -> str:
    """What the TTE' given the thesis's learning-rate budget shows, from its claim and its γ (a template)."""
    sub = results.runs_of(df, grids.BUDGET[1])
    rows = paired.claim_table(df, [c for c in reference.CLAIMS if c.family == reference.BUDGET])
    if not len(sub) or rows.empty:
        return ""
    row = rows[rows.role.eq("primary")].iloc[0]
    thesis = reference.LAYERSCALE["aug"]
    return (f"Given the thesis's summed learning rate for its type vectors and γ ({VARIANT_LABELS[grids.BUDGET[1]]}, "
            f"{len(sub)} seeds), γ's SD over channels ends at {sub.gamma_std.mean():.3g} (thesis {thesis['std']:g}) "
            f"and its largest |γ| at {(sub.gamma_abs_max / sub.gamma_std).mean():.1f} SDs (thesis "
            f"{thesis['max'] / thesis['std']:.0f}); the TTE's share of the shared block's input is "
            f"{sub[TTE_SHARE['image']].mean() * 100:.2f} % for images and {sub[TTE_SHARE['text']].mean() * 100:.2f} % "
            f"for captions. Its claim is **{row.verdict}** ({row['difference (95 % CI)']} on COCO retrieval against "
            f"{row['smallest effect of interest']}). This is what the demo can say about the TTE' at the thesis's "
            "optimisation budget; what it cannot say is how a model trained on 3.3 M real pairs would use it.")


def fidelity_markdown(params) -> str:
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
    return ("## Where the code deliberately differs from the thesis's, measured\n\nThe thesis trains its text path "
            "with dropout 0.1 and decays the type vectors, the text positions and the image CLS (docs/sources.md §9); "
            "ours does neither. The baseline with the thesis's (`model.text_dropout=0.1`, `train.decay_rule=thesis`), "
            "paired by seed with ours:\n\n"
            + _markdown(pd.DataFrame.from_dict(rows, orient="index").rename_axis("metric")))


def mechanisms_markdown(params) -> str:
    """Notebook 05 (beyond the chapter), when its runs exist: MoME against TTE', the fusion heads."""
    df = results.results_frame(params, grids.DUAL + grids.FUSION)
    if df.empty or "mome" not in set(df.variant):
        return ""
    fusion = [v for v in grids.FUSION if v in set(df.variant)]
    comparisons = mechanisms.comparisons(df, grids.DUAL_PAIRS, HEADLINE).set_index("comparison")
    parts = ["## Beyond the chapter (notebook 05)", "MoME against TTE' in dual-encoder use, paired by seed over the "
             "seeds every row's variants have (Holm over the table's rows, as in the notebook):",
             _markdown(comparisons)]
    if fusion:
        parts += ["Fusion heads on the Flickr-like test set (pairwise ITM accuracy, chance 50 %; retrieval before "
                  "and after re-ranking the dual encoder's top candidates):",
                  _markdown(tables.summary(df, fusion, grids.FUSION_METRICS)),
                  _markdown(mechanisms.rerank_gain(df, fusion))]
    return "\n\n".join(parts)


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
    return verify.tolerance_sentence(verify.tolerances(load_results(ROOT / "results", preset)))


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
