"""Local connectivity disagreement (LCD; Deepak P, IDEAS 2020, seed 002 eq. 1-9).

For a point X of cluster C with prototype c, ``N_t^C(X)`` holds the t nearest members s != X of C
with ``dist(s, c) <= dist(X, c)`` and ``dist(X, s) < dist(X, c)`` (eq. 1-2). Then

    Dev(X,C,s) = (dist(c,s) + dist(s,X)) / dist(X,c) - 1          (eq. 3)
    ND(X,C,s)  = dist(X,s) / (dist(c,s) + dist(s,X))              (eq. 4)
    LCD(X,C)   = sum over N_t^C(X) of Dev * ND  (0 when empty)      (eq. 5-6)
    LCD(C)     = max over members X;  MaxLCD / AvgLCD = max / mean over clusters (eq. 7-9)

Neighbour search: one KD-tree per cluster, queried in chunks of points with a growing number k of
nearest neighbours; a point is finished once t qualifying neighbours are found or its k-th
neighbour is at least dist(X, c) away (no further candidate can qualify). Memory is
O(n + chunk * k), never O(n^2).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.spatial import cKDTree

__all__ = ["LCDResult", "cluster_maxima", "lcd"]

logger = logging.getLogger(__name__)

_BLOCK = 1 << 20  # max (points x neighbours) entries held at once
TIE_RTOL = 1e-9
"""Distances equal within this relative tolerance count as equal in the two conditions of
eq. 1-2, so a tie (e.g. two points equidistant from the prototype in rounded data) is decided the
same way whatever the floating-point rounding: dist(s, c) <= dist(X, c) holds at a tie,
dist(X, s) < dist(X, c) does not."""


@dataclass(frozen=True, eq=False)
class LCDResult:
    """LCD of a clustering.

    Attributes
    ----------
    point_lcd : (n,) LCD(X, C) per row of X; NaN for noise rows (label < 0).
    n_support : (n,) |N_t^C(X)| per row (-1 for noise rows).
    clusters : (K,) cluster labels, sorted.
    cluster_lcd : (K,) LCD(C) = max over members.
    cluster_worst_row : (K,) row index of the member attaining LCD(C).
    cluster_mean_lcd : (K,) mean of LCD(X, C) over members (context, not in the paper).
    avg_lcd, max_lcd : AvgLCD (eq. 9) and MaxLCD (eq. 8).
    t : neighbourhood size.
    prototypes : (K, d) prototypes used, row i for ``clusters[i]``.
    labels : (n,) the labels the metric was computed for.
    """

    point_lcd: np.ndarray
    n_support: np.ndarray
    clusters: np.ndarray
    cluster_lcd: np.ndarray
    cluster_worst_row: np.ndarray
    cluster_mean_lcd: np.ndarray
    avg_lcd: float
    max_lcd: float
    t: int
    prototypes: np.ndarray = field(repr=False)
    labels: np.ndarray = field(repr=False)

    def worst_points(self, n: int = 10, cluster: Any = None) -> np.ndarray:
        """Row indices of the ``n`` points with the highest LCD (optionally in one cluster)."""
        vals = np.where(np.isnan(self.point_lcd), -np.inf, self.point_lcd)
        rows = np.arange(vals.shape[0])
        if cluster is not None:
            rows = rows[self.labels == cluster]
            vals = vals[rows]
        order = np.argsort(-vals, kind="stable")[:n]
        return rows[order]

    def worst_clusters(self, n: int = 5) -> np.ndarray:
        """Cluster labels sorted by decreasing LCD(C)."""
        return self.clusters[np.argsort(-self.cluster_lcd, kind="stable")[:n]]


def _check_inputs(X: Any, labels: Any, t: Any) -> tuple[np.ndarray, np.ndarray, int]:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] == 0:
        raise ValueError(f"X passed to lcd must be a non-empty 2-D array; got shape {X.shape}.")
    if not np.isfinite(X).all():
        raise ValueError("X passed to lcd must contain only finite values; got NaN or infinity.")
    labels = np.asarray(labels)
    if labels.shape != (X.shape[0],):
        raise ValueError(
            f"The 'labels' argument of lcd must have shape ({X.shape[0]},); got {labels.shape}."
        )
    if labels.dtype.kind not in "iu":
        if labels.dtype.kind == "f" and np.all(labels == np.round(labels)):
            labels = labels.astype(np.int64)
        else:
            raise ValueError(f"The 'labels' argument of lcd must be integers; got {labels.dtype}.")
    if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or t < 1:
        raise ValueError(f"The 't' parameter of lcd must be an int >= 1; got {t!r}.")
    return X, labels.astype(np.int64), int(t)


def lcd(
    X: Any,
    labels: Any,
    prototypes: Any = None,
    t: int = 5,
    *,
    workers: int = 1,
) -> LCDResult:
    """Local connectivity disagreement of a clustering (seed 002, eq. 1-9).

    Parameters
    ----------
    X : (n, d) features.
    labels : (n,) integer cluster labels; rows with a negative label are noise and excluded.
    prototypes : (K, d) optional; row ``c`` is the prototype of cluster label ``c`` (labels must
        then lie in 0..K-1). Default: the mean of each cluster's members.
    t : neighbourhood size (paper: 3, 4, 5).
    workers : threads for the KD-tree queries (-1 = all cores).
    """
    X, labels, t = _check_inputs(X, labels, t)
    n, d = X.shape
    mask = labels >= 0
    clusters = np.unique(labels[mask])
    if clusters.size == 0:
        raise ValueError("The 'labels' argument of lcd has no non-noise rows (all labels < 0).")
    if prototypes is None:
        protos = np.vstack([X[labels == c].mean(axis=0) for c in clusters])
    else:
        P = np.asarray(prototypes, dtype=np.float64)
        if P.ndim != 2 or P.shape[1] != d:
            raise ValueError(
                f"The 'prototypes' argument of lcd must have shape (n_clusters, {d}); got {P.shape}."
            )
        if clusters.max() >= P.shape[0]:
            raise ValueError(
                f"The 'prototypes' argument of lcd has {P.shape[0]} rows but the labels go up to "
                f"{clusters.max()}; row c must be the prototype of cluster c."
            )
        if not np.isfinite(P).all():
            raise ValueError("The 'prototypes' argument of lcd must be finite.")
        protos = P[clusters]

    point = np.full(n, np.nan)
    support = np.full(n, -1, dtype=np.int64)
    for ci, c in enumerate(clusters):
        rows = np.flatnonzero(labels == c)
        vals, cnt = _cluster_lcd(X[rows], protos[ci], t, workers)
        point[rows] = vals
        support[rows] = cnt

    K = clusters.size
    c_lcd = np.empty(K)
    c_worst = np.empty(K, dtype=np.int64)
    c_mean = np.empty(K)
    for ci, c in enumerate(clusters):
        rows = np.flatnonzero(labels == c)
        j = int(np.argmax(point[rows]))
        c_lcd[ci] = point[rows[j]]
        c_worst[ci] = rows[j]
        c_mean[ci] = float(point[rows].mean())
    res = LCDResult(
        point_lcd=point,
        n_support=support,
        clusters=clusters,
        cluster_lcd=c_lcd,
        cluster_worst_row=c_worst,
        cluster_mean_lcd=c_mean,
        avg_lcd=float(c_lcd.mean()),
        max_lcd=float(c_lcd.max()),
        t=t,
        prototypes=protos,
        labels=labels,
    )
    return res


TERM_MAX = 0.5 + 1e-6
"""An upper bound of one term Dev · ND (eq. 3-5) of a qualifying neighbour: with r =
dist(X, s) / dist(X, c) < 1 and dist(s, c) <= dist(X, c) (1 + 1e-9), the term is at most
r (r + 1e-9) / (1 + 1e-9 + r) < 1/2 + 1e-9; the margin covers rounding."""


def cluster_maxima(
    X: Any,
    labels: Any,
    prototypes: Any,
    t: int = 5,
    *,
    workers: int = 1,
    clusters: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """LCD(C) (eq. 7) and the member attaining it for the clusters ``clusters`` (default: every
    label >= 0, sorted): the ``cluster_lcd`` and ``cluster_worst_row`` of :func:`lcd` with the
    same arguments, bit for bit, for less work — a member whose first round of neighbours
    already shows it cannot attain the maximum is not computed further (``_cluster_lcd``,
    ``prune``). ``prototypes``: row c is cluster c's prototype (required)."""
    X, labels, t = _check_inputs(X, labels, t)
    P = np.asarray(prototypes, dtype=np.float64)
    if clusters is None:
        clusters = np.unique(labels[labels >= 0])
    clusters = np.asarray(clusters, dtype=np.int64)
    vals = np.zeros(clusters.size)
    worst = np.full(clusters.size, -1, dtype=np.int64)
    for ci, c in enumerate(clusters):
        rows = np.flatnonzero(labels == c)
        if rows.size == 0:
            continue
        v, _ = _cluster_lcd(X[rows], P[c], t, workers, prune=True)
        j = int(np.nanargmax(v))
        vals[ci], worst[ci] = v[j], rows[j]
    return vals, worst


def _cluster_lcd(
    Y: np.ndarray, c: np.ndarray, t: int, workers: int, rows: np.ndarray | None = None,
    *, prune: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """LCD(X, C) for every member X of one cluster (rows of Y) with prototype c, and the number
    of qualifying neighbours summed. With ``rows``, only those members are computed (the others'
    neighbours are not asked) and both arrays are returned for ``rows`` alone, bit for bit the
    values the full call gives them (the same tree over Y, the same neighbour counts per row).

    ``prune`` (for the cluster's maximum only; not with ``rows``): NaN (count -1) for the members
    that cannot attain the maximum, which are not computed further. A member a round leaves
    unfinished has its qualifying neighbours nearer than that round's last distance among the
    first ones of any deeper round (every member that near is in both answers, whatever order
    the tree gives equally distant ones), so its value is at most their terms plus
    :data:`TERM_MAX` for each of its remaining t - found places; when that bound is below a
    finished member's value (after any round), the member is not the maximum. The maximum and the first
    member attaining it are the unpruned call's."""
    m = Y.shape[0]
    out = np.zeros(m)
    cnt = np.zeros(m, dtype=np.int64)
    sel = slice(None) if rows is None else np.asarray(rows, dtype=np.intp)
    if m < 2 or (rows is not None and sel.size == 0):
        return out[sel], cnt[sel]
    prune = prune and rows is None
    dc = np.sqrt(((Y - c) ** 2).sum(axis=1))  # dist(X, c) for every member
    tree = cKDTree(Y)
    # a point on its prototype has no qualifying neighbour
    todo = np.flatnonzero(dc > 0) if rows is None else sel[dc[sel] > 0]
    # asked in the tree's leaf order: consecutive queries walk the same nodes (faster; each
    # answer is the same, fairaudit.cluster._knn)
    leaf = np.empty(m, dtype=np.intp)
    leaf[tree.indices] = np.arange(m)
    todo = todo[np.argsort(leaf[todo], kind="stable")]
    k = min(m, 2 * t + 2)
    ub = np.full(m, np.inf) if prune else None
    while todo.size:
        kk = min(k, m)
        step = max(1, _BLOCK // kk)
        again = []
        for s0 in range(0, todo.size, step):
            idx = todo[s0 : s0 + step]
            dist, nb = tree.query(Y[idx], k=kk, workers=workers)
            if kk == 1:
                dist, nb = dist[:, None], nb[:, None]
            dX = dc[idx][:, None]
            ok = (
                (nb != idx[:, None])
                & (dist < dX * (1.0 - TIE_RTOL))
                & (dc[nb] <= dX * (1.0 + TIE_RTOL))
            )
            # keep the first t qualifying, in neighbour order (nearest first)
            rank = np.cumsum(ok, axis=1)
            take = ok & (rank <= t)
            found = rank[:, -1]
            # finished: t found, or all m members seen, or the k-th neighbour is already too far
            done = (found >= t) | (kk >= m) | (dist[:, -1] >= dX[:, 0])
            ds = dist
            dcs = dc[nb]
            denom = dcs + ds
            with np.errstate(invalid="ignore", divide="ignore"):
                contrib = (denom / dX - 1.0) * (ds / denom)
            contrib = np.where(take, contrib, 0.0)
            out[idx[done]] = contrib[done].sum(axis=1)
            cnt[idx[done]] = np.minimum(found[done], t)
            if prune and not done.all():
                rest = ~done
                near = take[rest] & (dist[rest] < dist[rest, -1:])
                ub[idx[rest]] = (np.where(near, contrib[rest], 0.0).sum(axis=1)
                                 + (t - near.sum(axis=1)) * TERM_MAX)
            again.append(idx[~done])
        todo = np.concatenate(again) if again else np.empty(0, dtype=np.intp)
        if prune and todo.size:
            finished = np.ones(m, dtype=bool)
            finished[todo] = False
            top = np.nanmax(out[finished]) if (finished & ~np.isnan(out)).any() else -np.inf
            cut = todo[ub[todo] < top]
            out[cut], cnt[cut] = np.nan, -1
            todo = np.setdiff1d(todo, cut, assume_unique=True)
            todo = todo[np.argsort(leaf[todo], kind="stable")]
        k = kk * 4
    return out[sel], cnt[sel]
