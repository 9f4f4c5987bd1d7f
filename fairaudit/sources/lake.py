"""Delta Lake tables, read as polars reads them (``pl.scan_delta``, ``pip install
'fairaudit-clusters[lake]'``): ``--format delta``, or any folder holding a ``_delta_log/``
(local or in an object store); ``--version N`` audits the table as it was at version ``N``.

A Delta folder also holds the data files of older versions and removed rows: it is never read
as a plain folder of Parquet files (that would count rows the table no longer has). The table's
log decides which files are read.

Iceberg tables are not read yet: polars' reader needs a ``pyiceberg`` catalog (REST, Glue, Hive
or SQL) to find a table's current metadata, so a source would need the catalog's configuration
as well as a name, not just a path; see docs/sources.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairaudit.errors import ConfigError, InputError
from fairaudit.sources.urls import install_line, is_object_store, mask

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl


def is_delta(spec: str, options: Mapping[str, Any]) -> bool:
    """``--format delta``, or a local folder with a ``_delta_log/`` folder."""
    if options.get("format") == "delta":
        return True
    if is_object_store(spec):
        return False  # remote: say --format delta (no listing just to find out)
    try:
        return (Path(spec) / "_delta_log").is_dir()
    except (OSError, ValueError):
        return False


def _deltalake() -> Any:
    try:
        import deltalake
    except ImportError as exc:
        raise ConfigError(f"Delta tables need deltalake: {install_line('lake')}") from exc
    return deltalake


def storage_options(spec: str) -> dict[str, str] | None:
    """deltalake reads the store's standard variables itself; an S3 endpoint over plain http
    (a local S3 such as MinIO) also needs ``AWS_ALLOW_HTTP``, which polars' own reader infers."""
    import os

    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL", "")
    if is_object_store(spec) and endpoint.startswith("http://"):
        return {"AWS_ALLOW_HTTP": os.environ.get("AWS_ALLOW_HTTP", "true")}
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def scan_delta(spec: str, options: Mapping[str, Any]) -> pl.LazyFrame:
    """The Delta table at ``spec`` (``options["version"]``: that version) as a LazyFrame."""
    import polars as pl

    from fairaudit.core.io import with_null_markers

    deltalake = _deltalake()
    version = options.get("version")
    shown = mask(spec)
    try:
        table = deltalake.DeltaTable(spec, storage_options=storage_options(spec))
    except Exception as exc:
        raise InputError(f"{shown}: not a Delta table ({_first_line(exc)})") from exc
    latest = table.version()
    if version is not None and not 0 <= int(version) <= latest:
        raise InputError(f"{shown}: the Delta table has no version {version} (versions 0 to "
                         f"{latest}); --version takes one of them")
    try:
        lf = pl.scan_delta(spec, version=version, storage_options=storage_options(spec))
        lf.collect_schema()
    except Exception as exc:
        raise InputError(f"{shown}: cannot be read as a Delta table: {_first_line(exc)}") from exc
    return with_null_markers(lf, options.get("null_values", ()))


def describe_delta(spec: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The source block of the audit JSON: the table and the version audited."""
    version = options.get("version")
    if version is None:
        try:
            version = _deltalake().DeltaTable(spec, storage_options=storage_options(spec)
                                              ).version()
        except Exception:  # the read reported it; the JSON says what it knows
            version = None
    return {"kind": "delta", "path": mask(spec), "version": version}
