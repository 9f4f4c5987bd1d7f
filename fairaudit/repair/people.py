"""Who moves: the repaired counts say how many people of each joint cell leave or join each
segment; this module picks the people (docs/repair.md, "Who moves").

Within a joint cell, people leave the segments whose count shrinks and join those whose count
grows. Which ones:

* with features, the people whose move adds the least distance: a person moved from ``k`` to
  ``l`` adds ``c = max(dist(x, centroid_l) - dist(x, centroid_k), 0)`` (standardised features,
  centroids of the segments as they were). The assignment of a cell's leavers to the growing
  segments is a small transportation problem, solved exactly; only the ``out_k`` people of
  segment ``k`` cheapest for each destination can be in an optimal assignment (a mover to ``l``
  outside that set could swap with one of them who stays, at no extra cost), so the program
  holds at most ``out_k`` candidates per (segment, destination), whatever the row count;
* without features, a seeded random choice (``numpy.random.SeedSequence(seed)``): the same
  seed gives the same people.

Layer-1 code: numpy and scipy only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fairaudit.repair.problem import transport_plan

log = logging.getLogger(__name__)

__all__ = ["Features", "Moves", "cell_index", "choose_movers"]


@dataclass(frozen=True)
class Features:
    """Standardised features of the eligible rows and the segments' centroids."""

    z: np.ndarray
    """(n, p) float64, each column z-scored over the eligible rows (constant columns dropped)."""
    centroids: np.ndarray
    """(K, p) the mean of ``z`` over each segment's rows as they were."""
    columns: tuple[str, ...]

    @classmethod
    def of(cls, X: np.ndarray, segment: np.ndarray, K: int, columns: tuple[str, ...]
           ) -> Features:
        X = np.asarray(X, dtype=float)
        sd = X.std(axis=0)
        keep = sd > 0
        z = (X[:, keep] - X[:, keep].mean(axis=0)) / sd[keep]
        sums = np.zeros((K, z.shape[1]))
        np.add.at(sums, segment, z)
        size = np.bincount(segment, minlength=K).astype(float)
        cent = sums / np.maximum(size, 1.0)[:, None]
        return cls(z, cent, tuple(c for c, k in zip(columns, keep.tolist(), strict=True) if k))

    def distance(self, rows: np.ndarray, segments: np.ndarray) -> np.ndarray:
        """(len(rows), len(segments)) Euclidean distances to the segments' centroids."""
        zr = self.z[rows]
        out = np.empty((rows.size, segments.size))
        for j, seg in enumerate(segments.tolist()):
            out[:, j] = np.sqrt(((zr - self.centroids[seg]) ** 2).sum(axis=1))
        return out

    def added(self, rows: np.ndarray, own: np.ndarray, segments: np.ndarray) -> np.ndarray:
        """Distance added by moving ``rows`` (now in ``own``) to each of ``segments``, floored
        at 0 (a move that brings someone nearer a centroid adds nothing)."""
        d = self.distance(rows, segments)
        d_own = np.sqrt(((self.z[rows] - self.centroids[own]) ** 2).sum(axis=1))
        return np.maximum(d - d_own[:, None], 0.0)


@dataclass(frozen=True)
class Moves:
    """The people moved: eligible-row positions and their new segments, and the plan."""

    rows: np.ndarray
    """(m,) positions among the eligible rows of the people who move."""
    to: np.ndarray
    """(m,) their new segment."""
    plan: np.ndarray
    """(S, K, K) int64: people of cell s moved from segment k to segment l."""
    cost: float | None = None
    """Distance added (sum of the movers' c), when features were given."""


def cell_index(cell: np.ndarray, segment: np.ndarray, S: int, K: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """Rows sorted by (cell, segment) and the start of each (cell, segment) block:
    block ``s * K + k`` is ``order[starts[i]:starts[i + 1]]``."""
    key = cell.astype(np.int64) * K + segment.astype(np.int64)
    order = np.argsort(key, kind="stable")
    starts = np.searchsorted(key[order], np.arange(S * K + 1))
    return order, starts


def choose_movers(cell: np.ndarray, segment: np.ndarray, N: np.ndarray, M: np.ndarray, *,
                  features: Features | None = None, seed: int = 0,
                  plan_of: Callable[[np.ndarray, np.ndarray], np.ndarray] = transport_plan,
                  ) -> Moves:
    """The people to move so that the counts become ``M`` (S, K): the fewest (sum of
    max(N - M, 0)), chosen by ``features`` (least distance added) or at random (``seed``)."""
    S, K = N.shape
    order, starts = cell_index(cell, segment, S, K)
    rng = np.random.default_rng(np.random.SeedSequence(int(seed)))
    plan = np.zeros((S, K, K), dtype=np.int64)
    rows_out: list[np.ndarray] = []
    to_out: list[np.ndarray] = []
    total = 0.0
    for s in range(S):
        out = np.maximum(N[s] - M[s], 0)
        inn = np.maximum(M[s] - N[s], 0)
        if out.sum() == 0:
            continue
        blocks = [order[starts[s * K + k]:starts[s * K + k + 1]] for k in range(K)]
        if features is None:
            p = plan_of(out, inn)
            for k in np.flatnonzero(out):
                pick = rng.permutation(blocks[k])[:out[k]]
                dest = np.repeat(np.arange(K), p[k])
                rows_out.append(pick)
                to_out.append(dest)
            plan[s] = p
        else:
            rows, dest, p, cost = _cheapest(blocks, out, inn, features, K)
            rows_out.append(rows)
            to_out.append(dest)
            plan[s] = p
            total += cost
    rows = np.concatenate(rows_out) if rows_out else np.zeros(0, dtype=np.int64)
    to = np.concatenate(to_out) if to_out else np.zeros(0, dtype=np.int64)
    return Moves(rows.astype(np.int64), to.astype(np.int64), plan,
                 None if features is None else float(total))


def _cheapest(blocks: list[np.ndarray], out: np.ndarray, inn: np.ndarray, f: Features, K: int
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """The least-cost choice of one cell's movers (a transportation problem on candidates)."""
    dests = np.flatnonzero(inn)
    cand_rows, cand_own, cand_cost = [], [], []
    for k in np.flatnonzero(out):
        rows = blocks[k]
        c = f.added(rows, np.full(rows.size, k), dests)
        m = int(out[k])
        if rows.size > m:  # the out_k cheapest for each destination (see the module's note)
            keep = np.zeros(rows.size, dtype=bool)
            for j in range(dests.size):
                keep[np.argpartition(c[:, j], m - 1)[:m]] = True
            rows, c = rows[keep], c[keep]
        cand_rows.append(rows)
        cand_own.append(np.full(rows.size, k))
        cand_cost.append(c)
    rows = np.concatenate(cand_rows)
    own = np.concatenate(cand_own)
    cost = np.vstack(cand_cost)  # (n_cand, n_dest)
    srcs = np.flatnonzero(out)
    # sinks: "stays in k" for each leaving segment k (cost 0, only k's people), then the
    # destinations; each candidate goes to exactly one sink, every sink gets its count
    stay = np.where(own[:, None] == srcs[None, :], 0.0, np.inf)
    full = np.hstack([stay, cost])
    caps = np.concatenate([np.bincount(np.searchsorted(srcs, own), minlength=srcs.size)
                           - out[srcs], inn[dests]]).astype(np.int64)
    sink = assign_exact(full, caps)
    moved = sink >= srcs.size
    i = np.flatnonzero(moved)
    j = sink[moved] - srcs.size
    plan = np.zeros((K, K), dtype=np.int64)
    np.add.at(plan, (own[i], dests[j]), 1)
    return rows[i], dests[j], plan, float(cost[i, j].sum())


PRICE_SAMPLE = 2_000
"""Rows of the LP that estimates the columns' prices before the exact assignment."""


def assign_exact(cost: np.ndarray, caps: np.ndarray) -> np.ndarray:
    """The least-cost assignment of the rows of ``cost`` (n x m, ``inf`` = not allowed) to
    columns holding exactly ``caps`` rows each: successive shortest paths over the m columns
    (:func:`fairaudit.cluster.fair_rounding._transport`, exact), after shifting each column's
    costs by a price from the transportation LP of an evenly spaced sample of the rows. A shift
    changes no assignment's ranking (every assignment pays a column's shift ``caps`` times);
    it starts the paths near the optimum, so few are needed. (The LP over every row with exact
    caps is degenerate and slow in HiGHS: 45 s at 3,049 x 6 where the sample's takes 0.5 s.)"""
    from fairaudit.cluster.fair_rounding import _transport

    n, m = cost.shape
    if m == 1 or n == 0:
        return np.zeros(n, dtype=np.int64)
    return _transport(cost - _prices(cost, caps)[None, :] if n > 64 else cost, caps)


def _prices(cost: np.ndarray, caps: np.ndarray) -> np.ndarray:
    """The columns' duals of the transportation LP of a sample of the rows (caps scaled,
    within one row either way); zeros when that LP fails."""
    import scipy.sparse as sp
    from scipy.optimize import linprog

    n, m = cost.shape
    k = min(n, PRICE_SAMPLE)
    pick = np.linspace(0, n - 1, k).astype(np.int64)
    sub = cost[pick]
    r, c = np.nonzero(np.isfinite(sub))
    rows = sp.csr_matrix((np.ones(r.size), (r, np.arange(r.size))), shape=(k, r.size))
    cols = sp.csr_matrix((np.ones(r.size), (c, np.arange(r.size))), shape=(m, r.size))
    want = caps * (k / n)
    res = linprog(sub[r, c], A_eq=rows, b_eq=np.ones(k), A_ub=sp.vstack([cols, -cols]).tocsr(),
                  b_ub=np.concatenate([np.ceil(want) + 1, -np.maximum(np.floor(want) - 1, 0)]),
                  bounds=(0, 1), method="highs-ds")
    if res.status != 0:
        return np.zeros(m)
    mu = res.ineqlin.marginals
    return mu[:m] - mu[m:]
