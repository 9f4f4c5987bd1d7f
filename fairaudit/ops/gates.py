"""Gates: every threshold judged on every (labelling, attribute) it applies to.

A gate cannot pass by accident. A threshold is checked against the *scope* the chain promises —
each labelling audited (or the data, for auditors that judge the data) times each attribute (for
per-attribute metrics) — not against whatever results happen to exist. A metric that was not
computed for a labelling/attribute in that scope, or whose value (or CI end) is undefined, is a
failed gate with the reason stated; it never passes silently.

Bound checks that do not need the data (range, NaN/inf, direction, ``@ci`` without intervals) are
done when the chain is validated (:func:`check_threshold`), so they are configuration errors.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fairaudit.core.components import Direction, MetricSpec
from fairaudit.report.results import MetricResult, Status, Threshold
from fairaudit.report.words import join_clauses


@dataclass(frozen=True)
class Gate:
    """One threshold judged on one (labelling, attribute)."""

    threshold: Threshold
    labelling: str
    attribute: str | None
    status: Status
    judged: float | None = None
    """The number compared with the bound (``None`` when there was none to compare)."""
    judged_on: str = "value"
    """``"value"``, ``"ci_lower"`` or ``"ci_upper"``: which number :attr:`judged` is."""
    value: float | None = None
    """The metric's point estimate (for display beside a CI end)."""
    reason: str | None = None
    """Why the gate failed without a number (not computed, undefined, no interval), or failed
    on a CI end while the value clears the bound (the data cannot judge)."""

    def to_json(self) -> dict[str, Any]:
        th = self.threshold
        return {
            "metric": th.metric,
            "labelling": self.labelling,
            "attribute": self.attribute,
            "bound": th.bound,
            "threshold": _num(th.value),
            "on": th.on,
            "severity": th.severity,
            "judged": _num(self.judged),
            "judged_on": self.judged_on,
            "value": _num(self.value),
            "status": self.status.value,
            "reason": self.reason,
            "source": th.source,
        }


def _num(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


# --------------------------------------------------------------------------- configuration
def check_threshold(th: Threshold, m: MetricSpec, *, bootstrap: int) -> list[str]:
    """Problems with ``th`` on the metric ``m`` that make it a configuration error."""
    problems: list[str] = []
    if not math.isfinite(th.value):
        problems.append(f"the bound of {th.metric!r} must be a finite number; got {th.value!r}")
        return problems
    lo, hi = _range(m)
    if (lo is not None and th.value < lo) or (hi is not None and th.value > hi):
        problems.append(
            f"bound {th.value:g} is outside the range of {th.metric!r} "
            f"[{_fmt_end(lo, '-inf')}, {_fmt_end(hi, 'inf')}]: the gate could never "
            + ("pass" if (th.bound == "min") == (hi is not None and th.value > hi) else "fail")
        )
    if th.bound == "min" and m.direction is Direction.LOWER_IS_BETTER:
        problems.append(
            f"{th.metric!r} is lower-is-better: a lower bound on it rewards unfairness; "
            f"use {_other_bound(th, 'max')} instead"
        )
    elif th.bound == "max" and m.direction is Direction.HIGHER_IS_BETTER:
        problems.append(
            f"{th.metric!r} is higher-is-better: an upper bound on it rewards unfairness; "
            f"use {_other_bound(th, 'min')} instead"
        )
    if th.on != "value":
        if not m.bootstrap:
            problems.append(f"metric {th.metric!r} has no confidence interval; judge it on the "
                            f"value (drop @{th.on})")
        elif bootstrap <= 0:
            problems.append(
                f"{th.metric}@{th.on} judges a confidence interval, but intervals are off "
                f"({_bootstrap_given(th, '0')}); give {_bootstrap_given(th, 'N')} or drop @{th.on}"
            )
    return problems


def _surface(th: Threshold) -> str:
    """Where ``th`` was written, from its ``source``: ``"cli"`` (``--fail-under ...``), ``"api"``
    (``fail_under['wd']``, a keyword of ``fairaudit.audit``), ``"chain"`` (a TOML path) or
    ``"python"`` (a ``Threshold`` built in Python, no source)."""
    if th.source.startswith("--"):
        return "cli"
    if th.source.startswith(("fail_", "warn_")):
        return "api"
    return "chain" if th.source else "python"


def _other_bound(th: Threshold, bound: str) -> str:
    """The way to give the other bound, in the words of where ``th`` was written."""
    side = "over" if bound == "max" else "under"
    kind = "fail" if th.severity == "error" else "warn"
    return {"cli": f"--{kind}-{side}", "api": f"{kind}_{side}", "chain": f"{bound} = ...",
            "python": f"Threshold(..., bound={bound!r})"}[_surface(th)]


def _bootstrap_given(th: Threshold, value: str) -> str:
    """The number of bootstrap replicates set to ``value``, as where ``th`` was written."""
    return {"cli": f"--bootstrap {value}", "chain": f"options.bootstrap = {value}"}.get(
        _surface(th), f"bootstrap={value}")


def _range(m: MetricSpec) -> tuple[float | None, float | None]:
    if m.range is None:
        return None, None
    lo, hi = m.range
    return (None if lo is None else float(lo)), (None if hi is None else float(hi))


def _fmt_end(x: float | None, inf: str) -> str:
    return inf if x is None else f"{x:g}"


# --------------------------------------------------------------------------- evaluation
@dataclass(frozen=True)
class Scope:
    """Where a metric is expected: labellings x attributes (``None`` = not per attribute)."""

    labellings: tuple[str, ...]
    attributes: tuple[str | None, ...]


def evaluate_gates(
    results: Sequence[MetricResult],
    thresholds: Sequence[Threshold],
    scopes: Mapping[str, Scope],
    *,
    reasons: Mapping[str, str] | None = None,
) -> tuple[list[MetricResult], list[Gate]]:
    """Judge every threshold on every (labelling, attribute) of its metric's scope.

    ``scopes`` maps a metric name to where the chain promised it; ``reasons`` maps a labelling to
    a known reason why nothing could be computed for it (e.g. every row is noise). Returns the
    results with ``threshold``/``status`` set (the worst gate that judged each one) and the gates,
    in threshold order.
    """
    reasons = dict(reasons or {})
    index: dict[tuple[str, str, str | None], MetricResult] = {}
    for r in results:
        index.setdefault((r.metric, r.labelling, r.attribute), r)
    gates: list[Gate] = []
    worst: dict[tuple[str, str, str | None], Gate] = {}
    for th in thresholds:
        scope = scopes.get(th.metric)
        keys: list[tuple[str, str | None]] = []
        if scope is not None:
            keys = [(lab, a) for lab in scope.labellings for a in scope.attributes]
        else:  # not declared by the chain's auditors: judge what exists
            keys = [(r.labelling, r.attribute) for r in results if r.metric == th.metric]
        for lab, attr in keys:
            if th.labelling is not None and th.labelling != lab:
                continue
            if th.attribute is not None and th.attribute != attr:
                continue
            r = index.get((th.metric, lab, attr))
            gate = _judge(th, lab, attr, r, reasons.get(lab))
            gates.append(gate)
            key = (th.metric, lab, attr)
            if r is not None and (key not in worst or _rank(gate) > _rank(worst[key])):
                worst[key] = gate
        if not keys or not any(g.threshold is th for g in gates):
            where = []
            if th.labelling is not None:
                where.append(f"labelling {th.labelling!r}")
            if th.attribute is not None:
                where.append(f"attribute {th.attribute!r}")
            gates.append(Gate(
                threshold=th, labelling=th.labelling or "*", attribute=th.attribute,
                status=_bad(th), judged_on=_judged_on(th),
                reason=f"{th.metric} was not computed"
                + (f" for {' and '.join(where)}" if where else "")
                + " (no labelling or attribute it applies to was audited)",
            ))
    out = []
    for r in results:
        g = worst.get((r.metric, r.labelling, r.attribute))
        if g is None:
            out.append(r)
        else:
            out.append(dataclasses.replace(r, threshold=g.threshold, status=g.status,
                                           judged=g.judged))
    return out, gates


def _rank(g: Gate) -> int:
    return {Status.PASS: 0, Status.WARN: 1, Status.FAIL: 2}.get(g.status, 0)


def _bad(th: Threshold) -> Status:
    return Status.FAIL if th.severity == "error" else Status.WARN


def _judged_on(th: Threshold) -> str:
    from fairaudit.report.results import ci_end

    end = ci_end(th)
    return "value" if end is None else f"ci_{end}"


def _judge(th: Threshold, lab: str, attr: str | None, r: MetricResult | None,
           known: str | None) -> Gate:
    on = _judged_on(th)
    where = lab + (f"[{attr}]" if attr else "")
    if r is None:
        why = f"{th.metric} was not computed for {where}"
        if known:
            why += f": {known}"
        return Gate(th, lab, attr, _bad(th), None, on, None, why)
    value = r.value if r.value is not None and math.isfinite(r.value) else None
    if value is None:
        why = f"{th.metric} is undefined for {where}"
        if r.notes:
            why += f" ({join_clauses(r.notes)})"
        elif known:
            why += f": {known}"
        return Gate(th, lab, attr, _bad(th), None, on, None, why)
    x: float | None = value
    if on != "value":
        if r.ci is None:
            return Gate(th, lab, attr, _bad(th), None, on, value,
                        f"{th.metric} has no confidence interval for {where}")
        x = r.ci[0] if on == "ci_lower" else r.ci[1]
        if x is None or not math.isfinite(x):
            return Gate(th, lab, attr, _bad(th), None, on, value,
                        f"the confidence interval of {th.metric} for {where} is undefined")
    ok = x >= th.value if th.bound == "min" else x <= th.value
    why = None
    if not ok and on != "value" and r.ci is not None:
        # the interval straddles the bound: the data cannot judge either way, and a gate that
        # cannot judge fails (by design) — say so beside a verdict of "too little data"
        lo, hi = r.ci
        other = hi if on == "ci_lower" else lo
        if other is not None and math.isfinite(other) and (
                other >= th.value if th.bound == "min" else other <= th.value):
            why = (f"failed because the data cannot judge: the confidence interval "
                   f"[{lo:.3g}, {hi:.3g}] straddles the bound {th.value:g} (value {value:.3g}); "
                   "a gate on the interval fails unless the data show the bound is met")
    return Gate(th, lab, attr, Status.PASS if ok else _bad(th), float(x), on, value, why)


def overall(gates: Iterable[Gate]) -> Status:
    """FAIL if an error gate failed, else WARN if a warning gate did, else PASS; no gates:
    NOT_EVALUATED."""
    statuses = {g.status for g in gates}
    for s in (Status.FAIL, Status.WARN, Status.PASS):
        if s in statuses:
            return s
    return Status.NOT_EVALUATED


def scopes_for(
    audit_classes: Iterable[type],
    labellings: Sequence[str],
    attributes: Sequence[str],
    *,
    data_labelling: str,
) -> dict[str, Scope]:
    """Where each metric of the chain's auditors is expected: every labelling (or
    ``data_labelling`` for auditors that judge the data) x every attribute (or ``None`` for
    metrics that are not per attribute)."""
    out: dict[str, Scope] = {}
    for cls in audit_classes:
        labs = tuple(labellings) if getattr(cls, "per_labelling", True) else (data_labelling,)
        if not labellings:
            labs = ()
        for m in getattr(cls, "metrics", ()):
            attrs: tuple[str | None, ...] = tuple(attributes) if m.per_attribute else (None,)
            out.setdefault(m.name, Scope(labs, attrs))
    return out
