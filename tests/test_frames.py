"""Results as data (issue 37, part 2): ``run.to_polars()`` / ``to_pandas()`` (tidy, one row per
metric result or per cluster), ``run.verdicts`` (typed records) and ``fairaudit.load`` (the same
run back from its JSON). Hand-made documents with known rows, the golden documents, a property
test over random documents, and a round trip through a real run."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairaudit
from fairaudit.errors import ConfigError, InputError, MissingExtraError
from fairaudit.report.answer import entry_text, twin_names
from fairaudit.report.frames import DecidedBy, Verdict
from fairaudit.report.results import AuditRun

GOLDEN = Path(__file__).resolve().parent / "golden"
DOCS = ("demo", "labels", "twins", "chain", "api")
METRIC_COLUMNS = ["labelling", "attribute", "metric", "value", "ci_low", "ci_high", "status",
                  "verdict", "auditor", "headline", "direction", "threshold", "judged", "n_rows"]
CLUSTER_COLUMNS = ["labelling", "attribute", "auditor", "metric", "cluster", "cluster_name", "n",
                   "value", "worst_group", "detail"]


def golden(name: str) -> AuditRun:
    return AuditRun.from_json(json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8")))


def _result(**kw):
    base = {"auditor": "balance", "metric": "balance", "labelling": "seg", "attribute": "sex",
            "value": 0.5, "ci": [0.25, 0.75], "direction": "higher_is_better", "headline": True,
            "threshold": None, "status": "not_evaluated", "judged": None, "n_rows": 100,
            "notes": [], "per_cluster": [], "detail": {}}
    return {**base, **kw}


HAND = {
    "schema_version": "1.1", "status": "fail",
    "input": {"attributes": ["sex"], "rows_audited": 100},
    "labellings": [{"name": "seg", "origin": "labels", "cluster_names": ["basic", "premium"]}],
    "results": [
        _result(threshold={"metric": "balance", "value": 0.8, "bound": "min", "on": "ci",
                           "attribute": None, "severity": "error", "labelling": None,
                           "source": ""}, status="fail", judged=0.25,
                per_cluster=[{"cluster": 0, "n": 60, "value": 0.9, "worst_group": "F"},
                             {"cluster": 1, "n": 40, "value": 0.5, "worst_group": "F"}]),
        _result(metric="balance_mean", headline=False, value=0.7, ci=None),
        _result(auditor="quality", metric="silhouette", attribute=None, value=float("nan"),
                ci=[None, None], per_cluster=[{"cluster": 1, "lcd": 2.5, "size": 40}]),
    ],
    "verdicts": [{"labelling": "seg", "attribute": "sex", "verdict": "unfair", "rule": "...",
                  "reasons": ["unfair: balance \u2265 0.8 (your threshold): value 0.500, interval "
                              "[0.250, 0.750] is entirely on the wrong side"],
                  "decided_by": {"metric": "balance", "value": 0.5, "ci": [0.25, 0.75],
                                 "cluster": 1, "cluster_name": "premium", "group": "F",
                                 "count": 10, "group_total": 50, "expected": 20.0,
                                 "text": "\u201cpremium\u201d holds 10 of the 50 \u201cF\u201d "
                                         "people, 20.0 expected"}}],
}


def test_a_row_per_metric_result_by_hand():
    run = AuditRun(HAND)
    df = run.to_polars()
    assert df.columns == METRIC_COLUMNS
    assert df.schema["value"] == pl.Float64 and df.schema["n_rows"] == pl.Int64
    assert df.schema["headline"] == pl.Boolean
    rows = df.to_dicts()
    assert rows[0] == {
        "labelling": "seg", "attribute": "sex", "metric": "balance", "value": 0.5,
        "ci_low": 0.25, "ci_high": 0.75, "status": "fail", "verdict": "unfair",
        "auditor": "balance", "headline": True, "direction": "higher_is_better",
        "threshold": "balance@ci >= 0.8", "judged": 0.25, "n_rows": 100}
    # not a headline metric: never a verdict of its own; no interval: nulls
    assert rows[1]["verdict"] is None and rows[1]["ci_low"] is None and rows[1]["ci_high"] is None
    # dataset-level result: no attribute; NaN is written as null, as in the JSON
    assert rows[2]["attribute"] is None and rows[2]["value"] is None


def test_a_row_per_cluster_by_hand():
    df = AuditRun(HAND).to_polars(level="cluster")
    assert df.columns == CLUSTER_COLUMNS
    rows = df.to_dicts()
    assert [(r["metric"], r["cluster"], r["cluster_name"], r["n"], r["value"]) for r in rows] == [
        ("balance", 0, "basic", 60, 0.9), ("balance", 1, "premium", 40, 0.5),
        ("silhouette", 1, "premium", None, None)]
    assert rows[0]["worst_group"] == "F" and rows[0]["detail"] is None
    assert json.loads(rows[2]["detail"]) == {"lcd": 2.5, "size": 40}  # the row's other keys


def test_verdict_records_by_hand():
    (v,) = AuditRun(HAND).verdicts
    assert isinstance(v, Verdict)
    assert v == Verdict(
        attribute="sex", labelling="seg", verdict="unfair",
        decided_by=DecidedBy(metric="balance", value=0.5, ci_low=0.25, ci_high=0.75, cluster=1,
                             cluster_name="premium", group="F", count=10.0, expected=20.0,
                             group_total=50.0, text=HAND["verdicts"][0]["decided_by"]["text"]),
        sentence="\u201cpremium\u201d holds 10 of the 50 \u201cF\u201d people, 20.0 expected; "
                 "balance 0.500 [0.250, 0.750]",
        reasons=tuple(HAND["verdicts"][0]["reasons"]), twin=False)


def test_empty_document_keeps_the_columns():
    run = AuditRun({"schema_version": "1.1", "status": "pass", "results": []})
    for level, cols in (("metric", METRIC_COLUMNS), ("cluster", CLUSTER_COLUMNS)):
        df = run.to_polars(level=level)
        assert df.height == 0 and df.columns == cols
    assert run.verdicts == ()
    with pytest.raises(ConfigError, match="level: expected one of 'metric', 'cluster'"):
        run.to_polars(level="group")


@pytest.mark.parametrize("name", DOCS)
def test_golden_documents_as_frames(name):
    run = golden(name)
    doc = run.doc
    df = run.to_polars()
    assert df.height == len(doc["results"])
    for row, r in zip(df.iter_rows(named=True), doc["results"], strict=True):
        assert (row["labelling"], row["attribute"], row["metric"], row["auditor"]) == (
            r["labelling"], r["attribute"], r["metric"], r["auditor"])
        assert row["value"] == r["value"] and row["status"] == r["status"]
        assert [row["ci_low"], row["ci_high"]] == (r["ci"] or [None, None])
    # every judged headline metric carries its own verdict: one per reason of the verdicts
    reasons = sum(len(v["reasons"]) for v in doc.get("verdicts") or ())
    assert df["verdict"].is_not_null().sum() == reasons
    verdicts = df.filter(pl.col("verdict").is_not_null())
    assert verdicts["headline"].all()
    cl = run.to_polars(level="cluster")
    assert cl.height == sum(len(r["per_cluster"]) for r in doc["results"])


@pytest.mark.parametrize("name", DOCS)
def test_golden_verdict_records(name):
    run = golden(name)
    doc = run.doc
    twins = twin_names(doc)
    records = run.verdicts
    assert len(records) == len(doc["verdicts"])
    for v, d in zip(records, doc["verdicts"], strict=True):
        assert (v.attribute, v.labelling, v.verdict) == (d["attribute"], d["labelling"],
                                                        d["verdict"])
        assert v.sentence == entry_text(d)
        assert v.twin == (d["labelling"] in twins)
        by = d.get("decided_by")
        if by:
            assert v.decided_by is not None and v.decided_by.metric == by["metric"]
            assert (v.decided_by.ci_low, v.decided_by.ci_high) == tuple(by["ci"] or (None, None))
            assert v.decided_by.cluster == by.get("cluster")
        else:
            assert v.decided_by is None


def test_to_pandas_matches_to_polars():
    pytest.importorskip("pandas")
    run = golden("demo")
    for level in ("metric", "cluster"):
        pl_df = run.to_polars(level=level)
        pd_df = run.to_pandas(level=level)
        assert list(pd_df.columns) == pl_df.columns and len(pd_df) == pl_df.height
        for name in pl_df.columns:
            want = pl_df[name].to_list()
            got = pd_df[name].tolist()
            for a, b in zip(want, got, strict=True):
                if a is None:
                    assert b is None or (isinstance(b, float) and math.isnan(b)) or (
                        str(b) == "<NA>"), (name, b)
                else:
                    assert a == b, (name, a, b)
    assert str(run.to_pandas()["n_rows"].dtype) == "Int64"


def test_to_pandas_without_pandas_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # this process only: as if not installed
    with pytest.raises(MissingExtraError, match=r"pip install 'fairaudit-clusters\[pandas\]'"):
        golden("api").to_pandas()


_num = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True, width=64))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", None]), _num, _num, _num,
                          st.lists(st.tuples(st.integers(-1, 5), _num), max_size=4)),
                max_size=12))
def test_frames_keep_every_result_and_number(items):
    """Whatever the numbers (null, NaN, infinite), a row per result and a row per cluster, each
    value the JSON's number or null; never a crash."""
    results = [_result(attribute=attr, value=v, ci=[lo, hi], headline=False,
                       per_cluster=[{"cluster": c, "n": 1, "value": x} for c, x in pcs])
               for attr, v, lo, hi, pcs in items]
    run = AuditRun({"schema_version": "1.1", "status": "pass", "results": results})
    df, cl = run.to_polars(), run.to_polars(level="cluster")
    assert df.height == len(items) and cl.height == sum(len(i[4]) for i in items)

    def clean(x):
        return None if x is None or not math.isfinite(x) else x

    for row, (attr, v, lo, hi, _) in zip(df.iter_rows(named=True), items, strict=True):
        assert row["attribute"] == attr
        assert (row["value"], row["ci_low"], row["ci_high"]) == (clean(v), clean(lo), clean(hi))
    flat = [x for i in items for _, x in i[4]]
    assert cl["value"].to_list() == [clean(x) for x in flat]


# ----------------------------------------------------------------------------- fairaudit.load
@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    rng = np.random.default_rng(11)
    n = 1200
    sex = rng.choice(["F", "M"], size=n)
    seg = np.where((sex == "F") & (rng.random(n) < 0.3), 2, rng.integers(0, 3, size=n))
    run = fairaudit.audit(pl.DataFrame({"sex": sex, "segment": seg, "x": rng.normal(size=n)}),
                          sensitive="sex", labels="segment", bootstrap=50,
                          fail_under={"balance": 0.8}, skip_audit=["proxy"])
    out = tmp_path_factory.mktemp("saved")
    _, json_path = fairaudit.write_report(run, out / "audit.html")
    return run, json_path


def test_load_gives_the_same_run_back(saved):
    run, json_path = saved
    back = fairaudit.load(json_path)
    assert isinstance(back, AuditRun)
    assert back == run and back.doc == run.doc
    assert back.to_polars().equals(run.to_polars())
    assert back.to_polars(level="cluster").equals(run.to_polars(level="cluster"))
    assert back.verdicts == run.verdicts and back.verdicts
    assert back.exit_code == run.exit_code == 1 and back.status == "fail"
    assert repr(back) == repr(run) and back._repr_html_() == run._repr_html_()
    assert fairaudit.load(str(json_path)) == back  # a path as text too


def test_load_refuses_what_is_not_an_audit(tmp_path, saved):
    with pytest.raises(InputError, match="no such file"):
        fairaudit.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(InputError, match="bad.json: not valid JSON"):
        fairaudit.load(bad)
    other = tmp_path / "cmp.json"
    other.write_text(json.dumps({"kind": "fairaudit-comparison"}), encoding="utf-8")
    with pytest.raises(InputError, match="this is a fairaudit-comparison file"):
        fairaudit.load(other)
    broken = tmp_path / "broken.json"
    doc = json.loads(saved[1].read_text(encoding="utf-8"))
    doc["results"][0]["value"] = "high"
    broken.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError, match=r"broken.json: not a valid fairaudit audit JSON"):
        fairaudit.load(broken)
    for wrong in (None, 3, {"schema_version": "1.1"}, b"audit.json", ""):
        with pytest.raises(ConfigError, match="path: expected the path of an audit JSON file"):
            fairaudit.load(wrong)  # type: ignore[arg-type]
