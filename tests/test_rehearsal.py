"""full_scale/rehearsal.py: the full-scale path in miniature, on tiny real-format files the repository writes (Karpathy
JSONs with JPEGs, ImageNet's 1,000 class folders, two webdataset shard sets with broken samples and one image that
fails only when decoded, the checkpoints in their original key layouts with fairseq's/unilm's pickled args, GPT-2
tokenizer files), at the thesis preset with the model shrunk. CI runs its core: the checkpoint check, a 2-process
torchrun training (gloo) of several steps with the recipe's augmented teacher view, the same run killed and resumed
from its mixture staged to another folder (equal to the uninterrupted one bit for bit), the finished run started
again with the staged mixture (reused; one @N less: refused), `recipe status` and the missing-only commands on the
half-finished runs folder, and notebook 03, which must reuse the torchrun run; `make rehearsal`
adds the recipe's generated launches (an 8-GPU lane, an srun-style launch building the fixed-view teacher cache in
parts, the pilot) and the other notebooks (docs/full_scale.md: time measured)."""
import json
import shutil

import pytest

from thesis_lib.full_scale import kill_resume, recipe, rehearsal
from thesis_lib.study.grids import TABLE2


def test_the_rehearsal_core_trains_kills_resumes_and_notebook_03_reuses_the_run(tmp_path, capsys):
    pytest.importorskip("papermill")
    out = tmp_path / "r"
    assert rehearsal.main(["--out", str(out), "--notebooks", "03_tte_layerscale", "--skip-launches"]) == 0
    printed = capsys.readouterr().out
    n = len(recipe.planned_jobs())
    for line in ("the 3 model files hold fairseq's/unilm's args and trainer state",
                 f"{rehearsal.TRAIN_STEPS} steps on 2 processes (gloo on the CPU), a checkpoint after each step, "
                 "the augmented teacher view (the recipe's)",
                 "2 shard sets, 10 broken samples counted and skipped at indexing; 1 training image(s) failed to "
                 "decode in a batch",
                 "killed (SIGKILL to torchrun, its 2 processes and their loader workers) after step",
                 f"reading its 2 shard sets from the staged copy in {out / 'staged'} (train.shards): equal to the "
                 "uninterrupted run bit for bit",
                 "the finished run started again by torchrun with the staged mixture: reused, not trained",
                 "the same run with @13 in place of its @14 is another run: refused",
                 f"`recipe status` on the half-finished rehearsal: {n} runs: 1 done, 0 running, 0 failed, {n - 1} "
                 "missing (tte-tte_after_ls-0, the torchrun run, done)",
                 f"`recipe commands --layout slurm --missing-only`: {n - 1} sbatch jobs, every missing run once, none "
                 "named tte-tte_after_ls-0",
                 "notebook 03 reused the torchrun run"):
        assert line in printed, printed
    folder = out / "runs" / "results" / "thesis"
    for variant in TABLE2:                                  # what notebook 03 trains
        result = json.loads((folder / variant / "seed0.json").read_text())
        assert (result["train"]["steps"] == rehearsal.TRAIN_STEPS
                and result["config"]["data"]["teacher_view"] == "augmented")
        assert result["config"]["weights"]["checkpoint_dir"] == str(out / "CKPT")
        assert ("tte_contribution" in result) == variant.startswith("tte_after")   # from the files, as in memory
        assert (result["train"]["world_size"] == 2) == (variant == "tte_after_ls")
        assert result["chance"]["imagenet_top1"] == pytest.approx(0.1)             # 1,000 classes
    resumed = json.loads((out / "killed" / "results" / "thesis" / "tte_after_ls" / "seed0.json").read_text())
    assert 0 < resumed["train"]["resumed_from"] < rehearsal.TRAIN_STEPS
    staged = ("coco", f"wds:{out / 'staged'}/")                 # the resume read the staged copy
    assert all(entry.startswith(staged) for entry in resumed["config"]["data"]["train_sets"])
    # the comparison can fail: one training-curve row changed is found
    job = kill_resume.Torchrun("tte_after_ls", 0, "cpu", out / "DATA", out / "CKPT", rehearsal.overrides("x"))
    shutil.copytree(out / "killed", tmp_path / "edited")
    curve = job.paths(tmp_path / "edited").metrics
    rows = curve.read_text().splitlines()
    curve.write_text("\n".join(rows[:-1] + [rows[-1].replace('"step"', '"step" ', 1)]) + "\n")
    with pytest.raises(SystemExit, match="training curve"):
        kill_resume.compare_runs(job, out / "runs", tmp_path / "edited")
    # … and so can the config, compared as the run's identity: the mixture staged elsewhere is the same, @13 is not
    curve.write_text("\n".join(rows) + "\n")
    result = job.paths(tmp_path / "edited").result
    result.write_text(result.read_text().replace("shards.txt@14", "shards.txt@13"))
    with pytest.raises(SystemExit, match="differs from the uninterrupted one in config"):
        kill_resume.compare_runs(job, out / "runs", tmp_path / "edited")


@pytest.mark.parametrize("gpus, where", [(0, ("cpu", "gloo on the CPU: this host has 0 GPUs")),
                                         (1, ("cpu", "gloo on the CPU: this host has 1 GPU and NCCL needs one per")),
                                         (2, ("cuda", "NCCL, one GPU each"))])
def test_the_torchrun_stages_run_2_processes_on_any_host_and_say_where(monkeypatch, gpus, where):
    monkeypatch.setattr(rehearsal, "_cuda_count", lambda: gpus)
    device, why = rehearsal.torchrun_device("cuda")
    assert device == where[0] and why.startswith(where[1])
    assert rehearsal.torchrun_device("cpu") == ("cpu", "gloo on the CPU")


def test_the_last_step_of_a_training_log_being_written(tmp_path):
    log = tmp_path / "metrics.jsonl"
    assert kill_resume.last_step(log) == 0
    log.write_text('{"step": 1, "loss": 2.0}\n{"step": 2, "loss": 1.5}\n{"step": 3, "lo')
    assert kill_resume.last_step(log) == 2


def test_a_bad_notebook_name_is_refused(tmp_path):
    with pytest.raises(SystemExit):
        rehearsal.main(["--out", str(tmp_path), "--notebooks", "07_nothing"])


def _finished_run(tmp_path, mix: str):
    """The torchrun job of the rehearsal reading ``mix``, and a finished result of it in ``tmp_path / 'runs'`` (the
    result file of the config its command trains, on 2 processes; a curve and a checkpoint beside it)."""
    from dataclasses import asdict

    from thesis_lib import get_config
    from thesis_lib.metrics import METRICS
    job = kill_resume.Torchrun("tte_after_ls", 0, "cpu", tmp_path / "DATA", tmp_path / "CKPT", rehearsal.overrides(mix))
    (tmp_path / "DATA").mkdir(exist_ok=True)
    sets = {**job.overrides, "train.batch_size": job.overrides["train.batch_size"] // 2}
    config = asdict(get_config("thesis", "tte_after_ls", 0, sets))
    paths = job.paths(tmp_path / "runs")
    paths.dir.mkdir(parents=True)
    paths.result.write_text(json.dumps({"preset": "thesis", "variant": "tte_after_ls", "seed": 0, "config": config,
                                        "metrics": dict.fromkeys(METRICS, 1.0), "train": {"world_size": 2}}))
    paths.metrics.write_text('{"step": 1}\n')
    paths.checkpoint.write_bytes(b"not a checkpoint")
    return job, paths


def test_a_finished_run_started_with_its_mixture_staged_is_reused_and_another_at_n_refused(tmp_path):
    """The rehearsal's reuse check on a finished run: the shards staged by data.stage (another path, the same sets
    and @N) are the same run, reused by torchrun with its files untouched; one @N less is another run, refused."""
    from thesis_lib.full_scale import fixtures
    cc3m = fixtures.web_shards(tmp_path / "DATA" / "cc3m", "cc3m", seed=0)
    job, paths = _finished_run(tmp_path, f"coco,wds:{cc3m}@14")
    logs = tmp_path / "logs"
    logs.mkdir()
    staged = kill_resume.stage_mix(job, tmp_path / "staged", logs / "stage.log")
    assert staged.overrides["data.train_sets"] == f"coco,wds:{tmp_path / 'staged' / 'cc3m' / 'shards.txt'}@14"
    assert "staged mixture: coco,wds:" in (logs / "stage.log").read_text()
    before = paths.result.stat().st_mtime_ns, paths.result.read_bytes()
    lines = kill_resume.staged_reuse(staged, tmp_path / "runs", logs)
    assert (paths.result.stat().st_mtime_ns, paths.result.read_bytes()) == before
    assert lines[0].startswith("the finished run started again by torchrun with the staged mixture: reused, not "
                               "trained"), lines
    assert "reused: its result, curve and checkpoint untouched" in (logs / "torchrun-reused.log").read_text()
    assert lines[1].startswith("the same run with @13 in place of its @14 is another run: refused"), lines
    assert "data.train_sets" in lines[1] and "wds:cc3m@14" in lines[1] and "wds:cc3m@13" in lines[1], lines


def test_the_reuse_check_fails_when_the_finished_run_is_trained_again(tmp_path, monkeypatch):
    job, paths = _finished_run(tmp_path, "coco,wds:/x/cc3m/{00000..00001}.tar@14")

    def retrain(self, out, log, *extra):
        paths.result.write_text(paths.result.read_text())      # the same bytes, written again
        return {}
    monkeypatch.setattr(kill_resume.Torchrun, "run", retrain)
    (tmp_path / "logs").mkdir()
    with pytest.raises(SystemExit, match=r"was trained again \(seed0.json rewritten\)"):
        kill_resume.staged_reuse(job, tmp_path / "runs", tmp_path / "logs")


def test_the_resume_must_read_the_staged_copy_and_another_mixture_is_one_at_n_less(tmp_path):
    staged = tmp_path / "staged"
    result = {"train": {"shards": {f"wds:{staged}/cc3m/shards.txt@14": {}, f"wds:{staged}/cc12m/shards.txt": {}}}}
    assert kill_resume.read_staged(result, staged) == (f"its 2 shard sets from the staged copy in {staged} "
                                                       "(train.shards)")
    result["train"]["shards"]["wds:/data/cc12m/{0..1}.tar"] = {}
    with pytest.raises(SystemExit, match="did not read the staged copy"):
        kill_resume.read_staged(result, staged)
    assert kill_resume.other_mix("coco,wds:/a/cc3m/s.txt@14,wds:/a/x/s.txt@3") == (
        "coco,wds:/a/cc3m/s.txt@13,wds:/a/x/s.txt@3", "@13 in place of its @14")
    with pytest.raises(ValueError):
        kill_resume.other_mix("coco")


def test_the_recipe_status_and_missing_only_commands_on_a_half_finished_runs_folder(tmp_path, monkeypatch):
    """One of the recipe's runs finished in the runs folder (its result file where the recipe's run lies): `recipe
    status` shows it done and the others missing, the missing-only SLURM script submits all but it. The commands run
    in this process here (recipe.main with the same arguments); the rehearsal core above runs them as commands."""
    import contextlib
    import io

    from thesis_lib.full_scale import half_finished
    from thesis_lib.paths import results_dir
    from thesis_lib.training.results import RunPaths

    def in_process(args, runs, log):
        with contextlib.redirect_stdout(io.StringIO()) as out:
            assert recipe.main([*args, "--out", str(runs)]) == 0
        log.write_text(f"$ python -m thesis_lib.full_scale.recipe {' '.join(args)} --out {runs}\n{out.getvalue()}")
        return out.getvalue()
    monkeypatch.setattr(half_finished, "recipe_cli", in_process)
    runs, logs = tmp_path / "runs", tmp_path / "logs"
    logs.mkdir()
    paths = RunPaths(results_dir(runs), "thesis", *rehearsal.TORCHRUN)
    paths.dir.mkdir(parents=True)
    paths.result.write_text("{}")
    lines = half_finished.half_finished(runs, logs, *rehearsal.TORCHRUN)
    n = len(recipe.planned_jobs())
    assert lines == [f"`recipe status` on the half-finished rehearsal: {n} runs: 1 done, 0 running, 0 failed, "
                     f"{n - 1} missing (tte-tte_after_ls-0, the torchrun run, done)",
                     f"`recipe commands --layout slurm --missing-only`: {n - 1} sbatch jobs, every missing run once, "
                     "none named tte-tte_after_ls-0"]
    status = (logs / "recipe-status.txt").read_text()
    assert status.startswith(f"$ python -m thesis_lib.full_scale.recipe status --out {runs}\n")
    assert "\ndone     tte-tte_after_ls-0 " in status and "\nmissing  tte-tte_after_ls-1 " in status
    script = (logs / "recipe-missing-only.txt").read_text()
    assert "(missing or failed only)" in script and "--job-name=tte-tte_after_ls-0 " not in script
    assert "--job-name=tte-tte_after_ls-1 " in script


def test_the_half_finished_check_fails_on_a_wrong_status_or_script(tmp_path):
    from thesis_lib.full_scale import half_finished
    jobs = [job for _, job in recipe.planned_jobs()]
    done = half_finished.done_name(*rehearsal.TORCHRUN)
    nothing_done = recipe.status(jobs, str(tmp_path))               # no result: every run missing
    everything = recipe.commands("slurm", jobs=jobs)
    with pytest.raises(SystemExit, match=f"does not show {done} done"):
        half_finished.check(nothing_done, everything, done)
    one_done = nothing_done.replace(f"missing  {done} ", f"done     {done} ", 1).replace(
        f" 0 done, 0 running, 0 failed, {len(jobs)} missing", f" 1 done, 0 running, 0 failed, {len(jobs) - 1} missing")
    with pytest.raises(SystemExit, match=f"among them {done}"):
        half_finished.check(one_done, everything, done)
    missing = "\n".join(line for line in everything.splitlines() if f"--job-name={done} " not in line)
    assert half_finished.check(one_done, missing, done)[1].endswith(f"none named {done}")
