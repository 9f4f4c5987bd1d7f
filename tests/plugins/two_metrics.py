"""Fixture plugin: counting auditors with two metrics each, for per-metric breakdowns.

``legacy_two`` returns one list of rows: rows without a ``"metric"`` key (the headline's, the
shape single-metric auditors use) and rows naming ``"half"``. ``mapped_two`` returns
``{metric: rows}``. Per cluster: ``size`` = cluster size, ``half`` = half of it, so every value
says which metric it belongs to.
"""

from __future__ import annotations

from collections.abc import Mapping

from fairaudit.core.components import CountingAuditor, Direction, MetricSpec
from fairaudit.hookspecs import hookimpl

_METRICS = (
    MetricSpec("size", Direction.HIGHER_IS_BETTER, "rows", range=None, headline=True,
               bootstrap=False),
    MetricSpec("half", Direction.HIGHER_IS_BETTER, "half the rows", range=None,
               bootstrap=False),
)


def _sizes(table):
    return [(int(c), int(n)) for c, n in zip(table.clusters, table.counts.sum(axis=0),
                                             strict=True)]


class LegacyTwo(CountingAuditor):
    name = "legacy_two"
    metrics = _METRICS

    def __init__(self) -> None:
        pass

    def compute(self, table) -> Mapping[str, float]:
        return {"size": float(table.n), "half": table.n / 2}

    def breakdown(self, table):
        rows = [{"cluster": c, "value": float(n), "n": n} for c, n in _sizes(table)]
        return rows + [{"metric": "half", "cluster": c, "value": n / 2, "n": n}
                       for c, n in _sizes(table)]


class MappedTwo(LegacyTwo):
    name = "mapped_two"
    metrics = (
        MetricSpec("size_m", Direction.HIGHER_IS_BETTER, "rows", range=None, headline=True,
                   bootstrap=False),
        MetricSpec("half_m", Direction.HIGHER_IS_BETTER, "half the rows", range=None,
                   bootstrap=False),
    )

    def compute(self, table) -> Mapping[str, float]:
        return {"size_m": float(table.n), "half_m": table.n / 2}

    def breakdown(self, table):
        return {
            "size_m": [{"cluster": c, "value": float(n), "n": n} for c, n in _sizes(table)],
            "half_m": [{"cluster": c, "value": n / 2, "n": n} for c, n in _sizes(table)],
        }


@hookimpl
def fairaudit_register_auditors() -> list[type]:
    return [LegacyTwo, MappedTwo]
