"""The field's clusterer plugins (issue 27): reachable from the CLI, a chain and the API; fit on
a sample and assign every row with predict; clear errors (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fairaudit_builtins.field import (
    BeraClusterer,
    FairletsClusterer,
    FairSCClusterer,
    VFCClusterer,
)

from fairaudit.testing import check_component

DATA = Path(__file__).resolve().parent / "data" / "field" / "adult_sample.csv"
FEATURES = "age,education-num,hours-per-week,capital-gain,capital-loss"


@pytest.fixture
def quiet_report(monkeypatch):
    import fairaudit.report.render

    monkeypatch.setattr(fairaudit.report.render, "render_html", lambda run, host=None, **kw: "<html/>")


@pytest.mark.parametrize("cls", [FairSCClusterer, FairletsClusterer, BeraClusterer, VFCClusterer])
def test_component_contract(cls):
    check_component(cls)


def _balance(doc: dict, labelling: str) -> float:
    return next(r["value"] for r in doc["results"] if r["metric"] == "balance"
                and r["labelling"] == labelling and r.get("attribute") == "sex")


def test_cli_sample_then_predict_every_row(run_cli, tmp_path, quiet_report):
    result = run_cli(
        "audit", str(DATA), "--sensitive", "sex", "--features", FEATURES, "--k", "2",
        "--sample", "700", "--bootstrap", "0", "--out", str(tmp_path / "r.html"),
        "--cluster", "kmeans", "--cluster", "fairlets", "--cluster", "bera",  # delta = 0.2
        "--cluster", "vfc:lmbda=300", "--cluster", "fairsc:normalized=true",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "r.json").read_text())
    names = [lab["name"] for lab in doc["labellings"]]
    for name in ("fairlets", "bera", "vfc", "fairsc"):
        assert name in names and f"{name}-unfair" in names  # the twins
    for lab in doc["labellings"]:
        assert lab["n_rows"] == 1500 if "n_rows" in lab else True
    km = _balance(doc, "kmeans")
    for name in ("fairlets", "bera", "vfc"):
        assert _balance(doc, name) > km, name
    # every row assigned by predict with its groups (one chunk): the delta bounds hold
    assert _balance(doc, "fairlets") >= 0.8 and _balance(doc, "bera") >= 0.8 - 1e-9
    bera = next(lab for lab in doc["labellings"] if lab["name"] == "bera")
    assert bera["extras"]["bounds_broken"] == 0


def test_chain_and_api(tmp_path):
    from fairaudit.api import audit

    chain = tmp_path / "c.toml"
    chain.write_text(
        '[data]\nsensitive = ["sex"]\nfeatures = ["age", "education-num", "hours-per-week"]\n'
        '[options]\nbootstrap = 0\n'
        '[[cluster]]\nuse = "fairlets"\nparams = { n_clusters = 3, objective = "kmeans" }\n'
        '[[cluster]]\nuse = "bera"\nparams = { n_clusters = 3, delta = 0.2 }\n'
        '[[audit]]\nuse = "balance"\n'
    )
    run = audit(DATA, sensitive=["sex"], chain=chain)
    names = [lab["name"] for lab in run.doc["labellings"]]
    assert names[:2] == ["fairlets", "bera"]
    run2 = audit(DATA, sensitive=["sex"], features=FEATURES.split(","), bootstrap=0,
                 cluster=[("vfc", {"n_clusters": 2, "lmbda": 100.0})], twins=False)
    assert [lab["name"] for lab in run2.doc["labellings"]] == ["vfc"]


def test_mcf_above_its_limit_exits_2(run_cli, tmp_path):
    result = run_cli(
        "audit", str(DATA), "--sensitive", "sex", "--features", FEATURES,
        "--out", str(tmp_path / "r.html"), "--cluster", "fairlets:decomposition=mcf",
    )  # fmt: skip
    assert result.exit_code == 2
    assert "mcf_max_rows" in result.output and "--sample" in result.output
    assert not (tmp_path / "r.json").exists()


def test_fairlets_needs_a_two_group_attribute(run_cli, tmp_path):
    result = run_cli(
        "audit", str(DATA), "--sensitive", "race", "--features", FEATURES,
        "--out", str(tmp_path / "r.html"), "--cluster", "fairlets",
    )  # fmt: skip
    assert result.exit_code == 2
    assert "two groups" in result.output and "race (5 groups)" in result.output
    result = run_cli(
        "audit", str(DATA), "--sensitive", "sex,race", "--features", FEATURES,
        "--out", str(tmp_path / "r.html"), "--cluster", "fairlets:attribute=age",
    )  # fmt: skip
    assert result.exit_code == 2 and "attribute='age'" in result.output


def test_bad_parameter_exits_2(run_cli, tmp_path):
    result = run_cli(
        "audit", str(DATA), "--sensitive", "sex", "--features", FEATURES,
        "--out", str(tmp_path / "r.html"), "--cluster", "bera:delta=1.5",
    )  # fmt: skip
    assert result.exit_code == 2
    assert "delta" in result.output


@pytest.mark.parametrize("pair", ["fairsc", "fairlets", "bera", "vfc"])
def test_plugin_defaults_are_the_estimators(pair):
    """The plugins repeat their estimator's defaults as literals (importing the estimators would
    load scikit-learn on every audit): they must not drift apart."""
    import inspect

    import fairaudit_builtins.field as plugins

    from fairaudit.cluster.bera import BeraFairAssignment
    from fairaudit.cluster.fairlets import FairletClustering
    from fairaudit.cluster.fairsc import FairSC
    from fairaudit.cluster.vfc import VariationalFairClustering

    plugin, estimator = {
        "fairsc": (plugins.FairSCClusterer, FairSC),
        "fairlets": (plugins.FairletsClusterer, FairletClustering),
        "bera": (plugins.BeraClusterer, BeraFairAssignment),
        "vfc": (plugins.VFCClusterer, VariationalFairClustering),
    }[pair]
    mine = inspect.signature(plugin.__init__).parameters
    theirs = inspect.signature(estimator.__init__).parameters
    shared = [k for k in mine if k in theirs and k not in ("self", "random_state")]
    assert shared
    assert {k: mine[k].default for k in shared} == {k: theirs[k].default for k in shared}
