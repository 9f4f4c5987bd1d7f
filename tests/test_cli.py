"""The ``fairaudit`` CLI: every command and exit code, thresholds, output options, inputs.

In-process through click's CliRunner (a subprocess pays the Great Expectations import each time);
a subprocess only for start-up cost (``fairaudit --help`` must not import the heavy libraries).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from fixture_plugins import FakeEntryPoint, install_fake_entry_points

from fairaudit.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_DATA = ROOT / "examples" / "data" / "adult_sample.parquet"
CHAINS = ROOT / "examples" / "chains"


# ----------------------------------------------------------------------------- helpers
def _doc(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def _results(doc: dict, **match) -> list[dict]:
    return [r for r in doc["results"] if all(r.get(k) == v for k, v in match.items())]


def _stub_html(monkeypatch) -> None:
    """Replace the HTML rendering by a stub, for tests about the JSON and
    exit codes only; tests of the page itself use the real renderer."""
    import fairaudit.report.render

    def render_html(run, host=None, *, template_dirs=()):
        return "<!-- html rendering stubbed in this test -->\n"

    monkeypatch.setattr(fairaudit.report.render, "render_html", render_html)


@pytest.fixture
def audit(run_cli, parquet_path, tmp_path, monkeypatch):
    """``fairaudit audit <synthetic parquet> --sensitive sex,race ...`` writing into tmp_path/out;
    returns (result, json document or None). ``audit.real_html()`` turns the renderer back on."""
    out = tmp_path / "out"
    out.mkdir()
    _stub_html(monkeypatch)

    def _audit(*args: str, data: str | Path | None = None):
        result = run_cli(
            "audit", str(data or parquet_path), "--sensitive", "sex,race",
            "--out", str(out / "report.html"), *args,
        )  # fmt: skip
        js = out / "report.json"
        return result, (_doc(js) if js.exists() and "--json" not in args else None)

    _audit.out = out
    _audit.real_html = monkeypatch.undo
    return _audit


# ----------------------------------------------------------------------------- start-up
def test_help_starts_without_heavy_imports():
    code = (
        "import sys\n"
        "from fairaudit.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit as e:\n"
        "    assert e.code == 0, e.code\n"
        "heavy = ('great_expectations', 'sklearn', 'scipy', 'matplotlib', 'pandas')\n"
        "sys.stderr.write('HEAVY=' + ','.join(m for m in heavy if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    assert "Usage" in proc.stdout
    heavy = proc.stderr.rsplit("HEAVY=", 1)[-1].strip()
    assert heavy == "", f"`fairaudit --help` imported: {heavy}"


def test_help_lists_every_command(cli):
    result = cli.invoke(main, ["--help"])
    assert result.exit_code == 0
    for command in ("audit", "run", "validate", "plugins", "describe", "render", "demo"):
        assert command in result.output
    assert "Exit codes" in result.output


def test_version(cli):
    result = cli.invoke(main, ["--version"])
    assert result.exit_code == 0
    assert importlib.metadata.version("fairaudit-clusters") in result.output


# ----------------------------------------------------------------------------- audit
def test_audit_labels_writes_html_and_json(audit):
    audit.real_html()
    result, doc = audit("--labels", "segment")
    assert result.exit_code == 0, result.output
    html = (audit.out / "report.html").read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html")
    assert doc["status"] == "not_evaluated"  # no thresholds given
    assert doc["input"]["rows"] == 2000
    assert doc["input"]["attributes"] == ["sex", "race", "sex|race"]
    assert [lab["name"] for lab in doc["labellings"]] == ["segment"]
    assert {r["auditor"] for r in doc["results"]} >= {"balance", "distribution", "capacity"}
    assert str((audit.out / "report.html").resolve()) in result.stdout
    assert str((audit.out / "report.json").resolve()) in result.stdout
    # no progress chatter when stderr is not a terminal
    assert not re.search(r"^\[\s*\d+\.\ds\]", result.stderr, re.M)
    # no temporary files left next to the outputs
    assert sorted(p.name for p in audit.out.iterdir()) == ["report.html", "report.json"]


def test_missing_sensitive_option_is_a_usage_error(run_cli, parquet_path):
    result = run_cli("audit", str(parquet_path), "--labels", "segment")
    assert result.exit_code == 2
    assert "--sensitive" in result.stderr


def test_fail_under_exit_codes(audit):
    result, doc = audit("--labels", "segment", "--fail-under", "balance=0.99")
    assert result.exit_code == 1, result.output
    assert doc["status"] == "fail"
    failed = [r for r in doc["results"] if r["status"] == "fail"]
    assert failed and {r["metric"] for r in failed} == {"balance"}
    assert "FAIL" in result.stdout and "balance" in result.stdout
    result, doc = audit("--labels", "segment", "--fail-under", "balance=0.01")
    assert result.exit_code == 0, result.output
    assert doc["status"] == "pass"
    assert {r["status"] for r in _results(doc, metric="balance")} == {"pass"}


def test_fail_over_exit_codes(audit):
    result, doc = audit("--labels", "segment", "--fail-over", "wd=0.000001")
    assert result.exit_code == 1
    assert {r["status"] for r in _results(doc, metric="wd")} == {"fail"}
    result, doc = audit("--labels", "segment", "--fail-over", "wd=5")
    assert result.exit_code == 0
    assert {r["status"] for r in _results(doc, metric="wd")} == {"pass"}


def test_threshold_on_ci_and_on_one_attribute(audit):
    _, doc = audit("--labels", "segment")
    bal = _results(doc, metric="balance", attribute="sex")[0]
    lo, hi = bal["ci"]
    assert lo < bal["value"] <= hi
    th = (lo + bal["value"]) / 2  # the value passes, the lower CI bound does not
    result, doc = audit("--labels", "segment", "--fail-under", f"balance[sex]={th}")
    assert result.exit_code == 0, result.output
    result, doc = audit("--labels", "segment", "--fail-under", f"balance@ci[sex]={th}")
    assert result.exit_code == 1, result.output
    judged = _results(doc, metric="balance", attribute="sex")[0]
    assert judged["status"] == "fail"
    assert judged["threshold"]["on"] == "ci"
    for other in ("race", "sex|race"):
        assert _results(doc, metric="balance", attribute=other)[0]["status"] == "not_evaluated"


@pytest.mark.parametrize(
    ("flag", "text", "culprit"),
    [
        ("--fail-under", "balance", "balance"),
        ("--fail-under", "balance=high", "high"),
        ("--fail-under", "balanse=0.5", "did you mean balance"),
        ("--fail-over", "balance[gender]=0.5", "gender"),
    ],
)
def test_bad_threshold_flags_are_usage_errors(audit, flag, text, culprit):
    result, _ = audit("--labels", "segment", flag, text)
    assert result.exit_code == 2, result.output
    assert culprit in result.stderr
    assert "Traceback" not in result.output


def test_json_path_and_quiet(audit):
    other = audit.out / "elsewhere.json"
    result, _ = audit("--labels", "segment", "--json", str(other), "--quiet")
    assert result.exit_code == 0
    assert result.stdout == ""
    assert other.exists() and (audit.out / "report.html").exists()
    assert not (audit.out / "report.json").exists()
    assert _doc(other)["input"]["rows"] == 2000


def test_output_folder_must_exist(run_cli, parquet_path, tmp_path):
    result = run_cli(
        "audit", str(parquet_path), "--sensitive", "sex", "--labels", "segment",
        "--out", str(tmp_path / "nowhere" / "r.html"),
    )  # fmt: skip
    assert result.exit_code == 2
    assert "nowhere" in result.stderr


@pytest.fixture
def small_group_path(tmp_path, synthetic) -> Path:
    """The synthetic table plus 3 rows of race 'd' (a group below the default min_cell=10)."""
    extra = synthetic.head(3).with_columns(pl.lit("d").alias("race"))
    path = tmp_path / "small_group.parquet"
    pl.concat([synthetic, extra]).write_parquet(path)
    return path


def _small_counts(doc: dict, min_cell: int) -> list:
    """Every exact count below min_cell (and above 0) anywhere in the counts of the JSON."""
    found = []
    for lab in doc["labellings"]:
        for comp in lab["composition"].values():
            found += [
                v for row in comp["counts"] for v in row if v is not None and 0 < v < min_cell
            ]
            found += [v for v in comp["noise"] if v is not None and 0 < v < min_cell]
        found += [c["n"] for c in lab["cluster_sizes"] if c["n"] is not None and c["n"] < min_cell]
    for groups in doc["input"]["groups"].values():
        found += [g["n"] for g in groups if g["n"] is not None and g["n"] < min_cell]
    for r in doc["results"]:
        found += [
            c["n"] for c in r["per_cluster"] if c.get("n") is not None and 0 < c["n"] < min_cell
        ]
    return found


def test_default_report_shows_exact_small_counts_and_says_so(audit, small_group_path):
    result, doc = audit("--labels", "segment", data=small_group_path)
    assert result.exit_code == 0, result.output
    d = next(g for g in doc["input"]["groups"]["race"] if g["group"] == "d")
    assert d["n"] == 3 and d["small"]  # too small to judge, and listed with its exact size
    assert 3 in _small_counts(doc, 10)
    assert doc["privacy"] == {"mode": "exact"}
    assert "suppressed" not in doc
    assert not any("withheld" in r or "bounds" in r for r in doc["results"])
    # the console says who may read it and how to make a shareable one
    note = next(line for line in result.stdout.splitlines() if line.startswith("note:"))
    assert "exact counts" in note and "small groups" in note and "--publish" in note


def test_no_suppress_is_deprecated_and_changes_nothing(audit, small_group_path):
    result, doc = audit("--labels", "segment", "--no-suppress", data=small_group_path)
    assert result.exit_code == 0, result.output
    assert "--no-suppress is deprecated" in result.stderr
    d = next(g for g in doc["input"]["groups"]["race"] if g["group"] == "d")
    assert d["n"] == 3 and d["small"]
    assert "suppress" not in doc["chain"]["options"]


def test_a_chain_asking_for_suppression_is_refused(run_cli, tmp_path, small_group_path):
    """Someone who asked for small counts to be hidden must not silently get them exactly."""
    out = tmp_path / "r.html"
    chain = tmp_path / "c.toml"
    chain.write_text('[data]\nsensitive = ["race"]\nlabels = "segment"\n'
                     '[options]\nsuppress = true\n[[audit]]\nuse = "balance"\n',
                     encoding="utf-8")
    result = run_cli("run", str(chain), str(small_group_path), "--out", str(out))
    assert result.exit_code == 2
    assert "options.suppress" in result.stderr and "--publish" in result.stderr
    assert not out.exists() and not out.with_suffix(".json").exists()
    chain.write_text(chain.read_text(encoding="utf-8").replace("true", "false"),
                     encoding="utf-8")
    with pytest.warns(FutureWarning, match="options.suppress is deprecated"):
        result = run_cli("run", str(chain), str(small_group_path), "--out", str(out))
    assert result.exit_code == 0, result.output
    d = next(g for g in _doc(out.with_suffix(".json"))["input"]["groups"]["race"]
             if g["group"] == "d")
    assert d["n"] == 3


def test_min_cell_controls_what_is_small(audit, small_group_path):
    result, doc = audit("--labels", "segment", "--min-cell", "2", data=small_group_path)
    assert result.exit_code == 0, result.output
    d = next(g for g in doc["input"]["groups"]["race"] if g["group"] == "d")
    assert not d["small"] and d["n"] == 3
    result, doc = audit("--labels", "segment", "--min-cell", "5000")
    assert result.exit_code == 0, result.output
    assert all(g["small"] for groups in doc["input"]["groups"].values() for g in groups)
    comp = doc["labellings"][0]["composition"]["sex"]
    assert all(isinstance(v, int) for row in comp["counts"] for v in row)


def test_min_cell_below_one_is_refused(audit, small_group_path):
    result, doc = audit("--labels", "segment", "--min-cell", "0", data=small_group_path)
    assert result.exit_code == 2 and doc is None
    assert "--min-cell" in result.stderr


def test_sample_fits_clusterers_on_a_seeded_sample(audit):
    result, doc = audit(
        "--cluster", "kmeans:n_clusters=3", "--features", "x1,x2", "--sample", "500"
    )
    assert result.exit_code == 0, result.output
    assert doc["input"]["rows"] == 2000
    assert doc["input"]["sample"]["rows"] == 500
    lab = doc["labellings"][0]
    # kmeans has predict: fitted on the sample, then every row is assigned (issue 15)
    assert lab["name"] == "kmeans" and lab["n_rows"] == 2000
    assert lab["extras"]["assignment"]["rows_fitted"] == 500
    assert lab["extras"]["assignment"]["rows_assigned"] == 2000
    assert lab["n_clusters"] == 3


def test_default_chain_clusters_with_kmeans_and_silhouette_k(audit, tmp_path):
    from conftest import make_synthetic

    small = tmp_path / "small.parquet"
    make_synthetic(n=300, seed=1).write_parquet(small)
    # three well-separated blobs: silhouette picks k = 3
    result, doc = audit("--features", "x1,x2", "--bootstrap", "20", data=small)
    assert result.exit_code == 0, result.output
    kmeans = next(lab for lab in doc["labellings"] if lab["name"] == "kmeans")
    assert kmeans["n_clusters"] == 3
    assert "silhouette" in " ".join(kmeans["notes"])
    result, doc = audit("--features", "x1,x2", "--k", "4", "--cluster", "kmeans", data=small)
    assert result.exit_code == 0, result.output
    assert doc["labellings"][0]["n_clusters"] == 4


def test_default_chain_encodes_categorical_features(audit):
    """Without --features, the string column 'channel' is a feature: the default chain must
    encode it (the 'encode' preprocessor), and the ID-like 'customer_id' is left out."""
    result, doc = audit("--cluster", "kmeans:n_clusters=3")
    assert result.exit_code == 0, result.stderr
    assert "customer_id" in doc["input"]["excluded_columns"]
    assert "customer_id" not in doc["input"]["features"]
    assert "channel" in doc["input"]["features"]


def test_existing_labels_and_clusterers_side_by_side(audit):
    result, doc = audit(
        "--labels", "segment", "--cluster", "kmeans:n_clusters=3", "--features", "x1,x2"
    )
    assert result.exit_code == 0, result.output
    assert [lab["name"] for lab in doc["labellings"]] == ["segment", "kmeans"]
    # "(data)": the proxy-feature analysis judges the data once, not each labelling
    assert {r["labelling"] for r in doc["results"]} == {"segment", "kmeans", "(data)"}
    assert {r["auditor"] for r in doc["results"] if r["labelling"] == "(data)"} == {"proxy"}
    # the labels column is counted on every row; k-means (on the planted blobs) finds the
    # same partition up to renaming, so its balance equals the segment's
    seg = _results(doc, metric="balance", labelling="segment", attribute="sex")[0]["value"]
    km = _results(doc, metric="balance", labelling="kmeans", attribute="sex")[0]["value"]
    assert km == pytest.approx(seg, abs=0.02)


def _partitioned(tmp_path: Path, frame: pl.DataFrame) -> Path:
    folder = tmp_path / "parts"
    folder.mkdir()
    for i, part in enumerate(frame.iter_slices(n_rows=700)):
        part.write_parquet(folder / f"part-{i}.parquet")
    return folder


def _values(doc: dict) -> list:
    return [
        (r["labelling"], r["metric"], r["attribute"], r["value"], r["ci"]) for r in doc["results"]
    ]


def test_directory_and_glob_give_the_same_counts_as_one_file(audit, tmp_path, synthetic):
    _, single = audit("--labels", "segment")
    folder = _partitioned(tmp_path, synthetic)
    assert len(list(folder.iterdir())) == 3
    for data in (folder, f"{folder}/part-*.parquet"):
        result, doc = audit("--labels", "segment", data=data)
        assert result.exit_code == 0, result.output
        assert doc["input"]["rows"] == single["input"]["rows"]
        assert doc["labellings"][0]["composition"] == single["labellings"][0]["composition"]
        # the same rows in another order: counts exact, float sums within rounding
        got, want = _values(doc), _values(single)
        assert [v[:3] for v in got] == [v[:3] for v in want]
        for g, w in zip(got, want, strict=True):
            assert g[3] == pytest.approx(w[3], rel=1e-9, abs=1e-12), g[:3]
            assert (g[4] is None) == (w[4] is None), g[:3]
            if w[4] is not None:
                assert g[4] == pytest.approx(w[4], rel=1e-9, abs=1e-12), g[:3]


def test_csv_input_gives_the_same_results(audit, tmp_path, synthetic):
    _, single = audit("--labels", "segment")
    path = tmp_path / "customers.csv"
    synthetic.write_csv(path)
    result, doc = audit("--labels", "segment", data=path)
    assert result.exit_code == 0, result.output
    assert doc["input"]["format"] == "csv"
    assert doc["labellings"][0]["composition"] == single["labellings"][0]["composition"]
    assert _values(doc) == _values(single)


# ----------------------------------------------------------------------------- run / validate
def test_run_example_chain(run_cli, parquet_path, tmp_path, monkeypatch):
    _stub_html(monkeypatch)
    out = tmp_path / "run.html"
    result = run_cli("run", str(CHAINS / "audit_segments.toml"), str(parquet_path), "-o", str(out))
    # segment 0 is 80% F against ~40% F overall: balance ~0.33 < 0.5, an error threshold
    assert result.exit_code == 1, result.output
    doc = _doc(out.with_suffix(".json"))
    assert doc["chain"]["seed"] == 7
    failed = [r for r in doc["results"] if r["status"] == "fail"]
    assert failed and all(r["metric"] == "balance" for r in failed)
    assert any(r["threshold"]["on"] == "ci" for r in failed)


def test_run_uses_the_chain_data_path(run_cli, parquet_path, tmp_path, monkeypatch):
    _stub_html(monkeypatch)
    chain = tmp_path / "chain.toml"
    chain.write_text(
        f'[data]\npath = "{parquet_path.as_posix()}"\nsensitive = ["sex"]\nlabels = "segment"\n'
        '[[audit]]\nuse = "balance"\n',
        encoding="utf-8",
    )
    result = run_cli("run", str(chain), "-o", str(tmp_path / "r.html"))
    assert result.exit_code == 0, result.output
    assert _doc(tmp_path / "r.json")["input"]["rows"] == 2000


def test_run_without_data_is_a_usage_error(run_cli, tmp_path):
    chain = tmp_path / "chain.toml"
    chain.write_text(
        '[data]\nsensitive = ["sex"]\nlabels = "segment"\n[[audit]]\nuse = "balance"\n'
    )
    result = run_cli("run", str(chain), "-o", str(tmp_path / "r.html"))
    assert result.exit_code == 2
    assert "data" in result.stderr.lower()


def test_validate_ok_and_errors(run_cli, tmp_path):
    result = run_cli("validate", str(CHAINS / "audit_segments.toml"))
    assert result.exit_code == 0, result.output
    assert "OK" in result.stdout
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[data]\nsensitive = ["sex"]\nlabels = "segment"\n[[audit]]\nuse = "balanse"\n',
        encoding="utf-8",
    )
    result = run_cli("validate", str(bad))
    assert result.exit_code == 2
    assert "audit[0].use" in result.stderr
    assert "balance" in result.stderr  # did you mean
    assert "Traceback" not in result.output


# ----------------------------------------------------------------------------- plugins / describe
def test_plugins_lists_builtins_and_the_example_plugin(run_cli):
    result = run_cli("plugins")
    assert result.exit_code == 0
    lines = {line.split()[0]: line for line in result.stdout.splitlines()[1:] if line.strip()}
    assert {"kmeans", "balance", "distribution", "capacity", "representation_gap"} <= set(lines)
    assert "builtins_clusterers" in lines["kmeans"] and "fairaudit" in lines["kmeans"]
    assert "fairaudit-example-plugin" in lines["representation_gap"]
    result = run_cli("plugins", "--json")
    rows = {(r["name"], r["kind"]): r for r in json.loads(result.stdout)}
    kmeans = rows[("kmeans", "clusterer")]
    assert kmeans["package"] == "fairaudit-clusters"
    assert kmeans["version"] == importlib.metadata.version("fairaudit-clusters")
    assert ("representation_gap", "section") in rows
    assert rows[("representation_gap", "auditor")] == {
        "name": "representation_gap", "kind": "auditor", "plugin": "example",
        "package": "fairaudit-example-plugin",
        "version": importlib.metadata.version("fairaudit-example-plugin"),
    }  # fmt: skip


def test_disable_plugin_flag_and_environment(run_cli, cli, monkeypatch):
    names = lambda r: {row["name"] for row in json.loads(r.stdout)}  # noqa: E731
    assert "representation_gap" in names(run_cli("plugins", "--json"))
    result = run_cli("plugins", "--json", "--disable-plugin", "example")
    assert "representation_gap" not in names(result) and "kmeans" in names(result)
    result = cli.invoke(main, ["plugins", "--json"], env={"FAIRAUDIT_DISABLE_PLUGINS": "example"})
    assert "representation_gap" not in names(result) and "kmeans" in names(result)
    result = cli.invoke(main, ["plugins", "--json"], env={"FAIRAUDIT_DISABLE_PLUGIN_AUTOLOAD": "1"})
    # autoload off: third-party entry points are skipped, built-ins still load
    assert "representation_gap" not in names(result)
    assert {"kmeans", "balance", "summary"} <= names(result)
    result = run_cli("plugins", "--json", "--disable-plugin", "builtins_clusterers")
    assert "kmeans" not in names(result) and "balance" in names(result)


def test_disabled_plugin_metric_is_unknown(audit):
    result, _ = audit(
        "--labels", "segment", "--fail-over", "representation_gap=0.5",
        "--disable-plugin", "example",
    )  # fmt: skip
    assert result.exit_code == 2
    assert "representation_gap" in result.stderr


def test_describe(run_cli):
    result = run_cli("describe", "kmeans")
    assert result.exit_code == 0
    out = result.stdout
    assert "clusterer" in out and "builtins_clusterers" in out
    assert re.search(r"n_clusters = 'auto'", out)
    assert "an int >= 2" in out  # the declared constraint
    assert re.search(r"requires: features", out)
    assert re.search(r"provides: .*labels", out) and "prototypes" in out
    result = run_cli("describe", "balance")
    assert result.exit_code == 0
    assert "metric balance: higher_is_better (headline)" in result.stdout
    result = run_cli("describe", "representation_gap")
    assert result.exit_code == 0
    assert "fairaudit-example-plugin" in result.stdout


def test_describe_unknown_name_suggests(run_cli):
    result = run_cli("describe", "kmean")
    assert result.exit_code == 2
    assert "'kmean'" in result.stderr and "did you mean 'kmeans'" in result.stderr


# ----------------------------------------------------------------------------- render / demo
def test_render_reproduces_the_report_from_the_json(audit, run_cli):
    audit.real_html()
    result, _ = audit("--labels", "segment", "--fail-under", "balance=0.5")
    assert result.exit_code == 1
    original = (audit.out / "report.html").read_text(encoding="utf-8")
    again = audit.out / "again.html"
    result = run_cli("render", str(audit.out / "report.json"), "-o", str(again))
    assert result.exit_code == 0, result.output
    assert again.read_text(encoding="utf-8") == original


def test_render_bad_inputs(run_cli, tmp_path):
    result = run_cli("render", str(tmp_path / "missing.json"), "-o", str(tmp_path / "r.html"))
    assert result.exit_code == 2 and "missing.json" in result.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    result = run_cli("render", str(bad), "-o", str(tmp_path / "r.html"))
    assert result.exit_code == 2 and "bad.json" in result.stderr
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}', encoding="utf-8")
    result = run_cli("render", str(other), "-o", str(tmp_path / "r.html"))
    assert result.exit_code == 2 and "schema_version" in result.stderr
    assert not (tmp_path / "r.html").exists()


@pytest.mark.slow
def test_demo(run_cli, tmp_path):
    out = tmp_path / "demo.html"
    result = run_cli("demo", "-o", str(out))
    assert result.exit_code == 0, result.output
    doc = _doc(out.with_suffix(".json"))
    assert doc["input"]["sensitive"] == ["sex", "race"]
    assert doc["input"]["rows"] == pl.scan_parquet(EXAMPLE_DATA).select(pl.len()).collect().item()
    assert doc["labellings"], "the demo clusters the example data"
    assert out.exists()


# ----------------------------------------------------------------------------- exit code 3
def _crash_chain(tmp_path: Path) -> Path:
    chain = tmp_path / "crash.toml"
    chain.write_text(
        '[data]\nsensitive = ["sex"]\nlabels = "segment"\n[[audit]]\nuse = "crash"\n',
        encoding="utf-8",
    )
    return chain


def test_internal_error_exit_3_without_traceback(run_cli, parquet_path, tmp_path, monkeypatch):
    install_fake_entry_points(monkeypatch, FakeEntryPoint("crashy", "crashing"))
    out = tmp_path / "out"
    out.mkdir()
    result = run_cli(
        "run", str(_crash_chain(tmp_path)), str(parquet_path), "-o", str(out / "r.html")
    )
    assert result.exit_code == 3, result.output
    # a third-party plugin's bug names the component, its package and version, and the way
    # around it; it is not fairaudit's "internal error, please report it"
    assert "internal error" not in result.stderr
    assert "auditor 'crash' (fixture-plugin 9.9, plugin 'crashy') raised RuntimeError: " \
        "boom from the crash auditor" in result.stderr
    assert "report it to the plugin's authors" in result.stderr
    assert "--disable-plugin crashy" in result.stderr and "--debug" in result.stderr
    assert "Traceback" not in result.output
    assert list(out.iterdir()) == []  # no report, no temp file


def test_a_builtin_bug_is_fairaudits_internal_error(run_cli, parquet_path, tmp_path,
                                                    monkeypatch):
    from fairaudit_builtins.auditors import BalanceAuditor

    def broken(self, table):
        raise RuntimeError("boom from a built-in")

    monkeypatch.setattr(BalanceAuditor, "compute", broken)
    out = tmp_path / "out"
    out.mkdir()
    result = run_cli("audit", str(parquet_path), "--sensitive", "sex", "--labels", "segment",
                     "--audit", "balance", "-o", str(out / "r.html"))
    assert result.exit_code == 3, result.output
    assert "internal error: RuntimeError: boom from a built-in" in result.stderr
    assert "please report it" in result.stderr and "plugin" not in result.stderr
    assert list(out.iterdir()) == []


def test_debug_shows_the_traceback(cli, parquet_path, tmp_path, monkeypatch):
    """--debug adds the traceback but keeps the exit code (3 for a bug)."""
    install_fake_entry_points(monkeypatch, FakeEntryPoint("crashy", "crashing"))
    result = cli.invoke(
        main,
        ["run", str(_crash_chain(tmp_path)), str(parquet_path), "-o",
         str(tmp_path / "r.html"), "--debug"],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 3
    assert "Traceback" in result.stderr and "boom from the crash auditor" in result.stderr


def test_seed_changes_only_random_parts(audit):
    _, a = audit("--labels", "segment", "--seed", "1")
    _, b = audit("--labels", "segment", "--seed", "2")
    # counting metrics of a labels column do not depend on the seed (the proxy analysis, on a
    # seeded row sample, does)
    va = [(r["metric"], r["attribute"], r["value"]) for r in a["results"] if r["auditor"] != "proxy"]
    vb = [(r["metric"], r["attribute"], r["value"]) for r in b["results"] if r["auditor"] != "proxy"]
    assert va == vb
    cis = [(r["ci"], s["ci"]) for r, s in zip(a["results"], b["results"], strict=True) if r["ci"]]
    assert cis and any(x != y for x, y in cis)  # the bootstrap does
    assert np.isfinite([r["value"] for r in a["results"] if r["value"] is not None]).all()


# ----------------------------------------------------------------------------- column roles
def test_exclude_and_id_like_columns(audit):
    result, doc = audit("--cluster", "kmeans:n_clusters=3", "--exclude", "channel,segment")
    assert result.exit_code == 0, result.output
    assert doc["input"]["features"] == ["x1", "x2"]
    excluded = doc["input"]["excluded_columns"]
    assert {"channel", "segment", "customer_id"} <= set(excluded)
    assert "sex" not in doc["input"]["features"]  # sensitive columns are never features


def test_null_sensitive_values_are_excluded_and_counted(audit, tmp_path, synthetic):
    frame = synthetic.with_columns(
        pl.when(pl.int_range(pl.len()) < 7).then(None).otherwise(pl.col("race")).alias("race")
    )
    path = tmp_path / "nulls.parquet"
    frame.write_parquet(path)
    result, doc = audit("--labels", "segment", data=path)
    assert result.exit_code == 0, result.output
    assert doc["input"]["rows"] == 2000
    assert doc["input"]["rows_audited"] == 1993
    assert sum(doc["input"]["exclusions"].values()) == 7
    assert sum(g["n"] for g in doc["input"]["groups"]["sex"] if g["n"] is not None) == 1993


def test_non_finite_features_dropped_on_request(audit, tmp_path, synthetic):
    frame = synthetic.with_columns(
        pl.when(pl.int_range(pl.len()) < 4).then(float("inf")).otherwise(pl.col("x1")).alias("x1")
    )
    path = tmp_path / "inf.parquet"
    frame.write_parquet(path)
    args = ("--cluster", "kmeans:n_clusters=3", "--features", "x1,x2")
    result, _ = audit(*args, data=path)
    assert result.exit_code == 2 and "'x1'" in result.stderr
    result, doc = audit(*args, "--on-nonfinite", "drop", data=path)
    assert result.exit_code == 0, result.output
    assert doc["labellings"][0]["n_rows"] == 1996
    assert 4 in doc["input"]["exclusions"].values()


# ----------------------------------------------------------------------------- the exit
def test_the_program_exits_with_its_code_and_everything_written(tmp_path):
    """``python -m fairaudit`` (and the script) end through ``fairaudit.cli.run``: the exit
    code of the command, stdout complete in a pipe, outputs whole, atexit handlers run — but
    no interpreter teardown (issue 25: 60 ms of CPU of a labels audit)."""
    data = tmp_path / "t.csv"
    pl.read_parquet(EXAMPLE_DATA).select("sex", "race", "education").write_csv(data)
    base = [sys.executable, "-m", "fairaudit", "audit", str(data), "--sensitive", "sex,race",
            "--labels", "education", "--bootstrap", "20", "--out", str(tmp_path / "r.html")]
    ok = subprocess.run(base, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.splitlines()[-1].startswith("json:")
    assert json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["results"]
    failed = subprocess.run([*base, "--fail-under", "balance=0.999"], capture_output=True,
                            text=True, timeout=300, cwd=tmp_path)
    assert failed.returncode == 1, failed.stderr
    bad = subprocess.run([sys.executable, "-m", "fairaudit", "audit", str(tmp_path / "no.csv"),
                          "--sensitive", "sex"], capture_output=True, text=True, timeout=300,
                         cwd=tmp_path)
    assert bad.returncode == 2 and "no such file" in bad.stderr
    code = ("import atexit, sys\n"
            "from fairaudit.cli import run\n"
            "atexit.register(lambda: sys.stdout.write('atexit ran\\n'))\n"
            "run(['--version'])\n"
            "sys.stdout.write('not reached\\n')\n")
    ver = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert ver.returncode == 0, ver.stderr
    version = importlib.metadata.version("fairaudit-clusters")
    assert ver.stdout.splitlines() == [f"fairaudit, version {version}", "atexit ran"]
