"""The README's results block, written from the stored results (never by hand):

    python -m thesis_lib.study.report [--preset demo] [--update-readme]

prints Table 2 (ours: mean ± 95 % CI over seeds; the thesis's two versions as reference columns), the paired
differences with the verdicts, and the LayerScale statistics; ``--update-readme`` replaces the block between the
``<!-- results:start -->`` and ``<!-- results:end -->`` markers of README.md.
"""
from __future__ import annotations

import argparse
import math
import re
import sys

import pandas as pd

from ..cache import write_text_atomic
from ..errors import ThesisError
from ..paths import ROOT
from ..variants import VARIANT_LABELS
from . import grids, reference, runs, tables
from .stats import fmt, mean_ci

START, END = "<!-- results:start -->", "<!-- results:end -->"
THESIS_CLAIMS = tuple(c.text for c in reference.CLAIMS if c.in_thesis)


def _markdown(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    head = "| " + " | ".join([df.index.name or ""] + cols) + " |"
    sep = "|" + "---|" * (len(cols) + 1)
    def cell(v):
        return str(v).replace("|", "\\|")
    rows = ["| " + " | ".join([cell(i)] + [cell(v) for v in r]) + " |" for i, r in zip(df.index, df.values)]
    return "\n".join([head, sep, *rows])


def results_markdown(params) -> str:
    df = tables.results_frame(params, grids.TTE + grids.CONTROLS)
    if df.empty:
        return f"_No results of the {params.preset} scale yet: run `make reproduce`._"
    seeds = sorted(set(df.seed))
    present = [v for v in grids.TTE if v in set(df.variant)]
    missing = [v for v in grids.TTE if v not in present]
    thesis = {VARIANT_LABELS[v]: {tables.METRIC_LABELS[m]: "/".join(
        "–" if reference.thesis_value(ver, v, m) is None else f"{reference.thesis_value(ver, v, m):g}"
        for ver in ("aug", "final")) for m in tables.TABLE_METRICS} for v in present}
    table = tables.summary(df, present).drop(columns="seeds")
    for m in tables.TABLE_METRICS:
        table[f"thesis: {tables.METRIC_LABELS[m]}"] = [thesis[i][tables.METRIC_LABELS[m]] for i in table.index]
    table.index.name = "variant"
    if missing:                                     # e.g. one run from the command line: show it, name the rest
        return "\n\n".join([f"Scale `{params.preset}`, seeds {seeds}; ours: mean ± 95 % CI over seeds (percent).",
                             _markdown(table), f"No results yet for {', '.join(missing)}: the claims need every "
                             "variant of Table 2 (run notebook 03, or `make reproduce`)."])
    claims = tables.claim_table(tables.results_frame(params, grids.CLAIMED))
    primary = claims[claims.role.eq("primary")].drop(columns=["role", "metric"]).set_index("claim")
    secondary = claims[claims.role.eq("secondary")].drop(columns=["role", "p (Holm, family)", "seeds for 80 % power"])
    ablation = tables.ablation_table(df, [v for v in grids.TTE_USED if v in set(df.variant)])
    ls = tables.runs_of(df, "tte_after_ls")
    gamma = (f"mean γ {fmt(*mean_ci(ls.gamma_mean), 6)}, std {fmt(*mean_ci(ls.gamma_std), 5)}, max "
             f"{fmt(*mean_ci(ls.gamma_max), 5)} (thesis: mean 7.2e-4, std 1.6e-2, max 0.3; final text: mean 2e-4, "
             f"max 0.37; initial value 1e-5)") if len(ls) else ""
    factorial = tables.factorial_means(tables.results_frame(params, grids.TABLE1))
    return "\n\n".join(part for part in [
        disagreements(primary),
        f"Scale `{params.preset}`, seeds {seeds}; ours: mean ± 95 % CI over seeds (percent). Thesis columns: "
        "August 2024 chapter (EMKUM, Data2Vec2 text) / final text (BERT text; docs/sources.md §5); '–' = not reported.",
        _markdown(table),
        alike_note(df, present),
        f"The claims, paired by seed, decided on the primary metric ({tables.METRIC_LABELS[reference.PRIMARY_METRIC]}) "
        "by the rule of `docs/decision_rule.md` (size first: the smallest effect of interest is the thesis's "
        "relative effect carried to our baseline; then Holm within the declared family):",
        _markdown(primary),
        "Table 1 as a 2 × 2 (COCO retrieval, mean ± 95 % CI over seeds; its effects are the Table 1 rows above):",
        _markdown(factorial),
        "Secondary metrics (unadjusted p; their verdicts, in parentheses, decide nothing):",
        _markdown(secondary.set_index("claim")),
        "Precision of the paired differences to the baseline (95 % half-width, points):",
        _markdown(tables.precision_table(df).set_index("variant")),
        "Is the TTE used? Each trained model evaluated with its TTE removed or the type vectors swapped:",
        _markdown(ablation.set_index("variant")) if len(ablation) else "",
        f"Learned TTE LayerScale: {gamma}" if gamma else "", why_markdown(params), mechanisms_markdown(params)]
        if part).strip()


ALIKE = 0.05   # points: a row this close to the baseline's on every metric gets a note beside the table


def alike_note(df: pd.DataFrame, variants) -> str:
    """Beside the results table: the rows whose means match the baseline's to within ``ALIKE`` points on every
    metric (they look like a copied row), with how many of their per-seed values differ from the baseline's."""
    metrics = list(tables.TABLE_METRICS)
    base = tables.runs_of(df, "baseline").set_index("seed")[metrics]
    notes = []
    for v in [v for v in variants if v != "baseline"]:
        runs = tables.runs_of(df, v).set_index("seed")[metrics]
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
            "claims below decide whether that little matters.")


def _at_most(x: float) -> str:
    """``x`` (≥ 0) rounded up to two significant digits: a bound a reader can quote ("within 0.0042")."""
    if x == 0:
        return "0"
    scale = 10 ** (1 - math.floor(math.log10(x)))
    return f"{math.ceil(round(x * scale, 6)) / scale:.{max(0, 1 - math.floor(math.log10(x)))}f}"   # not float dust


def why_markdown(params) -> str:
    """Notebook 04's two measurements of why the TTE does not matter: the modality probe on the shared block's input
    without TTE, and the TTE's share of that input (the γ-init doses' claims are in the claims table)."""
    df = tables.results_frame(params, grids.WHY)
    if df.empty or "probe_accuracy_vector" not in df:
        return ""
    rows = {}
    for v in [v for v in grids.WHY if v in set(df.variant)]:
        sub = tables.runs_of(df, v)
        cell = {"seeds": len(sub)}
        for col, label, digits in (("probe_accuracy_vector", "modality probe, vector (held-out acc. %)", 2),
                                   ("probe_accuracy_norm", "modality probe, norm only (held-out acc. %)", 2),
                                   ("tte_ratio_image", "‖γ⊙t‖/‖H‖ image", 4), ("tte_ratio_text", "‖γ⊙t‖/‖H‖ text", 4)):
            values = sub[col].dropna() if col in sub else []
            cell[label] = fmt(*mean_ci(values), digits) if len(values) else "–"
        rows[VARIANT_LABELS[v]] = cell
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "variant"
    return ("Why the TTE adds nothing here (notebook 04): a linear probe tells a picture's token from a caption's on "
            "the shared block's input with any TTE removed (chance 50 %), and the TTE's share of that input after "
            "training (per token, first 256 COCO-like test items):\n\n" + _markdown(table))


def disagreements(primary: pd.DataFrame) -> str:
    """One plain sentence per claim of the thesis that the demo does not reproduce."""
    lines = []
    for claim, row in primary.iterrows():
        if claim in THESIS_CLAIMS and row.verdict != "reproduced":
            lines.append(f"- **{claim}**: the thesis says so; here it is **{row.verdict}** "
                         f"({row['difference (95 % CI)']} on COCO retrieval against a smallest effect of interest of "
                         f"{row['smallest effect of interest']}; the thesis's effect carried to this scale: "
                         f"{row['thesis effect (carried)']}).")
    return ("Where this scale disagrees with the thesis:\n\n" + "\n".join(lines)) if lines else ""


def mechanisms_markdown(params) -> str:
    """Notebook 05 (beyond the chapter), when its runs exist: MoME against TTE', the fusion heads."""
    from . import mechanisms
    df = tables.results_frame(params, grids.DUAL + grids.FUSION)
    if df.empty or "mome" not in set(df.variant):
        return ""
    fusion = [v for v in grids.FUSION if v in set(df.variant)]
    comparisons = mechanisms.comparisons(df, grids.DUAL_PAIRS, mechanisms.DUAL_METRICS).set_index("comparison")
    parts = ["Beyond the chapter (notebook 05): MoME against TTE' in dual-encoder use, paired by seed (Holm over the table's rows, as in the notebook):",
             _markdown(comparisons)]
    if fusion:
        parts += ["Fusion heads on the Flickr-like test set (pairwise ITM accuracy, chance 50 %; retrieval before "
                  "and after re-ranking the dual encoder's top candidates):",
                  _markdown(tables.summary(df, fusion, mechanisms.FUSION_METRICS)),
                  _markdown(mechanisms.rerank_gain(df, fusion))]
    return "\n\n".join(parts)


def update_readme(text: str, path=ROOT / "README.md") -> None:
    readme = path.read_text()
    if START not in readme or END not in readme:
        raise SystemExit(f"{path} has no {START} ... {END} block")
    write_text_atomic(path, re.sub(re.escape(START) + ".*?" + re.escape(END), lambda _: f"{START}\n{text}\n{END}",
                           readme, flags=re.S))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m thesis_lib.study.report", description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="demo")
    p.add_argument("--seeds", default=None, help=f"default: {list(runs.SEEDS)}")
    p.add_argument("--output-dir", default=None, help="read OUTPUT_DIR/results instead of the repository's results/")
    p.add_argument("--update-readme", action="store_true")
    args = p.parse_args(argv)
    try:
        text = results_markdown(runs.study_params(args.preset, args.seeds, "cpu", args.output_dir, need_data=False))
    except ThesisError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.update_readme:
        update_readme(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
