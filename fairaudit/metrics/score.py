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
    x: ArrayLike, n: ArrayLike, alpha: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Wilson score bounds for binomial proportions x/n, each end at one-sided level ``alpha``.

    Vectorised; ``n`` must be positive. The bounds contain x/n and lie in [0, 1]; x = 0 gives a
    lower bound of exactly 0 and x = n an upper bound of exactly 1.
    """
    x = np.asarray(x, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    z = _z(alpha)
    p = x / n
    z2n = z * z / n
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z * np.sqrt(np.maximum(p * (1.0 - p) / n + z2n / (4.0 * n), 0.0)) / (1.0 + z2n)
    lo = np.where(x <= 0, 0.0, np.clip(centre - half, 0.0, 1.0))
    hi = np.where(x >= n, 1.0, np.clip(centre + half, 0.0, 1.0))
    # rounding can put a bound a few ulps on the wrong side of the estimate
    return np.minimum(lo, p), np.maximum(hi, p)


def _koopman_stat(theta, x1, n1, x2, n2):
    """Koopman's score statistic for H0: pi1 / pi2 = theta (restricted MLE in closed form)."""
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
    return (x1 - n1 * p1) ** 2 / (n1 * p1 * (1.0 - p1)) + (x2 - n2 * p2) ** 2 / (
        n2 * p2 * (1.0 - p2)
    )


def ratio_score_interval(
    x1: ArrayLike, n1: ArrayLike, x2: ArrayLike, n2: ArrayLike, alpha: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Koopman (1984) score bounds for the ratio pi1 / pi2 of two independent binomial
    proportions (x1 of n1, x2 of n2), each end at one-sided level ``alpha``.

    Vectorised. x1 = 0 gives a lower bound of 0, x2 = 0 an upper bound of +inf. The bounds
    contain the estimate (x1/n1) / (x2/n2). Found by bisection on log(theta); each bound errs
    outwards (conservatively) by a relative 1e-12 at most.
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
        lo, hi = _ratio_score(*(np.ascontiguousarray(u[:, i]) for i in range(4)), alpha)
        inv = inv.reshape(-1)
        return lo[inv].reshape(shape), hi[inv].reshape(shape)
    lo, hi = _ratio_score(*(v.ravel().copy() for v in (x1, n1, x2, n2)), alpha)
    return lo.reshape(shape), hi.reshape(shape)


def _ratio_score(x1, n1, x2, n2, alpha):
    """:func:`ratio_score_interval` on flat float64 arrays (one bisection per element)."""
    crit = _z(alpha) ** 2
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
        jobs += [(lo, both, e - 40.0, e, False), (hi, both, e, e + 40.0, True)]
    zero = np.flatnonzero((x1 <= 0) & (x2 > 0))  # estimate 0: the set is [0, U]
    if zero.size:
        s0 = np.log((0.5 / n1[zero]) / (x2[zero] / n2[zero])) - 30.0
        jobs.append((hi, zero, s0, s0 + 80.0, True))
    inf = np.flatnonzero((x1 > 0) & (x2 <= 0))  # estimate +inf: the set is [L, inf)
    if inf.size:
        s1 = np.log((x1[inf] / n1[inf]) / (0.5 / n2[inf])) + 30.0
        jobs.append((lo, inf, s1 - 80.0, s1, False))
    if jobs:
        idx = np.concatenate([j[1] for j in jobs])
        a1, b1, a2, b2 = x1[idx], n1[idx], x2[idx], n2[idx]
        found = _bisect_log(lambda t: _koopman_stat(t, a1, b1, a2, b2),
                            np.concatenate([j[2] for j in jobs]),
                            np.concatenate([j[3] for j in jobs]), crit,
                            np.concatenate([np.full(j[1].size, j[4]) for j in jobs]))
        start = 0
        for bound, cells, *_ in jobs:
            bound[cells] = found[start:start + cells.size]
            start += cells.size
    ok = ~np.isnan(est)
    lo = np.where(ok, np.minimum(lo, np.where(ok, est, 0.0)), lo)
    hi = np.where(ok, np.maximum(hi, np.where(ok, est, 0.0)), hi)
    return lo, hi


def _bisect_log(stat, lo_log, hi_log, crit, inside_at_low):
    """Find the boundary theta where stat(theta) crosses crit between exp(lo_log) and
    exp(hi_log); ``inside_at_low`` (a bool, or one per element) says which end is inside the
    confidence set."""
    a, b = lo_log.copy(), hi_log.copy()
    low = np.broadcast_to(np.asarray(inside_at_low, dtype=bool), a.shape)
    for _ in range(_STEPS):
        mid = 0.5 * (a + b)
        inside = stat(np.exp(mid)) <= crit
        move_a = inside == low  # the end inside the set moves to mid where mid is inside
        a = np.where(move_a, mid, a)
        b = np.where(move_a, b, mid)
    return np.where(low, np.exp(b), np.exp(a))


z_value = _z
koopman_stat = _koopman_stat
