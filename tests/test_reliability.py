"""Reliability: every entry of the README's catalogue of bad inputs, kill-and-resume, concurrent runs, determinism.
Run them alone with ``pytest -k reliability``."""
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest
import torch

from checkpoint_fixtures import d2v_image_file
from thesis_lib import (CheckpointError, ConfigError, DataError, DeviceError, NonFiniteLossError, OutputDirError,
                        ResultConflictError, TokenizerError, get_config, run_experiment)
from thesis_lib.checkpoints import load_data2vec2_image, torch_load
from thesis_lib.config import ImageConfig, TextConfig
from thesis_lib.datasets import load_karpathy_split, open_image
from thesis_lib.study import study_params
from thesis_lib.tokenizer import CaptionTokenizer, check_tokenizer
from thesis_lib.train import main, resolve_device

CLI = [sys.executable, "-m", "thesis_lib.train", "--preset", "smoke", "--no-progress"]


def _cli(*args, timeout=300):
    return subprocess.run(CLI + list(args), capture_output=True, text=True, timeout=timeout)


# ---------------------------------------------------------------------------------------------- the catalogue

def test_catalogue_unknown_preset_cli_prints_one_line(capsys):
    assert main(["--preset", "huge", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown preset 'huge'" in err and "Traceback" not in err


def test_catalogue_unknown_variant():
    with pytest.raises(ConfigError, match="unknown variant 'tte_middle'; choose one of baseline"):
        get_config("demo", "tte_middle")


def test_catalogue_unknown_or_mistyped_config_field():
    with pytest.raises(ConfigError, match="unknown config field 'train.stepz'"):
        get_config("demo", overrides={"train.stepz": 3})
    with pytest.raises(ConfigError, match="'train.steps' expects int, got 'many'"):
        get_config("demo", overrides={"train.steps": "many"})


def test_catalogue_notebook_parameter_of_the_wrong_type():
    with pytest.raises(ConfigError, match="parameter seeds must be a list of integers, got the string 'abc'"):
        study_params("demo", "abc")
    with pytest.raises(ConfigError, match="parameter scale must be one of thesis, demo, smoke"):
        study_params("large")
    assert study_params("demo", "[3, 4]").seeds == (3, 4)           # papermill -p seeds '[3, 4]' works


def test_catalogue_notebook_parameter_through_papermill(tmp_path):
    pm = pytest.importorskip("papermill")
    with pytest.raises(pm.PapermillExecutionError, match="parameter seeds must be a list of integers"):
        pm.execute_notebook("notebooks/00_notation.ipynb", str(tmp_path / "out.ipynb"), kernel_name="python3",
                            parameters={"seeds": "abc", "scale": "smoke"}, progress_bar=False)


def test_catalogue_missing_dataset_path(tmp_path):
    with pytest.raises(DataError, match="data root not found"):
        run_experiment("smoke", out_dir=tmp_path, overrides={"data.source": "karpathy", "data.root": str(tmp_path / "x")})
    with pytest.raises(DataError, match="no data root given"):
        run_experiment("smoke", out_dir=tmp_path, overrides={"data.source": "karpathy"})


def test_catalogue_truncated_karpathy_json(tiny_coco):
    path = tiny_coco / "dataset_coco.json"
    path.write_text(path.read_text()[:-40])
    with pytest.raises(DataError, match="is not valid JSON .* download it again"):
        load_karpathy_split(path, tiny_coco / "images", "test")


def test_catalogue_karpathy_entry_without_a_field(tiny_coco):
    path = tiny_coco / "dataset_coco.json"
    data = json.loads(path.read_text())
    del data["images"][7]["sentences"]
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match=r"images\[7\] has no field 'sentences'; a Karpathy entry needs"):
        load_karpathy_split(path, tiny_coco / "images", "test")


def test_catalogue_missing_image_files(tiny_flickr):
    (tiny_flickr / "flickr30k-images" / "1004.jpg").unlink()
    with pytest.raises(DataError, match="1 of 3 images of split 'test' are missing .* is image_root the right folder"):
        load_karpathy_split(tiny_flickr / "dataset_flickr30k.json", tiny_flickr / "flickr30k-images", "test")


def test_catalogue_corrupt_image(tmp_path):
    (tmp_path / "x.jpg").write_bytes(b"\xff\xd8\xff\xe0 truncated")
    with pytest.raises(DataError, match="cannot read image .*x.jpg.*replace it"):
        open_image(str(tmp_path / "x.jpg"))


def test_catalogue_empty_split(tiny_flickr):
    with pytest.raises(DataError, match="split 'restval' .* has no images"):
        load_karpathy_split(tiny_flickr / "dataset_flickr30k.json", tiny_flickr / "flickr30k-images", "restval")


def test_catalogue_checkpoint_with_wrong_keys_or_shapes(tmp_path):
    d2v_image_file(tmp_path / "f.pt", D=32)
    with pytest.raises(CheckpointError, match="wrong shapes .*embed.patch_embed.proj.weight"):
        load_data2vec2_image(tmp_path / "f.pt", ImageConfig(img_size=32, patch_size=4), keep=2, num_heads=2)


def test_catalogue_tokenizer_that_does_not_fit_the_encoder():
    bert = CaptionTokenizer(lambda caps: [[5] for _ in caps], 30522, 101, 102, 0, 103, 64, "bert-like")
    with pytest.raises(TokenizerError, match=r"uses pad/bos/eos ids \(0, 101, 102\) but the text encoder expects \(1, 0, 2\)"):
        check_tokenizer(bert, TextConfig())                          # a BERT tokenizer on Data2Vec2 text
    with pytest.raises(TokenizerError, match="has 30522 ids but the text encoder embeds only 512"):
        check_tokenizer(bert, TextConfig(vocab_size=512, pad_id=0, bos_id=101, eos_id=102))


def test_catalogue_unwritable_output_dir(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("")
    with pytest.raises(OutputDirError, match="cannot write to output folder"):
        run_experiment("smoke", out_dir=blocked / "sub")


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a GPU")
def test_catalogue_gpu_requested_where_none_exists():
    with pytest.raises(DeviceError, match="no CUDA GPU is visible"):
        resolve_device("cuda")


def test_catalogue_result_of_another_config_is_not_overwritten(tmp_path):
    run_experiment("smoke", "baseline", 1, out_dir=tmp_path, progress=False)
    with pytest.raises(ResultConflictError, match="holds a result of another config"):
        run_experiment("smoke", "baseline", 1, out_dir=tmp_path, progress=False, overrides={"train.base_lr": 2e-3})
    replaced = run_experiment("smoke", "baseline", 1, out_dir=tmp_path, progress=False, overwrite=True,
                              overrides={"train.base_lr": 2e-3})
    assert replaced["config"]["train"]["base_lr"] == 2e-3


def test_catalogue_resume_with_a_checkpoint_of_another_variant(tmp_path):
    run_experiment("smoke", "baseline", 0, out_dir=tmp_path, progress=False)
    other = tmp_path / "results" / "smoke" / "baseline" / "seed0" / "checkpoint.pt"
    proc = _cli("--variant", "tte_after_ls", "--out", str(tmp_path / "b"), "--resume", str(other))
    assert proc.returncode == 2 and proc.stderr.startswith("error: cannot resume from")
    assert "model.variant: 'baseline' -> 'tte_after_ls'" in proc.stderr and "Traceback" not in proc.stderr


def test_catalogue_non_finite_loss_keeps_the_last_good_checkpoint(tmp_path, monkeypatch):
    import thesis_lib.engine as engine
    real = engine.compute_loss
    calls = {"n": 0}

    def poisoned(*args, **kwargs):
        loss, parts = real(*args, **kwargs)
        calls["n"] += 1
        return (loss * float("nan") if calls["n"] == 5 else loss), parts
    monkeypatch.setattr(engine, "compute_loss", poisoned)
    with pytest.raises(NonFiniteLossError, match="non-finite at step 5; the last good checkpoint"):
        run_experiment("smoke", out_dir=tmp_path, progress=False, overrides={"train.ckpt_every": 3, "train.log_every": 3})
    ckpt = torch_load(tmp_path / "results" / "smoke" / "baseline" / "seed0" / "checkpoint.pt")
    assert ckpt["step"] == 3 and all(torch.isfinite(v).all() for v in ckpt["model"].values())
    assert not (tmp_path / "results" / "smoke" / "baseline" / "seed0.json").exists()


# ---------------------------------------------------------------------------------------------- interruptions

LONG = ["--set", "train.steps=200", "--set", "train.ckpt_every=10", "--set", "train.log_every=5"]


def test_kill_at_a_random_step_and_resume_gives_the_uninterrupted_result(tmp_path):
    reference = _cli("--variant", "tte_after_ls", "--out", str(tmp_path / "ref"), *LONG)
    assert reference.returncode == 0, reference.stderr
    want = json.loads((tmp_path / "ref/results/smoke/tte_after_ls/seed0.json").read_text())["metrics"]
    run_dir = tmp_path / "run/results/smoke/tte_after_ls/seed0"
    kill_at = random.Random(os.getpid()).randint(15, 150)
    proc = subprocess.Popen(CLI + ["--variant", "tte_after_ls", "--out", str(tmp_path / "run"), *LONG],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        lines = (run_dir / "metrics.jsonl").read_text().splitlines() if (run_dir / "metrics.jsonl").exists() else []
        if lines and json.loads(lines[-1])["step"] >= kill_at:
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    if (run_dir / "checkpoint.pt").exists():
        assert torch_load(run_dir / "checkpoint.pt")["step"] % 10 == 0        # the last checkpoint loads
    resumed = _cli("--variant", "tte_after_ls", "--out", str(tmp_path / "run"), "--resume", *LONG)
    assert resumed.returncode == 0, resumed.stderr
    got = json.loads((run_dir.parent / "seed0.json").read_text())
    assert got["metrics"] == want
    assert [json.loads(x)["step"] for x in (run_dir / "metrics.jsonl").read_text().splitlines()] == list(range(5, 201, 5))


def test_two_runs_started_at_once_on_the_same_output(tmp_path):
    same = [subprocess.Popen(CLI + ["--variant", "tte_after", "--out", str(tmp_path)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(2)]
    other = subprocess.Popen(CLI + ["--variant", "tte_after", "--seed", "1", "--out", str(tmp_path)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    outs = [p.communicate(timeout=300) for p in same + [other]]
    assert all(p.returncode == 0 for p in same + [other]), [o[1] for o in outs]
    assert outs[0][0] == outs[1][0]                       # one trained, the other waited and reused its result
    for seed in (0, 1):
        result = json.loads((tmp_path / f"results/smoke/tte_after/seed{seed}.json").read_text())
        assert result["seed"] == seed
    leftovers = [p for p in (tmp_path / "results").rglob("*.tmp")]
    assert not leftovers


def test_same_seed_same_metrics(tmp_path):
    runs = [run_experiment("smoke", "tte_after_ls", 3, out_dir=tmp_path / str(k), progress=False,
                           overrides={"train.steps": 20}) for k in range(2)]
    for key, value in runs[0]["metrics"].items():
        assert abs(value - runs[1]["metrics"][key]) <= 1e-6
    assert runs[0]["layerscale"]["values_file"] == runs[1]["layerscale"]["values_file"]


def test_a_run_gives_the_same_result_whether_or_not_the_caches_existed(tmp_path, monkeypatch):
    """The first run on a fresh machine builds the world, the demo pretraining and the teacher targets inside
    itself; none of that may move the run's own random stream (it once re-seeded the global RNG)."""
    monkeypatch.setenv("THESIS_DATA", str(tmp_path / "fresh-cache"))
    first = run_experiment("smoke", "baseline", 1, out_dir=tmp_path / "first", progress=False)
    again = run_experiment("smoke", "baseline", 1, out_dir=tmp_path / "again", progress=False)
    assert first["metrics"] == again["metrics"]
