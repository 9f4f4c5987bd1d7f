"""The count of a database source, in the database: one ``GROUP BY`` over the labels and
sensitive columns, so only the joint count table (one row per cell, a few kilobytes) leaves it.

NULLs are groups of their own in SQL, as null keys are in polars' group-by: the rows with a null
key are counted (``null_rows``) and left out exactly as the file reader leaves them out. The
user's ``null_values`` are NULL in text columns first (:meth:`SqlSource.cleaned`), as in Parquet;
the CSV reader's default markers (``NA``, ``?``, ...) are not applied: a database column is
typed, as a Parquet column is, and ``'NA'`` there is a value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fairaudit.core.contingency import LABEL_KEY, JointTable, joint_from_counts
from fairaudit.core.data import ColumnRoles
from fairaudit.sources.sql import SqlSource, _sqlalchemy

COUNT = "__n__"


def grouped_rows(source: SqlSource, roles: ColumnRoles) -> Any:
    """The distinct (labels, sensitive...) rows of the source with their row counts
    (``__n__``), sorted by their values (nulls last): the one ``GROUP BY``."""
    import polars as pl

    sa = _sqlalchemy()
    keys = [*filter(None, [roles.labels]), *roles.sensitive]
    sub = source.cleaned(keys)
    cols = [sub.c[k] for k in keys]
    stmt = sa.select(*cols, sa.func.count().label(COUNT)).group_by(*cols)
    agg = source.fetch(stmt, "joint count table", {COUNT: pl.Int64})
    return agg.sort(keys, nulls_last=True)


def count_in_database(source: SqlSource, roles: ColumnRoles,
                      ordinal: Mapping[str, Any] | None = None) -> tuple[JointTable, int, Any]:
    """The joint table of every row, the row count, and the grouped rows it came from."""
    import polars as pl

    grouped = grouped_rows(source, roles)
    agg = grouped if roles.labels is not None else grouped.with_columns(
        pl.lit(0, dtype=pl.Int64).alias(LABEL_KEY))
    joint = joint_from_counts(agg, key=roles.labels or LABEL_KEY, label=roles.labels,
                              sensitive=roles.sensitive, ordinal=dict(ordinal or {}))
    return joint, joint.n + joint.null_rows, grouped
