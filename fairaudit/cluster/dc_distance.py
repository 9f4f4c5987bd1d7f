"""The density-connectivity distance (dc-distance) and its merge tree.

Definitions (FairDen appendix B.2, ``ALGORITHMS.md``):

* core distance ``kappa(x)`` = distance to the ``min_pts``-th nearest neighbour of ``x``
  *counting x itself* (the ``min_samples`` convention of HDBSCAN*);
* mutual reachability ``r(x, y) = max(d(x, y), kappa(x), kappa(y))`` for ``x != y``;
* dc-distance ``d_dc(x, y)`` = minimax path distance under ``r`` = the height at which ``x`` and
  ``y`` merge in single linkage on ``r`` (0 on the diagonal).

The merge tree is built from an exact minimum spanning tree of the mutual-reachability graph
(:mod:`fairaudit.cluster._boruvka`): ``"boruvka"`` (default below 16 dimensions) — Borůvka rounds
over k-d trees and one cached k-NN query, with a pivot search for large components far from
the rest whose distances come from float32 product scans (:mod:`fairaudit.cluster._bichromatic`);
``"prim"`` (high dimensions) — Prim's algorithm on the implicit complete graph, O(n) memory.

Because ``d_dc`` is an ultrametric, with the leaves in dendrogram order every tree node covers a
contiguous range and ``d_dc = h_root·11ᵀ − E·diag(w)·Eᵀ`` (E = leaf-node incidence,
``w_v = h_parent(v) − h_v``). :meth:`MergeTree.dc_matmul` uses this to multiply by the n×n
dc-distance matrix in O(n·b) for a block of b vectors, without forming it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from fairaudit.cluster import _boruvka_scans
from fairaudit.cluster._bichromatic import closest_pair
from fairaudit.cluster._boruvka import MSTEdges, _mst_boruvka, _mst_prim
from fairaudit.cluster._knn import leaf_ordered, self_knn

__all__ = [
    "MergeTree",
    "closest_pair",
    "core_distances",
    "dc_distance_matrix",
    "merge_tree",
    "mutual_reachability_mst",
]

logger = logging.getLogger(__name__)

_PRIM_MIN_DIM = 16  # "auto": Prim's at and above this dimension, Borůvka below


def _check_X(X: np.ndarray, name: str = "X") -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise ValueError(f"The '{name}' parameter must be a 2-D array; got {X.ndim} dimensions.")
    if X.shape[0] < 1:
        raise ValueError(f"The '{name}' parameter must have at least one row; got 0.")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"The '{name}' parameter must not contain NaN or infinite values.")
    return X


def _check_min_pts(min_pts: object, n: int) -> int:
    if isinstance(min_pts, bool) or not isinstance(min_pts, int | np.integer) or min_pts < 1:
        raise ValueError(f"The 'min_pts' parameter must be an int >= 1; got {min_pts!r}.")
    if min_pts > n:
        raise ValueError(
            f"The 'min_pts' parameter must be <= the number of rows ({n}); got {min_pts}."
        )
    return int(min_pts)


def core_distances(X: np.ndarray, min_pts: int) -> np.ndarray:
    """Distance of every row to its ``min_pts``-th nearest neighbour, the row itself included.

    ``min_pts=1`` gives zeros (plain Euclidean single linkage).
    """
    X = _check_X(X)
    min_pts = _check_min_pts(min_pts, X.shape[0])
    if min_pts == 1:
        return np.zeros(X.shape[0])
    Xp, perm, tree = leaf_ordered(X)
    d, _ = self_knn(tree, Xp, min_pts)
    core = np.empty(X.shape[0])
    core[perm] = d[:, min_pts - 1]
    return core


def _knn_depth(min_pts: int, shape: tuple[int, int]) -> int:
    """Neighbours in Borůvka's cached k-NN list (at least ``min_pts``, for the core distances,
    and 16, for the pivot search's graph). From 8 dimensions, where the ball bounds and product
    scans settle what the lists leave (:mod:`fairaudit.cluster._boruvka_scans`), ``min_pts`` of
    them; below, where the k-d-tree queries do, twice as many. Measured (issue 38, 2026-12-03,
    the merge tree's k-NN plus Borůvka, z-scored 10-d generators of ``bench_fairden.py``,
    min_pts 21, 300,000 rows, 2K -> K): walk20 18.1 -> 17.0 s, densired 14.1 -> 13.5 s,
    wide-density 25.7 -> 22.9 s, many-small 11.4 -> 9.4 s, walk20 at 1,000,000 rows 76.6 ->
    72.6 s; 200,000 rows of 30 Gaussian blobs in 2 / 3 / 5 dimensions 4.9 -> 9.2, 6.8 -> 9.0,
    12.9 -> 13.5 s (so not below 8). The MST is the same (its sorted weights are unique)."""
    n, d = shape
    per_pt = 1 if d >= _boruvka_scans._PRODUCTS_MIN_DIM else 2
    return int(min(n, max(per_pt * min_pts, 16)))


def _boruvka_mst(X: np.ndarray, min_pts: int) -> tuple[MSTEdges, np.ndarray]:
    """The mutual-reachability MST by Borůvka and the core distances, computed over X's rows in
    the leaf order of their k-d tree (:func:`~fairaudit.cluster._knn.leaf_ordered`: a leaf's
    points contiguous in memory) and returned in X's row numbers. The MST's weights are the
    same multiset in any row order (the MST of a graph has unique sorted weights), so the merge
    heights are too; tie edges may be other rows of the same weight."""
    n = X.shape[0]
    K = _knn_depth(min_pts, X.shape)
    Xp, perm, tree = leaf_ordered(X)
    knn_d, knn_i = self_knn(tree, Xp, K)
    core_p = np.ascontiguousarray(knn_d[:, min_pts - 1]) if min_pts > 1 else np.zeros(n)
    mst = _mst_of_distinct_rows(Xp, core_p, K, (tree, knn_d, knn_i))
    core = np.empty(n)
    core[perm] = core_p
    return MSTEdges(perm[mst.u], perm[mst.v], mst.weight), core


_DUPLICATE_SHARE = 0.2  # collapse repeated rows when at least this share of rows repeat one


def _mst_of_distinct_rows(Xp: np.ndarray, core: np.ndarray, K: int, knn: tuple) -> MSTEdges:
    """Borůvka's MST of X's rows (``knn`` = (tree, distances, indices) of their self-K-NN),
    over the distinct rows only when many rows repeat another (tables about people: integer
    ages, counts, codes, one-hot columns).

    A row's copies have its core distance (the same K-NN distances), the edges among them weigh
    exactly that (r = max(0, core, core)) and no edge out of any of them weighs less (r ≥ core):
    each copy's edge to its first row is a lightest edge across the cut around that copy, so
    some MST holds them all, and the rest of it is the MST of the distinct rows, whose
    mutual-reachability edges are those of their copies. The merge heights are the same
    multiset; Borůvka no longer meets k-NN lists that never leave a pile of copies (measured,
    issue 38: 200,000 rows of a rounded 3-d normal, 2,800 distinct points, 51 s of Borůvka
    rounds)."""
    n = Xp.shape[0]
    tree, knn_d, knn_i = knn
    if n < 3 or knn_d.ndim < 2 or knn_d.shape[1] < 2 or (
            np.count_nonzero(knn_d[:, 1] == 0.0) < _DUPLICATE_SHARE * n):
        return _mst_boruvka(Xp, core, K, knn=knn)
    _, first, inverse = np.unique(Xp, axis=0, return_index=True, return_inverse=True)
    inverse = np.asarray(inverse).ravel()
    order = np.argsort(first)  # the distinct rows in their first copy's (leaf) order
    reps = first[order]
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    rep_of = reps[rank[inverse]]
    dup = np.flatnonzero(rep_of != np.arange(n))
    logger.debug("spanning tree over %d distinct of %d rows", reps.size, n)
    if reps.size > 1:
        Xr, perm, tree_r = leaf_ordered(Xp[reps])
        Kr = int(min(reps.size, K))
        d_r, i_r = self_knn(tree_r, Xr, Kr)
        m = _mst_boruvka(Xr, np.ascontiguousarray(core[reps][perm]), Kr, knn=(tree_r, d_r, i_r))
        u, v, w = reps[perm[m.u]], reps[perm[m.v]], m.weight
    else:
        u = v = np.empty(0, dtype=np.int64)
        w = np.empty(0)
    return MSTEdges(np.concatenate([u, dup]), np.concatenate([v, rep_of[dup]]),
                    np.concatenate([w, core[dup]]))


# --------------------------------------------------------------------------------------------
# Minimum spanning tree of the mutual-reachability graph
# --------------------------------------------------------------------------------------------


def mutual_reachability_mst(
    X: np.ndarray,
    min_pts: int = 5,
    *,
    algorithm: str = "auto",
    core: np.ndarray | None = None,
) -> MSTEdges:
    """Exact minimum spanning tree of the mutual-reachability graph (n − 1 edges).

    ``algorithm``: ``"auto"`` (Borůvka over a k-d tree below 16 dimensions, Prim's above),
    ``"boruvka"`` or ``"prim"``.
    """
    X = _check_X(X)
    n = X.shape[0]
    min_pts = _check_min_pts(min_pts, n)
    if algorithm not in ("auto", "boruvka", "prim"):
        raise ValueError(
            "The 'algorithm' parameter must be one of 'auto', 'boruvka', 'prim'; "
            f"got {algorithm!r}."
        )
    if n == 1:
        e = np.empty(0, dtype=np.int64)
        return MSTEdges(e, e.copy(), np.empty(0))
    if algorithm == "auto":
        algorithm = "prim" if X.shape[1] >= _PRIM_MIN_DIM else "boruvka"
    if algorithm == "prim":
        if core is None:
            core = core_distances(X, min_pts)
        return _mst_prim(X, core)
    if core is None:
        return _boruvka_mst(X, min_pts)[0]
    K = _knn_depth(min_pts, X.shape)
    Xp, perm, tree = leaf_ordered(X)
    knn_d, knn_i = self_knn(tree, Xp, K)
    mst = _mst_boruvka(Xp, np.ascontiguousarray(core[perm]), K, knn=(tree, knn_d, knn_i))
    return MSTEdges(perm[mst.u], perm[mst.v], mst.weight)


# --------------------------------------------------------------------------------------------
# Merge tree and ultrametric products
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MergeTree:
    """Single-linkage merge tree of the mutual-reachability distance.

    Attributes
    ----------
    linkage : (n − 1, 4) array in :func:`scipy.cluster.hierarchy.linkage` format
        (child a, child b, merge height, size); node ids ``>= n`` are merges.
    order : (n,) leaf order; every node covers a contiguous range of it.
    node_start, node_size : (2n − 1,) range of each node (leaves first, then merges) in ``order``.
    node_height : (2n − 1,) height (0 for leaves).
    node_weight : (2n − 1,) ``h_parent − h_node`` (0 for the root).
    core_distances : (n,) core distances used.
    min_pts : int
    """

    linkage: np.ndarray
    order: np.ndarray
    node_start: np.ndarray
    node_size: np.ndarray
    node_height: np.ndarray
    node_weight: np.ndarray
    core_distances: np.ndarray
    min_pts: int

    @property
    def n(self) -> int:
        return int(self.order.size)

    @property
    def max_height(self) -> float:
        """Largest dc-distance (the root's height)."""
        return float(self.linkage[-1, 2]) if self.linkage.shape[0] else 0.0

    def heights(self) -> np.ndarray:
        """Merge heights in increasing order (the dc-distance hierarchy)."""
        return self.linkage[:, 2].copy()

    def dc_matmul(self, V: np.ndarray) -> np.ndarray:
        """``D_dc @ V`` in O(n·b) for V of shape (n,) or (n, b), without forming D_dc."""
        V = np.asarray(V, dtype=np.float64)
        vec = V.ndim == 1
        if vec:
            V = V[:, None]
        n = self.n
        Vp = V[self.order]
        P = np.zeros((n + 1, V.shape[1]))
        np.cumsum(Vp, axis=0, out=P[1:])
        s = self.node_start
        e = s + self.node_size
        w = self.node_weight
        Z = w[:, None] * (P[e] - P[s])
        out = np.empty_like(Vp)
        for j in range(V.shape[1]):
            diff = np.bincount(s, weights=Z[:, j], minlength=n + 1)
            diff -= np.bincount(e, weights=Z[:, j], minlength=n + 1)
            out[:, j] = np.cumsum(diff[:n])
        res = self.max_height * P[n][None, :] - out
        y = np.empty_like(res)
        y[self.order] = res
        return y[:, 0] if vec else y

    def dc_matrix(self) -> np.ndarray:
        """Dense n×n dc-distance matrix (O(n²) memory: small n only)."""
        n = self.n
        Dm = np.zeros((n, n))
        L = self.linkage
        s = self.node_start
        sz = self.node_size
        for t in range(L.shape[0]):
            a, b, h = int(L[t, 0]), int(L[t, 1]), L[t, 2]
            sa, na, sb, nb = s[a], sz[a], s[b], sz[b]
            Dm[sa : sa + na, sb : sb + nb] = h
            Dm[sb : sb + nb, sa : sa + na] = h
        out = np.empty_like(Dm)
        inv = np.empty(n, dtype=np.int64)
        inv[self.order] = np.arange(n)
        out[:] = Dm[np.ix_(inv, inv)]
        return out


def _linkage_from_mst(n: int, mst: MSTEdges) -> np.ndarray:
    order = np.lexsort((mst.v, mst.u, mst.weight))
    u = mst.u[order].tolist()
    v = mst.v[order].tolist()
    w = mst.weight[order]
    parent = list(range(2 * n - 1))
    size = [1] * n + [0] * (n - 1)
    lo = [0] * (n - 1)
    hi = [0] * (n - 1)
    # one union-find pass in plain Python lists (numpy element access costs ~10x a list's)
    for t in range(n - 1):
        a = u[t]
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        b = v[t]
        while parent[b] != b:
            parent[b] = parent[parent[b]]
            b = parent[b]
        node = n + t
        parent[a] = node
        parent[b] = node
        size[node] = size[a] + size[b]
        if a < b:
            lo[t], hi[t] = a, b
        else:
            lo[t], hi[t] = b, a
    Z = np.empty((n - 1, 4))
    Z[:, 0] = lo
    Z[:, 1] = hi
    Z[:, 2] = w
    Z[:, 3] = size[n:]
    return Z


def merge_tree(
    X: np.ndarray,
    min_pts: int = 5,
    *,
    algorithm: str = "auto",
) -> MergeTree:
    """Merge tree of single linkage on the mutual-reachability distance of ``X``.

    The merge heights are the dc-distances: ``d_dc(x, y)`` = height of the lowest node that covers
    both ``x`` and ``y``.
    """
    X = _check_X(X)
    n = X.shape[0]
    min_pts = _check_min_pts(min_pts, n)
    if algorithm == "auto":
        algorithm = "prim" if X.shape[1] >= _PRIM_MIN_DIM else "boruvka"
    if algorithm == "boruvka" and n > 1:
        mst, core = _boruvka_mst(X, min_pts)
    else:
        core = core_distances(X, min_pts)
        mst = mutual_reachability_mst(X, min_pts, algorithm=algorithm, core=core)
    Z = _linkage_from_mst(n, mst)
    return _tree_from_linkage(Z, core, min_pts)


def _tree_from_linkage(Z: np.ndarray, core: np.ndarray, min_pts: int) -> MergeTree:
    n = Z.shape[0] + 1
    m = 2 * n - 1
    height = np.zeros(m)
    height[n:] = Z[:, 2]
    size = np.ones(m, dtype=np.int64)
    size[n:] = Z[:, 3].astype(np.int64)
    parent = np.full(m, -1, dtype=np.int64)
    a = Z[:, 0].astype(np.int64)
    b = Z[:, 1].astype(np.int64)
    parent[a] = np.arange(n, m)
    parent[b] = np.arange(n, m)
    weight = np.zeros(m)
    has_p = parent >= 0
    weight[has_p] = height[parent[has_p]] - height[has_p]
    start = np.zeros(m, dtype=np.int64)
    # top-down: children of node t start at start[t] and start[t] + size[a]
    al = a.tolist()
    bl = b.tolist()
    sz = size.tolist()
    st = [0] * m
    for t in range(n - 2, -1, -1):
        s0 = st[n + t]
        st[al[t]] = s0
        st[bl[t]] = s0 + sz[al[t]]
    start[:] = st
    order = np.empty(n, dtype=np.int64)
    order[start[:n]] = np.arange(n)
    return MergeTree(
        linkage=Z,
        order=order,
        node_start=start,
        node_size=size,
        node_height=height,
        node_weight=weight,
        core_distances=core,
        min_pts=min_pts,
    )


def dc_distance_matrix(X: np.ndarray, min_pts: int = 5, *, algorithm: str = "auto") -> np.ndarray:
    """Dense n×n dc-distance matrix (small n only: O(n²) memory)."""
    return merge_tree(X, min_pts, algorithm=algorithm).dc_matrix()
