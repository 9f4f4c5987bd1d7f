"""fairaudit: audit the fairness of clusterings of tabular data about people.

``fairaudit.audit(...)`` runs an audit from Python; ``fairaudit.write_report(run, path)`` writes
its HTML and JSON; ``fairaudit.load("audit.json")`` gives a saved run back. A run shows its answer
(in a notebook, inline), ``run.to_polars()`` gives its results as a table and ``run.verdicts``
its verdicts as :class:`Verdict` records. A run's configuration is one frozen :class:`ChainSpec` (with
:class:`DataSpec`, :class:`Options`, :class:`StepSpec`, :class:`Threshold`,
:class:`EngineSpec`, :class:`PrivacySpec`), which ``fairaudit.audit(data, chain=spec)`` also
takes. Algorithms live in :mod:`fairaudit.cluster`, :mod:`fairaudit.metrics` and
:mod:`fairaudit.preprocess`. Nothing heavy is imported until used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fairaudit import _compat
from fairaudit._lazy import lazy_attributes

__version__ = "0.1.0"
_compat.install(__version__)  # old module names (before the sub-packages) still import, with a
# warning naming the release that removes them
__distribution__ = "fairaudit-clusters"
"""The name on the package index: ``pip install fairaudit-clusters`` (it imports as ``fairaudit``;
the unrelated ``fairaudit`` on the index is another project)."""

_LAZY = {
    "audit": "fairaudit.api",
    "load": "fairaudit.api",
    "write_report": "fairaudit.api",
    "AuditRun": "fairaudit.report.results",
    "hookimpl": "fairaudit.hookspecs",
    "ChainSpec": "fairaudit.core.spec",
    "DataSpec": "fairaudit.core.spec",
    "StepSpec": "fairaudit.core.spec",
    "Options": "fairaudit.core.spec",
    "EngineSpec": "fairaudit.core.spec",
    "PrivacySpec": "fairaudit.core.spec",
    "Threshold": "fairaudit.report.results",
    "Verdict": "fairaudit.report.frames",
}
__all__ = ["__version__", *_LAZY, "repair"]


_getattr, _dir = lazy_attributes(__name__, _LAZY, globals())


def __getattr__(name: str) -> object:
    if name == "repair":  # the callable sub-package: fairaudit.repair(...), fairaudit.repair.spec
        import importlib

        return importlib.import_module("fairaudit.repair")
    return _getattr(name)


def __dir__() -> list[str]:
    return sorted({*_dir(), "repair"})

if TYPE_CHECKING:  # what type checkers see; at run time the names load lazily (above)
    from fairaudit.api import (
        audit as audit,
    )
    from fairaudit.api import (
        load as load,
    )
    from fairaudit.api import (
        write_report as write_report,
    )
    from fairaudit.core.spec import (
        ChainSpec as ChainSpec,
    )
    from fairaudit.core.spec import (
        DataSpec as DataSpec,
    )
    from fairaudit.core.spec import (
        EngineSpec as EngineSpec,
    )
    from fairaudit.core.spec import (
        Options as Options,
    )
    from fairaudit.core.spec import (
        PrivacySpec as PrivacySpec,
    )
    from fairaudit.core.spec import (
        StepSpec as StepSpec,
    )
    from fairaudit.hookspecs import (
        hookimpl as hookimpl,
    )
    from fairaudit.repair.api import (
        repair as repair,
    )
    from fairaudit.report.frames import (
        Verdict as Verdict,
    )
    from fairaudit.report.results import (
        AuditRun as AuditRun,
    )
    from fairaudit.report.results import (
        Threshold as Threshold,
    )

