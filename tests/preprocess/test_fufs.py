"""Tests for fairaudit.preprocess.fufs.FUFS, its objective (fufs_objective) and the feature
associations (associations).

Oracles: kernels and the loss against explicit-H trace formulas with loops; the analytic gradient
against central finite differences of the directly evaluated loss; a planted proxy must rank first
in ``proxy_scores_`` and last in ``scores_``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairaudit.preprocess import FUFS
from fairaudit.preprocess.associations import feature_associations
from fairaudit.preprocess.fufs_objective import (
    FUFSState,
    _center,
    _inner_with_sqdiff,
    _rbf,
    fufs_gradients,
    fufs_loss,
)


def brute_rbf(X: np.ndarray, w: np.ndarray, gamma: float) -> np.ndarray:
    n = X.shape[0]
    K = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            K[i, j] = np.exp(-gamma * np.sum((w * (X[i] - X[j])) ** 2))
    return K


def make_state(n=20, d=4, seed=0, alpha=0.7, beta=0.1, categorical=True) -> FUFSState:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if categorical:
        s = rng.integers(0, 3, n)
        KP = (s[:, None] == s[None, :]).astype(float)
    else:
        p = rng.normal(size=(n, 1))
        KP = brute_rbf(p, np.ones(1), 1.0)
    gamma = 0.3
    return FUFSState(
        X=X,
        KXc=_center(brute_rbf(X, np.ones(d), gamma)),
        KPc=_center(KP),
        gamma=gamma,
        alpha=alpha,
        beta=beta,
        scale=7.0,
    )


def test_rbf_and_center_match_brute_force() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(12, 3))
    w = rng.random(3)
    np.testing.assert_allclose(_rbf(X, w, 0.4), brute_rbf(X, w, 0.4), atol=1e-12)
    K = rng.random((12, 12))
    H = np.eye(12) - np.ones((12, 12)) / 12
    np.testing.assert_allclose(_center(K), H @ K @ H, atol=1e-12)


def test_inner_with_sqdiff_matches_loops() -> None:
    rng = np.random.default_rng(2)
    n, d = 9, 3
    X = rng.normal(size=(n, d))
    Q = rng.normal(size=(n, n))
    Q = Q + Q.T
    expected = [
        sum(Q[i, j] * (X[i, f] - X[j, f]) ** 2 for i in range(n) for j in range(n))
        for f in range(d)
    ]
    np.testing.assert_allclose(_inner_with_sqdiff(Q, X, X * X), expected, rtol=1e-10)


def test_loss_matches_explicit_trace_formula() -> None:
    st_ = make_state()
    rng = np.random.default_rng(3)
    m, g = rng.random(4), rng.random(4)
    n = st_.X.shape[0]
    H = np.eye(n) - np.ones((n, n)) / n
    KX = brute_rbf(st_.X, np.ones(4), st_.gamma)
    KM = brute_rbf(st_.X, m, st_.gamma)
    KG = brute_rbf(st_.X, g * (1 - m), st_.gamma)
    KP = st_.KPc  # centred already; H K_P H = K_P~ and tr(H K_M H K_P) = tr(K_M K_P~)
    expected = (
        -np.trace(H @ KX @ H @ KM)
        + st_.alpha * np.trace(H @ KM @ H @ KP)
        - st_.alpha * np.trace(H @ KG @ H @ KP)
    ) / st_.scale + st_.beta * (m.sum() + g.sum())
    assert fufs_loss(st_, m, g) == pytest.approx(expected, rel=1e-10)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10_000), categorical=st.booleans(), alpha=st.sampled_from([0.0, 0.3, 2.0])
)
def test_gradient_matches_finite_differences(seed, categorical, alpha) -> None:
    state = make_state(n=15, d=4, seed=seed, alpha=alpha, categorical=categorical)
    rng = np.random.default_rng(seed + 1)
    m = rng.uniform(0.1, 0.9, 4)
    g = rng.uniform(0.1, 0.9, 4)
    gm, gg = fufs_gradients(state, m, g)
    h = 1e-6
    for f in range(4):
        e = np.zeros(4)
        e[f] = h
        fd_m = (fufs_loss(state, m + e, g) - fufs_loss(state, m - e, g)) / (2 * h)
        fd_g = (fufs_loss(state, m, g + e) - fufs_loss(state, m, g - e)) / (2 * h)
        assert gm[f] == pytest.approx(fd_m, rel=1e-5, abs=1e-7)
        assert gg[f] == pytest.approx(fd_g, rel=1e-5, abs=1e-7)


def planted_data(n=200, d=8, seed=0, numeric_s=False):
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 3, n)
    if numeric_s:
        s = rng.random(n)
        proxy = s + 0.02 * rng.normal(size=n)
    else:
        s = rng.integers(0, 2, n)
        proxy = s + 0.05 * rng.normal(size=n)
    X = rng.normal(size=(n, d))
    X[:, 0] += 3 * z
    X[:, 1] -= 3 * z
    X[:, 2] += 2 * (z == 1)
    X[:, 4] = proxy
    return X, s


@pytest.mark.parametrize("numeric_s", [False, True])
def test_planted_proxy_ranks_first_in_proxy_and_last_in_scores(numeric_s) -> None:
    X, s = planted_data(numeric_s=numeric_s)
    f = FUFS(3, random_state=0).fit(X, sensitive=s)
    assert f.proxy_ranking_[0] == 4
    assert f.ranking_[-1] == 4
    assert np.argmax(f.proxy_scores_) == 4 or f.proxy_scores_[4] == np.nanmax(f.proxy_scores_)
    assert f.scores_[4] == np.nanmin(f.scores_)
    assert not f.support_[4]
    assert f.sensitive_kernel_ == ("rbf" if numeric_s else "equality")
    assert f.sample_indices_ is None


def test_structural_features_are_selected() -> None:
    X, s = planted_data(seed=1)
    f = FUFS(3, random_state=0).fit(X, sensitive=s)
    assert set(np.flatnonzero(f.support_)) == {0, 1, 2}
    np.testing.assert_array_equal(f.transform(X), X[:, f.support_])


def test_sampling_beyond_max_samples_is_seeded_and_recorded() -> None:
    X, s = planted_data(n=400)
    a = FUFS(2, max_samples=150, max_iter=10, random_state=3).fit(X, sensitive=s)
    b = FUFS(2, max_samples=150, max_iter=10, random_state=3).fit(X, sensitive=s)
    assert a.sample_indices_ is not None and a.sample_indices_.size == 150
    np.testing.assert_array_equal(a.sample_indices_, b.sample_indices_)
    np.testing.assert_array_equal(a.scores_, b.scores_)
    assert any("sample of 150 of 400 rows" in note for note in a.notes_)


def test_sensitive_copy_among_features_is_excluded() -> None:
    X, s = planted_data(n=200)
    X = np.column_stack([X, s.astype(float), 1.0 - s])  # the attribute and its complement
    f = FUFS(3, random_state=0).fit(X, sensitive=s)
    assert f.excluded_features_ == (8, 9)
    assert np.isnan(f.scores_[8]) and np.isnan(f.proxy_scores_[9])
    assert not f.support_[8:].any()
    assert list(f.ranking_[-2:]) == [8, 9]
    assert any("Excluded" in note for note in f.notes_)


def test_fraction_of_features() -> None:
    X, s = planted_data()
    f = FUFS(0.25, max_iter=5).fit(X, sensitive=s)
    assert f.n_features_selected_ == 2 and f.support_.sum() == 2


def _state_of(X, s, f, *, beta: float, numeric_s: bool = False) -> FUFSState:
    """The FUFSState a default fit builds (standardised X, gamma = 1/d, alpha 1), by hand."""
    Xs = (X - X.mean(0)) / X.std(0)
    gamma = 1 / X.shape[1]
    if numeric_s:
        KP = _rbf(((s - s.mean()) / s.std())[:, None], None, 1.0)
    else:
        KP = (s[:, None] == s[None, :]).astype(float)
    return FUFSState(X=Xs, KXc=_center(_rbf(Xs, None, gamma)), KPc=_center(KP), gamma=gamma,
                     alpha=1.0, beta=beta, scale=f.scale_)


def test_fit_loop_uses_the_same_gradients() -> None:
    """One fit step equals one manual step with fufs_gradients (the loop shares kernels)."""
    X, s = planted_data(n=60)
    f = FUFS(2, max_iter=1, learning_rate=0.3, dtype="float64").fit(X, sensitive=s)
    state = _state_of(X, s, f, beta=0.1)
    m = np.ones(X.shape[1])
    g = np.ones(X.shape[1])
    g = np.clip(g - 0.3 * fufs_gradients(state, m, g)[1], 0, 1)
    m = np.clip(m - 0.3 * fufs_gradients(state, m, g)[0], 0, 1)
    np.testing.assert_allclose(f.scores_, m, atol=1e-10)
    np.testing.assert_allclose(f.proxy_scores_, g, atol=1e-10)
    assert f.loss_[-1] == pytest.approx(fufs_loss(state, m, g))


def _naive_descent(state: FUFSState, lr: float, max_iter: int):
    """The projected-gradient loop written out: fufs_gradients and fufs_loss at every step."""
    d = state.X.shape[1]
    m, g = np.ones(d), np.ones(d)
    losses = []
    for _ in range(max_iter):
        losses.append(fufs_loss(state, m, g))
        g = np.clip(g - lr * fufs_gradients(state, m, g)[1], 0, 1)
        m = np.clip(m - lr * fufs_gradients(state, m, g)[0], 0, 1)
    losses.append(fufs_loss(state, m, g))
    return m, g, losses


@pytest.mark.parametrize(
    "case",
    [
        "planted",  # m and g move every step
        "one-feature",  # m stays at 1, so w = g(1 - m) = 0 for every step: K(w) is never formed
        "fixed-point",  # a large beta drives every score to a bound: (m, g) stops moving
        "numeric-s",
    ],
)
def test_fit_equals_the_step_by_step_loop(case) -> None:
    """The fit's descent (kernels shared, zero terms skipped, K(m) kept while m stays, early
    stop at a fixed point) gives the scores and every loss of the loop written out."""
    if case == "one-feature":
        X, s = planted_data(n=80, d=8)
        X = X[:, :1]
    else:
        X, s = planted_data(n=80, numeric_s=case == "numeric-s")
    beta = 5.0 if case == "fixed-point" else 0.1
    iters = 40
    f = FUFS(1, max_iter=iters, learning_rate=0.2, beta=beta, dtype="float64").fit(X, sensitive=s)
    state = _state_of(X, s, f, beta=beta, numeric_s=case == "numeric-s")
    m, g, losses = _naive_descent(state, 0.2, iters)
    np.testing.assert_allclose(f.scores_, m, rtol=0, atol=1e-10)
    np.testing.assert_allclose(f.proxy_scores_, g, rtol=0, atol=1e-10)
    assert len(f.loss_) == iters + 1
    np.testing.assert_allclose(f.loss_, losses, rtol=1e-10, atol=1e-10)
    if case == "fixed-point":
        assert np.all((m == 0) | (m == 1)) and np.all((g == 0) | (g == 1))
    if case == "planted":
        assert len(set(np.round(f.loss_, 12))) > iters // 2  # the scores really moved


def test_float32_and_float64_agree() -> None:
    X, s = planted_data(n=150)
    a = FUFS(3, dtype="float32", random_state=0).fit(X, sensitive=s)
    b = FUFS(3, dtype="float64", random_state=0).fit(X, sensitive=s)
    np.testing.assert_allclose(a.scores_, b.scores_, atol=1e-4)
    np.testing.assert_allclose(a.proxy_scores_, b.proxy_scores_, atol=1e-4)


def test_unnormalised_traces_option() -> None:
    X, s = planted_data(n=120)
    f = FUFS(3, normalize=False, learning_rate=1e-2, max_iter=5).fit(X, sensitive=s)
    assert f.scale_ == 1.0
    assert np.all((f.scores_ >= 0) & (f.scores_ <= 1))


@pytest.mark.parametrize(
    ("kwargs", "X", "match"),
    [
        ({"n_features_to_select": 20}, None, "asks for 20 features, but only 8"),
        ({"n_features_to_select": 0}, None, "'n_features_to_select' parameter of FUFS"),
        ({"n_features_to_select": 1.5}, None, "'n_features_to_select' parameter"),
        ({"alpha": -1}, None, "'alpha' parameter of FUFS must be a float >= 0"),
        ({"learning_rate": 0}, None, "'learning_rate' parameter"),
        ({"kernel": "poly"}, None, "'kernel' parameter"),
        ({"gamma": "scale"}, None, "'gamma' parameter"),
        ({"sensitive_kernel": "x"}, None, "'sensitive_kernel' parameter"),
        ({"dtype": "float16"}, None, "'dtype' parameter"),
        ({}, "nan", "non-finite values.*columns \\[3\\]"),
    ],
)
def test_bad_input(kwargs, X, match) -> None:
    Xd, s = planted_data(n=50)
    if X == "nan":
        Xd[5, 3] = np.nan
    with pytest.raises(ValueError, match=match):
        FUFS(**{"n_features_to_select": 2, **kwargs}).fit(Xd, sensitive=s)


def test_sensitive_shape_and_not_fitted() -> None:
    X, s = planted_data(n=50)
    with pytest.raises(ValueError, match="one row per row of X"):
        FUFS(2).fit(X, sensitive=s[:10])
    with pytest.raises(ValueError, match="not fitted"):
        FUFS(2).transform(X)


def test_init_stores_params_verbatim() -> None:
    f = FUFS(5, alpha=0.01, beta=10.0, random_state=2)
    assert f.n_features_to_select == 5 and f.alpha == 0.01 and f.beta == 10.0
    assert not [k for k in vars(f) if k.endswith("_")]


def test_feature_associations_hand_computed() -> None:
    # 2 x 2 table [[3, 1], [1, 3]]: chi2 = 2, n = 8 -> V = sqrt(2 / 8) = 0.5
    x = np.array([0, 0, 0, 0, 1, 1, 1, 1], dtype=float)
    s = np.array([0, 0, 0, 1, 0, 1, 1, 1])
    res = feature_associations(x[:, None], s)
    assert res.cramers_v[0, 0] == pytest.approx(0.5)
    # MI = sum p log(p / (p_x p_s)) = 2 * (3/8) log(1.5) + 2 * (1/8) log(0.5)
    expected = 0.75 * np.log(1.5) + 0.25 * np.log(0.5)
    assert res.mutual_information[0, 0] == pytest.approx(expected)
    # identical -> V = 1, MI = log 2; independent-constant feature -> 0
    both = feature_associations(np.column_stack([s.astype(float), np.ones(8)]), s)
    assert both.cramers_v[:, 0] == pytest.approx([1.0, 0.0])
    assert both.mutual_information[0, 0] == pytest.approx(np.log(2))


def test_feature_associations_bins_continuous_features() -> None:
    rng = np.random.default_rng(0)
    s = rng.integers(0, 2, 500)
    X = np.column_stack([s + 0.01 * rng.normal(size=500), rng.normal(size=500)])
    res = feature_associations(X, np.column_stack([s, rng.integers(0, 3, 500)]), max_bins=10)
    assert res.n_bins[0] <= 10 and res.cramers_v.shape == (2, 2)
    assert res.cramers_v[0, 0] > 0.9 and res.cramers_v[1, 0] < 0.3


def test_fufs_plugin_adapters() -> None:
    import json

    from fairaudit_builtins.fufs import FUFSPreprocessor, ProxyAuditor

    from fairaudit.core.components import AuditContext
    from fairaudit.testing import check_component, make_data

    check_component(FUFSPreprocessor)
    check_component(ProxyAuditor)
    data = make_data(n=200)
    # plant a proxy of 'sex' among the features
    sex = (data.frame.get_column("sex") == "F").cast(float).to_numpy()
    rng = np.random.default_rng(0)
    feats = data.features.with_columns(
        zip_code=sex + 0.05 * rng.normal(size=200), noise=rng.normal(size=200)
    )
    data = data.replace(features=feats)
    step = FUFSPreprocessor(2, random_state=0)
    out = step.fit_transform(data)
    assert "zip_code" not in out.features.columns and out.features.width == 2
    assert step.report_["features"][0]["feature"] == "zip_code"
    json.dumps(step.report_)
    ctx = AuditContext(labelling=data.labellings["planted"], tables={}, data=data, random_state=0)
    results = ProxyAuditor().audit(ctx)
    by_attr = {r.attribute: r for r in results}
    assert set(by_attr) == {"sex", "race", "sex|race"}
    assert by_attr["sex"].detail["top_feature"] == "zip_code"
    assert by_attr["sex"].value > 0.9
