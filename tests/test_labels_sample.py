"""Issue 38: a labels audit of a large table reads for its feature-based auditors (quality,
proxy) a seeded sample of the size they use, not the host's default 100,000 rows; the sample is
stated in the report as before, and the counting metrics still use every row."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import fairaudit
from fairaudit.core.build import chain_from_flags
from fairaudit.core.inputs import materialise_rows, resolve_roles
from fairaudit.core.plugins import Host, make_plugin_manager

N = 120_000  # above the 100,000 rows the host holds without clusterers


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    rng = np.random.default_rng(0)
    seg = rng.integers(0, 4, N)
    df = pl.DataFrame({
        "segment": seg,
        "sex": np.array(["f", "m"])[(rng.random(N) < 0.3 + 0.1 * (seg % 2)).astype(int)],
        "race": rng.choice(["a", "b", "c"], N),
        "score": rng.normal(size=N) + seg,
    })
    path = tmp_path_factory.mktemp("labels") / "big.parquet"
    df.write_parquet(path)
    return path


def _result(run, auditor: str) -> dict:
    return next(r for r in run.doc["results"] if r["auditor"] == auditor)


def test_the_sample_is_what_quality_and_proxy_read(big):
    run = fairaudit.audit(str(big), sensitive=["sex", "race"], labels="segment", bootstrap=0)
    sample = run.doc["input"]["sample"]
    assert sample["rows"] == 5000  # quality's sample_size; proxy reads 1,000 of them
    assert "5,000 of 120,000 rows" in sample["note"]
    assert _result(run, "quality")["detail"]["rows_sampled"] == 5000
    assert _result(run, "proxy")["detail"]["rows_used"] == 1000
    # the counting metrics still count every row
    seg = next(lab for lab in run.labellings if lab["name"] == "segment")
    assert seg["n_rows"] == N


def test_the_largest_sample_of_the_auditors_is_read(big):
    run = fairaudit.audit(str(big), sensitive=["sex"], labels="segment", bootstrap=0,
                          audit=["balance", ("quality", {"sample_size": 7_000}), "proxy"])
    assert run.doc["input"]["sample"]["rows"] == 7_000
    assert _result(run, "quality")["detail"]["rows_sampled"] == 7_000


def test_an_auditor_that_reads_every_row_keeps_the_default_sample():
    from types import SimpleNamespace

    from fairaudit.core.stages import _auditors_rows

    host = Host(make_plugin_manager())

    def state(audits, **data):
        spec = chain_from_flags(host.registry, sensitive=["sex"], labels="segment",
                                audits=audits, **data)
        return SimpleNamespace(spec=spec, classes=lambda kind, group: [
            host.registry.get(kind, st.use).cls for st in getattr(spec, group)])

    assert _auditors_rows(state(["balance", "quality", "proxy"])) == 5000
    assert _auditors_rows(state(["balance", "proxy"])) == 1000
    assert _auditors_rows(state(["balance", ("quality", {"sample_size": None})])) is None  # every row
    assert _auditors_rows(state(["balance"])) is None  # no feature-reading auditor
    assert _auditors_rows(state(["quality"], sample=30_000)) is None  # --sample decides


def test_a_given_sample_size_is_kept(big):
    run = fairaudit.audit(str(big), sensitive=["sex"], labels="segment", bootstrap=0,
                          sample=9_000)
    assert run.doc["input"]["sample"]["rows"] == 9_000


def test_a_table_under_the_default_is_read_whole_as_before(tmp_path):
    rng = np.random.default_rng(1)
    n = 8000
    df = pl.DataFrame({"segment": rng.integers(0, 3, n), "sex": rng.choice(["f", "m"], n),
                       "score": rng.normal(size=n)})
    run = fairaudit.audit(df, sensitive=["sex"], labels="segment", bootstrap=0)
    assert run.doc["input"]["sample"] in (None, {})
    assert _result(run, "quality")["detail"]["rows_sampled"] == 5000  # of the 8,000 held


def test_the_known_row_count_gives_the_same_sample_as_counting_again():
    """``n_valid`` from the count (and no row-number read when no key is null) draws the same
    seeded rows as before; with null keys, the valid rows' numbers are read as before."""
    host = Host(make_plugin_manager())
    rng = np.random.default_rng(2)
    n = 3000
    sex = rng.choice(["f", "m"], n).astype(object)
    df = pl.DataFrame({"sex": sex, "segment": rng.integers(0, 3, n), "x": rng.normal(size=n)})
    with_nulls = df.with_columns(pl.when(pl.int_range(pl.len()) % 7 == 3).then(None)
                                 .otherwise(pl.col("sex")).alias("sex"))
    for frame in (df, with_nulls):
        spec = chain_from_flags(host.registry, sensitive=["sex"], labels="segment")
        roles = resolve_roles(spec, frame.schema)
        n_valid = frame.drop_nulls(["sex", "segment"]).height
        old, _ = materialise_rows(frame.lazy(), roles, spec, n, 500)
        new, _ = materialise_rows(frame.lazy(), roles, spec, n, 500, n_valid=n_valid)
        assert old.frame.equals(new.frame)
        assert new.n_rows == 500
        # the rows are the seeded draw from the valid rows' numbers (numpy's own choice)
        ids = np.flatnonzero(frame.select(pl.col("sex").is_not_null()).to_series().to_numpy())
        want = np.sort(np.random.default_rng(spec.data.seed).choice(ids, 500, replace=False))
        np.testing.assert_array_equal(new.frame.get_column("x").to_numpy(),
                                      frame.get_column("x").to_numpy()[want])
        smaller, _ = materialise_rows(frame.lazy(), roles, spec, n, 500, n_valid=n_valid,
                                      sample_to=200)
        assert smaller.n_rows == 200


def test_a_labels_audit_with_a_feature_imports_no_scikit_learn(tmp_path):
    """The quality auditor's silhouette and the proxy auditor's kernels are numpy's: no
    scikit-learn, SciPy statistics or linear algebra, or pandas in a labels audit with a numeric
    feature."""
    data = tmp_path / "t.csv"
    rng = np.random.default_rng(3)
    n = 600
    pl.DataFrame({"sex": rng.choice(["f", "m"], n), "segment": rng.integers(0, 3, n),
                  "score": rng.normal(size=n)}).write_csv(data)
    script = (
        "import sys, fairaudit\n"
        f"run = fairaudit.audit({str(data)!r}, sensitive=['sex'], labels='segment',"
        " bootstrap=0)\n"
        "assert any(r['auditor'] == 'quality' for r in run.doc['results'])\n"
        "heavy = ('sklearn', 'scipy.stats', 'scipy.linalg', 'pandas', 'great_expectations')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
