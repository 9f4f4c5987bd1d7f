"""fairaudit history (trend report over runs) and fairaudit export (flat CSV)."""

from __future__ import annotations

import copy
import csv
import io
import json
import os
from pathlib import Path

import pytest
from audit_sims import resample_audit

from fairaudit.errors import InputError
from fairaudit.ops.export import COLUMNS, csv_safe, export_csv, export_rows
from fairaudit.ops.history import build_history, history_csv


def _runs(folder: Path) -> list[Path]:
    """Five nightly runs written out of order; run 3 failed a gate; run 4 has no timestamp."""
    paths = []
    for i in range(5):
        doc = copy.deepcopy(resample_audit(i if i != 3 else 0, shift=i == 3))
        doc["timing"]["created"] = f"2026-11-{10 + i:02d}T02:00:00Z"
        if i == 3:
            doc["status"] = "fail"
        if i == 4:  # the default: no timing block (the schema requires created inside one)
            del doc["timing"]
        p = folder / f"run-{4 - i}.json"
        p.write_text(json.dumps(doc))
        if i == 4:
            ts = 1_795_000_000  # 2026-11-18
            os.utime(p, (ts, ts))
        paths.append(p)
    return paths


def test_history_orders_runs_and_marks_failures(tmp_path):
    paths = _runs(tmp_path)
    hist = build_history([*paths, tmp_path])  # the folder repeats the files: counted once
    dates = [r["date"] for r in hist["runs"]]
    assert dates == sorted(dates) and dates[0] == "2026-11-10T02:00:00Z"
    assert [r["date_source"] for r in hist["runs"]] == ["timing.created"] * 4 + ["file mtime"]
    assert [r["gate_failed"] for r in hist["runs"]] == [False, False, False, True, False]
    assert any("modification time" in n for n in hist["notes"])
    assert len(hist["series"]) == 9  # 3 headline metrics x 3 attributes, one labelling
    bal = next(s for s in hist["series"] if (s["metric"], s["attribute"]) == ("balance", "race"))
    assert [p["run"] for p in bal["points"]] == [0, 1, 2, 3, 4]
    assert bal["points"][3]["value"] < bal["points"][2]["value"]  # the planted shift
    rows = list(csv.DictReader(io.StringIO(history_csv(hist))))
    assert len(rows) == 45 and rows[0]["date"] == dates[0]


def test_a_date_in_the_file_name_dates_a_run_without_timing(tmp_path):
    """The README's nightly recipe writes runs/$(date +%F).json without --timing: such runs are
    dated by their names, not by modification times a copy can reorder."""
    from fairaudit.ops.audit_json import run_date

    doc: dict = {}
    late = tmp_path / "2026-11-22.json"
    early = tmp_path / "nightly-2026-11-20.json"
    for p in (late, early):
        p.write_text("{}")
    os.utime(early, (1_795_900_000, 1_795_900_000))  # copied later: a newer mtime
    assert run_date(doc, early) == ("2026-11-20T00:00:00Z", "file name")
    assert run_date(doc, late) == ("2026-11-22T00:00:00Z", "file name")
    bad = tmp_path / "run-2026-13-45.json"
    bad.write_text("{}")
    assert run_date(doc, bad)[1] == "file mtime"  # not a date
    assert run_date({"timing": {"created": "2026-11-21T05:00:00Z"}}, late)[1] == "timing.created"


def test_history_cli_renders_from_several_audits(run_cli, tmp_path):
    _runs(tmp_path)
    (tmp_path / "diff.json").write_text(json.dumps({"kind": "fairaudit-comparison"}))
    res = run_cli("history", str(tmp_path), "--out", "h.html", "--json", "h.json",
                  "--csv", "h.csv")
    assert res.exit_code == 0, res.output
    assert "5 run(s)" in res.output and "skipped 1 file" in res.output
    html = (tmp_path / "h.html").read_text()
    assert "Content-Security-Policy" in html and "<script" not in html
    assert "http://" not in html and "https://" not in html
    assert html.count("<svg") == 9 and "gate failed" in html
    hist = json.loads((tmp_path / "h.json").read_text())
    assert hist["kind"] == "fairaudit-history" and len(hist["runs"]) == 5
    assert (tmp_path / "h.csv").read_text().count("\n") == 46


def test_history_errors(run_cli, tmp_path):
    (tmp_path / "bad.json").write_text("{}")
    res = run_cli("history", "bad.json")
    assert res.exit_code == 2 and "bad.json" in res.output
    p = _runs(tmp_path)[0]
    res = run_cli("history", p.name, "--json", p.name)
    assert res.exit_code == 2 and "is the input file" in res.output
    with pytest.raises(InputError, match="no audit JSON"):
        build_history([])


def test_history_notes_version_changes(tmp_path):
    a, b = copy.deepcopy(resample_audit(0)), copy.deepcopy(resample_audit(1))
    a["timing"]["created"], b["timing"]["created"] = "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"
    b["tool"]["version"] = "0.2.0"
    hist = build_history([a, b])
    assert any("versions changed" in n and "0.1.0 -> 0.2.0" in n for n in hist["notes"])


# ----------------------------------------------------------------------------- export
def test_export_rows_and_csv_injection():
    doc = copy.deepcopy(resample_audit(0))
    doc["labellings"][0]["name"] = "=HYPERLINK(1)"
    for r in doc["results"]:
        r["labelling"] = "=HYPERLINK(1)"
    doc["results"][0]["value"] = None
    rows = export_rows(doc)
    assert len(rows) == 45 and set(rows[0]) == set(COLUMNS)
    text = export_csv([(doc, None)])
    parsed = list(csv.DictReader(io.StringIO(text)))
    assert parsed[0]["labelling"] == "'=HYPERLINK(1)" and parsed[0]["value"] == ""
    assert parsed[0]["run_date"] == doc["timing"]["created"]
    assert parsed[0]["input_fingerprint"] == doc["input"]["fingerprint"]
    assert parsed[0]["interval_method"] and parsed[0]["ci_level"] == "0.95"
    assert csv_safe(-0.5) == "-0.5" and csv_safe("-x") == "'-x" and csv_safe(float("nan")) == ""


def test_export_cli(run_cli, tmp_path):
    from fairaudit.ops.compare import compare

    base, cur = resample_audit(1), copy.deepcopy(resample_audit(0, shift=True))
    cur["comparison"] = compare(base, cur)
    (tmp_path / "a.json").write_text(json.dumps(base))
    (tmp_path / "b.json").write_text(json.dumps(cur))
    res = run_cli("export", "a.json", "b.json", "--csv", "out.csv")
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader((tmp_path / "out.csv").open()))
    assert len(rows) == 90
    bal = [r for r in rows[45:] if (r["metric"], r["attribute"]) == ("balance", "race")][0]
    assert float(bal["baseline_delta"]) < 0 and bal["baseline_gate"] == "fail"
    res = run_cli("export", "a.json", "--csv", "h.csv", "--headline-only")
    assert res.exit_code == 0 and (tmp_path / "h.csv").read_text().count("\n") == 10
    res = run_cli("export", "out.csv", "--csv", "x.csv")
    assert res.exit_code == 2 and not (tmp_path / "x.csv").exists()
    res = run_cli("export", "a.json", "--csv", "a.json")
    assert res.exit_code == 2


def test_the_history_document_follows_its_schema(tmp_path):
    """``fairaudit history --json`` has a schema of its own (fairaudit/schema/history.schema.json,
    shipped in the package): the golden history, a history with a failed gate and a run without
    timing, and one of an audit whose headline results carry thresholds all validate; a field
    the schema does not know is refused (additionalProperties false)."""
    jsonschema = pytest.importorskip("jsonschema")
    import fairaudit

    schema = json.loads((Path(fairaudit.__file__).parent / "schema" /
                         "history.schema.json").read_text())
    golden = json.loads((Path(__file__).parent / "golden" / "history.json").read_text())
    jsonschema.validate(golden, schema)
    hist = build_history(_runs(tmp_path))
    jsonschema.validate(hist, schema)
    gated = copy.deepcopy(resample_audit(1))
    for r in gated["results"]:
        if r.get("headline"):
            r["threshold"] = {"metric": r["metric"], "value": 0.5, "bound": "min", "on": "value",
                              "attribute": r["attribute"], "severity": "error"}
    jsonschema.validate(build_history([gated, resample_audit(2)]), schema)
    bad = copy.deepcopy(hist)
    bad["runs"][0]["surprise"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
