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

from thesis_lib.numerics import one_thread, pin_message, vendor_message, written_on
from thesis_lib.paths import ROOT
from thesis_lib.training.run import run_experiment
from thesis_lib.variants import VARIANTS

GOLDEN = Path(__file__).parent / "golden" / "smoke_seed0.json"
# Across CPU vendors (docs/reproducibility.md, measured on an emulated AMD EPYC against an Intel Xeon): the smoke
# metrics are equal and a few curve values differ in the last bits: 3.2e-7 relative at most (the LayerScale
# statistics relative to the vector's largest entry, since its mean is a cancelling sum); the bound is 6 times that.
ACROSS_VENDORS_RTOL = 2e-6
DEMO_FAMILIES = ("baseline", "tte_before", "tte_after_ls", "tte_after_ls_budget", "tte_before_noln", "mome", "switch_sib")


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


def numbers(row, prefix=""):
    """A curve row's numbers by dotted key (the LayerScale statistics are a nested dict)."""
    for key, value in row.items():
        if isinstance(value, dict):
            yield from numbers(value, f"{prefix}{key}.")
        else:
            yield prefix + key, value


def golden_differences(ours: dict, golden: dict, same_vendor: bool) -> list[str]:
    """What differs between our smoke runs and the golden ones: everything bit for bit on a CPU of the golden file's
    vendor; on another vendor the metrics bit for bit and the curves' floats to ``ACROSS_VENDORS_RTOL``."""
    if set(ours) != set(golden):
        return ["the variant registry changed: update the golden file on purpose"]
    out = []
    for variant in golden:
        mine, stored = ours[variant], golden[variant]
        if mine["metrics"] != stored["metrics"]:
            out.append(f"{variant}: the metrics differ")
        if same_vendor or len(mine["curve"]) != len(stored["curve"]):
            out += [f"{variant}: the loss curve differs"] if mine["curve"] != stored["curve"] else []
            continue
        for row, row_b in zip(mine["curve"], stored["curve"]):
            for (key, a), (key_b, b) in zip(numbers(row), numbers(row_b)):
                if not isinstance(b, float):                     # the step, a missing LayerScale (None)
                    bad = (key, a) != (key_b, b)
                else:
                    scale = row_b["layerscale"]["abs_max"] if key.startswith("layerscale.") else abs(b)
                    bad = key != key_b or not abs(a - b) <= ACROSS_VENDORS_RTOL * scale
                if bad:
                    out.append(f"{variant}: {key} at step {row['step']} differs beyond the vendors' last bits "
                               f"({a} vs {b})")
    return out


def test_every_variant_reproduces_the_golden_smoke_run(tmp_path, monkeypatch):
    """In a data folder of its own, so that the world and the pretraining are made here too."""
    require_pin()
    monkeypatch.setenv("THESIS_DATA", str(tmp_path / "data"))
    golden = json.loads(GOLDEN.read_text())
    same_vendor = vendor_message(golden.pop("_written_on"), "the golden runs") is None
    ours = json.loads(json.dumps(smoke_runs(tmp_path)))      # the same JSON round trip as the stored file
    problems = golden_differences(ours, golden, same_vendor)
    assert not problems, "; ".join(problems[:5])


def test_the_golden_comparison_across_vendors_tolerates_last_bits_only():
    golden = json.loads(GOLDEN.read_text())
    golden.pop("_written_on")
    ours = json.loads(json.dumps(golden))
    row = ours["tte_after_ls"]["curve"][-1]
    row["loss"] *= 1 + 2e-7                                                    # 1-2 ulps: another vendor's MKL
    row["layerscale"]["mean"] += 2e-7 * row["layerscale"]["abs_max"]
    assert golden_differences(ours, golden, same_vendor=False) == []
    assert golden_differences(ours, golden, same_vendor=True) == ["tte_after_ls: the loss curve differs"]
    row["itc"] *= 1 + 1e-5                                                     # more than rounding
    ours["baseline"]["metrics"]["coco_mean"] += 1e-9                           # metrics: bit for bit everywhere
    problems = golden_differences(ours, golden, same_vendor=False)
    assert problems == ["baseline: the metrics differ", f"tte_after_ls: itc at step {row['step']} differs beyond "
                        f"the vendors' last bits ({row['itc']} vs {golden['tte_after_ls']['curve'][-1]['itc']})"]


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
    """One committed demo run (seed 0) of each variant family, retrained from scratch: identical metrics and curve,
    on a CPU of the vendor the results were written on (over 600 steps the vendors' last bits grow into the
    metrics)."""
    require_pin()
    message = vendor_message(json.loads((ROOT / "results" / "demo" / "written_on.json").read_text()),
                             "the committed demo results")
    if message:
        pytest.fail(message, pytrace=False)
    from thesis_lib.study import run_many
    jobs = [dict(preset="demo", variant=v, seed=0, out_dir=str(tmp_path), device="cpu") for v in DEMO_FAMILIES]
    run_many(jobs)
    for variant in DEMO_FAMILIES:
        committed = ROOT / "results" / "demo" / variant
        ours = tmp_path / "results" / "demo" / variant
        assert (json.loads((ours / "seed0.json").read_text())["metrics"]
                == json.loads((committed / "seed0.json").read_text())["metrics"]), variant
        assert (ours / "seed0" / "metrics.jsonl").read_text() == (committed / "seed0" / "metrics.jsonl").read_text()


@pytest.mark.skipif(os.environ.get("THESIS_VERIFY_DEMO") != "1", reason="demo scale: run with `make verify`")
def test_the_shipped_demo_stand_ins_rebuild_bit_for_bit(tmp_path, monkeypatch):
    """The pretrained stand-ins `make demo` loads from thesis_lib/assets/, pretrained again from scratch in an empty
    data folder: every tensor equal, on a CPU of the vendor they were built on."""
    from thesis_lib.config import get_config
    from thesis_lib.models.checkpoints import torch_load
    from thesis_lib.models.sources import DEMO_FILES, shipped_folder
    from thesis_lib.training.prepare import prepare_assets
    from thesis_lib.training.pretrain import build_demo_weights
    require_pin()
    cfg = get_config("demo")
    shipped = shipped_folder(cfg)
    message = vendor_message(json.loads((shipped / "pretrain.json").read_text())["written_on"], "the shipped stand-ins")
    if message:
        pytest.fail(message, pytrace=False)
    monkeypatch.setenv("THESIS_DATA", str(tmp_path / "data"))
    prepare_assets(cfg, pretrained=False)                                        # world and tokenizer
    with one_thread():                                                           # as make pretrained built them
        build_demo_weights(cfg, tmp_path / "rebuilt")
    for name in DEMO_FILES.values():
        ours, theirs = (_tensors(torch_load(folder / name)) for folder in (tmp_path / "rebuilt", shipped))
        assert ours.keys() == theirs.keys() and all(torch.equal(ours[k], theirs[k]) for k in ours), name


def _tensors(obj, prefix=""):
    """Every tensor in a checkpoint's nested dicts, by dotted key."""
    if isinstance(obj, torch.Tensor):
        return {prefix: obj}
    if isinstance(obj, dict):
        return {k: v for key, value in obj.items() for k, v in _tensors(value, f"{prefix}{key}.").items()}
    return {}


if __name__ == "__main__" and "--update" in sys.argv:
    import tempfile
    if pin_message():
        sys.exit(f"error: {pin_message()}")
    os.environ["THESIS_DATA"] = tempfile.mkdtemp()
    GOLDEN.write_text(json.dumps({"_written_on": written_on(), **smoke_runs(tempfile.mkdtemp())}, indent=1,
                                 sort_keys=True))
    print(f"wrote {GOLDEN}")
