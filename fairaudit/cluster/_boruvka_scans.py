"""Borůvka's product-scan stages (:mod:`fairaudit.cluster._boruvka`): ball bounds between
atoms, then scans within a budget, for the points whose lightest edge out of their component
lies beyond their k-NN lists.

Both find exact lightest edges by the float32 product scans of
:func:`fairaudit.cluster._bichromatic.lightest_below` (margins keep bounds bounds; edges are
recomputed in float64); bounds only drop points and atoms that cannot beat a component's
known edge. Oracle tests: ``tests/cluster/test_dc_distance.py``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from fairaudit.cluster._bichromatic import ScanTable, lightest_below, nonzero2
from fairaudit.cluster._knn import leaf_rank

logger = logging.getLogger("fairaudit.cluster.dc_distance")  # one logger for the dc-distance

_PRODUCTS_MIN_DIM = 8  # both stages from this many dimensions (below, k-d-tree queries are cheap)
_ATOM_SIZE = 128  # ball bounds between components: over atoms, chunks of the leaf order ...
_BALL_MAX_ATOMS = 32_768  # ... made when at most this many (a component's part of a chunk)
_BALL_MAX_PAIRS = 2**31  # a component's scans of at most this many (row, point) pairs (~0.75 s)
_BOUND_ENTRIES = 1 << 18  # entries of a block of the atoms' bound matrix (2 MB: in cache; 2^22:
# 25.2 -> 27.5 s for the merge tree of walk20, 300,000 rows, 2^16: 27.0 s)
_GROUP_ROWS = 256  # ... each of the points of a few atoms (two products' rows) at a time
_BALL_CACHE = 2**23  # atom pairs below a component's first bound kept (else recomputed)
_SCAN_MAX_ENTRIES = 2**34  # what the balls leave: product scans up to this many (row, point)
# pairs a round (~6 s of CPU at 0.35 ns a pair); the bitwise search for the rest


def _mr(X: np.ndarray, core: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d = np.linalg.norm(X[a] - X[b], axis=-1)
    return np.maximum(d, np.maximum(core[a], core[b]))


def take_lightest(X: np.ndarray, core: np.ndarray, rows: np.ndarray, others: np.ndarray,
                  U: float, c: int, cand: np.ndarray, partner: np.ndarray,
                  ub: np.ndarray, table: ScanTable | None = None) -> None:
    """Component c's lightest edge from ``rows`` to ``others`` below U (a product scan,
    :func:`lightest_below`), kept where it beats a row's candidate; c's bound ``ub[c]`` lowered
    to it. In place."""
    r, y = lightest_below(X, core, rows, others, U, lightest_only=True, table=table)
    better = r < cand[rows]
    cand[rows[better]] = r[better]
    partner[rows[better]] = y[better]
    if better.any():
        ub[c] = min(ub[c], float(r[better].min()))


@dataclass(frozen=True)
class _Atoms:
    """A fixed partition of the points into atoms, each within one component (components only
    grow, so it stays so), and each atom's ball (centroid, padded radius) and core range."""

    atom: np.ndarray  # (n,) atom of each point
    first: np.ndarray  # a point of each atom (its component is the atom's)
    sizes: np.ndarray
    mu: np.ndarray
    sq: np.ndarray  # |mu|^2
    rad: np.ndarray
    low_core: np.ndarray
    top_core: np.ndarray
    order: np.ndarray  # points sorted by atom
    starts: np.ndarray
    tol: float  # rounding margin on |mu_a - mu_b|^2 by the norms
    scale: float

    @classmethod
    def build(cls, X: np.ndarray, core: np.ndarray, tree, comp: np.ndarray,  # noqa: ANN001
              n_comp: int) -> _Atoms | None:
        """Atoms = the components' parts of the chunks of ``_ATOM_SIZE`` consecutive points in
        ``tree``'s leaf order (a scipy cKDTree over X: small, compact groups), made in the first
        round with at most ``_BALL_MAX_ATOMS`` of them (None before): made from the components
        of that round, they stay tight when later rounds merge components that lie far apart."""
        key = (leaf_rank(tree) // _ATOM_SIZE) * np.int64(n_comp) + comp
        akeys, atom = np.unique(key, return_inverse=True)
        n_at = akeys.size
        if n_at > _BALL_MAX_ATOMS:
            return None
        d = X.shape[1]
        sizes = np.bincount(atom, minlength=n_at)
        mu = np.column_stack([np.bincount(atom, weights=X[:, j], minlength=n_at)
                              for j in range(d)])
        mu /= np.maximum(sizes, 1)[:, None]
        dist = np.sqrt(np.einsum("ij,ij->i", X - mu[atom], X - mu[atom]))
        rad = np.zeros(n_at)
        np.maximum.at(rad, atom, dist)
        scale = float(np.abs(X).max()) if X.size else 0.0
        rad = rad * (1.0 + 1e-9) + 1e-12 * scale  # rounding of the centroids and norms
        top_core = np.full(n_at, -np.inf)
        np.maximum.at(top_core, atom, core)
        low_core = np.full(n_at, np.inf)
        np.minimum.at(low_core, atom, core)
        sq = np.einsum("ij,ij->i", mu, mu)
        order = np.argsort(atom, kind="stable")
        starts = np.r_[0, np.cumsum(sizes)]
        return cls(atom, order[starts[:-1]], sizes, mu, sq, rad, low_core, top_core, order,
                   starts, 1e-12 * (float(sq.max()) + 1e-300), scale)


def _resolve_by_balls(
    X: np.ndarray,
    core: np.ndarray,
    batch: list[np.ndarray],
    comp: np.ndarray,
    ub: np.ndarray,
    cand: np.ndarray,
    partner: np.ndarray,
    atoms: _Atoms | None,
    table: ScanTable | None = None,
) -> list[np.ndarray]:
    """Lightest outside edges of the components in ``batch`` (each an array of a component's
    unsettled points) by product scans of the points that ball bounds cannot rule out; returns
    the points left for the deeper k-NN queries, the pivot search, the scans of
    :func:`_resolve_by_scans` and the bitwise search.

    Each atom (:class:`_Atoms`) lies in the ball of its centroid and radius, so no edge between
    atoms a and b is lighter than max(‖μ_a − μ_b‖ − R_a − R_b, min core of a, min core of b)
    (r ≥ d, r ≥ both core distances). With U the lightest edge component c knows, its atoms
    are taken in the order of their least bound against another component's atom, up to
    ``_GROUP_ROWS`` of c's points at a time, each group scanned exactly
    (:func:`lightest_below`) against the atoms whose bound is below U; U drops as edges are
    found, and once the next atom's bound reaches U the rest of c's points are settled (they
    cannot beat it). Issue 38's ``many-small`` (2,473 tight blobs in 10 dimensions): their
    786,000 points each made a far-reaching k-d-tree query before. A component with no edge
    known yet first scans the atom pair of least reach (the farthest two of their points can
    be: every edge between them is at most that heavy), which gives one. A component whose
    scans would pass ``_BALL_MAX_PAIRS`` (row, point) pairs leaves its points not yet ruled
    out to the next steps."""
    if len(batch) == 0 or atoms is None or X.shape[1] < _PRODUCTS_MIN_DIM:
        return batch
    A_ = atoms
    n_at = A_.sizes.size
    acomp = comp[A_.first]
    atom, sizes, mu, sq, rad, tol, scale = (A_.atom, A_.sizes, A_.mu, A_.sq, A_.rad, A_.tol,
                                            A_.scale)
    low_core, top_core, order, starts = A_.low_core, A_.top_core, A_.order, A_.starts

    def members(ks: np.ndarray) -> np.ndarray:
        return np.concatenate([order[starts[k] : starts[k + 1]] for k in ks.tolist()])

    def scan(qc: np.ndarray, c: int, ks: np.ndarray, U: float) -> None:
        take_lightest(X, core, qc, members(ks), U, c, cand, partner, ub, table)

    block = max(1, (1 << 22) // n_at)  # atom rows per block of the bound matrices
    sqx = np.einsum("ij,ij->i", X, X)
    tolx = 1e-12 * (float(sqx.max()) + float(sq.max()) + 1e-300)  # Gram rounding, as ``tol``

    def points_below(rows: np.ndarray, ks: np.ndarray, U: float) -> np.ndarray:
        """Which (point, atom) pairs of ``rows`` × ``ks`` may hold an edge below U: a point is
        nearer to an atom's points than ‖x − μ‖ − R by no more (tighter than the atoms' balls
        by the query atom's radius), and r ≥ both core distances. The test
        max(‖x − μ‖ − R, core(x), min core) < U, as (core(x) < U) & (min core < U) &
        (‖x − μ‖² − tol < (U + R)²): one product ([x, |x|², 1] against [−2μ, 1, |μ|²]) and
        one comparison instead of six passes over the matrix."""
        ok_r = core[rows] < U
        ok_k = low_core[ks] < U
        g = x_aug[rows[ok_r]] @ mu_r[ks[ok_k]].T
        g -= tolx
        out = np.zeros((rows.size, ks.size), dtype=bool)
        lim = (U + rad[ks[ok_k]]) ** 2
        out[np.ix_(ok_r, ok_k)] = g < lim
        return out

    # |μ_a|² + |μ_b|² − 2 μ_a·μ_b as one product: [μ, |μ|², 1] against [−2μ, 1, |μ|²]
    ones = np.ones((n_at, 1))
    mu_l = np.hstack([mu, sq[:, None], ones])
    mu_r = np.hstack([-2.0 * mu, ones, sq[:, None]])
    x_aug = np.hstack([X, sqx[:, None], np.ones((X.shape[0], 1))])  # [x, |x|², 1]

    def bounds(A: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Lower bounds on the edges between the atoms A and the atoms cols:
        max(‖μ_a − μ_b‖ − R_a − R_b, min core of a, min core of b), in place over one matrix
        (the bound matrices are the balls' main cost: atoms × atoms near them, every round)."""
        g = mu_l[A] @ mu_r[cols].T
        g -= tol
        np.maximum(g, 0.0, out=g)
        np.sqrt(g, out=g)
        g -= rad[A, None]
        g -= rad[cols]
        np.maximum(g, low_core[A, None], out=g)
        np.maximum(g, low_core[cols], out=g)
        return g

    # component balls from their atoms' (centroid: the size-weighted mean; radius: the farthest
    # atom ball): only the atoms of components whose ball comes within U of c's can matter
    n_c = int(acomp.max()) + 1
    csize = np.bincount(acomp, weights=sizes, minlength=n_c)
    cmu = np.column_stack([np.bincount(acomp, weights=sizes * mu[:, j], minlength=n_c)
                           for j in range(mu.shape[1])]) / np.maximum(csize, 1.0)[:, None]
    crad = np.zeros(n_c)
    np.maximum.at(crad, acomp, np.sqrt(np.einsum("ij,ij->i", mu - cmu[acomp],
                                                 mu - cmu[acomp])) + rad)
    crad = crad * (1.0 + 1e-9) + 1e-12 * scale
    clow = np.full(n_c, np.inf)
    np.minimum.at(clow, acomp, low_core)
    aorder = np.argsort(acomp, kind="stable")
    astart = np.r_[0, np.cumsum(np.bincount(acomp, minlength=n_c))]

    def near_columns(c: int, U: float) -> np.ndarray:
        """The atoms of the components (not c) whose ball bound against c's is below U."""
        gap = np.sqrt(np.einsum("ij,ij->i", cmu - cmu[c], cmu - cmu[c])) - crad - crad[c]
        ks = np.flatnonzero((np.maximum(gap, np.maximum(clow, clow[c])) < U)
                            & (np.arange(n_c) != c))
        if ks.size == 0:
            return ks
        return np.concatenate([aorder[astart[k] : astart[k + 1]] for k in ks.tolist()])

    left = []
    for qc in batch:
        c = int(comp[qc[0]])
        own = acomp == c
        qa = np.unique(atom[qc])
        if not np.isfinite(ub[c]):
            best = (np.inf, -1, -1)
            for b0 in range(0, qa.size, block):
                A = qa[b0 : b0 + block]
                g = sq[A, None] + sq[None, :] - 2.0 * (mu[A] @ mu.T)
                reach = np.maximum(np.sqrt(np.maximum(g, 0.0) + tol) + rad[A, None] + rad,
                                   np.maximum(top_core[A, None], top_core))
                reach[:, own] = np.inf
                t = np.unravel_index(int(np.argmin(reach)), reach.shape)
                if reach[t] < best[0]:
                    best = (float(reach[t]), int(A[t[0]]), int(t[1]))
            if not np.isfinite(best[0]):
                left.append(qc)  # (one component: cannot happen in a round)
                continue
            scan(members(np.array([best[1]])), c, np.array([best[2]]),
                 best[0] * (1.0 + 1e-9) + 1e-12 * scale)
            if not np.isfinite(ub[c]):  # (cannot happen: an edge lies below the reach)
                left.append(qc)
                continue
        # each query atom's least bound against the other components' atoms; the atoms are
        # scanned in that order, a group of up to _GROUP_ROWS points at a time against the
        # atoms near the group, until the next bound reaches the lightest edge found
        # (the pairs below the first U kept, up to _BALL_CACHE of them: U only drops)
        U0 = float(ub[c])
        # an atom whose points all have core distances >= U0 has no edge below U0 (r >= core)
        cols = near_columns(c, U0)
        cols = cols[low_core[cols] < U0]
        if cols.size == 0:
            continue  # no point of c can beat U
        live = np.flatnonzero(low_core[qa] < U0)
        blk = max(1, _BOUND_ENTRIES // cols.size)
        lbmin = np.full(qa.size, np.inf)
        nb_idx: list | None = []
        nb_lb: list = []
        nb_cnt = np.zeros(qa.size, dtype=np.int64)
        for b0 in range(0, live.size, blk):
            at = live[b0 : b0 + blk]
            lb = bounds(qa[at], cols)
            lbmin[at] = lb.min(axis=1)
            if nb_idx is not None:
                r_, k_ = nonzero2(lb < U0)
                if sum(a.size for a in nb_idx) + r_.size > _BALL_CACHE:
                    nb_idx = None
                    continue
                nb_idx.append(cols[k_])
                nb_lb.append(lb[r_, k_])
                nb_cnt[at] = np.bincount(r_, minlength=at.size)
        if nb_idx is not None:
            nb_ptr = np.r_[0, np.cumsum(nb_cnt)]
            nb_k = np.concatenate(nb_idx) if nb_idx else np.empty(0, dtype=np.int64)
            nb_v = np.concatenate(nb_lb) if nb_lb else np.empty(0)
        o = np.argsort(lbmin, kind="stable")
        qa, lbmin = qa[o], lbmin[o]
        qs = qc[np.argsort(atom[qc], kind="stable")]
        at_q = atom[qs]
        lo = np.searchsorted(at_q, qa, side="left")
        hi = np.searchsorted(at_q, qa, side="right")
        cnt = hi - lo
        spent = 0.0
        pos = 0
        while pos < qa.size and lbmin[pos] < ub[c]:
            U = float(ub[c])
            end = pos + 1
            rows_n = int(cnt[pos])
            while end < qa.size and lbmin[end] < U and rows_n + cnt[end] <= _GROUP_ROWS:
                rows_n += int(cnt[end])
                end += 1
            grp = qa[pos:end]
            if nb_idx is not None:
                sel = np.concatenate([np.arange(nb_ptr[j], nb_ptr[j + 1]) for j in o[pos:end]])
                near = np.unique(nb_k[sel[nb_v[sel] < U]])
            else:
                near = cols[(bounds(grp, cols) < U).any(axis=0)]
            rows = np.concatenate([qs[lo[i] : hi[i]] for i in range(pos, end)])
            if near.size:  # each point against each near atom: fewer atoms and points to scan
                below = points_below(rows, near, U)
                cols_kept = below.any(axis=0)
                near = near[cols_kept]
                rows = rows[below.any(axis=1)]
            if near.size == 0 or rows.size == 0:
                pos = end  # no point of the group has an edge below U
                continue
            pairs = float(rows.size) * float(sizes[near].sum())
            if spent + pairs > _BALL_MAX_PAIRS:
                rest = [qs[lo[i] : hi[i]] for i in range(pos, qa.size) if lbmin[i] < U]
                left.append(np.sort(np.concatenate(rest)))
                break
            spent += pairs
            scan(rows, c, near, U)
            pos = end
    logger.debug("ball bounds over %d atoms: %d of %d components settled, %d points left",
                 n_at, len(batch) - len(left), len(batch), int(sum(q.size for q in left)))
    return left


def _resolve_by_scans(
    X: np.ndarray,
    core: np.ndarray,
    batch: list[np.ndarray],
    comp: np.ndarray,
    ub: np.ndarray,
    cand: np.ndarray,
    partner: np.ndarray,
    table: ScanTable | None = None,
) -> list[np.ndarray]:
    """Lightest outside edges of the components in ``batch`` by product scans of their points
    against every point outside (:func:`lightest_below`), cheapest first, while the round's
    scans stay within ``_SCAN_MAX_ENTRIES`` (row, point) pairs; returns the parts left for the
    bitwise search. A component with no edge known yet first takes the lightest of its edges to
    64 seeded random outside points as its bound.

    A point gets here when neither its k-NN list (``_GLOBAL_CAP`` neighbours) nor the ball
    bounds settled it: its lightest edge out is far compared with its neighbours, which is
    where a k-d-tree query in 10 dimensions visits most of the tree (issue 38: 70 components,
    10,564 points of ``many-small`` at 300,000 rows took the bitwise search 250 s; a product
    scan costs 0.35 ns a pair). Exact: ``lightest_below`` is (float32 products with margins,
    edges recomputed in float64); the bound U only drops points that cannot beat it."""
    if X.shape[1] < _PRODUCTS_MIN_DIM:
        return batch
    n = X.shape[0]
    sizes = np.bincount(comp)
    plan = []
    for qc in batch:
        c = int(comp[qc[0]])
        plan.append((float(qc.size) * float(n - sizes[c]), c, qc))
    plan.sort(key=lambda t: t[0])
    spent = 0.0
    left = []
    for cost, c, qc in plan:
        if spent + cost > _SCAN_MAX_ENTRIES:
            left.append(qc)
            continue
        spent += cost
        others = np.flatnonzero(comp != c)
        if not np.isfinite(ub[c]):
            # any edge out bounds the lightest: the best of a few to seeded random points
            pick = np.random.default_rng(c).choice(others, size=min(64, others.size),
                                                   replace=False)
            r0 = _mr(X, core, np.full(pick.size, qc[0]), pick)
            t = int(np.argmin(r0))
            if r0[t] < cand[qc[0]]:
                cand[qc[0]], partner[qc[0]] = r0[t], pick[t]
            ub[c] = min(ub[c], float(r0[t]))
        take_lightest(X, core, qc, others, float(ub[c]), c, cand, partner, ub,  # (a known edge)
                      table)
    logger.debug("product scans: %d of %d components settled (%.3g pairs), %d points left",
                 len(plan) - len(left), len(plan), spent, int(sum(q.size for q in left)))
    return left
