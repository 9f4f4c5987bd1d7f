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


@pytest.mark.parametrize("kind", ["normal", "grid"])
def test_leaf_ordered_rows_give_the_same_neighbours(kind):
    """``leaf_ordered``: the rows in the leaf order of their tree, that order, and a tree over
    them; mapped back with ``perm`` its k-NN distances are bit-identical to a tree over the rows
    in the caller's order, and its neighbours are the same rows wherever the distances have no
    ties (the grid case is all ties: there the distances alone must agree)."""
    from fairaudit.cluster._knn import leaf_ordered, midpoint_tree

    rng = np.random.default_rng(11)
    X = (rng.integers(0, 4, size=(5000, 4)).astype(float) if kind == "grid"
         else rng.normal(size=(5000, 6)))
    Xp, perm, tree = leaf_ordered(X)
    assert np.array_equal(np.sort(perm), np.arange(X.shape[0]))
    np.testing.assert_array_equal(Xp, X[perm])
    assert Xp.flags.c_contiguous
    d0, i0 = midpoint_tree(X).query(X, k=9)
    dp, ip = self_knn(tree, Xp, 9)
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.size)
    d1, i1 = dp[inv], perm[ip[inv]]
    np.testing.assert_array_equal(d1, d0)
    if kind == "normal":
        np.testing.assert_array_equal(i1, i0)
    else:
        np.testing.assert_array_equal(np.linalg.norm(X[i1] - X[:, None, :], axis=2), d0)
