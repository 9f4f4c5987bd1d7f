"""Defects a new user found in a trial of the host and report layers (twins and gates, plugin
errors, near-duplicate group names, the baseline-only failure, clusterer warnings)."""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def small_parquet(tmp_path):
    from conftest import make_synthetic

    path = tmp_path / "small.parquet"
    make_synthetic(n=400, seed=2).write_parquet(path)
    return path


# ------------------------------------------------------------------ 1. twins are not gated
def test_twins_are_not_gated(run_cli, small_parquet, tmp_path):
    res = run_cli("audit", small_parquet, "--sensitive", "sex", "--features", "x1,x2",
                  "--cluster", "fairden:n_clusters=3,min_pts=5", "--bootstrap", "20",
                  "--skip-audit", "proxy", "--out", "r.html", "--fail-under", "balance=0.01")
    doc = json.loads((tmp_path / "r.json").read_text())
    names = [lab["name"] for lab in doc["labellings"]]
    assert names == ["fairden", "fairden-unfair"]
    assert doc["gates"] and {g["labelling"] for g in doc["gates"]} == {"fairden"}
    twin_results = [r for r in doc["results"] if r["labelling"] == "fairden-unfair"]
    assert twin_results and all(r.get("threshold") is None for r in twin_results)
    # exit code follows the user's own labelling's gates only
    assert res.exit_code == (1 if any(g["status"] == "fail" for g in doc["gates"]) else 0)
    assert "twins not gated: fairden-unfair" in res.output.splitlines()[0]
    assert "Twins are not gated: fairden-unfair" in (tmp_path / "r.html").read_text()


def test_a_plain_method_named_by_the_user_is_gated(run_cli, small_parquet, tmp_path):
    res = run_cli("audit", small_parquet, "--sensitive", "sex", "--features", "x1,x2",
                  "--cluster", "fairden:n_clusters=3,min_pts=5,fair=false", "--bootstrap", "20",
                  "--skip-audit", "proxy", "--out", "r.html", "--fail-under", "balance=0.01")
    doc = json.loads((tmp_path / "r.json").read_text())
    assert [lab["name"] for lab in doc["labellings"]] == ["fairden"]
    assert {g["labelling"] for g in doc["gates"]} == {"fairden"}
    assert "twins not gated" not in res.output


def test_a_threshold_naming_a_twin_is_a_config_error(run_cli, small_parquet, tmp_path):
    chain = tmp_path / "c.toml"
    chain.write_text(
        '[data]\nsensitive = ["sex"]\nfeatures = ["x1", "x2"]\n\n[options]\ntwins = true\n'
        'bootstrap = 20\n\n[[cluster]]\nuse = "fairden"\n'
        'params = { n_clusters = 3, min_pts = 5 }\n\n[[audit]]\nuse = "balance"\n\n'
        '[[threshold]]\nmetric = "balance"\nmin = 0.5\nlabelling = "fairden-unfair"\n')
    res = run_cli("run", chain, small_parquet, "--out", "r.html")
    assert res.exit_code == 2, res.output
    assert "twins are not gated" in res.output and "fair=false" in res.output
    assert not (tmp_path / "r.html").exists()
