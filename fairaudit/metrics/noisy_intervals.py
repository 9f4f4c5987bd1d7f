"""Intervals of the min-of-ratios metrics (balance, the CCE family, Balance′) of a table of
released counts: each count carries independent noise of a known variance (a differentially
private release, ``--publish``; docs/privacy.md, "Intervals, gates and verdicts").

The constructions are those of :mod:`fairaudit.metrics.intervals` — intersection bounds over
the cells, and with replicates one bootstrap-calibrated critical value for both ends
(``score-max-bootstrap``) — with every cell's score statistic carrying the noise
(:mod:`fairaudit.metrics.noisy_cells`: sampling variance + the noise variance of the cell and
of its margins), and with the release's parametric replicates (rows drawn again from the
released table, fresh noise, the same post-processing) in the calibration.

Where the noise can hide a cell — fewer than ``SPARSE_EXPECTED`` people expected under
independence plus ``NOISE_SDS`` noise standard deviations — the cell's upper bound is the
largest value (its own data cannot bound the minimum from above), as sparse cells are in an
exact table; a deciding cell released as 0 gives a lower end of 0 and an upper end from the
other cells, never a point.

Every function takes the released (judgeable) table, the level, optionally the replicates, and
``s2``, the mechanism's noise variance per released cell. Nothing else: the intervals are
post-processing of the release.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fairaudit.metrics.calibrate import Margins, checked_replicates
from fairaudit.metrics.intervals import (
    CALIBRATED_METHOD as _CAL,
)
from fairaudit.metrics.intervals import (  # the constructions, shared with the exact tables
    SPARSE_EXPECTED,
    Interval,
    _alpha,
    _Calibration,
    _cells,
    _expected,
    _fold,
    _min_of,
    _ratio_of_extremes,
    _table,
)
from fairaudit.metrics.noisy_cells import BalanceCells, ShareCells, noisy_wilson_interval

__all__ = ["CALIBRATED_METHOD", "METHOD", "NOISE_SDS", "balance_interval", "balance_mean_interval", "balance_prime_interval",
           "cce_interval", "fairness_cce_interval", "fce_fair_interval"]

METHOD = "release-score-intersection"
"""The conservative construction on released counts (``detail.interval.method``)."""
CALIBRATED_METHOD = "release-score-max-bootstrap"
"""The calibrated construction on released counts, with the release's parametric replicates."""
NOISE_SDS = 2.0
"""A cell expecting fewer than SPARSE_EXPECTED + NOISE_SDS noise standard deviations is sparse
(its upper bound is the metric's largest value)."""


def _named(iv: Interval) -> Interval:
    """The interval under the release's method names."""
    return dataclasses.replace(iv, method=CALIBRATED_METHOD if iv.method == _CAL else METHOD)


def _sparse_expected(T: NDArray[np.float64], s2: float) -> NDArray[np.float64]:
    """Expected counts less NOISE_SDS noise sds: below SPARSE_EXPECTED means sparse."""
    return _expected(T) - NOISE_SDS * math.sqrt(max(s2, 0.0))


def _cached(fn):
    """bounds(alpha, side) computes both sides at once: keep the last few alphas."""
    return functools.lru_cache(maxsize=8)(fn)


def _calibration(T: NDArray[np.float64], replicates: ArrayLike | None, stat, folded: bool,
                 s2: float, unfolded: NDArray[np.float64] | None) -> _Calibration | None:
    if replicates is None:
        return None

    def make(M: Margins):
        def scores(idx: NDArray[np.int64], theta: NDArray[np.float64]) -> NDArray[np.float64]:
            x, rows, cols, n = M.at(idx)
            return stat(x, rows, cols, n, theta[None])

        return scores

    return _Calibration(make(Margins(checked_replicates(T, replicates))), folded,
                        make(Margins(np.stack([T, T]))), float(T.sum()),
                        _sparse_expected(T, s2), unfolded)


# -------------------------------------------------------------------------------- balance
def _balance(T: NDArray[np.float64], s2: float):
    model = BalanceCells(float(s2), *T.shape)
    rows = T.sum(axis=1)[:, None]
    cols = T.sum(axis=0)[None, :]
    q = T * T.sum() / (cols * rows)
    est = np.where(q > 0, np.minimum(q, 1.0 / np.where(q > 0, q, 1.0)), 0.0)
    both = _cached(lambda alpha: model.bounds(T, alpha))

    def bounds(alpha: float, side: str):
        lo, hi = both(float(alpha))
        return _fold(lo, hi, side)

    return model, bounds, est, q


def balance_interval(N: ArrayLike, level: float, replicates: ArrayLike | None,
                     s2: float) -> Interval:
    """``balance`` (min over cells of min(q, 1/q)) of a released table: calibrated with the
    release's ``replicates``, conservative (score intersection) without."""
    T = _table(N)
    model, bounds, est, q = _balance(T, s2)
    cal = _calibration(T, replicates, model.stat, True, s2, q.ravel())
    return _named(_min_of(bounds, est, level, _cells(*T.shape), cal,
                          (_sparse_expected(T, s2), 1.0)))


def balance_mean_interval(N: ArrayLike, level: float, s2: float) -> Interval:
    """``balance_mean`` of a released table: Bonferroni over the c clusters, as
    :func:`fairaudit.metrics.intervals.balance_mean_interval`, with the noisy cells' bounds
    (and a sparse cell's upper bound the largest value)."""
    T = _table(N)
    _, bounds, est, _ = _balance(T, s2)
    g, c = T.shape
    a = _alpha(level)
    lo = np.minimum(bounds(a / c, "lower"), est).min(axis=0)
    hi = np.maximum(bounds(a / (c * g), "upper"), est)
    hi = np.where(_sparse_expected(T, s2).reshape(T.shape) < SPARSE_EXPECTED, 1.0, hi)
    return Interval(lower=float(lo.mean()), upper=float(hi.min(axis=0).mean()),
                    level=float(level), method=METHOD, contact_cells=g * c)


# -------------------------------------------------------------------------------- CCE family
def _shares(T: NDArray[np.float64], s2: float, total: str, scale: float, folded: bool):
    model = ShareCells(float(s2), total, scale)
    margin_cells = T.shape[1] if total == "row" else T.shape[0]
    both = _cached(lambda alpha: model.bounds(T, alpha))

    def bounds(alpha: float, side: str):
        lo, hi = both(float(alpha))
        if folded:
            return _fold(lo, hi, side)
        return lo if side == "lower" else hi

    def stat(x, rows, cols, n, theta):
        return model.stat(x, rows, cols, theta, margin_cells)

    return bounds, stat


def fairness_cce_interval(N: ArrayLike, level: float, replicates: ArrayLike | None,
                          s2: float) -> Interval:
    """``fairness_cce`` (min over cells of min(c γ, 1/(c γ)), γ = N[g,k] / |g|) of a released
    table."""
    T = _table(N)
    c = T.shape[1]
    x = c * T / T.sum(axis=1, keepdims=True)
    est = np.where(x > 0, np.minimum(x, 1.0 / np.where(x > 0, x, 1.0)), 0.0)
    bounds, stat = _shares(T, s2, "row", float(c), True)
    cal = _calibration(T, replicates, stat, True, s2, x.ravel())
    return _named(_min_of(bounds, est, level, _cells(*T.shape), cal,
                          (_sparse_expected(T, s2), 1.0)))


def balance_prime_interval(N: ArrayLike, level: float, replicates: ArrayLike | None,
                           s2: float) -> Interval:
    """FUFS's Balance′ (min over cells of N[g,k] / |k|) of a released table."""
    T = _table(N)
    bounds, stat = _shares(T, s2, "column", 1.0, False)
    cal = _calibration(T, replicates, stat, False, s2, None)
    return _named(_min_of(bounds, T / T.sum(axis=0, keepdims=True), level,
                          _cells(*T.shape), cal))


def fce_fair_interval(N: ArrayLike, level: float, s2: float) -> Interval:
    """The FCE code's ``fair`` (min over clusters of min_g N / max_g N) of a released table:
    :func:`fairaudit.metrics.intervals.fce_fair_interval` with noisy share bounds (a cell's
    noise and its cluster total's, over the table's groups)."""
    T = _table(N)
    g, c = T.shape
    if g < 2:
        return Interval(lower=1.0, upper=1.0, level=float(level), method=METHOD,
                        contact_cells=0)
    a = _alpha(level)
    cols = np.broadcast_to(T.sum(axis=0)[None, :], T.shape)

    def share(x, n, alpha):
        return noisy_wilson_interval(x, n, alpha, s2, g)

    est = T.min(axis=0) / T.max(axis=0)
    lower, _ = _ratio_of_extremes(T, cols, a, axis=0, interval=share)
    _, upper = _ratio_of_extremes(T, cols, a / c, axis=0, interval=share)
    return Interval(lower=float(min(lower.min(), est.min())),
                    upper=float(max(upper.min(), est.min())), level=float(level),
                    method=METHOD, contact_cells=c)


def cce_interval(N: ArrayLike, level: float, s2: float) -> Interval:
    """CCE (the smallest over the largest cluster size) of a released table: a cluster size is
    a sum of the table's g cells, the total of all g·c."""
    T = _table(N)
    g = T.shape[0]
    sizes = T.sum(axis=0)
    if sizes.size < 2:
        return Interval(lower=1.0, upper=1.0, level=float(level), method=METHOD,
                        contact_cells=0)

    def share(x, n, alpha):
        return noisy_wilson_interval(x, n, alpha, s2 * g, sizes.size)

    lower, upper = _ratio_of_extremes(sizes, np.full_like(sizes, sizes.sum()), _alpha(level),
                                      axis=0, interval=share)
    est = float(sizes.min() / sizes.max())
    return Interval(lower=float(min(lower, est)), upper=float(max(upper, est)),
                    level=float(level), method=METHOD, contact_cells=int(sizes.size))
