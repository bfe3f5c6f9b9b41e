"""The numbers are the same bits on every machine with the instruction-set pin (thesis_lib.numerics,
docs/reproducibility.md), whatever its core count, and refactoring leaves them alone:

* every variant, trained at the smoke scale with seed 0, gives the metrics and the loss curve stored in
  ``tests/golden/smoke_seed0.json`` bit for bit; at the demo scale, ``make verify`` reruns one committed run per
  variant family and compares it with ``results/demo``. Both first check that the pin is in effect;
* the same run twice (another process, another thread count, its assets prepared anew) gives the same bits, and the
  prepared assets do not depend on the number of threads — without any stored file.

A change that is meant to alter the numbers rewrites the golden file on purpose, with the pin in effect:
``make golden`` (``python tests/test_reproducible.py --update`` under the pin).
"""
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from thesis_lib.numerics import pin_message
from thesis_lib.paths import ROOT
from thesis_lib.training.run import run_experiment
from thesis_lib.variants import VARIANTS

GOLDEN = Path(__file__).parent / "golden" / "smoke_seed0.json"
DEMO_FAMILIES = ("baseline", "tte_before", "tte_after_ls", "tte_before_noln", "mome", "switch_sib")


def require_pin():
    message = pin_message()
    if message:
        pytest.fail(message, pytrace=False)


def curve(out_dir, preset, variant, seed=0) -> list:
    path = Path(out_dir) / "results" / preset / variant / f"seed{seed}" / "metrics.jsonl"
    return [json.loads(x) for x in path.open()]


def smoke_runs(out_dir) -> dict:
    return {v: {"metrics": run_experiment("smoke", v, 0, out_dir=out_dir)["metrics"],
                "curve": curve(out_dir, "smoke", v)} for v in VARIANTS}


def test_every_variant_reproduces_the_golden_smoke_run(tmp_path, monkeypatch):
    """In a data folder of its own, so that the world and the pretraining are made here too."""
    require_pin()
    monkeypatch.setenv("THESIS_DATA", str(tmp_path / "data"))
    golden = json.loads(GOLDEN.read_text())
    ours = json.loads(json.dumps(smoke_runs(tmp_path)))      # the same JSON round trip as the stored file
    assert set(ours) == set(golden), "the variant registry changed: update the golden file on purpose"
    for variant in golden:
        assert ours[variant]["curve"] == golden[variant]["curve"], f"{variant}: the loss curve differs"
        assert ours[variant]["metrics"] == golden[variant]["metrics"], f"{variant}: the metrics differ"


def digests(folder: Path) -> dict:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.name.endswith(".lock")}


def test_prepared_assets_do_not_depend_on_the_thread_count(tmp_path, monkeypatch):
    from thesis_lib.config import get_config
    from thesis_lib.training.prepare import prepare_assets
    before = torch.get_num_threads()
    made = {}
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            monkeypatch.setenv("THESIS_DATA", str(tmp_path / f"threads{threads}"))
            prepare_assets(get_config("smoke"))
            made[threads] = digests(tmp_path / f"threads{threads}")
    finally:
        torch.set_num_threads(before)
    assert len(made[1]) > 10 and made[1] == made[2]


def test_the_same_run_in_another_process_on_two_threads_gives_the_same_bits(tmp_path):
    """Here (one thread, as every CPU run) and in a fresh process started with two threads and a data folder of its
    own: identical curve and metrics, with no stored file involved."""
    here = run_experiment("smoke", "tte_after_ls", 3, out_dir=tmp_path / "a")
    env = {**os.environ, "THESIS_DATA": str(tmp_path / "data-b"), "OMP_NUM_THREADS": "2"}
    subprocess.run([sys.executable, "-m", "thesis_lib.training.run", "--preset", "smoke", "--variant", "tte_after_ls",
                    "--seed", "3", "--out", str(tmp_path / "b")], env=env, check=True, capture_output=True)
    there = json.loads((tmp_path / "b" / "results" / "smoke" / "tte_after_ls" / "seed3.json").read_text())
    assert there["metrics"] == here["metrics"]
    assert curve(tmp_path / "b", "smoke", "tte_after_ls", 3) == curve(tmp_path / "a", "smoke", "tte_after_ls", 3)


@pytest.mark.skipif(os.environ.get("THESIS_VERIFY_DEMO") != "1", reason="demo scale: run with `make verify`")
def test_demo_runs_equal_the_committed_results(tmp_path):
    """One committed demo run (seed 0) of each variant family, retrained from scratch: identical metrics and curve."""
    require_pin()
    from thesis_lib.study import run_many
    jobs = [dict(preset="demo", variant=v, seed=0, out_dir=str(tmp_path), device="cpu") for v in DEMO_FAMILIES]
    run_many(jobs)
    for variant in DEMO_FAMILIES:
        committed = ROOT / "results" / "demo" / variant
        ours = tmp_path / "results" / "demo" / variant
        assert (json.loads((ours / "seed0.json").read_text())["metrics"]
                == json.loads((committed / "seed0.json").read_text())["metrics"]), variant
        assert (ours / "seed0" / "metrics.jsonl").read_text() == (committed / "seed0" / "metrics.jsonl").read_text()


if __name__ == "__main__" and "--update" in sys.argv:
    import tempfile
    if pin_message():
        sys.exit(f"error: {pin_message()}")
    os.environ["THESIS_DATA"] = tempfile.mkdtemp()
    GOLDEN.write_text(json.dumps(smoke_runs(tempfile.mkdtemp()), indent=1, sort_keys=True))
    print(f"wrote {GOLDEN}")
