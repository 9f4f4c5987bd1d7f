"""A flat table of an audit's results for BI tools and warehouses: ``fairaudit export``.

One row per (labelling, metric, attribute) of each audit, in :data:`COLUMNS` order, so a year of
nightly runs appends into one table keyed by ``run_date`` + ``input_fingerprint``. Numbers are
written with full precision (``repr``), undefined numbers as empty cells. Text that a spreadsheet
would run as a formula (starting with ``=``, ``+``, ``-``, ``@``, tab or CR) is prefixed with
``'`` (OWASP's CSV-injection advice): labelling and group names come from the data.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from fairaudit.report.results import finite

__all__ = ["COLUMNS", "csv_safe", "export_csv", "export_rows"]

COLUMNS: tuple[str, ...] = (
    "run_date", "run_date_source", "run_status", "input_path", "input_fingerprint",
    "rows_audited", "tool_version", "labelling", "labelling_origin", "auditor", "metric",
    "attribute", "headline", "value", "ci_lower", "ci_upper", "interval_method", "ci_level",
    "direction", "status", "threshold_bound", "threshold_value", "threshold_on", "n_rows",
    "baseline_delta", "baseline_significant", "baseline_gate",
)
"""The columns of the export, in order (documented in docs/cli.md)."""

_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(value: Any) -> Any:
    """A cell value: numbers as they are (NaN/inf -> empty), text defused against formulas."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        v = finite(value)
        if v is None:
            return ""
        return value if isinstance(value, int) else repr(float(value))
    s = str(value)
    return "'" + s if s.startswith(_FORMULA) else s


def export_rows(doc: Mapping[str, Any], *, file: str | None = None) -> list[dict[str, Any]]:
    """The rows of one audit document (see :data:`COLUMNS`)."""
    from fairaudit.errors import InputError
    from fairaudit.ops.audit_json import run_date
    from fairaudit.ops.compare import interval_of

    try:
        date, source = run_date(doc, Path(file) if file else None)
    except (InputError, OSError):  # a document without any date keeps empty date cells
        date, source = "", ""
    inp = doc.get("input") or {}
    origin = {str(lab.get("name")): lab.get("origin") for lab in doc.get("labellings") or []}
    changes = {(c.get("labelling"), c.get("metric"), c.get("attribute")): c
               for c in ((doc.get("comparison") or {}).get("changes") or [])}
    rows = []
    for r in doc.get("results") or []:
        ci = r.get("ci") or [None, None]
        th = r.get("threshold") or {}
        method, level = interval_of(doc, r)
        ch = changes.get((r.get("labelling"), r.get("metric"), r.get("attribute"))) or {}
        rows.append({
            "run_date": date, "run_date_source": source, "run_status": doc.get("status"),
            "input_path": inp.get("path"), "input_fingerprint": inp.get("fingerprint"),
            "rows_audited": inp.get("rows_audited"),
            "tool_version": (doc.get("tool") or {}).get("version"),
            "labelling": r.get("labelling"), "labelling_origin": origin.get(str(r.get("labelling"))),
            "auditor": r.get("auditor"), "metric": r.get("metric"),
            "attribute": r.get("attribute"), "headline": bool(r.get("headline")),
            "value": finite(r.get("value")), "ci_lower": finite(ci[0]), "ci_upper": finite(ci[1]),
            "interval_method": method, "ci_level": level, "direction": r.get("direction"),
            "status": r.get("status"), "threshold_bound": th.get("bound"),
            "threshold_value": finite(th.get("value")), "threshold_on": th.get("on"),
            "n_rows": r.get("n_rows"),
            "baseline_delta": finite(ch.get("delta")), "baseline_significant": ch.get("significant"),
            "baseline_gate": ch.get("gate"),
        })
    return rows


def export_csv(docs: Iterable[tuple[Mapping[str, Any], str | None]], *,
               columns: Sequence[str] = COLUMNS) -> str:
    """CSV text with a header and the rows of every ``(document, file)`` pair (published
    releases and exact audits are not mixed: :class:`InputError`)."""
    from fairaudit.ops.compare import check_one_mode

    docs = list(docs)
    check_one_mode([(f or f"document {i + 1}", d) for i, (d, f) in enumerate(docs)], "export")
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for doc, file in docs:
        for row in export_rows(doc, file=file):
            w.writerow([csv_safe(row[c]) for c in columns])
    return buf.getvalue()
