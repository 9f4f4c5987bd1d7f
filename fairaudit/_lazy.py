"""Lazy package attributes (PEP 562), so that importing a package stays cheap.

A package lists what it exports and the module each name comes from; that module is imported on
first access. ``import fairaudit`` and ``fairaudit --help`` then load no numpy, scipy, scikit-learn
or Great Expectations.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(
    package: str, exports: Mapping[str, str], namespace: Mapping[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``exports`` maps a name to its module;
    ``namespace`` is the package's ``globals()``."""

    def __getattr__(name: str) -> Any:
        if name in exports:
            return getattr(importlib.import_module(exports[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
