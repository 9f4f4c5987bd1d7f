"""The sentences of :mod:`fairaudit.report.explain`: for each headline result, the cluster and group
that set its value (observed against expected count) and what sets the conservative end of its
interval, read from the composition of the audit JSON alone (the document's own numbers, so
a sentence never says more than the document it is part of). Formulas and the attribution rule:
``docs/metrics.md`` ("Verdicts and explanations").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from fairaudit.core.components import MetricSpec
from fairaudit.report.cells import (
    Context,
    Table,
    _ci_lower_sentence,
    _limiting_cell,
    _setting_cell,
    balance_cells,
    cce_cells,
    context,
    excluded,
)
from fairaudit.report.results import finite
from fairaudit.report.words import (
    _about,
    _int,
    _step,
    capitalize,
    cluster_label,
    join_clauses,
    plural,
    quoted,
    value_text,
)

_finite = finite  # fairaudit.report.results.finite: a float, or None for null/NaN/inf/non-numbers


# ============================================================================ per metric
def _balance_text(r: Mapping[str, Any], t: Table, ctx: Context) -> str:
    value = _finite(r.get("value"))
    metric = r["metric"]
    cells = balance_cells(t, excluded(r))
    cell, k, g = _setting_cell(cells, value, r, t)
    parts = []
    if k is not None and g is not None:
        e = t.expected(g, k)
        exp = f", where about {_about(e)} were expected" if e is not None else ""
        parts.append(
            f"{capitalize(t.cluster_name(k))} ({t.size_text(k)}) holds {t.count_text(g, k)} of "
            f"{t.people(g)}{exp} ({metric} {value_text(value)})."
        )
        if e is not None and e < 5 and t.counts[g][k] == 0:
            parts.append(
                f"With about {_about(e)} expected, chance alone gives a count of 0 about "
                f"{100 * math.exp(-e):.0f}% of the time (Poisson), so this zero is weak evidence."
            )
    elif k is not None:
        parts.append(f"{capitalize(t.cluster_name(k))} ({t.size_text(k)}) sets the value "
                     f"({metric} {value_text(value)}).")
    else:
        parts.append(f"{metric} is {value_text(value)}.")
    ci = r.get("ci")
    if ci and _finite(ci[0]) is not None:
        lim = _limiting_cell(cells, cell, ctx, r, t)
        parts.append(_ci_lower_sentence(t, lim, float(ci[0]), ctx, what="expected"))
    return " ".join(parts)


def _cce_text(r: Mapping[str, Any], t: Table, ctx: Context) -> str:
    value = _finite(r.get("value"))
    metric = r["metric"]
    skip = excluded(r)
    cells = cce_cells(t, skip)
    cell, k, g = _setting_cell(cells, value, r, t)
    parts = []
    if k is not None and g is not None:
        tot = t.group_total(g)
        even = (
            f", where an even split over the {t.c} {t.units} would put about "
            f"{_about(tot / t.c)}" if tot else ""
        )
        parts.append(
            f"{capitalize(t.cluster_name(k))} ({t.size_text(k)}) holds {t.count_text(g, k)} of "
            f"{t.people(g)}{even} ({metric} {value_text(value)})."
        )
    elif k is not None:
        parts.append(f"{capitalize(t.cluster_name(k))} ({t.size_text(k)}) sets the value "
                     f"({metric} {value_text(value)}).")
    else:
        parts.append(f"{metric} is {value_text(value)}.")
    parts.extend(_cce_sizes(t, skip, value))
    ci = r.get("ci")
    if ci and _finite(ci[0]) is not None:
        lim = _limiting_cell(cells, cell, ctx, r, t)
        parts.append(_ci_lower_sentence(t, lim, float(ci[0]), ctx, what="an even split gives"))
    return " ".join(parts)


def _cce_sizes(t: Table, skip: set[str], value: float | None) -> list[str]:
    """How much of fairness_cce is cluster sizes: the value sizes alone would give (every
    cluster with the population's mix) and the value the group mix alone would give (equal
    cluster sizes, each cluster's group shares)."""
    if t.c < 2:
        return []
    n = sum(t.sizes)
    if n <= 0:
        return []
    by_size = min(min(t.c * s / n, n / (t.c * s)) if s else 0.0 for s in t.sizes)
    ratio = min(t.sizes) / max(t.sizes) if max(t.sizes) else 0.0
    out = [
        f"The {t.unit} sizes alone cap it at {value_text(by_size)}, its value if every {t.unit} had the "
        f"population's group mix ({t.units} of {_int(min(t.sizes))} to {_int(max(t.sizes))} "
        f"rows, smallest / largest = {ratio:.3f})."
    ]
    if value is not None and by_size < 0.8 and value >= 0.8 * by_size:
        out.append(f"The low value therefore reflects unequal {t.unit} sizes, not the group mix.")
        return out
    by_mix = None
    rows = [g for g, name in enumerate(t.groups) if name not in skip]
    if rows and all(t.shares[g][k] is not None for g in rows for k in range(t.c)):
        worst = math.inf
        for g in rows:
            tot = sum(t.shares[g])  # type: ignore[arg-type]
            if tot <= 0:
                continue
            for k in range(t.c):
                x = t.c * t.shares[g][k] / tot  # type: ignore[operator]
                worst = min(worst, 0.0 if x == 0 else min(x, 1 / x))
        by_mix = None if math.isinf(worst) else worst
    if by_mix is not None:
        out.append(f"With equal {t.unit} sizes and the same group mix per {t.unit} it would be "
                   f"{value_text(by_mix)}.")
        if value is not None and by_size < by_mix and by_mix - value >= 0.1:
            out.append(f"So the low value mostly reflects unequal {t.unit} sizes, not the "
                       "group mix.")
    return out


def _distance_text(r: Mapping[str, Any], t: Table, ctx: Context) -> str:
    value = _finite(r.get("value"))
    metric = r["metric"]
    name = {"wd": "Wd", "ed": "Ed"}.get(metric, metric)
    rows = []
    for row in r.get("per_cluster") or ():
        v = _finite(row.get("value"))
        if v is None or row.get("cluster") not in t.clusters:
            continue
        rows.append((t.clusters.index(row.get("cluster")), v))
    n = t.n_clustered if t.n_clustered is not None else sum(t.sizes)
    if value is not None and value <= 1e-12:
        return f"Every {t.unit} mirrors the population's group mix ({metric} {value_text(value)})."
    parts = []
    contrib = [(k, v * t.sizes[k] / n) for k, v in rows if n > 0]
    if contrib:
        k, share = max(contrib, key=lambda x: (x[1], -x[0]))
        own = dict(rows)[k]
        parts.append(
            f"{capitalize(t.cluster_name(k))} ({t.size_text(k)}) contributes most: {value_text(share)} of the "
            f"size-weighted mean {value_text(value)} (its own {name} {value_text(own)})."
        )
        gaps = [
            (g, t.shares[g][k] - t.pop[g])  # type: ignore[operator]
            for g in range(len(t.groups))
            if t.shares[g][k] is not None and t.pop[g] is not None
        ]
        if gaps:
            g, gap = max(gaps, key=lambda x: (abs(x[1]), -x[0]))
            e = t.expected(g, k)
            exp = f", where about {_about(e)} were expected" if e is not None else ""
            side = "over" if gap > 0 else "under"
            parts.append(
                f"Its group most out of line is {_q(t.groups[g])}: {t.count_text(g, k)} people"
                f"{exp} ({side}-represented by {abs(gap) * 100:.1f} percentage points)."
            )
    else:
        parts.append(f"{metric} is {value_text(value)}.")
    ci = r.get("ci")
    if ci and _finite(ci[1]) is not None and ctx.published:
        parts.append(f"The upper end of the {ctx.level_text} interval "
                     f"({value_text(float(ci[1]))}) {ctx.published_interval_text}.")
    elif ci and _finite(ci[1]) is not None:
        head = (
            f"The upper end of the {ctx.level_text} interval ({value_text(float(ci[1]))}) reflects "
            f"sampling noise in every cell, which can only add distance"
        )
        if t.sizes:
            s, k = min((s, k) for k, s in enumerate(t.sizes))
            parts.append(
                f"{head}; the least certain is the smallest, {t.cluster_name(k)} ({_int(s)} rows),"
                f" where one person more or less moves its {name} by up to {_step(1 / s)}."
                if s > 0 else f"{head}."
            )
    return " ".join(parts)


def _generic_text(r: Mapping[str, Any], spec: MetricSpec | None, ctx: Context) -> str:
    value = _finite(r.get("value"))
    metric = r["metric"]
    direction = r.get("direction")
    parts = [f"{metric} is {value_text(value)}"
             + (f" on {_int(r['n_rows'])} rows" if isinstance(r.get("n_rows"), int) else "")
             + "."]
    rows = [row for row in r.get("per_cluster") or () if _finite(row.get("value")) is not None]
    if rows:
        pick = min if direction == "higher_is_better" else max
        worst = pick(rows, key=lambda row: float(row["value"]))
        size = worst.get("n")
        size_text = f" ({_int(size)} rows)" if isinstance(size, int) else ""
        where = cluster_label(ctx.labellings.get(str(r.get("labelling"))), worst.get("cluster"))
        parts.append(
            f"The worst cluster is {where}{size_text} with "
            f"{value_text(float(worst['value']))}."
        )
    ci = r.get("ci")
    if ci and _finite(ci[0]) is not None and _finite(ci[1]) is not None:
        end = "lower" if direction == "higher_is_better" else "upper"
        x = ci[0] if end == "lower" else ci[1]
        parts.append(f"The {ctx.level_text} interval is [{value_text(ci[0])}, {value_text(ci[1])}]; its {end} "
                     f"end ({value_text(x)}) is the conservative one.")
    return " ".join(parts)


def _proxy_text(r: Mapping[str, Any], t: Table | None, ctx: Context) -> str | None:
    attr = r.get("attribute")
    best = None
    for f in (r.get("detail") or {}).get("features") or ():
        v = _finite(((f.get("associations") or {}).get(attr) or {}).get("cramers_v"))
        if v is not None and (best is None or v > best[1]):
            best = (str(f.get("feature")), v)
    if best is None or attr is None:
        return None
    rows = (r.get("detail") or {}).get("rows_used")
    on = f", on {_int(rows)} sampled rows" if isinstance(rows, int) else ""
    return (
        f"The feature that stands in most for {attr} is {best[0]} (Cram\u00e9r's V "
        f"{value_text(best[1])}{on}): a clustering that uses it can separate the {attr} groups "
        f"without ever seeing {attr}."
    )


_EXPLAINERS = {
    ("balance", "balance"): _balance_text,
    ("capacity", "fairness_cce"): _cce_text,
    ("distribution", "wd"): _distance_text,
    ("distribution", "ed"): _distance_text,
}
_DATA_EXPLAINERS = {("proxy", "max_proxy_association"): _proxy_text}


def _too_small_text(r: Mapping[str, Any], ctx: Context) -> str:
    small = (r.get("detail") or {}).get("too_small") or {}
    groups = [str(g) for g in small.get("groups") or ()]
    if not groups:
        return ""
    mc = small.get("min_cell") or ctx.min_cell
    rows = small.get("rows")
    who = f" ({_int(rows)} people)" if isinstance(rows, int) else ""
    unknown = [str(g) for g in small.get("unreleased") or ()]
    below = [g for g in groups if g not in set(unknown)]
    parts = [f"fewer than {mc} people each): {_first(below)}"] if below else []
    if unknown:
        why = small.get("unreleased_reason") or "cells below the private release threshold"
        parts.append(f"{why}, so their counts are unknown, not zero): {_first(unknown)}")
    return f" Left out as too small to judge ({'; ('.join(parts)}{who}."


_LISTED = 10
"""Groups named in a sentence; the rest are counted (all of them are in the JSON's
``detail.too_small``): an intersection can leave thousands out."""


def _first(groups: list[str]) -> str:
    if len(groups) <= _LISTED:
        return ", ".join(map(_q, groups))
    return (f"{', '.join(map(_q, groups[:_LISTED]))} and {len(groups) - _LISTED:,} more "
            "(all in the JSON: detail.too_small)")


def explain_result(
    result: Mapping[str, Any], doc: Mapping[str, Any], spec: MetricSpec | None = None
) -> str:
    """The plain-word sentence(s) for one result of ``doc`` (its own numbers only)."""
    return sentence(result, context(doc), spec)


def sentence(r: Mapping[str, Any], ctx: Context, spec: MetricSpec | None) -> str:
    metric = r["metric"]
    value = _finite(r.get("value"))
    if value is None:
        notes = join_clauses(r.get("notes") or ())
        return (f"{metric} is undefined here" + (f" ({notes})" if notes else "") + "."
                + _too_small_text(r, ctx))
    fn = _EXPLAINERS.get((r.get("auditor"), metric))
    t = ctx.table(str(r.get("labelling")), r.get("attribute"))
    text = None
    if fn is not None and t is not None:
        try:
            text = fn(r, t, ctx)
        except (ArithmeticError, ValueError, IndexError, TypeError, KeyError):
            text = None  # a document this code does not understand: say less, never wrong
    data_fn = _DATA_EXPLAINERS.get((r.get("auditor"), metric))
    if text is None and data_fn is not None:
        try:
            text = data_fn(r, t, ctx)
        except (ArithmeticError, ValueError, IndexError, TypeError, KeyError, AttributeError):
            text = None
    if text is None:
        text = _generic_text(r, spec, ctx)
    return text + _bias_text(r) + _too_small_text(r, ctx)


def _bias_text(r: Mapping[str, Any]) -> str:
    """The bias of a minimum over noisy ratios (``detail.bias``, docs/json.md), said when the
    plug-in is likely well below the population value."""
    bias = (r.get("detail") or {}).get("bias") or {}
    mu, cells = _finite(bias.get("corrected")), bias.get("cells")
    if not bias.get("likely_below") or mu is None or not isinstance(cells, int) or cells < 1:
        return ""
    people = _finite(bias.get("people"))
    if cells > 1:
        what = f"the smallest of {cells:,} ratios" + (
            f", its group's from about {people:,.0f} people each" if people is not None else "")
    else:
        what = "one ratio" + (f" from about {people:,.0f} people" if people is not None else "")
    return (f" {capitalize(what)}: likely below the true {r['metric']} "
            f"(bias-corrected {value_text(mu)}).")


# ============================================================================ the deciding cell
_q = quoted


def _named(r: Mapping[str, Any], t: Table, end: str) -> tuple[int | None, int | None]:
    """(cluster index, group index) of the cell the interval method names for ``end``
    (``detail.interval.{end}_set_by``), or (None, None)."""
    named = ((r.get("detail") or {}).get("interval") or {}).get(f"{end}_set_by") or {}
    if str(named.get("group")) in t.groups and named.get("cluster") in t.clusters:
        return t.clusters.index(named["cluster"]), t.groups.index(str(named["group"]))
    return None, None


def deciding(r: Mapping[str, Any], ctx: Context, end: str | None = None
             ) -> dict[str, Any] | None:
    """The one cell that sets a headline result, for the answer-first summary: ``{"cluster",
    "cluster_name", "group", "count", "group_total", "expected", "text"}``, ``text`` a clause a
    manager can read (``“premium” holds 11 of the 37 “Other” people, 3.3 expected``). ``end``
    ("lower" / "upper"): the cell that sets that end of the interval when the interval method
    names one — what decides a verdict of fair (lower end above the bound) or unfair (upper end
    below it) — else the cell that sets the value. None when the result has no such cell."""
    value = _finite(r.get("value"))
    t = ctx.table(str(r.get("labelling")), r.get("attribute"))
    if value is None or t is None:
        return None
    key = (r.get("auditor"), r.get("metric"))
    try:
        if key in (("balance", "balance"), ("capacity", "fairness_cce")):
            k, g = _named(r, t, end) if end else (None, None)
            cells = (balance_cells if key[0] == "balance" else cce_cells)(t, excluded(r))
            _, vk, vg = _setting_cell(cells, value, r, t)  # the cell that sets the value
            if k is None or g is None:
                k, g = vk, vg
            if k is None or g is None:
                return None
            if key[0] == "balance":
                ref = t.expected(g, k)
            else:
                tot = t.group_total(g)
                ref = None if tot is None else tot / t.c
            count = t.counts[g][k]
            total = t.group_total(g)
            of = f"the {_int(total)} {_q(t.groups[g])} people" if total is not None else (
                f"the {_q(t.groups[g])} people")
            text = f"{t.cluster_name(k)} holds {t.count_text(g, k)} of {of}"
            if ref is not None:
                text += (f", {_about(ref)} expected" if key[0] == "balance"
                         else f", {_about(ref)} in an even split")
            ci = r.get("ci")
            if end and ci and _finite(ci[0 if end == "lower" else 1]) is not None and ref:
                # the cell that sets this end of the interval: its own ratio and that end
                own = 0.0 if count == 0 else min(count / ref, ref / count)
                bound = float(ci[0 if end == "lower" else 1])
                text += (f" (ratio {own:.2f}; {'at least' if end == 'lower' else 'at most'} "
                         f"{bound:.2f} at {ctx.level_text})")
                if vk is not None and vg is not None and (vk, vg) != (k, g):
                    # the value beside this clause comes from another cell: name it, so the
                    # number and the sentence next to it are never read as one cell's
                    text += (f"; the value {value:.3f} is set by {t.cluster_name(vk)} "
                             f"({t.count_text(vg, vk)} of the {_int(t.group_total(vg))} "
                             f"{_q(t.groups[vg])} people)")
        elif key in (("distribution", "wd"), ("distribution", "ed")):
            rows = [(t.clusters.index(row["cluster"]), float(row["value"]))
                    for row in r.get("per_cluster") or ()
                    if _finite(row.get("value")) is not None and row.get("cluster") in t.clusters]
            if not rows or value <= 1e-12:
                return None
            k = max(rows, key=lambda x: (x[1] * (t.sizes[x[0]] or 0), -x[0]))[0]
            gaps = [(gi, t.shares[gi][k] - t.pop[gi])  # type: ignore[operator]
                    for gi in range(len(t.groups))
                    if t.shares[gi][k] is not None and t.pop[gi] is not None]
            if not gaps:
                return None
            g = max(gaps, key=lambda x: (abs(x[1]), -x[0]))[0]
            count, total, ref = t.counts[g][k], t.group_total(g), t.expected(g, k)
            text = (f"{t.cluster_name(k)} holds {t.count_text(g, k)} {_q(t.groups[g])} people"
                    + (f", {_about(ref)} expected" if ref is not None else "")
                    + f" (most out of line of {t.c} {plural(t.unit, t.c)})")
        else:
            return None
    except (ArithmeticError, ValueError, IndexError, TypeError, KeyError):
        return None  # a document this code does not understand: say nothing rather than wrong
    if ctx.noise_sd is not None:  # a release's counts are noisy: never quoted as exact
        text += f" (published counts, noise sd {ctx.noise_sd:.1f} per cell)"
    return {
        "cluster": t.clusters[k],
        "cluster_name": t.names[t.clusters[k]] if t.names and isinstance(t.clusters[k], int)
        and 0 <= t.clusters[k] < len(t.names) else None,
        "group": t.groups[g],
        "count": count,
        "group_total": total,
        "expected": None if ref is None else float(ref),
        "text": text,
    }
