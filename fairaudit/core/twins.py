"""Twins and the price of fairness (issue 13 item 1).

A fair clusterer takes a boolean ``fair`` parameter; ``fair = false`` runs the same code path
without the fairness term (its *twin*). :func:`expand_twins` adds, when the chain option
``twins`` is on, a twin step after the chain's clusterers for every step whose clusterer has a
``fair`` parameter and is not already run with ``fair = false``. The runner fits a twin with its
fair step's exact parameters (seed and k included) and the same input the fair step saw.

:func:`price_of_fairness` pairs, in a finished audit document, each fair labelling with its twin
(same ``component``, same parameters except ``fair`` and the fitted k) and gives, per attribute,
the fairness gained on the method's own target metric and the quality lost (silhouette).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from fairaudit.report.values import finite

TWIN_SUFFIX = "-unfair"
"""A twin step's labelling name is its fair step's name plus this suffix."""

FAIRNESS_TARGETS: Mapping[str, tuple[tuple[str, str], ...]] = {
    "fairden": (("balance", "balance"),),
    "ffcm": (("distribution", "ed"),),
    "fce": (("capacity", "fairness_cce"),),
    "lofkm": (("lcd", "avg_lcd"), ("balance", "balance")),
}
"""Each built-in fair method's own target (auditor, metric), in order of preference: the first
one computed for both labellings of a pair is used. A clusterer may name its own target with
``extras_["fairness_target"] = {"auditor": ..., "metric": ...}``; otherwise balance."""
DEFAULT_TARGET = ("balance", "balance")
QUALITY = ("quality", "silhouette")
"""The quality metric whose difference is the quality lost."""
IGNORED_PARAMS = frozenset({"fair", "n_clusters_fitted"})
"""Parameters that may differ between a fair labelling and its twin."""


# ---------------------------------------------------------------------------- chain side
def has_fair_parameter(cls: type) -> bool:
    """True when the component class takes a ``fair`` keyword parameter."""
    try:
        return "fair" in inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return False


def _fair_default(cls: type) -> Any:
    p = inspect.signature(cls.__init__).parameters["fair"]
    return True if p.default is inspect.Parameter.empty else p.default


def expand_twins(spec: Any, registry: Any) -> Any:
    """``spec`` with a ``fair = false`` twin step appended for every fair clusterer step.

    Does nothing unless ``spec.options.twins``. A step is fair when its clusterer takes ``fair``
    and the step does not set it false. No twin is added when the chain already has a step of
    the same clusterer with the same parameters and ``fair = false``, or when the twin's name is
    taken. Twins come after every other step, so that a consensus step (FCE) sees the same
    labellings with and without twins.
    """
    if not spec.options.twins:
        return spec
    steps = list(spec.cluster)
    labels = {s.label for s in steps}
    twins = []
    for step in steps:
        if step.twin_of is not None or not registry.has("clusterer", step.use):
            continue
        cls = registry.get("clusterer", step.use).cls
        if not has_fair_parameter(cls):
            continue
        if step.params.get("fair", _fair_default(cls)) is False:
            continue
        params = {**step.params, "fair": False}
        if any(s.use == step.use and dict(s.params) == params for s in steps):
            continue
        name = step.label + TWIN_SUFFIX
        if name in labels:
            continue
        labels.add(name)
        twins.append(dataclasses.replace(
            step, path=f"{step.path}.twin", params=params, name=name, twin_of=step.label,
        ))
    if not twins:
        return spec
    return dataclasses.replace(spec, cluster=tuple(steps + twins))


# ---------------------------------------------------------------------------- report side
_finite = finite  # fairaudit.report.results.finite: a float, or None for null/NaN/inf/non-numbers


def _comparable(params: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if k not in IGNORED_PARAMS}


def find_twins(labellings: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """``(fair, twin)`` labelling names: a clusterer labelling whose ``params.fair`` is not
    false, paired with the first labelling of the same component whose ``params.fair`` is false
    and whose other parameters (but the fitted k) are equal."""
    pairs = []
    clustered = [lab for lab in labellings if lab.get("origin") == "clusterer"]
    for fair in clustered:
        params = fair.get("params") or {}
        if params.get("fair", True) is False:
            continue
        for twin in clustered:
            tp = twin.get("params") or {}
            if (
                twin is not fair
                and twin.get("component") == fair.get("component")
                and tp.get("fair") is False
                and _comparable(tp) == _comparable(params)
            ):
                pairs.append((str(fair["name"]), str(twin["name"])))
                break
    return pairs


def _results(doc: Mapping[str, Any], auditor: str, metric: str, labelling: str
             ) -> dict[Any, Mapping[str, Any]]:
    return {
        r.get("attribute"): r for r in doc.get("results") or ()
        if r["auditor"] == auditor and r["metric"] == metric and r["labelling"] == labelling
    }


def _target(lab: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    own = (lab.get("extras") or {}).get("fairness_target")
    if isinstance(own, Mapping) and own.get("auditor") and own.get("metric"):
        return ((str(own["auditor"]), str(own["metric"])),)
    return FAIRNESS_TARGETS.get(str(lab.get("component")), ()) + (DEFAULT_TARGET,)


def _gain_ci(fair: Mapping[str, Any], twin: Mapping[str, Any],
             direction: Any) -> list[float] | None:
    """MOVER interval of the gain (fair - twin in the metric's direction) from the two results'
    intervals (:func:`fairaudit.ops.compare.mover_interval`), or None when either has none. The two
    labellings are of the same rows; MOVER treats them as independent, which is conservative
    when their errors move together (the same small group drives both)."""
    from fairaudit.ops.compare import mover_interval

    fv, tv = _finite(fair.get("value")), _finite(twin.get("value"))
    f_ci, t_ci = fair.get("ci"), twin.get("ci")
    if fv is None or tv is None or not f_ci or not t_ci or direction not in (
            "higher_is_better", "lower_is_better"):
        return None
    if any(_finite(x) is None for x in (*f_ci, *t_ci)):
        return None
    lo, hi = mover_interval(tv, t_ci, fv, f_ci)  # fair - twin
    return [lo, hi] if direction == "higher_is_better" else [-hi, -lo]


def price_of_fairness(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One entry per fair labelling, twin and attribute: fairness gained and quality lost.

    ``gain`` is the improvement of the fair labelling over its twin on the target metric in the
    metric's direction (fair - twin when higher is better, twin - fair when lower is better):
    positive = the fair method is fairer; ``gain_ci`` is its interval (MOVER), which alone
    decides "fairer" in the report. ``quality_loss`` is twin - fair silhouette: positive =
    the fair method's clusters are less well separated. ``None`` where a value is undefined.
    """
    labs = {str(lab["name"]): lab for lab in doc.get("labellings") or ()}
    out: list[dict[str, Any]] = []
    for fair_name, twin_name in find_twins(list(labs.values())):
        fair = labs[fair_name]
        target = None
        for auditor, metric in _target(fair):
            fr = _results(doc, auditor, metric, fair_name)
            tr = _results(doc, auditor, metric, twin_name)
            if set(fr) & set(tr):
                target = (auditor, metric, fr, tr)
                break
        q_fair = _results(doc, *QUALITY, fair_name).get(None, {}).get("value")
        q_twin = _results(doc, *QUALITY, twin_name).get(None, {}).get("value")
        q_fair, q_twin = _finite(q_fair), _finite(q_twin)
        quality_loss = None if q_fair is None or q_twin is None else q_twin - q_fair
        base = {
            "fair": fair_name,
            "twin": twin_name,
            "component": fair.get("component"),
            "quality_metric": QUALITY[1],
            "fair_quality": q_fair,
            "twin_quality": q_twin,
            "quality_loss": quality_loss,
            "degenerate": [
                n for n in (fair_name, twin_name) if labs[n].get("warnings")
            ],
        }
        if target is None:
            out.append({**base, "attribute": None, "target_auditor": None,
                        "target_metric": None, "direction": None, "fair_value": None,
                        "twin_value": None, "gain": None})
            continue
        auditor, metric, fr, tr = target
        order = {a: i for i, a in enumerate((doc.get("input") or {}).get("attributes") or ())}
        for attribute in sorted(set(fr) & set(tr), key=lambda a: order.get(a, len(order))):
            f_res, t_res = fr[attribute], tr[attribute]
            fv, tv = _finite(f_res.get("value")), _finite(t_res.get("value"))
            direction = f_res.get("direction")
            gain = None
            if fv is not None and tv is not None:
                gain = fv - tv if direction == "higher_is_better" else tv - fv
            entry = {**base, "attribute": attribute, "target_auditor": auditor,
                     "target_metric": metric, "direction": direction, "fair_value": fv,
                     "twin_value": tv, "gain": gain,
                     "gain_ci": _gain_ci(f_res, t_res, direction)}
            out.append(entry)
    return out
