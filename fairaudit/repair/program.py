"""The repair's optimisation program on the group x segment counts (docs/repair.md).

Input: ``N[s, k]``, the number of people of joint sensitive cell ``s`` (one combination of the
named attributes' values) in segment ``k``. A repair chooses new counts ``M[s, k]`` (integers,
``sum_k M[s, k] = |s|``: nobody changes group, everybody keeps a segment); the fewest people
moved to reach ``M`` is ``sum_{s,k} max(N[s, k] - M[s, k], 0)`` (within each cell people leave the
segments that shrink and join those that grow, so no one moves twice). Every target on the
audit's count metrics that is linear in ``M`` is a set of linear rows over ``M`` — in particular
``balance >= t``: with ``rho_g`` the group's share of the judged rows (fixed: nobody changes
group) and ``|k|`` the segment's judged size (a variable),

    t * rho_g * |k|  <=  M_g[k]  <=  rho_g * |k| / t

which is linear in ``M`` although balance is a ratio of counts (the ratio's denominators
``|g|`` and ``n`` are constants; ``|k|`` only multiplies constants). So the fewest moves is an
integer linear program with ``2 S K`` variables, whatever the row count, solved exactly by
HiGHS (``scipy.optimize.milp``); its LP relaxation (``linprog``) is the lower bound reported
beside it.

Layer-1 code: numpy and scipy only, no host, no I/O.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np

from fairaudit.repair.problem import (
    CountProblem,
    CountSolution,
    Infeasible,
    Scope,
    Target,
    evaluate,
    structure_ok,
)
from fairaudit.repair.spec import LINEAR_METRICS, target_problem

log = logging.getLogger(__name__)

__all__ = ["Rows", "check_targets", "count_rows", "diagnose_infeasible", "solve_counts"]

MARGINS = (0.0, 1e-7, 1e-5, 1e-3)
"""Slack (in people) added to the target rows when a solver's tolerance let a solution break a
target by a rounding error: the solution is re-checked with the audit's own float formulas
(:func:`evaluate`) and the program re-solved with the next margin."""


# ---------------------------------------------------------------------------- the rows
class Rows:
    """Sparse linear rows ``lo <= a @ x <= hi`` over the program's variables."""

    def __init__(self) -> None:
        self.rows: list[np.ndarray] = []
        self.cols: list[np.ndarray] = []
        self.vals: list[np.ndarray] = []
        self.lo: list[float] = []
        self.hi: list[float] = []
        self.kind: list[str] = []
        """``target`` rows get the margin; ``structure`` rows do not."""

    def add(self, cols: np.ndarray, vals: np.ndarray, lo: float, hi: float,
            kind: str = "target") -> None:
        cols = np.asarray(cols, dtype=np.int64)
        vals = np.broadcast_to(np.asarray(vals, dtype=float), cols.shape)
        keep = vals != 0
        r = len(self.lo)
        self.rows.append(np.full(int(keep.sum()), r, dtype=np.int64))
        self.cols.append(cols[keep])
        self.vals.append(vals[keep].astype(float))
        self.lo.append(float(lo))
        self.hi.append(float(hi))
        self.kind.append(kind)

    def __len__(self) -> int:
        return len(self.lo)

    def matrix(self, n_vars: int) -> Any:
        import scipy.sparse as sp

        if not self.lo:
            return sp.csr_matrix((0, n_vars))
        return sp.csr_matrix((np.concatenate(self.vals),
                              (np.concatenate(self.rows), np.concatenate(self.cols))),
                             shape=(len(self.lo), n_vars))

    def bounds(self, margin: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        lo = np.array(self.lo, dtype=float)
        hi = np.array(self.hi, dtype=float)
        if margin:
            t = np.array([k == "target" for k in self.kind])
            lo = np.where(t & np.isfinite(lo), lo + margin, lo)
            hi = np.where(t & np.isfinite(hi), hi - margin, hi)
        return lo, hi


def _shares(problem: CountProblem, sc: Scope) -> tuple[np.ndarray, float]:
    """Judged group sizes (fixed) and the judged total of a scope."""
    n_s = problem.counts.sum(axis=1)
    sizes = np.zeros(len(sc.groups), dtype=float)
    judged = sc.group_of_cell >= 0
    np.add.at(sizes, sc.group_of_cell[judged], n_s[judged])
    return sizes, float(sizes.sum())


def count_rows(problem: CountProblem, m_index: np.ndarray, n_vars: int
               ) -> tuple[Rows, int, list[tuple[int, int]]]:
    """The rows of every target, the non-empty segments and the size bounds, over the count
    variables ``M[s, k]`` at ``m_index[s, k]``; auxiliary variables (the absolute share
    differences of a wd target) are numbered from ``n_vars`` on. Returns (rows, the number of
    variables with the auxiliaries, the auxiliaries' bounds)."""
    S, K = problem.shape
    rows = Rows()
    aux: list[tuple[int, int]] = []
    nxt = n_vars
    wd_aux: dict[str, np.ndarray] = {}
    for sc in problem.scopes:
        judged = np.flatnonzero(sc.group_of_cell >= 0)
        for k in range(K):  # the segment keeps at least one judged person of this table
            rows.add(m_index[judged, k], 1.0, 1.0, math.inf, "structure")
    for t in problem.targets:
        sc = problem.scope(t.attribute)
        sizes, total = _shares(problem, sc)
        rho = sizes / total
        judged = np.flatnonzero(sc.group_of_cell >= 0)
        gidx = sc.group_of_cell[judged]
        G = len(sc.groups)
        v = float(t.value)
        for k in range(K):
            cols = m_index[judged, k]
            for g in range(G) if t.groups is None else t.groups:
                ing = (gidx == g).astype(float)
                if v > 0 and t.metric in ("balance", "balance_prime", "fairness_cce"):
                    # valid for whole people: M_g >= t rho |k| > 0 (|k| >= 1) means M_g >= 1;
                    # it tightens the LP bound where small segments must grow
                    rows.add(cols, ing, 1.0, math.inf, "structure")
                if t.metric == "balance":
                    if v <= 0:
                        continue
                    rows.add(cols, ing - v * rho[g], 0.0, math.inf)   # M_g >= t rho |k|
                    rows.add(cols, ing - rho[g] / v, -math.inf, 0.0)  # M_g <= rho |k| / t
                elif t.metric == "balance_prime":
                    rows.add(cols, ing - v, 0.0, math.inf)            # M_g >= t |k|
                elif t.metric == "fairness_cce":
                    if v <= 0:
                        continue
                    rows.add(cols, ing, v * sizes[g] / K, sizes[g] / (K * v))
        if t.metric == "cce":
            for k in range(K):
                for m in range(K):
                    if k != m:  # |k| >= t |m|
                        c = np.concatenate([m_index[judged, k], m_index[judged, m]])
                        a = np.concatenate([np.ones(judged.size), -v * np.ones(judged.size)])
                        rows.add(c, a, 0.0, math.inf)
        if t.metric in ("wd", "wd_max"):
            e = wd_aux.get(sc.attribute)
            if e is None:  # e[g, k] >= |M_g[k] - rho_g |k||
                e = np.arange(nxt, nxt + G * K).reshape(G, K)
                nxt += G * K
                aux += [(0, int(total))] * (G * K)
                wd_aux[sc.attribute] = e
                for k in range(K):
                    cols = m_index[judged, k]
                    for g in range(G):
                        dev = (gidx == g).astype(float) - rho[g]
                        c = np.append(cols, e[g, k])
                        rows.add(c, np.append(dev, -1.0), -math.inf, 0.0, "structure")
                        rows.add(c, np.append(-dev, -1.0), -math.inf, 0.0, "structure")
            if t.metric == "wd_max":  # (1/2) sum_g e[g, k] <= tau |k|
                for k in range(K):
                    c = np.concatenate([e[:, k], m_index[judged, k]])
                    a = np.concatenate([np.full(G, 0.5), -v * np.ones(judged.size)])
                    rows.add(c, a, -math.inf, 0.0)
            else:  # the size-weighted mean: (1/2n) sum_{g,k} e[g, k] <= tau
                rows.add(e.ravel(), 0.5, -math.inf, v * total)
    if problem.keep_sizes is not None:
        size0 = problem.counts.sum(axis=0)
        d = float(problem.keep_sizes)
        for k in range(K):
            lo = math.ceil((1 - d) * size0[k] - 1e-9)
            hi = math.floor((1 + d) * size0[k] + 1e-9)
            rows.add(m_index[:, k], 1.0, lo, hi, "structure")
    return rows, nxt, aux


def check_targets(problem: CountProblem) -> None:
    """Targets the program cannot take: ``ValueError`` naming them."""
    for t in problem.targets:
        why = target_problem(t.metric, t.value)
        if why:
            raise ValueError(why)
    if problem.keep_sizes is not None and not 0 <= problem.keep_sizes < 1:
        raise ValueError(f"keep_sizes={problem.keep_sizes}: expected a share in [0, 1), "
                         "e.g. 0.05 for +-5 %")


# ------------------------------------------------------------------------------ solving
def _moves_program(problem: CountProblem) -> tuple[Any, np.ndarray, Rows, Any, int]:
    """Variables [M (S K), d (S K), aux]; objective sum d; rows: targets, sizes, row sums
    sum_k M[s, k] = |s| and d[s, k] >= N[s, k] - M[s, k]."""
    from scipy.optimize import Bounds

    S, K = problem.shape
    N = problem.counts.astype(float)
    m_index = np.arange(S * K).reshape(S, K)
    d_index = S * K + m_index
    rows, n_vars, aux = count_rows(problem, m_index, 2 * S * K)
    n_s = N.sum(axis=1)
    for s in range(S):
        rows.add(m_index[s], 1.0, n_s[s], n_s[s], "structure")
    for s in range(S):
        for k in range(K):
            rows.add(np.array([m_index[s, k], d_index[s, k]]), 1.0, N[s, k], math.inf,
                     "structure")
    lo = np.zeros(n_vars)
    hi = np.concatenate([np.repeat(n_s, K), N.ravel(), [b for _, b in aux]]).astype(float)
    c = np.zeros(n_vars)
    c[S * K:2 * S * K] = 1.0
    integrality = np.zeros(n_vars)
    integrality[:2 * S * K] = 1
    return c, integrality, rows, Bounds(lo, hi), n_vars


def _lp(c: np.ndarray, rows: Rows, bounds: Any, n_vars: int, margin: float) -> Any:
    from scipy.optimize import linprog

    A = rows.matrix(n_vars)
    lo, hi = rows.bounds(margin)
    eq = lo == hi
    ub_rows = ~eq
    A_ub = [A[ub_rows & np.isfinite(hi)], -A[ub_rows & np.isfinite(lo)]]
    b_ub = np.concatenate([hi[ub_rows & np.isfinite(hi)], -lo[ub_rows & np.isfinite(lo)]])
    import scipy.sparse as sp

    return linprog(c, A_ub=sp.vstack(A_ub).tocsr(), b_ub=b_ub, A_eq=A[eq], b_eq=lo[eq],
                   bounds=list(zip(bounds.lb, bounds.ub, strict=True)), method="highs")


def _milp(c: np.ndarray, integrality: np.ndarray, rows: Rows, bounds: Any, n_vars: int,
          margin: float, time_limit: float, *, cutoff: float | None = None,
          node_limit: int | None = None) -> Any:
    """HiGHS's branch and bound; ``cutoff``: only solutions with objective <= cutoff;
    ``node_limit``: stop after that many nodes with the best solution found (deterministic,
    unlike a time limit)."""
    import scipy.sparse as sp
    from scipy.optimize import LinearConstraint, milp

    lo, hi = rows.bounds(margin)
    A = rows.matrix(n_vars)
    if cutoff is not None:
        A = sp.vstack([A, sp.csr_matrix(c.reshape(1, -1))]).tocsr()
        lo, hi = np.append(lo, -np.inf), np.append(hi, cutoff)
    return milp(c, integrality=integrality, bounds=bounds,
                constraints=[LinearConstraint(A, lo, hi)],
                options={"time_limit": max(float(time_limit), 0.05), "mip_rel_gap": 1e-9,
                         **({"node_limit": node_limit} if node_limit else {})})


def _box(bounds: Any, centre: np.ndarray, radius: int | None, n: int) -> Any:
    """``bounds`` with the first ``n`` variables kept within ``radius`` of ``centre``."""
    from scipy.optimize import Bounds

    if radius is None:
        return bounds
    lb, ub = bounds.lb.copy(), bounds.ub.copy()
    lb[:n] = np.maximum(np.floor(centre[:n] + 1e-9) - radius, lb[:n])
    ub[:n] = np.minimum(np.ceil(centre[:n] - 1e-9) + radius, ub[:n])
    return Bounds(lb, ub)


RADII = (1, 2, 4, 16, 64, None)
"""The integer program is first solved within this many people of the LP's counts in every
(cell, segment) — a small box in which HiGHS's branch and bound is fast at any row count — and
the box grows until it holds a repair (``None``: no box, the whole program)."""

BOX_NODES = 200
"""Branch-and-bound nodes a box's program may use: it keeps the best repair found by then
(usually found within the first nodes; proving it the box's best can take thousands, and
only the LP bound or the whole program's search can prove it the fewest anyway)."""

PROOF_SECONDS = 5.0
"""Time the search for a repair with fewer moves than the box's (over the whole program) may
take when the box's repair is above the LP bound's ceiling. A search that ends in time proves
the answer optimal (or finds the optimum); one cut short changes nothing (the result does not
depend on the machine's speed except through whether optimality is proven)."""


def solve_counts(problem: CountProblem, *, time_limit: float = 60.0,
                 proof_seconds: float = PROOF_SECONDS, diagnose: bool = True) -> CountSolution:
    """The fewest moves meeting every target: an integer program and its LP bound.

    The LP relaxation gives the bound and a centre; the integer program is solved to
    optimality inside growing boxes around it (:data:`RADII`), then, when the box's repair is
    above ``ceil(LP bound)``, HiGHS searches the whole program for one with fewer moves for up
    to ``proof_seconds`` (``optimal`` says whether the answer is proven the fewest).

    Raises :class:`Infeasible` (naming the group that makes it so when one does) when no
    integer repair exists, or when the solver found none within ``time_limit`` seconds."""
    import time

    check_targets(problem)
    S, K = problem.shape
    start = time.monotonic()
    deadline = start + float(time_limit)
    N = problem.counts.astype(np.int64)
    if all(e["met"] for e in evaluate(problem, N)) and structure_ok(problem, N):
        return CountSolution(N.copy(), 0, 0.0, True, 0.0, 0.0, N.astype(float),
                             time.monotonic() - start)
    c, integrality, rows, bounds, n_vars = _moves_program(problem)
    lp = _lp(c, rows, bounds, n_vars, 0.0)
    if lp.status == 2:
        raise Infeasible(diagnose_infeasible(problem, relaxation=True) if diagnose
                         else "the targets cannot be met, even fractionally",
                         relaxation_feasible=False)
    if lp.status != 0:
        raise RuntimeError(f"the LP relaxation failed: {lp.message}")
    lp_bound = float(lp.fun)
    floor_moves = math.ceil(lp_bound - 1e-6)
    for margin in MARGINS:
        found = None
        for radius in RADII:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            res = _milp(c, integrality, rows, _box(bounds, lp.x, radius, 2 * S * K), n_vars,
                        margin, left, node_limit=BOX_NODES if radius is not None else None)
            if res.x is not None:
                found = res
                break
            if radius is None and (res.status == 2 or "infeasible" in str(res.message).lower()):
                if margin == 0.0:
                    raise Infeasible(diagnose_infeasible(problem) if diagnose
                                     else "no integer repair meets the targets",
                                     relaxation_feasible=True)
                raise Infeasible("no integer repair passes the audit's float check of the "
                                 "targets (every repair sits within a rounding error of a "
                                 "bound); lower a target slightly", relaxation_feasible=True)
        if found is None:
            raise Infeasible(f"the integer program found no repair within {time_limit:g} s; "
                             "give it more time (--time-limit) or fewer segments/groups",
                             relaxation_feasible=True)
        M = _counts_of(found.x, S, K, N)
        if not (all(e["met"] for e in evaluate(problem, M)) and structure_ok(problem, M)):
            log.info("repair: the integer solution breaks a target by a rounding error; "
                     "re-solving with a margin")
            continue
        moves = int(np.maximum(N - M, 0).sum())
        optimal = moves <= floor_moves
        bound = float(floor_moves)
        budget = min(float(proof_seconds), deadline - time.monotonic())
        if not optimal and budget > 0:
            better = _milp(c, integrality, rows, bounds, n_vars, margin, budget,
                           cutoff=moves - 1 + 1e-6)
            if better.x is not None and better.status == 0:
                M2 = _counts_of(better.x, S, K, N)
                if all(e["met"] for e in evaluate(problem, M2)) and structure_ok(problem, M2):
                    M, moves, optimal, bound = M2, int(np.maximum(N - M2, 0).sum()), True, moves
            elif better.status == 2 or "infeasible" in str(better.message).lower():
                optimal, bound = True, float(moves)
        gap = 0.0 if optimal else (moves - bound) / max(moves, 1)
        return CountSolution(M, moves, lp_bound, optimal, gap, margin,
                             lp.x[:S * K].reshape(S, K), time.monotonic() - start)
    raise Infeasible("no integer repair passes the audit's float check of the targets (every "
                     "repair sits within a rounding error of a bound); lower a target slightly",
                     relaxation_feasible=True)


def _counts_of(x: np.ndarray, S: int, K: int, N: np.ndarray) -> np.ndarray:
    M = np.rint(x[:S * K].reshape(S, K)).astype(np.int64)
    if not (M.sum(axis=1) == N.sum(axis=1)).all() or (M < 0).any():
        raise RuntimeError("the integer program returned counts that do not add up")
    return M


# ------------------------------------------------------------------------- infeasibility
def _feasible(problem: CountProblem, relaxation: bool, time_limit: float = 10.0) -> bool | None:
    """Whether ``problem`` has a repair (None: the solver could not tell in time)."""
    c, integrality, rows, bounds, n_vars = _moves_program(problem)
    c = np.zeros_like(c)
    if relaxation:
        res = _lp(c, rows, bounds, n_vars, 0.0)
        return res.status == 0
    res = _milp(c, integrality, rows, bounds, n_vars, 0.0, time_limit)
    if res.x is not None:
        return True
    if res.status == 2 or "infeasible" in str(res.message).lower():
        return False
    return None


def _group_problem(problem: CountProblem, t: Target, g: int) -> CountProblem:
    """``problem`` with one target on one group only (every other group unconstrained)."""
    return CountProblem(problem.counts, problem.scopes,
                        (Target(t.metric, t.value, t.attribute, groups=(g,)),),
                        problem.keep_sizes)


def diagnose_infeasible(problem: CountProblem, *, relaxation: bool = False) -> str:
    """Which target and group make the repair impossible, in a sentence."""
    S, K = problem.shape
    what = "even fractionally" if relaxation else "in whole people"
    # 1. a group smaller than the number of segments cannot be in every segment
    for t in problem.targets:
        if t.value <= 0 or t.metric not in ("balance", "fairness_cce", "balance_prime"):
            continue
        sc = problem.scope(t.attribute)
        sizes, _ = _shares(problem, sc)
        for g in np.argsort(sizes):
            if sizes[g] < K:
                return (f"{t.metric} >= {t.value:g} on {t.attribute} needs every segment to hold "
                        f"at least one person of each judged group, but group "
                        f"{sc.groups[g]!r} has {int(sizes[g])} people and there are {K} "
                        "segments; lower the target, use fewer segments, or raise --min-cell "
                        "above the group's size (the audit then leaves it out as too small)")
    # 2. one group under one target, alone
    for t in problem.targets:
        if t.metric not in ("balance", "fairness_cce", "balance_prime"):
            continue
        sc = problem.scope(t.attribute)
        sizes, _ = _shares(problem, sc)
        for g in np.argsort(sizes):
            sub = _group_problem(problem, t, int(g))
            ok = _feasible(sub, relaxation, time_limit=5.0)
            if ok is False:
                why = (f"group {sc.groups[g]!r} of {t.attribute} ({int(sizes[g])} people) "
                       f"cannot meet {t.metric} {_rel(t)} {t.value:g} in every one of the "
                       f"{K} segments {what}")
                if problem.keep_sizes is not None:
                    why += f" with every segment's size kept within ±{problem.keep_sizes:.0%}"
                return why + "; lower the target" + (
                    ", allow more change in sizes (--keep-sizes)"
                    if problem.keep_sizes is not None else "") + " or use fewer segments"
    # 3. one target alone
    for t in problem.targets:
        sub = CountProblem(problem.counts, problem.scopes, (t,), problem.keep_sizes)
        if _feasible(sub, relaxation, time_limit=5.0) is False:
            return (f"{t.metric} {_rel(t)} {t.value:g} on {t.attribute} cannot be met {what} "
                    "(no single group is the cause: the groups' bounds conflict with each "
                    "other" + (" and with --keep-sizes" if problem.keep_sizes is not None
                               else "") + ")")
    names = ", ".join(f"{t.metric}[{t.attribute}] {_rel(t)} {t.value:g}"
                      for t in problem.targets)
    return (f"each target can be met alone but not all together {what} ({names}): "
            "the attributes' bounds conflict; lower a target")


def _rel(t: Target) -> str:
    return ">=" if LINEAR_METRICS.get(t.metric) == "higher" else "<="
