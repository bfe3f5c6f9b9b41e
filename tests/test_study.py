"""The study layer on constructed result frames: claims, precision, ablation and the preconditions table."""
import json

import pandas as pd
import pytest

from thesis_lib import study
from thesis_lib.paths import ROOT
from thesis_lib.study.claims import sequential
from thesis_lib.metrics import PRIMARY, label
from thesis_lib.study.reference import CLAIMS
from thesis_lib.study.claims.stats import fmt_p

SEEDS = range(5)


DECLARED_DESIGNS = dict(sequential.DESIGNS)


@pytest.fixture(autouse=True)
def fixed_design(monkeypatch):
    """The verdict rule on five seeds, every claim at the fixed design (Table 1's primary claim is sequential:
    ``test_the_sequential_claim_uses_its_look`` tests that)."""
    monkeypatch.setattr(sequential, "DESIGNS", {})


def frame(effects: dict, noise=(0.0, 0.1, -0.1, 0.05, -0.05), removed: float = 0.0) -> pd.DataFrame:
    """Per-seed results: the baseline's metrics (COCO 20-24, mean 22: the smallest effect of interest of the
    Table 1/2 claims is 0.45 % of it, ≈ 0.10), and each variant = baseline + its effect (+ a little noise);
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


BEFORE, AFTER, USED = CLAIMS[0].text, CLAIMS[5].text, CLAIMS[6].text
QUIET = (0.0, 0.01, -0.01, 0.005, -0.005)


def test_the_five_verdicts():
    v, table = verdicts(frame({"tte_before": -2.0, "tte_after_ls": +2.0}, removed=-1.5))
    assert v[BEFORE] == v[AFTER] == "reproduced in direction, 20 × the thesis's size"      # −2 against ±0.10
    assert v[USED] == "reproduced in direction, 15 × the thesis's size"
    assert set(table[table.role == "primary"].metric) == {label(PRIMARY)}
    v, _ = verdicts(frame({"tte_before": +2.0, "tte_after_ls": -2.0}, removed=+1.0))
    assert (v[BEFORE], v[AFTER], v[USED]) == ("contradicted",) * 3
    v, _ = verdicts(frame({"tte_before": 0.0, "tte_after_ls": 0.0}, noise=QUIET))
    assert (v[BEFORE], v[AFTER], v[USED]) == ("equivalent",) * 3                 # removed = 0 exactly
    v, _ = verdicts(frame({"tte_before": -0.04, "tte_after_ls": +0.04}, noise=QUIET))
    assert v[BEFORE] == v[AFTER] == "trivial"                                   # significant, inside ±0.10
    v, table = verdicts(frame({"tte_before": 0.0, "tte_after_ls": 0.0}, noise=(0.0, 2.0, -2.0, 1.0, -1.0)))
    assert v[BEFORE] == v[AFTER] == "undecided"
    primary = table[(table.role == "primary") & table.claim.isin([BEFORE, AFTER])]
    assert (primary["seeds to decide"].str.split().str[0].astype(int) > 5).all()   # SD 1.6 against a 0.10 effect


def test_the_sequential_claim_uses_its_look(monkeypatch):
    """Table 1's primary claim on 9 seeds: decided on the first 8 (its second look), at that look's levels: an
    effect the fixed design calls reproduced at 5 % is undecided at the look's 0.0002; a large one is not."""
    monkeypatch.setattr(sequential, "DESIGNS", {sequential.TABLE1_PRIMARY.claim: sequential.TABLE1_PRIMARY})
    global SEEDS
    monkeypatch.setitem(globals(), "SEEDS", range(9))
    noise = (0.0, 0.3, -0.3, 0.2, -0.2, 0.1, -0.1, 0.25, 5.0)                 # seed 8 must not count
    v, table = verdicts(frame({"tte_before": -0.3, "tte_after_ls": 0.0}, noise=noise))
    row = table.set_index(["claim", "role"]).loc[(BEFORE, "primary")]
    assert row.seeds == 8 and v[BEFORE] == "undecided" and "TOST α 0.00069" in row["equivalence interval"]
    assert row["_p_unadjusted"] < 0.05
    v, _ = verdicts(frame({"tte_before": -3.0, "tte_after_ls": 0.0}, noise=noise))
    assert v[BEFORE].startswith("reproduced")


def test_the_margin_is_the_thesis_relative_effect_at_our_scale():
    table = study.claim_table(frame({"tte_before": 0.0, "tte_after_ls": 0.0}, noise=QUIET)).set_index(["claim", "role"])
    assert table.loc[(BEFORE, "primary"), "smallest effect of interest"] == f"±{0.3 / 66.3 * 22:.3f}"
    assert table.loc[(BEFORE, "primary"), "thesis effect (carried)"] == f"{-0.3 / 66.3 * 22:+.3f}"


def test_a_difference_below_one_test_item_is_never_significant():
    """Five identical differences: SD 0. Below one caption (100 / (6 · 25,010) ≈ 0.00067 on COCO) p is 1 and
    the verdict equivalent; at two captions the SD used is one caption, so p is finite, not 0 (and Holm over
    Table 1's five claims takes it back)."""
    one = 100 / (6 * 25010)
    v, table = verdicts(frame({"tte_before": -0.5 * one, "tte_after_ls": 0.0}, noise=(0.0,) * 5))
    row = table.set_index(["claim", "role"]).loc[(BEFORE, "primary")]
    assert row["_p_unadjusted"] == 1.0 and row["p (unadjusted)"] == "1.000" and v[BEFORE] == "equivalent"
    _, table = verdicts(frame({"tte_before": -2 * one, "tte_after_ls": 0.0}, noise=(0.0,) * 5))
    row = table.set_index(["claim", "role"]).loc[(BEFORE, "primary")]
    assert 0 < row["_p_unadjusted"] < 0.05                                        # finite: SD floored
    assert row["_p_holm"] == pytest.approx(5 * row["_p_unadjusted"])
    assert row.verdict == ("trivial" if row["_p_holm"] < 0.05 else "equivalent")


def test_holm_decides_only_the_primary_metric_within_declared_families():
    df = frame({"tte_before": -2.0, "tte_after_ls": 0.0}, noise=(0.0, 1.0, -1.0, 0.5, -0.5))
    table = study.claim_table(df)
    secondary = table[table.role == "secondary"]
    assert len(secondary) == 2 * 3 and secondary.verdict.str.startswith("(").all()   # three claims have their arms
    assert secondary["p (Holm, family)"].isna().all() and secondary["_p_holm"].isna().all()
    assert secondary["p (unadjusted)"].notna().all() and secondary["_p_unadjusted"].notna().all()
    primary = table[table.role == "primary"].set_index("claim")
    raw = primary["_p_unadjusted"]                             # Table 1 has 5 declared members, Table 2 has 2
    assert primary.loc[BEFORE, "_p_holm"] == pytest.approx(min(1, 5 * raw[BEFORE]))
    assert primary.loc[AFTER, "_p_holm"] >= raw[AFTER]
    for column, number in (("p (Holm, family)", "_p_holm"), ("p (unadjusted)", "_p_unadjusted")):   # as printed
        assert (primary[column] == primary[number].map(fmt_p)).all()
    assert not any(c.startswith("_") for c in study.family_claims(table).columns)


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


def test_an_adjusted_p_does_not_depend_on_which_notebook_shows_it():
    """Notebook 02 sees only Table 1's arms, the README every arm: the same Holm p for the same claim."""
    df = frame({"tte_before": -0.3, "tte_after_ls": 0.1, "noln": -1.0, "tte_before_noln": -1.2},
               noise=(0.0, 0.2, -0.2, 0.1, -0.1), removed=-0.05)
    p_all = study.claim_table(df).set_index(["claim", "role"])["_p_holm"]
    alone = study.claim_table(df[~df.variant.eq("tte_after_ls")]).set_index(["claim", "role"])["_p_holm"]
    for claim in (c.text for c in CLAIMS if c.family == CLAIMS[0].family):
        assert alone[(claim, "primary")] == p_all[(claim, "primary")]


def test_the_two_by_two_contrasts():
    """Cells 0 / −1 / −1 / −3 (baseline, TTE, no LN, both): TTE main −1.5, LN main −1.5, interaction −1."""
    df = frame({"tte_before": -1.0, "noln": -1.0, "tte_before_noln": -3.0}, noise=(0.0,) * 5)
    table = study.claim_table(df).set_index(["claim", "role"])
    main_tte, main_ln, inter = (c.text for c in CLAIMS[2:5])
    assert table.loc[(main_tte, "primary"), "difference (95 % CI)"].startswith("-1.50")
    assert table.loc[(main_ln, "primary"), "difference (95 % CI)"].startswith("-1.50")
    assert table.loc[(inter, "primary"), "difference (95 % CI)"].startswith("-1.00")
    means = study.factorial_means(df)
    assert means.loc["input LayerNorm skipped", "TTE before: yes"].startswith("19.00")


def test_parallel_one_thread_runs_equal_an_in_process_one_thread_run(tmp_path, monkeypatch):
    """The study trains on CPU in worker processes, one thread each; the result is the same as the same run
    trained here (every CPU run computes on one thread), bit for bit, whatever the number of workers. With one
    worker (THESIS_WORKERS=1) the grid trains in this process and leaves its random streams as they were."""
    import random

    import numpy as np
    import torch

    monkeypatch.setenv("THESIS_WORKERS", "2")
    params = study.study_params("smoke", [0, 1], "cpu", str(tmp_path / "parallel"))
    parallel = study.run_grid(params, ["tte_after_ls"])
    assert [r["seed"] for r in parallel] == [0, 1]
    monkeypatch.setenv("THESIS_WORKERS", "1")
    torch.manual_seed(7), np.random.seed(7), random.seed(7)
    streams = torch.get_rng_state(), np.random.get_state()[1].copy(), random.getstate()
    here = study.run_grid(study.study_params("smoke", [0, 1], "cpu", str(tmp_path / "here")), ["tte_after_ls"])
    assert [r["metrics"] for r in here] == [r["metrics"] for r in parallel]
    assert torch.equal(torch.get_rng_state(), streams[0]) and (np.random.get_state()[1] == streams[1]).all()
    assert random.getstate() == streams[2]


def test_a_run_worker_s_data_loaders_start_processes_as_a_normally_started_process_does():
    """The study's workers are spawned; their data loaders must not inherit spawn (each loader's workers would
    import torch and thesis_lib anew, which at the thesis preset on a CPU took most of a run's time)."""
    import subprocess
    import sys
    probe = ("import multiprocessing as m; from thesis_lib.study import runs; m.set_start_method('spawn'); "
             "import os; runs._worker_started(os.getppid()); print(m.get_start_method())")
    plain = "import multiprocessing as m; print(m.get_start_method())"
    got, want = (subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
                 for code in (probe, plain))
    assert got == want


def test_a_grid_of_finished_runs_prepares_nothing_and_starts_no_worker(monkeypatch):
    """From a fresh clone the main job reuses the committed results: no world generated, no demo pretraining, no
    worker process (each would cost seconds to tens of seconds), and the results come back in the grid's order."""
    from thesis_lib.study import runs
    from thesis_lib.training import prepare

    def refuse(*args, **kwargs):
        raise AssertionError("a finished grid prepared assets or started a worker")

    monkeypatch.setattr(prepare, "prepare_assets", refuse)
    monkeypatch.setattr(runs, "ProcessPoolExecutor", refuse)
    params = study.study_params("demo", [0, 1, 2, 3], "cpu")
    results = study.run_grid(params, ["tte_after_ls", "baseline"])
    assert [(r["variant"], r["seed"]) for r in results] == [(v, s) for v in ("tte_after_ls", "baseline")
                                                            for s in range(4)]
    stored = json.loads((ROOT / "results" / "demo" / "baseline" / "seed2.json").read_text())
    assert results[6]["metrics"] == stored["metrics"]


def test_a_grid_of_reused_and_trained_runs_keeps_the_grids_order(monkeypatch, capfd):
    """Some runs finished, the others trained by workers that finish in any order: the results come back in the
    order of the jobs, the trained ones from the workers, and only their configs are prepared."""
    from concurrent.futures import Future

    from thesis_lib.study import runs
    from thesis_lib.training import prepare

    class Reversed:                                   # an executor whose futures complete last-submitted first
        def __init__(self, *args, **kwargs):
            self.futures = []

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def submit(self, fn, job):
            future = Future()
            future.set_result(({"variant": job["variant"], "seed": job["seed"], "trained": True}, 10.0))
            self.futures.insert(0, future)
            return future

    prepared = []
    monkeypatch.setattr(prepare, "prepare_assets", lambda cfg: prepared.append(cfg.model.variant))
    monkeypatch.setattr(runs, "ProcessPoolExecutor", Reversed)
    monkeypatch.setattr(runs, "as_completed", lambda futures: list(futures)[::-1])
    monkeypatch.setattr(runs, "finished_result", lambda job: {"variant": job["variant"], "seed": job["seed"]}
                        if job["seed"] % 2 else None)
    monkeypatch.setenv("THESIS_PROGRESS", "0")
    monkeypatch.setenv("THESIS_WORKERS", "2")                # the workers' path (one worker trains in this process)
    jobs = [dict(preset="smoke", variant=v, seed=s, device="cpu") for v in ("noln", "mome") for s in range(4)]
    out = runs.run_many(jobs)
    assert [(r["variant"], r["seed"]) for r in out] == [(j["variant"], j["seed"]) for j in jobs]
    assert [bool(r.get("trained")) for r in out] == [s % 2 == 0 for s in range(4)] * 2
    assert sorted(prepared) == ["mome", "noln"]
    assert "runs: 0/8, assets ready" in capfd.readouterr().err
    monkeypatch.setattr(runs, "finished_result", lambda job: {"variant": job["variant"], "seed": job["seed"]})
    runs.run_many(jobs)
    assert "runs: 0/8, all reused (nothing to prepare)" in capfd.readouterr().err


def test_without_progress_bars_the_grid_prints_one_line_per_run(monkeypatch, capfd):
    """make demo shows these lines in the terminal: done of total and the time left, estimated from the runs that
    trained (a reused result returns in a second and is not counted). They go to the process's stderr file
    descriptor, which a Jupyter kernel does not copy into the notebook (``Log.terminal``), and nothing to stdout."""
    import time

    from thesis_lib.study.runs import Log
    monkeypatch.setenv("THESIS_PROGRESS", "0")
    log = Log(5, time.monotonic() - 30)
    log.run_done("baseline seed 0", 0.5, workers=2)
    log.run_done("tte_after_ls seed 0", 120.0, workers=2)
    out, err = capfd.readouterr()
    lines = err.splitlines()
    assert out == ""
    assert lines[0] == "[0:30] runs: 0/5, assets ready"
    assert lines[1] == "[0:30] runs: 1/5 (baseline seed 0 reused), ≈ 0:00 left"
    assert lines[2] == "[0:30] runs: 2/5 (tte_after_ls seed 0 done), ≈ 3:00 left"      # 3 runs × 2 min ÷ 2 at once
    monkeypatch.setenv("THESIS_PROGRESS", "1")                  # with bars (a notebook opened by hand): silent
    Log(2, time.monotonic()).run_done("x", 10.0)
    assert capfd.readouterr() == ("", "")


def test_the_run_lines_reach_the_terminal_but_not_the_notebook(tmp_path, monkeypatch, capfd):
    """Under papermill (make demo) the lines reach the terminal papermill runs in and stay out of the executed
    notebook. ipykernel (≥ 6) copies file descriptor 2, hence ``sys.__stderr__``, into the cell's outputs as well;
    ``Log.terminal`` writes to the kernel's original stderr instead. The kernel inherits this process's stderr
    (captured here); without pytest's variable it watches the descriptors as it does under make demo."""
    nbformat = pytest.importorskip("nbformat")
    papermill = pytest.importorskip("papermill")
    monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)   # ipykernel leaves the descriptors alone under pytest
    monkeypatch.setenv("THESIS_PROGRESS", "0")
    cell = ("import time\nfrom thesis_lib.study.runs import Log\n"
            "Log(2, time.monotonic()).run_done('baseline seed 0', 100.0)\n"
            "Log.terminal('look 1 of 6 (4 seeds): undecided')\nprint('a table')")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "in.ipynb")
    papermill.execute_notebook(str(tmp_path / "in.ipynb"), str(tmp_path / "out.ipynb"), kernel_name="python3",
                               progress_bar=False, cwd=str(ROOT))          # this checkout's thesis_lib
    outputs = nbformat.read(tmp_path / "out.ipynb", as_version=4).cells[0].outputs
    shown = "".join(o.get("text", "") for o in outputs)
    terminal = capfd.readouterr().err
    assert shown == "a table\n"
    for line in ("runs: 0/2, assets ready", "runs: 1/2 (baseline seed 0 done)", "look 1 of 6 (4 seeds): undecided"):
        assert line in terminal, terminal[-2000:]



def test_the_readme_results_block_is_what_the_committed_results_give(monkeypatch):
    """One source for every number of the README's results block: regenerated from results/demo, it is the block
    the README holds (make figures / make reproduce rewrite it), and docs/results.md the page (notebook 04's 'why'
    table included); with the declared sequential design."""
    monkeypatch.setattr(sequential, "DESIGNS", DECLARED_DESIGNS)
    from thesis_lib.paths import ROOT
    from thesis_lib.study.pages import report
    from thesis_lib.study import runs
    text = report.results_markdown(runs.study_params("demo", need_data=False))
    readme = (ROOT / "README.md").read_text()
    assert f"{report.START}\n{text}\n{report.END}" in readme, "README results block is stale: run `make figures`"
    page = report.results_page(runs.study_params("demo", need_data=False))
    assert (ROOT / "docs" / "results.md").read_text() == page, "docs/results.md is stale: run `make figures`"
    assert "modality probe, vector" in page and "γ init 1e-1" in page and "sequentially" in page


def test_a_row_that_looks_copied_gets_a_note_beside_the_table():
    """The README's first table: a variant whose means match the baseline's on every metric is explained right
    there (how close, and how many per-seed values differ); one that differs by more gets no note."""
    from thesis_lib.study.claims.sections import ALIKE, alike
    from thesis_lib.study.pages.report import alike_note
    from thesis_lib.metrics import TABLE as TABLE_METRICS
    rows = []
    for s in range(4):
        base = {m: 20.0 + s + i for i, m in enumerate(TABLE_METRICS)}
        rows += [{"variant": "baseline", "seed": s, **base},
                 {"variant": "tte_after_ls", "seed": s, **{m: x + (0.01 if s == 1 else 0.0) for m, x in base.items()}},
                 {"variant": "tte_before", "seed": s, **{m: x + 2 * ALIKE for m, x in base.items()}}]
    note = alike_note(alike(pd.DataFrame(rows), ["baseline", "tte_after_ls", "tte_before"]))
    assert "EMKUM_TTE' (after encoders + LayerScale) matches the baseline to within 0.0025 points" in note   # ≥ gap
    assert f"{len(TABLE_METRICS)} of its {4 * len(TABLE_METRICS)} per-seed values differ" in note
    assert "EMKUM_TTE (before" not in note
    assert alike_note(alike(pd.DataFrame(rows), ["baseline", "tte_before"])) == ""
    same = pd.DataFrame([{**r, "variant": "tte_after"} for r in rows if r["variant"] == "baseline"] + rows)
    assert (f"within 0 points on every metric, and all {4 * len(TABLE_METRICS)} of its per-seed values equal"
            in alike_note(alike(same, ["baseline", "tte_after"])))


def test_the_results_table_has_a_metric_and_a_source_level():
    """Notebooks 01-03's table: one column per (metric, source), the sources short ("ours", "thesis Aug 2024",
    "thesis final"), the thesis's values beside ours; the final text reports no ImageNet top-5."""
    from thesis_lib.study.reference import thesis_value
    from thesis_lib.metrics import TABLE as TABLE_METRICS
    from thesis_lib.study.claims.tables import results_table
    df = pd.DataFrame([{"variant": v, "seed": s, **{m: 10.0 + s for m in TABLE_METRICS}}
                       for v in ("baseline", "tte_after_ls") for s in range(3)])
    table = results_table(df, ["baseline", "tte_after_ls"])
    assert table.columns.names == ["metric", "source"]
    assert set(table.columns.get_level_values("source")) == {"ours", "thesis Aug 2024", "thesis final"}
    assert ("ImageNet top-5", "thesis final") not in table.columns
    row = table.loc["EMKUM (no TTE)"]
    assert row[("seeds", "ours")] == 3 and row[("COCO retrieval", "ours")].startswith("11.00 ±")
    assert row[("COCO retrieval", "thesis Aug 2024")] == f"{thesis_value('aug', 'baseline', 'coco_mean'):.2f}"


def test_a_metric_no_stored_result_holds_shows_a_dash(tmp_path):
    """A result stored before a metric existed (here: its imagenet_top5 removed) gives "–" in that metric's cells of
    every table, never a KeyError; the other metrics are untouched."""
    from thesis_lib.study.claims.sections import alike
    from thesis_lib.study.pages.report import alike_note
    shown = ("baseline", "tte_after_ls")
    for v in shown:
        (tmp_path / "results" / "demo" / v).mkdir(parents=True)
        for f in sorted((ROOT / "results" / "demo" / v).glob("seed[0-3].json")):
            r = json.loads(f.read_text())
            del r["metrics"]["imagenet_top5"]
            (tmp_path / "results" / "demo" / v / f.name).write_text(json.dumps(r))
    params = study.study_params("demo", [0, 1, 2, 3], output_dir=str(tmp_path), need_data=False)
    df = study.results_frame(params, shown)
    assert "imagenet_top5" not in df and len(df) == 8
    table = study.results_table(df, shown)
    assert (table[("ImageNet top-5", "ours")] == "–").all()
    assert table[("ImageNet top-1", "ours")].str.contains(" ± ").all()
    assert (study.difference_table(df, shown)["Δ ImageNet top-5"] == "–").all()
    assert (study.summary(df, shown)["ImageNet top-5"] == "–").all()
    assert "within" in alike_note(alike(df, shown)) or alike_note(alike(df, shown)) == ""
