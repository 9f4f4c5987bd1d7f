"""Airflow (2.x/3.x TaskFlow): a nightly fairness audit that fails the run on a fairness gate.

Copy this file and ``nightly_audit.py`` into your DAGs folder and set the three constants.
The task fails without retries on exit 1 (a fairness gate) and 2 (bad input/config), and with
Airflow's normal retries on anything else. The importable function
:func:`fairness_audit` holds the logic (testable without Airflow installed).
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

try:  # Airflow is optional: the task logic below is importable (and tested) without it
    from airflow.exceptions import AirflowException, AirflowFailException
except ImportError:  # pragma: no cover - depends on the environment
    AirflowException = AirflowFailException = None  # type: ignore[assignment,misc]


def fairness_audit(ds: str, *, data: str = DATA, sensitive: str = SENSITIVE,
                   audits: str = AUDITS, labels: str | None = "segment", runner=None) -> str:
    """Run the audit for logical date ``ds``; return the JSON path (pushed to XCom)."""
    kwargs = {"runner": runner} if runner is not None else {}
    outcome = run_audit(data, sensitive=sensitive, audits=audits, date=ds, labels=labels,
                        **kwargs)
    try:
        check(outcome)
    except (AuditGateFailed, AuditConfigError) as exc:
        if AirflowFailException is not None:
            raise AirflowFailException(str(exc)) from exc  # no retries
        raise
    except AuditCrashed as exc:
        if AirflowException is not None:
            raise AirflowException(str(exc)) from exc  # retried as configured
        raise
    return str(outcome.json_path)


if AirflowFailException is not None:  # pragma: no cover - needs Airflow
    import pendulum
    from airflow.decorators import dag, task

    @dag(schedule="0 2 * * *", start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
         catchup=False, tags=["fairness"])
    def nightly_fairness_audit():
        @task(retries=2)
        def audit(ds=None) -> str:
            return fairness_audit(ds)

        audit()

    nightly_fairness_audit()
