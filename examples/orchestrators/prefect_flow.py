"""Prefect 3: a nightly fairness audit flow; the flow run fails on a fairness gate.

Serve it with ``python examples/orchestrators/prefect_flow.py`` (cron 02:00 UTC). Two gates:
the threshold ``FAIL_UNDER`` and the baseline (``AUDITS/baseline.json``, once you promote a run
by copying it there). A gate failure (exit 1) or bad input (exit 2) raises: the task fails (no
retries) and so does the flow run; the report is linked as an artifact either way.
:func:`fairness_audit` holds the logic (importable and tested without Prefect).
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
FAIL_UNDER = ("balance=0.8",)  # the threshold gate; the baseline is the other gate

try:  # Prefect is optional: the task logic below is importable (and tested) without it
    from prefect import flow, task
    from prefect.artifacts import create_link_artifact
except ImportError:  # pragma: no cover - depends on the environment
    flow = task = create_link_artifact = None


def fairness_audit(date: str | None = None, *, data: str = DATA, sensitive: str = SENSITIVE,
                   audits: str = AUDITS, labels: str | None = "segment",
                   fail_under: tuple[str, ...] = FAIL_UNDER, runner=None) -> str:
    """Run the audit for ``date`` (default today); raise on exit 1/2; return the JSON path."""
    kwargs = {"runner": runner} if runner is not None else {}
    outcome = run_audit(data, sensitive=sensitive, audits=audits,
                        date=date or dt.date.today().isoformat(), labels=labels,
                        fail_under=fail_under, **kwargs)
    if create_link_artifact is not None and outcome.html_path.exists():
        create_link_artifact(outcome.html_path.resolve().as_uri(), link_text="fairness report",
                             key="fairness-report")
    return str(check(outcome).json_path)


if flow is not None:  # pragma: no cover - needs Prefect
    audit_task = task(fairness_audit, name="fairaudit", retries=0)

    @flow(name="nightly-fairness-audit")
    def nightly_fairness_audit(date: str | None = None) -> str:
        return audit_task(date)

    if __name__ == "__main__":
        nightly_fairness_audit.serve(name="nightly", cron="0 2 * * *")
