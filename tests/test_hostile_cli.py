"""Issue 35, the command line: a closed stdout, impossible gates, ``validate`` = ``run`` before
the data, silently ignored options, and the README's nightly recipe.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, make_synthetic


@pytest.fixture
def data(tmp_path) -> Path:
    path = tmp_path / "d.parquet"
    make_synthetic(600).write_parquet(path)
    return path


# ------------------------------------------------------------------------- a closed stdout
def _closed_stdout(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run the CLI with stdout a pipe whose reader is gone (``| head -1`` once head exited):
    every write fails with EPIPE, deterministically."""
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run([sys.executable, "-m", "fairaudit", *args], stdout=w,
                              stderr=subprocess.PIPE, text=True, cwd=cwd, timeout=300,
                              env={**os.environ, "GX_ANALYTICS_ENABLED": "False"})
    finally:
        os.close(w)


@pytest.mark.parametrize("command, code", [
    (["plugins"], 0), (["plugins", "--json"], 0), (["describe", "balance"], 0),
    (["--help"], 0), (["audit", "--help"], 0), (["--version"], 0),  # click's own output
    (["compare", "base.json", "worse.json"], 1),
    (["audit", "d.parquet", "-s", "sex", "--labels", "segment", "--audit", "balance",
      "--bootstrap", "0", "--fail-under", "balance=0.99", "-o", "r.html"], 1),
])
def test_a_closed_stdout_ends_quietly_with_the_commands_own_code(tmp_path, data, command,
                                                                  code):
    import fairaudit

    if command[0] == "compare":
        frame = make_synthetic(600)
        fairaudit.write_report(fairaudit.audit(frame, sensitive="sex", labels="segment",
                                               bootstrap=50, audit=["balance"]),
                               tmp_path / "base.html")
        worse = frame.with_columns(segment=(frame["sex"] == "F").cast(int))  # one group a cluster
        fairaudit.write_report(fairaudit.audit(worse, sensitive="sex", labels="segment",
                                               bootstrap=50, audit=["balance"]),
                               tmp_path / "worse.html")
    proc = _closed_stdout(*command, cwd=tmp_path)
    assert proc.returncode == code, proc.stderr
    assert "BrokenPipe" not in proc.stderr and "internal error" not in proc.stderr
    assert "Exception ignored" not in proc.stderr


@pytest.mark.parametrize("command, code", [
    (["--version"], 0),
    (["audit", "d.parquet", "-s", "sex", "--labels", "segment", "--audit", "balance",
      "--bootstrap", "0", "-o", "r.html"], 0),
])
def test_no_stdout_at_all_keeps_the_commands_own_code(tmp_path, data, command, code):
    """``fairaudit ... >&-`` (file descriptor 1 closed before start: Python's sys.stdout is
    None): the command's own exit code, no traceback (a new user's trial found exit 1 and an
    AttributeError from the final flush)."""
    proc = subprocess.run([sys.executable, "-m", "fairaudit", *command],
                          stdin=subprocess.DEVNULL, stdout=None, stderr=subprocess.PIPE,
                          text=True, cwd=tmp_path, timeout=300, preexec_fn=lambda: os.close(1),
                          env={**os.environ, "GX_ANALYTICS_ENABLED": "False"})
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr


def test_the_ledger_commands_on_a_closed_stdout(tmp_path, data):
    """``fairaudit ledger show | head -1`` and a raise or lower into a closed pipe: exit 0 and
    no internal error (a new user's trial found exit 3 here, after raise/lower had already
    changed the ledger)."""
    import json

    ledger = tmp_path / "ledger.json"
    proc = subprocess.run(
        [sys.executable, "-m", "fairaudit", "audit", str(data), "-s", "sex", "--labels",
         "segment", "--audit", "balance", "--publish", "--epsilon", "1", "--privacy-budget", "2",
         "--privacy-source", "people", "--ledger", str(ledger), "--new-ledger", "-q",
         "-o", str(tmp_path / "r.html")],
        capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    for command in (["ledger", "show"], ["ledger", "show", "--json"],
                    ["ledger", "raise", "people", "--to", "3", "--reason", "test"],
                    ["ledger", "lower", "people", "--to", "2.5"]):
        proc = _closed_stdout(*command, "--ledger", str(ledger), cwd=tmp_path)
        assert proc.returncode == 0, (command, proc.stderr)
        assert "BrokenPipe" not in proc.stderr and "internal error" not in proc.stderr
    history = json.loads(ledger.read_text())["sources"]["people"]["budget_history"]
    assert [h["to"] for h in history] == [2.0, 3.0, 2.5]


def test_commands_write_stdout_through_say():
    """Every command's stdout goes through ``cli.base.say`` (which handles a closed stdout);
    ``click.echo`` only for stderr (``err=True``), outside base.py."""
    import ast

    import fairaudit.cli as cli

    bad = []
    for path in Path(cli.__file__).parent.glob("*.py"):
        if path.name == "base.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "echo"
                    and not any(k.arg == "err" for k in node.keywords)):
                bad.append(f"{path.name}:{node.lineno}")
    assert not bad, bad


def test_format_names_the_format_of_a_file_whose_name_does_not(run_cli, tmp_path):
    """``yeast.data`` (UCI's naming) is CSV only by its content: without ``--format`` exit 2
    with the hint, with ``--format csv`` it is read as CSV (format, fingerprint and the CSV
    checks as for a ``.csv`` file)."""
    import json

    frame = make_synthetic(300)
    frame.write_csv(tmp_path / "t.data")
    (tmp_path / "t.csv").write_bytes((tmp_path / "t.data").read_bytes())
    res = run_cli("audit", "t.data", "-s", "sex", "--labels", "segment", "-q")
    assert res.exit_code == 2 and "--format csv" in res.output, res.output
    docs = []
    for name, extra in (("t.data", ["--format", "csv"]), ("t.csv", [])):
        res = run_cli("audit", name, *extra, "-s", "sex", "--labels", "segment", "--audit",
                      "balance", "--bootstrap", "0", "-q", "--json", f"{name}.json",
                      "-o", f"{name}.html")
        assert res.exit_code == 0, res.output
        docs.append(json.loads((tmp_path / f"{name}.json").read_text()))
    assert [d["input"]["format"] for d in docs] == ["csv", "csv"]
    assert docs[0]["input"]["fingerprint"] == docs[1]["input"]["fingerprint"]
    assert docs[0]["results"] == docs[1]["results"]
    (tmp_path / "bad.data").write_text('sex,segment\n"F,1\nM,2\n')
    res = run_cli("audit", "bad.data", "--format", "csv", "-s", "sex", "--labels", "segment")
    assert res.exit_code == 2 and "bad.data" in res.output, res.output
    res = run_cli("audit", "t.data", "--format", "parquet", "-s", "sex", "--labels", "segment")
    assert res.exit_code == 2 and "not a Parquet file" in res.output, res.output


# ------------------------------------------------------------------------- impossible gates
@pytest.mark.parametrize("flag", ["--fail-over wd=-1", "--fail-over wd_max=-0.5",
                                  "--fail-under balance=1.5", "--warn-over ed=2",
                                  "--fail-under fairness_cce=-0.1", "--fail-over wd_sum@ci=-1"])
def test_a_gate_outside_its_metrics_range_is_refused(run_cli, data, flag):
    option, value = flag.split(" ")
    res = run_cli("audit", str(data), "-s", "sex", "--labels", "segment", option, value, "-q")
    assert res.exit_code == 2, res.output
    assert "outside the range" in res.output and value.split("=")[0].split("@")[0] in res.output


def test_a_chain_gate_outside_the_range_fails_validate_and_run_alike(run_cli, tmp_path, data):
    (tmp_path / "c.toml").write_text('[data]\nsensitive = ["sex"]\nlabels = "segment"\n'
                                     '[[audit]]\nuse = "distribution"\n'
                                     '[[threshold]]\nmetric = "wd"\nmax = -1\n')
    for args in (["validate", "c.toml"], ["run", "c.toml", str(data), "-q"]):
        res = run_cli(*args)
        assert res.exit_code == 2 and "threshold[0].max" in res.output, res.output


# ------------------------------------------------------------- validate = run, before the data
CHAIN = ('[data]\nsensitive = ["sex"]\nlabels = "segment"\n[[audit]]\nuse = "balance"\n')
DEFECTS = {
    "compare tolerance not a table": '[compare]\nbaseline = "base.json"\ntolerance = "x"\n',
    "compare unknown key": '[compare]\nbaseline = "base.json"\ntolerans = {}\n',
    "baseline missing": '[compare]\nbaseline = "nowhere.json"\n',
    "baseline not an audit": '[compare]\nbaseline = "notes.json"\n',
    "dask without an address": '[engine]\nname = "dask"\n',
    "release of a fitted clustering": ('[[cluster]]\nuse = "kmeans"\nparams = {n_clusters = 2}\n'
                                       '[privacy]\npublish = true\n'),
    "release without intervals": '[options]\nbootstrap = 0\n[privacy]\npublish = true\n',
    "twin of an unknown clusterer": '[[cluster]]\nuse = "kmean"\n',
    "interval method without intervals": '[options]\nbootstrap = 0\nci_method = "conservative"\n',
    "interval level without intervals": '[options]\nbootstrap = 0\nci_level = 0.9\n',
    "delta of the public domain": '[privacy]\npublish = true\ndelta = 1e-6\n',
    "features and exclude": "",  # in [data], below
}


@pytest.mark.parametrize("defect", sorted(DEFECTS))
def test_validate_and_run_agree_before_the_data(run_cli, tmp_path, data, defect):
    """``fairaudit validate`` runs exactly the checks ``run`` makes before it reads data: for
    every defect both exit 2 with the same message; ``run`` never reads the input."""
    text = CHAIN + DEFECTS[defect]
    if defect == "features and exclude":
        text = CHAIN.replace('labels = "segment"\n',
                            'labels = "segment"\nfeatures = ["x1"]\nexclude = ["x1"]\n')
    (tmp_path / "c.toml").write_text(text)
    (tmp_path / "notes.json").write_text('{"kind": "notes"}')
    v = run_cli("validate", "c.toml")
    r = run_cli("run", "c.toml", "missing-data.parquet", "-q")  # no data: must fail first
    assert v.exit_code == 2 and r.exit_code == 2, (v.output, r.output)
    assert "missing-data.parquet" not in r.output
    assert v.output.strip().splitlines()[-1] == r.output.strip().splitlines()[-1]


def test_the_full_reference_chain_validates_and_runs(run_cli, tmp_path):
    """docs/chain.md's full example (issue 35 item 12: validate OK, run exit 2 twice)."""
    block = re.search(r"```toml\n(.*?)```", (ROOT / "docs" / "chain.md").read_text(),
                      re.S).group(1)
    (tmp_path / "chain.toml").write_text(block)
    make_synthetic(600).rename({"sex": "gender"}).write_parquet(tmp_path / "seg.parquet")
    assert run_cli("validate", "chain.toml").exit_code == 0
    res = run_cli("run", "chain.toml", "seg.parquet", "-q", "--out", "audit.html")
    assert res.exit_code in (0, 1), res.output
    doc = json.loads((tmp_path / "audit.json").read_text())
    assert any("no baseline yet" in n for n in doc["notes"])  # [compare] missing = "skip"
    assert run_cli("render", "audit.json", "-o", "again.html", "-q").exit_code == 0


# ------------------------------------------------------------------ silently ignored options
@pytest.mark.parametrize("args, text", [
    (["--features", "x1", "--exclude", "x1"], "listed in both --features and --exclude"),
    (["--publish", "--delta", "1e-6"], "--delta: is the delta of --dp-domain private"),
    (["--baseline-missing", "skip"], "--baseline-missing: needs --baseline"),
    (["--tolerance", "balance=0.1"], "--tolerance needs --baseline"),
    (["--bootstrap", "0", "--ci-method", "conservative"], "--ci-method: 'conservative' chooses"),
])
def test_an_option_that_would_be_ignored_is_refused(run_cli, data, args, text):
    res = run_cli("audit", str(data), "-s", "sex", "--labels", "segment", *args, "-q")
    assert res.exit_code == 2 and text in res.output, res.output


@pytest.mark.parametrize("args, text", [
    (["--k", "3"], "--k 3 has no effect: no clusterer runs"),
    (["--sample", "50"], "--sample 50 has no effect: no step reads rows"),
])
def test_an_option_with_no_effect_is_warned_and_noted(run_cli, data, args, text):
    """Options that a labels audit of counts alone cannot use: warned, and noted in the JSON."""
    res = run_cli("audit", str(data), "-s", "sex", "--labels", "segment", "--audit", "balance",
                  "--bootstrap", "0", *args, "-o", "r.html")
    assert res.exit_code in (0, 1) and text in res.output, res.output
    notes = json.loads((data.parent / "r.json").read_text())["notes"]
    assert any(text in n for n in notes), notes


def test_csv_options_on_parquet_are_warned(run_cli, data):
    res = run_cli("audit", str(data), "-s", "sex", "--labels", "segment", "--audit", "balance",
                  "--bootstrap", "0", "--separator", ";", "-o", "r.html")
    assert res.exit_code == 0 and "--separator (data.separator) has no effect" in res.output


# ------------------------------------------------------------------ the README's nightly recipe
def test_the_nightly_recipe_works_from_night_one(run_cli, tmp_path, data):
    """The README's recipe, night by night: no baseline yet (audited, not compared, a note);
    a promoted baseline (compared); a re-run of the same night writes a new file."""
    readme = (ROOT / "README.md").read_text()
    assert "--baseline-missing skip" in readme and "date -u +%F-%H%M%S" in readme
    runs = tmp_path / "audits" / "runs"
    runs.mkdir(parents=True)
    args = ["audit", str(data), "--sensitive", "sex", "--labels", "segment", "--audit",
            "balance", "--bootstrap", "20", "--baseline", "audits/baseline.json",
            "--baseline-missing", "skip", "--quiet"]
    night1 = "audits/runs/2026-11-22-020000"
    res = run_cli(*args, "--out", f"{night1}.html")
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / f"{night1}.json").read_text())
    assert "comparison" not in doc and any("no baseline yet" in n for n in doc["notes"])
    shutil.copy(tmp_path / f"{night1}.json", tmp_path / "audits" / "baseline.json")
    for name in ("2026-11-23-020000", "2026-11-23-031500"):  # a re-run that night
        res = run_cli(*args, "--out", f"audits/runs/{name}.html")
        assert res.exit_code == 0, res.output
        assert "comparison" in json.loads((runs / f"{name}.json").read_text())
    assert len(list(runs.glob("*.json"))) == 3  # nothing overwritten
    res = run_cli("history", "audits/runs/", "--json", "audits/history.json", "-q")
    assert res.exit_code == 0, res.output
    dates = [r["date"] for r in json.loads((tmp_path / "audits/history.json").read_text())["runs"]]
    assert dates == ["2026-11-22T02:00:00Z", "2026-11-23T02:00:00Z", "2026-11-23T03:15:00Z"]
    res = run_cli(*args[:-3], "--out", "audits/baseline.html")  # never over the baseline
    assert res.exit_code == 2 and "baseline" in res.output


def test_run_then_render_agree_on_the_json_name(run_cli, tmp_path, data):
    (tmp_path / "c.toml").write_text(CHAIN)
    res = run_cli("run", "c.toml", str(data), "--out", "audit.html", "-q")
    assert res.exit_code == 0 and (tmp_path / "audit.json").exists()
    assert run_cli("render", "audit.json", "-o", "audit-again.html", "-q").exit_code == 0
