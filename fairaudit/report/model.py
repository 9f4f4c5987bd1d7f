"""The typed result model: the audit JSON as frozen dataclasses, with ``to_json`` / ``from_json``.

:class:`AuditDocument` is the whole document (``fairaudit/schema/audit.schema.json``,
``docs/json.md``); its records name the fields the report reads — the input, each labelling,
each result with its threshold, the gates, verdicts, the price of fairness, the glossary. Parts
whose shape belongs to a plugin or a section (``per_cluster`` rows, ``detail``, ``extras``,
``composition``) stay JSON mappings. A key the model does not name is kept in ``extra``, and a
key the document leaves out stays out (every field defaults to :data:`MISSING`):
``from_json(d).to_json() == d`` for every document this version writes (``tests/test_result_model.py`` checks it on the golden documents, and that the
records' fields are the schema's properties).

``AuditDocument.of(run)`` gives a run's document as this model; ``to_run()`` and
:func:`fairaudit.report.render.render_html` take it back.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from fairaudit.report.results import AuditRun, Status, Threshold


class _Missing:
    """A key the document does not have (distinct from ``null``)."""

    _instance: ClassVar[_Missing | None] = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
_FIELDS: dict[type, dict[str, Any]] = {}


def _opt() -> Any:
    return field(default=MISSING)


@dataclass(frozen=True)
class Record:
    """Base of the model's records: typed fields, unknown keys kept in ``extra``."""

    extra: Mapping[str, Any] = field(default_factory=dict, kw_only=True)
    """Keys of the JSON object that the record does not name, verbatim."""

    @classmethod
    def _fields(cls) -> dict[str, Any]:
        """Field name -> type, resolved once per class (``get_type_hints`` evaluates every
        annotation: a run's document has hundreds of records)."""
        cached = _FIELDS.get(cls)
        if cached is None:
            hints = typing.get_type_hints(cls)
            cached = {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.name != "extra"}
            _FIELDS[cls] = cached
        return cached

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Any:
        if not isinstance(d, Mapping):
            raise TypeError(f"{cls.__name__}: expected a JSON object; got {type(d).__name__}")
        types_ = cls._fields()
        kw = {k: _load(types_[k], v) for k, v in d.items() if k in types_}
        return cls(**kw, extra={k: v for k, v in d.items() if k not in types_})

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in self._fields():
            value = getattr(self, name)
            if value is not MISSING:
                out[name] = _dump(value)
        out.update(self.extra)
        return out


def _load(tp: Any, v: Any) -> Any:
    if v is None or v is MISSING:
        return v
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        for a in args:
            if a is type(None) or a is Any:
                continue
            try:
                return _load(a, v)
            except (TypeError, ValueError):
                continue
        return v
    if isinstance(tp, type) and issubclass(tp, Record):
        return tp.from_json(v)
    if tp is Threshold:
        return Threshold(**v)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tp(v)
    if origin is tuple and isinstance(v, list):
        inner = args[0] if args else Any
        return tuple(_load(inner, x) for x in v)
    return v


def _dump(v: Any) -> Any:
    if isinstance(v, Record | Threshold):
        return v.to_json()
    if isinstance(v, enum.Enum):
        return v.value
    if isinstance(v, tuple):
        return [_dump(x) for x in v]
    return v


# ----------------------------------------------------------------------------- the records
@dataclass(frozen=True)
class Tool(Record):
    name: str = _opt()
    version: str = _opt()


@dataclass(frozen=True)
class InputInfo(Record):
    path: str = _opt()
    format: str = _opt()
    rows: int | None = _opt()
    rows_audited: int | None = _opt()
    fingerprint: str = _opt()
    columns: tuple[str, ...] = _opt()
    sensitive: tuple[str, ...] = _opt()
    attributes: tuple[str, ...] = _opt()
    ordinal: Mapping[str, Any] = _opt()
    labels: str | None = _opt()
    features: tuple[str, ...] = _opt()
    excluded_columns: Mapping[str, str] = _opt()
    exclusions: Mapping[str, int] = _opt()
    sample: Mapping[str, Any] | None = _opt()
    groups: Mapping[str, Any] = _opt()
    """attribute -> rows ``{group, n, share, small}``."""
    source: Mapping[str, Any] | None = _opt()
    """Where the rows live when not a local file: ``{kind, dialect, url (password masked),
    table | query, key, version, ...}`` (issue 36)."""


@dataclass(frozen=True)
class LabellingRecord(Record):
    name: str = _opt()
    origin: str = _opt()
    component: str | None = _opt()
    column: str | None = _opt()
    params: Mapping[str, Any] = _opt()
    n_rows: int = _opt()
    n_clusters: int = _opt()
    n_noise: int = _opt()
    cluster_sizes: tuple[Mapping[str, int], ...] = _opt()
    notes: tuple[str, ...] = _opt()
    extras: Mapping[str, Any] = _opt()
    fit: Mapping[str, Any] | None = _opt()
    warnings: tuple[Any, ...] = _opt()
    composition: Mapping[str, Any] = _opt()
    cluster_names: tuple[str, ...] = _opt()


@dataclass(frozen=True)
class ResultRecord(Record):
    auditor: str = _opt()
    metric: str = _opt()
    labelling: str = _opt()
    attribute: str | None = _opt()
    value: float | None = _opt()
    ci: tuple[float | None, ...] | None = _opt()
    direction: str = _opt()
    headline: bool = _opt()
    threshold: Threshold | None = _opt()
    status: Status = _opt()
    judged: float | None = _opt()
    n_rows: int | None = _opt()
    notes: tuple[str, ...] = _opt()
    per_cluster: tuple[Mapping[str, Any], ...] = _opt()
    detail: Mapping[str, Any] = _opt()
    explanation: str | None = _opt()


@dataclass(frozen=True)
class CheckRecord(Record):
    name: str = _opt()
    expectation: str = _opt()
    column: str | None = _opt()
    success: bool = _opt()
    severity: str = _opt()
    observed: Any = _opt()
    expected: Any = _opt()


@dataclass(frozen=True)
class GateRecord(Record):
    """One threshold judged on one labelling (and attribute), or why it could not be."""

    metric: str = _opt()
    labelling: str | None = _opt()
    attribute: str | None = _opt()
    bound: str = _opt()
    threshold: float | None = _opt()
    on: str = _opt()
    severity: str = _opt()
    judged: float | None = _opt()
    judged_on: str | None = _opt()
    value: float | None = _opt()
    status: Status = _opt()
    reason: str | None = _opt()
    source: str = _opt()


@dataclass(frozen=True)
class TwinRecord(Record):
    """A fair labelling against its ``fair = false`` twin: fairness gained, quality lost."""

    fair: str = _opt()
    twin: str = _opt()
    component: str | None = _opt()
    quality_metric: str | None = _opt()
    fair_quality: float | None = _opt()
    twin_quality: float | None = _opt()
    quality_loss: float | None = _opt()
    degenerate: Any = _opt()
    attribute: str | None = _opt()
    target_auditor: str | None = _opt()
    target_metric: str | None = _opt()
    direction: str | None = _opt()
    fair_value: float | None = _opt()
    twin_value: float | None = _opt()
    gain: float | None = _opt()
    gain_ci: tuple[float | None, ...] | None = _opt()


@dataclass(frozen=True)
class VerdictRecord(Record):
    labelling: str = _opt()
    attribute: str = _opt()
    verdict: str = _opt()
    rule: str = _opt()
    reasons: tuple[Any, ...] = _opt()
    decided_by: Any = _opt()


@dataclass(frozen=True)
class GlossaryEntry(Record):
    auditor: str = _opt()
    metric: str = _opt()
    headline: bool = _opt()
    direction: str | None = _opt()
    range: Any = _opt()
    range_text: str | None = _opt()
    meaning: str = _opt()
    good: str = _opt()
    choose_threshold: str | None = _opt()
    verdict_bound: float | None = _opt()
    verdict_reason: str | None = _opt()


@dataclass(frozen=True)
class AuditDocument(Record):
    """The audit JSON document of one run."""

    schema_version: str = _opt()
    tool: Tool = _opt()
    status: Status = _opt()
    input: InputInfo = _opt()
    chain: Mapping[str, Any] = _opt()
    preprocessing: tuple[Mapping[str, Any], ...] = _opt()
    labellings: tuple[LabellingRecord, ...] = _opt()
    results: tuple[ResultRecord, ...] = _opt()
    checks: tuple[CheckRecord, ...] = _opt()
    notes: tuple[str, ...] = _opt()
    environment: Mapping[str, Any] = _opt()
    timing: Mapping[str, Any] = _opt()
    gates: tuple[GateRecord, ...] = _opt()
    privacy: Mapping[str, Any] = _opt()
    twins: tuple[TwinRecord, ...] = _opt()
    verdicts: tuple[VerdictRecord, ...] = _opt()
    glossary: tuple[GlossaryEntry, ...] = _opt()
    comparison: Mapping[str, Any] = _opt()

    @classmethod
    def of(cls, run: AuditRun) -> AuditDocument:
        """The model of a run's document."""
        return cls.from_json(run.doc)

    def to_run(self) -> AuditRun:
        """The :class:`AuditRun` of this document (what sections and templates read)."""
        return AuditRun(self.to_json())

    def results_for(self, **where: Any) -> list[ResultRecord]:
        """The results whose fields equal ``where`` (e.g. ``metric="balance"``)."""
        return [r for r in self.results if all(getattr(r, k) == v for k, v in where.items())]
