"""Silhouette (fairaudit.metrics.quality): hand-computed cases, the scikit-learn oracle,
properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import silhouette_samples, silhouette_score

from fairaudit.metrics.quality import silhouette


def test_hand_computed_two_pairs_on_a_line():
    # x = 0, 1 | 4, 5: s(0) = (4.5 - 1) / 4.5, s(1) = (3.5 - 1) / 3.5, symmetric for 4, 5
    X = np.array([[0.0], [1.0], [4.0], [5.0]])
    res = silhouette(X, np.array([0, 0, 1, 1]))
    s0, s1 = 3.5 / 4.5, 2.5 / 3.5
    assert res.value == pytest.approx((s0 + s1) / 2)
    assert res.per_cluster == pytest.approx((((s0 + s1) / 2),) * 2)
    assert res.clusters == (0, 1) and res.sizes == (2, 2)


def test_hand_computed_singleton_scores_zero():
    # x = 0 | 10, 11: the singleton's s is 0 (scikit-learn's convention)
    X = np.array([[0.0], [10.0], [11.0]])
    res = silhouette(X, np.array([7, 3, 3]))
    s10 = (10.0 - 1.0) / 10.0
    s11 = (11.0 - 1.0) / 11.0
    assert res.value == pytest.approx((0.0 + s10 + s11) / 3)
    assert res.clusters == (3, 7)
    assert res.per_cluster == pytest.approx(((s10 + s11) / 2, 0.0))


@pytest.mark.parametrize("seed", range(5))
def test_matches_sklearn_silhouette_score(seed):
    rng = np.random.default_rng(seed)
    n, k = 300, int(rng.integers(2, 6))
    X = rng.normal(size=(n, 3)) + rng.integers(0, 4, size=(n, 1))
    labels = rng.integers(0, k, size=n) * 3 + 1  # arbitrary label values
    res = silhouette(X, labels)
    assert res.value == pytest.approx(silhouette_score(X, labels), abs=1e-12)
    s = silhouette_samples(X, labels)
    for c, v, size in zip(res.clusters, res.per_cluster, res.sizes, strict=True):
        assert v == pytest.approx(s[labels == c].mean(), abs=1e-12)
        assert size == int((labels == c).sum())


def test_invariant_to_relabelling_row_order_and_scale():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 2))
    labels = (X[:, 0] > 0).astype(int) + (X[:, 1] > 1).astype(int)
    base = silhouette(X, labels).value
    perm = rng.permutation(120)
    assert silhouette(X[perm], labels[perm]).value == pytest.approx(base, abs=1e-12)
    assert silhouette(X, 10 - labels).value == pytest.approx(base, abs=1e-12)
    assert silhouette(X * 7.5 + 3, labels).value == pytest.approx(base, abs=1e-12)
    assert -1.0 <= base <= 1.0


def test_undefined_cases_are_nan_with_a_note():
    X = np.arange(6, dtype=float).reshape(-1, 1)
    one = silhouette(X, np.zeros(6, dtype=int))
    assert math.isnan(one.value) and "fewer than 2 clusters" in one.notes[0]
    each = silhouette(X, np.arange(6))
    assert math.isnan(each.value) and "its own cluster" in each.notes[0]


def test_noise_must_be_removed_first():
    with pytest.raises(ValueError, match="noise"):
        silhouette(np.zeros((3, 1)), np.array([0, 1, -1]))
    with pytest.raises(ValueError, match="rows"):
        silhouette(np.zeros((3, 1)), np.array([0, 1]))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(3, 60), st.integers(1, 4), st.integers(2, 7),
       st.booleans())
def test_by_row_equals_sklearn_samples_with_duplicates_and_singletons(seed, n, d, k, dup):
    # issue 38: the numpy silhouette (no scikit-learn import) row by row against sklearn's
    from fairaudit.metrics.quality import silhouette_by_row

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).round(1)  # rounded: ties and exact duplicates
    if dup:
        X[: n // 3] = X[0]
    labels = rng.integers(0, k, size=n)
    got = silhouette_by_row(X, labels)
    if not 2 <= np.unique(labels).size <= n - 1:
        assert np.isnan(got).all()
        return
    np.testing.assert_allclose(got, silhouette_samples(X, labels), rtol=0, atol=1e-12)


@pytest.mark.parametrize(("chunk", "floor", "n", "d", "seed"), [
    (2500 * 7, 1, 2500, 3, 9),  # the memory budget's blocks: 7 rows each
    (1, 300, 1000, 2, 10),  # the floor's blocks of 300 rows, the last one shorter
])
def test_by_row_in_blocks_equals_sklearn(monkeypatch, chunk, floor, n, d, seed):
    from fairaudit.metrics import quality

    monkeypatch.setattr(quality, "_CHUNK_ENTRIES", chunk)
    monkeypatch.setattr(quality, "_MIN_BLOCK_ROWS", floor)
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    labels = rng.integers(0, 4, size=n)
    np.testing.assert_allclose(quality.silhouette_by_row(X, labels),
                               silhouette_samples(X, labels), rtol=0, atol=1e-12)
