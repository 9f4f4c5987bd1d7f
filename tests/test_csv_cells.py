"""CSV cells as real exports have them: a column whose first rows are numbers and whose later rows
hold text (``unknown`` at row 15,000), and the usual spellings of a missing value. The audit must
run (exit 0), say what it did, and never crash with a parser error (exit 3)."""

from __future__ import annotations

import json
import logging

import pytest

from fairaudit.core.io import CSV_INFER_ROWS, CSV_NULL_VALUES, csv_parse_failure

N = CSV_INFER_ROWS + 5_000


class _Said(logging.Handler):
    """Collects the runner's log records (the CLI's own handlers do not propagate to caplog)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())

    def __enter__(self):
        logging.getLogger("fairaudit.core.runner").addHandler(self)
        return self

    def __exit__(self, *exc):
        logging.getLogger("fairaudit.core.runner").removeHandler(self)


def _write(path, *, bad_row: int | None = None, bad_col: str = "age", bad: str = "unknown"):
    lines = ["age,religious,occupation,hours"]
    for i in range(N):
        row = {"age": str(20 + i % 50), "religious": str(1 + i % 4),
               "occupation": str(1 + (i * 7) % 5), "hours": f"{(i * 13) % 40}.5"}
        if i == bad_row:
            row[bad_col] = bad
        lines.append(",".join(row.values()))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_parse_failure_is_recognised():
    import polars as pl

    exc = pl.exceptions.ComputeError(
        "could not parse `unknown` as dtype `i64` at column 'age' (column number 1)\n\nmore")
    assert csv_parse_failure(exc) == ("age", "unknown", "i64")
    assert csv_parse_failure(ValueError("something else")) is None


def test_text_after_the_inferred_rows_in_a_feature_column(tmp_path, run_cli):
    _write(tmp_path / "late.csv", bad_row=CSV_INFER_ROWS + 2_000)
    before = (tmp_path / "late.csv").read_bytes()
    with _Said() as said:
        res = run_cli("audit", "late.csv", "--sensitive", "religious", "--cluster",
                      "kmeans:n_clusters=3", "--skip-audit", "proxy", "-o", "r.html")
    assert res.exit_code == 0, res.output
    said = " ".join(said.lines)
    assert "late.csv" in said and "'age'" in said and "'unknown'" in said and "text" in said
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["input"]["rows"] == N
    assert (tmp_path / "late.csv").read_bytes() == before  # the input is never modified


def test_text_after_the_inferred_rows_in_the_sensitive_column(tmp_path, run_cli):
    _write(tmp_path / "late.csv", bad_row=CSV_INFER_ROWS + 100, bad_col="religious", bad="x")
    res = run_cli("audit", "late.csv", "--sensitive", "religious", "--labels", "occupation",
                  "-o", "r.html")
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "r.json").read_text())
    groups = {g["group"]: g["n"] for g in doc["input"]["groups"]["religious"]}
    assert groups["x"] == 1 and sum(groups.values()) == N


def test_the_python_api_reads_the_column_as_text_too(tmp_path):
    import fairaudit

    path = _write(tmp_path / "late.csv", bad_row=N - 1, bad_col="occupation", bad="?x")
    with _Said() as said:
        run = fairaudit.audit(path, sensitive="religious", labels="occupation")
    assert run.doc["input"]["rows"] == N
    assert "'occupation'" in " ".join(said.lines)


@pytest.mark.parametrize("marker", ["N/A", "null", "NaN", "#N/A", "NA", "?", ""])
def test_the_usual_missing_markers_are_missing(tmp_path, run_cli, marker):
    assert marker in CSV_NULL_VALUES
    lines = ["religious,seg"] + [f"{'ab'[i % 2]},{i % 3}" for i in range(300)]
    lines += [f"{marker},1"] * 7
    (tmp_path / "t.csv").write_text("\n".join(lines) + "\n")
    res = run_cli("audit", "t.csv", "--sensitive", "religious", "--labels", "seg",
                  "-o", "r.html")
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "r.json").read_text())
    groups = {g["group"] for g in doc["input"]["groups"]["religious"]}
    assert groups == {"a", "b"}


def test_none_stays_a_group(tmp_path, run_cli):
    """'None' is a real answer ("religion: None") too often to be read as missing."""
    lines = ["religious,seg"] + [f"{['a', 'None'][i % 2]},{i % 3}" for i in range(300)]
    (tmp_path / "t.csv").write_text("\n".join(lines) + "\n")
    res = run_cli("audit", "t.csv", "--sensitive", "religious", "--labels", "seg",
                  "-o", "r.html")
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "r.json").read_text())
    assert {g["group"] for g in doc["input"]["groups"]["religious"]} == {"a", "None"}


def _countries(path, extra=()):
    """Namibia ('NA'), Botswana and South Africa, and the ``extra`` cells (in segment 1)."""
    lines = ["country,seg"] + [f"{['NA', 'ZA', 'BW'][i % 3]},{i % 4}" for i in range(300)]
    lines += [f"{m},1" for m in extra]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_null_values_are_added_to_the_defaults(tmp_path, run_cli):
    _countries(tmp_path / "t.csv", extra=["-"] * 5 + ["unknown"] * 5 + ["N/A"] * 5)
    res = run_cli("audit", "t.csv", "--sensitive", "country", "--labels", "seg",
                  "--null-values", "-, unknown", "-o", "r.html")
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "r.json").read_text())
    assert {g["group"] for g in doc["input"]["groups"]["country"]} == {"ZA", "BW"}  # NA missing
    assert doc["input"]["rows"] == 315


def test_no_default_nulls_keeps_namibia(tmp_path, run_cli):
    _countries(tmp_path / "t.csv", extra=["-"] * 5 + ["", ""])
    res = run_cli("audit", "t.csv", "--sensitive", "country", "--labels", "seg",
                  "--no-default-nulls", "--null-values", "-", "-o", "r.html")
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "r.json").read_text())
    assert {g["group"] for g in doc["input"]["groups"]["country"]} == {"NA", "ZA", "BW"}


def test_reader_options_from_the_chain_and_the_api_agree_with_the_flags(tmp_path, run_cli):
    import fairaudit

    path = _countries(tmp_path / "t.csv", extra=["?"] * 4 + ["unknown"] * 6)
    (tmp_path / "c.toml").write_text(
        '[data]\nsensitive = ["country"]\nlabels = "seg"\ndefault_nulls = false\n'
        'null_values = ["unknown"]\n\n[[audit]]\nuse = "balance"\n')
    res = run_cli("audit", "t.csv", "--chain", "c.toml", "-o", "c.html")
    assert res.exit_code == 0, res.output
    res = run_cli("audit", "t.csv", "--sensitive", "country", "--labels", "seg",
                  "--no-default-nulls", "--null-values", "unknown", "-o", "f.html")
    assert res.exit_code == 0, res.output
    run = fairaudit.audit(path, sensitive="country", labels="seg", default_nulls=False,
                          null_values=["unknown"])
    want = {"NA", "ZA", "BW", "?"}
    for doc in (json.loads((tmp_path / "c.json").read_text()),
                json.loads((tmp_path / "f.json").read_text()), run.doc):
        assert {g["group"] for g in doc["input"]["groups"]["country"]} == want


def test_null_values_apply_to_text_columns_of_parquet_and_frames(tmp_path):
    import polars as pl

    import fairaudit

    frame = pl.DataFrame({
        "country": ["NA", "ZA", "BW"] * 100 + ["unknown"] * 6,
        "seg": [str(i % 3) for i in range(306)],
    }).with_columns(pl.col("country").cast(pl.Categorical))
    frame.write_parquet(tmp_path / "t.parquet")
    before = (tmp_path / "t.parquet").read_bytes()
    for data in (tmp_path / "t.parquet", frame):
        run = fairaudit.audit(data, sensitive="country", labels="seg", null_values="unknown")
        assert ({g["group"] for g in run.doc["input"]["groups"]["country"]}
                == {"NA", "ZA", "BW"})
    assert (tmp_path / "t.parquet").read_bytes() == before
    assert frame["country"].to_list().count("unknown") == 6  # the caller's frame untouched


@pytest.mark.parametrize("surface, value, named", [
    ("api", 5, "null_values"), ("api", "yes", "default_nulls"),
])
def test_bad_reader_options_name_the_parameter(tmp_path, surface, value, named):
    import fairaudit
    from fairaudit.errors import ConfigError

    path = _countries(tmp_path / "t.csv")
    with pytest.raises(ConfigError, match=named):
        fairaudit.audit(path, sensitive="country", labels="seg", **{named: value})


def test_bad_reader_option_in_the_chain_exits_2(tmp_path, run_cli):
    _countries(tmp_path / "t.csv")
    (tmp_path / "c.toml").write_text(
        '[data]\nsensitive = ["country"]\nlabels = "seg"\nnull_values = "-"\n'
        'default_nulls = "no"\n\n[[audit]]\nuse = "balance"\n')
    res = run_cli("audit", "t.csv", "--chain", "c.toml", "-o", "c.html")
    assert res.exit_code == 2
    assert "data.default_nulls" in res.output
    assert not (tmp_path / "c.html").exists()


def _eu(path):
    """A ';' export with decimal commas in a feature column."""
    lines = ["income;sex;seg"] + [f"{1000 + (i * 37) % 90},{i % 10};{'fm'[i % 2]};{i % 3}"
                                  for i in range(300)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_decimal_commas_read_as_text_are_named_and_the_option_reads_them(tmp_path, run_cli):
    _eu(tmp_path / "eu.csv")
    args = ["audit", "eu.csv", "--separator", ";", "--sensitive", "sex", "--cluster", "kmeans",
            "--k", "2", "--no-twins", "--skip-audit", "proxy", "-o", "r.html"]
    res = run_cli(*args)
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "r.json").read_text())
    (note,) = [n for n in doc["notes"] if "decimal comma" in n]
    assert "'income' holds numbers written with a decimal comma" in note
    assert "--decimal-comma" in note
    res = run_cli(*args[:-1], "s.html", "--decimal-comma")
    assert res.exit_code == 0, res.output
    assert "decimal comma" not in (tmp_path / "s.json").read_text()
    import fairaudit

    run = fairaudit.audit(tmp_path / "eu.csv", separator=";", decimal_comma=True,
                          sensitive="sex", labels="seg")
    assert run.doc["input"]["rows"] == 300


def test_decimal_comma_with_the_comma_separator_exits_2(tmp_path, run_cli):
    _countries(tmp_path / "t.csv")
    res = run_cli("audit", "t.csv", "--sensitive", "country", "--labels", "seg",
                  "--decimal-comma", "-o", "r.html")
    assert res.exit_code == 2
    assert "--separator" in res.output and not (tmp_path / "r.html").exists()


def test_rows_left_out_by_a_default_marker_name_it_and_the_option(tmp_path, run_cli):
    _countries(tmp_path / "t.csv")
    with _Said() as said:
        res = run_cli("audit", "t.csv", "--sensitive", "country", "--labels", "seg", "-o",
                      "r.html")
    assert res.exit_code == 0, res.output
    out = " ".join(said.lines)
    assert "'country': 100 'NA'" in out and "--no-default-nulls" in out
    doc = json.loads((tmp_path / "r.json").read_text())
    assert any("'country': 100 'NA'" in n for n in doc["notes"])
    # no note when the option is given, or when nothing was left out
    res = run_cli("audit", "t.csv", "--sensitive", "country", "--labels", "seg",
                  "--no-default-nulls", "-o", "s.html")
    assert "--no-default-nulls" not in json.dumps(json.loads((tmp_path / "s.json").read_text()))
