"""FCE ``lambda2="auto"``: the weight is raised (x3, x9, ...) until the consensus is strictly
fairer (fairness_CCE) than the unfair consensus from the same start; otherwise the unfair
consensus is returned and said (issue 13)."""

from __future__ import annotations

import numpy as np
import pytest

from fairaudit.cluster import FairClusteringEnsemble
from fairaudit.cluster.fce import LAMBDA2_FACTORS
from fairaudit.metrics import fairness_cce_score


def _bases(seed: int, n: int = 400, agree: float = 0.95):
    """Base labellings that mostly agree on a split correlated with the group."""
    rng = np.random.default_rng(seed)
    s = (rng.random(n) < 0.35).astype(int)
    truth = np.where(rng.random(n) < np.where(s == 1, 0.8, 0.3), 1, 0)
    bases = []
    for _ in range(5):
        lab = truth.copy()
        flip = rng.random(n) > agree
        lab[flip] = 1 - lab[flip]
        bases.append(lab)
    return np.column_stack(bases), s


@pytest.mark.parametrize("seed", range(6))
def test_auto_weight_is_strictly_fairer_or_the_twin(seed):
    B, s = _bases(seed)
    fair = FairClusteringEnsemble(2, random_state=seed).fit(B, sensitive=s)
    twin = FairClusteringEnsemble(2, random_state=seed, fair=False).fit(B, sensitive=s)
    f, t = fairness_cce_score(fair.labels_, s), fairness_cce_score(twin.labels_, s)
    if fair.fair_applied_:
        assert f > t
        assert fair.lambda2_ in fair.lambda2_tried_
        assert len(fair.lambda2_tried_) <= len(LAMBDA2_FACTORS)
    else:
        np.testing.assert_array_equal(fair.labels_, twin.labels_)
        assert fair.lambda2_ == 0.0 and len(fair.lambda2_tried_) == len(LAMBDA2_FACTORS)


def test_escalation_reaches_a_fairer_consensus_on_a_unanimous_unfair_vote():
    # every base votes the same group-correlated split: the paper-scaled weight alone does not
    # override it; a larger multiple does
    wins = 0
    for seed in range(4):
        B, s = _bases(seed, agree=1.0)
        fair = FairClusteringEnsemble(2, random_state=seed).fit(B, sensitive=s)
        twin = FairClusteringEnsemble(2, random_state=seed, fair=False).fit(B, sensitive=s)
        wins += fairness_cce_score(fair.labels_, s) > fairness_cce_score(twin.labels_, s)
    assert wins == 4


def test_explicit_lambda2_is_not_escalated():
    B, s = _bases(0)
    est = FairClusteringEnsemble(2, random_state=0, lambda2=1e-9).fit(B, sensitive=s)
    assert est.lambda2_ == 1e-9 and est.lambda2_tried_ == ()
