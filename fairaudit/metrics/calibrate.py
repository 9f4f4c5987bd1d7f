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
quantile of S* over the bootstrap replicates — the bootstrap calibration of a test inversion,
as the bootstrap-t calibrates a studentised statistic.

Exact tables (:func:`_value_calibrated_ends`): the replicates of the test of θ0 are measured
against θ0 itself (a cell observed at or below θ0 from its own estimate: it may lie at θ0
exactly; the others from θ0), so c grows with θ0 and the upper end is the fixed point
U = U(c(U)) (:func:`value_upper`); the lower end and the cap are the conservative method's.
Released tables (``--publish``, :mod:`fairaudit.metrics.noisy_intervals`) keep the earlier
construction (:func:`_calibrated_ends`: c at θ̂, ties by a threshold).

This module also holds the calibration's per-cell machinery (:class:`_Calibration`) and the
plug-in's bias correction (:func:`_bias_corrected`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fairaudit.metrics.score import _z

__all__ = ["SPARSE_EXPECTED", "BiasCorrected", "Margins", "checked_replicates", "critical_value",
           "miss_statistic", "normal_cdf", "one_sided", "value_upper", "wilson_z"]

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


_FIXED_POINT_STEPS = 50
FIXED_POINT_TOLERANCE = 1e-4
"""The upper end's search stops when a step raises it by less than this share of its value."""


def value_upper(crit: Callable[[float], float], upper: Callable[[float], float], start: float,
                top: float | None = None) -> tuple[float, float]:
    """The upper end of a test inversion whose critical value depends on the tested value:
    ``crit(v)`` the critical value of the test of v (nondecreasing in v), ``upper(c)`` the
    largest value a fixed critical value c accepts (nondecreasing in c). Returns (c, U) with U
    the smallest fixed point U = upper(crit(U)) at or above ``upper(crit(start))``, reached by
    iteration (each step can only raise U; it stops when a step raises U by less than
    ``FIXED_POINT_TOLERANCE`` of it, or after ``_FIXED_POINT_STEPS``), or ``top`` (with its
    critical value) when the test of ``top`` accepts it, i.e. ``upper(crit(top)) >= top``."""
    c = crit(start)
    u = upper(c)
    for _ in range(_FIXED_POINT_STEPS):
        c_next = crit(u)
        if c_next <= c:
            break
        u_next = upper(c_next)
        c, step, u = c_next, u_next - u, max(u, u_next)
        if step <= FIXED_POINT_TOLERANCE * max(abs(u), 1e-12):
            break
    if top is not None and u < top:
        c_top = crit(top)
        u_top = upper(c_top)
        if u_top >= top:
            return c_top, u_top
    return c, u


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


SPARSE_EXPECTED = 5.0
"""A cell expecting fewer people than this under independence is sparse: the calibrated upper
end holds every sparse contact cell at once (Bonferroni over them), not only as the bootstrap
says (docs/metrics.md, "Sparse tables")."""

_Bounds = Callable[[float, str], NDArray[np.float64]]
"""bounds(alpha, side) -> per-component lower (side="lower") or upper bounds at one-sided alpha."""



@dataclass(frozen=True)
class BiasCorrected:
    """A minimum over cells corrected for its downward bias (:func:`_bias_corrected`), and
    the ratios behind it."""

    value: float
    """The plug-in less its bootstrap median bias (never below the plug-in)."""
    cells: int
    """Dense cells whose pointwise bounds overlap the smallest upper bound: the ratios that could
    set the minimum, of which the plug-in is the smallest."""
    people: float
    """The median count of those of them in the smallest cell's group."""


@dataclass(frozen=True)
class _Calibration:
    """What the calibrated method needs of a metric's cells, from the bootstrap replicates.

    ``scores(idx, theta)``: B x len(idx) signed score statistics of the replicates' cells
    ``idx`` at the cell parameters ``theta`` (len(idx); the unfolded value: q for balance, c·γ
    for fairness_CCE, the share for Balance′), positive where the replicate lies above theta,
    -inf where theta lies beyond any table; NaN where a cell is absent from a replicate.
    ``folded``: the metric takes min(x, 1/x) of the cell value x."""

    scores: Callable[[NDArray[np.int64], NDArray[np.float64]], NDArray[np.float64]]
    folded: bool
    observed: Callable[[NDArray[np.int64], NDArray[np.float64]], NDArray[np.float64]]
    """``scores`` of the observed table (1 x len(idx))."""
    n: float
    """The table's total."""
    expected: NDArray[np.float64]
    """Per cell (flat index), the count expected under independence, |g| |k| / n."""
    unfolded: NDArray[np.float64] | None = None
    """Per cell (flat index) of a folded metric, the estimate before folding (q̂, c·γ̂)."""
    counts: NDArray[np.float64] | None = None
    """The observed table (groups x clusters; flat index as the cells): the people behind each
    ratio."""
    per_value: bool = False
    """Moment selection at each tested value (the exact tables' calibrated method,
    :func:`_value_calibrated_ends`); False: the selection at the estimate and the tie
    threshold (:func:`_calibrated_ends`, the released tables' method)."""

    def miss(self, idx: NDArray[np.int64], value: float, at: NDArray[np.float64],
             fold: NDArray[np.float64] | None = None
             ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The replicates' statistics (below, above) of the cells ``idx``: a cell's score upper
        bound at critical value c lies below the (folded) value ``at`` (one per cell) exactly
        when `below` exceeds c, its lower bound above ``value`` exactly when `above` does.
        Unfolded: (-z(at), z(value)); folded, where both q = v and q = 1/v count:
        (max(-z(at), z(1/at)), min(z(value), -z(1/value)))."""
        below, above = self._pair(self.scores, idx, np.full(idx.size, value))
        other = at != value
        if other.any():  # only those cells are evaluated again
            below[:, other] = self._pair(self.scores, idx[other], at[other])[0]
        if fold is not None:  # cells that may sit at the fold: both of their tails count
            f = ~np.isnan(fold)
            if f.any():
                below[:, f] = np.fmax(below[:, f], np.abs(self.scores(idx[f], fold[f])))
        return below, above

    def slack(self, idx: NDArray[np.int64], value: float) -> NDArray[np.float64]:
        """The observed cells' `above` statistic at ``value``: how many standard errors each
        cell lies above it (NaN for a cell the statistic cannot judge)."""
        return self._pair(self.observed, idx, np.full(idx.size, value))[1][0]

    def _pair(self, scores: Callable[[NDArray[np.int64], NDArray[np.float64]],
                                     NDArray[np.float64]],
              idx: NDArray[np.int64], v: NDArray[np.float64]
              ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        z = scores(idx, v)
        if not self.folded:
            return -z, z
        with np.errstate(divide="ignore"):
            z_inv = scores(idx, 1.0 / v)
        return np.maximum(-z, z_inv), np.minimum(z, -z_inv)


def _value_calibrated_ends(plain: _Bounds, est: NDArray[np.float64],
                           lo_pw: NDArray[np.float64], hi_cons: NDArray[np.float64], a: float,
                           cal: _Calibration, dense: NDArray[np.bool_] | None
                           ) -> tuple[NDArray[np.float64], NDArray[np.float64], int,
                                      BiasCorrected | None]:
    """Per-cell bounds of the calibrated method of an exact table: the conservative lower
    bounds, upper bounds at the critical value of the test of the upper end's value, and the
    plug-in corrected for its bias (module docstring; docs/metrics.md, "score-max-bootstrap").

    The test of θ0 (is every cell at least θ0?) takes its critical value from the replicates
    measured against θ0 itself (Andrews & Soares 2010's moment selection at the tested value,
    with the null-restricted estimate max(θ̂_j, θ0) of each cell): a cell observed at or below
    θ0 may be exactly at θ0 (its replicates from its own estimate; both tails where its value
    may be 1), a cell observed above θ0 counts with its observed distance. The upper end U is
    the smallest value whose test's critical value reproduces it, U = U(c(U)), reached from
    U(c(θ̂)) (c grows with θ0); a folded metric's largest value 1 when its own test accepts it
    (labels drawn at random: every cell at 1). The critical value is the (1 - 2a) quantile of
    max(upper part, lower part) (the lower part at θ̂, as before), at least z at one-sided 2a;
    the bias-corrected value :func:`_bias_corrected`. The upper
    end never passes the conservative one (issue 35 item 7); an estimate of 0 gives the
    conservative ends.
    """
    hi_pw = np.maximum(plain(a, "upper").ravel(), est)
    J = max(1, int(np.count_nonzero(lo_pw <= float(np.min(hi_pw)))))
    theta = float(est.min())
    mask = np.ones(est.size, dtype=bool) if dense is None else dense
    if theta <= 0 or not mask.any():  # nothing to calibrate (every cell sparse: the top)
        return lo_pw, hi_cons, J, None
    g = _selection_level(cal.n, est.size)
    idx = np.flatnonzero(np.minimum(plain(g, "lower").ravel(), est)
                         <= float(np.min(np.maximum(plain(g, "upper").ravel(), est))))
    e = est[idx]
    near_one = None
    if cal.unfolded is not None:
        kappa = float(np.sqrt(2.0 * np.log(max(np.log(cal.n), 1.0))))
        near_one = -np.nan_to_num(cal.slack(idx, 1.0), nan=np.inf) <= kappa
    _, above = cal.miss(idx, theta, np.full(idx.size, theta))
    lower_part = np.nan_to_num(above, nan=np.inf).min(axis=1)
    own: dict[str, NDArray[np.float64]] = {}

    # Balance′ (unfolded): a cell that may tie the minimum binds at every tested value (the
    # tie rule of the release path). Its truth under random labels is the smallest group's
    # share, shared by all of that group's cells, and without the rule the upper end covered
    # 90.5-92 % there (docs/metrics.md, "Random labels"); balance and fairness_CCE have the
    # fold's top (1) for that case instead, and keep the narrower selection.
    tied = (_ties(cal, idx, est, lo_pw, hi_pw, a, J, g) if cal.unfolded is None
            else np.zeros(idx.size, dtype=bool))

    def upper_part(v: float) -> NDArray[np.float64]:
        bind = (e <= v) | tied
        if "own" not in own:  # every cell from its own estimate, computed once
            f = None if near_one is None else np.where(near_one, cal.unfolded[idx], np.nan)
            own["own"] = np.nan_to_num(cal.miss(idx, theta, e.copy(), f)[0], nan=-np.inf)
        worst = own["own"][:, bind].max(axis=1) if bind.any() else None
        if not bind.all():
            rest = idx[~bind]
            below = cal.miss(rest, v, np.full(rest.size, v))[0]
            far = np.nan_to_num(below, nan=-np.inf).max(axis=1)
            worst = far if worst is None else np.maximum(worst, far)
        return worst

    def crit(v: float) -> float:
        s = np.clip(np.maximum(upper_part(v), lower_part), -1e6, 1e6)
        return critical_value(s, 1.0 - 2.0 * a)

    # only a dense cell observed below the conservative upper end can set the upper end
    # (which never passes it)
    cand = np.flatnonzero(mask & (est <= float(np.min(np.maximum(hi_cons, est)[mask]))))

    def upper(c: float) -> float:
        return float(np.maximum(plain(one_sided(c), "upper", where=cand), est[cand]).min())

    top = 1.0 if cal.unfolded is not None else None
    c, _ = value_upper(crit, upper, theta, top)
    hi = np.minimum(np.maximum(plain(one_sided(c), "upper").ravel(), est),
                    np.maximum(hi_cons, est))
    upper_end = float(hi[mask].min())
    # the replicates' deviations from each cell's own estimate, one way or the other only as
    # the cell's fold says (its value falls on both sides of 1 only when it is at 1)
    dev = np.nan_to_num(cal.miss(idx, theta, e.copy())[0], nan=-np.inf)
    se = ((hi_pw - lo_pw) / (2.0 * _z(a)))[idx]
    m = _bias_corrected(dev, e, se, theta, upper_end)
    # the cells that could set the minimum: dense, their pointwise bounds overlapping; the
    # people behind those of the group of the smallest
    near = mask & (lo_pw <= float(np.min(hi_pw[mask])))
    people = float("nan")
    if cal.counts is not None:
        rows = np.unravel_index(np.arange(est.size), cal.counts.shape)[0]
        own_group = near & (rows == rows[int(np.argmin(est))])
        if own_group.any():
            people = float(np.median(cal.counts.ravel()[own_group]))
    return lo_pw, hi, J, BiasCorrected(value=m, cells=int(near.sum()), people=people)


def _bias_corrected(deviations: NDArray[np.float64], est: NDArray[np.float64],
                     se: NDArray[np.float64], theta: float, top: float) -> float:
    """The plug-in minimum θ̂ less its bootstrap median bias, within [θ̂, top]: 2 θ̂ - the median
    over the replicates of min_j (θ̂_j - se_j D*_bj), D*_bj the replicate's deviation below
    cell j's own estimate in standard errors (the replicate's minimum, cell by cell on the
    score scale: a replicate that loses a small group's cell is not an artefactual 0). One
    cell clearly lowest: no correction; many cells near the minimum: their smallest is biased
    downwards and the correction is positive. The bootstrap sees the observed cells, more
    spread than the population's, so it corrects too little where cells tie
    (docs/metrics.md, "Bias of the minimum")."""
    dev = np.where(np.isfinite(deviations), deviations, -np.inf)
    with np.errstate(invalid="ignore"):
        vals = est[None, :] - se[None, :] * dev
    med = float(np.median(np.nan_to_num(vals, nan=np.inf).min(axis=1)))
    return float(min(top, max(theta, 2.0 * theta - med)))


def _calibrated_ends(bounds: _Bounds, est: NDArray[np.float64], lo_pw: NDArray[np.float64],
                     hi_bonferroni: NDArray[np.float64], a: float, cal: _Calibration
                     ) -> tuple[NDArray[np.float64], NDArray[np.float64], int]:
    """Per-cell lower and upper bounds of the calibrated method and the contact set's size.

    Contact set (J, reported): the cells whose pointwise lower bound lies below the smallest
    pointwise upper bound. The statistics are taken over the wider set whose bounds at the
    selection level γ / (all cells), γ = 0.1 / ln n, overlap the smallest upper bound
    (Chernozhukov, Lee & Rosen's adaptive inequality selection, simultaneous over the cells).
    One critical value c for both ends: the (1 - 2a) quantile over the replicates of the miss
    statistic S*(θ̂) (:mod:`fairaudit.metrics.calibrate`), at least z_{2a}. In its upper part a
    cell counts as one that may tie the minimum (its replicates measured from its own
    estimate; the others from θ̂; generalised moment selection, Andrews & Soares 2010) when it
    lies within the tie threshold of θ̂ in its own standard errors, or within z at the
    selection level of the standard error of its difference from the minimising cell: a
    precise cell far above a noisy minimum in its own standard errors may still tie the true
    minimum (labels drawn at random: every cell ties at 1, the minimum is set by the smallest
    group's cells; measured without this rule the calibrated interval covered 81-95 %,
    docs/metrics.md "Random labels"). Neither end goes beyond the
    conservative method's, which is valid on its own: the lower end takes c capped at z_a
    (pointwise), the upper end c capped at z_{a/J} (Bonferroni over the J contact cells).
    With θ̂ = 0 (a cell observed at 0) the lower end is 0 and the upper end pointwise.
    """
    z_a = _z(a)
    hi_pw = np.maximum(bounds(a, "upper").ravel(), est)
    J = max(1, int(np.count_nonzero(lo_pw <= float(np.min(hi_pw)))))
    # the statistic's cells: those whose bounds at the selection level overlap the smallest
    # upper bound (a superset of the J contact cells)
    g = _selection_level(cal.n, est.size)
    idx = np.flatnonzero(np.minimum(bounds(g, "lower").ravel(), est)
                         <= float(np.min(np.maximum(bounds(g, "upper").ravel(), est))))
    theta = float(est.min())
    kappa = float(np.sqrt(2.0 * np.log(max(np.log(cal.n), 1.0))))
    if theta > 0:
        tie = _ties(cal, idx, est, lo_pw, hi_pw, a, J, g)
    else:  # a cell observed at 0: any other cell may be the true minimum
        tie = cal.expected[idx] >= SPARSE_EXPECTED
    at = np.full(est.size, theta)
    at[idx] = np.where(tie, est[idx], theta)
    fold = None
    if cal.unfolded is not None:
        fold = np.full(est.size, np.nan)
        near_one = -np.nan_to_num(cal.slack(idx, 1.0), nan=np.inf) <= kappa
        fold[idx] = np.where(tie & near_one, cal.unfolded[idx], np.nan)
    def stats(i: NDArray[np.int64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        below, above = cal.miss(i, theta, at[i], None if fold is None else fold[i])
        # at an estimate of 0 the lower end is 0 and cannot miss: the upper part alone
        return below, (above if theta > 0 else np.full_like(above, -np.inf))

    s = miss_statistic(stats, idx)
    c = critical_value(s, 1.0 - 2.0 * a)
    if theta <= 0:  # the lower end is 0; the upper end never below the conservative one
        return lo_pw, np.maximum(hi_bonferroni, _upper(bounds, est, c)), J
    hi = hi_pw if c == z_a else _upper(bounds, est, c)
    lo = lo_pw if c >= z_a else np.minimum(bounds(one_sided(c), "lower").ravel(), est)
    return lo, hi, J


def _ties(cal: _Calibration, idx: NDArray[np.int64], est: NDArray[np.float64],
          lo_pw: NDArray[np.float64], hi_pw: NDArray[np.float64], a: float, J: int,
          g: float) -> NDArray[np.bool_]:
    """Which of the cells ``idx`` may tie the minimum θ̂ > 0: within the tie threshold of θ̂ in
    their own standard errors, or their gap to the minimising cell within z at the selection
    level ``g`` of the standard error of the difference (a precise cell far above a noisy
    minimum may still tie the true minimum: labels drawn at random, docs/metrics.md)."""
    theta = float(est.min())
    kappa = float(np.sqrt(2.0 * np.log(max(np.log(cal.n), 1.0))))
    tie = np.nan_to_num(cal.slack(idx, theta), nan=np.inf) <= _tie_threshold(cal.n, J, kappa)
    se = (hi_pw - lo_pw) / (2.0 * _z(a))  # the pointwise bounds' standard errors
    i_min = int(np.argmin(est))
    with np.errstate(invalid="ignore"):  # two exact cells (se 0) at the minimum: a tie
        gap = (est[idx] - theta) / np.hypot(se[idx], se[i_min])
    return tie | (np.nan_to_num(gap, nan=0.0) <= _z(g))


def _selection_level(n: float, cells: int) -> float:
    """One-sided level of the bounds that select the contact set: γ / cells, γ = 0.1 / ln n
    (Chernozhukov, Lee & Rosen 2013's adaptive inequality selection, simultaneous over every
    cell): a cell that may be the minimum is kept with probability about 1 - 2γ however many
    cells tie, where pointwise bounds drop the tied cells that deviate most."""
    return 0.1 / max(float(np.log(n)), 1.0) / max(1, cells)


def _tie_threshold(n: float, J: int, kappa: float) -> float:
    """How many standard errors above the minimum a cell may lie and still tie it: twice the
    Bonferroni critical value of J cells at γ = 0.1 / ln n (Chernozhukov, Lee & Rosen 2013's
    adaptive inequality selection), at least κ. With many cells that all tie (labels drawn
    independently of the groups), the minimum lies that far below its peers."""
    gamma = 0.1 / max(float(np.log(n)), 1.0)
    return max(kappa, 2.0 * _z(gamma / max(1, J)))


def _upper(bounds: _Bounds, est: NDArray[np.float64], c: float) -> NDArray[np.float64]:
    """Per-cell upper bounds at the critical value ``c`` (never below the estimate)."""
    return np.maximum(bounds(one_sided(c), "upper").ravel(), est)
