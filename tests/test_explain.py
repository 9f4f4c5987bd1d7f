"""Every headline explained: sentences on hand-made tables, verdict rules, glossary, small cells.

Expected sentences are written by hand from the tables below (expected count = cluster size x
the group's share of all rows; an even split = group size / number of clusters)."""

from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from fairaudit_builtins.auditors import BalanceAuditor, CapacityAuditor, DistributionAuditor
from fairaudit_builtins.explain_section import builtin_specs

from fairaudit.core.components import Direction, MetricSpec
from fairaudit.core.data import GroupTable
from fairaudit.report import render as report
from fairaudit.report.explain import MAX_CI_WIDTH, explain, glossary, specs_from_classes, verdicts
from fairaudit.report.results import AuditRun

SPECS = specs_from_classes([BalanceAuditor, DistributionAuditor, CapacityAuditor])
DATA = Path(__file__).parent / "data"


# ----------------------------------------------------------------------------- a small document
def make_doc(counts, groups=("A", "B"), *, min_cell=10, ci=None, unit="segment"):
    """The audit JSON of one labels column ``unit`` and one attribute ``group``, built the way
    the runner builds it: values and per-cluster rows from the real auditors, exact counts."""
    n_mat = np.asarray(counts, dtype=np.int64)
    clusters = tuple(range(n_mat.shape[1]))
    table = GroupTable("group", tuple(groups), clusters, n_mat, np.zeros(len(groups), np.int64))
    sizes = n_mat.sum(axis=0)
    pop = n_mat.sum(axis=1) / n_mat.sum()

    results = []
    for aud in (BalanceAuditor(), DistributionAuditor(), CapacityAuditor()):
        for metric, value in aud.compute(table).items():
            spec = next(m for m in aud.metrics if m.name == metric)
            rows = []
            for r in aud.breakdown_for(table, metric):
                r = {k: v for k, v in r.items() if k != "metric"}
                r["n"] = int(r["n"])
                rows.append(r)
            results.append({
                "auditor": aud.name, "metric": metric, "labelling": unit, "attribute": "group",
                "value": None if math.isnan(value) else float(value),
                "ci": None if ci is None or not spec.headline else list(ci.get(metric, ci["*"])),
                "direction": spec.direction.value, "headline": spec.headline,
                "threshold": None, "status": "not_evaluated", "n_rows": int(n_mat.sum()),
                "notes": [], "per_cluster": rows, "detail": {},
            })
    return {
        "schema_version": "1.1",
        "status": "not_evaluated",
        "input": {"path": "x.parquet", "attributes": ["group"], "rows": int(n_mat.sum()),
                  "rows_audited": int(n_mat.sum()),
                  "groups": {"group": [{"group": g, "n": int(t), "share": float(p),
                                        "small": int(t) < min_cell}
                                       for g, t, p in zip(groups, n_mat.sum(axis=1), pop,
                                                          strict=True)]}},
        "chain": {"options": {"min_cell": min_cell, "ci_level": 0.95}},
        "privacy": {"mode": "exact"},
        "labellings": [{
            "name": unit, "origin": "column", "column": unit, "component": None,
            "n_rows": int(n_mat.sum()), "n_clusters": len(clusters), "n_noise": 0,
            "cluster_sizes": [{"cluster": k, "n": int(s)} for k, s in zip(clusters, sizes,
                                                                          strict=True)],
            "composition": {"group": {
                "groups": list(groups), "clusters": list(clusters),
                "counts": n_mat.tolist(),
                "population_share": [float(p) for p in pop],
                "cluster_share": [[v / s for v, s in zip(row, sizes, strict=True)]
                                  for row in n_mat.tolist()],
                "noise": [0] * len(groups)}},
        }],
        "results": results,
    }


def sentence(doc, metric):
    out = explain(doc, SPECS)
    return next(r["explanation"] for r in out["results"] if r["metric"] == metric)


# ----------------------------------------------------------------------------- sentences
def test_balance_names_the_absent_group_and_its_expected_count():
    # A: 300 of 1000 rows (30 %); segment 2 has 100 rows and no A: 30 expected there
    doc = make_doc([[150, 150, 0], [350, 250, 100]], ci={"*": (0.0, 0.2)})
    assert sentence(doc, "balance") == (
        "Segment 2 (100 rows) holds 0 of the 300 “A” people, where about 30.0 were expected "
        "(balance 0.000). The lower end of the 95% interval is 0 as well: a group absent from a "
        "segment gives 0 whatever the sample."
    )


def test_balance_zero_with_few_expected_is_called_weak_evidence():
    # the case in small: A is 30 of 1000 people (3 %); segment 2 (50 rows) holds none,
    # where 50 * 0.03 = 1.5 were expected; P(0) under Poisson(1.5) = exp(-1.5) = 22 %
    doc = make_doc([[15, 15, 0], [470, 450, 50]])
    assert sentence(doc, "balance").startswith(
        "Segment 2 (50 rows) holds 0 of the 30 “A” people, where about 1.5 were expected "
        "(balance 0.000). With about 1.5 expected, chance alone gives a count of 0 about 22% of "
        "the time (Poisson), so this zero is weak evidence."
    )


def test_the_cell_the_interval_method_names_sets_the_lower_end():
    doc = make_doc([[120, 140, 40], [380, 260, 60]], ci={"*": (0.6, 0.9)})
    r = next(r for r in doc["results"] if r["metric"] == "balance")
    r["detail"] = {"interval": {"method": "score-intersection", "level": 0.95,
                                "lower_set_by": {"group": "B", "cluster": 2}}}
    # B in segment 2: 60 there, 100 * 0.7 = 70 expected; 1/70 = 0.014
    assert sentence(doc, "balance").endswith(
        "The lower end of the 95% interval (0.600) is set by the 700 “B” people in segment 2 "
        "(60 there, expected about 70.0): one person more or less there moves that ratio by "
        "0.014."
    )


def test_balance_names_an_over_represented_group():
    # E[A] = (150, 120, 30); q = (0.8, 140/120, 40/30) -> min(q, 1/q) = (0.8, 0.857, 0.75)
    # E[B] = (350, 280, 70); q = (380/350, 260/280, 60/70) -> (0.921, 0.929, 0.857)
    doc = make_doc([[120, 140, 40], [380, 260, 60]])
    assert sentence(doc, "balance").startswith(
        "Segment 2 (100 rows) holds 40 of the 300 “A” people, where about 30.0 were expected "
        "(balance 0.750)."
    )


def test_balance_ci_lower_end_names_the_small_cell():
    # group C: 20 of 1000 people; segment 2 (100 rows) expects 2.0 and holds 2 (balance 1 there)
    # the value 0.75 is set by A in segment 2 (40 of 300, 30 expected); the lower end of the
    # interval by the C cell of 2 people: one person more or less moves its ratio by 1/2.0
    doc = make_doc([[120, 140, 40], [370, 252, 58], [10, 8, 2]], groups=("A", "B", "C"),
                   min_cell=1, ci={"*": (0.2, 0.9)})
    text = sentence(doc, "balance")
    assert "Segment 2 (100 rows) holds 40 of the 300 “A” people" in text
    assert (
        "The lower end of the 95% interval (0.200) is set by the 20 “C” people in segment 2 "
        "(2 there, expected about 2.0): so few that one person more or less moves that ratio "
        "by 0.500." in text
    )


def test_fairness_cce_names_cell_even_split_and_the_size_cap():
    # sizes 500/400/100 of 1000, c = 3: sizes alone cap it at min(3*0.1, ...) = 0.3.
    # A (300): even split 100 per segment; segment 2 holds 30 -> 0.3; B (700): 233.3, holds 70
    # -> 0.3 as well; the tie goes to the larger even split (B: more evidence)
    doc = make_doc([[120, 150, 30], [380, 250, 70]])
    text = sentence(doc, "fairness_cce")
    assert text.startswith(
        "Segment 2 (100 rows) holds 70 of the 700 “B” people, where an even split over the 3 "
        "segments would put about 233 (fairness_cce 0.300)."
    )
    assert "The segment sizes alone cap it at 0.300" in text
    assert "(segments of 100 to 500 rows, smallest / largest = 0.200)" in text
    assert "reflects unequal segment sizes, not the group mix" in text


def test_fairness_cce_with_equal_sizes_is_about_the_mix():
    # equal sizes (500/500): sizes alone allow 1; with equal sizes and this mix: A is 300 with
    # 100/200 -> c*gamma = 2*100/300 = 0.667
    doc = make_doc([[100, 200], [400, 300]])
    text = sentence(doc, "fairness_cce")
    assert text.startswith("Segment 0 (500 rows) holds 100 of the 300 “A” people, where an even "
                           "split over the 2 segments would put about 150 (fairness_cce 0.667).")
    assert "sizes alone cap it at 1.000" in text
    assert "With equal segment sizes and the same group mix per segment it would be 0.667." in text
    assert "unequal" not in text


def test_wd_names_the_cluster_contributing_most_and_the_group_most_out_of_line():
    # population A 30 %, B 60 %, C 10 %; segment 0 (500 rows): A 10 %, B 84 %, C 6 % -> Wd
    # (total variation) 0.24, contributes 0.5 * 0.24 = 0.12; segment 1 (300): Wd 1/6, 0.05;
    # segment 2 (200): Wd 0.45, 0.09; wd = 0.26. In segment 0, B is furthest off: 420 where
    # 500 * 0.6 = 300 were expected (+24 points)
    doc = make_doc([[50, 100, 150], [420, 130, 50], [30, 70, 0]], groups=("A", "B", "C"),
                   min_cell=1)
    assert sentence(doc, "wd").startswith(
        "Segment 0 (500 rows) contributes most: 0.120 of the size-weighted mean 0.260 (its own "
        "Wd 0.240). Its group most out of line is “B”: 420 people, where about 300 were "
        "expected (over-represented by 24.0 percentage points)."
    )


def test_wd_zero_says_every_cluster_mirrors_the_population():
    doc = make_doc([[30, 60], [70, 140]])
    assert sentence(doc, "wd") == (
        "Every segment mirrors the population's group mix (wd 0.000)."
    )


def test_undefined_value_is_said_so():
    doc = make_doc([[30, 60], [70, 140]])
    r = next(r for r in doc["results"] if r["metric"] == "balance")
    r["value"] = None
    r["notes"] = ["balance is undefined here"]
    assert sentence(doc, "balance").startswith("balance is undefined here")


def test_too_small_groups_are_listed():
    doc = make_doc([[150, 150, 0], [350, 250, 100]])
    r = next(r for r in doc["results"] if r["metric"] == "balance")
    r["detail"] = {"too_small": {"groups": ["Z"], "min_cell": 10, "rows": 5}}
    assert sentence(doc, "balance").endswith(
        "Left out as too small to judge (fewer than 10 people each): “Z” (5 people)."
    )


def test_thousands_of_too_small_groups_are_counted_not_listed():
    """A high-cardinality intersection can leave thousands of groups out: the sentence names
    ten and counts the rest (the JSON lists them all); it was 100,000 characters per metric."""
    doc = make_doc([[150, 150, 0], [350, 250, 100]])
    r = next(r for r in doc["results"] if r["metric"] == "balance")
    groups = [f"g{i}" for i in range(2500)]
    r["detail"] = {"too_small": {"groups": groups, "min_cell": 10, "rows": 4000}}
    text = sentence(doc, "balance")
    assert "“g0”, “g1”" in text and "“g9” and 2,490 more (all in the JSON: detail.too_small)" in text
    assert "g10," not in text and len(text) < 1000


def test_own_warnings_read_as_the_console_s_other_lines():
    import logging

    from fairaudit.cli.base import _ConsoleFormatter

    def fmt(name, level):
        return _ConsoleFormatter().format(logging.LogRecord(name, level, __file__, 1, "m %s",
                                                            ("x",), None))

    assert fmt("fairaudit.core.stages", logging.WARNING) == "warning: m x"
    assert fmt("fairaudit_builtins.field", logging.WARNING) == "warning: m x"
    assert fmt("fairaudit.core.runner", logging.INFO) == "INFO fairaudit.core.runner: m x"
    assert fmt("polars", logging.WARNING) == "WARNING polars: m x"


# ----------------------------------------------------------------------------- small cells
def test_a_small_cell_that_sets_the_value_is_named_exactly():
    # C has 3 people in segment 2 (below min_cell 10, but C's 40 people are judged): that cell
    # sets the balance, and the analyst's report says so with the exact count
    counts = [[150, 150, 30], [330, 233, 57], [20, 17, 3]]
    doc = make_doc(counts, groups=("A", "B", "C"), ci={"*": (0.1, 0.5)})
    out = explain(doc, SPECS)
    bal = next(r["explanation"] for r in out["results"] if r["metric"] == "balance")
    assert bal.startswith("Segment 2 (90 rows) holds 3 of the 40 “C” people, where about 3.6 "
                          "were expected (balance 0.825).")


def test_small_cell_through_the_runner(tmp_path):
    """End to end: a labels column with a 3-person cell: the value, its interval and the
    sentence are exact (the analyst's report), the 5-person group is too small to judge."""
    from fairaudit.api import audit

    rows = (
        [("A", 0)] * 150 + [("A", 1)] * 150 + [("A", 2)] * 30
        + [("B", 0)] * 330 + [("B", 1)] * 233 + [("B", 2)] * 57
        + [("C", 0)] * 20 + [("C", 1)] * 17 + [("C", 2)] * 3
        + [("D", 0)] * 3 + [("D", 1)] * 2  # 5 people: too small to judge (min_cell 10)
    )
    frame = pl.DataFrame({"group": [r[0] for r in rows], "segment": [r[1] for r in rows]})
    run = audit(frame, sensitive="group", labels="segment", bootstrap=50)
    doc = run.doc
    heads = [r for r in doc["results"] if r.get("headline")]
    assert heads and all(r.get("explanation") for r in heads)
    assert all(r["value"] is not None and r["ci"] is not None for r in heads)
    bal = next(r for r in heads if r["metric"] == "balance")
    assert bal["detail"]["too_small"] == {"groups": ["D"], "min_cell": 10, "rows": 5}
    assert bal["value"] == pytest.approx(3 / (90 * 40 / 990))
    assert "holds 3 of the 40 “C” people" in bal["explanation"]
    assert bal["explanation"].endswith(
        "Left out as too small to judge (fewer than 10 people each): “D” (5 people).")
    assert {(v["labelling"], v["attribute"]) for v in doc["verdicts"]} == {("segment", "group")}
    assert any(g["metric"] == "balance" for g in doc["glossary"])
    _validate(doc)


# ----------------------------------------------------------------------------- verdicts
def _result(value, ci, *, metric="balance", auditor="balance", direction="higher_is_better",
            threshold=None, too_small=None):
    return {"auditor": auditor, "metric": metric, "labelling": "k", "attribute": "sex",
            "value": value, "ci": ci, "direction": direction, "headline": True,
            "threshold": threshold, "status": "not_evaluated", "per_cluster": [],
            "detail": {"too_small": too_small} if too_small else {}}


def _verdict(*results, groups=2):
    doc = {"chain": {"options": {"ci_level": 0.95}},
           "input": {"groups": {"sex": [{"group": str(i)} for i in range(groups)]}},
           "labellings": [], "results": list(results)}
    out = verdicts(doc, SPECS)
    assert len(out) == 1
    return out[0]


@pytest.mark.parametrize(
    ("value", "ci", "expected"),
    [
        (0.9, [0.85, 0.95], "fair"),           # conservative (lower) end clears 0.8
        (0.9, [0.8, 0.95], "fair"),            # exactly on the bound clears it
        (0.85, [0.75, 0.9], "borderline"),     # straddles 0.8
        (0.5, [0.4, 0.79], "unfair"),          # whole interval below 0.8
        (0.5, [0.0, 0.9], "too little data"),  # straddles, wider than MAX_CI_WIDTH of [0, 1]
        (0.3, [0.08, 0.76], "unfair"),         # wide, but wholly below the bound: decides
        (0.95, [0.82, 1.0], "fair"),
        (None, None, "too little data"),       # undefined
        (0.9, None, "fair"),                   # no interval: judged on the value
        (0.7, None, "unfair"),
    ],
)
def test_verdict_rule_for_a_higher_is_better_metric(value, ci, expected):
    v = _verdict(_result(value, ci))
    assert v["verdict"] == expected
    assert "balance \u2265 0.8 (default bound)" in v["reasons"][0]
    assert "conservative end" in v["rule"]


@pytest.mark.parametrize(
    ("ci", "expected"),
    [([0.02, 0.09], "fair"), ([0.05, 0.15], "borderline"), ([0.11, 0.2], "unfair")],
)
def test_verdict_rule_for_a_lower_is_better_metric(ci, expected):
    r = _result(0.08, ci, metric="wd", auditor="distribution", direction="lower_is_better")
    assert _verdict(r)["verdict"] == expected


def test_verdict_combines_metrics_worst_first():
    fair = _result(0.9, [0.85, 0.95])
    wd_unfair = _result(0.3, [0.25, 0.35], metric="wd", auditor="distribution",
                        direction="lower_is_better")
    wd_border = _result(0.1, [0.05, 0.15], metric="wd", auditor="distribution",
                        direction="lower_is_better")
    wide = _result(0.5, [0.0, 0.9])
    assert _verdict(fair, wd_unfair)["verdict"] == "unfair"
    assert _verdict(fair, wd_border)["verdict"] == "borderline"
    assert _verdict(wide, wd_border)["verdict"] == "too little data"
    assert _verdict(wide, wd_unfair)["verdict"] == "unfair"


def test_verdict_uses_the_users_threshold_and_ignores_metrics_without_a_bound():
    th = {"metric": "balance", "value": 0.9, "bound": "min", "on": "ci"}
    v = _verdict(_result(0.9, [0.85, 0.95], threshold=th),
                 _result(0.01, [0.0, 0.02], metric="fairness_cce", auditor="capacity"))
    assert v["verdict"] == "borderline"
    assert "balance \u2265 0.9 (your threshold)" in v["reasons"][0]
    assert len(v["reasons"]) == 1
    assert "Not judged: fairness_cce (kept out of the verdict" in v["rule"]


def test_verdict_too_little_data_when_groups_are_too_small():
    r = _result(0.9, [0.85, 0.95], too_small={"groups": ["x"], "min_cell": 10, "rows": None})
    assert _verdict(r, groups=2)["verdict"] == "too little data"
    assert _verdict(r, groups=3)["verdict"] == "fair"


def test_no_verdict_without_a_bound_and_none_for_data_results():
    r = _result(0.5, None, metric="fairness_cce", auditor="capacity")
    doc = {"results": [r, dict(_result(0.9, None), labelling="(data)")]}
    assert verdicts(doc, SPECS) == []
    assert MAX_CI_WIDTH == 0.5


# ----------------------------------------------------------------------------- glossary
def test_glossary_comes_from_metric_specs_with_defaults_for_plugins():
    plugin = MetricSpec("gap", Direction.LOWER_IS_BETTER, "largest share gap", headline=True)
    doc = {"results": [_result(0.9, None), _result(0.1, None, metric="gap", auditor="plug",
                                                   direction="lower_is_better")]}
    entries = {g["metric"]: g for g in glossary(doc, {**SPECS, ("plug", "gap"): plugin})}
    bal = entries["balance"]
    assert bal["meaning"] == BalanceAuditor.metrics[0].meaning
    assert bal["range"] == [0.0, 1.0] and bal["verdict_bound"] == 0.8
    gap = entries["gap"]
    assert gap["meaning"] == "largest share gap"  # the description stands in
    assert gap["good"] == "Lower is better; the best possible value is 0."
    assert gap["choose_threshold"].startswith("--fail-over gap=X")


def test_every_builtin_headline_metric_has_glossary_text():
    for (auditor, metric), spec in builtin_specs().items():
        if spec.headline and auditor in ("balance", "distribution", "capacity"):
            assert spec.meaning and spec.good and spec.choose_threshold, metric
            assert spec.verdict_bound is not None or spec.verdict_reason, metric


# ----------------------------------------------------------------------------- JSON and HTML
def _validate(doc):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((Path(__file__).parents[1] / "fairaudit/schema/audit.schema.json")
                        .read_text(encoding="utf-8"))
    jsonschema.validate(json.loads(json.dumps(doc)), schema)


def test_explain_does_not_change_its_input():
    doc = make_doc([[150, 150, 0], [350, 250, 100]])
    before = copy.deepcopy(doc)
    explain(doc, SPECS)
    assert doc == before


def test_old_json_without_explanations_renders_with_them():
    doc = json.loads((DATA / "sample_audit.json").read_text(encoding="utf-8"))
    assert "verdicts" not in doc
    page = report.render_html(AuditRun.from_json(doc))
    assert 'id="sec-explain"' in page
    heads = [r for r in doc["results"] if r.get("headline")]
    explained = explain(doc, builtin_specs())
    for r in explained["results"]:
        if r.get("headline"):
            assert _esc(r["explanation"]) in page
    assert len(heads) == sum(1 for r in explained["results"] if r.get("explanation"))


def _esc(text: str) -> str:
    from markupsafe import escape

    return str(escape(text))


@pytest.fixture(scope="module")
def demo_doc():
    """The demo's audit (make demo) of the bundled sample, with labellings from a labels column
    only (fast): the same headline auditors, sentences and verdicts as the demo."""
    from fairaudit.api import audit

    data = Path(__file__).parents[1] / "examples/data/adult_sample.parquet"
    frame = pl.read_parquet(data)
    frame = frame.with_columns(
        (pl.col("age") // 20).clip(0, 3).cast(pl.Int64).alias("segment")
    )
    return audit(frame, sensitive="sex,race", labels="segment", bootstrap=50, seed=1).doc


def test_every_headline_result_in_the_demo_html_has_its_sentence_and_verdict(demo_doc):
    _validate(demo_doc)
    page = report.render_html(AuditRun.from_json(demo_doc))
    sec = page[page.index('id="sec-explain"'):page.index('id="sec-data"')]
    verdict_keys = {(v["labelling"], v["attribute"]) for v in demo_doc["verdicts"]}
    heads = [r for r in demo_doc["results"] if r.get("headline")]
    assert heads
    for r in heads:
        assert r["explanation"] and _esc(r["explanation"]) in sec
        if r["attribute"] is not None and r["labelling"] != "(data)":
            assert (r["labelling"], r["attribute"]) in verdict_keys
    for v in demo_doc["verdicts"]:
        assert v["verdict"] in ("fair", "borderline", "unfair", "too little data")
        assert re.search(
            rf"<td>{re.escape(v['labelling'])}</td>\s*<td>{re.escape(_esc(v['attribute']))}"
            rf"</td>\s*<td><span class=\"[^\"]+\">{v['verdict']}</span>", sec)
    assert "<h3>Glossary</h3>" in sec and "Rule.</strong>" in sec


def test_cli_render_of_an_old_json_explains_it(run_cli, tmp_path):
    out = tmp_path / "old.html"
    result = run_cli("render", str(DATA / "sample_audit.json"), "-o", str(out))
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    sec = page[page.index('id="sec-explain"'):page.index('id="sec-data"')]
    assert "<h3>Verdicts</h3>" in sec and "<h3>Glossary</h3>" in sec
    assert "holds" in sec  # the sentences were computed on load
