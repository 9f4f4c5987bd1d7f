"""k-nearest-neighbour queries of a k-d tree's own points, in the tree's leaf order.

``cKDTree.query(X, k)`` with X = the tree's data answers each row independently, so the rows can
be asked in any order: asked in the order of the tree's leaves (``tree.indices``), consecutive
queries walk the same nodes and touch the same points, and the query runs 2-3× faster on large
data (measured: 300,000 rows × 10, k = 42: 14.5 s of CPU instead of 37.3 s) with bit-identical
distances and indices (tested).
"""

from __future__ import annotations

import numpy as np

__all__ = ["self_knn"]

_CHUNK = 65_536  # rows per query call: the reordered copy stays small


def self_knn(tree, X: np.ndarray, k: int, workers: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """``tree.query(X, k=k, workers=workers)`` for X = the tree's own data (same row order,
    same values), asked in leaf order. Returns (distances, indices), each (n, k) (or (n,) for
    k = 1, as cKDTree)."""
    n = X.shape[0]
    perm = np.asarray(tree.indices)
    shape = (n,) if k == 1 else (n, k)
    dist = np.empty(shape, dtype=np.float64)
    idx = np.empty(shape, dtype=np.intp)
    for lo in range(0, n, _CHUNK):
        rows = perm[lo : lo + _CHUNK]
        d, i = tree.query(X[rows], k=k, workers=workers)
        dist[rows] = d
        idx[rows] = i
    return dist, idx
