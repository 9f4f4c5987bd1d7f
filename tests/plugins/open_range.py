"""Fixture plugin: a counting auditor whose metrics have an open end (``range=(1.0, None)`` and
``(None, 0.0)``), which docs/writing_plugins.md allows. ``ratio`` = the largest cluster's share
of rows over the smallest's (>= 1); ``neg_gap`` = minus the largest gap between a group's share
in a cluster and overall (<= 0)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from fairaudit.core.components import CountingAuditor, Direction, MetricSpec
from fairaudit.hookspecs import hookimpl


def _ratio(counts: np.ndarray) -> float:
    sizes = counts.sum(axis=-2)
    return float(sizes.max() / max(sizes.min(), 1))


def _neg_gap(counts: np.ndarray) -> float:
    cells = counts / np.maximum(counts.sum(axis=0, keepdims=True), 1)
    overall = counts.sum(axis=1) / max(counts.sum(), 1)
    return -float(np.abs(cells - overall[:, None]).max())


class OpenRange(CountingAuditor):
    name = "open_range"
    metrics = (
        MetricSpec("ratio", Direction.LOWER_IS_BETTER, "largest over smallest cluster",
                   range=(1.0, None), headline=True, bootstrap=True),
        MetricSpec("neg_gap", Direction.HIGHER_IS_BETTER, "minus the largest share gap",
                   range=(None, 0.0), bootstrap=True),
    )

    def __init__(self) -> None:
        pass

    def compute(self, table) -> Mapping[str, float]:
        return {"ratio": _ratio(table.counts), "neg_gap": _neg_gap(table.counts)}

    def breakdown(self, table):
        return []


@hookimpl
def fairaudit_register_auditors() -> list[type]:
    return [OpenRange]
