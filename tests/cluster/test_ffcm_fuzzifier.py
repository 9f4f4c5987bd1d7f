"""m="auto": Schwämmle & Jensen's fuzzifier estimate, capped at the standard m = 2."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fairaudit.cluster.ffcm import (
    STANDARD_M,
    FairFuzzyCMeans,
    auto_fuzzifier,
    fuzzifier_estimate,
)


def test_estimate_hand_computed() -> None:
    # n = 1000, d = 5: 1 + (1.418 + 22.05)/25 + (0.01233 + 0.243)·5^(-0.0406·ln 1000 - 0.1134)
    # = 1 + 0.93872 + 0.25533·5^(-0.393855) = 1 + 0.93872 + 0.25533·0.530527 = 2.07418
    assert fuzzifier_estimate(1000, 5) == pytest.approx(2.07418, abs=2e-5)
    # n = 32561, d = 100: 1 + 22.0935/1e4 + 0.243379·100^(-0.0406·10.3909 - 0.1134)
    # = 1 + 0.00220935 + 0.243379·100^(-0.535269) = 1 + 0.0022094 + 0.243379·0.0850083
    assert fuzzifier_estimate(32561, 100) == pytest.approx(1.022899, abs=2e-5)


def test_estimate_properties() -> None:
    # falls with the dimension, tends to 1, never below 1
    ds = [2, 3, 5, 10, 30, 100, 1000]
    for n in (50, 1000, 100_000):
        vals = [fuzzifier_estimate(n, d) for d in ds]
        assert all(a > b for a, b in zip(vals, vals[1:], strict=False))
        assert all(v > 1.0 for v in vals)
        assert vals[-1] < 1.08
    with pytest.raises(ValueError, match="n >= 1"):
        fuzzifier_estimate(0, 3)


def test_auto_is_capped_at_two() -> None:
    # the FFCM paper's settings (3-5 features, 1,000 rows) keep m = 2
    assert auto_fuzzifier(1000, 3) == STANDARD_M == 2.0
    assert auto_fuzzifier(1000, 5) == 2.0
    assert auto_fuzzifier(1000, 20) == pytest.approx(fuzzifier_estimate(1000, 20))
    assert 1.0 < auto_fuzzifier(1000, 20) < 2.0


def _blobs_in_noise(seed: int = 0):
    """Three blobs in 3 informative dimensions plus 60 noise dimensions (like a one-hot
    encoded table): m = 2 flattens every membership to ~1/3."""
    rng = np.random.default_rng(seed)
    n, k = 600, 3
    c = np.repeat(np.arange(k), n // k)
    X = np.hstack([np.eye(k)[c] * 3.0 + rng.normal(size=(n, k)), rng.normal(size=(n, 60))])
    S = (rng.random(n) < 0.3 + 0.4 * (c == 0)).astype(int)
    return X, S, c


def test_auto_fuzzifier_keeps_structure_in_many_dimensions() -> None:
    from sklearn.metrics import adjusted_rand_score

    X, S, c = _blobs_in_noise()
    flat = FairFuzzyCMeans(3, m=2.0, fair=False, random_state=0).fit(X, sensitive=S)
    auto = FairFuzzyCMeans(3, m="auto", fair=False, random_state=0).fit(X, sensitive=S)
    assert flat.m_ == 2.0
    assert auto.m_ == pytest.approx(auto_fuzzifier(600, 63))
    assert flat.memberships_.max(axis=1).mean() < 0.34  # ~ 1/k: no structure left
    assert auto.memberships_.max(axis=1).mean() > 0.8
    assert adjusted_rand_score(c, auto.labels_) > 0.8
    assert adjusted_rand_score(c, flat.labels_) < 0.6
    assert np.bincount(auto.labels_, minlength=3).min() > 150  # no tiny cluster


def test_auto_fuzzifier_fair_fit_and_predict_use_m_() -> None:
    X, S, _ = _blobs_in_noise(1)
    est = FairFuzzyCMeans(3, m="auto", random_state=0).fit(X, sensitive=S)
    assert est.get_params()["m"] == "auto"
    assert math.isclose(est.m_, auto_fuzzifier(*X.shape))
    # predict with the groups reproduces the training labels and memberships (uses m_)
    np.testing.assert_array_equal(est.predict(X, sensitive=S), est.labels_)
    np.testing.assert_allclose(est.predict_memberships(X, sensitive=S), est.memberships_,
                               atol=1e-8)


@pytest.mark.parametrize("bad", ["two", 1.0, 0.5, float("nan"), True])
def test_bad_m(bad: object) -> None:
    X, S, _ = _blobs_in_noise()
    with pytest.raises(ValueError, match="'m' parameter"):
        FairFuzzyCMeans(3, m=bad).fit(X, sensitive=S)


def test_plugin_default_is_auto() -> None:
    from fairaudit_builtins.centroid import FCMClusterer, FFCMClusterer

    assert FFCMClusterer().m == "auto"
    assert FCMClusterer().m == "auto"
