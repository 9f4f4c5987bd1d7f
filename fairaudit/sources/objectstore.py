"""Object-store paths: ``s3://bucket/prefix/*.parquet``, ``gs://...``, ``az://...``.

Reading goes through polars' native cloud readers, configured by each store's standard
environment variables (S3: ``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``, ``AWS_SESSION_TOKEN``, ``AWS_PROFILE``; GCS:
``GOOGLE_APPLICATION_CREDENTIALS``; Azure: ``AZURE_STORAGE_ACCOUNT_NAME``,
``AZURE_STORAGE_ACCOUNT_KEY``, ...): a file, a prefix ending in ``/`` (every Parquet file under
it) or a glob (``*``, ``**``), hive partitions (``year=2024/``) becoming columns as for local
folders. The Dask engine needs the file list (one task per file): :func:`list_files` lists the
store with ``obstore`` (``pip install 'fairaudit-clusters[lake]'``), the same Rust client
polars uses, configured by the same variables.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fairaudit.errors import ConfigError, InputError
from fairaudit.sources.urls import install_line, mask

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def format_of(spec: str, options: Mapping[str, Any]) -> str:
    """``parquet`` or ``csv``: the ``format`` option, else the suffix (a prefix or a glob
    without one: Parquet)."""
    given = options.get("format")
    if given in ("parquet", "csv"):
        return given
    tail = spec.rstrip("/").rsplit("/", 1)[-1].lower()
    if tail.endswith((".csv", ".tsv", ".csv.gz")):
        return "csv"
    if tail.endswith((".parquet", ".pq")) or "*" in tail or spec.endswith("/") or "." not in tail:
        return "parquet"
    raise InputError(f"{mask(spec)}: unrecognised input format; expected .parquet or .csv "
                     "files, a prefix ending in '/', or --format parquet|csv")


def _pattern(spec: str) -> str:
    """A prefix ``s3://b/seg/`` reads every Parquet file below it (as a local folder)."""
    return spec + "**/*.parquet" if spec.endswith("/") else spec


def scan_remote(spec: str, options: Mapping[str, Any]) -> pl.LazyFrame:
    """Open an object-store path lazily with polars and check its schema can be read."""
    import polars as pl

    from fairaudit.core.io import CSV_INFER_ROWS, csv_null_values, with_null_markers

    fmt = format_of(spec, options)
    pattern = _pattern(spec)
    try:
        if fmt == "parquet":
            lf = pl.scan_parquet(pattern, hive_partitioning=True)
            lf.collect_schema()
            lf = with_null_markers(lf, options.get("null_values", ()))
        else:
            sep = options.get("separator") or ("\t" if spec.lower().endswith(".tsv") else ",")
            lf = pl.scan_csv(pattern, separator=sep, infer_schema_length=CSV_INFER_ROWS,
                             null_values=csv_null_values(options),
                             schema_overrides={c: pl.String
                                               for c in options.get("text_columns", ())} or None,
                             decimal_comma=bool(options.get("decimal_comma", False)))
            lf.collect_schema()
    except Exception as exc:
        text = _first_line(exc)
        if "expanded paths were empty" in text or "no such file" in text.lower() or (
                "not found" in text.lower()):
            raise InputError(f"{mask(spec)}: the pattern matches no files") from exc
        raise InputError(f"{mask(spec)}: cannot be read as {fmt.upper() if fmt == 'csv' else 'Parquet'}"
                         f": {text}") from exc
    return lf


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """``*`` within a path segment, ``**/`` across segments, ``?`` one character."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def list_files(spec: str) -> list[str]:
    """The files a remote file, prefix or glob names (sorted; hidden and ``_`` files and
    folders left out, as in local folders)."""
    try:
        import obstore
        from obstore.store import from_url
    except ImportError as exc:
        raise ConfigError(f"{mask(spec)}: the Dask engine lists object stores with obstore: "
                          f"{install_line('lake')}") from exc
    scheme, _, rest = spec.partition("://")
    bucket, _, path = rest.partition("/")
    pattern = _pattern(path) if spec.endswith("/") else path
    wild = re.search(r"[*?\[]", pattern)
    prefix = pattern[:wild.start()].rsplit("/", 1)[0] if wild else pattern
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL", "")
    options = {"allow_http": True} if endpoint.startswith("http://") else None
    try:
        store = from_url(f"{scheme}://{bucket}", client_options=options)
        found = [o["path"] for batch in obstore.list(store, prefix=prefix or None)
                 for o in batch]
    except Exception as exc:
        raise InputError(f"{mask(spec)}: cannot be listed: {_first_line(exc)}") from exc
    regex = _glob_regex(pattern) if wild else None
    files = sorted(f for f in found
                   if (regex.match(f) if regex else f == pattern)
                   and not any(p.startswith((".", "_")) for p in f[len(prefix):].split("/")))
    if not files:
        raise InputError(f"{mask(spec)}: the pattern matches no files")
    return [f"{scheme}://{bucket}/{f}" for f in files]
