"""The "What the numbers mean" report section: a verdict per labelling and attribute with its
rule, the sentence that explains each headline result, and the glossary of the metrics.

It reads ``verdicts``, ``glossary`` and ``results[i].explanation`` from the audit JSON
(:func:`fairaudit.report.explain.explain` writes them at the end of every run). A document written
before they existed is explained on load, with the built-in metrics' glossary text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fairaudit.core.components import ReportSection
from fairaudit.hookspecs import hookimpl
from fairaudit.report.explain import explain, specs_from_classes

VERDICT_BADGE = {
    "fair": "badge badge-pass",
    "borderline": "badge badge-warn",
    "unfair": "badge badge-fail",
    "too little data": "badge badge-not-applicable",
}


def builtin_specs() -> dict[tuple[str, str], Any]:
    """``{(auditor, metric): MetricSpec}`` of the built-in auditors (for documents without a
    glossary)."""
    from fairaudit_builtins import auditors, centroid, fairden, fufs

    return specs_from_classes(
        [auditors.BalanceAuditor, auditors.DistributionAuditor, auditors.CapacityAuditor,
         centroid.LCDAuditor, fairden.DCSIAuditor, fufs.ProxyAuditor]
    )


def explained(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    """``doc`` itself when it carries explanations, verdicts and glossary; else explained now."""
    complete = "verdicts" in doc and "glossary" in doc and all(
        "explanation" in r for r in doc.get("results") or () if r.get("headline")
    )
    return doc if complete else explain(doc, builtin_specs())


def _range_text(rng: Any, text: str = "") -> str:
    """The glossary's range: the metric's own words when it gives them, else ``[lo, hi]``
    (``∞`` for an open end); "not fixed" when the metric declares none."""
    if text:
        return text
    if not rng or len(rng) != 2 or (rng[0] is None and rng[1] is None):
        return "not fixed"
    lo, hi = rng
    if hi is None:
        return f"[{lo:g}, \u221e)"
    if lo is None:
        return f"(\u2212\u221e, {hi:g}]"
    hi_text = "\u221a2" if abs(hi - 2**0.5) < 1e-9 else f"{hi:g}"
    return f"[{lo:g}, {hi_text}]"


class ExplainSection(ReportSection):
    name = "explain"
    title = "What the numbers mean"
    order = 150
    template = "sections/explain.html.j2"
    description = (
        "A verdict per labelling and attribute with its rule, a sentence per headline result "
        "naming the cluster and group that set it, and a glossary of the metrics."
    )

    def applies(self, run: Any) -> bool:
        return bool(run.results)

    def context(self, run: Any) -> dict[str, Any]:
        doc = explained(run.doc)
        groups: dict[str, dict[str, Any]] = {}
        for v in doc.get("verdicts") or ():
            rule = str(v.get("rule", ""))
            groups.setdefault(rule, {"rule": rule, "rows": []})["rows"].append({
                "labelling": v.get("labelling"),
                "attribute": v.get("attribute"),
                "verdict": v.get("verdict"),
                "badge": VERDICT_BADGE.get(str(v.get("verdict")), "badge badge-not-evaluated"),
                "reasons": [str(x) for x in v.get("reasons") or ()],
            })
        by_lab: dict[str, list[dict[str, Any]]] = {}
        for r in doc.get("results") or ():
            if not r.get("headline") or not r.get("explanation"):
                continue
            by_lab.setdefault(str(r.get("labelling")), []).append({
                "metric": r.get("metric"),
                "attribute": r.get("attribute"),
                "direction": r.get("direction"),
                "value": r.get("value"),
                "ci": r.get("ci"),
                "explanation": str(r["explanation"]),
            })
        glossary = [
            {
                "metric": g.get("metric"),
                "auditor": g.get("auditor"),
                "headline": bool(g.get("headline")),
                "direction": g.get("direction"),
                "range": _range_text(g.get("range"), g.get("range_text") or ""),
                "meaning": g.get("meaning") or "",
                "good": g.get("good") or "",
                "choose_threshold": g.get("choose_threshold") or "",
            }
            for g in doc.get("glossary") or ()
        ]
        return {
            "verdict_groups": list(groups.values()),
            "no_verdict": _no_verdict_reason(doc),
            "explanations": [{"labelling": k, "rows": v} for k, v in by_lab.items()],
            "glossary": glossary,
        }


def _no_verdict_reason(doc: Mapping[str, Any]) -> str:
    """Why there is no verdict at all: no clusters (every row noise) before no bound."""
    labs = [lab for lab in doc.get("labellings") or () if isinstance(lab, Mapping)]
    noise = [str(lab.get("name")) for lab in labs
             if lab.get("n_clusters") == 0 and (lab.get("n_noise") or 0) > 0]
    if labs and len(noise) == len(labs):
        return ("No verdict: no clusters: every row was noise"
                + (f" in {', '.join(noise)}" if len(noise) > 1 else "")
                + ", so no group metric exists. Try other parameters (e.g. a larger eps or a "
                "smaller min_samples for DBSCAN).")
    why = "No verdict: none of the headline metrics has a verdict bound or a threshold."
    if noise:
        why += (" No clusters in " + ", ".join(noise) + ": every row was noise.")
    return why


@hookimpl
def fairaudit_register_report_sections() -> list[type]:
    return [ExplainSection]
