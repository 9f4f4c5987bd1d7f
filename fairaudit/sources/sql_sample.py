"""The seeded sample of a database source, drawn in the database.

Clusterers and feature-based auditors read rows in memory: at most ``max_rows`` of them (the
clusterers' ``max_rows`` or ``--sample``, as for files). The rows with a null sensitive or labels
value are left out first, as the file reader leaves them out. When more rows remain, the sample
is the ``max_rows`` rows with the smallest hash ``md5(seed || key)`` — an ordered hash, the same
in every dialect that has ``md5`` (PostgreSQL, DuckDB, MySQL/MariaDB, Snowflake, ...; SQLite gets
it from Python):

* with ``key`` (``--key COL``; a column that identifies rows, e.g. the primary key) the hash is
  of the seed and the key: the same seed gives the same sample on every run, whatever order
  the database scans the table in, and rows come ordered by the key — for a table of at most
  ``max_rows`` rows that is every row in key order, the order of a file written in key order;
* without a key the hash is of the seed and the row's values (the columns read): the sample is
  as reproducible, but rows with the same values are all in or all out, and the rows come in
  the hash's order.

Without a key a table of at most ``max_rows`` rows is read whole in that hash order, so the
same rows give the same in-memory rows on every run (never the database's scan order, which
may change after an ``UPDATE`` or a ``VACUUM``). The file reader's sample of the same rows is
another draw of the same size: counting metrics are identical (every row is counted), the
numbers of a clusterer fitted on a sample are not.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fairaudit.core.data import ROW_ID
from fairaudit.sources.sql import SqlSource, _sqlalchemy

log = logging.getLogger(__name__)

HASH = "__fa_hash__"
_SEP = "\x1f"


def row_hash(source: SqlSource, sub: Any, seed: int, columns: Sequence[str]) -> Any:
    """``md5`` of the seed and ``columns`` (the key, or every column read) as text; NULL is
    ``\\N``. Ordered as text (``COLLATE "C"`` on PostgreSQL: hex digits in byte order)."""
    sa = _sqlalchemy()

    def lit(value: str) -> Any:  # typed: PostgreSQL cannot concatenate untyped parameters
        return sa.cast(sa.literal(value), sa.String)

    text: Any = lit(str(int(seed)))
    for c in columns:
        text = text + lit(_SEP) + sa.func.coalesce(sa.cast(sub.c[c], sa.String), lit("\\N"))
    h = sa.func.md5(text, type_=sa.String)
    return h.collate("C") if source.dialect == "postgresql" else h


def draw_rows(source: SqlSource, columns: Sequence[str], keys: Sequence[str], max_rows: int,
              seed: int) -> tuple[Any, int, dict[str, Any] | None]:
    """``(frame, valid rows, sample_info)``: the in-memory rows (``ROW_ID`` first, then
    ``columns``), how many rows have no null in ``keys``, and the sample's description (None
    when every valid row is read)."""
    import numpy as np
    import polars as pl

    sa = _sqlalchemy()
    key = source.key
    read = list(dict.fromkeys([*columns, *([key] if key else [])]))
    sub = source.cleaned(read)
    where = sa.and_(sa.true(), *[sub.c[k].isnot(None) for k in keys])
    n_valid = int(source.fetch(sa.select(sa.func.count().label("n")).select_from(sub)
                               .where(where), "row count", {"n": pl.Int64}).item())
    h = row_hash(source, sub, seed, [key] if key else list(columns)).label(HASH)
    inner = sa.select(*[sub.c[c] for c in read], h).where(where)
    sampled = n_valid > max_rows
    if sampled:
        inner = inner.order_by(sa.literal_column(HASH)).limit(int(max_rows))
    rows = inner.subquery("fa_sample")
    order = [rows.c[key], rows.c[HASH]] if key else [rows.c[HASH]]
    stmt = sa.select(*[rows.c[c] for c in read]).order_by(*order)
    frame = source.fetch(stmt, "sample" if sampled else "rows in memory")
    if key:
        _warn_if_not_unique(frame.get_column(key), key)
    frame = frame.select(columns).with_columns(
        pl.Series(ROW_ID, np.arange(frame.height), dtype=pl.UInt32)).select([ROW_ID, *columns])
    info = None
    if sampled:
        by = f"the key {key!r}" if key else "each row's values (no --key)"
        info = {
            "rows": int(max_rows),
            "seed": int(seed),
            "drawn": f"in the database: the {max_rows:,} rows with the smallest md5 of the "
                     f"seed and {by}",
            "note": (f"clusterers and feature-based metrics used a seeded random sample of "
                     f"{max_rows:,} of {n_valid:,} rows, drawn in the database (the smallest "
                     f"md5 hashes of the seed and {by}); counting metrics of labels columns in "
                     "the input use every row"),
        }
    return frame, n_valid, info


def _warn_if_not_unique(values: Any, key: str) -> None:
    """A ``--key`` that does not identify rows: rows that share a value share their hash, so
    they are all in the sample or all out, and their order among themselves is the database's
    (it may change between runs). Checked on the rows read (the whole table when it fits).
    The message names no count and no value: the log of a ``--publish`` run is not a release."""
    if values.is_duplicated().any():
        log.warning(
            "--key %r does not identify rows: rows read share a value (a primary key or another "
            "unique column is expected); those rows are in the sample or out of it together, "
            "and the order among them is the database's, which may differ between runs", key)
