"""A late Ctrl-C or SIGTERM ends the run with 130 / 143 and leaves no file behind (the signal is
delivered while the report is being rendered, after every computation).

The test does not race the clock: the child announces on a pipe that it has reached the phase
under test (rendering the report) and waits there; only then does the test send the signal, as
a scheduler or a user would. On an idle and on a loaded machine the signal arrives in the same
phase (``signal_when_ready`` in ``tests/conftest.py``)."""

from __future__ import annotations

import os
import sys

import pytest
from conftest import signal_when_ready

PATCH = """
import fairaudit.report.render as report
real = report.render_html
def at_render(*args, **kwargs):
    ready()  # announce the phase, then wait here for the signal
    return real(*args, **kwargs)
report.render_html = at_render
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize(("sig", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_late_signal_exits_non_zero_without_stray_files(tmp_path, parquet_path, sig, code):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    proc = signal_when_ready(
        PATCH, sig,
        ["audit", str(parquet_path), "-s", "sex", "--labels", "segment", "--audit", "balance",
         "--bootstrap", "0", "-o", str(out_dir / "r.html")],
        env={**os.environ, "GX_ANALYTICS_ENABLED": "False"},
    )
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    assert list(out_dir.iterdir()) == []
