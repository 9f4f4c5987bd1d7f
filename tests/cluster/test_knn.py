"""``self_knn`` (queries in the tree's leaf order) against ``cKDTree.query`` in row order."""

import numpy as np
import pytest
from scipy.spatial import cKDTree

from fairaudit.cluster import _knn
from fairaudit.cluster._knn import self_knn


@pytest.mark.parametrize("k", [1, 2, 7, 42])
@pytest.mark.parametrize("kind", ["normal", "grid"])
def test_self_knn_is_bit_identical_to_the_row_order_query(k, kind, monkeypatch):
    rng = np.random.default_rng(k)
    if kind == "grid":  # many exact ties and duplicate rows
        X = rng.integers(0, 4, size=(3000, 3)).astype(float)
    else:
        X = rng.normal(size=(3000, 5))
    monkeypatch.setattr(_knn, "_CHUNK", 1000)  # several chunks
    tree = cKDTree(X)
    d0, i0 = tree.query(X, k=k, workers=-1)
    d1, i1 = self_knn(tree, X, k)
    assert d1.shape == d0.shape and i1.shape == i0.shape
    np.testing.assert_array_equal(d1, d0)
    np.testing.assert_array_equal(i1, i0)


def test_self_knn_more_neighbours_than_rows():
    X = np.arange(10.0)[:, None]
    tree = cKDTree(X)
    d0, i0 = tree.query(X, k=15)
    d1, i1 = self_knn(tree, X, 15)
    np.testing.assert_array_equal(d1, d0)
    np.testing.assert_array_equal(i1, i0)


@pytest.mark.parametrize("k", [1, 5])
def test_query_rows_matches_the_plain_query_in_row_order(k):
    from fairaudit.cluster._knn import leaf_rank, query_rows

    rng = np.random.default_rng(3)
    X = rng.integers(0, 5, size=(2000, 3)).astype(float)
    tree = cKDTree(X)
    rows = rng.choice(2000, size=700, replace=False)
    d0, i0 = tree.query(X[rows], k=k, workers=-1)
    for rank in (None, leaf_rank(tree)):
        d1, i1 = query_rows(tree, X, rows, k, rank, workers=-1)
        np.testing.assert_array_equal(d1, d0)
        np.testing.assert_array_equal(i1, i0)
