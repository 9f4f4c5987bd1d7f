"""Preprocessors (layer 1): feature selection and encoding."""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "CategoricalEncoder": "fairaudit.preprocess.encoding",
    "FUFS": "fairaudit.preprocess.fufs",
}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
