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
    import scipy.sparse as sp
    from scipy.optimize import linprog

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
    n, d = cost.shape
    var = np.arange(n * d).reshape(n, d)
    # each candidate at most once; each leaving segment exactly out_k; each destination inn_l
    A_ub = sp.csr_matrix((np.ones(n * d), (np.repeat(np.arange(n), d), var.ravel())),
                         shape=(n, n * d))
    srcs = np.flatnonzero(out)
    src_of = np.searchsorted(srcs, own)
    A_src = sp.csr_matrix((np.ones(n * d), (np.repeat(src_of, d), var.ravel())),
                          shape=(srcs.size, n * d))
    A_dst = sp.csr_matrix((np.ones(n * d), (np.tile(np.arange(d), n), var.ravel())),
                          shape=(d, n * d))
    res = linprog(cost.ravel(), A_ub=A_ub, b_ub=np.ones(n),
                  A_eq=sp.vstack([A_src, A_dst]).tocsr(),
                  b_eq=np.concatenate([out[srcs], inn[dests]]).astype(float),
                  bounds=(0, 1), method="highs-ds")
    if res.status != 0:
        raise RuntimeError(f"choosing who moves: the transportation problem failed "
                           f"({res.message})")
    y = res.x.reshape(n, d)
    take = y > 0.5
    if not np.allclose(y, take, atol=1e-6):  # a network matrix: the vertex is integral
        raise RuntimeError("choosing who moves: a fractional vertex (not a network problem?)")
    i, j = np.nonzero(take)
    plan = np.zeros((K, K), dtype=np.int64)
    np.add.at(plan, (own[i], dests[j]), 1)
    return rows[i], dests[j], plan, float(cost[i, j].sum())
