"""The HTML report of a repair, rendered from its JSON document alone (the report's chrome:
``base.html.j2``, the same Content-Security-Policy, no scripts, charts as inline SVG)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["render_repair_html", "repair_view"]


def _headlines(doc: Mapping[str, Any], targeted: set[tuple[str, str]]) -> list[dict[str, Any]]:
    """Before and after side by side: every headline result and every targeted metric."""
    def index(run: Mapping[str, Any]) -> dict[tuple[Any, Any], Mapping[str, Any]]:
        return {(r.get("metric"), r.get("attribute")): r for r in run.get("results", [])
                if r.get("headline") or (r.get("metric"), r.get("attribute")) in targeted}

    b, a = index(doc.get("before") or {}), index(doc.get("after") or {})
    rows = []
    for key in list(dict.fromkeys([*b, *a])):
        rb, ra = b.get(key, {}), a.get(key, {})
        rows.append({"metric": key[0], "attribute": key[1],
                     "direction": (ra or rb).get("direction"),
                     "auditor": (ra or rb).get("auditor"),
                     "targeted": key in targeted,
                     "before": rb.get("value"), "before_ci": rb.get("ci"),
                     "after": ra.get("value"), "after_ci": ra.get("ci"),
                     "status_before": rb.get("status"), "status_after": ra.get("status")})
    return rows


def repair_view(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Plain data for ``sections/repair.html.j2``."""
    from fairaudit.report import charts

    segs = list(doc["program"]["segments"])
    targets = list(doc.get("targets") or [])
    targeted = {(t["metric"], t["attribute"]) for t in targets}
    chart = None
    if targets:
        labels = [f"{t['metric']}[{t['attribute']}]" for t in targets]
        chart = charts.grouped_bars(labels, {"before": [t["before"] for t in targets],
                                             "after": [t["after"] for t in targets]},
                                    title="Targeted metrics before and after the repair",
                                    ylabel="value")
    moves = [dict(m, rows=[{"from": segs[i], "cells": row} for i, row in
                           enumerate(m["table"])]) for m in doc.get("moves") or []]
    return {"doc": doc, "segments": segs, "targets": targets, "chart": chart, "moves": moves,
            "headlines": _headlines(doc, targeted), "solution": doc["solution"],
            "cost": doc.get("cost"), "program": doc["program"],
            "parameters": doc["parameters"]}


def render_repair_html(doc: Mapping[str, Any]) -> str:
    """The page written beside the repaired table."""
    from fairaudit.report.diffreport import _block, _page

    view = repair_view(doc)
    parts = [("summary", "Repair"), ("targets", "Targets before and after"),
             ("audits", "The audit before and after"), ("segments", "Segments"),
             ("moves", "Who moves"), ("program", "The optimisation problem")]
    blocks = [_block("sections/repair.html.j2", f"repair-{name}", title, part=name, r=view)
              for name, title in parts]
    after = doc.get("after") or {}
    status = str(after.get("status") or "not_evaluated")
    return _page("fairaudit repair \u2014 " + str(doc["input"].get("path") or "table"),
                 status, blocks, input_path=doc["input"].get("path"),
                 created=None)
