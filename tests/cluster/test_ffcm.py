"""FairFuzzyCMeans: loop oracle (paper Alg. 1, literal counting), FCM properties, bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairaudit.cluster.ffcm import FairFuzzyCMeans as _FFCM
from fairaudit.cluster.ffcm import nbias_tables


def FairFuzzyCMeans(*args, **kw):  # noqa: N802 - the paper-literal form, tested below
    kw.setdefault("variant", "paper")
    return _FFCM(*args, **kw)


def nbias_literal(labels, codes_list, n_groups, cluster):
    """Eq. 3 for one cluster, counting rows literally."""
    total = 0.0
    n = len(labels)
    for codes, lg in zip(codes_list, n_groups, strict=True):
        members = [j for j in range(n) if labels[j] == cluster]
        if not members:
            continue
        acc = 0.0
        for s in range(lg):
            in_c = sum(1 for j in members if codes[j] == s) / len(members)
            overall = sum(1 for j in range(n) if codes[j] == s) / n
            acc += (in_c - overall) ** 2
        total += acc / lg
    return total


def oracle_ffcm(X, codes_list, k, m, eta_raw, init_centres, n_iter, *, round_robin=False):
    """Straightforward loop FFCM.

    round_robin=False: biases from the hard labels at the start of the sweep (our update order).
    round_robin=True: the paper's Alg. 1 order, each point's new label is seen by the next point.
    """
    X = np.asarray(X, float)
    n = len(X)
    n_groups = [int(c.max()) + 1 for c in codes_list]
    p = 1.0 / (m - 1.0)

    def memberships_row(e):
        inv = np.array([1.0 / (v**p) for v in e])
        return inv / inv.sum()

    U = np.array([memberships_row([np.sum((x - c) ** 2) for c in init_centres]) for x in X])
    history = []
    for _ in range(n_iter):
        W = U**m
        centres = np.array([(W[:, i] @ X) / W[:, i].sum() for i in range(k)])
        labels = list(np.argmax(U, axis=1))
        frozen = list(labels)
        J = 0.0
        for j in range(n):
            seen = labels if round_robin else frozen
            e = []
            for i in range(k):
                moved = list(seen)
                moved[j] = i
                bias = nbias_literal(moved, codes_list, n_groups, i)
                e.append(np.sum((X[j] - centres[i]) ** 2) + eta_raw * bias)
            U[j] = memberships_row(e)
            J += float(np.sum(U[j] ** m * np.array(e)))
            if round_robin:
                labels[j] = int(np.argmax(U[j]))
        history.append(J)
    return U, np.array(history)


def _toy(seed=0, n=60):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(0, 1, (n // 2, 2)), rng.normal(2.5, 1, (n - n // 2, 2))])
    s1 = (rng.random(n) < np.r_[np.full(n // 2, 0.8), np.full(n - n // 2, 0.2)]).astype(int)
    s2 = rng.integers(0, 3, n)
    return X, s1, s2


@pytest.mark.parametrize("m", [2.0, 1.7])
@pytest.mark.parametrize("eta", [0.0, 0.5, 20.0])
def test_matches_loop_oracle(m, eta):
    X, s1, s2 = _toy(1)
    k = 3
    init = X[[0, 25, 50]] + 0.05
    est = FairFuzzyCMeans(k, m=m, eta=eta, eta_scale="none", max_iter=6, tol=0.0, init=init)
    est.fit(X, sensitive=np.c_[s1, s2])
    U, hist = oracle_ffcm(X, [s1, s2], k, m, eta, init, 6)
    np.testing.assert_allclose(est.memberships_, U, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(est.objective_, hist, rtol=1e-9)
    assert est.n_iter_ == 6


def test_scale_free_eta_equals_raw_eta_times_variance():
    X, s1, _ = _toy(2)
    s2 = float(((X - X.mean(0)) ** 2).sum(1).mean())
    a = FairFuzzyCMeans(3, eta=2.0, random_state=0).fit(X, sensitive=s1)
    b = FairFuzzyCMeans(3, eta=2.0 * s2, eta_scale="none", random_state=0).fit(X, sensitive=s1)
    np.testing.assert_allclose(a.memberships_, b.memberships_, rtol=1e-9)
    assert a.eta_raw_ == pytest.approx(2.0 * s2)
    # scaling the features does not change the fitted partition
    c = FairFuzzyCMeans(3, eta=2.0, random_state=0).fit(10.0 * X, sensitive=s1)
    np.testing.assert_allclose(a.memberships_, c.memberships_, rtol=1e-6, atol=1e-9)


def test_nbias_tables_against_literal():
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 3, 40)
    labels = rng.integers(0, 4, 40)
    counts = np.zeros((3, 4))
    np.add.at(counts, (codes, labels), 1)
    ratios = np.bincount(codes, minlength=3) / 40
    stay, add = nbias_tables(counts, ratios)
    for i in range(4):
        assert stay[i] * 1 / 3 == pytest.approx(nbias_literal(labels, [codes], [3], i))
        for g in range(3):
            # one extra row of group g in cluster i
            N2 = counts[:, i].copy()
            N2[g] += 1
            assert add[g, i] == pytest.approx(((N2 / N2.sum() - ratios) ** 2).sum())


def test_fcm_objective_monotone_and_converges():
    rng = np.random.default_rng(4)
    X = np.vstack([rng.normal(c, 0.5, (100, 2)) for c in ([0, 0], [4, 0], [0, 4])])
    est = FairFuzzyCMeans(3, eta=0.0, random_state=0, tol=1e-9, max_iter=500).fit(X)
    J = est.objective_
    assert (np.diff(J) <= 1e-9 * J[:-1]).all()  # FCM alternating optimisation never increases J
    assert est.n_iter_ < 500
    # FCM recovers well separated blobs
    true = np.repeat([0, 1, 2], 100)
    assert len({(a, b) for a, b in zip(true, est.labels_, strict=True)}) == 3
    np.testing.assert_allclose(est.memberships_.sum(axis=1), 1.0)
    assert est.memberships_.min() >= 0.0


def test_vectorised_sweep_converges_and_round_robin_agrees():
    # Objective history of FFCM settles (relative change below tol) well before max_iter; the
    # paper's round-robin order (loop oracle) ends at a comparable objective.
    X, s1, s2 = _toy(5, n=80)
    init = X[[0, 40, 79]] + 0.05
    est = FairFuzzyCMeans(3, eta=0.5, max_iter=200, tol=1e-10, init=init).fit(
        X, sensitive=np.c_[s1, s2]
    )
    J = est.objective_
    assert est.n_iter_ < 200
    assert abs(J[-1] - J[-2]) <= 1e-10 * abs(J[-2])
    _, hist_rr = oracle_ffcm(X, [s1, s2], 3, 2.0, est.eta_raw_, init, 30, round_robin=True)
    assert abs(hist_rr[-1] - hist_rr[-2]) <= 1e-6 * hist_rr[-2]  # round robin settles too
    assert hist_rr[-1] == pytest.approx(J[-1], rel=0.05)


def _ed_sum(labels, codes):
    P = np.bincount(codes) / len(codes)
    tot = 0.0
    for c in np.unique(labels):
        Pk = np.bincount(codes[labels == c], minlength=len(P)) / np.sum(labels == c)
        tot += np.linalg.norm(Pk - P)
    return tot


def test_fair_term_improves_balance_on_correlated_groups():
    # Uniform square, group strongly tied to x: FCM splits along x (unfair); a strong fair term
    # moves boundary points so that each cluster's group mix is closer to the data's.
    rng = np.random.default_rng(6)
    n = 200
    X = rng.random((n, 2))
    s = (rng.random(n) < 0.1 + 0.8 * X[:, 0]).astype(int)
    init = np.array([[0.25, 0.5], [0.75, 0.5]])
    fcm = FairFuzzyCMeans(2, eta=0.0, init=init).fit(X)
    ffcm = FairFuzzyCMeans(2, eta=100.0, init=init).fit(X, sensitive=s)
    assert _ed_sum(ffcm.labels_, s) < 0.8 * _ed_sum(fcm.labels_, s)
    assert ffcm.cluster_bias_.sum() < fcm_bias(fcm.labels_, s)


def fcm_bias(labels, s):
    return sum(nbias_literal(list(labels), [s], [2], c) for c in range(2))


def test_reproducible_with_random_state():
    X, s1, _ = _toy(7)
    a = FairFuzzyCMeans(3, random_state=3).fit(X, sensitive=s1)
    b = FairFuzzyCMeans(3, random_state=3).fit(X, sensitive=s1)
    np.testing.assert_array_equal(a.memberships_, b.memberships_)
    r = FairFuzzyCMeans(3, init="random", random_state=3, eta=0).fit(X)
    np.testing.assert_allclose(r.memberships_.sum(1), 1.0)


def test_string_groups_and_shapes():
    X, s1, s2 = _toy(8)
    sens = np.c_[np.where(s1 == 1, "f", "m"), s2.astype(str)]
    est = FairFuzzyCMeans(4, random_state=0).fit(X, sensitive=sens)
    assert est.memberships_.shape == (len(X), 4)
    assert est.cluster_centers_.shape == (4, 2)
    assert list(est.groups_[0]) == ["f", "m"]
    assert est.labels_.shape == (len(X),)
    assert est.fit_predict(X, sensitive=sens).shape == (len(X),)


def test_bad_input():
    X, s1, _ = _toy(9)
    with pytest.raises(ValueError, match="'n_clusters'.*<= n_samples"):
        FairFuzzyCMeans(100).fit(X, sensitive=s1)
    with pytest.raises(ValueError, match="'m' parameter"):
        FairFuzzyCMeans(2, m=1.0).fit(X, sensitive=s1)
    with pytest.raises(ValueError, match="'eta' parameter"):
        FairFuzzyCMeans(2, eta=-1.0).fit(X, sensitive=s1)
    with pytest.raises(ValueError, match="constant feature"):
        FairFuzzyCMeans(2).fit(np.c_[X, np.ones(len(X))], sensitive=s1)
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="finite"):
        FairFuzzyCMeans(2).fit(bad, sensitive=s1)
    with pytest.warns(UserWarning, match="no 'sensitive'"):
        FairFuzzyCMeans(2, eta=1.0).fit(X)
    with pytest.raises(ValueError, match="rows"):
        FairFuzzyCMeans(2).fit(X, sensitive=s1[:-1])
    with pytest.raises(ValueError, match="'init'"):
        FairFuzzyCMeans(2, init="zeros").fit(X, sensitive=s1)
    with pytest.warns(UserWarning, match="single group"):
        FairFuzzyCMeans(2, random_state=0).fit(X, sensitive=np.zeros(len(X)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        FairFuzzyCMeans(2, eta=0.0, random_state=0).fit(X)


def test_duplicate_points_on_centres_stay_finite():
    X = np.array([[0.0, 0.0]] * 10 + [[1.0, 1.0]] * 10 + [[0.5, 0.2]])
    s = np.r_[np.zeros(10), np.ones(11)].astype(int)
    est = FairFuzzyCMeans(2, eta=1.0, init=np.array([[0.0, 0.0], [1.0, 1.0]])).fit(X, sensitive=s)
    assert np.isfinite(est.memberships_).all()
    np.testing.assert_allclose(est.memberships_.sum(1), 1.0)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(2, 4), eta=st.floats(0, 50))
def test_properties(seed, k, eta):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 3))
    s = rng.integers(0, 3, 40)
    est = FairFuzzyCMeans(k, eta=eta, random_state=seed, max_iter=30).fit(X, sensitive=s)
    U = est.memberships_
    assert np.isfinite(U).all() and (U >= 0).all()
    np.testing.assert_allclose(U.sum(1), 1.0)
    np.testing.assert_array_equal(est.labels_, U.argmax(1))
    assert np.isfinite(est.objective_).all() and (est.objective_ >= 0).all()
    assert (est.cluster_bias_ >= 0).all()


def test_per_attribute_path_equals_combined_path(monkeypatch):
    import fairaudit.cluster._ffcm_ops as mod

    X, s1, s2 = _toy(10)
    sens = np.c_[s1, s2]
    a = FairFuzzyCMeans(3, eta=5.0, random_state=0, max_iter=20).fit(X, sensitive=sens)
    monkeypatch.setattr(mod, "MAX_COMBINED", 1)
    b = FairFuzzyCMeans(3, eta=5.0, random_state=0, max_iter=20).fit(X, sensitive=sens)
    np.testing.assert_allclose(a.memberships_, b.memberships_, rtol=1e-10)


def test_translation_invariance_far_from_origin():
    X, s1, _ = _toy(11)
    a = FairFuzzyCMeans(3, eta=1.0, random_state=0).fit(X, sensitive=s1)
    b = FairFuzzyCMeans(3, eta=1.0, random_state=0).fit(X + 1e7, sensitive=s1)
    np.testing.assert_allclose(b.memberships_, a.memberships_, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(b.cluster_centers_ - 1e7, a.cluster_centers_, atol=1e-6)
