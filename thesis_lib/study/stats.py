"""Statistics over seeds: mean ± 95 % confidence interval (Student's t), paired differences, and the four verdicts.

A claim of the chapter is decided on one declared primary metric (``thesis_lib.study.reference.CLAIMS``) from the paired
differences over seeds (each seed gives both runs the same initial weights and batches):

* *reproduced* / *contradicted*: the two-sided paired t-test rejects "no difference" at 5 % after Holm's
  correction across the chapter's claims, and the mean lies on the claimed / the other side of zero;
* *equivalent*: not rejected, and the 90 % interval lies inside ± the thesis's own effect (two one-sided tests at
  5 % each, TOST): whatever the effect is, it is smaller than the one the thesis reports;
* *inconclusive*: neither (too few seeds to tell); ``seeds_for_power`` says how many would give 80 % power.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

ALPHA = 0.05
VERDICTS = ("reproduced", "contradicted", "equivalent", "inconclusive")


def mean_ci(values, level: float = 0.95) -> tuple[float, float]:
    """(mean, half-width of the t-interval); the half-width is nan with fewer than two values."""
    x = np.asarray(list(values), dtype=float)
    if len(x) == 0:
        return math.nan, math.nan
    if len(x) < 2:
        return float(x.mean()), math.nan
    half = sps.t.ppf(0.5 + level / 2, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
    return float(x.mean()), float(half)


def paired_difference(treated: dict, baseline: dict, level: float = 0.95) -> tuple[float, float, int]:
    """Mean and CI half-width of treated[seed] − baseline[seed] over the seeds both have."""
    seeds = sorted(set(treated) & set(baseline))
    mean, half = mean_ci([treated[s] - baseline[s] for s in seeds], level)
    return mean, half, len(seeds)


@dataclass(frozen=True)
class PairedTest:
    """A paired comparison over n seeds: the mean difference, its SD, 95 % and 90 % half-widths, the p-value."""
    mean: float
    sd: float
    n: int
    half95: float
    half90: float
    p: float

    @classmethod
    def of(cls, diffs) -> "PairedTest":
        d = np.asarray(list(diffs), dtype=float)
        if len(d) < 2:
            return cls(float(d.mean()) if len(d) else math.nan, math.nan, len(d), math.nan, math.nan, math.nan)
        sd = float(d.std(ddof=1))
        se = sd / math.sqrt(len(d))
        p = 1.0 if se == 0 and d.mean() == 0 else (0.0 if se == 0 else float(2 * sps.t.sf(abs(d.mean()) / se, len(d) - 1)))
        return cls(float(d.mean()), sd, len(d), mean_ci(d, 0.95)[1], mean_ci(d, 0.90)[1], p)


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


def decide(test: PairedTest, p_adjusted: float, direction: int, margin: float, alpha: float = ALPHA) -> str:
    """One of VERDICTS for a claim that says 'higher' (direction +1) or 'lower' (-1) than the control, with
    ``margin`` the thesis's own effect size (> 0) on the same metric."""
    if test.n < 2 or math.isnan(test.half90):
        return "inconclusive"
    if p_adjusted < alpha and test.mean != 0:
        return "reproduced" if math.copysign(1, test.mean) == direction else "contradicted"
    if test.mean - test.half90 > -margin and test.mean + test.half90 < margin:
        return "equivalent"
    return "inconclusive"


def seeds_for_power(effect: float, sd: float, alpha: float = ALPHA, power: float = 0.8, max_n: int = 10_000):
    """Smallest number of seeds whose two-sided paired t-test at ``alpha`` detects a true mean difference
    ``effect`` with probability ≥ ``power`` when the per-seed differences have SD ``sd``; None if beyond max_n."""
    if not (sd > 0) or not (abs(effect) > 0):
        return None if not (abs(effect) > 0) else 2
    for n in range(2, max_n + 1):
        df, nc = n - 1, abs(effect) / (sd / math.sqrt(n))
        crit = sps.t.ppf(1 - alpha / 2, df)
        if sps.nct.sf(crit, df, nc) + sps.nct.cdf(-crit, df, nc) >= power:
            return n
    return None


def verdict(mean: float, half: float, direction: int) -> str:
    """From a 95 % interval alone (secondary metrics, notebook 05): 'reproduced' when the interval lies on the
    claimed side of zero, 'contradicted' on the other side, else 'inconclusive'. Decides no claim of the chapter."""
    if math.isnan(half):
        return "inconclusive"
    low, high = mean - half, mean + half
    if (direction > 0 and low > 0) or (direction < 0 and high < 0):
        return "reproduced"
    if (direction > 0 and high < 0) or (direction < 0 and low > 0):
        return "contradicted"
    return "inconclusive"


def fmt(mean: float, half: float, digits: int = 2) -> str:
    if math.isnan(mean):
        return "–"
    return f"{mean:.{digits}f}" if math.isnan(half) else f"{mean:.{digits}f} ± {half:.{digits}f}"
