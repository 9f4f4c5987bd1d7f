"""DCSI: hand-computed case, brute-force oracle (dense distances, Prim MST), properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairaudit.metrics.density_separation import dcsi


def brute_dcsi(X, labels, min_pts=5):
    X = np.asarray(X, float)
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    cl = sorted(set(labels.tolist()) - {-1})
    cores, conns = {}, {}
    for c in cl:
        idx = np.flatnonzero(labels == c)
        Dc = D[np.ix_(idx, idx)]
        srt = np.sort(Dc, axis=1)  # column 0 is self
        m = len(idx)
        eps = np.median(srt[:, min(2 * min_pts, m - 1)])
        core = idx[srt[:, min(min_pts, m - 1)] <= eps]
        cores[c] = core
        # Prim on the core points
        if len(core) < 2:
            conns[c] = 0.0
            continue
        Dk = D[np.ix_(core, core)]
        intree = np.zeros(len(core), bool)
        intree[0] = True
        best = Dk[0].copy()
        mx = 0.0
        for _ in range(len(core) - 1):
            b = np.where(intree, np.inf, best)
            j = int(np.argmin(b))
            mx = max(mx, b[j])
            intree[j] = True
            best = np.minimum(best, Dk[j])
        conns[c] = mx
    vals = []
    for a in range(len(cl)):
        for b in range(a + 1, len(cl)):
            sep = D[np.ix_(cores[cl[a]], cores[cl[b]])].min()
            conn = max(conns[cl[a]], conns[cl[b]])
            q = sep / conn
            vals.append(q / (1 + q))
    return float(np.mean(vals))


def test_hand_computed_two_lines():
    # cluster 0: 0..11 on a line (step 1); cluster 1: the same shifted by 21.
    # min_pts = 2: ε = median distance to 4th neighbour; interior points have it 2, ends 3-4
    # core = points whose 2nd neighbour is within ε -> all points; Conn = 1 for both;
    # Sep = 21 - 11 = 10 -> q = 10, DCSI = 10/11
    x = np.arange(12.0)
    X = np.r_[x, x + 21][:, None]
    labels = np.r_[np.zeros(12, int), np.ones(12, int)]
    r = dcsi(X, labels, min_pts=2)
    assert r.value == pytest.approx(10 / 11)
    assert r.pairs[0].separation == pytest.approx(10.0)
    assert r.connectedness == (1.0, 1.0)
    assert r.noise_adjusted == pytest.approx(10 / 11)


@pytest.mark.parametrize("seed", range(6))
def test_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 5))
    X = np.vstack([rng.normal(size=(40, 2)) + 5 * rng.normal(size=2) for _ in range(k)])
    if seed % 2:
        X = np.round(X, 1)  # ties
    labels = np.repeat(np.arange(k), 40)
    noise = rng.random(labels.size) < 0.05
    labels[noise] = -1
    r = dcsi(X, labels, min_pts=5)
    assert r.value == pytest.approx(brute_dcsi(X, labels), abs=1e-12)
    assert r.noise_adjusted == pytest.approx(r.value * (1 - noise.mean()))
    assert len(r.pairs) == k * (k - 1) // 2


def test_does_not_mutate_labels_and_needs_two_clusters():
    X = np.random.default_rng(0).normal(size=(30, 2))
    labels = np.zeros(30, int)
    labels[:3] = -1
    keep = labels.copy()
    r = dcsi(X, labels)
    assert np.array_equal(labels, keep)
    assert math.isnan(r.value)
    assert r.notes


def test_bad_input():
    with pytest.raises(ValueError, match="labels"):
        dcsi(np.zeros((4, 2)), np.zeros(3, int))
    with pytest.raises(ValueError, match="NaN"):
        dcsi(np.array([[np.nan, 0.0], [0.0, 0.0]]), np.array([0, 1]))
    with pytest.raises(ValueError, match="min_pts"):
        dcsi(np.zeros((4, 2)), np.zeros(4, int), min_pts=0)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    shift=st.floats(0.0, 50.0),
    scale=st.floats(0.1, 10.0),
)
def test_properties(seed, shift, scale):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(size=(30, 2)), rng.normal(size=(30, 2)) + [shift, 0]])
    labels = np.repeat([0, 1], 30)
    r = dcsi(X, labels)
    assert 0.0 <= r.value <= 1.0
    # invariant to translation, scaling and relabelling
    r2 = dcsi(X * scale + 3.0, 1 - labels)
    assert r2.value == pytest.approx(r.value, abs=1e-9)
    # permutation of the rows changes nothing
    p = rng.permutation(60)
    assert dcsi(X[p], labels[p]).value == pytest.approx(r.value, abs=1e-12)
