"""Out-of-sample assignment: the audit of a clusterer fitted on a sample covers every row.

Clusterers are fitted in memory, on a seeded sample when the input is larger than they can take
(``--sample``, a clusterer's ``max_rows``). The counting metrics of such a labelling must still
describe every row, not the sample: this step streams the whole input in batches, applies the
fitted preprocessors to each batch, assigns its rows with each fitted clusterer's ``predict``
(in chain order, so a consensus clusterer sees its bases' assignments), and adds up the batches'
joint count tables. Memory is bounded by the batch, not the data.

A clusterer without ``predict`` keeps the counts of the sample it was fitted on, and its
labelling says so.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fairaudit.core.contingency import JointTable, joint_from_frame, sum_joint_tables
from fairaudit.core.data import ROW_ID, AuditData, Labelling
from fairaudit.core.fit_quality import recording_warnings
from fairaudit.errors import InputError

log = logging.getLogger(__name__)

BATCH_ROWS = 250_000
"""Rows per streamed batch."""


@dataclass(frozen=True)
class FittedStep:
    """A fitted preprocessor or clusterer, as the runner ran it."""

    label: str
    component: Any
    sees_sensitive: bool
    use: str = ""


@dataclass(frozen=True)
class Assignment:
    """The counts of every assignable row for each labelling that could assign them."""

    joints: dict[str, JointTable]
    rows_assigned: int
    rows_skipped: dict[str, int]
    """Rows not assigned, by reason (e.g. a missing feature value with --on-nonfinite drop)."""
    cannot_predict: dict[str, str]
    """Labellings whose clusterer has no ``predict``: name -> reason."""
    warnings: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    """The distinct ``UserWarning`` messages each labelling's ``predict`` raised (name -> them)."""
    seconds: dict[tuple[str, str | None], float] = dataclasses.field(default_factory=dict)
    """Wall seconds of the pass's parts, by (part, labelling): ``("read", None)`` streaming the
    batches, ``("prepare", None)`` the finiteness check and the fitted preprocessors,
    ``("predict", name)`` and ``("count", name)`` each labelling's ``predict`` and its counts
    (``--timing`` shows them under ``assign``)."""


def assign_all_rows(
    lf: Any,
    template: AuditData,
    preprocessors: Sequence[FittedStep],
    clusterers: Sequence[FittedStep],
    *,
    on_nonfinite: str = "error",
    batch_rows: int = BATCH_ROWS,
    total: int | None = None,
) -> Assignment:
    """Stream ``lf`` (the whole input), assign every row, count per labelling.

    ``template`` is the in-memory sample's :class:`AuditData` before preprocessing (its roles
    are the final column roles: ID-like columns already left out).
    """
    import polars as pl

    roles = template.roles
    keys = [*roles.sensitive, *filter(None, [roles.labels])]
    cols = list(dict.fromkeys([*roles.features, *keys]))
    q = lf.with_row_index(ROW_ID).select([ROW_ID, *cols])
    if keys:
        q = q.filter(pl.all_horizontal([pl.col(c).is_not_null() for c in keys]))

    predictors: list[FittedStep] = []
    cannot: dict[str, str] = {}
    for step in clusterers:
        if _can_predict(step.component):
            predictors.append(step)
        else:
            cannot[step.label] = (
                f"{step.use or step.label} cannot assign new rows (no predict): its counting "
                "metrics describe the sample it was fitted on"
            )
    # a consensus clusterer needs its bases on every row: drop it if a base cannot predict
    for step in list(predictors):
        bases = getattr(step.component, "bases_", None) or getattr(
            step.component, "labellings", None
        )  # bases_: the labellings a fitted consensus actually combined (fce)
        missing = [b for b in (bases or ()) if b in cannot]
        if missing:
            predictors.remove(step)
            cannot[step.label] = (
                f"{step.use or step.label} cannot assign new rows: its base labelling(s) "
                f"{missing} cannot; its counting metrics describe the sample"
            )
    partial: dict[str, list[JointTable]] = {s.label: [] for s in predictors}
    skipped: dict[str, int] = {}
    raised_by: dict[str, list[str]] = {}
    seconds: dict[tuple[str, str | None], float] = {("read", None): 0.0, ("prepare", None): 0.0}
    seconds.update({("predict", s.label): 0.0 for s in predictors})
    seconds.update({("count", s.label): 0.0 for s in predictors})
    assigned = 0
    if not predictors:
        return Assignment({}, 0, {}, cannot)
    from fairaudit.core.progress import Meter

    meter = Meter("assign rows", total, "rows")
    clock = time.perf_counter()
    for batch in _batches(q, batch_rows):
        now = time.perf_counter()
        seconds["read", None] += now - clock
        clock = now
        data = dataclasses.replace(
            template, frame=batch, features=batch.select(list(roles.features)),
            labellings={}, exclusions={},
        )
        data, dropped = _finite_rows(data, on_nonfinite)
        if dropped:
            skipped["missing or non-finite feature value"] = (
                skipped.get("missing or non-finite feature value", 0) + dropped
            )
        if data.n_rows == 0:
            clock = _lap(seconds, ("prepare", None), clock)
            continue
        for step in preprocessors:
            view = data if step.sees_sensitive else data.without_sensitive()
            data = step.component.transform(view).replace(include_sensitive=True)
        # one feature matrix and one table of sensitive codes per batch, for every labelling
        data = data.shared()
        clock = _lap(seconds, ("prepare", None), clock)
        for step in predictors:
            view = data if step.sees_sensitive else data.without_sensitive()
            labels, raised = recording_warnings(step.component.predict, view)
            labels = np.asarray(labels, dtype=np.int64)
            for text in raised:
                if text not in raised_by.setdefault(step.label, []):
                    raised_by[step.label].append(text)
            if labels.shape != (data.n_rows,):
                raise InputError(
                    f"clusterer {step.label!r}: predict returned shape {labels.shape}; expected "
                    f"({data.n_rows},)"
                )
            clock = _lap(seconds, ("predict", step.label), clock)
            data = data.with_labelling(Labelling(name=step.label, labels=labels,
                                                 origin="clusterer", component=step.use))
            partial[step.label].append(joint_from_frame(
                data.frame, label=None, sensitive=roles.sensitive, ordinal=roles.ordinal,
                labels_array=labels,
            ))
            clock = _lap(seconds, ("count", step.label), clock)
        assigned += data.n_rows
        meter.update(assigned)
    seconds["read", None] += time.perf_counter() - clock
    meter.close(assigned)
    joints = {name: sum_joint_tables(parts) for name, parts in partial.items() if parts}
    return Assignment(joints, assigned, skipped, cannot, raised_by, seconds)


def _lap(seconds: dict[tuple[str, str | None], float], key: tuple[str, str | None],
         since: float) -> float:
    """Add the time since ``since`` to ``seconds[key]``; returns now."""
    now = time.perf_counter()
    seconds[key] = seconds.get(key, 0.0) + now - since
    return now


def _can_predict(component: Any) -> bool:
    from fairaudit.core.components import Clusterer

    fn = getattr(type(component), "predict", None)
    return fn is not None and fn is not getattr(Clusterer, "predict", None)


def _batches(q: Any, batch_rows: int):
    """The rows of lazy frame ``q`` in batches of about ``batch_rows`` (streaming)."""
    collect_batches = getattr(q, "collect_batches", None)
    if collect_batches is not None:
        buf = []
        size = 0
        for chunk in collect_batches(chunk_size=batch_rows):
            buf.append(chunk)
            size += chunk.height
            if size >= batch_rows:
                yield _concat(buf)
                buf, size = [], 0
        if buf:
            yield _concat(buf)
        return
    offset = 0  # polars without collect_batches: slices (re-scans CSV; fine for Parquet)
    while True:
        chunk = q.slice(offset, batch_rows).collect(engine="streaming")
        if chunk.height == 0:
            return
        yield chunk
        offset += chunk.height


def _concat(frames: list) -> Any:
    import polars as pl

    return frames[0] if len(frames) == 1 else pl.concat(frames, how="vertical")


def _finite_rows(data: AuditData, on_nonfinite: str) -> tuple[AuditData, int]:
    """Rows whose numeric features are all present and finite, as the fit required."""
    frame = data.features
    bad = []
    mask = np.ones(frame.height, dtype=bool)
    for c, dtype in frame.schema.items():
        if not dtype.is_numeric():
            continue
        col = frame.get_column(c)
        ok = col.is_not_null()
        if dtype.is_float():
            ok = ok & col.is_finite().fill_null(False)
        ok_np = ok.to_numpy()
        if not ok_np.all():
            bad.append(c)
            mask &= ok_np
    if not bad:
        return data, 0
    if on_nonfinite != "drop":
        raise InputError(
            "feature column(s) " + ", ".join(repr(c) for c in bad)
            + " contain missing or non-finite values in rows outside the fitted sample; "
            "exclude them (--exclude) or drop those rows (--on-nonfinite drop)"
        )
    return data.filter_rows(mask, "missing or non-finite feature value"), int((~mask).sum())
