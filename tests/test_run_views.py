"""How a run shows itself (issue 37, part 1): the inline HTML view, its Markdown and plain-text
twins, and a published run's view (the DP banner, the release's numbers only).

The views are read from the document alone, so most tests use the golden documents; one builds a
published release of a small table (labels column, counting auditors only)."""

from __future__ import annotations

import html as htmllib
import json
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import fairaudit
from fairaudit.report.answer import answers, overall_text
from fairaudit.report.results import AuditRun
from fairaudit.report.summary import EXACT_NOTICE
from fairaudit.report.view import HINT, view_html

GOLDEN = Path(__file__).resolve().parent / "golden"
DOCS = ("demo", "labels", "twins", "chain", "api")


def golden(name: str) -> AuditRun:
    return AuditRun.from_json(json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8")))


def _css(html: str) -> str:
    m = re.search(r"<style>(.*?)</style>", html, re.S)
    assert m, "the view carries its styles"
    return re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)


def _selectors(css: str) -> list[str]:
    """Every selector of the style sheet (inside @media blocks too)."""
    out = []
    for head in re.findall(r"([^{}]+)\{", css):
        head = head.strip()
        if head.startswith("@media"):
            continue
        out += [s.strip() for s in head.split(",") if s.strip()]
    return out


@pytest.mark.parametrize("name", DOCS)
def test_the_view_is_scoped_and_has_no_script(name):
    html = golden(name)._repr_html_()
    assert html.startswith('<div class="fairaudit-view">') and html.rstrip().endswith("</div>")
    assert "<script" not in html.lower() and not re.search(r"\son\w+\s*=", html)
    assert "http://" not in html and "https://" not in html and "@import" not in html
    selectors = _selectors(_css(html))
    assert selectors
    for s in selectors:  # never restyles the notebook: each rule is inside the view
        assert re.search(r"\.fairaudit-view(\s|$|[.:\[])", s), s
        assert not s.startswith((":root", "body {", "html", "*"))
    # light and dark: the OS preference, and the notebook's own theme where it says it
    css = _css(html)
    assert "@media (prefers-color-scheme: dark)" in css
    for theme in ('[data-jp-theme-light="false"] .fairaudit-view',
                  '[data-jp-theme-light="true"] .fairaudit-view',
                  "body.vscode-dark .fairaudit-view", "body.vscode-light .fairaudit-view"):
        assert theme in css


@pytest.mark.parametrize("name", DOCS)
def test_html_markdown_and_text_say_the_same(name):
    """The answer-first lines of the report (report/answer.py) in all three views: each
    attribute's line, every labelling's verdict, the overall count."""
    run = golden(name)
    doc = run.doc
    html = htmllib.unescape(re.sub(r"<[^>]+>", "", run._repr_html_()))
    md, text = run._repr_markdown_(), repr(run)
    found = answers(doc)
    assert found, "the golden documents have verdicts"
    for a in found:
        tail = a["line"].split(" \u2014 ", 1)[1]
        assert tail in html and a["line"] in text
        assert a["attribute"] in md and a["verdict"] in md
        for e in a["labellings"]:
            assert e["labelling"] in html and e["labelling"] in md and e["labelling"] in text
            assert e["text"] in text
    total = overall_text(doc)
    assert total in text
    assert total.split(" (of ")[0] in html
    assert HINT in text and "run.to_polars()" in md and "run.to_polars()" in html
    assert EXACT_NOTICE in html and EXACT_NOTICE in text and EXACT_NOTICE in md


def test_each_labelling_verdict_names_its_cell_and_interval():
    run = golden("demo")
    html = run._repr_html_()
    for v in run.verdicts:
        by = v.decided_by
        assert by is not None
        cell = f"cluster {by.cluster} \u00b7 {htmllib.escape(by.group)}" if by.cluster is not None \
            else ""
        assert cell in html
        assert f"{by.value:.3f} [{by.ci_low:.3f}, {by.ci_high:.3f}]" in html
        assert htmllib.escape(v.sentence, quote=True) in html  # the full reading, as a title


def test_a_named_cluster_is_shown_by_its_name():
    """A labels column of strings names its clusters: the view says "premium", not "cluster 0"."""
    rng = np.random.default_rng(4)
    n = 1500
    grp = rng.choice(["A", "B"], size=n, p=[0.8, 0.2])
    seg = np.where((grp == "B") & (rng.random(n) < 0.7), "premium",
                   rng.choice(["basic", "plus"], size=n))
    run = fairaudit.audit(pl.DataFrame({"grp": grp, "segment": seg}), sensitive="grp",
                          labels="segment", bootstrap=50)
    by = run.verdicts[0].decided_by
    assert by is not None and by.cluster_name is not None
    html = run._repr_html_()
    assert f"\u201c{by.cluster_name}\u201d holds" in html  # the answer line
    # beside another labelling, the table's cell names it too
    two = AuditRun({**run.doc, "labellings": [*run.doc["labellings"], {
        **run.doc["labellings"][0], "name": "copy"}], "verdicts": [*run.doc["verdicts"], {
            **run.doc["verdicts"][0], "labelling": "copy"}]})
    assert f"{by.cluster_name} \u00b7 {by.group}" in two._repr_html_()


def test_hostile_names_stay_text():
    text = (GOLDEN / "demo.json").read_text(encoding="utf-8")
    evil_lab, evil_group = "<img src=x onerror=alert(1)>", "F</td><script>alert(2)</script>"
    text = text.replace('"kmeans"', json.dumps(evil_lab)).replace("Female", evil_group)
    run = AuditRun.from_json(json.loads(text))
    html = run._repr_html_()
    assert "<img" not in html and "<script" not in html and "</td><script" not in html
    assert htmllib.escape(evil_lab) in html
    md = run._repr_markdown_()
    assert "<img" not in md and "<script" not in md  # the Markdown escapes HTML too


def test_repr_is_the_console_answer_not_the_document():
    run = golden("demo")
    text = repr(run)
    assert text.startswith("AuditRun \u00b7 fairaudit: ")
    assert len(text) < len(json.dumps(run.doc)) / 20 and text.count("\n") < 40
    for name in ("kmeans", "fairden", "ffcm"):
        assert name in text


def test_a_partial_document_still_shows_a_line():
    run = AuditRun({"schema_version": "1.1", "status": "pass", "results": []})
    assert repr(run).startswith("AuditRun")
    assert run._repr_html_().startswith('<div class="fairaudit-view">')
    assert run._repr_markdown_().startswith("AuditRun")


# ----------------------------------------------------------------------------- published
@pytest.fixture
def published(tmp_path):
    rng = np.random.default_rng(7)
    n = 3000
    race = rng.choice(["a", "b", "c"], size=n, p=[0.6, 0.3, 0.1])
    seg = np.where((race == "c") & (rng.random(n) < 0.6), 0, rng.integers(0, 3, size=n))
    path = tmp_path / "people.parquet"
    pl.DataFrame({"race": race, "segment": seg}).write_parquet(path)
    return fairaudit.audit(str(path), sensitive="race", labels="segment", bootstrap=50,
                           publish=True, ledger=str(tmp_path / "ledger.json"), new_ledger=True,
                           privacy_budget=2.0, dp_categories={"race": ["a", "b", "c"]}, dp_clusters=["0", "1", "2"])


def test_a_published_run_shows_the_banner_and_only_the_release(published):
    release = published
    assert release.doc["privacy"]["mode"] == "dp"
    html = release._repr_html_()
    assert 'data-privacy="dp"' in html and "Published release (differential privacy)" in html
    assert EXACT_NOTICE not in html
    assert html == view_html(release.doc)  # the view reads the release's document, nothing else
    text, md = repr(release), release._repr_markdown_()
    assert "published release (differential privacy)" in text
    assert "published release (differential privacy)" in md
    assert EXACT_NOTICE not in text and EXACT_NOTICE not in md
    # every reading of a cell says its counts are the release's noisy counts (the noise is
    # fresh each run: no comparison with the exact counts, which it may leave unchanged)
    assert release.verdicts
    for v in release.verdicts:
        if v.decided_by is not None and v.decided_by.text:
            assert "published counts, noise sd" in v.decided_by.text
            assert htmllib.escape(v.sentence, quote=True) in html
    assert any(v.decided_by is not None and v.decided_by.text for v in release.verdicts)
