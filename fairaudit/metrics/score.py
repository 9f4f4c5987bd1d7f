"""Score intervals of binomial proportions and of their ratios, the per-cell ingredient of the
min-of-ratios intervals (:mod:`fairaudit.metrics.intervals`).

* :func:`wilson_interval` — Wilson (1927) score bounds of x / n;
* :func:`ratio_score_interval` — Koopman (1984) score bounds of (x1/n1) / (x2/n2), the Pearson
  score test inverted with the restricted maximum likelihood in closed form (Miettinen &
  Nurminen 1985), by bisection on log(theta).

Each end is at one-sided level ``alpha``; vectorised over arrays of counts.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["koopman_stat", "ratio_score_interval", "wilson_interval", "z_value"]

_STEPS = 48  # bisection steps over a log-range of 80: 80 / 2**48 < 1e-12
_DISTINCT_FROM = 64  # from this many cells on, bisect once per distinct (x1, n1, x2, n2)


def _z(alpha_one_sided: float) -> float:
    from statistics import NormalDist  # not scipy.special.ndtri: its import costs 0.2-0.5 s

    p = 1.0 - alpha_one_sided
    return NormalDist().inv_cdf(p) if 0.0 < p < 1.0 else math.copysign(math.inf, p - 0.5)


def wilson_interval(
    x: ArrayLike, n: ArrayLike, alpha: float, *, skew: bool = False
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Wilson score bounds for binomial proportions x/n, each end at one-sided level ``alpha``.

    Vectorised; ``n`` must be positive. The bounds contain x/n and lie in [0, 1]; x = 0 gives a
    lower bound of exactly 0 and x = n an upper bound of exactly 1.

    ``skew=True``: each end widened, where the count's skewness makes the score bound too
    narrow, by the Cornish-Fisher correction of its critical value (:func:`skew_z`; Gart &
    Nam 1988): a count of a few people is skewed to the right, so the plain lower bound of its
    share misses more often than ``alpha`` (10 %-20 % instead of 2.5 % at 5-15 expected and
    one-sided 1e-4, the Bonferroni levels of many cells). Never narrower than the plain bounds.
    """
    x = np.asarray(x, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    z = _z(alpha)
    lo, hi = _wilson(x, n, z)
    if not skew:
        return lo, hi
    for _ in range(_SKEW_STEPS):  # the skewness at the (corrected) bound itself
        lo = np.minimum(lo, _wilson(x, n, skew_z(z, _share_skewness(lo, n)))[0])
        hi = np.maximum(hi, _wilson(x, n, skew_z(z, -_share_skewness(hi, n)))[1])
    return lo, hi


def _wilson(x: NDArray[np.float64], n: NDArray[np.float64], z: ArrayLike
            ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Wilson bounds at critical value ``z`` (a number or one per element)."""
    z = np.asarray(z, dtype=np.float64)
    p = x / n
    z2n = z * z / n
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z * np.sqrt(np.maximum(p * (1.0 - p) / n + z2n / (4.0 * n), 0.0)) / (1.0 + z2n)
    lo = np.where(x <= 0, 0.0, np.clip(centre - half, 0.0, 1.0))
    hi = np.where(x >= n, 1.0, np.clip(centre + half, 0.0, 1.0))
    # rounding can put a bound a few ulps on the wrong side of the estimate
    return np.minimum(lo, p), np.maximum(hi, p)


_SKEW_STEPS = 2  # evaluations of the skewness at the corrected bound (the third moves < 1e-3)
_SKEW_MAX = 4.0  # a correction of the critical value by more than this is capped (a count of 1)


def skew_z(z: float, skewness: ArrayLike) -> NDArray[np.float64]:
    """The critical value of a score statistic whose tail on the tested side has the given
    skewness (positive: heavier than normal): z + g (z^2 - 1) / 6, the Cornish-Fisher
    expansion's first term (Gart & Nam 1988, *Biometrics* 44:323, for binomial ratios; Laud
    2017, *Pharm. Stat.* 16:334, "SCAS"). Only widening (g > 0 and z > 1) is applied, by at
    most ``_SKEW_MAX``."""
    g = np.nan_to_num(np.asarray(skewness, dtype=np.float64), nan=0.0, posinf=np.inf,
                      neginf=0.0)
    step = np.minimum(np.maximum(g, 0.0) * max(z * z - 1.0, 0.0) / 6.0, _SKEW_MAX)
    return z + step


def _share_skewness(p: NDArray[np.float64], n: NDArray[np.float64]) -> NDArray[np.float64]:
    """Skewness (1 - 2p) / sqrt(n p (1 - p)) of a binomial count of n at the share p: the
    upper tail's excess (its negative is the lower tail's)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        g = (1.0 - 2.0 * p) / np.sqrt(n * p * (1.0 - p))
    return np.where((p > 0) & (p < 1), g, 0.0)


def _restricted(theta, x1, n1, x2, n2):
    """The restricted maximum likelihood (p1, p2) under pi1 / pi2 = theta, in closed form."""
    N = n1 + n2
    A = theta * N
    B = -(theta * n1 + x1 + n2 + theta * x2)
    C = x1 + x2
    disc = np.sqrt(np.maximum(B * B - 4.0 * A * C, 0.0))
    # the smaller root of A p^2 + B p + C = 0, in the cancellation-free form 2C / (-B + disc)
    p2 = 2.0 * C / (-B + disc)
    p1 = theta * p2
    eps = 1e-300
    # np.minimum(np.maximum(.)) is np.clip without its Python-level wrapper (the same values;
    # this runs ~50 times per interval)
    p1 = np.minimum(np.maximum(p1, eps), 1.0 - 1e-15)
    p2 = np.minimum(np.maximum(p2, eps), 1.0 - 1e-15)
    return p1, p2


def _koopman_stat(theta, x1, n1, x2, n2):
    """Koopman's score statistic for H0: pi1 / pi2 = theta (restricted MLE in closed form)."""
    p1, p2 = _restricted(theta, x1, n1, x2, n2)
    return (x1 - n1 * p1) ** 2 / (n1 * p1 * (1.0 - p1)) + (x2 - n2 * p2) ** 2 / (
        n2 * p2 * (1.0 - p2)
    )


def _ratio_skewness(theta, x1, n1, x2, n2):
    """Skewness of the score p1^ - theta p2^ at the restricted MLE (Koopman's statistic is its
    square over its variance): mu3 / V^1.5 with mu3 = p1 q1 (q1 - p1) / n1^2 - theta^3 p2 q2
    (q2 - p2) / n2^2 and V = p1 q1 / n1 + theta^2 p2 q2 / n2 (Gart & Nam 1988). Positive:
    the upper tail (the group's count above its share) is the heavier one."""
    p1, p2 = _restricted(theta, x1, n1, x2, n2)
    q1, q2 = 1.0 - p1, 1.0 - p2
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        mu3 = p1 * q1 * (q1 - p1) / (n1 * n1) - theta ** 3 * p2 * q2 * (q2 - p2) / (n2 * n2)
        v = p1 * q1 / n1 + theta * theta * p2 * q2 / n2
        g = mu3 / v ** 1.5
    return np.where(np.isfinite(g), g, 0.0)


def ratio_score_interval(
    x1: ArrayLike, n1: ArrayLike, x2: ArrayLike, n2: ArrayLike, alpha: float, *,
    skew: bool = False, steps: int = _STEPS
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Koopman (1984) score bounds for the ratio pi1 / pi2 of two independent binomial
    proportions (x1 of n1, x2 of n2), each end at one-sided level ``alpha``.

    Vectorised. x1 = 0 gives a lower bound of 0, x2 = 0 an upper bound of +inf. The bounds
    contain the estimate (x1/n1) / (x2/n2). Found by bisection on log(theta); each bound errs
    outwards (conservatively) by a relative 1e-12 at most.

    ``skew=True``: each end widened by the Cornish-Fisher correction of its critical value for
    the score's skewness at that end (:func:`skew_z`, :func:`_ratio_skewness`), found by a
    second bisection; never narrower than the plain bounds. ``steps``: bisection steps (the
    default's relative error 1e-12; 24 steps: 5e-6).
    """
    x1, n1, x2, n2 = (
        np.asarray(v, dtype=np.float64) for v in np.broadcast_arrays(x1, n1, x2, n2)
    )
    shape = x1.shape
    if x1.size > _DISTINCT_FROM:
        # the bounds are an elementwise function of (x1, n1, x2, n2): with small counts most
        # cells share their tuple (a table of 10,000 clusters of 2 rows has a few hundred),
        # so bisect once per distinct tuple (bit for bit the same values)
        key = np.ascontiguousarray(np.stack([v.ravel() for v in (x1, n1, x2, n2)], axis=1))
        uniq, inv = np.unique(key.view(np.dtype((np.void, 32))).ravel(), return_inverse=True)
        u = uniq.view(np.float64).reshape(-1, 4)
        lo, hi = _ratio_score(*(np.ascontiguousarray(u[:, i]) for i in range(4)), alpha, skew,
                              steps)
        inv = inv.reshape(-1)
        return lo[inv].reshape(shape), hi[inv].reshape(shape)
    lo, hi = _ratio_score(*(v.ravel().copy() for v in (x1, n1, x2, n2)), alpha, skew, steps)
    return lo.reshape(shape), hi.reshape(shape)


def _ratio_score(x1, n1, x2, n2, alpha, skew=False, steps=_STEPS):
    """:func:`ratio_score_interval` on flat float64 arrays (one bisection per element)."""
    z = _z(alpha)
    lo, hi = _ratio_bounds(x1, n1, x2, n2, np.full(x1.size, z * z), np.full(x1.size, z * z),
                           steps)
    if skew:
        # the critical value of each end at the skewness found at that end, bisected again
        # (each end only moves outwards)
        c_lo = skew_z(z, _ratio_skewness(np.where(lo > 0, lo, 1.0), x1, n1, x2, n2)) ** 2
        c_hi = skew_z(z, -_ratio_skewness(np.where(np.isfinite(hi), hi, 1.0), x1, n1, x2,
                                           n2)) ** 2
        lo2, hi2 = _ratio_bounds(x1, n1, x2, n2, c_lo, c_hi, steps)
        lo, hi = np.minimum(lo, lo2), np.maximum(hi, hi2)
    return lo, hi


def _ratio_bounds(x1, n1, x2, n2, crit_lo, crit_hi, steps=_STEPS):
    """Koopman bounds with per-element critical values (squared) for each end."""
    with np.errstate(divide="ignore", invalid="ignore"):
        est = (x1 / n1) / (x2 / n2)
    lo = np.zeros_like(est)
    hi = np.full_like(est, np.inf)
    # every bound of every cell in one bisection (the same arithmetic per element as one
    # bisection per kind of bound, with a tenth of the numpy calls): (bound, cells, bracket,
    # which end of the bracket is inside the set)
    jobs = []
    both = np.flatnonzero((x1 > 0) & (x2 > 0))
    if both.size:
        e = np.log(est[both])
        jobs += [(lo, both, e - 40.0, e, False, crit_lo), (hi, both, e, e + 40.0, True, crit_hi)]
    zero = np.flatnonzero((x1 <= 0) & (x2 > 0))  # estimate 0: the set is [0, U]
    if zero.size:
        s0 = np.log((0.5 / n1[zero]) / (x2[zero] / n2[zero])) - 30.0
        jobs.append((hi, zero, s0, s0 + 80.0, True, crit_hi))
    inf = np.flatnonzero((x1 > 0) & (x2 <= 0))  # estimate +inf: the set is [L, inf)
    if inf.size:
        s1 = np.log((x1[inf] / n1[inf]) / (0.5 / n2[inf])) + 30.0
        jobs.append((lo, inf, s1 - 80.0, s1, False, crit_lo))
    if jobs:
        idx = np.concatenate([j[1] for j in jobs])
        a1, b1, a2, b2 = x1[idx], n1[idx], x2[idx], n2[idx]
        found = _bisect_log(lambda t: _koopman_stat(t, a1, b1, a2, b2),
                            np.concatenate([j[2] for j in jobs]),
                            np.concatenate([j[3] for j in jobs]),
                            np.concatenate([j[5][j[1]] for j in jobs]),
                            np.concatenate([np.full(j[1].size, j[4]) for j in jobs]), steps)
        start = 0
        for bound, cells, *_ in jobs:
            bound[cells] = found[start:start + cells.size]
            start += cells.size
    ok = ~np.isnan(est)
    lo = np.where(ok, np.minimum(lo, np.where(ok, est, 0.0)), lo)
    hi = np.where(ok, np.maximum(hi, np.where(ok, est, 0.0)), hi)
    return lo, hi


def _bisect_log(stat, lo_log, hi_log, crit, inside_at_low, steps=_STEPS):
    """Find the boundary theta where stat(theta) crosses crit between exp(lo_log) and
    exp(hi_log); ``inside_at_low`` (a bool, or one per element) says which end is inside the
    confidence set."""
    a, b = lo_log.copy(), hi_log.copy()
    low = np.broadcast_to(np.asarray(inside_at_low, dtype=bool), a.shape)
    for _ in range(steps):
        mid = 0.5 * (a + b)
        inside = stat(np.exp(mid)) <= crit
        move_a = inside == low  # the end inside the set moves to mid where mid is inside
        a = np.where(move_a, mid, a)
        b = np.where(move_a, b, mid)
    return np.where(low, np.exp(b), np.exp(a))


z_value = _z
koopman_stat = _koopman_stat
