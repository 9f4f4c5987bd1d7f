"""Airflow 3 (Task SDK, ``airflow.sdk``): a nightly fairness audit that fails the run on a gate.

Copy this file and ``nightly_audit.py`` into your Dags folder and set the constants. Two gates:
the threshold ``FAIL_UNDER`` and the baseline (``AUDITS/baseline.json``, once you promote a run
by copying it there). The task fails without retries on exit 1 (a gate failed) and 2 (bad input
or configuration), and with the task's retries on anything else (a crash). The report path goes
to XCom. :func:`fairness_audit` holds the logic (importable and tested without Airflow).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nightly_audit import (  # noqa: E402
    AuditConfigError,
    AuditCrashed,
    AuditGateFailed,
    check,
    run_audit,
)

DATA = "/data/customers/latest.parquet"
SENSITIVE = "sex,race"
AUDITS = "/data/audits/customers"
FAIL_UNDER = ("balance=0.8",)  # the threshold gate; the baseline is the other gate

try:  # Airflow is optional: the task logic below is importable (and tested) without it
    from airflow.sdk.exceptions import AirflowFailException
except ImportError:  # pragma: no cover - depends on the environment
    AirflowFailException = None  # type: ignore[assignment,misc]


def fairness_audit(ds: str, *, data: str = DATA, sensitive: str = SENSITIVE,
                   audits: str = AUDITS, labels: str | None = "segment",
                   fail_under: tuple[str, ...] = FAIL_UNDER, runner=None) -> str:
    """Run the audit for logical date ``ds``; return the JSON path (pushed to XCom)."""
    kwargs = {"runner": runner} if runner is not None else {}
    outcome = run_audit(data, sensitive=sensitive, audits=audits, date=ds, labels=labels,
                        fail_under=fail_under, **kwargs)
    try:
        check(outcome)
    except (AuditGateFailed, AuditConfigError) as exc:
        if AirflowFailException is not None:
            raise AirflowFailException(str(exc)) from exc  # failed, not retried
        raise
    except AuditCrashed:
        raise  # any other exception: retried as configured
    return str(outcome.json_path)


if AirflowFailException is not None:  # pragma: no cover - needs Airflow
    import pendulum
    from airflow.sdk import dag, task

    @dag(schedule="0 2 * * *", start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
         catchup=False, tags=["fairness"])
    def nightly_fairness_audit():
        @task(retries=2)
        def audit(ds: str | None = None) -> str:
            return fairness_audit(ds)

        audit()

    nightly_fairness_audit()
