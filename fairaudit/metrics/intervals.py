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
   the most conservative upper bound (the estimated contact set).

So ``L ≤ estimate ≤ U`` always, and the coverage is at least the stated level up to the
accuracy of the per-cell score intervals (measured by simulation: ``docs/metrics.md``). With
several cells near the minimum, the Bonferroni upper end is conservative: it covered 99 % where
95 % was asked.

**Calibrated** (``score-max-bootstrap``, the default of the host; ``balance``,
``fairness_cce``, ``balance_prime``, given bootstrap replicates of the table): the lower end is
the same pointwise score bound (exact where one cell sets the minimum); the upper end takes every
cell of the contact set at one critical value c, the (1 − α/2) quantile over the bootstrap
replicates of the **maximum standardised deviation** below the estimate, max_j (−z*_j)_+, with
z*_j the signed score statistic of replicate cell j at the observed cell value (Cherian & Candès
2024, *JMLR* 25, "Statistical inference for fairness auditing": the bootstrap of the maximum
standardised deviation gives simultaneous bounds at close to nominal coverage). The bootstrap
replaces Bonferroni's worst case by the cells' actual dependence.

All functions take one table ``N`` (groups x clusters, every row and column with a positive
sum) and return an :class:`Interval`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "CALIBRATED_METHOD",
    "CI_METHODS",
    "METHOD",
    "Interval",
    "balance_interval",
    "balance_mean_interval",
    "balance_prime_interval",
    "cce_interval",
    "distance_intervals",
    "fairness_cce_interval",
    "fce_fair_interval",
    "max_deviation_critical_value",
    "ratio_score_interval",
    "wilson_interval",
]

METHOD = "score-intersection"
"""Name of this interval method in the audit JSON (``detail.interval.method``)."""
CALIBRATED_METHOD = "score-max-bootstrap"
"""Name of the calibrated method (bootstrap critical value of the upper end) in the JSON."""
CI_METHODS = ("calibrated", "conservative")
"""The user's names of the two methods (``--ci-method``): calibrated -> ``score-max-bootstrap``
where a metric has it, conservative -> ``score-intersection``."""

_STEPS = 48  # bisection steps over a log-range of 80: 80 / 2**48 < 1e-12
_BLOCK_ELEMENTS = 1 << 18  # float64 elements per block of replicates (2 MB)
_DISTINCT_FROM = 64  # from this many cells on, bisect once per distinct (x1, n1, x2, n2)

_Bounds = Callable[[float, str], NDArray[np.float64]]
"""bounds(alpha, side) -> per-component lower (side="lower") or upper bounds at one-sided alpha."""


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


# -------------------------------------------------------------------------------- primitives
def _z(alpha_one_sided: float) -> float:
    from scipy.special import ndtri

    return float(ndtri(1.0 - alpha_one_sided))


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
    p1 = np.clip(p1, eps, 1.0 - 1e-15)
    p2 = np.clip(p2, eps, 1.0 - 1e-15)
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

    def stat_for(m):
        a1, b1, a2, b2 = x1[m], n1[m], x2[m], n2[m]
        return lambda t: _koopman_stat(t, a1, b1, a2, b2)

    both = (x1 > 0) & (x2 > 0)
    if both.any():
        e = np.log(est[both])
        lo[both] = _bisect_log(stat_for(both), e - 40.0, e, crit, inside_at_low=False)
        hi[both] = _bisect_log(stat_for(both), e, e + 40.0, crit, inside_at_low=True)
    zero = (x1 <= 0) & (x2 > 0)  # estimate 0: the set is [0, U]
    if zero.any():
        s0 = np.log((0.5 / n1[zero]) / (x2[zero] / n2[zero])) - 30.0
        hi[zero] = _bisect_log(stat_for(zero), s0, s0 + 80.0, crit, inside_at_low=True)
    inf = (x1 > 0) & (x2 <= 0)  # estimate +inf: the set is [L, inf)
    if inf.any():
        s1 = np.log((x1[inf] / n1[inf]) / (0.5 / n2[inf])) + 30.0
        lo[inf] = _bisect_log(stat_for(inf), s1 - 80.0, s1, crit, inside_at_low=False)
    ok = ~np.isnan(est)
    lo = np.where(ok, np.minimum(lo, np.where(ok, est, 0.0)), lo)
    hi = np.where(ok, np.maximum(hi, np.where(ok, est, 0.0)), hi)
    return lo, hi


def _bisect_log(stat, lo_log, hi_log, crit, inside_at_low: bool):
    """Find the boundary theta where stat(theta) crosses crit between exp(lo_log) and
    exp(hi_log); ``inside_at_low`` says which end is inside the confidence set."""
    a, b = lo_log.copy(), hi_log.copy()
    for _ in range(_STEPS):
        mid = 0.5 * (a + b)
        inside = stat(np.exp(mid)) <= crit
        if inside_at_low:
            a = np.where(inside, mid, a)
            b = np.where(inside, b, mid)
        else:
            b = np.where(inside, mid, b)
            a = np.where(inside, a, mid)
    return np.exp(b) if inside_at_low else np.exp(a)


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
            deviations: Callable[[NDArray[np.int64]], NDArray[np.float64]] | None = None
            ) -> Interval:
    """Intersection bounds for min_j theta_j from per-component bounds ``bounds(alpha, side)``.

    Lower end: min_j of the pointwise lower bounds at one-sided level alpha = (1 - level) / 2.
    Upper end: min_j of the upper bounds at alpha / J, J = the components whose lower bound lies
    below the Bonferroni upper bound over all components (the estimated contact set).

    With ``deviations`` (a function of flat component indices returning the B x len(indices)
    signed standardised deviations of bootstrap replicates from the estimate; asked only for the
    contact set), the upper end's one-sided level is instead
    Phi(-c), c the (1 - alpha) quantile of max over the contact set of the deviations below the
    estimate (:func:`max_deviation_critical_value`).
    """
    a = _alpha(level)
    est = np.asarray(estimate, dtype=np.float64).ravel()
    lo = np.minimum(bounds(a, "lower").ravel(), est)
    hi_all = np.maximum(bounds(a / est.size, "upper").ravel(), est)
    contact = lo <= float(np.min(hi_all))
    J = max(1, int(contact.sum()))
    method = METHOD
    if deviations is not None:
        # CLR's adaptive selection at the pointwise level: the cells whose lower bound lies
        # below the smallest pointwise upper bound
        contact = lo <= float(np.min(np.maximum(bounds(a, "upper").ravel(), est)))
        J = max(1, int(contact.sum()))
        worst, stuck = _max_below(deviations, np.flatnonzero(contact))
        c = float(np.quantile(worst, 1.0 - a)) if worst.size else 0.0
        if stuck:
            # a contact cell the bootstrap cannot move (observed at 0, or holding its whole
            # cluster): it keeps at least its pointwise bound
            c = max(c, _z(a))
        hi = np.maximum(bounds(_one_sided(c), "upper").ravel(), est)
        method = CALIBRATED_METHOD
    else:
        hi = hi_all if J == est.size else np.maximum(bounds(a / J, "upper").ravel(), est)
    i_lo = int(np.argmin(lo))
    i_hi = int(np.argmin(hi))

    def where(i: int) -> tuple[int, int] | None:
        return None if cells is None else (int(cells[i, 0]), int(cells[i, 1]))

    return Interval(
        lower=float(lo[i_lo]), upper=float(hi[i_hi]), level=float(level), method=method,
        lower_cell=where(i_lo), upper_cell=where(i_hi), contact_cells=J,
    )


def _max_below(deviations: Callable[[NDArray[np.int64]], NDArray[np.float64]],
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


def _one_sided(c: float) -> float:
    """The one-sided level Phi(-c) of a critical value, kept inside (1e-12, 0.5]."""
    from scipy.special import ndtr

    return float(min(0.5, max(1e-12, ndtr(-c))))


def _replicates(N: NDArray[np.float64], replicates: ArrayLike) -> NDArray[Any]:
    """The replicates as given (no float copy of B x groups x clusters), checked."""
    R = np.asarray(replicates)
    if R.ndim != 3 or R.shape[1:] != N.shape or len(R) < 2:
        raise ValueError(
            f"The 'replicates' parameter must have shape (B, {N.shape[0]}, {N.shape[1]}) with "
            f"B >= 2; got {R.shape}."
        )
    return R


def _signed_fold(z: NDArray[np.float64], q_hat: NDArray[np.float64]) -> NDArray[np.float64]:
    """Deviations of q turned into deviations of min(q, 1/q): the sign flips where q̂ > 1."""
    return np.where(q_hat[None] > 1.0, -z, z)


def _wilson_z(x: NDArray[np.float64], n: NDArray[np.float64],
              p: NDArray[np.float64]) -> NDArray[np.float64]:
    """Signed Wilson score statistic (x - n p) / sqrt(n p (1 - p)) of replicate counts x of n at
    the proportion p (NaN where n = 0; +-inf where p is 0 or 1 and x differs from n p)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        d = x - n * p
        z = d / np.sqrt(n * p * (1.0 - p))
    z = np.where(d == 0, 0.0, z)
    return np.where(n > 0, z, np.nan)


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

    def to_q(r):
        # q = pi1 / P(k) = r / (share * r + 1 - share), increasing in r (r = inf -> 1 / share)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(np.isinf(r), 1.0 / share, r / (share * r + 1.0 - share))
        return out

    def bounds(alpha: float, side: str):
        with np.errstate(divide="ignore", invalid="ignore"):
            lo_r, hi_r = ratio_score_interval(x1, n1, x2, np.where(single, 1.0, n2), alpha)
        lo_q = np.where(single, 1.0, to_q(lo_r))
        hi_q = np.where(single, 1.0, to_q(hi_r))
        return _fold(lo_q, hi_q, side)

    return bounds, est


class _Margins:
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


def _balance_deviations(T: NDArray[np.float64], M: _Margins,
                        idx: NDArray[np.int64]) -> NDArray[np.float64]:
    """B x len(idx) signed Koopman score statistics of the replicates' cells ``idx`` at the
    observed q̂, as deviations of the folded cell value min(q, 1/q)."""
    rows = T.sum(axis=1)[:, None]
    n = T.sum()
    q_hat = (T * n / (T.sum(axis=0)[None, :] * rows)).ravel()[idx]
    s = np.broadcast_to(rows / n, T.shape).ravel()[idx]
    with np.errstate(divide="ignore", invalid="ignore"):
        r_hat = q_hat * (1.0 - s) / (1.0 - q_hat * s)  # the risk ratio at q̂ (inf: x2 = 0)
    x1, n1, cr, nr = M.at(idx)
    x2, n2 = cr - x1, nr - n1
    ok = (n1 > 0) & (n2 > 0) & np.isfinite(r_hat)[None] & (r_hat > 0)[None]
    with np.errstate(divide="ignore", invalid="ignore"):
        stat = _koopman_stat(np.where(ok, r_hat[None], 1.0), x1, np.where(n1 > 0, n1, 1.0),
                             x2, np.where(n2 > 0, n2, 1.0))
        q_rep = x1 * nr / (cr * n1)
    z = np.sign(np.nan_to_num(q_rep - q_hat[None])) * np.sqrt(stat)
    # a cell observed at 0 (or holding its whole cluster) has a one-sided score interval: a
    # replicate below it is impossible, so it never sets the critical value
    return np.where(ok, _signed_fold(z, q_hat), np.nan)


def _wilson_deviations(T: NDArray[np.float64], replicates: ArrayLike | None,
                       p: NDArray[np.float64], total: str,
                       fold: NDArray[np.float64] | None = None
                       ) -> Callable[[NDArray[np.int64]], NDArray[np.float64]] | None:
    """The deviations of the calibrated upper end for cells that are binomial shares p of their
    ``total`` ("row" or "column"): signed Wilson statistics of the replicates' shares at p,
    folded as min(q, 1/q) of ``fold`` when given. None without replicates."""
    if replicates is None:
        return None
    M = _Margins(_replicates(T, replicates))

    def dev(idx: NDArray[np.int64]) -> NDArray[np.float64]:
        x, rows, cols, _ = M.at(idx)
        z = _wilson_z(x, rows if total == "row" else cols, p.ravel()[idx][None])
        return z if fold is None else _signed_fold(z, fold.ravel()[idx])

    return dev


def balance_interval(N: ArrayLike, level: float = 0.95,
                     replicates: ArrayLike | None = None) -> Interval:
    """Interval for ``balance_min``: min over cells of min(q, 1/q), q = N[g,k] n / (|k| |g|).

    Per cell, conditional on the group sizes (the rows are independent binomial strata), q is
    an increasing function of the ratio of two binomial proportions — the share of the group's
    members in cluster k against the share of everyone else in k — whose Koopman score interval
    gives the cell's bounds.

    Without ``replicates``: the conservative ``score-intersection`` interval. With bootstrap
    ``replicates`` of the table (B x groups x clusters): the calibrated
    ``score-max-bootstrap`` interval (same lower end, upper end at the bootstrap critical value
    of the maximum standardised deviation).
    """
    T = _table(N)
    bounds, est = _balance_cells(T)
    dev = None
    if replicates is not None:
        R = _replicates(T, replicates)
        M = _Margins(R)
        dev = lambda idx: _balance_deviations(T, M, idx)  # noqa: E731
    return _min_of(bounds, est, level, _cells(*T.shape), dev)


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
    With ``replicates``, calibrated as :func:`balance_interval` (Wilson score deviations).
    """
    T = _table(N)
    rows = np.broadcast_to(T.sum(axis=1)[:, None], T.shape)
    c = T.shape[1]
    x = c * T / rows
    est = np.where(x > 0, np.minimum(x, 1.0 / np.where(x > 0, x, 1.0)), 0.0)

    def bounds(alpha: float, side: str):
        lo, hi = wilson_interval(T, rows, alpha)
        return _fold(c * lo, c * hi, side)

    dev = _wilson_deviations(T, replicates, T / rows, "row", fold=x)
    return _min_of(bounds, est, level, _cells(*T.shape), dev)


def balance_prime_interval(N: ArrayLike, level: float = 0.95,
                           replicates: ArrayLike | None = None) -> Interval:
    """Interval for FUFS's Balance′ = min_k min_g N[g,k] / |k| (Wilson bounds per cell,
    conditional on the cluster sizes; with ``replicates``, calibrated as
    :func:`balance_interval`)."""
    T = _table(N)
    cols = np.broadcast_to(T.sum(axis=0)[None, :], T.shape)

    def bounds(alpha: float, side: str):
        return wilson_interval(T, cols, alpha)[0 if side == "lower" else 1]

    dev = _wilson_deviations(T, replicates, T / cols, "column")
    return _min_of(bounds, T / cols, level, _cells(*T.shape), dev)


def _ratio_of_extremes(x: NDArray[np.float64], n: NDArray[np.float64], a: float,
                       axis: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Bounds of min_i p_i / max_i p_i along ``axis`` for binomial shares p = x / n (n is the
    same along ``axis``), each end missing with probability at most ``a``, in O(size) (no
    pairs).

    Lower: min_i lo_i / max_i hi_i with pointwise Wilson bounds at a / 2 each — valid because
    min_i lo_i <= min_i p_i holds when the argmin's bound does, and max_i hi_i >= max_i p_i when
    the argmax's does. Upper: min_i hi_i / max_i lo_i with all m bounds simultaneous
    (Bonferroni a / (2 m))."""
    m = x.shape[axis]
    lo, hi = wilson_interval(x, n, a / 2.0)
    lo_s, hi_s = wilson_interval(x, n, a / (2.0 * m))
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


# -------------------------------------------------------------------------------- distances
DISTANCE_METHOD = "bootstrap-triangle"
"""Name of the distance metrics' interval method in the audit JSON."""
DISTANCE_MAX_METHOD = "bootstrap-triangle-max"
"""The calibrated interval of ``wd_max`` / ``ed_max`` (per-cluster bounds, simultaneous lower
end from the bootstrap of the maximum standardised deviation)."""


def _deviations(T: NDArray[np.float64], ground: str) -> NDArray[np.float64]:
    """Per-cluster deviation vectors v_k (..., m, k) whose norm is the cluster's distance:
    P_k - P_X (zero-one, Euclidean), or its cumulative sums over the declared order (ordinal)."""
    rows = T.sum(axis=-1)
    cols = T.sum(axis=-2)
    n = rows.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        px = rows / n[..., None]
        pk = T / cols[..., None, :]
    v = pk - px[..., :, None]
    if ground == "ordinal":
        v = np.cumsum(v, axis=-2)[..., :-1, :]
    return v


def _norm(v: NDArray[np.float64], kind: str) -> NDArray[np.float64]:
    if kind == "ed":
        return np.sqrt((v * v).sum(axis=-2))
    return np.abs(v).sum(axis=-2) * (0.5 if kind == "wd-zero-one" else 1.0)


def distance_intervals(
    N: ArrayLike, replicates: ArrayLike, level: float = 0.95, *, ground: str = "zero-one",
    max_undefined: float = 0.1, calibrated: bool = False,
) -> dict[str, Interval]:
    """Intervals for Ed and Wd aggregated over clusters (``ed``, ``ed_max``, ``ed_sum``,
    ``wd``, ``wd_max``, ``wd_sum``; Wd with the zero-one or ordinal ground metric).

    Each cluster's distance is a norm of a deviation vector v_k (P_k - P_X, or its cumulative
    sums for the ordinal ground metric), so by the triangle inequality
    |d(v) - d(v̂)| <= d(v - v̂), and for the aggregates

    * weighted mean  sum_k p_k ||v_k|| = sum_k ||p_k v_k||:  error <= sum_k ||p_k v_k - p̂_k v̂_k||
    * max            max_k ||v_k||:                          error <= max_k ||v_k - v̂_k||
    * sum            sum_k ||v_k||:                          error <= sum_k ||v_k - v̂_k||

    The error bound is a smooth function of the estimation error of the table's proportions,
    which the multinomial bootstrap does approximate well (unlike the distance itself, which is
    biased upwards near 0: its percentile interval never covers a perfectly fair population).
    With c the ``level`` quantile of the bootstrap error bound (``replicates``: B tables laid out
    like ``N``), the interval is [max(0, d̂ - c), d̂ + c]: it contains d̂ and covers the true
    distance at least as often as the bound holds. Conservative when the true distance is far
    from 0 (the triangle inequality is then loose).

    ``calibrated`` (``--ci-method calibrated``) gives ``wd_max`` / ``ed_max`` per-cluster bounds
    instead of one shared error: q_k, the ``level`` quantile of cluster k's bootstrap error
    ||v*_k - v̂_k||; the upper end is max_k (d̂_k + q_k) (only the cluster that attains the
    maximum must hold); the lower end max_k (d̂_k - c q_k) with c the ``level`` quantile of the
    maximum standardised error max_k ||v*_k - v̂_k|| / q_k, so that every cluster's bound holds at
    once (Cherian & Candès 2024). A small cluster's noise no longer widens the bound of a large
    one.
    """
    T = _table(N)
    R = np.asarray(replicates)
    if R.ndim != 3 or R.shape[1:] != T.shape:
        raise ValueError(
            f"The 'replicates' parameter must have shape (B, {T.shape[0]}, {T.shape[1]}); got "
            f"{R.shape}."
        )
    if ground not in ("zero-one", "ordinal"):
        raise ValueError(f"The 'ground' parameter must be 'zero-one' or 'ordinal'; got {ground!r}.")
    q = float(level)
    _alpha(q)
    n_boot = R.shape[0]
    # with two groups or more, a cluster missing from a replicate makes every error bound of
    # that replicate NaN (its shares are 0 / 0); when too many replicates lose a cluster
    # (thousands of tiny clusters), no interval is given: skip the work
    lost = int((R.sum(axis=1) == 0).any(axis=1).sum()) if T.shape[0] >= 2 else 0
    if n_boot - lost < 2 or lost > max_undefined * n_boot:
        return {}
    pk = T.sum(axis=0) / T.sum()
    kinds = (("ed", "ed", "zero-one"), ("wd", "wd-" + ground, ground))
    grounds = sorted({g for _, _, g in kinds})
    v = {g: _deviations(T, g) for g in grounds}  # Ed always compares the plain shares
    pkv = {g: (pk * v[g])[None] for g in grounds}
    parts: dict[str, list[NDArray[np.float64]]] = {}
    # in blocks of replicates that stay in cache (B x groups x clusters is 160 MB per temporary
    # at 10,000 clusters): every step is elementwise or reduces within one replicate, in the
    # stack's own memory layout, so the values are those of the whole stack at once
    # (fairaudit.metrics.bootstrap.replicate_blocks)
    from fairaudit.metrics.bootstrap import replicate_blocks

    for b0, b1 in replicate_blocks(n_boot, _BLOCK_ELEMENTS // max(1, T.size)):
        Rb = np.asarray(R[b0:b1], dtype=np.float64)
        pkr = Rb.sum(axis=1) / Rb.sum(axis=(1, 2))[:, None]
        vr = {g: _deviations(Rb, g) for g in grounds}
        for name, kind, g in kinds:
            e_norm = _norm(vr[g] - v[g][None], kind)  # (b, k); NaN where a cluster vanished
            e_weighted = _norm(pkr[:, None, :] * vr[g] - pkv[g], kind)
            for metric, e in ((name, e_weighted.sum(axis=1)),
                              (f"{name}_max", e_norm.max(axis=1)),
                              (f"{name}_sum", e_norm.sum(axis=1))):
                parts.setdefault(metric, []).append(e)
            if calibrated:
                parts.setdefault(f"{name}_per_cluster", []).append(e_norm)
    out: dict[str, Interval] = {}
    for name, kind, g in kinds:
        d = _norm(v[g], kind)  # (k,)
        estimates = {
            name: float((pk * d).sum()),
            f"{name}_max": float(d.max()),
            f"{name}_sum": float(d.sum()),
        }
        for metric, est in estimates.items():
            e = np.concatenate(parts[metric])
            ok = np.isfinite(e)
            if ok.sum() < 2 or (~ok).sum() > max_undefined * e.size:
                continue
            c = float(np.quantile(e[ok], q))
            out[metric] = Interval(lower=max(0.0, est - c), upper=est + c, level=q,
                                   method=DISTANCE_METHOD, contact_cells=0)
        if calibrated and f"{name}_max" in out:
            iv = _max_interval(d, np.concatenate(parts[f"{name}_per_cluster"]), q,
                               max_undefined)
            if iv is not None:
                out[f"{name}_max"] = iv
    return out


def _max_interval(d: NDArray[np.float64], E: NDArray[np.float64], level: float,
                  max_undefined: float) -> Interval | None:
    """The calibrated interval of max_k d_k from the per-cluster bootstrap errors ``E``
    (B x k, NaN where a cluster vanished from a replicate): see :func:`distance_intervals`."""
    ok = np.isfinite(E).all(axis=1)
    if ok.sum() < 2 or (~ok).sum() > max_undefined * len(E):
        return None
    E = E[ok]
    qk = np.quantile(E, level, axis=0)  # per cluster: |d_k - d̂_k| <= q_k at the level
    est = float(d.max())
    upper = float(np.max(d + qk))
    scale = np.where(qk > 0, qk, np.inf)  # a cluster without sampling error: bound 0
    c = float(np.quantile((E / scale).max(axis=1), level))
    lower = float(max(0.0, np.max(d - c * np.where(np.isfinite(scale), qk, 0.0))))
    return Interval(lower=min(lower, est), upper=max(upper, est), level=level,
                    method=DISTANCE_MAX_METHOD, contact_cells=0)
