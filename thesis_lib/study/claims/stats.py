"""Statistics over seeds: mean ± 95 % confidence interval (Student's t), paired contrasts, and the five verdicts.

A claim is decided on one declared primary metric (``thesis_lib.study.reference.CLAIMS``) from its paired contrast
over seeds (each seed gives every arm the same initial weights and batches), size before significance
(docs/decision_rule.md; Lakens, Scheel & Isager 2018, AMPPS 1(2), the four outcomes of an equivalence test):

* *equivalent*: the TOST at 5 % (90 % interval) puts the effect inside ± the smallest effect of interest, and the
  two-sided test finds no difference;
* *trivial*: inside that margin, and yet significantly different from zero: an effect too small to matter;
* *reproduced* / *contradicted*: significant (Holm-adjusted within the claim's family) on the claimed / the other
  side of zero, and not shown to be smaller than the margin;
* *undecided*: neither (too few seeds to tell); ``seeds_for_power`` says how many would give 80 % power.

A comparison beyond the chapter (notebook 05) claims no direction and declares no margin: ``compare`` calls it
*better*, *worse* (significant, above the resolution) or *undecided*, never equivalent.

The metrics are counts of test items: a contrast whose mean is below one item (``resolution``) is never significant,
and the SD every test uses is at least one item, so identical per-seed differences cannot make p = 0.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

ALPHA = 0.05
VERDICTS = ("reproduced", "contradicted", "equivalent", "trivial", "undecided")   # a claim (``decide``)
COMPARISONS = ("better", "worse", "undecided")        # a comparison without a claimed direction (``compare``)
WORDS = tuple(dict.fromkeys(VERDICTS + ("confirmed", "refuted") + COMPARISONS + ("descriptive", "pending")))
"""Every verdict word the tables, figures and pages use: ``decide``'s, ``words``' for a claim the thesis did not make,
``compare``'s, "descriptive" (a claim shown with the seeds that would decide it, decided by nothing) and "pending" (a
fixed-n claim short of its n)."""


def mean_ci(values, level: float = 0.95) -> tuple[float, float]:
    """(mean, half-width of the t-interval); the half-width is nan with fewer than two values."""
    test = PairedTest.of(values)
    return test.mean, test.half(level)


def paired_difference(treated: dict, baseline: dict) -> tuple[float, float, int]:
    """Mean and 95 % CI half-width of treated[seed] − baseline[seed] over the seeds both have."""
    seeds = sorted(set(treated) & set(baseline))
    mean, half = mean_ci([treated[s] - baseline[s] for s in seeds])
    return mean, half, len(seeds)


@dataclass(frozen=True)
class PairedTest:
    """A paired comparison over n seeds: the mean difference, its SD as measured and as used (at least the
    metric's resolution), 95 % and 90 % half-widths and the two-sided p-value (both from the SD used)."""
    mean: float
    sd: float
    n: int
    half95: float
    half90: float
    p: float
    resolution: float = 0.0

    @property
    def sd_used(self) -> float:
        return max(self.sd, self.resolution) if not math.isnan(self.sd) else math.nan

    @classmethod
    def of(cls, diffs, resolution: float = 0.0) -> "PairedTest":
        d = np.asarray(list(diffs), dtype=float)
        if len(d) < 2:
            return cls(float(d.mean()) if len(d) else math.nan, math.nan, len(d), math.nan, math.nan, math.nan,
                       resolution)
        sd = float(d.std(ddof=1))
        used, n = max(sd, resolution), len(d)
        se = used / math.sqrt(n)
        if se == 0:
            p = 1.0 if d.mean() == 0 else 0.0
        else:
            p = 1.0 if abs(d.mean()) < resolution else float(2 * sps.t.sf(abs(d.mean()) / se, n - 1))
        half = lambda level: float(sps.t.ppf(0.5 + level / 2, n - 1) * se)  # noqa: E731
        return cls(float(d.mean()), sd, n, half(0.95), half(0.90), p, resolution)

    def half(self, level: float) -> float:
        """Half-width of the ``level`` t-interval, from the SD the test uses (nan with fewer than two seeds)."""
        if self.n < 2 or math.isnan(self.sd):
            return math.nan
        return float(sps.t.ppf(0.5 + level / 2, self.n - 1) * self.sd_used / math.sqrt(self.n))


def holm(pvalues, family: int | None = None) -> list[float]:
    """Holm's step-down adjusted p-values (the family-wise error rate stays at the nominal level); nan stays nan.
    ``family``: the size of the declared family when some of its tests are not at hand (a notebook showing one
    claim): the missing ones are taken to come last, which can only make the adjusted p-values larger."""
    p = [math.nan if v is None else float(v) for v in pvalues]
    finite = sorted((v, i) for i, v in enumerate(p) if not math.isnan(v))
    out, running, m = list(p), 0.0, max(len(finite), family or 0)
    for rank, (v, i) in enumerate(finite):
        running = max(running, min(1.0, (m - rank) * v))
        out[i] = running
    return out


def decide(test: PairedTest, p_adjusted: float, direction: int, margin: float, alpha: float = ALPHA,
           tost_alpha: float | None = None) -> str:
    """One of VERDICTS for a claim that says 'higher' (direction +1) or 'lower' (-1), with ``margin`` (> 0) the
    smallest effect of interest; size is judged first (the 1 − 2·``tost_alpha`` interval against ± margin: TOST at
    ``tost_alpha``, by default 5 %: the 90 % interval), then significance (``p_adjusted`` < ``alpha``, which
    ``PairedTest`` already sets to 1 below the metric's resolution). A sequential design passes the levels of its
    look (``thesis_lib.study.claims.sequential``)."""
    tost = ALPHA if tost_alpha is None else tost_alpha
    half = test.half90 if tost == ALPHA else test.half(1 - 2 * tost)
    if test.n < 2 or math.isnan(half):
        return "undecided"
    inside = margin > 0 and -margin < test.mean - half and test.mean + half < margin
    significant = p_adjusted < alpha and abs(test.mean) >= max(test.resolution, 1e-300)
    if inside:
        return "trivial" if significant else "equivalent"
    if significant:
        return "reproduced" if math.copysign(1, test.mean) == direction else "contradicted"
    return "undecided"


COMPATIBLE = (1 / 3, 3.0)
"""Our relative effect over the thesis's, the range called "the thesis's size": a factor of three either way. The
thesis's differences are single runs, each within about one test-set standard error of zero (``verdicts.thesis_noise``),
so its sizes are known to no better than that."""


def words(verdict: str, in_thesis: bool, ratio: tuple) -> str:
    """The verdict as a sentence fragment: a claim the thesis never made is *confirmed* / *refuted*, not reproduced
    or contradicted; a reproduced effect whose ratio to the thesis's (``ratio``: estimate, 95 % low, high) lies
    wholly outside ``COMPATIBLE`` is "reproduced in direction" with its size."""
    if not in_thesis:
        return {"reproduced": "confirmed", "contradicted": "refuted"}.get(verdict, verdict)
    mid, low, high = ratio
    if verdict == "reproduced" and low > COMPATIBLE[1]:
        return f"reproduced in direction, {mid:.0f} × the thesis's size"
    if verdict == "reproduced" and high < COMPATIBLE[0]:
        return f"reproduced in direction, 1/{1 / mid:.0f} of the thesis's size"
    return verdict


def compare(test: PairedTest, p_adjusted: float, alpha: float = ALPHA) -> str:
    """One of COMPARISONS for a difference no claim gives a direction or a margin: better / worse when
    significant (``p_adjusted``) and at least one test item (the metric's resolution), else undecided."""
    if test.n < 2 or not p_adjusted < alpha or abs(test.mean) < max(test.resolution, 1e-300):
        return "undecided"
    return "better" if test.mean > 0 else "worse"


def seeds_for_power(effect: float, sd: float, alpha: float = ALPHA, power: float = 0.8, max_n: int = 10_000):
    """The fewest seeds (≥ 2) whose two-sided paired t-test at ``alpha`` detects a true mean difference ``effect`` with
    probability ≥ ``power`` when the per-seed differences have SD ``sd``; None when that is undefined (no effect, SD nan
    or 0) or beyond ``max_n``. The far tail is taken as 0 where scipy's noncentral t underflows to nan."""
    if not (abs(effect) > 0) or not (sd > 0):
        return None

    def power_at(n):
        df, nc = n - 1, abs(effect) / (sd / math.sqrt(n))
        crit = sps.t.ppf(1 - alpha / 2, df)
        return np.nan_to_num(sps.nct.sf(crit, df, nc)) + np.nan_to_num(sps.nct.cdf(-crit, df, nc))

    return _fewest_seeds(power_at, power, max_n)


def tost_power(n: int, effect: float, sd: float, margin: float, alpha: float = ALPHA,
               not_significant_at: float | None = None) -> float:
    """Power of the paired TOST at ``alpha`` (each side) with ``n`` seeds to put a true mean difference ``effect``
    inside ± ``margin`` when per-seed differences have SD ``sd``. Given the sample SD s, the TOST passes iff the
    mean lies in (−margin + t·s/√n, margin − t·s/√n); the mean is normal and (n − 1)s²/sd² is χ²(n − 1), so the
    power is one integral over s (Phillips 1990, *J. Pharmacokinet. Biopharm.* 18(2), by quadrature here).
    ``not_significant_at``: also require the two-sided paired t-test at that level not to reject 0 (|mean| below
    its t·s/√n), so the probability of the verdict *equivalent* (``decide``); *trivial* takes the rest."""
    from scipy import integrate, special
    if n < 2 or not sd > 0 or not margin > 0:
        return math.nan
    df, crit, se = n - 1, sps.t.ppf(1 - alpha, n - 1), sd / math.sqrt(n)
    sig = None if not_significant_at is None else sps.t.ppf(1 - not_significant_at / 2, df)

    def given(q):                                  # q = (n − 1) s² / sd², χ²(df)
        s = sd * math.sqrt(q / df)
        width = margin - crit * s / math.sqrt(n)
        if sig is not None:
            width = min(width, sig * s / math.sqrt(n))
        if width <= 0:
            return 0.0
        chi2_pdf = np.exp(special.xlogy(df / 2. - 1, q) - q / 2. - special.gammaln(df / 2.) - (np.log(2) * df) / 2.)
        return (special.ndtr((width - effect) / se) - special.ndtr((-width - effect) / se)) * chi2_pdf
    # (scipy.stats' norm.cdf and chi2.pdf, written out: the same bits without their per-call overhead, which took
    # most of a results page's time; tests/test_stats.py compares them)
    top = df * (margin * math.sqrt(n) / (crit * sd)) ** 2          # beyond it the interval is empty
    # over where χ²(df) has its mass (all but 2e-15), not all of (0, top): at large n its peak is so narrow against
    # (0, top) that the quadrature stepped over it and gave 0 (the long 2 × 2 TTE effect's inputs: 0 at 1,000 seeds,
    # where a simulation gives 0.968, and 0.86 at 600)
    lo, hi = sps.chi2.ppf(1e-15, df), min(top, sps.chi2.isf(1e-15, df))
    return float(integrate.quad(given, lo, hi, limit=200)[0]) if hi > lo else 0.0


def seeds_to_decide(effect: float, sd: float, margin: float, alpha: float = ALPHA, tost_alpha: float | None = None):
    """Seeds that would give 80 % power to decide a claim measured at difference ``effect`` with SD ``sd``: when
    |effect| lies inside ± ``margin``, the TOST's power (``tost_power`` at ``tost_alpha``) if the true difference
    is 0 (the planning convention of an equivalence test: the intervention does nothing); otherwise the two-sided
    paired t-test's at ``alpha`` to detect ``effect`` (``seeds_for_power``). None when undefined or beyond 10,000."""
    if not sd > 0 or math.isnan(effect):
        return None
    if margin and abs(effect) < margin:
        a = alpha if tost_alpha is None else tost_alpha
        return _fewest_seeds(lambda n: tost_power(n, 0.0, sd, margin, a))
    return seeds_for_power(effect, sd, alpha)


def _fewest_seeds(power_at, power: float = 0.8, most: int = 10_000):
    """The fewest seeds n in [2, ``most``] with ``power_at(n)`` ≥ ``power`` (power rises with n), None beyond
    ``most``: doubling up to ``most``, then bisection."""
    lo, hi = 2, 2
    while power_at(hi) < power:
        if hi == most:
            return None
        lo, hi = hi + 1, min(hi * 2, most)
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if power_at(mid) < power else (lo, mid)
    return hi


def seeds_at_observed(effect: float, sd: float, margin: float) -> dict:
    """The seeds to decide a claim if its true difference is the measured ``effect`` (not 0, the convention of
    ``seeds_to_decide`` inside the margin), at 5 % and 80 % power: {"equivalent": the TOST's to put ``effect`` inside
    ± ``margin`` (None when |effect| ≥ margin or beyond 10,000), "different": the paired t-test's to show it ≠ 0}."""
    equivalent = None
    if sd > 0 and margin and abs(effect) < margin:
        equivalent = _fewest_seeds(lambda n: tost_power(n, effect, sd, margin))
    return {"equivalent": equivalent, "different": seeds_for_power(effect, sd)}


def sd_interval(sd: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """The ``level`` interval of a normal SD from ``n`` values (χ² with n − 1 degrees of freedom)."""
    if n < 2 or math.isnan(sd):
        return math.nan, math.nan
    df = n - 1
    return (sd * math.sqrt(df / sps.chi2.ppf(0.5 + level / 2, df)),
            sd * math.sqrt(df / sps.chi2.ppf(0.5 - level / 2, df)))


def seeds_needed(test: PairedTest, margin: float, alpha: float = ALPHA, tost_alpha: float | None = None) -> dict:
    """``seeds_to_decide`` at the measured SD, and at the two ends of that SD's 95 % interval: a seed count from
    four seeds' SD is uncertain by a factor the reader should see."""
    lo, hi = sd_interval(test.sd_used, test.n)
    need = lambda sd: seeds_to_decide(test.mean, sd, margin, alpha, tost_alpha)  # noqa: E731
    return {"seeds": need(test.sd_used), "low": need(lo), "high": need(hi)}


def fmt_count(n: int | None, about: str = "") -> str:
    """A count of seeds after ``about`` (e.g. "≈ "); '> 10000' where it is beyond reach (None)."""
    return "> 10000" if n is None else f"{about}{n}"


def fmt_seeds(need: dict) -> str:
    """'16 (7-177)', '> 10000' where a count is beyond reach."""
    return f"{fmt_count(need['seeds'])} ({fmt_count(need['low'])}-{fmt_count(need['high'])})"


def fmt(mean: float, half: float, digits: int = 2) -> str:
    if math.isnan(mean):
        return "–"
    return f"{mean:.{digits}f}" if math.isnan(half) else f"{mean:.{digits}f} ± {half:.{digits}f}"


P_FLOOR = 0.001        # ``fmt_p`` prints any p below this as "< 0.001"


def fmt_p(p) -> str:
    """A p-value as a table or a sentence prints it, in fixed notation, never scientific: "< 0.001" below 0.001,
    else three decimals ("0.006", "1.000"); "–" for a missing one (None, nan)."""
    if p is None or math.isnan(p):
        return "–"
    return f"< {P_FLOOR:g}" if p < P_FLOOR else f"{p:.3f}"


def fmt_fixed(x, digits: int = 3) -> str:
    """A small number (a significance level, α spent) in fixed notation with ``digits`` significant digits, never
    scientific: 8.03e-08 -> "0.0000000803", 0.0409 -> "0.0409", 1.0 -> "1"; "–" for a missing one."""
    if x is None or math.isnan(x):
        return "–"
    return np.format_float_positional(float(x), precision=digits, unique=False, fractional=False, trim="-")


MAD_TO_SD = 1.4826     # 1 / Φ⁻¹(3/4): the MAD of a normal sample, scaled to its SD (scipy's scale="normal")
OUTLIER_SDS = 3.0      # a seed this many SDs (the robust SD) from the median is named beside the seeds to decide


def robust_sd(diffs) -> float:
    """The per-seed differences' SD from their median absolute deviation (× ``MAD_TO_SD``): one seed far out moves it
    little, where it inflates the sample SD (Huber & Ronchetti 2009, *Robust Statistics*, §5.1)."""
    d = np.asarray(list(diffs), dtype=float)
    return float(_mad_sd(d)) if len(d) >= 2 else math.nan


def _mad_sd(x: np.ndarray) -> np.ndarray:
    """``robust_sd`` along the last axis: of every row (a bootstrap resample) at once."""
    return MAD_TO_SD * np.median(np.abs(x - np.median(x, axis=-1, keepdims=True)), axis=-1)


def outlying_seeds(values: dict) -> dict:
    """{seed: its distance from the median in robust SDs} for the seeds more than ``OUTLIER_SDS`` robust SDs away."""
    d = np.asarray(list(values.values()), dtype=float)
    sd, med = robust_sd(d), float(np.median(d)) if len(d) else math.nan
    if not sd > 0:
        return {}
    return {s: (v - med) / sd for s, v in values.items() if abs(v - med) > OUTLIER_SDS * sd}


EXACT_BOOTSTRAP = 50_000    # up to this many ordered resamples (nⁿ: six seeds) the bootstrap law is enumerated


def robust_seeds_needed(diffs, margin: float, alpha: float = ALPHA, tost_alpha: float | None = None,
                        boot: int = 2000, seed: int = 0) -> dict:
    """``seeds_to_decide`` at the robust SD (``robust_sd``) and the median, with the 95 % percentile interval of the
    same count over bootstrap resamples of the seeds (Efron & Tibshirani 1993, ch. 13): the normal-theory count's
    robust counterpart, for per-seed differences that are not normal. Of up to six seeds every ordered resample is
    taken once (the exact bootstrap law: of four seeds its 256 values, where ``boot`` draws would land on either side
    of an atom at the interval's end); of more, ``boot`` drawn ones. Every resample counts: of four seeds, about one in
    five repeats a value often enough that its MAD is 0, and with no spread two seeds decide."""
    d = np.asarray(list(diffs), dtype=float)
    n, center = len(d), float(np.median(d))

    def need(sd):
        return 2 if sd == 0 else seeds_to_decide(center, sd, margin, alpha, tost_alpha)

    if n < 2:
        lo = hi = math.nan                                   # robust_sd's: no spread from fewer than two seeds
    else:
        idx = (np.indices((n,) * n).reshape(n, -1).T if n ** n <= EXACT_BOOTSTRAP
               else np.random.default_rng(seed).integers(0, n, (boot, n)))
        lo, hi = np.quantile(_mad_sd(d[idx]), [0.025, 0.975])
    return {"seeds": need(robust_sd(d)), "low": need(lo), "high": need(hi)}
