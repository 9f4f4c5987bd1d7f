"""The orchestrator examples (examples/orchestrators/) with their orchestrators.

Dagster (in the test extra) is run in-process: the asset materialises a real audit of a small
table and the asset check fails exactly when a gate failed. Airflow and Prefect are too heavy
for the test extra: their examples are checked for the current API names (``airflow.sdk``,
Prefect 3's ``flow``/``task``) by reading their syntax tree, and imported when installed."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

ORCH = Path(__file__).resolve().parents[1] / "examples" / "orchestrators"


def _load(name: str):
    if str(ORCH) not in sys.path:
        sys.path.insert(0, str(ORCH))
    spec = importlib.util.spec_from_file_location(f"_example_{name}", ORCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _table(path: Path, n: int = 400) -> Path:
    rng = np.random.default_rng(0)
    seg = rng.integers(0, 3, n)
    sex = np.where(rng.random(n) < np.where(seg == 0, 0.8, 0.2), "F", "M")
    pl.DataFrame({"x": rng.normal(size=n) + seg, "sex": sex, "segment": seg}).write_parquet(path)
    return path


def _materialise(dg, mod, tmp_path: Path, fail_under: list[str], warehouse=None):
    tmp_path.mkdir()
    config = mod.FairnessAuditConfig(data=str(_table(tmp_path / "t.parquet")), sensitive="sex",
                                     audits=str(tmp_path / "audits"), labels="segment",
                                     fail_under=fail_under, date="2026-11-26")
    return dg.materialize(
        [mod.fairness_audit, mod.fairness_gates],
        run_config=dg.RunConfig({"fairness_audit": config}),
        resources={"warehouse": warehouse or mod.WarehouseSource()},
        instance=dg.DagsterInstance.ephemeral(), raise_on_error=False,
    )


@pytest.mark.slow
def test_dagster_audits_a_database_table_through_its_resource(tmp_path):
    dg = pytest.importorskip("dagster")
    duckdb = pytest.importorskip("duckdb")
    pytest.importorskip("duckdb_engine")
    mod = _load("dagster_assets")
    frame = pl.read_parquet(_table(tmp_path / "rows.parquet"))
    con = duckdb.connect(str(tmp_path / "wh.duckdb"))
    con.register("frame", frame.to_arrow())
    con.execute("CREATE TABLE segments AS SELECT * FROM frame")
    con.close()
    res = _materialise(dg, mod, tmp_path / "db", ["balance=0.0"], mod.WarehouseSource(
        url=f"duckdb:///{tmp_path / 'wh.duckdb'}", table="segments"))
    assert res.success
    [mat] = res.get_asset_materialization_events()
    doc = __import__("json").loads(Path(mat.materialization.metadata["json"].value).read_text())
    assert doc["input"]["source"]["table"] == "segments"
    assert set(doc["input"]["source"]["moved"]) <= {"joint count table", "row count",
                                                    "rows in memory"}


@pytest.mark.slow
def test_dagster_asset_check_fails_on_a_failed_gate(tmp_path):
    dg = pytest.importorskip("dagster")
    mod = _load("dagster_assets")
    dg.Definitions.validate_loadable(mod.defs)

    ok = _materialise(dg, mod, tmp_path / "ok", ["balance=0.0"])
    [ev] = ok.get_asset_check_evaluations()
    assert ev.passed and ev.check_name == "fairness_gates"
    assert (tmp_path / "ok" / "audits" / "runs" / "2026-11-26.html").exists()

    # segment 0 is 80 % F, the others 20 %: balance is far below 0.9 -> exit 1 -> check fails
    bad = _materialise(dg, mod, tmp_path / "bad", ["balance=0.9"])
    [ev] = bad.get_asset_check_evaluations()
    assert not ev.passed
    assert "balance" in ev.metadata["failed_gates"].value
    [mat] = bad.get_asset_materialization_events()  # the report itself was materialised
    assert mat.materialization.metadata["exit_code"].value == 1
    assert not bad.success  # a blocking ERROR check fails the run


def test_dagster_bad_input_fails_the_materialisation(tmp_path):
    dg = pytest.importorskip("dagster")
    mod = _load("dagster_assets")
    config = mod.FairnessAuditConfig(data=str(tmp_path / "missing.parquet"), sensitive="sex",
                                     audits=str(tmp_path / "audits"), date="2026-11-26")
    res = dg.materialize([mod.fairness_audit, mod.fairness_gates],
                         run_config=dg.RunConfig({"fairness_audit": config}),
                         resources={"warehouse": mod.WarehouseSource()},
                         instance=dg.DagsterInstance.ephemeral(), raise_on_error=False)
    assert not res.success
    assert not res.get_asset_materialization_events()


def _names(path: Path) -> tuple[set[str], set[str]]:
    """Modules imported and attribute/decorator names used in an example."""
    tree = ast.parse(path.read_text())
    modules, names = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            modules.add(node.module or "")
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            modules.update(a.name for a in node.names)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            names.add(f"{node.value.id}.{node.attr}")
    return modules, names


def test_airflow_example_uses_the_task_sdk():
    modules, names = _names(ORCH / "airflow_dag.py")
    assert "airflow.sdk" in modules
    assert not {"airflow.decorators", "airflow.exceptions", "airflow.models"} & modules
    assert {"airflow.sdk.dag", "airflow.sdk.task"} <= names
    assert "airflow.sdk.exceptions.AirflowFailException" in names  # not airflow.exceptions
    if importlib.util.find_spec("airflow") is not None:  # pragma: no cover - not in CI
        _load("airflow_dag")


def test_prefect_example_uses_prefect_3():
    modules, names = _names(ORCH / "prefect_flow.py")
    assert "prefect" in modules
    assert {"prefect.flow", "prefect.task"} <= names
    if importlib.util.find_spec("prefect") is not None:  # pragma: no cover - not in CI
        mod = _load("prefect_flow")
        assert mod.nightly_fairness_audit.name == "nightly-fairness-audit"


@pytest.mark.parametrize("name", ["airflow_dag", "dagster_assets", "prefect_flow"])
def test_every_example_sets_a_threshold_gate(name):
    text = (ORCH / f"{name}.py").read_text()
    assert "FAIL_UNDER" in text and "fail_under" in text
