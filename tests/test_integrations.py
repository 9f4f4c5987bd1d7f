"""Pipeline integrations: the orchestrator examples' task logic (without the orchestrators), the GX
checkpoint example's exit code, and the new fairness expectations (Wd, Ed, confidence bounds)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from audit_sims import chain_file, population

ROOT = Path(__file__).resolve().parents[1]
ORCH = ROOT / "examples" / "orchestrators"


def _load(name: str):
    """Import an example by path, under its own name (the orchestrator scripts import
    ``nightly_audit`` by name, so the test and the scripts share its classes)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ORCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class FakeRunner:
    """Records commands; answers the audit with ``code`` and the history with 0."""

    def __init__(self, code: int):
        self.code, self.calls = code, []

    def __call__(self, cmd, **kwargs):
        self.calls.append(list(cmd))
        rc = self.code if "audit" in cmd else 0
        return subprocess.CompletedProcess(cmd, rc, stdout="out\n", stderr="")


@pytest.mark.parametrize("name", ["airflow_dag", "prefect_flow"])
def test_orchestrator_tasks_fail_on_a_gate(name, tmp_path):
    """The task logic of the Airflow and Prefect examples without the orchestrators (the
    Dagster example runs with Dagster itself: tests/test_orchestrators.py)."""
    nightly = _load("nightly_audit")
    mod = _load(name)
    orchestrator = {"airflow_dag": "airflow", "prefect_flow": "prefect"}[name]
    if importlib.util.find_spec(orchestrator) is not None:
        pytest.skip(f"{orchestrator} is installed: its own exception types are raised")
    (tmp_path / "baseline.json").write_text("{}")
    ok = FakeRunner(0)
    result = mod.fairness_audit("2026-11-23", data="t.parquet", sensitive="sex",
                                audits=str(tmp_path), runner=ok)
    assert "2026-11-23.json" in str(result)
    audit_cmd, history_cmd = ok.calls
    assert audit_cmd[1:4] == ["-m", "fairaudit", "audit"]
    assert audit_cmd[audit_cmd.index("--fail-under") + 1] == "balance=0.8"  # threshold gate
    assert "--baseline" in audit_cmd and str(tmp_path / "baseline.json") in audit_cmd
    assert history_cmd[3] == "history" and str(tmp_path / "history.html") in history_cmd
    for code, exc in ((1, "AuditGateFailed"), (2, "AuditConfigError"), (3, "AuditCrashed")):
        with pytest.raises(Exception) as info:
            mod.fairness_audit("2026-11-23", data="t.parquet", sensitive="sex",
                               audits=str(tmp_path), runner=FakeRunner(code))
        assert isinstance(info.value, getattr(nightly, exc))


def test_nightly_audit_end_to_end(tmp_path):
    """A real run: the first night has no baseline; it is promoted; the next night's shifted
    data fail the comparison gate (exit 1); the history page covers both nights."""
    nightly = _load("nightly_audit")
    for name, shift in (("before", False), ("after", True)):
        pop = population(shift=shift)
        pop[np.random.default_rng(3).integers(0, pop.height, 3000)].write_parquet(
            tmp_path / f"{name}.parquet")
    audits = tmp_path / "audits"
    chain = str(chain_file(tmp_path))
    first = nightly.run_audit(str(tmp_path / "before.parquet"), sensitive="sex,race",
                              labels="segment", chain=chain, audits=audits, date="2026-11-22")
    assert nightly.check(first).json_path.exists(), first.output
    (audits / "baseline.json").write_bytes(first.json_path.read_bytes())  # promote
    second = nightly.run_audit(str(tmp_path / "after.parquet"), sensitive="sex,race",
                               labels="segment", chain=chain, audits=audits, date="2026-11-23")
    assert second.exit_code == 1, second.output
    with pytest.raises(nightly.AuditGateFailed, match="2026-11-23.html"):
        nightly.check(second)
    doc = json.loads(second.json_path.read_text())
    assert doc["comparison"]["status"] == "fail"
    assert (audits / "history.html").read_text().count("<svg") == 9


# ----------------------------------------------------------------------------- GX
fx = pytest.importorskip("fairaudit.gx.expectations")
gx = pytest.importorskip("great_expectations")


def test_gx_checkpoint_example_exit_codes(tmp_path):
    spec = importlib.util.spec_from_file_location("gx_cp", ROOT / "examples" /
                                                  "gx_checkpoint_example.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main([]) == 0
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "gx_checkpoint_example.py"),
         "--min-balance", "0.99"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines()[-1] == "checkpoint success: False"
    assert "FAIL  expect_cluster_balance_to_be_at_least" in proc.stdout
    assert list(tmp_path.iterdir()) == []


# The hand-computed table of tests/test_expectations.py (two groups, two clusters, n = 12):
#   cluster 0: F=3, M=1;  cluster 1: F=3, M=5;  population shares F = M = 1/2
#   Wd (zero-one = half the L1 distance): cluster 0: 0.25, cluster 1: 0.125
#     size-weighted mean 0.25*4/12 + 0.125*8/12 = 1/6; max 0.25; sum 0.375
#   Ed: cluster 0: sqrt(2)*0.25, cluster 1: sqrt(2)*0.125 -> weighted mean sqrt(2)/6
COUNTS = {(0, "F"): 3, (0, "M"): 1, (1, "F"): 3, (1, "M"): 5, (-1, "F"): 1}


@pytest.fixture(scope="module")
def gap_batch():
    import pandas as pd

    rows = [k for k, n in COUNTS.items() for _ in range(n)]
    frame = pd.DataFrame(rows, columns=["cluster", "sex"])
    bd = (fx.ephemeral_context().data_sources.add_pandas(name="gaps")
          .add_dataframe_asset(name="t").add_batch_definition_whole_dataframe("all"))
    return bd.get_batch(batch_parameters={"dataframe": frame})


@pytest.mark.parametrize("how, expected", [("weighted-mean", 1 / 6), ("max", 0.25),
                                           ("sum", 0.375)])
def test_wd_expectation_hand_computed(gap_batch, how, expected):
    ok = gap_batch.validate(fx.ExpectClusterWdToBeAtMost(
        cluster_column="cluster", sensitive_columns="sex", max_value=expected + 1e-9, how=how))
    assert ok.success and ok.result["observed_value"] == pytest.approx(expected)
    assert [c["wd"] for c in ok.result["details"]["per_cluster"]] == pytest.approx([0.25, 0.125])
    bad = gap_batch.validate(fx.ExpectClusterWdToBeAtMost(
        cluster_column="cluster", sensitive_columns="sex", max_value=expected - 1e-3, how=how))
    assert not bad.success


def test_ed_expectation_hand_computed(gap_batch):
    r = gap_batch.validate(fx.ExpectClusterEdToBeAtMost(
        cluster_column="cluster", sensitive_columns="sex", max_value=0.3))
    assert r.success and r.result["observed_value"] == pytest.approx(np.sqrt(2) / 6)
    assert r.result["details"]["n_noise_excluded"] == 1


def test_confidence_bound_expectations(gap_batch):
    lo_exp = fx.ExpectClusterMetricLowerBoundToBeAtLeast(
        cluster_column="cluster", sensitive_columns="sex", metric="balance", min_value=0.0,
        min_cell=1)  # groups of 6 rows: the audit's --min-cell 10 would leave them out
    r = gap_batch.validate(lo_exp)
    d = r.result["details"]
    assert d["value"] == pytest.approx(0.5)  # hand-computed balance of the table
    assert d["ci"][0] <= d["value"] <= d["ci"][1] or d["ci"][0] <= d["value"]
    assert r.result["observed_value"] == d["ci"][0] and r.success
    assert gap_batch.validate(lo_exp).result["observed_value"] == d["ci"][0]  # seeded
    value, lo, hi = fx.metric_interval(np.array([[3, 3], [1, 5]]), "balance", min_cell=1,
                                       groups=["F", "M"], clusters=[0, 1],
                                       sensitive_columns="sex", cluster_column="cluster")
    assert (value, lo, hi) == (d["value"], d["ci"][0], d["ci"][1])
    strict = fx.ExpectClusterMetricLowerBoundToBeAtLeast(
        cluster_column="cluster", sensitive_columns="sex", metric="balance", min_value=0.5,
        min_cell=1)
    assert gap_batch.validate(strict).success == (d["ci"][0] >= 0.5)
    up = gap_batch.validate(fx.ExpectClusterMetricUpperBoundToBeAtMost(
        cluster_column="cluster", sensitive_columns="sex", metric="wd", max_value=1.0, min_cell=1))
    assert up.success and up.result["observed_value"] >= 1 / 6 - 1e-12
    # the audit's own interval methods (fairaudit.metrics.intervals; --ci-method calibrated)
    assert d["method"] in ("score-max-bootstrap", "score-intersection")
    assert up.result["details"]["method"] == "bootstrap-triangle"


@pytest.mark.parametrize("cls, kwargs, match", [
    ("ExpectClusterMetricLowerBoundToBeAtLeast", {"metric": "wd", "min_value": 0.1}, "for wd/ed"),
    ("ExpectClusterMetricUpperBoundToBeAtMost", {"metric": "balance", "max_value": 0.1},
     "lower is fairer"),
    ("ExpectClusterWdToBeAtMost", {"max_value": -1}, "max_value"),
    ("ExpectClusterMetricLowerBoundToBeAtLeast", {"metric": "balance", "min_value": 0.1,
                                                  "n_boot": 5}, "n_boot"),
])
def test_invalid_parameters_of_new_expectations(cls, kwargs, match):
    with pytest.raises(Exception, match=match):
        getattr(fx, cls)(cluster_column="c", sensitive_columns="s", **kwargs)


def test_pandas_frame_from_polars():
    import polars as pl

    frame = pl.DataFrame({"cluster": [0, 1, None], "sex": ["F", None, "M"], "x": [1.0, 2.0, 3.0]})
    pdf = fx.pandas_frame(frame, ["cluster", "sex"])
    assert list(pdf.columns) == ["cluster", "sex"] and pdf["sex"].tolist() == ["F", None, "M"]
    assert np.isnan(pdf["cluster"].iloc[2])
    assert fx.pandas_frame(frame.lazy()).shape == (3, 3)


def test_expectations_on_a_sql_table(tmp_path):
    """GX's SQL engine: the table is counted with one GROUP BY in the database (SQLite here);
    the same values as on pandas."""
    pytest.importorskip("sqlalchemy")
    import sqlite3

    rows = [(k[0], k[1]) for k, n in COUNTS.items() for _ in range(n)] + [(1, None)]
    db = tmp_path / "t.db"
    con = sqlite3.connect(db)
    con.execute("create table seg (cluster integer, sex text)")
    con.executemany("insert into seg values (?, ?)", rows)
    con.commit()
    con.close()
    ds = fx.ephemeral_context().data_sources.add_sqlite(
        name="db", connection_string=f"sqlite:///{db}")
    batch = ds.add_table_asset(name="seg", table_name="seg") \
        .add_batch_definition_whole_table("all").get_batch()
    common = {"cluster_column": "cluster", "sensitive_columns": "sex"}
    bal = batch.validate(fx.ExpectClusterBalanceToBeAtLeast(**common, min_value=0.5))
    assert bal.success and bal.result["observed_value"] == pytest.approx(0.5)
    d = bal.result["details"]
    assert (d["n_rows"], d["n_used"], d["n_null_excluded"], d["n_noise_excluded"]) == (14, 12, 1, 1)
    wd = batch.validate(fx.ExpectClusterWdToBeAtMost(**common, max_value=0.2))
    assert wd.result["observed_value"] == pytest.approx(1 / 6)
    cce = batch.validate(fx.ExpectClusterCapacityFairnessToBeAtLeast(**common, min_value=0.5))
    assert not cce.success and cce.result["observed_value"] == pytest.approx(1 / 3)
