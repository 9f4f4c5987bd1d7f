"""Issue 35, output paths: one writer (``fairaudit/report/outputs.py``) for every output.

Families, each table-driven over every command that writes:

* a target that is not a regular file (a character device made with ``mknod``, a FIFO, a
  folder, a socket, a symlink to one of them, ``''``, a path ending in ``/``) is refused with
  exit 2 before any work, and is left as it was;
* a full disk (``OSError(ENOSPC)`` from the write of any one file of the group) is exit 2 with
  the reason, and every previous output is kept, no temporary left;
* a symlink to a regular file is followed: the file gets the new content, the link stays;
* the group is all or nothing at the unit level (text, bytes and writer functions alike).
"""

from __future__ import annotations

import errno
import json
import os
import socket
import stat
from pathlib import Path

import pytest
from conftest import make_synthetic

from fairaudit.errors import OutputError
from fairaudit.report import outputs


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    """A small labels audit (its JSON and HTML) to feed render/compare/history/export."""
    import fairaudit

    folder = tmp_path_factory.mktemp("docs")
    data = folder / "d.parquet"
    make_synthetic(600).write_parquet(data)
    run = fairaudit.audit(str(data), sensitive=["sex"], labels="segment", bootstrap=20,
                          audit=["balance"])
    fairaudit.write_report(run, folder / "a.html")
    return {"data": data, "json": folder / "a.json"}


def _special(kind: str, path: Path) -> None:
    if kind == "device":
        try:
            os.mknod(path, stat.S_IFCHR | 0o644, os.makedev(1, 3))  # what /dev/null is
        except PermissionError:
            pytest.skip("creating a device node needs root")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.bind(str(path))
        except OSError:
            pytest.skip("no unix sockets here")
        finally:
            s.close()
    elif kind == "link-to-fifo":
        os.mkfifo(path.with_name("real-fifo"))
        os.symlink(path.with_name("real-fifo"), path)


def _kind(path: Path) -> str:
    mode = os.lstat(path).st_mode
    return ("device" if stat.S_ISCHR(mode) else "fifo" if stat.S_ISFIFO(mode) else "folder"
            if stat.S_ISDIR(mode) else "socket" if stat.S_ISSOCK(mode) else "link"
            if stat.S_ISLNK(mode) else "file")


def _commands(docs, target: str) -> dict[str, list[str]]:
    """Every command and option that writes, with ``target`` as that output."""
    data, js = str(docs["data"]), str(docs["json"])
    audit = ["audit", data, "-s", "sex", "--labels", "segment", "--audit", "balance",
             "--bootstrap", "0", "-q"]
    return {
        "audit --out": [*audit, "--out", target, "--json", "ok.json"],
        "audit --json": [*audit, "--out", "ok.html", "--json", target],
        "audit --summary-md": [*audit, "--out", "ok.html", "--summary-md", target],
        "render -o": ["render", js, "-o", target, "-q"],
        "compare --out": ["compare", js, js, "--out", target, "-q"],
        "compare --json": ["compare", js, js, "--json", target, "-q"],
        "history --csv": ["history", js, "--csv", target, "-q"],
        "export --csv": ["export", js, "--csv", target, "-q"],
    }


COMMANDS = ["audit --out", "audit --json", "audit --summary-md", "render -o", "compare --out",
            "compare --json", "history --csv", "export --csv"]


@pytest.mark.parametrize("kind", ["device", "fifo", "folder", "socket", "link-to-fifo"])
def test_a_target_that_is_not_a_regular_file_is_refused_everywhere(run_cli, tmp_path, docs,
                                                                   kind):
    target = tmp_path / "target"
    _special(kind, target)
    before = _kind(target)
    for name, args in _commands(docs, str(target)).items():
        res = run_cli(*args)
        assert res.exit_code == 2, (name, res.output)
        assert "target" in res.output and any(  # click's own check names a folder first
            t in res.output for t in ("not a regular file", "is a directory")), (name, res.output)
        assert _kind(target) == before, name  # never replaced by a regular file
    assert not list(tmp_path.glob(".*.tmp")) and not list(tmp_path.glob("ok.*"))


@pytest.mark.parametrize("value, text", [("", "expected a file path"),
                                         ("nowhere/", "names a folder"),
                                         ("-", "standard output is not an output")])
def test_an_empty_or_folder_path_is_refused_everywhere(run_cli, tmp_path, docs, value, text):
    for name, args in _commands(docs, value).items():
        res = run_cli(*args)
        assert res.exit_code == 2, (name, res.output)
        assert text in res.output, (name, res.output)
        assert "internal error" not in res.output


@pytest.mark.parametrize("command, alias", [("audit --summary-md", "/dev/stdout"),
                                            ("export --csv", "/proc/self/fd/1"),
                                            ("render -o", "/dev/fd/1")])
@pytest.mark.parametrize("stdout", ["pipe", "appended file"])
def test_a_descriptor_path_is_refused_and_its_file_kept(tmp_path, docs, command, alias, stdout):
    """``--json /dev/stdout >> log`` (or ``| jq``): a descriptor the shell opened is not a file
    fairaudit can replace whole (a rename would cut the log from the redirection, and its earlier
    lines would be gone); refused before any work, exit 2, the log as it was."""
    import subprocess
    import sys

    args = _commands(docs, alias)[command]
    log = tmp_path / "log.txt"
    log.write_text("earlier line\n")
    with open(log, "a") as fh:
        out = subprocess.PIPE if stdout == "pipe" else fh
        proc = subprocess.run([sys.executable, "-m", "fairaudit", *args], cwd=tmp_path,
                              stdout=out, stderr=subprocess.PIPE, text=True, timeout=300,
                              env={**os.environ, "GX_ANALYTICS_ENABLED": "False"})
    assert proc.returncode == 2, proc.stderr
    assert "names a descriptor this process inherited" in proc.stderr, proc.stderr
    assert log.read_text() == "earlier line\n"


@pytest.mark.parametrize("command", COMMANDS)
def test_a_full_disk_is_exit_2_and_keeps_every_previous_output(run_cli, tmp_path, docs,
                                                               monkeypatch, command):
    """ENOSPC while writing any file of the group (no tmpfs needed: the write raises)."""
    args = _commands(docs, "out.x")[command]
    res = run_cli(*args)  # a first, successful run: the previous outputs
    assert res.exit_code in (0, 1), res.output
    written = {p: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    real = outputs._fill
    calls = []

    def full(fd, real_path, content):
        calls.append(real_path)
        if len(calls) == len([a for a in args if a in ("--out", "--json", "-o", "--csv",
                                                       "--summary-md")]):
            os.close(fd)
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, real_path, content)

    monkeypatch.setattr(outputs, "_fill", full)
    res = run_cli(*args)
    assert res.exit_code == 2, res.output
    assert "No space left on device" in res.output and "internal error" not in res.output
    assert {p: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == written
    assert not [p for p in tmp_path.iterdir() if p.name.endswith((".tmp", ".old"))]


def test_a_full_disk_while_writing_the_ledger_is_exit_2(tmp_path, monkeypatch):
    from fairaudit.privacy.ledger import open_ledger

    ledger = tmp_path / "ledger.json"

    def full(fd, real_path, content):
        os.close(fd)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(outputs, "_fill", full)
    with pytest.raises(OutputError, match="No space left"), \
            open_ledger(ledger, create=True) as led:
        led.set_budget("src", 1.0, how="the test's first release")
        led.write()
    assert not ledger.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["ledger.json.lock"]


@pytest.mark.parametrize("which", ["ledger", "ledger.lock"])
@pytest.mark.parametrize("kind", ["device", "fifo", "folder"])
def test_the_ledger_is_never_a_special_file(tmp_path, kind, which):
    """Neither the ledger nor its lock file (a FIFO there blocked the lock's open forever)."""
    from fairaudit.errors import ConfigError
    from fairaudit.privacy.ledger import open_ledger

    _special(kind, tmp_path / which)
    # the ledger's path is refused while resolving it (ConfigError), its lock by the writer's
    # check (OutputError): both exit 2, naming the file
    with pytest.raises((ConfigError, OutputError), match=rf"{which}:? .*not a regular file"), \
            open_ledger(tmp_path / "ledger", create=True):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == [which]


def test_a_symlink_to_a_file_is_followed(run_cli, tmp_path, docs):
    real = tmp_path / "real.html"
    real.write_text("old")
    (tmp_path / "link.html").symlink_to(real)
    res = run_cli("render", str(docs["json"]), "-o", "link.html", "-q")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "link.html").is_symlink() and "<html" in real.read_text()


@pytest.mark.parametrize("fail_at", [0, 1, 2])
def test_a_group_is_all_or_nothing_for_text_bytes_and_writers(tmp_path, monkeypatch, fail_at):
    paths = [tmp_path / "a.html", tmp_path / "b.json", tmp_path / "c.parquet"]
    for p in paths:
        p.write_bytes(b"old " + p.name.encode())
    new = ["new html", b"new json", lambda fh: fh.write(b"new parquet")]
    real_replace = os.replace
    seen = []

    def flaky(src, dst):
        if str(src).endswith(".tmp"):
            seen.append(dst)
            if len(seen) == fail_at + 1:
                raise OSError(errno.EIO, "Input/output error")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", flaky)
    with pytest.raises(OutputError, match="Input/output error"):
        outputs.write_outputs(list(zip(paths, new, strict=True)))
    monkeypatch.undo()
    assert [p.read_bytes() for p in paths] == [b"old " + p.name.encode() for p in paths]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths)
    outputs.write_outputs(list(zip(paths, new, strict=True)))
    assert [p.read_bytes() for p in paths] == [b"new html", b"new json", b"new parquet"]


def test_a_summary_md_failure_leaves_the_pair_untouched(run_cli, tmp_path, docs, monkeypatch):
    """Issue 35 item 4: with --summary-md, the HTML/JSON pair had already been written."""
    args = ["audit", str(docs["data"]), "-s", "sex", "--labels", "segment", "--audit",
            "balance", "--bootstrap", "0", "-q", "--out", "r.html", "--summary-md", "s.md"]
    assert run_cli(*args).exit_code == 0
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    real = outputs._fill

    def full_on_summary(fd, real_path, content):
        if real_path.endswith("s.md"):
            os.close(fd)
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, real_path, content)

    monkeypatch.setattr(outputs, "_fill", full_on_summary)
    res = run_cli(*args)
    assert res.exit_code == 2 and "s.md: cannot be written" in res.output
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before


def test_json_of_a_refused_run_is_not_written(run_cli, tmp_path, docs):
    """--out at a FIFO: not even the JSON beside it is written (the check comes first)."""
    os.mkfifo(tmp_path / "r.html")
    res = run_cli("audit", str(docs["data"]), "-s", "sex", "--labels", "segment", "--audit",
                  "balance", "--bootstrap", "0", "-q", "--out", "r.html")
    assert res.exit_code == 2 and not (tmp_path / "r.json").exists()
    assert json.loads(docs["json"].read_text())["status"]  # the fixture's JSON is intact
