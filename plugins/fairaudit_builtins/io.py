"""Built-in reader: Parquet (file, directory, glob) and CSV, opened lazily with polars."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fairaudit.core.io import scan_builtin
from fairaudit.hookspecs import hookimpl


@hookimpl(trylast=True)
def fairaudit_read_table(path: str, options: Mapping[str, Any]) -> Any:
    return scan_builtin(path, options)
