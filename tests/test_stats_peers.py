"""Our statistics against their peers on grids: scipy's paired t-test, statsmodels' TOST, Holm and t-test power."""
import math

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestPower
from statsmodels.stats.weightstats import ttost_paired

from thesis_lib.study.claims.stats import PairedTest, decide, holm, seeds_for_power

RNG = np.random.default_rng(0)
PAIRS = [(RNG.normal(20, 1, n), RNG.normal(0.3 * k, 0.2 + 0.1 * k, n)) for k, n in enumerate([2, 3, 4, 5, 5, 6, 7, 8,
                                                                                                9, 10] * 2)]


@pytest.mark.parametrize("base,effect", PAIRS)
def test_paired_p_and_interval_equal_scipy_ttest_rel(base, effect):
    a, b = base + effect, base
    ours, peer = PairedTest.of(a - b), sps.ttest_rel(a, b)
    low, high = peer.confidence_interval(0.95)
    assert ours.p == pytest.approx(peer.pvalue, rel=1e-9, abs=1e-15)
    assert ours.half95 == pytest.approx((high - low) / 2, rel=1e-9)


@pytest.mark.parametrize("base,effect", PAIRS)
@pytest.mark.parametrize("margin", [0.05, 0.3, 1.0, 5.0])
def test_equivalence_by_the_90_percent_interval_is_statsmodels_tost(base, effect, margin):
    """``decide``'s size rule (the 90 % interval inside ± margin) is TOST at 5 %: statsmodels' ``ttost_paired``."""
    a, b = base + effect, base
    inside = decide(PairedTest.of(a - b), 1.0, +1, margin) in ("equivalent", "trivial")
    assert inside == (ttost_paired(a, b, -margin, margin)[0] < 0.05)


def test_equivalence_covers_both_ends():
    near_one = PairedTest.of([1.0, 1.2, 0.8, 1.1, 0.9])                  # far outside ±0.1
    near_zero = PairedTest.of([0.0, 0.01, -0.01, 0.005, -0.005])         # far inside ±1
    assert decide(near_one, 1.0, +1, 0.1) == "undecided" and decide(near_zero, 1.0, +1, 1) == "equivalent"


@pytest.mark.parametrize("m", range(1, 13))
def test_holm_equals_statsmodels_multipletests(m):
    p = np.random.default_rng(m).uniform(0, 0.2, m)
    peer = multipletests(p, method="holm")[1]
    assert holm(p) == pytest.approx(list(peer), abs=1e-12)
    assert holm(p, family=m) == pytest.approx(list(peer), abs=1e-12)


GRID = [(e, a, pw) for e in np.geomspace(0.1, 8, 40) for a in (0.05, 0.05 / 3) for pw in (0.8, 0.9)]


def _power_bounds(n, d, alpha):
    """The two-sided power at n seeds, bracketed without the noncentral lower tail that underflows to nan (in scipy,
    and so in statsmodels' TTestPower, for large noncentrality): the upper tail ≤ power ≤ upper tail + the central
    t's lower tail (a positive shift only shrinks it)."""
    crit = sps.t.ppf(1 - alpha / 2, n - 1)
    upper = sps.nct.sf(crit, n - 1, d * math.sqrt(n))
    return upper, upper + sps.t.cdf(-crit, n - 1)


@pytest.mark.parametrize("d,alpha,power", GRID)
def test_seeds_for_power_equals_statsmodels(d, alpha, power):
    """160 cases. Where statsmodels' root is defined, ours is that root rounded up (at least 2), or, on an exact
    boundary its root finder's tolerance decides, the power is enough at n and not at n − 1. Where statsmodels
    returns nan (its own underflow, the case that broke ours), the same check on the bracketed power."""
    n = seeds_for_power(d, 1.0, alpha, power)
    with np.errstate(all="ignore"):
        root = float(np.squeeze(TTestPower().solve_power(effect_size=d, alpha=alpha, power=power,
                                                         alternative="two-sided")))
    enough = _power_bounds(n, d, alpha)[0] >= power - 1e-9
    short = n == 2 or _power_bounds(n - 1, d, alpha)[1] < power
    if math.isnan(root):
        assert enough and short
    else:
        assert n == max(2, math.ceil(root - 1e-6)) or (enough and short)


def test_seeds_for_power_is_undefined_without_an_effect_or_a_spread():
    assert seeds_for_power(0.0, 1.0) is None
    assert seeds_for_power(1.0, math.nan) is None and seeds_for_power(1.0, 0.0) is None


# ---------------------------------------------------------------- power to decide an open claim (issue 36)

from thesis_lib.study.claims.stats import sd_interval, seeds_to_decide, tost_power  # noqa: E402


@pytest.mark.parametrize("n,effect,margin", [(4, 0.0, 1.0), (8, 0.3, 1.0), (12, 0.0, 0.6), (20, -0.2, 0.5),
                                             (6, 0.9, 1.0)])
def test_tost_power_equals_a_simulation(n, effect, margin):
    x = np.random.default_rng(n).normal(effect, 1.0, (100_000, n))
    m, s = x.mean(1), x.std(1, ddof=1)
    h = sps.t.ppf(0.95, n - 1) * s / math.sqrt(n)
    simulated = ((m - h > -margin) & (m + h < margin)).mean()
    assert tost_power(n, effect, 1.0, margin) == pytest.approx(simulated, abs=0.005)


@pytest.mark.parametrize("n", [500, 1000, 4096, 10_000])
def test_tost_power_at_hundreds_to_thousands_of_seeds_equals_a_simulation(n):
    """The seeds to decide search up to 10,000: there the mean is N(effect, sd/√n) and (n − 1)s²/sd² is χ²(n − 1),
    drawn directly (two numbers per trial, not n)."""
    rng = np.random.default_rng(n)
    for effect, sd, margin in ((-0.146, 0.2533, 0.174), (0.0, 32.4, 1.0), (0.05, 3.0, 0.3)):
        m = rng.normal(effect, sd / math.sqrt(n), 400_000)
        h = sps.t.ppf(0.95, n - 1) * sd * np.sqrt(rng.chisquare(n - 1, 400_000) / (n - 1)) / math.sqrt(n)
        simulated = ((m - h > -margin) & (m + h < margin)).mean()
        assert tost_power(n, effect, sd, margin) == pytest.approx(simulated, abs=0.005), (effect, sd, margin)


@pytest.mark.parametrize("n,effect,margin", [(32, -0.36, 0.865), (32, 0.0, 0.865), (8, 0.3, 1.0), (20, -0.2, 0.5)])
def test_p_equivalent_equals_a_simulation_with_scipys_ttest(n, effect, margin):
    """The verdict *equivalent*: the TOST passes and scipy's paired t-test (one-sample on the differences) does not
    reject 0 at 5 %."""
    x = np.random.default_rng(n).normal(effect, 1.0, (100_000, n))
    m, s = x.mean(1), x.std(1, ddof=1)
    h = sps.t.ppf(0.95, n - 1) * s / math.sqrt(n)
    inside = (m - h > -margin) & (m + h < margin)
    simulated = (inside & (sps.ttest_1samp(x, 0.0, axis=1).pvalue >= 0.05)).mean()
    assert tost_power(n, effect, 1.0, margin, 0.05, 0.05) == pytest.approx(simulated, abs=0.005)
    assert tost_power(n, effect, 1.0, margin, 0.05, 0.05) <= tost_power(n, effect, 1.0, margin)


def test_tost_power_is_the_integral_over_scipy_stats_distributions_bit_for_bit():
    """``tost_power`` writes scipy.stats' normal cdf and χ² pdf out (their per-call overhead dominated a results
    page): the same integral with scipy.stats' own, the same bits."""
    from scipy import integrate

    def reference(n, effect, sd, margin, alpha=0.05):
        df, crit, se = n - 1, sps.t.ppf(1 - alpha, n - 1), sd / math.sqrt(n)

        def given(q):
            s = sd * math.sqrt(q / df)
            width = margin - crit * s / math.sqrt(n)
            return 0.0 if width <= 0 else (sps.norm.cdf((width - effect) / se) - sps.norm.cdf((-width - effect) / se)
                                           ) * sps.chi2.pdf(q, df)
        top = df * (margin * math.sqrt(n) / (crit * sd)) ** 2
        lo, hi = sps.chi2.ppf(1e-15, df), min(top, sps.chi2.isf(1e-15, df))
        return float(integrate.quad(given, lo, hi, limit=200)[0]) if hi > lo else 0.0

    rng = np.random.default_rng(0)
    for n, effect, sd, margin in [(int(rng.integers(2, 60)), float(rng.choice([0.0, rng.uniform(-0.5, 0.5)])),
                                   float(rng.uniform(0.05, 2)), float(rng.uniform(0.1, 1))) for _ in range(40)]:
        assert tost_power(n, effect, sd, margin) == reference(n, effect, sd, margin), (n, effect, sd, margin)


def test_seeds_to_decide_uses_the_ttest_outside_the_margin_and_the_tost_inside():
    assert seeds_to_decide(0.5, 1.0, 0.3) == seeds_for_power(0.5, 1.0)
    n = seeds_to_decide(0.1, 1.0, 0.8)                                   # inside: TOST at a true 0
    assert tost_power(n, 0.0, 1.0, 0.8) >= 0.8 > tost_power(n - 1, 0.0, 1.0, 0.8)
    root = TTestPower().solve_power(effect_size=0.5, alpha=0.05, power=0.8, alternative="two-sided")
    assert seeds_to_decide(-0.5, 1.0, 0.2) == math.ceil(root)


def test_sd_interval_equals_the_chi_square_interval():
    low, high = sd_interval(2.0, 4)
    assert low == pytest.approx(2.0 * math.sqrt(3 / sps.chi2.ppf(0.975, 3)))
    assert high == pytest.approx(2.0 * math.sqrt(3 / sps.chi2.ppf(0.025, 3)))
    assert high / 2.0 == pytest.approx(3.73, abs=0.01) and low / 2.0 == pytest.approx(0.567, abs=0.001)
