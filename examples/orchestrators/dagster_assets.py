"""Dagster: the nightly fairness audit as an asset, judged by an asset check.

- asset ``fairness_audit``: runs ``fairaudit audit`` (``nightly_audit.run_audit``) and
  materialises the report and the JSON (their paths and the gate outcome as metadata). Bad input
  or configuration (exit 2) or a crash fails the materialisation.
- asset check ``fairness_gates``: fails (severity ERROR, blocking: downstream assets do not run)
  when a gate failed (exit 1): a threshold (``FAIL_UNDER``) or a headline metric significantly
  worse than the baseline (``AUDITS/baseline.json``, once you promote a run by copying it there).
- a daily schedule at 02:00 over a job that materialises the asset and runs its check.

A database source is a Dagster resource, as a warehouse connection usually is:
``WarehouseSource(url=dg.EnvVar("SEGMENTS_DB_URL"), table="segments")`` — the URL read from the
environment at run time (never in the code or the run config), the counts run in the database
(docs/sources.md). Without the resource (the default) the asset audits ``DATA``.

Load it with ``dg dev`` in a Dagster project (import ``defs`` from your definitions module) or
``dagster dev -f examples/orchestrators/dagster_assets.py``. Set the constants, or the run
config (``FairnessAuditConfig``) in the launchpad. tests/test_orchestrators.py materialises it
in-process on a small table and checks that a failed gate fails the check.
"""

# no `from __future__ import annotations`: Dagster reads the config class from the annotation
import datetime as dt
import json
import sys
from pathlib import Path

import dagster as dg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nightly_audit import AuditConfigError, AuditCrashed, check, run_audit  # noqa: E402

DATA = "/data/customers/latest.parquet"
SENSITIVE = "sex,race"
AUDITS = "/data/audits/customers"
FAIL_UNDER = ["balance=0.8"]  # the threshold gate; the baseline is the other gate


class WarehouseSource(dg.ConfigurableResource):
    """A database table to audit instead of ``DATA``; an empty ``url`` (the default) means none.
    Give the URL as ``dg.EnvVar("...")`` so it stays out of the code and the run config."""

    url: str = ""
    table: str | None = None
    query: str | None = None


class FairnessAuditConfig(dg.Config):
    """What to audit; every field has the module constant as its default."""

    data: str = DATA
    sensitive: str = SENSITIVE
    audits: str = AUDITS
    labels: str | None = "segment"
    fail_under: list[str] = FAIL_UNDER
    date: str | None = None  # default: today (UTC)


@dg.asset(group_name="fairness", kinds={"python"})
def fairness_audit(context: dg.AssetExecutionContext, config: FairnessAuditConfig,
                   warehouse: WarehouseSource) -> dg.Output[dict]:
    """The night's fairness audit: HTML report + JSON document under ``AUDITS/runs/``."""
    date = config.date or dt.datetime.now(dt.UTC).date().isoformat()
    data = warehouse.url or config.data
    outcome = run_audit(data, sensitive=config.sensitive, audits=config.audits,
                        date=date, labels=config.labels, fail_under=config.fail_under,
                        table=warehouse.table if warehouse.url else None,
                        query=warehouse.query if warehouse.url else None)
    if outcome.exit_code not in (0, 1):  # 1 (a gate) is the check's business
        try:
            check(outcome)
        except (AuditConfigError, AuditCrashed) as exc:
            raise dg.Failure(description=str(exc), allow_retries=isinstance(exc, AuditCrashed),
                             metadata={"exit_code": outcome.exit_code}) from exc
    value = {"json": str(outcome.json_path), "report": str(outcome.html_path),
             "exit_code": outcome.exit_code}
    context.log.info("fairness audit of %s: exit %d, report %s",
                     warehouse.table or ("a query" if warehouse.url else config.data),
                     outcome.exit_code, outcome.html_path)
    return dg.Output(value, metadata={
        "report": dg.MetadataValue.path(str(outcome.html_path)),
        "json": dg.MetadataValue.path(str(outcome.json_path)),
        "exit_code": outcome.exit_code,
    })


@dg.asset_check(asset=fairness_audit, blocking=True,
                description="Every fairness gate of the audit passed (thresholds and baseline).")
def fairness_gates(fairness_audit: dict) -> dg.AssetCheckResult:
    doc = json.loads(Path(fairness_audit["json"]).read_text())
    failed = [f"{g.get('metric')}[{g.get('attribute') or 'all'}] on {g.get('labelling')}"
              for g in doc.get("gates") or () if g.get("status") == "fail"]
    comparison = (doc.get("comparison") or {}).get("status")
    return dg.AssetCheckResult(
        passed=fairness_audit["exit_code"] == 0,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={"failed_gates": ", ".join(failed) or "none",
                  "baseline_comparison": str(comparison),
                  "report": dg.MetadataValue.path(fairness_audit["report"])},
    )


nightly_fairness_audit = dg.define_asset_job("nightly_fairness_audit",
                                             selection=[fairness_audit])

defs = dg.Definitions(
    assets=[fairness_audit],
    asset_checks=[fairness_gates],
    jobs=[nightly_fairness_audit],
    resources={"warehouse": WarehouseSource()},  # e.g. url=dg.EnvVar("SEGMENTS_DB_URL")
    schedules=[dg.ScheduleDefinition(job=nightly_fairness_audit, cron_schedule="0 2 * * *",
                                     execution_timezone="UTC")],
)
