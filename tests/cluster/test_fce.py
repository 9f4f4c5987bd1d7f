"""Tests for fairaudit.cluster.fce (FairClusteringEnsemble, kmeans_bases).

Oracles: the objective evaluated directly from the matrices (``fce_objective``) must never
increase; the closed-form block updates are compared with brute-force / random search; the
incrementally kept group x cluster counts are compared with a direct count; the converged Y step
is checked against every single-row move by brute force.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import adjusted_rand_score

from fairaudit.cluster import FairClusteringEnsemble, kmeans_bases
from fairaudit.cluster.fce import _encode_groups, _polar, fce_objective


def planted(n: int = 600, c: int = 3, m: int = 6, flip: float = 0.2, seed: int = 0):
    """Noisy copies of a planted partition z; group membership correlated with z."""
    rng = np.random.default_rng(seed)
    z = rng.integers(0, c, n)
    bases = np.column_stack(
        [np.where(rng.random(n) < flip, rng.integers(0, c, n), z) for _ in range(m)]
    )
    s = (rng.random(n) < np.where(z == 0, 0.85, 0.25)).astype(int)
    return z, bases, s


def direct_counts(labels: np.ndarray, groups: np.ndarray, c: int) -> np.ndarray:
    T = int(groups.max()) + 1
    A = np.zeros((T, c), dtype=np.int64)
    for i, k in enumerate(labels):
        for g in groups[i]:
            A[g, k] += 1
    return A


def objective_of(est: FairClusteringEnsemble, bases: np.ndarray, s) -> float:
    """Re-evaluate the final objective from the fitted matrices."""
    codes = np.column_stack(
        [np.unique(bases[:, j], return_inverse=True)[1] for j in range(bases.shape[1])]
    )
    groups, sizes = _encode_groups(s, len(bases), "test")
    return fce_objective(
        est.embedding_,
        est.rotation_,
        est.base_rotations_,
        est.weights_,
        est.labels_,
        codes,
        groups,
        int(sum(sizes)),
        est.n_clusters,
        est.lambda1,
        est.lambda2_,
    )[0]


@pytest.mark.parametrize("lambda2", [0.0, "auto", 1e-6, 1e-4, 1e-2])
def test_objective_decreases_monotonically(lambda2) -> None:
    _, bases, s = planted(seed=1)
    est = FairClusteringEnsemble(3, lambda2=lambda2, max_iter=15, tol=0.0, random_state=4)
    est.fit(bases, sensitive=s)
    J = [h.objective for h in est.objective_]
    assert len(J) >= 2
    for before, after in zip(J, J[1:], strict=False):
        assert after <= before + 1e-9 * abs(before)
    # the recorded final value is the directly evaluated objective of the fitted matrices
    assert objective_of(est, bases, s) == pytest.approx(J[-1], rel=1e-9)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    c=st.integers(2, 4),
    m=st.integers(2, 4),
    lam=st.sampled_from([0.0, 1e-5, 1e-3, 1e-1]),
    noise=st.booleans(),
)
def test_property_monotone_and_counts(seed, c, m, lam, noise) -> None:
    rng = np.random.default_rng(seed)
    n = 60
    bases = rng.integers(0, c + 1, size=(n, m))
    if noise:
        bases[rng.random((n, m)) < 0.1] = -1
        bases[0] = 0  # keep every base with at least one non-noise row
    s = rng.integers(0, 3, n)
    est = FairClusteringEnsemble(c, lambda2=lam, max_iter=8, tol=0.0, random_state=seed)
    est.fit(bases, sensitive=s)
    J = [h.objective for h in est.objective_]
    for before, after in zip(J, J[1:], strict=False):
        assert after <= before + 1e-9 * abs(before)
    assert set(np.unique(est.labels_)) == set(range(c))  # never empties a cluster
    groups, _ = _encode_groups(s, n, "t")
    np.testing.assert_array_equal(est.contingency_, direct_counts(est.labels_, groups, c))
    assert est.weights_.sum() == pytest.approx(1.0) and (est.weights_ > 0).all()


def test_y_step_reaches_coordinatewise_minimum_brute_force() -> None:
    """After a converged Y step no single-row move lowers lam1||Y-P||^2 + lam2||G^T Y||^2."""
    rng = np.random.default_rng(3)
    n, c = 40, 3
    P = rng.normal(scale=0.2, size=(n, c))
    groups = rng.integers(0, 2, size=(n, 1))
    labels = rng.integers(0, c, n)
    labels[:c] = np.arange(c)
    lam1, lam2 = 1e-3, 2e-5
    A = direct_counts(labels, groups, c)
    sizes = np.bincount(labels, minlength=c)

    def cost(lab: np.ndarray) -> float:
        Y = np.eye(c)[lab]
        return lam1 * np.sum((Y - P) ** 2) + lam2 * np.sum(direct_counts(lab, groups, c) ** 2)

    before = cost(labels)
    est = FairClusteringEnsemble(c, max_sweeps=1000)
    est._y_step(P, lam1, lam2, groups, A, sizes, labels)
    after = cost(labels)
    assert after <= before
    np.testing.assert_array_equal(A, direct_counts(labels, groups, c))
    for i in range(n):
        for b in range(c):
            if b == labels[i] or sizes[labels[i]] == 1:
                continue
            trial = labels.copy()
            trial[i] = b
            assert cost(trial) >= after - 1e-15


def test_rotation_updates_beat_random_orthogonal_matrices() -> None:
    rng = np.random.default_rng(0)
    M = rng.normal(size=(5, 3))
    Q = _polar(M)
    np.testing.assert_allclose(Q.T @ Q, np.eye(3), atol=1e-12)
    best = np.trace(Q.T @ M)
    for _ in range(500):
        Z, _ = np.linalg.qr(rng.normal(size=(5, 3)))
        assert np.trace(Z.T @ M) <= best + 1e-12


def test_alpha_closed_form_is_optimal_on_simplex() -> None:
    _, bases, s = planted(seed=5)
    est = FairClusteringEnsemble(3, max_iter=3, random_state=0).fit(bases, sensitive=s)
    codes = np.column_stack([np.unique(b, return_inverse=True)[1] for b in bases.T])
    errs = []
    for i, Ri in enumerate(est.base_rotations_):
        YR = Ri[codes[:, i]]
        errs.append(np.sum((est.embedding_ - YR) ** 2))
    errs = np.array(errs)
    best = np.sum(est.weights_**2 * errs)
    rng = np.random.default_rng(1)
    for _ in range(300):
        a = rng.dirichlet(np.ones(len(errs)))
        assert np.sum(a**2 * errs) >= best - 1e-9


def test_lambda2_zero_recovers_agreeing_bases() -> None:
    z, _, s = planted(n=300, flip=0.0)
    bases = np.column_stack([z, (z + 1) % 3, (z + 2) % 3, z])  # same partition, relabelled
    est = FairClusteringEnsemble(3, lambda2=0.0, random_state=0).fit(bases, sensitive=s)
    assert adjusted_rand_score(z, est.labels_) == 1.0


def test_large_lambda2_spreads_every_group_evenly() -> None:
    """With lam2 >> lam1 * |P| the Y step balances each group to within one row per cluster."""
    z, bases, s = planted(n=301, seed=2)
    est = FairClusteringEnsemble(3, lambda2=1.0, max_sweeps=200, random_state=0)
    est.fit(bases, sensitive=s)
    A = est.contingency_
    assert (A.max(axis=1) - A.min(axis=1) <= 1).all()


def test_default_lambda2_improves_fairness_over_lambda2_zero() -> None:
    z, bases, s = planted(n=900, seed=7)

    def min_balance(labels: np.ndarray) -> float:
        N = np.zeros((2, 3))
        np.add.at(N, (s, labels), 1)
        r = N.sum(axis=1) / N.sum()
        rk = N / N.sum(axis=0)
        return float(np.min(np.minimum(rk / r[:, None], r[:, None] / np.maximum(rk, 1e-12))))

    off = FairClusteringEnsemble(3, lambda2=0.0, random_state=0).fit(bases, sensitive=s)
    on = FairClusteringEnsemble(3, random_state=0).fit(bases, sensitive=s)
    assert on.lambda2_ > 0
    assert min_balance(on.labels_) > min_balance(off.labels_) + 0.05


def test_noise_rows_abstain_and_are_labelled() -> None:
    z, _, s = planted(n=300, flip=0.0, seed=3)
    b3 = z.copy()
    b3[::3] = -1
    bases = np.column_stack([z, z, b3])
    est = FairClusteringEnsemble(3, lambda2=0.0, random_state=0).fit(bases, sensitive=s)
    assert est.labels_.min() >= 0
    assert adjusted_rand_score(z, est.labels_) == 1.0


def test_more_clusters_than_bases_have_never_empties() -> None:
    rng = np.random.default_rng(0)
    bases = rng.integers(0, 2, size=(100, 3))
    est = FairClusteringEnsemble(5, random_state=0).fit(bases)
    assert np.bincount(est.labels_, minlength=5).min() >= 1


def test_multiple_attributes_and_list_input() -> None:
    _, bases, s = planted(n=200)
    s2 = np.where(np.arange(200) % 2 == 0, "a", "b")
    est = FairClusteringEnsemble(3, random_state=0)
    est.fit([bases[:, j] for j in range(bases.shape[1])], sensitive=np.column_stack([s, s2]))
    assert est.contingency_.shape == (4, 3)
    assert est.group_sizes_ == (2, 2)


def test_seeded_runs_are_reproducible() -> None:
    _, bases, s = planted()
    a = FairClusteringEnsemble(3, random_state=11).fit(bases, sensitive=s).labels_
    b = FairClusteringEnsemble(3, random_state=11).fit(bases, sensitive=s).labels_
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    ("bases", "kwargs", "match"),
    [
        ([np.zeros(5, int), np.zeros(6, int)], {}, "different lengths"),
        (np.zeros((5, 1), int), {}, "at least two base labellings"),
        (np.zeros(5, int), {}, "n x m array"),
        (np.zeros((4, 2), int), {"n_clusters": 5}, "at most the number of rows"),
        (np.full((4, 2), -1), {"n_clusters": 2}, "every row as noise"),
        (np.full((4, 2), 0.5), {"n_clusters": 2}, "must be integers"),
        (np.zeros((4, 2), int), {"n_clusters": 0}, "'n_clusters' parameter of Fair"),
        (np.zeros((4, 2), int), {"n_clusters": 2, "lambda2": -1.0}, "'lambda2' parameter"),
        (np.zeros((4, 2), int), {"n_clusters": 2, "lambda2": "big"}, "'lambda2' parameter"),
        (np.zeros((4, 2), int), {"n_clusters": 2, "lambda1": 0.0}, "'lambda1' parameter"),
    ],
)
def test_bad_input(bases, kwargs, match) -> None:
    kw = {"n_clusters": 2, **kwargs}
    with pytest.raises(ValueError, match=match):
        FairClusteringEnsemble(**kw).fit(bases)


def test_sensitive_length_mismatch() -> None:
    with pytest.raises(ValueError, match="one row per labelled row"):
        FairClusteringEnsemble(2).fit(np.zeros((4, 2), int), sensitive=[0, 1])


def test_init_stores_params_verbatim() -> None:
    est = FairClusteringEnsemble(4, lambda2="auto", random_state=3)
    assert est.n_clusters == 4 and est.lambda2 == "auto" and est.random_state == 3
    assert not [k for k in vars(est) if k.endswith("_")]


def test_kmeans_bases_shape_and_seed() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    a = kmeans_bases(X, 3, n_bases=4, random_state=5)
    b = kmeans_bases(X, 3, n_bases=4, random_state=5)
    assert a.shape == (120, 4)
    np.testing.assert_array_equal(a, b)
    c = kmeans_bases(X, [2, 3, 4], n_bases=3, random_state=5)
    assert [len(np.unique(c[:, j])) for j in range(3)] == [2, 3, 4]
    with pytest.raises(ValueError, match="n_bases"):
        kmeans_bases(X, 3, n_bases=1)
    with pytest.raises(ValueError, match="non-finite"):
        kmeans_bases(np.full((5, 2), np.nan), 2)


def test_fce_plugin_adapter() -> None:
    import json

    from fairaudit_builtins.consensus import FCEClusterer

    from fairaudit.core.data import Labelling
    from fairaudit.testing import check_component, make_data

    check_component(FCEClusterer)
    data = make_data(n=300)
    rng = np.random.default_rng(0)
    planted_labels = data.labellings["planted"].labels
    noisy = np.where(rng.random(300) < 0.2, rng.integers(0, 3, 300), planted_labels)
    data = data.with_labelling(Labelling(name="noisy", labels=noisy, origin="clusterer"))
    step = FCEClusterer(3, random_state=0).fit(data)
    assert step.labels_.shape == (300,)
    assert step.extras_["bases"] == ["planted", "noisy"]
    json.dumps(step.extras_)
    rows = [r for r in step.extras_["comparison"] if r["attribute"] == "sex"]
    assert [r["labelling"] for r in rows] == ["planted", "noisy", "consensus"]
    with pytest.raises(ValueError, match="unknown labelling"):
        FCEClusterer(3, labellings=["planted", "nope"]).fit(data)
    gen = FCEClusterer(3, n_bases=3, random_state=0).fit(make_data(n=120, with_labels=False))
    assert gen.extras_["bases_origin"] == "kmeans" and len(gen.extras_["bases"]) == 3


# -- twin (fair=False), scikit-learn conventions, predict --------------------------------------


def _fcce(labels: np.ndarray, s: np.ndarray) -> float:
    from fairaudit.metrics import fairness_cce

    N = np.zeros((int(s.max()) + 1, int(labels.max()) + 1))
    np.add.at(N, (s, labels), 1)
    return float(fairness_cce(N))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fair_is_fairer_than_its_twin(seed: int) -> None:
    _, bases, s = planted(n=600, seed=seed)
    fair = FairClusteringEnsemble(3, random_state=seed).fit(bases, sensitive=s)
    twin = FairClusteringEnsemble(3, random_state=seed, fair=False).fit(bases, sensitive=s)
    assert twin.lambda2_ == 0.0 and fair.lambda2_ > 0
    assert _fcce(fair.labels_, s) > _fcce(twin.labels_, s) + 0.1


def test_twin_equals_lambda2_zero() -> None:
    _, bases, s = planted(n=300, seed=4)
    twin = FairClusteringEnsemble(3, random_state=1, fair=False).fit(bases, sensitive=s)
    zero = FairClusteringEnsemble(3, random_state=1, lambda2=0.0).fit(bases, sensitive=s)
    np.testing.assert_array_equal(twin.labels_, zero.labels_)


def test_sklearn_clone_and_check_estimator() -> None:
    import warnings

    from sklearn.base import clone
    from sklearn.utils.estimator_checks import check_estimator

    est = FairClusteringEnsemble(3, bases="kmeans", n_bases=4, fair=False, random_state=0)
    assert clone(est).get_params() == est.get_params()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_estimator(FairClusteringEnsemble(3, bases="kmeans", random_state=0))


def _brute_new_row(est: FairClusteringEnsemble, codes: np.ndarray, groups=None) -> int:
    """argmin over b of min over h of the row's share of J, h found numerically."""
    from scipy.optimize import minimize

    a2 = est.weights_**2
    R = est.rotation_
    K, c = R.shape
    costs = []
    for b in range(c):

        def f(h: np.ndarray, b: int = b) -> float:
            v = 0.0
            for i, Ri in enumerate(est.base_rotations_):
                if codes[i] >= 0:
                    v += a2[i] * np.sum((h - Ri[codes[i]]) ** 2)
            e = -(h @ R)
            e[b] += 1.0
            return v + est.lambda1 * np.sum(e**2)

        res = minimize(f, np.zeros(K), method="BFGS", options={"gtol": 1e-12})
        cost = res.fun
        if groups is not None:
            cost += est.lambda2_ * sum(2 * est.contingency_[g, b] + 1 for g in groups)
        costs.append(cost)
    return int(np.argmin(costs))


@pytest.mark.parametrize("seed", [0, 1])
def test_predict_new_patterns_match_brute_force(seed: int) -> None:
    _, bases, s = planted(n=200, c=3, m=4, flip=0.3, seed=seed)
    est = FairClusteringEnsemble(3, random_state=seed).fit(bases, sensitive=s)
    rng = np.random.default_rng(seed)
    new = rng.integers(-1, 3, size=(25, 4))
    new[new.max(axis=1) < 0, 0] = 0  # at least one vote
    groups = rng.integers(0, 2, 25)
    got = est._closed_form(new, groups[:, None])
    want = [_brute_new_row(est, new[j], [groups[j]]) for j in range(25)]
    np.testing.assert_array_equal(got, want)
    got_nog = est._closed_form(new, None)
    want_nog = [_brute_new_row(est, new[j]) for j in range(25)]
    np.testing.assert_array_equal(got_nog, want_nog)


def test_predict_on_training_rows_reproduces_labels() -> None:
    _, bases, s = planted(n=400, seed=3)
    est = FairClusteringEnsemble(3, random_state=0).fit(bases, sensitive=s)
    pred = est.predict(bases, sensitive=s)
    # exact wherever the consensus gave one (pattern, group) one label
    keys = np.column_stack([bases, s])
    _, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    unanimous = np.array([np.unique(est.labels_[inv == inv[i]]).size == 1 for i in range(inv.size)])
    assert unanimous.mean() > 0.9
    np.testing.assert_array_equal(pred[unanimous], est.labels_[unanimous])
    assert (pred == est.labels_).mean() > 0.95


def test_predict_kmeans_bases_and_unseen_values() -> None:
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(80, 2)) + c for c in ([0, 0], [8, 0], [0, 8])])
    s = rng.integers(0, 2, X.shape[0])
    est = FairClusteringEnsemble(3, bases="kmeans", n_bases=5, random_state=0).fit(X, sensitive=s)
    assert len(est.base_estimators_) == 5 and est.n_features_in_ == 2
    assert (est.predict(X, sensitive=s) == est.labels_).mean() > 0.95
    p = est.predict(X + 1e-6)
    assert p.shape == (240,) and set(np.unique(p)) <= {0, 1, 2}
    # precomputed: a label value never seen at fit abstains in that base
    _, bases, s2 = planted(n=150, seed=1)
    est2 = FairClusteringEnsemble(3, random_state=0).fit(bases, sensitive=s2)
    odd = bases[:3].copy()
    odd[:, 0] = 99
    assert est2.predict(odd).shape == (3,)
    with pytest.raises(ValueError, match="matrix of base"):
        est2.predict(bases[:, :2])
    with pytest.raises(ValueError, match="not seen at fit"):
        est2.predict(bases[:3], sensitive=np.array([0, 1, 7]))


def test_fce_plugin_fair_twin_and_predict() -> None:
    from fairaudit_builtins.consensus import FCEClusterer

    from fairaudit.testing import make_data

    data = make_data(n=300)
    fair = FCEClusterer(3, n_bases=4, random_state=0).fit(make_data(n=300, with_labels=False))
    twin = FCEClusterer(3, n_bases=4, random_state=0, fair=False).fit(
        make_data(n=300, with_labels=False)
    )
    assert twin.extras_["fair"] is False and twin.estimator_.lambda2_ == 0.0
    assert fair.predict(make_data(n=300, with_labels=False)).shape == (300,)
    # combined labellings: predict needs the bases' labels for the rows
    from fairaudit.core.data import Labelling

    rng = np.random.default_rng(0)
    noisy = np.where(
        rng.random(300) < 0.2, rng.integers(0, 3, 300), data.labellings["planted"].labels
    )
    data = data.with_labelling(Labelling(name="noisy", labels=noisy, origin="clusterer"))
    step = FCEClusterer(3, random_state=0).fit(data)
    # two bases of 3 labels: 9 vote patterns; the capacity/fairness term splits some
    # (pattern, groups) cells between clusters, predict gives each cell its majority label
    assert (step.predict(data) == step.labels_).mean() > 0.9
    with pytest.raises(NotImplementedError, match="cannot assign new rows"):
        step.predict(make_data(n=50))


def test_predict_without_groups_keeps_the_capacity_term() -> None:
    _, bases, _ = planted(n=200, c=3, m=4, flip=0.3, seed=5)
    est = FairClusteringEnsemble(3, random_state=0).fit(bases)
    rng = np.random.default_rng(5)
    new = rng.integers(-1, 3, size=(20, 4))
    new[:3] = -1  # no base votes: only the capacity term decides
    want = [_brute_new_row(est, new[j], [0]) for j in range(20)]
    np.testing.assert_array_equal(est._closed_form(new, np.zeros((20, 1), int)), want)
    p = est.predict(new)
    sizes = np.bincount(est.labels_, minlength=3)
    assert (p[:3] == sizes.argmin()).all()
