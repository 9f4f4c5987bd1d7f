"""The bootstrap critical value of the calibrated intervals of a minimum over cells
(``score-max-bootstrap``), used by :mod:`fairaudit.metrics.intervals`.

The interval [min_j l_j(c), min_j u_j(c)] of θ = min_j θ_j, with l_j(c), u_j(c) the score
bounds of cell j at critical value c, is the set of values θ0 that a test of θ = θ0 accepts:
θ0 lies in it exactly when S(θ0) <= c, with

    S(θ0) = max( max_j (-z_j(θ0)),  min_j z_j(θ0) ),

z_j(θ0) the signed score statistic of cell j at the value θ0 (positive where the cell lies
above θ0). The first part is the maximum standardised deviation below θ0 (the upper end
misses θ0 when some cell's bound lies below it; Cherian & Candès, "Statistical inference for
fairness auditing", JMLR 25, 2024), the second the smallest deviation above it (the lower end
misses θ0 only when every cell's bound lies above it). The critical value c is the level
quantile of S*(θ̂) over the bootstrap replicates, at the estimate θ̂ — the bootstrap
calibration of a test inversion, as the bootstrap-t calibrates a studentised statistic.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["Margins", "checked_replicates", "critical_value", "miss_statistic", "normal_cdf",
           "one_sided", "wilson_z"]

_BLOCK_ELEMENTS = 1 << 18  # float64 elements per block of statistics (2 MB)
_CLIP = 1e6  # a statistic of +-inf (a cell that cannot reach the value) counts as this


def miss_statistic(stats: Callable[[NDArray[np.int64]],
                                   tuple[NDArray[np.float64], NDArray[np.float64]]],
                   idx: NDArray[np.int64]) -> NDArray[np.float64]:
    """Per replicate, S = max(max_j below_j, min_j above_j) over the cells ``idx``, in blocks of
    cells (B x block stays a few MB however many cells). ``stats(cells)`` gives the B x
    len(cells) statistics (below, above); NaN (a cell absent from a replicate) takes no part in
    either; a replicate with no defined cell gives -inf for the max and +inf for the min."""
    worst: NDArray[np.float64] | None = None
    least: NDArray[np.float64] | None = None
    step = max(1, _BLOCK_ELEMENTS // 256)
    for i in range(0, idx.size, step):
        below, above = stats(idx[i:i + step])
        w = np.nan_to_num(below, nan=-np.inf).max(axis=1)
        m = np.nan_to_num(above, nan=np.inf).min(axis=1)
        worst = w if worst is None else np.maximum(worst, w)
        least = m if least is None else np.minimum(least, m)
    if worst is None or least is None:
        return np.zeros(0)
    return np.clip(np.maximum(worst, least), -_CLIP, _CLIP)


def critical_value(s: ArrayLike, level: float) -> float:
    """The ``level`` quantile of the replicates' miss statistics ``s``, never below z at the
    one-sided 1 - ``level`` (an interval cannot be narrower than one that spends all of the
    error on one end of one cell; a cell of a few people has a discrete bootstrap that can put
    the quantile there). With no statistic: that floor."""
    from statistics import NormalDist  # not scipy.special.ndtri: its import costs 0.2-0.5 s

    floor = NormalDist().inv_cdf(float(level))
    s = np.asarray(s, dtype=np.float64)
    return floor if s.size == 0 else max(floor, float(np.quantile(s, float(level))))


def normal_cdf(x: float) -> float:
    """Phi(x), computed as scipy.special.ndtr does (erf near 0, erfc in the tails), from the
    standard library: equal to it within one unit in the last place, without scipy's import
    (0.2-0.5 s of every audit)."""
    half = math.sqrt(0.5)
    z = abs(x) * half
    if z < half:
        return 0.5 + 0.5 * math.erf(x * half)
    y = 0.5 * math.erfc(z)
    return 1.0 - y if x > 0 else y


def one_sided(c: float) -> float:
    """The one-sided level Phi(-c) of a critical value, kept inside (1e-12, 0.5]."""
    tail = 0.5 * math.erfc(c / math.sqrt(2.0))  # Phi(-c), accurate in the tail; no scipy import
    return float(min(0.5, max(1e-12, tail)))


def checked_replicates(N: NDArray[np.float64], replicates: ArrayLike) -> NDArray[Any]:
    """The replicates as given (no float copy of B x groups x clusters), checked."""
    R = np.asarray(replicates)
    if R.ndim != 3 or R.shape[1:] != N.shape or len(R) < 2:
        raise ValueError(
            f"The 'replicates' parameter must have shape (B, {N.shape[0]}, {N.shape[1]}) with "
            f"B >= 2; got {R.shape}."
        )
    return R


def wilson_z(x: NDArray[np.float64], n: NDArray[np.float64],
              p: NDArray[np.float64]) -> NDArray[np.float64]:
    """Signed Wilson score statistic (x - n p) / sqrt(n p (1 - p)) of replicate counts x of n at
    the proportion p (NaN where n = 0; +-inf where p is 0 or 1 and x differs from n p)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        d = x - n * p
        z = d / np.sqrt(n * p * (1.0 - p))
    z = np.where(d == 0, 0.0, z)
    return np.where(n > 0, z, np.nan)


class Margins:
    """Row and column totals of every replicate, computed once; :meth:`at` gives the counts of
    some cells with their totals, B x len(idx) each, in float64 (only those cells copied)."""

    def __init__(self, R: NDArray[Any]) -> None:
        self.R = R
        self.rows = R.sum(axis=2, dtype=np.float64)
        self.cols = R.sum(axis=1, dtype=np.float64)
        self.n = self.rows.sum(axis=1)[:, None]

    def at(self, idx: NDArray[np.int64]) -> tuple[NDArray[np.float64], ...]:
        gi, ki = np.unravel_index(idx, self.R.shape[1:])
        x = self.R[:, gi, ki].astype(np.float64)
        return x, self.rows[:, gi], self.cols[:, ki], self.n + 0.0 * x
