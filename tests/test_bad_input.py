"""The bad-input matrix: each case exits 2 with a short message naming the culprit, never a
traceback; the input is never modified and a failed run leaves no report and no temp file."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def out_dir(tmp_path) -> Path:
    d = tmp_path / "out"
    d.mkdir()
    return d


@pytest.fixture
def audit_bad(run_cli, out_dir):
    """Run ``fairaudit audit`` expecting exit 2; check the message, input and outputs."""

    def _run(data: Path | str, *args: str, culprits: tuple[str, ...], code: int = 2):
        data_path = Path(data)
        before = _sha(data_path) if data_path.is_file() else None
        result = run_cli("audit", str(data), "--out", str(out_dir / "report.html"), *args)
        assert result.exit_code == code, (
            f"expected exit {code}, got {result.exit_code}:\n{result.output}"
        )
        err = result.stderr
        for c in culprits:
            assert c in err, f"the message does not name {c!r}:\n{err}"
        assert "Traceback" not in result.output
        assert len(err.strip().splitlines()) <= 6, f"the message is too long:\n{err}"
        assert list(out_dir.iterdir()) == [], "a failed run left files behind"
        if before is not None:
            assert _sha(data_path) == before, "the input file was modified"
        return result

    return _run


def _write(frame: pl.DataFrame, path: Path) -> Path:
    frame.write_parquet(path)
    return path


# ----------------------------------------------------------------------------- files
def test_missing_file(audit_bad, tmp_path):
    audit_bad(tmp_path / "nope.parquet", "--sensitive", "sex", culprits=("nope.parquet",))


def test_glob_matching_nothing(audit_bad, tmp_path):
    audit_bad(f"{tmp_path}/nothing-*.parquet", "--sensitive", "sex", culprits=("nothing-*",))


def test_not_parquet(audit_bad, tmp_path):
    path = tmp_path / "garbage.parquet"
    path.write_bytes(b"this is not a parquet file\x00\x01\x02" * 50)
    audit_bad(path, "--sensitive", "sex", culprits=("garbage.parquet", "Parquet"))


def test_truncated_parquet(audit_bad, tmp_path, synthetic):
    good = _write(synthetic, tmp_path / "good.parquet")
    path = tmp_path / "truncated.parquet"
    path.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    audit_bad(path, "--sensitive", "sex", "--labels", "segment", culprits=("truncated.parquet",))


def test_empty_table(audit_bad, tmp_path, synthetic):
    path = _write(synthetic.head(0), tmp_path / "empty.parquet")
    audit_bad(
        path, "--sensitive", "sex", "--labels", "segment", culprits=("empty.parquet", "empty")
    )


def test_non_utf8_csv(audit_bad, tmp_path):
    path = tmp_path / "latin1.csv"
    text = "name,sex,segment\n" + "".join(
        f"Jos\u00e9 {i},{'FM'[i % 2]},{i % 3}\n" for i in range(40)
    )
    path.write_bytes(text.encode("latin-1"))
    audit_bad(path, "--sensitive", "sex", "--labels", "segment", culprits=("latin1.csv", "UTF-8"))


def test_unknown_format(audit_bad, tmp_path):
    path = tmp_path / "data.xlsx"
    path.write_bytes(b"PK\x03\x04 not really a spreadsheet")
    audit_bad(path, "--sensitive", "sex", culprits=("data.xlsx",))


# ----------------------------------------------------------------------------- columns
def test_missing_sensitive_column_suggests_close_names(audit_bad, parquet_path):
    r = audit_bad(parquet_path, "--sensitive", "sexx", "--labels", "segment", culprits=("sexx",))
    assert "'sex'" in r.stderr  # did you mean


def test_missing_labels_column(audit_bad, parquet_path):
    r = audit_bad(parquet_path, "--sensitive", "sex", "--labels", "segmnt", culprits=("segmnt",))
    assert "'segment'" in r.stderr


def test_sensitive_column_with_one_group(audit_bad, tmp_path, synthetic):
    path = _write(synthetic.with_columns(pl.lit("F").alias("sex")), tmp_path / "one.parquet")
    audit_bad(path, "--sensitive", "sex", "--labels", "segment", culprits=("'sex'", "single group"))


def test_all_null_sensitive_column(audit_bad, tmp_path, synthetic):
    frame = synthetic.with_columns(pl.lit(None, dtype=pl.String).alias("race"))
    path = _write(frame, tmp_path / "nulls.parquet")
    audit_bad(path, "--sensitive", "sex,race", "--labels", "segment", culprits=("race", "null"))


def test_null_sensitive_values_with_on_null_error(audit_bad, tmp_path, synthetic):
    frame = synthetic.with_columns(
        pl.when(pl.int_range(pl.len()) < 5).then(None).otherwise(pl.col("sex")).alias("sex")
    )
    path = _write(frame, tmp_path / "some_nulls.parquet")
    audit_bad(
        path, "--sensitive", "sex", "--labels", "segment", "--on-null", "error",
        culprits=("'sex'", "5 row(s)", "null"),
    )  # fmt: skip


def test_float_sensitive_column(audit_bad, tmp_path, synthetic):
    frame = synthetic.with_columns(pl.col("x1").alias("income"))
    path = _write(frame, tmp_path / "float.parquet")
    audit_bad(path, "--sensitive", "income", "--labels", "segment", culprits=("'income'", "float"))


@pytest.mark.parametrize(
    ("values", "what"),
    [
        (lambda n: np.linspace(0, 2, n), "non-integral"),
        (lambda n: np.where(np.arange(n) % 2 == 0, 1.0, np.nan), "non-integral"),
    ],
    ids=["float", "float-nan"],
)  # string labels are cluster names (tests/test_gates.py::test_named_labels_keep_their_names)
def test_labels_column_not_integral(audit_bad, tmp_path, synthetic, values, what):
    frame = synthetic.with_columns(pl.Series("cluster_id", values(synthetic.height)))
    path = _write(frame, tmp_path / "labels.parquet")
    audit_bad(path, "--sensitive", "sex", "--labels", "cluster_id", culprits=("'cluster_id'",))


def test_id_like_sensitive_column_is_refused_with_a_hint(audit_bad, tmp_path):
    n = 100_000
    rng = np.random.default_rng(0)
    frame = pl.DataFrame(
        {
            "person": [f"p{i:06d}" for i in range(n)],
            "sex": rng.choice(["F", "M"], size=n),
            "segment": rng.integers(0, 3, size=n),
        }
    )
    path = _write(frame, tmp_path / "ids.parquet")
    r = audit_bad(
        path, "--sensitive", "person", "--labels", "segment", culprits=("'person'", "identifier")
    )
    assert "100000" in r.stderr.replace(",", "")


def test_feature_with_nan_is_named(audit_bad, tmp_path, synthetic):
    frame = synthetic.with_columns(
        pl.when(pl.int_range(pl.len()) == 7).then(float("nan")).otherwise(pl.col("x2")).alias("x2")
    )
    path = _write(frame, tmp_path / "nan.parquet")
    audit_bad(
        path, "--sensitive", "sex", "--cluster", "kmeans:n_clusters=3", "--features", "x1,x2",
        culprits=("'x2'", "--on-nonfinite"),
    )  # fmt: skip


# ----------------------------------------------------------------------------- clustering
def test_k_larger_than_rows(audit_bad, tmp_path, synthetic):
    path = _write(synthetic.head(12), tmp_path / "tiny.parquet")
    audit_bad(
        path, "--sensitive", "sex", "--cluster", "kmeans:n_clusters=20", "--features", "x1,x2",
        culprits=("n_clusters", "20", "12"),
    )  # fmt: skip


def test_a_group_smaller_than_k_is_allowed_for_kmeans_and_reported(run_cli, tmp_path, synthetic):
    """k-means ignores groups, so a group with fewer rows than k is no reason to refuse; the
    group is flagged as small (below min_cell: too small to judge) with its exact size, and the
    data checks warn about it."""
    extra = synthetic.head(2).with_columns(pl.lit("tiny").alias("race"))
    path = _write(pl.concat([synthetic, extra]), tmp_path / "tiny_group.parquet")
    out = tmp_path / "r.html"
    result = run_cli(
        "audit", str(path), "--sensitive", "race", "--cluster", "kmeans:n_clusters=4",
        "--features", "x1,x2", "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    tiny = next(g for g in doc["input"]["groups"]["race"] if g["group"] == "tiny")
    assert tiny["small"] and tiny["n"] == 2
    warned = [c for c in doc["checks"] if not c["success"] and c["column"] == "race"]
    assert warned, "the data checks do not mention the small group of 'race'"
    assert all(c["severity"] == "warning" for c in warned)
    assert "tiny" in " ".join(c["observed"] for c in warned)


def test_unknown_clusterer_suggests(audit_bad, parquet_path):
    audit_bad(
        parquet_path, "--sensitive", "sex", "--cluster", "kmean",
        culprits=("'kmean'", "did you mean 'kmeans'"),
    )  # fmt: skip


def test_unknown_parameter_suggests(audit_bad, parquet_path):
    audit_bad(
        parquet_path, "--sensitive", "sex", "--cluster", "kmeans:n_cluster=3",
        culprits=("n_cluster", "did you mean n_clusters"),
    )  # fmt: skip


def test_parameter_violating_its_constraint(audit_bad, parquet_path):
    audit_bad(
        parquet_path, "--sensitive", "sex", "--cluster", "kmeans:n_clusters=1",
        culprits=("n_clusters", "an int >= 2", "got 1"),
    )  # fmt: skip


def test_sensitive_column_as_feature_is_refused(audit_bad, parquet_path):
    audit_bad(
        parquet_path, "--sensitive", "sex", "--cluster", "kmeans:n_clusters=3",
        "--features", "x1,sex", culprits=("sex",),
    )  # fmt: skip


# ----------------------------------------------------------------------------- chains
def test_malformed_chain_toml(run_cli, tmp_path, parquet_path, out_dir):
    chain = tmp_path / "broken.toml"
    chain.write_text('[data]\nsensitive = ["sex"\n[[audit]]\nuse = "balance"\n', encoding="utf-8")
    for args in (
        ("validate", str(chain)),
        ("run", str(chain), str(parquet_path), "-o", str(out_dir / "r.html")),
        ("audit", str(parquet_path), "--chain", str(chain), "-o", str(out_dir / "r.html")),
    ):
        result = run_cli(*args)
        assert result.exit_code == 2, result.output
        assert "broken.toml" in result.stderr and "TOML" in result.stderr
        assert "line" in result.stderr  # where in the file
        assert "Traceback" not in result.output
    assert list(out_dir.iterdir()) == []


def test_chain_not_utf8(run_cli, tmp_path):
    chain = tmp_path / "latin.toml"
    chain.write_bytes('# caf\u00e9\n[data]\nsensitive = ["sex"]\n'.encode("latin-1"))
    result = run_cli("validate", str(chain))
    assert result.exit_code == 2
    assert "latin.toml" in result.stderr and "UTF-8" in result.stderr


def test_missing_chain_file(run_cli, tmp_path):
    result = run_cli("validate", str(tmp_path / "nochain.toml"))
    assert result.exit_code == 2
    assert "nochain.toml" in result.stderr


def test_unknown_component_and_parameter_in_a_chain(run_cli, tmp_path):
    chain = tmp_path / "typos.toml"
    chain.write_text(
        '[data]\nsensitive = ["sex"]\n'
        '[[cluster]]\nuse = "kmeans"\nparams = { n_cluster = 3 }\n'
        '[[audit]]\nuse = "balanse"\n',
        encoding="utf-8",
    )
    result = run_cli("validate", str(chain))
    assert result.exit_code == 2
    err = result.stderr
    assert "typos.toml" in err
    assert "cluster[0].params.n_cluster" in err and "did you mean n_clusters" in err
    assert "audit[0].use" in err and "'balance'" in err


# ----------------------------------------------------------------------------- integrity
def test_successful_run_does_not_modify_the_input(run_cli, parquet_path, tmp_path):
    before = _sha(parquet_path)
    mtime = parquet_path.stat().st_mtime_ns
    siblings = sorted(p.name for p in parquet_path.parent.iterdir())
    result = run_cli(
        "audit", str(parquet_path), "--sensitive", "sex", "--labels", "segment",
        "--out", str(tmp_path / "elsewhere.html"),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert _sha(parquet_path) == before
    assert parquet_path.stat().st_mtime_ns == mtime
    new = set(p.name for p in parquet_path.parent.iterdir()) - set(siblings)
    assert new <= {"elsewhere.html", "elsewhere.json", "out"}


def test_failed_run_keeps_an_existing_report_intact(run_cli, parquet_path, tmp_path):
    out = tmp_path / "keep.html"
    out.write_text("previous report", encoding="utf-8")
    out.with_suffix(".json").write_text('{"previous": true}', encoding="utf-8")
    result = run_cli(
        "audit", str(parquet_path), "--sensitive", "nosuchcolumn", "--labels", "segment",
        "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 2
    assert out.read_text(encoding="utf-8") == "previous report"
    assert out.with_suffix(".json").read_text(encoding="utf-8") == '{"previous": true}'
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


# ----------------------------------------------------------------------------- the matrix
def _csv(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _rows(n: int = 40) -> str:
    return "".join(f"{'FM'[i % 2]},{i % 3},{i * 0.5}\n" for i in range(n))


def _ragged(tmp_path, synthetic):
    return _csv(tmp_path, "ragged.csv", "sex,segment,x\n" + _rows(10) + "F,1,2.0,oops\n"
                + _rows(5)), ("ragged.csv", "line 12", "4 field(s)")


def _ragged_short(tmp_path, synthetic):
    return _csv(tmp_path, "short.csv", "sex,segment,x\n" + _rows(3) + "F,1\n"), (
        "short.csv", "line 5", "2 field(s)")


def _duplicate_header(tmp_path, synthetic):
    return _csv(tmp_path, "dup.csv", "sex,segment,sex\n" + _rows()), ("dup.csv", "'sex'", "twice")


def _header_only(tmp_path, synthetic):
    return _csv(tmp_path, "header.csv", "sex,segment,x\n"), ("header.csv", "no rows")


def _all_null_labels(tmp_path, synthetic):
    text = "sex,segment,x\n" + "".join(f"{'FM'[i % 2]},,{i}\n" for i in range(40))
    return _csv(tmp_path, "nolabels.csv", text), ("labels column 'segment'", "null in every row")


def _partitions(tmp_path, synthetic):
    d = tmp_path / "parts"
    d.mkdir()
    synthetic.head(100).write_parquet(d / "a.parquet")
    synthetic.tail(100).with_columns(pl.col("segment").cast(pl.String)).write_parquet(
        d / "b.parquet")
    return d, ("'segment'", "a.parquet", "b.parquet", "Int64", "String")


def _csv_partitions(tmp_path, synthetic):
    d = tmp_path / "cparts"
    d.mkdir()
    (d / "a.csv").write_text("sex,segment,x\n" + _rows(), encoding="utf-8")
    (d / "b.csv").write_text("sex,segment,x\n" + "".join(f"F,s{i},1\n" for i in range(40)),
                             encoding="utf-8")
    return f"{d}/*.csv", ("'segment'", "a.csv", "b.csv")


def _parquet(tmp_path, synthetic):
    return _write(synthetic, tmp_path / "data.parquet"), ()


MATRIX = {
    # id: (make input, extra args, culprits beyond those the input maker names)
    "ragged-csv-long-row": (_ragged, ("-s", "sex", "--labels", "segment"), ()),
    "ragged-csv-short-row": (_ragged_short, ("-s", "sex", "--labels", "segment"), ()),
    "duplicate-csv-header": (_duplicate_header, ("-s", "sex", "--labels", "segment"), ()),
    "header-only-csv": (_header_only, ("-s", "sex", "--labels", "segment"), ()),
    "all-null-labels": (_all_null_labels, ("-s", "sex", "--labels", "segment"), ()),
    "partitions-disagree": (_partitions, ("-s", "sex", "--labels", "segment"), ()),
    "csv-partitions-disagree": (_csv_partitions, ("-s", "sex", "--labels", "segment"), ()),
    "sensitive-twice": (_parquet, ("-s", "sex,race,sex", "--labels", "segment"),
                        ("--sensitive", "'sex'", "twice")),
    "sensitive-is-labels": (_parquet, ("-s", "sex,segment", "--labels", "segment"),
                            ("--labels", "'segment'", "both")),
    "bound-above-range": (_parquet, ("-s", "sex", "--labels", "segment", "--fail-under",
                                     "balance=1.5"), ("--fail-under balance=1.5", "range")),
    "bound-nan": (_parquet, ("-s", "sex", "--labels", "segment", "--fail-under",
                             "balance=nan"), ("--fail-under balance=nan", "finite")),
    "bound-inf": (_parquet, ("-s", "sex", "--labels", "segment", "--fail-over", "wd=inf"),
                  ("--fail-over wd=inf", "finite")),
    "bound-against-direction": (_parquet, ("-s", "sex", "--labels", "segment", "--fail-under",
                                           "wd=0.1"), ("wd", "lower-is-better", "--fail-over")),
    "ci-without-bootstrap": (_parquet, ("-s", "sex", "--labels", "segment", "--fail-under",
                                        "balance@ci=0.6", "--bootstrap", "0"),
                             ("balance@ci", "--bootstrap 0")),
    "unknown-skip-audit": (_parquet, ("-s", "sex", "--labels", "segment", "--skip-audit",
                                      "proxi"), ("--skip-audit", "'proxy'")),
    "unknown-audit": (_parquet, ("-s", "sex", "--labels", "segment", "--audit", "balanse"),
                      ("--audit[0]", "'balance'")),
    "debug-keeps-exit-2": (_ragged, ("-s", "sex", "--labels", "segment", "--debug"), ()),
}


@pytest.mark.parametrize("case", list(MATRIX), ids=list(MATRIX))
def test_bad_input_matrix(audit_bad, run_cli, tmp_path, synthetic, case):
    """Each case exits 2 naming its culprit; the input is untouched and nothing is written.
    ``--debug`` adds a traceback but never changes the exit code."""
    make, args, extra = MATRIX[case]
    data, culprits = make(tmp_path, synthetic)
    if "--debug" in args:
        out = tmp_path / "dbg"
        out.mkdir()
        r = run_cli("audit", str(data), "--out", str(out / "r.html"), *args)
        assert r.exit_code == 2, r.output
        assert "Traceback" in r.stderr and all(c in r.stderr for c in culprits)
        assert len(r.stderr.splitlines()) < 100, "--debug floods the terminal"
        assert list(out.iterdir()) == []
        return
    audit_bad(data, *args, culprits=(*culprits, *extra))


def test_a_quoted_separator_is_not_a_ragged_row(run_cli, tmp_path):
    text = 'name,sex,segment\n' + "".join(
        f'"Doe, J{i}",{"FM"[i % 2]},{i % 3}\n' if i % 7 == 0 else f"J{i},{'FM'[i % 2]},{i % 3}\n"
        for i in range(60))
    path = _csv(tmp_path, "quoted.csv", text)
    r = run_cli("audit", str(path), "-s", "sex", "--labels", "segment", "--audit", "balance",
                "--bootstrap", "0", "-o", str(tmp_path / "r.html"))
    assert r.exit_code == 0, r.output


def test_debug_keeps_the_threshold_exit_code_and_stays_quiet(run_cli, parquet_path, tmp_path):
    r = run_cli("audit", str(parquet_path), "-s", "sex", "--labels", "segment", "--audit",
                "balance", "--bootstrap", "0", "--fail-under", "balance=0.99", "--debug",
                "-o", str(tmp_path / "r.html"))
    assert r.exit_code == 1, r.output
    assert not any(ln.startswith(("DEBUG great_expectations", "INFO great_expectations"))
               for ln in r.stderr.splitlines())
    assert len(r.stderr.splitlines()) < 60


# ----------------------------------------------------------------------------- issue 21
# Tables as people have them, and every parameter checked in one place. Each case of the issue's
# "Why" list (1-10) is here by number.
def _people(n: int = 400, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame({
        "person_id": np.arange(n),
        "sex": rng.choice(["F", "M"], size=n),
        "race": rng.choice(["a", "b", "c"], size=n),
        "segment": rng.integers(0, 3, size=n),
    })


def _audit_ok(run_cli, tmp_path, data, *args) -> dict:
    out = tmp_path / "ok" / "r.html"
    out.parent.mkdir(exist_ok=True)
    r = run_cli("audit", str(data), "-o", str(out), "--bootstrap", "0", *args)
    assert r.exit_code in (0, 1), r.output
    assert "Traceback" not in r.output
    return json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))


def test_1_labels_audit_with_only_an_id_column_left_skips_feature_steps(run_cli, tmp_path):
    path = _write(_people(), tmp_path / "t.parquet")
    doc = _audit_ok(run_cli, tmp_path, path, "--sensitive", "race,sex", "--labels", "segment")
    assert doc["input"]["excluded_columns"] == {"person_id": "unique per row (ID-like)"}
    assert doc["preprocessing"] == []
    assert not any(r["auditor"] in ("proxy", "quality") for r in doc["results"])
    note = " ".join(doc["notes"])
    assert "no feature column" in note and "proxy" in note and "person_id" in note
    assert any(r["auditor"] == "balance" for r in doc["results"])


def test_1_labels_audit_with_every_feature_excluded(run_cli, tmp_path):
    frame = _people().with_columns(pl.Series("x", np.linspace(0, 1, 400)))
    path = _write(frame, tmp_path / "t.parquet")
    doc = _audit_ok(run_cli, tmp_path, path, "-s", "race,sex", "--labels", "segment",
                    "--exclude", "x")
    assert "no feature column" in " ".join(doc["notes"])


def _index_csv(tmp_path: Path, n: int, quoted: bool) -> Path:
    """What pandas' to_csv (``,sex,...`` / ``0,F,...``) and R's write.csv (``"","sex"`` /
    ``"1","F"``) write: an unnamed first column holding the row index."""
    rng = np.random.default_rng(1)
    head = '"","sex","race","segment","x"' if quoted else ",sex,race,segment,x"
    rows = [head]
    for i in range(n):
        idx = f'"{i + 1}"' if quoted else str(i)
        rows.append(f"{idx},{'FM'[i % 2]},{'abc'[i % 3]},{i % 4},{rng.normal():.4f}")
    path = tmp_path / ("r.csv" if quoted else "pandas.csv")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("quoted", [False, True], ids=["pandas-to_csv", "R-write.csv"])
@pytest.mark.parametrize("n", [15, 200])
def test_2_unnamed_index_column_is_set_aside(run_cli, tmp_path, quoted, n):
    path = _index_csv(tmp_path, n, quoted)
    doc = _audit_ok(run_cli, tmp_path, path, "-s", "race,sex", "--labels", "segment")
    assert "" in doc["input"]["excluded_columns"], doc["input"]["excluded_columns"]
    assert "index" in doc["input"]["excluded_columns"][""]
    assert doc["input"]["features"] == ["x"]


def test_2_exclude_an_empty_column_name(run_cli, tmp_path):
    path = _index_csv(tmp_path, 200, quoted=False)
    doc = _audit_ok(run_cli, tmp_path, path, "-s", "race,sex", "--labels", "segment",
                    "--exclude", "")
    assert doc["input"]["excluded_columns"][""] == "listed in exclude"
    import fairaudit

    run = fairaudit.audit(str(path), sensitive="race,sex", labels="segment", exclude=[""],
                          bootstrap=0)
    assert run.doc["input"]["excluded_columns"][""] == "listed in exclude"


@pytest.mark.parametrize("kind", ["string", "categorical", "enum"])
def test_3_string_and_categorical_labels_pass_the_input_checks(run_cli, tmp_path, kind):
    names = np.array(["1st", "2nd", "engineering crew"])
    col = pl.Series("klass", names[_people()["segment"].to_numpy()])
    if kind == "categorical":
        col = col.cast(pl.Categorical)
    elif kind == "enum":
        col = col.cast(pl.Enum(list(names)))
    path = _write(_people().drop("person_id").with_columns(col), tmp_path / "t.parquet")
    doc = _audit_ok(run_cli, tmp_path, path, "-s", "race,sex", "--labels", "klass")
    failed = [c for c in doc["checks"] if not c["success"] and c["severity"] == "error"]
    assert failed == [], failed
    assert sorted(doc["labellings"][0]["cluster_names"]) == sorted(names)


def _nested(tmp_path) -> Path:
    n = 400
    frame = _people(n).with_columns(
        pl.Series("tags", [[i % 3, 1] for i in range(n)]),
        pl.Series("address", [{"city": "x", "zip": i} for i in range(n)]),
        pl.Series("vec", [[0.5, float(i)] for i in range(n)], dtype=pl.Array(pl.Float64, 2)),
    )
    return _write(frame, tmp_path / "nested.parquet")


def test_4_unused_nested_columns_are_ignored_with_a_note(run_cli, tmp_path):
    doc = _audit_ok(run_cli, tmp_path, _nested(tmp_path), "-s", "race,sex", "--labels",
                    "segment")
    excluded = doc["input"]["excluded_columns"]
    for c in ("tags", "address", "vec"):
        assert "nested" in excluded[c], excluded


@pytest.mark.parametrize(("role", "args"), [
    ("sensitive", ("-s", "tags,sex", "--labels", "segment")),
    ("labels", ("-s", "sex", "--labels", "address")),
    ("features", ("-s", "sex", "--cluster", "kmeans:n_clusters=2", "--features", "vec")),
])
def test_4_a_nested_column_named_in_a_role_is_refused(audit_bad, tmp_path, role, args):
    col = args[args.index("--features") + 1] if role == "features" else (
        "tags" if role == "sensitive" else "address")
    audit_bad(_nested(tmp_path), *args, culprits=(repr(col), "nested"))


def test_5_a_folder_of_several_formats_is_refused_naming_the_files_left_out(audit_bad, tmp_path):
    d = tmp_path / "mixed"
    d.mkdir()
    _people().head(200).write_parquet(d / "a.parquet")
    _people().tail(200).write_csv(d / "b.csv")
    audit_bad(d, "-s", "race,sex", "--labels", "segment", culprits=("b.csv", "mixed"))


def test_5_a_folder_of_csv_files_is_read_whole(run_cli, tmp_path):
    d = tmp_path / "csvs"
    d.mkdir()
    _people().head(200).write_csv(d / "a.csv")
    _people().tail(200).write_csv(d / "b.csv")
    (d / "_SUCCESS").write_text("", encoding="utf-8")
    doc = _audit_ok(run_cli, tmp_path, d, "-s", "race,sex", "--labels", "segment")
    assert doc["input"]["rows"] == 400


def test_6_hive_partition_keys_are_columns(run_cli, tmp_path):
    root = tmp_path / "hive"
    for year, part in ((2023, _people(200, 1)), (2024, _people(200, 2))):
        (root / f"year={year}").mkdir(parents=True)
        part.write_parquet(root / f"year={year}" / "part.parquet")
    doc = _audit_ok(run_cli, tmp_path, root, "-s", "race,year", "--labels", "segment")
    assert doc["input"]["rows"] == 400
    assert {str(g["group"]) for g in doc["input"]["groups"]["year"]} == {"2023", "2024"}
    doc = _audit_ok(run_cli, tmp_path, f"{root}/*/*.parquet", "-s", "race,year", "--labels",
                    "segment")
    assert {str(g["group"]) for g in doc["input"]["groups"]["year"]} == {"2023", "2024"}


class _CapsuleOnly:
    """Only the Arrow PyCapsule stream interface (no pyarrow type for polars to recognise)."""

    def __init__(self, obj):
        self._obj = obj

    def __arrow_c_stream__(self, requested_schema=None):
        return self._obj.__arrow_c_stream__(requested_schema)


@pytest.mark.parametrize("kind", ["table", "reader", "capsule", "duckdb"])
def test_7_arrow_stream_objects_are_audited_like_frames(kind):
    pa = pytest.importorskip("pyarrow")
    import fairaudit

    frame = _people()
    table = pa.table({c: frame[c].to_list() for c in frame.columns})
    if kind == "table":
        data = table
    elif kind == "reader":
        data = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=64))
    elif kind == "capsule":
        data = _CapsuleOnly(table)
    else:
        duckdb = pytest.importorskip("duckdb")
        con = duckdb.connect()
        con.register("people", table)
        data = con.sql("select * from people")
    run = fairaudit.audit(data, sensitive=["race", "sex"], labels="segment", bootstrap=0)
    expected = fairaudit.audit(frame, sensitive=["race", "sex"], labels="segment", bootstrap=0)
    assert run.doc["input"]["rows"] == 400
    got = {(r["metric"], r["attribute"]): r["value"] for r in run.results}
    want = {(r["metric"], r["attribute"]): r["value"] for r in expected.results}
    assert got == want


def test_7_an_object_that_is_no_table_is_named(tmp_path):
    import fairaudit
    from fairaudit.errors import FairauditError

    with pytest.raises(FairauditError, match="data: expected"):
        fairaudit.audit(12, sensitive=["sex"])


@pytest.mark.parametrize("flag_value", [("--bootstrap", "1000000000"), ("--bootstrap", "-1"),
                                        ("--min-cell", "0"), ("--min-cell", "-4"),
                                        ("--seed", "-1"), ("--k", "1")])
def test_8_out_of_range_options_are_refused_up_front(audit_bad, parquet_path, flag_value):
    flag, value = flag_value
    audit_bad(parquet_path, "-s", "sex", "--labels", "segment", flag, value,
              culprits=(flag, value))


def test_8_a_chain_nested_too_deep(run_cli, tmp_path, parquet_path, out_dir):
    chain = tmp_path / "deep.toml"
    chain.write_text("[data]\nsensitive = ['sex']\nx = " + "[" * 5000 + "]" * 5000 + "\n",
                     encoding="utf-8")
    for args in (("validate", str(chain)),
                 ("run", str(chain), str(parquet_path), "-o", str(out_dir / "r.html"))):
        r = run_cli(*args)
        assert r.exit_code == 2, r.output
        assert "deep.toml" in r.stderr and "nested" in r.stderr


@pytest.fixture
def audit_json(run_cli, parquet_path, tmp_path) -> Path:
    out = tmp_path / "good" / "a.html"
    out.parent.mkdir()
    r = run_cli("audit", str(parquet_path), "-s", "sex", "--labels", "segment", "--audit",
                "balance", "--bootstrap", "0", "-o", str(out))
    assert r.exit_code == 0, r.output
    return out.with_suffix(".json")


def _bad_json(tmp_path: Path, audit_json: Path, case: str) -> tuple[Path, tuple[str, ...]]:
    path = tmp_path / f"{case}.json"
    if case == "deep":
        path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
        return path, ("nested",)
    doc = json.loads(audit_json.read_text(encoding="utf-8"))
    if case == "no-labellings":
        del doc["labellings"]
        want = ("labellings",)
    elif case == "labellings-int":
        doc["labellings"] = 5
        want = ("labellings",)
    elif case == "result-value-str":
        doc["results"][0]["value"] = "high"
        want = ("results[0].value", '"high"')
    else:
        doc["input"]["rows"] = "many"
        want = ("input.rows",)
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path, want


@pytest.mark.parametrize("case", ["deep", "no-labellings", "labellings-int", "result-value-str",
                                  "rows-str"])
@pytest.mark.parametrize("command", ["render", "compare", "history", "export"])
def test_8_commands_reading_audit_json_validate_it(run_cli, tmp_path, audit_json, case,
                                                   command):
    bad, want = _bad_json(tmp_path, audit_json, case)
    out = tmp_path / "o"
    out.mkdir()
    args = {
        "render": ("render", str(bad), "-o", str(out / "r.html")),
        "compare": ("compare", str(audit_json), str(bad), "-o", str(out / "c.html")),
        "history": ("history", str(audit_json), str(bad), "-o", str(out / "h.html")),
        "export": ("export", str(audit_json), str(bad), "--csv", str(out / "e.csv")),
    }[command]
    r = run_cli(*args)
    assert r.exit_code == 2, r.output
    assert bad.name in r.stderr, r.stderr
    for w in want:
        assert w in r.stderr, r.stderr
    assert "Traceback" not in r.output and len(r.stderr.splitlines()) <= 6
    assert list(out.iterdir()) == []


API_CASES = {
    "min_cell=-4": ({"min_cell": -4}, "min_cell"),
    "min_cell=0": ({"min_cell": 0}, "min_cell"),
    "bootstrap=-3": ({"bootstrap": -3}, "bootstrap"),
    "bootstrap=2.5": ({"bootstrap": 2.5}, "bootstrap"),
    "bootstrap=1e9": ({"bootstrap": 10**9}, "bootstrap"),
    "sensitive=123": ({"sensitive": 123}, "sensitive"),
    "sensitive=dict": ({"sensitive": {"sex": 1}}, "sensitive"),
    "sensitive=[1]": ({"sensitive": [1]}, "sensitive"),
    "labels=5": ({"labels": 5}, "labels"),
    "labels=list": ({"labels": ["segment"]}, "labels"),
    "fail_under=str": ({"fail_under": "balance=0.8"}, "fail_under"),
    "fail_under=str-value": ({"fail_under": {"balance": "high"}}, "fail_under"),
    "seed=abc": ({"seed": "abc"}, "seed"),
    "seed=-1": ({"seed": -1}, "seed"),
    "seed=1.5": ({"seed": 1.5}, "seed"),
    "k=1": ({"k": 1}, "k"),
    "sample=1": ({"sample": 1}, "sample"),
    "on_null=bad": ({"on_null": "drop"}, "on_null"),
    "features=int": ({"features": 3}, "features"),
    "exclude=ndarray-int": ({"exclude": np.array([1, 2])}, "exclude"),
    "cluster=int": ({"cluster": 5}, "cluster"),
    "cluster=bad-pair": ({"cluster": [("kmeans", "n_clusters=3")]}, "cluster"),
    "workers=0": ({"workers": 0}, "workers"),
    "tolerance=str": ({"tolerance": "balance=0.1"}, "tolerance"),
}


@pytest.mark.parametrize("case", list(API_CASES), ids=list(API_CASES))
def test_9_the_api_checks_every_parameter_before_any_work(parquet_path, case, monkeypatch):
    import fairaudit
    import fairaudit.core.runner
    from fairaudit.errors import ConfigError

    kwargs, name = API_CASES[case]
    monkeypatch.setattr(fairaudit.core.runner, "run_chain",
                        lambda *a, **k: pytest.fail("work started before validation"))
    args = {"sensitive": ["sex"], "labels": "segment", **kwargs}
    with pytest.raises(ConfigError) as info:
        fairaudit.audit(str(parquet_path), **args)
    assert str(info.value).startswith(f"{name}:"), str(info.value)
    assert "expected" in str(info.value)


def test_9_the_api_accepts_what_it_documents(parquet_path):
    import fairaudit

    run = fairaudit.audit(str(parquet_path), sensitive=np.array(["sex", "race"]),
                          labels="segment", exclude="x1, x2", bootstrap=0, seed=np.int64(3),
                          audit=[("balance", {})], fail_under={"balance": 0.1},
                          cluster=())
    assert run.doc["input"]["sensitive"] == ["sex", "race"]
    assert run.doc["chain"]["seed"] == 3


def test_9_write_report_checks_its_run(tmp_path):
    import fairaudit
    from fairaudit.errors import ConfigError

    with pytest.raises(ConfigError, match="^run: expected an AuditRun"):
        fairaudit.write_report("notarun", tmp_path / "r.html")
    assert list(tmp_path.iterdir()) == []


def test_9_empty_pandas_frame_message_has_no_frame_dump():
    pd = pytest.importorskip("pandas")
    import fairaudit
    from fairaudit.errors import FairauditError

    for frame in (pd.DataFrame(), pd.DataFrame({"sex": pd.Series([], dtype=object),
                                                "segment": pd.Series([], dtype=int)})):
        with pytest.raises(FairauditError) as info:
            fairaudit.audit(frame, sensitive=["sex"], labels="segment")
        msg = str(info.value)
        assert msg.startswith("<in-memory table>") or msg.startswith("data:"), msg
        assert len(msg.splitlines()) <= 3 and "Index" not in msg and "Columns" not in msg


def test_9_chain_and_cli_give_the_same_ranges(run_cli, tmp_path):
    from fairaudit.core.chain import load_chain
    from fairaudit.errors import ChainValidationError

    chain = tmp_path / "c.toml"
    chain.write_text('[data]\nsensitive = ["sex"]\nlabels = "segment"\n[options]\nmin_cell = 0\n'
                     "bootstrap = 1000000000\n", encoding="utf-8")
    with pytest.raises(ChainValidationError) as info:
        from fairaudit.core.plugins import Host
        from fairaudit.core.validate import validate_chain

        validate_chain(load_chain(chain), Host.create(entrypoints=False).registry)
    text = str(info.value)
    assert "options.min_cell" in text and "options.bootstrap" in text
    r = run_cli("validate", str(chain))
    assert r.exit_code == 2 and "options.bootstrap" in r.stderr


def test_10_the_default_comparison_keeps_fairden_with_a_constant_column(run_cli, tmp_path):
    rng = np.random.default_rng(3)
    n = 300
    frame = _people(n).drop("person_id", "segment").with_columns(
        pl.lit("2. Middle Atlantic").alias("region"),
        pl.Series("x1", rng.normal(size=n)), pl.Series("x2", rng.normal(size=n)),
        pl.Series("job", rng.choice(["a", "b"], size=n)),
    )
    path = _write(frame, tmp_path / "const.parquet")
    doc = _audit_ok(run_cli, tmp_path, path, "-s", "race,sex", "--k", "3", "--no-twins")
    names = [lab["name"] for lab in doc["labellings"]]
    assert "fairden" in names, (names, doc["notes"])
    assert not any("skipped" in n and "fairden" in n for n in doc["notes"])


def test_semicolon_csv_read_as_one_column_says_which_separator(audit_bad, tmp_path):
    """A ';' CSV read with ',' is one column whose name holds the others: the error says so and
    names the flag that fixes it, rather than only "column not in the data"."""
    data = tmp_path / "semi.csv"
    data.write_text("age;sex;seg\n30;m;a\n40;f;b\n", encoding="utf-8")
    audit_bad(data, "--sensitive", "sex", "--labels", "seg",
              culprits=("sex", "read as one column", "--separator ';'"))


def test_semicolon_csv_with_decimal_commas_still_names_the_separator(audit_bad, tmp_path):
    """A European export: ';' between fields and ',' in numbers, so the rows have more ','
    fields than the one-column header (was "line 2: 2 field(s) where the header has 1")."""
    data = tmp_path / "eu.csv"
    data.write_text("\ufeffage;sex;seg\r\n30,5;m;a\r\n40,25;f;b\r\n", encoding="utf-8")
    res = audit_bad(data, "--sensitive", "sex", "--labels", "seg",
                    culprits=("eu.csv", "read as one column", "'age;sex;seg'", "--separator ';'"))
    assert "ufeff" not in res.stderr  # the byte-order mark is not shown


def test_a_title_row_above_the_header_is_named(audit_bad, tmp_path):
    data = tmp_path / "excel.csv"
    data.write_text("Patient survey 2026,,\nage,sex,seg\n30,m,a\n40,f,b\n", encoding="utf-8")
    audit_bad(data, "--sensitive", "sex", "--labels", "seg",
              culprits=("excel.csv", "twice", "title row"))
