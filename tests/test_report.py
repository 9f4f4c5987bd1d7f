"""The HTML report: rendered from the audit JSON alone, self-contained, escaped, deterministic."""

from __future__ import annotations

import copy
import json
import os
import re
import textwrap
from html.parser import HTMLParser
from pathlib import Path

import jinja2
import pluggy
import pytest
from fairaudit_builtins import explain_section
from fairaudit_builtins import sections as builtin_sections

from fairaudit import hookspecs
from fairaudit.core.components import ReportSection
from fairaudit.core.plugins import Host
from fairaudit.hookspecs import hookimpl
from fairaudit.report import render as report
from fairaudit.report.results import AuditRun

DATA = Path(__file__).parent / "data"
XSS = "<script>alert(1)</script>"


def load(name: str = "sample_audit.json") -> AuditRun:
    return AuditRun.from_json(json.loads((DATA / name).read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def run() -> AuditRun:
    return load()


@pytest.fixture(scope="module")
def html(run) -> str:
    return report.render_html(run)


def small_doc(name: str = "sample_audit.json", attribute: str = "sex") -> dict:
    """A sample cut down to one labelling and one attribute (few charts: fast to render)."""
    doc = copy.deepcopy(dict(load(name).doc))
    doc["input"]["attributes"] = [attribute]
    doc["labellings"] = [lab for lab in doc["labellings"] if lab["name"] == "kmeans"]
    for lab in doc["labellings"]:
        lab["composition"] = {attribute: lab["composition"][attribute]}
    doc["results"] = [
        r
        for r in doc["results"]
        if r["labelling"] == "kmeans"
        and r["attribute"] in (attribute, None)
        and (r["headline"] or r["auditor"] == "dcsi")
    ]
    return doc


@pytest.fixture(scope="module")
def small() -> AuditRun:
    return AuditRun.from_json(small_doc())


@pytest.fixture(scope="module")
def small_html(small) -> str:
    return report.render_html(small)


def section_html(page: str, name: str) -> str:
    m = re.search(
        rf'<section class="report-section" id="sec-{re.escape(name)}".*?</section>', page, re.S
    )
    assert m, f"section {name} missing"
    return m.group(0)


class _Collect(HTMLParser):
    """Tags with attributes, and the visible text (outside <style>)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "style":
            self._skip += 1

    def handle_endtag(self, tag):
        if tag == "style":
            self._skip -= 1

    def handle_data(self, data):
        if not self._skip:
            self.text.append(data)


def parse(page: str) -> _Collect:
    p = _Collect()
    p.feed(page)
    return p


# ----------------------------------------------------------------------------- page shape
def test_page_is_self_contained_with_restrictive_csp(html):
    assert (
        '<meta http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;; '
        'style-src &#39;unsafe-inline&#39;; img-src data:;">' in html
    )
    assert "http://" not in html and "https://" not in html
    tags = parse(html).tags
    names = {t for t, _ in tags}
    assert "script" not in names and "link" not in names and "iframe" not in names
    for tag, attrs in tags:
        for key in ("src", "href", "xlink:href"):
            value = attrs.get(key)
            if value is None:
                continue
            assert value.startswith(("#", "data:")), (tag, key, value)


def test_sections_in_order(html):
    ids = re.findall(r'<section class="report-section" id="sec-([a-z0-9_-]+)"', html)
    assert ids == [
        "summary",
        "explain",
        "data",
        "composition",
        "metrics",
        "audit-result",
        "exclusions",
        "metadata",
    ]
    toc = re.findall(r'<li><a href="#sec-([a-z0-9_-]+)">', html)
    assert toc == ids


def test_render_is_deterministic(html):
    assert report.render_html(load()) == html


def test_summary_reports_status_and_every_threshold_check(run, html):
    summary = section_html(html, "summary")
    text = " ".join(parse(summary).text)
    assert "Overall status" in text and "Fail" in text
    judged = [r for r in run.results if r["threshold"]]
    assert len(judged) > 0
    # one row per judged result: count the rule cells
    rules = re.findall(r"<td><code>([^<]*)</code></td>", summary)
    assert len(rules) == len(judged)
    n_fail = sum(r["status"] == "fail" for r in judged)
    n_warn = sum(r["status"] == "warn" for r in judged)
    n_pass = sum(r["status"] == "pass" for r in judged)
    stats = dict(
        re.findall(r'<div class="label">([^<]+)</div><div class="value[^"]*">(\d+)', summary)
    )
    assert stats["Failed"] == str(n_fail)
    assert stats["Warnings"] == str(n_warn)
    assert stats["Passed"] == str(n_pass)
    # failures are listed first
    statuses = re.findall(r'<td><span class="badge badge-([a-z-]+)">', summary)
    assert statuses == sorted(statuses, key=["fail", "warn", "not-applicable", "pass"].index)


def test_headline_table_has_one_row_per_headline_metric_and_attribute(run):
    table = builtin_sections.headline_table(run)
    expected = {(r["metric"], r["attribute"]) for r in run.results if r["headline"]}
    assert {(row["metric"], row["attribute"]) for row in table["rows"]} == expected
    assert table["labellings"] == ["segment", "kmeans"]
    for row in table["rows"]:
        for name, cell in zip(table["labellings"], row["cells"], strict=True):
            match = run.results_for(
                metric=row["metric"], labelling=name, attribute=row["attribute"]
            )
            if match:
                assert cell["value"] == match[0]["value"]
                assert cell["ci"] == match[0]["ci"]
            else:
                assert not cell["present"]


def test_headline_values_and_cis_are_shown(run, html):
    summary = section_html(html, "summary")
    r = run.results_for(metric="balance", labelling="segment", attribute="sex")[0]
    assert f"{r['value']:.3f}" in summary
    assert f"[{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]" in summary


def test_every_result_appears_in_the_metric_table(run, html):
    metrics = section_html(html, "metrics")
    for r in run.results:
        if r["value"] is not None:
            assert report.fmt_num(r["value"]) in metrics, r
    assert "undefined: cluster 3" in metrics  # notes of undefined values are shown


def test_composition_has_charts_for_each_labelling_and_attribute(run, html):
    comp = section_html(html, "composition")
    n = sum(len(lab["composition"]) for lab in run.labellings)
    # per attribute: composition bars + balance heatmap; per labelling: cluster sizes
    assert comp.count("<svg") == 2 * n + len(run.labellings)
    for lab in run.labellings:
        assert f'id="composition-{lab["name"]}"' in comp


def test_small_groups_are_listed_with_their_exact_sizes(run, html):
    exclusions = section_html(html, "exclusions")
    small = [(a, g) for a, gs in run.doc["input"]["groups"].items() for g in gs if g["small"]]
    assert small
    assert "Groups too small to judge" in exclusions
    for attribute, g in small:
        assert (f"<tr><td>{attribute}</td><td>{g['group']}</td>"
                f"<td class=\"num\">{g['n']:,}</td></tr>") in exclusions
    assert "null value in a sensitive column" in exclusions


def test_the_analyst_report_says_who_may_read_it(html):
    banner = re.search(r'<div class="callout warn privacy-notice" role="note">(.*?)</div>', html)
    assert banner is not None
    assert "This report contains exact counts, small groups included" in banner.group(1)
    assert "for people allowed to see the data" in banner.group(1)
    assert "--publish" in banner.group(1)


def test_no_withheld_values_or_ranges_anywhere(html):
    page = html.lower()
    for word in ("withheld", "supp.", "suppressed", "val-bounds"):
        assert word not in page, word


def test_metadata_shows_versions_seed_and_fingerprint(run, html):
    meta = section_html(html, "metadata")
    assert run.doc["input"]["fingerprint"] in meta
    for pkg, version in run.doc["environment"]["versions"].items():
        assert pkg in meta and version in meta
    assert '<th scope="row">Seed</th><td>7</td>' in meta


# ----------------------------------------------------------------------------- escaping
def test_everything_from_the_data_is_escaped():
    # the full document's tables and the charts of the attribute holding the bad group name
    doc = dict(load("sample_audit_xss.json").doc)
    doc["labellings"] = small_doc("sample_audit_xss.json", "race")["labellings"]
    page = report.render_html(AuditRun.from_json(doc))
    assert "<script" not in page.lower()
    assert "<img" not in page.lower()
    assert "<b>bold</b>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;b&gt;bold&lt;/b&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    # the group name reaches the charts too, escaped
    svg_texts = re.findall(r"<text[^>]*>([^<]*)</text>", page)
    assert any("&lt;script&gt;alert(1)" in t for t in svg_texts)
    # and the visible text is the literal name
    assert any(XSS in t for t in parse(page).text)


# ----------------------------------------------------------------------------- helpers
def test_balance_cells_hand_computed():
    comp = {
        "groups": ["a", "b", "c"],
        "clusters": [0, 1],
        "population_share": [0.5, 0.3, 0.2],
        "cluster_share": [[0.25, 0.75], [0.75, None], [0.0, 0.25]],
    }
    cells = builtin_sections.balance_cells(comp)
    assert cells[0] == pytest.approx([0.5, 2 / 3])  # min(.5/.25, .25/.5); min(.5/.75, .75/.5)
    assert cells[1][0] == pytest.approx(0.4)  # min(.3/.75, .75/.3)
    assert cells[1][1] is None  # undefined share
    assert cells[2] == pytest.approx([0.0, 0.8])  # absent group -> 0; min(.2/.25, .25/.2)


def test_balance_cells_match_counting_balance_per_cluster():
    """Oracle: the column minimum of the heatmap is fairaudit.metrics' per-cluster balance."""
    import numpy as np

    from fairaudit.metrics import counting

    rng = np.random.default_rng(0)
    for _ in range(20):
        g, k = rng.integers(2, 6), rng.integers(2, 6)
        N = rng.integers(1, 60, size=(g, k)).astype(float)
        comp = {
            "groups": [str(i) for i in range(g)],
            "clusters": list(range(k)),
            "population_share": (N.sum(1) / N.sum()).tolist(),
            "cluster_share": (N / N.sum(0, keepdims=True)).tolist(),
        }
        cells = np.array(builtin_sections.balance_cells(comp), dtype=float)
        assert cells.min(axis=0) == pytest.approx(counting.balance_per_cluster(N))


def test_best_value_is_marked_by_direction():
    cells = [builtin_sections.result_cell({"value": v}) for v in (0.2, 0.5, None)]
    builtin_sections.mark_best(cells, "higher_is_better")
    assert [c["best"] for c in cells] == [False, True, False]
    cells = [builtin_sections.result_cell({"value": v}) for v in (0.2, 0.5)]
    builtin_sections.mark_best(cells, "lower_is_better")
    assert [c["best"] for c in cells] == [True, False]
    ties = [builtin_sections.result_cell({"value": 0.5}) for _ in range(2)]
    builtin_sections.mark_best(ties, "higher_is_better")
    assert not any(c["best"] for c in ties)


def test_per_cluster_matrix_files_rows_under_their_metric(run):
    seg = [r for r in run.results if r["labelling"] == "segment" and r["auditor"] == "balance"]
    m = builtin_sections.per_cluster_matrix(seg, run)
    assert m["clusters"] == [0, 1, 2, 3]
    first = m["rows"][0]
    assert first["metric"] == "balance" and first["attribute"] == "sex"
    src = run.results_for(metric="balance", labelling="segment", attribute="sex")[0]
    assert first["values"] == [row["value"] for row in src["per_cluster"]]
    assert first["extras_keys"] == ["worst_group"]
    assert first["extras"] == [row["worst_group"] for row in src["per_cluster"]]


@pytest.mark.parametrize(
    ("fn", "value", "expected"),
    [
        (report.fmt_num, None, "\u2014"),
        (report.fmt_num, float("nan"), "\u2014"),
        (report.fmt_num, 0.123456, "0.123"),
        (report.fmt_num, -1e-17, "0.000"),
        (report.fmt_num, 2.5e-5, "2.50e-05"),
        (report.fmt_int, 1234567, "1,234,567"),
        (report.fmt_int, None, "\u2014"),
        (report.fmt_pct, 0.3312, "33.1%"),
        (report.fmt_ci, [0.1, 0.25], "[0.100, 0.250]"),
        (report.fmt_ci, None, ""),
        (report.status_class, "fail", "badge badge-fail"),
        (report.status_class, "not_applicable", "badge badge-not-applicable"),
        (report.status_class, "bogus", "badge badge-not-evaluated"),
        (report.fmt_params, {"b": 2, "a": "x"}, "a = x, b = 2"),
        (report.slug, "sex|race <x>", "sex-race-x"),
    ],
)
def test_filters(fn, value, expected):
    assert fn(value) == expected


def test_fmt_threshold():
    th = {"metric": "balance", "value": 0.8, "bound": "min", "on": "ci", "attribute": "sex"}
    assert report.fmt_threshold(th) == "balance@ci [sex] \u2265 0.8"
    assert report.fmt_threshold({"metric": "ed", "value": 0.1, "bound": "max"}) == "ed \u2264 0.1"


# ----------------------------------------------------------------------------- environment
def test_no_module_level_environment():
    assert not any(isinstance(v, jinja2.Environment) for v in vars(report).values())
    a, b = report.build_env(None), report.build_env(None)
    assert a is not b


def test_environment_settings():
    env = report.build_env(None)
    assert env.undefined is jinja2.StrictUndefined
    assert env.trim_blocks and env.lstrip_blocks
    assert env.autoescape("x.html.j2") and env.autoescape("x.html")
    with pytest.raises(jinja2.UndefinedError):
        env.from_string("{{ missing }}").render()
    assert env.from_string("{{ x }}").render(x="<b>") == "&lt;b&gt;"
    for name in ("fmt_num", "fmt_pct", "fmt_ci", "status_class"):
        assert name in env.filters


def test_user_template_dirs_come_first(tmp_path):
    (tmp_path / "sections").mkdir()
    (tmp_path / "sections" / "metadata.html.j2").write_text(
        "<p>OVERRIDDEN {{ steps | length }}</p>"
    )
    doc = small_doc()
    doc["labellings"], doc["results"] = [], []  # no charts needed here
    page = report.render_html(AuditRun.from_json(doc), template_dirs=[tmp_path])
    n_steps = sum(len(doc["chain"][k]) for k in ("preprocess", "cluster", "audit"))
    assert f"<p>OVERRIDDEN {n_steps}</p>" in page
    assert 'id="sec-summary"' in page  # the other templates still come from the project


def test_minimal_document_renders():
    doc = {
        "schema_version": "1.0",
        "status": "not_evaluated",
        "input": {"path": "x.parquet", "attributes": []},
        "labellings": [],
        "results": [],
    }
    page = report.render_html(AuditRun.from_json(doc))
    assert 'id="sec-summary"' in page and 'id="sec-metadata"' in page
    assert 'id="sec-composition"' not in page
    assert "No thresholds were set" in page


# ----------------------------------------------------------------------------- plugins
def _write_plugin_package(root: Path) -> None:
    pkg = root / "fa_test_sections"
    (pkg / "templates" / "fa_test_sections").mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        textwrap.dedent(
            """
            from fairaudit.core.components import ReportSection
            from fairaudit.hookspecs import hookimpl


            class ExtraSection(ReportSection):
                name = "extra"
                title = "Extra <plugin>"
                order = 450
                template = "fa_test_sections/extra.html.j2"
                auditors = ("dcsi",)

                def context(self, run):
                    return {"labellings": [lab["name"] for lab in run.labellings]}


            @hookimpl
            def fairaudit_register_report_sections():
                return [ExtraSection]


            @hookimpl
            def fairaudit_prepare_jinja_env(env):
                env.filters["shout"] = lambda s: str(s).upper() + "!"
            """
        )
    )
    (pkg / "templates" / "fa_test_sections" / "extra.html.j2").write_text(
        '<p class="extra">{% for n in labellings %}{{ n | shout }} {% endfor %}</p>'
    )


def _host(*plugins) -> Host:
    pm = pluggy.PluginManager("fairaudit")
    pm.add_hookspecs(hookspecs)
    pm.register(builtin_sections, name="builtins_sections")
    pm.register(explain_section, name="builtins_explain_section")
    for i, p in enumerate(plugins):
        pm.register(p, name=f"test_plugin_{i}")
    return Host(pm)


def test_plugin_section_with_its_own_templates_and_filters(tmp_path, monkeypatch, small):
    _write_plugin_package(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    plugin = importlib.import_module("fa_test_sections")
    host = _host(plugin)
    page = report.render_html(small, host)
    ids = re.findall(r'id="sec-([a-z0-9_-]+)"', page)
    assert ids.index("extra") == ids.index("metrics") + 1  # order 450
    assert '<p class="extra">KMEANS! </p>' in page
    assert "Extra &lt;plugin&gt;" in page  # titles are escaped too
    # the plugin claims "dcsi": the generic section no longer shows it
    assert 'id="auditor-dcsi"' not in page
    assert 'id="auditor-balance"' in page


def test_host_without_plugins_matches_builtin_rendering(small, small_html):
    assert report.render_html(small, _host()) == small_html
    # without a plugin claiming it, the generic section covers dcsi
    assert 'id="auditor-dcsi"' in small_html


class _Broken(ReportSection):
    name = "broken"
    title = "Broken"
    template = "sections/does-not-exist.html.j2"


class _BrokenPlugin:
    @hookimpl
    def fairaudit_register_report_sections(self):
        return [_Broken]


def test_missing_template_is_an_error(small):
    with pytest.raises(jinja2.TemplateNotFound):
        report.render_html(small, _host(_BrokenPlugin()))


# ----------------------------------------------------------------------------- writing
def _leftovers(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.endswith(".tmp")]


def test_write_html_is_atomic(tmp_path, small, small_html):
    out = tmp_path / "report.html"
    assert report.write_html(small, out) == out
    assert out.read_text(encoding="utf-8") == small_html
    assert _leftovers(tmp_path) == []
    os.chmod(out, 0o640)
    passed = small_doc()
    passed["status"] = "pass"
    report.write_html(AuditRun.from_json(passed), out)
    assert "Every threshold passed" in out.read_text(encoding="utf-8")
    assert os.stat(out).st_mode & 0o777 == 0o640
    assert _leftovers(tmp_path) == []


def test_failed_render_leaves_existing_report_untouched(tmp_path, run, monkeypatch):
    out = tmp_path / "report.html"
    out.write_text("previous", encoding="utf-8")

    def boom(*args, **kwargs):
        raise RuntimeError("render failed")

    monkeypatch.setattr(report, "render_html", boom)
    with pytest.raises(RuntimeError):
        report.write_html(run, out)
    assert out.read_text(encoding="utf-8") == "previous"
    assert _leftovers(tmp_path) == []


def test_failed_write_removes_the_temporary_file(tmp_path, monkeypatch):
    out = tmp_path / "report.html"

    def boom(src, dst):
        raise OSError("disk full")

    from fairaudit.errors import OutputError
    from fairaudit.report.outputs import write_output

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OutputError, match="report.html: cannot be written"):
        write_output(out, "x")
    assert not out.exists()
    assert _leftovers(tmp_path) == []


