"""Object-store paths (a local S3 endpoint: moto in server mode) and Delta tables give the
numbers of the same rows read from local Parquet files (docs/sources.md)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from source_servers import s3_endpoint  # noqa: F401
from test_sources import LABELS, make_rows, same_audit

import fairaudit
from fairaudit.errors import ConfigError, InputError

BUCKET = "fairaudit-tests"


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    """Three hive partitions (year=2023..2025) of one table, as local files."""
    d = tmp_path_factory.mktemp("parts")
    rows = make_rows(1500, seed=8)
    for i, year in enumerate((2023, 2024, 2025)):
        (d / f"year={year}").mkdir()
        rows.slice(i * 500, 500).drop("rid").write_parquet(d / f"year={year}" / "part.parquet")
    return d


@pytest.fixture(scope="module")
def bucket(s3_endpoint, parts):  # noqa: F811
    s3_endpoint.create_bucket(Bucket=BUCKET)
    for f in sorted(parts.rglob("*.parquet")):
        s3_endpoint.put_object(Bucket=BUCKET, Key=f"segments/{f.relative_to(parts).as_posix()}",
                               Body=f.read_bytes())
    s3_endpoint.put_object(Bucket=BUCKET, Key="segments/_SUCCESS", Body=b"")
    buf = io.BytesIO()
    make_rows(300, seed=9).write_csv(buf)
    s3_endpoint.put_object(Bucket=BUCKET, Key="flat/people.csv", Body=buf.getvalue())
    return f"s3://{BUCKET}"


def test_an_s3_glob_audits_as_the_local_folder(bucket, parts):
    base = fairaudit.audit(str(parts), **LABELS)
    for spec in (f"{bucket}/segments/**/*.parquet", f"{bucket}/segments/"):
        run = fairaudit.audit(spec, **LABELS)
        same_audit(run, base)
        assert run.doc["input"]["source"] == {"kind": "object store"}
        assert run.doc["input"]["format"] == "parquet"


def test_hive_partitions_are_columns_in_s3_too(bucket):
    run = fairaudit.audit(f"{bucket}/segments/", sensitive=["year"], labels="segment",
                          bootstrap=0, audit=["balance"])
    assert sorted(run.doc["input"]["groups"]["year"], key=lambda g: g["group"]) == [
        {"group": str(y), "n": 500, "share": pytest.approx(1 / 3), "small": False}
        for y in (2023, 2024, 2025)]


def test_a_csv_in_s3_reads_as_the_local_csv(bucket, tmp_path):
    make_rows(300, seed=9).write_csv(tmp_path / "people.csv")
    base = fairaudit.audit(str(tmp_path / "people.csv"), **LABELS)
    same_audit(fairaudit.audit(f"{bucket}/flat/people.csv", **LABELS), base)


def test_an_s3_pattern_that_matches_nothing_is_named(bucket):
    with pytest.raises(InputError, match=r"s3://.*/nothing/\*\.parquet: the pattern matches no"):
        fairaudit.audit(f"{bucket}/nothing/*.parquet", **LABELS)


@pytest.mark.slow
def test_the_dask_engine_reads_s3_one_file_per_task(bucket, parts):
    pytest.importorskip("distributed")
    pytest.importorskip("obstore")
    base = fairaudit.audit(str(parts), **LABELS)
    run = fairaudit.audit(f"{bucket}/segments/**/*.parquet", workers=2, **LABELS)
    same_audit(run, base)  # counts exact; floats (the silhouette's sums) within TOL


def test_listing_the_store_finds_the_data_files(bucket):
    pytest.importorskip("obstore")
    from fairaudit.sources.objectstore import list_files

    assert list_files(f"{bucket}/segments/") == [
        f"{bucket}/segments/year={y}/part.parquet" for y in (2023, 2024, 2025)]
    assert list_files(f"{bucket}/segments/year=2024/*.parquet") == [
        f"{bucket}/segments/year=2024/part.parquet"]


# --------------------------------------------------------------------------------- Delta
@pytest.fixture
def delta(tmp_path):
    """A Delta table: version 0 (800 rows), version 1 (+400 rows), version 2 (overwritten by
    300 rows): its folder holds the files of every version."""
    pytest.importorskip("deltalake", reason="pip install 'fairaudit-clusters[lake]'")
    rows = make_rows(1500, seed=11)
    path = tmp_path / "segments"
    rows.slice(0, 800).write_delta(path)
    rows.slice(800, 400).write_delta(path, mode="append")
    rows.slice(1200, 300).write_delta(path, mode="overwrite")
    return path, rows


def test_a_delta_folder_is_read_as_its_latest_version(delta, tmp_path):
    path, rows = delta
    rows.slice(1200, 300).write_parquet(tmp_path / "latest.parquet")
    run = fairaudit.audit(str(path), **LABELS)  # _delta_log/: never a plain Parquet folder
    same_audit(run, fairaudit.audit(str(tmp_path / "latest.parquet"), **LABELS))
    assert run.doc["input"]["rows"] == 300
    assert run.doc["input"]["format"] == "delta"
    assert run.doc["input"]["source"] == {"kind": "delta", "version": 2}


def test_a_delta_version_is_audited_as_it_was(delta, tmp_path):
    path, rows = delta
    rows.slice(0, 1200).write_parquet(tmp_path / "v1.parquet")
    run = fairaudit.audit(str(path), format="delta", version=1, **LABELS)
    same_audit(run, fairaudit.audit(str(tmp_path / "v1.parquet"), **LABELS))
    assert run.doc["input"]["source"]["version"] == 1
    with pytest.raises(InputError, match=r"no version 7 \(versions 0 to 2\)"):
        fairaudit.audit(str(path), version=7, **LABELS)


def test_a_version_needs_a_delta_table(tmp_path):
    make_rows(100).write_parquet(tmp_path / "t.parquet")
    with pytest.raises(ConfigError, match="--version: only a Delta table has versions"):
        fairaudit.audit(str(tmp_path / "t.parquet"), version=1, **LABELS)


def test_the_dask_engine_refuses_a_delta_table(delta):
    pytest.importorskip("distributed")
    path, _ = delta
    with pytest.raises(ConfigError, match="a Delta\\s+table is read whole"):
        fairaudit.audit(str(path), workers=1, **LABELS)


def test_an_s3_delta_table(bucket, s3_endpoint, tmp_path):  # noqa: F811
    pytest.importorskip("deltalake")
    import os

    rows = make_rows(600, seed=12)
    opts = {"AWS_ENDPOINT_URL": os.environ["AWS_ENDPOINT_URL"], "AWS_ALLOW_HTTP": "true",
            "AWS_REGION": "us-east-1", "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}
    rows.write_delta(f"{bucket}/delta/people", storage_options=opts)
    rows.write_parquet(tmp_path / "p.parquet")
    run = fairaudit.audit(f"{bucket}/delta/people", format="delta", **LABELS)
    same_audit(run, fairaudit.audit(str(tmp_path / "p.parquet"), **LABELS))
    assert np.isclose(run.doc["input"]["rows"], 600)


# ------------------------------------------------------------------ --publish from a store
PUBLISH = {"sensitive": ["sex"], "labels": "segment", "audit": ["balance"], "bootstrap": 20,
           "publish": True, "epsilon": 0.6, "dp_domain": "private", "delta": 1e-6}


def test_a_release_from_s3_and_from_its_local_copy_share_one_budget(bucket, parts, tmp_path):
    """The fingerprint is of the audited rows, so the same people in an object store and in a
    local folder are one release: the copy returns the stored release (no budget spent) and a
    new question is charged to the same budget (issue 34 for issue 36's sources)."""
    pytest.importorskip("opendp", reason="pip install 'fairaudit-clusters[publish]'")
    ledger = tmp_path / "ledger.json"
    first = fairaudit.audit(f"{bucket}/segments/**/*.parquet", ledger=ledger, new_ledger=True,
                            privacy_budget=1.0, **PUBLISH)
    assert first.doc["privacy"]["ledger"]["source"] == f"{bucket}/segments"
    again = fairaudit.audit(str(parts), ledger=ledger, privacy_source=f"{bucket}/segments",
                            **PUBLISH)
    assert again.doc == first.doc  # the stored release: the same rows, the same question
    with pytest.raises(ConfigError, match="budget"):  # 0.6 + 0.6 > 1: one budget
        fairaudit.audit(str(parts), ledger=ledger, privacy_source=f"{bucket}/segments",
                        **{**PUBLISH, "sensitive": ["sex", "year"]})


def test_a_delta_table_can_be_published(delta, tmp_path):
    pytest.importorskip("opendp", reason="pip install 'fairaudit-clusters[publish]'")
    path, _ = delta
    run = fairaudit.audit(str(path), ledger=tmp_path / "ledger.json", new_ledger=True,
                          privacy_budget=1.0, **PUBLISH)
    assert run.doc["privacy"]["mode"] == "dp"
    assert run.doc["privacy"]["ledger"]["source"] == str(path)
