"""The answer first (issue 23): without thresholds, the console, ``--summary-md`` and the top of
the report give per attribute and labelling the verdict and the cell that set it, by the
cluster's own name."""

from __future__ import annotations

import json
import re

import numpy as np
import polars as pl
import pytest

LINE = "\u201cpremium\u201d holds 33 of the 111 \u201cOther\u201d people, 10.0 expected"


def _segments() -> pl.DataFrame:
    """3,000 customers in three named segments. "Other" (111 people) has 33 in "premium" (270
    rows), where 111 x 270 / 3,000 = 10.0 are expected: balance 10 / 33 = 0.30; sex is spread
    evenly. (At a third of this size the deciding cell expects 3.3 people: too few to judge,
    docs/metrics.md "Sparse tables".)"""
    rng = np.random.default_rng(7)
    race = ["Other"] * 111 + ["White"] * 2100 + ["Black"] * 789
    seg = (["premium"] * 33 + ["standard"] * 39 + ["basic"] * 39
           + ["premium"] * 165 + ["standard"] * 1200 + ["basic"] * 735
           + ["premium"] * 72 + ["standard"] * 450 + ["basic"] * 267)
    sex = rng.permutation(np.array(["f", "m"] * 1500)).tolist()
    return pl.DataFrame({"race": race, "sex": sex, "segment": seg})


@pytest.fixture
def segments(tmp_path):
    path = tmp_path / "segments.parquet"
    _segments().write_parquet(path)
    return path


def test_console_gives_the_verdict_and_the_deciding_cell_by_name(run_cli, segments, tmp_path):
    md = tmp_path / "summary.md"
    res = run_cli("audit", segments, "--sensitive", "race,sex", "--labels", "segment",
                  "--summary-md", md, "--out", tmp_path / "r.html", "--json", tmp_path / "r.json")
    assert res.exit_code == 0, res.output
    out = res.output
    assert "verdicts (no threshold set" in out
    race = next(line for line in out.splitlines() if line.strip().startswith("race \u2014"))
    assert race.strip().startswith("race \u2014 unfair: ")
    assert LINE in race
    assert re.search(r"\(ratio 0\.30; at most 0\.\d\d at 95%\); balance 0\.30\d \[0\.\d+, "
                     r"0\.\d+\]$", race), race
    sex = next(line for line in out.splitlines() if line.strip().startswith("sex \u2014"))
    assert re.match(r"\s*sex \u2014 (fair|borderline): \u201c\w+\u201d holds",
                    sex), sex
    # --summary-md gets the same answer
    text = md.read_text(encoding="utf-8")
    assert "race \u2014 unfair: " in text and LINE in text
    doc = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert doc["labellings"][0]["cluster_names"] == ["basic", "premium", "standard"]
    v = next(v for v in doc["verdicts"] if v["attribute"] == "race")
    assert v["decided_by"]["cluster_name"] == "premium"
    assert v["decided_by"]["group"] == "Other" and v["decided_by"]["count"] == 33
    assert v["decided_by"]["expected"] == pytest.approx(9.99)


def test_quiet_stays_silent(run_cli, segments, tmp_path):
    res = run_cli("audit", segments, "--sensitive", "race,sex", "--labels", "segment",
                  "--quiet", "--out", tmp_path / "r.html", "--json", tmp_path / "r.json")
    assert res.exit_code == 0
    assert res.output == ""


def test_report_leads_with_the_answer(segments, tmp_path):
    import fairaudit
    from fairaudit.report import render as report

    run = fairaudit.audit(segments, sensitive=["race", "sex"], labels="segment")
    html = report.render_html(run)
    summary = html[html.index('id="sec-summary"'):]
    # the status card reflects the verdicts when there is no threshold
    assert "Verdict &middot; no threshold set" in summary
    assert re.search(r'<div class="value">Unfair</div>', summary)
    assert "Unfair &middot; no threshold" in html  # the top bar
    answer = summary.index('id="answer"')
    assert answer < summary.index("All headline metrics")
    block = summary[answer:summary.index("All headline metrics")]
    assert LINE in block
    # detail folds open on demand
    assert re.search(r'<details class="headline-metrics">', summary)
    explain = html[html.index('id="sec-explain"'):]
    assert explain.count("<details>") >= 3  # verdict reasons, per-labelling detail, glossary
    # the sentences name the cluster by its own name
    assert "\u201cpremium\u201d (270 rows) holds 33 of the 111 \u201cOther\u201d people" in html
    assert "cluster 1 (270 rows)" not in html


def test_status_card_with_thresholds_is_unchanged(segments):
    import fairaudit
    from fairaudit.report import render as report

    run = fairaudit.audit(segments, sensitive=["race", "sex"], labels="segment",
                          fail_under={"balance": 0.2})
    html = report.render_html(run)
    assert "Overall status" in html and "Verdict &middot; no threshold set" not in html


def test_the_line_names_the_cell_that_sets_the_value_when_another_decides(run_cli, tmp_path):
    """2,000 rows, segments a (400), b (600), c (1,000). "A" (1,190 people) has 80 in a where
    1,190 x 400 / 2,000 = 238 are expected (ratio 0.34, a tight interval): its upper end decides
    "unfair". "T" (10 people) has none in a, where 2 are expected: the value, balance 0, comes
    from that cell. The line must not read as if 0.000 belonged to A's cell."""
    grp = ["B"] * 320 + ["A"] * 80 + ["B"] * 200 + ["T"] * 4 + ["A"] * 396 \
        + ["B"] * 280 + ["T"] * 6 + ["A"] * 714
    seg = ["a"] * 400 + ["b"] * 600 + ["c"] * 1000
    path = tmp_path / "t.parquet"
    pl.DataFrame({"grp": grp, "segment": seg}).write_parquet(path)
    res = run_cli("audit", path, "--sensitive", "grp", "--labels", "segment",
                  "--out", tmp_path / "r.html", "--json", tmp_path / "r.json")
    assert res.exit_code == 0, res.output
    line = next(x for x in res.output.splitlines() if x.strip().startswith("grp \u2014"))
    assert "\u201ca\u201d holds 80 of the 1,190 \u201cA\u201d people, 238 expected" in line, line
    assert ("the value 0.000 is set by \u201ca\u201d (0 of the 10 \u201cT\u201d people)"
            in line), line
    assert line.rstrip().endswith("]") and "balance 0.000 [" in line, line


def test_audit_run_repr_is_the_answer_not_the_document(segments):
    """repr(run) says what the console says (issue 37: the answer in a terminal), a few lines,
    never the 130 KB document (a new-user trial printed it)."""
    import fairaudit

    run = fairaudit.audit(segments, sensitive=["race"], labels="segment")
    text = repr(run)
    assert text.count("\n") < 15 and len(text) < 3000, text
    assert text.startswith("AuditRun \u00b7 fairaudit: ") and "3,000 rows" in text
    assert "attributes: race" in text and "race \u2014 " in text
    assert "run.to_polars()" in text


def test_console_shows_rows_left_out_and_warnings(run_cli, tmp_path):
    """100 null sexes are left out and a 2-row segment is fragile: the console says both (they
    were in the JSON and HTML only), before the verdicts."""
    path = tmp_path / "nul.parquet"
    pl.DataFrame({"sex": ["m", "f", None] * 100 + ["m"] * 2,
                  "seg": ["a", "b", "c"] * 100 + ["d", "d"]}).write_parquet(path)
    res = run_cli("audit", path, "--sensitive", "sex", "--labels", "seg",
                  "--out", tmp_path / "r.html", "--json", tmp_path / "r.json")
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    left = next(i for i, x in enumerate(lines) if x.startswith("note: 100 rows left out ("))
    warn = next(i for i, x in enumerate(lines) if x.startswith("warning: seg: 1 cluster under"))
    verdicts = next(i for i, x in enumerate(lines) if x.startswith("verdicts ("))
    assert left < warn < verdicts
    assert "\u201cd\u201d: 2 rows" in lines[warn]


def _verdict(lab: str, attr: str, verdict: str) -> dict:
    return {"labelling": lab, "attribute": attr, "verdict": verdict,
            "decided_by": {"metric": "balance", "value": 0.5, "ci": [0.4, 0.6]}}


def _doc_with_twins() -> dict:
    """kmeans and ffcm (the user's) and ffcm's fair = false twin, which is the only unfair
    labelling: it must neither be counted nor lead the answer."""
    labs = [{"name": "kmeans", "origin": "clusterer", "component": "kmeans",
             "params": {"n_clusters": 3}},
            {"name": "ffcm", "origin": "clusterer", "component": "ffcm",
             "params": {"n_clusters": 3, "fair": True}},
            {"name": "ffcm-unfair", "origin": "clusterer", "component": "ffcm",
             "params": {"n_clusters": 3, "fair": False}}]
    return {"status": "not_evaluated", "labellings": labs,
            "input": {"attributes": ["sex"], "rows_audited": 100},
            "verdicts": [_verdict("kmeans", "sex", "fair"), _verdict("ffcm", "sex", "borderline"),
                         _verdict("ffcm-unfair", "sex", "unfair")]}


def test_twins_are_shown_for_comparison_but_never_counted_or_leading():
    from fairaudit.report.answer import answers, overall, overall_text

    doc = _doc_with_twins()
    [a] = answers(doc)
    assert a["verdict"] == "borderline" and a["n"] == 2
    assert a["counts"]["unfair"] == 0
    assert a["line"].startswith("sex \u2014 borderline in 1 of 2 segmentations (fair: kmeans): "
                                "ffcm: ")
    assert a["line"].endswith("(for comparison, fair = false twins: ffcm-unfair unfair)")
    assert [(e["labelling"], e["twin"]) for e in a["labellings"]] == [
        ("kmeans", False), ("ffcm", False), ("ffcm-unfair", True)]
    o = overall(doc)
    assert (o["verdict"], o["n"], o["twins"], o["counts"]["unfair"]) == ("borderline", 2, 1, 0)
    assert overall_text(doc) == ("1 borderline, 1 fair (of 2 attribute \u00d7 segmentation "
                                 "verdicts; 1 more of fair = false twins, shown for comparison, "
                                 "not counted)")
    # a user's own fair = false step without its fair method is the user's clustering
    alone = {**doc, "labellings": [doc["labellings"][0], doc["labellings"][2]],
             "verdicts": [doc["verdicts"][0], doc["verdicts"][2]]}
    assert overall(alone)["verdict"] == "unfair" and overall(alone)["twins"] == 0


def test_console_says_not_judged_in_words_and_the_json_keeps_the_enum(run_cli, segments,
                                                                      tmp_path):
    from fairaudit.report.summary import answer_lines, headline, markdown

    res = run_cli("audit", segments, "--sensitive", "race,sex", "--labels", "segment",
                  "--out", tmp_path / "r.html", "--json", tmp_path / "r.json")
    first = res.output.splitlines()[0]
    assert first.startswith("fairaudit: NOT JUDGED: no threshold set  (3,000 rows"), first
    assert "NOT_EVALUATED" not in res.output and "not_evaluated" not in res.output
    doc = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert doc["status"] == "not_evaluated"
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "not_evaluated" not in re.sub(r"<script.*?</script>", "", html, flags=re.S)
    assert markdown(doc).startswith("### fairaudit: NOT JUDGED: no threshold set\n")
    twins = _doc_with_twins()
    assert headline(twins).startswith("fairaudit: NOT JUDGED: no threshold set  (100 rows")
    lines = answer_lines(twins)
    assert any(line.strip().startswith("ffcm-unfair (twin)  unfair") for line in lines), lines
