"""Example fairaudit plugin: the ``representation_gap`` auditor and its report section."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fairaudit.core.components import CountingAuditor, Direction, MetricSpec, ReportSection
from fairaudit.core.data import GroupTable
from fairaudit.hookspecs import hookimpl
from fairaudit.report.results import AuditRun


def _gaps(counts: np.ndarray) -> np.ndarray:
    """Per cluster: max over groups of |share of the group in the cluster - population share|.

    Works on one table (g x k) or a stack (B x g x k); empty clusters give NaN.
    """
    counts = np.asarray(counts, dtype=float)
    total = counts.sum(axis=(-2, -1), keepdims=True)
    pop = counts.sum(axis=-1, keepdims=True) / total
    sizes = counts.sum(axis=-2, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = counts / sizes
    return np.abs(share - pop).max(axis=-2)


class RepresentationGap(CountingAuditor):
    """Largest gap between a group's share in a cluster and in the population."""

    name = "representation_gap"
    description = (
        "Per cluster, the largest absolute difference between a group's share of the cluster "
        "and its share of the data; headline = maximum over clusters (lower is better)."
    )
    metrics = (
        MetricSpec("representation_gap", Direction.LOWER_IS_BETTER,
                   "max over clusters and groups of |share in cluster - population share|",
                   headline=True,
                   # plain words for the report's glossary and verdicts (all optional)
                   meaning="The largest gap, in any cluster, between a group's share of the "
                   "cluster and its share of all rows.",
                   good="0 = every cluster mirrors the population; 0.1 = some group is 10 "
                   "percentage points off in some cluster.",
                   choose_threshold="--fail-over representation_gap=0.1 tolerates 10 points.",
                   verdict_bound=0.1,
                   verdict_reason="10 percentage points, the tolerance of the example"),
    )

    def __init__(self) -> None:
        pass

    def compute(self, table: GroupTable) -> Mapping[str, float]:
        return {"representation_gap": float(np.nanmax(_gaps(table.counts)))}

    def compute_batch(self, table: GroupTable, counts: np.ndarray) -> Mapping[str, np.ndarray]:
        return {"representation_gap": np.nanmax(_gaps(counts), axis=-1)}

    def breakdown(self, table: GroupTable) -> Sequence[Mapping[str, Any]]:
        gaps = _gaps(table.counts)
        sizes = table.counts.sum(axis=0)
        return [
            {"cluster": int(c), "value": float(g), "n": int(n)}
            for c, g, n in zip(table.clusters, gaps, sizes, strict=True)
        ]


class RepresentationGapSection(ReportSection):
    """Worst representation gap per labelling and attribute."""

    name = "representation_gap"
    title = "Representation gap (example plugin)"
    order = 450
    template = "example/representation_gap.html.j2"
    auditors = ("representation_gap",)

    def applies(self, run: AuditRun) -> bool:
        return bool(run.results_for(auditor="representation_gap"))

    def context(self, run: AuditRun) -> Mapping[str, Any]:
        rows = []
        for r in run.results_for(auditor="representation_gap"):
            worst = max(
                (c for c in r["per_cluster"] if c.get("value") is not None),
                key=lambda c: c["value"],
                default=None,
            )
            rows.append({
                "labelling": r["labelling"],
                "attribute": r["attribute"],
                "value": r["value"],
                "ci": r["ci"],
                "status": r["status"],
                "worst_cluster": None if worst is None else worst["cluster"],
            })
        return {"rows": rows}


@hookimpl
def fairaudit_register_auditors() -> list[type]:
    return [RepresentationGap]


@hookimpl
def fairaudit_register_report_sections() -> list[type]:
    return [RepresentationGapSection]
