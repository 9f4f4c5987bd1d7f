"""Proportional rounding (fairaudit/cluster/fair_rounding.py): exact per-group transport against
brute force, the LP optimum (HiGHS) and, when installed, POT's network simplex; caps, monotone
Lloyd objective, and the balance it buys."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fairaudit.cluster.fair_rounding import (
    _transport,
    proportional_caps,
    proportional_kmeans,
)
from fairaudit.metrics import balance_score


def _brute(cost: np.ndarray, caps: np.ndarray) -> float:
    n, k = cost.shape
    best = np.inf
    for lab in itertools.product(range(k), repeat=n):
        if np.array_equal(np.bincount(lab, minlength=k), caps):
            best = min(best, float(cost[np.arange(n), lab].sum()))
    return best


@pytest.mark.parametrize("seed", range(40))
def test_transport_is_optimal(seed):
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(1, 8)), int(rng.integers(1, 4))
    cost = rng.random((n, k)) * rng.choice([1e-3, 1.0, 1e4])
    caps = np.bincount(rng.integers(0, k, n), minlength=k)
    lab = _transport(cost, caps)
    np.testing.assert_array_equal(np.bincount(lab, minlength=k), caps)
    assert cost[np.arange(n), lab].sum() == pytest.approx(_brute(cost, caps), rel=1e-12)


def _lp_optimum(cost: np.ndarray, caps: np.ndarray) -> float:
    """Independent oracle: the transportation LP by HiGHS (its optimum is the integer one)."""
    from scipy import sparse
    from scipy.optimize import linprog

    n, k = cost.shape
    rows = np.r_[np.repeat(np.arange(n), k), n + np.tile(np.arange(k), n)]
    A = sparse.csr_array((np.ones(2 * n * k), (rows, np.r_[np.arange(n * k), np.arange(n * k)])),
                         shape=(n + k, n * k))
    res = linprog(cost.ravel(), A_eq=A, b_eq=np.r_[np.ones(n), caps], bounds=(0, None),
                  method="highs-ds")
    assert res.status == 0, res.message
    return float(res.fun)


def _problem(seed: int, n_max: int, k_max: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(1, n_max)), int(rng.integers(1, k_max))
    cost = rng.random((n, k)) * rng.choice([1e-3, 1.0, 1e4])
    if seed % 3 == 0:  # many ties
        cost = np.round(cost * 3 / cost.max())
    caps = np.bincount(rng.integers(0, k, n), minlength=k)
    return cost, caps


@pytest.mark.parametrize("seed", range(60))
def test_transport_matches_the_lp_optimum(seed):
    cost, caps = _problem(1000 + seed, 80, 7)
    lab = _transport(cost, caps)
    np.testing.assert_array_equal(np.bincount(lab, minlength=caps.size), caps)
    got = cost[np.arange(cost.shape[0]), lab].sum()
    assert got == pytest.approx(_lp_optimum(cost, caps), rel=1e-9, abs=1e-9)


def _tiny_costs(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Squared distances of points scaled ~1e-6 to k centres (costs of order 1e-12), even caps."""
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(200, 1500)), int(rng.integers(3, 9))
    H = rng.normal(size=(n, 4)) * 1e-6
    C = rng.normal(size=(k, 4)) * 1e-6
    cost = ((H[:, None, :] - C[None]) ** 2).sum(-1)
    caps = np.full(k, n // k)
    caps[: n - caps.sum()] += 1
    return cost, caps


@pytest.mark.parametrize("seed", [14, 42, 49])
def test_transport_on_tiny_costs_is_optimal(seed):
    """Costs of order 1e-12 (squared distances of an embedding scaled ~1e-6; FairDen's embedding
    of 20,000 rows gives costs of order 1e-7): the shortest-chain search's absolute slack left
    chains that were not the shortest, and a later search met a negative cycle of moves
    ("negative cycle in the transport", a crash of FairDen.fit), or ended off the optimum.
    The slack is now relative to the costs: the result is the LP optimum (computed on costs
    scaled to order 1, where HiGHS's tolerances hold)."""
    cost, caps = _tiny_costs(seed)
    n, k = cost.shape
    lab = _transport(cost, caps)
    np.testing.assert_array_equal(np.bincount(lab, minlength=k), caps)
    got = cost[np.arange(n), lab].sum() * 1e12
    assert got == pytest.approx(_lp_optimum(cost * 1e12, caps), rel=1e-9, abs=1e-9)


def test_transport_cancels_a_negative_cycle_instead_of_failing(monkeypatch, caplog):
    """With the former absolute slack (scale 1) on costs of order 1e-12 the chain search meets
    negative cycles of moves (it raised "negative cycle in the transport"); they are cancelled
    and every column ends at its cap."""
    import fairaudit.cluster.fair_rounding as fr

    monkeypatch.setattr(fr, "_SLACK_UNIT", 1.0)
    cost, caps = _tiny_costs(14)
    k = cost.shape[1]
    with caplog.at_level("DEBUG", logger="fairaudit.cluster.fair_rounding"):
        lab = _transport(cost, caps)
    assert "cancelled a negative cycle" in caplog.text
    np.testing.assert_array_equal(np.bincount(lab, minlength=k), caps)


def test_transport_matches_pot_when_installed():
    """POT's network simplex (the solver this replaced) as an optional oracle: equal objectives
    on random problems with ties, sizes up to the rounding's 20,000-row fitting sample."""
    ot = pytest.importorskip("ot")
    for seed in range(40):
        cost, caps = _problem(seed, 3000 if seed % 10 else 20_000, 12)
        n, k = cost.shape
        used = np.flatnonzero(caps > 0)
        plan = ot.emd(np.ones(n), caps[used].astype(float), np.ascontiguousarray(cost[:, used]),
                      numItermax=max(100_000, 100 * n * k))
        ref = cost[np.arange(n), used[np.argmax(plan, axis=1)]].sum()
        lab = _transport(cost, caps)
        np.testing.assert_array_equal(np.bincount(lab, minlength=k), caps)
        assert cost[np.arange(n), lab].sum() == pytest.approx(ref, rel=1e-12, abs=1e-9)


def test_transport_rejects_caps_that_do_not_sum_to_the_rows():
    with pytest.raises(ValueError, match="summing to 3"):
        _transport(np.zeros((3, 2)), np.array([1, 1]))


@pytest.mark.parametrize("seed", range(30))
def test_caps_sum_and_proportion(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 7))
    codes = rng.integers(0, int(rng.integers(1, 5)), int(rng.integers(1, 300)))
    shares = rng.random(k) + 0.01
    caps = proportional_caps(codes, shares)
    sizes = np.bincount(codes)
    np.testing.assert_array_equal(caps.sum(axis=1), sizes)
    assert np.all(caps >= 0)
    s = shares / shares.sum()
    for g, n_g in enumerate(sizes):
        if n_g >= k:
            assert np.all(caps[g] >= 1)  # every cluster sees every group big enough
        else:
            # largest remainder: within one member of the exact share
            assert np.all(np.abs(caps[g] - n_g * s) < 1 + 1e-9)


def test_caps_hand_case():
    codes = np.r_[np.zeros(10, int), np.ones(3, int)]
    caps = proportional_caps(codes, np.array([0.5, 0.3, 0.2]))
    np.testing.assert_array_equal(caps, [[5, 3, 2], [1, 1, 1]])


@pytest.mark.parametrize("seed", range(6))
def test_lloyd_rounding_is_proportional_and_local_optimum(seed):
    rng = np.random.default_rng(seed)
    n = 400
    sex = (rng.random(n) < 0.3).astype(int)
    # an embedding in which the plain k-means split is the group split, nearly
    H = np.c_[sex * 2.0 + rng.normal(0, 0.6, n), rng.normal(0, 1, n)]
    from sklearn.cluster import KMeans

    lab0 = KMeans(2, n_init=4, random_state=seed).fit_predict(H)
    res = proportional_kmeans(H, sex, lab0)
    caps = proportional_caps(sex, np.bincount(lab0))
    for g in (0, 1):
        np.testing.assert_array_equal(np.bincount(res.labels[sex == g], minlength=2), caps[g])
    assert balance_score(res.labels, sex) > 0.95
    assert balance_score(res.labels, sex) > balance_score(lab0, sex)
    assert res.converged
    # a fixed point: the centres are the means, and no pair of same-group rows in different
    # clusters gains by swapping (the transport step is optimal given the centres)
    for j in range(2):
        np.testing.assert_allclose(res.centres[j], H[res.labels == j].mean(axis=0))
    sq = ((H[:, None, :] - res.centres[None]) ** 2).sum(-1)
    for g in (0, 1):
        a = np.flatnonzero((sex == g) & (res.labels == 0))
        b = np.flatnonzero((sex == g) & (res.labels == 1))
        gain = (sq[a, 0][:, None] + sq[b, 1][None, :]) - (sq[a, 1][:, None] + sq[b, 0][None, :])
        assert gain.max() <= 1e-9  # old - new cost of every swap: none improves


def test_objective_never_increases():
    rng = np.random.default_rng(3)
    n = 300
    codes = rng.integers(0, 3, n)
    H = rng.normal(size=(n, 3)) + codes[:, None]
    lab0 = rng.integers(0, 4, n)
    objs = [proportional_kmeans(H, codes, lab0, max_iter=m).objective for m in range(1, 8)]
    assert all(b <= a + 1e-9 for a, b in zip(objs, objs[1:], strict=False))


def test_bad_input():
    with pytest.raises(ValueError, match="every cluster"):
        proportional_kmeans(np.zeros((3, 1)), np.zeros(3, int), np.array([0, 0, 2]))
    with pytest.raises(ValueError, match="same number of rows"):
        proportional_kmeans(np.zeros((3, 1)), np.zeros(2, int), np.array([0, 1, 1]))
