"""``fairaudit repair``: the nearest fair segmentation (docs/repair.md).

Given a segmentation a team already has (a labels column), find the fewest people to move
(or the least distance added) so that every segment meets the fairness targets — an integer
program on the group x segment counts, solved exactly with HiGHS — choose who moves, and write
every input row plus the new column, with the audit before and after.

This package is callable: ``fairaudit.repair(data, sensitive=..., labels=..., target=...)`` is
:func:`fairaudit.repair.api.repair` (so ``fairaudit.repair`` is both the function users call and
the package of its modules).

Modules: :mod:`~fairaudit.repair.program` (the program on counts, its LP bound, infeasibility),
:mod:`~fairaudit.repair.people` (who moves), :mod:`~fairaudit.repair.cost` (the least-cost
objective), :mod:`~fairaudit.repair.spec` (the typed configuration), :mod:`~fairaudit.repair.inputs`
(reading), :mod:`~fairaudit.repair.run` (end to end), :mod:`~fairaudit.repair.result` (the
typed result and its JSON), :mod:`~fairaudit.repair.render` (HTML), :mod:`~fairaudit.repair.write`
(the writer), :mod:`~fairaudit.repair.api` (``fairaudit.repair(...)``).
"""

from __future__ import annotations

import sys
import types
from typing import Any

from fairaudit._lazy import lazy_attributes

_LAZY = {
    "repair": "fairaudit.repair.api",
    "RepairResult": "fairaudit.repair.result",
    "RepairSpec": "fairaudit.repair.spec",
    "RepairTarget": "fairaudit.repair.spec",
}
__all__ = list(_LAZY)

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals())


class _CallablePackage(types.ModuleType):
    """The package's type: calling it calls :func:`fairaudit.repair.api.repair`."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from fairaudit.repair.api import repair

        return repair(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
