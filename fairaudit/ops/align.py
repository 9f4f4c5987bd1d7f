"""Which cluster of one audit is which cluster of another: alignment for ``fairaudit compare``.

An existing segmentation (``labellings[i].origin == "column"`` in both audits, same column) has
names for its labels: segment ``"gold"`` today is segment ``"gold"`` yesterday, so clusters are
matched by name. A clusterer's ids are arbitrary (k-means may call yesterday's cluster 0 today's
cluster 2), so clusters are matched by the best one-to-one assignment (Hungarian method,
:func:`scipy.optimize.linear_sum_assignment`) that maximises the total similarity:

* ``prototype``: when both labellings carry prototypes in ``extras["prototypes"]`` (one vector
  per cluster, same length), similarity = ``1 / (1 + d)`` with ``d`` the Euclidean distance
  between the two prototypes (each run's own preprocessed feature space);
* ``composition`` otherwise (always available): for each attribute, a cluster is the vector of its
  group counts as shares of all audited rows (``labellings[i].composition[attr].counts``; groups
  matched by name; a missing count, as in older audits with suppressed cells, counts as 0).
  Similarity = 1 − half the L1 distance of the two vectors, averaged over the attributes both
  audits have. 1 = the same people mix at the same
  size; 0 = nothing in common. It uses the size and the group mix of a cluster, never row ids.

Unequal numbers of clusters leave some clusters unmatched; they are listed, never forced.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fairaudit.report.values import finite

__all__ = ["Alignment", "align_clusters", "composition_similarity"]

COMPOSITION_RULE = (
    "group composition: 1 - half the L1 distance between the clusters' group counts as shares of "
    "all audited rows, averaged over attributes (missing counts count as 0)"
)
PROTOTYPE_RULE = "prototype distance: 1 / (1 + Euclidean distance between the cluster prototypes)"


@dataclass(frozen=True)
class Alignment:
    """Matched clusters of one labelling in two audits."""

    labelling: str
    method: str  # "name" | "hungarian"
    similarity: str | None  # the rule, for "hungarian"
    pairs: tuple[tuple[Any, Any, float | None], ...]  # (baseline id, current id, similarity)
    unmatched_baseline: tuple[Any, ...] = ()
    unmatched_current: tuple[Any, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    def current_for(self, baseline_cluster: Any) -> Any:
        for b, c, _ in self.pairs:
            if _same(b, baseline_cluster):
                return c
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "labelling": self.labelling,
            "method": self.method,
            "similarity": self.similarity,
            "pairs": [{"baseline": b, "current": c, "similarity": s} for b, c, s in self.pairs],
            "unmatched_baseline": list(self.unmatched_baseline),
            "unmatched_current": list(self.unmatched_current),
            "notes": list(self.notes),
        }


def _same(a: Any, b: Any) -> bool:
    return str(a) == str(b)


def _clusters(lab: Mapping[str, Any]) -> list[Any]:
    sizes = lab.get("cluster_sizes") or []
    out = [r.get("cluster") for r in sizes if r.get("cluster") is not None]
    if out:
        return out
    for comp in (lab.get("composition") or {}).values():
        return list(comp.get("clusters") or [])
    return []


def _shares(comp: Mapping[str, Any], n_total: float) -> dict[Any, dict[str, float]]:
    """cluster -> {group: count / n_total} for one attribute's composition block."""
    groups = [str(g) for g in comp.get("groups") or []]
    clusters = list(comp.get("clusters") or [])
    counts = comp.get("counts") or []
    out: dict[Any, dict[str, float]] = {}
    for j, k in enumerate(clusters):
        col: dict[str, float] = {}
        for i, g in enumerate(groups):
            v = finite(counts[i][j]) if i < len(counts) and j < len(counts[i]) else None
            col[g] = (v or 0.0) / n_total if n_total else 0.0
        out[k] = col
    return out


def _total(comp: Mapping[str, Any]) -> float:
    return float(sum(finite(v) or 0.0 for row in comp.get("counts") or [] for v in row))


def composition_similarity(base: Mapping[str, Any], cur: Mapping[str, Any],
                           b_clusters: Sequence[Any], c_clusters: Sequence[Any]
                           ) -> list[list[float]]:
    """The (baseline clusters x current clusters) similarity matrix by group composition."""
    bcomp, ccomp = base.get("composition") or {}, cur.get("composition") or {}
    attrs = [a for a in bcomp if a in ccomp]
    sim = [[0.0] * len(c_clusters) for _ in b_clusters]
    if not attrs:
        return sim
    for a in attrs:
        bs = _shares(bcomp[a], _total(bcomp[a]))
        cs = _shares(ccomp[a], _total(ccomp[a]))
        for i, bk in enumerate(b_clusters):
            bv = next((v for k, v in bs.items() if _same(k, bk)), {})
            for j, ck in enumerate(c_clusters):
                cv = next((v for k, v in cs.items() if _same(k, ck)), {})
                groups = set(bv) | set(cv)
                l1 = sum(abs(bv.get(g, 0.0) - cv.get(g, 0.0)) for g in groups)
                sim[i][j] += (1.0 - 0.5 * l1) / len(attrs)
    return sim


def _prototype_similarity(base: Mapping[str, Any], cur: Mapping[str, Any], nb: int, nc: int
                          ) -> list[list[float]] | None:
    import numpy as np

    bp = (base.get("extras") or {}).get("prototypes")
    cp = (cur.get("extras") or {}).get("prototypes")
    try:
        b = np.asarray(bp, dtype=float)
        c = np.asarray(cp, dtype=float)
    except (TypeError, ValueError):
        return None
    if bp is None or cp is None or b.ndim != 2 or c.ndim != 2 or b.shape[1] != c.shape[1]:
        return None
    if b.shape[0] != nb or c.shape[0] != nc or not (np.isfinite(b).all() and np.isfinite(c).all()):
        return None
    d = np.sqrt(((b[:, None, :] - c[None, :, :]) ** 2).sum(axis=2))
    return (1.0 / (1.0 + d)).tolist()


def align_clusters(base: Mapping[str, Any], cur: Mapping[str, Any]) -> Alignment:
    """Match the clusters of labelling ``base`` (baseline audit) to those of ``cur``."""
    name = str(cur.get("name"))
    b_clusters, c_clusters = _clusters(base), _clusters(cur)
    by_name = (base.get("origin") == "column" and cur.get("origin") == "column"
               and base.get("column") == cur.get("column"))
    if by_name:
        c_keys = {str(c): c for c in c_clusters}
        pairs = tuple((b, c_keys[str(b)], None) for b in b_clusters if str(b) in c_keys)
        matched = {str(b) for b, _, _ in pairs}
        return Alignment(
            labelling=name, method="name", similarity=None, pairs=pairs,
            unmatched_baseline=tuple(b for b in b_clusters if str(b) not in matched),
            unmatched_current=tuple(c for c in c_clusters if str(c) not in matched),
        )
    from scipy.optimize import linear_sum_assignment

    sim = _prototype_similarity(base, cur, len(b_clusters), len(c_clusters))
    rule = PROTOTYPE_RULE
    if sim is None:
        sim = composition_similarity(base, cur, b_clusters, c_clusters)
        rule = COMPOSITION_RULE
    notes: list[str] = []
    if not b_clusters or not c_clusters:
        return Alignment(name, "hungarian", rule, (), tuple(b_clusters), tuple(c_clusters))
    import numpy as np

    s = np.asarray(sim, dtype=float)
    rows, cols = linear_sum_assignment(-s)
    pairs = tuple(
        (b_clusters[i], c_clusters[j], round(float(s[i, j]), 6))
        for i, j in sorted(zip(rows.tolist(), cols.tolist(), strict=True))
    )
    weak = [f"{b}->{c}" for b, c, v in pairs if v is not None and v < 0.5]
    if weak:
        notes.append("weak matches (similarity < 0.5), read their changes with care: "
                     + ", ".join(weak))
    if len(b_clusters) != len(c_clusters):
        notes.append(f"the baseline has {len(b_clusters)} clusters and the current run "
                     f"{len(c_clusters)}: some clusters have no counterpart")
    mb, mc = set(rows.tolist()), set(cols.tolist())
    return Alignment(
        labelling=name, method="hungarian", similarity=rule, pairs=pairs,
        unmatched_baseline=tuple(k for i, k in enumerate(b_clusters) if i not in mb),
        unmatched_current=tuple(k for j, k in enumerate(c_clusters) if j not in mc),
        notes=tuple(notes),
    )
