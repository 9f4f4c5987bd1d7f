"""Confidence intervals never leave the metric's declared range (balance, CCE family in [0, 1];
Ed in [0, sqrt 2]): the true value cannot, so neither may the interval (found on UCI Student
Performance: balance [0.86, 1.06])."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from fairaudit_builtins.auditors import BalanceAuditor, CapacityAuditor, DistributionAuditor

import fairaudit

RANGES = {m.name: m.range for cls in (BalanceAuditor, DistributionAuditor, CapacityAuditor)
          for m in cls.metrics}


@pytest.mark.parametrize("seed", range(4))
def test_intervals_stay_in_the_metric_range(seed):
    rng = np.random.default_rng(seed)
    n = 600
    sex = rng.choice(["F", "M"], size=n)
    area = rng.choice(["U", "R"], size=n, p=[0.7, 0.3])
    seg = rng.integers(0, 3, size=n)  # a fair segmentation: balance near 1
    df = pl.DataFrame({"sex": sex, "area": area, "segment": seg})
    run = fairaudit.audit(df, sensitive=["sex", "area"], labels="segment", bootstrap=100)
    checked = 0
    for r in run.doc["results"]:
        rng_ = RANGES.get(r["metric"])
        if rng_ is None or r.get("ci") is None or r.get("value") is None:
            continue
        lo, hi = r["ci"]
        bottom, top = (-np.inf if rng_[0] is None else rng_[0]), (np.inf if rng_[1] is None
                                                                 else rng_[1])  # open ends
        assert bottom <= lo <= r["value"] <= hi <= top, (r["metric"], r["ci"])
        checked += 1
    assert checked > 20
