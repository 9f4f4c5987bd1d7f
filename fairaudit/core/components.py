"""Base classes for the three kinds of components and for report sections.

A component is a class with a ``name``, scikit-learn-style keyword parameters, declared
``constraints`` on them, and declared ``requires`` / ``provides`` artifact keys (see
:mod:`fairaudit.core.artifacts`). Plugins return component *classes* from the register hooks; the host
instantiates them from the chain, so everything a user can configure is visible to ``inspect`` and
to ``fairaudit describe``.

This module imports nothing heavy: it is loaded at CLI start.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from fairaudit.report.results import Direction  # plugins import it from here too

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from fairaudit.core.data import AuditData, GroupTable, Labelling
    from fairaudit.report.results import AuditRun, MetricResult


# --------------------------------------------------------------------------- constraints
class Constraint:
    """A declared constraint on one parameter value."""

    def check(self, value: Any) -> bool:  # pragma: no cover - interface
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - interface
        raise NotImplementedError


@dataclass(frozen=True)
class Interval(Constraint):
    """``type`` value in [left, right] (``None`` = unbounded); ``closed`` picks the inclusive ends."""

    type: type
    left: float | None = None
    right: float | None = None
    closed: str = "both"  # "both" | "left" | "right" | "neither"
    allow_none: bool = False

    def check(self, value: Any) -> bool:
        if value is None:
            return self.allow_none
        if isinstance(value, bool):
            return False
        if self.type is int and not isinstance(value, int):
            return False
        if self.type is float and not isinstance(value, int | float):
            return False
        if isinstance(value, float) and not math.isfinite(value):
            return False
        lo_ok = self.left is None or (
            value >= self.left if self.closed in ("both", "left") else value > self.left
        )
        hi_ok = self.right is None or (
            value <= self.right if self.closed in ("both", "right") else value < self.right
        )
        return lo_ok and hi_ok

    def describe(self) -> str:
        kind = "an int" if self.type is int else "a number"
        parts = []
        if self.left is not None:
            parts.append((">= " if self.closed in ("both", "left") else "> ") + _fmt(self.left))
        if self.right is not None:
            parts.append(("<= " if self.closed in ("both", "right") else "< ") + _fmt(self.right))
        text = kind + (" " + " and ".join(parts) if parts else "")
        return text + (" or None" if self.allow_none else "")


@dataclass(frozen=True)
class Options(Constraint):
    """Value must be one of ``values``."""

    values: tuple[Any, ...]

    def check(self, value: Any) -> bool:
        return value in self.values

    def describe(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)


@dataclass(frozen=True)
class AnyOf(Constraint):
    """Value must satisfy at least one of ``constraints``."""

    constraints: tuple[Constraint, ...]

    def check(self, value: Any) -> bool:
        return any(c.check(value) for c in self.constraints)

    def describe(self) -> str:
        return " or ".join(c.describe() for c in self.constraints)


@dataclass(frozen=True)
class TypeIs(Constraint):
    """Value must be an instance of ``types``."""

    types: tuple[type, ...]
    label: str

    def check(self, value: Any) -> bool:
        if isinstance(value, bool) and bool not in self.types:
            return False
        return isinstance(value, self.types)

    def describe(self) -> str:
        return self.label


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)


# --------------------------------------------------------------------------- parameters
@dataclass(frozen=True)
class ParamSpec:
    """One constructor parameter of a component, as ``describe`` and validation see it."""

    name: str
    default: Any
    constraint: str | None
    doc: str

    @property
    def required(self) -> bool:
        return self.default is inspect.Parameter.empty


@dataclass(frozen=True)
class MetricSpec:
    """A metric an auditor produces.

    ``headline`` marks the metric a chain's ``threshold`` applies to when it names the auditor.
    ``bootstrap`` asks the host for a confidence interval (counting auditors only).

    The report's glossary and verdicts (:mod:`fairaudit.report.explain`) read the optional plain-word
    fields; empty fields fall back to ``description`` and generic text:

    ``meaning``
        what the metric measures, in plain words (one or two sentences);
    ``good``
        what a good value is (e.g. "1 = every cluster mirrors the population; 0.8 or more");
    ``choose_threshold``
        how to choose a ``--fail-under`` / ``--fail-over`` bound for it;
    ``verdict_bound``
        the bound the per-attribute verdict uses when the user set no threshold (on the fair
        side in the metric's ``direction``); ``None`` keeps the metric out of the verdict;
    ``verdict_reason``
        why that bound (or why the metric stays out of the verdict);
    ``range_text``
        the range in words when it depends on the data, so that ``range`` is ``None`` (e.g.
        Wd: [0, 1] for unordered groups, [0, g − 1] for g ordered groups).
    """

    name: str
    direction: Direction
    description: str
    range: tuple[float, float] | None = (0.0, 1.0)
    headline: bool = False
    bootstrap: bool = True
    per_attribute: bool = True
    meaning: str = ""
    good: str = ""
    choose_threshold: str = ""
    verdict_bound: float | None = None
    verdict_reason: str = ""
    range_text: str = ""


class Component:
    """Common behaviour: parameters, constraints and declared data flow."""

    name: ClassVar[str] = ""
    kind: ClassVar[str] = ""
    description: ClassVar[str] = ""
    requires: ClassVar[frozenset[str]] = frozenset()
    provides: ClassVar[frozenset[str]] = frozenset()
    constraints: ClassVar[Mapping[str, Constraint]] = {}
    param_docs: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def param_specs(cls) -> list[ParamSpec]:
        """The constructor's parameters, in signature order."""
        sig = inspect.signature(cls.__init__)
        specs = []
        for p in list(sig.parameters.values())[1:]:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            c = cls.constraints.get(p.name)
            specs.append(
                ParamSpec(p.name, p.default, c.describe() if c else None,
                          cls.param_docs.get(p.name, ""))
            )
        return specs

    @classmethod
    def check_params(cls, params: Mapping[str, Any]) -> list[tuple[str, str]]:
        """Return ``(param, message)`` for every constraint violated by ``params``."""
        errors = []
        for key, value in params.items():
            c = cls.constraints.get(key)
            if c is not None and not c.check(value):
                errors.append(
                    (key, f"must be {c.describe()}; got {value!r}")
                )
        return errors

    def get_params(self) -> dict[str, Any]:
        """Constructor parameters as stored on the instance (scikit-learn convention)."""
        return {s.name: getattr(self, s.name) for s in self.param_specs()}

    def set_params(self, **params: Any) -> Component:
        valid = {s.name for s in self.param_specs()}
        for key, value in params.items():
            if key not in valid:
                raise ValueError(f"{type(self).__name__} has no parameter {key!r}")
            setattr(self, key, value)
        return self

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({shown})"


# --------------------------------------------------------------------------- the three kinds
class Preprocessor(Component):
    """Transforms the feature table. ``fit`` learns; ``transform`` returns new ``AuditData``.

    Preprocessors must never mutate the data they receive: return ``data.replace(...)``.
    """

    kind: ClassVar[str] = "preprocessor"
    requires: ClassVar[frozenset[str]] = frozenset({"features"})
    provides: ClassVar[frozenset[str]] = frozenset({"features"})

    def fit(self, data: AuditData) -> Preprocessor:  # pragma: no cover - interface
        raise NotImplementedError

    def transform(self, data: AuditData) -> AuditData:  # pragma: no cover - interface
        raise NotImplementedError

    def fit_transform(self, data: AuditData) -> AuditData:
        return self.fit(data).transform(data)

    def notes(self) -> tuple[str, ...]:
        """Human sentences for the report about what ``fit`` decided (dropped, bucketed, ...)."""
        return ()


class Clusterer(Component):
    """Produces one labelling. ``fit(data)`` sets ``labels_`` (int, -1 = noise) and, when declared
    in ``provides``, ``prototypes_`` (k x d) and ``memberships_`` (n x k).

    The data a clusterer receives carries sensitive attributes only when ``"sensitive"`` is in its
    ``requires`` (fair clusterers use them as constraints, never as features).
    ``max_rows``: above this many rows the host fits on a seeded sample of that size and says so
    in the report (``None`` = no limit).
    ``extras_`` (optional): a JSON-serialisable mapping the report sections may show.
    """

    kind: ClassVar[str] = "clusterer"
    requires: ClassVar[frozenset[str]] = frozenset({"features"})
    provides: ClassVar[frozenset[str]] = frozenset({"labels"})
    max_rows: ClassVar[int | None] = None

    def fit(self, data: AuditData) -> Clusterer:  # pragma: no cover - interface
        raise NotImplementedError

    def predict(self, data: AuditData) -> np.ndarray:
        raise NotImplementedError(f"{self.name} cannot assign new rows")


@dataclass(frozen=True)
class AuditContext:
    """What an auditor sees for one labelling.

    ``tables`` maps each sensitive attribute (and the intersection, when there are several) to its
    group x cluster :class:`~fairaudit.core.data.GroupTable`, counted on every row the labelling covers.
    ``data`` is the in-memory data (features for geometry auditors); its rows align with
    ``labelling.labels``.
    """

    labelling: Labelling
    tables: Mapping[str, GroupTable]
    data: AuditData | None
    random_state: int
    options: Mapping[str, Any] = field(default_factory=dict)


class Auditor(Component):
    """Computes metrics for one labelling. Stateless: ``audit`` returns results, sets nothing."""

    kind: ClassVar[str] = "auditor"
    requires: ClassVar[frozenset[str]] = frozenset({"labels", "sensitive"})
    metrics: ClassVar[tuple[MetricSpec, ...]] = ()
    per_labelling: ClassVar[bool] = True
    """False for auditors that judge the data rather than a clustering (e.g. proxy features):
    the host runs them once and labels their results ``"(data)"``."""

    @classmethod
    def headline(cls) -> MetricSpec:
        for m in cls.metrics:
            if m.headline:
                return m
        return cls.metrics[0]

    def audit(self, ctx: AuditContext) -> Sequence[MetricResult]:  # pragma: no cover
        raise NotImplementedError

    def rows_needed(self) -> int | None:
        """The most in-memory rows ``audit`` reads (it draws a seeded sample of that many), or
        ``None``: every row the host holds. When no clusterer runs and the table is larger than
        the host would hold anyway (a seeded sample of 100,000 rows), the host reads a seeded
        sample of the largest ``rows_needed`` of the chain's feature-reading auditors instead,
        so their cost is bounded by their samples, not by the table."""
        return None


class CountingAuditor(Auditor):
    """An auditor whose metrics are functions of a group x cluster count table alone.

    Implement ``compute`` (metric name -> value) and optionally ``breakdown`` (per-cluster rows).
    The host calls them once per attribute, and again on multinomial bootstrap replicates of the
    joint table to give confidence intervals, so ``compute`` must be cheap and must not look at
    anything but the table.

    ``breakdown(table)`` returns the per-cluster values of every metric, either as a mapping
    ``{metric: rows}`` or as one sequence of rows in which each row names its ``"metric"``; a row
    without a ``"metric"`` key belongs to the auditor's headline metric only. Each row is a
    mapping with ``"cluster"``, ``"value"``, ``"n"`` and any extra keys (e.g.
    ``"worst_group"``). The host reads it through :meth:`breakdown_for`.
    """

    def compute(self, table: GroupTable) -> Mapping[str, float]:  # pragma: no cover
        raise NotImplementedError

    def breakdown(
        self, table: GroupTable
    ) -> Sequence[Mapping[str, Any]] | Mapping[str, Sequence[Mapping[str, Any]]]:
        return ()

    def breakdown_for(self, table: GroupTable, metric: str) -> tuple[Mapping[str, Any], ...]:
        """The per-cluster rows of ``metric`` from :meth:`breakdown` (see the class docstring):
        rows filed under ``metric`` in a mapping, or rows whose ``"metric"`` is ``metric`` —
        rows without a ``"metric"`` key count for the headline metric only."""
        rows = self.breakdown(table)
        if isinstance(rows, Mapping):
            return tuple(rows.get(metric, ()))
        headline = self.headline().name if self.metrics else metric
        return tuple(r for r in rows if r.get("metric", headline) == metric)

    small_groups: str = "exclude"
    """"exclude" (default): the host leaves groups with fewer than ``min_cell`` rows out of the
    table (they are "too small to judge" and listed in the result); "keep": the auditor sees
    every group."""

    def intervals(self, table: GroupTable, level: float,
                  replicates: np.ndarray) -> Mapping[str, Any]:
        """Confidence intervals computed by the auditor itself, ``{metric: interval}``, where an
        interval is a :class:`fairaudit.metrics.intervals.Interval` (or any object with
        ``lower``, ``upper`` and ``method``). ``replicates`` are the multinomial bootstrap
        tables of ``table`` (B x groups x clusters), for methods that need them. The host gives
        every other metric that declares ``bootstrap=True`` the percentile interval of
        ``compute_batch`` on the replicates. Override for metrics whose percentile interval is
        wrong (minima of ratios, distances near 0: docs/metrics.md, "Uncertainty").
        An override may take a keyword ``method``: the host then passes the user's
        ``--ci-method`` (``"calibrated"`` or ``"conservative"``). In a published release
        (``--publish``) the host calls it only if it takes a keyword ``noise``: the variance of
        the noise on every released count (public); ``table`` is then the released table and
        ``replicates`` the release's parametric bootstrap (sampling and fresh noise). An
        override without ``noise`` gets percentile intervals there (docs/privacy.md)."""
        return {}

    def compute_batch(self, table: GroupTable, counts: np.ndarray) -> Mapping[str, np.ndarray]:
        """Metric values for a stack of resampled ``counts`` (B x groups x clusters).

        The default loops over ``compute``; override with a vectorised version when it matters.
        """
        import dataclasses

        import numpy as np

        names = [m.name for m in self.metrics]
        out: dict[str, list[float]] = {k: [] for k in names}
        for b in range(counts.shape[0]):
            c = counts[b]
            # score each replicate as data with those counts: drop groups/clusters that vanished
            keep_g, keep_k = c.sum(axis=1) > 0, c.sum(axis=0) > 0
            rep = dataclasses.replace(
                table,
                counts=c[keep_g][:, keep_k],
                groups=tuple(g for g, k in zip(table.groups, keep_g, strict=True) if k),
                clusters=tuple(x for x, k in zip(table.clusters, keep_k, strict=True) if k),
                noise=table.noise[keep_g],
            )
            try:
                values = self.compute(rep)
            except ValueError:
                values = {}
            for key in names:
                out[key].append(float(values.get(key, float("nan"))))
        return {k: np.asarray(v, dtype=float) for k, v in out.items()}

    def audit(self, ctx: AuditContext) -> Sequence[MetricResult]:  # pragma: no cover
        raise TypeError("counting auditors are run by the host through compute()")


class ReportSection:
    """A block of the HTML report, rendered from the audit JSON alone.

    ``template`` names a Jinja template, namespaced by plugin (e.g. ``"myplugin/section.html.j2"``),
    found in the user's template directory, the project's ``templates/``, or a ``templates/``
    folder inside the section's own package. ``context(run)`` returns plain data for it.
    """

    kind: ClassVar[str] = "section"
    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    order: ClassVar[int] = 500
    template: ClassVar[str] = ""
    description: ClassVar[str] = ""
    auditors: ClassVar[tuple[str, ...]] = ()
    """Auditors this section shows in full; the generic results section leaves them out."""

    def applies(self, run: AuditRun) -> bool:
        return True

    def context(self, run: AuditRun) -> Mapping[str, Any]:  # pragma: no cover - interface
        return {}


COMPONENT_KINDS: tuple[str, ...] = ("preprocessor", "clusterer", "auditor", "section")
