"""Built-in report sections.

Every section reads the audit JSON alone (:class:`fairaudit.report.results.AuditRun`) and returns plain
data for its template in ``templates/sections/``; charts are SVG strings from
:mod:`fairaudit.report.charts`. The helpers (:mod:`fairaudit_builtins.section_helpers`, re-exported here: ``headline_table``, ``composition_chart``,
``balance_cells``, ``per_cluster_matrix``, ``results_rows``, ...) are public so that sections added
by later plugins (density scatter plots, LCD histograms, proxy-feature bars) can reuse them.

Sections, in page order:

===========  ====  ==========================================================================
name         order content
===========  ====  ==========================================================================
summary      100   overall status, every threshold check, headline metrics with CIs
data         200   input overview, groups per attribute, Great Expectations checks
composition  300   per labelling: cluster sizes, group share per cluster vs population, balance
                   heatmap (cluster x group), counts
metrics      400   every metric side by side for all labellings
audit_result 600   per auditor without its own section: results and per-cluster breakdown
exclusions   800   excluded rows and columns, noise, groups too small to judge
metadata     900   versions, seed, chain, options, plugins, timings, input fingerprint
===========  ====  ==========================================================================

A section claims auditors it shows in full through an ``auditors`` class attribute; the generic
``audit_result`` section covers every other auditor.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from fairaudit.core.components import ReportSection
from fairaudit.hookspecs import hookimpl
from fairaudit.report import charts
from fairaudit.report.results import finite
from fairaudit_builtins.section_helpers import (
    DATA_LABELLING,
    MAX_CLUSTERS,
    MAX_GROUPS,
    STATUS_RANK,
    attribute_order,
    balance_cells,
    balance_heatmap,
    clipped,
    cluster_axis_labels,
    composition_chart,
    counts_table,
    degenerate_labellings,
    headline_chart,
    headline_table,
    json_text,
    labelling_about,
    labelling_caption,
    labelling_names,
    mark_best,
    metric_rows,
    per_cluster_matrix,
    result_cell,
    shown_clusters,
    status_counts,
    subset_composition,
    threshold_checks,
    top_groups,
)

__all__ = [
    "DATA_LABELLING",
    "MAX_CLUSTERS",
    "MAX_GROUPS",
    "STATUS_RANK",
    "attribute_order",
    "balance_cells",
    "balance_heatmap",
    "cluster_axis_labels",
    "composition_chart",
    "counts_table",
    "degenerate_labellings",
    "headline_chart",
    "headline_table",
    "json_text",
    "labelling_about",
    "labelling_caption",
    "labelling_names",
    "mark_best",
    "metric_rows",
    "per_cluster_matrix",
    "result_cell",
    "shown_clusters",
    "status_counts",
    "subset_composition",
    "threshold_checks",
    "top_groups",
    "SECTIONS",
]


# ============================================================================ sections
_OP = {True: "\u2265", False: "\u2264"}


class SummarySection(ReportSection):
    name = "summary"
    title = "Summary"
    order = 100
    template = "sections/summary.html.j2"
    description = "Overall status, every threshold check, headline metrics with CIs."

    def context(self, run: Any) -> dict[str, Any]:
        doc = run.doc
        checks = threshold_checks(run)
        counts = status_counts(checks)
        charts_out = []
        seen: set[tuple[str, str]] = set()
        for r in run.results:
            am = (r["auditor"], r["metric"])
            if r.get("headline") and am not in seen and r.get("attribute") is not None:
                seen.add(am)
                svg = headline_chart(run, *am)
                if svg:
                    charts_out.append({"title": r["metric"], "svg": svg})
        gx = doc.get("checks") or []
        inp = doc.get("input") or {}
        from fairaudit.report.answer import answers, overall
        from fairaudit.report.summary import gating

        bounds = [
            f"{g['metric']} {_OP[g.get('direction') == 'higher_is_better']} "
            f"{g['verdict_bound']:g}"
            for g in doc.get("glossary") or () if g.get("headline")
            and g.get("verdict_bound") is not None
        ]
        headline = headline_table(run)
        return {
            "answer": answers(doc),
            "overall": overall(doc),
            "default_bounds": list(dict.fromkeys(bounds)),
            "answer_labellings": list(dict.fromkeys(
                str(v["labelling"]) for v in doc.get("verdicts") or ())),
            "n_headline_rows": len(headline.get("rows") or ()),
            # the "(data)" column (auditors that judge the data) is not a labelling
            "n_headline_labellings": sum(1 for name in headline.get("labellings") or ()
                                         if name != DATA_LABELLING),
            "headline_has_data": DATA_LABELLING in (headline.get("labellings") or ()),
            "headline_has_ci": any(c.get("ci") for row in headline.get("rows") or ()
                                   for c in row.get("cells") or ()),
            "status": doc.get("status", "not_evaluated"),
            "counts": counts,
            "gating": gating(doc),
            "n_checks": len(checks),
            "checks": checks,
            "headline": headline,
            "charts": charts_out[:4],
            "gx_failed": [c for c in gx if not c.get("success")],
            "n_gx": len(gx),
            "published": (doc.get("privacy") or {}).get("mode") == "dp",
            "input_path": inp.get("path"),
            "rows": inp.get("rows"),
            "rows_audited": inp.get("rows_audited"),
            "attributes": list(run.attributes),
            "labellings": [
                {"name": lab["name"], "about": labelling_about(lab)} for lab in run.labellings
            ],
            "ci_level": ((doc.get("chain") or {}).get("options") or {}).get("ci_level", 0.95),
            "notes": [str(n) for n in doc.get("notes") or ()],
            "degenerate": degenerate_labellings(run),
        }


class DataSection(ReportSection):
    name = "data"
    title = "Data and input checks"
    order = 200
    template = "sections/data.html.j2"
    description = "What was read, the groups of every attribute, Great Expectations checks."

    def context(self, run: Any) -> dict[str, Any]:
        doc = run.doc
        inp = doc.get("input") or {}
        groups = []
        for attr in run.attributes:
            rows = list((inp.get("groups") or {}).get(attr) or ())
            groups.append({"attribute": attr, "rows": rows})
        features = list(inp.get("features") or ())
        sample = inp.get("sample")
        overview = [
            ("File", inp.get("path")),
            ("Format", inp.get("format")),
            ("Rows in input", _int_text(inp.get("rows"))),
            ("Rows audited", _int_text(inp.get("rows_audited"))),
            ("Columns", str(len(inp.get("columns") or ()))),
            ("Sensitive attributes", ", ".join(map(str, inp.get("sensitive") or ())) or "none"),
            ("Audited attributes", ", ".join(map(str, run.attributes))),
            ("Labels column", inp.get("labels") or "none (clusterers only)"),
            (
                "Features",
                f"{len(features)}: " + ", ".join(map(str, features)) if features else "none",
            ),
        ]
        if sample:
            overview.append(
                ("Sample", f"{_int_text(sample.get('rows'))} rows, seed {sample.get('seed')}"
                 + (f" \u2014 {sample['note']}" if sample.get("note") else ""))
            )  # fmt: skip
        if inp.get("ordinal"):
            for attr, order in sorted(inp["ordinal"].items()):
                overview.append((f"Ordinal order of {attr}", " < ".join(map(str, order))))
        checks = sorted(
            (_defaults(c, CHECK_KEYS) for c in doc.get("checks") or ()),
            key=lambda c: (bool(c["success"]), c["severity"] != "error"),
        )
        prep = [
            {"name": p.get("name"), "notes": list(p.get("notes") or ())}
            for p in doc.get("preprocessing") or ()
        ]
        return {
            "overview": overview,
            "fingerprint": inp.get("fingerprint"),
            "groups": groups,
            "checks": checks,
            "checks_failed": [c for c in checks if not c["success"]],
            "checks_passed": [c for c in checks if c["success"]],
            "n_checks_failed": sum(1 for c in checks if not c.get("success")),
            "preprocessing": [p for p in prep if p["notes"]],
            "min_cell": ((doc.get("chain") or {}).get("options") or {}).get("min_cell"),
        }


CHECK_KEYS = {
    "name": "",
    "expectation": "",
    "column": None,
    "success": False,
    "severity": "error",
    "observed": None,
    "expected": None,
}
THRESHOLD_KEYS = {
    "metric": "?",
    "value": None,
    "bound": "min",
    "on": "value",
    "attribute": None,
    "severity": "error",
    "labelling": None,
    "source": "",
}
PLUGIN_KEYS = {"name": "", "package": "", "version": ""}
TIMING_KEYS = {"kind": "", "step": "", "labelling": None, "seconds": None}


def _defaults(record: Mapping[str, Any], keys: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` with every key of ``keys`` present (templates use StrictUndefined)."""
    out = dict(keys)
    out.update(record or {})
    return out


def _int_text(x: Any) -> str:
    v = finite(x)
    return "\u2014" if v is None else f"{int(v):,}"


class CompositionSection(ReportSection):
    name = "composition"
    title = "Cluster composition"
    order = 300
    template = "sections/composition.html.j2"
    description = (
        "Per labelling: cluster sizes, group share per cluster vs the population, and the "
        "balance of every cluster x group cell."
    )

    def applies(self, run: Any) -> bool:
        return any(lab.get("composition") for lab in run.labellings)

    def context(self, run: Any) -> dict[str, Any]:
        out = []
        for i, lab in enumerate(run.labellings):
            comp_all = lab.get("composition") or {}
            only, shown_note = shown_clusters(run, lab)
            sizes = list(lab.get("cluster_sizes") or ())
            if only is not None:
                by_id = {s.get("cluster"): s for s in sizes}
                sizes = [by_id[c] for c in only if c in by_id]
            size_chart = None
            if sizes:
                size_chart = charts.hbar(
                    cluster_axis_labels([s.get("cluster") for s in sizes],
                                        lab.get("cluster_names")),
                    [s.get("n") for s in sizes],
                    colors=[charts.PALETTE[i % len(charts.PALETTE)]] * len(sizes),
                    fmt="{:,.0f}",
                    title="Cluster sizes (rows)",
                )
            attrs = []
            for attr in run.attributes:
                comp = comp_all.get(attr)
                if not comp:
                    continue
                comp = subset_composition(comp, only)
                n_groups = len(comp.get("groups") or ())
                attrs.append(
                    {
                        "attribute": attr,
                        "n_groups": n_groups,
                        "truncated": n_groups > MAX_GROUPS,
                        "max_groups": MAX_GROUPS,
                        "composition_svg": composition_chart(
                            comp, title=f"Group share per cluster \u2014 {attr}",
                            names=lab.get("cluster_names"),
                        ),
                        "heatmap_svg": balance_heatmap(
                            comp, title=f"Balance per group \u00d7 cluster \u2014 {attr}",
                            names=lab.get("cluster_names"),
                        ),
                        "table": {**counts_table(comp), "names": lab.get("cluster_names")},
                    }
                )
            extras = lab.get("extras") or {}
            out.append(
                {
                    "name": lab["name"],
                    "caption": labelling_caption(lab),
                    "origin": lab.get("origin"),
                    "n_rows": lab.get("n_rows"),
                    "n_clusters": lab.get("n_clusters"),
                    "n_noise": lab.get("n_noise"),
                    "notes": list(lab.get("notes") or ()),
                    "extras": [
                        (k, v if isinstance(v, str | int | float) else json_text(v))
                        for k, v in sorted(extras.items())
                        if isinstance(v, str | int | float | bool) or len(json_text(v)) <= 200
                    ],
                    "extras_long": [
                        (
                            k,
                            json.dumps(
                                v, indent=1, sort_keys=True, ensure_ascii=False, default=str
                            ),
                        )
                        for k, v in sorted(extras.items())
                        if not isinstance(v, str | int | float | bool) and len(json_text(v)) > 200
                    ],
                    "size_svg": size_chart,
                    "shown_note": shown_note,
                    "attributes": attrs,
                }
            )
        return {"labellings": out}


class MetricsSection(ReportSection):
    name = "metrics"
    title = "Metrics by labelling"
    order = 400
    template = "sections/metrics.html.j2"
    description = "Every metric side by side for all labellings (best value marked)."

    def applies(self, run: Any) -> bool:
        return bool(run.results)

    def context(self, run: Any) -> dict[str, Any]:
        names = labelling_names(run)
        rows = metric_rows(run, run.results, names)
        groups: list[dict[str, Any]] = []
        for row in rows:
            if not groups or groups[-1]["auditor"] != row["auditor"]:
                groups.append({"auditor": row["auditor"], "rows": []})
            groups[-1]["rows"].append(row)
        return {"labellings": names, "auditors": groups, "compare": len(names) > 1}


class AuditResultSection(ReportSection):
    """Generic section for every auditor that no other section claims (``auditors``)."""

    name = "audit_result"
    title = "Results by auditor"
    order = 600
    template = "sections/audit_result.html.j2"
    description = "Results and per-cluster breakdown of each auditor without its own section."

    def __init__(self, claimed_auditors: Iterable[str] = ()) -> None:
        self.claimed_auditors = frozenset(claimed_auditors)

    def _auditors(self, run: Any) -> list[str]:
        seen: dict[str, None] = {}
        for r in run.results:
            if r["auditor"] not in self.claimed_auditors:
                seen.setdefault(r["auditor"], None)
        return list(seen)

    def applies(self, run: Any) -> bool:
        return bool(self._auditors(run))

    def context(self, run: Any) -> dict[str, Any]:
        names = labelling_names(run)
        attr_rank = attribute_order(run)
        audit_steps = {
            a.get("use"): a.get("params") or {}
            for a in (run.doc.get("chain") or {}).get("audit") or ()
        }
        out = []
        for auditor in self._auditors(run):
            results = [r for r in run.results if r["auditor"] == auditor]
            results.sort(
                key=lambda r: (names.index(r["labelling"]) if r["labelling"] in names else 99,
                               attr_rank.get(r.get("attribute"), 99))
            )  # fmt: skip
            rows = [
                {
                    "metric": r["metric"],
                    "labelling": r["labelling"],
                    "attribute": r.get("attribute"),
                    "direction": r.get("direction"),
                    "value": r.get("value"),
                    "ci": r.get("ci"),
                    "status": r.get("status", "not_evaluated"),
                    "threshold": r.get("threshold"),
                    "judged": r.get("judged"),
                    "n_rows": r.get("n_rows"),
                    "notes": list(r.get("notes") or ()),
                    "detail": json_text(clipped(r["detail"])) if r.get("detail") else "",
                }
                for r in results
            ]
            breakdowns = []
            labs = {lab.get("name"): lab for lab in run.labellings}
            for name in names:
                sub = [r for r in results if r["labelling"] == name]
                only, note = shown_clusters(run, labs[name]) if name in labs else (None, "")
                m = per_cluster_matrix(sub, run, only)
                if m["rows"]:
                    lab_doc = next((x for x in run.labellings if x["name"] == name), {})
                    breakdowns.append({"labelling": name, "shown_note": note, **m,
                                       "names": lab_doc.get("cluster_names")})
            out.append(
                {
                    "auditor": auditor,
                    "params": audit_steps.get(auditor),
                    "rows": rows,
                    "collapse": len(rows) > 8,
                    "breakdowns": breakdowns,
                }
            )
        return {"auditors": out}


class ExclusionsSection(ReportSection):
    name = "exclusions"
    title = "Exclusions and small groups"
    order = 800
    template = "sections/exclusions.html.j2"
    description = "Rows and columns left out, noise, and groups too small to judge."

    def applies(self, run: Any) -> bool:
        c = self.context(run)
        return bool(
            c["exclusions"] or c["excluded_columns"] or c["noise"] or c["small_groups"]
        )  # fmt: skip

    def context(self, run: Any) -> dict[str, Any]:
        doc = run.doc
        inp = doc.get("input") or {}
        options = (doc.get("chain") or {}).get("options") or {}
        small = []
        for attr in run.attributes:
            for g in (inp.get("groups") or {}).get(attr) or ():
                if g.get("small"):
                    small.append({"attribute": attr, **g})
        return {
            "exclusions": sorted((inp.get("exclusions") or {}).items()),
            "excluded_columns": sorted((inp.get("excluded_columns") or {}).items()),
            "noise": [
                {
                    "labelling": lab["name"],
                    "n_noise": lab.get("n_noise"),
                    "n_rows": lab.get("n_rows"),
                }
                for lab in run.labellings
                if finite(lab.get("n_noise"))
            ],
            "small_groups": small,
            "min_cell": options.get("min_cell", 10),
        }


class MetadataSection(ReportSection):
    name = "metadata"
    title = "Run metadata"
    order = 900
    template = "sections/metadata.html.j2"
    description = "Versions, seed, the resolved chain, options, plugins, timings, fingerprint."

    def context(self, run: Any) -> dict[str, Any]:
        doc = run.doc
        chain = doc.get("chain") or {}
        env = doc.get("environment") or {}
        timing = doc.get("timing") or {}
        tool = doc.get("tool") or {}
        inp = doc.get("input") or {}
        steps = []
        for kind in ("preprocess", "cluster", "audit"):
            for st in chain.get(kind) or ():
                steps.append(
                    {
                        "kind": kind,
                        "use": st.get("use"),
                        "name": st.get("name") or "",
                        "params": st.get("params") or {},
                    }
                )
        return {
            "overview": [
                ("Tool", f"{tool.get('name', 'fairaudit')} {tool.get('version', '')}".strip()),
                ("Schema version", doc.get("schema_version")),
                ("Created", timing.get("created")),
                ("Chain source", chain.get("source")),
                ("Seed", chain.get("seed")),
                ("Input fingerprint", inp.get("fingerprint")),
                ("Python", env.get("python")),
                ("Platform", env.get("platform")),
            ],
            "steps": steps,
            "thresholds": [_defaults(t, THRESHOLD_KEYS) for t in chain.get("thresholds") or ()],
            "options": sorted((chain.get("options") or {}).items()),
            "versions": sorted((env.get("versions") or {}).items()),
            "plugins": [_defaults(p, PLUGIN_KEYS) for p in env.get("plugins") or ()],
            "timing_steps": [_defaults(t, TIMING_KEYS) for t in timing.get("steps") or ()],
            "total_seconds": timing.get("total_seconds"),
        }


SECTIONS: tuple[type[ReportSection], ...] = (
    SummarySection,
    DataSection,
    CompositionSection,
    MetricsSection,
    AuditResultSection,
    ExclusionsSection,
    MetadataSection,
)
"""The built-in sections (also what :func:`fairaudit.report.render.render_html` uses without a host)."""


@hookimpl
def fairaudit_register_report_sections() -> list[type]:
    return list(SECTIONS)
