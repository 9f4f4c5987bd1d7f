"""Gates that cannot pass by accident, the gate summary, warnings, --audit/--skip-audit, feature
auditors with NaN in unread columns, input kinds (pandas, named labels) and reproducible JSON."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from fairaudit.core.components import Direction
from fairaudit.ops.gates import Scope, evaluate_gates
from fairaudit.report.results import MetricResult, Status, Threshold


def _result(metric="balance", lab="seg", attr="sex", value=0.5, ci=None):
    return MetricResult(auditor="balance", metric=metric, labelling=lab, value=value,
                        direction=Direction.HIGHER_IS_BETTER, attribute=attr, ci=ci)


# ----------------------------------------------------------------------------- evaluate_gates
def test_a_metric_missing_from_its_scope_fails_with_the_reason():
    th = Threshold("balance", 0.8, "min")
    scopes = {"balance": Scope(("seg",), ("sex", "race"))}
    results, gates = evaluate_gates([_result(value=0.9)], [th], scopes,
                                    reasons={"seg": "every row is noise"})
    assert [g.status for g in gates] == [Status.PASS, Status.FAIL]
    assert gates[1].attribute == "race" and gates[1].judged is None
    assert "not computed" in gates[1].reason and "every row is noise" in gates[1].reason
    assert results[0].status == Status.PASS


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_an_undefined_value_never_passes(value):
    th = Threshold("balance", 0.1, "min")
    _, gates = evaluate_gates([_result(value=value)], [th],
                              {"balance": Scope(("seg",), ("sex",))})
    assert gates[0].status == Status.FAIL and "undefined" in gates[0].reason


def test_a_warning_gate_warns_and_the_judged_number_is_the_ci_end():
    th = Threshold("balance", 0.6, "min", on="ci", severity="warning")
    results, gates = evaluate_gates([_result(value=0.7, ci=(0.55, 0.8))], [th],
                                    {"balance": Scope(("seg",), ("sex",))})
    g = gates[0]
    assert g.status == Status.WARN and g.judged == 0.55 and g.judged_on == "ci_lower"
    assert g.value == 0.7
    assert results[0].judged == 0.55 and results[0].status == Status.WARN
    hi = Threshold("wd", 0.2, "max", on="ci")
    r = MetricResult(auditor="d", metric="wd", labelling="seg", value=0.1,
                     direction=Direction.LOWER_IS_BETTER, attribute="sex", ci=(0.05, 0.25))
    _, gates = evaluate_gates([r], [hi], {"wd": Scope(("seg",), ("sex",))})
    assert gates[0].judged == 0.25 and gates[0].judged_on == "ci_upper"
    assert gates[0].status == Status.FAIL


def test_ci_gate_without_an_interval_fails():
    th = Threshold("balance", 0.6, "min", on="ci")
    _, gates = evaluate_gates([_result(value=0.9, ci=None)], [th],
                              {"balance": Scope(("seg",), ("sex",))})
    assert gates[0].status == Status.FAIL and "confidence interval" in gates[0].reason


def test_the_worst_gate_decides_a_results_status():
    ths = [Threshold("balance", 0.4, "min"), Threshold("balance", 0.6, "min", severity="warning"),
           Threshold("balance", 0.55, "min")]
    results, gates = evaluate_gates([_result(value=0.5)], ths,
                                    {"balance": Scope(("seg",), ("sex",))})
    assert [g.status for g in gates] == [Status.PASS, Status.WARN, Status.FAIL]
    assert results[0].status == Status.FAIL and results[0].threshold == ths[2]


# ----------------------------------------------------------------------------- CLI
@pytest.fixture
def noise_path(tmp_path, synthetic) -> Path:
    path = tmp_path / "noise.parquet"
    synthetic.with_columns(pl.lit(-1).alias("segment")).write_parquet(path)
    return path


def test_all_noise_labels_fail_their_gates_and_say_why(run_cli, noise_path, tmp_path):
    out = tmp_path / "r.html"
    r = run_cli("audit", noise_path, "-s", "sex", "--labels", "segment", "--bootstrap", "0",
                "--skip-audit", "proxy", "--fail-under", "balance=0.8", "--fail-over", "wd=0.1",
                "-o", out)
    assert r.exit_code == 1, r.output
    doc = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    assert doc["status"] == "fail"
    assert [(g["metric"], g["status"]) for g in doc["gates"]] == [("balance", "fail"),
                                                                  ("wd", "fail")]
    assert all("noise" in g["reason"] for g in doc["gates"])
    assert any("every row is noise" in n for n in doc["notes"])
    assert "why:" in r.stdout and "noise" in r.stdout


def test_the_summary_lists_every_gate_with_the_judged_number(run_cli, parquet_path, tmp_path):
    out = tmp_path / "r.html"
    md = tmp_path / "summary.md"
    r = run_cli("audit", parquet_path, "-s", "sex,race", "--labels", "segment",
                "--skip-audit", "proxy", "--bootstrap", "30",
                "--fail-under", "balance@ci[race]=0.01", "--warn-under", "balance_mean[sex]=0.99",
                "--fail-over", "wd=5", "-o", out, "--summary-md", md)
    assert r.exit_code == 0, r.output
    doc = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    statuses = sorted(g["status"] for g in doc["gates"])
    assert statuses == ["pass", "pass", "pass", "pass", "warn"]  # wd on sex, race and sex|race
    ci_gate = next(g for g in doc["gates"] if g["on"] == "ci")
    res = next(x for x in doc["results"] if x["metric"] == "balance"
               and x["attribute"] == "race")
    assert ci_gate["judged"] == res["ci"][0] == res["judged"]
    assert ci_gate["judged_on"] == "ci_lower" and ci_gate["value"] == res["value"]
    # console: one row per gate, passes included, the judged end named
    lines = [ln for ln in r.stdout.splitlines() if ln.strip().startswith(("PASS", "WARN"))]
    assert len(lines) == 5
    assert any("CI lower" in ln and f"{ci_gate['judged']:.3f}" in ln for ln in lines)
    text = md.read_text(encoding="utf-8")
    assert text.count("| **PASS** |") == 4 and text.count("| **WARN** |") == 1
    assert "CI lower" in text and "WARN" in text


@pytest.mark.parametrize(
    ("args", "culprits"),
    [
        (("--fail-under", "balance=1.5"), ("--fail-under balance=1.5", "outside the range")),
        (("--fail-under", "balance=-3"), ("--fail-under balance=-3", "outside the range")),
        (("--fail-under", "balance=nan"), ("--fail-under balance=nan", "finite")),
        (("--fail-over", "wd=inf"), ("--fail-over wd=inf", "finite")),
        (("--fail-under", "wd=0.1"), ("lower-is-better", "--fail-over")),
        (("--fail-over", "balance=0.9"), ("higher-is-better", "--fail-under")),
        (("--warn-under", "wd=0.1"), ("lower-is-better", "--warn-over")),
        (("--fail-under", "balance@ci=0.6", "--bootstrap", "0"), ("@ci", "--bootstrap 0")),
        (("--fail-under", "balance[nosuch]=0.6"), ("unknown attribute", "nosuch")),
    ],
    ids=["above-range", "below-range", "nan", "inf", "wd-under", "balance-over", "warn-wd-under",
         "ci-without-bootstrap", "unknown-attribute"],
)
def test_gate_config_errors(run_cli, parquet_path, tmp_path, args, culprits):
    out = tmp_path / "o" / "r.html"
    out.parent.mkdir()
    r = run_cli("audit", parquet_path, "-s", "sex", "--labels", "segment", "--skip-audit",
                "proxy", *args, "-o", out)
    assert r.exit_code == 2, r.output
    for c in culprits:
        assert c in r.stderr, r.stderr
    assert list(out.parent.iterdir()) == []


def test_chain_threshold_errors_name_the_key(run_cli, tmp_path):
    chain = tmp_path / "c.toml"
    chain.write_text(
        '[data]\nsensitive = ["sex"]\nlabels = "segment"\n[options]\nbootstrap = 0\n'
        '[[audit]]\nuse = "balance"\n[[audit]]\nuse = "distribution"\n'
        '[[threshold]]\nmetric = "balance"\nmin = 2.0\n'
        '[[threshold]]\nmetric = "wd"\nmin = 0.1\n'
        '[[threshold]]\nmetric = "balance"\nmin = 0.5\non = "ci"\n'
        '[[threshold]]\nmetric = "balance"\nmin = 0.5\nseverity = "fatal"\n',
        encoding="utf-8",
    )
    r = run_cli("validate", chain)
    assert r.exit_code == 2
    err = r.stderr
    assert "threshold[0].min" in err and "outside the range" in err
    assert "threshold[1].min" in err and "lower-is-better" in err
    assert "threshold[2].min" in err and "@ci" in err
    assert "threshold[3].severity" in err


def test_warn_thresholds_from_chain_and_api(tmp_path, parquet_path, synthetic):
    import fairaudit

    run = fairaudit.audit(synthetic, sensitive="sex", labels="segment", bootstrap=0,
                          skip_audit=["proxy"], warn_under={"balance": 0.99},
                          fail_under={"balance": 0.01})
    assert run.status == "warn" and run.exit_code == 0
    assert {g["severity"] for g in run.doc["gates"]} == {"warning", "error"}
    chain = tmp_path / "c.toml"
    chain.write_text(
        '[data]\nsensitive = ["sex"]\nlabels = "segment"\n[options]\nbootstrap = 0\n'
        '[[audit]]\nuse = "balance"\n'
        '[[threshold]]\nmetric = "balance"\nmin = 0.99\nseverity = "warning"\n',
        encoding="utf-8",
    )
    run = fairaudit.audit(parquet_path, sensitive="sex", chain=chain)
    assert run.status == "warn" and run.exit_code == 0


# ----------------------------------------------------------------------------- auditors
def test_audit_and_skip_audit(run_cli, parquet_path, tmp_path):
    out = tmp_path / "r.html"
    r = run_cli("audit", parquet_path, "-s", "sex", "--labels", "segment", "--audit", "balance",
                "--bootstrap", "0", "-o", out)
    assert r.exit_code == 0, r.output
    doc = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    assert [s["use"] for s in doc["chain"]["audit"]] == ["balance"]
    r = run_cli("audit", parquet_path, "-s", "sex", "--labels", "segment", "--skip-audit",
                "proxy", "--bootstrap", "0", "-o", out)
    doc = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    assert "proxy" not in [s["use"] for s in doc["chain"]["audit"]]
    assert doc["chain"]["audit"]
    r = run_cli("audit", parquet_path, "-s", "sex", "--labels", "segment", "--skip-audit",
                "proxi", "-o", out)
    assert r.exit_code == 2 and "'proxy'" in r.stderr


def test_a_plugin_auditor_runs_without_a_chain(run_cli, parquet_path, tmp_path):
    from fairaudit.core.plugins import Host

    host = Host.create()
    names = {i.name for i in host.registry.all() if i.kind == "auditor"}
    plugin = next((n for n in sorted(names) if n not in
                   {"balance", "distribution", "capacity", "proxy", "dcsi"}), None)
    if plugin is None:
        pytest.skip("no third-party auditor installed")
    out = tmp_path / "r.html"
    r = run_cli("audit", parquet_path, "-s", "sex", "--labels", "segment", "--audit", plugin,
                "--bootstrap", "0", "-o", out)
    assert r.exit_code == 0, r.output
    doc = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    assert {x["auditor"] for x in doc["results"]} == {plugin}


def test_nan_in_an_unrelated_column_does_not_stop_a_labels_audit(run_cli, tmp_path, synthetic):
    frame = synthetic.with_columns(
        pl.when(pl.int_range(pl.len()) % 5 == 0).then(float("nan")).otherwise(pl.col("x2"))
        .alias("x2"),
        pl.when(pl.int_range(pl.len()) % 4 != 0).then(None).otherwise(pl.col("x1")).alias("x1"),
    )
    path = tmp_path / "nan.parquet"
    frame.write_parquet(path)
    out = tmp_path / "r.html"
    r = run_cli("audit", path, "-s", "sex", "--labels", "segment", "--bootstrap", "0",
                "--audit", "balance", "--audit", "proxy:max_samples=200", "-o", out)
    assert r.exit_code == 0, r.output
    doc = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    bal = next(x for x in doc["results"] if x["metric"] == "balance")
    assert bal["n_rows"] == synthetic.height  # counting metrics use every row
    proxy = [x for x in doc["results"] if x["auditor"] == "proxy"]
    assert proxy and all(any("skipped" in n and "'x1'" in n for n in x["notes"]) for x in proxy)
    assert doc["input"]["excluded_columns"]["x1"].startswith("mostly missing")
    # with a clusterer, --on-nonfinite keeps its meaning
    r = run_cli("audit", path, "-s", "sex", "--cluster", "kmeans:n_clusters=3", "--features",
                "x1,x2", "-o", out)
    assert r.exit_code == 2 and "--on-nonfinite" in r.stderr


# ----------------------------------------------------------------------------- inputs
def test_named_labels_keep_their_names(run_cli, tmp_path, synthetic):
    names = {0: "gold", 1: "silver", 2: "bronze"}
    frame = synthetic.with_columns(
        pl.col("segment").replace_strict(names, return_dtype=pl.String).cast(pl.Categorical)
    )
    path = tmp_path / "named.parquet"
    frame.write_parquet(path)
    out = tmp_path / "r.html"
    r = run_cli("audit", path, "-s", "sex", "--labels", "segment", "--bootstrap", "0",
                "--audit", "balance", "-o", out)
    assert r.exit_code == 0, r.output
    doc = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    lab = doc["labellings"][0]
    assert lab["cluster_names"] == ["bronze", "gold", "silver"]
    expected = synthetic.group_by("segment").len().sort("segment")["len"].to_list()
    by_name = {lab["cluster_names"][c["cluster"]]: c["n"] for c in lab["cluster_sizes"]}
    assert [by_name[names[i]] for i in range(3)] == expected
    html = out.read_text(encoding="utf-8")
    assert '<th class="num">bronze</th>' in html and '<th class="num">silver</th>' in html


def test_pandas_dataframe_without_pyarrow(synthetic):
    pd = pytest.importorskip("pandas")
    import fairaudit

    df = pd.DataFrame({c: synthetic[c].to_list() for c in synthetic.columns})
    df["segment"] = df["segment"].map({0: "a", 1: "b", 2: "c"}).astype("category")
    df["age"] = pd.array([30, None] * (len(df) // 2), dtype="Int64")
    run = fairaudit.audit(df, sensitive=["sex"], labels="segment", bootstrap=0,
                          audit=["balance"])
    assert run.doc["labellings"][0]["cluster_names"] == ["a", "b", "c"]
    ref = fairaudit.audit(synthetic, sensitive=["sex"], labels="segment", bootstrap=0,
                          audit=["balance"])
    assert [r["value"] for r in run.results] == [r["value"] for r in ref.results]


# ----------------------------------------------------------------------------- reproducibility
def test_json_is_byte_identical_for_the_same_input_and_seed(run_cli, parquet_path, tmp_path):
    outs = []
    for i in range(2):
        out = tmp_path / f"r{i}.html"
        json_out = tmp_path / "same.json"
        r = run_cli("audit", parquet_path, "-s", "sex,race", "--labels", "segment",
                    "--cluster", "kmeans:n_clusters=3", "--bootstrap", "50", "--seed", "3",
                    "--audit", "balance", "--audit", "distribution", "--audit",
                    "proxy:max_samples=200", "-o", out, "--json", json_out)
        assert r.exit_code == 0, r.output
        outs.append(json_out.read_bytes())
    assert outs[0] == outs[1]
    assert b'"timing": {' not in outs[0]
    r = run_cli("audit", parquet_path, "-s", "sex", "--labels", "segment", "--audit", "balance",
                "--bootstrap", "0", "--timing", "-o", tmp_path / "t.html")
    doc = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))
    assert doc["timing"]["steps"] and doc["chain"]["options"]["timing"] is True


def test_summary_md_must_not_be_the_input(run_cli, parquet_path, tmp_path):
    before = parquet_path.read_bytes()
    r = run_cli("audit", parquet_path, "-s", "sex", "--labels", "segment", "--audit", "balance",
                "-o", tmp_path / "r.html", "--summary-md", parquet_path)
    assert r.exit_code == 2 and "--summary-md" in r.stderr
    assert parquet_path.read_bytes() == before
    assert not (tmp_path / "r.html").exists()


def test_markdown_escapes_cells():
    from fairaudit.report.summary import markdown

    doc = {"status": "fail", "input": {"rows_audited": 3, "attributes": ["a"]},
           "labellings": [{}],
           "gates": [{"metric": "balance", "labelling": "x|<b>", "attribute": "a", "bound": "min",
                      "threshold": 0.5, "on": "value", "severity": "error", "judged": 0.25,
                      "judged_on": "value", "value": 0.25, "status": "fail", "reason": None,
                      "source": "--fail-under balance=0.5"}]}
    text = markdown(doc)
    assert "x\\|&lt;b&gt;" in text and "| **FAIL** |" in text and "0.250" in text
