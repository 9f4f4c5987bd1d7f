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
