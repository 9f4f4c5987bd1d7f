"""Nearest rows of every row of LOFKM's refinement sample, queried once: the source of the
per-cluster neighbour lists (:mod:`fairaudit.cluster._lcd_lists`; issue 25).

The refinement keeps, per cluster, each member's nearest fellow members, and asks for them again
whenever rows join or leave the cluster near it, or when a point's LCD needs a deeper list.
Those answers need no per-cluster tree: a member's nearest fellow members are its nearest rows of
the whole sample with the other clusters' rows left out. This module queries one k-d tree over
the sample once (:data:`FIRST` × (t + 1) rows per row; :data:`SECOND` times deeper for the rows
that need more) and keeps the answers, which never go stale — the sample does not change while
clusters do. A cluster's list is then a filter of these rows by membership, and "does a row that
changed cluster lie inside this list" a look-up.

**Same lists as a query.** A row's sample list of depth Q holds every row nearer than its Q-th
distance H (its *horizon*; infinite when Q covers the sample). When at least q of the entries
nearer than H are members of the cluster, the first q of them are the cluster's q nearest members
— the answer of a k-d tree over the members, up to the order of equally distant members, which the
lists' clean lengths already allow for (any tree may order them differently). The distances are the
same numbers (a k-d tree's distance is a function of the two rows only). Where the sample list is
too short, the caller asks its per-cluster tree, as before.
"""

from __future__ import annotations

import numpy as np

from fairaudit.cluster._knn import kd_tree, leaf_rank, query_rows

__all__ = ["SampleLists", "sample_bytes"]

FIRST = 3
"""The first query asks FIRST × (t + 1) rows per row (18 at t = 5): the 2t + 3 members a cluster's
first list needs, with room for rows of other clusters and groups of copies."""
SECOND = 4
"""Rows whose first sample list holds too few members of their cluster are asked again, SECOND
times deeper (72 at t = 5: the second LCD round needs 8t + 9 members)."""
PARALLEL_ROWS = 2048
"""A query of fewer rows runs on one thread whatever ``workers`` says (same result)."""


def sample_bytes(t: int) -> int:
    """Bytes per row of the sample lists, when every row is asked twice (the most)."""
    return 16 * FIRST * (t + 1) * (1 + SECOND) + 8


class SampleLists:
    """The nearest rows of every row of ``X`` (the refinement sample), from one k-d tree over it.

    ``nb0``/``nd0`` (n × Q0): every row's first list (sample row indices and distances, nearest
    first), ``h0`` its horizon; rows asked again have a deeper list in ``nb1``/``nd1``/``h1`` at
    ``slot`` (-1: not asked)."""

    def __init__(self, X: np.ndarray, t: int, workers: int) -> None:
        self.X = X
        n = X.shape[0]
        self.workers = workers
        self.tree = kd_tree(X)
        self.rank = leaf_rank(self.tree)
        self.q0 = min(n, FIRST * (t + 1))
        self.q1 = min(n, SECOND * self.q0)
        self.nd0, self.nb0, self.h0 = self._ask(np.arange(n), self.q0)
        self.slot = np.full(n, -1, dtype=np.intp)
        self.used = 0
        self.nd1: np.ndarray | None = None
        self.nb1: np.ndarray | None = None
        self.h1: np.ndarray | None = None

    def _ask(self, rows: np.ndarray, q: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        w = self.workers if rows.size >= PARALLEL_ROWS else 1
        d, i = query_rows(self.tree, self.tree.data, rows, q, self.rank, workers=w)
        if q == 1:
            d, i = d[:, None], i[:, None]
        h = np.full(rows.size, np.inf) if q >= self.X.shape[0] else d[:, -1].copy()
        return d, i, h

    def _deepen(self, rows: np.ndarray) -> None:
        new = rows[self.slot[rows] < 0]
        if new.size == 0:
            return
        if self.nb1 is None:  # room for every row (allocated, not touched, until used)
            n = self.X.shape[0]
            self.nd1 = np.empty((n, self.q1))
            self.nb1 = np.empty((n, self.q1), dtype=np.intp)
            self.h1 = np.empty(n)
        d, i, h = self._ask(new, self.q1)
        s = self.used + np.arange(new.size)
        self.used += new.size
        self.slot[new] = s
        self.nd1[s], self.nb1[s], self.h1[s] = d, i, h

    def _fill(self, mask: np.ndarray, q: int, m: int, todo: np.ndarray, G: np.ndarray,
              D: np.ndarray, H: np.ndarray, out: tuple) -> np.ndarray:
        """Answer the rows ``todo`` whose lists (G, D, H) hold enough members (:meth:`lists`);
        return the rows left."""
        g, d, tr, h, ok = out
        same = mask[G] & (D < H[:, None])
        cnt = np.count_nonzero(same, axis=1)
        w = min(q + 1, G.shape[1])
        idx = np.argsort(~same, axis=1, kind="stable")[:, :w]
        Gi = np.take_along_axis(G, idx, axis=1)
        Di = np.take_along_axis(D, idx, axis=1)
        Di[np.arange(w)[None, :] >= cnt[:, None]] = np.inf  # not members, or not trusted
        hr, trr = H, cnt
        if w > q:  # more members than asked: the horizon is the next member's distance
            over = cnt > q
            hr = np.where(over, Di[:, q], H)
            trr = np.where(over, np.count_nonzero(Di[:, :q] < hr[:, None], axis=1), cnt)
        good = trr >= (m if q >= m else q - 1)  # what a query of q would give, or more
        if good.any():
            dst = todo[good]
            wq = min(q, w)
            gg, dd = Gi[good, :wq], Di[good, :wq]
            gg[np.isinf(dd)] = -1
            g[dst, :wq], d[dst, :wq] = gg, dd
            g[dst, wq:], d[dst, wq:] = -1, np.inf
            tr[dst], h[dst], ok[dst] = trr[good], hr[good], True
        return todo[~good]

    def lists(self, mask: np.ndarray, rows: np.ndarray, q: int, m: int) -> tuple:
        """Lists of the members ``rows`` of a cluster of m members (``mask``: its rows) as a
        query of q members (q <= m) would give them, or with more trusted entries: sample row
        indices and distances (p × q, padded with -1 / inf), trusted lengths, horizons (every
        member nearer than it is in the list), and which rows the sample lists answer (a row
        whose list has fewer than q - 1 trusted members, or not all m when q = m, is not).
        Rows the first lists cannot answer are asked again, deeper, once."""
        p = rows.size
        out = (np.full((p, q), -1, dtype=np.intp), np.full((p, q), np.inf),
               np.zeros(p, dtype=np.int64), np.zeros(p), np.zeros(p, dtype=bool))
        todo = np.arange(p)
        r = rows[todo]
        todo = self._fill(mask, q, m, todo, self.nb0[r], self.nd0[r], self.h0[r], out)
        if todo.size and self.q1 > self.q0 and self.q1 >= q - 1:
            self._deepen(rows[todo])
            s = self.slot[rows[todo]]
            todo = self._fill(mask, q, m, todo, self.nb1[s], self.nd1[s], self.h1[s], out)
        return out

    def touched(self, rows: np.ndarray, horizon: np.ndarray,
                moved: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Whether a row of ``moved`` (a boolean mask over the sample) lies strictly within
        ``horizon`` of each of ``rows``, and where the sample lists can tell (a horizon not
        beyond the sample list's: every row that near is in the list)."""
        hit = np.zeros(rows.size, dtype=bool)
        known = horizon <= self.h0[rows]
        at = np.flatnonzero(known)
        r = rows[at]
        hit[at] = (moved[self.nb0[r]] & (self.nd0[r] < horizon[at, None])).any(axis=1)
        if self.used:
            at = np.flatnonzero(~known & (self.slot[rows] >= 0))
            s = self.slot[rows[at]]
            can = horizon[at] <= self.h1[s]
            at, s = at[can], s[can]
            hit[at] = (moved[self.nb1[s]] & (self.nd1[s] < horizon[at, None])).any(axis=1)
            known[at] = True
        return hit, known
