import math

from thesis_lib.stats import fmt, mean_ci, paired_difference, verdict


def test_mean_ci_matches_the_t_table():
    mean, half = mean_ci([1.0, 2.0, 3.0])
    assert mean == 2.0 and abs(half - 4.302653 * 1.0 / math.sqrt(3)) < 1e-5   # t_{0.975, 2} = 4.3027
    assert math.isnan(mean_ci([5.0])[1])


def test_paired_difference_uses_common_seeds_only():
    mean, half, n = paired_difference({0: 2.0, 1: 3.0, 2: 4.0, 7: 100.0}, {0: 1.0, 1: 2.0, 2: 3.0})
    assert (mean, half, n) == (1.0, 0.0, 3)


def test_verdicts():
    assert verdict(1.0, 0.5, +1) == "reproduced" and verdict(1.0, 0.5, -1) == "contradicted"
    assert verdict(0.2, 0.5, +1) == "inconclusive" and verdict(-1.0, math.nan, -1) == "inconclusive"
    assert fmt(1.234, 0.5) == "1.23 ± 0.50" and fmt(1.0, math.nan) == "1.00"
