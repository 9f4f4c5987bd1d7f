"""LOFKMeans: brute-force LOF oracle, weighted Lloyd fixed point, duplicates, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairaudit.cluster.lofkm import LOFKMeans, local_outlier_factor, lof_weights


def brute_lof(X, t, rtol=1e-9):
    """Breunig et al. (2000), definitions 3-7, brute force: N_t(p) = every other point within
    t-dist(p), ties (within rtol) included."""
    X = np.asarray(X, float)
    n = len(X)
    D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    np.fill_diagonal(D, np.inf)
    kdist = np.sort(D, axis=1)[:, t - 1]
    nbrs = [np.flatnonzero(D[i] <= kdist[i] * (1 + rtol)) for i in range(n)]
    lrd = np.array(
        [1.0 / (np.mean([max(kdist[o], D[i, o]) for o in nbrs[i]]) + 1e-10) for i in range(n)]
    )
    return np.array([np.mean([lrd[o] for o in nbrs[i]]) / lrd[i] for i in range(n)])


def _blobs(seed=0, n=150):
    rng = np.random.default_rng(seed)
    return np.vstack(
        [
            rng.normal([0, 0], 0.5, (n // 3, 2)),
            rng.normal([4, 0], 1.0, (n // 3, 2)),
            rng.normal([0, 5], 0.3, (n - 2 * (n // 3), 2)),
        ]
    )


@pytest.mark.parametrize("t", [3, 5, 10])
def test_weights_match_brute_force_lof(t):
    X = _blobs(1)
    w, lof, dedup = lof_weights(X, t)
    ref = brute_lof(X, t)
    assert not dedup
    np.testing.assert_allclose(lof, ref, rtol=1e-6)
    np.testing.assert_allclose(w, np.maximum(ref, 1.0), rtol=1e-6)


@pytest.mark.parametrize(("n", "d", "t"), [(300, 2, 5), (500, 10, 5), (400, 3, 20), (50, 4, 1)])
def test_lof_equals_scikit_learn(n, d, t):
    """Our k-d-tree LOF is scikit-learn's LocalOutlierFactor, to rounding."""
    from sklearn.neighbors import LocalOutlierFactor

    rng = np.random.default_rng(n + d + t)
    X = np.vstack([rng.normal(size=(n - 5, d)), rng.uniform(-6, 6, (5, d))])
    ref = -LocalOutlierFactor(n_neighbors=t).fit(X).negative_outlier_factor_
    np.testing.assert_allclose(local_outlier_factor(X, t), ref, rtol=1e-12)
    np.testing.assert_allclose(local_outlier_factor(X, t, n_jobs=1), ref, rtol=1e-12)


@pytest.mark.parametrize(("seed", "t"), [(0, 3), (1, 5), (2, 4), (3, 1)])
def test_lof_with_ties_matches_breunig(seed, t):
    """Integer grids and rounded data have many distances tied with the t-th neighbour: all of
    them are in the neighbourhood (Breunig's N_t), whatever order the tree returns them in."""
    rng = np.random.default_rng(seed)
    grid = np.array([[i, j] for i in range(8) for j in range(8)], dtype=float)
    X = np.vstack([grid, rng.integers(10, 16, (40, 2)).astype(float), [[30.0, 30.0]]])
    X = np.unique(X, axis=0)
    np.testing.assert_allclose(local_outlier_factor(X, t), brute_lof(X, t), rtol=1e-12)
    Y = np.unique(np.round(rng.normal(size=(300, 3)), 1), axis=0)
    np.testing.assert_allclose(local_outlier_factor(Y, t), brute_lof(Y, t), rtol=1e-12)


def test_lof_tie_free_is_scikit_learn_and_breunig():
    X = _blobs(9)
    np.testing.assert_allclose(local_outlier_factor(X, 5), brute_lof(X, 5), rtol=1e-12)


def test_signed_zero_rows_are_duplicates():
    X = np.array([[0.0, 1.0], [-0.0, 1.0], [1.0, 2.0], [3.0, 1.0], [2.0, 5.0], [4.0, 4.0]])
    w, lof, dedup = lof_weights(X, 2)
    assert dedup and lof[0] == lof[1] and np.isfinite(w).all()


def test_fixed_point_of_eq_12_13():
    X = _blobs(2)
    est = LOFKMeans(3, n_neighbors=5, random_state=0, variant="paper").fit(X)
    w = est.weights_
    # eq. 12: every point sits with its nearest prototype
    D = ((X[:, None, :] - est.cluster_centers_[None]) ** 2).sum(-1)
    np.testing.assert_array_equal(est.labels_, D.argmin(1))
    # eq. 13: every prototype is the W-weighted mean of its members
    for c in range(3):
        mem = est.labels_ == c
        np.testing.assert_allclose(
            est.cluster_centers_[c], (w[mem, None] * X[mem]).sum(0) / w[mem].sum(), atol=1e-8
        )
    # eq. 11: inertia is the weighted objective
    assert est.inertia_ == pytest.approx(float((w * D[np.arange(len(X)), est.labels_]).sum()))
    np.testing.assert_array_equal(est.predict(X), est.labels_)


def test_prototypes_pulled_towards_high_lof_points():
    rng = np.random.default_rng(3)
    core = rng.normal(0, 0.1, (60, 2))
    fringe = np.array([[2.0, 0.0], [2.2, 0.3], [1.9, -0.4]])  # sparse, high LOF
    far = rng.normal([10, 10], 0.1, (60, 2))
    X = np.vstack([core, fringe, far])
    lofkm = LOFKMeans(2, n_neighbors=5, random_state=0, variant="paper").fit(X)
    plain_mean = np.vstack([core, fringe]).mean(0)
    c = lofkm.cluster_centers_[lofkm.labels_[0]]
    assert c[0] > plain_mean[0]  # pulled towards the fringe
    assert (lofkm.weights_[60:63] > 1).all()


def test_duplicates_give_finite_weights():
    rng = np.random.default_rng(4)
    X = np.vstack([np.repeat([[0.0, 0.0]], 20, axis=0), rng.normal(3, 1, (40, 2)), [[0.1, 0.1]]])
    w, lof, dedup = lof_weights(X, 5)
    assert dedup
    assert np.isfinite(w).all() and (w >= 1).all()
    # duplicates share the weight of their distinct row; equal to LOF on distinct rows
    assert len(set(w[:20])) == 1
    uniq = np.vstack([X[:1], X[20:]])
    np.testing.assert_allclose(lof[20:], brute_lof(uniq, 5)[1:], rtol=1e-6)
    est = LOFKMeans(2, n_neighbors=5, random_state=0).fit(X)
    assert np.isfinite(est.cluster_centers_).all()
    assert est.deduplicated_


def test_reproducible_and_n_init():
    X = _blobs(5)
    a = LOFKMeans(3, random_state=7).fit(X)
    b = LOFKMeans(3, random_state=7).fit(X)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    one = LOFKMeans(3, n_init=1, init="random", random_state=1, variant="paper").fit(X)
    many = LOFKMeans(3, n_init=10, init="random", random_state=1, variant="paper").fit(X)
    assert many.inertia_ <= one.inertia_ + 1e-9


def test_bad_input():
    X = _blobs(6, n=30)
    with pytest.raises(ValueError, match="'n_clusters'.*<= n_samples"):
        LOFKMeans(31).fit(X)
    with pytest.raises(ValueError, match="'n_neighbors'.*< n_samples"):
        LOFKMeans(2, n_neighbors=30).fit(X)
    with pytest.raises(ValueError, match="distinct points"):
        LOFKMeans(2, n_neighbors=5).fit(np.repeat(X[:4], 5, axis=0))
    with pytest.raises(ValueError, match="constant feature"):
        LOFKMeans(2).fit(np.c_[X, np.zeros(len(X))])
    bad = X.copy()
    bad[0, 0] = np.inf
    with pytest.raises(ValueError, match="finite"):
        LOFKMeans(2).fit(bad)
    with pytest.raises(ValueError, match="'init'"):
        LOFKMeans(2, init="x").fit(X)
    with pytest.raises(ValueError, match="not fitted"):
        LOFKMeans(2).predict(X)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), t=st.integers(1, 8), dup=st.integers(0, 10))
def test_properties(seed, t, dup):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 2)).round(2)
    X = np.vstack([X, np.repeat(X[:1], dup, axis=0)])
    est = LOFKMeans(3, n_neighbors=t, n_init=2, random_state=seed).fit(X)
    assert np.isfinite(est.weights_).all() and (est.weights_ >= 1).all()
    assert np.isfinite(est.cluster_centers_).all()
    assert set(est.labels_) <= {0, 1, 2}


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 300), d=st.integers(1, 8),
       levels=st.integers(1, 5), collide=st.booleans())
def test_distinct_rows_is_np_unique_over_row_bytes(seed, n, d, levels, collide):
    # the hash-sorted duplicate check gives np.unique's first occurrences (in the rows' byte
    # order) and inverse exactly; with every hash equal (collide) it falls back to np.unique
    import fairaudit.cluster.lofkm as lk

    rng = np.random.default_rng(seed)
    X = rng.integers(-levels, levels + 1, size=(n, d)) * rng.choice([0.5, 1e-3, 7.0])
    X = np.ascontiguousarray(np.where(rng.random((n, d)) < 0.1, rng.normal(size=(n, d)), X))
    X = X + 0.0
    with pytest.MonkeyPatch.context() as mp:
        if collide:
            mp.setattr(lk, "_MIX", np.zeros(6, dtype=np.uint64))
        first, inverse = lk.distinct_rows(X)
    view = X.view(np.dtype((np.void, 8 * d))).ravel()
    _, f_ref, i_ref = np.unique(view, return_index=True, return_inverse=True)
    np.testing.assert_array_equal(first, f_ref)
    np.testing.assert_array_equal(inverse, i_ref.ravel())
