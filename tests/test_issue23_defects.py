"""The smaller defects of issue 23 ("Why", point 4), each pinned by a test."""

from __future__ import annotations

import re

import numpy as np
import polars as pl

import fairaudit
from fairaudit.report import charts
from fairaudit.report import render as report


def test_all_zero_bars_get_a_unit_axis_not_1e12():
    svg = charts.hbar(["a", "b"], [0.0, 0.0], title="all zero")
    assert "e-12" not in svg and "1e\u221212" not in svg and "\u00d710" not in svg
    assert re.search(r">\s*1\.0\s*<|>1<", svg) or "1.0" in svg  # the axis reaches 1


def test_one_person_step_is_never_shown_as_zero():
    from fairaudit.report.explain_text import _step

    assert _step(1 / 4000) == "0.00025"
    assert _step(1 / 30) == "0.033"
    assert _step(0.0) == "0.000"


def _big_table(n: int = 9000) -> pl.DataFrame:
    rng = np.random.default_rng(3)
    return pl.DataFrame({"g": rng.choice(["a", "b"], n), "segment": rng.integers(0, 2, n)})


def test_no_sentence_moves_a_value_by_0_000():
    run = fairaudit.audit(_big_table(), sensitive=["g"], labels="segment")
    text = " ".join(r.get("explanation") or "" for r in run.results)
    assert not re.search(r"by (up to )?0\.000(?!\d)", text), text
    assert "by up to 0.00022" in text or "by up to 0.00023" in text


def test_glossary_gives_wd_its_range_not_unbounded():
    run = fairaudit.audit(_big_table(2000), sensitive=["g"], labels="segment")
    g = next(e for e in run.doc["glossary"] if e["metric"] == "wd")
    assert g["range_text"].startswith("[0, 1] for unordered groups")
    html = report.render_html(run)
    glossary = html[html.index("<table class=\"glossary\">"):]
    assert "unbounded" not in glossary
    assert "[0, 1] for unordered groups" in glossary


def test_legend_promises_intervals_only_when_shown():
    df = _big_table(2000)
    with_ci = report.render_html(fairaudit.audit(df, sensitive=["g"], labels="segment"))
    assert "confidence intervals in brackets" in with_ci
    without = report.render_html(fairaudit.audit(df, sensitive=["g"], labels="segment",
                                                 bootstrap=0))
    assert "confidence intervals in brackets" not in without
    assert "no intervals" in without


def test_a_gate_that_could_not_judge_always_says_why():
    """A gate on a value it could not judge fails with its reason; it never shows "n/a" with
    ``reason: null`` (console, Markdown and JSON)."""
    from fairaudit.report.summary import console_lines, gate_rows, markdown

    rng = np.random.default_rng(0)
    n = 600
    race = np.array(["a"] * (n - 5) + ["tiny"] * 5)  # one group below --min-cell: undefined
    df = pl.DataFrame({"race": race, "segment": rng.integers(0, 3, n),
                       "sex": rng.choice(["f", "m"], n)})
    run = fairaudit.audit(df, sensitive=["race", "sex"], labels="segment",
                          fail_under={"balance@ci": 0.5, "mnce": 0.5})
    gates = run.doc["gates"]
    assert any(g["judged"] is None for g in gates)
    for g in gates:
        if g["judged"] is None:
            assert g["status"] == "fail" and g["reason"], g
    lines = console_lines(run.doc)
    for i, line in enumerate(lines):
        if " n/a " in line:
            assert lines[i + 1].strip().startswith("why: "), lines
    for r in gate_rows(run.doc):  # the rows of the console and of --summary-md
        assert r["judged"] != "n/a" or r["reason"], r
    md = markdown(run.doc)
    for row in (x for x in md.splitlines() if x.startswith("| **FAIL**") and "| n/a |" in x):
        assert row.rstrip(" |").rsplit("|", 1)[1].strip(), row  # the Why column is filled
