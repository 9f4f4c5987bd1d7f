"""FairDen's out-of-sample rule (``_mr_assign``): the float32-product path and the k-d tree path
against a brute-force oracle of the rule and against main's implementation (issue 25 item 4)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mr_assign_main import main_assign
from scipy.spatial import cKDTree

from fairaudit.cluster import _mr_products
from fairaudit.cluster._knn import tree_sqdist
from fairaudit.cluster._mr_assign import mutual_reachability_assign
from fairaudit.cluster.dc_distance import core_distances


def brute_rule(fit_X, core, labels, X, min_pts):
    """The rule by brute force: the label of the fitted row minimising (r, d, row number),
    r = max(d, κ(x), κ(y)); a row at distance 0 takes the first identical fitted row."""
    q = max(min_pts - 1, 1)
    out = []
    for x in X:
        d = np.sqrt(tree_sqdist(np.broadcast_to(x, fit_X.shape), fit_X))
        if (d == 0).any():
            out.append(labels[np.flatnonzero(d == 0)[0]])
            continue
        kx = np.sort(d)[q - 1]
        r = np.maximum(np.maximum(d, kx), core)
        out.append(labels[np.lexsort((np.arange(d.size), d, r))[0]])
    return np.array(out)


def _case(kind, dim, min_pts, seed, n_fit=1_300, n_new=700):
    rng = np.random.default_rng(seed)
    if kind == "blobs":
        centres = rng.normal(0, 3, size=(4, dim))
        fit_X = centres[rng.integers(0, 4, n_fit)] + rng.normal(size=(n_fit, dim))
        new = np.vstack([centres[rng.integers(0, 4, n_new - 40)]
                         + rng.normal(size=(n_new - 40, dim)) * 1.3,
                         rng.normal(size=(40, dim)) * 15])  # far rows: winner beyond q
    else:  # integer grid: ties in d and r, exact duplicates of fitted rows (a few per point:
        # with more than 16 the label is the first overall, tested below)
        side = {1: 200, 2: 16, 3: 8}.get(dim, 3)
        fit_X = rng.integers(0, side, size=(n_fit, dim)).astype(float)
        new = np.vstack([rng.integers(-1, side + 1, size=(n_new // 2, dim)).astype(float),
                         rng.integers(0, 2 * side, size=(n_new - n_new // 2, dim)) / 2.0])
    labels = rng.integers(-1, 4, size=n_fit)
    return fit_X, core_distances(fit_X, min_pts), labels, new


@pytest.mark.parametrize("dim", [1, 2, 5, 10])
def test_tree_sqdist_is_bit_identical_to_ckdtree(dim):
    rng = np.random.default_rng(dim)
    F = rng.normal(size=(2000, dim)) * rng.uniform(0.1, 10, dim) + 5
    Q = rng.normal(size=(500, dim)) * 3
    dd, ii = cKDTree(F, leafsize=64).query(Q, k=20)
    mine = np.sqrt(tree_sqdist(np.repeat(Q, 20, axis=0), F[ii.ravel()])).reshape(dd.shape)
    assert np.array_equal(mine, dd)


@pytest.mark.parametrize("kind", ["blobs", "grid"])
@pytest.mark.parametrize(("dim", "min_pts"), [(1, 2), (1, 5), (2, 4), (2, 11), (5, 6),
                                              (5, 11), (10, 21), (10, 33)])
def test_both_paths_match_the_brute_force_rule(kind, dim, min_pts):
    fit_X, core, labels, new = _case(kind, dim, min_pts, seed=dim * 100 + min_pts)
    want = brute_rule(fit_X, core, labels, new, min_pts)
    for method in ("products", "tree", "auto"):
        got = mutual_reachability_assign(fit_X, core, labels, new, min_pts, method=method)
        np.testing.assert_array_equal(got, want, err_msg=method)


@pytest.mark.parametrize("dim", [6, 10])
def test_products_settle_almost_every_row_of_continuous_data(dim):
    # the fast path must actually answer the rows (not hand them all to the tree)
    fit_X, core, labels, new = _case("blobs", dim, 2 * dim + 1, seed=dim, n_fit=4000,
                                     n_new=4000)
    q = 2 * dim
    cells = _mr_products.Cells(fit_X, core, labels, q)
    lab, unsettled = _mr_products.product_labels(cells, new, q)
    assert unsettled.mean() < 0.05
    want = brute_rule(fit_X, core, labels, new[:400], 2 * dim + 1)
    np.testing.assert_array_equal(lab[:400][~unsettled[:400]], want[~unsettled[:400]])


def test_identical_to_main_on_benchmark_like_data():
    # bench_predict.py's data (10-d Gaussian mixture, k = 8), fit 5,000 rows, min_pts 21:
    # the default (products, then the tree for the rows they leave) against main's code
    rng = np.random.default_rng(0)
    centres = rng.normal(0, 3, (8, 10))
    X = centres[rng.integers(0, 8, 25_000)] + rng.normal(size=(25_000, 10))
    fit_X, new = X[:5000], X[5000:]
    core = core_distances(fit_X, 21)
    labels = rng.integers(-1, 3, 5000)
    got = mutual_reachability_assign(fit_X, core, labels, new, 21)
    np.testing.assert_array_equal(got, main_assign(fit_X, core, labels, new, 21))


@pytest.mark.parametrize("method", ["products", "tree"])
def test_many_identical_fitted_rows_take_the_first_overall(method):
    # more identical fitted rows than the tree returns (40 > 16): the label is the first
    # identical fitted row overall, whatever the tree's shape (issue 38; main took the first of
    # those its tree returned); every other row as on main
    rng = np.random.default_rng(3)
    fit_X = rng.normal(size=(1500, 2))
    dup = rng.choice(1500, 40, replace=False)
    fit_X[dup] = fit_X[7]
    labels = np.arange(1500) % 5
    core = core_distances(fit_X, 5)
    new = np.vstack([np.repeat(fit_X[7:8], 10, axis=0), rng.normal(size=(2500, 2))])
    got = mutual_reachability_assign(fit_X, core, labels, new, 5, method=method)
    first = min(7, int(dup.min()))
    np.testing.assert_array_equal(got[:10], labels[first])
    np.testing.assert_array_equal(got[10:], main_assign(fit_X, core, labels, new, 5)[10:])
    np.testing.assert_array_equal(got, brute_rule(fit_X, core, labels, new, 5))


@pytest.mark.parametrize("copies", [1, 2, 13, 14, 15, 16, 17, 30])
def test_identical_fitted_rows_around_q_and_16_take_the_first(copies):
    # min_pts 15: the first query asks q = 14 neighbours; 14 or more identical fitted rows
    # fill it (then 16 are asked, then every identical row), fewer are all among the 14
    rng = np.random.default_rng(copies)
    fit_X = rng.normal(size=(2000, 6))
    dup = rng.choice(np.arange(1, 2000), copies - 1, replace=False)
    fit_X[dup] = fit_X[0]
    labels = np.arange(2000) % 7
    core = core_distances(fit_X, 15)
    new = np.vstack([np.repeat(fit_X[:1], 5, axis=0), fit_X[rng.choice(2000, 300)],
                     rng.normal(size=(300, 6))])
    got = mutual_reachability_assign(fit_X, core, labels, new, 15, method="tree")
    np.testing.assert_array_equal(got[:5], labels[0])
    np.testing.assert_array_equal(got, brute_rule(fit_X, core, labels, new, 15))


def test_non_finite_rows_are_refused_as_before():
    # FairDen.predict refuses them first; the rule itself raises as main's did
    fit_X, core, labels, new = _case("blobs", 10, 21, seed=5)
    new[[3, 50]] = np.nan
    with pytest.raises(ValueError):
        main_assign(fit_X, core, labels, new, 21)
    with pytest.raises(ValueError):
        mutual_reachability_assign(fit_X, core, labels, new, 21, method="products")


def test_unknown_method_is_refused():
    with pytest.raises(ValueError, match="method must be"):
        mutual_reachability_assign(np.zeros((3, 2)), np.zeros(3), np.zeros(3, int),
                                   np.zeros((1, 2)), 2, method="fast")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), dim=st.sampled_from([1, 2, 3, 5, 7, 10]),
       min_pts=st.integers(2, 25), kind=st.sampled_from(["blobs", "grid"]),
       scale=st.sampled_from([1e-3, 1.0, 1e3]), shift=st.sampled_from([0.0, 1e4]))
def test_property_products_equal_tree_equal_brute_force(seed, dim, min_pts, kind, scale,
                                                        shift):
    fit_X, core, labels, new = _case(kind, dim, min_pts, seed, n_fit=1100, n_new=150)
    fit_X = fit_X * scale + shift
    new = new * scale + shift
    core = core_distances(fit_X, min_pts)
    want = brute_rule(fit_X, core, labels, new, min_pts)
    for method in ("products", "tree"):
        got = mutual_reachability_assign(fit_X, core, labels, new, min_pts, method=method)
        np.testing.assert_array_equal(got, want, err_msg=method)


@pytest.mark.parametrize("rounding", ["kmeans", "proportional"])
def test_fairden_predict_takes_the_product_path_with_mains_labels(rounding, monkeypatch):
    # end to end: 8-d rows, fit 1,600, assign 3,000 (the default picks the products); group-
    # blind and, after a proportional rounding, per group (each group's own fitted rows)
    from fairaudit.cluster import FairDen

    calls = []
    real = _mr_products.product_labels
    monkeypatch.setattr(_mr_products, "product_labels",
                        lambda *a, **k: calls.append(a[1].shape[0]) or real(*a, **k))
    rng = np.random.default_rng(11)
    centres = rng.normal(0, 3, (3, 8))
    comp = rng.integers(0, 3, 4600)
    X = centres[comp] + rng.normal(size=(4600, 8))
    s = (rng.random(4600) < 0.3 + 0.4 * (comp == 1)).astype(int)
    f = FairDen(3, min_pts=17, random_state=0, rounding=rounding).fit(X[:1600], sensitive=s[:1600])
    new, s_new = X[1600:], s[1600:]
    got = f.predict(new)
    assert calls and calls[0] == 3000
    want = main_assign(f._fit_X, f._fit_core, f._fit_labels, new, f.min_pts_)
    np.testing.assert_array_equal(got, want)
    if rounding == "proportional":
        got = f.predict(new, sensitive=s_new)
        for g in (0, 1):
            mine = np.flatnonzero(f._fit_groups == str(g))
            assert mine.size > 100
            rows = s_new == g
            want = main_assign(f._fit_X[mine], f._fit_core[mine], f._fit_labels[mine],
                               new[rows], min(f.min_pts_, mine.size))
            np.testing.assert_array_equal(got[rows], want)
