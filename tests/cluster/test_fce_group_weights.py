"""FCE's ``group_weights="share"``: each group's counts relative to its size (fairness_CCE's own
quantity), against the paper's ``"count"`` term ||G^T Y||^2."""

from __future__ import annotations

import numpy as np
import pytest

from fairaudit.cluster import FairClusteringEnsemble
from fairaudit.cluster.fce import _encode_groups, fce_objective, group_weight_vector


def planted_small_group(n: int = 600, c: int = 3, m: int = 6, seed: int = 0):
    """Noisy copies of a planted partition z; a small group (about 6 % of the rows) sits almost
    entirely in cluster 0, a large group is spread evenly."""
    rng = np.random.default_rng(seed)
    z = rng.integers(0, c, n)
    bases = np.column_stack(
        [np.where(rng.random(n) < 0.15, rng.integers(0, c, n), z) for _ in range(m)]
    )
    s = np.where((z == 0) & (rng.random(n) < 0.18), 1, 0)
    return z, bases, s


def fairness_cce(labels: np.ndarray, s: np.ndarray, c: int) -> float:
    out = np.inf
    for g in np.unique(s):
        size = (s == g).sum()
        for k in range(c):
            x = c * ((labels == k) & (s == g)).sum() / size
            out = min(out, 0.0 if x == 0 else min(x, 1.0 / x))
    return float(out)


def test_weights_hand_computed() -> None:
    # one attribute, groups of 8 and 2 rows: largest group 8 -> 1, (8/2)^2
    groups = np.array([0] * 8 + [1] * 2)[:, None]
    np.testing.assert_allclose(group_weight_vector(groups, [2], 10, "share"), [1.0, 16.0])
    np.testing.assert_allclose(group_weight_vector(groups, [2], 10, "count"), [1.0, 1.0])
    # two attributes (stacked codes 0-1 and 2-4): each normalised by its own largest group
    g2 = np.column_stack([np.array([0] * 6 + [1] * 4), np.array([2] * 5 + [3] * 3 + [4] * 2)])
    w = group_weight_vector(g2, [2, 3], 10, "share")
    np.testing.assert_allclose(w, [1.0, (6 / 4) ** 2, 1.0, (5 / 3) ** 2, (5 / 2) ** 2])
    assert (w >= 1.0).all()


def test_count_is_the_estimators_default() -> None:
    _, bases, s = planted_small_group(n=200)
    est = FairClusteringEnsemble(3, random_state=0).fit(bases, sensitive=s)
    assert est.group_weights == "count"
    np.testing.assert_array_equal(est.group_weights_, np.ones(2))


@pytest.mark.parametrize("seed", [0, 1])
def test_share_objective_monotone_and_direct(seed: int) -> None:
    _, bases, s = planted_small_group(seed=seed)
    est = FairClusteringEnsemble(3, group_weights="share", max_iter=15, tol=0.0,
                                 random_state=seed).fit(bases, sensitive=s)
    J = [h.objective for h in est.objective_]
    for before, after in zip(J, J[1:], strict=False):
        assert after <= before + 1e-9 * abs(before)
    codes = np.column_stack(
        [np.unique(bases[:, j], return_inverse=True)[1] for j in range(bases.shape[1])]
    )
    groups, sizes = _encode_groups(s, len(bases), "t")
    direct = fce_objective(
        est.embedding_, est.rotation_, est.base_rotations_, est.weights_, est.labels_, codes,
        groups, int(sum(sizes)), 3, est.lambda1, est.lambda2_, est.group_weights_,
    )[0]
    assert direct == pytest.approx(J[-1], rel=1e-9)


def test_weighted_y_step_reaches_coordinatewise_minimum_brute_force() -> None:
    rng = np.random.default_rng(5)
    n, c = 40, 3
    P = rng.normal(scale=0.2, size=(n, c))
    groups = (rng.random(n) < 0.15).astype(np.int64)[:, None]
    labels = rng.integers(0, c, n)
    labels[:c] = np.arange(c)
    lam1, lam2 = 1e-3, 2e-5
    gw = group_weight_vector(groups, [2], n, "share")

    def counts(lab: np.ndarray) -> np.ndarray:
        A = np.zeros((2, c), dtype=np.int64)
        np.add.at(A, (groups[:, 0], lab), 1)
        return A

    def cost(lab: np.ndarray) -> float:
        Y = np.eye(c)[lab]
        return lam1 * np.sum((Y - P) ** 2) + lam2 * np.sum(gw[:, None] * counts(lab) ** 2)

    A = counts(labels)
    sizes = np.bincount(labels, minlength=c)
    before = cost(labels)
    FairClusteringEnsemble(c, max_sweeps=1000)._y_step(P, lam1, lam2, groups, A, sizes, labels, gw)
    after = cost(labels)
    assert after <= before
    np.testing.assert_array_equal(A, counts(labels))
    for i in range(n):
        for b in range(c):
            if b == labels[i] or sizes[labels[i]] == 1:
                continue
            trial = labels.copy()
            trial[i] = b
            assert cost(trial) >= after - 1e-15


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_share_spreads_the_small_group(seed: int) -> None:
    _, bases, s = planted_small_group(seed=seed)
    count = FairClusteringEnsemble(3, random_state=seed).fit(bases, sensitive=s)
    share = FairClusteringEnsemble(3, group_weights="share", random_state=seed).fit(
        bases, sensitive=s
    )
    twin = FairClusteringEnsemble(3, fair=False, group_weights="share", random_state=seed).fit(
        bases, sensitive=s
    )
    f_count, f_share = fairness_cce(count.labels_, s, 3), fairness_cce(share.labels_, s, 3)
    assert f_share > f_count
    assert f_share > fairness_cce(twin.labels_, s, 3)


def test_share_predict_on_training_rows() -> None:
    _, bases, s = planted_small_group(n=400, seed=3)
    est = FairClusteringEnsemble(3, group_weights="share", random_state=0).fit(bases, sensitive=s)
    assert (est.predict(bases, sensitive=s) == est.labels_).mean() > 0.95


def test_bad_group_weights() -> None:
    _, bases, s = planted_small_group(n=100)
    with pytest.raises(ValueError, match="'group_weights' parameter"):
        FairClusteringEnsemble(3, group_weights="size").fit(bases, sensitive=s)


def test_plugin_default_is_share() -> None:
    from fairaudit_builtins.consensus import FCEClusterer

    assert FCEClusterer().group_weights == "share"
