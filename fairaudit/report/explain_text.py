"""The sentences of :mod:`fairaudit.report.explain`: for each headline result, the cluster and group
that set its value (observed against expected count) and what sets the conservative end of its
interval, read from the composition of the audit JSON alone (the document's own numbers, so
a sentence never says more than the document it is part of). Formulas and the attribution rule:
``docs/metrics.md`` ("Verdicts and explanations").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np

from fairaudit.core.components import MetricSpec
from fairaudit.report.results import finite
from fairaudit.report.words import cluster_label, cluster_labels, plural

_REL = 1e-9


# ============================================================================ formatting
def _int(x: float | int) -> str:
    return f"{int(round(x)):,}"


def _about(x: float) -> str:
    """An expected count: one decimal below 100, whole numbers above."""
    return f"{x:,.1f}" if x < 100 else _int(x)


def value_text(x: float | None) -> str:
    if x is None:
        return "undefined"
    return f"{0.0 if abs(x) < 5e-13 else x:.3f}"


def _step(x: float) -> str:
    """A small change, never shown as 0.000: three decimals, or two significant digits below
    0.001 (one person in a cluster of 4,000 moves a share by 0.00025)."""
    return f"{x:.3f}" if x >= 0.001 or x == 0 else f"{x:.2g}"


def capitalize(s: str) -> str:
    return s[:1].upper() + s[1:]


_finite = finite  # fairaudit.report.results.finite: a float, or None for null/NaN/inf/non-numbers


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= _REL * max(1.0, abs(a), abs(b))


# ============================================================================ composition table
@dataclass(frozen=True)
class Table:
    """The composition of one labelling x attribute."""

    unit: str  # "cluster" or the labels column's name
    groups: tuple[str, ...]
    clusters: tuple[Any, ...]
    counts: tuple[tuple[int, ...], ...]  # groups x clusters
    pop: tuple[float | None, ...]  # group share among non-noise rows
    shares: tuple[tuple[float | None, ...], ...]  # share of the group within each cluster
    sizes: tuple[int, ...]  # cluster sizes (non-noise)
    n_clustered: int | None = None  # rows in clusters (labelling rows minus noise)
    names: tuple[str, ...] | None = None  # the clusters' own names (a labels column of strings)

    def cluster_name(self, k: int) -> str:
        """``"premium"`` when the labels column names its clusters, else ``cluster 3``."""
        return cluster_label({"cluster_names": self.names}, self.clusters[k], unit=self.unit)

    @property
    def units(self) -> str:
        return plural(self.unit)

    def size_text(self, k: int) -> str:
        return f"{_int(self.sizes[k])} rows"

    def count_text(self, g: int, k: int) -> str:
        return _int(self.counts[g][k])

    def group_total(self, g: int) -> int:
        """The group's size among the labelling's non-noise rows (the metrics' |g|)."""
        return int(sum(self.counts[g]))

    def people(self, g: int, *, article: bool = True) -> str:
        """``the 311 Amer-Indian-Eskimo people``."""
        text = f"{_int(self.group_total(g))} {self.groups[g]} people"
        return "the " + text if article else text

    def expected(self, g: int, k: int) -> float | None:
        """Rows of group g expected in cluster k if it had the population's mix."""
        r = self.pop[g]
        return None if r is None else self.sizes[k] * r

    @property
    def c(self) -> int:
        return len(self.clusters)

    def count_array(self) -> np.ndarray:
        """groups x clusters, float."""
        return np.array(self.counts, dtype=float).reshape(len(self.groups), self.c)


def _table(lab: Mapping[str, Any], attribute: str) -> Table | None:
    comp = (lab.get("composition") or {}).get(attribute)
    if not comp:
        return None
    groups = tuple(str(g) for g in comp.get("groups") or ())
    clusters = tuple(comp.get("clusters") or ())
    if not groups or not clusters:
        return None
    rows = comp.get("counts") or ()
    if any(v is None for row in rows for v in row):
        return None  # an older audit with suppressed cells: the generic sentence
    counts = tuple(tuple(int(v) for v in row) for row in rows)
    shares = tuple(
        tuple(None if v is None else float(v) for v in row) for row in comp.get("cluster_share") or ()
    )
    if len(counts) != len(groups) or any(len(r) != len(clusters) for r in counts):
        return None
    if len(shares) != len(groups):
        shares = tuple((None,) * len(clusters) for _ in groups)
    size_of = {s.get("cluster"): s.get("n") for s in lab.get("cluster_sizes") or ()}
    sizes = [int(size_of.get(cl, sum(row[k] for row in counts)))
             for k, cl in enumerate(clusters)]
    unit = "cluster"
    if lab.get("origin") == "column":
        unit = str(lab.get("column") or lab.get("name") or "cluster")
    return Table(
        unit=unit,
        groups=groups,
        clusters=clusters,
        counts=counts,
        pop=tuple(_finite(p) for p in comp.get("population_share") or ()),
        shares=shares,
        sizes=tuple(sizes),
        n_clustered=(int(lab["n_rows"]) - int(lab.get("n_noise") or 0)
                     if isinstance(lab.get("n_rows"), int) else None),
        names=tuple(cluster_labels(lab) or ()) or None,
    )


# ============================================================================ document context
@dataclass(frozen=True)
class Context:
    min_cell: int
    ci_level: float
    z: float
    labellings: Mapping[str, Mapping[str, Any]]
    tables: dict[tuple[str, str], Table | None] = field(default_factory=dict)
    published: bool = False
    """A published (differentially private) release: intervals come from the parametric
    bootstrap over sampling and noise, never explained by one person's weight in a cell."""

    @property
    def published_interval_text(self) -> str:
        return ("comes from the parametric bootstrap of the release (rows drawn again from the "
                "released counts, fresh noise of the release's distribution, the same "
                "post-processing): it covers sampling and the noise")

    @property
    def level_text(self) -> str:
        return f"{self.ci_level * 100:g}%"

    def table(self, labelling: str, attribute: str | None) -> Table | None:
        lab = self.labellings.get(labelling)
        if lab is None or attribute is None:
            return None
        key = (labelling, attribute)
        if key not in self.tables:  # one parse per labelling x attribute, shared by metrics
            self.tables[key] = _table(lab, attribute)
        return self.tables[key]


def context(doc: Mapping[str, Any]) -> Context:
    options = ((doc.get("chain") or {}).get("options") or {})
    mc = options.get("min_cell")
    level = _finite(options.get("ci_level")) or 0.95
    level = level if 0 < level < 1 else 0.95
    return Context(
        min_cell=int(mc) if isinstance(mc, int) and mc > 0 else 10,
        ci_level=level,
        z=NormalDist().inv_cdf((1 + level) / 2),
        labellings={str(lab.get("name")): lab for lab in doc.get("labellings") or ()},
        published=(doc.get("privacy") or {}).get("mode") == "dp",
    )


# ============================================================================ ratio cells
@dataclass(frozen=True)
class Cell:
    """One group x cluster cell of a ratio metric (balance, fairness_CCE)."""

    g: int
    k: int
    count: int
    reference: float  # balance: expected count; fairness_cce: |g| / c


@dataclass(frozen=True)
class Cells:
    """The candidate cells of a ratio metric as arrays."""

    g: np.ndarray
    k: np.ndarray
    count: np.ndarray
    ref: np.ndarray

    def __len__(self) -> int:
        return int(self.g.size)

    def cell(self, i: int) -> Cell:
        return Cell(int(self.g[i]), int(self.k[i]), int(self.count[i]), float(self.ref[i]))

    def values(self) -> np.ndarray:
        """min(count / ref, ref / count); 0 for a zero count."""
        with np.errstate(divide="ignore", invalid="ignore"):
            q = self.count / self.ref
            v = np.minimum(q, 1.0 / q)
        return np.where(self.count == 0, 0.0, v)

    def approx_lower(self, z: float) -> np.ndarray:
        """A normal-approximation lower end of each cell's ratio, count -/+ z*sqrt(count)."""
        n, r = self.count, self.ref
        with np.errstate(divide="ignore", invalid="ignore"):
            sd = np.sqrt(n)
            lo = np.minimum(np.maximum(0.0, n - z * sd) / r, r / (n + z * sd))
        return np.where(n == 0, 0.0, lo)


def _cells(t: Table, ref: np.ndarray, skip: set[str]) -> Cells:
    keep_g = np.array([name not in skip for name in t.groups], dtype=bool)
    ok = np.isfinite(ref) & (ref > 0) & keep_g[:, None]
    g, k = np.nonzero(ok)
    return Cells(g, k, t.count_array()[g, k], ref[g, k])


def balance_cells(t: Table, skip: set[str]) -> Cells:
    """Reference = expected count |k| * r_g (cluster size x population share)."""
    sizes = np.array(t.sizes, dtype=float)
    pop = np.array([np.nan if p is None else p for p in t.pop], dtype=float)
    return _cells(t, pop[:, None] * sizes[None, :], skip)


def cce_cells(t: Table, skip: set[str]) -> Cells:
    """Reference = |g| / c."""
    tots = np.array([t.group_total(g) for g in range(len(t.groups))], dtype=float)
    return _cells(t, np.repeat((tots / t.c)[:, None], t.c, axis=1), skip)


def excluded(result: Mapping[str, Any]) -> set[str]:
    small = (result.get("detail") or {}).get("too_small") or {}
    return {str(g) for g in small.get("groups") or ()}


def _setting_cell(
    cells: Cells, value: float, result: Mapping[str, Any], t: Table
) -> tuple[Cell | None, int | None, int | None]:
    """The cell whose ratio equals ``value``; else the cluster (and group) the per-cluster
    breakdown names. Returns ``(cell, k, g)``."""
    vals = cells.values()
    with np.errstate(invalid="ignore"):
        match = np.isfinite(vals) & (
            np.abs(vals - value) <= _REL * np.maximum(1.0, np.maximum(np.abs(vals), abs(value)))
        )
    idx = np.nonzero(match)[0]
    if idx.size:
        order = np.lexsort((cells.g[idx], cells.k[idx], -cells.ref[idx]))  # most evidence first
        best = cells.cell(int(idx[order[0]]))
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
        at = np.nonzero((cells.k == k) & (cells.g == g))[0]
        return (cells.cell(int(at[0])) if at.size else None), k, g
    if k is not None:
        col = np.nonzero(cells.k == k)[0]
        with np.errstate(invalid="ignore"):
            near = col[np.abs(vals[col] - value) <= 1e-3 * max(1.0, value)]
        if near.size == 1:
            c = cells.cell(int(near[0]))
            return c, k, c.g
    return None, k, g


def _limiting_cell(
    cells: Cells, setting: Cell | None, ctx: Context, r: Mapping[str, Any], t: Table
) -> Cell | None:
    """The cell that sets the interval's lower end: the one the interval method names
    (``detail.interval.lower_set_by``), else the cell whose own approximate lower end reaches
    lowest (ties: the setting cell, then the smallest reference)."""
    if not len(cells):
        return None
    named = ((r.get("detail") or {}).get("interval") or {}).get("lower_set_by") or {}
    if str(named.get("group")) in t.groups and named.get("cluster") in t.clusters:
        g, k = t.groups.index(str(named["group"])), t.clusters.index(named["cluster"])
        at = np.nonzero((cells.g == g) & (cells.k == k))[0]
        if at.size:
            return cells.cell(int(at[0]))
    lo = np.round(cells.approx_lower(ctx.z), 12)
    not_setting = np.ones(len(cells), dtype=bool)
    if setting is not None:
        not_setting &= ~((cells.g == setting.g) & (cells.k == setting.k))
    order = np.lexsort((cells.ref, not_setting, lo))
    return cells.cell(int(order[0]))


def _ci_lower_sentence(
    t: Table, cell: Cell | None, lo: float, ctx: Context, *, what: str
) -> str:
    head = f"The lower end of the {ctx.level_text} interval ({value_text(lo)})"
    if ctx.published:
        return f"{head} {ctx.published_interval_text}."
    if lo <= 0 and cell is not None and cell.count == 0:
        return (f"The lower end of the {ctx.level_text} interval is 0 as well: a group absent "
                f"from a {t.unit} gives 0 whatever the sample.")
    if cell is None:
        return f"{head} reflects sampling noise in the smallest cells."
    ref = cell.reference
    where = t.cluster_name(cell.k)
    expected = f", {what} about {_about(ref)}"
    if cell.count == 0:
        return (f"{head} is set by {where}, which holds none of {t.people(cell.g)}"
                f" ({what} about {_about(ref)}).")
    said = f"{head} is set by {t.people(cell.g)} in {where} ({t.count_text(cell.g, cell.k)} there"
    if ref <= 0:
        return said + ")."
    step = 1.0 / ref
    if ref < 30:
        return f"{said}{expected}): so few that one person more or less moves that ratio by {_step(step)}."
    return f"{said}{expected}): one person more or less there moves that ratio by {_step(step)}."


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
                f"Its group most out of line is {t.groups[g]}: {t.count_text(g, k)} people"
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
    parts = [f"fewer than {mc} people each): {', '.join(below)}"] if below else []
    if unknown:
        why = small.get("unreleased_reason") or "cells below the private release threshold"
        parts.append(f"{why}, so their counts are unknown, not zero): {', '.join(unknown)}")
    return f" Left out as too small to judge ({'; ('.join(parts)}{who}."


def explain_result(
    result: Mapping[str, Any], doc: Mapping[str, Any], spec: MetricSpec | None = None
) -> str:
    """The plain-word sentence(s) for one result of ``doc`` (its own numbers only)."""
    return sentence(result, context(doc), spec)


def sentence(r: Mapping[str, Any], ctx: Context, spec: MetricSpec | None) -> str:
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




# ============================================================================ the deciding cell
def _q(name: str) -> str:
    return f"\u201c{name}\u201d"


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
            if k is None or g is None:
                cells = (balance_cells if key[0] == "balance" else cce_cells)(t, excluded(r))
                _, k, g = _setting_cell(cells, value, r, t)
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
