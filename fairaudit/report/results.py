"""Results: one frozen record per metric value, threshold evaluation, and the whole run.

The host alone applies thresholds (:func:`evaluate`); auditors only compute values and declare a
direction. :class:`AuditRun` is the JSON document (schema: ``docs/json.md``,
``fairaudit/schema/audit.schema.json``); the HTML report is rendered from it alone.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fairaudit.report.values import SCHEMA_VERSION, TARGET_NOTE, check_document, finite

if TYPE_CHECKING:
    import pandas
    import polars

    from fairaudit.report.frames import Verdict

__all__ = ["SCHEMA_VERSION", "TARGET_NOTE", "AuditRun", "Direction", "MetricResult", "Status",
           "Threshold", "ci_end", "evaluate", "finite", "overall_status"]

class Direction(enum.StrEnum):
    """Whether larger values of a metric are fairer/better. Defined with the results (a
    result carries it); :mod:`fairaudit.core.components` re-exports it for plugins."""

    HIGHER_IS_BETTER = "higher_is_better"
    LOWER_IS_BETTER = "lower_is_better"


class Status(enum.StrEnum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    NOT_APPLICABLE = "not_applicable"
    NOT_EVALUATED = "not_evaluated"


@dataclass(frozen=True)
class Threshold:
    """A bound on a metric. ``on="ci"`` judges the conservative end of the confidence interval."""

    metric: str
    value: float
    bound: str = "min"  # "min": value must be >= bound; "max": value must be <= bound
    on: str = "value"  # "value" | "ci" (conservative end) | "lower" | "upper"
    attribute: str | None = None  # None = every attribute
    severity: str = "error"  # "error" | "warning"
    labelling: str | None = None  # None = every labelling
    source: str = ""

    def describe(self) -> str:
        op = ">=" if self.bound == "min" else "<="
        what = self.metric + (f"@{self.on}" if self.on != "value" else "")
        if self.attribute:
            what += f"[{self.attribute}]"
        return f"{what} {op} {self.value:g}"

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class MetricResult:
    """One metric value for one labelling and (for group metrics) one attribute."""

    auditor: str
    metric: str
    labelling: str
    value: float
    direction: Direction
    attribute: str | None = None
    ci: tuple[float, float] | None = None
    per_cluster: tuple[Mapping[str, Any], ...] = ()
    n_rows: int | None = None
    notes: tuple[str, ...] = ()
    headline: bool = False
    threshold: Threshold | None = None
    status: Status = Status.NOT_EVALUATED
    detail: Mapping[str, Any] = field(default_factory=dict)
    """Extra JSON-serialisable data for report sections (e.g. per-pair DCSI, worst points)."""
    judged: float | None = None
    """The number the deciding threshold compared (the value or a CI end; see ``threshold.on``)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "auditor": self.auditor,
            "metric": self.metric,
            "labelling": self.labelling,
            "attribute": self.attribute,
            "value": finite(self.value),
            "ci": None if self.ci is None else [finite(self.ci[0]), finite(self.ci[1])],
            "direction": self.direction.value,
            "headline": self.headline,
            "threshold": None if self.threshold is None else self.threshold.to_json(),
            "status": self.status.value,
            "judged": finite(self.judged),
            "n_rows": self.n_rows,
            "notes": list(self.notes),
            "per_cluster": [dict(r) for r in self.per_cluster],
            "detail": dict(self.detail),
        }


def ci_end(th: Threshold) -> str | None:
    """Which end of the CI a threshold judges: "lower", "upper", or None (the value). ``@ci`` is
    the conservative end: lower for a lower bound (--fail-under), upper for an upper bound."""
    if th.on == "ci":
        return "lower" if th.bound == "min" else "upper"
    return th.on if th.on in ("lower", "upper") else None


def _judged(result: MetricResult, th: Threshold) -> float | None:
    end = ci_end(th)
    if end is not None:
        if result.ci is None:
            return None
        return result.ci[0] if end == "lower" else result.ci[1]
    return result.value


def evaluate(result: MetricResult, thresholds: Sequence[Threshold]) -> MetricResult:
    """Attach the first matching threshold and its status; an undefined value fails.

    The runner uses :func:`fairaudit.ops.gates.evaluate_gates`, which also fails thresholds on metrics
    that were never computed."""
    for th in thresholds:
        if th.metric != result.metric:
            continue
        if th.attribute is not None and th.attribute != result.attribute:
            continue
        if th.labelling is not None and th.labelling != result.labelling:
            continue
        x = _judged(result, th)
        if x is None or not math.isfinite(x):
            # an undefined value never passes a gate (see fairaudit.ops.gates)
            status = Status.FAIL if th.severity == "error" else Status.WARN
            x = None
        else:
            ok = x >= th.value if th.bound == "min" else x <= th.value
            if ok:
                status = Status.PASS
            else:
                status = Status.FAIL if th.severity == "error" else Status.WARN
        return dataclasses.replace(result, threshold=th, status=status, judged=x)
    return result


def overall_status(results: Sequence[MetricResult], gates: Sequence[Any] = ()) -> Status:
    """The run's status: FAIL if an error-severity gate failed, WARN if only warnings did, PASS
    if every gate passed, NOT_EVALUATED without thresholds. ``gates`` (see
    :mod:`fairaudit.ops.gates`) include thresholds on metrics that were never computed."""
    statuses = {r.status for r in results} | {g.status for g in gates}
    if Status.FAIL in statuses:
        return Status.FAIL
    if Status.WARN in statuses:
        return Status.WARN
    if Status.PASS in statuses:
        return Status.PASS
    return Status.NOT_EVALUATED


@dataclass(frozen=True)
class AuditRun:
    """The whole audit as a JSON document, with typed accessors for templates and sections.

    Build it with :func:`fairaudit.core.runner.run_chain`; load a saved one with :meth:`from_json`.
    """

    doc: Mapping[str, Any]
    ledger_now: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    """For a published run: the ledger's totals for its source after this run (not part of the
    document: a stored release is returned byte-identical, its ``privacy.spent`` is as of that
    release). ``stored`` holds the date of the stored release returned at no cost, else None."""

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> AuditRun:
        check_document(doc)
        return cls(doc)

    def to_json(self) -> dict[str, Any]:
        return dict(self.doc)

    def __repr__(self) -> str:
        """The answer, as the console gives it (a few lines, never the document:
        ``run.to_json()`` has it all): the headline, who may read it, the verdicts or gates."""
        from fairaudit.report.view import view_text

        return view_text(self.doc if isinstance(self.doc, Mapping) else {}, self.ledger_now)

    def _repr_markdown_(self) -> str:
        """The same answer as Markdown (notebook front ends without HTML)."""
        from fairaudit.report.view import view_markdown

        return view_markdown(self.doc)

    def _repr_html_(self) -> str:
        """The answer first, inline in a notebook: the verdict per attribute and labelling, the
        deciding cell by its cluster's name, the headline numbers with their intervals
        (:mod:`fairaudit.report.view`; no script, styles scoped to ``.fairaudit-view``)."""
        from fairaudit.report.view import view_html

        return view_html(self.doc)

    def to_polars(self, level: str = "metric") -> polars.DataFrame:
        """The results as a tidy polars frame: one row per metric result (``labelling,
        attribute, metric, value, ci_low, ci_high, status, verdict``, then ``auditor, headline,
        direction, threshold, judged, n_rows``), or with ``level="cluster"`` one row per cluster
        of each result (``labelling, attribute, auditor, metric, cluster, cluster_name, n,
        value, worst_group, detail``). See :mod:`fairaudit.report.frames`."""
        from fairaudit.report.frames import results_frame

        return results_frame(self.doc, level)

    def to_pandas(self, level: str = "metric") -> pandas.DataFrame:
        """:meth:`to_polars` as a pandas DataFrame (``pip install 'fairaudit-clusters[pandas]'``;
        :class:`~fairaudit.errors.MissingExtraError` naming it when pandas is missing)."""
        from fairaudit.report.frames import pandas_frame, results_frame

        return pandas_frame(results_frame(self.doc, level))

    @property
    def verdicts(self) -> tuple[Verdict, ...]:
        """The verdict on each attribute in each labelling, as typed records (``attribute``,
        ``labelling``, ``verdict``, ``decided_by``, ``sentence``, ``reasons``, ``twin``)."""
        from fairaudit.report.frames import verdicts

        return verdicts(self.doc)

    @property
    def status(self) -> str:
        return str(self.doc["status"])

    @property
    def results(self) -> list[Mapping[str, Any]]:
        return list(self.doc["results"])

    @property
    def labellings(self) -> list[Mapping[str, Any]]:
        return list(self.doc["labellings"])

    @property
    def attributes(self) -> list[str]:
        return list(self.doc["input"]["attributes"])

    def results_for(
        self,
        *,
        auditor: str | None = None,
        metric: str | None = None,
        labelling: str | None = None,
        attribute: str | None = None,
    ) -> list[Mapping[str, Any]]:
        out = []
        for r in self.doc["results"]:
            if auditor is not None and r["auditor"] != auditor:
                continue
            if metric is not None and r["metric"] != metric:
                continue
            if labelling is not None and r["labelling"] != labelling:
                continue
            if attribute is not None and r["attribute"] != attribute:
                continue
            out.append(r)
        return out

    @property
    def exit_code(self) -> int:
        """0 when no error-severity threshold failed, 1 otherwise."""
        return 1 if self.doc["status"] == Status.FAIL.value else 0
