"""Real servers for the source tests, started by the tests (never mocked): a PostgreSQL server
(Debian's ``postgresql``: ``initdb`` into a temporary folder, ``pg_ctl start`` on 127.0.0.1 at a
free port, stopped at the end) and a local S3 endpoint (``moto`` in server mode on 127.0.0.1).

Session-scoped: one server per pytest process, so under pytest-xdist each worker starts its
own (own folder, own port: nothing shared). As root (CI runs as root) PostgreSQL runs as the
``postgres`` user, since ``initdb`` refuses root. A component that cannot be found is a skip
that says what to install.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

PG_PASSWORD = "s3cr3t-Pg-pw"
"""The superuser's password: the tests check it never shows in any output."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for root in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (root / name).exists():
            return str(root / name)
    return None


class NoServer(Exception):
    """PostgreSQL cannot be started here (the reason says what to install)."""


def _as_user() -> list[str]:
    """``runuser -u postgres --`` when root (initdb refuses root), else nothing."""
    if os.geteuid() != 0:
        return []
    runuser = shutil.which("runuser")
    if runuser is None:
        raise NoServer("PostgreSQL as root needs runuser (util-linux) to run as 'postgres'")
    try:
        import pwd

        pwd.getpwnam("postgres")
    except KeyError:
        raise NoServer("PostgreSQL as root needs the 'postgres' user (apt-get install "
                       "postgresql)") from None
    return [runuser, "-u", "postgres", "--"]


@contextlib.contextmanager
def postgres_server(settings: tuple[str, ...] = ("fsync=off",)):
    """A fresh PostgreSQL server (a temporary folder, 127.0.0.1, a free port, password
    authentication over TCP), stopped and removed at the end; yields its URL
    ``postgresql+psycopg://postgres:<PG_PASSWORD>@127.0.0.1:<port>/postgres``."""
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        raise NoServer("PostgreSQL is not installed (apt-get install postgresql)")
    prefix = _as_user()
    root = Path(tempfile.mkdtemp(prefix="fairaudit-pg-"))
    try:
        data, sock = root / "data", root / "sock"
        sock.mkdir()
        pwfile = root / "pw"
        pwfile.write_text(PG_PASSWORD + "\n")
        if prefix:
            for p in (root, sock, pwfile):
                shutil.chown(p, "postgres")
        subprocess.run([*prefix, initdb, "-D", str(data), "-U", "postgres", "--pwfile",
                        str(pwfile), "--auth-host=scram-sha-256", "--auth-local=trust",
                        "-E", "UTF8", "--locale=C"], check=True, capture_output=True)
        options = " ".join(f"-c {x}" for x in settings)
        for _ in range(3):  # another process may take the free port first: try again
            port = _free_port()
            done = subprocess.run(
                [*prefix, pg_ctl, "-D", str(data), "-w", "-t", "60", "-l", str(root / "log"),
                 "-o", f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 {options}",
                 "start"], capture_output=True)
            if done.returncode == 0:
                break
        else:
            log = (root / "log").read_text() if (root / "log").exists() else ""
            raise RuntimeError(f"PostgreSQL did not start: {log[-2000:]}")
        try:
            yield f"postgresql+psycopg://postgres:{PG_PASSWORD}@127.0.0.1:{port}/postgres"
        finally:
            subprocess.run([*prefix, pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"],
                           capture_output=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_url():
    """The URL of a fresh PostgreSQL server for this pytest process (see postgres_server)."""
    pytest.importorskip("psycopg", reason="pip install 'fairaudit-clusters[sql]'")
    try:
        with postgres_server() as url:
            yield url
    except NoServer as exc:
        pytest.skip(str(exc))


def load_postgres(url: str, name: str, frame) -> None:
    """Write ``frame`` into table ``name`` (replaced) of the server at ``url`` (COPY)."""
    import io

    import polars as pl
    import psycopg

    types = {pl.Int64: "bigint", pl.Int32: "integer", pl.Float64: "double precision",
             pl.String: "text", pl.Boolean: "boolean"}
    cols = ", ".join(f'"{c}" {types[t]}' for c, t in frame.schema.items())
    conninfo = url.replace("postgresql+psycopg://", "postgresql://")
    buf = io.StringIO()
    frame.write_csv(buf, include_header=False, null_value="\\N")
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'DROP TABLE IF EXISTS "{name}"')
        conn.execute(f'CREATE TABLE "{name}" ({cols})')
        with conn.cursor().copy(f'COPY "{name}" FROM STDIN (FORMAT csv, NULL \'\\N\')') as cp:
            cp.write(buf.getvalue())


@pytest.fixture(scope="session")
def s3_endpoint():
    """A moto S3 server on 127.0.0.1 (a free port) and the standard variables that point
    polars and obstore at it; yields a boto3 client."""
    pytest.importorskip("moto.server", reason="pip install 'moto[server]'")
    boto3 = pytest.importorskip("boto3")
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # this process only (each xdist worker has its own server)
    try:
        yield boto3.client("s3")
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        with contextlib.suppress(Exception):
            server.stop()
