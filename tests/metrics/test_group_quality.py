"""Per-group clustering quality (fairaudit/metrics/group_quality.py): hand-computed cases,
scikit-learn's silhouette_samples averaged per group, properties, and the bootstrap interval's
coverage by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairaudit.metrics.group_quality import (
    centre_distances,
    cluster_means,
    group_gap,
    silhouette_by_row,
)


def test_silhouette_gap_by_hand():
    # 1-D points 0, 1 | 4, 5. s(0) = (4.5 - 1) / 4.5 = 7/9, s(1) = (3.5 - 1) / 3.5 = 5/7,
    # s(4) = 5/7, s(5) = 7/9. Group A = rows {0, 5}, B = rows {1, 4}: gap = 7/9 - 5/7 = 4/63.
    X = np.array([[0.0], [1.0], [4.0], [5.0]])
    lab = np.array([0, 0, 1, 1])
    s = silhouette_by_row(X, lab)
    np.testing.assert_allclose(s, [7 / 9, 5 / 7, 5 / 7, 7 / 9])
    g = group_gap(s, np.array([0, 1, 1, 0]), ("A", "B"), kind="difference", min_group=1,
                  n_bootstrap=0)
    assert g.value == pytest.approx(4 / 63)
    assert (g.best, g.worst) == ("A", "B")
    assert g.means == pytest.approx((7 / 9, 5 / 7))


def test_cost_ratio_by_hand():
    # clusters {0, 2} and {10, 11}: means 1 and 10.5; distances 1, 1, 0.5, 0.5.
    X = np.array([[0.0], [2.0], [10.0], [11.0]])
    lab = np.array([0, 0, 1, 1])
    c = cluster_means(X, lab)
    np.testing.assert_allclose(c, [[1.0], [10.5]])
    d = centre_distances(X, lab, c)
    np.testing.assert_allclose(d, [1.0, 1.0, 0.5, 0.5])
    np.testing.assert_allclose(centre_distances(X, lab, c, squared=True), [1, 1, 0.25, 0.25])
    g = group_gap(d, np.array([0, 0, 1, 1]), ("A", "B"), kind="ratio", higher_is_better=False,
                  min_group=1, n_bootstrap=0)
    assert g.value == pytest.approx(2.0)
    assert (g.worst, g.best) == ("A", "B")
    # given centres (prototypes) instead of means: distances to 0 and 11
    d2 = centre_distances(X, lab, np.array([[0.0], [11.0]]))
    np.testing.assert_allclose(d2, [0.0, 2.0, 1.0, 0.0])


def test_matches_sklearn_silhouette_samples_per_group():
    from sklearn.metrics import silhouette_samples

    rng = np.random.default_rng(11)
    n = 700
    lab = rng.integers(0, 4, n)
    groups = rng.integers(0, 3, n)
    X = rng.normal(size=(n, 3)) + lab[:, None] * 1.5 + groups[:, None] * 0.3
    s = silhouette_by_row(X, lab)
    ref = silhouette_samples(X, lab)
    means = [ref[groups == g].mean() for g in range(3)]
    g = group_gap(s, groups, ("a", "b", "c"), n_bootstrap=0)
    np.testing.assert_allclose(g.means, means, rtol=1e-12)
    assert g.value == pytest.approx(max(means) - min(means), rel=1e-12)


def test_threaded_blocks_match_sklearn_and_one_thread(monkeypatch):
    """Above ~2,000 rows the distance blocks run on one thread per core: the same values as
    scikit-learn's silhouette_samples and as the blocks one after another."""
    from sklearn.metrics import silhouette_samples

    import fairaudit.metrics.quality as q

    rng = np.random.default_rng(12)
    n = 2600
    lab = rng.integers(0, 5, n)
    X = rng.normal(size=(n, 2)) + lab[:, None]
    monkeypatch.setattr(q, "cores", lambda: 3)
    monkeypatch.setattr(q, "_CHUNK_ENTRIES", n * 300)  # several blocks per thread
    monkeypatch.setattr(q, "_MIN_BLOCK_ROWS", 1)
    threaded = silhouette_by_row(X, lab)
    # within float rounding: BLAS may sum a product's terms in another order per block size,
    # thread count and CPU (measured differences: 4e-16)
    np.testing.assert_allclose(threaded, silhouette_samples(X, lab), rtol=1e-10, atol=1e-12)
    monkeypatch.setattr(q, "_THREADED_ENTRIES", n * n + 1)
    np.testing.assert_allclose(threaded, silhouette_by_row(X, lab), rtol=1e-10, atol=1e-12)


def test_undefined_cases():
    assert np.isnan(silhouette_by_row(np.zeros((3, 1)), np.zeros(3, int))).all()
    g = group_gap(np.ones(5), np.zeros(5, int), ("only",))
    assert math.isnan(g.value) and "fewer than two groups" in g.notes[-1]
    g = group_gap(np.r_[np.zeros(3), np.ones(3)], np.r_[np.zeros(3, int), np.ones(3, int)],
                  ("a", "b"), kind="ratio", min_group=1, n_bootstrap=10)
    assert math.isnan(g.value) and g.ci is None and "mean of 0" in g.notes[-1]
    g = group_gap(np.arange(12.0), np.r_[np.zeros(10, int), np.ones(2, int)], ("a", "b"),
                  min_group=5)
    assert g.left_out == ("b",) and math.isnan(g.value)
    with pytest.raises(ValueError, match="noise"):
        silhouette_by_row(np.zeros((3, 1)), np.array([0, -1, 1]))
    with pytest.raises(ValueError, match="centres"):
        centre_distances(np.zeros((3, 2)), np.array([0, 1, 2]), np.zeros((2, 2)))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 5))
def test_properties(seed, n_groups):
    rng = np.random.default_rng(seed)
    v = rng.random(60) + 0.01
    codes = np.r_[np.arange(n_groups), rng.integers(0, n_groups, 60 - n_groups)]
    names = tuple(f"g{i}" for i in range(n_groups))
    d = group_gap(v, codes, names, min_group=1, n_bootstrap=50, seed=seed)
    r = group_gap(v, codes, names, kind="ratio", higher_is_better=False, min_group=1,
                  n_bootstrap=50, seed=seed)
    assert d.value >= 0 and r.value >= 1
    # invariant to relabelling the groups, the gap to a shift, the ratio to a scale
    perm = rng.permutation(n_groups)
    assert group_gap(v, perm[codes], names, min_group=1, n_bootstrap=0).value == pytest.approx(
        d.value)
    assert group_gap(v + 3, codes, names, min_group=1, n_bootstrap=0).value == pytest.approx(
        d.value)
    assert group_gap(v * 7, codes, names, kind="ratio", min_group=1,
                     n_bootstrap=0).value == pytest.approx(r.value)
    assert d.ci is not None and d.ci[0] <= d.ci[1]
    # the same seed gives the same interval
    assert group_gap(v, codes, names, min_group=1, n_bootstrap=50, seed=seed).ci == d.ci


def test_cost_ratio_interval_covers_at_its_rate():
    """Rows of two groups around one fixed centre (0): |x| with x ~ N(0, 1) and N(0, 2²), so the
    true ratio of mean distances is exactly 2. 300 simulated tables of 150 + 80 rows: the 95 %
    interval covers 2 in 90-99 % of them (binomial sd at 0.95 and 300 draws: 1.3 points)."""
    rng = np.random.default_rng(2026)
    hits = 0
    reps = 300
    for i in range(reps):
        x = np.r_[rng.normal(0, 1, 150), rng.normal(0, 2, 80)]
        codes = np.r_[np.zeros(150, int), np.ones(80, int)]
        d = centre_distances(x[:, None], np.zeros(230, int), np.zeros((1, 1)))
        g = group_gap(d, codes, ("a", "b"), kind="ratio", higher_is_better=False,
                      n_bootstrap=400, seed=i)
        hits += g.ci[0] <= 2.0 <= g.ci[1]
    assert 0.90 <= hits / reps <= 0.99, hits / reps


def test_matches_holisticai_when_installed():
    """holisticai's two-group clustering metrics: silhouette_diff is half the difference of the
    group means (so the gap is 2 |silhouette_diff|); social_fairness_ratio is group a's mean
    distance to the nearest centroid over group b's (for converged k-means the nearest centre is
    the assigned one, so the cost ratio is max(r, 1/r))."""
    metrics = pytest.importorskip("holisticai.bias.metrics")
    from sklearn.cluster import KMeans

    rng = np.random.default_rng(4)
    n = 400
    a = (rng.random(n) < 0.4).astype(int)
    X = rng.normal(size=(n, 2)) * np.where(a == 1, 1.4, 1.0)[:, None]
    X += rng.integers(0, 3, n)[:, None] * 3.0
    km = KMeans(3, n_init=4, random_state=0).fit(X)
    lab, centres = km.labels_, km.cluster_centers_
    gap = group_gap(silhouette_by_row(X, lab), a, ("b", "a"), n_bootstrap=0)
    hd = metrics.silhouette_diff(a, 1 - a, X, lab)
    assert gap.value == pytest.approx(2 * abs(hd), rel=1e-9)
    ratio = group_gap(centre_distances(X, lab, centres), a, ("b", "a"), kind="ratio",
                      higher_is_better=False, n_bootstrap=0)
    r = metrics.social_fairness_ratio(a, 1 - a, X, centres)
    assert ratio.value == pytest.approx(max(r, 1 / r), rel=1e-9)
