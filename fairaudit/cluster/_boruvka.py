"""Exact minimum spanning tree of the mutual-reachability graph: Borůvka rounds over k-d trees
and a cached k-NN list, with a pivot search for large components far from the rest; and Prim's
algorithm for high dimensions. Used by :mod:`fairaudit.cluster.dc_distance` (the merge tree).

Borůvka: a cached k-NN list answers most points' "lightest edge out of my component", deeper
k-NN queries the points of small components, ball bounds between components
(:func:`_resolve_by_balls`) and product scans within a budget (:func:`_resolve_by_scans`) the
points whose lightest edge is farther, bounded queries on k-d trees of other components
(one pair of trees per bit of the component label, :func:`_resolve_bitwise`) the rest, and a
pivot search with Lipschitz bounds spread over the k-NN graph (:func:`_resolve_component_pivots`)
the large components whose nearest other component is far away; its distances come from the
product scans of :mod:`fairaudit.cluster._bichromatic`. Every answer is certified exact (a
candidate is accepted only when no unseen point can beat it); a final Kruskal pass removes tie
cycles. Oracle tests: ``tests/cluster/test_dc_distance.py``, ``tests/cluster/test_bichromatic.py``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from fairaudit.cluster._bichromatic import (
    ScanTable,
    nearest_lower_bound,
    spread_lipschitz_bounds,
)
from fairaudit.cluster._boruvka_scans import (
    _Atoms,
    _mr,
    _resolve_by_balls,
    _resolve_by_scans,
    take_lightest,
)
from fairaudit.cluster._knn import leaf_rank, midpoint_tree, query_rows, self_knn
from fairaudit.cluster._progress import Progress

logger = logging.getLogger("fairaudit.cluster.dc_distance")  # one logger for the dc-distance

_GLOBAL_CAP = 256  # deepest k-NN query on the whole tree before per-component complement trees
_PIVOT_MIN_QUERY = 2048  # components with this many unsettled points and a far-away rest ...
_PIVOT_GAP = 4.0  # ... (bound U > this × median k-NN radius) use the pivot search
_PIVOT_GRAPH_K = 16  # k-NN graph edges used to propagate pivot bounds
_PIVOT_SHARE = 16  # a pass draws 1/_PIVOT_SHARE of the points left as pivots (at least 1,024)
_COMPLEMENT_MAX = 8  # at most this many components to settle: complement trees, not bitwise
_FINISH_ENTRIES = 2**33  # stop the passes once (points left) × (other points) is below this


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


def _mst_boruvka(
    X: np.ndarray, core: np.ndarray, n_neighbors: int, knn: tuple | None = None
) -> MSTEdges:
    n = X.shape[0]
    tree = midpoint_tree(X) if knn is None else knn[0]
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
    atoms: _Atoms | None = None  # made in the first round with few enough
    table: ScanTable | None = None  # the product scans' operands, made once when first needed
    eu: list[np.ndarray] = []
    ev: list[np.ndarray] = []
    comp = np.arange(n, dtype=np.int64)
    n_comp = n
    idx = np.arange(n)
    rounds = 0
    progress = Progress("spanning tree (Boruvka)", n - 1, "merges")
    active = idx  # rows whose k-NN list may still leave their component (components only grow)
    while n_comp > 1:
        rounds += 1
        outside = comp[knn_i[active]] != comp[active][:, None]
        keep = outside.any(axis=1)
        active, outside = active[keep], outside[keep]
        rr = np.where(outside, knn_r[active], np.inf)
        j = np.argmin(rr, axis=1)
        cand = np.full(n, np.inf)
        partner = np.full(n, -1, dtype=np.int64)
        cand[active] = rr[np.arange(active.size), j]
        partner[active] = knn_i[active, j]
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
            if n_comp == 2:
                # both components share their lightest edge: settle it from one side only
                q = q[comp[q] == only]
            logger.debug("boruvka round %d: %d points unsettled by the k-NN lists",
                         rounds, int(unresolved.sum()))
            # ball bounds first (they settle whole tight components at once), then deeper
            # k-NN queries for the points of small components they leave
            if atoms is None:
                atoms = _Atoms.build(X, core, tree, comp, n_comp)
            if table is None:
                table = ScanTable(X)
            batch = _resolve_by_balls(X, core, _by_component(q, comp), comp, ub, cand, partner,
                                      atoms, table)
            q = np.concatenate(batch) if batch else q[:0]
            csize = np.bincount(comp, minlength=n_comp)
            small = csize[comp[q]] <= _GLOBAL_CAP // 2
            rest = _refine_global(tree, X, core, comp, q[small], K, ub, cand, partner)
            batch = _by_component(np.concatenate([rest, q[~small]]), comp)
            rest = []
            for qc in batch:
                c = int(comp[qc[0]])
                if qc.size >= _PIVOT_MIN_QUERY and ub[c] > _PIVOT_GAP * np.median(dK[qc]):
                    _resolve_component_pivots(X, core, qc, comp, c, ub, cand, partner, knn_i, knn_d,
                                              table)
                else:
                    rest.append(qc)
            logger.debug("boruvka round %d: %d components to the pivot search",
                         rounds, len(batch) - len(rest))
            batch = rest
            if batch:
                batch = _resolve_by_scans(X, core, batch, comp, ub, cand, partner, table)
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


def _by_component(q: np.ndarray, comp: np.ndarray) -> list[np.ndarray]:
    """The points q grouped by component (one array each, in component order)."""
    q = q[np.argsort(comp[q], kind="stable")]
    cq = comp[q]
    cuts = np.flatnonzero(np.r_[True, cq[1:] != cq[:-1], True]) if q.size else []
    return [q[a:b] for a, b in zip(cuts[:-1], cuts[1:], strict=True)]


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
    todo = np.unique(comp[q])
    if todo.size <= _COMPLEMENT_MAX:
        # few components: one complement tree each, every point queried once (not once a bit)
        for c in todo.tolist():
            qs = q[comp[q] == c]
            qs = qs[core[qs] < ub[c]]
            others = np.flatnonzero(comp != c)
            if qs.size and others.size:
                _query_outside(X, core, qs, others, midpoint_tree(X[others]), comp, ub, cand,
                               partner)
        return
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
            _query_outside(X, core, qs, others, midpoint_tree(X[others]), comp, ub, cand, partner)


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
    table: ScanTable | None = None,
) -> None:
    """Exact lightest edge from the points ``q`` of a large component ``c`` whose nearest other
    component is far away.

    Per-point k-d-tree queries are then slow for every point (in 10 dimensions a query whose
    answer is far away visits most leaves). Instead: the Euclidean distance to the rest,
    ``g(x) = d(x, rest)``, is 1-Lipschitz, so a lower bound on ``g(p)`` at a few *pivots* bounds
    it everywhere: ``g(x) >= g(p) − path(p, x)`` for any path inside the component (edges of
    the cached k-NN graph, a path is never shorter than the straight line). One multi-source
    Dijkstra spreads the best such bound; a point whose bound ``max(core(x), g_lb(x))`` reaches
    the best edge found so far (``U``) cannot improve it. Pivots (1/``_PIVOT_SHARE`` of the
    points left) are drawn until few are left or finishing is cheap; those points get the exact
    lightest edge below U. Both steps are float32 product scans against the rest
    (:mod:`fairaudit.cluster._bichromatic`; margins keep the bounds bounds, and the final edges
    are recomputed in float64). The result is
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
    unc = loc[q]
    # counts: points settled (ruled out by the bounds, then the rest by the exact search)
    progress = Progress("pivot search (last Boruvka rounds)", unc.size, "points settled")
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
        d, y = nearest_lower_bound(X, pts, others, table=table)  # d: a lower bound on g
        r = np.maximum(np.linalg.norm(X[pts] - X[y], axis=1), np.maximum(core[pts], core[y]))
        better = r < cand[pts]
        cand[pts[better]] = r[better]
        partner[pts[better]] = y[better]
        U = min(U, float(r.min()))
        g_lb[piv] = d
        exact[piv] = True
        spread_lipschitz_bounds(rows, cols, wts, g_lb, exact, U)
        # a point is done when its bound reaches U, or when its candidate edge meets its bound
        # (e.g. a pivot whose nearest outside point is also its lightest edge)
        lb = np.maximum(core[members[unc]], g_lb[unc])
        unc = unc[(lb < U) & (cand[members[unc]] > lb)]
        progress.update(q.size - unc.size)
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
        # only the component's lightest edge out is used (the pick below takes the minimum)
        take_lightest(X, core, pts, others, U, c, cand, partner, ub, table)
    else:
        _query_outside(X, core, pts, others, midpoint_tree(X[others]), comp, ub, cand, partner)
    progress.close()  # every point of the component settled


def _kruskal_filter(n: int, u: np.ndarray, v: np.ndarray, w: np.ndarray) -> MSTEdges:
    """Kruskal on a candidate edge set (removes repeats and tie cycles); returns n − 1 edges in
    the order (weight, u, v).

    Borůvka's candidates are usually a spanning tree with some edges twice (picked from both of
    their components' sides): then the first occurrence of each edge in that order is the
    answer, with no union-find pass (a Python loop: ~5 s at 1M points, issue 38); a Kruskal pass
    runs only when the distinct edges are more than n − 1 (a cycle of equal weights)."""
    order = np.lexsort((v, u, w))
    u, v, w = u[order], v[order], w[order]
    key = np.minimum(u, v) * np.int64(n) + np.maximum(u, v)
    first = np.sort(np.unique(key, return_index=True)[1])
    if first.size == n - 1:
        graph = coo_matrix((np.ones(first.size), (u[first], v[first])), shape=(n, n))
        if connected_components(graph, directed=False)[0] == 1:  # n − 1 edges, connected: a tree
            return MSTEdges(u[first], v[first], w[first])
    parent = list(range(n))
    keep = []
    uu = u.tolist()
    vv = v.tolist()
    for e in range(len(uu)):
        a = uu[e]
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        b = vv[e]
        while parent[b] != b:
            parent[b] = parent[parent[b]]
            b = parent[b]
        if a != b:
            parent[a] = b
            keep.append(e)
            if len(keep) == n - 1:
                break
    keep_arr = np.asarray(keep, dtype=np.int64)
    if keep_arr.size != n - 1:  # pragma: no cover - guarded by construction
        raise RuntimeError("internal error: candidate edges do not span all points")
    return MSTEdges(u[keep_arr], v[keep_arr], w[keep_arr])
