"""LOFKM ``variant="targeted"``: the LCD-targeted prototype refinement (issue 13).

Simulation: on seeded tables like the public ones (heavy-tailed numeric columns, one-hot
columns, duplicates), the fair fit has a strictly lower AvgLCD than its twin (plain k-means, same
starts) on every draw, without a cluster under 1 % or over 90 % of the rows. Oracle: the refined
labels are the brute-force nearest prototypes and the reported AvgLCD is ``lcd`` recomputed.
"""

from __future__ import annotations

import numpy as np
import pytest

from fairaudit.cluster import LOFKMeans
from fairaudit.cluster.lcd_refine import refine_prototypes
from fairaudit.metrics import lcd


def _table(seed: int, n: int = 600) -> np.ndarray:
    rng = np.random.default_rng(seed)
    amount = rng.lognormal(0, 1, n)
    age = rng.normal(40, 12, n).round()
    score = rng.integers(1, 11, n).astype(float)
    cat = rng.choice(3, size=n, p=[0.6, 0.3, 0.1])
    onehot = np.eye(3)[cat]
    X = np.c_[amount, age, score]
    X = (X - X.mean(0)) / X.std(0)
    return np.c_[X, onehot]


def _brute_nearest(X, C):
    return np.array([int(np.argmin(((C - x) ** 2).sum(1))) for x in X])


@pytest.mark.parametrize("seed", range(3))
def test_refinement_oracle_and_monotone(seed):
    X = _table(seed, 400)
    from sklearn.cluster import KMeans

    km = KMeans(3, n_init=2, random_state=seed).fit(X)
    start = lcd(X, km.labels_, km.cluster_centers_).avg_lcd
    r = refine_prototypes(X, km.cluster_centers_, t=5, min_size=4)
    np.testing.assert_array_equal(r.labels, _brute_nearest(X, r.centres))
    assert r.avg_lcd == pytest.approx(lcd(X, r.labels, r.centres).avg_lcd, rel=1e-12)
    assert r.avg_lcd_start == pytest.approx(start, rel=1e-12)
    assert r.avg_lcd <= start
    assert (r.moves > 0) == (r.avg_lcd < start)
    assert np.bincount(r.labels, minlength=3).min() >= 4


def test_refinement_respects_size_bounds():
    X = _table(9, 300)
    from sklearn.cluster import KMeans

    km = KMeans(4, n_init=2, random_state=0).fit(X)
    sizes = np.bincount(km.labels_)
    r = refine_prototypes(X, km.cluster_centers_, min_size=int(sizes.min()),
                          max_size=int(sizes.max()))
    new = np.bincount(r.labels, minlength=4)
    assert new.min() >= sizes.min() and new.max() <= sizes.max()


def _fair_and_twin(X, k, seed):
    """The targeted fit and its twin from the same seed, with the AvgLCD of each."""
    fair = LOFKMeans(k, random_state=seed).fit(X)
    twin = LOFKMeans(k, fair=False, random_state=seed).fit(X)
    return (fair, twin, lcd(X, fair.labels_, fair.cluster_centers_).avg_lcd,
            lcd(X, twin.labels_, twin.cluster_centers_).avg_lcd)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_targeted_lofkm_fairer_than_twin_on_every_draw(k):
    for seed in range(4):
        X = _table(100 + seed)
        fair, _, a_fair, a_twin = _fair_and_twin(X, k, seed)
        assert a_fair < a_twin, (k, seed, a_fair, a_twin)
        sizes = np.bincount(fair.labels_, minlength=k)
        assert sizes.min() >= 0.01 * len(X) and sizes.max() <= 0.9 * len(X)
        assert fair.refinement_["avg_lcd"] == pytest.approx(a_fair, rel=1e-12)
        np.testing.assert_array_equal(fair.predict(X), fair.labels_)


def test_paper_variant_and_twin_do_not_refine():
    X = _table(1, 200)
    assert LOFKMeans(3, random_state=0, variant="paper").fit(X).refinement_ is None
    assert LOFKMeans(3, random_state=0, fair=False).fit(X).refinement_ is None
    with pytest.raises(ValueError, match="'variant' parameter of LOFKMeans"):
        LOFKMeans(3, variant="best").fit(X)


def test_refine_rows_sample_is_used_and_seeded():
    X = _table(2, 900)
    a = LOFKMeans(3, random_state=0, refine_rows=300).fit(X)
    b = LOFKMeans(3, random_state=0, refine_rows=300).fit(X)
    assert a.refinement_["rows"] == 300
    np.testing.assert_array_equal(a.labels_, b.labels_)


def _extreme_rows_table(seed: int, n: int = 1500) -> np.ndarray:
    """Census-like columns: two broad blobs plus 0.4-0.9 % of rows with large, spread amounts
    (capital gains), which plain k-means at k >= 3 gives a small cluster of their own."""
    rng = np.random.default_rng(seed)
    X = np.c_[rng.normal(0, 1, n), rng.normal(0, 1, n), rng.exponential(1.0, n)]
    X[: n // 2, 0] += 3.0
    far = rng.choice(n, size=int(n * rng.uniform(0.004, 0.009)), replace=False)
    X[far, 2] = rng.uniform(10, 30, far.size)
    return (X - X.mean(0)) / X.std(0)


def test_frozen_clusters_keep_prototype_and_members():
    X = _extreme_rows_table(0)
    from sklearn.cluster import KMeans

    km = KMeans(4, n_init=4, random_state=0).fit(X)
    small = tuple(int(j) for j in np.flatnonzero(np.bincount(km.labels_) < 0.01 * len(X)))
    assert small  # the extreme rows form a small cluster of their own
    r = refine_prototypes(X, km.cluster_centers_, min_size=int(np.ceil(0.01 * len(X))),
                          frozen=small)
    for j in small:
        np.testing.assert_array_equal(r.labels == j, km.labels_ == j)
        np.testing.assert_array_equal(r.centres[j], km.cluster_centers_[j])
    free = np.setdiff1d(np.arange(4), small)
    assert np.bincount(r.labels, minlength=4)[free].min() >= 0.01 * len(X)
    assert r.avg_lcd <= r.avg_lcd_start


@pytest.mark.parametrize("k", [3, 4, 5])
def test_no_small_cluster_the_twin_lacks(k):
    # simulation: on tables with a handful of extreme rows, every cluster of the fair fit under
    # 1 % of the rows is one of the twin's, with exactly the same members (its separation, and so
    # the report's tiny_cluster verdict, is the twin's); AvgLCD still strictly lower. Before
    # (2026-11-24) the bound was the twin's smallest size, and a small cluster could grow from 28
    # to 35 rows and lose its separation (census income, numeric columns, seed 0); here it grew
    # from 9 to 10 rows at k = 4 and 5, seed 3.
    for seed in range(8):
        X = _extreme_rows_table(10 + seed)
        fair, twin, a_fair, a_twin = _fair_and_twin(X, k, seed)
        bound = 0.01 * len(X)
        twin_small = {frozenset(np.flatnonzero(twin.labels_ == j).tolist())
                      for j in range(k) if (twin.labels_ == j).sum() < bound}
        for j in range(k):
            members = np.flatnonzero(fair.labels_ == j)
            if members.size < bound:
                assert frozenset(members.tolist()) in twin_small, (k, seed, members.size)
        assert a_fair <= a_twin


def test_refinement_threads_do_not_change_the_result():
    # LOFKM passes n_jobs to the refinement's neighbour searches (issue 25): same result
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(size=(300, 3)), rng.normal(size=(200, 3)) * 0.5 + 2.5])
    C = X[[0, 350, 10]]
    one = refine_prototypes(X, C, t=5, min_size=5, workers=1)
    two = refine_prototypes(X, C, t=5, min_size=5, workers=-1)
    np.testing.assert_array_equal(one.centres, two.centres)
    np.testing.assert_array_equal(one.labels, two.labels)
    assert one.avg_lcd == two.avg_lcd and one.moves == two.moves


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_point_lcd_matches_the_metric_bit_for_bit(seed):
    # the early rejection's point values are the metric's own (issue 25)
    from fairaudit.cluster.lcd_refine import point_lcd
    from fairaudit.metrics.local_connectivity import _cluster_lcd

    rng = np.random.default_rng(seed)
    Y = np.vstack([rng.normal(size=(200, 3)), rng.integers(0, 3, size=(100, 3)).astype(float)])
    c = Y.mean(axis=0) + 0.1
    full, _ = _cluster_lcd(Y, c, 5, 1)
    rows = rng.choice(Y.shape[0], size=40, replace=False)
    np.testing.assert_array_equal(point_lcd(Y, c, rows, 5, 1), full[rows])


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_early_rejection_gives_the_full_computations_result(seed, monkeypatch):
    # the lower bound only skips moves the full computation rejects: identical refinement
    import fairaudit.cluster.lcd_refine as lr

    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(size=(400, 3)), rng.normal(size=(250, 3)) * 0.6 + 2.0,
                   rng.integers(0, 4, size=(150, 3)).astype(float)])  # ties too
    C = X[rng.choice(X.shape[0], size=4, replace=False)]
    fast = lr.refine_prototypes(X, C, t=5, min_size=8)
    monkeypatch.setattr(lr, "BOUND_ROWS", 0)
    full = lr.refine_prototypes(X, C, t=5, min_size=8)
    np.testing.assert_array_equal(fast.centres, full.centres)
    np.testing.assert_array_equal(fast.labels, full.labels)
    assert (fast.avg_lcd, fast.moves, fast.evaluations, fast.rounds) == (
        full.avg_lcd, full.moves, full.evaluations, full.rounds)
    assert full.moves > 0
