"""Input checks on good and bad frames: the host's native checks (fairaudit.core.checks) and the
same checks through a real ephemeral GX context (fairaudit.gx.checks). Every case runs through
both, and the two must give equal results (GX is the oracle of the native evaluation)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from fairaudit.core import checks as native_checks
from fairaudit.core.checks import ERROR, WARNING, CheckResult
from fairaudit.gx import checks as gx_checks

ROOT = Path(__file__).resolve().parents[1]


def make_frame(n: int = 200, seed: int = 0) -> pl.DataFrame:
    """A clean frame: two sensitive columns, integer labels, two numeric features, one text."""
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "gender": rng.choice(["F", "M"], size=n).tolist(),
            "race": rng.choice(["a", "b", "c"], size=n).tolist(),
            "segment": rng.integers(0, 4, size=n),
            "income": rng.normal(50.0, 10.0, size=n),
            "age": rng.integers(18, 90, size=n),
            "city": rng.choice(["x", "y"], size=n).tolist(),
        }
    )


def counts_of(frame: pl.DataFrame, sensitive: list[str]) -> dict[str, dict[str, int]]:
    """Exact group counts as the host computes them (per attribute and the intersection)."""
    out: dict[str, dict[str, int]] = {}
    for column in sensitive:
        out[column] = dict(Counter(v for v in frame[column].to_list() if v is not None))
    if len(sensitive) > 1:
        keys = zip(*(frame[c].to_list() for c in sensitive), strict=True)
        out["|".join(sensitive)] = dict(
            Counter("|".join(k) for k in keys if all(v is not None for v in k))
        )
    return out


@pytest.fixture(params=["native", "gx"], autouse=True)
def implementation(request, monkeypatch):
    """Every test runs twice: native checks, then GX; both must agree (compared in _agree)."""
    monkeypatch.setitem(_IMPL, "name", request.param)
    return request.param


_IMPL = {"name": "native"}


def run_input_checks(sample, **kwargs):
    """The implementation under test; on the GX run, also assert the native one agrees."""
    if _IMPL["name"] == "native":
        return native_checks.run_input_checks(sample, **kwargs)
    via_gx = gx_checks.run_input_checks(sample, **kwargs)
    assert native_checks.run_input_checks(sample, **kwargs) == via_gx
    return via_gx


def run(frame: pl.DataFrame, **overrides):
    sensitive = overrides.pop("sensitive", ["gender", "race"])
    kwargs = dict(
        sensitive=sensitive,
        labels="segment",
        features=["income", "age", "city"],
        group_counts=overrides.pop("group_counts", None)
        or counts_of(frame, [s for s in sensitive if s in frame.columns]),
        min_cell=5,
        n_rows=frame.height,
    )
    kwargs.update(overrides)
    return run_input_checks(frame, **kwargs)


def by_name(results) -> dict[str, CheckResult]:
    names = [r.name for r in results]
    assert len(names) == len(set(names)), "check names must be unique"
    return {r.name: r for r in results}


def failing(results) -> dict[str, CheckResult]:
    return {r.name: r for r in results if not r.success}


# --------------------------------------------------------------------------------------------
# good frame
# --------------------------------------------------------------------------------------------


def test_good_frame_passes_every_check_in_a_fixed_order():
    frame = make_frame()
    results = run(frame)
    assert all(isinstance(r, CheckResult) for r in results)
    assert failing(results) == {}
    assert [r.name for r in results] == [
        "table_not_empty",
        "sensitive_exists[gender]",
        "sensitive_not_null[gender]",
        "sensitive_groups[gender]",
        "sensitive_not_id[gender]",
        "group_min_cell[gender]",
        "sensitive_names_distinct[gender]",
        "sensitive_exists[race]",
        "sensitive_not_null[race]",
        "sensitive_groups[race]",
        "sensitive_not_id[race]",
        "group_min_cell[race]",
        "sensitive_names_distinct[race]",
        "group_min_cell[gender|race]",
        "labels_exists[segment]",
        "labels_integral[segment]",
        "feature_exists[income]",
        "feature_not_nan[income]",
        "feature_finite[income]",
        "feature_exists[age]",
        "feature_not_nan[age]",
        "feature_finite[age]",
        "feature_exists[city]",  # text feature: exists, but no numeric checks
    ]
    checks = by_name(results)
    assert checks["sensitive_exists[gender]"].expectation == "expect_column_to_exist"
    assert checks["sensitive_not_null[gender]"].expectation == (
        "expect_column_values_to_not_be_null"
    )
    assert checks["labels_integral[segment]"].expectation == "expect_column_values_to_be_integral"
    assert checks["feature_finite[income]"].expectation == "expect_column_values_to_be_finite"
    assert checks["group_min_cell[race]"].severity == WARNING
    assert checks["sensitive_groups[race]"].severity == ERROR
    # the numbers are in the text
    assert "'race' has 3 groups" in checks["sensitive_groups[race]"].observed
    assert f"in {frame.height:,} rows" in checks["sensitive_groups[race]"].observed


def test_results_are_deterministic_and_json_serialisable():
    frame = make_frame()
    first = run(frame)
    second = run(frame)
    assert first == second
    payload = json.loads(json.dumps([r.to_json() for r in first]))
    assert payload[1] == {
        "name": "sensitive_exists[gender]",
        "expectation": "expect_column_to_exist",
        "column": "gender",
        "success": True,
        "severity": "error",
        "observed": "sensitive column 'gender' is present",
        "expected": "sensitive column 'gender' exists",
    }


def test_every_message_names_its_column():
    results = run(make_frame())
    for r in results:
        if r.column is not None:
            assert repr(r.column) in r.observed, r
            assert repr(r.column) in r.expected, r


def test_categorical_and_enum_columns_convert_without_pyarrow():
    frame = make_frame().with_columns(
        pl.col("gender").cast(pl.Categorical),
        pl.col("race").cast(pl.Enum(["a", "b", "c"])),
    )
    assert failing(run(frame)) == {}


def test_pandas_sample_is_accepted():
    frame = make_frame()
    results = run_input_checks(
        _pandas(frame),
        sensitive=["gender"],
        labels=None,
        features=[],
        group_counts=counts_of(frame, ["gender"]),
        min_cell=5,
        n_rows=frame.height,
    )
    assert failing(results) == {}


def _pandas(frame: pl.DataFrame):
    import pandas as pd

    return pd.DataFrame({c: frame[c].to_list() for c in frame.columns})


# --------------------------------------------------------------------------------------------
# bad frames: each asserts the failing check and that the message names the culprit
# --------------------------------------------------------------------------------------------


def test_missing_sensitive_column():
    frame = make_frame().drop("race")
    bad = failing(run(frame, group_counts=counts_of(frame, ["gender"])))
    assert set(bad) == {"sensitive_exists[race]"}
    assert bad["sensitive_exists[race]"].severity == ERROR
    assert "'race'" in bad["sensitive_exists[race]"].observed
    assert "missing" in bad["sensitive_exists[race]"].observed


def test_all_null_sensitive_column():
    frame = make_frame().with_columns(pl.lit(None, dtype=pl.String).alias("race"))
    results = run(frame, group_counts={"gender": counts_of(frame, ["gender"])["gender"]})
    bad = failing(results)
    check = bad["sensitive_not_null[race]"]
    assert check.severity == ERROR
    assert check.observed == "'race': 200 of 200 sampled rows are null (100.0%)"
    assert check.expected == "'race': at most 5.0% null values"
    # counted on the sample (no group counts given): zero groups
    assert "'race' has 0 groups in the 200-row sample" in bad["sensitive_groups[race]"].observed


@pytest.mark.parametrize(("n_null", "ok"), [(10, True), (11, False)])
def test_null_fraction_threshold_is_inclusive(n_null: int, ok: bool):
    frame = make_frame()  # 200 rows: 10 nulls = 5.0% (allowed), 11 = 5.5%
    gender = frame["gender"].to_list()
    gender[:n_null] = [None] * n_null
    frame = frame.with_columns(pl.Series("gender", gender))
    check = by_name(run(frame))["sensitive_not_null[gender]"]
    assert check.success is ok
    assert f"{n_null} of 200 sampled rows are null" in check.observed


def test_sensitive_column_with_one_group():
    frame = make_frame().with_columns(pl.lit("F").alias("gender"))
    bad = failing(run(frame))
    check = bad["sensitive_groups[gender]"]
    assert check.severity == ERROR
    assert check.observed == "'gender' has 1 group ('F') in 200 rows"
    assert "at least 2 groups" in check.expected


def test_id_like_sensitive_column_is_refused_with_a_hint():
    frame = make_frame().with_columns(pl.Series("race", [f"id{i}" for i in range(200)]))
    bad = failing(run(frame, sensitive=["race"]))
    check = bad["sensitive_not_id[race]"]
    assert check.severity == ERROR
    assert "'race' has 200 distinct values in 200 rows (100.0%)" in check.observed
    assert "probably an ID" in check.observed
    assert "at most 100 groups" in check.expected
    # the group names of an ID-like column are identifiers: the small-cell warning omits them
    cells = bad["group_min_cell[race]"]
    assert cells.observed == (
        "'race': 200 of 200 groups have fewer than 5 rows: "
        "names not listed (the attribute looks like an ID)"
    )
    assert "id1" not in cells.observed


def test_id_like_rule_caps_groups_at_ten_thousand():
    # 10,001 groups in a million rows is under 50% of rows but over the absolute cap;
    # the counts come from the full data, the sample only has to hold the column.
    frame = make_frame(n=50)
    counts = {"race": {f"g{i}": 100 for i in range(10_001)}}
    counts["gender"] = counts_of(frame, ["gender"])["gender"]
    check = by_name(run(frame, group_counts=counts, n_rows=1_000_100))["sensitive_not_id[race]"]
    assert not check.success
    assert "10,001 distinct values" in check.observed
    assert "at most 10,000 groups" in check.expected
    ok = by_name(run(frame, group_counts=counts | {"race": {"a": 1, "b": 2}}, n_rows=10**6))
    assert ok["sensitive_not_id[race]"].success


def test_binary_attribute_is_never_id_like_even_on_tiny_data():
    frame = pl.DataFrame({"gender": ["F", "M", "F"], "segment": [0, 1, 0]})
    results = run_input_checks(
        frame,
        sensitive=["gender"],
        labels="segment",
        features=[],
        group_counts={"gender": {"F": 2, "M": 1}},
        min_cell=1,
        n_rows=3,
    )
    assert failing(results) == {}


def test_small_groups_are_a_warning_naming_them_with_their_counts():
    frame = make_frame()
    counts = counts_of(frame, ["gender", "race"])
    counts["race"] = {"a": 120, "b": 3, "c": 77, "d": 1}  # host's full-data counts
    counts["gender|race"] = {"F|a": 60, "M|a": 60, "F|b": 2, "M|b": 1}
    results = run(frame, group_counts=counts, min_cell=10)
    bad = failing(results)
    assert set(bad) == {"group_min_cell[race]", "group_min_cell[gender|race]"}
    race = bad["group_min_cell[race]"]
    assert race.severity == WARNING
    assert race.observed == "'race': 2 of 4 groups have fewer than 10 rows: 'd' (n=1), 'b' (n=3)"
    assert race.expected == "'race': every group has at least min_cell=10 rows"
    inter = bad["group_min_cell[gender|race]"]
    assert inter.column == "gender|race"
    assert "'M|b' (n=1), 'F|b' (n=2)" in inter.observed


def test_null_group_keys_are_ignored():
    frame = make_frame()
    counts = counts_of(frame, ["gender", "race"])
    counts["gender"] = {**counts["gender"], None: 2}
    check = by_name(run(frame, group_counts=counts, min_cell=5))["group_min_cell[gender]"]
    assert check.success
    assert "2 groups" in check.observed


@pytest.mark.parametrize(
    ("labels", "example"),
    [
        (pl.Series("segment", [0.0, 1.5] * 100), "1.5"),
        (pl.Series("segment", [0.0, float("inf")] * 100), "inf"),
    ],
)
def test_labels_not_integral(labels: pl.Series, example: str):
    frame = make_frame().with_columns(labels)
    bad = failing(run(frame))
    assert set(bad) == {"labels_integral[segment]"}
    check = bad["labels_integral[segment]"]
    assert check.severity == ERROR
    assert check.observed.startswith("'segment' (dtype ")
    assert f"e.g. {example}" in check.observed
    assert check.expected == "'segment': integer cluster labels (-1 = noise)"


@pytest.mark.parametrize("dtype", [pl.String, pl.Categorical])
def test_string_labels_are_cluster_names_not_an_error(dtype):
    """A labels column of strings or categories holds cluster names (issue 21): no
    labels_integral check, nothing fails."""
    frame = make_frame().with_columns(pl.Series("segment", ["0", "a"] * 100).cast(dtype))
    results = run(frame)
    assert failing(results) == {}
    assert "labels_integral[segment]" not in by_name(results)
    assert by_name(results)["labels_exists[segment]"].success


def test_labels_integral_floats_and_nulls_pass():
    segment = pl.Series("segment", [0.0, 1.0, -1.0, None] * 50)
    frame = make_frame().with_columns(segment)
    assert failing(run(frame)) == {}
    ints_with_nulls = pl.Series("segment", [0, 1, None, 2] * 50, dtype=pl.Int64)
    assert failing(run(make_frame().with_columns(ints_with_nulls))) == {}


def test_missing_labels_column():
    frame = make_frame().drop("segment")
    bad = failing(run(frame))
    assert set(bad) == {"labels_exists[segment]"}
    assert "labels column 'segment' is missing" in bad["labels_exists[segment]"].observed


def test_feature_with_nan_and_null():
    income = make_frame()["income"].to_list()
    income[3] = float("nan")
    income[7] = None
    frame = make_frame().with_columns(pl.Series("income", income, dtype=pl.Float64))
    bad = failing(run(frame))
    assert set(bad) == {"feature_not_nan[income]"}
    check = bad["feature_not_nan[income]"]
    assert check.severity == ERROR
    assert check.observed == "'income': 2 of 200 sampled rows are null/NaN (1.0%)"
    assert check.expected == "'income': no null/NaN values"


def test_feature_with_infinity():
    income = make_frame()["income"].to_list()
    income[5] = float("inf")
    income[6] = float("-inf")
    frame = make_frame().with_columns(pl.Series("income", income))
    bad = failing(run(frame))
    assert set(bad) == {"feature_finite[income]"}
    check = bad["feature_finite[income]"]
    assert (
        check.observed == "'income': 2 of 200 non-null sampled values are infinite (e.g. inf, -inf)"
    )


def test_missing_feature():
    bad = failing(run(make_frame(), features=["income", "height"]))
    assert set(bad) == {"feature_exists[height]"}
    assert "feature 'height' is missing" in bad["feature_exists[height]"].observed


def test_empty_table():
    frame = make_frame().head(0)
    results = run(frame, group_counts={"gender": {}, "race": {}})
    bad = failing(results)
    assert bad["table_not_empty"].observed == "the input has 0 rows (0 in the checked sample)"
    assert bad["sensitive_groups[gender]"].observed == "'gender' has 0 groups in 0 rows"


def test_sensitive_column_is_not_also_checked_as_a_feature():
    results = run(make_frame(), features=["income", "gender", "segment"])
    names = [r.name for r in results]
    assert "feature_exists[gender]" not in names
    assert "feature_exists[segment]" not in names


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"min_cell": 0},
            "The 'min_cell' parameter of run_input_checks must be an int >= 1; got 0.",
        ),
        ({"n_rows": -1}, "The 'n_rows' parameter of run_input_checks must be an int >= 0; got -1."),
        ({"max_null_fraction": 1.5}, "'max_null_fraction' parameter of run_input_checks"),
    ],
)
def test_invalid_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run(make_frame(), **kwargs)


def test_sample_must_be_a_frame():
    with pytest.raises(TypeError, match="'sample' parameter of run_input_checks"):
        run_input_checks(
            [1, 2],
            sensitive=["gender"],
            labels=None,
            features=[],
            group_counts={},
            min_cell=1,
            n_rows=2,
        )


# --------------------------------------------------------------------------------------------
# hygiene: lazy import, no network, nothing on disk, nothing on stderr
# --------------------------------------------------------------------------------------------

_HYGIENE_SCRIPT = textwrap.dedent(
    """
    import importlib.util, os, socket, sys
    import fairaudit, fairaudit.gx.checks
    assert "great_expectations" not in sys.modules, "importing fairaudit.gx.checks imported GX"
    if importlib.util.find_spec("fairaudit.cli") is not None:  # `fairaudit --help`
        from click.testing import CliRunner
        from fairaudit.cli import main
        result = CliRunner().invoke(main, ["--help"])
        assert result.exit_code == 0, result.output
        assert "great_expectations" not in sys.modules, "fairaudit --help imported GX"

    def no_network(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args!r}")

    socket.socket.connect = no_network
    socket.socket.connect_ex = no_network
    socket.create_connection = no_network
    socket.getaddrinfo = no_network

    import polars as pl
    from fairaudit.gx.checks import run_input_checks

    frame = pl.DataFrame({"g": ["a", "b", None, "a"], "k": [0, 1, 1, 0], "x": [1.0, 2.0, 3.0, 4.0]})
    results = run_input_checks(
        frame, sensitive=["g"], labels="k", features=["x"],
        group_counts={"g": {"a": 2, "b": 1}}, min_cell=1, n_rows=4,
    )
    assert os.environ["GX_ANALYTICS_ENABLED"] == "False"
    sys.stdout.write(str(len(results)))
    """
)


def test_lazy_import_no_network_no_files_no_stderr(tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GX_")}
    proc = subprocess.run(
        [sys.executable, "-c", _HYGIENE_SCRIPT],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "12"  # table, exists, not_null, groups, not_id, min_cell,
    # names_distinct, labels x2, feature x3
    assert proc.stderr == ""
    assert list(tmp_path.iterdir()) == []  # no gx/ directory, no config files


def test_callers_current_gx_context_is_restored():
    import great_expectations as gx
    from great_expectations.data_context.data_context.context_factory import project_manager

    mine = gx.get_context(mode="ephemeral")
    run(make_frame(n=40))
    assert project_manager.get_current_project() is mine


def test_an_expectation_gx_cannot_evaluate_becomes_a_failed_check():
    from fairaudit.core.checks import Check
    from fairaudit.gx.checks import _Runner

    runner = _Runner()
    try:
        spec = Check(
            (0,),
            "probe[nope]",
            "nope",
            ERROR,
            "expect_column_values_to_not_be_null",
            {"column": "nope"},
            lambda res: ("unused", "unused"),
        )
        [(_, result)] = runner.run(_pandas(make_frame(n=5)), [spec], {"result_format": "SUMMARY"})
    finally:
        runner.close()
    assert not result.success
    assert result.observed.startswith("'nope': the check could not be evaluated: ")
    assert "nope" in result.observed.split(": ", 2)[2]
