"""Where the data lives: database tables and queries, object-store paths and Delta tables.

One role per module:

* :mod:`~fairaudit.sources.urls` — what a DATA string names; credentials masked everywhere;
* :mod:`~fairaudit.sources.sql` — a database table or query: connection, schema, typed frames;
* :mod:`~fairaudit.sources.sql_count` — the count: one ``GROUP BY`` in the database;
* :mod:`~fairaudit.sources.sql_sample` — the seeded sample, drawn in the database;
* :mod:`~fairaudit.sources.sql_checks` — the input checks on the database's grouped rows;
* :mod:`~fairaudit.sources.sql_engine` — the engine of a database source (count, sample,
  checks, assignment in streamed batches);
* :mod:`~fairaudit.sources.objectstore` — ``s3://``, ``gs://``, ``az://`` paths and globs;
* :mod:`~fairaudit.sources.lake` — Delta tables (and why not Iceberg yet).

The built-in plugin ``fairaudit_builtins.sources`` reads them through the
``fairaudit_read_table`` hook (:func:`read_source`); the runner asks :func:`source_engine` for the
engine a source needs. docs/sources.md is the user's page.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from fairaudit.errors import ConfigError
from fairaudit.sources.urls import is_database, is_object_store, mask, redact

__all__ = ["describe_source", "is_database", "is_object_store", "mask", "read_source",
           "redact", "source_engine"]

_DB_ONLY = ("table", "query", "key")


def _check_options(path: Any, options: Mapping[str, Any]) -> None:
    given = [k for k in _DB_ONLY if options.get(k) is not None]
    if given and not (isinstance(path, str) and is_database(path)):
        flags = ", ".join(f"--{k}" for k in given)
        raise ConfigError(f"{flags}: only for a database source (a URL such as "
                          f"postgresql://host/db or duckdb:///file.duckdb); got {mask(str(path))}"
                          if isinstance(path, str) else
                          f"{flags}: only for a database source, not an in-memory table")


def read_source(path: Any, options: Mapping[str, Any]) -> Any:
    """The LazyFrame of a database URL, a Delta table or an object-store path; None for what
    the built-in file reader reads (local Parquet and CSV)."""
    from fairaudit.sources import lake

    _check_options(path, options)
    if not isinstance(path, str):
        return None
    if is_database(path):
        from fairaudit.sources.sql_engine import open_sql

        return open_sql(path, options).lazy()
    if lake.is_delta(path, options):
        return lake.scan_delta(path, options)
    if options.get("version") is not None:
        raise ConfigError("--version: only a Delta table has versions (--format delta, or a "
                          f"folder with a _delta_log/); got {mask(path)}")
    if is_object_store(path):
        from fairaudit.sources.objectstore import scan_remote

        return scan_remote(path, options)
    return None  # local files: the built-in reader (which tells the format from the file)


def describe_source(path: Any, options: Mapping[str, Any], engine: Any = None,
                    fingerprint: str = "unavailable") -> dict[str, Any] | None:
    """The audit JSON's ``input`` fields of a database, object store or Delta table: the masked
    ``path``, the ``format``, the ``source`` block, and for a Delta table the ``fingerprint``
    of the version audited (its folder also holds other versions' files). None for local
    files and in-memory tables."""
    from fairaudit.sources import lake

    if not isinstance(path, str):
        return None
    if is_database(path):
        source = getattr(engine, "source", None)
        block = source.describe() if source is not None else {"kind": "database",
                                                                "url": mask(path)}
        return {"path": mask(path), "format": "database", "source": block}
    if lake.is_delta(path, options):
        block = lake.describe_delta(path, options)
        return {"path": block.pop("path"), "format": "delta", "source": block,
                "fingerprint": f"{fingerprint}@delta-version-{block['version']}"}
    if is_object_store(path):
        from fairaudit.sources.objectstore import format_of

        return {"path": mask(path), "format": format_of(path, options),
                "source": {"kind": "object store"}}
    return None


@contextlib.contextmanager
def source_engine(path: Any, spec: Any, engine: Any) -> Iterator[Any]:
    """The engine a run of ``path`` uses: the database's own (:class:`SqlEngine`) for a
    database URL, else ``engine``. ``--publish`` needs a content fingerprint of the audited
    rows (one pass over them): object-store paths and Delta tables are read as polars frames
    and get it like local files; a database would have to send every audited row out for it,
    so publishing from one is refused (exit 2) rather than released under a wrong or missing
    fingerprint."""
    from fairaudit.sources import lake

    options = spec.data.reader_options
    _check_options(path, options)
    if isinstance(path, str) and is_database(path) and spec.privacy.publish:
        raise ConfigError(
            f"--publish: {mask(path)} is a database: the privacy ledger knows a release's people "
            "by a content fingerprint of the audited rows, which would move every row out of "
            "the database; export the audited columns (to Parquet, locally or in an object "
            "store) and publish from there")
    if isinstance(path, str) and getattr(engine, "name", "local") == "dask" and (
            lake.is_delta(path, options)):
        raise ConfigError(f"{mask(path)}: the Dask engine reads files one per task, and a Delta "
                          "table is read whole (its log decides which files hold its rows): "
                          "use the local engine (--engine local)")
    if isinstance(path, str) and is_database(path):
        from fairaudit.sources.sql_engine import database_engine

        with database_engine(path, spec, engine) as sql:
            yield sql
        return
    yield engine
