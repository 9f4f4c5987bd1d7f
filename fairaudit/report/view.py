"""How a run shows itself: in a notebook (``AuditRun._repr_html_``, ``_repr_markdown_``) and in a
terminal (``repr(run)``), the answer first.

Built from the audit document alone, with the words of the report's top and of the console:
the verdicts and their readings from :mod:`fairaudit.report.answer`, the console lines and the
Markdown summary from :mod:`fairaudit.report.summary`, the banner of a published release from
the report's own ``partials/privacy_banner.html.j2``. A published run's view therefore carries
the differential-privacy banner and only the release's numbers (the document holds nothing
else).

The HTML view (``templates/view.html.j2``) is one ``<div class="fairaudit-view">``: no script,
every CSS selector scoped to that class (it never restyles the notebook), colours for light and
dark themes (``prefers-color-scheme``, JupyterLab's ``data-jp-theme-light``, VS Code's
``vscode-dark`` / ``vscode-light`` body classes), everything from the document autoescaped.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fairaudit.report.answer import answers, overall
from fairaudit.report.summary import (
    console_lines,
    gate_rows,
    headline,
    markdown,
    privacy_notice,
    status_words,
)
from fairaudit.report.words import cluster_label

log = logging.getLogger(__name__)

__all__ = ["HINT", "HINT_MD", "MAX_HEADLINE_ROWS", "view_html", "view_markdown", "view_text"]

HINT = ("run.verdicts: the verdicts as records; run.to_polars(): every result as a table; "
        "fairaudit.write_report(run, \"audit.html\"): the full report")
"""The last line of every view: where the rest of the run is."""
HINT_MD = ("`run.verdicts`: the verdicts as records; `run.to_polars()`: every result as a table; "
           "`fairaudit.write_report(run, \"audit.html\")`: the full report")

MAX_HEADLINE_ROWS = 200
"""Headline results the HTML view lists (``run.to_polars()`` has them all)."""

_BADGE = {"unfair": "fail", "too little data": "warn", "borderline": "warn", "fair": "pass",
          "pass": "pass", "warn": "warn", "fail": "fail"}


def _template_dirs() -> list[str]:
    """The built-in templates: inside the installed package, else a source checkout's
    top-level ``templates/`` (as :func:`fairaudit.report.render.project_template_dirs`)."""
    here = Path(__file__).resolve().parent.parent
    return [str(p) for p in (here / "templates", here.parent / "templates") if p.is_dir()]


def _num(x: Any) -> str:
    return "\u2014" if x is None else f"{float(x):.3f}"


def _cell(lab: Mapping[str, Any] | None, entry: Mapping[str, Any]) -> dict[str, Any]:
    """One labelling's verdict on one attribute: the verdict, the deciding cell by its
    cluster's name and group, the deciding number with its interval, the full reading."""
    by = entry.get("decided_by") or {}
    where = None
    if by.get("cluster") is not None:
        where = cluster_label(lab, by.get("cluster"), quote=False)
        if by.get("group") is not None:
            where += f" \u00b7 {by['group']}"
    figure = None
    if by.get("metric"):
        ci = by.get("ci") or (None, None)
        figure = {"metric": str(by["metric"]), "value": _num(by.get("value")),
                  "ci": None if ci[0] is None or ci[1] is None
                  else f"[{_num(ci[0])}, {_num(ci[1])}]"}
    return {"verdict": entry["verdict"], "badge": _BADGE.get(entry["verdict"], "na"),
            "where": where, "figure": figure, "text": entry["text"], "twin": entry.get("twin")}


def _context(doc: Mapping[str, Any]) -> dict[str, Any]:
    from fairaudit.report.frames import result_rows

    inp = doc.get("input") or {}
    labs = {str(lab.get("name")): lab for lab in doc.get("labellings") or ()
            if isinstance(lab, Mapping)}
    found = answers(doc)
    columns = list(dict.fromkeys(e["labelling"] for a in found for e in a["labellings"]))
    twins = {e["labelling"] for a in found for e in a["labellings"] if e.get("twin")}
    matrix = [{"attribute": a["attribute"], "verdict": a["verdict"],
               "badge": _BADGE.get(a["verdict"], "na"),
               "line": a["line"].split(" \u2014 ", 1)[-1],
               "cells": [next((_cell(labs.get(name), e) for e in a["labellings"]
                               if e["labelling"] == name), None) for name in columns]}
              for a in found]
    heads = [r for r in result_rows(doc) if r["headline"]]
    gates = gate_rows(doc)
    o = overall(doc)
    status = str(doc.get("status") or "not_evaluated")
    return {
        "path": inp.get("path"),
        "rows": inp.get("rows_audited", inp.get("rows")),
        "n_labellings": len(labs) - len(twins),
        "twins": sorted(twins),
        "status": status,
        "status_words": status_words(status),
        "status_badge": _BADGE.get(status, "na"),
        "overall": o,
        "overall_badge": _BADGE.get(o["verdict"], "na") if o else "na",
        "privacy": doc.get("privacy") or {},
        "notice": privacy_notice(doc),
        "answers": matrix,
        "columns": columns,
        "headline": [{**r, "value_text": _num(r["value"]),
                      "ci_text": None if r["ci_low"] is None or r["ci_high"] is None
                      else f"[{_num(r['ci_low'])}, {_num(r['ci_high'])}]",
                      "badge": _BADGE.get(r["verdict"] or r["status"], "na")}
                     for r in heads[:MAX_HEADLINE_ROWS]],
        "headline_more": max(0, len(heads) - MAX_HEADLINE_ROWS),
        "gates": gates,
        "gates_failed": [g for g in gates if g["status"] in ("FAIL", "WARN")],
        "hint": HINT,
    }


def view_html(doc: Mapping[str, Any]) -> str:
    """The answer-first view of an audit document as an HTML fragment (``_repr_html_``)."""
    import jinja2
    from markupsafe import escape

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_template_dirs()), autoescape=True,
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    try:
        return env.get_template("view.html.j2").render(**_context(doc)).strip() + "\n"
    except (KeyError, TypeError, ValueError, AttributeError, jinja2.UndefinedError) as exc:
        # a hand-made or partial document: the one line, never a traceback in the notebook
        log.warning("the audit document cannot be shown in full (%s: %s)",
                    type(exc).__name__, exc)
        return f'<div class="fairaudit-view"><code>{escape(_one_line(doc))}</code></div>\n'


def view_text(doc: Mapping[str, Any], ledger_now: Mapping[str, Any] | None = None) -> str:
    """The same answer in a terminal (``repr(run)``): the console's summary of the run
    (:func:`fairaudit.report.summary.console_lines`), then where the rest is."""
    try:
        lines = console_lines(doc, ledger_now, with_answer=True)
    except (KeyError, TypeError, ValueError, AttributeError):
        # a hand-made or partial document: the one line that needs nothing
        return _one_line(doc)
    return "AuditRun \u00b7 " + "\n".join(lines) + "\n  " + HINT


def view_markdown(doc: Mapping[str, Any]) -> str:
    """The same answer as Markdown (``_repr_markdown_``): the ``--summary-md`` summary."""
    try:
        text = markdown(doc, with_answer=True)
    except (KeyError, TypeError, ValueError, AttributeError):
        return _one_line(doc) + "\n"
    return text + "\n" + HINT_MD + "\n"


def _one_line(doc: Mapping[str, Any]) -> str:
    try:
        return "AuditRun \u00b7 " + headline(doc)
    except (KeyError, TypeError, ValueError, AttributeError):
        return f"AuditRun(status={doc.get('status')!r}, results={len(doc.get('results') or ())})"
