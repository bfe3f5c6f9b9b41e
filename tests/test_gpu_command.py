"""benchmarks/gpu.py (and gpu.sh) run end to end on CPU in dry mode; the data-path decoders agree with PIL."""
import importlib.util
import json
import subprocess
import sys

import numpy as np
import torch

from thesis_lib.data.decode import DECODERS, decode
from thesis_lib.paths import ROOT


def _module(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_gpu_command_runs_dry_on_cpu_and_writes_its_tables(tmp_path):
    done = subprocess.run([sys.executable, "benchmarks/gpu.py", "--dry", "--out", str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "gpu.json").read_text())
    assert report["peak_tflops"] > 0 and len(report["steps"]) == 4
    assert {(r["batch"], r["compiled"]) for r in report["steps"]} == {(4, False), (8, False), (4, True), (8, True)}
    assert all(r["pairs_per_s"] > 0 and 0 < r["mfu"] < 1 and 0 < r["teacher_share"] < 1 for r in report["steps"])
    assert set(report["data"]) == {f"{d}, per CPU core" for d in DECODERS}
    assert "| batch 8, compiled |" in (tmp_path / "gpu.md").read_text()


def test_the_decoders_give_the_same_picture():
    jpeg = _module("data_pipeline").coco_like_jpegs(1)[0]
    full = np.asarray(decode(jpeg, "pil"), dtype=np.float64)                 # (480, 640, 3)
    tensor = decode(jpeg, "torchvision")
    assert isinstance(tensor, torch.Tensor) and tensor.shape == (3, 480, 640)
    assert np.abs(tensor.permute(1, 2, 0).numpy() - full).mean() < 2        # libjpeg builds may differ in rounding
    draft = decode(jpeg, "pil_draft", size=224)
    assert draft.size == (320, 240)                                          # 1/2 scale: both sides ≥ 224
    small = np.asarray(decode(jpeg, "pil").resize((320, 240), resample=3), dtype=np.float64)
    assert np.abs(np.asarray(draft, dtype=np.float64) - small).mean() < 6


def test_the_data_pipeline_benchmark_prints_its_table(capsys):
    _module("data_pipeline").main(["--images", "3"])
    out = capsys.readouterr().out
    assert all(f"| {d} |" in out for d in DECODERS) and "goal 160 / core" in out
