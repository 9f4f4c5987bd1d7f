"""Database sources from the command line: the password never shows (console, --debug log,
tracebacks, JSON, HTML), bad sources exit 2 naming what is wrong, a missing extra names its
pip install line, and the input is never written."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from source_servers import PG_PASSWORD, load_postgres, postgres_url  # noqa: F401
from test_sources import files, make_rows, rows  # noqa: F401

import fairaudit
from fairaudit.errors import ConfigError, InputError
from fairaudit.sources.urls import local_file_of, mask, redact

pytest.importorskip("sqlalchemy")


def _fairaudit(*args: str, cwd, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fairaudit", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, env={**os.environ, **(env or {})},
                          timeout=300)


def test_urls_are_masked():
    assert mask("postgresql://me:pw@db:5432/crm") == "postgresql://me:***@db:5432/crm"
    assert mask("postgresql://me@db/crm") == "postgresql://me@db/crm"
    assert mask("snowflake://u:p@acct/db?warehouse=w&password=x") == (
        "snowflake://u:***@acct/db?warehouse=w&password=***")
    text = "could not open postgresql+psycopg://a:b%40c@h/d and s3://k:s@bucket/x"
    assert redact(text) == "could not open postgresql+psycopg://a:***@h/d and s3://k:***@bucket/x"
    assert local_file_of("sqlite:///data/f.db") == "data/f.db"
    assert local_file_of("duckdb:////abs/f.duckdb?threads=1") == "/abs/f.duckdb"
    assert local_file_of("postgresql://h/db") is None and local_file_of("s3://b/x") is None


def test_the_password_never_shows(pg_people, tmp_path):
    url, _ = pg_people
    ok = _fairaudit("audit", url, "--table", "people", "--sensitive", "sex,race", "--labels",
                    "segment", "--bootstrap", "20", "--skip-audit", "proxy", "--debug", "-v",
                    "--out", "r.html", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    bad = _fairaudit("audit", url, "--table", "nobody", "--sensitive", "sex", "--labels",
                     "segment", "--debug", "--out", "r2.html", cwd=tmp_path)
    assert bad.returncode == 2
    assert "table 'nobody': no such table" in bad.stderr and "'people'" in bad.stderr
    written = (tmp_path / "r.html").read_text() + (tmp_path / "r.json").read_text()
    for text in (ok.stdout, ok.stderr, bad.stdout, bad.stderr, written):
        assert PG_PASSWORD not in text
    assert "postgres:***@127.0.0.1" in json.loads((tmp_path / "r.json").read_text())["input"][
        "path"]
    assert "postgres:***@127.0.0.1" in bad.stderr


@pytest.fixture(scope="module")
def pg_people(postgres_url, rows):  # noqa: F811
    load_postgres(postgres_url, "people", rows)
    return postgres_url, rows


def test_a_wrong_password_is_an_input_error_without_it(pg_people):
    url, _ = pg_people
    wrong = url.replace(PG_PASSWORD, "not-the-password")
    with pytest.raises(InputError) as err:
        fairaudit.audit(wrong, table="people", sensitive=["sex"], labels="segment")
    assert "not-the-password" not in str(err.value) and "***" in str(err.value)


def test_the_password_can_come_from_the_environment(pg_people, monkeypatch):
    url, _ = pg_people
    monkeypatch.setenv("FAIRAUDIT_DB_PASSWORD", PG_PASSWORD)
    run = fairaudit.audit(url.replace(f":{PG_PASSWORD}@", "@"), table="people",
                          sensitive=["sex"], labels="segment", bootstrap=0, audit=["balance"])
    assert run.doc["input"]["rows"] == 1600


@pytest.mark.parametrize("kwargs, error, match", [
    ({}, ConfigError, "needs --table NAME or --query"),
    ({"table": "people", "query": "SELECT 1"}, ConfigError, "not both"),
    ({"table": "peple"}, InputError, "no such table.*'people'"),
    ({"query": "SELECT * FROM nowhere"}, InputError, "query: cannot be read"),
    ({"query": "DELETE FROM people"}, ConfigError, "expected a SELECT .* got a DELETE statement"),
    ({"query": "-- tidy up\n/* all */ DROP TABLE people"}, ConfigError, "got a DROP statement"),
    ({"query": "  ;  "}, ConfigError, "the query is empty"),
    ({"table": "people", "key": "id"}, InputError, "no column 'id' \\(did you mean 'rid'\\?\\)"),
])
def test_bad_database_sources_are_named(files, kwargs, error, match):  # noqa: F811
    with pytest.raises(error, match=match):
        fairaudit.audit(files["duckdb"], sensitive=["sex"], labels="segment", **kwargs)


def test_a_missing_column_is_named_with_its_table(files):  # noqa: F811
    with pytest.raises(Exception, match="sensitive.*'gender'"):
        fairaudit.audit(files["sqlite"], table="people", sensitive=["gender"], labels="segment")


def test_database_options_need_a_database(files):  # noqa: F811
    with pytest.raises(ConfigError, match="--table: only for a database source"):
        fairaudit.audit(files["parquet"], table="people", sensitive=["sex"], labels="segment")


def test_a_missing_database_file_is_not_created(tmp_path):
    for url in (f"duckdb:///{tmp_path / 'none.duckdb'}", f"sqlite:///{tmp_path / 'none.db'}"):
        with pytest.raises(InputError, match="no such database file"):
            fairaudit.audit(url, table="t", sensitive=["sex"], labels="segment")
    assert list(tmp_path.iterdir()) == []


def test_publish_from_a_database_is_refused(files, tmp_path):  # noqa: F811
    with pytest.raises(ConfigError, match="--publish: .* is a database: the privacy ledger"):
        fairaudit.audit(files["duckdb"], table="people", sensitive=["sex"], labels="segment",
                        publish=True, ledger=tmp_path / "ledger.json")
    assert not (tmp_path / "ledger.json").exists()


def test_an_output_never_replaces_the_database_file(files, run_cli):  # noqa: F811
    db = files["dir"] / "people.db"
    before = db.read_bytes()
    res = run_cli("audit", files["sqlite"], "--table", "people", "--sensitive", "sex",
                  "--labels", "segment", "--out", "x.html", "--json", str(db))
    assert res.exit_code == 2 and "input" in res.output
    assert db.read_bytes() == before


@pytest.mark.parametrize("module, extra", [("sqlalchemy", "sql"), ("deltalake", "lake")])
def test_a_missing_extra_names_its_install_line(files, module, extra, tmp_path):  # noqa: F811
    """The extra's package made unimportable (a fresh interpreter): exit 2 and the line."""
    data = files["duckdb"] if module == "sqlalchemy" else str(tmp_path / "delta")
    if module == "deltalake":
        (tmp_path / "delta" / "_delta_log").mkdir(parents=True)
    code = (f"import sys; sys.modules[{module!r}] = None\n"
            "from fairaudit.cli import main\n"
            f"main(['audit', {data!r}, '--sensitive', 'sex', '--labels', 'segment']"
            + (" + ['--table', 'people']" if module == "sqlalchemy" else "") + ")\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert f"pip install 'fairaudit-clusters[{extra}]'" in done.stderr


def test_a_sqlalchemy_engine_is_a_source_and_a_table_object_is_explained(files):  # noqa: F811
    import sqlalchemy as sa

    engine = sa.create_engine(files["sqlite"])
    run = fairaudit.audit(engine, table="people", sensitive=["sex"], labels="segment",
                          bootstrap=0, audit=["balance"])
    assert run.doc["input"]["rows"] == 1600 and run.doc["input"]["format"] == "database"
    people = sa.Table("people", sa.MetaData())
    with pytest.raises(ConfigError, match="carries no connection.*table='people'"):
        fairaudit.audit(people, sensitive=["sex"], labels="segment")
