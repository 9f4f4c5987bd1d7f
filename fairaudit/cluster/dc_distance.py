"""The density-connectivity distance (dc-distance) and its merge tree.

One unit: the k-NN graph, the Borůvka rounds and the pivot search share one tree and one set of
arrays, and the merge tree is exact only as the three work together (oracle tests in tests/cluster).

Definitions (FairDen appendix B.2, ``ALGORITHMS.md``):

* core distance ``kappa(x)`` = distance to the ``min_pts``-th nearest neighbour of ``x``
  *counting x itself* (the ``min_samples`` convention of HDBSCAN*);
* mutual reachability ``r(x, y) = max(d(x, y), kappa(x), kappa(y))`` for ``x != y``;
* dc-distance ``d_dc(x, y)`` = minimax path distance under ``r`` = the height at which ``x`` and
  ``y`` merge in single linkage on ``r`` (0 on the diagonal).

The merge tree is built from an exact minimum spanning tree of the mutual-reachability graph:

* ``"boruvka"`` (default in low dimensions): Borůvka rounds whose "nearest point outside my
  component" queries run on k-d trees (``scipy.spatial.cKDTree``); a cached k-NN list answers
  most points, deeper k-NN queries the points of small components, bounded queries on k-d trees
  of other components (one pair of trees per bit of the component label) the rest, and a pivot
  search with Lipschitz bounds spread over the k-NN graph (:func:`_resolve_component_pivots`)
  large components whose nearest neighbour component is far away. Every answer is certified
  exact (a candidate is accepted only when no unseen point can beat it). Sub-quadratic on
  low-dimensional data, O(n·k) memory.
* ``"prim"`` (high dimensions): Prim's algorithm on the implicit complete graph, one O(n·d) numpy
  step per point, O(n) memory.

Because ``d_dc`` is an ultrametric, with the leaves in dendrogram order every tree node covers a
contiguous range and ``d_dc = h_root·11ᵀ − E·diag(w)·Eᵀ`` (E = leaf-node incidence,
``w_v = h_parent(v) − h_v``). :meth:`MergeTree.dc_matmul` uses this to multiply by the n×n
dc-distance matrix in O(n·b) for a block of b vectors, without forming it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix, csr_matrix
from scipy.sparse.csgraph import connected_components, dijkstra
from scipy.spatial import cKDTree

from fairaudit.cluster._bichromatic import lightest_below, nearest_lower_bound
from fairaudit.cluster._knn import kd_tree, leaf_rank, query_rows, self_knn
from fairaudit.cluster._progress import Progress

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
_GLOBAL_CAP = 256  # deepest k-NN query on the whole tree before per-component complement trees
_PIVOT_MIN_QUERY = 2048  # components with this many unsettled points and a far-away rest ...
_PIVOT_GAP = 4.0  # ... (bound U > this × median k-NN radius) use the pivot search
_PIVOT_GRAPH_K = 16  # k-NN graph edges used to propagate pivot bounds
_PIVOT_SHARE = 16  # a pass draws 1/_PIVOT_SHARE of the points left as pivots (at least 1,024)
_FINISH_ENTRIES = 2**33  # stop the passes once (points left) × (other points) is below this


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
    d, _ = self_knn(kd_tree(X), X, min_pts)
    return np.ascontiguousarray(d[:, min_pts - 1])


# --------------------------------------------------------------------------------------------
# Minimum spanning tree of the mutual-reachability graph
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MSTEdges:
    """Edges (n − 1 of them for n points) of a minimum spanning tree."""

    u: np.ndarray
    v: np.ndarray
    weight: np.ndarray


def _mst_prim(X: np.ndarray, core: np.ndarray) -> MSTEdges:
    n = X.shape[0]
    in_tree = np.zeros(n, dtype=bool)
    best = np.full(n, np.inf)
    parent = np.full(n, -1, dtype=np.int64)
    u = np.empty(n - 1, dtype=np.int64)
    v = np.empty(n - 1, dtype=np.int64)
    w = np.empty(n - 1)
    sq = np.einsum("ij,ij->i", X, X)
    cur = 0
    in_tree[0] = True
    remaining = np.arange(1, n)
    for i in range(n - 1):
        rem = remaining
        d2 = sq[rem] - 2.0 * (X[rem] @ X[cur]) + sq[cur]
        d = np.sqrt(np.maximum(d2, 0.0))
        r = np.maximum(np.maximum(d, core[rem]), core[cur])
        upd = r < best[rem]
        best[rem[upd]] = r[upd]
        parent[rem[upd]] = cur
        j = int(np.argmin(best[rem]))
        nxt = int(rem[j])
        u[i], v[i], w[i] = parent[nxt], nxt, best[nxt]
        in_tree[nxt] = True
        remaining = np.delete(rem, j)
        cur = nxt
    # recompute the chosen weights exactly (the Gram trick above loses a few ulps)
    w = np.maximum(np.linalg.norm(X[u] - X[v], axis=1), np.maximum(core[u], core[v]))
    return MSTEdges(u, v, w)


def _mr(X: np.ndarray, core: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d = np.linalg.norm(X[a] - X[b], axis=-1)
    return np.maximum(d, np.maximum(core[a], core[b]))


def _mst_boruvka(
    X: np.ndarray, core: np.ndarray, n_neighbors: int, knn: tuple | None = None
) -> MSTEdges:
    n = X.shape[0]
    tree = kd_tree(X) if knn is None else knn[0]
    K = int(min(n, max(n_neighbors, 2)))
    if knn is None:
        knn_d, knn_i = self_knn(tree, X, K)
    else:
        _, knn_d, knn_i = knn
        K = knn_d.shape[1]
    knn_i = knn_i.astype(np.int64)
    # r with the cached neighbours; d <= r always
    knn_r = np.maximum(knn_d, np.maximum(core[:, None], core[knn_i]))
    knn_d = np.asarray(knn_d, dtype=np.float64)
    dK = knn_d[:, -1]
    eu: list[np.ndarray] = []
    ev: list[np.ndarray] = []
    comp = np.arange(n, dtype=np.int64)
    n_comp = n
    idx = np.arange(n)
    rounds = 0
    progress = Progress("spanning tree (Boruvka)", n - 1, "merges")
    while n_comp > 1:
        rounds += 1
        outside = comp[knn_i] != comp[:, None]
        rr = np.where(outside, knn_r, np.inf)
        j = np.argmin(rr, axis=1)
        cand = rr[idx, j]
        partner = np.where(np.isfinite(cand), knn_i[idx, j], -1)
        # component upper bounds (any real edge weight is an upper bound)
        ub = np.full(n_comp, np.inf)
        np.minimum.at(ub, comp, cand)
        # a point is settled when no unseen point can beat min(cand, ub): unseen points are at
        # distance >= dK, and r >= d
        bound = np.minimum(cand, ub[comp])
        unresolved = (core < bound) & (dK < bound) & (K < n)
        only = int(np.argmin(np.bincount(comp[unresolved], minlength=2))) if n_comp == 2 else -1
        if np.any(unresolved):
            q = np.flatnonzero(unresolved)
            csize = np.bincount(comp, minlength=n_comp)
            small = csize[comp[q]] <= _GLOBAL_CAP // 2
            rest = _refine_global(tree, X, core, comp, q[small], K, ub, cand, partner)
            q = np.concatenate([rest, q[~small]])
            todo = np.unique(comp[q])
            if n_comp == 2:
                # both components share their lightest edge: settle it from one side only
                cnt = np.bincount(comp[q], minlength=2)
                only = int(np.argmin(cnt))
                todo = todo[todo == only]
            q = q[np.isin(comp[q], todo)]
            q = q[np.argsort(comp[q], kind="stable")]
            cq = comp[q]
            cuts = np.flatnonzero(np.r_[True, cq[1:] != cq[:-1], True]) if q.size else []
            batch = []  # points of components for the bitwise search
            for a, b in zip(cuts[:-1], cuts[1:], strict=True):
                c, qc = int(cq[a]), q[a:b]
                if qc.size >= _PIVOT_MIN_QUERY and ub[c] > _PIVOT_GAP * np.median(dK[qc]):
                    _resolve_component_pivots(X, core, qc, comp, c, ub, cand, partner, knn_i, knn_d)
                else:
                    batch.append(qc)
            if batch:
                _resolve_bitwise(X, core, np.concatenate(batch), comp, n_comp, ub, cand, partner)
        # pick each component's lightest edge
        order = np.lexsort((cand, comp))
        first = np.ones(n, dtype=bool)
        sc = comp[order]
        first[1:] = sc[1:] != sc[:-1]
        pick = order[first]
        if n_comp == 2:
            pick = pick[comp[pick] == only]
        pick = pick[np.isfinite(cand[pick])]
        eu.append(pick)
        ev.append(partner[pick])
        all_u = np.concatenate(eu)
        all_v = np.concatenate(ev)
        g = coo_matrix((np.ones(all_u.size), (all_u, all_v)), shape=(n, n))
        n_comp, comp = connected_components(g, directed=False)
        comp = comp.astype(np.int64)
        logger.debug("boruvka round %d: %d components", rounds, n_comp)
        progress.update(n - n_comp)
    progress.close()
    u = np.concatenate(eu)
    v = np.concatenate(ev)
    w = _mr(X, core, u, v)
    return _kruskal_filter(n, u, v, w)


def _refine_global(
    tree: cKDTree,
    X: np.ndarray,
    core: np.ndarray,
    comp: np.ndarray,
    q: np.ndarray,
    K: int,
    ub: np.ndarray,
    cand: np.ndarray,
    partner: np.ndarray,
    cap: int = 0,
) -> np.ndarray:
    """Deeper k-NN queries on the whole tree for unsettled points; returns those still unsettled
    after ``cap`` neighbours (they are handled per component)."""
    n = X.shape[0]
    cap = cap or _GLOBAL_CAP
    k = K
    rank = leaf_rank(tree) if q.size else None
    while q.size and k < min(cap, n):
        k = min(4 * k, cap, n)
        d, i = query_rows(tree, X, q, k, rank, workers=-1)
        i = i.astype(np.int64)
        out = comp[i] != comp[q][:, None]
        r = np.where(out, np.maximum(d, np.maximum(core[q][:, None], core[i])), np.inf)
        jm = np.argmin(r, axis=1)
        best = r[np.arange(q.size), jm]
        better = best < cand[q]
        cand[q[better]] = best[better]
        partner[q[better]] = i[np.arange(q.size), jm][better]
        np.minimum.at(ub, comp[q], best)
        bound = np.minimum(cand[q], ub[comp[q]])
        settled = (d[:, -1] >= bound) | (core[q] >= bound) | (k >= n)
        q = q[~settled]
    return q


def _query_outside(
    X: np.ndarray,
    core: np.ndarray,
    q: np.ndarray,
    others: np.ndarray,
    sub: cKDTree,
    comp: np.ndarray,
    ub: np.ndarray,
    cand: np.ndarray,
    partner: np.ndarray,
) -> None:
    """Exact lightest edge (mutual reachability) from each query point ``q`` to the points
    ``others`` (all outside the query point's component; ``sub`` is their k-d tree).

    Neighbours are fetched in growing batches within the bound ``U`` of the point's component
    (``ub``, lowered as edges are found); a point is settled once fewer than k points lie within
    U or its k-th neighbour is at least min(candidate, U) away (no unseen point can then do
    better, since r >= d). Points are queried in groups of similar U (one bound per call).
    Updates ``cand``/``partner``/``ub`` in place."""
    q = q[core[q] < ub[comp[q]]]
    k = 8
    while q.size and others.size:
        kk = min(k, others.size)
        U = ub[comp[q]]
        key = np.full(q.size, np.inf)
        fin = np.isfinite(U)
        key[fin] = np.floor(np.log(np.maximum(U[fin], 1e-300)) / np.log(1.25))
        o = np.argsort(key, kind="stable")
        q, U, key = q[o], U[o], key[o]
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        ends = np.append(starts[1:], q.size)
        d = np.empty((q.size, kk))
        i = np.empty((q.size, kk), dtype=np.int64)
        for s0, s1 in zip(starts.tolist(), ends.tolist(), strict=True):
            bnd = float(U[s0:s1].max())
            bnd = bnd * (1 + 1e-12) if np.isfinite(bnd) else np.inf
            dd, ii = sub.query(X[q[s0:s1]], k=kk, distance_upper_bound=bnd, workers=-1)
            d[s0:s1] = np.reshape(dd, (s1 - s0, kk))
            i[s0:s1] = np.reshape(ii, (s1 - s0, kk))
        found = np.isfinite(d)
        y = others[np.where(found, i, 0)]
        r = np.where(found, np.maximum(d, np.maximum(core[q][:, None], core[y])), np.inf)
        rows = np.arange(q.size)
        jm = np.argmin(r, axis=1)
        best = r[rows, jm]
        better = best < cand[q]
        cand[q[better]] = best[better]
        partner[q[better]] = y[rows, jm][better]
        np.minimum.at(ub, comp[q], best)
        last = d[:, -1]
        settled = (
            (~np.isfinite(last)) | (last >= np.minimum(cand[q], ub[comp[q]])) | (kk >= others.size)
        )
        q = q[~settled]
        q = q[core[q] < ub[comp[q]]]
        k *= 4


def _resolve_bitwise(
    X: np.ndarray,
    core: np.ndarray,
    q: np.ndarray,
    comp: np.ndarray,
    n_comp: int,
    ub: np.ndarray,
    cand: np.ndarray,
    partner: np.ndarray,
) -> None:
    """Lightest outside edges of the query points of many components at once.

    Any two components differ in some bit of their label, so the nearest point of *another*
    component is the nearest, over the ⌈log2 C⌉ bits, among the points whose label differs in
    that bit: 2·⌈log2 C⌉ k-d trees per round instead of one complement tree per component."""
    n_bits = max(1, int(np.ceil(np.log2(max(n_comp, 2)))))
    for bit in range(n_bits):
        side = ((comp >> bit) & 1).astype(bool)
        for s in (False, True):
            qs = q[side[q] == s]
            qs = qs[core[qs] < ub[comp[qs]]]
            if qs.size == 0:
                continue
            others = np.flatnonzero(side != s)
            if others.size == 0:
                continue
            _query_outside(X, core, qs, others, kd_tree(X[others]), comp, ub, cand, partner)


def _resolve_component_pivots(
    X: np.ndarray,
    core: np.ndarray,
    q: np.ndarray,
    comp: np.ndarray,
    c: int,
    ub: np.ndarray,
    cand: np.ndarray,
    partner: np.ndarray,
    knn_i: np.ndarray,
    knn_d: np.ndarray,
) -> None:
    """Exact lightest edge from the points ``q`` of a large component ``c`` whose nearest other
    component is far away.

    Per-point k-d-tree queries are then slow for every point (in 10 dimensions a query whose
    answer is far away visits most leaves). Instead: the Euclidean distance to the rest,
    ``g(x) = d(x, rest)``, is 1-Lipschitz, so an exact ``g(p)`` at a few *pivots* bounds it
    everywhere: ``g(x) >= g(p) − path(p, x)`` for any path inside the component (edges of the
    cached k-NN graph, a path is never shorter than the straight line). One multi-source
    Dijkstra spreads the best such bound; a point whose bound ``max(core(x), g_lb(x))`` reaches
    the best edge found so far (``U``) cannot improve it. Pivots are drawn from the points not
    yet ruled out until few are left; those few get the exact per-point search. The result is
    exact; only the work depends on the data."""
    U = float(ub[c])
    q = q[core[q] < U]
    if q.size == 0:
        return
    others = np.flatnonzero(comp != c)
    others = others[core[others] < U]
    if others.size == 0:
        return
    members = np.flatnonzero(comp == c)
    m = members.size
    loc = np.full(X.shape[0], -1, dtype=np.int64)
    loc[members] = np.arange(m)
    kg = min(_PIVOT_GRAPH_K, knn_i.shape[1])
    nb = loc[knn_i[members, :kg]]
    keep = nb >= 0
    rows = np.repeat(np.arange(m), kg)[keep.ravel()]
    cols = nb[keep]
    wts = knn_d[members, :kg][keep]
    g_lb = np.full(m, -np.inf)  # lower bounds on g at the members (local index)
    exact = np.zeros(m, dtype=bool)  # g known exactly (pivots)
    lq = loc[q]
    unc = lq
    rng = np.random.default_rng(0)
    it = 0
    while unc.size > _PIVOT_MIN_QUERY and unc.size * others.size > _FINISH_ENTRIES:
        it += 1
        n_piv = max(_PIVOT_MIN_QUERY // 2, unc.size // _PIVOT_SHARE)
        pool = unc[~exact[unc]]  # a pivot that stays unsettled goes to the exact search
        if pool.size == 0:
            break
        piv = np.sort(rng.choice(pool, size=min(n_piv, pool.size), replace=False))
        pts = members[piv]
        d, y = nearest_lower_bound(X, pts, others)  # d: a lower bound on g
        r = np.maximum(np.linalg.norm(X[pts] - X[y], axis=1), np.maximum(core[pts], core[y]))
        better = r < cand[pts]
        cand[pts[better]] = r[better]
        partner[pts[better]] = y[better]
        U = min(U, float(r.min()))
        g_lb[piv] = d
        exact[piv] = True
        _spread_lipschitz_bounds(rows, cols, wts, g_lb, exact, U)
        # a point is done when its bound reaches U, or when its candidate edge meets its bound
        # (e.g. a pivot whose nearest outside point is also its lightest edge)
        lb = np.maximum(core[members[unc]], g_lb[unc])
        unc = unc[(lb < U) & (cand[members[unc]] > lb)]
        logger.debug(
            "pivot search, component %d, pass %d: %d pivots, U=%.6g, %d points left",
            c,
            it,
            piv.size,
            U,
            unc.size,
        )
    ub[c] = U
    pts = members[unc]
    if np.isfinite(U):
        r, y = lightest_below(X, core, pts, others, U)
        better = r < cand[pts]
        cand[pts[better]] = r[better]
        partner[pts[better]] = y[better]
        if better.any():
            ub[c] = min(U, float(r[better].min()))
    else:
        _query_outside(X, core, pts, others, kd_tree(X[others]), comp, ub, cand, partner)


def _spread_lipschitz_bounds(
    rows: np.ndarray,
    cols: np.ndarray,
    wts: np.ndarray,
    g_lb: np.ndarray,
    exact: np.ndarray,
    U: float,
) -> None:
    """Raise ``g_lb`` (lower bounds on a 1-Lipschitz function g over m points) to
    ``max_p g(p) − path(p, x)`` over the points p where g is ``exact``; paths run over the
    undirected graph (rows, cols, Euclidean lengths wts). One multi-source Dijkstra from a
    virtual node joined to each p by an edge of weight M − g(p): its distance to x is
    M − max_p (g(p) − path(p, x)). Bounds below U are not needed and not spread. In place."""
    m = g_lb.size
    src = np.flatnonzero(exact)
    if src.size == 0:
        return
    g_max = float(g_lb[src].max())
    M = 2.0 * g_max if g_max > 0 else 1.0
    G = csr_matrix(
        (
            np.concatenate([wts, wts, M - g_lb[src]]),
            (
                np.concatenate([rows, cols, np.full(src.size, m)]),
                np.concatenate([cols, rows, src]),
            ),
        ),
        shape=(m + 1, m + 1),
    )
    dist = dijkstra(G, directed=True, indices=m, limit=max(M - U, 0.0))[:m]
    bound = (M - dist) - 1e-9 * M  # rounding margin keeps it a lower bound
    np.maximum(g_lb, np.where(exact, g_lb, bound), out=g_lb)


def closest_pair(A: np.ndarray, B: np.ndarray, *, graph_k: int = 8) -> tuple[float, int, int]:
    """Exact closest pair between point sets A and B (Euclidean): ``(distance, i, j)`` with
    ``d(A[i], B[j])`` minimal.

    Queries from the smaller set on a k-d tree of the larger one; when the sets are large and
    far apart, with the pivot search of :func:`_resolve_component_pivots` (exact distances at a
    few pivots of A, spread as Lipschitz bounds over A's k-NN graph) so that only the points of
    A near B are queried one by one."""
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    if A.shape[0] == 0 or B.shape[0] == 0:
        raise ValueError("closest_pair needs two non-empty point sets.")
    swap = A.shape[0] > B.shape[0]
    if swap:
        A, B = B, A
    tree = kd_tree(B)
    m = A.shape[0]
    unc = np.arange(m)
    best = (np.inf, -1, -1)
    if m > _PIVOT_MIN_QUERY:
        k = min(graph_k, m - 1)
        kd, ki = self_knn(kd_tree(A), A, k + 1)
        rows = np.repeat(np.arange(m), k)
        cols = ki[:, 1:].ravel().astype(np.int64)
        wts = kd[:, 1:].ravel()
        g_lb = np.full(m, -np.inf)
        exact = np.zeros(m, dtype=bool)
        rng = np.random.default_rng(0)
        XB = np.vstack([A, B])  # rows of A, then of B (for the product search)
        others = np.arange(m, m + B.shape[0])
        while unc.size > _PIVOT_MIN_QUERY:
            n_piv = max(_PIVOT_MIN_QUERY // 2, unc.size // 64)
            pool = unc[~exact[unc]]  # a pivot that stays unsettled goes to the exact search
            if pool.size == 0:
                break
            piv = np.sort(rng.choice(pool, size=min(n_piv, pool.size), replace=False))
            d, j = nearest_lower_bound(XB, piv, others)  # d: lower bounds on the distances
            j -= m
            dj = np.linalg.norm(A[piv] - B[j], axis=1)
            t = int(np.argmin(dj))
            if dj[t] < best[0]:
                best = (float(dj[t]), int(piv[t]), int(j[t]))
            g_lb[piv] = d
            exact[piv] = True
            _spread_lipschitz_bounds(rows, cols, wts, g_lb, exact, best[0])
            unc = unc[g_lb[unc] < best[0]]
        if unc.size and np.isfinite(best[0]):
            r, j = lightest_below(XB, np.zeros(XB.shape[0]), unc, others, best[0])
            t = int(np.argmin(r))
            if r[t] < best[0]:
                best = (float(r[t]), int(unc[t]), int(j[t] - m))
            unc = unc[:0]
    if unc.size:
        bnd = best[0] * (1 + 1e-12) if np.isfinite(best[0]) else np.inf
        d, j = tree.query(A[unc], k=1, distance_upper_bound=bnd, workers=-1)
        t = int(np.argmin(d))
        if d[t] < best[0]:
            best = (float(d[t]), int(unc[t]), int(j[t]))
    dist, i, j = best
    return (dist, j, i) if swap else (dist, i, j)


def _kruskal_filter(n: int, u: np.ndarray, v: np.ndarray, w: np.ndarray) -> MSTEdges:
    """Kruskal on a candidate edge set (removes duplicates / tie cycles); returns n − 1 edges."""
    order = np.lexsort((v, u, w))
    parent = np.arange(n)

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    keep = []
    uu = u.tolist()
    vv = v.tolist()
    for e in order.tolist():
        a, b = find(uu[e]), find(vv[e])
        if a != b:
            parent[a] = b
            keep.append(e)
            if len(keep) == n - 1:
                break
    keep_arr = np.asarray(keep, dtype=np.int64)
    if keep_arr.size != n - 1:  # pragma: no cover - guarded by construction
        raise RuntimeError("internal error: candidate edges do not span all points")
    return MSTEdges(u[keep_arr], v[keep_arr], w[keep_arr])


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
    K = int(min(n, max(2 * min_pts, 16)))
    tree = kd_tree(X)
    knn_d, knn_i = self_knn(tree, X, K)
    if core is None:
        core = np.ascontiguousarray(knn_d[:, min_pts - 1]) if min_pts > 1 else np.zeros(n)
    return _mst_boruvka(X, core, K, knn=(tree, knn_d, knn_i))


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
    Z = np.empty((n - 1, 4))
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
        Z[t, 0] = min(a, b)
        Z[t, 1] = max(a, b)
        Z[t, 3] = size[node]
    Z[:, 2] = w
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
        K = int(min(n, max(2 * min_pts, 16)))
        tree = kd_tree(X)
        knn_d, knn_i = self_knn(tree, X, K)
        core = np.ascontiguousarray(knn_d[:, min_pts - 1]) if min_pts > 1 else np.zeros(n)
        mst = _mst_boruvka(X, core, K, knn=(tree, knn_d, knn_i))
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
