"""What kind of source a DATA string names, and secrets kept out of every message.

``postgresql://user:secret@host/db`` and the other SQLAlchemy-style URLs are database sources;
``s3://``, ``gs://``, ``az://`` (and the other object-store schemes polars reads) are object-store
paths; anything else is a local path. :func:`mask` shows a URL with its password replaced by
``***``; :func:`redact` does the same to any text (an error message, a log line, a traceback),
so a password given in a URL is never printed, logged or written. Nothing here imports a
driver: the checks run before any connection.
"""

from __future__ import annotations

import re
from typing import Any

OBJECT_STORE_SCHEMES = ("s3", "s3a", "gs", "gcs", "az", "azure", "abfs", "abfss", "adl",
                        "http", "https", "hf")
"""Schemes read as object-store paths by polars' native readers (not database URLs)."""

_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*)://")
_USERINFO = re.compile(r"(?P<pre>\b[A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@]*):(?P<secret>[^@\s]*)@")
_SECRET_PARAMS = re.compile(
    r"(?i)(?P<pre>[?&;](?:password|passwd|pwd|secret|token|access_token|secret_access_key"
    r"|aws_secret_access_key|sas_token|sig|account_key|private_key)=)[^&;\s'\"]*")
MASK = "***"


def scheme_of(spec: Any) -> str | None:
    """The URL scheme of ``spec`` (lower case, without a ``+driver``), or None for a path."""
    if not isinstance(spec, str):
        return None
    m = _SCHEME.match(spec)
    return m["scheme"].lower().split("+")[0] if m else None


def is_object_store(spec: Any) -> bool:
    """``s3://bucket/prefix/*.parquet`` and the other object-store paths."""
    return scheme_of(spec) in OBJECT_STORE_SCHEMES


def is_database(spec: Any) -> bool:
    """A SQLAlchemy-style database URL (``postgresql://``, ``duckdb:///``, ``sqlite:///``,
    ``mysql+pymysql://`` ...): any URL that is neither an object-store path nor ``file://``."""
    scheme = scheme_of(spec)
    return scheme is not None and scheme not in OBJECT_STORE_SCHEMES and scheme != "file"


def mask(spec: Any) -> Any:
    """``spec`` with the password of a URL (and secret query parameters) shown as ``***``;
    anything that is not a string is returned as it is."""
    return redact(spec) if isinstance(spec, str) else spec


def redact(text: str) -> str:
    """Every ``scheme://user:password@`` and ``?password=...`` in ``text`` masked."""
    if "://" not in text and "=" not in text:
        return text
    text = _USERINFO.sub(lambda m: f"{m['pre']}:{MASK}@", text)
    return _SECRET_PARAMS.sub(lambda m: f"{m['pre']}{MASK}", text)


def install_line(extra: str) -> str:
    """The exact command that installs an extra of the distribution."""
    return f"pip install 'fairaudit-clusters[{extra}]'"


def url_of(data: Any) -> Any:
    """A SQLAlchemy ``Engine`` or ``Connection`` given as data -> its URL (password included:
    it is masked wherever it is shown); anything else unchanged. A ``Table`` carries no
    connection: a :class:`~fairaudit.errors.ConfigError` says what to give instead."""
    if not type(data).__module__.startswith("sqlalchemy"):
        return data
    from fairaudit.errors import ConfigError

    engine = getattr(data, "engine", None)
    url = getattr(engine, "url", None)
    if url is not None and hasattr(url, "render_as_string"):
        return url.render_as_string(hide_password=False)
    name = getattr(data, "name", None)
    raise ConfigError(f"data: a SQLAlchemy {type(data).__name__} carries no connection; give the "
                      "database URL (or the Engine) with table="
                      + (repr(str(name)) if name else "'NAME'"))


def local_file_of(spec: str) -> str | None:
    """The local file behind ``spec``, which an output must never replace: the path itself,
    the database file of a ``sqlite:///`` or ``duckdb:///`` URL, None for a server or a store."""
    if is_object_store(spec):
        return None
    if is_database(spec):
        if scheme_of(spec) in ("sqlite", "duckdb") and ":///" in spec:
            path = spec.split(":///", 1)[1].split("?", 1)[0]
            return path if path and path != ":memory:" else None
        return None
    return spec
