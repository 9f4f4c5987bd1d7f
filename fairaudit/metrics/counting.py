"""Counting fairness metrics: functions of a (groups x clusters) contingency table alone.

One unit: every metric of one contingency table, each a small pure function over the same
validated (groups x clusters) array.

Every metric here takes ``N``, an array of non-negative counts with one row per group of a
sensitive attribute (or per intersectional group) and one column per cluster, ``N[g, k]`` = rows
of group ``g`` in cluster ``k``. Noise rows (label -1) are not part of ``N``.

Two input shapes are accepted:

* a single table of shape ``(g, k)``: every row and every column must have a positive sum (the
  host drops empty groups/clusters and noise before calling); a violation raises ``ValueError``.
  Scalar metrics return a Python ``float``, per-cluster metrics an array of shape ``(k,)``.
* a stack of tables of shape ``(B, g, k)`` (e.g. bootstrap replicates): empty rows and columns
  are allowed, and each table is scored exactly as the host would score a dataset with those
  counts, i.e. as if its empty rows and columns had been dropped (the one exception is the
  ``ordinal`` ground metric of :func:`wd_per_cluster`, where rows keep their declared position).
  Per-cluster values of an empty cluster are NaN; a table whose remaining shape leaves a metric
  undefined gives NaN. Scalar metrics return shape ``(B,)``, per-cluster metrics ``(B, k)``.

Undefined values are NaN, never 0. Formulas, directions, ranges and references are in
``docs/metrics.md``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

logger = logging.getLogger(__name__)

__all__ = [
    "METRICS",
    "BalanceResult",
    "ContingencyTable",
    "MetricInfo",
    "aggregate",
    "balance",
    "balance_mean",
    "balance_min",
    "balance_per_cluster",
    "balance_prime",
    "balance_prime_per_cluster",
    "cce",
    "contingency_table",
    "ed",
    "ed_per_cluster",
    "fairness_cce",
    "fairness_cce_per_cluster",
    "fce_fair",
    "fce_fair_per_cluster",
    "marginalize",
    "mnce",
    "nce_per_cluster",
    "ne",
    "noise_adjusted_balance",
    "proportion",
    "proportion_per_cluster",
    "wd",
    "wd_per_cluster",
]

Ground = Literal["zero-one", "ordinal", "fairkm-compat"]
How = Literal["weighted-mean", "max", "sum"]
_GROUNDS = ("zero-one", "ordinal", "fairkm-compat")
_HOWS = ("weighted-mean", "max", "sum")

FloatOrArray = float | NDArray[np.float64]


# --------------------------------------------------------------------------------------------
# metadata
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MetricInfo:
    """Direction, range and source of one scalar metric (see ``docs/metrics.md``)."""

    name: str
    higher_is_better: bool
    lower: float
    upper: float | None  # None: depends on the table shape (see ``range_note``)
    range_note: str
    reference: str


METRICS: dict[str, MetricInfo] = {
    m.name: m
    for m in (
        MetricInfo(
            "balance_min", True, 0.0, 1.0, "[0, 1]", "FairDen eq. 6-7; Bera et al. 2019 (min)"
        ),
        MetricInfo("balance_mean", True, 0.0, 1.0, "[0, 1]", "FairDen eq. 6-7 and Sect. 3.2"),
        MetricInfo("noise_adjusted_balance", True, 0.0, 1.0, "[0, 1]", "FairDen Sect. 3.2 (noise)"),
        MetricInfo("ed", False, 0.0, float(np.sqrt(2.0)), "[0, sqrt 2]", "FFCM Sect. 5.2"),
        MetricInfo(
            "wd",
            False,
            0.0,
            None,
            "[0, 1] (zero-one, fairkm-compat); [0, span] (ordinal)",
            "FFCM 5.2",
        ),
        MetricInfo("cce", True, 0.0, 1.0, "[0, 1]", "FCE Definition 2"),
        MetricInfo("fairness_cce", True, 0.0, 1.0, "[0, 1]", "FCE Definition 3"),
        MetricInfo("mnce", True, 0.0, 1.0, "[0, 1]", "FCE notes (MNCE)"),
        MetricInfo("ne", True, 0.0, 1.0, "[0, 1]", "FCE notes (NE)"),
        MetricInfo("fce_fair", True, 0.0, 1.0, "[0, 1]", "FCE authors' code ('fair')"),
        MetricInfo("balance_prime", True, 0.0, None, "[0, 1/g]", "FUFS eq. 7 (Balance)"),
        MetricInfo("proportion", False, 0.0, None, "[k/g, k]", "FUFS eq. 7 (Proportion)"),
    )
}


# --------------------------------------------------------------------------------------------
# validation and shared pieces
# --------------------------------------------------------------------------------------------
def _tables(N: ArrayLike, name: str = "N") -> tuple[NDArray[np.float64], bool]:
    """Return ``(stack of shape (B, g, k), was_single_table)`` after validation."""
    try:
        arr = np.asarray(N, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"The '{name}' parameter must be an array of non-negative counts; got {type(N)!r}."
        ) from exc
    if arr.ndim not in (2, 3):
        raise ValueError(
            f"The '{name}' parameter must have shape (groups, clusters) or "
            f"(B, groups, clusters); got shape {arr.shape}."
        )
    if arr.shape[-2] < 1 or arr.shape[-1] < 1:
        raise ValueError(
            f"The '{name}' parameter must have at least one group and one cluster; "
            f"got shape {arr.shape}."
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"The '{name}' parameter must contain only finite counts; got NaN/inf.")
    if np.any(arr < 0):
        raise ValueError(
            f"The '{name}' parameter must contain non-negative counts; got minimum {arr.min()}."
        )
    single = arr.ndim == 2
    if single:
        rows = np.flatnonzero(arr.sum(axis=1) <= 0)
        if rows.size:
            raise ValueError(
                f"Every row (group) of '{name}' must have a positive sum; rows {rows.tolist()} "
                "are empty. Drop empty groups before calling."
            )
        cols = np.flatnonzero(arr.sum(axis=0) <= 0)
        if cols.size:
            raise ValueError(
                f"Every column (cluster) of '{name}' must have a positive sum; columns "
                f"{cols.tolist()} are empty. Drop empty clusters and noise before calling."
            )
        arr = arr[None]
    return arr, single


def _out(x: NDArray[np.float64], single: bool) -> FloatOrArray:
    """Unwrap the batch axis for single-table input (scalars become Python floats)."""
    if single:
        x = x[0]
        return float(x) if x.ndim == 0 else x
    return x


@dataclass(frozen=True)
class _Parts:
    N: NDArray[np.float64]  # (B, g, k)
    rows: NDArray[np.float64]  # (B, g) group sizes
    cols: NDArray[np.float64]  # (B, k) cluster sizes
    n: NDArray[np.float64]  # (B,)
    gp: NDArray[np.bool_]  # (B, g) group present
    cp: NDArray[np.bool_]  # (B, k) cluster present


def _parts(T: NDArray[np.float64]) -> _Parts:
    rows = T.sum(axis=2)
    cols = T.sum(axis=1)
    n = rows.sum(axis=1)
    return _Parts(T, rows, cols, n, rows > 0, cols > 0)


def _div(a: ArrayLike, b: ArrayLike) -> NDArray[np.float64]:
    """a / b with NaN where b == 0 (no warnings)."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    out = np.full(a.shape, np.nan)
    np.divide(a, b, out=out, where=b != 0)
    return out


def _min_present_groups(vals: NDArray[np.float64], p: _Parts) -> NDArray[np.float64]:
    """Min over present groups (axis 1) of (B, g, k); NaN for empty clusters."""
    v = np.where(p.gp[:, :, None], vals, np.inf)
    out = v.min(axis=1)
    return np.where(p.cp, out, np.nan)


def _max_present_groups(vals: NDArray[np.float64], p: _Parts) -> NDArray[np.float64]:
    v = np.where(p.gp[:, :, None], vals, -np.inf)
    out = v.max(axis=1)
    return np.where(p.cp, out, np.nan)


def _over_present_clusters(
    per: NDArray[np.float64], p: _Parts, how: Literal["min", "mean", "sum"]
) -> NDArray[np.float64]:
    """Reduce per-cluster values (B, k) over present clusters; NaN values there propagate."""
    mask = p.cp
    cnt = mask.sum(axis=1)
    if how == "min":
        out = np.where(mask, per, np.inf).min(axis=1)
    elif how == "sum":
        out = np.where(mask, per, 0.0).sum(axis=1)
    else:
        out = _div(np.where(mask, per, 0.0).sum(axis=1), cnt)
    # NaN in a present cluster propagates (min() with inf fill would hide it)
    bad = np.any(mask & np.isnan(per), axis=1)
    out = np.where(bad | (cnt == 0), np.nan, out)
    return out


# --------------------------------------------------------------------------------------------
# building tables
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ContingencyTable:
    """A contingency table built from row-level arrays by :func:`contingency_table`.

    ``counts[g, k]`` = rows of group ``groups[g]`` in cluster ``clusters[k]``; noise rows are
    not in ``counts`` and are counted in ``n_noise``. For intersectional input ``groups`` holds
    one tuple of attribute values per row of ``counts``.
    """

    counts: NDArray[np.int64]
    groups: tuple[object, ...]
    clusters: tuple[object, ...]
    n_noise: int


def contingency_table(
    groups: ArrayLike, labels: ArrayLike, *, noise_label: int | None = -1
) -> ContingencyTable:
    """Count rows per (group, cluster).

    Parameters
    ----------
    groups : array of shape (n,) or (n, a)
        Group of each row; with ``a`` columns (several sensitive attributes) the groups are the
        intersectional tuples present in the data. Must not contain nulls.
    labels : array of shape (n,)
        Cluster label of each row.
    noise_label : int or None
        Rows with this label are excluded and counted in ``n_noise``; None keeps every row.

    Only groups and clusters that occur (outside noise) appear, sorted; so every row and column
    of ``counts`` has a positive sum, as the metrics require. This is the numpy counterpart of
    the host's group-by; tables of disjoint row partitions add up to the table of the whole
    (given the same group/cluster universe).
    """
    g = np.asarray(groups)
    lab = np.asarray(labels)
    if lab.ndim != 1:
        raise ValueError(f"The 'labels' parameter must be 1-D; got shape {lab.shape}.")
    if g.ndim not in (1, 2) or g.shape[0] != lab.shape[0]:
        raise ValueError(
            f"The 'groups' parameter must have shape (n,) or (n, attributes) with n = "
            f"len(labels) = {lab.shape[0]}; got shape {g.shape}."
        )
    keep = np.ones(lab.shape[0], dtype=bool)
    n_noise = 0
    if noise_label is not None:
        keep = lab != noise_label
        n_noise = int((~keep).sum())
    g, lab = g[keep], lab[keep]
    if g.ndim == 2:
        # each attribute coded on its own (np.unique(axis=0) refuses object arrays, such as
        # pandas' or polars' to_numpy() of text columns), then the rows of codes
        cols = [np.unique(g[:, j], return_inverse=True) for j in range(g.shape[1])]
        codes = np.stack([inv.reshape(-1) for _, inv in cols], axis=1) if cols else \
            np.zeros((g.shape[0], 0), dtype=np.int64)
        rows, gcode = np.unique(codes, axis=0, return_inverse=True)
        gkeys: tuple[object, ...] = tuple(
            tuple(cols[j][0][r[j]].item() if hasattr(cols[j][0][r[j]], "item")
                  else cols[j][0][r[j]] for j in range(len(cols))) for r in rows)
    else:
        gvals, gcode = np.unique(g, return_inverse=True)
        gkeys = tuple(gvals.tolist())
    cvals, ccode = np.unique(lab, return_inverse=True)
    counts = np.zeros((len(gkeys), len(cvals)), dtype=np.int64)
    np.add.at(counts, (gcode.ravel(), ccode.ravel()), 1)
    return ContingencyTable(counts, gkeys, tuple(cvals.tolist()), n_noise)


def marginalize(
    N: ArrayLike, row_codes: Sequence[int] | ArrayLike, n_rows: int | None = None
) -> NDArray[np.generic]:
    """Sum rows of ``N`` (shape (..., g, k)) into ``n_rows`` rows: row ``i`` goes to
    ``row_codes[i]``.

    Use it to go from the joint (intersectional) table, e.g. of each bootstrap replicate, to the
    table of one attribute: for groups ``female|asian, female|white, male|asian, male|white`` the
    codes ``[0, 0, 1, 1]`` give the ``sex`` table and ``[0, 1, 0, 1]`` the ``race`` table.
    Returns an array of shape (..., n_rows, k) with the dtype of ``N``.
    """
    arr = np.asarray(N)
    codes = np.asarray(row_codes)
    if arr.ndim < 2:
        raise ValueError(f"The 'N' parameter must be at least 2-D; got shape {arr.shape}.")
    if (
        codes.ndim != 1
        or codes.shape[0] != arr.shape[-2]
        or not np.issubdtype(codes.dtype, np.integer)
    ):
        raise ValueError(
            f"The 'row_codes' parameter must be {arr.shape[-2]} integers (one per row of N); "
            f"got shape {codes.shape} of dtype {codes.dtype}."
        )
    m = int(codes.max()) + 1 if n_rows is None else int(n_rows)
    if codes.size and (codes.min() < 0 or codes.max() >= m):
        raise ValueError(
            f"The 'row_codes' parameter must lie in [0, {m - 1}]; got range "
            f"[{codes.min()}, {codes.max()}]."
        )
    onehot = np.zeros((m, codes.shape[0]), dtype=arr.dtype)
    onehot[codes, np.arange(codes.shape[0])] = 1
    return np.matmul(onehot, arr)


# --------------------------------------------------------------------------------------------
# balance (FairDen eq. 6-7; Chierichetti et al. 2017; Bera et al. 2019)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BalanceResult:
    """Balance of a clustering: ``min`` (Chierichetti/Bera) and ``mean`` (FairDen) over
    clusters, and the per-cluster values. Fields are arrays for a stack of tables."""

    min: FloatOrArray
    mean: FloatOrArray
    per_cluster: NDArray[np.float64]


def _balance_pc(p: _Parts) -> NDArray[np.float64]:
    # r_g(k) / r_g = (N[g,k]/|k|) / (|g|/n) = N[g,k] * n / (|k| * |g|)
    q = _div(p.N * p.n[:, None, None], p.cols[:, None, :] * p.rows[:, :, None])
    with np.errstate(divide="ignore"):
        inv = np.where(q > 0, 1.0 / np.where(q > 0, q, 1.0), 0.0)
    b = np.where(q > 0, np.minimum(q, inv), 0.0)
    return _min_present_groups(b, p)


def balance_per_cluster(N: ArrayLike) -> NDArray[np.float64]:
    """balance(k) = min_g min(r_g / r_g(k), r_g(k) / r_g) with r_g = |g|/n and
    r_g(k) = N[g,k]/|k|; 0 when a group is absent from the cluster (FairDen eq. 6-7)."""
    T, single = _tables(N)
    return _out(_balance_pc(_parts(T)), single)


def balance(N: ArrayLike) -> BalanceResult:
    """Per-cluster balance with its minimum and (unweighted) mean over clusters."""
    T, single = _tables(N)
    p = _parts(T)
    pc = _balance_pc(p)
    return BalanceResult(
        min=_out(_over_present_clusters(pc, p, "min"), single),
        mean=_out(_over_present_clusters(pc, p, "mean"), single),
        per_cluster=_out(pc, single),
    )


def balance_min(N: ArrayLike) -> FloatOrArray:
    """Minimum over clusters of the per-cluster balance (Chierichetti/Bera convention)."""
    T, single = _tables(N)
    p = _parts(T)
    return _out(_over_present_clusters(_balance_pc(p), p, "min"), single)


def balance_mean(N: ArrayLike) -> FloatOrArray:
    """Mean over clusters of the per-cluster balance (FairDen's reported value)."""
    T, single = _tables(N)
    p = _parts(T)
    return _out(_over_present_clusters(_balance_pc(p), p, "mean"), single)


def noise_adjusted_balance(
    N: ArrayLike, n_noise: int | ArrayLike, *, how: Literal["mean", "min"] = "mean"
) -> FloatOrArray:
    """FairDen's noise-adjusted balance: balance computed without noise rows (``N``) times the
    non-noise fraction n / (n + n_noise). ``how="mean"`` (default) adjusts the mean over
    clusters, as FairDen's tables do; ``how="min"`` adjusts the minimum.

    ``n_noise`` is an int, or an array of shape (B,) for a stack of tables.
    """
    if how not in ("mean", "min"):
        raise ValueError(f"The 'how' parameter must be 'mean' or 'min'; got {how!r}.")
    T, single = _tables(N)
    noise = np.asarray(n_noise, dtype=np.float64)
    if (
        noise.ndim > 1
        or (noise.ndim == 1 and noise.shape[0] != T.shape[0])
        or (single and noise.ndim != 0)
    ):
        raise ValueError(
            "The 'n_noise' parameter must be a non-negative number (or one per table for a "
            f"stack of tables); got shape {noise.shape}."
        )
    if not np.all(np.isfinite(noise)) or np.any(noise < 0):
        raise ValueError(f"The 'n_noise' parameter must be a non-negative count; got {n_noise!r}.")
    p = _parts(T)
    val = _over_present_clusters(_balance_pc(p), p, how)
    frac = _div(p.n, p.n + noise)
    return _out(val * frac, single)


# --------------------------------------------------------------------------------------------
# Ed / Wd (FFCM Sect. 5.2, from FairKM)
# --------------------------------------------------------------------------------------------
def _shares(p: _Parts) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    px = _div(p.rows, p.n[:, None])[:, :, None]  # (B, g, 1) dataset distribution
    pk = _div(p.N, p.cols[:, None, :])  # (B, g, k) cluster distributions (NaN if empty)
    return px, pk


def _ed_pc(p: _Parts) -> NDArray[np.float64]:
    px, pk = _shares(p)
    return np.sqrt(((pk - px) ** 2).sum(axis=1))


def ed_per_cluster(N: ArrayLike) -> NDArray[np.float64]:
    """Ed_k = || P_k - P_X ||_2: Euclidean distance between cluster k's group distribution and
    the dataset's (FFCM Sect. 5.2). 0 for a cluster that mirrors the population."""
    T, single = _tables(N)
    return _out(_ed_pc(_parts(T)), single)


def _positions(positions: ArrayLike | None, g: int) -> NDArray[np.float64] | None:
    if positions is None:
        return None
    pos = np.asarray(positions, dtype=np.float64)
    if pos.shape != (g,) or not np.all(np.isfinite(pos)) or np.any(np.diff(pos) <= 0):
        raise ValueError(
            f"The 'positions' parameter must be {g} finite, strictly increasing numbers (the "
            f"declared rank of each row of N); got {np.asarray(positions).tolist()!r}."
        )
    return pos


def _wd_pc(
    p: _Parts, ground: str, positions: NDArray[np.float64] | None = None
) -> NDArray[np.float64]:
    px, pk = _shares(p)
    if ground == "zero-one":
        return 0.5 * np.abs(pk - px).sum(axis=1)
    if ground == "ordinal":
        # EMD on a line = integral of |CDF_k - CDF_X|: sum over the gaps between consecutive
        # rows of |CDF difference| x gap (gap 1 by default). Rows keep their position even when
        # empty in a stacked table.
        diff = np.abs(np.cumsum(pk - px, axis=1)[:, :-1, :])
        if positions is None:
            return diff.sum(axis=1)
        return (diff * np.diff(positions)[None, :, None]).sum(axis=1)
    # fairkm-compat: scipy.stats.wasserstein_distance(P_X, P_k) with the two probability
    # vectors (over the groups present in the data) treated as equal-size samples:
    # W1 = mean_i |sort(P_k)_i - sort(P_X)_i|. Absent groups are 0 in both vectors and sort
    # to the bottom, so they add (0, 0) pairs; we divide by the number of present groups.
    sx = np.sort(np.broadcast_to(px, pk.shape), axis=1)
    sk = np.sort(pk, axis=1)
    m = p.gp.sum(axis=1)[:, None]
    return _div(np.abs(sk - sx).sum(axis=1), m)


def wd_per_cluster(
    N: ArrayLike, ground: Ground = "zero-one", *, positions: ArrayLike | None = None
) -> NDArray[np.float64]:
    """Wd_k: earth mover's distance between cluster k's group distribution and the dataset's.

    ground="zero-one" (default): 0/1 ground metric = total variation 1/2 ||P_k - P_X||_1.
    ground="ordinal": |i - j| over the row order of ``N`` (the attribute's declared order), or
    |positions[i] - positions[j]| when ``positions`` (strictly increasing, one per row) is
    given, e.g. the declared ranks of the groups kept in the table, so that a declared level
    with no rows still counts as a step.
    ground="fairkm-compat": ``scipy.stats.wasserstein_distance(P_X, P_k)`` on the probability
    vectors as *samples*, as FairKM's code does; it ignores which group is which
    ([.7, .3] vs [.3, .7] scores 0). Only for comparing with published tables.
    """
    if ground not in _GROUNDS:
        raise ValueError(f"The 'ground' parameter must be one of {_GROUNDS}; got {ground!r}.")
    T, single = _tables(N)
    pos = _positions(positions, T.shape[1])
    if pos is not None and ground != "ordinal":
        raise ValueError(
            f"The 'positions' parameter only applies to ground='ordinal'; got ground={ground!r}."
        )
    return _out(_wd_pc(_parts(T), ground, pos), single)


def _aggregate(
    values: NDArray[np.float64], sizes: NDArray[np.float64], how: str
) -> NDArray[np.float64]:
    mask = sizes > 0
    cnt = mask.sum(axis=-1)
    v = np.where(mask, values, 0.0)
    if how == "weighted-mean":
        out = _div((v * sizes).sum(axis=-1), np.where(mask, sizes, 0.0).sum(axis=-1))
    elif how == "max":
        out = np.where(mask, values, -np.inf).max(axis=-1)
    else:
        out = v.sum(axis=-1)
    bad = np.any(mask & np.isnan(values), axis=-1)
    return np.where(bad | (cnt == 0), np.nan, out)


def aggregate(values: ArrayLike, sizes: ArrayLike, how: How = "weighted-mean") -> FloatOrArray:
    """Aggregate per-cluster distances over clusters.

    how="weighted-mean": sum_k |k| d_k / n (FairKM's "average"); "max": max_k d_k;
    "sum": sum_k d_k. Clusters of size 0 are skipped (their value may be NaN); a NaN value in a
    non-empty cluster makes the result NaN. ``values`` and ``sizes`` have shape (k,) (returns a
    float) or (B, k) (returns shape (B,)).
    """
    if how not in _HOWS:
        raise ValueError(f"The 'how' parameter must be one of {_HOWS}; got {how!r}.")
    v = np.asarray(values, dtype=np.float64)
    s = np.asarray(sizes, dtype=np.float64)
    if v.shape != s.shape or v.ndim not in (1, 2) or v.shape[-1] < 1:
        raise ValueError(
            "The 'values' and 'sizes' parameters must have the same shape (k,) or (B, k); "
            f"got {v.shape} and {s.shape}."
        )
    if not np.all(np.isfinite(s)) or np.any(s < 0):
        raise ValueError("The 'sizes' parameter must contain finite non-negative cluster sizes.")
    out = _aggregate(v, s, how)
    return float(out) if v.ndim == 1 else out


def ed(N: ArrayLike, how: How = "weighted-mean") -> FloatOrArray:
    """Ed aggregated over clusters (see :func:`ed_per_cluster` and :func:`aggregate`)."""
    if how not in _HOWS:
        raise ValueError(f"The 'how' parameter must be one of {_HOWS}; got {how!r}.")
    T, single = _tables(N)
    p = _parts(T)
    return _out(_aggregate(_ed_pc(p), p.cols, how), single)


def wd(
    N: ArrayLike,
    ground: Ground = "zero-one",
    how: How = "weighted-mean",
    *,
    positions: ArrayLike | None = None,
) -> FloatOrArray:
    """Wd aggregated over clusters (see :func:`wd_per_cluster` and :func:`aggregate`)."""
    if ground not in _GROUNDS:
        raise ValueError(f"The 'ground' parameter must be one of {_GROUNDS}; got {ground!r}.")
    if how not in _HOWS:
        raise ValueError(f"The 'how' parameter must be one of {_HOWS}; got {how!r}.")
    T, single = _tables(N)
    pos = _positions(positions, T.shape[1])
    if pos is not None and ground != "ordinal":
        raise ValueError(
            f"The 'positions' parameter only applies to ground='ordinal'; got ground={ground!r}."
        )
    p = _parts(T)
    return _out(_aggregate(_wd_pc(p, ground, pos), p.cols, how), single)


# --------------------------------------------------------------------------------------------
# CCE family (FCE, seed 003)
# --------------------------------------------------------------------------------------------
def cce(N: ArrayLike) -> FloatOrArray:
    """Cluster capacity equality: min over cluster pairs of |pi_i| / |pi_j| = smallest cluster
    size / largest (FCE Definition 2). 1 for a single cluster (trivially equal)."""
    T, single = _tables(N)
    p = _parts(T)
    lo = np.where(p.cp, p.cols, np.inf).min(axis=1)
    hi = p.cols.max(axis=1)
    return _out(_div(lo, hi), single)


def _fairness_cce_pc(p: _Parts) -> NDArray[np.float64]:
    c = p.cp.sum(axis=1)[:, None, None]
    x = c * _div(p.N, p.rows[:, :, None])  # c * gamma_i(k), gamma_i(k) = N[i,k] / |G_i|
    x = np.where(np.isnan(x), 0.0, x)  # absent groups are excluded below anyway
    with np.errstate(divide="ignore"):
        inv = np.where(x > 0, 1.0 / np.where(x > 0, x, 1.0), 0.0)
    v = np.where(x > 0, np.minimum(x, inv), 0.0)
    return _min_present_groups(v, p)


def fairness_cce_per_cluster(N: ArrayLike) -> NDArray[np.float64]:
    """fairness_CCE(pi_k) = min_i min(c gamma_i(k), 1 / (c gamma_i(k))), gamma_i(k) =
    N[i,k]/|G_i|, c clusters; 0 when group i is absent from cluster k (FCE Definition 3)."""
    T, single = _tables(N)
    return _out(_fairness_cce_pc(_parts(T)), single)


def fairness_cce(N: ArrayLike) -> FloatOrArray:
    """fairness_CCE of the clustering: min over clusters (FCE Definition 3)."""
    T, single = _tables(N)
    p = _parts(T)
    return _out(_over_present_clusters(_fairness_cce_pc(p), p, "min"), single)


def _xlogx(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """x log x with 0 log 0 = 0 (NaN stays NaN)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = x * np.log(np.where(x > 0, x, 1.0))
    return np.where(np.isnan(x), np.nan, out)


def _nce_pc(p: _Parts) -> NDArray[np.float64]:
    px, pk = _shares(p)
    h = -_xlogx(px[:, :, 0]).sum(axis=1)  # H(group), natural log
    hk = -_xlogx(pk).sum(axis=1)  # H(group | cluster k)
    hk = np.where(p.cp, hk, np.nan)
    h = np.where(h > 0, h, np.nan)  # one present group: undefined
    return hk / h[:, None]


def nce_per_cluster(N: ArrayLike) -> NDArray[np.float64]:
    """Normalised conditional entropy of each cluster: H(group | cluster k) / H(group)
    (natural log, 0 log 0 = 0). NaN when H(group) = 0 (a single group)."""
    T, single = _tables(N)
    return _out(_nce_pc(_parts(T)), single)


def mnce(N: ArrayLike) -> FloatOrArray:
    """Minimal normalised conditional entropy: min_k H(group | cluster k) / H(group) (FCE
    notes). In [0, 1]; 1 iff every cluster mirrors the population. NaN when H(group) = 0."""
    T, single = _tables(N)
    p = _parts(T)
    return _out(_over_present_clusters(_nce_pc(p), p, "min"), single)


def ne(N: ArrayLike) -> FloatOrArray:
    """Normalised entropy of cluster sizes: -(1/log c) sum_k (n_k/n) log(n_k/n) (FCE notes).
    In [0, 1], 1 for equal sizes. NaN with a single cluster (log 1 = 0)."""
    T, single = _tables(N)
    p = _parts(T)
    c = p.cp.sum(axis=1).astype(np.float64)
    h = -_xlogx(_div(p.cols, p.n[:, None])).sum(axis=1)
    with np.errstate(divide="ignore"):
        logc = np.where(c >= 2, np.log(np.where(c >= 2, c, 2.0)), np.nan)
    return _out(h / logc, single)


def _fce_fair_pc(p: _Parts) -> NDArray[np.float64]:
    lo = _min_present_groups(p.N, p)
    hi = _max_present_groups(p.N, p)
    return _div(lo, hi)


def fce_fair_per_cluster(N: ArrayLike) -> NDArray[np.float64]:
    """min_g N[g,k] / max_g N[g,k] on raw counts (the FCE authors' code)."""
    T, single = _tables(N)
    return _out(_fce_fair_pc(_parts(T)), single)


def fce_fair(N: ArrayLike) -> FloatOrArray:
    """The FCE code's "fair": min over clusters of min_g N[g,k] / max_g N[g,k] (raw counts)."""
    T, single = _tables(N)
    p = _parts(T)
    return _out(_over_present_clusters(_fce_fair_pc(p), p, "min"), single)


# --------------------------------------------------------------------------------------------
# FUFS (seed 004, eq. 7)
# --------------------------------------------------------------------------------------------
def balance_prime_per_cluster(N: ArrayLike) -> NDArray[np.float64]:
    """min_g N[g,k] / |k|: the smallest group share in cluster k."""
    T, single = _tables(N)
    p = _parts(T)
    return _out(_div(_min_present_groups(p.N, p), p.cols), single)


def balance_prime(N: ArrayLike) -> FloatOrArray:
    """FUFS's Balance' = min_k min_g N[g,k] / |k| (FUFS eq. 7). In [0, 1/g]; higher is fairer."""
    T, single = _tables(N)
    p = _parts(T)
    pc = _div(_min_present_groups(p.N, p), p.cols)
    return _out(_over_present_clusters(pc, p, "min"), single)


def proportion_per_cluster(N: ArrayLike) -> NDArray[np.float64]:
    """max_g N[g,k] / |k|: the largest group share in cluster k."""
    T, single = _tables(N)
    p = _parts(T)
    return _out(_div(_max_present_groups(p.N, p), p.cols), single)


def proportion(N: ArrayLike) -> FloatOrArray:
    """FUFS's Proportion = sum_k max_g N[g,k] / |k| (FUFS eq. 7). In [k/g, k]; lower is
    fairer."""
    T, single = _tables(N)
    p = _parts(T)
    pc = _div(_max_present_groups(p.N, p), p.cols)
    return _out(_over_present_clusters(pc, p, "sum"), single)
