"""Confidence intervals of the distance metrics Ed and Wd (``ed``, ``ed_max``, ``ed_sum``, ``wd``,
``wd_max``, ``wd_sum``): triangle-inequality bounds on the bootstrap error
(``bootstrap-triangle``), and per-cluster bounds of the maxima (``bootstrap-triangle-max``,
``--ci-method calibrated``). docs/metrics.md, "Uncertainty".
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fairaudit.metrics.distance_max import deviations as _deviations
from fairaudit.metrics.distance_max import norm as _norm
from fairaudit.metrics.intervals import Interval, _alpha, _table

__all__ = ["DISTANCE_MAX_METHOD", "DISTANCE_METHOD", "distance_intervals"]

_BLOCK_ELEMENTS = 1 << 18  # float64 elements per block of replicates (2 MB)
SPARSE_CLUSTER = 10
"""Clusters of fewer rows than this are tiny; where they hold more than ``SPARSE_SHARE`` of
the rows, every distance's interval is its whole range (measured: 442 rows in 200 clusters,
labels independent of the groups: the triangle interval of wd covered 60 %)."""
SPARSE_SHARE = 0.05


DISTANCE_METHOD = "bootstrap-triangle"
"""Name of the distance metrics' interval method in the audit JSON."""
DISTANCE_MAX_METHOD = "bootstrap-triangle-max"
"""The calibrated interval of ``wd_max`` / ``ed_max`` (per-cluster bounds, simultaneous lower
end from the bootstrap of the maximum standardised deviation)."""


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
    if n_boot < 2:
        return {}
    sizes = T.sum(axis=0)
    if T.shape[0] >= 2 and sizes[sizes < SPARSE_CLUSTER].sum() > SPARSE_SHARE * sizes.sum():
        # many rows in clusters of a few people: the bootstrap error of such a cluster's group
        # shares is far smaller than their sampling error (a replicate never moves a group
        # observed at 0 in it), so the data cannot bound a distance ("too little data";
        # docs/metrics.md, "Sparse tables")
        return _whole_ranges(T, ground, q)
    per_cluster = n_boot - lost >= 2 and lost <= max_undefined * n_boot
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
            # p_k v_k is defined where cluster k vanished from a replicate (0: no rows)
            e_weighted = _norm(np.where(pkr[:, None, :] > 0, pkr[:, None, :] * vr[g], 0.0)
                               - pkv[g], kind)
            parts.setdefault(name, []).append(e_weighted.sum(axis=1))
            if not per_cluster:
                continue
            e_norm = _norm(vr[g] - v[g][None], kind)  # (b, k); NaN where a cluster vanished
            parts.setdefault(f"{name}_max", []).append(e_norm.max(axis=1))
            parts.setdefault(f"{name}_sum", []).append(e_norm.sum(axis=1))
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
            if metric not in parts:  # too many replicates lost a cluster: no information
                out[metric] = Interval(lower=0.0, upper=max(est, _largest(metric, kind, T)),
                                       level=q, method=DISTANCE_METHOD, contact_cells=0)
                continue
            e = np.concatenate(parts[metric])
            ok = np.isfinite(e)
            if ok.sum() < 2 or (~ok).sum() > max_undefined * e.size:
                continue
            c = float(np.quantile(e[ok], q))
            out[metric] = Interval(lower=max(0.0, est - c), upper=est + c, level=q,
                                   method=DISTANCE_METHOD, contact_cells=0)
        if calibrated and f"{name}_per_cluster" in parts:
            iv = _max_interval(T, R, np.concatenate(parts[f"{name}_per_cluster"]), g, kind,
                               out[f"{name}_max"], max_undefined)
            if iv is not None:
                out[f"{name}_max"] = iv
    return out


def _whole_ranges(T: NDArray[np.float64], ground: str, level: float) -> dict[str, Interval]:
    """Every distance's whole range, [0, largest value], as its interval."""
    out = {}
    for name, kind in (("ed", "ed"), ("wd", "wd-" + ground)):
        for metric in (name, f"{name}_max", f"{name}_sum"):
            out[metric] = Interval(lower=0.0, upper=_largest(metric, kind, T), level=level,
                                   method=DISTANCE_METHOD, contact_cells=0)
    return out


def _largest(metric: str, kind: str, T: NDArray[np.float64]) -> float:
    """The largest value a per-cluster distance can take (Ed: sqrt 2 between two probability
    vectors; zero-one Wd: 1; ordinal Wd: groups - 1), times the clusters for a sum."""
    one = np.sqrt(2.0) if kind == "ed" else (1.0 if kind == "wd-zero-one" else T.shape[0] - 1.0)
    return float(one * (T.shape[1] if metric.endswith("_sum") else 1))


def _max_interval(T: NDArray[np.float64], R: NDArray[np.float64], E: NDArray[np.float64],
                  ground: str, kind: str, conservative: Interval,
                  max_undefined: float) -> Interval | None:
    """The calibrated interval of max_k d_k (:mod:`fairaudit.metrics.distance_max`) from the
    per-cluster bootstrap error norms ``E`` (B x k, NaN where a cluster vanished from a
    replicate; those replicates are left out)."""
    from fairaudit.metrics.distance_max import max_distance_interval

    ok = np.isfinite(E).all(axis=1)
    if ok.sum() < 2 or (~ok).sum() > max_undefined * len(E):
        return None
    keep = R if ok.all() else R[ok]
    lower, upper, contact = max_distance_interval(
        T, keep, E[ok], ground, kind, conservative.level,
        (conservative.lower, conservative.upper))
    return Interval(lower=lower, upper=upper, level=conservative.level,
                    method=DISTANCE_MAX_METHOD, contact_cells=contact)
