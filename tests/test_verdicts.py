"""What the verdicts rest on (thesis_lib/study/claims/verdicts.py, reference.margin_conventions, stats.words): the
margin conventions against an independent computation, the thesis-noise table against binomial arithmetic, the one-line
conclusions against the claims table they come from."""
import math

import pandas as pd
import pytest
from scipy.special import expit, logit

from thesis_lib import study
from thesis_lib.study import reference
from thesis_lib.study.claims import sequential, verdicts
from thesis_lib.study.claims.stats import COMPATIBLE, words
from thesis_lib.study.claims import paired
from thesis_lib.study.pages import sentences


@pytest.fixture(autouse=True)
def fixed_design(monkeypatch):
    monkeypatch.setattr(sequential, "DESIGNS", {})


def frame(effect: float, noise, variants=("tte_before", "tte_after_ls")) -> pd.DataFrame:
    rows = []
    for s, e in enumerate(noise):
        base = {"imagenet_top1": 40.0 + s, "coco_mean": 20.0 + s, "flickr_mean": 30.0 + s, "imagenet_top5": 60.0}
        rows.append({"variant": "baseline", "seed": s, **base})
        rows += [{"variant": v, "seed": s, **{k: x + effect + e for k, x in base.items()}} for v in variants]
    return pd.DataFrame(rows)


def test_margin_conventions_equal_an_independent_computation():
    rows, ours = ("tte_before", "baseline"), 16.76
    m = reference.margin_conventions(rows, "coco_mean", ours)
    assert m["declared"] == pytest.approx(0.3 / 66.3 * ours)                      # the Aug 2024 chapter's 0.45 %
    assert m["other version"] == pytest.approx(0.87 / 66.87 * ours)               # the final text's 1.3 %
    shifted = expit(logit(ours / 100) + logit(0.660) - logit(0.663)) * 100
    assert m["log-odds"] == pytest.approx(abs(shifted - ours))
    assert m["error rate"] == pytest.approx(0.3 / 33.7 * (100 - ours))
    assert reference.margin_conventions(("tte_after", "baseline"), "coco_mean", ours)["other version"] is None


def test_sensitivity_shows_a_verdict_that_rests_on_the_convention():
    """An effect of 0 with an SD that puts the 90 % interval beyond the declared ±0.11 but inside the final text's
    wider margin: undecided as declared, equivalent under the other version."""
    df = frame(0.0, (0.0, 0.3, -0.3, 0.15, -0.15, 0.24, -0.24, 0.0))
    table = verdicts.sensitivity(df)
    row = table.loc[reference.CLAIMS[0].text]
    assert row["declared"].endswith(": undecided") and row["other version"].endswith(": equivalent")
    assert "change under some other convention" in sentences.sensitivity_note(verdicts.sensitivity_changed(table))


def test_thesis_noise_is_binomial_arithmetic():
    table = verdicts.thesis_noise(pd.DataFrame(columns=["variant", "seed"]))
    row = table[(table.comparison == "tte_before − baseline") & (table.metric == "COCO retrieval")
                & table.version.str.startswith("Aug")].iloc[0]
    p = 0.663
    per = [math.sqrt(p * (1 - p) / n) * 100 for n in (5000,) * 3 + (25010,) * 3]
    low, high = math.sqrt(2) * math.sqrt(sum(x * x for x in per)) / 6, math.sqrt(2) * sum(per) / 6
    assert row["test-set SE"] == f"{low:.2f}-{high:.2f}" and row._z_best == pytest.approx(0.3 / low)
    top1 = table[(table.metric == "ImageNet top-1") & table.version.str.startswith("Aug")
                 & (table.comparison == "tte_before − baseline")].iloc[0]
    assert top1._z_best == pytest.approx(0.5 / (math.sqrt(2 * 0.261 * 0.739 / 50000) * 100))
    assert row._z_conservative == pytest.approx(0.3 / high)       # the larger SE: the conservative z
    assert row["seed SD (carried)"] == "–" and row["φ"] == "–"      # no demo runs, no agreement measured
    note = study.thesis_noise_note(table)
    assert f"{int((table._z_conservative >= 1.96).sum())} exceed 1.96 test-set standard errors at the larger SE" in note
    assert f"and {int((table._z_best >= 1.96).sum())} at the smaller" in note


def test_thesis_noise_pairs_and_carries_on_the_logit_scale():
    """φ shrinks the larger SE by √(1 − φ); a seed SD measured at our baseline's score is carried to the thesis's on
    the logit scale (delta method), from the variant ``grids.NOISE_SEED_FROM`` names."""
    df = frame(0.0, (0.0, 0.2, -0.2, 0.1), ("tte_before", "tte_after", "tte_after_ls"))
    table = verdicts.thesis_noise(df, agreement={"coco_mean": 0.75})
    row = table[(table.comparison == "tte_after_ls − baseline") & (table.metric == "COCO retrieval")
                & table.version.str.startswith("Aug")].iloc[0]
    assert row._z_paired == pytest.approx(row._z_conservative * 2)          # √(1 − 0.75) = 1/2
    assert row["seed SD (carried)"].endswith("(tte_after)")
    base = df[df.variant.eq("baseline")].coco_mean.mean() / 100
    sd = paired.paired_test(df, ("tte_after", "none"), ("baseline", "none"), "coco_mean").sd
    assert float(row["seed SD (carried)"].split()[0]) == pytest.approx(
        sd * 0.663 * 0.337 / (base * (1 - base)), abs=0.006)


def test_thesis_noise_at_full_agreement_calls_a_difference_infinitely_many_paired_ses():
    """φ = 1 (two models that agree on every item, e.g. one against itself) leaves a paired SE of 0: a difference is
    then ±inf SEs and no difference nan, not a ZeroDivisionError."""
    df = frame(0.0, (0.0, 0.2, -0.2, 0.1), ("tte_before", "tte_after", "tte_after_ls"))
    table = verdicts.thesis_noise(df, agreement={"coco_mean": 1.0})
    coco = table[table.metric == "COCO retrieval"]
    d = coco.difference.to_numpy()
    assert len(coco) and (d != 0).any()
    assert (coco._z_paired[d != 0] == math.inf).all() and coco._z_paired[d == 0].isna().all()
    shown = coco["z, paired (larger SE)"]
    assert set(shown[d > 0]) <= {"+inf"} and set(shown[d < 0]) <= {"-inf"}
    assert "exceed" in study.thesis_noise_note(table)


def test_conclusions_are_the_claims_table_rows():
    df = frame(-0.5, (0.0, 0.1, -0.1, 0.05, -0.05))
    claims = study.claim_table(df)
    lines = study.conclusions(df, reference.TABLE1)
    primary = claims[claims.role.eq("primary") & claims.family.eq(reference.TABLE1)]
    assert len(lines) == len(primary)
    for line, row in zip(lines, primary.itertuples()):
        assert line.startswith(f"{row.claim}: {row.verdict}, {row._5} points (95 % CI)")


def test_words():
    assert words("reproduced", False, (1.0, 0.5, 2.0)) == "confirmed"
    assert words("contradicted", False, (math.nan,) * 3) == "refuted"
    assert words("reproduced", True, (1.0, 0.5, 2.0)) == "reproduced"
    assert (words("reproduced", True, (36.0, COMPATIBLE[1] + 1, 45.0))
            == "reproduced in direction, 36 × the thesis's size")
    assert (words("reproduced", True, (0.1, 0.05, COMPATIBLE[0] - 0.01))
            == "reproduced in direction, 1/10 of the thesis's size")
    assert words("equivalent", True, (0.0, -1.0, 1.0)) == "equivalent"
