"""Progress of long steps (fairaudit.core.progress): records on the ``fairaudit.progress`` logger,
shown on stderr by the handler the CLI installs — bars on a terminal, periodic plain lines in a
pipe — silenced by --quiet, never in the JSON or the report."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import make_synthetic

from fairaudit.core.progress import LOGGER_NAME, Meter, ProgressHandler, show_progress, step


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "customers.csv"
    make_synthetic(n=2000).select("sex", "race", "segment").write_csv(path)
    return path


def _cli(tmp_path: Path, data: Path, *extra: str, interval: str = "0"):
    from fairaudit.cli import main

    env = {"FAIRAUDIT_PROGRESS_INTERVAL": interval}
    out = tmp_path / "r.html"
    result = CliRunner(env=env).invoke(
        main, ["audit", str(data), "--sensitive", "sex,race", "--labels", "segment",
               "--bootstrap", "50", "--out", str(out), *extra], catch_exceptions=False)
    return result, out, out.with_suffix(".json")


def test_cli_in_a_pipe_writes_plain_progress_lines_to_stderr_only(tmp_path, data):
    result, html, js = _cli(tmp_path, data)
    assert result.exit_code in (0, 1), result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("fairaudit: progress: ")]
    assert "fairaudit: progress: read rows: 2,000 rows, done in" in "\n".join(lines)
    assert any("bootstrap balance on segment: 150/150 replicates (100%), done in" in ln
               for ln in lines)  # 50 replicates x 3 attributes
    assert any(ln.startswith("fairaudit: progress: render report") for ln in lines)
    assert "progress" not in result.stdout
    for path in (html, js):
        text = path.read_text(encoding="utf-8")
        assert "fairaudit: progress" not in text and "replicates (" not in text
    assert "progress" not in json.loads(js.read_text(encoding="utf-8"))


def test_quiet_shows_no_progress(tmp_path, data):
    result, _, js = _cli(tmp_path, data, "--quiet")
    assert result.exit_code in (0, 1)
    assert "progress" not in result.stderr
    assert result.stdout == ""
    assert js.exists()


def test_a_fast_run_prints_nothing_at_the_default_interval(tmp_path, data):
    result, _, _ = _cli(tmp_path, data, interval="10")
    assert "fairaudit: progress" not in result.stderr


def test_a_real_pipe(tmp_path, data):
    """A subprocess whose stderr is a pipe (a scheduler's log): plain lines, no bar."""
    env = {**os.environ, "FAIRAUDIT_PROGRESS_INTERVAL": "0"}
    proc = subprocess.run(
        [sys.executable, "-m", "fairaudit", "audit", str(data), "--sensitive", "sex",
         "--labels", "segment", "--bootstrap", "20", "--out", str(tmp_path / "p.html")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    assert "fairaudit: progress: read rows: 2,000 rows, done in" in proc.stderr
    assert "\r" not in proc.stderr  # no bar redraws in a log


def test_meter_throttles_to_about_one_record_per_second_plus_the_closing_one():
    keep: list[dict] = []

    class Keep(logging.Handler):
        def emit(self, record):
            keep.append(dict(record.progress))

    with show_progress(stream=io.StringIO(), interval=0.0):
        logger = logging.getLogger(LOGGER_NAME)
        logger.addHandler(Keep())
        with Meter("assign rows", 10_000, "rows") as meter:
            for i in range(10_000):
                meter.update(i + 1)
    assert keep[0] == {"task": "assign rows", "done": 0, "total": 10_000, "unit": "rows"}
    assert keep[-1] == {"task": "assign rows", "done": 10_000, "total": 10_000, "unit": "rows",
                        "closed": True}
    assert len(keep) <= 4  # start, at most a couple of throttled updates, the close


def test_plain_lines_every_interval_and_a_closing_line_only_for_reported_tasks(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr("fairaudit.core.progress.time.monotonic", lambda: clock[0])
    stream = io.StringIO()
    with show_progress(stream=stream, interval=10.0):
        with Meter("quick", 5, "items", every=0.0) as m:  # done within the interval: silent
            m.update(5)
        slow = Meter("fit sweeps", 100, "sweeps", every=0.0)
        for done, t in ((10, 105.0), (20, 111.0), (30, 115.0), (50, 122.0)):
            clock[0] = t
            slow.update(done)
        clock[0] = 125.0
        slow.close()
    lines = stream.getvalue().splitlines()
    assert lines == [
        "fairaudit: progress: fit sweeps: 20/100 sweeps (20%), 11.0 s elapsed",
        "fairaudit: progress: fit sweeps: 50/100 sweeps (50%), 22.0 s elapsed",
        "fairaudit: progress: fit sweeps: 100/100 sweeps (100%), done in 25.0 s",
    ]


def test_bars_on_a_terminal():
    stream = io.StringIO()
    handler = ProgressHandler(stream, interval=0.0, bars=True, delay=0.0)
    logger = logging.getLogger(LOGGER_NAME)
    saved = (logger.handlers[:], logger.propagate, logger.level)
    logger.handlers, logger.propagate = [handler], False
    logger.setLevel(logging.INFO)
    try:
        with Meter("assign rows", 1000, "rows", every=0.0) as m:
            m.update(400)
        with step("clusterer kmeans"):
            pass
    finally:
        logger.handlers, logger.propagate = saved[0], saved[1]
        logger.setLevel(saved[2])
        handler.close()
    out = stream.getvalue()
    assert "assign rows" in out and "\r" in out  # tqdm redraws the line
    assert "clusterer kmeans" in out


def test_show_progress_restores_the_logger_and_quiet_silences_it(caplog):
    logger = logging.getLogger(LOGGER_NAME)
    before = (logger.level, logger.propagate, list(logger.handlers))
    with show_progress(enabled=False):
        with caplog.at_level(logging.INFO, logger=LOGGER_NAME):
            Meter("x", 1, "rows").close()
    assert [r for r in caplog.records if r.name == LOGGER_NAME] == []
    assert (logger.level, logger.propagate, list(logger.handlers)) == before


def test_api_progress_flag(tmp_path, data, capsys, monkeypatch):
    import fairaudit
    from fairaudit.errors import ConfigError

    monkeypatch.setenv("FAIRAUDIT_PROGRESS_INTERVAL", "0")
    run = fairaudit.audit(str(data), sensitive="sex", labels="segment", bootstrap=10,
                          progress=True)
    err = capsys.readouterr().err
    assert "fairaudit: progress: read rows: 2,000 rows" in err
    assert "fairaudit: progress" not in json.dumps(run.doc)
    assert "replicates (" not in json.dumps(run.doc)
    fairaudit.audit(str(data), sensitive="sex", labels="segment", bootstrap=10)
    assert "fairaudit: progress" not in capsys.readouterr().err
    with pytest.raises(ConfigError, match="progress"):
        fairaudit.audit(str(data), sensitive="sex", labels="segment", progress="yes")
