"""Refactoring leaves the numbers alone: every variant, trained at the smoke scale with seed 0 on one thread, gives the
metrics and the loss curve stored in ``tests/golden/smoke_seed0.json`` bit for bit (written by the code before the
package was reorganised, commit a9eb52b). At the demo scale, ``make verify`` reruns one committed run per variant
family and compares it with ``results/demo`` (see ``test_demo_runs_equal_the_committed_results``).

A change that is meant to alter the numbers rewrites the golden file on purpose:
``python tests/test_reproducible.py --update``.
"""
import json
import os
import sys
from pathlib import Path

import pytest

from thesis_lib.paths import ROOT
from thesis_lib.training.run import one_thread, run_experiment
from thesis_lib.variants import VARIANTS

GOLDEN = Path(__file__).parent / "golden" / "smoke_seed0.json"
DEMO_FAMILIES = ("baseline", "tte_before", "tte_after_ls", "tte_before_noln", "mome", "switch_sib")


def smoke_runs(out_dir) -> dict:
    out = {}
    with one_thread():
        for variant in VARIANTS:
            result = run_experiment("smoke", variant, 0, out_dir=out_dir)
            curve = Path(out_dir) / "results" / "smoke" / variant / "seed0" / "metrics.jsonl"
            out[variant] = {"metrics": result["metrics"], "curve": [json.loads(x) for x in curve.open()]}
    return out


def test_every_variant_reproduces_the_golden_smoke_run(tmp_path, monkeypatch):
    """In a data folder of its own: the golden file's world and pretraining were prepared on one thread too."""
    monkeypatch.setenv("THESIS_DATA", str(tmp_path / "data"))
    golden = json.loads(GOLDEN.read_text())
    ours = json.loads(json.dumps(smoke_runs(tmp_path)))      # the same JSON round trip as the stored file
    assert set(ours) == set(golden), "the variant registry changed: update the golden file on purpose"
    for variant in golden:
        assert ours[variant]["curve"] == golden[variant]["curve"], f"{variant}: the loss curve differs"
        assert ours[variant]["metrics"] == golden[variant]["metrics"], f"{variant}: the metrics differ"


@pytest.mark.skipif(os.environ.get("THESIS_VERIFY_DEMO") != "1", reason="demo scale: run with `make verify`")
def test_demo_runs_equal_the_committed_results(tmp_path):
    """One committed demo run (seed 0) of each variant family, retrained from scratch: identical metrics and curve."""
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
    GOLDEN.write_text(json.dumps(smoke_runs(tempfile.mkdtemp()), indent=1, sort_keys=True))
    print(f"wrote {GOLDEN}")
