"""One ``test_hook_<name>`` per hook in ``fairaudit/hookspecs.py`` (a meta-test keeps them in
step), and the order in which the lifecycle hooks fire."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from fixture_plugins import load_fixture_plugin

from fairaudit import hookspecs
from fairaudit.core.chain import parse_chain
from fairaudit.core.plugins import Host, make_plugin_manager
from fairaudit.core.runner import run_chain
from fairaudit.report.render import render_html
from fairaudit.report.results import AuditRun
from fairaudit.testing import record_hooks, registered

PREFIX = "fairaudit_"


def _hook_names() -> list[str]:
    return sorted(
        name
        for name, fn in inspect.getmembers(hookspecs, inspect.isfunction)
        if name.startswith(PREFIX) and hasattr(fn, "fairaudit_spec")
    )


@pytest.fixture
def extras():
    return load_fixture_plugin("extras")


@pytest.fixture
def xhost(extras):
    """A host with the built-ins plus the ``extras`` fixture plugin."""
    pm = make_plugin_manager(entrypoints=False)
    pm.register(extras, name="extras")
    return Host(pm)


@pytest.fixture
def templates(tmp_path, extras) -> Path:
    """A template folder holding the fixture section's template."""
    d = tmp_path / "templates"
    target = d / extras.SECTION_TEMPLATE
    target.parent.mkdir(parents=True)
    target.write_text(extras.SECTION_SOURCE, encoding="utf-8")
    return d


def _chain(text: str):
    import tomllib

    return parse_chain(tomllib.loads(text), source="hooks.toml")


# ----------------------------------------------------------------------------- meta
def test_every_hook_has_a_test():
    names = _hook_names()
    assert len(names) >= 8
    here = sys.modules[__name__]
    missing = [n for n in names if not hasattr(here, "test_hook_" + n[len(PREFIX) :])]
    assert not missing, f"hooks without a test_hook_<name>: {missing}"
    extra = [
        n for n in dir(here)
        if n.startswith("test_hook_") and PREFIX + n[len("test_hook_"):] not in names
    ]  # fmt: skip
    assert not extra, f"test_hook_* for hooks that do not exist: {extra}"


def test_every_hook_is_prefixed_and_documented():
    for name, fn in inspect.getmembers(hookspecs, inspect.isfunction):
        if hasattr(fn, "fairaudit_spec"):
            assert name.startswith(PREFIX), name
            assert (fn.__doc__ or "").strip(), f"{name} has no docstring"


# ----------------------------------------------------------------------------- registration
def test_hook_register_preprocessors(xhost, parquet_path):
    assert xhost.registry.get("preprocessor", "negate").plugin == "extras"
    spec = _chain(
        '[data]\nsensitive = ["sex"]\nfeatures = ["x1", "x2"]\n'
        '[[preprocess]]\nuse = "negate"\n'
        '[[cluster]]\nuse = "sign"\nparams = { column = "x1", threshold = 0.0 }\n'
        '[[audit]]\nuse = "row_count"\n'
    )
    run = run_chain(spec, xhost, data_path=str(parquet_path))
    pre = run.doc["preprocessing"]
    assert [p["use"] for p in pre] == ["negate"]
    assert pre[0]["notes"] == ["negated 2 column(s)"]
    # after negation, x1 > 0 selects the rows whose raw x1 is < 0
    frame = pl.read_parquet(parquet_path)
    expected_ones = int((frame.get_column("x1") < 0).sum())
    sizes = {c["cluster"]: c["n"] for c in run.labellings[0]["cluster_sizes"]}
    assert sizes[1] == expected_ones
    assert sizes[0] == frame.height - expected_ones


def test_hook_register_clusterers(xhost, parquet_path):
    info = xhost.registry.get("clusterer", "sign")
    assert info.plugin == "extras"
    spec = _chain(
        '[data]\nsensitive = ["sex", "race"]\nfeatures = ["x1", "x2"]\n'
        '[[cluster]]\nuse = "sign"\nname = "by_x2"\nparams = { column = "x2", threshold = 2.5 }\n'
        '[[audit]]\nuse = "balance"\n'
    )
    run = run_chain(spec, xhost, data_path=str(parquet_path))
    lab = run.labellings[0]
    assert lab["name"] == "by_x2" and lab["component"] == "sign"
    assert lab["extras"] == {"threshold": 2.5}
    frame = pl.read_parquet(parquet_path)
    hi = (frame.get_column("x2") > 2.5).to_numpy()
    comp = lab["composition"]["sex"]
    by_cell = {
        (g, k): comp["counts"][i][j]
        for i, g in enumerate(comp["groups"])
        for j, k in enumerate(comp["clusters"])
    }
    sex = frame.get_column("sex").to_numpy()
    for g in ("F", "M"):
        assert by_cell[(g, 1)] == int(((sex == g) & hi).sum())
        assert by_cell[(g, 0)] == int(((sex == g) & ~hi).sum())


def test_hook_register_auditors(xhost, parquet_path):
    assert xhost.registry.get("auditor", "row_count").plugin == "extras"
    spec = parse_chain({"data": {"sensitive": ["sex", "race"], "labels": "segment"},
                        "audit": [{"use": "row_count"}]})  # fmt: skip
    run = run_chain(spec, xhost, data_path=str(parquet_path))
    values = {r["attribute"]: r["value"] for r in run.results_for(auditor="row_count")}
    assert values == {"sex": 2000.0, "race": 2000.0, "sex|race": 2000.0}
    row = run.results_for(auditor="row_count", attribute="sex")[0]
    assert row["ci"] is None  # declared bootstrap=False
    assert sum(c["value"] for c in row["per_cluster"]) == 2000


def test_hook_register_report_sections(xhost, parquet_path, templates):
    assert xhost.registry.get("section", "fixture_section").plugin == "extras"
    spec = parse_chain({"data": {"sensitive": ["sex"], "labels": "segment"},
                        "audit": [{"use": "balance"}]})  # fmt: skip
    run = run_chain(spec, xhost, data_path=str(parquet_path))
    html = render_html(run, xhost, template_dirs=[templates])
    n = len(run.results)
    assert f"fixture section: {n} results" in html
    assert "Fixture section" in html  # its title
    # built-in sections still render, and ours comes last (order = 999)
    assert html.index('id="fixture-section"') > html.index('id="sec-summary"')


# ----------------------------------------------------------------------------- per run
def test_hook_read_table(xhost, synthetic, extras):
    reader = extras.MemoryReader({"customers": synthetic})
    with registered(xhost.pm, reader, name="memory"):
        spec = parse_chain({"data": {"sensitive": ["sex"], "labels": "segment",
                                     "separator": ";"},
                            "audit": [{"use": "balance"}]})  # fmt: skip
        run = run_chain(spec, xhost, data_path="memory:customers")
    assert reader.calls and reader.calls[0] == ("memory:customers", {"separator": ";"})
    assert run.doc["input"]["rows"] == synthetic.height
    assert run.doc["input"]["format"] == "plugin"
    # firstresult: a reader registered later is asked first and wins
    with registered(xhost.pm, extras.MemoryReader({"customers": synthetic}), name="m1"):
        with registered(xhost.pm, extras.MemoryReader({"customers": synthetic.head(10)}),
                        name="m2"):  # fmt: skip
            lf = xhost.read_table("memory:customers", {})
    assert lf.collect().height == 10


def test_read_table_falls_through_to_the_builtin(xhost, parquet_path, extras):
    reader = extras.MemoryReader({})
    with registered(xhost.pm, reader, name="memory"):
        lf = xhost.read_table(str(parquet_path), {})
    assert reader.calls == [(str(parquet_path), {})]  # asked first, passed
    assert lf.collect().height == 2000


def test_hook_prepare_jinja_env(xhost, parquet_path, templates):
    spec = parse_chain({"data": {"sensitive": ["sex"], "labels": "segment"},
                        "audit": [{"use": "balance"}]})  # fmt: skip
    run = run_chain(spec, xhost, data_path=str(parquet_path))
    with record_hooks(xhost.pm) as rec:
        html = render_html(run, xhost, template_dirs=[templates])
    assert "banner-from-prepare-jinja-env" in html
    assert rec.names().count("fairaudit_prepare_jinja_env") == 1
    env = rec.calls[rec.names().index("fairaudit_prepare_jinja_env")][1]["env"]
    assert "fmt_num" in env.filters  # built-in filters were installed before the hook


def test_hook_step_finished(xhost, parquet_path, extras):
    rec = extras.Recorder()
    spec = _chain(
        '[data]\nsensitive = ["sex"]\nlabels = "segment"\nfeatures = ["x1", "x2"]\n'
        '[[preprocess]]\nuse = "negate"\n'
        '[[cluster]]\nuse = "sign"\n'
        '[[audit]]\nuse = "balance"\n[[audit]]\nuse = "row_count"\n'
        '[options]\ntiming = true\n'
    )
    with registered(xhost.pm, rec, name="recorder"):
        run = run_chain(spec, xhost, data_path=str(parquet_path))
    steps = [c[1] for c in rec.calls if c[0] == "step_finished"]
    kinds = [s["kind"] for s in steps]
    assert set(kinds) <= {"load", "checks", "preprocessor", "clusterer", "auditor"}
    assert all(s["seconds"] >= 0 for s in steps)
    assert {"step": "negate", "kind": "preprocessor", "labelling": None} in [
        {k: s[k] for k in ("step", "kind", "labelling")} for s in steps
    ]
    assert any(s["kind"] == "clusterer" and s["step"] == "sign" and s["labelling"] == "sign"
               for s in steps)  # fmt: skip
    audited = {(s["step"], s["labelling"]) for s in steps if s["kind"] == "auditor"}
    assert audited == {(a, lab) for a in ("balance", "row_count") for lab in ("segment", "sign")}
    # the same steps are in the JSON timings, in the same order
    timed = [(t["kind"], t["step"], t["labelling"]) for t in run.doc["timing"]["steps"]]
    assert timed == [(s["kind"], s["step"], s["labelling"]) for s in steps]


def test_hook_run_finished(xhost, parquet_path, extras):
    rec = extras.Recorder()
    spec = parse_chain({"data": {"sensitive": ["sex"], "labels": "segment"},
                        "audit": [{"use": "balance"}]})  # fmt: skip
    with registered(xhost.pm, rec, name="recorder"):
        run = run_chain(spec, xhost, data_path=str(parquet_path))
    finished = [c[1]["run"] for c in rec.calls if c[0] == "run_finished"]
    assert len(finished) == 1
    assert isinstance(finished[0], AuditRun)
    assert finished[0].doc == run.doc
    assert rec.calls[-1][0] == "run_finished"


# ----------------------------------------------------------------------------- order
def test_lifecycle_hooks_fire_in_order(xhost, parquet_path):
    spec = _chain(
        '[data]\nsensitive = ["sex", "race"]\nlabels = "segment"\nfeatures = ["x1", "x2"]\n'
        '[[preprocess]]\nuse = "negate"\n[[cluster]]\nuse = "sign"\n'
        '[[audit]]\nuse = "balance"\n'
    )
    with record_hooks(xhost.pm) as rec:
        run_chain(spec, xhost, data_path=str(parquet_path))
    names = rec.names()
    assert names[0] == "fairaudit_read_table"
    assert names[-1] == "fairaudit_run_finished"
    assert names.count("fairaudit_run_finished") == 1
    middle = names[1:-1]
    assert middle and set(middle) == {"fairaudit_step_finished"}
    kinds = [kw["kind"] for name, kw in rec.calls if name == "fairaudit_step_finished"]
    rank = {"load": 0, "checks": 1, "preprocessor": 2, "clusterer": 3, "auditor": 4}
    assert [rank[k] for k in kinds] == sorted(rank[k] for k in kinds), kinds
    assert {"load", "checks", "preprocessor", "clusterer", "auditor"} == set(kinds)


def test_registration_hooks_are_called_once_per_registry(extras):
    pm = make_plugin_manager(entrypoints=False)
    pm.register(extras, name="extras")
    with record_hooks(pm) as rec:
        host = Host(pm)
    assert host.registry.has("clusterer", "sign")
    # the registry is built by calling each implementation directly, not via the hook relay
    assert rec.names().count("fairaudit_register_clusterers") <= 1


def test_recorded_values_are_plain(xhost, parquet_path):
    spec = parse_chain({"data": {"sensitive": ["sex"], "labels": "segment"},
                        "audit": [{"use": "balance"}]})  # fmt: skip
    with record_hooks(xhost.pm) as rec:
        run_chain(spec, xhost, data_path=str(parquet_path))
    for name, kw in rec.calls:
        if name == "fairaudit_step_finished":
            assert isinstance(kw["seconds"], float) and np.isfinite(kw["seconds"])
            assert isinstance(kw["step"], str) and isinstance(kw["kind"], str)
