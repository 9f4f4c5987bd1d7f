"""The typed result model (:mod:`fairaudit.report.results`) and everything that turns it into
words and pages: HTML rendering (:mod:`fairaudit.report.render`), charts, explanations, the
summary, outputs, and the compare / history pages.

``fairaudit.report`` was a module before issue 24; its names (``render_html``, ``fmt_num``, ...)
still resolve here, with a :class:`DeprecationWarning`, from :mod:`fairaudit.report.render`.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    import importlib
    import importlib.util

    from fairaudit._compat import warn_moved

    if name.startswith("__"):
        raise AttributeError(name)
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:  # a submodule
        return importlib.import_module(f"{__name__}.{name}")
    render = importlib.import_module("fairaudit.report.render")
    if not hasattr(render, name):
        raise AttributeError(f"module 'fairaudit.report' has no attribute {name!r}")
    warn_moved(f"fairaudit.report.{name}", f"fairaudit.report.render.{name}")
    return getattr(render, name)
