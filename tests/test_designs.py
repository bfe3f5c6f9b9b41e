"""Table 2's fixed-n designs (thesis_lib/study/claims/designs.py), read from the code that declares them: seeds, n,
family, margin, the long schedule's length, where their runs go; and a smoke run of each
through the study's functions."""
import dataclasses
import json

import pytest

from thesis_lib import get_config
from thesis_lib.paths import ROOT
from thesis_lib.training.results import RunPaths
from thesis_lib.study.claims import designs
from thesis_lib.study import reference, runs
from thesis_lib.study.claims.designs import (BUDGET_CONFIRM, LONG_TABLE1, PILOT, THESIS_LR_SUM,
                                                THESIS_LR_SUM_CONFIRM)
from thesis_lib.training.engine import summed_lr, thesis_summed_lr
from thesis_lib.study.runs import designs as design_runs
from thesis_lib.study.claims import paired
from thesis_lib.study import results


def test_the_budget_arm_is_confirmed_on_fresh_seeds_only():
    assert BUDGET_CONFIRM.seeds == tuple(range(4, 24)) and len(BUDGET_CONFIRM.seeds) == 20
    assert not set(BUDGET_CONFIRM.seeds) & set(runs.SEEDS)            # the 4-seed record is not re-used
    assert {c.family for c in BUDGET_CONFIRM.claims} == {BUDGET_CONFIRM.family} and len(BUDGET_CONFIRM.claims) == 2
    assert [c.direction for c in BUDGET_CONFIRM.claims] == [+1, -1]    # helps; removing it costs
    assert BUDGET_CONFIRM.family not in reference.FAMILIES            # no claim of the study reads its runs


def test_the_long_schedule_has_the_thesis_summed_learning_rate():
    t = get_config("demo").train
    steps = designs.long_steps("demo")
    assert summed_lr(dataclasses.replace(t, steps=steps), t.batch_size) >= thesis_summed_lr() > \
        summed_lr(dataclasses.replace(t, steps=steps - 1), t.batch_size)
    assert 9.9 < steps / t.steps < 10 and steps == 5952
    assert dict(THESIS_LR_SUM.overrides_for("demo")) == {"train.steps": steps, "train.keep_every": designs.KEEP_EVERY}
    assert designs.KEEP_EVERY % t.ckpt_every == 0


def test_the_long_schedule_excludes_the_pilot_seed_and_trains_in_two_blocks():
    assert 0 not in THESIS_LR_SUM.seeds and len(THESIS_LR_SUM.seeds) == 8
    assert tuple(s for b in THESIS_LR_SUM.blocks for s in b) == THESIS_LR_SUM.seeds and len(THESIS_LR_SUM.blocks) == 2


def test_the_long_confirmation_is_declared_on_fresh_seeds_with_a_fixed_n():
    """Seeds 9-40 (n 32, fixed), in eight blocks of four pairs; not one seed of the 8-seed record or the pilot;
    "helps" and "is used" one Holm family; the long schedule's overrides and margin (±0.173)."""
    d = THESIS_LR_SUM_CONFIRM
    assert d.seeds == tuple(range(9, 41)) and len(d.seeds) == 32
    assert tuple(s for b in d.blocks for s in b) == d.seeds and {len(b) for b in d.blocks} == {4}
    assert not set(d.seeds) & (set(THESIS_LR_SUM.seeds) | set(PILOT.seeds))
    assert {c.family for c in d.claims} == {d.family} and [c.direction for c in d.claims] == [+1, -1]
    assert [c.contrast for c in d.claims] == [designs.LONG_HELPS.contrast, THESIS_LR_SUM.claims[0].contrast]
    assert d.variants == THESIS_LR_SUM.variants and d.overrides == THESIS_LR_SUM.overrides and not d.shared
    assert designs.margin(d) == designs.margin(THESIS_LR_SUM) == pytest.approx(0.173, abs=5e-4)
    assert d.family not in reference.FAMILIES and designs.has_curves(d)


def test_the_long_table1_trains_its_own_baseline_arm_of_seeds_1_to_4():
    d = LONG_TABLE1
    assert d.seeds == (1, 2, 3, 4) and d.blocks == ((1, 2, 3, 4),) and d.shared == ()
    jobs = design_runs.design_jobs(runs.study_params("demo", need_data=False), d)
    assert sorted((j["variant"], j["seed"]) for j in jobs) == sorted((v, s) for v in d.variants for s in d.seeds)
    assert set(d.variants) == set(reference.grids.TABLE1) and d.overrides == THESIS_LR_SUM.overrides
    assert [c.short for c in d.claims] == ["2 × 2 main effect of skipping the input LayerNorm"]
    assert [c.short for c in d.descriptive] == ["2 × 2 main effect of the TTE before"]
    study = {c.text: c.contrast for c in reference.CLAIMS}          # the 600-step 2 × 2's own contrasts
    assert d.claims[0].contrast == study["2 × 2 main effect of skipping the input LayerNorm"]
    assert d.descriptive[0].contrast == study["2 × 2 main effect of the TTE before"]
    assert designs.margin(d) == designs.margin(THESIS_LR_SUM) and not designs.has_curves(d)


def test_the_pilot_is_declared_at_6000_steps_on_seed_0():
    assert PILOT.seeds == (0,) and PILOT.variants == THESIS_LR_SUM.variants and not PILOT.claims
    assert dict(PILOT.overrides_for("demo")) == {"train.steps": 6000, "train.keep_every": designs.KEEP_EVERY}
    assert 6000 % designs.KEEP_EVERY == 0 and designs.PILOT_STEPS != designs.long_steps("demo")


def test_the_confirmation_power_is_computed_from_the_8_seed_record():
    """From the committed record (seeds 1-8): ≈ 1.00 at a true difference of 0; ≈ 0.87 at 5 % and ≈ 0.78 at 2.5 %
    at the record's mean, each checked against a simulation of the paired TOST (scipy's t); P(equivalent) against
    the same simulation with scipy's t-test not significant."""
    import numpy as np
    from scipy import stats as sps
    p = designs.confirm_power(runs.study_params("demo"))
    assert p["n"] == 32 and p["record_seeds"] == 8 and p["record_sd"] == pytest.approx(0.20, abs=0.01)
    rng, n, m = np.random.default_rng(0), p["n"], p["margin"]
    for delta, alpha, key in ((0.0, 0.05, "power_at_0"), (p["record_mean"], 0.05, "power_at_record"),
                              (p["record_mean"], 0.025, "power_at_record_holm")):
        x = rng.normal(delta, p["record_sd"], (20000, n))
        mean, se = x.mean(1), x.std(1, ddof=1) / np.sqrt(n)
        t = sps.t.ppf(1 - alpha, n - 1)
        simulated = np.mean((mean - t * se > -m) & (mean + t * se < m))
        assert p[key] == pytest.approx(simulated, abs=0.01)
        if alpha == 0.05:                     # P(equivalent): inside, and not significant (scipy's t-test)
            equivalent = np.mean((mean - t * se > -m) & (mean + t * se < m)
                                 & (sps.ttest_1samp(x, 0.0, axis=1).pvalue >= 0.05))
            assert p[key.replace("power", "equivalent")] == pytest.approx(equivalent, abs=0.01)
    assert p["power_at_0"] > 0.99 and 0.83 < p["power_at_record"] < 0.91 and 0.74 < p["power_at_record_holm"] < 0.82


def test_a_design_trains_nothing_where_every_run_has_the_thesis_budget_already(tmp_path, capfd):
    """Where a design means something is the preset's field (``Preset.thesis_budget``), not a list of names."""
    assert [p for p in ("thesis", "demo", "smoke") if THESIS_LR_SUM.runs_at(p)] == ["demo", "smoke"]
    params = runs.study_params("thesis", output_dir=str(tmp_path), need_data=False)
    assert design_runs.run_design(params, BUDGET_CONFIRM) == []
    assert "budget-confirm: nothing to train at thesis" in capfd.readouterr().err
    assert not any(tmp_path.iterdir())


def test_margins_are_fixed_at_the_declaration():
    """The long schedule's from the pilot's baseline (38.2), the budget arm's from the study's seeds 0-3 (the
    committed baseline: ±0.0758); a claim carrying a fixed margin is decided against it whatever its own baseline."""
    assert designs.margin(THESIS_LR_SUM) == pytest.approx(0.3 / 66.3 * 38.2)
    params = runs.study_params("demo")
    assert designs.margin(BUDGET_CONFIRM, designs.study_baseline_mean(params)) == pytest.approx(0.0758, abs=5e-5)
    with pytest.raises(ValueError):
        designs.margin(BUDGET_CONFIRM)
    claims = tuple(dataclasses.replace(c, margin=0.5) for c in BUDGET_CONFIRM.claims)
    df = _frame()
    table = paired.claim_table(df, claims)
    assert set(table[table.role.eq("primary")]["smallest effect of interest"]) == {"±0.50"}


def _frame():
    import pandas as pd
    rows = []
    for s in range(4, 9):
        rows.append({"variant": "baseline", "seed": s, "coco_mean": 20.0 + s, "imagenet_top1": 40.0,
                     "flickr_mean": 30.0})
        rows.append({"variant": designs.BUDGET_VARIANT, "seed": s, "coco_mean": 20.0 + s + 0.01 * s,
                     "imagenet_top1": 40.0, "flickr_mean": 30.0, "removed:coco_mean": 20.0 + s})
    return pd.DataFrame(rows)


def test_design_jobs_go_to_the_design_store_with_its_overrides(tmp_path):
    params = runs.study_params("demo", output_dir=str(tmp_path))
    jobs = design_runs.design_jobs(params, THESIS_LR_SUM, block=2)
    assert {(j["variant"], j["seed"]) for j in jobs} == {(v, s) for v in THESIS_LR_SUM.variants for s in (5, 6, 7, 8)}
    assert all(j["out_dir"] == str(tmp_path / "results" / "_designs" / "thesis-lr-sum") for j in jobs)
    assert all(j["overrides"]["train.steps"] == 5952 for j in jobs)
    shared = design_runs.design_jobs(params, BUDGET_CONFIRM)
    assert {j["variant"] for j in shared} == {designs.BUDGET_VARIANT} and len(shared) == 20   # the baseline's exist


def test_both_designs_run_and_are_decided_at_the_smoke_scale(tmp_path):
    """Smoke: the budget arm's shared baseline runs come from the study's results; the long schedule keeps its
    snapshots and evaluates them into a held-out curve; each design's claims are decided from its own frame."""
    params = runs.study_params("smoke", output_dir=str(tmp_path))
    with pytest.raises(Exception, match="run notebook 03 first"):
        designs.study_baseline_mean(params)
    runs.run_grid(dataclasses.replace(params, seeds=runs.SEEDS + BUDGET_CONFIRM.smoke_seeds), ("baseline",))
    for design in (BUDGET_CONFIRM, THESIS_LR_SUM):
        design_runs.run_design(params, design)
        df = results.design_frame(params, design)
        assert set(df.variant) == set(design.variants) and set(df.seed) == set(design.smoke_seeds)
        table = paired.claim_table(df, designs.claims_of(params, design, descriptive=True))
        assert len(table[table.role.eq("primary")]) == len(design.claims) + (design is THESIS_LR_SUM)
    design_runs.heldout_curves(params, THESIS_LR_SUM)
    curve = results.curves_frame(params, designs.THESIS_LR_SUM)
    steps = get_config("smoke").train.steps * 2
    assert sorted(set(curve.step)) == list(range(3, steps + 1, 3)) and set(curve.seed) == {1, 2}
    result = RunPaths(design_runs.design_params(params, THESIS_LR_SUM).results_root, "smoke", "tte_after_ls", 2).result
    result.rename(result.with_suffix(".hidden"))          # seed 2's TTE' as if still training: its checkpoint only
    assert design_runs.measure_agreement(params, THESIS_LR_SUM)["seeds"] == [1]
    result.with_suffix(".hidden").rename(result)
    import matplotlib.pyplot as plt

    from thesis_lib.study.pages import figures, table2
    from thesis_lib.study import grids
    runs.run_grid(params, grids.TABLE2)
    fig = figures.fig_effect_vs_dose(params, grids.TABLE2)            # the long record among its regimes
    labels = [t.get_text() for ax in fig.axes for t in ax.texts if t.get_gid() == "point_label"]
    plt.close(fig)
    assert sum(label.startswith("summed learning rate, record\n") for label in labels) == 2    # helps, is used
    page = table2.markdown(params)
    assert "confirmed on fresh seeds" in page and "pending (2 of 20 seeds)" not in page     # smoke: n is 2
    assert "Held-out" in table2.overfit_sentence(params) and table2.sentence(params).startswith("At budgets")


def test_the_committed_pilot_reproduces_the_baseline_the_margin_came_from():
    """The pilot (seed 0, 6,000 steps), retrained after its designs: its baseline's COCO retrieval within make
    verify's cross-machine tolerance (one between-seed SD of the long record) of PILOT_BASELINE_COCO."""
    found = designs.pilot_baseline_coco(runs.study_params("demo"))
    assert found is not None, "the pilot's runs belong under results/_designs/thesis-lr-sum-pilot/ (make long)"
    value, tolerance = found
    assert 0.3 < tolerance < 1.0                                  # one SD of the record's COCO, not a blanket
    assert abs(value - designs.PILOT_BASELINE_COCO) <= tolerance


def test_the_agreement_keeps_the_seeds_recorded_before_whose_checkpoints_are_gone(tmp_path):
    import json
    path = tmp_path / "item_agreement.json"
    assert design_runs.merged_agreement(path, {11: {"coco_ir@1": {"phi": 0.5}}}) == {11: {"coco_ir@1": {"phi": 0.5}}}
    path.write_text(json.dumps({"per_seed": {"9": {"coco_ir@1": {"phi": 0.7}}, "11": {"coco_ir@1": {"phi": 0.1}}}}))
    merged = design_runs.merged_agreement(path, {11: {"coco_ir@1": {"phi": 0.5}}, 10: {"coco_ir@1": {"phi": 0.6}}})
    assert (list(merged) == [9, 10, 11] and merged[11]["coco_ir@1"]["phi"] == 0.5
            and merged[9]["coco_ir@1"]["phi"] == 0.7)


def test_the_width_ladders_width_96_is_the_demos_config_and_wider_models_keep_the_head_width():
    """At 96 the ladder's overrides are the demo's own values (its pilot there replays a committed budget-confirm
    seed); at each wider width the model, teacher and stand-ins share it, heads of 24, depths unchanged, and the
    parameters grow by more than the width."""
    import torch
    from thesis_lib.config import get_config
    from thesis_lib.models.emkum import build_model
    demo = get_config("demo", designs.BUDGET_VARIANT)
    assert dict(designs.width_overrides(96)) == {"model.dim": demo.model.dim, "model.num_heads": demo.model.num_heads,
                                                  "teacher.dim": demo.teacher.dim,
                                                  "teacher.num_heads": demo.teacher.num_heads}
    counts = []
    for width in (96,) + designs.LADDER_WIDTHS:
        cfg = get_config("demo", designs.BUDGET_VARIANT, overrides=dict(designs.width_overrides(width)))
        assert cfg.model.dim == cfg.teacher.dim == width and cfg.model.dim // cfg.model.num_heads == 24
        assert (cfg.model.image_depth, cfg.model.text_depth, cfg.teacher.depth) == \
            (demo.model.image_depth, demo.model.text_depth, demo.teacher.depth)
        with torch.device("meta"):
            counts.append(sum(p.numel() for p in build_model(cfg, pretrained=False).parameters()))
    assert all(b > 3 * a for a, b in zip(counts, counts[1:])), counts
    pilots = {d.name: d for d in designs.WIDTH_PILOTS.values()}
    assert set(pilots) <= set(designs.DESIGNS) and pilots["width-96-pilot"].seeds == (4,)
    assert all(designs.has_curves(d) and d.variants == designs.BUDGET for d in pilots.values())


def test_the_width_ladder_is_declared_on_fresh_seeds_with_each_widths_margin_from_its_pilot():
    """Widths 192 and 384, n 16 on seeds no design used before, blocks of four; one Holm family over the two widths'
    primary claims; each width's margin is the thesis's relative effect times its own pilot's baseline, and a width
    whose pilot is not recorded refuses to start."""
    from thesis_lib.errors import ThesisError
    from thesis_lib.metrics import PRIMARY
    from thesis_lib.study import reference
    from thesis_lib.study.claims import sequential
    ladder = designs.WIDTH_LADDER
    assert set(ladder) == set(designs.LADDER_WIDTHS) == {192, 384}
    used = set(range(max(d.looks[-1] for d in sequential.DESIGNS.values())))
    for d in designs.DESIGNS.values():
        if d not in ladder.values():
            used |= set(d.seeds) | set(d.smoke_seeds)
    for width, d in ladder.items():
        assert len(d.seeds) == 16 and not set(d.seeds) & used
        assert sum(d.blocks, ()) == d.seeds and all(len(b) == 4 for b in d.blocks)
        assert d.variants == designs.BUDGET and dict(d.overrides) == dict(designs.width_overrides(width))
        assert [c.family for c in d.claims] == [designs.LADDER_FAMILY]
    assert designs.margin(ladder[192]) == pytest.approx(
        reference.sesoi(reference.AFTER, PRIMARY, designs.WIDTH_PILOT_BASELINE_COCO[192]))
    pilot = json.loads((ROOT / "results/_designs/width-192-pilot/results/demo/baseline/seed0.json").read_text())
    assert designs.WIDTH_PILOT_BASELINE_COCO[192] == pilot["metrics"][PRIMARY]
    if 384 not in designs.WIDTH_PILOT_BASELINE_COCO:
        with pytest.raises(ThesisError, match="width-384-pilot"):
            designs.margin(ladder[384])
