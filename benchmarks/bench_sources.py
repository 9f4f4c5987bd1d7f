"""Benchmark: a labels audit of a database table against the database's own GROUP BY.

    python benchmarks/bench_sources.py [--rows 2000000 20000000] [--repeat 3]
                                       [--skip-postgres] [--skip-duckdb]

For each size and database (a PostgreSQL server started here as the tests start it,
tests/source_servers.py; a DuckDB file), in the same run:

* the table, generated in the database (``generate_series`` / ``range``; seeded ``random()``):
  ``rid``, ``sex`` (2 groups), ``race`` (4), ``segment`` (8 clusters), ``x1`` (a float feature);
* baseline: the database's own ``SELECT segment, sex, race, count(*) ... GROUP BY 1, 2, 3``,
  fetched by the same driver (psycopg / duckdb);
* fairaudit: ``fairaudit.audit(url, table=..., sensitive=["sex", "race"], labels="segment",
  audit=[balance, distribution, capacity])`` in this process (200 bootstrap replicates, input
  checks; the JSON document, no HTML), after one untimed warm-up run (imports);
* bytes moved out of the database: PostgreSQL — the bytes the client's TCP sockets received
  (``TCP_INFO.tcpi_bytes_received``, read at each connection's check-in to SQLAlchemy's pool);
  both — what the audit's ``input.source.moved`` counts (rows, polars' size estimate).

Wall time is the median of ``--repeat`` runs; CPU time (user + sys) is this process's (the
database server's is not included); the load average is printed with the results. The tables
are dropped and the server stopped at the end. Prints a Markdown table for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import resource
import socket
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

AUDITS = ["balance", "distribution", "capacity"]
GROUP_BY = "SELECT segment, sex, race, count(*) FROM people GROUP BY 1, 2, 3"


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _timed(fns, repeat: int) -> list[tuple[float, float, object]]:
    """Per function: (median wall seconds, median CPU seconds, last result) of ``repeat``
    rounds, the functions interleaved within each round (A B A B ...: a change of the
    machine's load falls on both)."""
    walls: list[list[float]] = [[] for _ in fns]
    cpus: list[list[float]] = [[] for _ in fns]
    outs: list[object] = [None] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            c0, t0 = _cpu(), time.perf_counter()
            outs[i] = fn()
            walls[i].append(time.perf_counter() - t0)
            cpus[i].append(_cpu() - c0)
    return [(statistics.median(w), statistics.median(c), o)
            for w, c, o in zip(walls, cpus, outs, strict=True)]


# ------------------------------------------------------------------ bytes over the socket
_TCP_INFO_BYTES_RECEIVED = 128  # offset of tcpi_bytes_received (u64) in Linux's struct tcp_info


def _bytes_received(fd: int) -> int:
    sock = socket.socket(fileno=os.dup(fd))
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    finally:
        sock.close()
    return struct.unpack_from("Q", info, _TCP_INFO_BYTES_RECEIVED)[0]


class SocketBytes:
    """Bytes received by every pooled psycopg connection between checkout and check-in."""

    def __init__(self) -> None:
        import sqlalchemy as sa

        self.total = 0
        self._start: dict[int, int] = {}
        sa.event.listen(sa.pool.Pool, "checkout", self._checkout)
        sa.event.listen(sa.pool.Pool, "checkin", self._checkin)

    def _fd(self, dbapi_connection) -> int | None:
        pgconn = getattr(dbapi_connection, "pgconn", None)
        return None if pgconn is None else pgconn.socket

    def _checkout(self, dbapi_connection, record, proxy) -> None:
        fd = self._fd(dbapi_connection)
        if fd is not None:
            self._start[id(dbapi_connection)] = _bytes_received(fd)

    def _checkin(self, dbapi_connection, record) -> None:
        fd = self._fd(dbapi_connection) if dbapi_connection is not None else None
        start = self._start.pop(id(dbapi_connection), None)
        if fd is not None and start is not None:
            self.total += _bytes_received(fd) - start


# ------------------------------------------------------------------ the tables
def _pg_make(url: str, rows: int) -> None:
    import psycopg

    with psycopg.connect(url.replace("+psycopg", ""), autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS people")
        conn.execute("SELECT setseed(0.25)")
        conn.execute(
            "CREATE UNLOGGED TABLE people AS SELECT g AS rid, "
            "CASE WHEN random() < 0.45 THEN 'F' ELSE 'M' END AS sex, "
            "(ARRAY['a','b','c','d'])[1 + floor(random() * 4)::int] AS race, "
            "floor(random() * 8)::int AS segment, random() AS x1 "
            f"FROM generate_series(1, {int(rows)}) AS g")
        conn.execute("VACUUM ANALYZE people")  # hint bits set, as in a table in service


def _pg_group_by(url: str) -> int:
    import psycopg

    with psycopg.connect(url.replace("+psycopg", "")) as conn:
        return len(conn.execute(GROUP_BY).fetchall())


def _pg_drop(url: str) -> None:
    import psycopg

    with psycopg.connect(url.replace("+psycopg", ""), autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS people")


def _duck_make(path: Path, rows: int) -> None:
    import duckdb

    path.unlink(missing_ok=True)
    con = duckdb.connect(str(path))
    con.execute("SELECT setseed(0.25)")
    con.execute(
        "CREATE TABLE people AS SELECT range AS rid, "
        "CASE WHEN random() < 0.45 THEN 'F' ELSE 'M' END AS sex, "
        "(['a','b','c','d'])[1 + floor(random() * 4)::int] AS race, "
        "floor(random() * 8)::int AS segment, random() AS x1 "
        f"FROM range({int(rows)})")
    con.close()


def _duck_group_by(path: Path) -> int:
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        return len(con.execute(GROUP_BY).fetchall())
    finally:
        con.close()


def _audit(url: str):
    import fairaudit

    return fairaudit.audit(url, table="people", sensitive=["sex", "race"], labels="segment",
                           audit=AUDITS, bootstrap=200)


def _case(name: str, url: str, group_by, rows: int, repeat: int, counter) -> dict:
    _audit(url)  # warm-up: imports, the plugin registry, the table in the caches
    group_by()
    audited: list[int] = []

    def audit():
        before = counter.total if counter else 0
        run = _audit(url)
        audited.append((counter.total - before) if counter else 0)
        return run

    (gb_wall, gb_cpu, cells), (fa_wall, fa_cpu, run) = _timed([group_by, audit], repeat)
    socket_bytes = statistics.median(audited) if counter else None
    moved = run.doc["input"]["source"]["moved"]
    assert run.doc["input"]["rows"] == rows, run.doc["input"]["rows"]
    return {"db": name, "rows": rows, "cells": cells, "gb_wall": gb_wall, "gb_cpu": gb_cpu,
            "fa_wall": fa_wall, "fa_cpu": fa_cpu, "socket_bytes": socket_bytes,
            "moved_rows": sum(v["rows"] for v in moved.values()),
            "moved_bytes": sum(v["bytes"] for v in moved.values()), "moved": moved}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[2_000_000, 20_000_000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-postgres", action="store_true")
    ap.add_argument("--skip-duckdb", action="store_true")
    a = ap.parse_args(argv)
    results = []
    if not a.skip_duckdb:
        with tempfile.TemporaryDirectory(prefix="fairaudit-bench-") as d:
            path = Path(d) / "people.duckdb"
            for rows in a.rows:
                t0 = time.perf_counter()
                _duck_make(path, rows)
                print(f"duckdb: {rows:,} rows generated in {time.perf_counter() - t0:.1f} s",
                      flush=True)
                results.append(_case("DuckDB", f"duckdb:///{path}",
                                     lambda: _duck_group_by(path), rows, a.repeat, None))
                print(results[-1], f"load {os.getloadavg()}", flush=True)
    if not a.skip_postgres:
        from source_servers import postgres_server

        counter = SocketBytes()
        with postgres_server(("fsync=off", "max_parallel_workers_per_gather=2")) as url:
            try:
                for rows in a.rows:
                    t0 = time.perf_counter()
                    _pg_make(url, rows)
                    print(f"postgres: {rows:,} rows generated in "
                          f"{time.perf_counter() - t0:.1f} s", flush=True)
                    results.append(_case("PostgreSQL", url, lambda: _pg_group_by(url), rows,
                                         a.repeat, counter))
                    print(results[-1], f"load {os.getloadavg()}", flush=True)
            finally:
                _pg_drop(url)
    print(f"\n{dt.date.today()}, {platform.node()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, load average now {os.getloadavg()}")
    print("\n| database | rows | GROUP BY wall (CPU) | labels audit wall (CPU) | ratio | "
          "audit - (3 x GROUP BY + 1 s) | moved out (rows / bytes) | socket bytes |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        sock = "n/a (embedded)" if r["socket_bytes"] is None else f"{r['socket_bytes']:,.0f}"
        print(f"| {r['db']} | {r['rows']:,} | {r['gb_wall']:.2f} s ({r['gb_cpu']:.2f} s) | "
              f"{r['fa_wall']:.2f} s ({r['fa_cpu']:.2f} s) | {r['fa_wall'] / r['gb_wall']:.2f} | "
              f"{r['fa_wall'] - 3 * r['gb_wall'] - 1:+.2f} s | {r['moved_rows']:,} / "
              f"{r['moved_bytes']:,} | {sock} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
