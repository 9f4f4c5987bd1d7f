"""Each attribute's bootstrap replicates come from its own random stream (seed, labelling,
attribute): an attribute's interval does not change when other attributes are audited."""

from __future__ import annotations

import numpy as np
import polars as pl

import fairaudit
from fairaudit.core.contingency import attribute_stream, joint_from_frame, resample_attribute


def _frame(n: int = 3000, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame({
        "religious": rng.choice(["1", "2", "3", "4"], n, p=[0.16, 0.36, 0.38, 0.10]),
        "children": rng.choice(["0", "1", "2", "3"], n),
        "educ": rng.choice(["9", "12", "14", "16"], n, p=[0.02, 0.33, 0.36, 0.29]),
        "segment": rng.integers(0, 8, n),
    })


def test_an_attribute_draws_the_same_replicates_whatever_else_is_in_the_joint_table():
    df = _frame()
    alone = joint_from_frame(df, label="segment", sensitive=["religious"])
    both = joint_from_frame(df, label="segment", sensitive=["children", "religious"])
    a = resample_attribute(alone, "religious", 50, attribute_stream(7, "segment", "religious"))
    b = resample_attribute(both, "religious", 50, attribute_stream(7, "segment", "religious"))
    ta = alone.bootstrap_counts("religious", a)
    tb = both.bootstrap_counts("religious", b)
    assert np.array_equal(ta, tb)
    # a multinomial of the attribute's own table: every replicate keeps the total
    assert (ta.sum(axis=(1, 2)) == len(df)).all()
    # another attribute, seed or labelling: another stream
    other = resample_attribute(alone, "religious", 50, attribute_stream(8, "segment", "religious"))
    assert not np.array_equal(alone.bootstrap_counts("religious", other), ta)
    assert not np.array_equal(attribute_stream(7, "segment", "children").integers(1 << 30, size=4),
                              attribute_stream(7, "segment", "religious").integers(1 << 30,
                                                                                   size=4))


def _intervals(run, attribute: str) -> dict[str, tuple[float, float]]:
    return {r["metric"]: tuple(r["ci"]) for r in run.doc["results"]
            if r.get("attribute") == attribute and r.get("ci") is not None}


def test_an_attribute_interval_does_not_change_when_others_are_audited():
    """A new user's trial: `religious` alone gave balance [0.181, 0.774], with `children`
    [0.193, 0.710] (one random stream shared across attributes)."""
    df = _frame()
    alone = fairaudit.audit(df, sensitive="religious", labels="segment", bootstrap=60)
    more = fairaudit.audit(df, sensitive="religious,children,educ", labels="segment",
                           bootstrap=60)
    ci = _intervals(alone, "religious")
    assert ci and "balance" in ci
    assert _intervals(more, "religious") == ci
