import math

import numpy as np
import pytest
from scipy import stats as sps

from thesis_lib.study.claims import stats
from thesis_lib.study.claims.stats import (
    COMPARISONS,
    VERDICTS,
    PairedTest,
    compare,
    decide,
    fmt,
    fmt_fixed,
    fmt_p,
    holm,
    mean_ci,
    paired_difference,
    seeds_for_power,
)


def test_mean_ci_matches_the_t_table():
    mean, half = mean_ci([1.0, 2.0, 3.0])
    assert mean == 2.0 and abs(half - 4.302653 * 1.0 / math.sqrt(3)) < 1e-5   # t_{0.975, 2} = 4.3027
    assert math.isnan(mean_ci([5.0])[1])


def test_paired_difference_uses_common_seeds_only():
    mean, half, n = paired_difference({0: 2.0, 1: 3.0, 2: 4.0, 7: 100.0}, {0: 1.0, 1: 2.0, 2: 3.0})
    assert (mean, half, n) == (1.0, 0.0, 3)


def test_paired_test_agrees_with_scipy():
    d = [0.3, -0.1, 0.5, 0.2, 0.4]
    t = PairedTest.of(d)
    assert t.n == 5 and math.isclose(t.p, sps.ttest_1samp(d, 0).pvalue)
    assert math.isclose(t.half90, sps.t.ppf(0.95, 4) * t.sd / math.sqrt(5)) and t.half90 < t.half95


def test_holm_step_down():
    # m = 3: sorted p 0.01, 0.02, 0.04 -> 0.03, 0.04, 0.04 (monotone); order of the input kept, nan passed on
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])
    out = holm([0.01, math.nan])
    assert out[0] == pytest.approx(0.01) and math.isnan(out[1])
    assert holm([0.01], family=3) == pytest.approx([0.03])          # a claim shown alone keeps its family


def _test(mean, half90, n=5, p=0.5):
    return PairedTest(mean, 1.0, n, 2 * half90, half90, p)


def test_each_of_the_four_verdicts():
    margin = 0.3
    assert decide(_test(-1.0, 0.2, p=0.001), 0.003, -1, margin) == "reproduced"       # significant, claimed side
    assert decide(_test(+1.0, 0.2, p=0.001), 0.003, -1, margin) == "contradicted"     # significant, other side
    assert decide(_test(0.05, 0.2), 0.9, -1, margin) == "equivalent"                  # 90 % CI in ±0.3
    assert decide(_test(0.05, 0.4), 0.9, -1, margin) == "undecided"                # CI crosses the margin
    assert decide(_test(-1.0, 0.2, p=0.01), 0.06, -1, margin) == "undecided"       # Holm took it back
    assert decide(_test(0.0, math.nan, n=1), math.nan, +1, margin) == "undecided"  # one seed


def test_verdicts_from_constructed_seeds_end_to_end():
    """Differences built so that each verdict must come out, through PairedTest, holm and decide."""
    cases = {"reproduced": [-1.0, -1.2, -0.9, -1.1, -1.05], "contradicted": [0.9, 1.1, 1.0, 1.2, 0.95],
             "equivalent": [0.02, -0.03, 0.01, 0.0, -0.01], "undecided": [0.8, -0.9, 0.5, -0.4, 0.1]}
    tests = {k: PairedTest.of(v) for k, v in cases.items()}
    adjusted = dict(zip(tests, holm([t.p for t in tests.values()])))
    for expected, t in tests.items():
        assert decide(t, adjusted[expected], -1, 0.3) == expected


def test_seeds_for_power():
    # effect = SD: the textbook answer for a paired t-test at 5 % and 80 % power is 10 pairs
    assert seeds_for_power(1.0, 1.0) == 10
    assert seeds_for_power(0.5, 1.0) > seeds_for_power(1.0, 1.0)
    assert seeds_for_power(1.0, 1.0, alpha=0.05 / 3) > 10 and seeds_for_power(0.0, 1.0) is None


def test_fmt():
    assert fmt(1.234, 0.5) == "1.23 ± 0.50" and fmt(1.0, math.nan) == "1.00"


def test_a_comparison_without_a_claimed_direction():
    """Notebook 05's rows: better / worse only when significant after adjustment and at least one test item."""
    assert compare(_test(0.8, 0.2, p=0.001), 0.004) == "better"
    assert compare(_test(-0.8, 0.2, p=0.001), 0.004) == "worse"
    assert compare(_test(0.8, 0.2, p=0.01), 0.06) == "undecided"                    # the adjustment took it back
    below = PairedTest(0.005, 0.001, 5, 0.002, 0.001, 0.0001, resolution=0.01)
    assert compare(below, 0.0001) == "undecided"                                    # below one test item
    assert compare(_test(1.0, math.nan, n=1, p=math.nan), math.nan) == "undecided"  # one seed
    assert set(COMPARISONS) & set(VERDICTS) == {"undecided"}


def test_robust_sd_is_scipys_normal_scaled_mad():
    x = np.random.default_rng(0).normal(0, 2, 31)
    assert stats.robust_sd(x) == pytest.approx(sps.median_abs_deviation(x, scale="normal"), rel=1e-4)


def test_robust_seeds_agree_with_normal_theory_on_normal_data_and_resist_an_outlier():
    """On 400 normal differences the MAD-based count equals the normal-theory one within the bootstrap's range; one
    seed 12 SDs out inflates the normal-theory count, not the robust one; the outlier is named."""
    rng = np.random.default_rng(1)
    x = rng.normal(0.0, 1.0, 400)
    normal = stats.seeds_to_decide(float(np.median(x)), float(x.std(ddof=1)), 0.8)
    robust = stats.robust_seeds_needed(x, 0.8, boot=300)
    assert robust["low"] <= normal <= robust["high"]
    y = np.append(x[:23], 12.0)
    assert stats.seeds_to_decide(float(np.median(y)), float(y.std(ddof=1)), 0.8) > 1.5 * \
        stats.robust_seeds_needed(y, 0.8, boot=300)["seeds"]
    assert list(stats.outlying_seeds(dict(enumerate(y)))) == [23]


def test_robust_seeds_range_is_a_bootstrap_interval():
    """The count's range comes from the 95 % percentile interval of the robust SD over resampled seeds: scipy's
    bootstrap of the same statistic gives the same ends within its Monte-Carlo error."""
    x = np.random.default_rng(2).standard_t(3, 24) * 0.2
    ours = stats.robust_seeds_needed(x, 0.08, boot=4000, seed=5)
    ci = sps.bootstrap((x,), stats.robust_sd, vectorized=False, n_resamples=4000, method="percentile",
                       random_state=6).confidence_interval
    center = float(np.median(x))
    low, high = (stats.seeds_to_decide(center, sd, 0.08) for sd in (ci.low, ci.high))
    assert ours["low"] == pytest.approx(low, rel=0.3) and ours["high"] == pytest.approx(high, rel=0.3)


@pytest.mark.parametrize("p,shown", [(8.03e-08, "< 0.001"), (0.0, "< 0.001"), (0.000999, "< 0.001"),
                                     (0.001, "0.001"), (0.0061, "0.006"), (0.05, "0.050"), (0.4414, "0.441"),
                                     (1.0, "1.000"), (math.nan, "–"), (None, "–")])
def test_fmt_p_prints_fixed_notation_never_scientific(p, shown):
    assert fmt_p(p) == shown
    assert "e" not in fmt_p(p)


def test_fmt_fixed_keeps_significant_digits_without_an_exponent():
    assert fmt_fixed(8.03e-08) == "0.0000000803" and fmt_fixed(2.07e-4) == "0.000207"
    assert fmt_fixed(0.02815, 4) == "0.02815" and fmt_fixed(0.05) == "0.05" and fmt_fixed(1.0) == "1"
    assert fmt_fixed(math.nan) == "–"


def test_seeds_at_the_observed_difference_are_the_smallest_n_with_the_power():
    """The long record's case (mean −0.072, SD 0.20, margin ±0.173): equivalence if the true difference is the
    measured one needs more seeds than if it is 0; the t-test's count equals statsmodels' solve_power rounded up."""
    from statsmodels.stats.power import TTestPower

    from thesis_lib.study.claims.stats import seeds_at_observed, seeds_to_decide, tost_power
    effect, sd, margin = -0.072, 0.20, 0.173
    need = seeds_at_observed(effect, sd, margin)
    n = need["equivalent"]
    assert tost_power(n - 1, effect, sd, margin) < 0.8 <= tost_power(n, effect, sd, margin)
    assert n > seeds_to_decide(effect, sd, margin)                     # the convention (true difference 0) flatters
    solved = TTestPower().solve_power(effect_size=abs(effect) / sd, alpha=0.05, power=0.8, alternative="two-sided")
    assert need["different"] == math.ceil(solved)
    assert seeds_at_observed(0.3, sd, margin)["equivalent"] is None    # outside the margin: never equivalent


def test_seeds_to_decide_counts_up_to_ten_thousand_and_says_none_beyond():
    """Doubling from 2 passes 8,192 straight to 16,384: a claim needing 8,193-10,000 seeds still gets its count."""
    n = stats.seeds_to_decide(0.0, 32.4, 1.0)
    assert 8_192 < n <= 10_000
    assert stats.tost_power(n - 1, 0.0, 32.4, 1.0) < 0.8 <= stats.tost_power(n, 0.0, 32.4, 1.0)
    assert stats.seeds_to_decide(0.0, 35.0, 1.0) is None
    assert stats.tost_power(10_000, 0.0, 35.0, 1.0) < 0.8


def test_the_robust_counts_interval_is_the_exact_bootstrap_laws_for_few_seeds():
    """Of four seeds the interval is the exact bootstrap law's (all 4⁴ ordered resamples, each once), whatever
    ``boot``: a fifth of them have a MAD of 0 (two seeds decide, the 2.5 % end), and the law's top value holds 2.3 %
    of it, so 2,000 drawn resamples put the 97.5 % end on either side of it."""
    import itertools
    d = np.array([-0.30, -0.05, 0.10, 0.20])
    law = np.sort([stats.robust_sd(d[list(i)]) for i in itertools.product(range(4), repeat=4)])
    assert np.mean(law == 0) > 0.2
    need = lambda q: stats.seeds_to_decide(float(np.median(d)), float(np.quantile(law, q)), 0.174)  # noqa: E731
    for boot in (300, 4000):
        ours = stats.robust_seeds_needed(d, 0.174, boot=boot)
        assert ours["low"] == 2 and ours["high"] == need(0.975)
    assert stats.robust_seeds_needed([0.1, 0.1, 0.1, 0.5], 0.174)["seeds"] == 2              # no spread at all
