"""A late Ctrl-C or SIGTERM ends the run with 130 / 143 and leaves no file behind (the signal is
delivered while the report is being rendered, after every computation)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    import fairaudit.report.render as report
    real = report.render_html
    SIG = getattr(signal, sys.argv[1])
    def late(*args, **kwargs):
        os.kill(os.getpid(), SIG)
        return real(*args, **kwargs)
    report.render_html = late
    from fairaudit.cli import main
    sys.argv = ["fairaudit", *sys.argv[2:]]
    main()
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize(("sig", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_late_signal_exits_non_zero_without_stray_files(tmp_path, parquet_path, sig, code):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    env = {**os.environ, "GX_ANALYTICS_ENABLED": "False"}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, sig, "audit", str(parquet_path), "-s", "sex",
         "--labels", "segment", "--audit", "balance", "--bootstrap", "0",
         "-o", str(out_dir / "r.html")],
        capture_output=True, text=True, timeout=300, env=env,
    )
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    assert list(out_dir.iterdir()) == []
