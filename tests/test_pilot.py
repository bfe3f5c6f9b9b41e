"""study/pilot: the pilot's command is the recipe's run, shortened, and its report projects what it measured."""
import json
from pathlib import Path

import pytest

from thesis_lib.full_scale import cost, pilot, recipe


def test_the_pilot_trains_the_recipes_run_shortened_with_its_workers(monkeypatch):
    for k, v in {"DATA": "/d", "CKPT": "/c", "OUT": "/o", "MIX": "coco,wds:/d/cc3m/shards.txt@9"}.items():
        monkeypatch.setenv(k, v)
    cmd = pilot.command(2, 300, "cuda", "thesis", 14, ["model.dim=32"], "/o/pilot/one")
    assert cmd[1:3] == ["-m", "thesis_lib.training.run"] and "torch.distributed.run" not in cmd
    sets = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--set"]
    assert sets == ["data.train_sets=coco,wds:/d/cc3m/shards.txt@9", "train.steps=300", "train.batch_size=256",
                    f"data.num_workers={cost.workers(14)}", "model.dim=32"]
    assert cmd[cmd.index("--out") + 1] == "/o/pilot/one"                  # never the recipe's results
    monkeypatch.delenv("MIX")
    with pytest.raises(SystemExit, match="set MIX first"):
        pilot.command(1, 5, "cpu", "thesis", 3, [], "/o/pilot/one")


def test_the_pilot_launches_as_the_recipes_sbatch_lines_do_on_a_port_of_its_own(monkeypatch, tmp_path):
    """Inside a SLURM job: srun, one task per GPU, each the command srun runs in the recipe's sbatch line (its port
    derived from the job by the run); elsewhere the same tasks with srun's variables on a free port, not 29500."""
    for k, v in {"DATA": "/d", "CKPT": "/c", "OUT": "/o", "MIX": "coco"}.items():
        monkeypatch.setenv(k, v)
    cmd = pilot.command(2, 300, "cuda", "thesis", 14, [], "/o/pilot/one")
    job = {"preset": "thesis", "variant": "baseline", "seed": 0, "out_dir": "/o/pilot/one",
           "overrides": {"data.root": "/d", "weights.checkpoint_dir": "/c", "data.train_sets": "coco",
                         "train.steps": 300}}
    wrap = recipe.sbatch(job, 14).split('--wrap "')[1].rstrip('"').replace("'", "").split()
    assert wrap[:4] == ["${stage}srun", "--kill-on-bad-exit=1", "--cpus-per-task=14", "python"]
    assert cmd[1:] + ["--resume"] == wrap[4:]                          # the sbatch line's task, in its own folder
    (tmp_path / "srun").write_text("#!/bin/sh\n")
    (tmp_path / "srun").chmod(0o755)
    slurm = pilot.tasks(cmd, 2, 14, env={"SLURM_JOB_ID": "77", "PATH": str(tmp_path)})
    assert [argv[:4] for argv, _ in slurm] == [["srun", "--kill-on-bad-exit=1", "--ntasks=2", "--cpus-per-task=14"]]
    assert slurm[0][0][4:] == cmd and "MASTER_PORT" not in slurm[0][1]
    local = pilot.tasks(cmd, 2, 14, env={"PATH": str(tmp_path)})
    assert [(e["SLURM_PROCID"], e["SLURM_LOCALID"], e["SLURM_STEP_NUM_TASKS"]) for _, e in local] == [
        ("0", "0", "2"), ("1", "1", "2")]
    ports = {e["MASTER_PORT"] for _, e in local}
    assert len(ports) == 1 and ports != {"29500"} and all(argv == cmd for argv, _ in local)
    assert {e["MASTER_PORT"] for _, e in pilot.tasks(cmd, 2, 14, 31234, env={})} == {"31234"}


def test_a_second_pilot_measures_afresh_in_a_folder_of_its_own(monkeypatch, tmp_path, capsys):
    """Each pilot trains into a new folder under $OUT/pilot and reports its own run, never an earlier pilot's."""
    for k, v in {"DATA": str(tmp_path), "CKPT": str(tmp_path), "OUT": str(tmp_path / "out"), "MIX": "coco"}.items():
        monkeypatch.setenv(k, v)
    speeds, folders = iter([1000.0, 3000.0]), []

    def run(started):
        argv = started[0][0]
        out = Path(argv[argv.index("--out") + 1])
        folders.append(out)
        result = out / "results" / "thesis" / "baseline" / "seed0.json"
        result.parent.mkdir(parents=True)
        result.write_text(json.dumps({"train": {"steps": 2, "device": "cpu", "time_s": 10.0, "data_wait_s": 0.0,
                                                "pairs_per_s": next(speeds)}}))
        return 0
    monkeypatch.setattr(pilot, "run_tasks", run)
    for _ in range(2):
        assert pilot.main(["--gpus", "1", "--steps", "2", "--device", "cpu", "--cores-per-gpu", "3",
                           "--read-samples", "0"]) == 0
    first, second = capsys.readouterr().out.split("pilot: ")[1:]
    assert "pairs/s end to end: 1,000" in first and "pairs/s end to end: 3,000" in second
    assert len(set(folders)) == 2 and all(f.parent == tmp_path / "out" / "pilot" for f in folders)


def test_the_report_projects_the_measured_pace_onto_the_recipe():
    result = {"train": {"steps": 300, "world_size": 2, "device": "cuda", "time_s": 100.0, "data_wait_s": 40.0,
                        "pairs_per_s": 1000.0}}
    text = pilot.report(result, 2, "80 % (mean of 99 samples)", 130.0)
    runs = len(recipe.planned_jobs())
    assert "1,000 (500 per GPU)" in text and "waited for its batches 40 %" in text and "the data path is" in text
    assert f"{cost.days(runs, 8, 500):.1f} days on 8 GPUs" in text
    assert cost.days(runs, 8, 500) == pytest.approx(2 * cost.days(runs, 8, 1000))   # half the pace: twice the days


def test_without_nvidia_smi_utilisation_is_said_unmeasured(monkeypatch):
    monkeypatch.setattr(pilot.shutil, "which", lambda _: None)
    u = pilot.Utilisation()
    u.start()
    assert u.stop() == "not measured (no nvidia-smi)"


def test_bad_arguments_or_a_missing_data_folder_stop_the_pilot_before_anything_starts(monkeypatch, tmp_path, capsys):
    """--gpus 0 (was a ZeroDivisionError), a --gpus that does not divide 512, a DATA that is not a folder (was a
    torchrun of ranks each failing on it), a shard list MIX names that is not there, too few GPUs: argparse's one-line
    error and exit status 2, and no process started."""
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "data" / "cc3m").mkdir(parents=True)
    (tmp_path / "data" / "cc3m" / "shards.txt").write_text("00000.tar\n")
    env = {"DATA": str(tmp_path / "data"), "CKPT": str(tmp_path / "ckpt"), "OUT": str(tmp_path / "out"),
           "MIX": f"coco,wds:{tmp_path / 'data' / 'cc3m' / 'shards.txt'}@9"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)

    def started(*args, **kwargs):
        raise AssertionError("the pilot started a process")
    monkeypatch.setattr(pilot.subprocess, "run", started)
    monkeypatch.setattr(pilot.subprocess, "Popen", started)
    assert pilot.problems(2, "cpu") == []
    cases = [(["--gpus", "0"], "argument --gpus: 0 is not at least 1"),
             (["--gpus", "-2"], "argument --gpus: -2 is not at least 1"),
             (["--gpus", "3", "--device", "cpu"], "--gpus 3 does not divide the recipe's global batch of 512"),
             (["--steps", "0"], "argument --steps: 0 is not at least 1"),
             (["--cores-per-gpu", "0"], "argument --cores-per-gpu: 0 is not at least 1"),
             (["--gpus", "2", "--device", "cuda"], "--device cuda --gpus 2 needs 2 GPUs; this host has")]
    import torch
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    for argv, said in cases:
        with pytest.raises(SystemExit) as stop:
            pilot.main(argv)
        err = capsys.readouterr().err
        assert stop.value.code == 2 and said in err.splitlines()[-1], (argv, err)
    monkeypatch.setenv("DATA", str(tmp_path / "nowhere"))
    monkeypatch.setenv("MIX", f"coco,wds:{tmp_path / 'nowhere' / 'cc3m' / 'shards.txt'}@9")
    with pytest.raises(SystemExit) as stop:
        pilot.main(["--gpus", "2", "--device", "cpu"])
    last = capsys.readouterr().err.splitlines()[-1]
    assert stop.value.code == 2 and f"DATA={tmp_path / 'nowhere'} is not a folder" in last
    assert f"MIX names the shard list {tmp_path / 'nowhere' / 'cc3m' / 'shards.txt'}, which does not exist" in last
    monkeypatch.delenv("CKPT")
    with pytest.raises(SystemExit) as stop:
        pilot.main(["--device", "cpu"])
    assert stop.value.code == 2 and "set CKPT first" in capsys.readouterr().err


def test_the_pilots_cores_per_gpu_default_from_slurm_with_the_warning(monkeypatch, capsys, tmp_path):
    """Without --cores-per-gpu the pilot's task's CPUs are shared by its GPUs (SLURM_CPUS_PER_TASK=28, --gpus 2: 14
    per GPU, 12 workers each), with the warning that SLURM's CPUs are often hyperthreads."""
    for name in ("SLURM_CPUS_ON_NODE", "SLURM_GPUS_ON_NODE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", "28")
    monkeypatch.setenv("OUT", str(tmp_path))
    import torch
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setattr(pilot, "problems", lambda gpus, device: [])
    seen = []

    class Stop(Exception):
        pass

    def command(gpus, steps, device, preset, cores_per_gpu, sets, out):
        seen.append(cores_per_gpu)
        raise Stop
    monkeypatch.setattr(pilot, "command", command)
    with pytest.raises(Stop):
        pilot.main(["--gpus", "2", "--device", "cpu"])
    assert seen == [14]
    err = capsys.readouterr().err
    assert "pilot: --cores-per-gpu 14, from SLURM_CPUS_PER_TASK=28 / 2 GPUs" in err and "hyperthreads" in err
    with pytest.raises(Stop):
        pilot.main(["--gpus", "2", "--device", "cpu", "--cores-per-gpu", "5"])
    assert seen == [14, 5] and capsys.readouterr().err == ""


def test_the_report_sets_the_cold_read_rate_beside_what_the_gpus_need():
    """The GPUs need the step's pace without its waits (1,000 pairs/s over 100 s of which 40 waited: 1,667); a
    storage that reads fewer pairs/s cold is told to be staged, one that reads more is not."""
    from thesis_lib.data.stage import ReadRate
    result = {"train": {"steps": 300, "world_size": 2, "device": "cuda", "time_s": 100.0, "data_wait_s": 40.0,
                        "pairs_per_s": 1000.0}}
    assert pilot.need(result, 2)[0] == pytest.approx(1000 * 100 / 60)
    slow = ReadRate(reads=2000, bytes=180_000_000, seconds=2.0, threads=24, files=300, cold=True)      # 1,000/s
    text = pilot.report(result, 2, "80 %", 130.0, slow)
    assert "storage: 2,000 random reads of the mixture's shards (300 shards, 24 threads, cold cache" in text
    assert "the GPUs need 1,667 pairs/s (the step's pace without its waits for data); the storage reads 1,000 cold: " \
           "below what the GPUs need: stage the shards to node-local disk" in text
    assert 'python -m thesis_lib.data.stage "$MIX" --to /local/scratch' in text
    fast = ReadRate(reads=2000, bytes=180_000_000, seconds=0.5, threads=24, files=300, cold=True)      # 4,000/s
    assert "the storage keeps up" in pilot.report(result, 2, "80 %", 130.0, fast)
    waited = {"train": {**result["train"], "data_wait_s": 100.0}}                    # nothing but waiting: the goal
    assert pilot.need(waited, 2) == (2 * cost.H100_PAIRS_PER_S, f"the recipe's goal of "
                                                                f"{cost.H100_PAIRS_PER_S:,} per GPU")
    assert pilot.report(result, 2, "80 %", 130.0).count("\n") == 3                  # not measured: not shown
    assert "storage: not measured (--read-samples 0)" in pilot.report(result, 2, "80 %", 130.0,
                                                                      pilot.storage("coco", 0, 4))


def test_the_pilot_reads_the_mixtures_shards_cold(tmp_path, monkeypatch):
    """The measurement over tiny shards the fixtures write: a positive rate and the bytes read; a MIX without shards
    is said not measured, not an error."""
    from thesis_lib.full_scale.fixtures import web_shards
    monkeypatch.setenv("THESIS_DATA", str(tmp_path / "cache"))
    pattern = web_shards(tmp_path / "cc3m", "cc3m", shards=2, per_shard=5)
    rate = pilot.storage(f"coco,wds:{pattern}", 8, 2)
    assert rate.reads == 8 and rate.bytes > 0 and rate.pairs_per_s > 0 and rate.threads == 2
    assert pilot.storage("coco", 8, 2).startswith("not measured (")
