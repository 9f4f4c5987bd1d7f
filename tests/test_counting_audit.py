"""The host's counting step: small groups left out, every interval contains its estimate, the
interval method is named."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import fairaudit


def _table(seed: int = 0, n: int = 3000, tiny: int = 5) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    race = rng.choice(["a", "b", "c"], size=n, p=[0.6, 0.3, 0.1]).astype(object)
    race[:tiny] = "tiny"  # a group below --min-cell 10
    sex = rng.choice(["f", "m"], size=n)
    seg = rng.integers(0, 3, size=n)
    return pl.DataFrame({"race": race, "sex": sex, "segment": seg})


def test_small_group_is_left_out_and_listed():
    run = fairaudit.audit(_table(), sensitive=["race", "sex"], labels="segment")
    res = run.results_for(metric="balance", attribute="race")[0]
    tiny = int((_table()["race"] == "tiny").sum())
    assert res["detail"]["too_small"] == {"groups": ["tiny"], "min_cell": 10, "rows": tiny}
    assert any("too small to judge" in n and "tiny" in n for n in res["notes"])
    # the balance is that of the three large groups alone
    df = _table().filter(pl.col("race") != "tiny")
    N = np.array([[int(((df["race"] == g) & (df["segment"] == k)).sum()) for k in range(3)]
                  for g in ["a", "b", "c"]])
    assert res["value"] == fairaudit.metrics.balance_min(N)
    # the intersection: every race|sex combination of the tiny group is left out
    inter = run.results_for(metric="balance", attribute="race|sex")[0]
    small = inter["detail"]["too_small"]["groups"]
    assert small and all(g.startswith("tiny|") for g in small)
    # --min-cell 1 judges every group
    run0 = fairaudit.audit(_table(), sensitive=["race"], labels="segment", min_cell=1)
    assert "too_small" not in run0.results_for(metric="balance", attribute="race")[0]["detail"]


def test_min_cell_counts_the_people_in_clusters_not_noise_rows():
    """A group of 12 rows, 4 of them noise (-1): the metrics would judge 8 people, below
    --min-cell 10, so the group is too small (noise rows counted towards it before)."""
    df = _table(tiny=0).with_columns(pl.col("race").cast(pl.String))
    rare = pl.DataFrame({"race": ["rare"] * 12, "sex": ["f", "m"] * 6,
                         "segment": [-1] * 4 + [0, 1, 2, 0, 1, 2, 0, 1]})
    df = pl.concat([df, rare.with_columns(pl.col("segment").cast(df["segment"].dtype))])
    run = fairaudit.audit(df, sensitive=["race"], labels="segment")
    res = run.results_for(metric="balance", attribute="race")[0]
    assert res["detail"]["too_small"]["groups"] == ["rare"]
    assert res["detail"]["too_small"]["rows"] == 12  # the rows left out, noise included
    run8 = fairaudit.audit(df, sensitive=["race"], labels="segment", min_cell=8)
    assert "too_small" not in run8.results_for(metric="balance", attribute="race")[0]["detail"]


def test_every_interval_contains_its_estimate_and_names_its_method():
    for seed in range(3):
        run = fairaudit.audit(_table(seed, n=800, tiny=12), sensitive=["race", "sex"],
                              labels="segment")
        counted = [r for r in run.results if r["auditor"] in ("balance", "distribution",
                                                                 "capacity")]
        assert counted
        for r in counted:
            if r["ci"] is None:
                continue
            lo, hi = r["ci"]
            assert lo <= r["value"] <= hi, r
            assert r["detail"]["interval"]["method"] in (
                "score-intersection", "score-max-bootstrap", "bootstrap-triangle",
                "bootstrap-triangle-max", "bootstrap-percentile")
        methods = {r["metric"]: r["detail"]["interval"]["method"] for r in counted if r["ci"]}
        assert methods["balance"] == "score-max-bootstrap"
        assert methods["fairness_cce"] == "score-max-bootstrap"
        assert methods["balance_prime"] == "score-max-bootstrap"
        assert methods["balance_mean"] == "score-intersection"
        assert methods["wd"] == "bootstrap-triangle"
        assert methods["wd_max"] == "bootstrap-triangle-max"


def test_ci_method_conservative_keeps_the_bonferroni_intervals():
    """--ci-method conservative (chain: ci_method, API: ci_method=) gives today's intervals,
    which contain the calibrated ones' lower end and reach at least as high."""
    df = _table(1, n=3000, tiny=40)
    new = fairaudit.audit(df, sensitive=["race"], labels="segment")
    old = fairaudit.audit(df, sensitive=["race"], labels="segment", ci_method="conservative")
    assert old.doc["chain"]["options"]["ci_method"] == "conservative"
    for metric in ("balance", "fairness_cce"):
        n = new.results_for(metric=metric, attribute="race")[0]
        o = old.results_for(metric=metric, attribute="race")[0]
        assert o["detail"]["interval"]["method"] == "score-intersection"
        assert n["value"] is not None
        assert n["ci"][0] == pytest.approx(o["ci"][0])  # same pointwise lower end
        assert n["ci"][1] <= o["ci"][1] + 1e-12


def test_fewer_than_two_judgeable_groups_gives_nan_with_a_reason():
    df = _table(tiny=0)
    df = df.with_columns(
        pl.when(pl.arange(0, df.height) < 6).then(pl.lit("rare")).otherwise(pl.lit("a"))
        .alias("race")
    )
    run = fairaudit.audit(df, sensitive=["race"], labels="segment")
    res = run.results_for(metric="balance", attribute="race")[0]
    assert res["value"] is None and res["ci"] is None
    assert any("too little data" in n for n in res["notes"])
    assert res["detail"]["too_small"]["groups"] == ["rare"]
    assert math.isnan(run.results_for(metric="wd", attribute="race")[0]["value"] or math.nan)


def test_bootstrap_off_means_no_intervals():
    run = fairaudit.audit(_table(), sensitive=["race"], labels="segment", bootstrap=0)
    assert all(r["ci"] is None for r in run.results)


def _tied(seed: int = 3, n: int = 3000, k: int = 20) -> pl.DataFrame:
    """Segments drawn independently of the groups (every cell's true ratio 1): the plug-in
    balance is the smallest of 2 k noisy ratios and lies well below 1."""
    rng = np.random.default_rng(seed)
    return pl.DataFrame({"sex": rng.choice(["f", "m"], size=n, p=[0.2, 0.8]),
                         "segment": rng.integers(0, k, size=n)})


def test_the_minimum_s_bias_is_in_the_json_and_its_sentence():
    """Issue 40: beside the plug-in (the headline value), detail.bias carries the plug-in
    corrected for its bootstrap median bias and the cells behind it (schema-valid), and the
    explanation says when the plug-in is likely below the population value."""
    from fairaudit.ops.audit_json import schema_problem

    run = fairaudit.audit(_tied(), sensitive=["sex"], labels="segment")
    assert schema_problem(run.doc) is None
    for metric in ("balance", "fairness_cce", "balance_prime"):
        res = run.results_for(metric=metric, attribute="sex")[0]
        bias = res["detail"]["bias"]
        assert bias["method"] == "bootstrap-median-bias"
        assert res["value"] <= bias["corrected"] <= res["ci"][1]
        assert bias["bias"] == pytest.approx(res["value"] - bias["corrected"])
        assert bias["cells"] >= 2 and bias["people"] > 0
    res = run.results_for(metric="balance", attribute="sex")[0]
    assert res["detail"]["bias"]["likely_below"]
    text = res["explanation"]
    assert "likely below the true balance" in text and "bias-corrected" in text, text
    assert f"smallest of {res['detail']['bias']['cells']} ratios" in text, text


def test_the_bias_corrected_value_stays_inside_the_reported_interval():
    """A plug-in near 1 (labels drawn at random) whose bootstrap correction passes the
    metric's range: the corrected value is the reported interval's upper end at most (the
    twins golden said "balance 0.998 ... bias-corrected 1.051" before), and a correction
    that small is not "likely below"."""
    from types import SimpleNamespace

    from fairaudit.core.counting_audit import _bias_detail
    from fairaudit.metrics.calibrate import BiasCorrected

    iv = SimpleNamespace(bias_corrected=BiasCorrected(value=1.051, cells=6, people=203.0))
    bias = _bias_detail(iv, 0.998, (0.909, 1.0))
    assert bias["corrected"] == 1.0 and bias["bias"] == pytest.approx(-0.002)
    assert not bias["likely_below"]
    rng = np.random.default_rng(11)
    df = pl.DataFrame({"sex": rng.choice(["f", "m"], size=3000, p=[0.4, 0.6]),
                       "segment": rng.integers(0, 3, size=3000)})
    run = fairaudit.audit(df, sensitive=["sex"], labels="segment")
    for metric in ("balance", "fairness_cce", "balance_prime"):
        res = run.results_for(metric=metric, attribute="sex")[0]
        bias = res["detail"].get("bias")
        if bias is not None:
            assert res["value"] <= bias["corrected"] <= res["ci"][1] <= 1.0, (metric, res)


def test_no_bias_statement_without_a_calibration_or_where_one_cell_sets_the_minimum():
    run = fairaudit.audit(_tied(), sensitive=["sex"], labels="segment",
                          ci_method="conservative")
    assert "bias" not in run.results_for(metric="balance", attribute="sex")[0]["detail"]
    # one segment holds few of the women: the plug-in is its cell alone, not biased
    rng = np.random.default_rng(4)
    sex = rng.choice(["f", "m"], size=4000, p=[0.3, 0.7])
    seg = np.where(sex == "f", rng.choice(4, size=4000, p=[0.1, 0.3, 0.3, 0.3]),
                   rng.integers(0, 4, size=4000))
    one = fairaudit.audit(pl.DataFrame({"sex": sex, "segment": seg}), sensitive=["sex"],
                          labels="segment")
    res = one.results_for(metric="balance", attribute="sex")[0]
    assert not res["detail"]["bias"]["likely_below"]
    assert "likely below" not in res["explanation"]
