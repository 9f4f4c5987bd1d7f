"""The calibrated upper end of a minimum over cells (``score-max-bootstrap``): the critical
value is the bootstrap quantile of the maximum standardised deviation of the contact cells
below their estimates (Cherian & Candès, "Statistical inference for fairness auditing", JMLR 25,
2024), in place of Bonferroni's worst case. Used by :mod:`fairaudit.metrics.intervals`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["Margins", "max_below", "max_deviation_critical_value", "one_sided",
           "checked_replicates", "signed_fold", "wilson_z"]

_BLOCK_ELEMENTS = 1 << 18  # float64 elements per block of deviations (2 MB)


def max_below(deviations: Callable[[NDArray[np.int64]], NDArray[np.float64]],
               idx: NDArray[np.int64]) -> tuple[NDArray[np.float64], bool]:
    """Per replicate, max over the cells ``idx`` of the deviation below the estimate, in blocks
    of cells (B x block stays a few MB however large the contact set); and whether some cell is
    undefined in every replicate (the bootstrap cannot move it)."""
    worst: NDArray[np.float64] | None = None
    stuck = False
    step = max(1, _BLOCK_ELEMENTS // 256)
    for i in range(0, idx.size, step):
        z = deviations(idx[i:i + step])
        stuck = stuck or bool(np.isnan(z).all(axis=0).any())
        below = np.maximum(-np.nan_to_num(z, nan=0.0), 0.0).max(axis=1)
        worst = below if worst is None else np.maximum(worst, below)
    return (np.zeros(0) if worst is None else worst), stuck


def max_deviation_critical_value(z: ArrayLike, contact: ArrayLike, alpha: float) -> float:
    """The critical value of the calibrated upper end: the (1 - ``alpha``) quantile over the
    bootstrap replicates (rows of ``z``) of max_{j in contact} max(0, -z_j), the largest
    standardised deviation of a contact cell below its estimate (Cherian & Candes 2024).
    NaN deviations (a cell undefined in a replicate) count as 0."""
    z = np.asarray(z, dtype=np.float64)
    keep = np.asarray(contact, dtype=bool).ravel()
    below = np.maximum(-np.nan_to_num(z.reshape(len(z), -1)[:, keep], nan=0.0), 0.0)
    if below.size == 0:
        return 0.0
    return float(np.quantile(below.max(axis=1), 1.0 - alpha))


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


def signed_fold(z: NDArray[np.float64], q_hat: NDArray[np.float64]) -> NDArray[np.float64]:
    """Deviations of q turned into deviations of min(q, 1/q): the sign flips where q̂ > 1."""
    return np.where(q_hat[None] > 1.0, -z, z)


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
