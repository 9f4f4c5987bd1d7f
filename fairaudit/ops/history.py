"""The history of many audits: ``fairaudit history AUDIT.json… [--out] [--json] [--csv]``.

Each run's date is its ``timing.created`` when the audit has one, else a date in the file's name
(``2026-11-22.json``), else the file's modification time (UTC); ``runs[i].date_source`` says
which. Runs are ordered by date. For every headline
result (labelling, metric, attribute) the history holds its value, interval, threshold and status
in every run that has it; runs whose status is ``fail`` (a threshold or, with ``--baseline``, the
comparison failed) are marked. Changes of fairaudit/plugin version, interval method or audited
attributes between consecutive runs are listed in ``notes``: values on either side of such a change
may not be comparable.

A directory argument stands for the ``*.json`` files in it; files there that are not audit JSON
documents (comparisons, histories, anything else) are skipped and listed in ``skipped``. A file
named explicitly must be an audit JSON (else exit 2).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fairaudit.errors import InputError
from fairaudit.ops.audit_json import run_date
from fairaudit.report.results import finite

__all__ = ["HISTORY_SCHEMA_VERSION", "build_history", "history_csv", "history_view"]

HISTORY_SCHEMA_VERSION = "1.0"
CSV_COLUMNS = ("date", "date_source", "file", "run_status", "labelling", "metric", "attribute",
               "value", "ci_lower", "ci_upper", "direction", "status", "threshold_bound",
               "threshold_value", "threshold_on", "tool_version", "fingerprint")


def _expand(paths: Sequence[str | Path]) -> list[tuple[Path, bool]]:
    """(file, named explicitly) for each path; a folder stands for its ``*.json`` files."""
    files: list[tuple[Path, bool]] = []
    seen: set[Path] = set()
    for p in map(Path, paths):
        for f, explicit in ([(f, False) for f in sorted(p.glob("*.json"))] if p.is_dir()
                            else [(p, True)]):
            key = f.resolve()
            if key not in seen:  # the same file named twice (or via its folder) counts once
                seen.add(key)
                files.append((f, explicit))
    return files


def _interval_methods(doc: Mapping[str, Any]) -> list[str]:
    from fairaudit.ops.compare import interval_of

    return sorted({m for r in doc.get("results") or [] for m in [interval_of(doc, r)[0]] if m})


def build_history(sources: Sequence[str | Path | Mapping[str, Any]]) -> dict[str, Any]:
    """The history document of the audits in ``sources`` (paths, folders or documents)."""
    from fairaudit import __version__
    from fairaudit.ops.compare import check_one_mode, load_audit, privacy_summary, versions_of

    loaded: list[tuple[dict[str, Any], Path | None]] = []
    skipped: list[str] = []
    paths = [s for s in sources if not isinstance(s, Mapping)]
    files = _expand(paths)
    for f, explicit in files:
        try:
            loaded.append((load_audit(f), f))
        except InputError as exc:
            if explicit:
                raise
            skipped.append(f"{f}: {str(exc).split(': ', 1)[-1]}")
    loaded += [(load_audit(s), None) for s in sources if isinstance(s, Mapping)]
    check_one_mode([(str(f) if f is not None else f"document {i + 1}", d)
                    for i, (d, f) in enumerate(loaded)], "history")
    if not loaded:
        where = ", ".join(str(p) for p in paths) or "the documents given"
        why = (f"; skipped {len(skipped)} file(s) that are not audit JSON: "
               + "; ".join(skipped[:3]) + (" ..." if len(skipped) > 3 else "")
               if skipped else " (a folder stands for its *.json files)")
        raise InputError(f"no audit JSON documents to build a history from in {where}{why}")
    runs: list[dict[str, Any]] = []
    for doc, path in loaded:
        date, source = run_date(doc, path)
        inp = doc.get("input") or {}
        cmp = doc.get("comparison") or {}
        runs.append({
            "file": None if path is None else str(path),
            "date": date,
            "date_source": source,
            "status": doc.get("status"),
            "gate_failed": doc.get("status") == "fail",
            "comparison_status": cmp.get("status"),
            "input_path": inp.get("path"),
            "fingerprint": inp.get("fingerprint"),
            "rows_audited": inp.get("rows_audited"),
            "tool_version": (doc.get("tool") or {}).get("version"),
            "privacy": privacy_summary(doc),
            "_doc": doc,
        })
    runs.sort(key=lambda r: (dt.datetime.fromisoformat(r["date"].replace("Z", "+00:00")),
                             r["file"] or ""))
    series: dict[tuple[Any, Any, Any], dict[str, Any]] = {}
    for i, run in enumerate(runs):
        for r in run["_doc"]["results"]:
            if not r.get("headline"):
                continue
            key = (r.get("labelling"), r.get("metric"), r.get("attribute"))
            s = series.setdefault(key, {"labelling": key[0], "metric": key[1],
                                        "attribute": key[2], "direction": r.get("direction"),
                                        "points": []})
            ci = r.get("ci") or [None, None]
            th = r.get("threshold") or {}
            s["points"].append({
                "run": i,
                "value": finite(r.get("value")),
                "ci": None if r.get("ci") is None else [finite(ci[0]), finite(ci[1])],
                "status": r.get("status"),
                "threshold": None if not th else {"bound": th.get("bound"),
                                                  "value": finite(th.get("value")),
                                                  "on": th.get("on")},
            })
    notes: list[str] = []
    for prev, run in zip(runs, runs[1:], strict=False):
        a, b = prev["_doc"], run["_doc"]
        when = f"between {prev['date']} and {run['date']}"
        va, vb = versions_of(a), versions_of(b)
        changed = [f"{k} {va[k]} -> {vb[k]}" for k in sorted(set(va) & set(vb)) if va[k] != vb[k]]
        if changed:
            notes.append(f"versions changed {when} ({', '.join(changed)}): metric definitions "
                         "may differ on either side")
        if _interval_methods(a) != _interval_methods(b):
            notes.append(f"interval method changed {when}: {_interval_methods(a)} -> "
                         f"{_interval_methods(b)}")
        if list((a.get("input") or {}).get("attributes") or []) != \
                list((b.get("input") or {}).get("attributes") or []):
            notes.append(f"audited attributes changed {when}")
    mtime = [r for r in runs if r["date_source"] == "file mtime"]
    if mtime:
        notes.append(f"{len(mtime)} run(s) have no timing.created: dated by the file's "
                     "modification time, which a copy or checkout can change")
    for run in runs:
        del run["_doc"]
    return {
        "schema_version": HISTORY_SCHEMA_VERSION,
        "kind": "fairaudit-history",
        "tool": {"name": "fairaudit", "version": __version__},
        "runs": runs,
        "series": list(series.values()),
        "skipped": skipped,
        "notes": notes,
    }


def history_csv(hist: Mapping[str, Any]) -> str:
    """One row per (run, headline result); see :data:`CSV_COLUMNS`."""
    from fairaudit.ops.export import csv_safe

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    runs = hist["runs"]
    rows = []
    for s in hist["series"]:
        for p in s["points"]:
            run = runs[p["run"]]
            th = p.get("threshold") or {}
            ci = p.get("ci") or [None, None]
            rows.append((p["run"], [
                run["date"], run["date_source"], run["file"], run["status"], s["labelling"],
                s["metric"], s["attribute"], p["value"], ci[0], ci[1], s["direction"],
                p["status"], th.get("bound"), th.get("value"), th.get("on"),
                run["tool_version"], run["fingerprint"],
            ]))
    for _, row in sorted(rows, key=lambda t: t[0]):
        w.writerow([csv_safe(v) for v in row])
    return buf.getvalue()


def history_view(hist: Mapping[str, Any]) -> dict[str, Any]:
    """Plain data for ``sections/history.html.j2``: one chart per (metric, attribute), with a
    line per labelling, its interval band, thresholds and failed runs marked."""
    from fairaudit.report import charts

    runs = list(hist.get("runs") or [])
    dates = [r["date"] for r in runs]
    failed = [bool(r.get("gate_failed")) for r in runs]
    groups: dict[tuple[Any, Any], list[Mapping[str, Any]]] = {}
    for s in hist.get("series") or []:
        groups.setdefault((s["metric"], s["attribute"]), []).append(s)
    panels = []
    for (metric, attribute), members in groups.items():
        lines, thresholds = [], {}
        for s in members:
            vals: list[float | None] = [None] * len(runs)
            lo: list[float | None] = [None] * len(runs)
            hi: list[float | None] = [None] * len(runs)
            for p in s["points"]:
                vals[p["run"]] = p["value"]
                if p.get("ci"):
                    lo[p["run"]], hi[p["run"]] = p["ci"]
                th = p.get("threshold")
                if th and th.get("value") is not None:
                    op = "\u2265" if th.get("bound") == "min" else "\u2264"
                    on = " (CI end)" if th.get("on", "value") != "value" else ""
                    thresholds[(th["value"], th.get("bound"), th.get("on"))] = \
                        f"threshold {op} {th['value']:g}{on}"
            lines.append({"label": s["labelling"], "values": vals, "lower": lo, "upper": hi})
        what = f"{metric}[{attribute}]" if attribute else str(metric)
        arrow = {"higher_is_better": " (higher is better)",
                 "lower_is_better": " (lower is better)"}.get(members[0].get("direction"), "")
        svg = charts.trend(dates, lines, thresholds=[(k[0], v) for k, v in thresholds.items()],
                           failed=failed, title=what + arrow, ylabel=str(metric))
        latest = []
        for s in members:
            last = s["points"][-1]
            latest.append({"labelling": s["labelling"], "value": last["value"], "ci": last["ci"],
                           "status": last["status"], "date": runs[last["run"]]["date"],
                           "n_runs": len(s["points"])})
        panels.append({"metric": metric, "attribute": attribute, "title": what, "chart": svg,
                       "latest": latest})
    return {"runs": runs, "panels": panels, "notes": list(hist.get("notes") or []),
            "skipped": list(hist.get("skipped") or []),
            "n_failed": sum(failed)}
