"""The study layer on constructed result frames: claims, precision, ablation and the preconditions table."""
import pandas as pd
import pytest

from thesis_lib import study
from thesis_lib.study.reference import CLAIMS, PRIMARY_METRIC

SEEDS = range(5)


def frame(effects: dict, noise=(0.0, 0.1, -0.1, 0.05, -0.05), removed: float = 0.0) -> pd.DataFrame:
    """Per-seed results: the baseline's metrics, and each variant = baseline + its effect (+ a little noise);
    tte_after_ls carries ablation columns 'removed:<metric>' = its own metric + ``removed``."""
    rows = []
    for s in SEEDS:
        base = {"imagenet_top1": 40.0 + s, "coco_mean": 20.0 + s, "flickr_mean": 30.0 + s}
        rows.append({"variant": "baseline", "seed": s, **base})
        for v, e in effects.items():
            m = {k: x + e + noise[s] for k, x in base.items()}
            rows.append({"variant": v, "seed": s, **m, **{f"removed:{k}": x + removed for k, x in m.items()}})
    return pd.DataFrame(rows)


def verdicts(df):
    table = study.claim_table(df)
    primary = table[table.role == "primary"].set_index("claim")
    return primary.verdict.to_dict(), table


def test_claims_reproduced_contradicted_equivalent_inconclusive():
    before, after, used = (c.text for c in CLAIMS)
    v, table = verdicts(frame({"tte_before": -2.0, "tte_after_ls": +2.0}, removed=-1.5))
    assert v == {before: "reproduced", after: "reproduced", used: "reproduced"}
    assert set(table[table.role == "primary"].metric) == {study.METRIC_LABELS[PRIMARY_METRIC]}
    v, _ = verdicts(frame({"tte_before": +2.0, "tte_after_ls": -2.0}, removed=+1.0))
    assert v == {before: "contradicted", after: "contradicted", used: "contradicted"}
    v, _ = verdicts(frame({"tte_before": 0.0, "tte_after_ls": 0.0}, noise=(0.0, 0.01, -0.01, 0.005, -0.005)))
    assert v[before] == v[after] == "equivalent" and v[used] == "equivalent"      # removed = 0 exactly
    v, table = verdicts(frame({"tte_before": 0.0, "tte_after_ls": 0.0}, noise=(0.0, 2.0, -2.0, 1.0, -1.0)))
    assert v[before] == v[after] == "inconclusive"
    primary = table[(table.role == "primary") & (table.claim != used)]
    assert (primary["seeds for 80 % power"] > 5).all()                        # SD 1.6 against a 0.3 effect


def test_holm_decides_only_the_primary_metric():
    df = frame({"tte_before": -2.0, "tte_after_ls": 0.0}, noise=(0.0, 1.0, -1.0, 0.5, -0.5))
    table = study.claim_table(df)
    secondary = table[table.role == "secondary"]
    assert len(secondary) == 2 * len(CLAIMS) and secondary.verdict.str.startswith("(").all()


def test_precision_table_pass_fail():
    tight = study.precision_table(frame({"tte_before": -1.0, "tte_after_ls": 0.5}, noise=(0, 0.1, -0.1, 0.1, -0.1)))
    loose = study.precision_table(frame({"tte_before": -1.0, "tte_after_ls": 0.5}, noise=(0, 2, -2, 1, -1)))
    assert tight["pass"].all() and not loose["pass"].any()


def test_ablation_table():
    df = frame({"tte_after_ls": 1.0}, removed=-0.8)
    table = study.ablation_table(df, ["tte_after_ls"])
    removed = table[table["TTE at evaluation"] == "removed"].iloc[0]
    assert removed["Δ COCO retrieval"].startswith("-0.80") and removed.seeds == 5


@pytest.mark.parametrize("shape_auc,random_gap,top1,ok", [(0.95, 3.0, 45.0, True), (0.6, 3.0, 45.0, False),
                                                        (0.95, 0.0, 45.0, False), (0.95, 3.0, 30.0, False)])
def test_preconditions_pass_and_fail(shape_auc, random_gap, top1, ok):
    teacher = {"held_out_auc_colour": 0.97, "held_out_auc_shape": shape_auc,
               "held_out_auc_colour_scenes": 0.5, "held_out_auc_shape_scenes": 0.5}    # reported, never decide
    pre = pd.DataFrame({"seed": list(SEEDS), "imagenet_top1": [top1 + s * 0.1 for s in SEEDS],
                        "coco_mean": [10.0] * 5, "flickr_mean": [12.0] * 5})
    rnd = pre.copy()
    rnd["imagenet_top1"] = pre.imagenet_top1 - random_gap - pd.Series([0.0, 0.2, -0.2, 0.1, -0.1])
    chance = {"imagenet_top1": 100 / 48, "coco_mean": 0.2, "flickr_mean": 0.6}
    table = study.preconditions(teacher, pre, rnd, chance)
    decided = table["pass"].dropna()
    assert bool(decided.all()) == ok and len(decided) == 6


def test_a_claim_shown_alone_is_corrected_for_the_whole_family():
    df = frame({"tte_before": -0.3, "tte_after_ls": 0.1}, noise=(0.0, 0.2, -0.2, 0.1, -0.1), removed=-0.05)
    p_all = study.claim_table(df).set_index(["claim", "role"])["p (Holm)"]
    alone = study.claim_table(df[df.variant != "tte_after_ls"]).set_index(["claim", "role"])["p (Holm)"]
    key = (CLAIMS[0].text, "primary")
    assert alone[key] >= p_all[key] and alone[key] > 0


def test_parallel_one_thread_runs_equal_an_in_process_one_thread_run(tmp_path, monkeypatch):
    """The study trains on CPU in worker processes, one thread each; the result is the same as the same run
    trained here (every CPU run computes on one thread), bit for bit, whatever the number of workers."""
    from thesis_lib.training.run import run_experiment
    monkeypatch.setenv("THESIS_WORKERS", "2")
    params = study.study_params("smoke", [0, 1], "cpu", str(tmp_path / "parallel"))
    parallel = study.run_grid(params, ["tte_after_ls"])
    alone = run_experiment("smoke", "tte_after_ls", 1, tmp_path / "alone", "cpu")
    assert [r["seed"] for r in parallel] == [0, 1]
    assert parallel[1]["metrics"] == alone["metrics"]
