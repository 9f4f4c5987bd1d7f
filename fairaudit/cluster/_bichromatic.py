"""Distances from a few points to a large, far-away point set, by brute force in products.

What the Borůvka pivot search of :mod:`fairaudit.cluster.dc_distance` needs when a large
component's nearest other component is far away:

* :func:`nearest_lower_bound` — for each pivot p a lower bound on ``g(p) = min_q ‖p − q‖`` over
  the other points (within ~1e-4 of it) and a near-nearest q (an actual edge);
* :func:`lightest_below` — for the points the bounds could not rule out, the exact lightest
  mutual-reachability edge ``max(‖p − q‖, core(p), core(q))`` below a bound U.

Why products and not k-d-tree queries: when the sets are far apart compared with the points'
spacing (the last Borůvka rounds of a density clustering) a 1-NN query visits most of the other
set's tree in 10 dimensions, reading its points from memory one query at a time: 9.8 ms of CPU
a query into 500,000 points (2026-11-26). A float32 product of 128 rows against a cache-sized
block of the other set reads each point once per 128 rows: 0.35 ns per (row, point), 0.18 ms a
row there. (Block bounds — centre and radius per leaf — do not help: in 10 dimensions the
distances concentrate and a pivot still had to visit 40 % of the blocks, measured.)

Exactness: squared distances come from ``|q|² − 2 p·q (+ |p|²)`` in float32 on coordinates
centred at the other set's mean; every decision allows a margin of 1e-5 of the squared scale
(float32 rounding of these sums is below 1e-6 of it). Lower bounds subtract the margin; the
lightest edge is chosen among all candidates within the margin, each recomputed in float64 by
the direct formula ``‖p − q‖`` that the rest of the module uses (ties: the smaller index).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from fairaudit._threads import over_ranges
from fairaudit.cluster._knn import kd_tree, self_knn

__all__ = ["ScanTable", "closest_pair", "lightest_below", "nearest_lower_bound", "nonzero2",
           "spread_lipschitz_bounds"]

_ROWS = 128  # rows per product
_COLS = 8192  # points per product (128 × 8192 float32 = 4 MB, cache-sized)
_REL = 1e-5  # margin on squared distances, relative to their scale
_PIVOT_MIN_QUERY = 2048  # closest_pair: pivot passes while more points than this are left


class _Prepared:
    """float32 copies centred at the other set's mean, each with one more column so that one
    product gives ``|q|² − 2 p·q``: the rows scaled by −2 and a column of ones, the other set
    transposed and its squared norms as the last row; the rows' squared norms and the margin.
    (The squared norms in the product instead of added after it: one pass less over each
    product's output, ~15 % of a scan's time measured in issue 38; the product's rounding is
    that of one more term, far inside the margin.)"""

    def __init__(self, X: np.ndarray, rows: np.ndarray, others: np.ndarray,
                 table: ScanTable | None = None) -> None:
        d = X.shape[1]
        if table is None:
            mu = X[others[: min(others.size, 4096)]].mean(axis=0)
            B = X[others] - mu
            sqB = np.einsum("ij,ij->i", B, B)
            self.Bt = np.empty((d + 1, B.shape[0]), dtype=np.float32)
            self.Bt[:d] = B.T
            self.Bt[d] = sqB
            sq_max = float(sqB.max())
        else:
            if table.Bt.shape != (d + 1, X.shape[0]):
                raise ValueError("the ScanTable was made from another point set")
            mu = table.mu
            self.Bt = np.take(table.Bt, others, axis=1)
            sq_max = table.sq_max  # (of the whole set: a larger margin is still a margin)
        P = X[rows] - mu
        self.sqP = np.einsum("ij,ij->i", P, P)
        self.P2 = np.empty((P.shape[0], d + 1), dtype=np.float32)
        np.multiply(P, -2.0, out=self.P2[:, :d], casting="same_kind")
        self.P2[:, d] = 1.0
        self.tol2 = _REL * (float(self.sqP.max()) + sq_max + 1e-300)


class ScanTable:
    """The other-set operands of :class:`_Prepared` made once for a point set X that many scans
    read subsets of (FairDen's Borůvka rounds: thousands of :func:`lightest_below` calls, each
    against a component's near atoms or everything outside it): X centred at its mean in
    float32, transposed, with the squared norms as the last row. A scan then gathers its
    columns (``np.take``, 44 bytes a point in 10 dimensions) instead of centring, squaring,
    transposing and casting its float64 rows again: 0.10 s -> 6 ms for 900,000 of 1,000,000
    points (measured, issue 38). The margin uses the largest squared norm of the whole set
    (at least that of any subset, so still a margin); the edges are recomputed in float64 as
    before, so the results are the same."""

    def __init__(self, X: np.ndarray) -> None:
        n, d = X.shape
        self.mu = X.mean(axis=0) if n else np.zeros(d)
        C = X - self.mu
        sq = np.einsum("ij,ij->i", C, C)
        self.Bt = np.empty((d + 1, n), dtype=np.float32)
        self.Bt[:d] = C.T
        self.Bt[d] = sq
        self.sq_max = float(sq.max()) if n else 0.0


def nonzero2(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.nonzero(mask)`` of a 2-D boolean array: (rows, columns) of its True
    entries in row-major order, the same arrays, from the flat positions. numpy 2's 2-D
    ``nonzero`` costs 1.4 ns an entry on a mask of 128 x 8,192 with 0.1 % True (7.4 ns at
    half True) against 0.11 (0.38) for ``flatnonzero`` (measured, issue 38): in the scans
    below it cost several times the product it tests."""
    flat = np.flatnonzero(mask)
    return np.divmod(flat, mask.shape[1]) if mask.shape[1] else (flat, flat)


def _parallel(fn: Callable[[int, int], object], n: int, workers: int) -> list:
    """fn(a, b) over ``workers`` contiguous column ranges of [0, n) of at least ``_COLS``
    columns, in threads, BLAS at one thread each (:func:`fairaudit._threads.over_ranges`)."""
    return over_ranges(fn, n, workers, min_span=_COLS)


def nearest_lower_bound(
    X: np.ndarray, rows: np.ndarray, others: np.ndarray, *, workers: int = -1,
    table: ScanTable | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(g_lb, q)``: for each p in ``rows`` a lower bound on ``min_q ‖X[p] − X[q]‖`` over q in
    ``others`` (exact minus at most ~1e-5 of the squared scale, in squared units) and a point
    q of ``others`` within that margin of the minimum (an index into X: an actual edge).
    ``table``: a :class:`ScanTable` of X (as in :func:`lightest_below`)."""
    m = rows.size
    if m == 0 or others.size == 0:
        return np.full(m, np.inf), np.full(m, -1, dtype=np.int64)
    pr = _Prepared(X, rows, others, table)

    def scan(a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        best = np.full(m, np.inf, dtype=np.float32)
        where = np.zeros(m, dtype=np.int64)  # column of the row's best
        for r0 in range(0, m, _ROWS):
            Pr = pr.P2[r0 : r0 + _ROWS]
            bs = best[r0 : r0 + _ROWS]
            ws = where[r0 : r0 + _ROWS]
            rr = np.arange(Pr.shape[0])
            for c0 in range(a, b, _COLS):
                c1 = min(c0 + _COLS, b)
                G = Pr @ pr.Bt[:, c0:c1]
                j = G.argmin(axis=1)
                v = G[rr, j]
                better = v < bs
                bs[better] = v[better]
                ws[better] = c0 + j[better]
        return best, where

    parts = _parallel(scan, others.size, workers)
    best = np.full(m, np.inf)
    where = np.zeros(m, dtype=np.int64)
    for v, w in parts:
        better = v < best
        best[better] = v[better]
        where[better] = w[better]
    g_lb = np.sqrt(np.maximum(best + pr.sqP - pr.tol2, 0.0))
    return g_lb, others[where]


def lightest_below(
    X: np.ndarray,
    core: np.ndarray,
    rows: np.ndarray,
    others: np.ndarray,
    U: float,
    *,
    workers: int = -1,
    lightest_only: bool = False,
    table: ScanTable | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(r, q)``: for each p in ``rows`` the exact lightest edge
    ``r = max(‖X[p] − X[q]‖, core[p], core[q])`` over q in ``others`` if it is below ``U``
    (finite), and its q (ties: the smaller index); ``(inf, -1)`` for rows with none.

    ``lightest_only``: only the lightest edge over all rows is wanted (Borůvka: a component's
    lightest edge out). Every row's limit then drops to the lightest edge any row has found so
    far, instead of to its own: on data where many pairs lie within U (clusters close to each
    other, issue 38) a row stops collecting candidates it cannot use. The rows whose lightest
    edge is that minimum get it, exactly as above (ties included); the others ``(inf, -1)``.

    ``table``: a :class:`ScanTable` of X, for many calls over subsets of it (the same edges,
    less preparation)."""
    m = rows.size
    r_best = np.full(m, np.inf)
    q_best = np.full(m, -1, dtype=np.int64)
    if not np.isfinite(U):
        raise ValueError("lightest_below needs a finite bound U")
    keep = core[rows] < U
    others = others[core[others] < U]
    if not keep.any() or others.size == 0:
        return r_best, q_best
    sub = np.flatnonzero(keep)
    pr = _Prepared(X, rows[sub], others, table)
    # candidate columns: ‖p − q‖² < U² (within the margin), i.e. G = |q|² − 2p·q < U² − |p|²
    lim = (U * U - pr.sqP + pr.tol2).astype(np.float32)
    # the weights r² − |p|² = max(G, core(q)² − |p|², core(p)² − |p|²) in float32, within
    # ``tol_r`` (the products' margin, and the rounding of squares up to U², as ``lim``'s)
    sqp32 = pr.sqP.astype(np.float32)
    core_q2 = (core[others] ** 2).astype(np.float32)
    core_p2 = (core[rows[sub]] ** 2 - pr.sqP).astype(np.float32)
    tol_r = 2.0 * (pr.tol2 + 1e-6 * U * U)

    def scan(a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        best = np.full(sub.size, U)  # exact lightest edge per row so far (U: none yet)
        bq = np.full(sub.size, -1, dtype=np.int64)
        lr_all = lim.copy()  # per-row limit on G, lowered as edges are found
        shared = U  # lightest_only: the lightest edge found by any row
        for r0 in range(0, sub.size, _ROWS):
            Pr = pr.P2[r0 : r0 + _ROWS]
            lr = lr_all[r0 : r0 + _ROWS]
            for c0 in range(a, b, _COLS):
                c1 = min(c0 + _COLS, b)
                G = Pr @ pr.Bt[:, c0:c1]
                hit = np.flatnonzero(G.min(axis=1) < lr)
                if hit.size == 0:
                    continue
                Gh = G if hit.size == G.shape[0] else G[hit]  # (diffuse data: every row)
                ii, jj = nonzero2(_candidates(Gh, lr[hit], core_q2[c0:c1], sqp32[hit + r0],
                                              core_p2[hit + r0], tol_r, others[c0:c1]))
                if ii.size == 0:  # the block's lightest edges are beyond the rows' limits
                    continue
                ii = hit[ii] + r0
                _keep_lightest(X, core, rows[sub], others, ii, jj + c0, best, bq)
                # a row's later candidates must beat its best: ‖p − q‖ <= best (margin kept)
                t = np.unique(ii)
                lr[t - r0] = np.minimum(lr[t - r0], best[t] ** 2 - pr.sqP[t] + pr.tol2)
                if lightest_only and best[t].min() < shared:
                    shared = float(best[t].min())
                    np.minimum(lr_all, shared * shared - pr.sqP + pr.tol2,
                               out=lr_all, casting="unsafe")
        return best, bq

    parts = _parallel(scan, others.size, workers)
    best = np.full(sub.size, U)
    bq = np.full(sub.size, -1, dtype=np.int64)
    for r, q in parts:
        found = q >= 0
        better = found & ((r < best) | ((r == best) & ((bq < 0) | (q < bq))))
        best[better] = r[better]
        bq[better] = q[better]
    found = bq >= 0
    if lightest_only and found.any():
        found &= best == best[found].min()
    r_best[sub[found]] = best[found]
    q_best[sub[found]] = bq[found]
    return r_best, q_best


def _candidates(G: np.ndarray, lim: np.ndarray, core_q2: np.ndarray, sq_p: np.ndarray,
                core_p2: np.ndarray, tol: float, q: np.ndarray) -> np.ndarray:
    """Which of a block's (row, column) pairs can hold a row's lightest edge: below the row's
    limit (``G < lim``) and, on the float32 weights ``R = max(G, core(q)² − |p|²)`` and
    ``c = core(p)² − |p|²`` (each within ``tol / 2`` of its exact value), not heavier than the
    block's lightest: ``R ≤ max(min R, c) + tol``. Of the pairs certainly below ``c`` (their
    weight is exactly core(p): all tie) only the smallest q is kept, which wins the tie. The
    rest go to :func:`_keep_lightest` in float64, as every pair below the limit did: where
    many pairs lie within U (diffuse clusters, issue 38) most of them cannot be a row's
    lightest, and the float64 check cost 176 ns a pair, the product 0.35 ns."""
    R = np.maximum(G, core_q2[None, :] - sq_p[:, None])
    top = np.maximum(R.min(axis=1), core_p2) + np.float32(tol)
    keep = (R <= top[:, None]) & (G < lim[:, None])
    sure = R < (core_p2 - np.float32(tol))[:, None]  # weight exactly core(p)
    tied = np.flatnonzero(sure.any(axis=1))
    if tied.size:
        qmin = np.where(sure[tied], q[None, :], np.iinfo(q.dtype).max).min(axis=1)
        keep[tied] &= ~sure[tied] | (q[None, :] == qmin[:, None])
    return keep


def _keep_lightest(
    X: np.ndarray,
    core: np.ndarray,
    P: np.ndarray,
    others: np.ndarray,
    ii: np.ndarray,
    jj: np.ndarray,
    best: np.ndarray,
    bq: np.ndarray,
) -> None:
    """Candidate edges (P[ii], others[jj]) by the direct formula; per row keep the lightest
    below ``best`` (ties: the smaller index). ``ii`` is non-decreasing (``np.nonzero``'s row
    order): each row's lightest is a segment minimum, no sort. In place."""
    p = P[ii]
    q = others[jj]
    r = np.maximum(np.linalg.norm(X[p] - X[q], axis=1), np.maximum(core[p], core[q]))
    starts = np.flatnonzero(np.r_[True, ii[1:] != ii[:-1]])
    seg = np.cumsum(np.r_[False, ii[1:] != ii[:-1]])
    rmin = np.minimum.reduceat(r, starts)
    q = np.minimum.reduceat(np.where(r == rmin[seg], q, np.iinfo(np.int64).max), starts)
    ii, r = ii[starts], rmin
    cur, cq = best[ii], bq[ii]
    better = (r < cur) | ((r == cur) & (cq >= 0) & (q < cq))
    best[ii[better]] = r[better]
    bq[ii[better]] = q[better]


def spread_lipschitz_bounds(
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
    far apart, with the pivot search of ``_boruvka._resolve_component_pivots`` (exact distances at a
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
            spread_lipschitz_bounds(rows, cols, wts, g_lb, exact, best[0])
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
