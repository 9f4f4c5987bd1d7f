"""The answer first: per attribute and labelling, the verdict and the one number and cell that
set it, in words a manager can read — the top of the report, the console and ``--summary-md``.

Built from the JSON document alone (its ``verdicts``, each with ``decided_by``:
:func:`fairaudit.report.explain.verdicts`), so every place says the same thing:

    race — unfair in 2 of 3 segmentations (fair: fairden): kmeans: “premium” holds 11 of the
        37 “Other” people, 3.3 expected (ratio 0.30; at most 0.55 at 95%); balance 0.303
        [0.200, 0.554]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fairaudit.report.values import finite

__all__ = ["ORDER", "answers", "entry_text", "overall", "overall_text", "twin_names"]

ORDER = ("unfair", "too little data", "borderline", "fair")
"""Verdicts, worst first (an attribute's summary leads with its worst)."""


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _figure(by: Mapping[str, Any]) -> str:
    """``balance 0.297 [0.121, 0.640]``."""
    value = finite(by.get("value"))
    out = f"{by.get('metric')} {_num(value)}"
    ci = by.get("ci")
    if ci and finite(ci[0]) is not None and finite(ci[1]) is not None:
        out += f" [{_num(finite(ci[0]))}, {_num(finite(ci[1]))}]"
    return out


def entry_text(v: Mapping[str, Any]) -> str:
    """The reading of one verdict: the deciding cell in words, then its number."""
    by = v.get("decided_by") or {}
    if not by:
        return "no single metric decides"
    if by.get("value") is None and by.get("text") is None:
        return f"{by.get('metric')} undefined or not published"
    text = by.get("text")
    return f"{text}; {_figure(by)}" if text else _figure(by)


def twin_names(doc: Mapping[str, Any]) -> set[str]:
    """The ``fair = false`` twins of the document's fair labellings (``fairden-unfair``): shown
    beside their fair method for comparison, never counted among the user's clusterings."""
    from fairaudit.core.twins import find_twins

    return {twin for _, twin in find_twins(list(doc.get("labellings") or ()))}


def answers(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One entry per attribute (in the input's order) with a verdict: ``attribute``,
    ``verdict`` (the worst over the user's labellings), ``counts`` {verdict: labellings},
    ``n``, ``line`` (the manager's sentence) and ``labellings`` [{labelling, verdict, text,
    twin}]. The ``fair = false`` twins are listed (``twin`` true) and named at the end of the
    line as a comparison, but neither counted nor leading: the answer is about the user's
    clusterings."""
    twins = twin_names(doc)
    by_attr: dict[str, list[Mapping[str, Any]]] = {}
    for v in doc.get("verdicts") or ():
        by_attr.setdefault(str(v["attribute"]), []).append(v)
    order = list((doc.get("input") or {}).get("attributes") or ())
    attrs = sorted(by_attr, key=lambda a: order.index(a) if a in order else len(order))
    out = []
    for attr in attrs:
        every = by_attr[attr]
        vs = [v for v in every if str(v["labelling"]) not in twins]
        compared = [v for v in every if str(v["labelling"]) in twins]
        if not vs:  # only twins were judged: they are all there is to say
            vs, compared = every, []
        counts = {w: sum(1 for v in vs if v["verdict"] == w) for w in ORDER}
        worst = next(w for w in ORDER if counts[w])
        n = len(vs)
        word = "segmentations"
        if n == 1:
            head = worst
        elif counts[worst] == n:
            head = f"{worst} in all {n} {word}"
        else:
            head = f"{worst} in {counts[worst]} of {n} {word}"
            others = [f"{w}: {', '.join(str(v['labelling']) for v in vs if v['verdict'] == w)}"
                      for w in ORDER if w != worst and counts[w]]
            head += f" ({'; '.join(others)})"
        first = next(v for v in vs if v["verdict"] == worst)
        lead = entry_text(first)
        line = f"{attr} \u2014 {head}: " + (f"{first['labelling']}: " if n > 1 else "") + lead
        if compared:
            line += " (for comparison, fair = false twins: " + ", ".join(
                f"{v['labelling']} {v['verdict']}" for v in compared) + ")"
        out.append({
            "attribute": attr,
            "verdict": worst,
            "counts": counts,
            "n": n,
            "line": line,
            "labellings": [{"labelling": str(v["labelling"]), "verdict": v["verdict"],
                            "text": entry_text(v), "decided_by": v.get("decided_by"),
                            "twin": v in compared}
                           for v in [*vs, *compared]],
        })
    return out


def overall(doc: Mapping[str, Any]) -> dict[str, Any] | None:
    """The verdicts over every attribute and the user's labellings (``fair = false`` twins
    left out, see :func:`answers`): ``verdict`` (the worst), ``counts``, ``n``, ``twins`` (the
    twins' verdicts left out); None when nothing was judged."""
    every = list(doc.get("verdicts") or ())
    if not every:
        return None
    twins = twin_names(doc)
    vs = [v for v in every if str(v["labelling"]) not in twins] or every
    counts = {w: sum(1 for v in vs if v["verdict"] == w) for w in ORDER}
    return {"verdict": next(w for w in ORDER if counts[w]), "counts": counts, "n": len(vs),
            "twins": len(every) - len(vs)}


def overall_text(doc: Mapping[str, Any]) -> str | None:
    """``11 unfair, 3 too little data, 1 fair (of 15 attribute × segmentation verdicts)``."""
    o = overall(doc)
    if o is None:
        return None
    parts = [f"{o['counts'][w]} {w}" for w in ORDER if o["counts"][w]]
    twins = (f"; {o['twins']} more of fair = false twins, shown for comparison, not counted"
             if o["twins"] else "")
    return ", ".join(parts) + f" (of {o['n']} attribute \u00d7 segmentation verdicts{twins})"
