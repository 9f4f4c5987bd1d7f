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


# ------------------------------------------- 3. group names that differ in case or spaces only
def test_names_differing_in_case_or_spaces_warn_native_and_gx_alike():
    import polars as pl

    from fairaudit.core.checks import run_input_checks as native
    from fairaudit.gx.checks import run_input_checks as via_gx

    frame = pl.DataFrame({"health": ["EXCELLENT", "Excellent", "excellent", "poor"] * 5,
                          "insurance": ["deductible", "deductible  ", "none", "none"] * 5})
    counts = {c: dict(zip(*[frame[c].value_counts()[k].to_list() for k in (c, "count")],
                          strict=True)) for c in frame.columns}
    kwargs = dict(sensitive=["health", "insurance"], labels=None, features=[],
                  group_counts=counts, min_cell=1, n_rows=frame.height)
    mine = {r.name: r for r in native(frame, **kwargs)}
    assert mine == {r.name: r for r in via_gx(frame, **kwargs)}
    health = mine["sensitive_names_distinct[health]"]
    assert not health.success and health.severity == "warning"
    assert "'EXCELLENT', 'Excellent', 'excellent'" in health.observed and "poor" not in \
        health.observed
    ins = mine["sensitive_names_distinct[insurance]"]
    assert "'deductible', 'deductible  '" in ins.observed  # repr: the spaces show
    assert "upstream" in ins.observed and "does not change the data" in ins.observed
    clean = native(frame.with_columns(pl.col("health").str.to_lowercase().str.strip_chars()),
                   **{**kwargs, "sensitive": ["health"],
                      "group_counts": {"health": {"excellent": 15, "poor": 5}}})
    assert next(r for r in clean if r.name == "sensitive_names_distinct[health]").success


def test_names_differing_in_spaces_console_and_html(run_cli, tmp_path):
    import polars as pl

    n = 400
    frame = pl.DataFrame({
        "insurance": ["deductible", "deductible  ", "none", "Excellent"] * (n // 4),
        "segment": [i % 3 for i in range(n)],
    })
    frame.write_csv(tmp_path / "messy.csv")
    before = (tmp_path / "messy.csv").read_bytes()
    res = run_cli("audit", "messy.csv", "--sensitive", "insurance", "--labels", "segment",
                  "--out", "m.html", "--bootstrap", "20")
    assert res.exit_code == 0, res.output
    assert "warning: 'insurance': 2 group names differ only in case, spacing, Unicode form or look-alike letters" \
        in res.output and "'deductible', 'deductible  '" in res.output
    html = (tmp_path / "m.html").read_text()
    assert "\u201cdeductible\u2423\u2423\u201d" in html  # the trailing spaces are visible
    doc = json.loads((tmp_path / "m.json").read_text())
    groups = doc["labellings"][0]["composition"]["insurance"]["groups"]
    assert "deductible" in groups and "deductible  " in groups  # the data are not changed
    assert (tmp_path / "messy.csv").read_bytes() == before


# ------------------------------ 5. a clusterer's own warnings reach the labelling; fit vs sample
@pytest.mark.filterwarnings("ignore:an old keyword:DeprecationWarning")
def test_clusterer_warnings_reach_the_labelling_and_fit_notes_name_the_sample(
        run_cli, small_parquet, tmp_path, monkeypatch):
    from fixture_plugins import FakeEntryPoint, install_fake_entry_points

    install_fake_entry_points(monkeypatch, FakeEntryPoint("warner", "warning_clusterer"))
    res = run_cli("audit", small_parquet, "--sensitive", "sex", "--features", "x1,x2",
                  "--cluster", "warner", "--sample", "100", "--bootstrap", "20",
                  "--skip-audit", "proxy", "--out", "r.html")
    assert res.exit_code == 0, res.output
    assert "UserWarning" not in res.stderr  # in the labelling, not only on stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    lab = doc["labellings"][0]
    raised = [w for w in lab["warnings"] if w["code"] == "clusterer_warning"]
    assert [w["message"] for w in raised] == [
        "warner warned while fitting: warner: fit emptied 1 of the 2 clusters",
        "warner warned while assigning every row (predict): warner: the labels break 40 of the "
        "bounds",
    ]  # distinct messages only (fit warned twice); the DeprecationWarning is not one
    assert lab["fit"]["warnings"] and lab["fit"]["predict_warnings"]
    assert "warning: warner: warner warned while assigning every row (predict)" in res.output
    # the clusterer's note is about its fit on the sample, and says so
    assert lab["notes"][0] == ("(fit on the 100-row sample) Every one of the 100 fitted rows "
                               "meets the bounds.")
    html = (tmp_path / "r.html").read_text()
    assert "warned while assigning every row (predict)" in html
    # a saved document with these warnings is valid (re-render)
    assert run_cli("render", "r.json", "-o", "again.html", "-q").exit_code == 0


def test_bera_notes_speak_of_the_fitted_rows():
    from fairaudit_builtins.field import BeraClusterer

    from fairaudit.testing import make_data

    data = make_data(n=300, with_labels=False)
    comp = BeraClusterer(3, random_state=0).fit(data)
    notes = " ".join(comp.notes_)
    assert "of the 300 fitted rows" in notes and "of them moved" not in notes
    if comp.estimator_.repaired_rows_ and not comp.estimator_.bound_violations_:
        assert "in the 300 fitted rows every cluster's group shares meet" in notes


# ------------------------------------------------ 6a. API steps shaped as a chain's [[cluster]]
def test_api_cluster_steps_as_mappings(small_parquet):
    import fairaudit
    from fairaudit.errors import ConfigError

    run = fairaudit.audit(str(small_parquet), sensitive="sex", features=["x1", "x2"],
                          cluster=[{"use": "kmeans", "params": {"n_clusters": 3},
                                    "name": "km-3"}, {"use": "kmeans"}],
                          skip_audit=["proxy"], bootstrap=0)
    assert [lab["name"] for lab in run.labellings] == ["km-3", "kmeans-2"]
    assert run.labellings[0]["params"]["n_clusters"] == 3
    with pytest.raises(ConfigError, match=r"element \[0\] is .*unknown key\(s\) \['param'\]"):
        fairaudit.audit(str(small_parquet), sensitive="sex", features=["x1", "x2"],
                        cluster=[{"use": "kmeans", "param": {"n_clusters": 3}}])
    with pytest.raises(ConfigError, match=r"element \[0\] is .* without 'use'"):
        fairaudit.audit(str(small_parquet), sensitive="sex", cluster=[{"params": {}}])
    with pytest.raises(ConfigError, match=r"element \[1\] is 3 \(int\)"):
        fairaudit.audit(str(small_parquet), sensitive="sex", features=["x1", "x2"],
                        cluster=["kmeans", 3])


# ---------------------------------------------------- 6b. --k without a clusterer is not silent
def test_k_without_a_clusterer_warns(run_cli, small_parquet, tmp_path):
    import fairaudit

    res = run_cli("audit", small_parquet, "--sensitive", "sex", "--labels", "segment",
                  "--k", "5", "--bootstrap", "0", "--skip-audit", "proxy", "--out", "r.html")
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "r.json").read_text())
    assert any(n.startswith("--k 5 has no effect: no clusterer runs") for n in doc["notes"])
    run = fairaudit.audit(str(small_parquet), sensitive="sex", labels="segment", k=5,
                          bootstrap=0, skip_audit=["proxy"])
    assert any(n.startswith("k=5 has no effect") for n in run.doc["notes"])


# -------------------------------------- 6e. a numeric attribute of many values: suggest bands
def test_numeric_attribute_with_many_values_gets_a_binning_note(run_cli, tmp_path):
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(0)
    n = 2000
    pl.DataFrame({"age": rng.integers(18, 80, n), "sex": rng.choice(["f", "m"], n),
                  "band": rng.integers(1, 5, n), "seg": rng.integers(0, 3, n)}
                 ).write_csv(tmp_path / "ages.csv")
    res = run_cli("audit", "ages.csv", "--sensitive", "age,sex,band", "--labels", "seg",
                  "--bootstrap", "0", "--out", "a.html")
    assert res.exit_code == 0, res.output
    notes = json.loads((tmp_path / "a.json").read_text())["notes"]
    binning = [n for n in notes if "bin it" in n]
    assert len(binning) == 1  # age (62 values), not band (4 values) nor sex
    assert binning[0].startswith("sensitive column 'age' is numeric with 62 distinct values")
