"""Progress of long steps (fairaudit.core.progress): records on the ``fairaudit.progress`` logger,
shown on stderr by the handler the CLI installs — bars on a terminal, periodic plain lines in a
pipe — silenced by --quiet, never in the JSON or the report."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import make_synthetic

from fairaudit.core.progress import LOGGER_NAME, Meter, ProgressHandler, show_progress, step

_STAMP = re.compile(r"^(fairaudit: progress: )\[\d\d:\d\d:\d\d\] ", re.M)


def _plain(text: str) -> str:
    """The progress output without its time stamps (checked once, in the pipe test)."""
    return _STAMP.sub(r"\1", text)


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
    assert re.search(r"^fairaudit: progress: \[\d\d:\d\d:\d\d\] read rows: ", result.stderr, re.M)
    lines = [ln for ln in _plain(result.stderr).splitlines()
             if ln.startswith("fairaudit: progress: ")]
    assert "fairaudit: progress: read rows: 2,000 rows, done in" in "\n".join(lines)
    assert any("bootstrap balance on segment: 150 of 150 replicates (100%), done in" in ln
               for ln in lines)  # 50 replicates x 3 attributes
    assert any(ln.startswith("fairaudit: progress: render report") for ln in lines)
    assert any(ln.startswith("fairaudit: progress: explain: ") and "headline result(s), done in"
               in ln for ln in lines)
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
    assert "fairaudit: progress: read rows: 2,000 rows, done in" in _plain(proc.stderr)
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
    with show_progress(stream=stream, interval=10.0, heartbeat=False):
        with Meter("quick", 5, "items", every=0.0) as m:  # done within the interval: silent
            m.update(5)
        slow = Meter("fit sweeps", 100, "sweeps", every=0.0)
        for done, t in ((10, 105.0), (20, 111.0), (30, 115.0), (50, 122.0)):
            clock[0] = t
            slow.update(done)
        clock[0] = 125.0
        slow.close()
    lines = _plain(stream.getvalue()).splitlines()
    assert lines == [
        "fairaudit: progress: fit sweeps: 20 of 100 sweeps (20%), 11.0 s elapsed",
        "fairaudit: progress: fit sweeps: 50 of 100 sweeps (50%), 22.0 s elapsed",
        "fairaudit: progress: fit sweeps: 100 of 100 sweeps (100%), done in 25.0 s",
    ]


@contextlib.contextmanager
def _bars(stream, interval: float = 0.0):
    """A terminal's display (bars) on ``stream`` for the block, the logger restored after."""
    handler = ProgressHandler(stream, interval=interval, bars=True, delay=0.0)
    logger = logging.getLogger(LOGGER_NAME)
    saved = (logger.handlers[:], logger.propagate, logger.level)
    logger.handlers, logger.propagate = [handler], False
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.handlers, logger.propagate = saved[0], saved[1]
        logger.setLevel(saved[2])
        handler.close()


def test_bars_on_a_terminal():
    stream = io.StringIO()
    with _bars(stream):
        with Meter("assign rows", 1000, "rows", every=0.0) as m:
            m.update(400)
        with step("clusterer kmeans"):
            pass
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
    assert "fairaudit: progress: read rows: 2,000 rows" in _plain(err)
    assert "fairaudit: progress" not in json.dumps(run.doc)
    assert "replicates (" not in json.dumps(run.doc)
    fairaudit.audit(str(data), sensitive="sex", labels="segment", bootstrap=10)
    assert "fairaudit: progress" not in capsys.readouterr().err
    with pytest.raises(ConfigError, match="progress"):
        fairaudit.audit(str(data), sensitive="sex", labels="segment", progress="yes")


# ------------------------------------------------------------------ the heartbeat (issue 25)
def _progress_lines(text: str) -> list[str]:
    return [ln for ln in _plain(text).splitlines() if ln.startswith("fairaudit: progress: ")]


def _until(predicate, what: str, timeout: float = 120.0) -> None:
    """Wait until ``predicate()`` holds (polling; a generous deadline, so a loaded machine only
    makes the test slower, never wrong)."""
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def _slow_balance(monkeypatch, beats: int) -> list[str]:
    """The balance auditor's plugin made slow: a step that reports no counts of its own. Its
    first call waits until the display has written ``beats`` heartbeat lines for it (when a
    display is installed: with --quiet it returns at once) — synchronised, not slept. Returns
    the heartbeat lines seen."""
    import threading

    from fairaudit_builtins.auditors import BalanceAuditor

    compute = BalanceAuditor.compute
    write = ProgressHandler._write
    seen: list[str] = []
    enough = threading.Event()

    def counting(self, text):
        write(self, text)
        if text.startswith("auditor balance on segment, ") and text.endswith(" elapsed"):
            seen.append(text)
            if len(seen) >= beats:
                enough.set()

    def slow(self, table):
        shown = any(isinstance(h, ProgressHandler) for h in logging.getLogger(LOGGER_NAME).handlers)
        if shown and not enough.is_set():
            assert enough.wait(120), f"no {beats} heartbeat lines in 120 s: {seen}"
        return compute(self, table)

    monkeypatch.setattr(ProgressHandler, "_write", counting)
    monkeypatch.setattr(BalanceAuditor, "compute", slow)
    return seen


def test_a_silent_slow_step_gets_heartbeat_lines_in_a_pipe(tmp_path, data, monkeypatch):
    _slow_balance(monkeypatch, 3)
    result, _, js = _cli(tmp_path, data, "--bootstrap", "0", interval="0.3")
    assert result.exit_code in (0, 1), result.output
    beats = [ln for ln in _progress_lines(result.stderr)
             if ln.startswith("fairaudit: progress: auditor balance on segment, ")
             and ln.endswith(" elapsed")]
    assert len(beats) >= 3, result.stderr  # the step waited for three beats
    assert any(ln.startswith("fairaudit: progress: auditor balance on segment, done in ")
               for ln in _progress_lines(result.stderr)), result.stderr
    assert "\r" not in result.stderr
    assert "progress" not in js.read_text(encoding="utf-8")


def test_heartbeat_lines_carry_the_latest_counts_of_the_tasks_inside_the_step():

    stream = io.StringIO()
    with show_progress(stream=stream, interval=0.2):
        with step("clusterer slow"):
            meter = Meter("slow sweeps", 100, "sweeps", every=0.0)
            meter.update(30)
            _until(lambda: " elapsed" in stream.getvalue(), "a heartbeat line")
            meter.close()
    lines = _progress_lines(stream.getvalue())
    beats = [ln for ln in lines if ln.startswith("fairaudit: progress: clusterer slow, ")
             and ln.endswith(" elapsed")]
    assert beats, lines
    assert "; slow sweeps: 30 of 100 sweeps (30%), " in beats[-1]
    assert lines[-1].startswith("fairaudit: progress: clusterer slow, done in ")


def _progress_threads():
    import threading

    return [t for t in threading.enumerate() if t.name == "fairaudit-progress"]


def test_the_heartbeat_thread_stops_on_an_error_and_on_keyboard_interrupt():
    import time

    for exc in (RuntimeError("boom"), KeyboardInterrupt()):
        stream = io.StringIO()
        with pytest.raises(type(exc)):
            with show_progress(stream=stream, interval=0.1):
                with step("clusterer doomed"):
                    _until(lambda s=stream: " elapsed" in s.getvalue(), "a heartbeat line")
                    assert _progress_threads()
                    raise exc
        assert _progress_threads() == []
        lines = _progress_lines(stream.getvalue())
        assert lines[-1].startswith("fairaudit: progress: clusterer doomed: stopped after ")
        assert not any("done in" in ln for ln in lines)
        mark = len(stream.getvalue())
        time.sleep(0.3)
        assert len(stream.getvalue()) == mark  # nothing written after the block


def test_a_cli_run_that_fails_or_is_interrupted_leaves_no_progress_thread(tmp_path, data,
                                                                            monkeypatch):
    from fairaudit_builtins.auditors import BalanceAuditor

    def interrupted(self, table):
        raise KeyboardInterrupt

    monkeypatch.setattr(BalanceAuditor, "compute", interrupted)
    from fairaudit.cli import main

    out = tmp_path / "r.html"
    result = CliRunner(env={"FAIRAUDIT_PROGRESS_INTERVAL": "0.1"}).invoke(
        main, ["audit", str(data), "--sensitive", "sex", "--labels", "segment",
               "--out", str(out)])
    assert result.exit_code != 0
    assert _progress_threads() == []
    assert not out.exists() and not out.with_suffix(".json").exists()


def test_json_is_byte_identical_with_and_without_progress(tmp_path, data, monkeypatch):
    _slow_balance(monkeypatch, 2)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    loud, _, js_loud = _cli(tmp_path / "a", data, interval="0.1")
    quiet, _, js_quiet = _cli(tmp_path / "b", data, "--quiet", interval="0.1")
    assert _progress_lines(loud.stderr) and not _progress_lines(quiet.stderr)
    assert js_loud.read_bytes() == js_quiet.read_bytes()
    html = [p.with_suffix(".html").read_text(encoding="utf-8") for p in (js_loud, js_quiet)]
    assert "fairaudit: progress" not in html[0]


def test_a_bad_interval_falls_back_to_the_default(monkeypatch):
    monkeypatch.setenv("FAIRAUDIT_PROGRESS_INTERVAL", "soon")
    assert ProgressHandler(io.StringIO()).interval == 10.0


def test_rows_read_of_a_parquet_input_and_rows_assigned_with_their_totals(tmp_path,
                                                                         monkeypatch):
    """Counts where they were missing: rows read (Parquet: slice by slice, the total from the
    metadata) and rows assigned 'N of M' when clusterers were fitted on a sample."""
    import fairaudit.core.engines as engines

    monkeypatch.setattr(engines, "SLICE_ROWS", 700)
    path = tmp_path / "people.parquet"
    make_synthetic(n=2000).write_parquet(path, row_group_size=250)
    from fairaudit.cli import main

    out = tmp_path / "r.html"
    result = CliRunner(env={"FAIRAUDIT_PROGRESS_INTERVAL": "0"}).invoke(
        main, ["audit", str(path), "--sensitive", "sex", "--cluster", "kmeans:n_clusters=3",
               "--sample", "500", "--bootstrap", "0", "--out", str(out)],
        catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    lines = "\n".join(_progress_lines(result.stderr))
    assert "read rows: 2,000 of 2,000 rows (100%), done in" in lines
    assert "assign rows: 2,000 of 2,000 rows (100%), done in" in lines
    doc = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    assert doc["input"]["rows"] == 2000


def test_on_a_terminal_the_heartbeat_keeps_a_silent_steps_clock_ticking():

    stream = io.StringIO()
    def frames_now() -> int:
        return sum("clusterer sleepy" in f for f in stream.getvalue().split("\r"))

    with _bars(stream, interval=0.1):
        with step("clusterer sleepy"):
            _until(lambda: frames_now() >= 3 and "00:00" in stream.getvalue(), "3 redraws")
    frames = [f for f in stream.getvalue().split("\r") if "clusterer sleepy" in f]
    assert len(frames) >= 3, stream.getvalue()  # redrawn by the heartbeat, not by records
    assert any("00:00" in f for f in frames)  # the step's elapsed clock
    assert _progress_threads() == []


def test_an_open_ended_count_with_nothing_counted_yet_shows_no_zero(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr("fairaudit.core.progress.time.monotonic", lambda: clock[0])
    stream = io.StringIO()
    with show_progress(stream=stream, interval=5.0, heartbeat=False):
        meter = Meter("read rows", None, "rows", every=0.0)
        clock[0] = 6.0
        meter.update(0)
        clock[0] = 12.0
        meter.close(7_214)
    assert _progress_lines(stream.getvalue()) == [
        "fairaudit: progress: read rows, 6.0 s elapsed",
        "fairaudit: progress: read rows: 7,214 rows, done in 12.0 s"]
