"""Opening inputs lazily, checking them early, and fingerprinting them.

The built-in reader (``fairaudit_builtins.io``) uses :func:`scan_builtin`; other formats come from
plugins through the ``fairaudit_read_table`` hook. The input is only ever read, never written.
"""

from __future__ import annotations

import glob as _glob
import hashlib
import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairaudit.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

log = logging.getLogger(__name__)

_PARQUET_MAGIC = b"PAR1"
_FULL_HASH_LIMIT = 512 * 1024 * 1024
_CHUNK = 8 * 1024 * 1024


@dataclass(frozen=True)
class InputFiles:
    """What a path, directory or glob resolves to."""

    spec: str
    files: tuple[Path, ...]
    format: str  # "parquet" | "csv"


def is_pattern(spec: str) -> bool:
    """Whether ``spec`` is read as a glob pattern: it holds ``*``, ``?`` or ``[`` and no file or
    folder of that exact name exists (``sel[2].csv`` that exists is that file, never the
    pattern matching ``sel2.csv``). Local paths only: other schemes decide for themselves."""
    return any(ch in spec for ch in "*?[") and not os.path.lexists(spec)


def file_kind(mode: int) -> str:
    """What an ``st_mode`` is, in words: ``a regular file``, ``a folder``, ``a FIFO (named
    pipe)``, ``a character device``, ...."""
    import stat

    for test, words in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a folder"),
                        (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                        (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                        (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return words
    return "not a regular file"  # pragma: no cover - door, port, whiteout


def _regular_input(path: Path, spec: str) -> None:
    """A data file must be a regular file: a FIFO, a device or a socket could block forever
    (``mkfifo``, a pipe without a writer) or never end (``/dev/zero``)."""
    import stat

    try:
        mode = path.stat().st_mode
    except OSError as exc:  # a dangling symbolic link, a file gone since it was listed
        raise InputError(f"{spec}: cannot be read ({exc.strerror or exc})") from None

    if not stat.S_ISREG(mode):
        raise InputError(
            f"{spec}: is {file_kind(mode)}, not a regular file; fairaudit reads tables from "
            "files (Parquet or CSV) or folders of them: save the stream to a file first")


def resolve_input(spec: str, fmt: str | None = None) -> InputFiles:
    """Resolve ``spec`` (file, directory of parquet files, or glob) or raise a clear error.

    ``fmt`` (``--format`` / ``data.format``: ``"csv"`` or ``"parquet"``): the format of files
    whose names do not say it (``yeast.data``); a Parquet file is still known by its marker."""
    if is_pattern(spec):
        files = tuple(sorted(Path(p) for p in _glob.glob(spec, recursive=True)
                             if not Path(p).is_dir()))
        for f in files:
            _regular_input(f, f"{spec}: {f}")  # a FIFO the pattern matches is refused, named
        if not files:
            raise InputError(f"{spec}: the pattern matches no files")
    else:
        path = Path(spec)
        if spec == "-" and not path.exists():
            raise InputError(
                "-: fairaudit does not read tables from standard input (an audit reads its "
                "input more than once: a count of every row, then a sample); save the stream "
                "to a file (Parquet or CSV) and give its path")
        if not path.exists():
            raise InputError(f"{spec}: no such file or directory")
        if path.is_dir():
            files = _folder_files(path, spec)
        else:
            _regular_input(path, spec)
            files = (path,)
    given = fmt if fmt in ("csv", "parquet") else None
    fmt = _sniff(files[0], given)
    others = {f for f in files if _sniff(f, given) != fmt}
    if others:
        raise InputError(
            f"{spec}: mixes formats ({fmt} and {_sniff(next(iter(others)), given)}); give one "
            "format"
        )
    return InputFiles(spec, files, fmt)


_PARQUET_SUFFIXES = (".parquet", ".pq")
_CSV_SUFFIXES = (".csv", ".tsv")
_OTHER_DATA_SUFFIXES = (".json", ".jsonl", ".ndjson", ".xlsx", ".xls", ".feather", ".arrow",
                        ".ipc", ".orc", ".avro", ".txt", ".sav", ".dta", ".sas7bdat", ".rds")


def _folder_files(folder: Path, spec: str) -> tuple[Path, ...]:
    """The data files of a folder (and its subfolders, e.g. hive partitions ``year=2024/``),
    all of one format: Parquet, or CSV/TSV. Hidden and marker files (``.crc``, ``_SUCCESS``,
    ``_metadata``) are skipped. A folder that mixes formats is refused, naming the files that
    would be left out: fairaudit never audits part of a folder without saying so."""
    found: dict[str, list[Path]] = {"parquet": [], "csv": [], "other": []}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder).parts
        if any(part.startswith((".", "_")) for part in rel) or p.is_dir():
            continue
        suffix = p.suffix.lower()
        kind = ("parquet" if suffix in _PARQUET_SUFFIXES else "csv" if suffix in _CSV_SUFFIXES
                else "other" if suffix in _OTHER_DATA_SUFFIXES else None)
        if kind is None:
            continue
        if not p.is_file():  # a FIFO, device or dangling link named part-3.parquet: refused,
            _regular_input(p, f"{spec}: {p.relative_to(folder)}")  # never left out unsaid
        found[kind].append(p)
    kinds = [k for k in ("parquet", "csv") if found[k]]
    if not kinds:
        raise InputError(f"{spec}: the directory contains no .parquet, .csv or .tsv files")
    left_out = [p for k in ("parquet", "csv", "other") if k != kinds[0] for p in found[k]]
    if left_out:
        names = ", ".join(str(p.relative_to(folder)) for p in left_out[:5])
        more = f" and {len(left_out) - 5} more" if len(left_out) > 5 else ""
        raise InputError(
            f"{spec}: the folder mixes formats ({len(found[kinds[0]])} {kinds[0]} file(s) and "
            f"{names}{more}); fairaudit reads a folder whole, in one format: move the other "
            f"files out, or give a glob such as {spec.rstrip('/')}/*.{kinds[0]}"
        )
    return tuple(found[kinds[0]])


def _sniff(path: Path, given: str | None = None) -> str:
    suffix = path.suffix.lower()
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror})") from exc
    if head == _PARQUET_MAGIC:
        return "parquet"
    if suffix == ".parquet" or suffix == ".pq" or given == "parquet":
        raise InputError(f"{path}: not a Parquet file (it does not start with the PAR1 marker)")
    if suffix in (".csv", ".tsv", ".txt") or given == "csv":
        return "csv"
    raise InputError(
        f"{path}: unrecognised input format; expected a Parquet file (.parquet), a directory or "
        "glob of Parquet files, or a CSV file (.csv/.tsv); for a file whose name does not say "
        "its format give --format csv or --format parquet (data.format in a chain)"
    )


#: Cells of a CSV read as missing (the common spellings of pandas' and R's defaults and UCI's
#: ``?``). ``None`` is left out on purpose: it is a real answer ("religion: None") too often.
CSV_NULL_VALUES = ("", "NA", "N/A", "n/a", "#N/A", "<NA>", "NULL", "null", "NaN", "nan", "?")


def csv_null_values(options: Mapping[str, Any]) -> list[str]:
    """The cells a CSV reads as missing: :data:`CSV_NULL_VALUES` (only the empty cell with
    ``default_nulls=False``, e.g. where ``NA`` is Namibia) and the user's ``null_values``."""
    base = CSV_NULL_VALUES if options.get("default_nulls", True) else ("",)
    return list(dict.fromkeys((*base, *options.get("null_values", ()))))


def default_null_markers(spec: str, options: Mapping[str, Any],
                         columns: Sequence[str]) -> dict[str, dict[str, int]]:
    """How many cells of ``columns`` (of a CSV input) were read as missing because they hold one
    of the default markers (``NA``, ``NULL``, ``?``, ...; the empty cell left out):
    ``{column: {marker: cells}}``. Empty for Parquet, for ``default_nulls=False`` and where no
    default marker occurs — one pass over those columns read as plain text."""
    import polars as pl

    if not columns or not options.get("default_nulls", True):
        return {}
    try:
        inp = resolve_input(spec, options.get("format"))
    except InputError:
        return {}
    if inp.format != "csv":
        return {}
    sep = options.get("separator") or ("\t" if inp.files[0].suffix.lower() == ".tsv" else ",")
    markers = [m for m in CSV_NULL_VALUES if m and m not in options.get("null_values", ())]
    lf = pl.scan_csv([str(f) for f in inp.files], separator=sep, infer_schema=False,
                     null_values=[""], glob=False)
    have = set(lf.collect_schema().names())
    cols = [c for c in dict.fromkeys(columns) if c in have]
    if not cols:
        return {}
    counts = lf.select(
        pl.col(c).filter(pl.col(c).is_in(markers)).value_counts().implode().alias(c)
        for c in cols).collect()
    out: dict[str, dict[str, int]] = {}
    for c in cols:
        found = {str(r[c]): int(r["count"]) for r in counts.get_column(c)[0]}
        if found:
            out[c] = found
    return out


def null_markers_note(found: Mapping[str, Mapping[str, int]]) -> str:
    """The note that default missing markers removed rows, naming them and the way out."""
    parts = "; ".join(
        f"{c!r}: " + ", ".join(f"{n:,} {m!r}" for m, n in sorted(v.items(), key=lambda x: -x[1]))
        for c, v in found.items())
    return (f"cells read as missing because they hold a default missing marker ({parts}); if "
            "one of these is a real value here (e.g. 'NA' for Namibia), pass --no-default-nulls "
            "(chain: data.default_nulls = false; Python: default_nulls=False)")


def with_null_markers(lf: pl.LazyFrame, markers: Sequence[str]) -> pl.LazyFrame:
    """Text cells (string and categorical columns) equal to one of ``markers`` become null: the
    user's ``null_values`` for inputs that have real nulls already (Parquet, in-memory tables),
    where a CSV applies them while reading."""
    import polars as pl

    if not markers:
        return lf
    schema = lf.collect_schema()
    cols = [c for c, t in schema.items() if t == pl.String or isinstance(t, pl.Categorical | pl.Enum)]
    if not cols:
        return lf
    wanted = list(markers)
    return lf.with_columns(
        pl.when(pl.col(c).cast(pl.String).is_in(wanted)).then(None).otherwise(pl.col(c)).alias(c)
        for c in cols)

#: Rows a CSV column's type is inferred from; a later cell that does not parse makes the runner
#: read that column as text (see :func:`csv_parse_failure`).
CSV_INFER_ROWS = 10_000

_PARSE_FAILURE = re.compile(r"could not parse `(?P<value>.*?)` as dtype `(?P<dtype>[^`]+)` "
                            r"at column '(?P<column>.+?)'")


def csv_parse_failure(exc: BaseException) -> tuple[str, str, str] | None:
    """``(column, value, dtype)`` when ``exc`` is polars failing to parse a CSV cell as the type
    inferred from the first :data:`CSV_INFER_ROWS` rows; else None."""
    m = _PARSE_FAILURE.search(str(exc))
    return None if m is None else (m["column"], m["value"], m["dtype"])


_KINDS = {"i": "whole numbers", "u": "whole numbers", "f": "numbers", "b": "true/false",
          "d": "dates", "t": "times"}


def text_column_note(source: str, failure: tuple[str, str, str]) -> str:
    """The warning that a column of ``source`` is read again as text (``failure`` from
    :func:`csv_parse_failure`)."""
    column, value, dtype = failure
    return (f"{source}: column {column!r} is read as text: a cell holds {value!r} where its "
            f"first {CSV_INFER_ROWS:,} rows read as {_KINDS.get(dtype[:1], dtype)} (if {value!r} "
            "means missing, remove it or write it as empty/NA)")


def scan_builtin(spec: str, options: Mapping[str, Any]) -> pl.LazyFrame:
    """Open Parquet (file, directory, glob) or CSV lazily, and check it can be read."""
    import polars as pl

    inp = resolve_input(spec, options.get("format"))
    if inp.format == "parquet":
        if len(inp.files) > 1:
            _check_same_schema(inp.files, lambda f: pl.read_parquet_schema(f), "Parquet")
        try:  # hive partitions (year=2024/part.parquet): the keys become columns
            lf = pl.scan_parquet([str(f) for f in inp.files], hive_partitioning=True,
                                 glob=False)
            schema = lf.collect_schema()
        except Exception as exc:  # polars raises ComputeError / OSError variants
            raise InputError(f"{spec}: cannot be read as Parquet: {_first_line(exc)}") from exc
        lf = with_null_markers(lf, options.get("null_values", ()))
        for key, flag in (("separator", "--separator"), ("decimal_comma", "--decimal-comma")):
            if options.get(key):
                log.warning("%s (data.%s) has no effect: %s is Parquet, not CSV", flag, key,
                            spec)
    else:
        path = inp.files[0]
        sep = options.get("separator") or ("\t" if path.suffix.lower() == ".tsv" else ",")
        nulls = csv_null_values(options)
        text = {c: pl.String for c in options.get("text_columns", ())}
        from fairaudit.core.csv_checks import check_csv_shape, check_utf8, csv_header

        headers = []
        for f in inp.files:
            headers.append(csv_header(f, sep))  # bounded: before reading the file whole
            check_utf8(f)
            check_csv_shape(f, sep, headers[-1])

        comma = bool(options.get("decimal_comma", False))
        if comma and sep == ",":
            raise InputError(f"{spec}: decimal commas (--decimal-comma) need another field "
                             "separator than ','; pass --separator ';'")

        def _csv(files: list[str]) -> pl.LazyFrame:
            return pl.scan_csv(files, separator=sep, infer_schema_length=CSV_INFER_ROWS,
                               null_values=nulls, schema_overrides=text or None,
                               decimal_comma=comma, glob=False)

        if len(inp.files) > 1:
            _check_same_schema(inp.files, lambda f: dict(_csv([str(f)]).collect_schema()), "CSV")
        try:
            keys = _hive_keys(inp.files)
            if keys:  # hive folders (year=2024/part.csv): the keys become columns, as for Parquet
                types = _hive_types(keys)

                def value(k: str, f: Path) -> Any:
                    v = keys[k].get(f)
                    return int(v) if v is not None and types[k] == pl.Int64 else v

                lf = pl.concat([_csv([str(f)]).with_columns(
                    [pl.lit(value(k, f), dtype=t).alias(k) for k, t in types.items()])
                    for f in inp.files])
            else:
                lf = _csv([str(f) for f in inp.files])
            from fairaudit.core.csv_checks import header_names

            lf = header_names(lf, headers[0])
            schema = lf.collect_schema()
        except Exception as exc:
            raise InputError(f"{spec}: cannot be read as CSV: {_first_line(exc)}") from exc
    if len(schema) == 0:
        raise InputError(f"{spec}: the table has no columns")
    return lf


def _hive_keys(files: tuple[Path, ...]) -> dict[str, dict[Path, str]]:
    """``key -> {file: value}`` of the ``key=value`` folders above each file (hive layout)."""
    out: dict[str, dict[Path, str]] = {}
    for f in files:
        for part in f.parent.parts:
            key, eq, value = part.partition("=")
            if eq and key and "/" not in key:
                out.setdefault(key, {})[f] = value
    return out


def _hive_types(keys: dict[str, dict[Path, str]]) -> dict[str, Any]:
    """Int64 for a key whose values are all integers, else String (as polars does for Parquet)."""
    import polars as pl

    def is_int(v: str) -> bool:
        return v.lstrip("-").isdigit()

    return {k: pl.Int64 if all(is_int(v) for v in vals.values()) else pl.String
            for k, vals in keys.items()}


def _check_same_schema(files: tuple[Path, ...], schema_of: Any, what: str) -> None:
    """Partitions must agree on every column's type (else name both files and the column)."""
    first: dict[str, Any] | None = None
    for f in files:
        try:
            schema = dict(schema_of(f))
        except Exception as exc:
            raise InputError(f"{f}: cannot be read as {what}: {_first_line(exc)}") from exc
        if first is None:
            first, first_file = schema, f
            continue
        for col, dtype in schema.items():
            if col in first and first[col] != dtype:
                raise InputError(
                    f"column {col!r} has type {first[col]} in {first_file} but {dtype} in {f}; "
                    "partitions must agree on every column's type"
                )


_CSV_READ_ERRORS = ("csv", "schema", "ragged", "escaped", "field", "quote")


def csv_read_error(exc: BaseException, path: Any, fmt: str | None = None) -> InputError | None:
    """polars failing on a CSV's bytes while a run collects it (the checks before reading
    passed: a pathology they do not know) as the input error it is, naming the file; None when
    ``exc`` is not that (the input is no CSV path, or the message is not polars' reader's)."""
    if not isinstance(path, str | os.PathLike):
        return None
    try:
        if resolve_input(os.fspath(path), fmt).format != "csv":
            return None
    except Exception:  # noqa: BLE001 - not a readable local path: not this case
        return None
    text = _first_line(exc)
    if not any(w in text.lower() for w in _CSV_READ_ERRORS):
        return None
    return InputError(f"{os.fspath(path)}: cannot be read as CSV: {text}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def fingerprint(spec: str, fmt: str | None = None) -> str:
    """A content hash of the input files (sha256). Large files hash their size, head and tail.

    The hash follows the data, not its name: a single file hashes its bytes only (a renamed copy
    has the same fingerprint, so the privacy ledger knows it); a directory or glob also hashes
    each file's path below their common folder (hive keys such as ``year=2024`` are data)."""
    try:
        inp = resolve_input(spec, fmt)
    except InputError:
        return "unavailable"
    h = hashlib.sha256()
    partial = False
    root = Path(os.path.commonpath([str(f.parent) for f in inp.files])) if inp.files else None
    for f in inp.files:
        size = f.stat().st_size
        if len(inp.files) > 1 and root is not None:
            h.update(f.relative_to(root).as_posix().encode())
        h.update(size.to_bytes(8, "little"))
        with open(f, "rb") as fh:
            if size <= _FULL_HASH_LIMIT:
                while chunk := fh.read(_CHUNK):
                    h.update(chunk)
            else:
                partial = True
                h.update(fh.read(_CHUNK))
                fh.seek(size - _CHUNK)
                h.update(fh.read(_CHUNK))
    return ("sha256-sampled:" if partial else "sha256:") + h.hexdigest()


class BackgroundFingerprint:
    """:func:`fingerprint` of ``spec`` on a daemon thread from :meth:`start` on (hashlib releases
    the GIL while it hashes); :meth:`result` starts it if need be and waits for it. The runner
    starts it after the passes over the data, which keep every core busy (hashing beside them
    competes for the cores: a 168 MB file takes 0.16 s), so that it runs beside the steps that
    mostly use one. An interrupted run does not wait for the thread; a run that fails before
    :meth:`start` never hashes."""

    def __init__(self, spec: Any, fmt: str | None = None) -> None:
        self._spec, self._fmt = spec, fmt
        self._box: dict[str, Any] = {}
        self._thread: Any = None

    def start(self) -> None:
        import threading

        if self._thread is not None:
            return

        def work() -> None:
            try:
                self._box["value"] = fingerprint(self._spec, self._fmt)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller of result()
                self._box["error"] = exc

        self._thread = threading.Thread(target=work, name="fairaudit-fingerprint", daemon=True)
        self._thread.start()

    def result(self) -> str:
        self.start()
        self._thread.join()
        if "error" in self._box:
            raise self._box["error"]
        return self._box["value"]


IN_MEMORY = "<in-memory table>"
"""How messages and the JSON name a table given as an object rather than a path."""


def as_polars(data: Any) -> Any:
    """``data`` as fairaudit reads it: a path string (file, folder or glob), or a polars
    DataFrame/LazyFrame. pandas frames are converted column by column; anything with the Arrow
    PyCapsule stream interface (``__arrow_c_stream__``) is imported by polars (zero-copy where
    the types allow; pyarrow not needed). None stays None (the chain's ``data.path``). Anything
    else is an :class:`InputError` naming it."""
    import polars as pl

    if data is None:  # the chain's data.path
        return None
    if isinstance(data, str | Path):
        if not str(data):
            raise InputError("data: expected a path, a table or an Arrow stream; got ''")
        return str(data)
    if isinstance(data, pl.DataFrame | pl.LazyFrame):
        return data
    if is_pandas(data):
        return from_pandas(data)
    if hasattr(data, "__arrow_c_stream__"):
        try:
            return pl.DataFrame(data)
        except Exception as exc:
            raise InputError(f"{IN_MEMORY}: the Arrow stream of a {type(data).__name__} cannot "
                             f"be read: {_first_line(exc)}") from exc
    raise InputError(
        "data: expected a path (file, folder or glob), a polars or pandas DataFrame, or an "
        f"object with the Arrow PyCapsule stream interface; got {type(data).__name__}"
    )


def is_pandas(obj: Any) -> bool:
    """Whether ``obj`` is a pandas DataFrame (without importing pandas)."""
    return type(obj).__name__ == "DataFrame" and type(obj).__module__.startswith("pandas")


def from_pandas(frame: Any) -> pl.DataFrame:
    """A polars copy of a pandas DataFrame, column by column through numpy (no pyarrow needed).

    Numeric and boolean columns keep their type; nullable (extension) columns keep their nulls;
    categorical and object columns become strings (NaN/None -> null). Column names must be
    unique strings."""
    import numpy as np
    import polars as pl

    names = [str(c) for c in frame.columns]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise InputError(f"pandas DataFrame: column name(s) {dupes} appear more than once; "
                         "column names must be unique")
    columns = []
    for name, (_, col) in zip(names, frame.items(), strict=True):
        dtype = col.dtype
        kind = getattr(dtype, "kind", "O")
        try:
            if isinstance(dtype, np.dtype) and kind in "biufM":
                series = pl.Series(name, col.to_numpy())
            elif str(dtype) == "category" or kind in "OSU" or str(dtype).startswith("string"):
                values = col.astype(object).where(col.notna(), None).to_numpy()
                series = pl.Series(name, [None if v is None else str(v) for v in values],
                                   dtype=pl.String)
            else:  # pandas extension types (Int64, Float64, boolean, ...): nulls kept
                values = col.astype(object).where(col.notna(), None).tolist()
                series = pl.Series(name, values, strict=False)
        except Exception as exc:
            raise InputError(
                f"pandas DataFrame: column {name!r} of type {dtype} cannot be converted "
                f"({_first_line(exc)}); convert it to a number or string column first"
            ) from exc
        columns.append(series)
    return pl.DataFrame(columns)
