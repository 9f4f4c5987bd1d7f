"""fairness_cce's structural cap: the cluster sizes alone bound it (the proof in
fairaudit.core.counting_audit.structural_cap), so the bias-corrected minimum of detail.bias
never claims a value the sizes rule out."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from fairaudit.core.counting_audit import _bias_detail, structural_cap
from fairaudit.metrics.counting import fairness_cce


@settings(max_examples=300, deadline=None)
@given(arrays(np.int64, st.tuples(st.integers(2, 5), st.integers(2, 6)),
              elements=st.integers(0, 60)))
def test_the_cluster_sizes_bound_fairness_cce(N):
    N = N[N.sum(axis=1) > 0]
    N = N[:, N.sum(axis=0) > 0] if N.size else N
    if N.ndim != 2 or N.shape[0] < 2 or N.shape[1] < 2:
        return
    value = float(fairness_cce(N))
    if not math.isfinite(value):
        return
    cap = structural_cap("fairness_cce", N, value)
    assert cap is not None
    assert value <= cap + 1e-12


def test_hand_computed_cap():
    # two clusters of 30 and 10 rows, two groups: c s_k / n = 1.5 and 0.5 -> cap 0.5
    N = np.array([[15, 5], [15, 5]])
    assert structural_cap("fairness_cce", N, float(fairness_cce(N))) == 0.5
    assert float(fairness_cce(N)) == 0.5  # every cluster has the population's mix
    M = np.array([[20, 0], [10, 10]])  # the same sizes, another mix: below the cap
    assert float(fairness_cce(M)) < 0.5 == structural_cap("fairness_cce", M,
                                                          float(fairness_cce(M)))


def test_no_cap_for_other_metrics_or_another_table():
    N = np.array([[15, 5], [15, 5]])
    assert structural_cap("balance", N, 0.5) is None
    assert structural_cap("fairness_cce", N, 0.9) is None  # not the table of that value


def test_the_corrected_minimum_stays_below_the_cap():
    iv = SimpleNamespace(bias_corrected=SimpleNamespace(value=0.991, people=203.0, cells=6))
    uncapped = _bias_detail(iv, 0.947, (0.84, 1.0))
    capped = _bias_detail(iv, 0.947, (0.84, 1.0), cap=0.949)
    assert uncapped["corrected"] == 0.991 and uncapped["likely_below"]
    assert capped["corrected"] == 0.949 and not capped["likely_below"]
    assert capped["bias"] == 0.947 - 0.949
    # a cap below the estimate (another table) never moves the corrected value below it
    assert _bias_detail(iv, 0.947, (0.84, 1.0), cap=0.9)["corrected"] == 0.947
