"""fairaudit.gx.expectations: the GX custom expectations, on hand-computed contingency tables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

fx = pytest.importorskip("fairaudit.gx.expectations")
gx = pytest.importorskip("great_expectations")

ROOT = Path(__file__).resolve().parents[1]


def frame_from_table(table: dict[tuple, int], columns: list[str]) -> pd.DataFrame:
    """Rows from {(cluster, *sensitive values): count}, shuffled with a fixed seed."""
    rows = [key for key, n in table.items() for _ in range(n)]
    frame = pd.DataFrame(rows, columns=columns)
    order = np.random.default_rng(0).permutation(len(frame))
    return frame.iloc[order].reset_index(drop=True)


# Hand-computed example (two groups, two clusters, n = 12):
#   cluster 0: F=3, M=1 (size 4);  cluster 1: F=3, M=5 (size 8);  |F| = |M| = 6, r_F = r_M = 1/2
# balance(0) = min(0.5/0.75, 0.25/0.5) = min(2/3, 1/2) = 1/2
# balance(1) = min(0.375/0.5, 0.5/0.625) = min(3/4, 4/5) = 3/4
#   -> min = 0.5, mean = 0.625
# fairness_CCE, c = 2, gamma_i(k) = N[i,k]/|G_i|:
#   cluster 0: F: 2*3/6 = 1 -> 1;  M: 2*1/6 = 1/3 -> min(1/3, 3) = 1/3  -> 1/3
#   cluster 1: F: 2*3/6 = 1 -> 1;  M: 2*5/6 = 5/3 -> min(5/3, 3/5) = 3/5 -> 3/5
#   -> fairness_CCE = 1/3
# plus 2 noise rows (cluster -1) and 1 row with a null sex, all excluded.
TABLE = {(0, "F"): 3, (0, "M"): 1, (1, "F"): 3, (1, "M"): 5, (-1, "F"): 1, (-1, "M"): 1}


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    base = frame_from_table(TABLE, ["cluster", "sex"])
    extra = pd.DataFrame({"cluster": [1], "sex": [None]})
    return pd.concat([base, extra], ignore_index=True)


@pytest.fixture(scope="module")
def batch_definition():
    context = fx.ephemeral_context()
    return (
        context.data_sources.add_pandas(name="test")
        .add_dataframe_asset(name="frame")
        .add_batch_definition_whole_dataframe("whole")
    )


def validate(batch_definition, frame: pd.DataFrame, expectation):
    batch = batch_definition.get_batch(batch_parameters={"dataframe": frame})
    return batch.validate(expectation)


@pytest.mark.parametrize(
    ("aggregate", "min_value", "success", "observed"),
    [
        ("min", 0.5, True, 0.5),
        ("min", 0.51, False, 0.5),
        ("mean", 0.625, True, 0.625),
        ("mean", 0.63, False, 0.625),
    ],
)
def test_balance_pass_fail_on_hand_computed_table(
    batch_definition, frame, aggregate, min_value, success, observed
):
    exp = fx.ExpectClusterBalanceToBeAtLeast(
        cluster_column="cluster", sensitive_columns="sex", min_value=min_value, aggregate=aggregate
    )
    result = validate(batch_definition, frame, exp)
    assert result.success is success
    assert result.result["observed_value"] == pytest.approx(observed)
    details = result.result["details"]
    assert details["balance_min"] == pytest.approx(0.5)
    assert details["balance_mean"] == pytest.approx(0.625)
    assert details["groups"] == ["F", "M"]
    assert details["n_rows"] == 15
    assert details["n_used"] == 12
    assert details["n_noise_excluded"] == 2
    assert details["n_null_excluded"] == 1
    per_cluster = details["per_cluster"]
    assert [c["cluster"] for c in per_cluster] == [0, 1]
    assert [c["size"] for c in per_cluster] == [4, 8]
    assert [c["group_counts"] for c in per_cluster] == [{"F": 3, "M": 1}, {"F": 3, "M": 5}]
    assert [c["balance"] for c in per_cluster] == pytest.approx([0.5, 0.75])


@pytest.mark.parametrize(("min_value", "success"), [(0.33, True), (0.34, False)])
def test_capacity_pass_fail_on_hand_computed_table(batch_definition, frame, min_value, success):
    exp = fx.ExpectClusterCapacityFairnessToBeAtLeast(
        cluster_column="cluster", sensitive_columns=["sex"], min_value=min_value
    )
    result = validate(batch_definition, frame, exp)
    assert result.success is success
    assert result.result["observed_value"] == pytest.approx(1 / 3)
    per_cluster = result.result["details"]["per_cluster"]
    assert [c["fairness_cce"] for c in per_cluster] == pytest.approx([1 / 3, 3 / 5])
    assert per_cluster[0]["group_shares"] == pytest.approx({"F": 0.5, "M": 1 / 6})
    assert per_cluster[1]["group_shares"] == pytest.approx({"F": 0.5, "M": 5 / 6})
    assert result.result["details"]["n_clusters"] == 2


def test_intersection_of_two_columns(batch_definition):
    # Every intersectional group (sex x age) has 2 rows in each of the 2 clusters: every cluster
    # mirrors the population, so balance = 1 and fairness_CCE = 1 (c * gamma = 2 * 1/2 = 1).
    table = {(k, s, a): 2 for k in (0, 1) for s in ("F", "M") for a in ("old", "young")}
    mirrored = frame_from_table(table, ["cluster", "sex", "age"])
    for cls in (fx.ExpectClusterBalanceToBeAtLeast, fx.ExpectClusterCapacityFairnessToBeAtLeast):
        exp = cls(cluster_column="cluster", sensitive_columns=["sex", "age"], min_value=1.0)
        result = validate(batch_definition, mirrored, exp)
        assert result.success, result.result
        assert result.result["observed_value"] == pytest.approx(1.0)
        assert result.result["details"]["groups"] == ["F|old", "F|young", "M|old", "M|young"]
    # Move all "M|young" rows into cluster 0: each attribute alone is still present in both
    # clusters, but the intersection M|young is absent from cluster 1 -> balance(1) = 0.
    table[(0, "M", "young")] = 4
    table[(1, "M", "young")] = 0
    skewed = frame_from_table(table, ["cluster", "sex", "age"])
    both = fx.ExpectClusterBalanceToBeAtLeast(
        cluster_column="cluster", sensitive_columns=["sex", "age"], min_value=0.5
    )
    result = validate(batch_definition, skewed, both)
    assert not result.success
    assert result.result["observed_value"] == 0.0
    # sex alone: cluster 0 has F=4, M=6 (size 10), cluster 1 F=4, M=2 (size 6); r_F = 1/2.
    # balance(0) = min(0.4/0.5, 0.5/0.6) = 0.8; balance(1) = min(0.5/(2/3), (1/3)/0.5) = 2/3
    sex = fx.ExpectClusterBalanceToBeAtLeast(
        cluster_column="cluster", sensitive_columns="sex", min_value=0.5
    )
    result = validate(batch_definition, skewed, sex)
    assert result.success
    assert result.result["observed_value"] == pytest.approx(2 / 3)


def test_three_groups_string_clusters_and_no_noise_label(batch_definition):
    # clusters "a", "b"; groups x, y, z; n = 12, r = (1/2, 1/3, 1/6)
    #   a: x=3, y=2, z=1 (size 6) mirrors the population -> balance 1
    #   b: x=3, y=2, z=1 -> 1.  A cluster literally named -1 is kept when noise_label=None.
    table = {("a", "x"): 3, ("a", "y"): 2, ("a", "z"): 1, ("b", "x"): 3, ("b", "y"): 2}
    table[("b", "z")] = 1
    frame = frame_from_table(table, ["cluster", "g"])
    exp = fx.ExpectClusterBalanceToBeAtLeast(
        cluster_column="cluster", sensitive_columns="g", min_value=1.0
    )
    assert validate(batch_definition, frame, exp).success
    numeric = frame_from_table({(0, "x"): 2, (0, "y"): 2, (-1, "x"): 2, (-1, "y"): 0}, ["c", "g"])
    keep = fx.ExpectClusterBalanceToBeAtLeast(
        cluster_column="c", sensitive_columns="g", min_value=0.0, noise_label=None
    )
    result = validate(batch_definition, numeric, keep)
    # cluster -1 kept: it holds only x -> balance 0
    assert result.result["details"]["n_noise_excluded"] == 0
    assert [c["cluster"] for c in result.result["details"]["per_cluster"]] == [-1, 0]
    assert result.result["details"]["per_cluster"][0]["balance"] == 0.0


def test_no_rows_left_fails_with_a_note(batch_definition):
    frame = pd.DataFrame({"cluster": [-1, -1], "sex": ["F", "M"]})
    exp = fx.ExpectClusterBalanceToBeAtLeast(
        cluster_column="cluster", sensitive_columns="sex", min_value=0.0
    )
    result = validate(batch_definition, frame, exp)
    assert not result.success
    assert result.result["observed_value"] is None
    assert "no rows left" in result.result["details"]["note"]


def test_missing_column_is_reported_by_gx(batch_definition, frame):
    exp = fx.ExpectClusterBalanceToBeAtLeast(
        cluster_column="cluster", sensitive_columns=["sex", "race"], min_value=0.5
    )
    result = validate(batch_definition, frame, exp)
    assert not result.success
    info = result.exception_info
    messages = (
        [v["exception_message"] for v in info.values()]
        if "raised_exception" not in info
        else [info["exception_message"]]
    )
    assert any("['race']" in m for m in messages)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"min_value": 1.5}, "'min_value' parameter must be a number in \\[0, 1\\]; got 1.5"),
        ({"min_value": 0.5, "aggregate": "max"}, "aggregate"),
        ({"min_value": 0.5, "sensitive_columns": []}, "'sensitive_columns' parameter"),
    ],
)
def test_invalid_parameters(kwargs, match):
    params = {"cluster_column": "cluster", "sensitive_columns": "sex", **kwargs}
    with pytest.raises(ValueError, match=match):
        fx.ExpectClusterBalanceToBeAtLeast(**params)


def test_result_is_json_serialisable(batch_definition, frame):
    exp = fx.ExpectClusterCapacityFairnessToBeAtLeast(
        cluster_column="cluster", sensitive_columns="sex", min_value=0.1
    )
    result = validate(batch_definition, frame, exp)
    payload = json.loads(json.dumps(result.to_json_dict()))
    assert payload["result"]["observed_value"] == pytest.approx(1 / 3)
    assert (
        payload["expectation_config"]["type"] == "expect_cluster_capacity_fairness_to_be_at_least"
    )


def test_suite_with_validation_definition(frame):
    context = fx.ephemeral_context()
    batch_definition = (
        context.data_sources.add_pandas(name="s")
        .add_dataframe_asset(name="a")
        .add_batch_definition_whole_dataframe("w")
    )
    suite = context.suites.add(gx.ExpectationSuite(name="fair"))
    suite.add_expectation(
        fx.ExpectClusterBalanceToBeAtLeast(
            cluster_column="cluster", sensitive_columns="sex", min_value=0.4
        )
    )
    suite.add_expectation(
        fx.ExpectClusterCapacityFairnessToBeAtLeast(
            cluster_column="cluster", sensitive_columns="sex", min_value=0.4
        )
    )
    definition = context.validation_definitions.add(
        gx.ValidationDefinition(name="v", data=batch_definition, suite=suite)
    )
    result = definition.run(batch_parameters={"dataframe": frame})
    outcome = {r.expectation_config.type: r.success for r in result.results}
    assert outcome == {
        "expect_cluster_balance_to_be_at_least": True,  # 0.5 >= 0.4
        "expect_cluster_capacity_fairness_to_be_at_least": False,  # 1/3 < 0.4
    }
    assert result.success is False


# --------------------------------------------------------------------------------------------
# column expectations
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "unexpected"),
    [
        ([0, 1, 2, -1], 0),
        ([0.0, 1.0, np.nan, 2.0], 0),  # NaN is null: ignored
        ([0.0, 1.5, 2.0, np.inf], 2),
        (pd.Series(["1", "a", None, 3], dtype=object), 2),
        ([True, False, True, True], 0),
    ],
)
def test_integral(batch_definition, values, unexpected):
    frame = pd.DataFrame({"v": values})
    result = validate(batch_definition, frame, fx.ExpectColumnValuesToBeIntegral(column="v"))
    assert result.result["unexpected_count"] == unexpected
    assert result.success is (unexpected == 0)


@pytest.mark.parametrize(
    ("values", "unexpected"),
    [
        ([0.5, 1.0, -2.0], 0),
        ([0.5, np.nan, 1.0], 0),  # NaN is null for GX: pair with ExpectColumnValuesToNotBeNull
        ([0.5, np.inf, -np.inf], 2),
        ([1, 2, 3], 0),
    ],
)
def test_finite(batch_definition, values, unexpected):
    frame = pd.DataFrame({"v": values})
    result = validate(batch_definition, frame, fx.ExpectColumnValuesToBeFinite(column="v"))
    assert result.result["unexpected_count"] == unexpected
    assert result.success is (unexpected == 0)


def test_ephemeral_context_has_analytics_and_progress_bars_off():
    context = fx.ephemeral_context()
    assert context.config.analytics_enabled is False
    assert context.progress_bars.globally is False
    assert context.progress_bars.metric_calculations is False
    assert os.environ["GX_ANALYTICS_ENABLED"] == "False"


# --------------------------------------------------------------------------------------------
# registration is lazy; the documented example runs
# --------------------------------------------------------------------------------------------


def test_import_fairaudit_registers_nothing():
    script = textwrap.dedent(
        """
        import sys
        import fairaudit
        assert "great_expectations" not in sys.modules
        assert "fairaudit.gx.expectations" not in sys.modules
        from great_expectations.expectations.registry import _registered_expectations
        assert "expect_cluster_balance_to_be_at_least" not in _registered_expectations
        import fairaudit.gx.expectations
        assert "expect_cluster_balance_to_be_at_least" in _registered_expectations
        assert "expect_cluster_capacity_fairness_to_be_at_least" in _registered_expectations
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr


def test_example_script_runs(tmp_path: Path):
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "gx_suite_example.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr  # the suite fails on purpose: a failing step
    assert proc.stderr == ""
    lines = proc.stdout.splitlines()
    # hand-computed in the example's comments / docs/great_expectations.md
    assert any(
        line.startswith("PASS  expect_cluster_balance_to_be_at_least") and "observed=0.5" in line
        for line in lines
    )
    assert any(
        line.startswith("FAIL  expect_cluster_capacity_fairness_to_be_at_least")
        and "observed=0.333" in line
        for line in lines
    )
    assert lines[-1] == "suite success: False"
    assert list(tmp_path.iterdir()) == []


def test_configuration_round_trips_through_a_suite_dict():
    exp = fx.ExpectClusterBalanceToBeAtLeast(
        cluster_column="k", sensitive_columns=["g", "h"], min_value=0.5, aggregate="mean"
    )
    config = exp.configuration.to_json_dict()
    assert config["type"] == "expect_cluster_balance_to_be_at_least"
    assert config["kwargs"] == {
        "cluster_column": "k",
        "sensitive_columns": ["g", "h"],
        "min_value": 0.5,
        "aggregate": "mean",
    }
    suite = gx.ExpectationSuite(name="s", expectations=[exp])
    restored = gx.ExpectationSuite(**json.loads(json.dumps(suite.to_json_dict())))
    assert restored.expectations[0] == exp
