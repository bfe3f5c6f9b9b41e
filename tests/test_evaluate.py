"""thesis_lib.evaluate (``python -m thesis_lib.evaluate``): a checkpoint evaluated without retraining gives the
numbers its run wrote, bit for bit on the same machine (which both record); a file that is not a run's checkpoint is
a one-line error."""
import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from thesis_lib import run_experiment
from thesis_lib.evaluate import main
from thesis_lib.paths import ROOT

SECTIONS = ("metrics", "chance", "modality_probe", "tte_ablation", "tte_contribution", "config", "machine")


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    """A finished smoke run (its checkpoint is kept beside its result: training.results.RunPaths)."""
    out = tmp_path_factory.mktemp("out")
    result = run_experiment("smoke", "tte_after_ls", 0, out_dir=out)
    return out / "results" / "smoke" / "tte_after_ls" / "seed0" / "checkpoint.pt", result


def test_a_checkpoint_evaluated_gives_the_numbers_its_run_wrote(smoke_run, tmp_path, capsys):
    ckpt, result = smoke_run
    assert main([str(ckpt), "--out", str(tmp_path / "eval")]) == 0
    steps = result["train"]["steps"]
    written = tmp_path / "eval" / f"smoke-tte_after_ls-seed0-step{steps}-eval.json"
    got = json.loads(written.read_text())
    for section in SECTIONS:
        assert got[section] == result[section], section
    assert set(result["tte_ablation"]) == {"removed", "swapped"}
    without_file = lambda ls: {k: v for k, v in ls.items() if k != "values_file"}   # noqa: E731
    assert without_file(got["layerscale"]) == without_file(result["layerscale"])
    assert np.array_equal(np.load(written.parent / got["layerscale"]["values_file"]),
                          np.load(ckpt.parent / "layerscale.npy"))
    assert (got["preset"], got["variant"], got["seed"]) == ("smoke", "tte_after_ls", 0)
    assert result["machine"]["cpu"] and result["machine"]["cpu_capability"]     # where the run was computed
    assert got["checkpoint"] == str(ckpt.resolve()) and got["step"] == got["steps"] == steps
    out = capsys.readouterr().out
    assert "TTE removed" in out and "LayerScale γ" in out and str(written) in out


def _foreign_files(tmp_path, ckpt):
    """Files that are not a checkpoint of a run here, and what the error says of each."""
    other = tmp_path / "other.pt"
    torch.save({"model": {}, "step": 3}, other)                          # a torch file, no config
    huge = tmp_path / "huge.pt"
    state = torch.load(ckpt, weights_only=False)                         # our own file (it holds numpy's RNG)
    state["config"]["preset"] = "huge"                                   # a preset this version does not know
    torch.save(state, huge)
    return [(tmp_path / "missing.pt", "checkpoint not found"),
            (ckpt.parent.parent / "seed0.json", "is not a checkpoint of a thesis_lib run"),
            (other, "is not a checkpoint of a thesis_lib run"),
            (ckpt.parent, "is a folder, not a checkpoint file; its run's checkpoint is"),
            (huge, "unknown preset 'huge'")]


def test_a_file_that_is_not_a_runs_checkpoint_is_a_one_line_error(smoke_run, tmp_path, capsys):
    ckpt, _ = smoke_run
    for path, message in _foreign_files(tmp_path, ckpt):
        assert main([str(path), "--out", str(tmp_path / "eval"), "--no-progress"]) == 2, path
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err and str(path) in err and err.count("\n") == 1, err
    assert not (tmp_path / "eval").exists() or not any((tmp_path / "eval").iterdir())


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_a_device_this_machine_lacks_is_an_error(smoke_run, tmp_path, capsys):
    assert main([str(smoke_run[0]), "--out", str(tmp_path), "--device", "cuda"]) == 2
    assert "no CUDA GPU is visible" in capsys.readouterr().err


def test_python_m_thesis_lib_evaluate_is_the_command(tmp_path):
    """The module runs as the CLI (its main guard), without runpy's warning of a module imported twice."""
    out = subprocess.run([sys.executable, "-m", "thesis_lib.evaluate", str(tmp_path / "missing.pt"), "--out",
                          str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 2 and out.stderr.endswith(f"error: checkpoint not found: {tmp_path / 'missing.pt'}\n")
    assert "Warning" not in out.stderr and "Traceback" not in out.stderr
