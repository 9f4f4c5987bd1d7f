"""Fixture plugin: registers a class that is not an Auditor subclass."""

from __future__ import annotations

from fairaudit.hookspecs import hookimpl


class NotAnAuditor:
    name = "not_an_auditor"


@hookimpl
def fairaudit_register_auditors() -> list[type]:
    return [NotAnAuditor]
