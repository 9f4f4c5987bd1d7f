"""Built-in reader: Parquet (file, directory, glob) and CSV, opened lazily with polars."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fairaudit.hookspecs import hookimpl
from fairaudit.io import scan_builtin


@hookimpl(trylast=True)
def fairaudit_read_table(path: str, options: Mapping[str, Any]) -> Any:
    return scan_builtin(path, options)
