"""Per-cell score statistics of a table whose counts carry independent additive noise of a known
variance (a differentially private release: docs/privacy.md, "Intervals, gates and verdicts").

The exact tables' intervals (:mod:`fairaudit.metrics.intervals`) invert, per cell, a score test
that knows only sampling. A released cell is the sampled count plus noise of the mechanism's
public variance ``s2`` (and so is every margin, a sum of released cells). Here each cell's
statistic is

    z(θ) = (x − m(θ)) / sqrt(v(θ) + τ²(θ))

with x the released count, m(θ) its expectation at the cell parameter θ given the released
margins, v(θ) its sampling variance there, and τ²(θ) the variance of the noise in x − m(θ) —
the cell's own noise and its margins' (a delta-method sum over the cells of the margins, all
independent with variance ``s2``). With ``s2 = 0`` these are the usual score statistics (a
Wilson score for a share; for balance, the conditional score of a 2 x 2 table given its
margins, whose variance is the noncentral hypergeometric one, 1 / (1/a + 1/b + 1/c + 1/d)).

Each model gives :meth:`stat` (vectorised over replicates and cells) and :meth:`bounds` (the θ
where the statistic crosses ±z, by bisection). They are used as the cells of the calibrated and
conservative constructions of :mod:`fairaudit.metrics.intervals` (intersection bounds, one
bootstrap-calibrated critical value), whose replicates are then the release's parametric
bootstrap (sampling and fresh noise). Nothing here reads anything but the released table, its
replicates and the noise variance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from fairaudit.metrics.score import _z

__all__ = ["BalanceCells", "ShareCells", "discrete_laplace_variance", "noisy_wilson_interval"]

_STEPS = 60  # bisection steps: the bracket shrinks by 2**-60


def discrete_laplace_variance(scale: float) -> float:
    """Variance of the discrete Laplace distribution P(z) ∝ exp(-|z| / scale): 2p / (1 - p)²,
    p = exp(-1 / scale) (about 2 scale² for large scales)."""
    p = math.exp(-1.0 / scale)
    return 2.0 * p / (1.0 - p) ** 2


def noisy_wilson_interval(x: NDArray[np.float64], n: NDArray[np.float64], alpha: float,
                          s2: float, margin_cells: float | NDArray[np.float64] = 1.0
                          ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Bounds of a share p = x / n, each end at one-sided ``alpha``, where x is a released count
    (noise variance ``s2``) and n a released total of ``margin_cells`` such cells including x:
    the p where (x − n p)² = z² (n p (1 − p) + s2 (1 − 2p + p² M)), M = ``margin_cells``
    (the noise of x − p n: the cell's own, less p times the total's). ``s2 = 0`` is Wilson's
    interval. The bounds lie in [0, 1] and contain x / n (clipped)."""
    x = np.asarray(x, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    z2 = _z(alpha) ** 2
    M = np.asarray(margin_cells, dtype=np.float64)
    a = n * n + z2 * n - z2 * s2 * M
    b = -2.0 * x * n - z2 * n + 2.0 * z2 * s2
    c = x * x - z2 * s2
    with np.errstate(invalid="ignore", divide="ignore"):
        disc = b * b - 4.0 * a * c
        root = np.sqrt(np.maximum(disc, 0.0))
        r1 = (-b - root) / (2.0 * a)
        r2 = (-b + root) / (2.0 * a)
    whole = (a <= 0) | (disc < 0)  # the noise swamps the total: nothing excluded
    p = np.clip(np.where(n > 0, x / np.where(n > 0, n, 1.0), 0.0), 0.0, 1.0)
    lo = np.where(whole | (c <= 0), 0.0, np.clip(r1, 0.0, 1.0))
    hi = np.where(whole, 1.0, np.clip(r2, 0.0, 1.0))
    return np.minimum(lo, p), np.maximum(hi, p)


@dataclass(frozen=True)
class ShareCells:
    """Cells that are ``scale`` times a share x / t of their row (``total = "row"``) or column
    total: fairness_CCE's c·γ (x of |g|, scale c), Balance′ (x of |k|), with released counts of
    noise variance ``s2``; the total is the sum of ``margin_cells`` released cells."""

    s2: float
    total: str
    scale: float = 1.0

    def stat(self, x: NDArray[np.float64], rows: NDArray[np.float64], cols: NDArray[np.float64],
             theta: NDArray[np.float64], margin_cells: float) -> NDArray[np.float64]:
        """Signed statistic of counts x (with their row and column totals) at cell values
        ``theta``: positive where x lies above; -inf where θ lies beyond a share of 1; NaN
        where the total is 0."""
        t = rows if self.total == "row" else cols
        p = np.asarray(theta, dtype=np.float64) / self.scale
        pc = np.clip(p, 0.0, 1.0)
        var = t * pc * (1.0 - pc) + self.s2 * (1.0 - 2.0 * pc + pc * pc * margin_cells)
        d = x - t * pc
        with np.errstate(divide="ignore", invalid="ignore"):
            z = d / np.sqrt(np.maximum(var, 0.0))
        z = np.where(d == 0, 0.0, z)
        z = np.where(p > 1.0, -np.inf, z)
        return np.where(t > 0, z, np.nan)

    def bounds(self, T: NDArray[np.float64], alpha: float
               ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Per cell, the (unfolded) value's bounds at one-sided ``alpha``."""
        if self.total == "row":
            t = np.broadcast_to(T.sum(axis=1)[:, None], T.shape)
            m = T.shape[1]
        else:
            t = np.broadcast_to(T.sum(axis=0)[None, :], T.shape)
            m = T.shape[0]
        lo, hi = noisy_wilson_interval(T, t, alpha, self.s2, m)
        return self.scale * lo, self.scale * hi


@dataclass(frozen=True)
class BalanceCells:
    """Balance's cells q = N[g,k] n / (|g| |k|) of a released table (noise variance ``s2`` per
    cell). Given the margins G = |g|, K = |k| and n, the expected count at q is m = q G K / n;
    its sampling variance the noncentral hypergeometric one, 1 / (1/m + 1/(G−m) + 1/(K−m) +
    1/(n−G−K+m)); the noise of x − q G K / n (x's own, G's over its C cells, K's over its R
    cells, n's over all R·C) has variance s2 · (1 + a²C + b²R + c²RC − 2a − 2b + 2c + 2ab −
    2acC − 2bcR), a = qK/n, b = qG/n, c = qGK/n² (delta method, independent noises)."""

    s2: float
    R: int
    """Groups of the table."""
    C: int
    """Clusters of the table."""

    def stat(self, x: NDArray[np.float64], G: NDArray[np.float64], K: NDArray[np.float64],
             n: NDArray[np.float64], q: NDArray[np.float64]) -> NDArray[np.float64]:
        """Signed statistic of counts x (margins G, K, n) at unfolded values q: positive where x
        lies above; -inf where q lies beyond any table with these margins (above), +inf where
        below; NaN where a margin is 0."""
        q = np.asarray(q, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            m = q * G * K / n
            cells = (m, G - m, K - m, n - G - K + m)
            inside = (cells[1] > 0) & (cells[2] > 0) & (cells[3] > 0)
            v = np.where((m > 0) & inside, 1.0 / (1.0 / m + 1.0 / cells[1] + 1.0 / cells[2]
                                                  + 1.0 / cells[3]), 0.0)
            a, b = q * K / n, q * G / n
            c = a * G / n
            R, C = self.R, self.C
            t2 = (1.0 + a * a * C + b * b * R + c * c * R * C - 2 * a - 2 * b + 2 * c
                  + 2 * a * b - 2 * a * c * C - 2 * b * c * R)
            var = v + self.s2 * np.maximum(t2, 0.0)
            d = x - m
            z = d / np.sqrt(var)
        z = np.where(d == 0, 0.0, z)
        z = np.where(inside | (m <= 0), z, np.where(cells[1] <= 0, -np.inf,
                                                      np.where(cells[2] <= 0, -np.inf,
                                                               np.inf)))
        return np.where((G > 0) & (K > 0) & (n > 0), z, np.nan)

    def bounds(self, T: NDArray[np.float64], alpha: float
               ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Per cell, the bounds of q at one-sided ``alpha``: where the statistic crosses +z
        (lower) and -z (upper), by bisection over [0, q_max] (q_max: the largest q of a table
        with these margins)."""
        zc = _z(alpha)
        G = np.broadcast_to(T.sum(axis=1)[:, None], T.shape)
        K = np.broadcast_to(T.sum(axis=0)[None, :], T.shape)
        n = float(T.sum())
        with np.errstate(divide="ignore", invalid="ignore"):
            qmax = n * np.minimum(G, K) / (G * K)
            qhat = T * n / (G * K)
        single = G >= n  # one group: q = 1 exactly
        lo = self._cross(T, G, K, n, np.zeros_like(qhat), qhat, zc)
        hi = self._cross(T, G, K, n, qhat, qmax, -zc)
        lo = np.where(single, 1.0, np.minimum(lo, qhat))
        hi = np.where(single, 1.0, np.maximum(hi, qhat))
        return lo, hi

    def _cross(self, x, G, K, n, a, b, target):
        """The q in [a, b] where the (decreasing) statistic equals ``target``; a where it is
        already at or below it there, b where it is still above it at b."""
        lo, hi = a.astype(np.float64).copy(), b.astype(np.float64).copy()
        at_a = self.stat(x, G, K, n, lo)
        at_b = self.stat(x, G, K, n, hi)
        for _ in range(_STEPS):
            mid = 0.5 * (lo + hi)
            above = self.stat(x, G, K, n, mid) > target
            lo = np.where(above, mid, lo)
            hi = np.where(above, hi, mid)
        out = 0.5 * (lo + hi)
        out = np.where(np.nan_to_num(at_a, nan=-np.inf) <= target, a, out)
        return np.where(np.nan_to_num(at_b, nan=np.inf) > target, b, out)
