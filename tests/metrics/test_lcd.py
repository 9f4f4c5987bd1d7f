"""LCD (seed 002 eq. 1-9): hand-computed cases, brute-force oracle, properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairaudit.metrics.local_connectivity import TIE_RTOL, LCDResult, lcd


def brute_lcd(X: np.ndarray, labels: np.ndarray, t: int, prototypes=None):
    """Literal O(n^2) transcription of eq. 1-9 (ties broken by row order)."""
    X = np.asarray(X, float)
    clusters = sorted(set(int(v) for v in labels if v >= 0))
    point = np.full(len(X), np.nan)
    per_cluster = {}
    for c in clusters:
        members = [i for i in range(len(X)) if labels[i] == c]
        proto = X[members].mean(axis=0) if prototypes is None else np.asarray(prototypes[c], float)
        for i in members:
            dxc = math.dist(X[i], proto)
            cand = []
            for s in members:
                if s == i:
                    continue
                dsc = math.dist(X[s], proto)
                dxs = math.dist(X[i], X[s])
                # ties within TIE_RTOL are decided as the implementation documents
                if dsc <= dxc * (1 + TIE_RTOL) and dxs < dxc * (1 - TIE_RTOL):
                    cand.append((dxs, s, dsc))
            cand.sort(key=lambda r: (r[0], r[1]))
            total = 0.0
            for dxs, _s, dsc in cand[:t]:
                dev = (dsc + dxs) / dxc - 1.0
                nd = dxs / (dsc + dxs)
                total += dev * nd
            point[i] = total
        per_cluster[c] = max(point[i] for i in members)
    vals = list(per_cluster.values())
    return point, per_cluster, float(np.mean(vals)), float(np.max(vals))


def test_hand_computed_three_points():
    # Cluster 0: prototype given at the origin. X=(2,0); s1=(1,0) on the segment; s2=(1,1).
    X = np.array([[2.0, 0.0], [1.0, 0.0], [1.0, 1.0]])
    labels = np.array([0, 0, 0])
    res = lcd(X, labels, prototypes=np.array([[0.0, 0.0]]), t=5)
    # For X=(2,0): s1: dist(c,s)=1, dist(s,X)=1, dist(X,c)=2 -> Dev 0, LCD 0.
    # s2: dist(c,s)=sqrt2, dist(s,X)=sqrt2 < 2 -> Dev = 2sqrt2/2 - 1, ND = 1/2.
    expected0 = (math.sqrt(2) - 1.0) * 0.5
    assert res.point_lcd[0] == pytest.approx(expected0)
    # For s1=(1,0): dist(X,c)=1; (2,0) farther from c -> no; (1,1): dist(c)=sqrt2 > 1 -> no.
    assert res.point_lcd[1] == 0.0
    assert res.n_support[1] == 0
    # For (1,1): dist = sqrt2; (1,0): dist(c)=1 <= sqrt2, dist(X,s)=1 < sqrt2: qualifies.
    # Dev = (1+1)/sqrt2 - 1, ND = 1/2.  (2,0): dist(c)=2 > sqrt2 -> no.
    expected2 = (2 / math.sqrt(2) - 1.0) * 0.5
    assert res.point_lcd[2] == pytest.approx(expected2)
    assert res.cluster_lcd[0] == pytest.approx(max(expected0, expected2))
    assert res.max_lcd == res.avg_lcd == pytest.approx(max(expected0, expected2))
    assert res.cluster_worst_row[0] == 0


def test_t_limits_support_to_nearest():
    # X=(4,0), prototype origin; candidates on the axis at 3, 2, 1 plus an off-axis point.
    X = np.array([[4.0, 0.0], [3.0, 0.5], [2.0, 0.5], [1.0, 0.5]])
    labels = np.zeros(4, int)
    P = np.array([[0.0, 0.0]])
    r1 = lcd(X, labels, prototypes=P, t=1)
    # only the nearest qualifying neighbour (3, .5) counts for row 0
    d_xs = math.dist(X[0], X[1])
    d_cs = math.dist(X[1], P[0])
    assert r1.point_lcd[0] == pytest.approx(((d_cs + d_xs) / 4 - 1) * d_xs / (d_cs + d_xs))
    assert r1.n_support[0] == 1
    r3 = lcd(X, labels, prototypes=P, t=3)
    assert r3.n_support[0] == 3
    assert r3.point_lcd[0] > r1.point_lcd[0]


def test_point_on_prototype_and_singleton_cluster():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [-1.0, 0.0], [10.0, 10.0]])
    labels = np.array([0, 0, 0, 1])
    res = lcd(X, labels, t=2)
    assert res.point_lcd[0] == 0.0  # at its centroid
    assert res.point_lcd[3] == 0.0  # singleton cluster
    assert res.avg_lcd == pytest.approx(np.mean(res.cluster_lcd))


def test_noise_rows_excluded():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 2))
    labels = np.repeat([0, 1, -1], 20)
    res = lcd(X, labels, t=3)
    assert np.isnan(res.point_lcd[40:]).all()
    assert (res.n_support[40:] == -1).all()
    assert list(res.clusters) == [0, 1]
    point, _, avg, mx = brute_lcd(X, labels, 3)
    np.testing.assert_allclose(res.point_lcd[:40], point[:40], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("t", [1, 3, 5])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_brute_force(t, seed):
    rng = np.random.default_rng(seed)
    n = 150
    X = np.vstack([rng.normal(0, 1, (n // 3, 3)), rng.normal(3, 0.5, (n - n // 3, 3))])
    labels = rng.integers(0, 4, n)
    res = lcd(X, labels, t=t)
    point, per_cluster, avg, mx = brute_lcd(X, labels, t)
    np.testing.assert_allclose(res.point_lcd, point, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res.cluster_lcd, [per_cluster[c] for c in res.clusters])
    assert res.avg_lcd == pytest.approx(avg)
    assert res.max_lcd == pytest.approx(mx)


def test_growing_k_path_matches_brute_force():
    # Points on a ring around the prototype plus an outer ring: for the inner-ring points most
    # near neighbours are farther from the prototype, so the search must grow k.
    rng = np.random.default_rng(3)
    ang = rng.uniform(0, 2 * np.pi, 300)
    rad = np.r_[np.full(50, 1.0), np.full(250, 1.05)] + rng.normal(0, 0.001, 300)
    X = np.c_[rad * np.cos(ang), rad * np.sin(ang)]
    labels = np.zeros(300, int)
    res = lcd(X, labels, prototypes=np.zeros((1, 2)), t=5)
    point, *_ = brute_lcd(X, labels, 5, prototypes=np.zeros((1, 2)))
    np.testing.assert_allclose(res.point_lcd, point, rtol=1e-10, atol=1e-12)


def test_duplicates_give_finite_values():
    X = np.array([[1.0, 1.0]] * 5 + [[0.0, 0.0]] * 5 + [[2.0, 2.0]])
    labels = np.zeros(11, int)
    res = lcd(X, labels, t=3)
    assert np.isfinite(res.point_lcd).all()
    point, *_ = brute_lcd(X, labels, 3)
    np.testing.assert_allclose(res.point_lcd, point, atol=1e-12)


def test_given_prototypes_indexed_by_label():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(80, 2))
    labels = np.repeat([0, 2], 40)  # cluster 1 unused
    P = np.array([[0.0, 0.0], [99.0, 99.0], [0.5, 0.5]])
    res = lcd(X, labels, prototypes=P, t=4)
    point, *_ = brute_lcd(X, labels, 4, prototypes={0: P[0], 2: P[2]})
    np.testing.assert_allclose(res.point_lcd, point, atol=1e-12)
    np.testing.assert_allclose(res.prototypes, P[[0, 2]])


def test_worst_points_and_clusters():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(100, 2))
    labels = np.repeat([0, 1], 50)
    res = lcd(X, labels, t=5)
    assert isinstance(res, LCDResult)
    w = res.worst_points(3)
    assert res.point_lcd[w[0]] == np.nanmax(res.point_lcd)
    assert list(res.point_lcd[w]) == sorted(res.point_lcd[w], reverse=True)
    w1 = res.worst_points(5, cluster=1)
    assert (w1 >= 50).all()
    assert res.worst_clusters(1)[0] == res.clusters[np.argmax(res.cluster_lcd)]
    with pytest.raises(AttributeError):
        res.avg_lcd = 0.0  # frozen


def test_bad_input():
    X = np.zeros((4, 2))
    with pytest.raises(ValueError, match="'t' parameter"):
        lcd(X, [0, 0, 1, 1], t=0)
    with pytest.raises(ValueError, match="labels"):
        lcd(X, [0, 0, 1], t=1)
    with pytest.raises(ValueError, match="finite"):
        lcd(np.array([[np.nan, 0]] * 4), [0, 0, 1, 1])
    with pytest.raises(ValueError, match="prototypes"):
        lcd(X, [0, 0, 1, 1], prototypes=np.zeros((1, 2)))
    with pytest.raises(ValueError, match="no non-noise"):
        lcd(X, [-1, -1, -1, -1])


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(2, 40),
    k=st.integers(1, 4),
    t=st.integers(1, 6),
)
def test_properties(seed, n, k, t):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2)).round(1)  # rounding creates ties and duplicates
    labels = rng.integers(0, k, n)
    res = lcd(X, labels, t=t)
    assert (res.point_lcd >= -1e-12).all()
    assert (res.n_support >= 0).all() and (res.n_support <= t).all()
    # each term Dev*ND < Dev <= 1 (triangle: dist(c,s) <= dist(X,c), dist(s,X) < dist(X,c))
    assert (res.point_lcd <= res.n_support + 1e-9).all()
    assert res.max_lcd >= res.avg_lcd - 1e-12
    # invariance under translation and uniform scaling (continuous data: no boundary ties)
    Xc = rng.normal(size=(n, 2))
    a = lcd(Xc, labels, t=t)
    b = lcd(3.0 * Xc + 7.0, labels, t=t)
    np.testing.assert_allclose(b.point_lcd, a.point_lcd, rtol=1e-6, atol=1e-9)
    # brute-force agreement on the total per point when at most t candidates qualify
    point, *_ = brute_lcd(X, labels, t)
    few = res.n_support < t
    np.testing.assert_allclose(res.point_lcd[few], point[few], rtol=1e-9, atol=1e-9)


def test_lazy_export_survives_submodule_import():
    import fairaudit.metrics as metrics
    import fairaudit.metrics.local_connectivity  # noqa: F401
    from fairaudit.metrics import lcd as f

    X = np.random.default_rng(0).normal(size=(20, 2))
    labels = np.repeat([0, 1], 10)
    a = metrics.lcd(X, labels, t=3)
    b = f(X, labels, t=3)
    np.testing.assert_array_equal(a.point_lcd, b.point_lcd)
    np.testing.assert_array_equal(a.point_lcd, lcd(X, labels, t=3).point_lcd)


def test_ties_in_rounded_data_match_the_oracle():
    # seed 40, n 29, k 4, t 3: rows 0 and 7 are equidistant from their prototype in exact
    # arithmetic, but float rounding differs by one ulp (found by the property test above)
    rng = np.random.default_rng(40)
    X = rng.normal(size=(29, 2)).round(1)
    labels = rng.integers(0, 4, 29)
    res = lcd(X, labels, t=3)
    point, *_ = brute_lcd(X, labels, 3)
    np.testing.assert_allclose(res.point_lcd, point, rtol=1e-9, atol=1e-9)


def _maxima_case(seed: int, n: int, k: int, kind: str):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) * rng.uniform(0.2, 3.0, size=3)
    if kind == "rounded":
        X = X.round(1)
    elif kind == "copies":
        X = X[rng.integers(0, max(2, n // 3), size=n)]
    labels = rng.integers(0, k, size=n)
    P = rng.normal(size=(k, 3))  # prototypes away from the means: unfinished first rounds
    return X, labels, P


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(2, 400),
    k=st.integers(1, 4),
    t=st.integers(1, 6),
    kind=st.sampled_from(["continuous", "rounded", "copies"]),
)
def test_cluster_maxima_are_the_metrics(seed, n, k, t, kind):
    """The pruned maxima (what LOFKM's whole-table check compares) are ``lcd``'s LCD(C) and
    worst rows bit for bit, on continuous, rounded (tied) and duplicated data."""
    from fairaudit.metrics.local_connectivity import cluster_maxima

    X, labels, P = _maxima_case(seed, n, k, kind)
    res = lcd(X, labels, P, t=t)
    vals, worst = cluster_maxima(X, labels, P, t)
    np.testing.assert_array_equal(vals, res.cluster_lcd)
    np.testing.assert_array_equal(worst, res.cluster_worst_row)
    sub = res.clusters[::2]
    v2, w2 = cluster_maxima(X, labels, P, t, clusters=sub)
    np.testing.assert_array_equal(v2, res.cluster_lcd[::2])
    np.testing.assert_array_equal(w2, res.cluster_worst_row[::2])


@pytest.mark.parametrize("kind", ["continuous", "rounded", "copies"])
def test_pruning_skips_points_and_keeps_the_maximum(kind):
    """Not vacuous: on these tables the pruning does drop points, and the maximum stays."""
    from fairaudit.metrics.local_connectivity import _cluster_lcd

    X, labels, P = _maxima_case(3, 3000, 1, kind)
    full, _ = _cluster_lcd(X, P[0], 5, 1)
    pruned, cnt = _cluster_lcd(X, P[0], 5, 1, prune=True)
    assert np.isnan(pruned).sum() > 0
    kept = ~np.isnan(pruned)
    np.testing.assert_array_equal(pruned[kept], full[kept])
    assert (cnt[~kept] == -1).all()
    assert np.nanmax(pruned) == full.max()
    assert int(np.nanargmax(pruned)) == int(np.argmax(full))
