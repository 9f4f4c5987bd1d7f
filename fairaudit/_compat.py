"""Deprecated module names: where each module was before issue 24 moved it into a sub-package.

One import hook (a :class:`importlib.abc.MetaPathFinder`) serves every old name: ``import
fairaudit.components`` (or ``from fairaudit.components import Clusterer``) warns with a
:class:`DeprecationWarning` naming the new place and returns the new module itself, so classes,
functions and monkeypatches are shared. Installed by ``fairaudit/__init__.py``; costs one dict
lookup per import of a ``fairaudit.*`` name.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import warnings
from types import ModuleType

MOVED: dict[str, str] = {
    "fairaudit.artifacts": "fairaudit.core.artifacts",
    "fairaudit.assign": "fairaudit.core.assign",
    "fairaudit.chain": "fairaudit.core.chain",
    "fairaudit.components": "fairaudit.core.components",
    "fairaudit.contingency": "fairaudit.core.contingency",
    "fairaudit.counting_audit": "fairaudit.core.counting_audit",
    "fairaudit.data": "fairaudit.core.data",
    "fairaudit.engines": "fairaudit.core.engines",
    "fairaudit.io": "fairaudit.core.io",
    "fairaudit.limits": "fairaudit.core.limits",
    "fairaudit.params": "fairaudit.core.params",
    "fairaudit.plugins": "fairaudit.core.plugins",
    "fairaudit.quality": "fairaudit.core.fit_quality",
    "fairaudit.runner": "fairaudit.core.runner",
    "fairaudit.twins": "fairaudit.core.twins",
    "fairaudit.answer": "fairaudit.report.answer",
    "fairaudit.charts": "fairaudit.report.charts",
    "fairaudit.diffreport": "fairaudit.report.diffreport",
    "fairaudit.explain": "fairaudit.report.explain",
    "fairaudit.explain_text": "fairaudit.report.explain_text",
    "fairaudit.outputs": "fairaudit.report.outputs",
    "fairaudit.results": "fairaudit.report.results",
    "fairaudit.summary": "fairaudit.report.summary",
    "fairaudit.words": "fairaudit.report.words",
    "fairaudit.align": "fairaudit.ops.align",
    "fairaudit.audit_json": "fairaudit.ops.audit_json",
    "fairaudit.baseline": "fairaudit.ops.baseline",
    "fairaudit.compare": "fairaudit.ops.compare",
    "fairaudit.export": "fairaudit.ops.export",
    "fairaudit.gates": "fairaudit.ops.gates",
    "fairaudit.history": "fairaudit.ops.history",
    "fairaudit.checks": "fairaudit.gx.checks",
    "fairaudit.expectations": "fairaudit.gx.expectations",
    "fairaudit.dp": "fairaudit.privacy.dp",
    "fairaudit.ledger": "fairaudit.privacy.ledger",
    "fairaudit.publish": "fairaudit.privacy.publish",
}
"""Old module name -> its module now. (``fairaudit.report`` is now a package; its old names are
served by ``fairaudit/report/__init__.py``.)"""


def warn_moved(old: str, new: str) -> None:
    """The one deprecation message, pointed at the first frame outside the import machinery."""
    level, frame = 2, sys._getframe(1)
    while frame is not None and (frame.f_code.co_filename.startswith("<frozen importlib")
                                 or frame.f_code.co_filename == __file__
                                 or frame.f_globals.get("__name__") == "fairaudit.report"):
        if not frame.f_code.co_filename.startswith("<frozen importlib"):
            level += 1  # warnings itself skips the import machinery's frames
        frame = frame.f_back
    warnings.warn(f"{old} moved to {new}; import it from there: the old name will be removed "
                  f"in {removal_release()}", DeprecationWarning, stacklevel=level)


def removal_release(version: str | None = None) -> str:
    """The release that removes what is deprecated now: the next minor release after
    ``version`` (default: this one), e.g. ``"fairaudit 0.2"`` after 0.1.0; ``"a future
    release"`` when the version cannot be read."""
    if version is None:
        version = _VERSION
    parts = version.split(".")
    try:
        major, minor = int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return "a future release"
    return f"fairaudit {major}.{minor + 1}"


class _MovedFinder:
    """Finds the old names of :data:`MOVED`; loads each as its new module (same object). A meta
    path finder and loader by protocol (``importlib.abc`` is not imported: it is slow to load)."""

    def __init__(self) -> None:
        self._real_specs: dict[str, importlib.machinery.ModuleSpec] = {}

    def find_spec(self, fullname, path=None, target=None):  # noqa: ANN001
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warn_moved(spec.name, MOVED[spec.name])
        module = importlib.import_module(MOVED[spec.name])
        self._real_specs[spec.name] = module.__spec__  # the import system sets the old name's
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self._real_specs.pop(module.__spec__.name)  # keep its own spec


_FINDER = _MovedFinder()


_VERSION = ""
"""The installed fairaudit version (set by :func:`install`; this module imports nothing of
fairaudit, so that no import circle forms)."""


def install(version: str = "") -> None:
    """Put the finder on ``sys.meta_path`` once (idempotent); ``version``: fairaudit's."""
    global _VERSION
    if version:
        _VERSION = version
    if _FINDER not in sys.meta_path:
        sys.meta_path.append(_FINDER)
