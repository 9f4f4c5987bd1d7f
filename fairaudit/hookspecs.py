"""Hook specifications. Every hook is prefixed ``fairaudit_``.

Implementations may accept any subset of a hook's arguments (pluggy's opt-in arguments), so a
hook can gain parameters without breaking plugins. Each hook is documented, with its exact
signature, in ``docs/plugin_hooks.md``; a test keeps the two in step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("fairaudit")
hookimpl = pluggy.HookimplMarker("fairaudit")


# ----------------------------------------------------------------------- registration (once)
@hookspec
def fairaudit_register_preprocessors() -> list[type]:
    """Return a list of :class:`fairaudit.core.components.Preprocessor` subclasses.

    Called once when the registry is built. Names must be unique across all plugins.
    """


@hookspec
def fairaudit_register_clusterers() -> list[type]:
    """Return a list of :class:`fairaudit.core.components.Clusterer` subclasses."""


@hookspec
def fairaudit_register_auditors() -> list[type]:
    """Return a list of :class:`fairaudit.core.components.Auditor` subclasses."""


@hookspec
def fairaudit_register_report_sections() -> list[type]:
    """Return a list of :class:`fairaudit.core.components.ReportSection` subclasses."""


# ----------------------------------------------------------------------- per run
@hookspec(firstresult=True)
def fairaudit_read_table(path: str, options: Mapping[str, Any]) -> Any:
    """Open the input at ``path`` lazily and return a ``polars.LazyFrame``, or ``None`` to pass.

    The first non-``None`` result wins; plugins registered later are asked first, so a
    third-party reader can take over a format the built-in reader also handles. ``options``
    holds reader options from the chain's ``[data]`` table (e.g. ``separator``).
    Raise :class:`fairaudit.errors.InputError` for input that is recognised but unreadable.
    """


@hookspec
def fairaudit_prepare_jinja_env(env: Any) -> None:
    """Adjust the ``jinja2.Environment`` used to render the report (filters, globals).

    Called on every render, after the built-in filters are installed.
    """


@hookspec
def fairaudit_step_finished(step: str, kind: str, labelling: str | None, seconds: float) -> None:
    """Called after each chain step: ``kind`` is ``"load"``, ``"checks"``, ``"preprocessor"``,
    ``"clusterer"`` or ``"auditor"``; ``step`` the component or step name; ``labelling`` the
    labelling it produced or audited (``None`` otherwise). Return value ignored.
    """


@hookspec
def fairaudit_run_finished(run: Any) -> None:
    """Called once with the finished :class:`fairaudit.report.results.AuditRun`, before reports are
    written. Use it for notifications or to export results elsewhere. Return value ignored.
    """
