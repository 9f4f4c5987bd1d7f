"""Fixture plugin: a hook implementation with a misspelled name (caught by check_pending)."""

from __future__ import annotations

from fairaudit.hookspecs import hookimpl


@hookimpl
def fairaudit_register_auditor() -> list[type]:  # sic: the spec is ..._auditors
    return []
