"""The typed result model (fairaudit.report.model) against the documents the program writes and
the shipped JSON schema (issue 24)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from fairaudit.report import model as m
from fairaudit.report.results import AuditRun

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "fairaudit" / "schema" / "audit.schema.json").read_text())
DOCS = sorted(p for p in (ROOT / "tests" / "golden").glob("*.json")
              if p.stem not in ("compare", "history")) + [ROOT / "tests/data/sample_audit.json"]


def _load(p: Path) -> dict:
    doc = json.loads(p.read_text(encoding="utf-8"))
    if doc.get("environment") == "<environment>":  # a golden file: normalised fields
        doc["environment"] = {"python": "3", "platform": "x", "versions": {}, "plugins": []}
    if doc.get("timing") == "<timing>":
        doc.pop("timing")
    return doc


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_round_trip_and_schema(path):
    import jsonschema

    doc = _load(path)
    model = m.AuditDocument.from_json(doc)
    assert json.dumps(model.to_json(), sort_keys=True) == json.dumps(doc, sort_keys=True)
    jsonschema.validate(model.to_json(), SCHEMA)
    assert not model.extra and not model.results[0].extra and not model.labellings[0].extra
    assert all(isinstance(r, m.ResultRecord) for r in model.results)
    assert isinstance(model.status, m.Status) and isinstance(model.input, m.InputInfo)
    with pytest.raises(dataclasses.FrozenInstanceError):
        model.status = m.Status.PASS


def _props(node: dict) -> set[str]:
    node = node.get("items", node)
    return set(node.get("properties", {}))


@pytest.mark.parametrize("record, where", [
    (m.AuditDocument, None), (m.Tool, "tool"), (m.InputInfo, "input"),
    (m.LabellingRecord, "labellings"), (m.ResultRecord, "results"), (m.CheckRecord, "checks"),
    (m.GateRecord, "gates"), (m.TwinRecord, "twins"), (m.VerdictRecord, "verdicts"),
    (m.GlossaryEntry, "glossary"),
], ids=lambda x: getattr(x, "__name__", x))
def test_records_name_the_schemas_properties(record, where):
    schema = SCHEMA if where is None else SCHEMA["properties"][where]
    assert set(record._fields()) == _props(schema)


def test_the_report_renders_the_model():
    from fairaudit.report.render import render_html

    doc = _load(ROOT / "tests/golden/labels.json")
    model = m.AuditDocument.from_json(doc)
    assert render_html(model) == render_html(AuditRun(doc))
    assert m.AuditDocument.of(model.to_run()) == model
    [r] = model.results_for(metric="balance", attribute="sex")
    assert r.headline and r.ci is not None and len(r.ci) == 2


def test_missing_keys_stay_missing_and_unknown_keys_are_kept():
    rec = m.ResultRecord.from_json({"auditor": "a", "metric": "b", "future_key": [1]})
    assert rec.value is m.MISSING and rec.extra == {"future_key": [1]}
    assert rec.to_json() == {"auditor": "a", "metric": "b", "future_key": [1]}


def test_the_stages_after_document_take_and_return_the_typed_document(monkeypatch):
    """Issue 37, part 3: from the ``document`` stage on, the run state holds an
    :class:`AuditDocument` (publish, twins, explain and verdicts take and return it), and the
    run's JSON is its serialisation."""
    import numpy as np
    import polars as pl

    import fairaudit
    from fairaudit.core import stages

    seen: dict[str, tuple[type, type]] = {}

    def spy(name, fn):
        def wrapped(s):
            out = fn(s)
            seen[name] = (type(s.doc), type(out.doc))
            return out
        return wrapped

    monkeypatch.setattr(stages, "STAGES", tuple((n, spy(n, f)) for n, f in stages.STAGES))
    rng = np.random.default_rng(3)
    frame = pl.DataFrame({"sex": rng.choice(["F", "M"], 400), "x": rng.normal(size=400),
                          "segment": rng.integers(0, 3, 400)})
    run = fairaudit.audit(frame, sensitive="sex", labels="segment", bootstrap=20,
                          progress=False)
    assert seen["document"][1] is m.AuditDocument
    for name in ("publish", "twins", "explain", "verdicts"):
        assert seen[name] == (m.AuditDocument, m.AuditDocument), name
    assert json.dumps(m.AuditDocument.from_json(run.doc).to_json()) == json.dumps(run.doc)
