"""Statistics over seeds: mean ± 95 % confidence interval (Student's t), paired differences to the baseline, and a
verdict per claim computed from the intervals (never from point estimates alone).

A verdict is "reproduced" when the interval of the paired difference lies entirely on the claimed side of zero,
"contradicted" when it lies entirely on the other side, and "inconclusive" otherwise.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps


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


def verdict(mean: float, half: float, direction: int) -> str:
    """direction +1: the claim says 'higher'; -1: 'lower'."""
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
