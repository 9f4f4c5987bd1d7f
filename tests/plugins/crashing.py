"""Fixture plugin: a counting auditor that raises RuntimeError (an internal error, exit 3)."""

from __future__ import annotations

from fairaudit.core.components import CountingAuditor, Direction, MetricSpec
from fairaudit.hookspecs import hookimpl


class CrashingAuditor(CountingAuditor):
    name = "crash"
    metrics = (MetricSpec("crash", Direction.HIGHER_IS_BETTER, "always raises", headline=True),)

    def __init__(self) -> None:
        pass

    def compute(self, table):
        raise RuntimeError("boom from the crash auditor")


@hookimpl
def fairaudit_register_auditors() -> list[type]:
    return [CrashingAuditor]
