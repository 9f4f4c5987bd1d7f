"""The orchestrator-independent part of a nightly fairness audit (used by the Airflow, Dagster
and Prefect examples next to this file; runnable on its own).

Layout of the audit folder (one folder per audited table)::

    audits/
      baseline.json          the approved reference audit (promote a run by copying it here)
      runs/2026-11-23.json   one audit per night (+ .html), never overwritten
      history.html           trend report over runs/ (rebuilt after every run)

The task runs ``fairaudit audit DATA … --baseline audits/baseline.json`` in a subprocess and
maps its exit code: 0 -> success, 1 -> a fairness gate failed (a threshold, or a headline metric
got significantly worse than the baseline) -> the task fails and is NOT retried, 2 -> bad input or
configuration -> fails, not retried, anything else -> an internal error (retrying may help).

Two gates: a threshold (``--fail-under balance=0.8``: an absolute bound every night) and the
baseline (a headline metric significantly worse than the approved audit). Either fails the run.

DATA may be a database URL with ``table`` (or ``query``): the counts then run in the database
and only the joint count table leaves it (docs/sources.md). Keep the password out of the URL
(``PGPASSWORD``, ``~/.pgpass`` or ``FAIRAUDIT_DB_PASSWORD``); fairaudit masks it anyway.

Run:  python examples/orchestrators/nightly_audit.py DATA.parquet --sensitive sex,race \\
          --labels segment --audits audits/ --fail-under balance=0.8 [--date 2026-11-23]
          [--chain chain.toml]
      python examples/orchestrators/nightly_audit.py postgresql://auditor@db/crm \\
          --table segments --sensitive sex,race --labels segment --audits audits/
"""

# ruff: noqa: T201  (printing is this example's job)

from __future__ import annotations

import argparse
import datetime as dt
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

EXIT_OK, EXIT_GATE, EXIT_USAGE = 0, 1, 2


class AuditGateFailed(RuntimeError):
    """Exit 1: the audit ran and a fairness gate failed. Retrying will not help."""


class AuditConfigError(RuntimeError):
    """Exit 2: the data or the configuration is wrong. Retrying will not help."""


class AuditCrashed(RuntimeError):
    """Any other exit code: an internal error or a crash (retrying may help)."""


@dataclass(frozen=True)
class AuditOutcome:
    exit_code: int
    json_path: Path
    html_path: Path
    output: str


def audit_command(data: str, *, sensitive: str, audits: Path, date: str,
                  labels: str | None = None, chain: str | None = None,
                  tolerance: Sequence[str] = (), fail_under: Sequence[str] = (),
                  fail_over: Sequence[str] = (), table: str | None = None,
                  query: str | None = None) -> list[str]:
    """The ``fairaudit audit`` command line of one nightly run: its thresholds (``fail_under``
    / ``fail_over``, e.g. ``"balance=0.8"``) and, once one is promoted, the baseline; ``table``
    / ``query`` when DATA is a database URL."""
    runs = Path(audits) / "runs"
    cmd = [sys.executable, "-m", "fairaudit", "audit", data, "--sensitive", sensitive,
           "--out", str(runs / f"{date}.html"), "--json", str(runs / f"{date}.json")]
    if labels:
        cmd += ["--labels", labels]
    if table:
        cmd += ["--table", table]
    if query:
        cmd += ["--query", query]
    if chain:
        cmd += ["--chain", chain]
    for t in fail_under:
        cmd += ["--fail-under", t]
    for t in fail_over:
        cmd += ["--fail-over", t]
    baseline = Path(audits) / "baseline.json"
    if baseline.exists():
        cmd += ["--baseline", str(baseline)]
        for t in tolerance:
            cmd += ["--tolerance", t]
    return cmd


def run_audit(data: str, *, sensitive: str, audits: str | Path, date: str | None = None,
              labels: str | None = None, chain: str | None = None,
              tolerance: Sequence[str] = (), fail_under: Sequence[str] = (),
              fail_over: Sequence[str] = (), table: str | None = None,
              query: str | None = None,
              runner: Callable[..., subprocess.CompletedProcess] = subprocess.run,
              ) -> AuditOutcome:
    """Run one nightly audit (and rebuild the history page); return its outcome."""
    date = date or dt.date.today().isoformat()
    audits = Path(audits)
    (audits / "runs").mkdir(parents=True, exist_ok=True)
    cmd = audit_command(data, sensitive=sensitive, audits=audits, date=date, labels=labels,
                        chain=chain, tolerance=tolerance, fail_under=fail_under,
                        fail_over=fail_over, table=table, query=query)
    proc = runner(cmd, capture_output=True, text=True)
    if proc.returncode in (EXIT_OK, EXIT_GATE):
        runner([sys.executable, "-m", "fairaudit", "history", str(audits / "runs"),
                "--out", str(audits / "history.html"), "--quiet"],
               capture_output=True, text=True)
    runs = audits / "runs"
    return AuditOutcome(proc.returncode, runs / f"{date}.json", runs / f"{date}.html",
                        (proc.stdout or "") + (proc.stderr or ""))


def check(outcome: AuditOutcome) -> AuditOutcome:
    """Raise the exception that matches the exit code; return the outcome on success."""
    if outcome.exit_code == EXIT_OK:
        return outcome
    if outcome.exit_code == EXIT_GATE:
        raise AuditGateFailed(f"fairness gate failed, see {outcome.html_path}\n{outcome.output}")
    if outcome.exit_code == EXIT_USAGE:
        raise AuditConfigError(f"fairaudit could not run the audit:\n{outcome.output}")
    raise AuditCrashed(f"fairaudit exited with {outcome.exit_code}:\n{outcome.output}")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data")
    ap.add_argument("--sensitive", required=True)
    ap.add_argument("--labels")
    ap.add_argument("--table", help="DATA is a database URL: the table to audit")
    ap.add_argument("--query", help="DATA is a database URL: the SELECT to audit")
    ap.add_argument("--chain")
    ap.add_argument("--audits", default="audits")
    ap.add_argument("--date")
    ap.add_argument("--tolerance", action="append", default=[])
    ap.add_argument("--fail-under", action="append", default=[], metavar="METRIC=BOUND")
    ap.add_argument("--fail-over", action="append", default=[], metavar="METRIC=BOUND")
    a = ap.parse_args(argv)
    outcome = run_audit(a.data, sensitive=a.sensitive, audits=a.audits, date=a.date,
                        labels=a.labels, chain=a.chain, tolerance=a.tolerance,
                        fail_under=a.fail_under, fail_over=a.fail_over, table=a.table,
                        query=a.query)
    print(outcome.output, end="")
    return outcome.exit_code


if __name__ == "__main__":
    sys.exit(main())
