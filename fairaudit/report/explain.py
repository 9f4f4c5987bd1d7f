"""Every headline explained: a plain-word sentence per headline result, a verdict per attribute
and a glossary of the metrics, added to the audit JSON.

:func:`explain` runs last, on the document the run writes (the exact analyst's report, or the
released one), and reads nothing else: its sentences and verdicts say no more than the document
they are part of. It adds

* ``results[i].explanation`` (headline results): which cluster and group set the value, observed
  against expected count, and what sets the conservative end of the interval;
* ``verdicts``: one per clustering labelling and attribute, ``fair`` / ``borderline`` /
  ``unfair`` / ``too little data``, with the rule and the per-metric reasons;
* ``glossary``: what each reported metric measures, its range, a good value and how to choose a
  threshold, from the metrics' :class:`~fairaudit.core.components.MetricSpec` records (plugins supply
  theirs through the same fields).

The sentences are written by :mod:`fairaudit.report.explain_text`. The verdict rule and its bounds are
documented in ``docs/metrics.md`` ("Verdicts and explanations").
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from fairaudit.core.components import MetricSpec
from fairaudit.report.explain_text import (
    capitalize,
    context,
    deciding,
    excluded,
    sentence,
    value_text,
)
from fairaudit.report.results import finite

__all__ = [
    "MAX_CI_WIDTH",
    "VERDICTS",
    "explain",
    "glossary",
    "metric_specs",
    "verdict_rule",
    "verdicts",
]

VERDICTS = ("fair", "borderline", "unfair", "too little data")
MAX_CI_WIDTH = 0.5
"""An interval that straddles the bound and is wider than this share of the metric's range (or
than this, for metrics without a finite range) says too little to judge: ``too little data``."""
DATA_LABELLING = "(data)"

SpecKey = tuple[str, str]


# ============================================================================ specs
def metric_specs(registry: Any) -> dict[SpecKey, MetricSpec]:
    """``{(auditor, metric): MetricSpec}`` of every auditor in ``registry``."""
    out: dict[SpecKey, MetricSpec] = {}
    for name in registry.names("auditor"):
        cls = registry.get("auditor", name).cls
        for m in getattr(cls, "metrics", ()) or ():
            out[(cls.name, m.name)] = m
    return out


def specs_from_classes(classes: Iterable[type]) -> dict[SpecKey, MetricSpec]:
    """``{(auditor, metric): MetricSpec}`` of the given auditor classes."""
    return {(c.name, m.name): m for c in classes for m in getattr(c, "metrics", ()) or ()}


# ============================================================================ verdicts
def _bound(r: Mapping[str, Any], spec: MetricSpec | None) -> tuple[float | None, str]:
    th = r.get("threshold") or {}
    want = "min" if r.get("direction") == "higher_is_better" else "max"
    tv = finite(th.get("value"))
    if tv is not None and th.get("bound", "min") == want:
        return tv, "your threshold"
    if spec is not None and spec.verdict_bound is not None:
        return float(spec.verdict_bound), "default bound"
    return None, ""


def _span(r: Mapping[str, Any], spec: MetricSpec | None) -> float:
    rng = spec.range if spec is not None else None
    if rng and all(x is not None and math.isfinite(x) for x in rng) and rng[1] > rng[0]:
        return float(rng[1] - rng[0])
    return 1.0


def _metric_verdict(
    r: Mapping[str, Any], spec: MetricSpec | None, n_groups: int
) -> tuple[str, str] | None:
    """``(verdict, reason)`` of one headline result, or ``None`` when it has no bound."""
    bound, source = _bound(r, spec)
    metric = r["metric"]
    if bound is None:
        return None
    higher = r.get("direction") == "higher_is_better"
    op = "\u2265" if higher else "\u2264"
    rule = f"{metric} {op} {bound:g} ({source})"
    value = finite(r.get("value"))
    if value is None:
        return "too little data", f"{rule}: {metric} is undefined"
    left = excluded(r)
    if n_groups and n_groups - len(left) < 2:
        return "too little data", f"{rule}: fewer than two groups are large enough to judge"
    ci = r.get("ci")
    lo = finite(ci[0]) if ci else None
    hi = finite(ci[1]) if ci else None
    if lo is None or hi is None:
        ok = value >= bound if higher else value <= bound
        return ("fair" if ok else "unfair",
                f"{rule}: value {value_text(value)} (no interval: judged on the value alone)")
    shown = f"value {value_text(value)}, interval [{value_text(lo)}, {value_text(hi)}]"
    conservative, other = (lo, hi) if higher else (hi, lo)
    clears = (lambda x: x >= bound) if higher else (lambda x: x <= bound)
    if clears(conservative):
        return "fair", f"{rule}: {shown} clears the bound"
    if not clears(other):
        return "unfair", f"{rule}: {shown} is entirely on the wrong side"
    if hi - lo > MAX_CI_WIDTH * _span(r, spec):
        return "too little data", f"{rule}: {shown} straddles the bound and is too wide to judge"
    return "borderline", f"{rule}: {shown} straddles the bound"


def verdict_rule(level: float = 0.95) -> str:
    """The verdict rule in words (stated beside every verdict)."""
    return (
        f"Each headline metric with a bound is judged on its {level * 100:g}% interval: fair "
        "when the interval's conservative end (lower for higher-is-better, upper for "
        "lower-is-better) clears the bound, unfair when the whole interval is on the wrong "
        "side, borderline when it straddles the bound; too little data when the metric is "
        f"undefined, its interval straddles the bound and is wider than {MAX_CI_WIDTH:g} of its "
        "range, or fewer than two groups are large enough to judge. The attribute is unfair if any metric is, else too "
        "little data if any metric is, else borderline if any is, else fair. The bound is your "
        "threshold when you set one, else the metric's default bound."
    )


def verdicts(
    doc: Mapping[str, Any], specs: Mapping[SpecKey, MetricSpec] | None = None
) -> list[dict[str, Any]]:
    """One verdict per clustering labelling and attribute with at least one headline metric
    that has a bound (see :func:`verdict_rule`)."""
    specs = specs or {}
    ctx = context(doc)
    rule = verdict_rule(ctx.ci_level)
    inp = doc.get("input") or {}
    n_groups = {a: len(v or ()) for a, v in (inp.get("groups") or {}).items()}
    keyed: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in doc.get("results") or ():
        if not r.get("headline") or r.get("attribute") is None:
            continue
        if r.get("labelling") == DATA_LABELLING:
            continue
        keyed.setdefault((str(r["labelling"]), str(r["attribute"])), []).append(r)
    out = []
    for (lab, attr), rows in keyed.items():
        judged, skipped, by = [], [], []
        for r in rows:
            spec = specs.get((r["auditor"], r["metric"]))
            mv = _metric_verdict(r, spec, n_groups.get(attr, 0))
            if mv is None:
                why = spec.verdict_reason if spec is not None and spec.verdict_reason else (
                    "no verdict bound declared")
                skipped.append(f"{r['metric']} ({why})")
            else:
                judged.append(mv)
                by.append(r)
        if not judged:
            continue
        found = {v for v, _ in judged}
        for verdict in ("unfair", "too little data", "borderline", "fair"):
            if verdict in found:
                break
        out.append({
            "labelling": lab,
            "attribute": attr,
            "verdict": verdict,
            "rule": rule + ("" if not skipped else " Not judged: " + "; ".join(skipped) + "."),
            "reasons": [f"{v}: {why}" for v, why in judged],
            "decided_by": _decided_by(verdict, judged, by, ctx),
        })
    return out


def _decided_by(verdict: str, judged: list[tuple[str, str]], results: list[Mapping[str, Any]],
                ctx: Any) -> dict[str, Any] | None:
    """The result that set the verdict (the first metric whose own verdict it is; for "fair",
    the one closest to its bound is not singled out: the first) and its deciding cell."""
    for (v, _why), r in zip(judged, results, strict=True):
        if v != verdict:
            continue
        ci = r.get("ci")
        out: dict[str, Any] = {
            "metric": r["metric"],
            "value": finite(r.get("value")),
            "ci": [finite(ci[0]), finite(ci[1])] if ci else None,
        }
        # unfair: the upper end (higher is better) sits below the bound; fair: the lower end
        # clears it; the cell the interval method names for that end decided it
        higher = r.get("direction") == "higher_is_better"
        end = {"unfair": "upper" if higher else "lower",
               "fair": "lower" if higher else "upper"}.get(verdict)
        cell = deciding(r, ctx, end)
        if cell is not None:
            out.update(cell)
        return out
    return None


# ============================================================================ glossary
def _good_default(spec: MetricSpec | None, direction: str | None) -> str:
    higher = direction == "higher_is_better"
    text = "higher is better" if higher else "lower is better"
    rng = spec.range if spec is not None else None
    best = (rng[1] if higher else rng[0]) if rng else None
    if best is not None:  # an open end (None) has no best value
        text += f"; the best possible value is {best:g}"
    return capitalize(text) + "."


def _threshold_default(metric: str, direction: str | None) -> str:
    flag = "--fail-under" if direction == "higher_is_better" else "--fail-over"
    return (f"{flag} {metric}=X with X the value at which you would act; add @ci "
            f"({metric}@ci=X) to judge the interval's conservative end.")


def glossary(
    doc: Mapping[str, Any], specs: Mapping[SpecKey, MetricSpec] | None = None
) -> list[dict[str, Any]]:
    """One entry per (auditor, metric) reported in ``doc``: headline metrics first."""
    specs = specs or {}
    seen: dict[SpecKey, Mapping[str, Any]] = {}
    for r in doc.get("results") or ():
        seen.setdefault((str(r["auditor"]), str(r["metric"])), r)
    keys = sorted(seen, key=lambda k: (not seen[k].get("headline"), list(seen).index(k)))
    out = []
    for key in keys:
        r = seen[key]
        spec = specs.get(key)
        direction = spec.direction.value if spec is not None else r.get("direction")
        rng = spec.range if spec is not None else None
        out.append({
            "auditor": key[0],
            "metric": key[1],
            "headline": bool(r.get("headline")),
            "direction": direction,
            "range": None if rng is None else [finite(rng[0]), finite(rng[1])],
            "range_text": "" if spec is None else spec.range_text,
            "meaning": (spec.meaning or spec.description) if spec is not None else "",
            "good": (spec.good if spec is not None and spec.good
                     else _good_default(spec, direction)),
            "choose_threshold": (spec.choose_threshold if spec is not None
                                 and spec.choose_threshold
                                 else _threshold_default(key[1], direction)),
            "verdict_bound": None if spec is None else finite(spec.verdict_bound),
            "verdict_reason": "" if spec is None else spec.verdict_reason,
        })
    return out


# ============================================================================ the pass
def explain_results(
    doc: Mapping[str, Any], specs: Mapping[SpecKey, MetricSpec] | None = None
) -> dict[str, Any]:
    """``doc`` with ``results[i].explanation`` added to each headline result (``doc`` itself is
    not changed)."""
    specs = specs or {}
    ctx = context(doc)
    results = []
    for r in doc.get("results") or ():
        r = dict(r)
        if r.get("headline"):
            r["explanation"] = sentence(r, ctx, specs.get((r["auditor"], r["metric"])))
        results.append(r)
    return {**doc, "results": results}


def add_verdicts(
    doc: Mapping[str, Any], specs: Mapping[SpecKey, MetricSpec] | None = None
) -> dict[str, Any]:
    """``doc`` with ``verdicts`` and ``glossary`` added (``doc`` itself is not changed)."""
    specs = specs or {}
    out = dict(doc)
    out["verdicts"] = verdicts(out, specs)
    out["glossary"] = glossary(out, specs)
    return out


def explain(
    doc: Mapping[str, Any], specs: Mapping[SpecKey, MetricSpec] | None = None
) -> dict[str, Any]:
    """``doc`` with ``results[i].explanation`` (headline results), ``verdicts`` and
    ``glossary`` added. ``doc`` itself is not changed. Run it on the document the run writes:
    it reads nothing else. (The runner's ``explain`` and ``verdicts`` stages, in one call.)"""
    return add_verdicts(explain_results(doc, specs), specs)
