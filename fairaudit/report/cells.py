"""Which cells of the audit JSON's composition set a headline value: the composition table of a
labelling and attribute (:class:`Table`), the document context the sentences read
(:class:`Context`), and the ratio cells (observed against expected count) behind balance and
the CCE — the numbers :mod:`fairaudit.report.explain_text` puts into words.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np

from fairaudit.report.results import finite
from fairaudit.report.words import (
    _REL,
    _about,
    _close,
    _int,
    _step,
    article,
    cluster_label,
    cluster_labels,
    plural,
    quoted,
    value_text,
)

_finite = finite  # fairaudit.report.results.finite: a float, or None for null/NaN/inf/non-numbers


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
        text = f"{_int(self.group_total(g))} {quoted(self.groups[g])} people"
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
    noise_sd: float | None = None
    """A release's noise standard deviation per released cell (from its public scale), said
    beside every count a sentence quotes; None for the analyst's exact report."""

    @property
    def published_interval_text(self) -> str:
        return ("comes from the released counts alone, calibrated by the parametric bootstrap "
                "of the release (rows drawn again from the released counts, fresh noise of the "
                "release's distribution, the same post-processing): it covers sampling and the "
                "noise")

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
        noise_sd=_noise_sd(doc.get("privacy") or {}),
    )


def _noise_sd(privacy: Mapping[str, Any]) -> float | None:
    """The standard deviation of a release's noise per cell (discrete Laplace of the published
    scale), or None for an exact report."""
    scale = finite(privacy.get("noise_scale"))
    if privacy.get("mode") != "dp" or scale is None or scale <= 0:
        return None
    from fairaudit.metrics.noisy_cells import discrete_laplace_variance

    return math.sqrt(discrete_laplace_variance(scale))


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
                f"from {article(t.unit)} {t.unit} gives 0 whatever the sample.")
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
