"""The accounting around a release (fairaudit.privacy.accounting): which data source an input's
release spends from by default, what a ledger records of a URL, the question of a clustering
chain, and the deltas of private-domain releases (docs/privacy.md, "The privacy unit and the
data source", "The ledger")."""

from __future__ import annotations

import json
import os

import numpy as np
import polars as pl
import pytest

import fairaudit
from fairaudit.errors import ConfigError
from fairaudit.privacy.accounting import dataset_root, input_name

BOOT = 20


@pytest.fixture(autouse=True)
def _state_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def test_the_default_source_is_the_dataset_root(tmp_path, monkeypatch):
    """Hive partition folders (one key or several), the part's file name, a glob's pattern,
    ``.``/``..`` and symbolic links do not change the default source."""
    root = tmp_path / "segments"
    part = root / "year=2026" / "month=12" / "day=01"
    part.mkdir(parents=True)
    (part / "part-0.parquet").write_bytes(b"")
    (tmp_path / "alias").symlink_to(root)
    monkeypatch.chdir(tmp_path)
    want = str(root.resolve())
    for spelling in (part / "part-0.parquet", part, root, "segments/year=2026/",
                     "./segments/./year=2026/../year=2026/month=12/day=01/part-0.parquet",
                     "segments/*/*/*/part-*.parquet", "segments/year=*/month=12/*.parquet",
                     "alias/year=2026/month=12/day=01/part-0.parquet"):
        assert dataset_root(str(spelling)) == want, spelling
    assert dataset_root((part / "part-0.parquet").as_uri()) == want
    (tmp_path / "plain").mkdir()
    assert dataset_root("plain/export-2026-12-01.csv") == str((tmp_path / "plain").resolve())
    assert dataset_root(os.path.join("~", "x.csv")) == os.path.expanduser("~")


@pytest.mark.parametrize(("url", "root"), [
    ("s3://bucket/segments/date=2026-12-01/part-0.parquet", "s3://bucket/segments"),
    ("s3://bucket/segments/*/part-*.parquet", "s3://bucket/segments"),
    ("s3://bucket/x.parquet", "s3://bucket"),
    ("postgresql://me:s3cret@db:5432/crm?sslpassword=k3y", "postgresql://db:5432/crm"),
    ("postgresql://you@db:5432/crm", "postgresql://db:5432/crm"),
    ("duckdb:///warehouse.duckdb", "duckdb://warehouse.duckdb"),
])
def test_a_url_s_source_holds_no_credential(url, root):
    """The people of a database are the same whoever logs in; a ledger never holds a password
    or a query string (which may carry a token)."""
    assert dataset_root(url) == root
    recorded = input_name(url)
    assert "s3cret" not in recorded and "k3y" not in recorded and "?" not in recorded


def _table(n: int = 900, seed: int = 1) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame({"race": rng.choice(["A", "B", "C"], n), "sex": rng.choice(["F", "M"], n),
                         "x": rng.normal(size=n), "y": rng.normal(size=n),
                         "z": rng.normal(size=n), "seg": rng.integers(0, 3, n),
                         "band": rng.integers(0, 2, n)})


def test_another_clustering_of_the_same_data_is_a_new_charged_release(tmp_path):
    """The question covers the chain's steps and the features a clusterer uses: another k,
    another clusterer or other features is a new release, charged; the same chain again is
    the stored release."""
    data = tmp_path / "p.parquet"
    _table().write_parquet(data)
    ledger = tmp_path / "l.json"

    def publish(cluster, features=None, **kw):
        return fairaudit.audit(str(data), sensitive=["race", "sex"], cluster=cluster,
                               features=features, audit=["balance"], publish=True,
                               dp_fitted="conditional", ledger=str(ledger), twins=False,
                               privacy_source="people", bootstrap=BOOT, **kw).doc

    first = publish(["kmeans:n_clusters=3"], privacy_budget=10.0, new_ledger=True)
    spent = 1.0
    for cluster, features in ((["kmeans:n_clusters=4"], None),
                              (["kmeans:n_clusters=3"], ["x", "y"]),
                              (["kmeans:n_clusters=3", "kmeans:n_clusters=2"], None)):
        doc = publish(cluster, features)
        spent += doc["privacy"]["epsilon"]
        assert doc["privacy"]["spent"] == pytest.approx(spent), (cluster, features)
    assert publish(["kmeans:n_clusters=3"]) == first
    book = json.loads(ledger.read_text())
    assert len(book["sources"]["people"]["releases"]) == 4


def test_the_deltas_of_a_source_s_releases_stay_below_the_ceiling(tmp_path, run_cli):
    """Private-domain releases add their deltas up: a source's total stays at most 1e-3 (the
    most one release may use), so its releases together are never more than (budget, 1e-3)-DP.
    The refusal exits 2 before anything is computed and leaves the ledger as it was."""
    data = tmp_path / "p.parquet"
    _table(n=1500).write_parquet(data)
    ledger = tmp_path / "l.json"
    base = ["audit", data, "--publish", "--ledger", ledger, "--dp-domain", "private",
            "--bootstrap", str(BOOT), "-q"]
    res = run_cli(*base, "-s", "race", "--labels", "seg", "--delta", "1e-3",
                  "--privacy-budget", "4", "--new-ledger")
    assert res.exit_code == 0, res.output
    before = ledger.read_bytes()
    res = run_cli(*base, "-s", "sex", "--labels", "seg", "--delta", "1e-3",
                  "-o", tmp_path / "second.html")
    out = " ".join(res.output.split())
    assert res.exit_code == 2, out
    assert "delta" in out and "0.001" in out and str(ledger) in out
    assert ledger.read_bytes() == before and not (tmp_path / "second.html").exists()
    res = run_cli(*base, "-s", "sex", "--labels", "band", "--delta", "1e-4",
                  "-o", tmp_path / "third.html")
    assert res.exit_code == 0, res.output
    with pytest.raises(ConfigError, match="delta"):
        fairaudit.audit(str(data), sensitive=["race", "sex"], labels="seg", publish=True,
                        dp_domain="private", delta=1e-3, ledger=str(ledger), bootstrap=BOOT)
