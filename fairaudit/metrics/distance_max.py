"""The calibrated interval of the largest per-cluster distance (``wd_max``, ``ed_max``;
``bootstrap-triangle-max``, ``--ci-method calibrated``), used by
:mod:`fairaudit.metrics.distance_intervals`. docs/metrics.md, "Uncertainty".

Cluster k's distance is the norm of a deviation vector, d_k = ||v_k||, estimated by
d̂_k = ||v̂_k||, and the bootstrap gives the errors e*_b = v*_b - v̂ of all clusters at once.
Under the hypothesis d_k = t, with v_k in the estimated direction u_k = v̂_k / d̂_k, the estimate
is distributed as ||t u_k + e||, which the replicates give as F_k(t) = {||t u_k + e*_b||}_b:

* **a test inversion per cluster** (as for the noncentrality of a chi-square): cluster k's
  lower bound at one-sided level p is the smallest t that F_k(t) does not reject from above
  (d̂_k is not beyond its upper p tail), its upper bound the largest t that F_k(t) does not
  reject from below. The upward bias of a distance near 0 is in F_k(t) itself, so it is
  corrected, not reproduced; at t = 0, F_k(0) is the distribution of the error norm ||e||,
  so the lower bound is 0 exactly when the triangle bound's is (the boundary case, where the
  plain bootstrap of d̂ fails: Andrews 2000);
* **the maximum**: L = max_k L_k, U = max_k U_k. L misses the true max θ when SOME cluster's
  lower bound is above θ (simultaneous over clusters, the maximum standardised deviation of
  Cherian & Candès 2024), U only when EVERY cluster's upper bound is below θ;
* **one level p for both ends**, calibrated by the bootstrap: in the bootstrap world the
  clusters' distances are the estimates and the max is their max; replicate b misses when
  min_k P(F_k(θ) >= d*_k) < p or max_k P(F_k(θ) <= d*_k) < p, and p is the largest level at
  which at most 1 - level of the replicates miss. **Moment selection at the boundary**
  (Andrews & Soares 2010): a cluster whose distance is not clearly above 0 (d̂_k within the
  Φ(τ) quantile of its error norm, τ = max(κ, 2 z_{γ/k}), κ = sqrt(2 ln ln n),
  γ = 0.1 / ln n, k clusters) counts as 0 in the bootstrap world, and when every cluster does, the upper end cannot miss (θ = 0 <= U), so the lower end gets
  all of the error. Where one cluster is far from 0, the two ends share it. **Moment selection
  at the maximum**: a cluster within τ bootstrap standard deviations of the largest estimate
  may tie it, and its lower-end misses are counted at θ (its upper-end misses from its own
  estimate);
* **safeguards**: p <= 1 - level (never narrower than spending all of the error on one end of
  one cluster); p values as ranks among the B replicates, (1 + #)/(B + 1), so with too few
  replicates for the level no test is possible; and the ends never beyond the conservative
  interval (``bootstrap-triangle``), each valid on its own.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from fairaudit.metrics.calibrate import _tie_threshold, normal_cdf

__all__ = ["max_distance_interval"]

_BLOCK_ELEMENTS = 1 << 18  # float64 elements of B x groups x clusters per block (2 MB)


def norm(v: NDArray[np.float64], kind: str) -> NDArray[np.float64]:
    """Per-cluster distance of deviation vectors (..., m, k): Euclidean for ``ed``, L1 (halved
    for the zero-one ground metric: total variation) for ``wd-*``."""
    if kind == "ed":
        return np.sqrt((v * v).sum(axis=-2))
    return np.abs(v).sum(axis=-2) * (0.5 if kind == "wd-zero-one" else 1.0)


def deviations(T: NDArray[np.float64], ground: str) -> NDArray[np.float64]:
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


def _replicate_deviations(R: NDArray[np.float64], px: NDArray[np.float64], idx: NDArray[np.intp],
                          ground: str) -> NDArray[np.float64]:
    """v*_k of the clusters ``idx`` in every replicate (B, m, len(idx)); ``px`` the replicates'
    group shares (B, groups)."""
    sub = np.asarray(R[:, :, idx], dtype=np.float64)
    v = sub / sub.sum(axis=1, keepdims=True) - px[:, :, None]
    if ground == "ordinal":
        v = np.cumsum(v, axis=1)[:, :-1, :]
    return v


def _order_stat(x: NDArray[np.float64], j: int) -> NDArray[np.float64]:
    """The j-th smallest (0-based) of each column of x (B, k)."""
    return np.partition(x, j, axis=0)[j]


def sublevel(d: NDArray[np.float64], u: NDArray[np.float64], E: NDArray[np.float64], kind: str
             ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """Per replicate and cluster (B, k), the interval [a, c] of t where ||t u_k + E_b|| <= d̂_k,
    exactly, and whether it is empty. t -> ||t u + e|| is convex, so the set is an interval.

    Euclidean (u a unit vector): the roots of t² + 2 t (u·e) + ||e||² = d̂². L1 (scaled by 0.5
    for the zero-one ground metric): w Σ_i |u_i| |t - r_i| + w Σ_{u_i = 0} |e_i|, r_i = -e_i / u_i,
    is piecewise linear with its kinks at the r_i; its values there come from prefix sums over
    the sorted kinks, and each root lies on one linear piece."""
    if kind == "ed":
        s = (u[None] * E).sum(axis=1)
        disc = s * s - (E * E).sum(axis=1) + d[None] ** 2
        root = np.sqrt(np.maximum(disc, 0.0))
        return -s - root, -s + root, disc < 0
    w = 0.5 if kind == "wd-zero-one" else 1.0
    au = np.broadcast_to(np.abs(u)[None], E.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(au > 0, -E / np.where(u[None] != 0, u[None], 1.0), 0.0)
    const = w * np.where(au > 0, 0.0, np.abs(E)).sum(axis=1)  # (B, k)
    order = np.argsort(r, axis=1, kind="stable")
    r = np.take_along_axis(r, order, axis=1)
    a = np.take_along_axis(au, order, axis=1) * w
    W = a.sum(axis=1)  # the slope far right (and minus it far left)
    cw = np.cumsum(a, axis=1)
    cs = np.cumsum(a * r, axis=1)
    S = cs[:, -1]
    f = r * cw - cs + (S[:, None] - cs) - r * (W[:, None] - cw) + const[:, None]  # f at kinks
    j = np.argmin(f, axis=1)[:, None]
    fmin = np.take_along_axis(f, j, axis=1)[:, 0]
    empty = fmin > d[None] + 0.0 * fmin
    above = f > d[None, None, :]
    pos = np.arange(r.shape[1])[None, :, None]
    # left root: on the piece after the last kink left of the minimum with f > d̂ (or before
    # the first kink, where the slope is -W)
    left = np.where(above & (pos < j), pos, -1).max(axis=1)
    right = np.where(above & (pos > j), pos, r.shape[1]).min(axis=1)

    def at(x, i):
        return np.take_along_axis(x, np.clip(i, 0, r.shape[1] - 1)[:, None], axis=1)[:, 0]

    dd = np.broadcast_to(d[None], fmin.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        r0, f0, r1, f1 = at(r, left), at(f, left), at(r, left + 1), at(f, left + 1)
        lo = np.where(left < 0, r[:, 0] - (dd - f[:, 0]) / W,
                      r0 + (f0 - dd) / (f0 - f1) * (r1 - r0))
        r0, f0, r1, f1 = at(r, right - 1), at(f, right - 1), at(r, right), at(f, right)
        hi = np.where(right >= r.shape[1], r[:, -1] + (dd - f[:, -1]) / W,
                      r0 + (dd - f0) / (f1 - f0) * (r1 - r0))
    return lo, hi, empty | ~(W > 0)


def invert(d: NDArray[np.float64], u: NDArray[np.float64], E: NDArray[np.float64], kind: str,
           m: int, sides: tuple[str, ...] = ("lower", "upper"),
           ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per-cluster bounds (lower, upper) of d_k by inverting the test of d_k = t against
    F_k(t) = {||t u_k + E_b||}_b (E: B x m_dims x k errors, u: unit directions, d: estimates)
    with the rank rule: t is rejected from above when fewer than ``m`` of the B values reach
    d̂_k, from below when fewer than ``m`` lie at or under it (1 <= m <= B).

    Lower: the smallest t in [0, d̂_k] whose m-th largest value reaches d̂_k (0 when t = 0
    does; d̂_k when none does); upper: the largest t >= d̂_k whose m-th smallest value is at
    most d̂_k (d̂_k when none is). Exact: replicate b's value is at most d̂_k on an interval
    [a_b, c_b] of t (:func:`sublevel`), so the count at or under d̂_k changes only at the a_b
    and c_b. The accepted set need not be an interval (with two groups a deviation is
    one-dimensional and each replicate accepts a window of t): the sup of the upper test's
    set is the largest c_j that m windows cover, the inf of the lower test's set 0 or the
    smallest c_j with m replicates outside their open windows. A cluster with d̂_k = 0 (no
    direction) gets the triangle upper bound, the m-th largest ||E_b||. ``sides``: the bounds
    to compute (the other is returned as d̂).
    """
    B = E.shape[0]
    a, c, empty = sublevel(d, u, E, kind)
    a = np.where(empty, np.inf, a)
    c = np.where(empty, -np.inf, c)
    lower = upper = d
    if "lower" in sides:
        # candidates 0 and every c_j; replicate b reaches d̂ at t when t <= a_b or t >= c_b
        cand = np.concatenate([np.zeros((1, d.size)), np.where(np.isfinite(c), c, np.inf)])
        best = np.full(d.size, np.inf)
        for i in range(0, B + 1, 64):
            t = cand[i:i + 64][:, None, :]  # (n, 1, k)
            count = ((t <= a[None]) | (t >= c[None])).sum(axis=1)  # (n, k)
            ok = (count >= m) & (t[:, 0] >= 0) & (t[:, 0] <= d[None])
            best = np.minimum(best, np.where(ok, t[:, 0], np.inf).min(axis=0))
        lower = np.where(np.isfinite(best), best, d)
    if "upper" in sides:
        best = np.full(d.size, -np.inf)
        for i in range(0, B, 64):
            t = c[i:i + 64][:, None, :]  # (n, 1, k)
            count = ((a[None] <= t) & (t <= c[None])).sum(axis=1)
            best = np.maximum(best, np.where(count >= m, t[:, 0], -np.inf).max(axis=0))
        upper = np.where(best >= d, best, d)
        upper = np.where(d > 0, upper, d + _order_stat(norm(E, kind), B - m))
    return lower, upper


def _ranks(ref: NDArray[np.float64], x: NDArray[np.float64]) -> tuple[NDArray[np.float64], ...]:
    """Per column k: the number of ``ref[:, k]`` at or above / at or below each ``x[:, k]``
    (a binary search per column: faster here than one stable sort of all columns)."""
    ref = np.sort(ref, axis=0)
    B = ref.shape[0]
    above = np.empty(x.shape)
    below = np.empty(x.shape)
    for k in range(ref.shape[1]):
        above[:, k] = B - np.searchsorted(ref[:, k], x[:, k], side="left")
        below[:, k] = np.searchsorted(ref[:, k], x[:, k], side="right")
    return above, below


def max_distance_interval(
    T: NDArray[np.float64], R: NDArray[np.float64], e_norm: NDArray[np.float64], ground: str,
    kind: str, level: float, conservative: tuple[float, float],
) -> tuple[float, float, int]:
    """(lower, upper, contact clusters) of max_k d_k for the table ``T``; see the module
    docstring.

    ``R``: the bootstrap replicates of ``T`` that kept every cluster (B, groups, k);
    ``e_norm``: the norms of their errors ||v*_k - v̂_k|| (B, k), all finite; ``ground`` of the
    deviation vectors and ``kind`` of the norm; ``conservative``: the ``bootstrap-triangle``
    ends, which the result never goes beyond."""
    B = e_norm.shape[0]
    alpha = 1.0 - float(level)
    v = deviations(T, ground)
    d = norm(v, kind)
    est = float(d.max())
    lo_c, hi_c = conservative
    # the clusters that can set an end: every bound of cluster k lies in d̂_k -+ max_b ||e*_k||
    spread = e_norm.max(axis=0)
    idx = np.flatnonzero(d + spread >= np.max(d - spread))
    # moment selection at the boundary: a cluster not clearly above 0 is 0 in the bootstrap world
    kappa = float(np.sqrt(2.0 * np.log(max(np.log(T.sum()), 1.0))))
    # ... scaled to the number of clusters, as the balance family's tie threshold
    # (fairaudit.metrics.intervals._tie_threshold): with many clusters at 0, the largest
    # estimate lies far out in its own error's tail
    kappa = _tie_threshold(float(T.sum()), d.size, kappa)
    t = np.where(d > np.quantile(e_norm, normal_cdf(kappa), axis=0), d, 0.0)
    theta = float(t.max())
    rows = np.asarray(R.sum(axis=2), dtype=np.float64)
    px = rows / rows.sum(axis=1, keepdims=True)
    step = max(1, _BLOCK_ELEMENTS // max(1, B * v.shape[0]))

    def errors(cols: NDArray[np.intp]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The errors e*_k (B, m, len(cols)) and unit directions u_k (m, len(cols))."""
        E = _replicate_deviations(R, px, cols, ground) - v[None, :, cols]
        dk = d[cols]
        u = np.where(dk > 0, v[:, cols] / np.where(dk > 0, dk, 1.0), 0.0)
        return E, u

    # calibration: the replicates' rank p-values at the bootstrap world's max theta
    above_min = np.full(B, np.inf)
    below_max = np.full(B, -np.inf)
    # a cluster whose every replicate lies below every reference value at theta takes no part
    # (its rank p-values are 1 above and 0 below): t_k + ||e|| < theta - ||e'||
    # moment selection at the maximum: a cluster within kappa bootstrap standard deviations of
    # the largest estimate may tie it, and its lower-end misses are counted as the maximum's
    # (measured at theta, from its own replicates); the upper end's from its own estimate
    near = idx[(t[idx] + 2.0 * spread[idx] >= theta) | (d[idx] + 2.0 * spread[idx] >= est)]
    for cols in [near[i:i + step] for i in range(0, near.size, step)]:
        E, u = errors(cols)
        sd = norm(v[None, :, cols] + E, kind).std(axis=0)
        tie = est - d[cols] <= kappa * sd
        ref = norm(theta * u[None] + E, kind)
        observed = norm(np.where(tie, theta, t[cols])[None, None, :] * u[None] + E, kind)
        above, _ = _ranks(ref, observed)
        _, below = _ranks(ref, norm(t[cols][None, None, :] * u[None] + E, kind))
        above_min = np.minimum(above_min, above.min(axis=1) / (B + 1))
        below_max = np.maximum(below_max, below.max(axis=1) / (B + 1))
    miss = np.minimum(above_min, below_max) if theta > 0 else above_min
    # the largest p at which at most alpha of the replicates miss (miss_b < p)
    p = min(alpha, float(np.sort(miss)[min(B - 1, int(np.floor(alpha * B)))]))
    # a rank p-value (1 + #) / (B + 1) is below p when # < p (B + 1) - 1
    m = int(np.ceil(p * (B + 1) - 1 - 1e-9))
    if m < 1 or m > B:  # too few replicates for the level: the conservative ends
        return max(0.0, min(lo_c, est)), max(hi_c, est), int(idx.size)
    # the ends are maxima over clusters: invert the clusters in the order of what they could
    # reach and stop when no cluster left can pass the end found so far. Cluster k's bounds
    # lie in [d̂_k - q_k, d̂_k] and [d̂_k, d̂_k + q_k], q_k the m-th largest error norm
    # (||t u + e|| is within ||e|| of t)
    q = _order_stat(e_norm[:, idx], B - m)
    lower = float(np.max(d[idx] - q))
    upper = est
    for side, reach in (("lower", d[idx]), ("upper", d[idx] + q)):
        order = idx[np.argsort(-reach, kind="stable")]
        reach = np.sort(reach)[::-1]
        for i in range(0, order.size, step):
            end = lower if side == "lower" else upper
            live = reach[i:i + step] > end
            if not live.any():
                break
            cols = order[i:i + step][live]
            E, u = errors(cols)
            lo_k, hi_k = invert(d[cols], u, E, kind, m, (side,))
            if side == "lower":
                lower = max(lower, float(lo_k.max()))
            else:
                upper = max(upper, float(hi_k.max()))
    lower = min(max(lower, lo_c, 0.0), est)
    upper = max(min(upper, hi_c), est)
    return lower, upper, int(idx.size)
