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

from thesis_lib import (
    CheckpointError,
    ConfigError,
    DataError,
    DeviceError,
    NonFiniteLossError,
    OutputDirError,
    ResultConflictError,
    TokenizerError,
    get_config,
    run_experiment,
)
from thesis_lib.config import ImageConfig, TextConfig
from thesis_lib.data.datasets import load_karpathy_split, open_image
from thesis_lib.data.tokenizer import CaptionTokenizer, check_tokenizer
from thesis_lib.models.checkpoints import load_data2vec2_image, torch_load
from thesis_lib.study.runs import study_params
from thesis_lib.training.results import read_jsonl
from thesis_lib.training.run import main, resolve_device

CLI = [sys.executable, "-m", "thesis_lib.training.run", "--preset", "smoke", "--no-progress"]


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
    with pytest.raises(ConfigError, match="parameter preset must be one of thesis, demo, smoke"):
        study_params("large")
    assert study_params("demo", "[3, 4]").seeds == (3, 4)           # papermill -p seeds '[3, 4]' works


def test_catalogue_notebook_parameter_through_papermill(tmp_path):
    pm = pytest.importorskip("papermill")
    with pytest.raises(pm.PapermillExecutionError, match="parameter seeds must be a list of integers"):
        pm.execute_notebook("notebooks/00_notation.ipynb", str(tmp_path / "out.ipynb"), kernel_name="python3",
                            parameters={"seeds": "abc", "preset": "smoke"}, progress_bar=False)


def test_catalogue_missing_dataset_path(tmp_path):
    with pytest.raises(DataError, match="data root not found"):
        run_experiment("smoke", out_dir=tmp_path,
                       overrides={"data.source": "karpathy", "data.root": str(tmp_path / "x")})
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
    with pytest.raises(TokenizerError,
                       match=r"uses pad/bos/eos ids \(0, 101, 102\) but the text encoder expects \(1, 0, 2\)"):
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
    run_experiment("smoke", "baseline", 1, out_dir=tmp_path)
    with pytest.raises(ResultConflictError, match="holds a result of another config"):
        run_experiment("smoke", "baseline", 1, out_dir=tmp_path, overrides={"train.base_lr": 2e-3})
    replaced = run_experiment("smoke", "baseline", 1, out_dir=tmp_path, overwrite=True,
                              overrides={"train.base_lr": 2e-3})
    assert replaced["config"]["train"]["base_lr"] == 2e-3


def test_catalogue_resume_with_a_checkpoint_of_another_variant(tmp_path):
    run_experiment("smoke", "baseline", 0, out_dir=tmp_path)
    other = tmp_path / "results" / "smoke" / "baseline" / "seed0" / "checkpoint.pt"
    proc = _cli("--variant", "tte_after_ls", "--out", str(tmp_path / "b"), "--resume", str(other))
    assert proc.returncode == 2 and proc.stderr.startswith("error: cannot resume from")
    assert "model.variant: 'baseline' -> 'tte_after_ls'" in proc.stderr and "Traceback" not in proc.stderr


def test_catalogue_non_finite_loss_keeps_the_last_good_checkpoint(tmp_path, monkeypatch):
    import thesis_lib.training.engine as engine
    real = engine.compute_loss
    calls = {"n": 0}

    def poisoned(*args, **kwargs):
        loss, parts = real(*args, **kwargs)
        calls["n"] += 1
        return (loss * float("nan") if calls["n"] == 5 else loss), parts
    monkeypatch.setattr(engine, "compute_loss", poisoned)
    with pytest.raises(NonFiniteLossError, match="non-finite at step 5; the last good checkpoint"):
        run_experiment("smoke", out_dir=tmp_path, overrides={"train.ckpt_every": 3, "train.log_every": 3})
    ckpt = torch_load(tmp_path / "results" / "smoke" / "baseline" / "seed0" / "checkpoint.pt")
    assert ckpt["step"] == 3 and all(torch.isfinite(v).all() for v in ckpt["model"].values())
    assert not (tmp_path / "results" / "smoke" / "baseline" / "seed0.json").exists()


# ---------------------------------------------------------------------------------------------- interruptions

LONG = ["--set", "train.steps=100", "--set", "train.ckpt_every=10", "--set", "train.log_every=5"]


def test_kill_at_a_random_step_and_resume_gives_the_uninterrupted_result(tmp_path):
    reference = _cli("--variant", "tte_after_ls", "--out", str(tmp_path / "ref"), *LONG)
    assert reference.returncode == 0, reference.stderr
    want = json.loads((tmp_path / "ref/results/smoke/tte_after_ls/seed0.json").read_text())["metrics"]
    run_dir = tmp_path / "run/results/smoke/tte_after_ls/seed0"
    kill_at = random.Random(os.getpid()).randint(15, 75)
    proc = subprocess.Popen(CLI + ["--variant", "tte_after_ls", "--out", str(tmp_path / "run"), *LONG],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        rows = read_jsonl(run_dir / "metrics.jsonl")                  # the row being written may be torn
        if rows and rows[-1]["step"] >= kill_at:
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
    assert [json.loads(x)["step"]
            for x in (run_dir / "metrics.jsonl").read_text().splitlines()] == list(range(5, 101, 5))


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
    runs = [run_experiment("smoke", "tte_after_ls", 3, out_dir=tmp_path / str(k),
                           overrides={"train.steps": 20}) for k in range(2)]
    for key, value in runs[0]["metrics"].items():
        assert abs(value - runs[1]["metrics"][key]) <= 1e-6
    assert runs[0]["layerscale"]["values_file"] == runs[1]["layerscale"]["values_file"]


def test_a_run_gives_the_same_result_whether_or_not_the_caches_existed(tmp_path, monkeypatch):
    """The first run on a fresh machine builds the world, the demo pretraining and the teacher targets inside
    itself; none of that may move the run's own random stream (it once re-seeded the global RNG)."""
    monkeypatch.setenv("THESIS_DATA", str(tmp_path / "fresh-cache"))
    first = run_experiment("smoke", "baseline", 1, out_dir=tmp_path / "first")
    again = run_experiment("smoke", "baseline", 1, out_dir=tmp_path / "again")
    assert first["metrics"] == again["metrics"]


# ------------------------------------------------------------------ never delete, never run code, never lose a curve

def test_a_user_folder_given_as_data_root_at_a_generating_scale_is_never_touched(tmp_path):
    from thesis_lib.data.roots import data_root
    mine = tmp_path / "my-data"
    (mine / "coco").mkdir(parents=True)
    (mine / "precious.txt").write_text("years of work")
    before = sorted(p.relative_to(mine) for p in mine.rglob("*"))
    with pytest.raises(DataError, match="not a generated world"):
        data_root(get_config("smoke", overrides={"data.root": str(mine)}))
    assert sorted(p.relative_to(mine) for p in mine.rglob("*")) == before
    assert (mine / "precious.txt").read_text() == "years of work"
    assert not (tmp_path / "my-data.partial").exists()


def test_a_foreign_partial_folder_is_not_removed(tmp_path):
    from thesis_lib.data.world_files import ensure_world
    (tmp_path / "w.partial").mkdir()
    (tmp_path / "w.partial" / "keep.txt").write_text("x")
    with pytest.raises(DataError, match="holds no marker of this project's world writer"):
        ensure_world(get_config("smoke").data.world, tmp_path / "w")
    assert (tmp_path / "w.partial" / "keep.txt").exists()


class _Payload:
    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


@pytest.mark.parametrize("where", ["model", "args", "raw pickle"])
def test_a_checkpoint_that_would_run_code_is_refused_and_nothing_runs(tmp_path, where):
    import pickle
    marker = tmp_path / "ran"
    if where == "raw pickle":       # not a torch zip: torch reads its header with the pickle module it is given
        (tmp_path / "evil.pt").write_bytes(pickle.dumps(_Payload(f"touch {marker}")))
    else:
        torch.save({"model": {"w": torch.ones(2)}, where: _Payload(f"touch {marker}")}, tmp_path / "evil.pt")
    with pytest.raises(CheckpointError, match="refused"):
        torch_load(tmp_path / "evil.pt")
    assert not marker.exists()


def test_the_guarded_loader_reads_what_checkpoints_hold(tmp_path):
    import argparse

    import numpy as np
    state = {"model": {"w": torch.ones(2)}, "args": argparse.Namespace(lr=np.float32(2.0), name="x"),
             "numpy_rng": np.random.get_state(), "best": np.float64(1.5), "dtype": torch.float16}
    torch.save(state, tmp_path / "ok.pt")
    back = torch_load(tmp_path / "ok.pt")
    assert back["args"].lr == 2.0 and back["best"] == 1.5 and back["numpy_rng"][0] == "MT19937"


def test_a_resume_refuses_a_training_curve_cut_short(tmp_path):
    out = tmp_path / "out"
    run_experiment("smoke", "baseline", 0, out)
    run_dir = out / "results" / "smoke" / "baseline"
    (run_dir / "seed0.json").unlink()                               # as if killed before the result was written
    curve = run_dir / "seed0" / "metrics.jsonl"
    curve.write_text(curve.read_text().splitlines(keepends=True)[0])    # a curve cut by a kill mid-rewrite
    with pytest.raises(ResultConflictError, match="does not reach the checkpoint's step 6"):
        run_experiment("smoke", "baseline", 0, out, resume=True)


def test_a_training_log_read_while_a_row_is_being_written_gives_its_complete_rows(tmp_path):
    curve = tmp_path / "metrics.jsonl"
    curve.write_text('{"step": 5, "loss": 1.0}\n{"step": 10, "loss": 0.9}\n{"step": 15, "lo')
    assert [r["step"] for r in read_jsonl(curve)] == [5, 10]
    assert read_jsonl(tmp_path / "none.jsonl") == []


def test_a_full_disk_during_a_checkpoint_is_one_clear_error_and_leaves_no_temporary(tmp_path, monkeypatch):
    save = torch.save

    def no_space(obj, path, *args, **kwargs):
        if ".checkpoint." not in str(path):
            return save(obj, path, *args, **kwargs)
        open(path, "wb").write(b"partial")
        raise RuntimeError("[enforce fail at inline_container.cc] PytorchStreamWriter failed writing file: "
                           "No space left on device")
    monkeypatch.setattr(torch, "save", no_space)
    with pytest.raises(OutputDirError, match="cannot write the checkpoint at step 3"):
        run_experiment("smoke", "baseline", 0, tmp_path)
    assert not list((tmp_path / "results").rglob("*.tmp"))


def test_temporaries_left_by_a_killed_run_are_removed_when_it_resumes(tmp_path):
    run_dir = tmp_path / "results" / "smoke" / "baseline" / "seed0"
    run_dir.mkdir(parents=True)
    (run_dir / ".checkpoint.99999.tmp").write_bytes(b"\0" * 1000)
    run_experiment("smoke", "baseline", 0, tmp_path, resume=True)
    assert not list(run_dir.glob(".*.tmp"))


# ------------------------------------------------------------------------- property: any override value is safe

FIELDS = ("seed", "train.batch_size", "train.steps", "train.log_every", "train.ckpt_every", "train.warmup_frac",
          "train.base_lr", "train.weight_decay", "train.eps", "train.betas", "train.precision", "train.grad_clip",
          "train.logit_scale_init", "train.logit_scale_max", "model.num_heads", "model.image.patch_size",
          "model.tte_layer_scale", "model.variant", "data.crop_scale", "eval.retrieval_chunk", "eval.batch_size")


def _values():
    from hypothesis import strategies as st
    return st.one_of(st.integers(-3, 40), st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
                     st.text(max_size=6), st.sampled_from(["fp8", "bf16", "1e-3", "0.5,1.0", "nan", "tte_after_ls"]),
                     st.lists(st.floats(-1, 2), max_size=3), st.integers(2 ** 31, 2 ** 40))


def test_any_config_override_trains_one_smoke_step_or_raises_config_error(tmp_path_factory):
    """Property (hypothesis): an override either resolves to a config that trains one smoke step, or raises
    ConfigError; never another exception."""
    from hypothesis import HealthCheck, given, settings, strategies as st

    @settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(field=st.sampled_from(FIELDS), value=_values())
    def check(field, value):
        try:
            cfg = get_config("smoke", seed=value if field == "seed" else 0,
                             overrides=None if field == "seed" else {field: value})
        except ConfigError:
            return
        from dataclasses import replace
        cfg = replace(cfg, train=replace(cfg.train, steps=1))
        run_experiment(config=cfg, out_dir=tmp_path_factory.mktemp("prop"))

    check()


def test_make_lab_starts_a_server_that_answers(tmp_path):
    """``make lab`` serves the notebooks folder, as root (where it needs jupyter's --allow-root) and as a user."""
    import shutil
    import socket
    import urllib.request

    from thesis_lib.paths import ROOT
    if not (ROOT / ".venv" / "bin" / "jupyter").exists() or not shutil.which("make"):
        pytest.skip("needs the .venv that `make setup` creates")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = f"LAB_ARGS=--no-browser --port={port} --ServerApp.token= --ServerApp.root_dir={ROOT / 'notebooks'}"
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path), "JUPYTER_CONFIG_DIR": str(tmp_path)}
    server = subprocess.Popen(["make", "-s", "-o", ".venv/bin/.installed", "lab", args], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        listing = None
        for _ in range(120):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/contents/", timeout=2) as r:
                    listing = json.loads(r.read())
                break
            except OSError:
                if server.poll() is not None:
                    pytest.fail(f"make lab exited: {server.stderr.read().decode()[-500:]}")
                time.sleep(0.5)
        names = {c["name"] for c in (listing or {}).get("content", [])}
        assert "03_tte_layerscale.ipynb" in names, names
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


# ------------------------------------------------------------------ one clear line where a traceback used to be

@pytest.mark.parametrize("field,value,message", [
    ("train.batch_size", 0, "train.batch_size must be an integer ≥ 1"),
    ("train.ckpt_every", 0, "train.ckpt_every must be an integer ≥ 1"),
    ("train.base_lr", "nan", "train.base_lr must be a finite number > 0"),
    ("model.num_heads", 5, r"model.dim \(32\) must be divisible by model.num_heads \(5\)"),
    ("model.image.patch_size", 5, r"img_size \(16\) must be divisible by model.image.patch_size \(5\)"),
    ("train.steps", 0, "train.steps must be an integer ≥ 1"),
    ("train.precision", "fp8", "train.precision must be one of auto, fp32, bf16, fp16"),
    ("train.warmup_frac", 2, "the peak is never reached"),
    ("data.crop_scale", "a,b", "config field 'data.crop_scale' expects numbers"),
])
def test_catalogue_config_values_out_of_range(field, value, message):
    with pytest.raises(ConfigError, match=message):
        get_config("smoke", overrides={field: value})


def test_catalogue_seed_beyond_numpy_range():
    with pytest.raises(ConfigError, match=r"seed must be in \[0, 2\^32\)"):
        get_config("smoke", seed=2 ** 32)


def test_catalogue_result_files_of_the_wrong_shape(tmp_path):
    from thesis_lib.training.results import read_result
    good = {"preset": "smoke", "variant": "baseline", "seed": 0, "config": {}, "train": {},
            "metrics": {"imagenet_top1": 1.0, "coco_mean": 1.0}}
    for name, content in (("list.json", b"[1, 2]"), ("latin1.json", "{\"a\": \"\xe9\"}".encode("latin-1")),
                          ("no_metric.json", json.dumps(good).encode())):
        (tmp_path / name).write_bytes(content)
        with pytest.raises(ResultConflictError, match=f"{name} is (not a result|corrupt)"):
            read_result(tmp_path / name)


def test_catalogue_karpathy_json_not_utf8_null_or_empty_caption_duplicate_id(tiny_coco):
    path = tiny_coco / "dataset_coco.json"
    original = path.read_text()
    path.write_bytes(original.replace("caption 0 of image 0", "caption \xe9").encode("latin-1"))
    with pytest.raises(DataError, match="is not UTF-8"):
        load_karpathy_split(path, tiny_coco / "images", "train")
    for raw in (None, "  "):
        data = json.loads(original)
        data["images"][0]["sentences"][1]["raw"] = raw
        path.write_text(json.dumps(data))
        with pytest.raises(DataError, match=r"images\[0\].sentences\[1\].raw is .*non-empty string"):
            load_karpathy_split(path, tiny_coco / "images", "train")
    data = json.loads(original)
    tests = [e for e in data["images"] if e["split"] == "test"]
    tests[1]["cocoid"] = tests[2]["cocoid"]                          # two different files, one id
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match="is also the id of .*another file"):
        load_karpathy_split(path, tiny_coco / "images", "test")


def test_catalogue_decompression_bomb_is_a_data_error(tmp_path, monkeypatch):
    from PIL import Image
    Image.new("RGB", (64, 64)).save(tmp_path / "bomb.png")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)             # 64² > 2 × 1000: PIL refuses to decode
    with pytest.raises(DataError, match="cannot read image .*bomb.png"):
        open_image(str(tmp_path / "bomb.png"))


def test_catalogue_hidden_folder_is_no_class_and_an_empty_class_folder_is_an_error(tmp_path):
    from PIL import Image

    from thesis_lib.data.datasets import load_imagenet_folder
    val = tmp_path / "val"
    for wnid in ("n01", "n02"):
        (val / wnid).mkdir(parents=True)
        Image.new("RGB", (8, 8)).save(val / wnid / "a.JPEG")
    (val / ".ipynb_checkpoints").mkdir()
    (tmp_path / "classnames.json").write_text(json.dumps({"classnames": ["cat", "dog"]}))
    records, names, _ = load_imagenet_folder(val)
    assert names == ["cat", "dog"] and len(records) == 2
    (val / "n02" / "a.JPEG").unlink()
    with pytest.raises(DataError, match="1 class folder.* hold no images, e.g. n02"):
        load_imagenet_folder(val)


def test_catalogue_non_finite_loss_before_the_first_checkpoint_names_none(tmp_path, monkeypatch):
    import thesis_lib.training.engine as engine
    real = engine.compute_loss

    def poisoned(*args, **kwargs):
        loss, parts = real(*args, **kwargs)
        return loss * float("nan"), parts
    monkeypatch.setattr(engine, "compute_loss", poisoned)
    with pytest.raises(NonFiniteLossError, match="at step 1; no checkpoint had been written yet"):
        run_experiment("smoke", out_dir=tmp_path)


def test_catalogue_ctrl_c_says_how_to_resume(monkeypatch, capsys):
    import thesis_lib.training.run as train
    monkeypatch.setenv("THESIS_PROGRESS", "0")                      # main() sets it for --no-progress

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(train, "run_experiment", interrupted)
    assert main(["--preset", "smoke", "--no-progress"]) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--resume" in err and "Traceback" not in err


@pytest.fixture(scope="module")
def one_smoke_run(tmp_path_factory):
    """A folder whose results hold one run: the baseline's seed 0 at the smoke scale (trained once for the file)."""
    out = tmp_path_factory.mktemp("one_run")
    run_experiment("smoke", "baseline", 0, out)
    return out


@pytest.mark.parametrize("module", ["thesis_lib.study.pages.report", "thesis_lib.study.pages.figures"])
def test_catalogue_report_and_figures_cli_bad_scale_no_runs_and_a_single_run(tmp_path, module, one_smoke_run,
                                                                             capsys):
    from importlib import import_module
    main_of = import_module(module).main
    assert main_of(["--preset", "huge"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "preset must be one of" in err
    # no runs at all (a fresh clone at the thesis scale): said in one line, nothing drawn that needs a run
    empty = ["--preset", "thesis", "--output-dir", str(tmp_path)]
    if module.endswith(".report"):
        assert main_of(empty) == 0 and "_No results of the thesis scale yet" in capsys.readouterr().out
    else:                   # without data_root or checkpoints: the figures read stored results only
        from thesis_lib.study.pages.figures import FIGURES
        err = capsys.readouterr().err if main_of(empty) == 1 else "exit status was not 1"
        drawn_from_runs = sum(bool(f.reads.variants) for f in FIGURES.values())
        assert f"{drawn_from_runs} of {len(FIGURES)} figures skipped" in err and "needs data_root" not in err, err
    # one run, through `python -m` as a user calls it
    args = ["--preset", "smoke", "--seeds", "[0]"] + (["--output-dir", str(one_smoke_run)]
                                                      if module.endswith(".figures") else [])
    env = {**os.environ, "THESIS_RESULTS": str(one_smoke_run / "results")}
    one = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert "Traceback" not in one.stderr, one.stderr[-800:]
    if module.endswith(".report"):      # the table of what exists, and what is missing
        assert one.returncode == 0 and "No results yet for tte_before" in one.stdout
    else:                       # the figures that can be drawn are, the others named; exit 1 says some are missing
        assert one.returncode == 1 and "skipped 04_gamma" in one.stderr and "figures skipped" in one.stderr
        assert list(one_smoke_run.rglob("01_baseline_curves.png"))


def _partial_demo_results(root, variants, keep=("metrics.jsonl", "layerscale.npy"), drop=()):
    """A copy of the committed demo results of ``variants`` under ``root/results/demo``: their result files (less the
    top-level fields ``drop``) and, of their run folders, the files named in ``keep``."""
    from thesis_lib.paths import ROOT
    for v in variants:
        for result in sorted((ROOT / "results" / "demo" / v).glob("seed*.json")):
            to = root / "results" / "demo" / v / result.name
            to.parent.mkdir(parents=True, exist_ok=True)
            to.write_text(json.dumps({k: x for k, x in json.loads(result.read_text()).items() if k not in drop}))
            for name in keep:
                if (result.with_suffix("") / name).exists():
                    (to.with_suffix("") / name).parent.mkdir(exist_ok=True)
                    (to.with_suffix("") / name).write_bytes((result.with_suffix("") / name).read_bytes())


def test_figures_cli_with_some_variants_names_the_missing_runs_and_writes_no_empty_figure(tmp_path, monkeypatch,
                                                                                         capsys):
    """Issue 27: Table 1's 2 × 2 and the baseline with their curves, tte_after_ls without its run folder (no γ, no
    curve). A figure whose runs are missing, or that would be empty, is skipped with a note naming the runs it needs
    and the missing ones, and no file; the others are written."""
    from thesis_lib.study.pages import figures
    _partial_demo_results(tmp_path, ["baseline", "tte_before", "noln", "tte_before_noln"])
    _partial_demo_results(tmp_path, ["tte_after_ls"], keep=())
    monkeypatch.chdir(tmp_path)
    assert figures.main(["--preset", "demo", "--output-dir", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    notes = dict(line.removeprefix("skipped ").split(": ", 1) for line in err.splitlines()
                 if line.startswith("skipped"))
    drawn = {"00_patch_grid", "00_positional_similarity", "00_world_strip", "00_pre_vs_post_ln", "01_baseline_curves",
             "02_table1_forest", "02_table1_bars", "03_table2_forest", "headline"}
    assert set(notes) == set(figures.FIGURES) - drawn, err
    assert notes["04_dose_forest"] == (
        "needs results of baseline, tte_after_ls, tte_after_ls_init1e-3, tte_after_ls_init1e-1, tte_after_ls_init1 "
        "(seeds 0-3), found none of tte_after_ls_init1e-3, tte_after_ls_init1e-1, tte_after_ls_init1 "
        "under results/demo")
    assert notes["03_loss_curves"] == ("needs the training curves (metrics.jsonl) of baseline, tte_after_ls "
                                       "(seeds 0-3), found none of tte_after_ls under results/demo")
    assert notes["04_gamma_per_channel"] == ("needs the final LayerScale γ (layerscale.npy) of tte_after_ls "
                                             "(seeds 0-3), found none under results/demo")
    assert notes["05_dual_encoder_forest"] == ("needs results of baseline, tte_after_ls, mome (seeds 0-3), found none "
                                               "of mome under results/demo")
    assert notes["04_confirmation_forest"].startswith("needs the runs of thesis-lr-sum-confirm")
    assert not any(word in err for word in ("Error", "Traceback", "'seed'", "attribute")), err
    written = {f.stem for f in (tmp_path / "figures").iterdir()}
    assert written == drawn and len(list((tmp_path / "figures").iterdir())) == 2 * len(drawn)
    assert out.splitlines() == [f"{tmp_path / 'figures' / name}.png/.pdf" for name in figures.FIGURES if name in drawn]


def test_draw_raises_missing_results_and_writes_nothing(tmp_path):
    """The notebooks' ``figures.draw``: a figure without its runs raises MissingResultsError, and writes no file."""
    from thesis_lib.errors import MissingResultsError
    from thesis_lib.study.pages import figures
    params = study_params("demo", [0, 1], need_data=False, output_dir=str(tmp_path))
    with pytest.raises(MissingResultsError, match=r"needs results of baseline, tte_after_ls, mome "
                                                  r"\(seeds 0-1\), found none under /"):
        figures.draw("05_dual_encoder_forest", params)
    assert not (tmp_path / "figures").exists()


def test_make_reproduce_replaces_results_only_after_every_notebook_ran():
    """`make -n` prints the recipe: nothing under results/ is removed before the last notebook has run, the other
    presets' results and ablations are never removed, and only the demo rewrites the README's results block."""
    from thesis_lib.study.runs import ABLATIONS
    from thesis_lib.paths import ROOT
    for preset in ("thesis", "demo"):
        lines = subprocess.run(["make", "-n", "-C", str(ROOT), "reproduce", f"PRESET={preset}", "VENV=/nonexistent"],
                               capture_output=True, text=True, check=True).stdout.splitlines()
        papermill = max(i for i, line in enumerate(lines) if "papermill" in line)
        removals = [(i, line) for i, line in enumerate(lines) if "rm -rf" in line and "results/" in line]
        assert removals and all(i > papermill for i, _ in removals), removals
        removed = [w for _, line in removals for w in line.split("rm -rf", 1)[1].split("&&")[0].split()]
        from thesis_lib.study.claims.designs import REPRODUCED
        assert sorted(removed) == sorted([f"results/{preset}", *(f"results/_ablations/{a}/results/{preset}"
                                                                   for a in ABLATIONS),
                                          *(f"results/_designs/{d}/results/{preset}" for d in REPRODUCED)])
        readme = [line for line in lines if "--update-readme" in line]
        assert len(readme) == 1 and 'if [ "' + preset + '" = demo ]' in readme[0]
