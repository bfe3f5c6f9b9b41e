"""data/throughput.py: the data path's rate measured on the run's own samples, the time the loop waits for its
batches, and the warning when waiting dominates; cached teacher targets spare the teacher's view."""
import time
import warnings

import pytest
import torch

from thesis_lib import get_config, run_experiment
from thesis_lib.data import train_pairs
from thesis_lib.data.throughput import (
    MIN_STEPS,
    SAMPLES,
    DataPathRate,
    DataPathWarning,
    WaitClock,
    usable_cores,
    wait_warning,
)
from thesis_lib.data.tokenizer import CaptionTokenizer
from thesis_lib.data.train_pairs import TrainPairs


def _pairs(root, workers=8, in_memory=False):
    cfg = get_config("thesis", overrides={
        "data.train_sets": "coco", "data.root": str(root), "data.num_workers": workers, "data.in_memory": in_memory,
        "train.batch_size": 4, "model.image.img_size": 32, "model.image.patch_size": 8, "model.dim": 32,
        "model.num_heads": 2, "teacher.dim": 32, "teacher.num_heads": 2, "teacher.patch_size": 8})
    tok = CaptionTokenizer(lambda caps: [[5 + ord(c) % 40 for c in cap] for cap in caps], 64, 0, 2, 1, 3, 16, "chars")
    return TrainPairs.of(cfg, tok, root)


def test_the_wait_clock_counts_the_time_spent_getting_batches():
    def slow():
        for k in range(3):
            time.sleep(0.03)
            yield k
    clock = WaitClock(slow())
    assert list(clock) == [0, 1, 2] and 0.06 <= clock.waited < 0.5          # the first batch (start-up) not counted
    assert clock.first_at is not None and clock.since_first() >= clock.waited


def test_the_warning_comes_only_when_waiting_dominates():
    rate = DataPathRate("pil", 50.0, 8, 8)
    assert wait_warning(0.2, 1.0, 900.0, rate) is None                     # 20 %: the step is the limit
    message = wait_warning(0.6, 1.0, 380.0, rate)
    assert "60 %" in message and "380 pairs/s reached" in message and "8 workers × 50 pairs/s" in message
    assert "≈ 400 pairs/s" in message and "data.decoder=pil_draft" in message
    assert DataPathRate("pil", 50.0, 8, 2).message().startswith("data path: 8 workers, 2 CPU cores × 50")


def test_the_data_path_rate_is_measured_on_the_runs_own_samples(tiny_coco):
    pairs = _pairs(tiny_coco.parent)
    before = torch.get_rng_state()
    rate = pairs.data_path_rate(cached_targets=False)
    assert torch.equal(torch.get_rng_state(), before)                    # the samples' seeding does not leak
    assert rate.per_core > 0 and rate.workers == 8 and rate.parallel == min(8, usable_cores())
    assert rate.decoder == "pil" and f"measured on {SAMPLES} training samples" in rate.message()
    assert _pairs(tiny_coco.parent, workers=0, in_memory=True).data_path_rate(cached_targets=False) is None


def test_cached_teacher_targets_spare_the_teachers_view_and_change_nothing_else(tiny_coco):
    pairs = _pairs(tiny_coco.parent, workers=0)
    targets = torch.randn(len(pairs.image_files), 32)
    plain, cached = next(pairs.batches(0, 1)), next(pairs.batches(0, 1, targets))
    assert "teacher_images" in plain and "teacher_images" not in cached
    assert torch.equal(plain["images"], cached["images"]) and torch.equal(cached["targets"],
                                                                          targets[plain["image_index"]])


def test_a_run_whose_data_path_is_slow_says_so(tmp_path, monkeypatch, capfd):
    decode = train_pairs.decode

    def slow_decode(*args, **kwargs):
        time.sleep(0.01)
        return decode(*args, **kwargs)
    monkeypatch.setattr(train_pairs, "decode", slow_decode)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run_experiment("smoke", "baseline", 0, out_dir=tmp_path, overrides={
            "data.in_memory": False, "train.steps": MIN_STEPS + 1, "train.log_every": 1})
    assert "data path: the training process (data.num_workers=0) × " in capfd.readouterr().err
    slow = [w for w in caught if issubclass(w.category, DataPathWarning)]
    assert len(slow) == 1 and "% of the time went into waiting" in str(slow[0].message)
    assert 0 < result["train"]["data_wait_s"] < result["train"]["time_s"]
    with warnings.catch_warnings(record=True) as caught:                   # a run too short to judge: no warning
        warnings.simplefilter("always")
        run_experiment("smoke", "baseline", 0, out_dir=tmp_path / "short", overrides={
            "data.in_memory": False, "train.steps": MIN_STEPS, "train.log_every": 1})
    assert not [w for w in caught if issubclass(w.category, DataPathWarning)]


@pytest.mark.parametrize("share", [0.0, 0.25])
def test_no_warning_at_or_below_the_threshold(share):
    assert wait_warning(share, 1.0, 1000.0, None) is None
