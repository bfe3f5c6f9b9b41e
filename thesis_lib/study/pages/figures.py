"""Every figure by name: ``draw(name, params)`` builds it from code (notation figures) or from the stored results
(the study figures), saves PNG + PDF and returns it. The notebooks call ``draw``; so does

    python -m thesis_lib.study.pages.figures [--preset demo] [--output-dir DIR]      (make figures)

which redraws every figure from ``results/`` alone, without training. Each study figure declares the runs it reads
(``Reads``, in ``FIGURES``); when they have no stored results, or a builder finds no data to draw, ``draw`` raises
``MissingResultsError`` naming the missing runs and writes nothing (the CLI prints it and draws the others).
"""
from __future__ import annotations

import argparse
import sys
import traceback
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable, NamedTuple

import pandas as pd
import torch

from thesis_lib.config import PRESET_SPECS, get_config
from thesis_lib.errors import MissingResultsError, ThesisError
from thesis_lib.metrics import CLAIMED, PRIMARY, TABLE, label
from thesis_lib import notation
from thesis_lib.api import examples
from thesis_lib.models.representations import sincos_2d
from thesis_lib.variants import VARIANT_LABELS
from . import dose, front, forest, gamma, headline, plotting
from .plotting import seeds_text as _seeds
from .. import grids, reference
from ..claims import read

ABLATION_METRICS = {m: label(m) + (" (primary)" if m == PRIMARY else "") for m in CLAIMED}   # panel titles


@dataclass(frozen=True)
class Reads:
    """The runs a study figure is drawn from: a stored result of the selected seeds for every variant of
    ``variants`` (what its builder is given). Empty: a notation figure."""
    variants: tuple = ()


def _steps(params, regime: str | None = None) -> str:
    """The regime of the study's own runs, named for a figure's title: ``600 steps`` (the preset's config) or, given
    a ``regime`` (e.g. ``TTE budget``), ``TTE budget, 600 steps``."""
    steps = f"{get_config(params.preset).train.steps:,} steps"
    return f"{regime}, {steps}" if regime else steps


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when it lies under it (``results/demo``), else as it is."""
    path = Path(path)
    return str(path.relative_to(Path.cwd())) if path.is_absolute() and path.is_relative_to(Path.cwd()) else str(path)


def _missing(what: str, params, lacking=(), needed=()) -> MissingResultsError:
    """The error of a figure that needs ``what`` (e.g. ``results of baseline, tte_before``) of ``params.seeds`` and
    found none of the variants ``lacking``; it says "found none" when they are all of ``needed``, or none is given."""
    found = f"none of {', '.join(lacking)}" if lacking and set(needed) - set(lacking) else "none"
    return MissingResultsError(f"needs {what} ({_seeds(params.seeds)}), found {found} under "
                               f"{_shown(params.results_root / params.preset)}")


def check_results(params, reads: Reads) -> None:
    """Raise ``MissingResultsError`` when a variant ``reads`` needs has no stored result of ``params.seeds`` (by the
    files' presence: the builder reads them, and says so if one is not a result)."""
    needed = reads.variants
    lacking = read.lacking(params, needed)
    if lacking:
        raise _missing(f"results of {', '.join(needed)}", params, lacking, needed)


def _found(data, params, what: str):
    """``data`` (a frame, a dict), or ``MissingResultsError`` saying the figure needs ``what`` when it is empty."""
    if not len(data):
        raise _missing(what, params)
    return data


def _results(params, variants, **kwargs) -> pd.DataFrame:
    """``read.runs`` of ``variants``; ``MissingResultsError`` when none of them has a stored result."""
    return _found(read.runs(params, variants, **kwargs), params, f"results of {', '.join(variants)}")


_TABLES: dict = {}      # the claims table of each params ``main`` draws from: computed once, not once a figure


def claims(params) -> pd.DataFrame:
    """The claims table of ``params`` computed from the result files, as ``results/claims.csv`` holds it: what the
    headline and ``04_effect_vs_dose`` draw."""
    if id(params) in _TABLES:
        return _TABLES[id(params)]
    return read.claims(params)


def _curves(params, variants) -> pd.DataFrame:
    """The training curves (``seed<N>/metrics.jsonl``) of ``variants``, all seeds; ``MissingResultsError`` names the
    variants that have none."""
    frames = {v: read.curves(params, v) for v in variants}
    lacking = [v for v, f in frames.items() if not len(f)]
    if lacking:
        raise _missing(f"the training curves (metrics.jsonl) of {', '.join(variants)}", params, lacking, variants)
    return pd.concat(frames.values())


def _loss_curves(params, variants, what: str, regime: str | None = None):
    """The training losses of ``variants`` (``plotting.loss_curves``), titled ``what`` in its regime."""
    curves = _curves(params, variants)
    return plotting.loss_curves(curves, title=f"{what} ({_steps(params, regime)}, {_seeds(curves.seed.unique())})")


def _bars(params, variants):
    """Table 1's levels: the variants of ``variants`` that have results (``MissingResultsError`` when none has), on
    the seeds every drawn variant has, so that the bars compare the same seeds."""
    df = _results(params, variants, shared=True)
    present = [v for v in variants if v in set(df.variant)]
    return plotting.results_bars(read.levels(df, present, TABLE), {m: label(m) for m in TABLE},
                                 title=f"Table 1's levels ({_steps(params)}, {_seeds(df.seed.unique())}; the paired "
                                       f"differences: 02_table1_forest)")


def _gammas(params, variants) -> dict:
    """seed -> the final LayerScale γ (``seed<N>/layerscale.npy``) of the one variant of ``variants``, for the seeds
    that have one; ``MissingResultsError`` when none has."""
    (variant,) = variants
    return _found(read.gammas(params, variant), params, f"the final LayerScale γ (layerscale.npy) of {variant}")


def _init(params, variants) -> float:
    """γ's initial value in the one variant of ``variants`` (its config's)."""
    return get_config(params.preset, *variants).model.tte.gamma_init


def _eq_notes(frame: pd.DataFrame) -> dict:
    """{equivalence level: whose it is, in a few words} of the rows decided sequentially (their ``looks``): their
    TOST level at the look reached (e.g. 92.08 % at the last look, 24 seeds); the other rows' level is 90 %."""
    return {r["eq_level"]: f"the sequential claim at its {'last ' if len(r['diffs']) >= r['looks'][-1] else ''}look, "
                           f"{len(r['diffs'])} seeds" for _, r in frame.iterrows()
            if r["looks"] and r.get("eq_level") not in (None, "", forest.EQ_LEVEL)}


def _differences(params, variants, family: str, **kwargs) -> pd.DataFrame:
    """``read.differences`` of one declared family of claims; ``MissingResultsError`` when it has no rows."""
    return _found(read.differences(_results(params, variants, claimed=True), family, **kwargs), params,
                  f"results of both arms of a {family} claim, at the same seeds, among {', '.join(variants)}")


def _forest(params, variants, family: str, regime: str | None = None):
    """Paired contrasts of one declared family of claims (mean ± 95 % CI, seeds, margin band, thesis marker), one
    panel per claimed metric, the primary one first; the title names the ``regime`` (``_steps``)."""
    frame = _differences(params, variants, family)
    return forest.forest(frame, title=f"{family}, {_steps(params, regime)}: paired differences to the baseline "
                                      f"({_seed_range(frame)})",
                         primary=label(PRIMARY), eq_notes=_eq_notes(frame))


def fig_confirmation_forest(params, variants):
    """Table 2 on the long schedule's confirmation (fresh seeds 9-40): per-seed paired differences, both claims."""
    frame = read.confirmation(params)
    design = frame.attrs["design"]
    frame = _found(frame, params, f"the runs of {design} (make long DESIGN={design})")
    steps = f"{read.long_steps(params.preset):,} steps"
    return forest.forest(frame, title=_say("confirmation_title", steps, _seed_range(frame)), primary=label(PRIMARY))


def _seed_range(frame: pd.DataFrame) -> str:
    """``4 seeds each`` or ``4 to 24 seeds``: the seeds of a frame's rows."""
    counts = sorted({len(d) for d in frame["diffs"]})
    return f"{counts[0]} seeds each" if len(counts) == 1 else f"{counts[0]} to {counts[-1]} seeds"


def fig_table1_forest(params, variants):
    """Table 1 on the primary metric: its claim (TTE before vs the baseline, decided sequentially) above, the 2 × 2
    (main effects, interaction, the thesis code's Table 1) below, each under its heading; secondary metrics are in
    notebook 02's tables."""
    frame = _differences(params, variants, reference.TABLE1, metrics=(PRIMARY,))
    frame["group"] = [_say("table1_claim_group", looks[0], looks[-1], lines=2) if looks
                      else _say("table1_factorial_group", lines=2) for looks in frame["looks"]]
    return forest.forest(frame, title=_say("table1_title", _steps(params), label(PRIMARY)), primary=None,
                         eq_notes=_eq_notes(frame))


def fig_dose_response(params, variants):
    """Notebook 04's dose-response: γ's initial value (log x) against the paired difference to the baseline, the
    1e-5 arm being the TTE' itself (Table 2's claim), the others the γ-init claims (``reference.DOSE``)."""
    default = get_config(params.preset, grids.TTE_AFTER_LS).model.tte.gamma_init
    frame = _found(read.dose_rows(_results(params, variants, claimed=True), params.preset), params,
                   f"results of both arms of a γ-init claim, at the same seeds, among {', '.join(variants)}")
    frame["tick"] = [forest.dose_tick(d) + ("\nthe TTE'\n(default)" if d == default else "") for d in frame.dose]
    notes = {d: f"({f}'s claim)" for d, f in zip(frame.dose, frame.family) if f != reference.DOSE}
    return forest.dose_response(frame, primary=label(PRIMARY), notes=notes,
                                title=_say("dose_forest_title", _steps(params), _seed_range(frame)))


def _regimes(rows: pd.DataFrame) -> str:
    """The regimes of a claims table's ``rows`` (a regime's name before its first comma) by their steps, in the
    table's order (nearest the thesis's first): ``summed learning rate (5,952 steps), TTE budget and default (600
    steps)``."""
    by_steps: dict = {}
    for name, steps in dict.fromkeys(zip(rows.regime.str.split(",").str[0], rows.steps.astype(int))):
        by_steps.setdefault(steps, []).append(name)
    return ", ".join(f"{' and '.join(names)} ({steps:,} steps)" for steps, names in by_steps.items())


def fig_headline(params, variants):
    table = claims(params)
    frame = _found(headline.frame(table) if len(table) else pd.DataFrame(), params,
                   f"results of both arms of a chapter claim among {', '.join(variants)}")
    return headline.draw(frame, title="\n".join([_say("headline_title", params.preset),
                                                _regimes(table[table.regime.isin(frame.regime)]),
                                                _say("headline_title_3", label(PRIMARY))]))


def fig_dual_encoder_forest(params, variants):
    return forest.forest(read.dual_differences(_results(params, variants)),
                         title=f"notebook 05: dual-encoder use, {_steps(params)} (Holm over the table's rows)")


def fig_effect_vs_dose(params, variants):
    table = claims(params)
    points = _found(dose.frame(table, _init(params, (grids.TTE_AFTER_LS,))) if len(table) else pd.DataFrame(),
                    params, f"results of both arms of a Table 2 claim among {', '.join(variants)}")
    return dose.draw(points, title=_say("effect_vs_dose_title", _regimes(points)))


def _say(macro: str, *args, lines: int = 1) -> str:
    """A title or label from ``templates/figures.j2`` (``lines`` > 1: its macros ``macro``, ``macro_2``, … joined
    by line breaks)."""
    names = [macro] + [f"{macro}_{k}" for k in range(2, lines + 1)]
    return "\n".join(front.say("figures.j2", name, *args) for name in names)


class Figure(NamedTuple):
    build: Callable              # (params, reads.variants) -> matplotlib figure
    reads: Reads = Reads()       # the runs it is drawn from: checked by ``draw``, then given to ``build``


FIGURES = {  # each figure names the variants it reads once: its builder is given them
    "00_patch_grid": Figure(lambda p, v: notation.patch_grid_of(p.preset)),
    "00_positional_similarity": Figure(lambda p, v: notation.positional_similarity(sincos_2d(768, 14), 14)),
    "00_world_strip": Figure(lambda p, v: notation.world_strip(*examples())),
    "00_pre_vs_post_ln": Figure(lambda p, v: notation.pre_vs_post_ln(
        notation.pre_post_ln_scales(PRESET_SPECS[p.preset].drawn_as or p.preset))),
    "01_baseline_curves": Figure(partial(_loss_curves, what="The baseline's training losses"), Reads(("baseline",))),
    "02_table1_forest": Figure(fig_table1_forest, Reads(grids.TABLE1)),
    "02_table1_bars": Figure(_bars, Reads(grids.TABLE1)),
    "03_table2_forest": Figure(partial(_forest, family=reference.TABLE2), Reads(grids.TABLE2)),
    "03_loss_curves": Figure(partial(_loss_curves, what="Table 2's training losses"), Reads(grids.TABLE2)),
    "03_budget_forest": Figure(partial(_forest, family=reference.BUDGET, regime="TTE budget"), Reads(grids.BUDGET)),
    "03_budget_loss_curves": Figure(partial(_loss_curves, what="The TTE' at the thesis's budget: training losses",
                                            regime="TTE budget"), Reads(grids.BUDGET)),
    "04_gamma_histogram": Figure(lambda p, v: gamma.histogram(_gammas(p, v), _init(p, v), VARIANT_LABELS[v[0]],
                                                              _steps(p)), Reads((grids.TTE_AFTER_LS,))),
    "04_gamma_per_channel": Figure(lambda p, v: gamma.per_channel(_gammas(p, v), _init(p, v), VARIANT_LABELS[v[0]],
                                                                  _steps(p)), Reads((grids.TTE_AFTER_LS,))),
    "04_gamma_evolution": Figure(lambda p, v: gamma.evolution(_curves(p, v), _init(p, v), VARIANT_LABELS[v[0]],
                                                              _steps(p)), Reads((grids.TTE_AFTER_LS,))),
    "04_tte_ablation": Figure(lambda p, v: plotting.tte_ablation(
        read.ablation_points(_results(p, v), v, ABLATION_METRICS), v, ABLATION_METRICS,
        title=_say("ablation_title", _steps(p), _steps(p, "TTE budget"))), Reads(grids.TTE_USED)),
    "04_dose_forest": Figure(fig_dose_response, Reads(grids.DOSE_ARMS)),
    "04_confirmation_forest": Figure(fig_confirmation_forest, Reads(grids.TABLE2)),
    "04_effect_vs_dose": Figure(fig_effect_vs_dose, Reads(grids.DOSE_ARMS + grids.BUDGET[1:])),
    "05_dual_encoder_forest": Figure(fig_dual_encoder_forest, Reads(grids.DUAL)),
    "headline": Figure(fig_headline, Reads((grids.BASELINE,))),   # the README's: every chapter claim, thesis = 1
}
REGIME_FIGURES = {   # notebook 03's figures in each of its regimes (grids.TABLE2_REGIMES)
    "600 steps": ("03_table2_forest", "03_loss_curves"),
    "TTE budget": ("03_budget_forest", "03_budget_loss_curves"),
}


def draw(name: str, params):
    """Build figure ``name``, save it (PNG + PDF) under ``params.figures`` and return it; raises as the module says."""
    figure = FIGURES[name]
    check_results(params, figure.reads)
    fig = figure.build(params, figure.reads.variants)
    plotting.save(fig, params.figures, name)
    return fig


def _draw_or_say_why(name: str, params) -> bool:
    """Draw figure ``name`` and print where it went (True), or print why it was skipped (False): a ``ThesisError``
    (runs without results, a result file to fix) as its one-line message, any other error (a bug) with its traceback."""
    import matplotlib.pyplot as plt
    try:
        plt.close(draw(name, params))
    except ThesisError as err:
        print(f"skipped {name}: {err}", file=sys.stderr)
    except Exception:
        traceback.print_exc()
        print(f"skipped {name}: the error above is a bug, please report it", file=sys.stderr)
    else:
        print(f"{params.figures / name}.png/.pdf")
        return True
    plt.close("all")
    return False


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m thesis_lib.study.pages.figures", description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="demo")
    p.add_argument("--seeds", default=None, help=f"default: {list(read.SEEDS)}")
    p.add_argument("--output-dir", default=None)
    p.add_argument("--without", default="", help="comma-separated figures not to draw (e.g. 04_effect_vs_dose where "
                   "the regimes' runs are not wanted)")
    args = p.parse_args(argv)
    without = {n for n in args.without.split(",") if n}
    if without - set(FIGURES):
        p.error(f"no such figure: {', '.join(sorted(without - set(FIGURES)))}")
    try:
        params = read.study_params(args.preset, args.seeds, "cpu", args.output_dir, need_data=False)   # stored results
    except ThesisError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    _TABLES[id(params)] = claims(params)
    try:
        skipped = [name for name in FIGURES if name not in without and not _draw_or_say_why(name, params)]
    finally:
        _TABLES.pop(id(params))
    if skipped:
        print(f"{len(skipped)} of {len(FIGURES)} figures skipped; run the notebooks that train their variants",
              file=sys.stderr)
    return 1 if skipped else 0


if __name__ == "__main__":
    raise SystemExit(main())
