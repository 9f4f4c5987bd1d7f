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
