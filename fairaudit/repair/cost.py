"""``objective = "cost"``: the repair that adds the least distance (docs/repair.md, "The least
cost").

With costs per person the counts are no longer enough: people of one (cell, segment) differ in
what their move costs. The exact program is Bera et al.'s fair assignment LP over the rows —
a variable ``y[i, l]`` per person and other segment, ``sum_l y[i, l] <= 1``, the counts
``M = N - (moves out) + (moves in)`` under the same target rows as the fewest-moves program —
with ``n (K - 1)`` variables. It is solved by column generation, so only the people who could
move enter it:

1. the restricted master holds the pairs (person, segment) generated so far, plus one reserve
   variable per (cell, segment, segment) that moves unnamed people at a prohibitive price (so
   the master is feasible whenever the targets are, from the first round);
2. pricing: with the duals ``pi`` of the count rows and ``nu`` of the cells' outflow rows, a
   pair left out has reduced cost ``c[i, l] - pi[s, k] + pi[s, l] - nu[s, k]``; every pair of
   every row is priced in one vectorised pass, and the most negative ones per (cell, segment,
   segment) join the master;
3. when no pair has a negative reduced cost (and the reserve is unused) the master's optimum
   is the optimum over all rows (LP duality: the left-out pairs satisfy dual feasibility).

The LP's optimum is the lower bound. The integer repair re-solves the master's pairs as a
mixed-integer program with every person the LP assigns integrally kept as it does, and only the
people it splits free (levels: those, then every candidate of their cells, then every
candidate), falling back to the fewest-moves counts with the cheapest people when none holds.

Each move costs ``c = max(d(x, centroid_to) - d(x, centroid_from), 0) + eta``: the distance
added, and ``eta`` (1e-6 of the mean positive added distance) so that nobody moves for free.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass

import numpy as np

from fairaudit.repair.people import Features, Moves, cell_index, choose_movers
from fairaudit.repair.problem import CountProblem, Infeasible, evaluate, structure_ok
from fairaudit.repair.program import count_rows, solve_counts

log = logging.getLogger(__name__)

__all__ = ["CostSolution", "solve_cost"]

ETA = 1e-6
"""Each move's cost floor, relative to the mean positive added distance."""

UNFINISHED_SHARE = 0.75
"""Share of the time limit the column generation may take before the repair falls back to the
fewest moves with the cheapest people (the rest is for the fallback and the integer step)."""

NEAR = 16
"""Pairs per (cell, segment, segment) added to the small problems' pool beyond the LP's: those
with the lowest reduced cost (an integer repair may need people the LP leaves out)."""

ROUND_NODES = 20
"""Branch-and-bound nodes of the rounding program: it keeps the best rounding found by then
(each node is costly at 1,000+ variables; the LP bound, not this search, is the guarantee)."""

SMALL_POOL = 1_000
"""Pools of at most this many (person, segment) pairs also get the exact integer program over
the pool (fast at this size); the cheaper of it and the rounded counts is kept."""


@dataclass(frozen=True)
class CostSolution:
    counts: np.ndarray
    moves: Moves
    lp_cost: float | None
    """The LP's optimum (distance added, without the eta terms): a lower bound (None when the
    LP did not finish in time)."""
    cost: float
    """The integer repair's distance added."""
    lp_moves: float | None
    """People the LP moves (fractional)."""
    optimal: bool
    """The integer repair's cost equals the LP's (to 1e-9 relative)."""
    rounds: int
    """Column-generation rounds."""
    candidates: int
    """(person, segment) pairs the master held at the end."""
    method: str
    """How the integer repair was found ("lp integral", "mip", "fewest moves")."""
    seconds: float = 0.0


class _Master:
    """The restricted master LP/MIP over the generated pairs."""

    def __init__(self, problem: CountProblem, cell: np.ndarray, segment: np.ndarray,
                 f: Features, eta: float):
        self.p = problem
        self.cell = cell
        self.segment = segment
        self.f = f
        self.eta = eta
        S, K = problem.shape
        self.S, self.K = S, K
        self.N = problem.counts.astype(float)
        self.m_index = np.arange(S * K).reshape(S, K)
        self.rows, self.n_base, self.aux = count_rows(problem, self.m_index, S * K)
        self.pair_row = np.zeros(0, dtype=np.int64)
        self.pair_to = np.zeros(0, dtype=np.int64)
        self.pair_cost = np.zeros(0)
        self.seen: set[int] = set()

    def add(self, rows: np.ndarray, to: np.ndarray, cost: np.ndarray) -> int:
        key = rows.astype(np.int64) * self.K + to
        new = np.array([k not in self.seen for k in key.tolist()], dtype=bool)
        self.seen.update(key[new].tolist())
        self.pair_row = np.concatenate([self.pair_row, rows[new]])
        self.pair_to = np.concatenate([self.pair_to, to[new]])
        self.pair_cost = np.concatenate([self.pair_cost, cost[new]])
        return int(new.sum())

    def program(self, *, fixed: np.ndarray | None = None, reserve: bool = True):
        """(c, A, lo, hi, lb, ub, layout) of the master; ``fixed``: pair values kept (NaN =
        free), whose moves go to the right-hand side."""
        import scipy.sparse as sp

        S, K = self.S, self.K
        n_pairs = self.pair_row.size
        free = np.ones(n_pairs, dtype=bool) if fixed is None else np.isnan(fixed)
        pairs = np.flatnonzero(free)
        P = pairs.size
        base = self.n_base
        res_idx = np.arange(S * K * K).reshape(S, K, K) + base + P if reserve else None
        n_vars = base + P + (S * K * K if reserve else 0)
        big = 10.0 * (float(self.pair_cost.max(initial=0.0)) + 1.0) + 1e3 * self.eta
        c = np.zeros(n_vars)
        c[base:base + P] = self.pair_cost[pairs]
        lb = np.zeros(n_vars)
        ub = np.full(n_vars, np.inf)
        ub[:S * K] = np.repeat(self.N.sum(axis=1), K)
        for j, (_, hi) in enumerate(self.aux):
            ub[S * K + j] = hi
        ub[base:base + P] = 1.0
        pr = self.pair_row[pairs]
        ps, pk, pl = self.cell[pr], self.segment[pr], self.pair_to[pairs]
        out_fixed = np.zeros((S, K))
        in_fixed = np.zeros((S, K))
        if fixed is not None:
            done = ~free & (fixed > 0.5)
            r = self.pair_row[done]
            np.add.at(out_fixed, (self.cell[r], self.segment[r]), 1.0)
            np.add.at(in_fixed, (self.cell[r], self.pair_to[done]), 1.0)
        if reserve:
            c[res_idx.ravel()] = big
            cap = self.N.copy()
            named = np.unique(pr)  # the reserve moves people not generated yet
            np.add.at(cap, (self.cell[named], self.segment[named]), -1.0)
            for s in range(S):
                for k in range(K):
                    ub[res_idx[s, k]] = max(cap[s, k], 0.0)
                    ub[res_idx[s, k, k]] = 0.0
        # count rows: M[s,l] + out - in = N[s,l] (fixed moves on the right-hand side)
        r0 = len(self.rows)
        n_link = S * K
        link_r = [np.arange(S * K), r0 + self.m_index[ps, pk], r0 + self.m_index[ps, pl]]
        link_c = [self.m_index.ravel(), base + np.arange(P), base + np.arange(P)]
        link_v = [np.ones(S * K), np.ones(P), -np.ones(P)]
        link_r[0] = r0 + link_r[0]
        if reserve:
            ss, kk, ll = np.nonzero(np.ones((S, K, K), dtype=bool))
            link_r += [r0 + self.m_index[ss, kk], r0 + self.m_index[ss, ll]]
            link_c += [res_idx[ss, kk, ll], res_idx[ss, kk, ll]]
            link_v += [np.ones(ss.size), -np.ones(ss.size)]
        rhs = (self.N - out_fixed + in_fixed).ravel()
        # each person at most once
        uniq, pos = np.unique(pr, return_inverse=True)
        r1 = r0 + n_link
        per_r, per_c = r1 + pos, base + np.arange(P)
        # each (cell, segment): moves out (named and reserve) <= N - fixed moves out
        r2 = r1 + uniq.size
        out_r = [r2 + self.m_index[ps, pk]]
        out_c = [base + np.arange(P)]
        if reserve:
            out_r.append(r2 + self.m_index[ss, kk])
            out_c.append(res_idx[ss, kk, ll])
        A0 = self.rows.matrix(n_vars)
        rows = np.concatenate([*link_r, per_r, *out_r])
        cols = np.concatenate([*link_c, per_c, *out_c])
        vals = np.concatenate([*link_v, np.ones(P), np.ones(sum(len(x) for x in out_c))])
        n_rows = r2 + S * K
        A1 = sp.csr_matrix((vals, (rows - r0, cols)), shape=(n_rows - r0, n_vars))
        A = sp.vstack([A0, A1]).tocsr()
        lo0, hi0 = self.rows.bounds()
        lo = np.concatenate([lo0, rhs, np.full(uniq.size, -np.inf), np.full(S * K, -np.inf)])
        hi = np.concatenate([hi0, rhs, np.ones(uniq.size),
                             (self.N - out_fixed).ravel()])
        return c, A, lo, hi, lb, ub, {"pairs": pairs, "base": base, "r0": r0, "r2": r2,
                                      "reserve": res_idx, "n_rows": n_rows}


def _solve_lp(c, A, lo, hi, lb, ub):
    """linprog on lo <= A x <= hi; returns (result, row duals in the same order)."""
    from scipy.optimize import linprog

    eq = lo == hi
    up = ~eq & np.isfinite(hi)
    dn = ~eq & np.isfinite(lo)
    import scipy.sparse as sp

    A_ub = sp.vstack([A[up], -A[dn]]).tocsr()
    b_ub = np.concatenate([hi[up], -lo[dn]])
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A[eq], b_eq=lo[eq],
                  bounds=np.column_stack([lb, ub]), method="highs-ds")
    duals = np.zeros(A.shape[0])
    if res.status == 0:
        duals[eq] = res.eqlin.marginals
        mu = res.ineqlin.marginals
        duals[np.flatnonzero(up)] += mu[:up.sum()]
        duals[np.flatnonzero(dn)] -= mu[up.sum():]
    return res, duals


def _price(master: _Master, duals: np.ndarray, layout: dict, order: np.ndarray,
           starts: np.ndarray, batch: int, tol: float, *, near: bool = False) -> int:
    """Add the most negative reduced-cost pairs of every (cell, segment, segment); ``near``:
    the ``batch`` lowest whatever their sign (the integer repair's pool)."""
    S, K = master.S, master.K
    pi = duals[layout["r0"]:layout["r0"] + S * K].reshape(S, K)
    nu = duals[layout["r2"]:layout["r2"] + S * K].reshape(S, K)
    added = 0
    segs = np.arange(K)
    for s in range(S):
        for k in range(K):
            rows = order[starts[s * K + k]:starts[s * K + k + 1]]
            if rows.size == 0:
                continue
            c = master.f.added(rows, np.full(rows.size, k), segs) + master.eta
            red = c - pi[s, k] + pi[s][None, :] - nu[s, k]
            red[:, k] = np.inf
            for m in range(K):
                if m == k:
                    continue
                neg = np.flatnonzero(red[:, m] < (np.inf if near else -tol))
                if neg.size == 0:
                    continue
                if neg.size > batch:
                    neg = neg[np.argpartition(red[neg, m], batch - 1)[:batch]]
                added += master.add(rows[neg], np.full(neg.size, m), c[neg, m])
    return added


def _seed(master: _Master, problem: CountProblem, order: np.ndarray, starts: np.ndarray,
          time_limit: float) -> None:
    """Start the master from the fewest-moves repair's flows: for every (cell, segment) that
    loses people and every segment its cell gains people in, the cheapest of its people for
    that segment (as many as could go there). Only a start: pricing adds what the optimum
    needs, and a start that is not feasible is made so by the reserve."""
    try:
        counts = solve_counts(problem, time_limit=max(time_limit, 1.0), proof_seconds=0.0,
                              diagnose=False).counts
    except Infeasible:
        return  # the cost LP says why (or finds it infeasible itself)
    S, K = problem.shape
    N = problem.counts
    for s in range(S):
        out = np.maximum(N[s] - counts[s], 0)
        inn = np.maximum(counts[s] - N[s], 0)
        for k in np.flatnonzero(out):
            rows = order[starts[s * K + k]:starts[s * K + k + 1]]
            dests = np.flatnonzero(inn)
            c = master.f.added(rows, np.full(rows.size, k), dests) + master.eta
            for j, m in enumerate(dests.tolist()):
                take = min(int(out[k]), int(inn[m]), rows.size)
                pick = np.argpartition(c[:, j], take - 1)[:take] if take < rows.size else \
                    np.arange(rows.size)
                master.add(rows[pick], np.full(pick.size, m), c[pick, j])


def solve_cost(problem: CountProblem, cell: np.ndarray, segment: np.ndarray, f: Features, *,
               time_limit: float = 60.0, seed: int = 0, max_rounds: int = 200) -> CostSolution:
    """The least distance added meeting every target (see the module's note)."""
    start = time.monotonic()
    S, K = problem.shape
    N = problem.counts.astype(np.int64)
    order, starts = cell_index(cell, segment, S, K)
    if all(e["met"] for e in evaluate(problem, N)) and structure_ok(problem, N):
        empty = Moves(np.zeros(0, np.int64), np.zeros(0, np.int64),
                      np.zeros((S, K, K), np.int64), 0.0)
        return CostSolution(N.copy(), empty, 0.0, 0.0, 0.0, True, 0, 0, "already met")
    # eta from the mean positive added distance over a fixed subsample
    probe = np.linspace(0, cell.size - 1, min(cell.size, 20_000)).astype(np.int64)
    a = f.added(probe, segment[probe], np.arange(K))
    pos = a[a > 0]
    eta = ETA * (float(pos.mean()) if pos.size else 1.0)
    master = _Master(problem, cell, segment, f, eta)
    _seed(master, problem, order, starts, time_limit / 4)
    batch, rounds = 64, 0
    tol = 1e-9 * max(eta, 1.0)
    while True:
        rounds += 1
        c, A, lo, hi, lb, ub, layout = master.program()
        res, duals = _solve_lp(c, A, lo, hi, lb, ub)
        if res.status == 2:
            raise Infeasible("the targets cannot be met, even fractionally")
        if res.status != 0:
            raise RuntimeError(f"the cost LP failed: {res.message}")
        reserve_used = float(res.x[layout["reserve"]].sum())
        added = _price(master, duals, layout, order, starts, batch, tol)
        log.info("repair (cost): round %d, %d pairs, LP %.6g, reserve %.3g, %d added",
                 rounds, master.pair_row.size, res.fun, reserve_used, added)
        if added == 0:
            if reserve_used > 1e-7:
                raise RuntimeError("column generation stopped with the reserve in use")
            break
        if rounds >= max_rounds or time.monotonic() - start > time_limit * UNFINISHED_SHARE:
            log.warning("repair: the least-cost LP did not finish within %d rounds / %g s "
                        "(give it more time with --time-limit); the repair is the fewest "
                        "moves with the cheapest people, and no lower bound on its cost is "
                        "known", rounds, time_limit * UNFINISHED_SHARE)
            counts = solve_counts(problem, time_limit=max(time_limit / 4, 5.0))
            mv = choose_movers(cell, segment, N, counts.counts, features=f, seed=seed)
            return CostSolution(counts.counts, mv, None, float(mv.cost or 0.0), None, False,
                                rounds, int(master.pair_row.size),
                                "fewest moves, people by transport (the least-cost LP did "
                                "not finish)", time.monotonic() - start)
        batch = min(batch * 2, 1 << 16)
    base = layout["base"]
    y = res.x[base:base + master.pair_row.size]
    lp_cost = float(((master.pair_cost - eta) * y).sum())
    lp_moves = float(y.sum())
    flows = np.zeros((S, K, K))
    np.add.at(flows, (cell[master.pair_row], segment[master.pair_row], master.pair_to), y)
    left = max(time_limit - (time.monotonic() - start), 1.0)
    options: list[tuple[Moves, str]] = []
    frac = (y > 1e-7) & (y < 1 - 1e-7)
    if not frac.any() and _check(master, np.flatnonzero(y > 0.5)):
        options.append((_moves_of(master, np.flatnonzero(y > 0.5), eta), "LP integral"))
    else:
        rounded = _round_counts(problem, f, order, starts, flows, eta, left / 2)
        if rounded is not None:
            options.append((rounded, "counts rounded, people by transport"))
        # small problems: also the exact integer program over the pool (the LP's pairs and
        # those nearest to entering)
        n_lp = master.pair_row.size
        _price(master, duals, layout, order, starts, NEAR, tol, near=True)
        if master.pair_row.size <= SMALL_POOL:
            y_pool = np.concatenate([y, np.zeros(master.pair_row.size - n_lp)])
            chosen = _integer(master, y_pool, max(left / 2, 1.0))
            if chosen is not None:
                options.append((_moves_of(master, chosen, eta), "integer program over the "
                                "candidates"))
    if not options:
        counts = solve_counts(problem, time_limit=left)
        mv = choose_movers(cell, segment, N, counts.counts, features=f, seed=seed)
        options.append((mv, "fewest moves, people by transport"))
    sol_moves, method = min(options, key=lambda o: (float(o[0].cost or 0.0), o[1]))
    counts_M = N - sol_moves.plan.sum(axis=2) + sol_moves.plan.sum(axis=1)
    cost = float(sol_moves.cost or 0.0)
    optimal = cost <= lp_cost * (1 + 1e-9) + 1e-12
    return CostSolution(counts_M, sol_moves, lp_cost, cost, lp_moves, optimal, rounds,
                        int(master.pair_row.size), method, time.monotonic() - start)


def _moves_of(master: _Master, chosen: np.ndarray, eta: float) -> Moves:
    rows, to = master.pair_row[chosen], master.pair_to[chosen]
    plan = np.zeros((master.S, master.K, master.K), dtype=np.int64)
    np.add.at(plan, (master.cell[rows], master.segment[rows], to), 1)
    return Moves(rows, to, plan, float((master.pair_cost[chosen] - eta).sum()))


def _round_counts(problem: CountProblem, f: Features, order: np.ndarray, starts: np.ndarray,
                  flows: np.ndarray, eta: float, time_limit: float) -> Moves | None:
    """An integer repair near the LP: flows x[s, k, l] (people of cell s from k to l) within
    growing boxes around the LP's, each costing the sum of the x cheapest people of (s, k) for
    l (convex in x: sorted costs), under the target rows; then the people of each (s, k) are
    assigned to their destinations exactly (a transportation problem). The assignment can cost
    more than the flows' estimate (one person is cheapest for two destinations), never less
    than the LP."""
    import scipy.sparse as sp
    from scipy.optimize import Bounds, LinearConstraint, milp

    from fairaudit.repair.people import _cheapest
    from fairaudit.repair.program import RADII

    S, K = problem.shape
    N = problem.counts.astype(np.int64)
    end = time.monotonic() + time_limit
    costs: dict[tuple[int, int], np.ndarray] = {}
    for s in range(S):
        for k in range(K):
            rows = order[starts[s * K + k]:starts[s * K + k + 1]]
            if rows.size:
                costs[(s, k)] = f.added(rows, np.full(rows.size, k), np.arange(K)) + eta
    for radius in RADII:
        if time.monotonic() >= end:
            return None
        m_index = np.arange(S * K).reshape(S, K)
        rows_, n_base, aux = count_rows(problem, m_index, S * K)
        units: list[tuple[int, int, int, float]] = []  # (s, k, l, cost) per unit variable
        fixed = np.zeros((S, K, K), dtype=np.int64)
        fixed_cost = 0.0
        for (s, k), c in costs.items():
            for m in range(K):
                if m == k:
                    continue
                fl = flows[s, k, m]
                n_sk = c.shape[0]
                lo = 0 if radius is None else max(int(np.floor(fl + 1e-9)) - radius, 0)
                hi = n_sk if radius is None else min(int(np.ceil(fl - 1e-9)) + radius, n_sk)
                if hi <= 0:
                    continue
                srt = np.sort(np.partition(c[:, m], hi - 1)[:hi]) if hi < n_sk else np.sort(c[:, m])
                fixed[s, k, m] = lo
                fixed_cost += float(srt[:lo].sum())
                units += [(s, k, m, float(v)) for v in srt[lo:hi]]
        U = len(units)
        us = np.array([u[0] for u in units], dtype=np.int64)
        uk = np.array([u[1] for u in units], dtype=np.int64)
        ul = np.array([u[2] for u in units], dtype=np.int64)
        uc = np.array([u[3] for u in units])
        # one integer X per (s, k, l) = the sum of its units: the units stay continuous (the
        # sorted costs fill them cheapest first), so branching is on X alone
        gkey = (us * K + uk) * K + ul
        groups, gid = np.unique(gkey, return_inverse=True)
        G = groups.size
        n_vars = n_base + U + G
        # M[s, k] + out - in = N[s, k] - fixed out + fixed in
        R = [np.arange(S * K), m_index[us, uk], m_index[us, ul]]
        C = [np.arange(S * K), n_base + np.arange(U), n_base + np.arange(U)]
        V = [np.ones(S * K), np.ones(U), -np.ones(U)]
        rhs = (N - fixed.sum(axis=2) + fixed.sum(axis=1)).ravel().astype(float)
        # outflow of (s, k) at most N[s, k]
        R.append(S * K + m_index[us, uk])
        C.append(n_base + np.arange(U))
        V.append(np.ones(U))
        # X_g - sum of its units = 0
        R += [2 * S * K + gid, 2 * S * K + np.arange(G)]
        C += [n_base + np.arange(U), n_base + U + np.arange(G)]
        V += [np.ones(U), -np.ones(G)]
        A1 = sp.csr_matrix((np.concatenate(V), (np.concatenate(R), np.concatenate(C))),
                           shape=(2 * S * K + G, n_vars))
        A = sp.vstack([rows_.matrix(n_vars), A1]).tocsr()
        lo0, hi0 = rows_.bounds()
        cap = (N - fixed.sum(axis=2)).ravel().astype(float)
        lo = np.concatenate([lo0, rhs, np.full(S * K, -np.inf), np.zeros(G)])
        hi = np.concatenate([hi0, rhs, cap, np.zeros(G)])
        lb = np.zeros(n_vars)
        ub = np.full(n_vars, np.inf)
        ub[:S * K] = np.repeat(N.sum(axis=1), K)
        for j, (_, h) in enumerate(aux):
            ub[S * K + j] = h
        ub[n_base:n_base + U] = 1.0
        ub[n_base + U:] = np.bincount(gid, minlength=G)
        c = np.zeros(n_vars)
        c[n_base:n_base + U] = uc
        integ = np.zeros(n_vars)
        integ[n_base + U:] = 1
        res = milp(c, integrality=integ, bounds=Bounds(lb, ub),
                   constraints=[LinearConstraint(A, lo, hi)],
                   options={"time_limit": max(end - time.monotonic(), 0.05),
                            "mip_rel_gap": 1e-4, "node_limit": ROUND_NODES})
        if res.x is None:
            continue
        x = fixed.copy()
        ss, kk, ll = groups // (K * K), (groups // K) % K, groups % K
        np.add.at(x, (ss, kk, ll), np.rint(res.x[n_base + U:]).astype(np.int64))
        moved_rows, moved_to, total = [], [], 0.0
        plan = np.zeros((S, K, K), dtype=np.int64)
        for (s, k), _c in costs.items():
            if x[s, k].sum() == 0:
                continue
            block = order[starts[s * K + k]:starts[s * K + k + 1]]
            blocks = [block if j == k else block[:0] for j in range(K)]
            out = np.zeros(K, dtype=np.int64)
            out[k] = x[s, k].sum()
            r, d, p, cst = _cheapest(blocks, out, x[s, k], f, K)
            moved_rows.append(r)
            moved_to.append(d)
            plan[s] += p
            total += cst
        mv = Moves(np.concatenate(moved_rows), np.concatenate(moved_to), plan,
                   total - eta * float(plan.sum()))
        M = N - plan.sum(axis=2) + plan.sum(axis=1)
        if all(e["met"] for e in evaluate(problem, M)) and structure_ok(problem, M):
            return mv
    return None


def _integer(master: _Master, y: np.ndarray, time_limit: float) -> np.ndarray | None:
    """The pairs of the exact integer program over the master's pairs, or None."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    c, A, lo, hi, lb, ub, layout = master.program(reserve=False)
    integ = np.zeros(c.size)
    base, P = layout["base"], layout["pairs"].size
    integ[base:base + P] = 1
    res = milp(c, integrality=integ, bounds=Bounds(lb, ub),
               constraints=[LinearConstraint(A, lo, hi)],
               options={"time_limit": time_limit, "mip_rel_gap": 1e-9})
    if res.x is None:
        return None
    chosen = layout["pairs"][res.x[base:base + P] > 0.5]
    return chosen if _check(master, chosen) else None


def _check(master: _Master, chosen: np.ndarray) -> bool:
    """The chosen pairs move each person at most once and meet every target."""
    rows = master.pair_row[chosen]
    if np.unique(rows).size != rows.size:
        return False
    S, K = master.S, master.K
    plan = np.zeros((S, K, K), dtype=np.int64)
    np.add.at(plan, (master.cell[rows], master.segment[rows], master.pair_to[chosen]), 1)
    M = master.p.counts - plan.sum(axis=2) + plan.sum(axis=1)
    if (M < 0).any() or not math.isfinite(float(M.sum())):
        return False
    return all(e["met"] for e in evaluate(master.p, M)) and structure_ok(master.p, M)
