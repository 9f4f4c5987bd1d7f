"""The "Comparison with the baseline" report section (``fairaudit audit … --baseline``).

Shown when the audit JSON holds ``comparison`` (see :mod:`fairaudit.ops.baseline`); the same template
as the page of ``fairaudit compare --out``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fairaudit.core.components import ReportSection
from fairaudit.hookspecs import hookimpl


class ComparisonSection(ReportSection):
    name = "comparison"
    title = "Comparison with the baseline"
    order = 150
    template = "sections/comparison.html.j2"
    description = "What changed since the baseline audit, with an interval for every change."

    def applies(self, run: Any) -> bool:
        return isinstance(run.doc.get("comparison"), Mapping)

    def context(self, run: Any) -> Mapping[str, Any]:
        from fairaudit.report.diffreport import comparison_view

        return {"cmp": comparison_view(run.doc["comparison"])}


@hookimpl
def fairaudit_register_report_sections() -> list[type]:
    return [ComparisonSection]
