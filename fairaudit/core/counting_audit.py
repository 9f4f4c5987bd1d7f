"""The audit step of counting auditors: small groups, point values, intervals, per-cluster rows.

A counting auditor sees one group x cluster table per attribute. The host

1. leaves out groups with fewer than ``min_cell`` rows (unless the auditor sets
   ``small_groups = "keep"``): a ratio over a handful of people says nothing about a segmentation,
   and one person more or less would swing it. They are listed as "too small to judge";
2. computes the metrics on the remaining table;
3. attaches a confidence interval to every metric that declares ``bootstrap=True``: the
   auditor's own interval where it gives one (``CountingAuditor.intervals``: the score
   intersection bounds of the balance and CCE families, the triangle-inequality bounds of the
   distances), otherwise the percentile interval of the multinomial bootstrap of the joint
   table, widened where needed to contain the estimate (docs/metrics.md, "Uncertainty").
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from fairaudit.core.components import CountingAuditor, MetricSpec
from fairaudit.core.contingency import BootstrapReplicates, JointTable
from fairaudit.core.data import GroupTable
from fairaudit.core.progress import Meter
from fairaudit.errors import FairauditError
from fairaudit.report.results import MetricResult

BOOTSTRAP_METHOD = "bootstrap-percentile"


@dataclasses.dataclass(frozen=True)
class Judgeable:
    """The part of a table large enough to judge, and what was left out."""

    table: GroupTable | None
    """``None`` when fewer than two groups remain."""
    group_rows: tuple[int, ...]
    """Rows of the full table kept, in order."""
    cluster_cols: tuple[int, ...]
    """Columns of the full table kept, in order."""
    too_small: tuple[str, ...]
    too_small_rows: int
    unreleased: tuple[str, ...] = ()
    """Of ``too_small``: groups with a cell a private-domain release did not publish (its count
    is unknown, below the release threshold, not zero)."""


def judgeable(table: GroupTable, min_cell: int, keep_small: bool = False,
              unknown: Collection[str] = ()) -> Judgeable:
    """Drop groups with fewer than ``min_cell`` people in clusters (the people the metrics
    judge: noise rows do not count), groups in ``unknown`` (a cell of theirs was not released:
    their counts are unknown, not zero) and clusters left empty."""
    judged = table.counts.sum(axis=1)
    sizes = judged + table.noise
    keep = np.ones(len(table.groups), dtype=bool) if keep_small else judged >= max(min_cell, 0)
    unknown_mask = np.array([g in unknown for g in table.groups], dtype=bool)
    keep &= ~unknown_mask
    keep_l = keep.tolist()
    small = tuple(g for g, k in zip(table.groups, keep_l, strict=True) if not k)
    unreleased = tuple(g for g, u in zip(table.groups, unknown_mask.tolist(), strict=True) if u)
    small_rows = int(sizes[~keep].sum())
    if keep.sum() < 2:
        return Judgeable(None, (), (), small, small_rows, unreleased)
    counts = table.counts[keep]
    cols = counts.sum(axis=0) > 0
    out = dataclasses.replace(
        table,
        groups=tuple(g for g, k in zip(table.groups, keep_l, strict=True) if k),
        clusters=tuple(c for c, k in zip(table.clusters, cols.tolist(), strict=True) if k),
        counts=counts[:, cols],
        noise=table.noise[keep],
    )
    return Judgeable(
        out,
        tuple(np.flatnonzero(keep).tolist()),
        tuple(np.flatnonzero(cols).tolist()),
        small,
        small_rows,
        unreleased,
    )


UNRELEASED_REASON = "cells below the private release threshold"


def _too_small_detail(j: Judgeable, min_cell: int) -> dict[str, Any]:
    out: dict[str, Any] = {
        "groups": list(j.too_small),
        "min_cell": int(min_cell),
        "rows": int(j.too_small_rows),
    }
    if j.unreleased:
        out["unreleased"] = list(j.unreleased)
        out["unreleased_reason"] = UNRELEASED_REASON
    return out


def _names(groups: Sequence[str]) -> str:
    return ", ".join(groups[:5]) + (f" and {len(groups) - 5:,} more" if len(groups) > 5 else "")


def _too_small_note(j: Judgeable, min_cell: int) -> str:
    below = [g for g in j.too_small if g not in j.unreleased]
    parts = []
    if below:
        parts.append(f"groups below --min-cell {min_cell}: {_names(below)}")
    if j.unreleased:
        parts.append(f"{UNRELEASED_REASON} (counts unknown, not zero): {_names(j.unreleased)}")
    return (f"too small to judge, left out ({'; '.join(parts)}) "
            f"({j.too_small_rows:,} people)")


def _hull(lo: float, hi: float, value: float) -> tuple[float, float, bool]:
    """The interval widened to contain the estimate; says whether it had to be."""
    if math.isnan(value):
        return lo, hi, False
    new_lo, new_hi = min(lo, value), max(hi, value)
    return new_lo, new_hi, (new_lo, new_hi) != (lo, hi)


BIAS_METHOD = "bootstrap-median-bias"
LIKELY_BELOW = 0.05
"""The plug-in minimum is "likely below" the population value when its bias-corrected value
lies above it by at least this share of the interval's width."""


def structural_cap(metric: str, counts: Any, value: float) -> float | None:
    """The largest value the table's own cluster sizes allow, where the metric has one:
    fairness_cce of the table whose every cluster has the population's group mix (n_i s_k / n).
    For each cluster the group shares average (weights n_i / n) to c s_k / n, so some group's
    ratio lies on the far side of it from 1 and fairness_cce can never exceed that table's
    value (tests/metrics/test_bias_cap.py proves it on random tables). None for other metrics,
    or when ``counts`` is not the table ``value`` was computed from."""
    if metric != "fairness_cce":
        return None
    from fairaudit.metrics.counting import fairness_cce

    N = np.asarray(counts, dtype=np.float64)
    if N.ndim != 2 or N.size == 0 or not N.sum() > 0:
        return None
    try:
        if not math.isclose(float(fairness_cce(N)), value, rel_tol=1e-9, abs_tol=1e-12):
            return None
        cap = float(fairness_cce(np.outer(N.sum(axis=1), N.sum(axis=0)) / N.sum()))
    except ValueError:  # an empty group: not a table the metric was computed on
        return None
    return cap if math.isfinite(cap) else None


def _bias_detail(iv: Any, value: float, ci: tuple[float, float],
                 cap: float | None = None) -> dict[str, Any] | None:
    """``detail.bias`` of a minimum over cells (docs/json.md): the plug-in corrected for its
    bootstrap median bias (within the reported interval ``ci``, capped at the range), that bias (value - corrected, at most 0),
    the cells of which the plug-in is the smallest and their median count, and whether the
    plug-in is likely below the population value. ``None`` where the interval method gives no
    bias correction (conservative, a release's, an estimate of 0)."""
    u = getattr(iv, "bias_corrected", None)
    if u is None or math.isnan(value) or not math.isfinite(float(u.value)):
        return None
    # within the reported interval: the calibration caps it at the raw upper end, which for
    # a value near 1 can pass the metric's range (a balance of 0.998 "corrected" to 1.051)
    # and never above what the cluster sizes allow (fairness_cce: structural_cap): the cells of
    # a minimum are tied by their shares, which a per-cell correction does not know
    m = min(max(float(u.value), value), float(ci[1]), math.inf if cap is None else max(cap, value))
    people = float(u.people)
    return {
        "method": BIAS_METHOD,
        "corrected": m,
        "bias": value - m,
        "cells": int(u.cells),
        "people": people if math.isfinite(people) else None,
        "likely_below": bool(m - value >= LIKELY_BELOW * (ci[1] - ci[0]) and m > value),
    }


def _interval_detail(iv: Any, level: float, table: GroupTable) -> dict[str, Any]:
    out: dict[str, Any] = {"method": str(getattr(iv, "method", "auditor")), "level": level}
    for end in ("lower", "upper"):
        cell = getattr(iv, f"{end}_cell", None)
        if cell is not None:
            gi, ki = cell
            out[f"{end}_set_by"] = {"group": table.groups[gi], "cluster": table.clusters[ki]}
    return out


HIDDEN_NOTE = ("most cells of this table can be hidden by the release's noise: the interval "
               "reaches the lowest value (the noise alone would make a distance this large)")


def _bottom(spec: MetricSpec) -> float:
    """The lowest value of a metric (0 for the distances, whose range may depend on the
    data)."""
    lo = spec.range[0] if spec.range is not None else None
    return 0.0 if lo is None else float(lo)


def _open_hidden(own: Mapping[str, Any], specs: Mapping[str, MetricSpec], table: GroupTable,
                 noise: float | None) -> tuple[Mapping[str, Any], set[str]]:
    """A release: the lower ends of the triangle bounds (the distances, Ed and Wd) go to the
    bottom of their range where most cells can be hidden by the noise
    (:func:`fairaudit.metrics.noisy_intervals.open_below`)."""
    if noise is None or not own:
        return own, set()
    from fairaudit.metrics.noisy_intervals import open_below

    own = dict(own)
    lowest = {m: _bottom(specs[m]) for m, iv in own.items()
              if m in specs and "triangle" in str(getattr(iv, "method", ""))}
    return own, (open_below(own, table.counts, noise, lowest) if lowest else set())


def run_counting_auditor(
    comp: CountingAuditor,
    labelling: str,
    joint: JointTable,
    tables: Mapping[str, GroupTable],
    boot: np.ndarray | BootstrapReplicates | None,
    *,
    min_cell: int,
    level: float,
    ci_method: str = "calibrated",
    own_intervals: bool = True,
    unreleased: Mapping[str, Collection[str]] | None = None,
    noise: float | None = None,
) -> list[MetricResult]:
    """All metric results of one counting auditor for one labelling (every attribute).

    ``boot`` holds the bootstrap replicates of the joint table's cells (B x cells, or a
    :class:`BootstrapReplicates` shared by the auditors of a labelling so that each attribute's
    replicate tables are built once), or ``None`` when intervals are off (``--bootstrap 0``).
    ``ci_method`` (``--ci-method``) is passed to ``comp.intervals`` when it takes ``method``.
    ``own_intervals=False`` takes every interval from the replicates' percentiles.
    ``noise`` (a published release): the variance of the noise of every released count; the
    replicates are then the release's parametric bootstrap (sampling and fresh noise), and an
    auditor's own intervals are used only where its ``intervals`` takes ``noise`` (the
    built-ins: per-cell bounds with sampling and noise variance, docs/privacy.md) — an auditor
    whose intervals know only sampling gets the percentile interval of the replicates.
    ``unreleased`` (attribute -> groups): groups of a private-domain release with a cell below
    the release threshold; their counts are unknown, so they are too small to judge.
    """
    from fairaudit.metrics.bootstrap import percentile_interval

    replicates = (boot if boot is None or isinstance(boot, BootstrapReplicates)
                  else BootstrapReplicates(joint, boot))
    out: list[MetricResult] = []
    specs: dict[str, MetricSpec] = {m.name: m for m in comp.metrics}
    keep_small = getattr(comp, "small_groups", "exclude") == "keep"
    meter = None if replicates is None else Meter(
        f"bootstrap {comp.name} on {labelling}", replicates.n_boot * len(tables), "replicates")
    for attribute, full in tables.items():
        if full.counts.size == 0:
            continue
        j = judgeable(full, min_cell, keep_small, (unreleased or {}).get(attribute, ()))
        n_rows = full.n + full.n_noise
        if j.table is None:
            out.extend(_undetermined(comp, labelling, attribute, j, min_cell, n_rows))
            continue
        table = j.table
        values = comp.compute(table)
        own: Mapping[str, Any] = {}
        opened: set[str] = set()
        batch = None
        if replicates is not None and any(specs[m].bootstrap for m in values if m in specs):
            counts = replicates.tables(attribute, j.group_rows, j.cluster_cols)
            own = (_own_intervals(comp, table, level, counts, ci_method, noise)
                   if own_intervals else {})
            own, opened = _open_hidden(own, specs, table, noise)
            wanted = [m for m in values if m in specs and specs[m].bootstrap and m not in own]
            if wanted:
                batch = _compute_batch(comp, table, counts, wanted)
            del counts  # (B x groups x clusters): large with many clusters
        if meter is not None:
            meter.advance(replicates.n_boot)
        by_metric = _breakdown_by_metric(comp, table, list(values))
        for metric, value in values.items():
            m = specs.get(metric)
            if m is None:
                raise FairauditError(
                    f"auditor {comp.name!r} returned metric {metric!r} it does not declare"
                )
            value = float(value)
            ci = None
            detail: dict[str, Any] = {}
            notes: list[str] = []
            if m.bootstrap and metric in own:
                iv = own[metric]
                lo, hi, widened = _hull(float(iv.lower), float(iv.upper), value)
                ci = (lo, hi)
                detail["interval"] = _interval_detail(iv, level, table)
                if "bootstrap" in detail["interval"]["method"]:
                    detail["interval"]["replicates"] = replicates.n_boot
                if metric in opened:
                    detail["interval"]["hidden_by_noise"] = True
                    notes.append(HIDDEN_NOTE)
            elif m.bootstrap and batch is not None and metric in batch:
                lo, hi = percentile_interval(np.asarray(batch[metric]), level)
                if not (math.isnan(lo) and math.isnan(hi)):
                    lo, hi, widened = _hull(float(lo), float(hi), value)
                    ci = (lo, hi)
                    detail["interval"] = {"method": BOOTSTRAP_METHOD, "level": level,
                                          "replicates": replicates.n_boot}
                    if widened:
                        detail["interval"]["widened_to_estimate"] = True
            if ci is not None and m.range is not None:  # the value cannot leave its range
                lo_r, hi_r = m.range  # either end may be None (open)
                ci = (ci[0] if lo_r is None else max(ci[0], float(lo_r)),
                      ci[1] if hi_r is None else min(ci[1], float(hi_r)))
            if ci is not None and m.bootstrap and metric in own:
                bias = _bias_detail(own[metric], value, ci,
                                    structural_cap(metric, table.counts, value))
                if bias is not None:
                    detail["bias"] = bias
            if j.too_small:
                detail["too_small"] = _too_small_detail(j, min_cell)
                notes.append(_too_small_note(j, min_cell))
            if math.isnan(value):
                notes.append(f"{metric} is undefined here")
            rows = by_metric[metric]
            out.append(
                MetricResult(
                    auditor=comp.name, metric=metric, labelling=labelling,
                    value=value, direction=m.direction, attribute=attribute, ci=ci,
                    per_cluster=rows,
                    n_rows=n_rows, headline=m.headline, notes=tuple(notes), detail=detail,
                )
            )
    if meter is not None:
        meter.close()
    return out


def _without_metric(row: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(row)  # a copy, keys in the same order
    out.pop("metric", None)
    return out


def _own_intervals(comp: CountingAuditor, table: GroupTable, level: float, counts: np.ndarray,
                   ci_method: str, noise: float | None = None) -> Mapping[str, Any]:
    """``comp.intervals``, with ``method=ci_method`` when the auditor takes it (the built-ins
    do; third-party auditors written before ``--ci-method`` do not), and ``noise`` for a
    release: an auditor that does not take it has no interval of its own there (``{}``)."""
    import inspect

    try:
        params = inspect.signature(comp.intervals).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        params = {}
    kw: dict[str, Any] = {"method": ci_method} if "method" in params else {}
    if noise is not None:
        if "noise" not in params:
            return {}
        kw["noise"] = noise
    return comp.intervals(table, level, counts, **kw)


def _compute_batch(comp: CountingAuditor, table: GroupTable, counts: np.ndarray,
                   wanted: Sequence[str]) -> Mapping[str, Any]:
    """``comp.compute_batch`` on the replicates, asking only for the metrics that need a
    percentile interval when the auditor takes a ``metrics`` keyword (the built-ins do: with
    many clusters each metric costs a pass over B x groups x clusters)."""
    import inspect

    try:
        takes = "metrics" in inspect.signature(comp.compute_batch).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        takes = False
    if takes:
        return comp.compute_batch(table, counts, metrics=tuple(wanted))
    return comp.compute_batch(table, counts)


def _breakdown_by_metric(comp: CountingAuditor, table: GroupTable,
                         metrics: Sequence[str]) -> dict[str, tuple[dict[str, Any], ...]]:
    """The per-cluster rows of each metric, as copies without their ``"metric"`` key: one call
    of ``breakdown`` for all of them (it builds a row per cluster and metric), filed as
    :meth:`CountingAuditor.breakdown_for` does. An auditor that overrides ``breakdown_for`` is
    asked metric by metric."""
    if type(comp).breakdown_for is not CountingAuditor.breakdown_for:
        return {m: tuple(map(_without_metric, comp.breakdown_for(table, m))) for m in metrics}
    rows = comp.breakdown(table)
    if isinstance(rows, Mapping):
        return {m: tuple(map(_without_metric, rows.get(m, ()))) for m in metrics}
    unnamed = object()
    headline = comp.headline().name if comp.metrics else unnamed
    out: dict[Any, list[dict[str, Any]]] = {m: [] for m in metrics}
    for r in rows:
        key = r.get("metric", headline)
        if key is unnamed:  # no metrics declared: breakdown_for files it under any metric
            for m in metrics:
                out[m].append(_without_metric(r))
        elif key in out:
            row = dict(r)  # a copy, keys in the same order, without "metric"
            row.pop("metric", None)
            out[key].append(row)
    return {m: tuple(out[m]) for m in metrics}


def _undetermined(comp: CountingAuditor, labelling: str, attribute: str, j: Judgeable,
                  min_cell: int, n_rows: int) -> Sequence[MetricResult]:
    """NaN results when fewer than two groups are large enough to judge."""
    why = (f"have at least {min_cell} rows (--min-cell) and every cell released"
           if j.unreleased else f"have at least {min_cell} rows (--min-cell)")
    note = (
        f"too little data: fewer than two groups of {attribute!r} {why}, so no comparison "
        "between groups is possible"
    )
    if j.unreleased:
        note += (f"; {UNRELEASED_REASON} ({_names(j.unreleased)}): their counts are unknown, "
                 "not zero")
    return [
        MetricResult(
            auditor=comp.name, metric=m.name, labelling=labelling, value=float("nan"),
            direction=m.direction, attribute=attribute, n_rows=n_rows, headline=m.headline,
            notes=(note,), detail={"too_small": _too_small_detail(j, min_cell)},
        )
        for m in comp.metrics
    ]


def table_interval(counts: Any, groups: Sequence[Sequence[str]], clusters: Sequence[Any],
                   attributes: Sequence[str], metric: str, *, labelling: str,
                   auditor: CountingAuditor, n_boot: int = 200, seed: int = 0,
                   level: float = 0.95, min_cell: int = 10, ci_method: str = "calibrated"
                   ) -> MetricResult | None:
    """``metric`` of a (groups x clusters) count table with the interval an audit gives it —
    the audit's own code path, not a copy: the joint table, the seeded per-attribute bootstrap
    streams (the run's ``seed``, the ``labelling``'s name, the attribute's name), the groups
    too small to judge (``min_cell``), then :func:`run_counting_auditor`. With the audit's
    settings (``--bootstrap``, ``--seed``, ``--min-cell``, ``--ci-method``, ``ci_level``) it is
    the interval ``--fail-under METRIC@ci`` judges (the Great Expectations expectations use it).

    ``groups`` holds each row's group as one name per attribute (several attributes: the
    intersection is judged, named ``a|b``); ``clusters`` the columns' cluster labels (ints, or
    names: ordered as the audit orders them). Returns the result (``value``, ``ci``), or None
    when the auditor gives no such metric."""
    from fairaudit.core.data import INTERSECTION_SEP

    table = np.asarray(counts, dtype=np.int64)
    attrs = tuple(attributes)
    categories = tuple(tuple(sorted({str(g[j]) for g in groups})) for j in range(len(attrs)))
    g_codes = np.array([[categories[j].index(str(g[j])) for j in range(len(attrs))]
                        for g in groups], dtype=np.int64).reshape(len(groups), len(attrs))
    named = not all(isinstance(c, int | np.integer) and not isinstance(c, bool) for c in clusters)
    names = tuple(sorted(str(c) for c in clusters)) if named else None
    ids = (np.array([names.index(str(c)) for c in clusters], dtype=np.int64) if named
           else np.asarray(clusters, dtype=np.int64))
    gi, ki = np.nonzero(table > 0)  # the cells a group-by of the rows gives
    joint = JointTable(attributes=attrs, categories=categories, cluster=ids[ki],
                       codes=g_codes[gi], counts=table[gi, ki], cluster_names=names)
    attribute = attrs[0] if len(attrs) == 1 else INTERSECTION_SEP.join(attrs)
    tables = {attribute: joint.table(attribute)}
    boot = (BootstrapReplicates.per_attribute(joint, n_boot, seed, labelling)
            if n_boot > 0 else None)
    results = run_counting_auditor(auditor, labelling, joint, tables, boot, min_cell=min_cell,
                                   level=level, ci_method=ci_method)
    return next((r for r in results if r.metric == metric and r.attribute == attribute), None)
