"""Outputs never touch the input, and the HTML + JSON pair is written as a unit.

Every refusal happens before any computation (exit 2, both paths named) and leaves the input
byte-identical.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest

from fairaudit.errors import ConfigError
from fairaudit.report.outputs import InputRef, check_outputs, write_outputs


def _stub_html(monkeypatch) -> None:
    import fairaudit.report.render

    monkeypatch.setattr(fairaudit.report.render, "render_html",
                        lambda run, host=None, *, template_dirs=(): "<html>stub</html>\n")


@pytest.fixture
def dataset(tmp_path, synthetic):
    """A single file, a partitioned folder and a glob of the same table."""
    single = tmp_path / "data.parquet"
    synthetic.write_parquet(single)
    folder = tmp_path / "parts"
    folder.mkdir()
    for i, part in enumerate(synthetic.iter_slices(700)):
        part.write_parquet(folder / f"part-{i}.parquet")
    link = tmp_path / "link.parquet"
    os.symlink(single, link)
    return {"single": single, "folder": folder, "link": link, "tmp": tmp_path}


def _snapshot(paths):
    return {p: p.read_bytes() for p in paths}


CASES = [
    # (data, --out, --json, text that must be in the message)
    ("single", "{single}", None, "is the input file"),
    ("single", "{tmp}/r.html", "{single}", "is the input file"),
    ("single", "{link}", None, "is the input file"),             # symlink to the input
    ("link", "{single}", None, "is the input file"),             # input given through a symlink
    ("folder", "{folder}/report.html", None, "inside the input folder"),
    ("folder", "{tmp}/r.html", "{folder}/part-0.parquet", "inside the input folder"),
    ("glob", "{tmp}/r.html", "{folder}/part-1.parquet", "input pattern"),
    ("glob", "{folder}/new.parquet", None, "input pattern"),     # a file the glob would read
    ("single", "{tmp}/same.html", "{tmp}/same.html", "are the same file"),
    ("single", "{tmp}/nowhere/r.html", None, "does not exist"),
]


@pytest.mark.parametrize(("data", "out", "js", "text"), CASES)
def test_audit_refuses_outputs_that_touch_the_input(run_cli, dataset, data, out, js, text,
                                                    monkeypatch):
    _stub_html(monkeypatch)
    fmt = {k: str(v) for k, v in dataset.items()}
    spec = str(dataset["folder"] / "*.parquet") if data == "glob" else fmt[data]
    before = _snapshot([dataset["single"], *sorted(dataset["folder"].iterdir())])
    args = ["audit", spec, "--sensitive", "sex", "--labels", "segment", "--out", out.format(**fmt)]
    if js:
        args += ["--json", js.format(**fmt)]
    result = run_cli(*args)
    assert result.exit_code == 2, result.output
    assert text in result.stderr
    assert result.stderr.count("\n") == 1  # one line
    # the output is named, and the input unless the message is about a folder or two outputs
    assert (js or out).format(**fmt) in result.stderr
    if "input" in text:
        assert spec in result.stderr
    after = _snapshot([dataset["single"], *sorted(dataset["folder"].iterdir())])
    assert after == before
    assert not (dataset["tmp"] / "r.html").exists()


def test_run_refuses_to_overwrite_the_chain_or_the_chain_data(run_cli, dataset, monkeypatch):
    _stub_html(monkeypatch)
    chain = dataset["tmp"] / "chain.toml"
    chain.write_text(
        f'[data]\npath = "{dataset["single"]}"\nsensitive = ["sex"]\nlabels = "segment"\n'
        '[[audit]]\nuse = "balance"\n'
    )
    result = run_cli("run", str(chain), "--out", str(dataset["single"]))
    assert result.exit_code == 2 and "is the input file" in result.stderr
    result = run_cli("run", str(chain), "--out", str(dataset["tmp"] / "r.html"),
                     "--json", str(chain))
    assert result.exit_code == 2 and "chain" in result.stderr
    assert chain.read_text().startswith("[data]")


def test_render_refuses_to_overwrite_its_json(run_cli, tmp_path):
    sample = Path(__file__).parent / "data" / "sample_audit.json"
    target = tmp_path / "a.json"
    target.write_bytes(sample.read_bytes())
    before = target.read_bytes()
    result = run_cli("render", str(target), "-o", str(target))
    assert result.exit_code == 2
    assert "AUDIT.json" in result.stderr and str(target) in result.stderr
    assert target.read_bytes() == before
    link = tmp_path / "b.html"
    os.symlink(target, link)
    result = run_cli("render", str(target), "-o", str(link))
    assert result.exit_code == 2 and target.read_bytes() == before


def test_write_report_refuses_the_run_input(tmp_path, dataset, host):
    import fairaudit

    run = fairaudit.audit(str(dataset["single"]), sensitive="sex", labels="segment",
                          bootstrap=0)
    before = dataset["single"].read_bytes()
    with pytest.raises(ConfigError, match="is the input file"):
        fairaudit.write_report(run, dataset["single"])
    with pytest.raises(ConfigError, match="is the input file"):
        fairaudit.write_report(run, tmp_path / "ok.html", dataset["single"])
    with pytest.raises(ConfigError, match="same file"):
        fairaudit.write_report(run, tmp_path / "x.html", tmp_path / "x.html")
    assert dataset["single"].read_bytes() == before
    html, js = fairaudit.write_report(run, tmp_path / "ok.html")
    assert html.exists() and json.loads(js.read_text())["input"]["rows"] == 2000


def test_in_memory_input_has_nothing_to_protect(tmp_path):
    assert check_outputs({"--out": tmp_path / "a.html"}, []) == {"--out": tmp_path / "a.html"}


def test_unwritable_folder_is_found_before_computing(run_cli, dataset, monkeypatch):
    import fairaudit.core.runner

    def boom(*a, **k):  # pragma: no cover - must never be reached
        raise AssertionError("computed before checking the output folder")

    monkeypatch.setattr(fairaudit.core.runner, "run_chain", boom)
    # /proc refuses new files even for root
    result = run_cli("audit", str(dataset["single"]), "--sensitive", "sex", "--labels",
                     "segment", "--out", "/proc/fairaudit-report.html")
    assert result.exit_code == 2
    assert "cannot write in the folder /proc" in result.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into read-only folders")
def test_read_only_folder_is_refused(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(ConfigError, match="cannot write in the folder"):
            check_outputs({"--out": ro / "r.html"})
    finally:
        ro.chmod(0o700)


def test_pair_is_written_both_or_neither(tmp_path, monkeypatch):
    js, html = tmp_path / "r.json", tmp_path / "r.html"
    write_outputs([(js, "old json"), (html, "old html")])
    real_replace = os.replace
    calls = []

    def flaky(src, dst):
        calls.append(dst)
        if Path(dst) == html and str(src).endswith(".tmp"):
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", flaky)
    with pytest.raises(ConfigError, match="r.html: cannot be written"):
        write_outputs([(js, "new json"), (html, "new html")])
    monkeypatch.undo()
    assert js.read_text() == "old json" and html.read_text() == "old html"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html", "r.json"]  # no leftovers


def test_failed_second_write_of_a_new_pair_leaves_nothing(tmp_path, monkeypatch):
    js, html = tmp_path / "r.json", tmp_path / "r.html"
    real_replace = os.replace

    def flaky(src, dst):
        if Path(dst) == html:
            raise OSError(5, "I/O error")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", flaky)
    with pytest.raises(ConfigError):
        write_outputs([(js, "j"), (html, "h")])
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []


def test_cli_html_failure_keeps_the_old_pair(run_cli, dataset, monkeypatch):
    """A render that fails leaves the previous report and JSON untouched (none is written)."""
    import fairaudit.report.render

    out = dataset["tmp"] / "out"
    out.mkdir()
    (out / "r.html").write_text("old html")
    (out / "r.json").write_text("old json")

    def broken(run, host=None, *, template_dirs=()):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fairaudit.report.render, "render_html", broken)
    result = run_cli("audit", str(dataset["single"]), "--sensitive", "sex", "--labels",
                     "segment", "--bootstrap", "0", "--out", str(out / "r.html"))
    assert result.exit_code != 0
    assert (out / "r.html").read_text() == "old html"
    assert (out / "r.json").read_text() == "old json"


def test_check_outputs_names_the_option_and_both_paths(tmp_path):
    f = tmp_path / "in.csv"
    pl.DataFrame({"a": [1]}).write_csv(f)
    with pytest.raises(ConfigError) as err:
        check_outputs({"--json": f}, [InputRef("DATA", str(f))])
    msg = str(err.value)
    assert msg.startswith(f"--json {f}:") and f"DATA {f}" in msg
