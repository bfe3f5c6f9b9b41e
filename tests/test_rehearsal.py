"""full_scale/rehearsal.py: the full-scale path in miniature, on tiny real-format files the repository writes (Karpathy
JSONs with JPEGs, ImageNet's 1,000 class folders, two webdataset shard sets with broken samples and one image that
fails only when decoded, the checkpoints in their original key layouts with fairseq's/unilm's pickled args, GPT-2
tokenizer files), at the thesis preset with the model shrunk. CI runs its core: the checkpoint check, a 2-process
torchrun training (gloo) of several steps with the recipe's augmented teacher view, the same run killed and resumed
(equal to the uninterrupted one bit for bit), and notebook 03, which must reuse the torchrun run; `make rehearsal`
adds the recipe's generated launches (an 8-GPU lane, an srun-style launch building the fixed-view teacher cache in
parts, the pilot) and the other notebooks (docs/full_scale.md: time measured)."""
import json
import shutil

import pytest

from thesis_lib.full_scale import kill_resume, rehearsal
from thesis_lib.study.grids import TABLE2


def test_the_rehearsal_core_trains_kills_resumes_and_notebook_03_reuses_the_run(tmp_path, capsys):
    pytest.importorskip("papermill")
    out = tmp_path / "r"
    assert rehearsal.main(["--out", str(out), "--notebooks", "03_tte_layerscale", "--skip-launches"]) == 0
    printed = capsys.readouterr().out
    for line in ("the 3 model files hold fairseq's/unilm's args and trainer state",
                 f"{rehearsal.TRAIN_STEPS} steps on 2 processes (gloo on the CPU), a checkpoint after each step, "
                 "the augmented teacher view (the recipe's)",
                 "2 shard sets, 10 broken samples counted and skipped at indexing; 1 training image(s) failed to "
                 "decode in a batch",
                 "killed (SIGKILL to torchrun, its 2 processes and their loader workers) after step",
                 "equal to the uninterrupted run bit for bit",
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
    # the comparison can fail: one training-curve row changed is found
    job = kill_resume.Torchrun("tte_after_ls", 0, "cpu", out / "DATA", out / "CKPT", rehearsal.overrides("x"))
    shutil.copytree(out / "killed", tmp_path / "edited")
    curve = job.paths(tmp_path / "edited").metrics
    rows = curve.read_text().splitlines()
    curve.write_text("\n".join(rows[:-1] + [rows[-1].replace('"step"', '"step" ', 1)]) + "\n")
    with pytest.raises(SystemExit, match="training curve"):
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
