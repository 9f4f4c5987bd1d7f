"""Airflow 3 (Task SDK, ``airflow.sdk``): a nightly fairness audit that fails the run on a gate.

Copy this file and ``nightly_audit.py`` into your Dags folder and set the constants. Two gates:
the threshold ``FAIL_UNDER`` and the baseline (``AUDITS/baseline.json``, once you promote a run
by copying it there). The task fails without retries on exit 1 (a gate failed) and 2 (bad input
or configuration), and with the task's retries on anything else (a crash). The report path goes
to XCom. :func:`fairness_audit` holds the logic (importable and tested without Airflow).

A database source uses Airflow's own idiom: an Airflow Connection (``DB_CONN_ID``, set in the UI
or ``AIRFLOW_CONN_SEGMENTS_DB``) whose URI is the data, with ``TABLE``; the counts run in the
database (docs/sources.md) and fairaudit masks the password in everything it prints.
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
DB_CONN_ID = None  # e.g. "segments_db": audit TABLE of that Connection instead of DATA
TABLE = "segments"

try:  # Airflow is optional: the task logic below is importable (and tested) without it
    from airflow.sdk.exceptions import AirflowFailException
except ImportError:  # pragma: no cover - depends on the environment
    AirflowFailException = None  # type: ignore[assignment,misc]


def fairness_audit(ds: str, *, data: str = DATA, sensitive: str = SENSITIVE,
                   audits: str = AUDITS, labels: str | None = "segment",
                   fail_under: tuple[str, ...] = FAIL_UNDER, table: str | None = None,
                   runner=None) -> str:
    """Run the audit for logical date ``ds``; return the JSON path (pushed to XCom). With
    ``table``, ``data`` is a database URL."""
    kwargs = {"runner": runner} if runner is not None else {}
    if table is not None:
        kwargs["table"] = table
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
            if DB_CONN_ID is None:
                return fairness_audit(ds)
            from airflow.sdk import BaseHook

            uri = BaseHook.get_connection(DB_CONN_ID).get_uri()  # e.g. postgresql://...
            return fairness_audit(ds, data=uri, table=TABLE)

        audit()

    nightly_fairness_audit()
