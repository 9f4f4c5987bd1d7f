"""Fixture plugin: a report section whose ``context`` raises (the render fails after the run)."""

from __future__ import annotations

from fairaudit.core.components import ReportSection
from fairaudit.hookspecs import hookimpl


class CrashingSection(ReportSection):
    name = "crashing_section"
    title = "Crashes"
    template = "sections/summary.html.j2"

    def context(self, run):
        raise RuntimeError("boom from the crashing section")


@hookimpl
def fairaudit_register_report_sections() -> list[type]:
    return [CrashingSection]
