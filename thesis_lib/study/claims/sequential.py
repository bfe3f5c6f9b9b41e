"""Seeds added in blocks until a claim is decided: a group-sequential design, declared here before its runs.

Table 1's primary claim ("TTE before the encoders hurts") was *undecided* at the study's four seeds. Adding seeds
and looking again after each block would, at an unchanged 5 % per look, raise the chance of a false decision
(``naive_error``: three times the nominal level over the six looks below); the design below spends the 5 % over the
looks instead, with the O'Brien-Fleming-type α-spending function of Lan & DeMets (1983, *Biometrika* 70(3), 659-663):

    α*(t) = 2 − 2 Φ(z_{1−α/2} / √t),      t = seeds at this look / seeds at the cap,

so that early looks (small t) need overwhelming evidence and the last one is tested at almost the nominal level
(Jennison & Turnbull 2000, *Group Sequential Methods*, ch. 7). The nominal levels per look are computed exactly from
the joint normal law of the test statistics (corr(Z_i, Z_j) = √(t_i / t_j)) and applied to the paired t-statistics at
their own degrees of freedom; ``tests/test_sequential.py`` checks the boundaries against the published table and the
whole procedure's error rates by simulation.

Each test of the decision rule (``stats.decide``) gets its own spending: the two-sided significance test (Holm within
the family) and each one-sided test of the TOST (an intersection-union test: each side at the full level). The first
look (four seeds) had been analysed before this design was declared; it was undecided at 5 %, so at any smaller
level too, and its share of α is spent all the same.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import stats as sps
from scipy.optimize import brentq

from thesis_lib.config import PRESET_SPECS
from ..reference import BEFORE_HURTS
from .stats import ALPHA


@dataclass(frozen=True)
class SequentialDesign:
    """A claim decided by looks at ``looks`` seeds (the last is the cap), α spent by O'Brien-Fleming-type
    Lan-DeMets spending; a scale that only tests the path (``Preset.path_test``: smoke) stops at the first look."""
    claim: str
    looks: tuple
    alpha: float = ALPHA

    def looks_for(self, preset: str) -> tuple:
        return self.looks[:1] if PRESET_SPECS[preset].path_test else self.looks

    def levels(self, n: int) -> tuple[float, float]:
        """(two-sided significance level, one-sided TOST level) at a look of ``n`` seeds; the nominal levels for a
        seed count that is not a look are those of the last look below it (seeds beyond a look add nothing)."""
        k = max(i for i, look in enumerate(self.looks) if look <= n) if n >= self.looks[0] else 0
        return tuple(float((2 if two else 1) * sps.norm.sf(boundaries(self.looks, self.alpha, two)[k]))
                     for two in (True, False))    # the nominal levels: 2(1 − Φ(c_k)), 1 − Φ(c_k)


TABLE1_PRIMARY = SequentialDesign(BEFORE_HURTS, looks=(4, 8, 12, 16, 20, 24))
DESIGNS = {d.claim: d for d in (TABLE1_PRIMARY,)}
"""Every claim decided sequentially, by its text (``reference.CLAIMS``); every other claim is decided once, on the
study's seeds (``runs.SEEDS``)."""


def spent(t: float, alpha: float = ALPHA) -> float:
    """α*(t): the O'Brien-Fleming-type spending function (Lan & DeMets 1983), α*(0) = 0, α*(1) = α."""
    if t <= 0:
        return 0.0
    return float(2 - 2 * sps.norm.cdf(sps.norm.ppf(1 - alpha / 2) / math.sqrt(t)))


def spent_total(t: float, alpha: float = ALPHA, two_sided: bool = True) -> float:
    """α spent by information ``t``: one-sided tests spend α*(t) at ``alpha``; a two-sided test spends α*(t) at
    ``alpha`` / 2 on each side (the convention of the published tables, e.g. Jennison & Turnbull 2000, Table 7.6)."""
    return 2 * spent(t, alpha / 2) if two_sided else spent(t, alpha)


GRID = 2001     # points of the score's density per look (``boundaries``)


@lru_cache(maxsize=None)
def boundaries(looks: tuple, alpha: float = ALPHA, two_sided: bool = True) -> tuple:
    """The z-boundaries c_k of the looks (information = seeds): P(first crossing at look k) = α*(t_k) − α*(t_{k−1})
    under H0, solved look by look by numerical integration of the score's density over the continuation region
    (Armitage, McPherson & Rowe 1969, *J. R. Statist. Soc. A* 132(2); the method of Jennison & Turnbull 2000, §19.2).
    The score S_k = Z_k √n_k has independent increments N(0, n_k − n_{k−1})."""
    bounds, f, s, prev_n = [], None, None, 0
    for n in looks:
        target = spent_total(n / looks[-1], alpha, two_sided) - spent_total(prev_n / looks[-1], alpha, two_sided)
        root, sd = math.sqrt(n), math.sqrt(n - prev_n)
        if f is None:                                            # the first look: Z_1 itself
            c = sps.norm.isf(target / 2 if two_sided else target)
        else:                                # P(S_k leaves (−c√n_k, c√n_k), one-sided: exceeds c√n_k) = target
            def excess(c):
                out = sps.norm.sf((c * root - s) / sd) + (sps.norm.cdf((-c * root - s) / sd) if two_sided else 0.0)
                return float(np.trapezoid(f * out, s)) - target
            c = brentq(excess, 0.1, 40.0, xtol=1e-10)
        bounds.append(float(c))
        # the density of S_k on the continuation region, for the next look
        grid = np.linspace(-c * root if two_sided else -12 * root, c * root, GRID)
        if f is None:
            f = sps.norm.pdf(grid / root) / root
        else:
            f = np.trapezoid(f[None, :] * sps.norm.pdf((grid[:, None] - s[None, :]) / sd) / sd, s, axis=1)
        s, prev_n = grid, n
    return tuple(bounds)


def no_crossing(bounds, looks, two_sided: bool = True) -> float:
    """P(|Z_j| < c_j (one-sided: Z_j < c_j) at every look j) under H0, from the joint normal law of the Z's
    (corr √(t_i / t_j)) by Genz's algorithm (seeded): an independent check of ``boundaries``."""
    k, upper, t = len(bounds), np.asarray(bounds, dtype=float), np.asarray(looks[:len(bounds)], dtype=float)
    lower = -upper if two_sided else np.full(k, -np.inf)
    corr = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
    mvn = sps.multivariate_normal(np.zeros(k), corr, seed=0, abseps=1e-7, releps=1e-7)
    return float(mvn.cdf(upper, lower_limit=lower))


def naive_error(looks: tuple) -> float:
    """The chance of a false 'significant' somewhere over the looks if each were tested at 5 % unadjusted
    (two-sided, under H0): the error rate the spending function keeps at 5 %."""
    return 1 - no_crossing([sps.norm.isf(ALPHA / 2)] * len(looks), looks, two_sided=True)


FIRST_LOOK_AS_RUN = (ALPHA, ALPHA)
"""The levels the first look (four seeds) was actually tested at: the study's fixed-n rule (5 % two-sided, TOST at 5 %
each side), before this design was declared. Its later looks used the design's levels."""


def procedure_error(design: SequentialDesign, effect: float, margin: float,
                    first: tuple | None = FIRST_LOOK_AS_RUN, reps: int = 200_000, seed: int = 0) -> dict:
    """The share of simulated procedures (paired differences N(``effect``, 1), the first ``look`` seeds at each
    look) that end on each outcome, the procedure stopping at its first decisive verdict as ``stats.decide`` gives it
    (size first, then significance; a family of one: no Holm), at the design's levels, except the first look at
    ``first`` (None: the design's own). Returns {"significant": P(reproduced, contradicted or trivial),
    "equivalent": P(equivalent or trivial)}: under ``effect`` 0 the first is the false-significance rate; under
    ``effect`` = ± the margin the second is the false-equivalence rate."""
    x = np.random.default_rng(seed).normal(effect, 1.0, (reps, design.looks[-1]))
    open_, sig_any, eq_any = np.ones(reps, bool), np.zeros(reps, bool), np.zeros(reps, bool)
    for k, n in enumerate(design.looks):
        sig_level, tost_level = first if (k == 0 and first is not None) else design.levels(n)
        m, se = x[:, :n].mean(1), x[:, :n].std(1, ddof=1) / math.sqrt(n)
        half = sps.t.ppf(1 - tost_level, n - 1) * se
        inside = (m - half > -margin) & (m + half < margin)
        significant = 2 * sps.t.sf(np.abs(m) / se, n - 1) < sig_level
        decided = open_ & (inside | significant)
        sig_any |= decided & significant
        eq_any |= decided & inside
        open_ &= ~decided
    return {"significant": float(sig_any.mean()), "equivalent": float(eq_any.mean())}


def design_table(design: SequentialDesign) -> list[dict]:
    """One row per look: seeds, information fraction, α spent so far, the nominal levels of the two tests."""
    rows = []
    for k, n in enumerate(design.looks):
        sig, tost = design.levels(n)
        rows.append({"look": k + 1, "seeds": n, "information t": round(n / design.looks[-1], 3),
                     "α spent, two-sided test": float(f"{spent_total(n / design.looks[-1], design.alpha):.3g}"),
                     "significance level (two-sided)": float(f"{sig:.3g}"), "TOST level (each side)":
                     float(f"{tost:.3g}")})
    return rows
