"""Scorers of (labels, sensitive): hand-computed cases, properties and scikit-learn use."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairaudit.metrics import (
    balance_score,
    ed_score,
    fairness_cce_score,
    fairness_scorer,
    wd_score,
)

# 2 clusters x 2 groups. Rows: cluster 0 = a a a b (4 rows), cluster 1 = a b b b b b (6 rows).
LABELS = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1, 1])
GROUPS = np.array(["a", "a", "a", "b", "a", "b", "b", "b", "b", "b"])
# P_X = (0.4, 0.6); P_0 = (0.75, 0.25); P_1 = (1/6, 5/6)


def test_balance_by_hand():
    # cluster 0: a: min(.4/.75, .75/.4) = .5333; b: min(.6/.25, .25/.6) = .41667 -> .41667
    # cluster 1: a: (1/6)/.4 = .41667; b: .6/(5/6) = .72 -> .41667
    assert balance_score(LABELS, GROUPS) == pytest.approx(0.25 / 0.6)


def test_ed_and_wd_by_hand():
    d0 = math.hypot(0.75 - 0.4, 0.25 - 0.6)
    d1 = math.hypot(1 / 6 - 0.4, 5 / 6 - 0.6)
    assert ed_score(LABELS, GROUPS) == pytest.approx((4 * d0 + 6 * d1) / 10)
    w0 = 0.5 * (0.35 + 0.35)
    w1 = 0.5 * (0.4 - 1 / 6 + 5 / 6 - 0.6)
    assert wd_score(LABELS, GROUPS) == pytest.approx((4 * w0 + 6 * w1) / 10)


def test_fairness_cce_by_hand():
    # gamma_a = (3/4, 1/4), gamma_b = (1/6, 5/6); c = 2
    vals = [2 * 3 / 4, 2 * 1 / 4, 2 * 1 / 6, 2 * 5 / 6]
    assert fairness_cce_score(LABELS, GROUPS) == pytest.approx(min(min(v, 1 / v) for v in vals))


def test_noise_rows_are_left_out_and_all_noise_is_an_error():
    lab = np.r_[LABELS, -1, -1]
    grp = np.concatenate([GROUPS, ["a", "a"]])
    # dropping the noise rows leaves the table above
    assert ed_score(lab, grp) == pytest.approx(ed_score(LABELS, GROUPS))
    with pytest.raises(ValueError, match="noise"):
        ed_score(np.full(3, -1), np.array(["a", "b", "a"]))
    with pytest.raises(ValueError, match="sensitive"):
        ed_score(LABELS, GROUPS[:-1])


def test_perfectly_proportional_clustering():
    lab = np.array([0, 0, 1, 1])
    grp = np.array(["a", "b", "a", "b"])
    assert balance_score(lab, grp) == 1.0
    assert ed_score(lab, grp) == 0.0
    assert wd_score(lab, grp) == 0.0
    assert fairness_cce_score(lab, grp) == 1.0


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(1, 5), g=st.integers(1, 4))
def test_properties(seed, k, g):
    rng = np.random.default_rng(seed)
    lab = rng.integers(0, k, 60)
    grp = rng.integers(0, g, 60)
    for f, lo, hi in ((balance_score, 0, 1), (fairness_cce_score, 0, 1), (wd_score, 0, 1)):
        assert lo <= f(lab, grp) <= hi + 1e-12
    assert 0 <= ed_score(lab, grp) <= math.sqrt(2) + 1e-12
    # relabelling clusters changes nothing
    perm = rng.permutation(k)
    for f in (balance_score, ed_score, wd_score, fairness_cce_score):
        assert f(perm[lab], grp) == pytest.approx(f(lab, grp))


def test_scorer_with_grid_search():
    from sklearn.model_selection import GridSearchCV

    from fairaudit.cluster import FairFuzzyCMeans

    rng = np.random.default_rng(0)
    X = rng.random((300, 2))
    s = (rng.random(300) < 0.15 + 0.7 * X[:, 0]).astype(int)
    scorer = fairness_scorer("ed")
    assert scorer.__name__ == "neg_ed_scorer"
    est = FairFuzzyCMeans(2, random_state=0).fit(X, sensitive=s)
    assert scorer(est, X, s) == pytest.approx(-ed_score(est.predict(X), s))
    grid = GridSearchCV(
        FairFuzzyCMeans(2, random_state=0), {"fair": [False, True]}, scoring=scorer, cv=3
    ).fit(X, s, sensitive=s)
    assert grid.best_params_ == {"fair": True}
    with pytest.raises(ValueError, match="metric"):
        fairness_scorer("accuracy")
