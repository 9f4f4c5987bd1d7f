"""Fixture plugin: one tiny component of each kind, plus hook implementations the hook tests use.

Module-level hook implementations register the components and adjust the Jinja environment;
``MemoryReader`` and ``Recorder`` are plugin *objects* a test registers with its own state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from fairaudit.core.components import (
    Clusterer,
    CountingAuditor,
    Direction,
    Interval,
    MetricSpec,
    Preprocessor,
    ReportSection,
)
from fairaudit.hookspecs import hookimpl

SECTION_TEMPLATE = "fixture/section.html.j2"
SECTION_SOURCE = (
    '<p id="fixture-section">fixture section: {{ n_results }} results; {{ fixture_banner }}</p>\n'
)


class Negate(Preprocessor):
    """Multiplies every numeric feature by -1 (easy to check, changes nothing about clusters)."""

    name = "negate"

    def __init__(self) -> None:
        pass

    def fit(self, data):
        self.columns_ = [c for c, t in data.features.schema.items() if t.is_numeric()]
        return self

    def transform(self, data):
        import polars as pl

        new = data.features.with_columns([-pl.col(c) for c in self.columns_])
        return data.replace(features=new)

    def notes(self) -> tuple[str, ...]:
        return (f"negated {len(self.columns_)} column(s)",)


class Sign(Clusterer):
    """Cluster 1 when ``column`` exceeds ``threshold``, else 0."""

    name = "sign"
    constraints = {"threshold": Interval(float)}

    def __init__(self, column: str = "x1", *, threshold: float = 0.0) -> None:
        self.column = column
        self.threshold = threshold

    def fit(self, data):
        x = data.features.get_column(self.column).to_numpy()
        self.labels_ = (x > self.threshold).astype(np.int64)
        self.extras_ = {"threshold": float(self.threshold)}
        return self


class SignPredict(Sign):
    """``sign`` that can assign new rows (the same threshold rule)."""

    name = "sign_predict"

    def predict(self, data):
        x = data.features.get_column(self.column).to_numpy()
        return (x > self.threshold).astype(np.int64)


class RowCount(CountingAuditor):
    """The number of (non-noise) rows in the table: a trivially checkable counting auditor."""

    name = "row_count"
    metrics = (
        MetricSpec(
            "row_count",
            Direction.HIGHER_IS_BETTER,
            "rows in the table",
            range=None,
            headline=True,
            bootstrap=False,
        ),
    )

    def __init__(self) -> None:
        pass

    def compute(self, table) -> Mapping[str, float]:
        return {"row_count": float(table.n)}

    def breakdown(self, table):
        sizes = table.counts.sum(axis=0)
        return [
            {"cluster": int(c), "value": float(n), "n": int(n)}
            for c, n in zip(table.clusters, sizes, strict=True)
        ]


class FixtureSection(ReportSection):
    name = "fixture_section"
    title = "Fixture section"
    order = 999
    template = SECTION_TEMPLATE

    def context(self, run) -> Mapping[str, Any]:
        return {"n_results": len(run.results)}


@hookimpl
def fairaudit_register_preprocessors() -> list[type]:
    return [Negate]


@hookimpl
def fairaudit_register_clusterers() -> list[type]:
    return [Sign, SignPredict]


@hookimpl
def fairaudit_register_auditors() -> list[type]:
    return [RowCount]


@hookimpl
def fairaudit_register_report_sections() -> list[type]:
    return [FixtureSection]


@hookimpl
def fairaudit_prepare_jinja_env(env) -> None:
    # called after the built-in filters are installed: wrap one of them
    assert "fmt_num" in env.filters
    env.globals["fixture_banner"] = "banner-from-prepare-jinja-env"


class MemoryReader:
    """Serves ``memory:NAME`` paths from a dict of polars frames (``fairaudit_read_table``)."""

    def __init__(self, frames: Mapping[str, Any]) -> None:
        self.frames = dict(frames)
        self.calls: list[tuple[str, dict[str, Any]]] = []

    @hookimpl
    def fairaudit_read_table(self, path: str, options: Mapping[str, Any]) -> Any:
        self.calls.append((path, dict(options)))
        if not str(path).startswith("memory:"):
            return None
        return self.frames[str(path)[len("memory:") :]].lazy()


class Recorder:
    """Records the lifecycle hooks it receives, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    @hookimpl
    def fairaudit_step_finished(self, step, kind, labelling, seconds) -> None:
        self.calls.append(
            (
                "step_finished",
                {"step": step, "kind": kind, "labelling": labelling, "seconds": seconds},
            )
        )

    @hookimpl
    def fairaudit_run_finished(self, run) -> None:
        self.calls.append(("run_finished", {"run": run}))
