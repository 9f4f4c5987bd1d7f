"""Dagster: a nightly fairness audit op/job with a schedule; the run fails on a fairness gate.

Load with ``dagster dev -f examples/orchestrators/dagster_job.py``. The op raises
``dagster.Failure`` (with the report path as metadata) on exit 1 or 2; the importable function
:func:`fairness_audit` holds the logic (testable without Dagster installed).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nightly_audit import AuditConfigError, AuditGateFailed, check, run_audit  # noqa: E402

DATA = "/data/customers/latest.parquet"
SENSITIVE = "sex,race"
AUDITS = "/data/audits/customers"

try:  # Dagster is optional: the task logic below is importable (and tested) without it
    import dagster
except ImportError:  # pragma: no cover - depends on the environment
    dagster = None


def fairness_audit(date: str, *, data: str = DATA, sensitive: str = SENSITIVE,
                   audits: str = AUDITS, labels: str | None = "segment", runner=None) -> dict:
    """Run the audit for ``date``; return metadata (paths) for the op's output."""
    kwargs = {"runner": runner} if runner is not None else {}
    outcome = run_audit(data, sensitive=sensitive, audits=audits, date=date, labels=labels,
                        **kwargs)
    try:
        check(outcome)
    except (AuditGateFailed, AuditConfigError) as exc:
        if dagster is not None:
            raise dagster.Failure(description=str(exc), allow_retries=False,
                                  metadata={"report": str(outcome.html_path),
                                            "exit_code": outcome.exit_code}) from exc
        raise
    return {"json": str(outcome.json_path), "report": str(outcome.html_path)}


if dagster is not None:  # pragma: no cover - needs Dagster

    @dagster.op
    def audit_op(context) -> dict:
        date = context.partition_key if context.has_partition_key else None
        import datetime as dt

        return fairness_audit(date or dt.date.today().isoformat())

    @dagster.job
    def nightly_fairness_audit():
        audit_op()

    defs = dagster.Definitions(
        jobs=[nightly_fairness_audit],
        schedules=[dagster.ScheduleDefinition(job=nightly_fairness_audit,
                                              cron_schedule="0 2 * * *")],
    )
