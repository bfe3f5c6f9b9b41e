"""Fixed-n designs for Table 2, each declared here, in code, and committed before its first run: its seeds, its
variants, its claims (one Holm family), the primary metric (``metrics.PRIMARY``, COCO retrieval, as everywhere), the
margin, and what a pilot counts for. Their runs are stored apart from the study's (``results/_designs/<name>/``), so
that no claim of ``reference.CLAIMS`` ever reads them.

* ``BUDGET_CONFIRM``: the TTE' at the thesis's learning-rate budget for its parameters (``tte_after_ls_budget``),
  confirmed on fresh seeds 4-23 (n = 20, fixed), paired with the baseline's seeds 4-23 (trained for Table 1's
  sequential design). Its 4-seed verdict on seeds 0-3 (family "TTE' at the thesis's budget") stays the record;
  extending it because its seeds looked good would be optional stopping.
* ``THESIS_LR_SUM``: every parameter trained with the thesis's summed learning rate: the demo's schedule shape with
  the step count whose sum equals the thesis run's (``engine.steps_for_summed_lr``, the function behind the TTE
  budget: 5,952 steps, 9.92 × the demo's 600). Equal summed learning rate on a width-96 model is a rule of thumb for
  "trained as long as the thesis", not the thesis's regime. Baseline and TTE', paired by seed, seeds 1-8 (n = 8,
  fixed) in two blocks of four; the data are the demo world's 20,000 pairs, seen ≈ 38 times (the thesis saw its
  ≈ 3.3 M pairs ≈ 7 times): kept, so that the long run differs from the 600-step one in its length alone; whether it
  overfits is read from held-out curves (COCO retrieval on snapshots at every 1,500 steps, ``heldout_curves``).
  The pilot pair (seed 0, 6,000 steps, trained while the design was written, before it was declared) counts for
  one thing: its baseline's COCO retrieval (38.2) fixes the margin; its seed is excluded.

The margin of each design is fixed at its declaration: the thesis's relative Table 2 effect (``reference.sesoi``,
the smaller of its two versions: +0.45 % of its baseline) times a baseline mean known before the design's runs —
the study's seeds 0-3 at 600 steps (16.76 → ±0.0758), the pilot's 38.2 at the long schedule (→ ±0.173).
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
from dataclasses import dataclass

from thesis_lib.config import PRESET_SPECS, get_config
from thesis_lib.errors import ThesisError
from thesis_lib.metrics import PRIMARY
from thesis_lib.training.results import RunPaths, load_results, read_result
from .. import reference
from ..grids import BASELINE, BUDGET, NOLN, TTE_AFTER_LS, TTE_BEFORE, TTE_BEFORE_NOLN
from ..reference import AFTER, BEFORE, Claim, half, vs
from ..results import contrast_values, design_frame, results_frame
from ..runs import SEEDS, study_params
from ..runs.designs import design_params, heldout_curves, measure_agreement, run_design, store
from .stats import ALPHA, tost_power
from .verify import tolerances

BUDGET_VARIANT = BUDGET[1]                  # the TTE' at the thesis's budget for its parameters
KEEP_EVERY = 1500            # the long schedule's snapshots for its held-out curve (a multiple of ckpt_every, 100)
PILOT_BASELINE_COCO = 38.2   # the pilot's baseline (seed 0, 6,000 steps), COCO retrieval, as first reported
PILOT_STEPS = 6000           # the pilot's length (not the 5,952 the long schedule's rule gives: it was run first)


@dataclass(frozen=True)
class FixedDesign:
    """A family of claims decided once, on ``seeds`` (fixed n), by the rule of docs/decision_rule.md (5 %, Holm
    within the family, TOST at 5 % each side) on the primary metric against a margin fixed here.

    name        its folder under ``results/_designs/`` (the runs it trains; the baseline's of ``shared`` are the
                study's own, read from ``results/<preset>/``)
    claims      the family, in order; each Claim's ``family`` is ``family``
    variants    what it trains, on every seed
    shared      variants whose runs on these seeds are the study's (not retrained here)
    seeds       the seeds the verdicts rest on; ``blocks``: how they are trained, one block per sitting
    margin_rule "study seeds 0-3" (the baseline's mean over the study's seeds at 600 steps) or "pilot" (the pilot's
                baseline: ``PILOT_BASELINE_COCO``), × the thesis's relative effect
    overrides   config fields every run of the design sets (the long schedule's steps, snapshots)
    smoke_seeds the seeds at the smoke scale (a path test, no verdict)
    """
    name: str
    family: str
    claims: tuple
    variants: tuple
    shared: tuple
    seeds: tuple
    blocks: tuple
    margin_rule: str
    overrides: tuple = ()
    smoke_seeds: tuple = (4, 5)
    pilot: str = ""
    descriptive: tuple = ()      # claims shown with the seeds that would decide them, decided by nothing

    def runs_at(self, preset: str) -> bool:     # not where every run has the thesis's budget and length already
        return not PRESET_SPECS[preset].thesis_budget

    def seeds_for(self, preset: str) -> tuple:
        return self.smoke_seeds if PRESET_SPECS[preset].path_test else self.seeds

    def blocks_for(self, preset: str) -> tuple:
        return (self.smoke_seeds,) if PRESET_SPECS[preset].path_test else self.blocks

    def overrides_for(self, preset: str) -> dict:
        """The design's config overrides at ``preset``: the long schedule's step count is computed for the preset's
        own optimiser (at smoke, whose learning rate is tiny, a path test: twice its steps)."""
        out = dict(self.overrides)
        path_test = PRESET_SPECS[preset].path_test
        if out.get("train.steps") == "thesis summed lr" or ("train.steps" in out and path_test):
            out["train.steps"] = long_steps(preset)
        if "train.keep_every" in out and path_test:
            out["train.keep_every"] = get_config(preset).train.ckpt_every     # snapshots at the smoke scale too
        return out


def long_steps(preset: str) -> int:
    """The steps whose summed learning rate equals the thesis run's, for ``preset``'s schedule (demo: 5,952); at the
    smoke scale twice its steps (its summed rate is 1/40,000 of the thesis's: a path test)."""
    from thesis_lib.training.engine import steps_for_summed_lr, thesis_summed_lr
    t = get_config(preset).train
    return 2 * t.steps if PRESET_SPECS[preset].path_test else steps_for_summed_lr(t, t.batch_size, thesis_summed_lr())


BUDGET_CONFIRM_FAMILY = "TTE' at the thesis's budget, confirmatory (seeds 4-23)"
BUDGET_CONFIRM = FixedDesign(
    name="budget-confirm", family=BUDGET_CONFIRM_FAMILY,
    claims=(Claim("TTE after with LayerScale helps, given the thesis's learning-rate budget for the TTE "
                  "(confirmatory)", vs(BUDGET_VARIANT, BASELINE), +1, AFTER, BUDGET_CONFIRM_FAMILY, True,
                  short="TTE after with LayerScale helps"),
            Claim("The TTE' at the thesis's budget is used: removing it at evaluation costs accuracy",
                  vs(BUDGET_VARIANT, BUDGET_VARIANT, "removed"), -1, AFTER, BUDGET_CONFIRM_FAMILY,
                  short="The TTE' at the thesis's budget is used: removing it at evaluation costs accuracy")),
    variants=(BASELINE, BUDGET_VARIANT), shared=(BASELINE,), seeds=tuple(range(4, 24)),
    blocks=(tuple(range(4, 24)),), margin_rule="study seeds 0-3")

LONG_FAMILY = "The whole model at the thesis's summed learning rate"
LONG_HELPS = Claim("At the thesis's summed learning rate, TTE after the encoders with LayerScale helps",
                   vs(TTE_AFTER_LS, BASELINE), +1, AFTER, LONG_FAMILY + " (descriptive)", True)
"""Reported descriptively, with the seeds that would decide it: one seed pair gives no SD, so no n was planned."""
THESIS_LR_SUM = FixedDesign(
    name="thesis-lr-sum", family=LONG_FAMILY,
    claims=(Claim("At the thesis's summed learning rate, the TTE' is used: removing it at evaluation costs accuracy",
                  vs(TTE_AFTER_LS, TTE_AFTER_LS, "removed"), -1, AFTER, LONG_FAMILY, short=reference.USED),),
    variants=(BASELINE, TTE_AFTER_LS), shared=(), seeds=tuple(range(1, 9)), blocks=((1, 2, 3, 4), (5, 6, 7, 8)),
    margin_rule="pilot", overrides=(("train.steps", "thesis summed lr"), ("train.keep_every", KEEP_EVERY)),
    smoke_seeds=(1, 2),
    pilot="seed 0, baseline and TTE' at 6,000 steps: fixes the margin (its baseline's COCO 38.2), nothing else",
    descriptive=(LONG_HELPS,))

PILOT = FixedDesign(
    name="thesis-lr-sum-pilot", family="pilot", claims=(), variants=(BASELINE, TTE_AFTER_LS), shared=(),
    seeds=(0,), blocks=((0,),), margin_rule="pilot",
    overrides=(("train.steps", PILOT_STEPS), ("train.keep_every", KEEP_EVERY)), smoke_seeds=(0,),
    pilot="retrained after the designs it served: its baseline's COCO is checked against PILOT_BASELINE_COCO "
          "(make verify's cross-machine tolerance); neither that constant nor the margin changes with it")

CONFIRM_FAMILY = "The whole model at the thesis's summed learning rate, confirmatory (seeds 9-40)"
CONFIRM_SEEDS = tuple(range(9, 41))
THESIS_LR_SUM_CONFIRM = FixedDesign(
    name="thesis-lr-sum-confirm", family=CONFIRM_FAMILY,
    claims=(Claim("At the thesis's summed learning rate, TTE after the encoders with LayerScale helps (confirmatory)",
                  vs(TTE_AFTER_LS, BASELINE), +1, AFTER, CONFIRM_FAMILY, True, short="TTE after with LayerScale helps"),
            Claim("At the thesis's summed learning rate, the TTE' is used: removing it at evaluation costs accuracy "
                  "(confirmatory)", vs(TTE_AFTER_LS, TTE_AFTER_LS, "removed"), -1, AFTER, CONFIRM_FAMILY,
                  short=reference.USED)),
    variants=(BASELINE, TTE_AFTER_LS), shared=(), seeds=CONFIRM_SEEDS,
    blocks=tuple(CONFIRM_SEEDS[i:i + 4] for i in range(0, len(CONFIRM_SEEDS), 4)), margin_rule="pilot",
    overrides=THESIS_LR_SUM.overrides, smoke_seeds=(9, 10), pilot=THESIS_LR_SUM.pilot)
"""Table 2 confirmed on the long schedule: fresh seeds 9-40 (n = 32, fixed: no look before the last block), the
8-seed record (``THESIS_LR_SUM``, seeds 1-8) reported beside it and never pooled into it."""

LONG_TABLE1_FAMILY = "Table 1 (2 × 2) at the thesis's summed learning rate"
LONG_TABLE1 = FixedDesign(
    name="thesis-lr-sum-table1", family=LONG_TABLE1_FAMILY,
    claims=(Claim("At the thesis's summed learning rate, 2 × 2 main effect of skipping the input LayerNorm",
                  half((NOLN, BASELINE), (TTE_BEFORE_NOLN, TTE_BEFORE)), -1, BEFORE, LONG_TABLE1_FAMILY,
                  short=reference.LN_MAIN_EFFECT),),
    descriptive=(Claim("At the thesis's summed learning rate, 2 × 2 main effect of the TTE before",
                       half(BEFORE, (TTE_BEFORE_NOLN, NOLN)), -1, BEFORE, LONG_TABLE1_FAMILY + " (descriptive)",
                       short=reference.TTE_MAIN_EFFECT),),
    variants=(BASELINE, TTE_BEFORE, NOLN, TTE_BEFORE_NOLN), shared=(), seeds=(1, 2, 3, 4), blocks=((1, 2, 3, 4),),
    margin_rule="pilot", overrides=THESIS_LR_SUM.overrides, smoke_seeds=(1, 2))
"""Table 1's 2 × 2 on the long schedule: all four arms on seeds 1-4 (n = 4, fixed: no seeds added afterwards), each
in this design's own store; the margin is the long schedule's (±0.173). The LayerNorm's main effect is decided; the
TTE's is descriptive, with the seeds that would decide it. Declared anew on 2026-12-07, before its baseline arm's
first run: the three TTE/LayerNorm arms ran on an AMD EPYC (family 25 model 17) on 2026-11-27 and had been paired
with the long record's baselines of seeds 1-4 (``THESIS_LR_SUM``'s store), trained on an Intel Xeon on 2026-11-26;
that cross-machine pairing is replaced by a baseline arm of its own, trained with the same config into this store.
The machine that trains it is recorded in its result files (an AMD EPYC again, of another family where the
original host is not available: docs/results.md says which and compares the two baselines)."""

HEAD_WIDTH = 24              # the demo's head width (96 / 4 heads), kept at every width of the ladder
LADDER_WIDTHS = (192, 384)   # Table 2's budget regime at widths beyond the demo's 96 (a design declared once piloted)


def width_overrides(width: int) -> tuple:
    """The config fields that set one width for the model, the teacher and the pretrained stand-in encoders alike
    (heads of ``HEAD_WIDTH``; depths unchanged): at 96, the demo's own values."""
    heads = width // HEAD_WIDTH
    return (("model.dim", width), ("model.num_heads", heads), ("teacher.dim", width), ("teacher.num_heads", heads))


def width_pilot(width: int) -> FixedDesign:
    """The width ladder's pilot at ``width``: seed 0, the baseline and the TTE' at the thesis's budget for the TTE, 600
    steps, snapshots every 200 for its held-out curve. It fixes that width's margin (its baseline's COCO retrieval)
    and says whether the baseline learns more than at width 96; its seed is excluded from the ladder's. At 96: the
    ladder's code on one committed budget-confirm seed (4), which it must reproduce exactly (``verify.runs_against``).
    """
    return FixedDesign(
        name=f"width-{width}-pilot", family="pilot", claims=(), variants=BUDGET, shared=(),
        seeds=(4,) if width == 96 else (0,), blocks=((4,),) if width == 96 else ((0,),), margin_rule="pilot",
        overrides=width_overrides(width) + (("train.keep_every", 200),), smoke_seeds=(0,),
        pilot="fixes the width's margin from its baseline's COCO retrieval; nothing else")


WIDTH_PILOTS = {w: width_pilot(w) for w in (96,) + LADDER_WIDTHS}

WIDTH_PILOT_BASELINE_COCO = {192: 24.413942337036133}
"""Each ladder width's pilot baseline, COCO retrieval (seed 0, 600 steps), as its result file holds it: the basis of
that width's margin. A width enters here from its committed pilot before its ladder's first run; until it does,
``margin`` refuses and its block does not start (384: its pilot waits for its stand-ins)."""
LADDER_FAMILY = "Table 2 across widths, given the thesis's learning-rate budget for the TTE (seeds 41-56)"
LADDER_SEEDS = tuple(range(41, 57))


def width_ladder(width: int) -> FixedDesign:
    """Table 2 at ``width`` (the width ladder, declared 2026-12-08 before its first run): the baseline and the TTE'
    at the thesis's learning-rate budget for the TTE (600 steps, the budget arm: its TTE share 2.3 % at width 96),
    paired by seed on fresh seeds 41-56 (n = 16, fixed, used by no design before), trained in blocks of four seeds.
    Model, teacher and stand-in encoders at ``width`` (``width_overrides``); learning rates width 96's (neither
    pilot diverged). Primary: "helps" on COCO retrieval against this width's margin (the thesis's relative effect ×
    its pilot's baseline, ``WIDTH_PILOT_BASELINE_COCO``), TOST at 5 % each side, Holm over the two widths (192, 384)
    for significance, as in docs/decision_rule.md. Descriptive: "is used" (removal at evaluation), Flickr and
    ImageNet unadjusted, γ and the TTE's share, and the effect in units of the thesis's against log2 width over
    96 (the budget confirmation, seeds 4-23, the ladder's first rung), 192 and 384 (a fit weighted by each width's
    inverse squared standard error). Limits: 600 steps is a fixed early budget, so a trend may not carry to the long
    schedule; each width has one set of stand-ins, so a verdict holds for those stand-ins."""
    family = f"{LADDER_FAMILY} at width {width}"
    return FixedDesign(
        name=f"width-{width}", family=LADDER_FAMILY,
        claims=(Claim(f"At width {width}, TTE after with LayerScale helps, given the thesis's learning-rate budget "
                      "for the TTE", vs(BUDGET_VARIANT, BASELINE), +1, AFTER, LADDER_FAMILY, True,
                      short=f"TTE after with LayerScale helps, width {width}"),),
        descriptive=(Claim(f"At width {width}, the TTE' at the thesis's budget is used: removing it at evaluation "
                           "costs accuracy", vs(BUDGET_VARIANT, BUDGET_VARIANT, "removed"), -1, AFTER,
                           family + " (descriptive)", short=f"{reference.USED}, width {width}"),),
        variants=BUDGET, shared=(), seeds=LADDER_SEEDS,
        blocks=tuple(LADDER_SEEDS[i:i + 4] for i in range(0, len(LADDER_SEEDS), 4)), margin_rule="width pilot",
        overrides=width_overrides(width), smoke_seeds=(41, 42),
        pilot=f"width-{width}-pilot: seed 0, fixes the margin from its baseline's COCO retrieval; nothing else")


WIDTH_LADDER = {w: width_ladder(w) for w in LADDER_WIDTHS}
DESIGNS = {d.name: d for d in (BUDGET_CONFIRM, THESIS_LR_SUM, PILOT, THESIS_LR_SUM_CONFIRM, LONG_TABLE1,
                               *WIDTH_PILOTS.values(), *WIDTH_LADDER.values())}
REPRODUCED = (BUDGET_CONFIRM.name,)   # trained by notebook 04, so by `make reproduce`; the long schedule by `make long`


def margin(design: FixedDesign, study_baseline_mean: float | None = None) -> float:
    """The design's margin on the primary metric (points), fixed at its declaration (module docstring)."""
    basis = PILOT_BASELINE_COCO if design.margin_rule == "pilot" else study_baseline_mean
    if design.margin_rule == "width pilot":
        width = dict(design.overrides)["model.dim"]
        if width not in WIDTH_PILOT_BASELINE_COCO:
            raise ThesisError(f"design {design.name}: its margin waits for width-{width}-pilot's baseline, recorded "
                              "in WIDTH_PILOT_BASELINE_COCO before the design's first run")
        basis = WIDTH_PILOT_BASELINE_COCO[width]
    if basis is None:
        raise ValueError(f"design {design.name}: its margin needs the baseline's mean over the study's seeds 0-3")
    return reference.sesoi(AFTER, PRIMARY, basis)


def main(argv=None) -> int:
    """``python -m thesis_lib.study.claims.designs NAME [--block K] [--preset P]``: train a design's runs (one block per
    sitting), one line per finished run on the terminal; finished runs are reused, an interrupted one resumes."""
    p = argparse.ArgumentParser(prog="python -m thesis_lib.study.claims.designs",
                                description=main.__doc__.split("\n")[0])
    p.add_argument("name", choices=sorted(DESIGNS))
    p.add_argument("--block", type=int, default=None, help="1-based block of seeds (default: every block)")
    p.add_argument("--preset", default="demo")
    p.add_argument("--device", default="cpu")
    p.add_argument("--output-dir", default=None)
    args = p.parse_args(argv)
    design = DESIGNS[args.name]
    if args.block is not None and not 1 <= args.block <= len(design.blocks_for(args.preset)):
        p.error(f"--block must be 1 … {len(design.blocks_for(args.preset))} for {args.name}")
    params = study_params(args.preset, list(design.seeds_for(args.preset)), args.device, args.output_dir)
    if design.margin_rule == "width pilot":
        print(f"{design.name}: margin ±{margin(design):.4f}")              # refuses before the width's pilot
    if design is THESIS_LR_SUM_CONFIRM:
        print(f"{design.name}: power {confirm_power(params)}")
    results = run_design(params, design, args.block)
    print(f"{design.name}: {len(results)} runs finished under {store(params, design)}")
    if has_curves(design):               # its held-out curves and the paired models' per-item agreement
        heldout_curves(params, design, args.device)
        found = measure_agreement(params, design, args.device)
        print(f"held-out curves written; per-item agreement φ over seeds {found['seeds']}: "
              + ", ".join(f"{k} {v:.3f}" for k, v in found["mean_phi"].items()))
    return 0


def confirm_power(params) -> dict:
    """The confirmation's power, from the 8-seed record (``THESIS_LR_SUM``'s "helps" differences on the primary
    metric): the paired TOST's P(inside the margin), so the verdict equivalent or trivial, with
    ``THESIS_LR_SUM_CONFIRM``'s n at its margin if the true difference is 0, and if it is the record's mean, at 5 %
    (the rule's) and, were the TOST read at Holm's first level too (2.5 %, two claims; the rule applies Holm to
    significance only), at 2.5 %; and P(equivalent), the TOST passing at 5 % with the t-test not significant at an
    unadjusted 5 % (``tost_power``'s ``not_significant_at``), at 0 and at the record's mean."""
    diffs = list(contrast_values(design_frame(params, THESIS_LR_SUM), LONG_HELPS.contrast, PRIMARY).values())
    n, m = len(THESIS_LR_SUM_CONFIRM.seeds_for(params.preset)), margin(THESIS_LR_SUM_CONFIRM)
    if len(diffs) < 2:
        return {"n": n, "margin": m, "record_seeds": len(diffs)}
    sd, mean = statistics.stdev(diffs), statistics.fmean(diffs)
    holm_first = ALPHA / len(THESIS_LR_SUM_CONFIRM.claims)
    return {"n": n, "margin": m, "record_seeds": len(diffs), "record_sd": sd, "record_mean": mean,
            "power_at_0": tost_power(n, 0.0, sd, m, ALPHA), "power_at_record": tost_power(n, mean, sd, m, ALPHA),
            "power_at_record_holm": tost_power(n, mean, sd, m, holm_first),
            "equivalent_at_0": tost_power(n, 0.0, sd, m, ALPHA, ALPHA),
            "equivalent_at_record": tost_power(n, mean, sd, m, ALPHA, ALPHA)}


def pilot_baseline_coco(params) -> tuple[float, float] | None:
    """The retrained pilot's baseline COCO retrieval and ``make verify``'s tolerance for it (``verify.tolerances``
    over the long record's runs: one between-seed SD); None before the pilot's baseline is stored."""
    root = design_params(params, PILOT).results_root
    path = RunPaths(root, params.preset, BASELINE, PILOT.seeds_for(params.preset)[0]).result
    if not path.exists():
        return None
    record = load_results(design_params(params, THESIS_LR_SUM).results_root, params.preset)
    return read_result(path)["metrics"][PRIMARY], tolerances(record)[PRIMARY]


def has_curves(design: FixedDesign) -> bool:
    """Whether the design's runner evaluates held-out curves and the per-item agreement after a block: a pair of the
    baseline and a TTE' with snapshots kept (the long schedule's, the width ladder's pilots)."""
    return design.variants in (THESIS_LR_SUM.variants, BUDGET) and "train.keep_every" in dict(design.overrides)


def study_baseline_mean(params) -> float:
    """The baseline's mean of the primary metric over the study's seeds 0-3 at 600 steps (the margin's basis)."""
    df = results_frame(dataclasses.replace(params, seeds=SEEDS), (BASELINE,))
    if len(df) < len(SEEDS):
        raise ThesisError(f"the margin is fixed from the baseline's seeds {list(SEEDS)} at {params.preset}, and "
                          f"{len(df)} of them are in {params.results_root}: run notebook 03 first")
    return float(df[PRIMARY].mean())


def claims_of(params, design: FixedDesign, descriptive: bool = False) -> tuple:
    """The design's claims with their margin fixed; ``descriptive``: and the long schedule's "helps" (a family of
    its own, decided by nothing: shown with the seeds it would need)."""
    fixed = margin(design, None if design.margin_rule == "pilot" else study_baseline_mean(params))
    claims = design.claims + (design.descriptive if descriptive else ())
    return tuple(dataclasses.replace(c, margin=fixed) for c in claims)


if __name__ == "__main__":
    raise SystemExit(main())
