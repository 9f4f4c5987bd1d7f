"""Sure bounds of the counting metrics when some counts of the table are only known to lie in
a range.

Disclosure control (:mod:`fairaudit.disclosure`) hides some counts of a group x cluster table.
Everything published about the hidden counts fits in a :class:`TableBox`: every count, every
group's total (the table's row sums), every cluster's size (column sums) and the total lie in
integer ranges. The functions here give, for each built-in counting metric, an interval that
contains the metric's value for *every* table in the box, by interval arithmetic on the parts
of its formula (shares, ratios, entropies, distances). Because the box is built from published
numbers alone, so is the interval: publishing it reveals nothing new, and the exact value is
inside it.

The intervals are sound, not tight: they may be wider than the range over tables that also
satisfy every sum exactly. With every count known (``lo == hi``) they collapse to the value.
numpy only, no I/O. Oracle: ``tests/metrics/test_bounds.py`` enumerates every table in small
boxes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["SUPPORTED", "MetricBounds", "TableBox", "metric_bounds", "per_cluster_bounds"]

Interval = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class MetricBounds:
    """What a counting auditor's ``bounds`` gives for one metric: bounds of the value and,
    optionally, of each cluster's value (arrays in the table's cluster order)."""

    lower: float
    upper: float
    per_cluster: tuple[np.ndarray, np.ndarray] | None = None


@dataclass(frozen=True)
class TableBox:
    """What is known of a group x cluster table (groups and clusters of the judged table;
    noise apart): every array holds integer lower and upper bounds."""

    lo: np.ndarray
    """(G, K) lower bounds of the counts."""
    hi: np.ndarray
    rows_lo: np.ndarray
    """(G,) bounds of each group's total over the clusters (noise excluded)."""
    rows_hi: np.ndarray
    cols_lo: np.ndarray
    """(K,) bounds of each cluster's size in the table (at least 1: clusters are present)."""
    cols_hi: np.ndarray
    n_lo: int
    n_hi: int
    noise_lo: int = 0
    """Bounds of the table's noise rows (FairDen's noise-adjusted balance)."""
    noise_hi: int = 0
    ordinal: bool = False

    @classmethod
    def exact(cls, counts: np.ndarray, noise: int = 0, ordinal: bool = False) -> TableBox:
        """The box of a fully known table (bounds collapse to the metric values)."""
        c = np.asarray(counts, dtype=np.int64)
        rows, cols = c.sum(axis=1), c.sum(axis=0)
        n = int(c.sum())
        return cls(c, c, rows, rows, cols, cols, n, n, int(noise), int(noise), ordinal)

    def tightened(self) -> TableBox:
        """Bounds of sums narrowed by the bounds of their terms, and back (one pass each)."""
        lo, hi = self.lo.astype(np.float64), self.hi.astype(np.float64)
        rows_lo = np.maximum(self.rows_lo, lo.sum(axis=1))
        rows_hi = np.minimum(self.rows_hi, hi.sum(axis=1))
        cols_lo = np.maximum(np.maximum(self.cols_lo, lo.sum(axis=0)), 1)
        cols_hi = np.minimum(self.cols_hi, hi.sum(axis=0))
        n_lo = max(self.n_lo, int(rows_lo.sum()), int(cols_lo.sum()))
        n_hi = min(self.n_hi, int(rows_hi.sum()), int(cols_hi.sum()))
        return TableBox(self.lo, self.hi, rows_lo.astype(np.int64), rows_hi.astype(np.int64),
                        cols_lo.astype(np.int64), cols_hi.astype(np.int64), n_lo, n_hi,
                        self.noise_lo, self.noise_hi, self.ordinal)

    @property
    def shape(self) -> tuple[int, int]:
        return self.lo.shape  # type: ignore[return-value]


# ============================================================================ building blocks
def _ratio_to_total(x_lo, x_hi, rest_lo, rest_hi) -> Interval:
    """x / (x + rest) for x, rest >= 0 in their ranges (increasing in x, decreasing in rest)."""
    x_lo, x_hi = np.asarray(x_lo, float), np.asarray(x_hi, float)
    rest_lo = np.maximum(np.asarray(rest_lo, float), 0.0)
    rest_hi = np.maximum(np.asarray(rest_hi, float), rest_lo)
    den_lo, den_hi = x_lo + rest_hi, x_hi + rest_lo
    lo = np.divide(x_lo, den_lo, out=np.zeros_like(x_lo), where=den_lo > 0)
    hi = np.divide(x_hi, den_hi, out=np.ones_like(x_hi), where=den_hi > 0)
    return np.clip(lo, 0.0, 1.0), np.clip(hi, 0.0, 1.0)


def _part_of_total(lo, hi, tot_lo, tot_hi, axis: int) -> Interval:
    """Each part / its sum along ``axis``: x / (x + rest), where the rest is bounded by the
    total minus x and by the other parts."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    t_lo = np.expand_dims(np.asarray(tot_lo, float), axis)
    t_hi = np.expand_dims(np.asarray(tot_hi, float), axis)
    others_lo = lo.sum(axis=axis, keepdims=True) - lo
    others_hi = hi.sum(axis=axis, keepdims=True) - hi
    rest_lo = np.maximum(t_lo - hi, others_lo)
    rest_hi = np.minimum(t_hi - lo, others_hi)
    return _ratio_to_total(lo, hi, rest_lo, rest_hi)


def cluster_shares(box: TableBox) -> Interval:
    """(G, K): share of each group in each cluster, N[g,k] / |k|."""
    return _part_of_total(box.lo, box.hi, box.cols_lo, box.cols_hi, axis=0)


def group_shares(box: TableBox) -> Interval:
    """(G,): each group's share of the table, |g| / n."""
    return _part_of_total(box.rows_lo, box.rows_hi, box.n_lo, box.n_hi, axis=0)


def group_fractions(box: TableBox) -> Interval:
    """(G, K): share of each group that each cluster holds, N[g,k] / |g|."""
    return _part_of_total(box.lo, box.hi, box.rows_lo, box.rows_hi, axis=1)


def cluster_fractions(box: TableBox) -> Interval:
    """(K,): each cluster's share of the table, |k| / n."""
    return _part_of_total(box.cols_lo, box.cols_hi, box.n_lo, box.n_hi, axis=0)


def _div(a_lo, a_hi, b_lo, b_hi) -> Interval:
    """a / b for a >= 0, b > 0 (b_lo == 0 gives an infinite upper end)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lo = np.where(b_hi > 0, a_lo / np.where(b_hi > 0, b_hi, 1.0), np.inf)
        hi = np.where(b_lo > 0, a_hi / np.where(b_lo > 0, b_lo, 1.0), np.inf)
    return lo, hi


def _min_inv(q_lo, q_hi) -> Interval:
    """min(q, 1/q) (0 at q = 0): rises to 1 at q = 1, then falls."""

    def f(q):
        with np.errstate(divide="ignore"):
            return np.where(q > 0, np.minimum(q, 1.0 / np.where(q > 0, q, 1.0)), 0.0)

    a, b = f(q_lo), f(q_hi)
    lo = np.minimum(a, b)
    hi = np.where((q_lo <= 1.0) & (q_hi >= 1.0), 1.0, np.maximum(a, b))
    return lo, hi


def _abs(d_lo, d_hi) -> Interval:
    lo = np.where((d_lo <= 0) & (d_hi >= 0), 0.0, np.minimum(np.abs(d_lo), np.abs(d_hi)))
    return lo, np.maximum(np.abs(d_lo), np.abs(d_hi))


def _neg_xlogx(p_lo, p_hi) -> Interval:
    """-p log p on [0, 1]: concave, largest at 1/e."""

    def h(p):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(p > 0, -p * np.log(np.where(p > 0, p, 1.0)), 0.0)

    a, b = h(p_lo), h(p_hi)
    top = math.exp(-1.0)
    hi = np.where((p_lo <= top) & (p_hi >= top), top, np.maximum(a, b))
    return np.minimum(a, b), hi


# ============================================================================ per cluster
def _balance(box: TableBox) -> Interval:
    p_lo, p_hi = cluster_shares(box)
    r_lo, r_hi = group_shares(box)
    q_lo, q_hi = _div(p_lo, p_hi, r_lo[:, None], r_hi[:, None])
    b_lo, b_hi = _min_inv(q_lo, q_hi)
    return b_lo.min(axis=0), b_hi.min(axis=0)


def _deviation(box: TableBox) -> Interval:
    p_lo, p_hi = cluster_shares(box)
    r_lo, r_hi = group_shares(box)
    return p_lo - r_hi[:, None], p_hi - r_lo[:, None]


def _ed(box: TableBox) -> Interval:
    d_lo, d_hi = _deviation(box)
    a_lo, a_hi = _abs(d_lo, d_hi)
    return np.sqrt((a_lo**2).sum(axis=0)), np.sqrt((a_hi**2).sum(axis=0))


def _wd_zero_one(box: TableBox) -> Interval:
    a_lo, a_hi = _abs(*_deviation(box))
    return 0.5 * a_lo.sum(axis=0), 0.5 * a_hi.sum(axis=0)


def _wd_ordinal(box: TableBox) -> Interval:
    # integral of |CDF_k - CDF_X| in unit steps; a prefix sum of deviations is also minus the
    # suffix sum (deviations add up to 0): both bounds hold, take the tighter
    d_lo, d_hi = _deviation(box)
    pre_lo, pre_hi = np.cumsum(d_lo, axis=0)[:-1], np.cumsum(d_hi, axis=0)[:-1]
    suf_lo = -np.cumsum(d_hi[::-1], axis=0)[::-1][1:]
    suf_hi = -np.cumsum(d_lo[::-1], axis=0)[::-1][1:]
    lo, hi = np.maximum(pre_lo, suf_lo), np.minimum(pre_hi, suf_hi)
    lo, hi = np.minimum(lo, hi), np.maximum(lo, hi)  # rounding can cross them by an ulp
    a_lo, a_hi = _abs(lo, hi)
    return a_lo.sum(axis=0), a_hi.sum(axis=0)


def _fairness_cce(box: TableBox) -> Interval:
    c = float(box.shape[1])
    g_lo, g_hi = group_fractions(box)
    v_lo, v_hi = _min_inv(c * g_lo, c * g_hi)
    return v_lo.min(axis=0), v_hi.min(axis=0)


def _nce(box: TableBox) -> Interval:
    h_lo, h_hi = _neg_xlogx(*cluster_shares(box))
    H_lo, H_hi = _neg_xlogx(*group_shares(box))
    hk_lo, hk_hi = h_lo.sum(axis=0), h_hi.sum(axis=0)
    H_lo, H_hi = float(H_lo.sum()), float(H_hi.sum())
    if H_lo <= 0:
        return np.zeros_like(hk_lo), np.full_like(hk_hi, np.inf)
    return hk_lo / H_hi, hk_hi / H_lo


def _fce_fair(box: TableBox) -> Interval:
    lo, hi = box.lo.astype(float), box.hi.astype(float)
    top_lo, top_hi = lo.max(axis=0), hi.max(axis=0)
    low_lo, low_hi = lo.min(axis=0), hi.min(axis=0)
    r_lo = np.divide(low_lo, top_hi, out=np.zeros_like(low_lo), where=top_hi > 0)
    r_hi = np.divide(low_hi, top_lo, out=np.ones_like(low_hi), where=top_lo > 0)
    return r_lo, np.minimum(r_hi, 1.0)


def _balance_prime(box: TableBox) -> Interval:
    p_lo, p_hi = cluster_shares(box)
    return p_lo.min(axis=0), p_hi.min(axis=0)


def _proportion(box: TableBox) -> Interval:
    p_lo, p_hi = cluster_shares(box)
    return p_lo.max(axis=0), p_hi.max(axis=0)


_PER_CLUSTER: dict[str, Callable[[TableBox], Interval]] = {
    "balance": _balance,
    "ed": _ed,
    "wd:zero-one": _wd_zero_one,
    "wd:ordinal": _wd_ordinal,
    "fairness_cce": _fairness_cce,
    "nce": _nce,
    "fce_fair": _fce_fair,
    "balance_prime": _balance_prime,
    "proportion": _proportion,
}


def per_cluster_bounds(kind: str, box: TableBox) -> Interval:
    """Bounds of a per-cluster value for each cluster: ``kind`` is one of ``balance``, ``ed``,
    ``wd:zero-one``, ``wd:ordinal``, ``fairness_cce``, ``nce``, ``fce_fair``,
    ``balance_prime``, ``proportion``."""
    lo, hi = _PER_CLUSTER[kind](box.tightened())
    return np.asarray(lo, float), np.asarray(hi, float)


# ============================================================================ aggregates
def _weighted_mean_low(v: np.ndarray, w_lo: np.ndarray, w_hi: np.ndarray) -> float:
    """min over weights w in [w_lo, w_hi] (w > 0) of sum(w v) / sum(w): at a vertex with the
    largest weights on the smallest values, so one of the len(v) + 1 splits of sorted v."""
    order = np.argsort(v, kind="stable")
    v, w_lo, w_hi = v[order], w_lo[order].astype(float), w_hi[order].astype(float)
    best = math.inf
    for t in range(len(v) + 1):
        w = np.concatenate([w_hi[:t], w_lo[t:]])
        s = w.sum()
        if s > 0:
            best = min(best, float((w * v).sum() / s))
    return best


def _aggregate(lo: np.ndarray, hi: np.ndarray, how: str, box: TableBox) -> tuple[float, float]:
    if how == "min":
        return float(lo.min()), float(hi.min())
    if how == "max":
        return float(lo.max()), float(hi.max())
    if how == "sum":
        return float(lo.sum()), float(hi.sum())
    if how == "mean":
        return float(lo.mean()), float(hi.mean())
    # size-weighted mean
    w_lo, w_hi = box.cols_lo, box.cols_hi
    return _weighted_mean_low(lo, w_lo, w_hi), -_weighted_mean_low(-hi, w_lo, w_hi)


# metric -> (per-cluster kind, aggregate over clusters)
_METRICS: dict[str, tuple[str, str]] = {
    "balance": ("balance", "min"),
    "balance_mean": ("balance", "mean"),
    "ed": ("ed", "weighted"),
    "ed_max": ("ed", "max"),
    "ed_sum": ("ed", "sum"),
    "wd": ("wd", "weighted"),
    "wd_max": ("wd", "max"),
    "wd_sum": ("wd", "sum"),
    "fairness_cce": ("fairness_cce", "min"),
    "mnce": ("nce", "min"),
    "fce_fair": ("fce_fair", "min"),
    "balance_prime": ("balance_prime", "min"),
    "proportion": ("proportion", "sum"),
}
SUPPORTED = frozenset(_METRICS) | {"balance_noise_adjusted", "cce", "ne"}
"""Metrics of the built-in counting auditors with bounds (``wd`` only for the zero-one and
ordinal grounds)."""


def metric_bounds(metric: str, box: TableBox, *, wd_ground: str = "zero-one"
                  ) -> tuple[float, float] | None:
    """Bounds of a built-in counting metric over every table in ``box``; ``None`` when the
    metric has none (unknown metric, FairKM's order-blind Wd, an unbounded end)."""
    box = box.tightened()
    if box.n_lo > box.n_hi or np.any(box.cols_lo > box.cols_hi) or np.any(box.lo > box.hi):
        raise ValueError("empty box: its bounds contradict each other")
    out: tuple[float, float] | None
    if metric == "cce":
        lo = float(box.cols_lo.min()) / float(box.cols_hi.max())
        hi = min(1.0, float(box.cols_hi.min()) / float(box.cols_lo.max()))
        out = (lo, hi)
    elif metric == "ne":
        k = box.shape[1]
        if k < 2:
            return None
        h_lo, h_hi = _neg_xlogx(*cluster_fractions(box))
        out = (float(h_lo.sum()) / math.log(k), float(h_hi.sum()) / math.log(k))
    elif metric == "balance_noise_adjusted":
        m = metric_bounds("balance_mean", box)
        if m is None:
            return None
        f_lo, f_hi = _ratio_to_total(box.n_lo, box.n_hi, box.noise_lo, box.noise_hi)
        out = (m[0] * float(f_lo), m[1] * float(f_hi))
    elif metric in _METRICS:
        kind, how = _METRICS[metric]
        if kind == "wd":
            if wd_ground not in ("zero-one", "ordinal"):
                return None
            kind = f"wd:{wd_ground}"
        lo, hi = _PER_CLUSTER[kind](box)
        out = _aggregate(np.asarray(lo, float), np.asarray(hi, float), how, box)
    else:
        return None
    if not all(math.isfinite(v) for v in out):
        return None
    return out
