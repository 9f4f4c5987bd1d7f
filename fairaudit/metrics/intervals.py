"""Confidence intervals for the min-of-ratios counting metrics (balance, the CCE family, ...).

Why not the bootstrap: these metrics are a minimum over many cells of ratios of counts. The
plug-in estimate of a minimum of noisy ratios is biased downwards (a small cell that happens to
draw a few people short drags the minimum), and a resampling method reproduces that bias a
second time around the already-biased estimate; a replicate that loses every member of a small
group in some cluster even scores an artefactual 0. The percentile bootstrap covered 80 % of the
time in a 1 %-group simulation, its bias-corrected version 88 % (issue 11).

The method here (``score-intersection``) has two ingredients, both with published references:

1. **A score interval per cell.** Every component of these metrics is a monotone function of
   one binomial proportion (Wilson 1927) or of the ratio of two independent binomial
   proportions (Koopman 1984, the score interval for a risk ratio), conditional on the margins
   the metric divides by. Score intervals are exact in their use of small counts (no normal
   approximation of the count itself), contain the estimate, and never collapse to 0 for a
   cell observed with at least one person.

2. **Intersection bounds** (Chernozhukov, Lee & Rosen 2013, *Econometrica* 81(2)): for
   θ = min_j θ_j, the lower end ``L = min_j l_j`` with one-sided pointwise bounds l_j at α/2
   covers, because θ = θ_j* for the (unknown) minimising cell j* and P(l_j* ≤ θ_j*) ≥ 1 − α/2.
   The upper end must hold for every cell that could be the minimum at once: ``U = min_j u_j``
   with u_j at the Bonferroni level α/(2J), J = the number of cells whose lower bound is below
   the most conservative upper bound (the estimated contact set). At such levels the plain
   score bound of a count of a few people is far too narrow (its count is skewed), so these
   bounds take the Cornish-Fisher skewness correction (:func:`fairaudit.metrics.score.skew_z`).

So ``L ≤ estimate ≤ U`` always, and the coverage is at least the stated level up to the
accuracy of the per-cell score intervals (measured by simulation: ``docs/metrics.md``). With
several cells near the minimum, the Bonferroni upper end is conservative.

**Calibrated** (``score-max-bootstrap``, the default of the host; ``balance``,
``fairness_cce``, ``balance_prime``, given bootstrap replicates of the table): the lower end is
the conservative one; the upper end is the test inversion of "every cell is at least θ0" with
the critical value of each tested θ0 from the replicates measured against θ0 itself (moment
selection at the tested value, Andrews & Soares 2010: a cell observed at or below θ0 may be at
θ0 exactly, a cell above it keeps its observed distance; the bootstrap of the maximum
standardised deviation, Cherian & Candès 2024, *JMLR* 25), never beyond the conservative upper
end. The interval carries the plug-in corrected for its bootstrap median bias
(:class:`~fairaudit.metrics.calibrate.BiasCorrected`). :mod:`fairaudit.metrics.calibrate`;
coverage by regime and on real tables in ``docs/metrics.md``.

**Sparse tables**: a cell expecting fewer than ``SPARSE_EXPECTED`` people under independence
gets the metric's largest value as its upper bound under both methods (its replicates cannot
show its spread, its score bound at Bonferroni levels is far too narrow); the other cells still
bound the minimum from above.

All functions take one table ``N`` (groups x clusters, every row and column with a positive
sum) and return an :class:`Interval`. The distances' intervals (Ed, Wd) are in
:mod:`fairaudit.metrics.distance_intervals`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fairaudit.metrics.calibrate import (  # _Calibration, SPARSE_EXPECTED: noisy_intervals's
    SPARSE_EXPECTED,
    BiasCorrected,
    Margins,
    _Bounds,
    _calibrated_ends,
    _Calibration,
    _value_calibrated_ends,
    checked_replicates,
    wilson_z,
)
from fairaudit.metrics.score import _koopman_stat, ratio_score_interval, wilson_interval

__all__ = [
    "CALIBRATED_METHOD",
    "CI_METHODS",
    "METHOD",
    "Interval",
    "balance_interval",
    "balance_mean_interval",
    "balance_prime_interval",
    "cce_interval",
    "fairness_cce_interval",
    "fce_fair_interval",
    "ratio_score_interval",
    "wilson_interval",
]

METHOD = "score-intersection"
"""Name of this interval method in the audit JSON (``detail.interval.method``)."""
CALIBRATED_METHOD = "score-max-bootstrap"
"""Name of the calibrated method (one bootstrap critical value for both ends) in the JSON."""
CI_METHODS = ("calibrated", "conservative")
"""The user's names of the two methods (``--ci-method``): calibrated -> ``score-max-bootstrap``
where a metric has it, conservative -> ``score-intersection``."""



@dataclass(frozen=True)
class Interval:
    """A confidence interval for one metric of one table.

    ``lower_cell`` / ``upper_cell`` are (group index, cluster index) of the cell whose bound
    sets the interval's end (``None`` where no single cell does).
    """

    lower: float
    upper: float
    level: float
    method: str = METHOD
    lower_cell: tuple[int, int] | None = None
    upper_cell: tuple[int, int] | None = None
    contact_cells: int = 1
    """Cells that could set the minimum (the Bonferroni divisor of the upper end)."""
    bias_corrected: BiasCorrected | None = None
    """The minimum corrected for its bias and the cells behind it (calibrated method
    only; :func:`fairaudit.metrics.calibrate.value_upper`)."""


# -------------------------------------------------------------------------------- combining
def _table(N: ArrayLike) -> NDArray[np.float64]:
    T = np.asarray(N, dtype=np.float64)
    if T.ndim != 2 or T.size == 0:
        raise ValueError(f"The 'N' parameter must be a 2-D table; got shape {T.shape}.")
    if not np.all(np.isfinite(T)) or np.any(T < 0) or np.any(T != np.round(T)):
        raise ValueError("The 'N' parameter must hold non-negative integer counts.")
    if np.any(T.sum(axis=1) <= 0) or np.any(T.sum(axis=0) <= 0):
        raise ValueError("The 'N' parameter must have a positive sum in every row and column.")
    return T


def _alpha(level: float) -> float:
    if isinstance(level, bool) or not (0.0 < float(level) < 1.0):
        raise ValueError(f"The 'level' parameter must be in (0, 1); got {level!r}.")
    return (1.0 - float(level)) / 2.0


def _min_of(bounds: _Bounds, estimate: NDArray[np.float64], level: float,
            cells: NDArray[np.int64] | None = None,
            calibration: _Calibration | None = None,
            sparse: tuple[NDArray[np.float64], float] | None = None,
            plain: _Bounds | None = None) -> Interval:
    """Intersection bounds for min_j theta_j from per-component bounds ``bounds(alpha, side)``.

    Lower end: min_j of the pointwise lower bounds at one-sided level alpha = (1 - level) / 2
    (the ``plain`` bounds). Upper end: min_j of the upper bounds at alpha / J, J = the
    components whose lower bound lies below the Bonferroni upper bound over all components (the
    estimated contact set), from ``bounds`` (skewness-corrected for the exact tables: at these
    levels a plain score bound of a small count is far too narrow; docs/metrics.md).

    With a ``calibration`` (bootstrap replicates), the upper end takes every cell's score bound
    at a bootstrap critical value instead (``score-max-bootstrap``; module docstring), from the
    ``plain`` bounds (the test inversion of the statistics the bootstrap calibrates; default
    ``bounds``). With ``calibration.per_value`` the calibrated interval lies inside the
    conservative one (its upper end capped there, its lower end the same).

    ``sparse`` = (expected count per cell, the metric's largest value): a cell that expects
    fewer than ``SPARSE_EXPECTED`` people gets that largest value as its upper bound under
    either method; the other cells still bound the minimum from above (module docstring).
    """
    a = _alpha(level)
    est = np.asarray(estimate, dtype=np.float64).ravel()
    lo = np.minimum((bounds if plain is None else plain)(a, "lower").ravel(), est)
    hi_all = np.maximum(bounds(a / est.size, "upper").ravel(), est)
    contact = lo <= float(np.min(hi_all))
    J = max(1, int(contact.sum()))
    method = METHOD
    hi = hi_all if J == est.size else np.maximum(bounds(a / J, "upper").ravel(), est)
    dense = None if sparse is None else sparse[0] >= SPARSE_EXPECTED
    corrected = None
    if calibration is not None and calibration.per_value:
        lo, hi, J, corrected = _value_calibrated_ends(bounds if plain is None else plain, est,
                                                     lo, hi, a, calibration, dense)
        method = CALIBRATED_METHOD
    elif calibration is not None:
        lo, hi, J = _calibrated_ends(bounds, est, lo, hi, a, calibration)
        method = CALIBRATED_METHOD
    if sparse is not None:  # a sparse cell's upper bound says nothing: the largest value
        hi = np.where(sparse[0] < SPARSE_EXPECTED, np.maximum(hi, sparse[1]), hi)
    i_lo = int(np.argmin(lo))
    i_hi = int(np.argmin(hi))

    def where(i: int) -> tuple[int, int] | None:
        return None if cells is None else (int(cells[i, 0]), int(cells[i, 1]))

    return Interval(
        lower=float(lo[i_lo]), upper=float(hi[i_hi]), level=float(level), method=method,
        lower_cell=where(i_lo), upper_cell=where(i_hi), contact_cells=J,
        bias_corrected=corrected,
    )


def _bounds_of(both: Callable[[float, bool, NDArray[np.int64] | None],
                               tuple[NDArray[np.float64], NDArray[np.float64]]]) -> _Bounds:
    """``bounds(alpha, side, skew=True, where=None)`` from ``both(alpha, skew, where)`` (the
    lower and upper bounds of every cell, or of the flat cells ``where``), each level of the
    whole table computed once (the calibrated method asks for the same levels again)."""
    cache: dict[tuple[float, bool], tuple[NDArray[np.float64], NDArray[np.float64]]] = {}

    def bounds(alpha: float, side: str, skew: bool = True,
               where: NDArray[np.int64] | None = None) -> NDArray[np.float64]:
        if where is not None:
            pair = both(alpha, skew, where)
        else:
            key = (float(alpha), bool(skew))
            if key not in cache:
                cache[key] = both(alpha, skew, None)
            pair = cache[key]
        return pair[0] if side == "lower" else pair[1]

    return bounds


def _expected(T: NDArray[np.float64]) -> NDArray[np.float64]:
    """|g| |k| / n of every cell, flattened as the cells are."""
    return (np.outer(T.sum(axis=1), T.sum(axis=0)) / T.sum()).ravel()


def _cells(g: int, k: int) -> NDArray[np.int64]:
    gi, ki = np.meshgrid(np.arange(g), np.arange(k), indexing="ij")
    return np.column_stack([gi.ravel(), ki.ravel()])


def _inv(x: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(divide="ignore"):
        return np.where(x > 0, 1.0 / np.where(x > 0, x, 1.0), np.inf)


def _fold(lo_x, hi_x, side: str):
    """A bound of min(x, 1/x) from the bounds [lo_x, hi_x] of x (1/0 = inf): the lower bound
    is min(lo_x, 1/hi_x), the upper bound min(hi_x, 1/lo_x)."""
    if side == "lower":
        return np.minimum(lo_x, _inv(hi_x))
    return np.minimum(hi_x, _inv(lo_x))


# -------------------------------------------------------------------------------- balance
def _balance_cells(T: NDArray[np.float64]) -> tuple[_Bounds, NDArray[np.float64]]:
    rows = T.sum(axis=1)[:, None]
    cols = T.sum(axis=0)[None, :]
    n = T.sum()
    x1 = T  # members of g in k, of n1 = |g|
    n1 = np.broadcast_to(rows, T.shape)
    x2 = cols - T  # others in k, of n2 = n - |g|
    n2 = np.broadcast_to(n - rows, T.shape)
    share = n1 / n
    q = T * n / (cols * rows)
    est = np.where(q > 0, np.minimum(q, 1.0 / np.where(q > 0, q, 1.0)), 0.0)
    single = n2 <= 0  # only one group: q = 1 exactly

    # q = pi1 / P(k) = r / (share * r + 1 - share), increasing in r (r = inf -> 1 / share)
    def both(alpha: float, skew: bool, where: NDArray[np.int64] | None):
        a1, b1, a2, b2, one, s = (v if where is None else v.ravel()[where]
                                  for v in (x1, n1, x2, n2, single, share))
        with np.errstate(divide="ignore", invalid="ignore"):
            # a subset (the calibrated method's search for its upper end): 24 bisection
            # steps, a relative error of 5e-6 (its final bounds take the whole table's 48)
            lo_r, hi_r = ratio_score_interval(a1, b1, a2, np.where(one, 1.0, b2), alpha,
                                              skew=skew, steps=48 if where is None else 24)
            lo_q = np.where(one, 1.0, np.where(np.isinf(lo_r), 1.0 / s, lo_r / (s * lo_r + 1 - s)))
            hi_q = np.where(one, 1.0, np.where(np.isinf(hi_r), 1.0 / s, hi_r / (s * hi_r + 1 - s)))
        return _fold(lo_q, hi_q, "lower"), _fold(lo_q, hi_q, "upper")

    return _bounds_of(both), est


def _balance_calibration(T: NDArray[np.float64], replicates: ArrayLike) -> _Calibration:
    """Koopman score statistics of the replicates' cells at given q: the risk ratio
    r = q (1 - s) / (1 - q s) at the replicate's group share s, as its bounds are computed;
    q s >= 1 lies beyond any table (-inf)."""

    def koopman(M: Margins):
        def scores(idx: NDArray[np.int64], q: NDArray[np.float64]) -> NDArray[np.float64]:
            x1, n1, cr, nr = M.at(idx)
            x2, n2 = cr - x1, nr - n1
            ok = (n1 > 0) & (n2 > 0)
            s = n1 / nr
            with np.errstate(divide="ignore", invalid="ignore"):
                qs = q[None] * s  # inf x 0 (1 / a value of 0, a group absent): NaN, no test
                r = q[None] * (1.0 - s) / (1.0 - qs)
                possible = (qs < 1.0) & (r > 0)
                stat = _koopman_stat(np.where(possible, r, 1.0), x1, np.where(n1 > 0, n1, 1.0),
                                     x2, np.where(n2 > 0, n2, 1.0))
                q_rep = x1 * nr / (cr * n1)
            z = np.sign(np.nan_to_num(q_rep - q[None])) * np.sqrt(stat)
            # q s >= 1: only a cluster of this group alone reaches it. A replicate cell with
            # nobody else in its cluster (x2 = 0) is at that boundary itself (r = inf), not
            # beyond it: no deviation (it was -inf, and one such cell set the critical value
            # to the clip, 1e6: issue 35 item 7).
            z = np.where(possible, z, np.where(qs >= 1.0, np.where(x2 <= 0, 0.0, -np.inf),
                                               np.inf))
            return np.where(ok, z, np.nan)

        return scores

    return _Calibration(koopman(Margins(checked_replicates(T, replicates))), True,
                        koopman(Margins(np.stack([T, T]))), float(T.sum()), _expected(T),
                        (T * T.sum() / np.outer(T.sum(axis=1), T.sum(axis=0))).ravel(),
                        counts=T, per_value=True)


def _wilson_calibration(T: NDArray[np.float64], replicates: ArrayLike | None, total: str,
                        scale: float = 1.0, folded: bool = False) -> _Calibration | None:
    """The calibration of cells that are ``scale`` times binomial shares of their ``total``
    ("row" or "column"): signed Wilson statistics of the replicates' shares. None without
    replicates."""
    if replicates is None:
        return None

    def wilson(M: Margins):
        def scores(idx: NDArray[np.int64], theta: NDArray[np.float64]) -> NDArray[np.float64]:
            x, rows, cols, _ = M.at(idx)
            p = theta / scale
            z = wilson_z(x, rows if total == "row" else cols, np.clip(p, 0.0, 1.0)[None])
            return np.where((p > 1.0)[None] & (x == x), -np.inf, z)

        return scores

    return _Calibration(wilson(Margins(checked_replicates(T, replicates))), folded,
                        wilson(Margins(np.stack([T, T]))), float(T.sum()), _expected(T),
                        (scale * T / T.sum(axis=1, keepdims=True)).ravel() if folded else None,
                        counts=T, per_value=True)


def balance_interval(N: ArrayLike, level: float = 0.95,
                     replicates: ArrayLike | None = None) -> Interval:
    """Interval for ``balance_min``: min over cells of min(q, 1/q), q = N[g,k] n / (|k| |g|).

    Per cell, conditional on the group sizes (the rows are independent binomial strata), q is
    an increasing function of the ratio of two binomial proportions — the share of the group's
    members in cluster k against the share of everyone else in k — whose Koopman score interval
    gives the cell's bounds.

    Without ``replicates``: the conservative ``score-intersection`` interval. With bootstrap
    ``replicates`` of the table (B x groups x clusters): the calibrated
    ``score-max-bootstrap`` interval (every cell's score bounds at the bootstrap critical value
    of the miss statistic; module docstring).
    """
    T = _table(N)
    bounds, est = _balance_cells(T)
    cal = None if replicates is None else _balance_calibration(T, replicates)
    return _min_of(bounds, est, level, _cells(*T.shape), cal, (_expected(T), 1.0),
                   plain=functools.partial(bounds, skew=False))


def balance_mean_interval(N: ArrayLike, level: float = 0.95) -> Interval:
    """Interval for ``balance_mean``, the unweighted mean over clusters of per-cluster balance.

    Bonferroni over the c clusters (so that all clusters' bounds hold at once): each cluster's
    lower bound is the min over its cells of the lower bounds at one-sided (1 - level) / (2 c),
    its upper bound the min of the upper bounds at (1 - level) / (2 c g); the bounds of the mean
    are the means of the per-cluster bounds. Conservative by construction.
    """
    T = _table(N)
    bounds, est = _balance_cells(T)
    g, c = T.shape
    a = _alpha(level)
    lo = np.minimum(bounds(a / c, "lower"), est).min(axis=0)
    hi = np.maximum(bounds(a / (c * g), "upper"), est).min(axis=0)
    return Interval(lower=float(lo.mean()), upper=float(hi.mean()), level=float(level),
                    contact_cells=g * c)


# -------------------------------------------------------------------------------- CCE family
def fairness_cce_interval(N: ArrayLike, level: float = 0.95,
                          replicates: ArrayLike | None = None) -> Interval:
    """Interval for ``fairness_cce``: min over cells of min(c γ, 1/(c γ)), γ = N[g,k] / |g|.

    Conditional on the group sizes, N[g,k] is binomial with |g| trials: Wilson bounds for γ.
    With ``replicates``, calibrated as :func:`balance_interval` (Wilson score statistics).
    """
    T = _table(N)
    rows = np.broadcast_to(T.sum(axis=1)[:, None], T.shape)
    c = T.shape[1]
    x = c * T / rows
    est = np.where(x > 0, np.minimum(x, 1.0 / np.where(x > 0, x, 1.0)), 0.0)

    def both(alpha: float, skew: bool, where: NDArray[np.int64] | None):
        x, n = (T, rows) if where is None else (T.ravel()[where], rows.ravel()[where])
        lo, hi = wilson_interval(x, n, alpha, skew=skew)
        return _fold(c * lo, c * hi, "lower"), _fold(c * lo, c * hi, "upper")

    bounds = _bounds_of(both)

    cal = _wilson_calibration(T, replicates, "row", scale=float(c), folded=True)
    return _min_of(bounds, est, level, _cells(*T.shape), cal, (_expected(T), 1.0),
                   plain=functools.partial(bounds, skew=False))


def balance_prime_interval(N: ArrayLike, level: float = 0.95,
                           replicates: ArrayLike | None = None) -> Interval:
    """Interval for FUFS's Balance′ = min_k min_g N[g,k] / |k| (Wilson bounds per cell,
    conditional on the cluster sizes; with ``replicates``, calibrated as
    :func:`balance_interval`)."""
    T = _table(N)
    cols = np.broadcast_to(T.sum(axis=0)[None, :], T.shape)

    def both(alpha: float, skew: bool, where: NDArray[np.int64] | None):
        x, n = (T, cols) if where is None else (T.ravel()[where], cols.ravel()[where])
        return wilson_interval(x, n, alpha, skew=skew)

    bounds = _bounds_of(both)

    cal = _wilson_calibration(T, replicates, "column")
    return _min_of(bounds, T / cols, level, _cells(*T.shape), cal,
                   plain=functools.partial(bounds, skew=False))


def _ratio_of_extremes(x: NDArray[np.float64], n: NDArray[np.float64], a: float,
                       axis: int, interval: Callable[..., tuple[NDArray[np.float64],
                                                                NDArray[np.float64]]] | None = None
                       ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Bounds of min_i p_i / max_i p_i along ``axis`` for binomial shares p = x / n (n is the
    same along ``axis``), each end missing with probability at most ``a``, in O(size) (no
    pairs).

    Lower: min_i lo_i / max_i hi_i with pointwise Wilson bounds at a / 2 each — valid because
    min_i lo_i <= min_i p_i holds when the argmin's bound does, and max_i hi_i >= max_i p_i when
    the argmax's does. Upper: min_i hi_i / max_i lo_i with all m bounds simultaneous
    (Bonferroni a / (2 m)). ``interval(x, n, alpha)`` gives the shares' bounds (default
    Wilson's, skewness-corrected; a release's noisy counts:
    :mod:`fairaudit.metrics.noisy_intervals`)."""
    interval = functools.partial(wilson_interval, skew=True) if interval is None else interval
    m = x.shape[axis]
    lo, hi = interval(x, n, a / 2.0)
    lo_s, hi_s = interval(x, n, a / (2.0 * m))
    with np.errstate(divide="ignore", invalid="ignore"):
        lower = lo.min(axis=axis) / hi.max(axis=axis)
        upper = np.minimum(hi_s.min(axis=axis) / lo_s.max(axis=axis), 1.0)
    return np.nan_to_num(lower, nan=0.0), np.where(np.isnan(upper), 1.0, upper)


def fce_fair_interval(N: ArrayLike, level: float = 0.95) -> Interval:
    """Interval for the FCE code's ``fair`` = min_k min_g N[g,k] / max_g N[g,k]: per cluster,
    the ratio of the smallest to the largest group share (Wilson bounds conditional on the
    cluster size, :func:`_ratio_of_extremes`), then intersection bounds over clusters: the lower
    end is the min of the clusters' lower bounds, the upper end the min of their upper bounds
    with every cluster simultaneous (Bonferroni over the c clusters)."""
    T = _table(N)
    g, c = T.shape
    if g < 2:
        return Interval(lower=1.0, upper=1.0, level=float(level), contact_cells=0)
    a = _alpha(level)
    cols = np.broadcast_to(T.sum(axis=0)[None, :], T.shape)
    est = T.min(axis=0) / T.max(axis=0)
    lower, _ = _ratio_of_extremes(T, cols, a, axis=0)
    _, upper = _ratio_of_extremes(T, cols, a / c, axis=0)
    lo = float(min(lower.min(), est.min()))
    hi = float(max(upper.min(), est.min()))
    return Interval(lower=lo, upper=hi, level=float(level), contact_cells=c)


def cce_interval(N: ArrayLike, level: float = 0.95) -> Interval:
    """Interval for CCE = min_k |k| / max_k |k|, the ratio of the smallest to the largest
    cluster share (Wilson bounds on the shares |k| / n, :func:`_ratio_of_extremes`)."""
    T = _table(N)
    sizes = T.sum(axis=0)
    if sizes.size < 2:
        return Interval(lower=1.0, upper=1.0, level=float(level), contact_cells=0)
    a = _alpha(level)
    n = np.full_like(sizes, sizes.sum())
    lower, upper = _ratio_of_extremes(sizes, n, a, axis=0)
    est = float(sizes.min() / sizes.max())
    return Interval(lower=float(min(lower, est)), upper=float(max(upper, est)),
                    level=float(level), contact_cells=int(sizes.size))
