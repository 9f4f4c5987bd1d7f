"""LOFKM's unfair twin (fair=False = k-means without LOF weights) and out-of-sample predict."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.cluster import KMeans

from fairaudit.cluster.lofkm import LOFKMeans
from fairaudit.metrics import lcd


def _sparse_and_dense(seed):
    """Dense blobs with a sparse halo: k-means prototypes sit in the dense cores, leaving the
    halo's points poorly connected to them (LOFKM's target)."""
    rng = np.random.default_rng(seed)
    cores = [rng.normal(c, 0.3, (80, 2)) for c in ([0, 0], [5, 0], [2.5, 4])]
    halo = [rng.normal(c, 1.8, (25, 2)) for c in ([0, 0], [5, 0], [2.5, 4])]
    return np.vstack(cores + halo)


def test_twin_is_kmeans_from_the_same_starts():
    X = _sparse_and_dense(0)
    twin = LOFKMeans(3, fair=False, n_init=4, random_state=7).fit(X)
    seed = np.random.RandomState(7).randint(np.iinfo(np.int32).max)
    km = KMeans(3, n_init=4, random_state=seed).fit(X)
    np.testing.assert_array_equal(twin.labels_, km.labels_)
    np.testing.assert_allclose(twin.cluster_centers_, km.cluster_centers_)
    assert twin.lof_ is None and (twin.weights_ == 1).all()


def test_fair_version_has_lower_avg_lcd_than_its_twin():
    # the paper's protocol: random starts, one start each, same seed for both; mean over seeds
    fair_lcd, twin_lcd = [], []
    for seed in range(10):
        X = _sparse_and_dense(seed)
        for fair, out in ((True, fair_lcd), (False, twin_lcd)):
            est = LOFKMeans(3, fair=fair, init="random", n_init=1, random_state=seed,
                            variant="paper").fit(X)
            out.append(lcd(X, est.labels_, prototypes=est.cluster_centers_, t=5).avg_lcd)
    assert np.mean(fair_lcd) < np.mean(twin_lcd)


@pytest.mark.parametrize("fair", [True, False])
def test_predict_is_nearest_prototype_and_reproduces_labels(fair):
    X = _sparse_and_dense(1)
    est = LOFKMeans(3, fair=fair, n_init=3, random_state=0, tol=0.0, max_iter=500).fit(X)
    assert est.converged_
    np.testing.assert_array_equal(est.predict(X), est.labels_)
    new = np.random.default_rng(2).normal(2, 3, (50, 2))
    brute = [int(np.argmin([((x - c) ** 2).sum() for c in est.cluster_centers_])) for x in new]
    np.testing.assert_array_equal(est.predict(new), brute)
    with pytest.raises(ValueError, match="features"):
        est.predict(new[:, :1])


def test_nearest_centre_oracle_and_blocks():
    from fairaudit.cluster import nearest_centre

    rng = np.random.default_rng(3)
    X = rng.normal(size=(70_000, 3))  # more than one 65,536-row block
    C = rng.normal(size=(5, 3))
    brute = np.argmin(((X[:, None, :] - C[None]) ** 2).sum(-1), axis=1)
    np.testing.assert_array_equal(nearest_centre(X, C), brute)
