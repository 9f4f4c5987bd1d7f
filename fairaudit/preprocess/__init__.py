"""Preprocessors (layer 1): feature selection and encoding."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fairaudit._lazy import lazy_attributes

_LAZY = {
    "CategoricalEncoder": "fairaudit.preprocess.encoding",
    "FUFS": "fairaudit.preprocess.fufs",
}

__all__ = list(_LAZY)


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals())

if TYPE_CHECKING:  # what type checkers see; at run time the names load lazily (above)
    from fairaudit.preprocess.encoding import (
        CategoricalEncoder as CategoricalEncoder,
    )
    from fairaudit.preprocess.fufs import (
        FUFS as FUFS,
    )

