"""Prefect (2.x/3.x): a nightly fairness audit flow; the flow run fails on a fairness gate.

Serve it with ``python examples/orchestrators/prefect_flow.py`` (cron 02:00). A gate failure
(exit 1) or bad input (exit 2) raises, which fails the task and the flow run; the importable
function :func:`fairness_audit` holds the logic (testable without Prefect installed).
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nightly_audit import check, run_audit  # noqa: E402

DATA = "/data/customers/latest.parquet"
SENSITIVE = "sex,race"
AUDITS = "/data/audits/customers"

try:  # Prefect is optional: the task logic below is importable (and tested) without it
    import prefect
except ImportError:  # pragma: no cover - depends on the environment
    prefect = None


def fairness_audit(date: str | None = None, *, data: str = DATA, sensitive: str = SENSITIVE,
                   audits: str = AUDITS, labels: str | None = "segment", runner=None) -> str:
    """Run the audit for ``date`` (default today); raise on exit 1/2; return the JSON path."""
    kwargs = {"runner": runner} if runner is not None else {}
    outcome = run_audit(data, sensitive=sensitive, audits=audits,
                        date=date or dt.date.today().isoformat(), labels=labels, **kwargs)
    return str(check(outcome).json_path)


if prefect is not None:  # pragma: no cover - needs Prefect
    audit_task = prefect.task(fairness_audit, name="fairaudit", retries=0)

    @prefect.flow(name="nightly-fairness-audit")
    def nightly_fairness_audit(date: str | None = None) -> str:
        return audit_task(date)

    if __name__ == "__main__":
        nightly_fairness_audit.serve(name="nightly", cron="0 2 * * *")
