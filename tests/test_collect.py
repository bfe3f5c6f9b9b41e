"""A notebook run with train=False (a batch job collecting the recipe's runs, docs/full_scale.md): a missing run stops
it before anything is trained or written, naming the run and the command that trains it; with every run present it
reads the stored results; Table 1's sequential design prints the next block's command instead of training it."""
import json
import shutil

import pytest

from thesis_lib import study
from thesis_lib.errors import ConfigError, MissingRunsError, ThesisError
from thesis_lib.paths import ROOT
from thesis_lib.study import runs
from thesis_lib.study.claims import sequential, verdicts


@pytest.fixture
def no_training(monkeypatch):
    """Every way a run could train or write fails the test."""
    from thesis_lib.training import prepare

    def refuse(*args, **kwargs):
        raise AssertionError("train=False trained, prepared or wrote something")

    for name in ("run_experiment", "run_many", "_timed_run", "ProcessPoolExecutor"):
        monkeypatch.setattr(runs, name, refuse)
    monkeypatch.setattr(prepare, "prepare_assets", refuse)


def files(folder) -> list:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_a_missing_run_stops_at_once_naming_it_and_its_command(tmp_path, no_training):
    stored = tmp_path / "results" / "demo" / "baseline"
    stored.mkdir(parents=True)
    shutil.copy(ROOT / "results" / "demo" / "baseline" / "seed0.json", stored)
    before = files(tmp_path)
    params = study.start("demo", [0, 1], "cpu", str(tmp_path), train=False)
    with pytest.raises(MissingRunsError) as err:
        study.run_grid(params, ["baseline"])
    assert isinstance(err.value, ThesisError)
    text = str(err.value)
    assert f"baseline seed 1: {stored / 'seed1.json'}" in text and "seed 0" not in text
    assert "running the notebook with train=True" in text and "make reproduce" not in text   # not results/
    assert [(j["variant"], j["seed"]) for j in err.value.jobs] == [("baseline", 1)]
    assert files(tmp_path) == before                                  # nothing written


def test_at_the_thesis_scale_the_command_is_the_recipe_s(tmp_path, no_training):
    params = study.study_params("thesis", [0], "cpu", str(tmp_path), need_data=False, train=False)
    with pytest.raises(MissingRunsError, match="thesis-regularisation") as err:
        study.run_thesis_regularisation(params)
    assert (f"python -m thesis_lib.full_scale.recipe commands --layout <1gpu|8gpu|slurm> --missing-only "
            f"--out {tmp_path}") in str(err.value)
    assert files(tmp_path) == []


def test_with_every_run_present_it_returns_the_stored_results(no_training):
    params = study.start("demo", [0, 1, 2, 3], "cpu", train=False)
    results = study.run_grid(params, ["tte_after_ls", "baseline"])
    assert [(r["variant"], r["seed"]) for r in results] == [(v, s) for v in ("tte_after_ls", "baseline")
                                                            for s in range(4)]
    stored = json.loads((ROOT / "results" / "demo" / "baseline" / "seed2.json").read_text())
    assert results[6]["metrics"] == stored["metrics"]
    assert [r["seed"] for r in study.run_random_init(params)] == [0, 1, 2, 3]


def test_collecting_cannot_retrain():
    with pytest.raises(ConfigError, match="train=False and reuse=False"):
        study.study_params("demo", [0], reuse=False, train=False)
    with pytest.raises(ConfigError, match="parameter train must be True or False"):
        study.study_params("demo", [0], train="no")


def test_the_sequential_design_prints_the_next_block_s_command_and_keeps_its_verdict(tmp_path, monkeypatch,
                                                                                  no_training, capsys):
    """Look 1 (seeds 0-3) is undecided and stored; look 2's seeds 4-7 are not: the design stops at look 1."""
    design = sequential.TABLE1_PRIMARY
    claim = verdicts.sequential_claim(design)
    monkeypatch.setattr(runs, "finished_result", lambda job: {} if job["seed"] < design.looks[0] else None)
    monkeypatch.setattr(verdicts, "results_frame", lambda *args, **kwargs: None)
    monkeypatch.setattr(verdicts, "primary_rows", lambda df: [{"claim": claim, "verdict": "undecided",
                                                               "words": "undecided"}])
    params = study.study_params("thesis", [0, 1, 2, 3], "cpu", str(tmp_path), need_data=False, train=False)
    look = verdicts.run_sequential(params)
    assert look == {"seeds": design.looks[0], "verdict": "undecided", "looks": 1}
    printed = capsys.readouterr().out
    n = design.looks[1]
    assert f"look 2 ({n} seeds) is not taken" in printed and "the design stops at look 1" in printed
    assert f"--table1-seeds {n} --missing-only --out {tmp_path}" in printed
    missing = {f"{v} seed {s}:" for v in claim.arms_variants for s in range(design.looks[0], n)}
    assert all(m in printed for m in missing) and f"seed {design.looks[0] - 1}:" not in printed
