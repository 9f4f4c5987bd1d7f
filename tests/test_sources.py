"""Database, object-store and Delta sources give the numbers of the same rows read from a local
Parquet file (docs/sources.md), against real components: DuckDB and SQLite (embedded), a
PostgreSQL server and a local S3 endpoint (tests/source_servers.py).

Counts are compared exactly; floats within 1e-9 (absolute or relative: a feature matrix built
from database rows may sum in another order in the last bits)."""

from __future__ import annotations

import hashlib
import json
import logging
import math

import numpy as np
import polars as pl
import pytest
from source_servers import PG_PASSWORD, load_postgres, postgres_url, s3_endpoint  # noqa: F401

import fairaudit

pytest.importorskip("sqlalchemy", reason="pip install 'fairaudit-clusters[sql]'")
pytest.importorskip("duckdb_engine", reason="pip install 'fairaudit-clusters[sql]'")

TOL = 1e-9


def make_rows(n: int = 1600, seed: int = 5) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    segment = rng.integers(0, 3, size=n)
    sex = np.where(rng.random(n) < np.where(segment == 0, 0.75, 0.35), "F", "M")
    race = rng.choice(["a", "b", "c"], size=n, p=[0.6, 0.3, 0.1]).astype(object)
    race[rng.random(n) < 0.02] = None  # nulls are left out, as the file reader leaves them
    centres = np.array([[0.0, 0.0], [4.0, 4.0], [-4.0, 4.0]])
    x = centres[segment] + rng.normal(size=(n, 2))
    return pl.DataFrame({"rid": np.arange(n), "sex": sex, "race": list(race), "x1": x[:, 0],
                         "x2": x[:, 1], "segment": segment})


@pytest.fixture(scope="module")
def rows():
    return make_rows()


@pytest.fixture(scope="module")
def files(rows, tmp_path_factory):
    """The same rows as Parquet, a DuckDB file and a SQLite file."""
    import sqlite3

    import duckdb

    d = tmp_path_factory.mktemp("sources")
    rows.write_parquet(d / "people.parquet")
    con = duckdb.connect(str(d / "people.duckdb"))
    con.register("frame", rows.to_arrow())
    con.execute("CREATE TABLE people AS SELECT * FROM frame")
    con.close()
    con = sqlite3.connect(d / "people.db")
    con.execute("CREATE TABLE people (rid INTEGER PRIMARY KEY, sex TEXT, race TEXT, x1 REAL, "
                "x2 REAL, segment INTEGER)")
    con.executemany("INSERT INTO people VALUES (?, ?, ?, ?, ?, ?)", rows.rows())
    con.commit()
    con.close()
    return {"parquet": str(d / "people.parquet"), "duckdb": f"duckdb:///{d / 'people.duckdb'}",
            "sqlite": f"sqlite:///{d / 'people.db'}", "dir": d}


@pytest.fixture(scope="module")
def pg(postgres_url, rows):  # noqa: F811
    load_postgres(postgres_url, "people", rows)
    return postgres_url


def numbers(run) -> list[tuple]:
    return [(r["labelling"], r["metric"], r["attribute"], r["value"], r["ci"], r["n_rows"],
             json.dumps(r["per_cluster"], sort_keys=True, default=str))
            for r in run.doc["results"]]


def close(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=TOL, abs_tol=TOL)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    return a == b


def same_audit(run, base) -> None:
    """Every result, check and count of ``run`` as ``base``'s (floats within TOL)."""
    got = [dict(r) for r in run.doc["results"]]
    want = [dict(r) for r in base.doc["results"]]
    assert [(r["labelling"], r["metric"], r["attribute"]) for r in got] == [
        (r["labelling"], r["metric"], r["attribute"]) for r in want]
    for g, w in zip(got, want, strict=True):
        assert close(g, w), (g["metric"], g["attribute"], g["value"], w["value"])
    assert run.doc["checks"] == base.doc["checks"]
    for key in ("rows", "rows_audited", "groups", "exclusions", "features", "sample"):
        assert run.doc["input"][key] == base.doc["input"][key], key
    assert [lab["composition"] for lab in run.doc["labellings"]] == [
        lab["composition"] for lab in base.doc["labellings"]]
    assert [lab["cluster_sizes"] for lab in run.doc["labellings"]] == [
        lab["cluster_sizes"] for lab in base.doc["labellings"]]


LABELS = {"sensitive": ["sex", "race"], "labels": "segment", "bootstrap": 50,
          "skip_audit": ["proxy"]}


def test_labels_audit_counts_in_each_database_as_in_parquet(files, pg):
    base = fairaudit.audit(files["parquet"], **LABELS)
    for url in (files["duckdb"], files["sqlite"], pg):
        run = fairaudit.audit(url, table="people", key="rid", **LABELS)
        same_audit(run, base)
        source = run.doc["input"]["source"]
        assert source["kind"] == "database" and source["table"] == "people"
        assert run.doc["input"]["path"] == url.replace(PG_PASSWORD, "***")


def test_feature_auditors_read_the_rows_in_key_order_as_in_parquet(files):
    kw = {**LABELS, "skip_audit": [], "audit": ["balance", "proxy"]}
    base = fairaudit.audit(files["parquet"], **kw)
    run = fairaudit.audit(files["duckdb"], table="people", key="rid", **kw)
    same_audit(run, base)
    moved = run.doc["input"]["source"]["moved"]  # the joint table, every valid row (<= 100k)
    assert moved["joint count table"]["rows"] <= 2 * 4 * 4
    assert moved["rows in memory"]["rows"] == run.doc["input"]["rows_audited"]


def test_a_labels_audit_moves_only_the_joint_table(files, pg):
    base = fairaudit.audit(files["parquet"], **LABELS, audit=["balance", "representation_gap"])
    for url in (files["duckdb"], pg):
        run = fairaudit.audit(url, table="people", **LABELS, audit=["balance", "representation_gap"])
        same_audit(run, base)
        moved = run.doc["input"]["source"]["moved"]
        assert set(moved) == {"joint count table"}  # the input checks read it too
        assert moved["joint count table"]["rows"] <= 24


def test_clusterers_fit_every_row_in_key_order_as_in_parquet(files, pg):
    kw = {"sensitive": ["sex"], "cluster": [("kmeans", {"n_clusters": 3})], "bootstrap": 30,
          "features": ["x1", "x2"], "twins": False, "audit": ["balance", "quality"]}
    base = fairaudit.audit(files["parquet"], **kw)
    for url in (files["duckdb"], pg):
        same_audit(fairaudit.audit(url, table="people", key="rid", **kw), base)


def test_the_sample_is_drawn_in_the_database_the_same_in_every_dialect(files, pg):
    kw = {"sensitive": ["sex"], "cluster": [("kmeans", {"n_clusters": 3})], "bootstrap": 30,
          "features": ["x1", "x2"], "twins": False, "sample": 700, "seed": 4,
          "audit": ["balance", "quality"]}
    runs = [fairaudit.audit(u, table="people", key="rid", **kw)
            for u in (files["duckdb"], files["sqlite"], pg)]
    for run in runs:
        sample = run.doc["input"]["sample"]
        assert sample["rows"] == 700 and sample["drawn"].startswith("in the database")
        moved = run.doc["input"]["source"]["moved"]
        assert moved["sample"]["rows"] == 700
        # every valid row streamed once through predict: the counts cover the whole table
        lab = run.doc["labellings"][0]
        assert lab["extras"]["assignment"]["rows_assigned"] == run.doc["input"]["rows_audited"]
        assert moved["streamed rows"]["rows"] == run.doc["input"]["rows_audited"]
    for run in runs[1:]:  # md5(seed, key): the same rows in every dialect
        same_audit(run, runs[0])
    again = fairaudit.audit(files["duckdb"], table="people", key="rid", **kw)
    assert numbers(again) == numbers(runs[0])
    other = fairaudit.audit(files["duckdb"], table="people", key="rid", **{**kw, "seed": 5})
    assert numbers(other) != numbers(runs[0])


def test_without_a_key_the_rows_are_ordered_by_their_hash_reproducibly(files):
    kw = {"sensitive": ["sex"], "cluster": [("kmeans", {"n_clusters": 3})], "bootstrap": 0,
          "features": ["x1", "x2"], "twins": False, "sample": 500, "audit": ["balance"]}
    a = fairaudit.audit(files["duckdb"], table="people", **kw)
    b = fairaudit.audit(files["sqlite"], table="people", **kw)
    assert "each row's values" in a.doc["input"]["sample"]["drawn"]
    assert numbers(a) == numbers(fairaudit.audit(files["duckdb"], table="people", **kw))
    # the counts cover every row either way (assignment), whatever the sample
    assert a.doc["labellings"][0]["n_rows"] == b.doc["labellings"][0]["n_rows"]


def test_a_query_is_audited_as_its_rows(files, rows, pg, tmp_path):
    part = rows.filter(pl.col("rid") < 1000)
    part.write_parquet(tmp_path / "part.parquet")
    base = fairaudit.audit(str(tmp_path / "part.parquet"), **LABELS)
    for url in (files["duckdb"], files["sqlite"], pg):
        run = fairaudit.audit(url, query="SELECT * FROM people WHERE rid < 1000;", key="rid",
                              **LABELS)
        same_audit(run, base)
        assert run.doc["input"]["source"]["query"].startswith("SELECT")


def test_null_values_apply_to_text_columns_as_in_parquet(files, pg):
    kw = {**LABELS, "null_values": ["c"]}
    base = fairaudit.audit(files["parquet"], **kw)
    assert base.doc["input"]["exclusions"]
    for url in (files["duckdb"], pg):
        same_audit(fairaudit.audit(url, table="people", key="rid", **kw), base)


def test_the_database_files_are_never_written(files):
    def digest(path):
        return hashlib.sha256(path.read_bytes()).hexdigest()

    before = {p.name: digest(p) for p in files["dir"].iterdir() if p.suffix in (".db", ".duckdb")}
    fairaudit.audit(files["duckdb"], table="people", **LABELS)
    fairaudit.audit(files["sqlite"], table="people", **LABELS)
    after = {p.name: digest(p) for p in files["dir"].iterdir() if p.suffix in (".db", ".duckdb")}
    assert after == before
    assert sorted(p.name for p in files["dir"].iterdir()) == [
        "people.db", "people.duckdb", "people.parquet"]  # no journal, WAL or lock file left


def test_the_chain_names_a_database_source(files, tmp_path):
    chain = tmp_path / "chain.toml"
    chain.write_text(f'''[data]
source = "{files['duckdb']}"
table = "people"
key = "rid"
sensitive = ["sex", "race"]
labels = "segment"

[options]
bootstrap = 50

[[audit]]
use = "balance"

[[audit]]
use = "representation_gap"
''')
    from fairaudit.core.chain import load_chain
    from fairaudit.core.plugins import Host
    from fairaudit.core.runner import run_chain

    run = run_chain(load_chain(chain), Host.create())
    base = fairaudit.audit(files["parquet"], **LABELS, audit=["balance", "representation_gap"])
    assert numbers(run) == numbers(base)


def test_a_key_that_does_not_identify_rows_is_warned_about(files, rows, caplog):
    import duckdb

    path = files["dir"] / "dup_key.duckdb"
    con = duckdb.connect(str(path))
    con.register("frame", rows.with_columns(pl.col("rid") // 2).to_arrow())  # pairs share a rid
    con.execute("CREATE TABLE people AS SELECT * FROM frame")
    con.close()
    kw = {**LABELS, "skip_audit": [], "audit": ["balance", "proxy"]}
    with caplog.at_level(logging.WARNING, logger="fairaudit.sources.sql_sample"):
        fairaudit.audit(f"duckdb:///{path}", table="people", key="rid", **kw)
    msgs = [r.getMessage() for r in caplog.records if r.name == "fairaudit.sources.sql_sample"]
    assert len(msgs) == 1 and "--key 'rid' does not identify rows" in msgs[0], msgs
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="fairaudit.sources.sql_sample"):
        fairaudit.audit(files["duckdb"], table="people", key="rid", **kw)  # a unique key
    assert not [r for r in caplog.records if r.name == "fairaudit.sources.sql_sample"]


def test_a_dialect_whose_driver_is_missing_names_that_driver(run_cli):
    import importlib.util

    if importlib.util.find_spec("pymysql") is not None:
        pytest.skip("pymysql is installed here")
    res = run_cli("audit", "mysql+pymysql://u:SECRETPW@127.0.0.1:1/db", "--table", "t",
                  "--sensitive", "a")
    assert res.exit_code == 2, res.output
    assert "pip install pymysql" in res.output and "SECRETPW" not in res.output
