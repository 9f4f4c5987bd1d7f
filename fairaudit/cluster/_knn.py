"""k-nearest-neighbour queries of a k-d tree's own points, in the tree's leaf order.

``cKDTree.query(X, k)`` with X = the tree's data answers each row independently, so the rows can
be asked in any order: asked in the order of the tree's leaves (``tree.indices``), consecutive
queries walk the same nodes and touch the same points, and the query runs 2-3× faster on large
data (measured: 300,000 rows × 10, k = 42: 14.5 s of CPU instead of 37.3 s) with bit-identical
distances and indices (tested).
"""

from __future__ import annotations

import numpy as np

from fairaudit.cluster._progress import Progress

__all__ = ["kd_tree", "leaf_ordered", "leaf_rank", "leafsize_for", "midpoint_tree", "query_rows",
           "self_knn", "tree_sqdist"]

_CHUNK = 65_536  # rows per query call: the reordered copy stays small


def leafsize_for(d: int) -> int:
    """Leaf size of a ``cKDTree`` over d-dimensional points (scipy's default is 16).

    In more than a few dimensions a query walks many nodes, and a node step costs more than
    the distances of a leaf's points (a tight C loop), so fewer, larger leaves are faster.
    Measured (k-NN queries with k = 2d, 20,000 points of 8 Gaussian blobs, 50,000 queries, one
    core; 2026-11-26, load 8): best leaf size 16 for d <= 3, 64 for d = 5 and 7 (1.2x and 1.4x
    the default), 128 for d = 10 and 14 (1.9x and 1.6x). The leaf size changes no distance (the
    same point-to-point arithmetic), only the order in which equally distant points are met.
    """
    if d <= 3:
        return 16
    if d <= 8:
        return 64
    return 128


def kd_tree(X: np.ndarray):  # noqa: ANN201 - scipy's cKDTree (imported lazily)
    """``cKDTree(X)`` with the leaf size of :func:`leafsize_for`."""
    from scipy.spatial import cKDTree

    return cKDTree(X, leafsize=leafsize_for(X.shape[1]))


def midpoint_tree(X: np.ndarray):  # noqa: ANN201 - scipy's cKDTree (imported lazily)
    """A ``cKDTree`` over X with sliding-midpoint splits (``balanced_tree=False``) and leaves of
    32 points (16 up to 3-d, as :func:`leafsize_for`): the tree of FairDen's distances — the
    self-k-NN and Borůvka's searches of its mutual-reachability MST
    (:mod:`fairaudit.cluster.dc_distance`, :mod:`fairaudit.cluster._boruvka`) and the
    out-of-sample rule (:mod:`fairaudit.cluster._mr_assign`). On skewed or clustered columns
    median splits make thin, long cells that a query must visit many of.

    Measured against :func:`kd_tree` (median splits, leaves of :func:`leafsize_for`):

    * out-of-sample queries (issue 38, one core, 2026-12-01, load 14-19): 14-NN of 50,000 new
      rows of the upsampled census table (6 numeric columns, two mostly zero) in its 100,000
      fitted rows: 8.7 us a row (leaves of 4-24: 9.8-13.3) against 88 us; 20-NN in 100,000
      10-d rows: DENSIRED-like 46 against 63 us, two random walks of 20 blobs 40 against 67,
      many small blobs 6.5 against 9.9, a wide density range 50 against 85.
    * the whole merge tree (``merge_tree(X, 21, algorithm="boruvka")``, 300,000 z-scored 10-d
      rows of ``benchmarks/bench_fairden.py``'s generators, both cores, 2026-12-03, load
      1.4-2.1): walk20 42.0 -> 37.3 s, densired 29.9 -> 26.5 s, wide-density 60.1 -> 57.8 s
      (leaves of 64: 38.7, 27.0, 56.4); the census table's 6 numeric columns, 100,000 rows,
      min_pts 12: 8.2-8.7 -> 2.8-3.2 s; 200,000 rows of 30 Gaussian blobs in 2, 3, 5 dimensions:
      5.1 -> 4.3, 5.0-6.0 -> 4.9-5.1, 5.7-8.2 -> 4.9-5.2 s.

    Distances are the same (the same point-to-point arithmetic), and so are the merge heights
    (tested on each case above); only the order of equally distant points may differ, which
    neither the MST's heights nor the out-of-sample rule (ties go by row number) reads."""
    from scipy.spatial import cKDTree

    return cKDTree(X, leafsize=16 if X.shape[1] <= 3 else 32, balanced_tree=False)


def leaf_ordered(X: np.ndarray):  # noqa: ANN201 - (rows, order, scipy's cKDTree)
    """X's rows in the leaf order of their :func:`midpoint_tree`, that order (``Xp = X[perm]``)
    and the same kind of tree built over ``Xp``.

    A ``cKDTree`` keeps its data in the caller's row order and reaches a leaf's points through
    its index array, so on data larger than the CPU's caches every leaf a query visits is a
    scatter of cache misses. Over rows already in leaf order the rebuilt tree has the same
    splits and (in practice) the identity as its index array, so a leaf's points are contiguous
    in memory. Distances are the same arithmetic on the same values; only the order in which
    equally distant points are met can differ. Measured (issue 38, 2026-12-03, both cores): the
    self-42-NN of ``bench_fairden.py``'s walk20, z-scored, 400,000 rows 26.5 -> 15.1 s, 1,000,000
    rows ~100 -> 60.2 s, distances bit-identical. Callers map indices back with ``perm``.
    """
    perm = np.asarray(midpoint_tree(X).indices, dtype=np.intp)
    Xp = np.ascontiguousarray(X[perm])
    return Xp, perm, midpoint_tree(Xp)


def self_knn(tree, X: np.ndarray, k: int, workers: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """``tree.query(X, k=k, workers=workers)`` for X = the tree's own data (same row order,
    same values), asked in leaf order. Returns (distances, indices), each (n, k) (or (n,) for
    k = 1, as cKDTree)."""
    n = X.shape[0]
    perm = np.asarray(tree.indices)
    shape = (n,) if k == 1 else (n, k)
    dist = np.empty(shape, dtype=np.float64)
    idx = np.empty(shape, dtype=np.intp)
    progress = Progress("k-NN query", n, "rows")
    for lo in range(0, n, _CHUNK):
        rows = perm[lo : lo + _CHUNK]
        d, i = tree.query(X[rows], k=k, workers=workers)
        dist[rows] = d
        idx[rows] = i
        progress.update(lo + rows.size)
    progress.close()
    return dist, idx


def tree_sqdist(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances between the paired rows of A and B (both (n, d) float64),
    bit-identical to ``cKDTree``'s (its ``sqeuclidean_distance_double``: four running sums over
    the columns 4i + j, added in order, then the remaining columns one by one; tested), so
    that ``np.sqrt`` of them equals the distances a ``cKDTree`` query returns."""
    sq = A - B
    sq *= sq
    d = sq.shape[1]
    n4 = d - d % 4
    if n4:
        acc = sq[:, 0:4].copy()
        for i in range(4, n4, 4):
            acc += sq[:, i : i + 4]
        s = ((acc[:, 0] + acc[:, 1]) + acc[:, 2]) + acc[:, 3]
    else:
        s = np.zeros(sq.shape[0])
    for i in range(n4, d):
        s = s + sq[:, i]
    return s


def leaf_rank(tree) -> np.ndarray:
    """Position of each of the tree's points in its leaf order."""
    perm = np.asarray(tree.indices)
    rank = np.empty(perm.size, dtype=np.intp)
    rank[perm] = np.arange(perm.size)
    return rank


def query_rows(tree, X: np.ndarray, rows: np.ndarray, k: int, rank: np.ndarray | None = None,
               **kw) -> tuple[np.ndarray, np.ndarray]:
    """``tree.query(X[rows], k=k, **kw)`` for rows of the tree's own data, asked in leaf order
    (``rank`` from :func:`leaf_rank`, computed when not given); results in the order of
    ``rows``."""
    rank = leaf_rank(tree) if rank is None else rank
    order = np.argsort(rank[rows], kind="stable")
    d, i = tree.query(X[rows[order]], k=k, **kw)
    dist = np.empty_like(d)
    idx = np.empty_like(i)
    dist[order] = d
    idx[order] = i
    return dist, idx
