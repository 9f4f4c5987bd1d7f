"""Issue 35 item 4: exit 3 only for true bugs — malformed audit documents given to ``render``,
``compare``, ``export`` and ``history`` are exit 2 naming the file, never an internal error.

A hypothesis property test mutates a real audit document at a random place: a value of another
type, a 5,000-digit integer, a number out of range, a ragged or shortened array, a removed key.
Every command must end with 0, 1 or 2 (the mutation may be harmless), and exit 2 must name the
file. User templates with errors (``--templates``) are exit 2 naming the template.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import make_synthetic
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

BIG = "9" * 5000
JUNK: list[Any] = ["__BIG__", "__NEG_BIG__", "__HUGE_FLOAT__", -1, 0, 1.5, "x", "", [], {},
                   None, True, [[1], [1, 2]], [None], ["x"], {"a": 1}]


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> dict[str, Any]:
    """A real document with two attributes, clusterer labellings, gates and verdicts."""
    import fairaudit

    run = fairaudit.audit(make_synthetic(600), sensitive=["sex", "race"],
                          cluster=[("kmeans", {"n_clusters": 3})], bootstrap=20, twins=False,
                          skip_audit=["proxy", "quality"], fail_under={"balance": 0.05})
    return run.to_json()


def _paths(obj: Any, path: tuple = ()) -> list[tuple]:
    out = [path] if path else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:2]):
            out += _paths(v, (*path, i))
    return out


def _mutated(doc: dict[str, Any], where: int, how: int, junk: Any) -> str:
    doc = copy.deepcopy(doc)
    paths = _paths(doc)
    path = paths[where % len(paths)]
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    value = parent[path[-1]]
    kind = how % 4
    if kind == 0 and isinstance(parent, dict):
        del parent[path[-1]]
    elif kind == 1 and isinstance(value, list) and value:
        parent[path[-1]] = value[:-1] if how % 8 < 4 else [*value, value[-1]]
    else:
        parent[path[-1]] = copy.deepcopy(junk)
    return (json.dumps(doc, ensure_ascii=False).replace('"__BIG__"', BIG)
            .replace('"__NEG_BIG__"', "-" + BIG).replace('"__HUGE_FLOAT__"', "1e309"))


def _run(run_cli, command: str, bad: str, good: str) -> Any:
    return run_cli(*{
        "render": ["render", bad, "-o", "o.html", "-q"],
        "compare": ["compare", good, bad, "--out", "c.html", "--json", "c.json", "-q"],
        "export": ["export", bad, "--csv", "o.csv", "-q"],
        "history": ["history", bad, good, "--out", "h.html", "--csv", "h.csv", "-q"],
    }[command])


@pytest.mark.parametrize("command", ["render", "compare", "export", "history"])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.integers(0, 10**6), how=st.integers(0, 10**6), junk=st.sampled_from(JUNK))
def test_a_malformed_document_is_never_an_internal_error(run_cli, tmp_path, base, command, where,
                                                         how, junk):
    good = tmp_path / "good.json"
    if not good.exists():
        good.write_text(json.dumps(base))
    (tmp_path / "bad.json").write_text(_mutated(base, where, how, junk))
    res = _run(run_cli, command, "bad.json", "good.json")
    assert res.exit_code in (0, 1, 2), res.output
    assert "internal error" not in res.output, res.output
    if res.exit_code == 2:
        assert "bad.json" in res.output, res.output


@pytest.mark.parametrize("text, what", [
    (BIG, "5,000 digits"), ("1e309", "out of range"), ("NaN", "not a JSON number"),
    ("-" + BIG, "5,000 digits"),
])
def test_numbers_are_bounded_while_parsing(run_cli, tmp_path, base, text, what):
    doc = json.dumps(dict(base, input={**base["input"], "rows": "__X__"}))
    (tmp_path / "n.json").write_text(doc.replace('"__X__"', text))
    for command in ("render", "compare", "export", "history"):
        (tmp_path / "good.json").write_text(json.dumps(base))
        res = _run(run_cli, command, "n.json", "good.json")
        assert res.exit_code == 2 and what in res.output and "n.json" in res.output, res.output


@pytest.mark.parametrize("edit, where", [
    (lambda c: c["counts"][0].pop(), "composition.sex.counts[0]: 1 values for the 2 clusters"),
    (lambda c: c["population_share"].pop(), "population_share: 1 rows for the 2 groups"),
    (lambda c: c["cluster_share"].append([0.5, 0.5]), "cluster_share: 3 rows for the 2 groups"),
])
def test_ragged_composition_arrays_are_named(run_cli, tmp_path, edit, where):
    """Issue 35: ragged ``composition.counts`` given to ``render`` was an IndexError."""
    import fairaudit

    run = fairaudit.audit(make_synthetic(300), sensitive="sex", labels="segment", bootstrap=0,
                          audit=["balance"])
    doc = run.to_json()
    doc["labellings"][0]["composition"]["sex"]["clusters"] = [0, 1]  # 2 groups x 2 clusters
    doc["labellings"][0]["composition"]["sex"]["counts"] = [[1, 2], [3, 4]]
    doc["labellings"][0]["composition"]["sex"]["cluster_share"] = [[0.5, 0.5], [0.5, 0.5]]
    edit(doc["labellings"][0]["composition"]["sex"])
    (tmp_path / "r.json").write_text(json.dumps(doc))
    res = run_cli("render", "r.json", "-o", "o.html")
    assert res.exit_code == 2 and where in res.output, res.output


@pytest.mark.parametrize("template, text", [
    ("{% if %}", "TemplateSyntaxError"),
    ("{{ nope.x }}", "UndefinedError: 'nope' is undefined"),
    ("{% include 'missing.j2' %}", "TemplateNotFound"),
])
def test_errors_in_user_templates_name_the_template(run_cli, tmp_path, base, template, text):
    (tmp_path / "a.json").write_text(json.dumps(base))
    folder = tmp_path / "mine" / "sections"
    folder.mkdir(parents=True)
    (folder / "summary.html.j2").write_text("<p>\n" + template + "\n</p>\n")
    res = run_cli("render", "a.json", "-o", "o.html", "--templates", "mine")
    assert res.exit_code == 2, res.output
    assert text in res.output and "summary.html.j2" in res.output and "line 2" in res.output
    assert not (tmp_path / "o.html").exists()


def test_a_missing_templates_folder_is_refused(run_cli, tmp_path, base):
    (tmp_path / "a.json").write_text(json.dumps(base))
    res = run_cli("render", "a.json", "-o", "o.html", "--templates", "nowhere")
    assert res.exit_code == 2 and "--templates nowhere: no such folder" in res.output


def test_history_errors_name_the_folder(run_cli, tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "notes.json").write_text('{"kind": "something else"}')
    res = run_cli("history", "runs")
    assert res.exit_code == 2 and "runs" in res.output and "notes.json" in res.output
    empty = tmp_path / "empty"
    empty.mkdir()
    res = run_cli("history", str(empty))
    assert res.exit_code == 2 and str(empty) in res.output, res.output


def test_the_golden_documents_still_load(run_cli, tmp_path):
    """The bounds refuse nothing fairaudit writes."""
    from fairaudit.ops.audit_json import read_json, schema_problem

    for name in ("labels", "chain", "twins", "api", "demo"):
        path = Path(__file__).parent / "golden" / f"{name}.json"
        doc = read_json(path)
        problem = schema_problem(doc)
        assert problem is None or "environment" in problem or "tool" in problem, (name, problem)
