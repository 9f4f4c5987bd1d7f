"""The engine of a database source: the passes over every row run where the rows are.

:class:`SqlEngine` has the engine interface of :mod:`fairaudit.core.engines` — ``count`` is one
``GROUP BY`` in the database (:mod:`~fairaudit.sources.sql_count`), ``assign`` streams the rows
in batches through the fitted steps — plus the two passes a file engine leaves to polars on the
client: ``draw_rows`` (the seeded sample, drawn in the database:
:mod:`~fairaudit.sources.sql_sample`) and ``check_rows`` (the input checks on the grouped rows:
:mod:`~fairaudit.sources.sql_checks`). :func:`source_engine` gives a run the engine its source
needs; the reader hook and the engine share one connection pool (:func:`open_sql`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from fairaudit.core.assign import Assignment, FittedStep, assign_all_rows
from fairaudit.core.contingency import JointTable
from fairaudit.core.data import AuditData, ColumnRoles
from fairaudit.core.progress import Meter
from fairaudit.sources.sql import SqlSource

log = logging.getLogger(__name__)

_OPEN: dict[tuple[Any, ...], SqlSource] = {}


def _key(url: str, options: Mapping[str, Any]) -> tuple[Any, ...]:
    return (url, options.get("table"), options.get("query"), options.get("key"),
            tuple(options.get("null_values", ()) or ()))


def open_sql(url: str, options: Mapping[str, Any]) -> SqlSource:
    """The source of ``url`` with these reader options (``table``/``query``, ``key``,
    ``null_values``), opened once per run: the reader and the engine share it."""
    k = _key(url, options)
    if k not in _OPEN:
        source = SqlSource(url, table=options.get("table"), query=options.get("query"),
                           key=options.get("key"), null_values=options.get("null_values", ()))
        if source.key:
            source.require([source.key])
        _OPEN[k] = source
    return _OPEN[k]


def close_sql(source: SqlSource) -> None:
    for k, v in list(_OPEN.items()):
        if v is source:
            del _OPEN[k]
    source.close()


class SqlEngine:
    """Counts, samples, checks and assigns a database table or query in the database."""

    name = "database"

    def __init__(self, source: SqlSource) -> None:
        self.source = source
        self.grouped: Any = None

    def count(self, lf: Any, *, path: Any, roles: ColumnRoles,
              reader_options: Mapping[str, Any]) -> tuple[JointTable, int]:
        from fairaudit.sources.sql_count import count_in_database

        with Meter("count in the database", None, "rows") as meter:
            joint, n, self.grouped = count_in_database(self.source, roles, roles.ordinal)
            meter.close(n)
        return joint, n

    def draw_rows(self, columns: Sequence[str], keys: Sequence[str], max_rows: int,
                  seed: int) -> tuple[Any, int, dict[str, Any] | None]:
        from fairaudit.sources.sql_sample import draw_rows

        return draw_rows(self.source, columns, keys, max_rows, seed)

    def check_rows(self) -> tuple[Any, Any] | None:
        """The rows and the backend the input checks of a labels audit read: the grouped rows
        of :meth:`count` (None before it)."""
        from fairaudit.sources.sql_checks import grouped_checks_input
        from fairaudit.sources.sql_count import COUNT

        return None if self.grouped is None else grouped_checks_input(self.grouped, COUNT)

    def assign(self, lf: Any, *, path: Any, reader_options: Mapping[str, Any],
               template: AuditData, preprocessors: Sequence[FittedStep],
               clusterers: Sequence[FittedStep], on_nonfinite: str,
               total: int | None = None) -> Assignment:
        roles = template.roles  # the rows assign_all_rows keeps: no NULL key
        keys = [*roles.sensitive, *filter(None, [roles.labels])]
        return assign_all_rows(self.source.lazy(not_null=keys), template, preprocessors, clusterers,
                               on_nonfinite=on_nonfinite, total=total)

    def close(self) -> None:
        close_sql(self.source)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "dialect": self.source.dialect}


@contextlib.contextmanager
def database_engine(url: str, spec: Any, engine: Any) -> Iterator[SqlEngine]:
    """The run's :class:`SqlEngine` (closed at the end); a Dask engine is not used."""
    if getattr(engine, "name", "local") != "local":
        log.warning("a database source is counted in the database: the %s engine is not used",
                    getattr(engine, "name", "other"))
    sql = SqlEngine(open_sql(url, spec.data.reader_options))
    try:
        yield sql
    finally:
        sql.close()
