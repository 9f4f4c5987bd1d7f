"""``objective = cost`` (issue 39): the column-generation LP equals the fair assignment LP
written over every row (an independent dense formulation); the integer repair meets the targets,
costs no less than the LP and equals the exact integer program over every row on small tables."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from repair_helpers import scopes_of
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

from fairaudit.repair.cost import ETA, solve_cost
from fairaudit.repair.people import Features
from fairaudit.repair.problem import CountProblem, Target, evaluate
from fairaudit.repair.program import count_rows


def _case(seed: int):
    rng = np.random.default_rng(seed)
    n, K = int(rng.integers(80, 200)), 3
    sex = rng.integers(0, 2, n)
    race = rng.choice(3, n, p=[0.6, 0.3, 0.1])
    seg = np.where(rng.random(n) < 0.5, sex * 2 % K, rng.integers(0, K, n))
    combos = sorted(set(zip(sex.tolist(), race.tolist(), strict=True)))
    cid = {c: i for i, c in enumerate(combos)}
    cell = np.array([cid[c] for c in zip(sex.tolist(), race.tolist(), strict=True)])
    codes = np.array(combos, dtype=np.int64)
    N = np.zeros((len(combos), K), dtype=np.int64)
    np.add.at(N, (cell, seg), 1)
    X = rng.normal(size=(n, 2)) + seg[:, None] * 1.5
    f = Features.of(X, seg, K, ("a", "b"))
    p = CountProblem(N, scopes_of(codes, ("sex", "race"), N.sum(axis=1)),
                     (Target("balance", 0.8, "sex"), Target("balance", 0.6, "race")))
    return p, cell, seg, f


def dense(p: CountProblem, cell, seg, f: Features, eta: float, integer: bool) -> float:
    """min sum c[i, l] y[i, l] over every row and segment; M[s, l] = sum_{i in s} y[i, l]."""
    S, K = p.shape
    n = cell.size
    m_index = np.arange(S * K).reshape(S, K)
    rows, nb, aux = count_rows(p, m_index, S * K)
    nv = nb + n * K
    y = nb + np.arange(n * K).reshape(n, K)
    c = f.added(np.arange(n), seg, np.arange(K)) + eta
    c[np.arange(n), seg] = 0.0
    R, C, V = [], [], []
    for s in range(S):
        members = np.flatnonzero(cell == s)
        for dest in range(K):
            r = s * K + dest
            R += [r] + [r] * members.size
            C += [m_index[s, dest]] + y[members, dest].tolist()
            V += [1.0] + [-1.0] * members.size
    A = sp.vstack([rows.matrix(nv), sp.csr_matrix((V, (R, C)), shape=(S * K, nv)),
                   sp.csr_matrix((np.ones(n * K), (np.repeat(np.arange(n), K), y.ravel())),
                                 shape=(n, nv))]).tocsr()
    lo0, hi0 = rows.bounds()
    lo = np.concatenate([lo0, np.zeros(S * K), np.ones(n)])
    hi = np.concatenate([hi0, np.zeros(S * K), np.ones(n)])
    cc = np.zeros(nv)
    cc[nb:] = c.ravel()
    ub = np.full(nv, np.inf)
    ub[nb:] = 1.0
    for j, (_, h) in enumerate(aux):
        ub[S * K + j] = h
    if integer:
        integ = np.zeros(nv)
        integ[nb:] = 1
        res = milp(cc, integrality=integ, bounds=Bounds(np.zeros(nv), ub),
                   constraints=[LinearConstraint(A, lo, hi)])
        x = res.x
    else:
        eq = lo == hi
        res = linprog(cc, A_ub=sp.vstack([A[~eq & np.isfinite(hi)],
                                          -A[~eq & np.isfinite(lo)]]),
                      b_ub=np.concatenate([hi[~eq & np.isfinite(hi)],
                                           -lo[~eq & np.isfinite(lo)]]),
                      A_eq=A[eq], b_eq=lo[eq], bounds=np.column_stack([np.zeros(nv), ub]),
                      method="highs")
        x = res.x
    yv = x[nb:].reshape(n, K)
    yv[np.arange(n), seg] = 0.0
    moved = float(yv.sum())
    return float(res.fun) - eta * moved


def _eta(f: Features, seg) -> float:
    probe = np.linspace(0, seg.size - 1, min(seg.size, 20_000)).astype(np.int64)
    a = f.added(probe, seg[probe], np.arange(f.centroids.shape[0]))
    return ETA * float(a[a > 0].mean())


@pytest.mark.parametrize("seed", [0, 1, 3])
def test_column_generation_equals_the_dense_lp_and_the_integer_program(seed):
    p, cell, seg, f = _case(seed)
    got = solve_cost(p, cell, seg, f)
    eta = _eta(f, seg)
    assert abs(got.lp_cost - dense(p, cell, seg, f, eta, integer=False)) <= 1e-6
    exact = dense(p, cell, seg, f, eta, integer=True)
    assert got.lp_cost <= got.cost + 1e-9
    assert got.cost <= exact + 1e-6  # the integer repair over the pool is the exact optimum
    new = seg.copy()
    new[got.moves.rows] = got.moves.to
    M = np.zeros_like(p.counts)
    np.add.at(M, (cell, new), 1)
    assert np.array_equal(M, got.counts)
    assert all(e["met"] for e in evaluate(p, M))


def test_an_unfinished_cost_lp_falls_back_to_the_fewest_moves(monkeypatch, caplog):
    import fairaudit.repair.cost as cost

    p, cell, seg, f = _case(0)
    monkeypatch.setattr(cost, "UNFINISHED_SHARE", 0.0)  # the first round already "late"
    got = solve_cost(p, cell, seg, f)
    assert got.lp_cost is None and not got.optimal and "did not finish" in got.method
    assert "did not finish" in caplog.text
    new = seg.copy()
    new[got.moves.rows] = got.moves.to
    M = np.zeros_like(p.counts)
    np.add.at(M, (cell, new), 1)
    assert all(e["met"] for e in evaluate(p, M))


def test_assign_exact_equals_the_transportation_lp():
    from fairaudit.repair.people import assign_exact

    rng = np.random.default_rng(9)
    for n, m in ((300, 4), (1200, 5)):
        cost = np.abs(rng.normal(size=(n, m))) + rng.random((n, 1))
        cost[rng.random((n, m)) < 0.2] = np.inf
        cost[:, 0] = np.where(np.isinf(cost).all(axis=1), 0.0, cost[:, 0])
        free = np.isfinite(cost)
        caps = np.bincount(np.argmax(np.where(free, rng.random((n, m)), -1), axis=1),
                           minlength=m)  # feasible: a random allowed column per row
        got = assign_exact(cost, caps)
        assert np.array_equal(np.bincount(got, minlength=m), caps)
        r, c = np.nonzero(free)
        res = linprog(cost[r, c],
                      A_eq=sp.vstack([sp.csr_matrix((np.ones(r.size), (r, np.arange(r.size))),
                                                    shape=(n, r.size)),
                                      sp.csr_matrix((np.ones(r.size), (c, np.arange(r.size))),
                                                    shape=(m, r.size))]).tocsr(),
                      b_eq=np.concatenate([np.ones(n), caps]), bounds=(0, 1), method="highs")
        assert abs(cost[np.arange(n), got].sum() - res.fun) <= 1e-7 * max(1.0, res.fun)
