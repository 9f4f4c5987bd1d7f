"""Issue 35 item 5: Ctrl-C or SIGTERM in the write phase leaves no ``.tmp`` or ``.old`` file,
and the outputs are the previous group or the new group, never a mix.

The test synchronises with the child instead of racing it: the child runs the CLI with a hook
in the writer that announces on a pipe that it reached the phase, then waits; the parent sends
the signal, then lets the child go on. Two phases: while the temporaries are written (the
signal acts at once: the temporaries are removed, the previous outputs stay), and between two
renames (the signal is held until the group is complete, then acts).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent(
    """
    import os, sys
    ready, go, phase = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    import fairaudit.report.outputs as outputs

    def announce_and_wait():
        os.write(ready, b"x")
        os.read(go, 1)  # the parent has sent the signal when this returns

    if phase == "temporaries":
        real_fill = outputs._fill
        calls = []
        def fill(fd, real, content):
            real_fill(fd, real, content)
            calls.append(real)
            if len(calls) == 1:  # one temporary written, the next not yet
                announce_and_wait()
        outputs._fill = fill
    else:
        real_replace = os.replace
        renames = []
        def replace(src, dst):
            real_replace(src, dst)
            if str(src).endswith(".tmp"):
                renames.append(dst)
                if len(renames) == 1:  # one target renamed, the others not yet
                    announce_and_wait()
        outputs.os.replace = replace
    from fairaudit.cli import main
    sys.argv = ["fairaudit", *sys.argv[4:]]
    main()
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("phase", ["temporaries", "renames"])
@pytest.mark.parametrize(("sig", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_signal_in_the_write_phase_leaves_no_stray_file(tmp_path, parquet_path, phase, sig,
                                                          code):
    out = tmp_path / "out"
    out.mkdir()
    old = {"r.html": b"old html", "r.json": b"old json", "s.md": b"old summary"}
    for name, data in old.items():
        (out / name).write_bytes(data)
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    env = {**os.environ, "GX_ANALYTICS_ENABLED": "False"}
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(ready_w), str(go_r), phase, "audit",
         str(parquet_path), "-s", "sex", "--labels", "segment", "--audit", "balance",
         "--bootstrap", "0", "-q", "-o", str(out / "r.html"), "--summary-md", str(out / "s.md")],
        pass_fds=(ready_w, go_r), stderr=subprocess.PIPE, text=True, env=env)
    os.close(ready_w)
    os.close(go_r)
    try:
        assert os.read(ready_r, 1) == b"x", proc.stderr.read() if proc.poll() else "no phase"
        proc.send_signal(getattr(signal, sig))
        os.write(go_w, b"g")
        stderr = proc.communicate(timeout=300)[1]
    finally:
        os.close(ready_r)
        os.close(go_w)
        if proc.poll() is None:  # pragma: no cover - only when an assertion failed above
            proc.kill()
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr
    assert sorted(p.name for p in out.iterdir()) == ["r.html", "r.json", "s.md"]
    now = {p.name: p.read_bytes() for p in out.iterdir()}
    if phase == "temporaries":  # the signal came before any rename: the previous group
        assert now == old
    else:  # held until the group was complete: the new group, whole
        assert all(now[n] != old[n] for n in old)
        assert now["r.json"].startswith(b"{") and b"</html>" in now["r.html"]
