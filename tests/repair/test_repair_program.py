"""The repair's program on counts against oracles (issue 39).

- brute force: on tiny tables every relabelling of the rows is tried; the fewest moves that meet
  the targets (by the audit's own float formulas, every segment kept) equals the repair's, and
  an infeasible table is infeasible for both;
- the LP relaxation is a lower bound of every repair; integer moves <= LP bound + one per
  (cell, segment) on random tables;
- properties (hypothesis): the repaired counts meet every target by the audit's functions,
  computed independently from the counts; a table that already meets them moves nobody;
- every linear target (balance_prime, fairness_cce, cce, wd, wd_max, keep_sizes) holds after;
- an infeasible target names the group that makes it so.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from repair_helpers import scopes_of

from fairaudit.metrics import counting
from fairaudit.repair.problem import CountProblem, Infeasible, Target, evaluate, transport_plan
from fairaudit.repair.program import solve_counts


def table_of(cell: np.ndarray, lab: np.ndarray, S: int, K: int) -> np.ndarray:
    T = np.zeros((S, K), dtype=np.int64)
    np.add.at(T, (cell, lab), 1)
    return T


def brute_force(cell: np.ndarray, seg: np.ndarray, problem: CountProblem) -> int | None:
    """The fewest moves over every relabelling (None: none meets the targets)."""
    S, K = problem.shape
    n = cell.size
    labs = np.array(list(itertools.product(range(K), repeat=n)), dtype=np.int64)
    T = np.zeros((labs.shape[0], S, K), dtype=np.int64)
    for i in range(n):
        T[np.arange(labs.shape[0]), cell[i], labs[:, i]] += 1
    ok = np.ones(labs.shape[0], dtype=bool)
    for sc in problem.scopes:
        judged = sc.group_of_cell >= 0
        G = len(sc.groups)
        A = np.zeros((labs.shape[0], G, K), dtype=np.int64)
        for s in np.flatnonzero(judged):
            A[:, sc.group_of_cell[s]] += T[:, s]
        ok &= (A.sum(axis=1) >= 1).all(axis=1)  # every segment keeps judged people
        for t in problem.targets:
            if t.attribute != sc.attribute:
                continue
            v = counting.balance_min(A.astype(float))
            ok &= v >= t.value
    if not ok.any():
        return None
    return int((labs[ok] != seg[None, :]).sum(axis=1).min())


def _tiny(rng: np.random.Generator):
    n = int(rng.integers(5, 10))
    K = int(rng.integers(2, 4)) if n <= 8 else 2
    sex, race = rng.integers(0, 2, n), rng.integers(0, 2, n)
    seg = rng.integers(0, K, n)
    if len(set(seg.tolist())) < K:
        return None
    combos = sorted(set(zip(sex.tolist(), race.tolist(), strict=True)))
    cid = {c: i for i, c in enumerate(combos)}
    cell = np.array([cid[c] for c in zip(sex.tolist(), race.tolist(), strict=True)])
    codes = np.array(combos, dtype=np.int64)
    N = table_of(cell, seg, len(combos), K)
    return cell, seg, codes, N


@pytest.mark.parametrize("intersection", [False, True])
def test_brute_force_equals_the_repair_on_tiny_tables(intersection):
    rng = np.random.default_rng(7 + intersection)
    checked = feasible = 0
    while checked < 24:
        tiny = _tiny(rng)
        if tiny is None:
            continue
        cell, seg, codes, N = tiny
        if intersection and N.sum(axis=1).min() < N.shape[1]:
            continue  # a joint cell smaller than the segments: infeasible for both, trivially
        t = float(rng.choice([0.2, 0.4, 0.5, 0.6, 0.8, 1.0]))
        targets = (Target("balance", t, "sex"), Target("balance", t, "race"))
        if intersection:  # --intersection: the joint cells are a third table
            targets += (Target("balance", float(rng.choice([0.2, 0.4, 0.6])), "sex|race"),)
        problem = CountProblem(N, scopes_of(codes, ("sex", "race"), N.sum(axis=1),
                                            intersection=intersection), targets)
        best = brute_force(cell, seg, problem)
        try:
            sol = solve_counts(problem, diagnose=False)
        except Infeasible:
            assert best is None, f"the repair found none, brute force {best} (t={t}, N={N})"
        else:
            assert sol.moves == best, (sol.moves, best, t, N.tolist())
            assert sol.optimal
            assert sol.lp_bound <= sol.moves + 1e-9
            feasible += 1
        checked += 1
    assert feasible >= 5  # the comparison covered repairs, not only infeasible tables


def _random_problem(rng: np.random.Generator, S_groups=(2, 3), K: int = 4, scale: int = 200,
                    targets=(("balance", 0.8),), keep_sizes=None):
    g1, g2 = S_groups
    codes = np.array([[a, b] for a in range(g1) for b in range(g2)], dtype=np.int64)
    w = rng.dirichlet(np.ones(codes.shape[0]) * 2)
    skew = rng.dirichlet(np.ones(K) * 0.7, size=codes.shape[0])
    N = rng.poisson(scale * codes.shape[0] * w[:, None] * skew).astype(np.int64) + 1
    ts = tuple(Target(m, v, a) for m, v in targets for a in ("sex", "race"))
    return CountProblem(N, scopes_of(codes, ("sex", "race"), N.sum(axis=1)), ts, keep_sizes)


def test_lp_bound_and_the_rounding_allowance_on_random_tables():
    """LP bound <= integer moves <= LP bound + one per (cell, segment)."""
    rng = np.random.default_rng(11)
    for _ in range(6):
        p = _random_problem(rng)
        sol = solve_counts(p, proof_seconds=0.2)
        S, K = p.shape
        assert sol.lp_bound - 1e-6 <= sol.moves <= sol.lp_bound + S * K
        assert all(e["met"] for e in evaluate(p, sol.counts))
        assert (sol.counts.sum(axis=1) == p.counts.sum(axis=1)).all()


def independent_balance(counts: np.ndarray, codes: np.ndarray, j: int) -> float:
    """balance of attribute j computed from the joint counts with counting.balance alone."""
    G = int(codes[:, j].max()) + 1
    A = np.zeros((G, counts.shape[1]))
    np.add.at(A, codes[:, j], counts)
    A = A[A.sum(axis=1) > 0]
    return float(counting.balance(A[:, A.sum(axis=0) > 0]).min)


@st.composite
def tables(draw):
    g1 = draw(st.integers(2, 3))
    g2 = draw(st.integers(2, 3))
    K = draw(st.integers(2, 4))
    S = g1 * g2
    N = np.array(draw(st.lists(st.lists(st.integers(0, 40), min_size=K, max_size=K),
                               min_size=S, max_size=S)), dtype=np.int64)
    N[:, 0] += 1  # every cell has somebody
    N[0, :] += 1  # every segment has somebody
    codes = np.array([[a, b] for a in range(g1) for b in range(g2)], dtype=np.int64)
    t = draw(st.sampled_from([0.5, 0.6, 0.7, 0.8]))
    return N, codes, t


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_property_the_repair_meets_the_target_or_says_why(case):
    N, codes, t = case
    p = CountProblem(N, scopes_of(codes, ("sex", "race"), N.sum(axis=1)),
                     (Target("balance", t, "sex"), Target("balance", t, "race")))
    try:
        sol = solve_counts(p, proof_seconds=0.5)
    except Infeasible as exc:
        assert exc.reason  # a sentence, not an empty error
        return
    for j in (0, 1):
        assert independent_balance(sol.counts, codes, j) >= t
    assert sol.moves == int(np.maximum(N - sol.counts, 0).sum())
    assert sol.lp_bound <= sol.moves + 1e-6


@settings(max_examples=25, deadline=None)
@given(tables())
def test_property_already_fair_moves_nobody(case):
    N, codes, t = case
    p = CountProblem(N, scopes_of(codes, ("sex", "race"), N.sum(axis=1)),
                     (Target("balance", t, "sex"), Target("balance", t, "race")))
    met = all(e["met"] for e in evaluate(p, N))
    # a table proportional to the population in every segment meets any target
    n_s = N.sum(axis=1)
    fair = np.outer(n_s, np.arange(1, N.shape[1] + 1))
    pf = CountProblem(fair, scopes_of(codes, ("sex", "race"), fair.sum(axis=1)), p.targets)
    sol = solve_counts(pf)
    assert sol.moves == 0 and np.array_equal(sol.counts, fair)
    if met:
        sol = solve_counts(p)
        assert sol.moves == 0 and np.array_equal(sol.counts, N)


@pytest.mark.parametrize("metric,value", [("balance_prime", 0.15), ("fairness_cce", 0.6),
                                          ("cce", 0.7), ("wd", 0.02), ("wd_max", 0.05)])
def test_every_linear_target_holds_after(metric, value):
    rng = np.random.default_rng(3)
    p = _random_problem(rng, targets=((metric, value),))
    before = evaluate(p, p.counts)
    assert not all(e["met"] for e in before)
    sol = solve_counts(p, proof_seconds=0.2)
    after = evaluate(p, sol.counts)
    assert all(e["met"] for e in after), after
    assert sol.lp_bound <= sol.moves + 1e-6


def test_keep_sizes_holds_and_costs_moves():
    rng = np.random.default_rng(5)
    p = _random_problem(rng, targets=(("balance", 0.85),))
    free = solve_counts(p, proof_seconds=0.2)
    kept = solve_counts(CountProblem(p.counts, p.scopes, p.targets, keep_sizes=0.02),
                        proof_seconds=0.2)
    size0, size1 = p.counts.sum(axis=0), kept.counts.sum(axis=0)
    assert (np.abs(size1 - size0) <= np.floor(0.02 * size0 + 1e-9)).all()
    assert kept.moves >= free.lp_bound - 1e-6  # more constraints: no fewer than the free bound
    assert all(e["met"] for e in evaluate(p, kept.counts))


def test_infeasible_names_the_group():
    # group b of race has 3 people and there are 4 segments: balance > 0 cannot hold
    codes = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=np.int64)
    N = np.array([[30, 30, 30, 30], [2, 1, 0, 0], [30, 30, 30, 30], [0, 0, 0, 0]])
    p = CountProblem(N, scopes_of(codes, ("sex", "race"), N.sum(axis=1)),
                     (Target("balance", 0.8, "race"),))
    with pytest.raises(Infeasible) as exc:
        solve_counts(p)
    assert "race=1" in exc.value.reason and "3 people" in exc.value.reason
    assert "4 segments" in exc.value.reason


def test_integer_infeasible_at_a_balance_near_one_is_explained():
    """Feasible fractionally, not in whole people: a group of 5 in 3 equal segments at 0.99."""
    codes = np.array([[0], [1]], dtype=np.int64)
    N = np.array([[100, 100, 100], [3, 1, 1]])
    p = CountProblem(N, scopes_of(codes, ("g",), N.sum(axis=1)), (Target("balance", 0.99, "g"),),
                     keep_sizes=0.0)
    with pytest.raises(Infeasible) as exc:
        solve_counts(p)
    assert exc.value.relaxation_feasible is True
    assert "g=1" in exc.value.reason and "whole people" in exc.value.reason


def test_a_nonlinear_target_is_refused_with_the_reason():
    p = _random_problem(np.random.default_rng(0), targets=(("ed_max", 0.1),))
    with pytest.raises(ValueError, match="second-order cone"):
        solve_counts(p)


def test_transport_plan_moves_every_surplus():
    plan = transport_plan([3, 0, 2, 0], [0, 4, 0, 1])
    assert plan.sum(axis=1).tolist() == [3, 0, 2, 0]
    assert plan.sum(axis=0).tolist() == [0, 4, 0, 1]
