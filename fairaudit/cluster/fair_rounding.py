"""Proportional rounding of a fair spectral embedding: k-means whose clusters keep every group's
share (issue 13).

Fair spectral clustering (Kleindessner et al. 2019, used by FairDen) imposes its fairness
constraint, Fᵀ H = 0, on the *relaxed* solution H only; the discrete labels come from plain
k-means on the rows of H, which can snap back to the unfair partition (on COMPAS or German
credit with numeric features FairDen's labels were as unbalanced as its twin's). This module rounds
the same embedding with the constraint the relaxation stands for: every cluster holds each group
(the intersection of the sensitive attributes) in its share of the data — the fair assignment
problem of Bera et al. (2019) with equal lower and upper bounds — by Lloyd iterations whose
assignment step is an exact transport problem per group:

    minimise  Σ_i ‖h_i − c_{ℓ(i)}‖²   subject to  |{i ∈ g : ℓ(i) = j}| = cap[g, j]  for all g, j

``cap[g, j]`` is the largest-remainder rounding of n_g · s_j, where s_j is cluster j's share in
the starting labels (the plain k-means rounding keeps its cluster sizes), with at least one member
of each group in each cluster when the group has ≥ k members (balance is 0 for a cluster that
misses a group). Given the centres, each group's assignment is a transportation problem with
n_g unit sources and k sinks, solved exactly by successive shortest paths over the k columns
(:func:`_min_cost_fill`; numpy and the standard library only — it replaced POT's network simplex,
which it matches to the last digit of the objective in tests/cluster/test_fair_rounding.py).
Given the assignment, the centres are the means. The objective never increases; the loop stops
when the labels repeat.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RoundingResult:
    """Labels of the proportional rounding, its centres, objective and number of Lloyd rounds."""

    labels: np.ndarray
    centres: np.ndarray
    objective: float
    n_iter: int
    converged: bool


def proportional_caps(group_codes: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """Members of each group per cluster: ``cap[g, j]`` ≈ n_g · shares[j], rows summing to n_g.

    Largest-remainder rounding (ties to the lower cluster index); then every cluster with a
    zero cap gets one member of the group, taken from the group's largest cap, when the group
    has at least as many members as there are clusters.
    """
    codes = np.asarray(group_codes, dtype=np.int64)
    shares = np.asarray(shares, dtype=np.float64)
    if shares.ndim != 1 or shares.size == 0 or np.any(shares < 0) or shares.sum() <= 0:
        raise ValueError("shares must be a non-empty vector of non-negative numbers")
    shares = shares / shares.sum()
    k = shares.size
    sizes = np.bincount(codes) if codes.size else np.zeros(0, np.int64)
    caps = np.zeros((sizes.size, k), dtype=np.int64)
    for g, n_g in enumerate(sizes):
        exact = n_g * shares
        base = np.floor(exact).astype(np.int64)
        rest = int(n_g - base.sum())
        if rest:
            order = np.argsort(-(exact - base), kind="stable")
            base[order[:rest]] += 1
        if n_g >= k:
            for j in np.flatnonzero(base == 0):
                base[int(np.argmax(base))] -= 1
                base[j] = 1
        caps[g] = base
    return caps


_SLACK_UNIT: float | None = None
"""Tests only: a fixed scale of the chain search's slack instead of the costs' own."""


def _transport(cost: np.ndarray, caps: np.ndarray) -> np.ndarray:
    """Exact assignment of the rows of ``cost`` (n × k) to columns with ``caps`` rows each
    (``caps`` sums to n): minimises the summed cost. See :func:`_min_cost_fill`."""
    n, k = cost.shape
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    caps = np.asarray(caps, dtype=np.int64)
    if caps.shape != (k,) or np.any(caps < 0) or int(caps.sum()) != n:
        raise ValueError(f"caps must be {k} non-negative counts summing to {n}")
    used = np.flatnonzero(caps > 0)
    if used.size == 1:
        return np.full(n, used[0], dtype=np.int64)
    sub = np.ascontiguousarray(cost[:, used], dtype=np.float64)
    return used[_min_cost_fill(sub, caps[used])]


def _min_cost_fill(cost: np.ndarray, caps: np.ndarray) -> np.ndarray:
    """Successive shortest paths for the transportation problem with n unit sources and few
    (k) sinks, exact.

    Start from every row at its cheapest column (optimal without the caps: every residual
    move costs ≥ 0). While a column is over its cap, move one row's worth of excess along the
    cheapest chain of moves to a column under its cap: a chain a → b → … costs
    Σ min over the rows r in a of (cost[r, b] − cost[r, a]). Those k × k move costs are kept in
    a heap per ordered column pair (stale entries dropped lazily), and the cheapest chain is
    found by Bellman-Ford over the k columns (moves can cost < 0, but there is no negative
    cycle: each augmentation along a shortest path keeps the assignment the cheapest one with
    its column loads — the invariant of successive shortest paths; a cycle that rounding lets
    in is cancelled when the search meets it). Ends when every column
    holds its cap: then the assignment is optimal. O(excess · (k³ + k log n)) after an
    O(n k log n) start.
    """
    import heapq

    n, k = cost.shape
    assign = np.argmin(cost, axis=1).astype(np.int64)
    load = np.bincount(assign, minlength=k)
    heaps: list[list[list[tuple[float, int]]]] = [[[] for _ in range(k)] for _ in range(k)]
    W = np.full((k, k), np.inf)
    for a in range(k):
        rows = np.flatnonzero(assign == a)
        if rows.size == 0:
            continue
        delta = cost[rows] - cost[rows, a][:, None]
        for b in range(k):
            if b == a:
                continue
            h = list(zip(delta[:, b].tolist(), rows.tolist(), strict=True))
            heapq.heapify(h)
            heaps[a][b] = h
            W[a, b] = h[0][0]

    def top(a: int, b: int) -> tuple[float, int] | None:
        h = heaps[a][b]
        while h and assign[h[0][1]] != a:
            heapq.heappop(h)
        return h[0] if h else None

    def refresh(a: int) -> None:
        for b in range(k):
            if b != a:
                t = top(a, b)
                W[a, b] = np.inf if t is None else t[0]

    def join(r: int, b: int) -> None:
        for x in range(k):
            if x != b:
                key = float(cost[r, x] - cost[r, b])
                heapq.heappush(heaps[b][x], (key, r))
                if key < W[b, x]:
                    W[b, x] = key

    np.fill_diagonal(W, np.inf)
    # the rounding slack of the chain search is relative to the costs' scale when they are
    # below 1 (an absolute 1e-12 swallowed real differences of costs of order 1e-12 and left
    # the result off the optimum; FairDen's embedding gives costs of order 1e-7)
    finite_cost = cost[np.isfinite(cost)]
    unit = min(1.0, float(np.abs(finite_cost).max())) if finite_cost.size else 1.0
    unit = unit if unit > 0 else 1.0
    unit = _SLACK_UNIT if _SLACK_UNIT is not None else unit
    steps = 0
    cancels = 0
    while True:
        excess = load - caps
        if not (excess > 0).any():
            break
        steps += 1
        if steps > n + 1:  # each step moves one unit of excess: at most n of them
            raise RuntimeError("proportional rounding: the transport did not converge")
        dist = np.where(excess > 0, 0.0, np.inf)
        pred = np.full(k, -1, dtype=np.int64)
        for _ in range(k):
            cand = dist[:, None] + W
            best = np.argmin(cand, axis=0)
            new = cand[best, np.arange(k)]
            finite = np.isfinite(dist)
            slack = 1e-12 * np.maximum(unit, np.abs(np.where(finite, dist, 0.0)))
            better = new < np.where(finite, dist - slack, np.inf)
            if not better.any():
                break
            dist = np.where(better, new, dist)
            pred = np.where(better, best, pred)
        targets = np.flatnonzero(excess < 0)
        t = int(targets[np.argmin(dist[targets])])
        if not np.isfinite(dist[t]):  # pragma: no cover - a column can always take a row
            raise RuntimeError("proportional rounding: no feasible move (bad caps)")
        path = [t]
        cycle = None
        while pred[path[-1]] >= 0:
            nxt = int(pred[path[-1]])
            if nxt in path:
                # a negative cycle of moves, let in by rounding (an earlier chain longer than
                # the shortest by up to the slack): cancelling it (each column gives one row
                # to the next: loads unchanged, summed cost lower) restores the invariant;
                # then the search is run again
                i = path.index(nxt)
                cycle = [nxt, *path[i + 1:][::-1], nxt]
                break
            path.append(nxt)
        if cycle is not None:
            cancels += 1
            steps -= 1  # no excess moved
            if cancels > n * k:  # pragma: no cover - each cancel lowers the summed cost
                raise RuntimeError("proportional rounding: the transport did not converge")
            path = cycle
            logger.debug("proportional rounding: cancelled a negative cycle of %d moves",
                         len(cycle) - 1)
        else:
            path.reverse()  # source (over its cap) ... target (under its cap)
        moves = []
        for a, b in zip(path[:-1], path[1:], strict=True):
            t_ab = top(a, b)
            assert t_ab is not None
            moves.append((t_ab[1], a, b))
        for r, a, b in moves:
            assign[r] = b
            load[a] -= 1
            load[b] += 1
            join(r, b)
        for _, a, _ in moves:
            refresh(a)
    return assign


def proportional_kmeans(
    H: np.ndarray,
    group_codes: np.ndarray,
    labels0: np.ndarray,
    *,
    max_iter: int = 50,
) -> RoundingResult:
    """Lloyd iterations from ``labels0`` under exact per-group cluster caps (module docstring).

    ``H`` (n × d) embedding rows, ``group_codes`` (n,) codes 0..G−1 of the intersection groups,
    ``labels0`` (n,) starting labels 0..k−1 (all clusters non-empty): their sizes set the shares.
    """
    H = np.asarray(H, dtype=np.float64)
    codes = np.asarray(group_codes, dtype=np.int64)
    lab = np.asarray(labels0, dtype=np.int64).copy()
    n = H.shape[0]
    if codes.shape != (n,) or lab.shape != (n,):
        raise ValueError("H, group_codes and labels0 must have the same number of rows")
    k = int(lab.max()) + 1 if n else 0
    counts = np.bincount(lab, minlength=k)
    if n == 0 or np.any(counts == 0):
        raise ValueError("labels0 must use every cluster 0..k-1")
    caps = proportional_caps(codes, counts)
    members = [np.flatnonzero(codes == g) for g in range(caps.shape[0])]
    centres = np.stack([H[lab == j].mean(axis=0) for j in range(k)])
    prev_obj = np.inf
    converged = False
    it = 0
    while it < int(max_iter):
        it += 1
        sq = (
            np.einsum("ij,ij->i", H, H)[:, None]
            - 2.0 * H @ centres.T
            + np.einsum("ij,ij->i", centres, centres)[None, :]
        )
        new = np.empty(n, dtype=np.int64)
        for g, idx in enumerate(members):
            new[idx] = _transport(sq[idx], caps[g])
        obj = float(np.maximum(sq[np.arange(n), new], 0.0).sum())
        same = np.array_equal(new, lab)
        lab = new
        for j in range(k):
            centres[j] = H[lab == j].mean(axis=0)
        if same or obj >= prev_obj - 1e-12 * max(1.0, abs(prev_obj)):
            converged = True
            break
        prev_obj = obj
    objective = float(((H - centres[lab]) ** 2).sum())
    logger.info("proportional rounding: %d rounds, objective %.6g", it, objective)
    return RoundingResult(lab, centres, objective, it, converged)
