"""Fixture plugin: a ``fairaudit_step_finished`` hook that raises (a plugin bug outside any
component)."""

from __future__ import annotations

from fairaudit.hookspecs import hookimpl


@hookimpl
def fairaudit_step_finished(step, kind, labelling, seconds):
    raise KeyError("boom from a hook")
