"""thesis_lib.study.claims.verify on the committed demo results: the tolerance is the pooled between-seed SD, loose
enough for the last-bit drift measured across kernels and tight enough that a run behaving like another seed fails on
every family ``make verify`` retrains; a failure is one line naming run, metric, values and tolerance; a verdict that a
swapped run changes is named."""
import json
import shutil
import statistics

import pytest

from thesis_lib.paths import ROOT
from thesis_lib.study import grids
from thesis_lib.study.claims import verify
from thesis_lib.training.results import RunPaths, load_results, read_jsonl

COMMITTED = ROOT / "results"
LAST_BIT_DRIFT = 0.10    # points: the largest recall difference of 20 demo runs after 600 steps when only the CPU
                         # kernels differed (AVX-512 against AVX2, same code; docs/reproducibility.md)


@pytest.fixture(scope="module")
def committed():
    return load_results(COMMITTED, "demo")


def test_seed_sds_pool_the_variances_within_variants():
    runs = [{"variant": v, "metrics": {"m": x}} for v, xs in (("a", (1.0, 2.0, 4.0)), ("b", (10.0, 11.0)))
            for x in xs]
    pooled = ((3 - 1) * statistics.variance([1.0, 2.0, 4.0]) + (2 - 1) * statistics.variance([10.0, 11.0])) / 3
    assert verify.seed_sds(runs)["m"] == pytest.approx(pooled ** 0.5)
    assert verify.seed_sds(runs[:1]) == {}                                  # one seed: no SD


def test_every_committed_metric_has_a_tolerance_wider_than_last_bit_drift(committed):
    tolerance = verify.tolerances(committed)
    metrics = set().union(*(r["metrics"] for r in committed))
    assert set(tolerance) == metrics
    assert min(tolerance.values()) > 2 * LAST_BIT_DRIFT


def curve(variant, seed):
    return read_jsonl(RunPaths(COMMITTED, "demo", variant, seed).metrics)


@pytest.mark.parametrize("other_seed", [1, 2])
def test_a_run_that_behaves_like_another_seed_fails_on_every_family(committed, other_seed):
    """A change of behaviour as small as the study's noise (seed 1 or 2 standing in for seed 0, curve and metrics) is
    caught: its curve differs from the first logged step on, so it is held to one SD, not read as a fork."""
    tolerance = verify.tolerances(committed)
    runs = {(r["variant"], r["seed"]): r for r in committed}
    for variant in grids.VERIFIED:
        sds = verify.tolerance_sds(curve(variant, 0), curve(variant, other_seed))
        assert sds[0] == verify.TOLERANCE_SDS and "first logged step" in sds[1], (variant, sds)
        assert verify.metric_failures(runs[variant, 0], runs[variant, other_seed], tolerance, sds), variant


def test_a_replay_a_fork_and_a_different_run_are_told_apart_by_the_loss_curve():
    committed = curve("baseline", 0)
    rounded = [dict(row, loss=row["loss"] * (1 + 1e-6)) for row in committed]
    assert verify.fork_step(committed, committed) is None and verify.fork_step(committed, rounded) is None
    assert verify.tolerance_sds(committed, rounded) == (verify.TOLERANCE_SDS, "a replay")
    forked = [dict(row, loss=row["loss"] * (1.04 if row["step"] >= 150 else 1.0)) for row in committed]
    assert verify.fork_step(committed, forked) == 150
    assert verify.tolerance_sds(committed, forked) == (verify.FORKED_SDS, "forked at step 150: a new draw")
    assert verify.tolerance_sds(committed, curve("baseline", 1))[0] == verify.TOLERANCE_SDS
    assert verify.fork_step(committed, committed[:-1]) == committed[-1]["step"]     # a curve cut short departs
    assert verify.tolerance_sds([], committed) == (verify.TOLERANCE_SDS, "no committed curve to compare with")


def test_a_fork_is_held_to_where_two_seeds_of_one_variant_lie(committed):
    """A forked run is a new draw: every pair of committed seeds of each verified family, one read as the other's
    fork, is inside ``FORKED_SDS`` (so an honest fork passes), and a metric moved past it fails with the reason."""
    tolerance = verify.tolerances(committed)
    runs = {(r["variant"], r["seed"]): r for r in committed}
    fork = (verify.FORKED_SDS, "forked at step 150: a new draw")
    for variant in grids.VERIFIED:
        seeds = sorted(s for v, s in runs if v == variant)[:4]
        for a in seeds:
            for b in seeds:
                assert verify.metric_failures(runs[variant, a], runs[variant, b], tolerance, fork) == [], variant
    moved = json.loads(json.dumps(runs["switch_sib", 0]))
    moved["metrics"]["flickr_mean"] += 1.01 * verify.FORKED_SDS * tolerance["flickr_mean"]
    lines = verify.metric_failures(runs["switch_sib", 0], moved, tolerance, fork)
    assert len(lines) == 1 and lines[0].endswith("(4.24 between-seed SD; forked at step 150: a new draw)")


def test_a_metric_beyond_its_tolerance_is_one_line_naming_run_metric_values_and_tolerance(committed):
    tolerance = verify.tolerances(committed)
    run = next(r for r in committed if r["variant"] == "baseline" and r["seed"] == 0)
    assert verify.metric_failures(run, run, tolerance) == []
    moved = json.loads(json.dumps(run))
    moved["metrics"]["coco_mean"] += 1.5 * tolerance["coco_mean"]
    lines = verify.metric_failures(run, moved, tolerance)
    assert len(lines) == 1 and lines[0].startswith("demo/baseline/seed0: coco_mean retrained ")
    assert str(run["metrics"]["coco_mean"]) in lines[0] and f"{tolerance['coco_mean']:.4f}" in lines[0]
    del moved["metrics"]["coco_mean"]
    assert verify.metric_failures(run, moved, tolerance) == ["demo/baseline/seed0: coco_mean was not retrained"]


def test_a_swapped_run_that_changes_a_verdict_is_named(tmp_path):
    """The committed runs swapped for themselves change nothing; a TTE' run made much better flips a verdict."""
    retrained = tmp_path / "retrained" / "demo" / "tte_after_ls"
    retrained.mkdir(parents=True)
    shutil.copyfile(COMMITTED / "demo" / "tte_after_ls" / "seed0.json", retrained / "seed0.json")
    assert verify.changed_verdicts(COMMITTED, tmp_path / "retrained", "demo", tmp_path / "same") == []
    result = json.loads((retrained / "seed0.json").read_text())
    for metric in ("coco_mean", "flickr_mean", "imagenet_top1"):
        result["metrics"][metric] += 30.0
    (retrained / "seed0.json").write_text(json.dumps(result))
    changed = verify.changed_verdicts(COMMITTED, tmp_path / "retrained", "demo", tmp_path / "better")
    assert changed and all(" -> " in line for line in changed)


def test_runs_trained_elsewhere_are_compared_with_the_committed_record(tmp_path):
    """Notebook 03's last cell (make demo): copies of committed runs (with their curves) come back within tolerance
    with every verdict unchanged; one moved by 30 points is named."""
    from types import SimpleNamespace
    for variant in ("baseline", "tte_after_ls_budget"):
        shutil.copytree(COMMITTED / "demo" / variant / "seed0", tmp_path / "demo" / variant / "seed0")
        shutil.copyfile(COMMITTED / "demo" / variant / "seed0.json", tmp_path / "demo" / variant / "seed0.json")
    params = SimpleNamespace(preset="demo", results_root=tmp_path)
    assert verify.against_committed(params) == ("2 of 2 runs within make verify's tolerance of the committed record; "
                                                "every verdict unchanged.")
    moved = json.loads((tmp_path / "demo" / "baseline" / "seed0.json").read_text())
    moved["metrics"]["coco_mean"] += 30.0
    (tmp_path / "demo" / "baseline" / "seed0.json").write_text(json.dumps(moved))
    said = verify.against_committed(params)
    assert said.startswith("1 of 2 runs within") and "demo/baseline/seed0: coco_mean retrained" in said
    assert verify.against_committed(SimpleNamespace(preset="demo", results_root=COMMITTED)).endswith("itself.")


def test_the_tolerances_docs_reproducibility_quotes_are_the_computed_ones(committed):
    """The page's generated sentence (written by ``make figures``) is what the committed results give now."""
    from thesis_lib.study.pages import report, sentences
    text = (ROOT / "docs" / "reproducibility.md").read_text()
    start, end = report.TOLERANCES
    quoted = " ".join(text[text.index(start) + len(start):text.index(end)].split())
    assert quoted == sentences.tolerance_sentence(verify.tolerances(committed)) == report.tolerances_text()
    assert sentences.tolerance_sentence({"coco_mean": 1, "flickr_mean": 2, "imagenet_top1": 3, "coco_ir@1": 0.5}) == (
        "1.00 points for COCO retrieval, 2.00 for Flickr retrieval, 3.00 for ImageNet top-1, and 0.50 for the "
        "smallest (COCO image retrieval R@1)")


def test_the_shipped_models_reproduce_their_committed_runs_within_tolerance():
    """results/shipped.csv is what the shipped runs' result files give beside the committed confirmation runs, and
    every metric of each is within make verify's tolerance."""
    import io

    import pandas as pd
    from thesis_lib.study.pages import report
    assert report.shipped_text() == report.SHIPPED_TABLE.read_text(), "results/shipped.csv is stale: make figures"
    table = pd.read_csv(io.StringIO(report.shipped_text()))
    assert len(table) == 6 and table.within.all() and set(table.variant) == {"baseline", "tte_after_ls"}
