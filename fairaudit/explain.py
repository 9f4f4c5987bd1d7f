"""Every headline explained: a plain-word sentence per headline result, a verdict per attribute
and a glossary of the metrics, added to the audit JSON.

:func:`explain` runs on the finished document, after disclosure control, so it reads only
published numbers: a suppressed count is ``null`` and is written as "fewer than {min_cell}";
no hidden count is ever derived (a group's total is named only when every cell of its row is
published). It adds

* ``results[i].explanation`` (headline results): which cluster and group set the value, observed
  against expected count, and what sets the conservative end of the interval;
* ``verdicts``: one per clustering labelling and attribute, ``fair`` / ``borderline`` /
  ``unfair`` / ``too little data``, with the rule and the per-metric reasons;
* ``glossary``: what each reported metric measures, its range, a good value and how to choose a
  threshold, from the metrics' :class:`~fairaudit.components.MetricSpec` records (plugins supply
  theirs through the same fields).

The verdict rule and its bounds are documented in ``docs/metrics.md`` ("Verdicts").
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from fairaudit.components import MetricSpec

__all__ = [
    "MAX_CI_WIDTH",
    "VERDICTS",
    "explain",
    "explain_result",
    "glossary",
    "metric_specs",
    "verdict_rule",
    "verdicts",
]

VERDICTS = ("fair", "borderline", "unfair", "too little data")
MAX_CI_WIDTH = 0.5
"""An interval wider than this share of the metric's range (or than this, for metrics without
a finite range) says too little to judge: the verdict is ``too little data``."""
DATA_LABELLING = "(data)"
_REL = 1e-9

SpecKey = tuple[str, str]


# ============================================================================ specs
def metric_specs(registry: Any) -> dict[SpecKey, MetricSpec]:
    """``{(auditor, metric): MetricSpec}`` of every auditor in ``registry``."""
    out: dict[SpecKey, MetricSpec] = {}
    for name in registry.names("auditor"):
        cls = registry.get("auditor", name).cls
        for m in getattr(cls, "metrics", ()) or ():
            out[(cls.name, m.name)] = m
    return out


def specs_from_classes(classes: Iterable[type]) -> dict[SpecKey, MetricSpec]:
    """``{(auditor, metric): MetricSpec}`` of the given auditor classes."""
    return {(c.name, m.name): m for c in classes for m in getattr(c, "metrics", ()) or ()}


# ============================================================================ formatting
def _int(x: float | int) -> str:
    return f"{int(round(x)):,}"


def _about(x: float) -> str:
    """An expected count: one decimal below 100, whole numbers above."""
    return f"{x:,.1f}" if x < 100 else _int(x)


def _v(x: float | None) -> str:
    if x is None:
        return "undefined"
    return f"{0.0 if abs(x) < 5e-13 else x:.3f}"


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _finite(x: Any) -> float | None:
    if x is None or isinstance(x, bool):
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= _REL * max(1.0, abs(a), abs(b))


# ============================================================================ published table
@dataclass(frozen=True)
class _Table:
    """The published composition of one labelling x attribute (``None`` = suppressed)."""

    unit: str  # "cluster" or the labels column's name
    groups: tuple[str, ...]
    clusters: tuple[Any, ...]
    counts: tuple[tuple[int | None, ...], ...]  # groups x clusters
    pop: tuple[float | None, ...]  # group share among non-noise rows
    shares: tuple[tuple[float | None, ...], ...]  # share of the group within each cluster
    sizes: tuple[int | None, ...]  # cluster sizes (non-noise)
    noise: tuple[int | None, ...]
    min_cell: int

    def cluster_name(self, k: int) -> str:
        return f"{self.unit} {self.clusters[k]}"

    def size_text(self, k: int) -> str:
        n = self.sizes[k]
        return f"{_int(n)} rows" if n is not None else f"fewer than {self.min_cell} rows"

    def count_text(self, g: int, k: int) -> str:
        n = self.counts[g][k]
        return _int(n) if n is not None else f"fewer than {self.min_cell}"

    def group_total(self, g: int) -> int | None:
        """The group's size among the labelling's rows, only when every cell of its row (and
        its noise count) is published: never a sum that would reveal a suppressed cell."""
        row = self.counts[g]
        if any(c is None for c in row):
            return None
        noise = self.noise[g] if g < len(self.noise) else 0
        if noise is None:
            return None
        return int(sum(row))  # non-noise rows: the metrics' |g|

    def people(self, g: int, *, article: bool = True) -> str:
        """``the 311 Amer-Indian-Eskimo people`` (or without the count when it is not published)."""
        tot = self.group_total(g)
        name = self.groups[g]
        if tot is None:
            return f"the {name} people" if article else f"{name} people"
        return f"the {_int(tot)} {name} people" if article else f"{_int(tot)} {name} people"

    def expected(self, g: int, k: int) -> float | None:
        """Rows of group g expected in cluster k if it had the population's mix."""
        n, r = self.sizes[k], self.pop[g]
        if n is None or r is None:
            return None
        return n * r

    @property
    def c(self) -> int:
        return len(self.clusters)


def _table(lab: Mapping[str, Any], attribute: str, min_cell: int) -> _Table | None:
    comp = (lab.get("composition") or {}).get(attribute)
    if not comp:
        return None
    groups = tuple(str(g) for g in comp.get("groups") or ())
    clusters = tuple(comp.get("clusters") or ())
    if not groups or not clusters:
        return None
    counts = tuple(
        tuple(None if v is None else int(v) for v in row) for row in comp.get("counts") or ()
    )
    shares = tuple(tuple(_finite(v) for v in row) for row in comp.get("cluster_share") or ())
    if len(counts) != len(groups) or any(len(r) != len(clusters) for r in counts):
        return None
    if len(shares) != len(groups):
        shares = tuple((None,) * len(clusters) for _ in groups)
    size_of = {s.get("cluster"): s.get("n") for s in lab.get("cluster_sizes") or ()}
    sizes: list[int | None] = []
    for k, cl in enumerate(clusters):
        col = [counts[g][k] for g in range(len(groups))]
        if cl in size_of:
            n = size_of[cl]
            sizes.append(None if n is None else int(n))
        else:
            sizes.append(None if any(v is None for v in col) else int(sum(col)))
    unit = "cluster"
    if lab.get("origin") == "column":
        unit = str(lab.get("column") or lab.get("name") or "cluster")
    return _Table(
        unit=unit,
        groups=groups,
        clusters=clusters,
        counts=counts,
        pop=tuple(_finite(p) for p in comp.get("population_share") or ()),
        shares=shares,
        sizes=tuple(sizes),
        noise=tuple(comp.get("noise") or (0,) * len(groups)),
        min_cell=min_cell,
    )


# ============================================================================ document context
@dataclass(frozen=True)
class _Context:
    min_cell: int
    ci_level: float
    labellings: Mapping[str, Mapping[str, Any]]

    @property
    def z(self) -> float:
        level = self.ci_level if 0 < self.ci_level < 1 else 0.95
        return NormalDist().inv_cdf((1 + level) / 2)

    @property
    def level_text(self) -> str:
        return f"{self.ci_level * 100:g}%"

    def table(self, labelling: str, attribute: str | None) -> _Table | None:
        lab = self.labellings.get(labelling)
        if lab is None or attribute is None:
            return None
        return _table(lab, attribute, self.min_cell)


def _context(doc: Mapping[str, Any]) -> _Context:
    options = ((doc.get("chain") or {}).get("options") or {})
    mc = options.get("min_cell")
    level = _finite(options.get("ci_level")) or 0.95
    return _Context(
        min_cell=int(mc) if isinstance(mc, int) and mc > 0 else 10,
        ci_level=level,
        labellings={str(lab.get("name")): lab for lab in doc.get("labellings") or ()},
    )


# ============================================================================ ratio cells
@dataclass(frozen=True)
class _Cell:
    g: int
    k: int
    count: int | None  # None = suppressed (0 < count < min_cell)
    reference: float  # balance: expected count; fairness_cce: |g| / c
    published: bool = True  # False: ``reference`` would reveal a suppressed count (rank only)

    def value(self) -> float | None:
        if self.count is None:
            return None
        if self.count == 0:
            return 0.0
        q = self.count / self.reference
        return min(q, 1.0 / q)

    def approx_lower(self, z: float, min_cell: int) -> float:
        """A normal-approximation lower end of this cell's ratio (count ± z·sqrt(count)); for a
        suppressed count, the lowest over the counts it may hold (1 .. min_cell - 1)."""
        counts = [self.count] if self.count is not None else list(range(1, max(min_cell, 2)))
        out = math.inf
        for n in counts:
            if n == 0:
                return 0.0
            sd = math.sqrt(n)
            lo = min(max(0.0, n - z * sd) / self.reference, self.reference / (n + z * sd))
            out = min(out, lo)
        return out


def _excluded(result: Mapping[str, Any]) -> set[str]:
    small = (result.get("detail") or {}).get("too_small") or {}
    return {str(g) for g in small.get("groups") or ()}


def _balance_cells(t: _Table, skip: set[str]) -> list[_Cell]:
    cells = []
    for g, name in enumerate(t.groups):
        if name in skip:
            continue
        for k in range(t.c):
            e = t.expected(g, k)
            if e is None or e <= 0:
                continue
            cells.append(_Cell(g, k, t.counts[g][k], e))
    return cells


def _cce_cells(t: _Table, skip: set[str]) -> list[_Cell]:
    """Cells with reference |g| / c. When a group's row has a suppressed cell its total is not
    published: the reference then comes from its population share, is used to rank cells only
    and is never written out."""
    cells = []
    n = None if any(s is None for s in t.sizes) else sum(t.sizes)  # type: ignore[arg-type]
    for g, name in enumerate(t.groups):
        if name in skip:
            continue
        tot: float | None = t.group_total(g)
        published = tot is not None
        if tot is None and n is not None and t.pop[g] is not None:
            tot = t.pop[g] * n
        if not tot:
            continue
        for k in range(t.c):
            cells.append(_Cell(g, k, t.counts[g][k], tot / t.c, published))
    return cells


def _setting_cell(
    cells: Sequence[_Cell], value: float, result: Mapping[str, Any], t: _Table
) -> tuple[_Cell | None, int | None, int | None]:
    """The cell whose ratio equals ``value`` (published cells first); else the cluster (and
    group) the per-cluster breakdown names. Returns ``(cell, k, g)``."""
    matches = [
        c for c in cells
        if (c.published or c.count == 0) and c.value() is not None and _close(c.value(), value)
    ]
    if matches:
        best = min(matches, key=lambda c: (-c.reference, c.k, c.g))  # most evidence
        return best, best.k, best.g
    k = g = None
    rows = [r for r in result.get("per_cluster") or () if _finite(r.get("value")) is not None]
    hit = [r for r in rows if _close(float(r["value"]), value)]
    if hit:
        row = hit[0]
        if row.get("cluster") in t.clusters:
            k = t.clusters.index(row.get("cluster"))
        wg = row.get("worst_group")
        if wg is not None and str(wg) in t.groups:
            g = t.groups.index(str(wg))
    if k is not None and g is not None:
        cell = next((c for c in cells if c.k == k and c.g == g), None)
        return cell, k, g
    if k is not None:
        col = [c for c in cells if c.k == k]
        near = [c for c in col if c.value() is not None
                and abs(c.value() - value) <= 1e-3 * max(1.0, value)]
        if len(near) == 1:  # a published count against an unpublished total
            return near[0], k, near[0].g
        hidden = [c for c in col if c.count is None]
        if len(hidden) == 1:  # the only cell of that cluster we cannot see
            return hidden[0], k, hidden[0].g
    return None, k, g


def _limiting_cell(cells: Sequence[_Cell], setting: _Cell | None, ctx: _Context) -> _Cell | None:
    if not cells:
        return None
    return min(
        cells,
        key=lambda c: (
            round(c.approx_lower(ctx.z, ctx.min_cell), 12),
            c is not setting,
            c.reference,
        ),
    )


def _ci_lower_sentence(
    t: _Table, cell: _Cell | None, lo: float, ctx: _Context, *, what: str
) -> str:
    head = f"The lower end of the {ctx.level_text} interval ({_v(lo)})"
    if cell is None:
        return f"{head} reflects sampling noise in the smallest cells."
    ref = cell.reference
    where = t.cluster_name(cell.k)
    expected = f", {what} about {_about(ref)}" if cell.published else ""
    if cell.count == 0:
        return (
            f"{head} is set by {where}, which holds none of {t.people(cell.g)}"
            + (f" ({what} about {_about(ref)})." if cell.published else ".")
        )
    if cell.count is None:
        return (
            f"{head} is set by {t.people(cell.g)} in {where} (fewer than {t.min_cell} there"
            f"{expected}): so few that a resample can lose them all."
        )
    step = 1.0 / ref if ref > 0 else math.inf
    if not cell.published or step < 0.01:
        return (
            f"{head} is set mainly by {t.people(cell.g)} in {where} "
            f"({t.count_text(cell.g, cell.k)} there{expected}): the cell whose own sampling "
            "noise reaches lowest."
        )
    return (
        f"{head} is set by {t.people(cell.g)} in {where} ({t.count_text(cell.g, cell.k)} there"
        f"{expected}): so few that one person more or less moves that ratio by {step:.3f}."
    )


# ============================================================================ per metric
def _balance_text(r: Mapping[str, Any], t: _Table, ctx: _Context) -> str:
    value = _finite(r.get("value"))
    metric = r["metric"]
    cells = _balance_cells(t, _excluded(r))
    cell, k, g = _setting_cell(cells, value, r, t)
    parts = []
    if k is not None and g is not None:
        e = t.expected(g, k)
        exp = f", where about {_about(e)} were expected" if e is not None else ""
        parts.append(
            f"{_cap(t.cluster_name(k))} ({t.size_text(k)}) holds {t.count_text(g, k)} of "
            f"{t.people(g)}{exp} ({metric} {_v(value)})."
        )
        if e is not None and e < 1 and t.counts[g][k] == 0:
            parts.append(
                "With fewer than one person expected there, a count of 0 is what chance "
                "alone often gives."
            )
    elif k is not None:
        parts.append(f"{_cap(t.cluster_name(k))} ({t.size_text(k)}) sets the value "
                     f"({metric} {_v(value)}).")
    else:
        parts.append(f"{metric} is {_v(value)}.")
    ci = r.get("ci")
    if ci and _finite(ci[0]) is not None:
        lim = _limiting_cell(cells, cell, ctx)
        parts.append(_ci_lower_sentence(t, lim, float(ci[0]), ctx, what="expected"))
    return " ".join(parts)


def _cce_text(r: Mapping[str, Any], t: _Table, ctx: _Context) -> str:
    value = _finite(r.get("value"))
    metric = r["metric"]
    skip = _excluded(r)
    cells = _cce_cells(t, skip)
    cell, k, g = _setting_cell(cells, value, r, t)
    parts = []
    if k is not None and g is not None:
        tot = t.group_total(g)
        even = (
            f", where an even split over the {t.c} {t.unit}s would put about "
            f"{_about(tot / t.c)}" if tot else ""
        )
        parts.append(
            f"{_cap(t.cluster_name(k))} ({t.size_text(k)}) holds {t.count_text(g, k)} of "
            f"{t.people(g)}{even} ({metric} {_v(value)})."
        )
    elif k is not None:
        parts.append(f"{_cap(t.cluster_name(k))} ({t.size_text(k)}) sets the value "
                     f"({metric} {_v(value)}).")
    else:
        parts.append(f"{metric} is {_v(value)}.")
    parts.extend(_cce_sizes(t, skip, value))
    ci = r.get("ci")
    if ci and _finite(ci[0]) is not None:
        lim = _limiting_cell(cells, cell, ctx)
        parts.append(_ci_lower_sentence(t, lim, float(ci[0]), ctx, what="an even split gives"))
    return " ".join(parts)


def _cce_sizes(t: _Table, skip: set[str], value: float | None) -> list[str]:
    """How much of fairness_cce is cluster sizes: the value sizes alone would give (every
    cluster with the population's mix) and the value the group mix alone would give (equal
    cluster sizes, each cluster's published group shares)."""
    if any(n is None for n in t.sizes) or t.c < 2:
        return []
    n = sum(t.sizes)
    if n <= 0:
        return []
    by_size = min(min(t.c * s / n, n / (t.c * s)) if s else 0.0 for s in t.sizes)
    ratio = min(t.sizes) / max(t.sizes) if max(t.sizes) else 0.0
    out = [
        f"The {t.unit} sizes alone cap it at {_v(by_size)}, its value if every {t.unit} had the "
        f"population's group mix ({t.unit}s of {_int(min(t.sizes))} to {_int(max(t.sizes))} "
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
                   f"{_v(by_mix)}.")
        if value is not None and by_size < by_mix and by_mix - value >= 0.1:
            out.append(f"So the low value mostly reflects unequal {t.unit} sizes, not the "
                       "group mix.")
    return out


def _distance_text(r: Mapping[str, Any], t: _Table, ctx: _Context) -> str:
    value = _finite(r.get("value"))
    metric = r["metric"]
    name = {"wd": "Wd", "ed": "Ed"}.get(metric, metric)
    rows = []
    for row in r.get("per_cluster") or ():
        v = _finite(row.get("value"))
        if v is None or row.get("cluster") not in t.clusters:
            continue
        rows.append((t.clusters.index(row.get("cluster")), v))
    n = sum(s for s in t.sizes if s is not None)
    if value is not None and value <= 1e-12:
        return f"Every {t.unit} mirrors the population's group mix ({metric} {_v(value)})."
    parts = []
    contrib = [(k, v * t.sizes[k] / n) for k, v in rows if t.sizes[k] is not None and n > 0]
    if contrib:
        k, share = max(contrib, key=lambda x: (x[1], -x[0]))
        own = dict(rows)[k]
        parts.append(
            f"{_cap(t.cluster_name(k))} ({t.size_text(k)}) contributes most: {_v(share)} of the "
            f"size-weighted mean {_v(value)} (its own {name} {_v(own)})."
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
                f"Its group most out of line is {t.groups[g]}: {t.count_text(g, k)} people"
                f"{exp} ({side}-represented by {abs(gap) * 100:.1f} percentage points)."
            )
    else:
        parts.append(f"{metric} is {_v(value)}.")
    ci = r.get("ci")
    if ci and _finite(ci[1]) is not None:
        known = [(s, k) for k, s in enumerate(t.sizes) if s is not None]
        hidden = any(s is None for s in t.sizes)
        head = (
            f"The upper end of the {ctx.level_text} interval ({_v(float(ci[1]))}) reflects "
            f"sampling noise in every cell, which can only add distance"
        )
        if hidden:
            parts.append(f"{head}; the least certain {t.unit}s hold fewer than "
                         f"{ctx.min_cell} rows.")
        elif known:
            s, k = min(known)
            parts.append(
                f"{head}; the least certain is the smallest, {t.cluster_name(k)} ({_int(s)} rows),"
                f" where one person more or less moves its {name} by up to {1 / s:.3f}."
                if s > 0 else f"{head}."
            )
    return " ".join(parts)


def _generic_text(r: Mapping[str, Any], spec: MetricSpec | None, ctx: _Context) -> str:
    value = _finite(r.get("value"))
    metric = r["metric"]
    direction = r.get("direction")
    parts = [f"{metric} is {_v(value)}"
             + (f" on {_int(r['n_rows'])} rows" if isinstance(r.get("n_rows"), int) else "")
             + "."]
    rows = [row for row in r.get("per_cluster") or () if _finite(row.get("value")) is not None]
    if rows:
        pick = min if direction == "higher_is_better" else max
        worst = pick(rows, key=lambda row: float(row["value"]))
        size = worst.get("n")
        size_text = (f"{_int(size)} rows" if isinstance(size, int)
                     else f"fewer than {ctx.min_cell} rows")
        parts.append(
            f"The worst cluster is cluster {worst.get('cluster')} ({size_text}) with "
            f"{_v(float(worst['value']))}."
        )
    ci = r.get("ci")
    if ci and _finite(ci[0]) is not None and _finite(ci[1]) is not None:
        end = "lower" if direction == "higher_is_better" else "upper"
        x = ci[0] if end == "lower" else ci[1]
        parts.append(f"The {ctx.level_text} interval is [{_v(ci[0])}, {_v(ci[1])}]; its {end} "
                     f"end ({_v(x)}) is the conservative one.")
    return " ".join(parts)


def _proxy_text(r: Mapping[str, Any], t: _Table | None, ctx: _Context) -> str | None:
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
        f"{_v(best[1])}{on}): a clustering that uses it can separate the {attr} groups "
        f"without ever seeing {attr}."
    )


_EXPLAINERS = {
    ("balance", "balance"): _balance_text,
    ("capacity", "fairness_cce"): _cce_text,
    ("distribution", "wd"): _distance_text,
    ("distribution", "ed"): _distance_text,
}
_DATA_EXPLAINERS = {("proxy", "max_proxy_association"): _proxy_text}


def _too_small_text(r: Mapping[str, Any], ctx: _Context) -> str:
    small = (r.get("detail") or {}).get("too_small") or {}
    groups = [str(g) for g in small.get("groups") or ()]
    if not groups:
        return ""
    mc = small.get("min_cell") or ctx.min_cell
    rows = small.get("rows")
    who = f" ({_int(rows)} people)" if isinstance(rows, int) else ""
    return (f" Left out as too small to judge (fewer than {mc} people each): "
            f"{', '.join(groups)}{who}.")


def explain_result(
    result: Mapping[str, Any], doc: Mapping[str, Any], spec: MetricSpec | None = None
) -> str:
    """The plain-word sentence(s) for one result of ``doc`` (published numbers only)."""
    return _explain(result, _context(doc), spec)


def _explain(r: Mapping[str, Any], ctx: _Context, spec: MetricSpec | None) -> str:
    metric = r["metric"]
    value = _finite(r.get("value"))
    if value is None:
        notes = "; ".join(str(n) for n in r.get("notes") or ())
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
    return text + _too_small_text(r, ctx)


# ============================================================================ verdicts
def _bound(r: Mapping[str, Any], spec: MetricSpec | None) -> tuple[float | None, str]:
    th = r.get("threshold") or {}
    want = "min" if r.get("direction") == "higher_is_better" else "max"
    tv = _finite(th.get("value"))
    if tv is not None and th.get("bound", "min") == want:
        return tv, "your threshold"
    if spec is not None and spec.verdict_bound is not None:
        return float(spec.verdict_bound), "default bound"
    return None, ""


def _span(r: Mapping[str, Any], spec: MetricSpec | None) -> float:
    rng = spec.range if spec is not None else None
    if rng and all(x is not None and math.isfinite(x) for x in rng) and rng[1] > rng[0]:
        return float(rng[1] - rng[0])
    return 1.0


def _metric_verdict(
    r: Mapping[str, Any], spec: MetricSpec | None, n_groups: int
) -> tuple[str, str] | None:
    """``(verdict, reason)`` of one headline result, or ``None`` when it has no bound."""
    bound, source = _bound(r, spec)
    metric = r["metric"]
    if bound is None:
        return None
    higher = r.get("direction") == "higher_is_better"
    op = "\u2265" if higher else "\u2264"
    rule = f"{metric} {op} {bound:g} ({source})"
    value = _finite(r.get("value"))
    if value is None:
        return "too little data", f"{rule}: {metric} is undefined"
    left = _excluded(r)
    if n_groups and n_groups - len(left) < 2:
        return "too little data", f"{rule}: fewer than two groups are large enough to judge"
    ci = r.get("ci")
    lo = _finite(ci[0]) if ci else None
    hi = _finite(ci[1]) if ci else None
    if lo is None or hi is None:
        ok = value >= bound if higher else value <= bound
        return ("fair" if ok else "unfair",
                f"{rule}: value {_v(value)} (no interval: judged on the value alone)")
    shown = f"value {_v(value)}, interval [{_v(lo)}, {_v(hi)}]"
    if hi - lo > MAX_CI_WIDTH * _span(r, spec):
        return "too little data", f"{rule}: {shown} is too wide to judge"
    conservative, other = (lo, hi) if higher else (hi, lo)
    clears = (lambda x: x >= bound) if higher else (lambda x: x <= bound)
    if clears(conservative):
        return "fair", f"{rule}: {shown} clears the bound"
    if not clears(other):
        return "unfair", f"{rule}: {shown} is entirely on the wrong side"
    return "borderline", f"{rule}: {shown} straddles the bound"


def verdict_rule(level: float = 0.95) -> str:
    """The verdict rule in words (stated beside every verdict)."""
    return (
        f"Each headline metric with a bound is judged on its {level * 100:g}% interval: fair "
        "when the interval's conservative end (lower for higher-is-better, upper for "
        "lower-is-better) clears the bound, unfair when the whole interval is on the wrong "
        "side, borderline when it straddles the bound; too little data when the metric is "
        f"undefined, its interval is wider than {MAX_CI_WIDTH:g} of its range, or fewer than two "
        "groups are large enough to judge. The attribute is unfair if any metric is, else too "
        "little data if any metric is, else borderline if any is, else fair. The bound is your "
        "threshold when you set one, else the metric's default bound."
    )


def verdicts(
    doc: Mapping[str, Any], specs: Mapping[SpecKey, MetricSpec] | None = None
) -> list[dict[str, Any]]:
    """One verdict per clustering labelling and attribute with at least one headline metric
    that has a bound (see :func:`verdict_rule`)."""
    specs = specs or {}
    ctx = _context(doc)
    rule = verdict_rule(ctx.ci_level)
    inp = doc.get("input") or {}
    n_groups = {a: len(v or ()) for a, v in (inp.get("groups") or {}).items()}
    keyed: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in doc.get("results") or ():
        if not r.get("headline") or r.get("attribute") is None:
            continue
        if r.get("labelling") == DATA_LABELLING:
            continue
        keyed.setdefault((str(r["labelling"]), str(r["attribute"])), []).append(r)
    out = []
    for (lab, attr), rows in keyed.items():
        judged, skipped = [], []
        for r in rows:
            spec = specs.get((r["auditor"], r["metric"]))
            mv = _metric_verdict(r, spec, n_groups.get(attr, 0))
            if mv is None:
                why = spec.verdict_reason if spec is not None and spec.verdict_reason else (
                    "no verdict bound declared")
                skipped.append(f"{r['metric']} ({why})")
            else:
                judged.append(mv)
        if not judged:
            continue
        found = {v for v, _ in judged}
        for verdict in ("unfair", "too little data", "borderline", "fair"):
            if verdict in found:
                break
        out.append({
            "labelling": lab,
            "attribute": attr,
            "verdict": verdict,
            "rule": rule + ("" if not skipped else " Not judged: " + "; ".join(skipped) + "."),
            "reasons": [f"{v}: {why}" for v, why in judged],
        })
    return out


# ============================================================================ glossary
def _good_default(spec: MetricSpec | None, direction: str | None) -> str:
    higher = direction == "higher_is_better"
    text = "higher is better" if higher else "lower is better"
    rng = spec.range if spec is not None else None
    if rng:
        best = rng[1] if higher else rng[0]
        text += f"; the best possible value is {best:g}"
    return _cap(text) + "."


def _threshold_default(metric: str, direction: str | None) -> str:
    flag = "--fail-under" if direction == "higher_is_better" else "--fail-over"
    return (f"{flag} {metric}=X with X the value at which you would act; add @ci "
            f"({metric}@ci=X) to judge the interval's conservative end.")


def glossary(
    doc: Mapping[str, Any], specs: Mapping[SpecKey, MetricSpec] | None = None
) -> list[dict[str, Any]]:
    """One entry per (auditor, metric) reported in ``doc``: headline metrics first."""
    specs = specs or {}
    seen: dict[SpecKey, Mapping[str, Any]] = {}
    for r in doc.get("results") or ():
        seen.setdefault((str(r["auditor"]), str(r["metric"])), r)
    keys = sorted(seen, key=lambda k: (not seen[k].get("headline"), list(seen).index(k)))
    out = []
    for key in keys:
        r = seen[key]
        spec = specs.get(key)
        direction = spec.direction.value if spec is not None else r.get("direction")
        rng = spec.range if spec is not None else None
        out.append({
            "auditor": key[0],
            "metric": key[1],
            "headline": bool(r.get("headline")),
            "direction": direction,
            "range": None if rng is None else [_finite(rng[0]), _finite(rng[1])],
            "meaning": (spec.meaning or spec.description) if spec is not None else "",
            "good": (spec.good if spec is not None and spec.good
                     else _good_default(spec, direction)),
            "choose_threshold": (spec.choose_threshold if spec is not None
                                 and spec.choose_threshold
                                 else _threshold_default(key[1], direction)),
            "verdict_bound": None if spec is None else _finite(spec.verdict_bound),
            "verdict_reason": "" if spec is None else spec.verdict_reason,
        })
    return out


# ============================================================================ the pass
def explain(
    doc: Mapping[str, Any], specs: Mapping[SpecKey, MetricSpec] | None = None
) -> dict[str, Any]:
    """``doc`` with ``results[i].explanation`` (headline results), ``verdicts`` and
    ``glossary`` added. ``doc`` itself is not changed. Run it on the published (protected)
    document: it reads nothing else."""
    specs = specs or {}
    ctx = _context(doc)
    out = dict(doc)
    results = []
    for r in doc.get("results") or ():
        r = dict(r)
        if r.get("headline"):
            r["explanation"] = _explain(r, ctx, specs.get((r["auditor"], r["metric"])))
        results.append(r)
    out["results"] = results
    out["verdicts"] = verdicts(out, specs)
    out["glossary"] = glossary(out, specs)
    return out
