"""Helpers of the built-in report sections, public for sections of other plugins: labelling and
attribute order, result cells, the headline table, threshold checks, composition charts and
tables, the balance heatmap, the clusters to show (``shown_clusters``, at most
:data:`MAX_CLUSTERS`) and per-cluster matrices. Each reads the audit JSON alone; charts come
from :mod:`fairaudit.report.charts`. Also importable from :mod:`fairaudit_builtins.sections`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fairaudit.report import charts
from fairaudit.report.results import finite
from fairaudit.report.words import cluster_label, param_text

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
    """``clusterer kmeans (n_clusters = 3)`` / ``column 'segment'``."""
    if lab.get("origin") == "column":
        return f"column \u2018{lab.get('column') or lab.get('name')}\u2019"
    comp = lab.get("component") or lab.get("name")
    shown = param_text(lab.get("params"), skip=("random_state",))
    return f"clusterer {comp}" + (f" ({shown})" if shown else "")


def labelling_about(lab: Mapping[str, Any]) -> str:
    """What a labelling is, beside its name: ``n_clusters = 3`` for ``kmeans`` (the name says
    the clusterer), ``clusterer fairden, fair: no, ...`` for ``fairden-unfair``, ``column
    'segment'`` for a labels column."""
    if lab.get("origin") == "column":
        return labelling_caption(lab)
    comp = lab.get("component") or lab.get("name")
    shown = param_text(lab.get("params"), skip=("random_state",))
    if comp == lab.get("name"):
        return shown
    return f"clusterer {comp}" + (f", {shown}" if shown else "")


def _short(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, str | int | bool) or v is None:
        return str(v)
    return json.dumps(v, sort_keys=True, default=str)


LISTED = 20
"""Items of a list a table cell shows (``clipped``); the JSON document has them all."""


def clipped(value: Any, n: int = LISTED) -> Any:
    """``value`` with every list longer than ``n`` cut to its first ``n`` items and a count of the
    rest, for display: a result's detail can list thousands of intersection groups."""
    if isinstance(value, Mapping):
        return {k: clipped(v, n) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [clipped(v, n) for v in value[:n]]
        if len(value) > n:
            items.append(f"... and {len(value) - n:,} more (all in the JSON)")
        return items
    return value


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
