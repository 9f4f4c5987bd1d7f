"""Built-in reader of database tables and queries, object-store paths and Delta tables
(``fairaudit.sources``); local Parquet and CSV are left to the file reader."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fairaudit.hookspecs import hookimpl
from fairaudit.sources import read_source


@hookimpl
def fairaudit_read_table(path: str, options: Mapping[str, Any]) -> Any:
    return read_source(path, options)
