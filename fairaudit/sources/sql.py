"""A database table or query as a source: the connection (read-only), the polars schema of its
columns, and the typed frames of the statements the other modules build.

The URL is SQLAlchemy's (``postgresql://user@host:5432/db``, ``duckdb:///file.duckdb``,
``sqlite:///file.db``, ``mysql+pymysql://...``). Credentials come from the URL, the driver's own
environment (``PGPASSWORD``, ``~/.pgpass``) or :data:`PASSWORD_ENV`; the URL is only ever shown
masked. DuckDB and SQLite files are opened read-only (and must exist), PostgreSQL sessions are
read-only transactions: auditing never writes to the database.

The rows stay in the database unless a statement asks for them: :mod:`~fairaudit.sources.sql_count`
moves the joint count table, :mod:`~fairaudit.sources.sql_sample` the stated sample, and
:meth:`SqlSource.lazy` streams batches (the assignment of every row). :attr:`SqlSource.moved`
counts what left the database.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairaudit.errors import ConfigError, InputError
from fairaudit.sources.urls import install_line, mask, redact

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

log = logging.getLogger(__name__)

PASSWORD_ENV = "FAIRAUDIT_DB_PASSWORD"
"""The password of a database URL that names a user but no password (else the driver's own
environment: ``PGPASSWORD``, ``~/.pgpass``, ...)."""
PROBE_ROWS = 1000
"""Rows read to type a column whose driver reports no type (SQLite, expressions of a query)."""
QUERY_ALIAS = "fa_query"


@dataclass
class Moved:
    """What left the database: rows and their size in memory (polars' estimate), by purpose."""

    rows: dict[str, int] = field(default_factory=dict)
    bytes: dict[str, int] = field(default_factory=dict)

    def add(self, what: str, frame: Any) -> None:
        self.rows[what] = self.rows.get(what, 0) + frame.height
        self.bytes[what] = self.bytes.get(what, 0) + int(frame.estimated_size())

    def to_json(self) -> dict[str, Any]:
        return {k: {"rows": self.rows[k], "bytes": self.bytes[k]} for k in self.rows}


def _first_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip().splitlines()
    return redact(text[0] if text else type(orig).__name__)


def _sqlalchemy() -> Any:
    try:
        import sqlalchemy
    except ImportError as exc:
        raise ConfigError("database sources need SQLAlchemy and a driver: "
                          + install_line("sql")) from exc
    return sqlalchemy


def _pg_driver() -> str:
    """``postgresql://`` without a driver: psycopg (3) when installed, else SQLAlchemy's default
    (psycopg2)."""
    import importlib.util

    if importlib.util.find_spec("psycopg") is not None:
        return "postgresql+psycopg"
    return "postgresql"


def create_engine(url: str) -> Any:
    """A SQLAlchemy engine for ``url`` that cannot write: DuckDB/SQLite files opened read-only
    (they must exist), PostgreSQL sessions in read-only transactions. A missing dialect or driver
    is a :class:`ConfigError` with the ``pip install`` line (exit 2)."""
    sa = _sqlalchemy()
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    shown = mask(url)
    try:
        u = make_url(url)
    except ArgumentError as exc:
        raise InputError(f"{shown}: not a database URL; expected dialect://user@host:port/"
                         "database (e.g. postgresql://me@db:5432/crm, duckdb:///f.duckdb, "
                         "sqlite:///f.db)") from exc
    backend = u.get_backend_name()
    kwargs: dict[str, Any] = {}
    if u.username and u.password is None and os.environ.get(PASSWORD_ENV):
        u = u.set(password=os.environ[PASSWORD_ENV])
    if backend in ("postgresql", "postgres"):
        if u.drivername in ("postgresql", "postgres"):
            u = u.set(drivername=_pg_driver())
        kwargs["connect_args"] = {"options": "-c default_transaction_read_only=on"}
    elif backend == "sqlite":
        path = u.database or ""
        if path in ("", ":memory:"):
            raise InputError(f"{shown}: an in-memory SQLite database has no tables; give the "
                             "file: sqlite:///path/to/file.db")
        _must_exist(path, shown)
        import sqlite3

        uri = Path(path).absolute().as_uri() + "?mode=ro"
        kwargs["creator"] = lambda: sqlite3.connect(uri, uri=True, check_same_thread=False)
        u = u.set(database=None)
    elif backend == "duckdb":
        path = u.database or ""
        if path and path != ":memory:" and not path.startswith(("md:", "motherduck:")):
            _must_exist(path, shown)
            kwargs["connect_args"] = {"read_only": True}
    try:
        engine = sa.create_engine(u, **kwargs)
    except NoSuchModuleError as exc:
        raise ConfigError(f"{shown}: no SQLAlchemy dialect for {backend!r} is installed: "
                          f"{install_line('sql')} (or the dialect's own package)") from exc
    except ImportError as exc:
        name = getattr(exc, "name", None) or ""
        # the sql extra brings the PostgreSQL and DuckDB drivers (SQLite is Python's own); any
        # other dialect needs its own driver package
        how = (install_line("sql") if backend in ("postgresql", "duckdb", "sqlite") or not name
               else f"pip install {name.split('.')[0]} (the sql extra has PostgreSQL's and "
                    "DuckDB's drivers only)")
        raise ConfigError(f"{shown}: the {backend} driver {name + ' ' if name else ''}"
                          f"is not installed: {how}") from exc
    if backend == "sqlite":
        sa.event.listen(engine, "connect", _sqlite_functions)
    return engine


def _must_exist(path: str, shown: str) -> None:
    if not Path(path).is_file():
        raise InputError(f"{shown}: no such database file {path!r}")


def _sqlite_functions(dbapi_connection: Any, _record: Any) -> None:
    """SQLite has no md5(): the seeded sample's hash (:mod:`fairaudit.sources.sql_sample`)."""
    import hashlib

    def md5(text: Any) -> str | None:
        return None if text is None else hashlib.md5(str(text).encode()).hexdigest()

    dbapi_connection.create_function("md5", 1, md5, deterministic=True)


_READING_KEYWORDS = frozenset({"select", "with", "values", "table"})


def _first_keyword(query: str) -> str:
    """The first word of a statement after leading comments (``--``, ``/* */``), blanks and
    opening parentheses, in lower case (``""`` for none)."""
    text = query
    while True:
        text = text.lstrip().lstrip("(")
        if text.startswith("--"):
            text = text.partition("\n")[2]
        elif text.startswith("/*"):
            text = text.partition("*/")[2]
        else:
            break
    match = re.match(r"[A-Za-z_]+", text.lstrip())
    return match.group(0).lower() if match else ""


class SqlSource:
    """One table (``table``, ``schema.table``) or query (``query``) of a database."""

    def __init__(self, url: str, *, table: str | None = None, query: str | None = None,
                 key: str | None = None, null_values: Sequence[str] = ()) -> None:
        if (table is None) == (query is None):
            raise ConfigError(f"{mask(url)}: a database source needs --table NAME or --query "
                              "'SELECT ...' (chain: data.table / data.query), not "
                              + ("both" if table else "neither"))
        self.url = url
        self.shown = mask(url)
        self.table = table
        self.query = query.strip().rstrip(";").strip() if query is not None else None
        if self.query == "":
            raise ConfigError("--query: the query is empty")
        if self.query is not None:
            first = _first_keyword(self.query)
            if first not in _READING_KEYWORDS:
                raise ConfigError(
                    "--query: expected a SELECT statement (a query that returns rows; WITH, "
                    f"VALUES and TABLE too); got {'a ' + first.upper() if first else 'no'} "
                    "statement. fairaudit only reads: the query is never run")
        self.key = key
        self.null_values = tuple(null_values)
        self.engine = create_engine(url)
        self.dialect = self.engine.dialect.name
        self.moved = Moved()
        self._schema: dict[str, Any] | None = None

    # ---------------------------------------------------------------------------- naming
    @property
    def what(self) -> str:
        """How messages name the source: ``postgresql://me:***@db/crm, table 'people'``."""
        return f"{self.shown}, " + (f"table {self.table!r}" if self.table else "query")

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": "database", "dialect": self.dialect, "url": self.shown}
        out.update({"table": self.table} if self.table else {"query": self.query})
        if self.key:
            out["key"] = self.key
        out["moved"] = self.moved.to_json()
        return out

    # ---------------------------------------------------------------------------- statements
    def relation(self, columns: Sequence[str] | None = None) -> Any:
        """The table or the query as a FROM clause with ``columns`` (default: all)."""
        sa = _sqlalchemy()
        cols = [sa.column(c) for c in (columns if columns is not None else self.schema())]
        if self.table is not None:
            *schema, name = self.table.split(".")
            return sa.table(name, *cols, schema=".".join(schema) or None)
        return sa.text(self.query).columns(*cols).subquery(QUERY_ALIAS)

    def cleaned(self, columns: Sequence[str]) -> Any:
        """A subquery of ``columns`` where the user's ``null_values`` are NULL in text columns
        (as :func:`fairaudit.core.io.with_null_markers` does for Parquet)."""
        import polars as pl

        sa = _sqlalchemy()
        schema = self.schema()
        self.require(columns)
        rel = self.relation()
        exprs = []
        for c in dict.fromkeys(columns):
            col = rel.c[c]
            if self.null_values and schema[c] == pl.String:
                col = sa.case((col.in_(list(self.null_values)), sa.null()), else_=col)
            exprs.append(col.label(c))
        return sa.select(*exprs).select_from(rel).subquery("fa_src")

    def require(self, columns: Sequence[str]) -> None:
        schema = self.schema()
        missing = [c for c in columns if c not in schema]
        if missing:
            import difflib

            hints = [difflib.get_close_matches(c, list(schema), n=1) for c in missing]
            said = "; ".join(f"{c!r}" + (f" (did you mean {h[0]!r}?)" if h else "")
                             for c, h in zip(missing, hints, strict=True))
            raise InputError(f"{self.what}: no column {said}; it has "
                             + ", ".join(map(repr, list(schema)[:20])))

    # ---------------------------------------------------------------------------- schema
    def schema(self) -> dict[str, Any]:
        """Column -> polars dtype, from the driver's result description (one ``LIMIT`` probe),
        else the table's declared types, else the probe's values."""
        if self._schema is None:
            self._schema = self._probe()
        return self._schema

    def _probe(self) -> dict[str, Any]:
        sa = _sqlalchemy()
        from_ = sa.text(self._table_sql() if self.table is not None
                        else f"({self.query}) AS {QUERY_ALIAS}")
        names, description, _ = self._run_probe(sa.select(sa.text("*")).select_from(from_)
                                                .limit(0))
        if len(set(names)) != len(names):
            dupes = sorted({n for n in names if names.count(n) > 1})
            raise InputError(f"{self.what}: column name(s) {dupes} appear more than once; "
                             "name each column once (AS ...)")
        if not names:
            raise InputError(f"{self.what}: the table has no columns")
        declared = self._declared() if self.dialect == "sqlite" and self.table else {}
        out: dict[str, Any] = {}
        for j, name in enumerate(names):
            code = description[j][1] if j < len(description) else None
            out[name] = polars_type(self._type_name(code) or declared.get(name), self.dialect)
        unknown = [c for c, t in out.items() if t is None]
        if unknown:  # no type from the driver (SQLite, a query's expressions): the values say
            prep = self.engine.dialect.identifier_preparer
            cols = [sa.literal_column(prep.quote(c)) for c in unknown]
            _, _, rows = self._run_probe(sa.select(*cols).select_from(from_).limit(PROBE_ROWS))
            self.moved.rows["schema probe"] = len(rows)
            self.moved.bytes["schema probe"] = sum(len(repr(r)) for r in rows)
            for j, c in enumerate(unknown):
                out[c] = _infer([r[j] for r in rows])
        log.debug("%s: columns %s", self.what, {k: str(v) for k, v in out.items()})
        return out

    def _run_probe(self, stmt: Any) -> tuple[list[str], Any, list[Any]]:
        try:
            with self.engine.connect() as conn:
                res = conn.execute(stmt)
                names = list(res.keys())
                description = getattr(res.cursor, "description", None) or ()
                return names, description, res.fetchall()
        except Exception as exc:
            raise self.error("cannot be read", exc) from exc

    def _table_sql(self) -> str:
        prep = self.engine.dialect.identifier_preparer
        return ".".join(prep.quote(p) for p in self.table.split("."))

    def _declared(self) -> dict[str, str]:
        sa = _sqlalchemy()
        *schema, name = self.table.split(".")
        try:
            cols = sa.inspect(self.engine).get_columns(name, schema=".".join(schema) or None)
        except Exception:  # the probe already read the table; types come from values then
            return {}
        return {c["name"]: str(c["type"]) for c in cols}

    def _type_name(self, code: Any) -> str | None:
        if code is None:
            return None
        if isinstance(code, int) and self.dialect == "postgresql":  # psycopg: the type's OID
            try:
                from psycopg.postgres import types

                info = types.get(code)
                if info is None:
                    return None
                return "ARRAY" if getattr(info, "array_oid", None) == code else info.name
            except ImportError:
                return None
        if isinstance(code, int):
            return None
        return str(getattr(code, "__name__", code))

    # ---------------------------------------------------------------------------- reading
    def error(self, what: str, exc: BaseException) -> InputError:
        """An InputError naming the source (masked) and the database's first line."""
        if isinstance(exc, InputError | ConfigError):
            return exc  # type: ignore[return-value]
        text = _first_line(exc)
        if self.table and any(w in text.lower() for w in ("does not exist", "no such table",
                                                            "not found", "doesn't exist")):
            return InputError(f"{self.what}: no such table ({text}); tables: "
                              + self._tables_hint())
        return InputError(f"{self.what}: {what}: {text}")

    def _tables_hint(self) -> str:
        sa = _sqlalchemy()
        try:
            names = sa.inspect(self.engine).get_table_names()
        except Exception:
            return "(cannot be listed)"
        return ", ".join(map(repr, names[:20])) or "(none)"

    def fetch(self, stmt: Any, what: str, types: Mapping[str, Any] | None = None) -> pl.DataFrame:
        """The rows of ``stmt`` as a polars frame typed by the source's schema (``types`` for
        computed columns); counted in :attr:`moved` under ``what``."""
        try:
            with self.engine.connect() as conn:
                res = conn.execute(stmt)
                names = list(res.keys())
                rows = res.fetchall()
        except Exception as exc:
            raise self.error(f"the {what} query failed", exc) from exc
        frame = self.frame(rows, names, types)
        self.moved.add(what, frame)
        return frame

    def batches(self, stmt: Any, batch_rows: int, what: str) -> Iterator[pl.DataFrame]:
        """The rows of ``stmt`` in frames of ``batch_rows`` (a server-side cursor where the
        driver has one)."""
        try:
            with self.engine.connect().execution_options(
                    stream_results=True, yield_per=batch_rows) as conn:
                res = conn.execute(stmt)
                names = list(res.keys())
                for part in res.partitions(batch_rows):
                    frame = self.frame(part, names)
                    self.moved.add(what, frame)
                    yield frame
        except InputError:
            raise
        except Exception as exc:
            raise self.error(f"the {what} query failed", exc) from exc

    def frame(self, rows: Sequence[Any], names: Sequence[str],
              types: Mapping[str, Any] | None = None) -> pl.DataFrame:
        import polars as pl

        schema = {**self.schema(), **(types or {})}
        columns = list(zip(*rows, strict=True)) if rows else [()] * len(names)
        out = []
        for name, values in zip(names, columns, strict=True):
            dtype = schema.get(name, pl.String)
            try:
                series = pl.Series(name, list(values), dtype=dtype, strict=False)
                if series.null_count() > sum(v is None for v in values):
                    raw = pl.Series(name, list(values), strict=False)
                    series = raw.cast(dtype)  # strict: a value that does not fit is named
            except Exception as exc:
                raise InputError(f"{self.what}: column {name!r} does not read as {dtype}: "
                                 f"{_first_line(exc)}") from exc
            out.append(series)
        return pl.DataFrame(out, height=len(rows))

    def lazy(self, batch_rows: int = 100_000, not_null: Sequence[str] = ()) -> pl.LazyFrame:
        """The whole source as a polars LazyFrame: every polars operation works on it, the
        selected columns are read in batches (only what a plan asks for leaves the database).
        ``not_null``: only the rows without a NULL in these columns (filtered in the
        database)."""
        from polars.io.plugins import register_io_source

        schema = self.schema()

        def source(with_columns: list[str] | None, predicate: Any, n_rows: int | None,
                   batch_size: int | None) -> Iterator[pl.DataFrame]:
            sa = _sqlalchemy()
            cols = list(with_columns) if with_columns is not None else list(schema)
            if not cols:  # a plan that needs only the row count
                cols = [next(iter(schema))]
            sub = self.cleaned(list(dict.fromkeys([*cols, *not_null])))
            stmt = sa.select(*[sub.c[c] for c in cols]).where(
                sa.and_(sa.true(), *[sub.c[c].isnot(None) for c in not_null]))
            if n_rows is not None:
                stmt = stmt.limit(n_rows)
            for frame in self.batches(stmt, batch_size or batch_rows, "streamed rows"):
                if with_columns is not None and not with_columns:
                    frame = frame.select([])
                yield frame.filter(predicate) if predicate is not None else frame

        return register_io_source(source, schema=schema, explain_name="database",
                                  explain_detail=self.what)

    def close(self) -> None:
        self.engine.dispose()


# -------------------------------------------------------------------------------- types
_TYPE_WORDS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("JSON", "ARRAY", "[]", "STRUCT", "MAP", "LIST", "UNION", "GEOMETRY", "GEOGRAPHY", "RANGE",
      "POINT"), "object"),
    (("INTERVAL",), "duration"),  # before INT
    (("BYTEA", "BLOB", "BINARY", "BYTES"), "binary"),
    (("BIGINT", "INT8", "INT64", "LONG", "HUGEINT", "UBIGINT"), "int64"),
    (("SMALLINT", "INT2", "INT16"), "int16"),
    (("TINYINT", "INT1"), "int8"),
    (("INT",), "int32"),
    (("DOUBLE", "FLOAT8", "FLOAT64"), "float64"),
    (("REAL", "FLOAT4", "FLOAT32"), "float32"),
    (("FLOAT", "NUMERIC", "DECIMAL", "NUMBER", "MONEY"), "float64"),
    (("BOOL",), "bool"),
    (("TIMESTAMP", "DATETIME"), "datetime"),
    (("TIME",), "time"),  # after TIMESTAMP and DATETIME
    (("DATE",), "date"),
    (("CHAR", "TEXT", "STRING", "CLOB", "UUID", "ENUM", "NAME", "CITEXT", "VARCHAR"), "str"),
)


def polars_type(name: str | None, dialect: str) -> Any:
    """The polars dtype of a database type name (``BIGINT``, ``int8``, ``VARCHAR(20)``,
    ``DOUBLE PRECISION``, ``DECIMAL(21,1)``, ...), or None when the name says nothing. SQLite's
    INTEGER and REAL are 64-bit; DECIMAL/NUMERIC read as Float64 (as polars writes them)."""
    import polars as pl

    if not name or name.upper() in ("NULL", "NULLTYPE", "UNKNOWN"):
        return None
    upper = name.upper()
    kinds = {"object": pl.Object, "binary": pl.Binary, "int64": pl.Int64, "int16": pl.Int16,
             "int8": pl.Int8, "int32": pl.Int64 if dialect == "sqlite" else pl.Int32,
             "float64": pl.Float64,
             "float32": pl.Float64 if dialect == "sqlite" else pl.Float32,
             "bool": pl.Boolean, "datetime": pl.Datetime("us"), "duration": pl.Duration("us"),
             "time": pl.Time, "date": pl.Date, "str": pl.String}
    for words, kind in _TYPE_WORDS:
        if any(w in upper for w in words):
            return kinds[kind]
    return None


def _infer(values: Sequence[Any]) -> Any:
    """The polars dtype of a column from its first non-null Python values (String when all are
    null)."""
    import datetime
    import decimal

    import polars as pl

    for v in values:
        if v is None:
            continue
        if isinstance(v, bool):
            return pl.Boolean
        if isinstance(v, int):
            return pl.Int64
        if isinstance(v, float | decimal.Decimal):
            return pl.Float64
        if isinstance(v, datetime.datetime):
            return pl.Datetime("us")
        if isinstance(v, datetime.date):
            return pl.Date
        if isinstance(v, datetime.time):
            return pl.Time
        if isinstance(v, datetime.timedelta):
            return pl.Duration("us")
        if isinstance(v, bytes | bytearray | memoryview):
            return pl.Binary
        if isinstance(v, str):
            return pl.String
        return pl.Object
    return pl.String
