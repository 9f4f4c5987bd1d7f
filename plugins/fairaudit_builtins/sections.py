"""Built-in report sections.

Every section reads the audit JSON alone (:class:`fairaudit.report.results.AuditRun`) and returns plain
data for its template in ``templates/sections/``; charts are SVG strings from
:mod:`fairaudit.report.charts`. The module-level helpers (``headline_table``, ``composition_chart``,
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
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fairaudit.core.components import ReportSection
from fairaudit.hookspecs import hookimpl
from fairaudit.report import charts
from fairaudit.report.results import finite
from fairaudit.report.words import cluster_label

MAX_GROUPS = 20
"""Charts show at most this many groups of one attribute (the largest); tables show all."""

MAX_CLUSTERS = 40
"""Charts and tables show at most this many clusters of one labelling (the worst by balance,
then the largest) with a note "N of M shown"; the JSON keeps all of them."""

STATUS_RANK = {"fail": 0, "warn": 1, "not_applicable": 2, "pass": 3, "not_evaluated": 4}


# ============================================================================ helpers
DATA_LABELLING = "(data)"
"""Results of auditors that judge the data rather than a clustering (e.g. proxy features)."""


def labelling_names(run: Any) -> list[str]:
    """Labelling names in document order, then ``(data)`` when data-level results exist."""
    names = [str(lab["name"]) for lab in run.labellings]
    if any(r.get("labelling") == DATA_LABELLING for r in run.results):
        names.append(DATA_LABELLING)
    return names


def attribute_order(run: Any) -> dict[Any, int]:
    """Sort key for attributes: document order, ``None`` (not about groups) last."""
    order: dict[Any, int] = {a: i for i, a in enumerate(run.attributes)}
    order[None] = len(order)
    return order


def labelling_caption(lab: Mapping[str, Any]) -> str:
    """``kmeans — clusterer kmeans (n_clusters=3)`` / ``segment — column 'segment'``."""
    if lab.get("origin") == "column":
        return f"column \u2018{lab.get('column') or lab.get('name')}\u2019"
    comp = lab.get("component") or lab.get("name")
    params = lab.get("params") or {}
    shown = ", ".join(
        f"{k}={_short(v)}" for k, v in sorted(params.items()) if k not in ("random_state",)
    )
    return f"clusterer {comp}" + (f" ({shown})" if shown else "")


def _short(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, str | int | bool) or v is None:
        return str(v)
    return json.dumps(v, sort_keys=True, default=str)


def json_text(value: Any) -> str:
    """Compact, key-sorted JSON text (shown escaped in tables)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def result_cell(r: Mapping[str, Any] | None) -> dict[str, Any]:
    """What a table cell shows for one result (``None`` -> an empty cell)."""
    if r is None:
        return {
            "present": False,
            "value": None,
            "ci": None,
            "status": "not_evaluated",
            "threshold": None,
            "notes": [],
            "best": False,
        }
    return {
        "present": True,
        "value": r.get("value"),
        "ci": r.get("ci"),
        "status": r.get("status", "not_evaluated"),
        "threshold": r.get("threshold"),
        "notes": list(r.get("notes") or ()),
        "best": False,
    }


def degenerate_labellings(run: Any) -> list[dict[str, Any]]:
    """Labellings with warnings (``labellings[i].warnings``: degenerate), in document order."""
    return [
        {"labelling": lab["name"], "warnings": list(lab["warnings"])}
        for lab in run.labellings if lab.get("warnings")
    ]


def mark_best(cells: list[dict[str, Any]], direction: str | None) -> None:
    """Flag the best finite value among ``cells`` (only when at least two are finite). Cells of
    degenerate labellings (``degenerate``) take no part: they are never starred."""
    vals = [
        (i, finite(c.get("value"))) for i, c in enumerate(cells)
        if c.get("present") and not c.get("degenerate")
    ]
    vals = [(i, v) for i, v in vals if v is not None]
    if len(vals) < 2 or direction not in ("higher_is_better", "lower_is_better"):
        return
    pick = max if direction == "higher_is_better" else min
    best = pick(v for _, v in vals)
    if all(v == best for _, v in vals):
        return
    for i, v in vals:
        if v == best:
            cells[i]["best"] = True


def metric_rows(
    run: Any, results: Iterable[Mapping[str, Any]], labellings: Sequence[str]
) -> list[dict[str, Any]]:
    """One row per (auditor, metric, attribute) with one cell per labelling (document order)."""
    attr_rank = attribute_order(run)
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    first: dict[tuple[str, str], int] = {}
    for r in results:
        am = (r["auditor"], r["metric"])
        first.setdefault(am, len(first))
        key = (r["auditor"], r["metric"], r.get("attribute"))
        row = rows.setdefault(
            key,
            {
                "auditor": r["auditor"],
                "metric": r["metric"],
                "attribute": r.get("attribute"),
                "direction": r.get("direction"),
                "headline": bool(r.get("headline")),
                "cells": {name: result_cell(None) for name in labellings},
            },
        )
        if r.get("labelling") in row["cells"]:
            row["cells"][r["labelling"]] = result_cell(r)
    out = []
    degenerate = {d["labelling"] for d in degenerate_labellings(run)}
    for key, row in rows.items():
        cells = [row["cells"][name] for name in labellings]
        for name, cell in zip(labellings, cells, strict=True):
            cell["degenerate"] = name in degenerate
        mark_best(cells, row["direction"])
        row["cells"] = cells
        row["_key"] = (first[(key[0], key[1])], attr_rank.get(key[2], len(attr_rank)))
        out.append(row)
    out.sort(key=lambda r: r.pop("_key"))
    return out


def headline_table(run: Any) -> dict[str, Any]:
    """Headline metrics (one per auditor) x labellings, with CIs and statuses."""
    names = labelling_names(run)
    rows = metric_rows(run, [r for r in run.results if r.get("headline")], names)
    degenerate = [d["labelling"] for d in degenerate_labellings(run)]
    return {"labellings": names, "rows": rows, "degenerate": degenerate}


def threshold_checks(run: Any) -> list[dict[str, Any]]:
    """Every gate (threshold x labelling x attribute), failures first — including gates whose
    metric was never computed (from the JSON's ``gates``; older documents: from the results)."""
    names = {n: i for i, n in enumerate(labelling_names(run))}
    attr_rank = attribute_order(run)
    if run.doc.get("gates") is not None:
        return _gate_checks(run, names, attr_rank)
    rows = []
    for i, r in enumerate(run.results):
        th = r.get("threshold")
        if not th:
            continue
        judged = r.get("value")
        if th.get("on", "value") != "value" and r.get("ci"):
            judged = r["ci"][0] if th.get("bound", "min") == "min" else r["ci"][1]
        rows.append(
            {
                "metric": r["metric"],
                "auditor": r["auditor"],
                "labelling": r["labelling"],
                "attribute": r.get("attribute"),
                "value": r.get("value"),
                "ci": r.get("ci"),
                "judged": judged,
                "on": th.get("on", "value"),
                "threshold": th,
                "severity": th.get("severity", "error"),
                "status": r.get("status", "not_evaluated"),
                "_key": (
                    STATUS_RANK.get(r.get("status"), 9),
                    names.get(r["labelling"], 99),
                    attr_rank.get(r.get("attribute"), 99),
                    i,
                ),
            }
        )
    rows.sort(key=lambda x: x.pop("_key"))
    return rows


def _gate_checks(run: Any, names: Mapping[str, int], attr_rank: Mapping[Any, int]) -> list[dict]:
    rows = []
    for i, g in enumerate(run.doc["gates"]):
        found = run.results_for(metric=g["metric"], labelling=g["labelling"],
                                attribute=g.get("attribute"))
        r = found[0] if found else {}
        rows.append({
            "metric": g["metric"],
            "auditor": r.get("auditor", ""),
            "labelling": g["labelling"],
            "attribute": g.get("attribute"),
            "value": g.get("value"),
            "ci": r.get("ci"),
            "judged": g.get("judged"),
            "on": g.get("on", "value"),
            "judged_on": g.get("judged_on", "value"),
            "reason": g.get("reason"),
            "threshold": {"metric": g["metric"], "value": g.get("threshold"),
                          "bound": g["bound"], "on": g.get("on", "value"), "attribute": None},
            "severity": g.get("severity", "error"),
            "status": g["status"],
            "_key": (STATUS_RANK.get(g["status"], 9), names.get(g["labelling"], 99),
                     attr_rank.get(g.get("attribute"), 99), i),
        })
    rows.sort(key=lambda x: x.pop("_key"))
    return rows


def status_counts(results: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    counts = {"pass": 0, "warn": 0, "fail": 0, "not_applicable": 0, "not_evaluated": 0}
    for r in results:
        s = r.get("status", "not_evaluated")
        counts[s] = counts.get(s, 0) + 1
    return counts


def top_groups(comp: Mapping[str, Any], limit: int = MAX_GROUPS) -> list[int]:
    """Indices of the ``limit`` largest groups (population share), in document order."""
    n = len(comp.get("groups") or ())
    if n <= limit:
        return list(range(n))
    shares = [finite(s) or 0.0 for s in comp.get("population_share") or [0.0] * n]
    keep = sorted(range(n), key=lambda g: (-shares[g], g))[:limit]
    return sorted(keep)


def cluster_axis_labels(clusters: Sequence[Any], names: Sequence[str] | None) -> list[str]:
    """Chart labels of clusters: their own names (a labels column of strings), else
    ``cluster 3``."""
    lab = {"cluster_names": names} if names else None
    return [cluster_label(lab, c, quote=False) for c in clusters]


def composition_chart(
    comp: Mapping[str, Any], *, title: str | None = None, limit: int = MAX_GROUPS,
    names: Sequence[str] | None = None,
) -> str:
    """Stacked bars: group shares in the population and in each cluster (``composition[attr]``
    of a labelling). Suppressed shares show as hatched grey; groups beyond ``limit`` are merged
    into "other groups" when their shares are known. ``names``: the clusters' own names
    (``labellings[i].cluster_names``)."""
    groups = list(comp.get("groups") or ())
    clusters = list(comp.get("clusters") or ())
    pop = list(comp.get("population_share") or [])
    shares = comp.get("cluster_share") or []
    keep = top_groups(comp, limit)
    rest = [g for g in range(len(groups)) if g not in keep]
    names = [groups[g] for g in keep] + (["other groups"] if rest else [])

    def row(values: Sequence[Any]) -> list[float | None]:
        out: list[float | None] = [finite(values[g]) for g in keep]
        if rest:
            known = [finite(values[g]) for g in rest]
            out.append(None if any(v is None for v in known) else sum(known))  # type: ignore[arg-type]
        return out

    rows = [row(pop)]
    for k in range(len(clusters)):
        rows.append(row([shares[g][k] if g < len(shares) else None for g in range(len(groups))]))
    categories = ["population"] + cluster_axis_labels(clusters, names)
    return charts.composition_bars(
        categories, names, rows, title=title, reference="population", xlabel="share of rows"
    )


def balance_cells(comp: Mapping[str, Any]) -> list[list[float | None]]:
    """Group x cluster balance ``min(r_g / r_g(k), r_g(k) / r_g)`` from composition shares
    (``r_g`` = population share, ``r_g(k)`` = share of the group within cluster k). 0 when the
    group is absent from the cluster; ``None`` when the share is undefined.
    The minimum of a cluster's column over groups is that cluster's balance."""
    pop = comp.get("population_share") or []
    shares = comp.get("cluster_share") or []
    clusters = comp.get("clusters") or []
    out: list[list[float | None]] = []
    for g in range(len(comp.get("groups") or ())):
        row: list[float | None] = []
        rg = finite(pop[g]) if g < len(pop) else None
        for k in range(len(clusters)):
            rgk = finite(shares[g][k]) if g < len(shares) and k < len(shares[g]) else None
            if rg is None or rg <= 0 or rgk is None:
                row.append(None)
            elif rgk <= 0:
                row.append(0.0)
            else:
                row.append(min(rg / rgk, rgk / rg))
        out.append(row)
    return out


def balance_heatmap(
    comp: Mapping[str, Any], *, title: str | None = None, limit: int = MAX_GROUPS,
    names: Sequence[str] | None = None,
) -> str:
    """Heatmap of :func:`balance_cells` (rows = groups, columns = clusters; 1 = the cluster
    mirrors the population for that group, 0 = group absent)."""
    keep = top_groups(comp, limit)
    cells = balance_cells(comp)
    return charts.heatmap(
        [cells[g] for g in keep],
        [comp["groups"][g] for g in keep],
        cluster_axis_labels(list(comp.get("clusters") or ()), names),
        title=title,
        vmin=0.0,
        vmax=1.0,
        cmap="RdYlGn",
        colorbar_label="balance",
    )


def counts_table(comp: Mapping[str, Any]) -> dict[str, Any]:
    """Group x cluster counts and shares for a table."""
    groups = list(comp.get("groups") or ())
    clusters = list(comp.get("clusters") or ())
    counts = comp.get("counts") or []
    shares = comp.get("cluster_share") or []
    pop = comp.get("population_share") or []
    noise = comp.get("noise") or []
    rows = []
    for g, name in enumerate(groups):
        rows.append(
            {
                "group": name,
                "population_share": pop[g] if g < len(pop) else None,
                "noise": noise[g] if g < len(noise) else None,
                "cells": [
                    {
                        "n": counts[g][k] if g < len(counts) else None,
                        "share": shares[g][k] if g < len(shares) else None,
                    }
                    for k in range(len(clusters))
                ],
            }
        )
    return {"clusters": clusters, "rows": rows, "has_noise": any(finite(x) for x in noise)}


def shown_clusters(run: Any, lab: Mapping[str, Any],
                   limit: int | None = None) -> tuple[list[Any] | None, str]:
    """The clusters a person can read for labelling ``lab``: ``(None, "")`` when there are at
    most ``limit``; otherwise the ``limit`` with the lowest published per-cluster balance (of the
    first attribute), then the largest, and a note saying how many of how many are shown."""
    limit = MAX_CLUSTERS if limit is None else limit
    sizes = {c.get("cluster"): finite(c.get("n")) for c in lab.get("cluster_sizes") or ()}
    clusters = list(sizes)
    if not clusters:
        comp = next(iter((lab.get("composition") or {}).values()), {})
        clusters = list(comp.get("clusters") or ())
    if len(clusters) <= limit:
        return None, ""
    worst: dict[Any, float] = {}
    attrs = list(run.attributes)
    rows = run.results_for(metric="balance", labelling=lab.get("name"),
                           attribute=attrs[0] if attrs else None)
    for r in rows[:1]:
        for row in r.get("per_cluster") or ():
            v = finite(row.get("value"))
            if v is not None:
                worst[row.get("cluster")] = v
    ranked = sorted(clusters, key=lambda c: (worst.get(c, float("inf")),
                                             -(sizes.get(c) or 0), str(c)))
    how = (f"the {limit} with the lowest balance[{attrs[0]}], then the largest"
           if worst else f"the {limit} largest" if any(sizes.values()) else f"the first {limit}")
    return ranked[:limit], (f"{limit:,} of {len(clusters):,} clusters shown ({how}); "
                            "every cluster is in the JSON")


def subset_composition(comp: Mapping[str, Any], clusters: Sequence[Any] | None) -> dict:
    """``comp`` (one attribute's composition) restricted to ``clusters``, in that order."""
    if clusters is None:
        return dict(comp)
    pos = {c: i for i, c in enumerate(comp.get("clusters") or ())}
    keep = [pos[c] for c in clusters if c in pos]

    def cols(table: Any) -> list:
        return [[row[i] if i < len(row) else None for i in keep] for row in table or ()]

    out = dict(comp)
    out["clusters"] = [comp["clusters"][i] for i in keep]
    out["counts"] = cols(comp.get("counts"))
    out["cluster_share"] = cols(comp.get("cluster_share"))
    return out


def per_cluster_matrix(results: Iterable[Mapping[str, Any]], run: Any,
                       only: Sequence[Any] | None = None) -> dict[str, Any]:
    """Per-cluster breakdowns of ``results`` (one labelling) as rows ``metric [attribute]`` x
    cluster columns. Rows of a breakdown that name another ``metric`` are filed under it; extra
    keys (e.g. ``worst_group``) are kept as ``extras``."""
    attr_rank = attribute_order(run)
    cells: dict[tuple[str, Any], dict[Any, Any]] = {}
    extras: dict[tuple[str, Any], dict[Any, dict[str, Any]]] = {}
    sizes: dict[Any, Any] = {}
    order: dict[tuple[str, Any], tuple[int, int]] = {}
    for r in results:
        for row in r.get("per_cluster") or ():
            metric = str(row.get("metric", r["metric"]))
            key = (metric, r.get("attribute"))
            order.setdefault(key, (len(order), attr_rank.get(r.get("attribute"), 99)))
            c = row.get("cluster")
            cells.setdefault(key, {})[c] = row.get("value")
            if row.get("n") is not None:
                sizes.setdefault(c, row.get("n"))
            more = {k: v for k, v in row.items()
                    if k not in ("metric", "cluster", "value", "n")}
            if more:
                extras.setdefault(key, {})[c] = more
    clusters = sorted({c for d in cells.values() for c in d}, key=lambda c: (str(type(c)), c))
    if only is not None:
        present = set(clusters)
        clusters = [c for c in only if c in present]
    keys = sorted(order, key=lambda k: (order[k][0], order[k][1]))
    rows = []
    for key in keys:
        rows.append(
            {
                "metric": key[0],
                "attribute": key[1],
                "values": [cells[key].get(c) for c in clusters],
                "extras": [
                    ", ".join(_short(v) for _, v in sorted(extras[key][c].items()))
                    if c in extras.get(key, {})
                    else ""
                    for c in clusters
                ],
                "extras_keys": sorted({k for d in extras.get(key, {}).values() for k in d}),
            }
        )
    return {"clusters": clusters, "sizes": [sizes.get(c) for c in clusters], "rows": rows}


def headline_chart(run: Any, auditor: str, metric: str) -> str | None:
    """Bars of one headline metric for every labelling x attribute, CI whiskers, and the
    threshold as a dashed line when a single one applies."""
    rows = [r for r in run.results if r["auditor"] == auditor and r["metric"] == metric]
    if not rows:
        return None
    names = {n: i for i, n in enumerate(labelling_names(run))}
    attr_rank = attribute_order(run)
    rows.sort(key=lambda r: (names.get(r["labelling"], 99), attr_rank.get(r.get("attribute"), 99)))
    labels = [
        f"{r['labelling']} \u00b7 {r['attribute']}" if r.get("attribute") else r["labelling"]
        for r in rows
    ]
    colors = [charts.PALETTE[names.get(r["labelling"], 0) % len(charts.PALETTE)] for r in rows]
    ths = {json_text(r["threshold"]) for r in rows if r.get("threshold")}
    reference = None
    reference_label = None
    if len(ths) == 1:
        th = json.loads(next(iter(ths)))
        reference = finite(th.get("value"))
        reference_label = "threshold" + (" (on CI bound)" if th.get("on", "value") != "value" else "")
    direction = rows[0].get("direction")
    arrow = {"higher_is_better": " (higher is better)", "lower_is_better": " (lower is better)"}
    return charts.hbar(
        labels,
        [r.get("value") for r in rows],
        errors=[r.get("ci") for r in rows],
        reference=reference,
        reference_label=reference_label,
        colors=colors,
        title=metric + arrow.get(direction, ""),
    )


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
            "headline_has_ci": any(c.get("ci") for row in headline.get("rows") or ()
                                   for c in row.get("cells") or ()),
            "status": doc.get("status", "not_evaluated"),
            "counts": counts,
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
                {"name": lab["name"], "caption": labelling_caption(lab)} for lab in run.labellings
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
                    "detail": json_text(r["detail"]) if r.get("detail") else "",
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
