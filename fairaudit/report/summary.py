"""The gate summary: every threshold judged, as a console table or Markdown (CI job summaries).

Built from the JSON document alone (its ``gates``), so ``fairaudit audit`` prints and
``--summary-md`` writes exactly what the run judged: the labelling, metric, attribute, the number
judged (the value or a CI end, and which), the bound and PASS / FAIL / WARN — passes included.
:func:`privacy_notice` is the line the console, the Markdown summary and the HTML banner give
about who may read the report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

_ON = {"value": "value", "ci_lower": "CI lower", "ci_upper": "CI upper"}
_STATUS_ORDER = {"fail": 0, "warn": 1, "pass": 2}
_HEADER = ("STATUS", "LABELLING", "METRIC", "ATTRIBUTE", "JUDGED", "ON", "BOUND", "SEVERITY")


def gate_rows(doc: Mapping[str, Any]) -> list[dict[str, str]]:
    """One row of display strings per gate, failures first (stable within a status)."""
    gates = list(doc.get("gates") or ())
    order = sorted(range(len(gates)), key=lambda i: (_STATUS_ORDER.get(gates[i]["status"], 9), i))
    rows = []
    for i in order:
        g = gates[i]
        op = ">=" if g["bound"] == "min" else "<="
        judged = "n/a" if g.get("judged") is None else f"{g['judged']:.3f}"
        on = _ON.get(g.get("judged_on", "value"), g.get("judged_on", ""))
        if g.get("judged_on", "value") != "value" and g.get("value") is not None:
            on += f" (value {g['value']:.3f})"
        rows.append({
            "status": status_words(g["status"]),
            "labelling": str(g["labelling"]),
            "metric": str(g["metric"]),
            "attribute": "-" if g.get("attribute") is None else str(g["attribute"]),
            "judged": judged,
            "on": on,
            "bound": f"{op} {_num(g.get('threshold'))}",
            "severity": str(g.get("severity", "error")),
            "reason": g.get("reason") or "",
        })
    return rows


EXACT_NOTICE = (
    "This report contains exact counts, small groups included: it is for people allowed to see "
    "the data. For a report you may share, run with --publish (a differentially private release)."
)


def privacy_notice(doc: Mapping[str, Any]) -> str | None:
    """What the reader must know about the report's privacy (``doc["privacy"]``), or ``None``
    when the document does not declare its mode (older audits)."""
    mode = (doc.get("privacy") or {}).get("mode")
    return EXACT_NOTICE if mode == "exact" else None


def _num(x: Any) -> str:
    return "n/a" if x is None else f"{float(x):g}"


STATUS_WORDS = {
    "pass": "PASS", "warn": "WARN", "fail": "FAIL",
    "not_evaluated": "NOT JUDGED: no threshold set",
    "not_applicable": "NOT JUDGED: no threshold applies",
}
"""The run's status in words (the JSON keeps the enum, ``status: "not_evaluated"``)."""


def status_words(status: Any) -> str:
    """``PASS`` / ``FAIL`` / ``NOT JUDGED: no threshold set`` for a status of the JSON."""
    s = str(status)
    return STATUS_WORDS.get(s, s.replace("_", " ").upper())


def headline(doc: Mapping[str, Any]) -> str:
    counts = {"pass": 0, "warn": 0, "fail": 0}
    for g in doc.get("gates") or ():
        counts[g["status"]] = counts.get(g["status"], 0) + 1
    inp = doc["input"]
    gates = (f"{counts['fail']} failed, {counts['warn']} warned, {counts['pass']} passed"
             if doc.get("gates") else "no threshold set")
    g = gating(doc)
    if g["twins"]:
        gates += f"; twins not gated: {', '.join(g['twins'])}"
    if g["baseline"]:
        gates += f"; {g['baseline']['text']}"
    rows = inp["rows_audited"]
    of = (f" of {inp['rows']:,}" if isinstance(inp.get("rows"), int) and inp["rows"] > rows
          else "")
    return (f"fairaudit: {status_words(doc['status'])}  ({rows:,}{of} rows, "
            f"{len(doc['labellings'])} labelling(s), attributes: "
            f"{', '.join(inp['attributes'])}; gates: {gates})")


def ungated_twins(doc: Mapping[str, Any]) -> list[str]:
    """The ``fair = false`` twins of the document (``--twins``), which no gate judges: they are
    fitted for comparison (the price of fairness), in labelling order."""
    from fairaudit.report.answer import twin_names

    twins = twin_names(doc)
    return [str(lab["name"]) for lab in doc.get("labellings") or () if lab.get("name") in twins]


def gating(doc: Mapping[str, Any]) -> dict[str, Any]:
    """What judged the run besides its thresholds, for the console headline and the report:
    ``twins`` (the twins no gate judged, when there are gates) and ``baseline`` (``None``, or the
    ``--baseline`` comparison that failed or warned: ``status``, ``worse`` = the headline metrics
    significantly worse, ``file``, ``text``)."""
    cmp = doc.get("comparison") or {}
    baseline = None
    if cmp.get("status") in ("fail", "warn"):
        worse = int((cmp.get("summary") or {}).get("gate_failures") or 0)
        file = (cmp.get("baseline") or {}).get("file")
        than = f" than {file}" if file else ""
        text = (f"baseline comparison failed: {worse} headline metric"
                f"{'' if worse == 1 else 's'} significantly worse{than}"
                if cmp["status"] == "fail" else
                "baseline comparison warned: headline results of the baseline are missing or "
                "undefined in this run")
        baseline = {"status": cmp["status"], "worse": worse, "file": file, "text": text}
    return {"twins": ungated_twins(doc) if doc.get("gates") else [], "baseline": baseline}


def answer_lines(doc: Mapping[str, Any]) -> list[str]:
    """Without thresholds, the answer first: the verdicts over everything, then per attribute
    the manager's line and per labelling its verdict and the cell that set it
    (:mod:`fairaudit.report.answer`)."""
    from fairaudit.report.answer import answers, overall_text

    total = overall_text(doc)
    if total is None:
        return []
    lines = [f"verdicts (no threshold set; each metric's default bound): {total}"]
    for a in answers(doc):
        lines.append(f"  {a['line']}")
        if a["n"] > 1:
            names = [e["labelling"] + (" (twin)" if e.get("twin") else "")
                     for e in a["labellings"]]
            width = max(len(name) for name in names)
            for name, e in zip(names, a["labellings"], strict=True):
                lines.append(f"      {name.ljust(width)}  {e['verdict']:<15}  {e['text']}")
    return lines


def privacy_lines(doc: Mapping[str, Any], ledger_now: Mapping[str, Any] | None = None
                  ) -> list[str]:
    """What a published (differentially private) release spent; nothing for an exact one.

    ``ledger_now`` (:attr:`fairaudit.report.results.AuditRun.ledger_now`) gives the ledger's current
    totals: a stored release returned at no cost keeps its own JSON (``privacy.spent`` as of that
    release), and the console says both."""
    p = doc.get("privacy") or {}
    if p.get("mode") != "dp":
        return []
    now = ledger_now or {}
    led = {**(p.get("ledger") or {}), **{k: now[k] for k in ("path", "source") if k in now}}
    budget = now.get("budget", p.get("budget"))
    spent = now.get("spent", p.get("spent"))
    of_budget = (f" of its budget {budget:.6g}" if budget is not None else " (no budget set)")
    total = (f"{spent:.6g}" if spent is not None else "?") + of_budget
    lines = [
        f"  published release (differential privacy): {p.get('mechanism')}, epsilon "
        f"{p.get('epsilon'):.6g} per release; every number is computed from noisy counts",
    ]
    if p.get("outside_declared"):
        lines.append(f"  {p['outside_declared']}")
    if now.get("stored"):
        lines.append(
            f"  unchanged data and options: returned the stored release of {now['stored']} at "
            f"no cost (its JSON is byte-identical: privacy.spent {_num(p.get('spent'))} is as "
            "of that release)")
        lines.append(f"  ledger {led.get('path')}: source {led.get('source')!r} has now spent "
                     f"epsilon {total} ({now.get('releases')} release(s))")
    else:
        lines.append(f"  ledger {led.get('path')}: source {led.get('source')!r} has spent "
                     f"epsilon {total}")
    return lines


_MAX_CAVEATS = 5


def caveat_lines(doc: Mapping[str, Any]) -> list[str]:
    """What a reader of the numbers must know, on the console too: rows left out (and why) and
    the labellings' warnings (e.g. a tiny cluster behind a balance of 0), at most
    ``_MAX_CAVEATS`` lines; the report and the JSON have them all."""
    out: list[str] = []
    excl = (doc.get("input") or {}).get("exclusions") or {}
    if isinstance(excl, Mapping):
        left = {str(k): v for k, v in excl.items() if isinstance(v, int) and v > 0}
        if left:
            n = sum(left.values())
            why = "; ".join(f"{k}: {v:,}" for k, v in left.items())
            out.append(f"note: {n:,} {'row' if n == 1 else 'rows'} left out ({why})")
    cols = (doc.get("input") or {}).get("excluded_columns") or {}
    if isinstance(cols, Mapping):
        # columns set aside by fairaudit itself (not the user's own exclude list)
        out.extend(f"note: column {c!r} is a {why}"
                   for c, why in cols.items()
                   if isinstance(why, str) and why.startswith("date/time"))
    # group names of one column that differ only in case, spacing, Unicode form or look-alike
    # letters (input check)
    out.extend(f"warning: {c['observed']}" for c in doc.get("checks") or ()
               if isinstance(c, Mapping) and not c.get("success")
               and str(c.get("name", "")).startswith("sensitive_names_distinct["))
    # the other failed data checks: named, so the console agrees with the report's count
    failed = [str(c.get("name")) for c in doc.get("checks") or ()
              if isinstance(c, Mapping) and not c.get("success")
              and not str(c.get("name", "")).startswith("sensitive_names_distinct[")]
    if failed:
        shown = ", ".join(failed[:3]) + (f" and {len(failed) - 3} more" if len(failed) > 3 else "")
        out.append(f"warning: {len(failed)} data check(s) failed: {shown} (the report's data "
                   "checks say why)")
    from fairaudit.report.values import TARGET_NOTE

    warnings = [(str(lab.get("name")), w) for lab in doc.get("labellings") or ()
                if isinstance(lab, Mapping) for w in lab.get("warnings") or ()
                if isinstance(w, Mapping) and w.get("message")]
    # a fair method that balanced another target than the attributes named (e.g. FairSC their
    # intersection) says so in a note; the console shows it with the warnings
    warnings += [(str(lab.get("name")), {"message": n[len(TARGET_NOTE):]})
                 for lab in doc.get("labellings") or () if isinstance(lab, Mapping)
                 for n in lab.get("notes") or ()
                 if isinstance(n, str) and n.startswith(TARGET_NOTE)]
    for name, w in warnings[:_MAX_CAVEATS]:
        out.append(f"warning: {name}: {w['message']}")
    if len(warnings) > _MAX_CAVEATS:
        out.append(f"warning: {len(warnings) - _MAX_CAVEATS} more in the report")
    return out


def console_lines(doc: Mapping[str, Any], ledger_now: Mapping[str, Any] | None = None,
                  *, with_answer: bool = False) -> list[str]:
    """The console summary: a headline, the privacy notice, then a fixed-width table of every
    gate — or, without thresholds, the verdicts with the cell that set each
    (:func:`answer_lines`). ``with_answer``: the verdicts after the gates too (a run's own
    view, ``repr(run)``)."""
    lines = [headline(doc)]
    notice = privacy_notice(doc)
    if notice:
        lines.append("note: " + notice)
    lines.extend(privacy_lines(doc, ledger_now))
    lines.extend(caveat_lines(doc))
    rows = gate_rows(doc)
    if not rows:
        return lines + answer_lines(doc)
    keys = ("status", "labelling", "metric", "attribute", "judged", "on", "bound", "severity")
    cells = [list(_HEADER)] + [[r[k] for k in keys] for r in rows]
    widths = [max(len(c[j]) for c in cells) for j in range(len(keys))]
    for n, c in enumerate(cells):
        lines.append("  " + "  ".join(v.ljust(w) for v, w in zip(c, widths, strict=True)).rstrip())
        if n and rows[n - 1]["reason"]:
            lines.append("      why: " + rows[n - 1]["reason"])
    return lines + (answer_lines(doc) if with_answer else [])


def markdown(doc: Mapping[str, Any], report: str | None = None,
             json_path: str | None = None, *, with_answer: bool = False) -> str:
    """The same summary as GitHub-flavoured Markdown (e.g. for ``$GITHUB_STEP_SUMMARY``);
    ``with_answer``: the verdicts after the gates too (a run's own view in a notebook)."""
    out = [f"### fairaudit: {status_words(doc['status'])}", "",
           headline(doc).split("  ", 1)[1], ""]
    notice = privacy_notice(doc)
    if notice:
        out += [f"> {notice}", ""]
    out += [f"> {line.strip()}" for line in privacy_lines(doc)]
    out += [""] if privacy_lines(doc) else []
    rows = gate_rows(doc)
    if rows:
        out.append("| Status | Labelling | Metric | Attribute | Judged | On | Bound | Severity "
                   "| Why |")
        out.append("| --- | --- | --- | --- | ---: | --- | --- | --- | --- |")
        for r in rows:
            cells: Sequence[str] = (
                f"**{r['status']}**", r["labelling"], f"`{r['metric']}`", r["attribute"],
                r["judged"], r["on"], r["bound"], r["severity"], r["reason"],
            )
            out.append("| " + " | ".join(_md(c) for c in cells) + " |")
        if with_answer and answer_lines(doc):
            out += [""] + _answer_markdown(doc)
    else:
        out += _answer_markdown(doc) or [
            "No thresholds were set: values are reported, not judged."]
    out.append("")
    if report:
        out.append(f"Report: `{report}`")
    if json_path:
        out.append(f"JSON: `{json_path}`")
    return "\n".join(out).rstrip() + "\n"


def _answer_markdown(doc: Mapping[str, Any]) -> list[str]:
    """The verdicts as Markdown lines (:func:`answer_lines`), or none."""
    from fairaudit.report.answer import answers

    answer = answer_lines(doc)
    if not answer:
        return []
    out = [f"**{_md(answer[0])}**", ""]
    for a in answers(doc):
        out.append(f"- {_md(a['line'])}")
        if a["n"] > 1:
            for e in a["labellings"]:
                out.append(f"  - {_md(e['labelling'])}: **{e['verdict']}** — {_md(e['text'])}")
    return out


def _md(text: str) -> str:
    """A table cell: pipes and HTML escaped, no line breaks."""
    text = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")
