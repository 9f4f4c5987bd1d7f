"""Point LCDs of a cluster from cached in-cluster neighbour lists: LOFKM's refinement (issue 25).

The refinement (:mod:`fairaudit.cluster.lcd_refine`) evaluates LCD(C) (seed 002, eq. 7) after
every accepted prototype move. A move changes a cluster in two ways: its prototype (every
member's dist(X, c), so every member's qualifying neighbours) and its members (the rows that
change cluster). The point value LCD(X, C) is a function of X's nearest fellow members in order
and of the prototype; the nearest fellow members depend on the member set alone. So each
cluster keeps, per member, its nearest fellow members (a list of global row indices and
distances) and recomputes only the arithmetic of
:func:`fairaudit.metrics.local_connectivity._cluster_lcd` when the prototype moves; a list is
queried again only when a row that joined or left the cluster lies inside it.

**Which lists a membership change touches.** A list of X holds the Q nearest members (the row
itself included) from one k-d tree query; its *horizon* h is the distance of the Q-th, and its
*trusted prefix* the entries nearer than h — every member nearer than h, so that prefix is the
exact order of X's members up to h whatever else the cluster holds. A row s that joins or leaves
changes the prefix iff dist(X, s) < h; otherwise the prefix, and every value computed from it,
stays the same. A list that holds the whole cluster (Q = m) has h = ∞ (any change touches it).
Touched lists and the lists of joining rows are queried again on a tree over the new members.

**Same values as the metric, bit for bit.** The computation is the metric's: rounds of
k = 2t + 2, 4k, … nearest members; a point is finished when t qualifying neighbours are found,
k reaches the cluster size, or its k-th neighbour is at least dist(X, c) away; its value is
``contrib.sum(axis=1)`` over a row of k entries holding the contributions of the taken
neighbours at their positions and zeros elsewhere (so numpy's pairwise summation adds the same
numbers in the same order); dist(X, c) is computed by the same expression over the members; a
distance from any k-d tree is a function of the two rows only (the lists come from a tree with
larger leaves, asked in its leaf order: faster, same distances). A round of k needs the first k
entries of a list to be trusted; a shorter list is deepened by a query of k + 1 (then twice
that, while a group of copies straddles its end).

**Ties.** Where two members that are not copies of each other are exactly as far from X, "the k
nearest" is ambiguous and the metric takes its tree's order, which depends on the whole member
set. A list therefore also records its *clean* length: the longest prefix of its trusted part in
which every group of equal distances holds copies of one row only (copies contribute equal
terms, so their order does not matter). A round of k is computed from the list only when k is
within the clean length — then every tree gives the same value; otherwise the point is queried
on the metric's own tree over the current members (scipy's defaults), exactly as it queries. On data without such
ties every list is clean; on rounded or integer data the tied points cost what they cost before.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

from fairaudit.cluster._knn import kd_tree, leaf_rank, query_rows
from fairaudit.cluster._lcd_sample import SampleLists
from fairaudit.metrics.local_connectivity import TERM_MAX, TIE_RTOL

__all__ = ["ClusterLists", "build", "list_bytes", "point_values", "touched", "update"]

PARALLEL_ROWS = 2048
"""A query of fewer rows runs on one thread whatever ``workers`` says (same result)."""
DEEP = 4
"""Lists are stored up to the second round (4 (2t + 2) entries plus one for the horizon), with
as much again of room, so that a group of copies that straddles the end of a second-round list
is read whole (Adult drawn with replacement: a quarter of the rows are copies); a point that
needs a third round is computed from the metric's query, not kept (rare)."""


@dataclass
class ClusterLists:
    """The neighbour lists of one cluster's members (``members``: sorted global row indices).

    ``nb``/``nd`` (m × W): global indices and distances of each member's nearest fellow members
    in the order of the tree that was asked, padded with -1 / inf; ``trusted`` (m,): how many
    leading entries are all the members nearer than ``horizon`` (m,); ``clean`` (m,): how many
    leading trusted entries any tree would give with the same values (module docstring);
    ``queried`` (m,): the size of the query the list came from.
    ``tree`` (over the members, the leaf size of :func:`fairaudit.cluster._knn.leafsize_for`;
    ``rank``: its leaf order) and ``exact`` (scipy's default tree, the metric's) are built when
    needed. ``sample``: the sample's own lists, asked before the tree
    (:mod:`fairaudit.cluster._lcd_sample`); ``mask``: the members as a mask over the rows."""

    members: np.ndarray
    nb: np.ndarray
    nd: np.ndarray
    trusted: np.ndarray
    clean: np.ndarray
    horizon: np.ndarray
    queried: np.ndarray
    tree: cKDTree | None = None
    rank: np.ndarray | None = None
    exact: cKDTree | None = None
    sample: SampleLists | None = None
    mask: np.ndarray | None = None


def _width(t: int) -> int:
    return 2 * (DEEP * (2 * t + 2) + 1)


def list_bytes(t: int) -> int:
    """Bytes of one row's list (indices and distances)."""
    return 16 * _width(t)


def _tree(X: np.ndarray, cl: ClusterLists) -> cKDTree:
    if cl.tree is None:
        cl.tree = kd_tree(X[cl.members])
        cl.rank = leaf_rank(cl.tree)
    return cl.tree


def _mask(X: np.ndarray, cl: ClusterLists) -> np.ndarray:
    if cl.mask is None:
        cl.mask = np.zeros(X.shape[0], dtype=bool)
        cl.mask[cl.members] = True
    return cl.mask


def _tree_knn(X: np.ndarray, cl: ClusterLists, pos: np.ndarray, q: int,
              workers: int) -> tuple[np.ndarray, np.ndarray]:
    tree = _tree(X, cl)
    # threads only for large batches: starting them costs more than a few hundred queries
    w = workers if len(pos) >= PARALLEL_ROWS else 1
    d, i = query_rows(tree, tree.data, np.asarray(pos, dtype=np.intp), q, cl.rank, workers=w)
    if q == 1:
        d, i = d[:, None], i[:, None]
    return cl.members[i], d


def _metric_knn(X: np.ndarray, cl: ClusterLists, pos: np.ndarray, q: int,
                workers: int) -> tuple[np.ndarray, np.ndarray]:
    """The q nearest members of the members at ``pos`` in the order of the metric's tree
    (scipy's default ``cKDTree`` over the members): the metric's query exactly."""
    if cl.exact is None:
        cl.exact = cKDTree(X[cl.members])
    w = workers if len(pos) >= PARALLEL_ROWS else 1
    d, i = cl.exact.query(X[cl.members[pos]], k=q, workers=w)
    if q == 1:
        d, i = d[:, None], i[:, None]
    return cl.members[i], d


def _query(X: np.ndarray, cl: ClusterLists, pos: np.ndarray, q: int, workers: int) -> tuple:
    """Lists of the members at ``pos`` from a query of q (capped at m) — or, where the sample's
    lists hold them, from those (:mod:`fairaudit.cluster._lcd_sample`: the same entries, often
    with more of them trusted): global indices, distances, trusted and clean lengths, horizon."""
    m = cl.members.size
    q = min(q, m)
    pos = np.asarray(pos, dtype=np.intp)
    if cl.sample is not None:
        g, d, tr, h, ok = cl.sample.lists(_mask(X, cl), cl.members[pos], q, m)
        rest = np.flatnonzero(~ok)
    else:
        g, d = np.empty((pos.size, q), dtype=np.intp), np.empty((pos.size, q))
        tr, h = np.empty(pos.size, dtype=np.int64), np.empty(pos.size)
        rest = np.arange(pos.size)
    if rest.size:
        gt, dt = _tree_knn(X, cl, pos[rest], q, workers)
        g[rest], d[rest] = gt, dt
        if q == m:  # the whole cluster: every entry there, any membership change touches it
            tr[rest], h[rest] = m, np.inf
        else:
            h[rest] = dt[:, -1]
            tr[rest] = (dt < dt[:, -1:]).sum(axis=1)
    clean = tr.copy()
    if q > 1:
        # entry i + 1 as far as entry i (padding, -1 / inf, lies beyond the trusted entries)
        tie = (d[:, 1:] == d[:, :-1]) & (g[:, 1:] >= 0)
        r = np.flatnonzero(tie.any(axis=1))
        if r.size:
            gr = g[r]
            other = tie[r] & (X[gr[:, 1:]] != X[gr[:, :-1]]).any(axis=2)  # not a copy
            has = other.any(axis=1)
            r, other, dr = r[has], other[has], d[r[has]]
            first = np.argmax(other, axis=1) + 1
            # the group of that distance starts where its distance first appears
            start = np.argmax(dr == dr[np.arange(r.size), first][:, None], axis=1)
            clean[r] = np.minimum(tr[r], start)
    return g, d, tr, clean, h


def _store(cl: ClusterLists, pos: np.ndarray, g, d, tr, clean, h) -> None:
    w = g.shape[1]  # callers store at most W entries
    cl.nb[pos, :w] = g
    cl.nd[pos, :w] = d
    cl.nb[pos, w:] = -1
    cl.nd[pos, w:] = np.inf
    cl.trusted[pos] = tr
    cl.clean[pos] = clean
    cl.horizon[pos] = h
    cl.queried[pos] = w


def _empty(members: np.ndarray, W: int) -> ClusterLists:
    """Lists not yet asked (trusted and queried 0); a row's entries are written whole (by
    :func:`_store` or a copy) before they are read."""
    m = members.size
    return ClusterLists(members, np.empty((m, W), dtype=np.int64), np.empty((m, W)),
                        np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64), np.zeros(m),
                        np.zeros(m, dtype=np.int64))


def build(X: np.ndarray, members: np.ndarray, t: int, workers: int,
          sample: SampleLists | None = None) -> ClusterLists:
    """Lists of every member of the cluster ``members`` (first round: 2t + 3 entries);
    ``sample``: the sample's lists to take them from (:mod:`fairaudit.cluster._lcd_sample`)."""
    members = np.asarray(members, dtype=np.int64)
    m = members.size
    cl = _empty(members, _width(t))
    cl.sample = sample
    if m:
        pos = np.arange(m)
        _store(cl, pos, *_query(X, cl, pos, 2 * t + 3, workers))
    return cl


def touched(X: np.ndarray, cl: ClusterLists, pos: np.ndarray, moved: np.ndarray) -> np.ndarray:
    """Which of the members at ``pos`` have a row of ``moved`` (global indices of rows that
    join or leave) strictly inside their horizon."""
    if moved.size == 0 or pos.size == 0:
        return np.zeros(pos.size, dtype=bool)
    pos = np.asarray(pos, dtype=np.intp)
    if cl.sample is None:
        hit, known = np.zeros(pos.size, dtype=bool), np.zeros(pos.size, dtype=bool)
    else:
        mv = np.zeros(X.shape[0], dtype=bool)
        mv[moved] = True
        hit, known = cl.sample.touched(cl.members[pos], cl.horizon[pos], mv)
    rest = np.flatnonzero(~known)
    if rest.size:
        d, _ = cKDTree(X[moved]).query(X[cl.members[pos[rest]]], k=1)
        hit[rest] = d < cl.horizon[pos[rest]]
    return hit


def update(X: np.ndarray, cl: ClusterLists, members: np.ndarray, t: int,
           workers: int) -> ClusterLists:
    """The lists of the cluster whose members are now ``members``, reusing ``cl``'s where no row
    that joined or left lies inside them (module docstring)."""
    members = np.asarray(members, dtype=np.int64)
    if members.size == cl.members.size and np.array_equal(members, cl.members):
        return cl
    m = members.size
    new = _empty(members, cl.nb.shape[1])
    new.sample = cl.sample
    if m == 0:
        return new
    moved = np.setxor1d(members, cl.members, assume_unique=True)
    old_pos = np.searchsorted(cl.members, members)
    old_pos = np.minimum(old_pos, max(cl.members.size - 1, 0))
    kept = cl.members.size > 0
    was = (cl.members[old_pos] == members) if kept else np.zeros(m, dtype=bool)
    keep = np.flatnonzero(was)
    if keep.size:
        ok = ~touched(X, cl, old_pos[keep], moved)
        keep = keep[ok]
        src = old_pos[keep]
        new.nb[keep] = cl.nb[src]
        new.nd[keep] = cl.nd[src]
        new.trusted[keep] = cl.trusted[src]
        new.clean[keep] = cl.clean[src]
        new.queried[keep] = cl.queried[src]
        new.horizon[keep] = cl.horizon[src]
    redo = np.setdiff1d(np.arange(m), keep, assume_unique=True)
    if redo.size:
        _store(new, redo, *_query(X, new, redo, 2 * t + 3, workers))
    return new


def point_values(X: np.ndarray, cl: ClusterLists, c: np.ndarray, t: int, workers: int,
                 pos: np.ndarray | None = None, scratch: np.ndarray | None = None,
                 size: int | None = None, prune: bool = False) -> np.ndarray:
    """LCD(X, C) of the members at ``pos`` (default: all, in member order) for prototype ``c``:
    the metric's values (module docstring). Deepens lists as needed. ``scratch``: an n-vector
    reused for dist(s, c) by global index.

    ``prune``: for the cluster's maximum only (eq. 7) — NaN for the points that cannot attain
    it, which are not computed past the first round: a point the first round leaves unfinished
    has its found qualifying terms summed, and each of its at most t - found further terms is
    below 1/2 (:data:`TERM_MAX`), so when that upper bound is below a finished point's value
    the point is not the maximum. Only points whose first-round list is clean are pruned (their
    first terms are then those of every later round). The maximum, the first member attaining
    it and every value given are the metric's.

    ``size``: look-up only, for a trial in which the cluster has ``size`` members and no row
    that joins or leaves it lies inside the lists at ``pos`` (:func:`touched`): the values of
    the cluster after the trial, from the lists alone; NaN where a list is too short or not
    clean for the round a point needs (nothing is queried: the tree is the current members')."""
    members = cl.members
    lookup = size is not None
    m = int(size) if lookup else members.size
    sel = np.arange(m) if pos is None else np.asarray(pos, dtype=np.int64)
    out = np.zeros(sel.size)
    if m < 2 or sel.size == 0:
        return out
    dc = np.sqrt(((X[members] - c) ** 2).sum(axis=1))  # the metric's expression, over the members
    dcg = np.empty(X.shape[0]) if scratch is None else scratch
    dcg[members] = dc
    W = cl.nb.shape[1]
    at = np.flatnonzero(dc[sel] > 0)  # indices into sel / out still to compute
    k = min(m, 2 * t + 2)
    while at.size:
        kk = min(k, m)
        p = sel[at]
        if lookup:
            ready = cl.clean[p] >= kk if kk < W else np.zeros(p.size, dtype=bool)
            out[at[~ready]] = np.nan
            at, p = at[ready], p[ready]
            g, d = cl.nb[p, :kk], cl.nd[p, :kk]
            ready = ready[ready]
        elif kk < W:  # deepen the lists that are too short for this round, and keep them
            short = p[cl.trusted[p] < kk]
            q = kk + 1
            while short.size:  # a group of copies can straddle the end: go deeper
                ask = short[cl.queried[short] < q]
                if ask.size:
                    _store(cl, ask, *_query(X, cl, ask, q, workers))
                short = short[cl.trusted[short] < kk]
                if q == W:
                    break
                q = min(2 * q, W)
            ready = cl.clean[p] >= kk
            g, d = cl.nb[p, :kk], cl.nd[p, :kk]
        else:
            ready = np.zeros(p.size, dtype=bool)
            g, d = np.empty((p.size, kk), dtype=np.int64), np.empty((p.size, kk))
        if not ready.all():  # a tie that is not between copies: the tree decides, as in lcd()
            g[~ready], d[~ready] = _metric_knn(X, cl, p[~ready], kk, workers)
        dX = dc[p][:, None]
        self_g = members[p][:, None]
        dcs = dcg[g]
        ok = (g != self_g) & (d < dX * (1.0 - TIE_RTOL)) & (dcs <= dX * (1.0 + TIE_RTOL))
        rank = np.cumsum(ok, axis=1)
        take = ok & (rank <= t)
        found = rank[:, -1]
        done = (found >= t) | (kk >= m) | (d[:, -1] >= dX[:, 0])
        denom = dcs + d
        with np.errstate(invalid="ignore", divide="ignore"):
            contrib = (denom / dX - 1.0) * (d / denom)
        contrib = np.where(take, contrib, 0.0)
        out[at[done]] = contrib[done].sum(axis=1)
        if prune and k == 2 * t + 2 and done.any() and not done.all():
            rest = ~done
            ub = contrib[rest].sum(axis=1) + (t - found[rest]) * TERM_MAX
            cut = ready[rest] & (ub < out[at[done]].max())
            out[at[rest][cut]] = np.nan
            done[np.flatnonzero(rest)[cut]] = True
        at = at[~done]
        k = kk * 4
    return out
