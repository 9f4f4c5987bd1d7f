"""Plugin loading: entry points, duplicates, broken plugins, blocking, invalid registrations,
and the example plugin in a real audit."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
from pathlib import Path

import pluggy
import pytest
from fixture_plugins import FakeEntryPoint, install_fake_entry_points, load_fixture_plugin

from fairaudit.core.plugins import DEFAULT_PLUGINS, Host, build_registry, make_plugin_manager
from fairaudit.errors import DuplicateComponentError, PluginError

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def fake_eps(monkeypatch):
    def install(*eps):
        install_fake_entry_points(monkeypatch, *eps)

    return install


# ----------------------------------------------------------------------------- manager
def test_each_call_gives_a_fresh_manager():
    a = make_plugin_manager(entrypoints=False)
    b = make_plugin_manager(entrypoints=False)
    assert a is not b
    plugin = load_fixture_plugin("extras")
    a.register(plugin, name="extras")
    assert a.has_plugin("extras") and not b.has_plugin("extras")


def test_builtins_are_registered_under_their_names():
    pm = make_plugin_manager(entrypoints=False)
    for name, module in DEFAULT_PLUGINS:
        assert pm.has_plugin(name), name
        assert pm.get_plugin(name).__name__ == module
    infos = pm.fairaudit_plugin_infos
    assert all(infos[name].builtin for name, _ in DEFAULT_PLUGINS)


def test_builtins_come_through_the_same_entry_point_group():
    eps = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="fairaudit")}
    for name, module in DEFAULT_PLUGINS:
        assert eps.get(name) == module, f"{name} is not an entry point of the fairaudit group"


def test_blocking_a_plugin(host):
    pm = make_plugin_manager(entrypoints=False, blocked=["builtins_clusterers"])
    registry = build_registry(pm)
    assert not registry.has("clusterer", "kmeans")
    assert registry.has("auditor", "balance")


def test_blocking_through_the_environment(monkeypatch):
    monkeypatch.setenv("FAIRAUDIT_DISABLE_PLUGINS", "builtins_auditors, example")
    host = Host.create()
    assert not host.registry.has("auditor", "balance")
    assert not host.registry.has("auditor", "representation_gap")
    assert host.registry.has("clusterer", "kmeans")


# ----------------------------------------------------------------------------- failures
def test_duplicate_component_names_name_both_plugins(fake_eps):
    fake_eps(FakeEntryPoint("dupe", "duplicate", package="dupe-pkg"))
    with pytest.raises(DuplicateComponentError) as exc:
        Host.create()
    msg = str(exc.value)
    assert "'kmeans'" in msg
    assert "builtins_clusterers" in msg and "dupe" in msg and "dupe-pkg" in msg


def test_duplicate_through_the_cli(run_cli, fake_eps):
    fake_eps(FakeEntryPoint("dupe", "duplicate", package="dupe-pkg"))
    result = run_cli("plugins")
    assert result.exit_code == 2
    assert "kmeans" in result.stderr and "dupe" in result.stderr
    assert "builtins_clusterers" in result.stderr
    assert "Traceback" not in result.output
    # blocking one of the two resolves it
    result = run_cli("plugins", "--disable-plugin", "dupe")
    assert result.exit_code == 0


def test_plugin_that_fails_to_import_is_named(fake_eps):
    fake_eps(FakeEntryPoint("broken", None, package="broken-pkg",
                            exc=ImportError("No module named 'missing_dependency'")))  # fmt: skip
    with pytest.raises(PluginError) as exc:
        Host.create()
    msg = str(exc.value)
    assert "'broken'" in msg and "broken-pkg" in msg and "missing_dependency" in msg
    assert "--disable-plugin broken" in msg


def test_broken_plugin_through_the_cli_and_ways_around_it(run_cli, cli, fake_eps):
    from fairaudit.cli import main

    fake_eps(FakeEntryPoint("broken", None, package="broken-pkg",
                            exc=SyntaxError("invalid syntax (broken.py, line 3)")))  # fmt: skip
    result = run_cli("plugins")
    assert result.exit_code == 2
    assert "broken" in result.stderr and "SyntaxError" in result.stderr
    assert "Traceback" not in result.output
    assert run_cli("plugins", "--disable-plugin", "broken").exit_code == 0
    assert cli.invoke(main, ["plugins"], env={"FAIRAUDIT_DISABLE_PLUGINS": "broken"}).exit_code == 0
    autoload_off = cli.invoke(main, ["plugins"], env={"FAIRAUDIT_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert autoload_off.exit_code == 0
    assert "kmeans" in autoload_off.stdout


def test_registering_a_non_component_class(fake_eps):
    fake_eps(FakeEntryPoint("notcomp", "not_a_component"))
    with pytest.raises(PluginError) as exc:
        Host.create()
    msg = str(exc.value)
    assert "'notcomp'" in msg and "NotAnAuditor" in msg and "Auditor" in msg


def test_unknown_artifact_key(fake_eps):
    fake_eps(FakeEntryPoint("badart", "bad_artifact"))
    with pytest.raises(PluginError) as exc:
        Host.create()
    msg = str(exc.value)
    assert "bad_artifact" in msg and "'badart'" in msg and "centroidz" in msg


def test_misspelled_hook_is_caught(fake_eps):
    fake_eps(FakeEntryPoint("typo", "misspelled_hook"))
    with pytest.raises((PluginError, pluggy.PluginValidationError)) as exc:
        Host.create()
    assert "fairaudit_register_auditor" in str(exc.value)


def test_plugin_info_records_origin(fake_eps):
    fake_eps(FakeEntryPoint("extras", "extras", package="extras-pkg"))
    host = Host.create()
    info = host.registry.get("clusterer", "sign")
    assert (info.plugin, info.package, info.version) == ("extras", "extras-pkg", "9.9")
    assert host.plugins["extras"].builtin is False
    assert host.plugins["builtins_clusterers"].builtin is True


# ----------------------------------------------------------------------------- example plugin
def test_example_plugin_is_installed_and_listed():
    host = Host.create()
    info = host.registry.get("auditor", "representation_gap")
    assert info.package == "fairaudit-example-plugin"
    assert info.plugin == "example"
    assert host.registry.has("section", "representation_gap")


def test_example_plugin_in_a_real_audit(run_cli, parquet_path, synthetic, tmp_path):
    out = tmp_path / "r.html"
    result = run_cli(
        "audit", str(parquet_path), "--sensitive", "sex", "--labels", "segment",
        "--chain", str(ROOT / "examples" / "chains" / "representation_gap.toml"),
        "--out", str(out),
    )  # fmt: skip
    # the chain's threshold (representation_gap <= 0.2) fails on the planted 80/20 split
    assert result.exit_code == 1, result.output
    doc = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    gap = [r for r in doc["results"] if r["auditor"] == "representation_gap"]
    assert gap and gap[0]["attribute"] == "sex"
    # hand computation: max over clusters and groups of |share in cluster - population share|
    pop = synthetic.get_column("sex").value_counts(normalize=True)
    pop = dict(zip(pop["sex"], pop["proportion"], strict=True))
    worst = 0.0
    for (_seg,), part in synthetic.group_by(["segment"]):
        share = part.get_column("sex").value_counts(normalize=True)
        share = dict(zip(share["sex"], share["proportion"], strict=True))
        worst = max(worst, *(abs(share.get(g, 0.0) - p) for g, p in pop.items()))
    assert gap[0]["value"] == pytest.approx(worst, abs=1e-9)
    assert gap[0]["ci"] is not None  # the host bootstraps plugin counting auditors too
    assert gap[0]["threshold"]["value"] == 0.2 and gap[0]["threshold"]["bound"] == "max"
    assert gap[0]["status"] == "fail"
    assert "representation_gap" in result.stdout
    html = out.read_text(encoding="utf-8")
    assert "Representation gap (example plugin)" in html
    assert f"{gap[0]['value']:.3f}" in html


def test_failed_render_leaves_no_report(run_cli, parquet_path, tmp_path, fake_eps):
    """The run succeeds but rendering the HTML fails: exit 3 and no report files at all (a
    JSON without its HTML, or a stale HTML beside a new JSON, is a half-written report)."""
    fake_eps(FakeEntryPoint("crashsec", "crashing_section"))
    out = tmp_path / "out"
    out.mkdir()
    result = run_cli(
        "audit", str(parquet_path), "--sensitive", "sex", "--labels", "segment",
        "--out", str(out / "r.html"),
    )  # fmt: skip
    assert result.exit_code == 3
    assert "boom from the crashing section" in result.stderr
    assert "section 'crashing_section' (fixture-plugin 9.9, plugin 'crashsec')" in result.stderr
    assert "--disable-plugin crashsec" in result.stderr
    assert sorted(p.name for p in out.iterdir()) == []


def test_misspelled_hook_through_the_cli(run_cli, fake_eps):
    """A plugin's mistake is the plugin's, not fairaudit's: a usage error (exit 2) naming the
    plugin (so it can be disabled) and the hook, not an "internal error, please report it"."""
    fake_eps(FakeEntryPoint("typo", "misspelled_hook"))
    result = run_cli("plugins")
    assert result.exit_code == 2, result.output
    assert "fairaudit_register_auditor" in result.stderr and "'typo'" in result.stderr
    assert "Traceback" not in result.output
    assert run_cli("plugins", "--disable-plugin", "typo").exit_code == 0


def test_a_plugin_hook_that_raises_names_the_plugin(run_cli, parquet_path, tmp_path, fake_eps):
    fake_eps(FakeEntryPoint("hooky", "crashing_hook", package="hooky-pkg"))
    result = run_cli("audit", str(parquet_path), "--sensitive", "sex", "--labels", "segment",
                     "--out", str(tmp_path / "r.html"))
    assert result.exit_code == 3, result.output
    assert "plugin 'hooky' (hooky-pkg 9.9) raised KeyError: 'boom from a hook'" in result.stderr
    assert "--disable-plugin hooky" in result.stderr and "internal error" not in result.stderr
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "r.json").exists()
