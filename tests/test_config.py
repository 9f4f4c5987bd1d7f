"""One typed configuration (issue 24): the chain TOML, the command-line flags and
``fairaudit.audit(...)`` build the same frozen :class:`ChainSpec`; a user can build it in Python;
``fairaudit.audit`` never writes arguments into flag strings for a parser to read back."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import ROOT, make_synthetic

import fairaudit
from fairaudit.core import chain as chain_mod
from fairaudit.core.chain import load_chain
from fairaudit.core.spec import ChainSpec, DataSpec, Options, StepSpec
from fairaudit.report.results import Threshold


def _same_run(a, b):
    da, db = a.to_json(), b.to_json()
    for d in (da, db):
        d.pop("environment", None)
        d["chain"].pop("source", None)
    assert da == db


def test_a_chain_built_in_python_runs_like_its_toml():
    data = make_synthetic(n=800, seed=3)
    toml = ROOT / "examples" / "chains" / "audit_segments.toml"
    spec = ChainSpec(
        data=DataSpec(sensitive=("sex", "race"), labels="segment", seed=7),
        options=Options(min_cell=10, bootstrap=200),
        audit=(StepSpec("audit", "balance", "audit[0]"),
               StepSpec("audit", "distribution", "audit[1]"),
               StepSpec("audit", "capacity", "audit[2]")),
        thresholds=(
            Threshold(metric="@balance", value=0.5, bound="auto", on="ci", severity="error",
                      source="audit[0]"),
            Threshold(metric="@distribution", value=0.15, bound="auto", on="value",
                      severity="warning", source="audit[1]"),
            Threshold(metric="balance", value=0.7, bound="min", attribute="sex",
                      source="threshold[0]"),
        ),
        source="python",
    )
    assert dataclasses.is_dataclass(spec) and spec.__dataclass_params__.frozen
    assert (fairaudit.ChainSpec, fairaudit.DataSpec, fairaudit.StepSpec) == (ChainSpec, DataSpec,
                                                                              StepSpec)
    from_toml = load_chain(toml)
    assert dataclasses.replace(from_toml, source="python") == spec  # the same object
    _same_run(fairaudit.audit(data, chain=spec), fairaudit.audit(data, chain=str(toml)))


def test_audit_passes_components_and_thresholds_as_values_not_flag_text(monkeypatch):
    def no_text(*args, **kwargs):
        raise AssertionError("fairaudit.audit parsed flag text")

    monkeypatch.setattr(chain_mod, "parse_component_flag", no_text)
    monkeypatch.setattr(chain_mod, "parse_threshold_flag", no_text)
    data = make_synthetic(n=600, seed=4)
    run = fairaudit.audit(data, sensitive=["sex"], features=["x1", "x2"], twins=False,
                          cluster=[("kmeans", {"n_clusters": 3})], bootstrap=20,
                          audit=[("balance", {})], fail_under={"balance@ci": 0.01})
    lab = run.labellings[0]
    assert lab["component"] == "kmeans" and lab["params"]["n_clusters"] == 3
    assert run.doc["chain"]["thresholds"][0]["metric"] == "balance"


def test_a_bad_chain_object_is_refused_with_its_name():
    from fairaudit.errors import ConfigError

    with pytest.raises(ConfigError, match="chain"):
        fairaudit.audit(make_synthetic(n=50), sensitive=["sex"], chain=42)


def test_a_chain_built_in_python_is_validated_like_a_file():
    from fairaudit.core.spec import PrivacySpec
    from fairaudit.errors import ChainValidationError, ConfigError

    spec = ChainSpec(data=DataSpec(sensitive=("sex",), labels="segment", sample=1),
                     options=Options(bootstrap=-5, ci_level=1.5),
                     audit=(StepSpec("audit", "balance", "audit[0]"),), source="python")
    with pytest.raises(ChainValidationError) as exc:
        fairaudit.audit(make_synthetic(n=100), chain=spec)
    for where in ("options.bootstrap", "options.ci_level", "data.sample"):
        assert where in str(exc.value), (where, str(exc.value))
    bad_privacy = dataclasses.replace(spec, options=Options(),
                                      data=DataSpec(sensitive=("sex",), labels="segment"),
                                      privacy=PrivacySpec(publish=True, epsilon=-1.0))
    with pytest.raises(ConfigError, match="privacy.epsilon"):
        fairaudit.audit(make_synthetic(n=100), chain=bad_privacy)


def test_the_whole_configuration_is_exported_at_top_level_lazily():
    """docs/architecture.md lists ChainSpec's parts; each is importable from ``fairaudit``
    (a new user found Options and Threshold missing), without importing numpy."""
    import subprocess
    import sys

    from fairaudit.core import spec as spec_mod

    for name in ("ChainSpec", "DataSpec", "StepSpec", "Options", "EngineSpec", "PrivacySpec"):
        assert getattr(fairaudit, name) is getattr(spec_mod, name)
        assert name in fairaudit.__all__ and name in dir(fairaudit)
    assert fairaudit.Threshold is Threshold and "Threshold" in fairaudit.__all__
    code = ("import sys, fairaudit; fairaudit.Options, fairaudit.Threshold, fairaudit.StepSpec;"
            " print('numpy' in sys.modules, 'polars' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False False"


def test_a_python_spec_needs_no_step_path_and_its_problems_are_named_as_attributes():
    """Errors of a ChainSpec built in Python name its attributes (``chain.audit[0].use``,
    ``chain.options.bootstrap``), never the CLI's options or TOML tables."""
    from fairaudit.errors import ChainValidationError

    data = make_synthetic(n=300)
    spec = fairaudit.ChainSpec(
        data=fairaudit.DataSpec(sensitive=("sex", "racex")),
        options=fairaudit.Options(bootstrap=-1),
        audit=(fairaudit.StepSpec("audit", "balanc"),),
    )
    with pytest.raises(ChainValidationError) as exc:
        fairaudit.audit(data, chain=spec)
    text = str(exc.value)
    assert text.startswith("4 problem(s) in the ChainSpec given as chain=:")
    for where in ("  chain.options.bootstrap: ", "  chain.audit[0].use: unknown auditor 'balanc'",
                  "  chain.data.sensitive[1]: column 'racex'",
                  "  chain.cluster: nothing to audit: set DataSpec(labels=...) or add a "
                  "StepSpec('cluster', ...) to chain.cluster"):
        assert where in text, text
    for cli_or_toml in ("--", "[[", "in the options", "in the chain:"):
        assert cli_or_toml not in text, text

    no_audit = fairaudit.ChainSpec(
        data=fairaudit.DataSpec(sensitive=("sex",)),
        cluster=(fairaudit.StepSpec("cluster", "kmeans", params={"n_cluster": 3}),))
    with pytest.raises(ChainValidationError) as exc:
        fairaudit.audit(data, chain=no_audit)
    assert "chain.cluster[0].params.n_cluster: unknown parameter of 'kmeans'" in str(exc.value)
    assert "chain.audit: no auditors: add at least one StepSpec('audit', ...)" in str(exc.value)

    ok = fairaudit.ChainSpec(
        data=fairaudit.DataSpec(sensitive=("sex",), labels="segment"),
        audit=(fairaudit.StepSpec("audit", "balance"),),
        thresholds=(fairaudit.Threshold("balance", 0.1),))
    run = fairaudit.audit(data, chain=ok, bootstrap=0)
    assert run.doc["chain"]["source"] == "python"
    assert [r["metric"] for r in run.doc["results"]][:1] == ["balance"]


def test_a_toml_chain_keeps_its_toml_names():
    from fairaudit.core.chain import parse_chain
    from fairaudit.errors import ChainValidationError

    spec = parse_chain({"data": {"sensitive": ["sex"]}, "options": {"bootstrap": -1},
                        "audit": [{"use": "balance"}]}, source="c.toml")
    with pytest.raises(ChainValidationError) as exc:
        fairaudit.audit(make_synthetic(n=100), chain=spec)
    assert "c.toml: 3 problem(s) in the chain:" in str(exc.value)
    assert "  options.bootstrap: " in str(exc.value)
    assert "add a [[cluster]] step" in str(exc.value)
