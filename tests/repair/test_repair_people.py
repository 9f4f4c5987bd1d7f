"""Who moves (issue 39): the movers reproduce the repaired counts exactly; with features the
choice is the least-cost assignment (checked against an exhaustive search); without, a seeded
random choice that the seed reproduces."""

from __future__ import annotations

import itertools

import numpy as np

from fairaudit.repair.people import Features, choose_movers


def _counts(cell, seg, S, K):
    T = np.zeros((S, K), dtype=np.int64)
    np.add.at(T, (cell, seg), 1)
    return T


def test_movers_give_the_counts_and_the_seed_reproduces_them():
    rng = np.random.default_rng(0)
    n, S, K = 500, 3, 4
    cell, seg = rng.integers(0, S, n), rng.integers(0, K, n)
    N = _counts(cell, seg, S, K)
    M = N.copy()
    M[0, 0] -= 5
    M[0, 2] += 5
    M[1, 1] -= 3
    M[1, 3] += 2
    M[1, 0] += 1
    a = choose_movers(cell, seg, N, M, seed=1)
    b = choose_movers(cell, seg, N, M, seed=1)
    c = choose_movers(cell, seg, N, M, seed=2)
    assert np.array_equal(a.rows, b.rows) and np.array_equal(a.to, b.to)
    assert not np.array_equal(np.sort(a.rows), np.sort(c.rows))
    new = seg.copy()
    new[a.rows] = a.to
    assert np.array_equal(_counts(cell, new, S, K), M)
    assert a.rows.size == int(np.maximum(N - M, 0).sum()) == a.plan.sum()
    assert np.unique(a.rows).size == a.rows.size


def test_with_features_the_choice_is_the_cheapest_assignment():
    """Exhaustive search over every choice of movers of one cell with two destinations."""
    rng = np.random.default_rng(4)
    n, K = 9, 3
    cell = np.zeros(n, dtype=np.int64)
    seg = np.array([0] * 5 + [1] * 2 + [2] * 2)
    X = rng.normal(size=(n, 2)) + seg[:, None] * 2.0
    f = Features.of(X, seg, K, ("x", "y"))
    N = _counts(cell, seg, 1, K)
    M = N.copy()
    M[0] = [2, 3, 4]  # three leave segment 0: one to 1, two to 2
    got = choose_movers(cell, seg, N, M, features=f)
    rows0 = np.flatnonzero(seg == 0)
    best = np.inf
    for movers in itertools.permutations(rows0, 3):
        to1, to2 = movers[0], movers[1:]
        if to2[0] > to2[1]:
            continue
        c = (f.added(np.array([to1]), np.array([0]), np.array([1]))[0, 0]
             + f.added(np.array(to2), np.zeros(2, dtype=np.int64), np.array([2]))[:, 0].sum())
        best = min(best, c)
    assert abs(got.cost - best) <= 1e-9
    new = seg.copy()
    new[got.rows] = got.to
    assert np.array_equal(_counts(cell, new, 1, K), M)


def test_added_distance_is_floored_at_zero():
    X = np.array([[0.0], [1.0], [10.0], [11.0]])
    seg = np.array([0, 0, 1, 1])
    f = Features.of(X, seg, 2, ("x",))
    # row 1 is nearer its own centroid: moving it to segment 1 adds distance; a row placed at
    # the other centroid would add none
    a = f.added(np.array([1, 2]), np.array([0, 0]), np.array([1]))
    assert a[0, 0] > 0 and a[1, 0] == 0.0
