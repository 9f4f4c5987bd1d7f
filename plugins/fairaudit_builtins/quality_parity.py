"""Built-in ``quality_parity`` auditor: does the clustering fit one group worse than another?

Per sensitive attribute and their intersection, on the clusterers' feature matrix (after
preprocessing), noise rows (label -1) left out:

- ``silhouette_gap``: mean silhouette per group, largest minus smallest (exact below
  ``max_rows`` non-noise rows, default 20,000; above, on a seeded sample of that many rows, stated
  in the notes);
- ``cost_ratio``: mean distance to the row's own cluster centre per group, largest over smallest
  (centres: the clusterer's prototypes when it has them, else the cluster means; every non-noise
  row).

Each with a percentile-bootstrap interval (rows resampled within each group, per-row values held
fixed) and a sentence naming the worse-served group. Formulas and references: ``docs/metrics.md``
("Quality parity"); the algorithms: :mod:`fairaudit.metrics.group_quality`. Not among the
default auditors (the silhouette is quadratic in the rows): ``--audit quality_parity``,
``[[audit]] use = "quality_parity"`` or ``fairaudit.audit(..., audit=["quality_parity"])``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fairaudit.core.components import (
    AnyOf,
    AuditContext,
    Auditor,
    Direction,
    Interval,
    MetricSpec,
    Options,
)
from fairaudit.core.data import INTERSECTION_SEP, sample_rows
from fairaudit.hookspecs import hookimpl
from fairaudit.report.results import MetricResult, finite
from fairaudit_builtins.quality import _features

LOWER = Direction.LOWER_IS_BETTER
_OUT_OF_VERDICT = "a quality-parity metric with no settled bound: set a threshold from a run you trust"


class QualityParityAuditor(Auditor):
    """Silhouette gap and cost ratio between the groups of each sensitive attribute."""

    name = "quality_parity"
    description = (
        "Clustering quality per group: the gap in mean silhouette and the ratio of mean distance "
        "to the own cluster centre between the best- and worst-served group of each attribute."
    )
    requires = frozenset({"labels", "features", "sensitive"})
    metrics = (
        MetricSpec(
            "silhouette_gap", LOWER,
            "largest minus smallest per-group mean silhouette (Euclidean, non-noise rows)",
            range=(0.0, 2.0), headline=True, bootstrap=False,
            meaning="How much better the clusters fit one group than another: the difference "
            "between the groups' mean silhouettes (how much closer a row is to its own cluster "
            "than to the next one).",
            good="0 = every group is clustered equally well; a gap of 0.1 is a tenth of the "
            "silhouette's useful range (0 to 1).",
            choose_threshold="--fail-over silhouette_gap=0.1 flags a segmentation that fits one "
            "group clearly worse; set it from a run you trust.",
            verdict_bound=None, verdict_reason=_OUT_OF_VERDICT,
        ),
        MetricSpec(
            "cost_ratio", LOWER,
            "largest over smallest per-group mean distance to the own cluster centre",
            range=None, bootstrap=False,
            meaning="How much farther one group's members are from the centre of their cluster "
            "than another group's: the segment describes them less well (socially fair "
            "clustering's cost ratio).",
            good="1 = equal cost for every group; 1.2 = one group is 20 % farther from its "
            "centres on average.",
            choose_threshold="--fail-over cost_ratio=1.25; set it from a run you trust.",
            verdict_bound=None, verdict_reason=_OUT_OF_VERDICT,
        ),
    )
    constraints = {
        "max_rows": AnyOf((Interval(int, 100, None), Options((None,)))),
        "centres": Options(("auto", "means")),
        "squared": Options((False, True)),
        "min_group": Interval(int, 2, None),
        "n_bootstrap": Interval(int, 0, None),
        "confidence": Interval(float, 0.5, 1.0, closed="neither"),
    }
    param_docs = {
        "max_rows": "silhouette exact up to this many non-noise rows; above, on a seeded sample "
        "of this many (None = always exact: quadratic cost)",
        "centres": "'auto': the clusterer's prototypes when it provides them, else cluster "
        "means; 'means': always cluster means",
        "squared": "cost = squared distance (the k-means cost of socially fair clustering) "
        "instead of the distance",
        "min_group": "groups with fewer non-noise rows are left out (named in the notes)",
        "n_bootstrap": "bootstrap replicates for the intervals (0 = no interval)",
        "confidence": "level of the bootstrap intervals",
        "random_state": "seed of the row sample and the bootstrap (filled from the chain seed "
        "when unset)",
    }

    def __init__(
        self,
        *,
        max_rows: int | None = 20_000,
        centres: str = "auto",
        squared: bool = False,
        min_group: int = 20,
        n_bootstrap: int = 200,
        confidence: float = 0.95,
        random_state: int | None = None,
    ) -> None:
        self.max_rows = max_rows
        self.centres = centres
        self.squared = squared
        self.min_group = min_group
        self.n_bootstrap = n_bootstrap
        self.confidence = confidence
        self.random_state = random_state

    def audit(self, ctx: AuditContext) -> list[MetricResult]:
        from fairaudit.metrics.group_quality import centre_distances, silhouette_by_row

        data = ctx.data
        if data is None:
            return []
        labels = np.asarray(ctx.labelling.labels, dtype=np.int64)
        attributes = _attributes(data.sensitive_codes())
        X, _, skipped = _features(data)
        notes: list[str] = []
        if skipped:
            notes.append("Left out of the feature matrix (not numeric or not finite): "
                         + ", ".join(skipped) + ".")
        clean = np.flatnonzero(labels >= 0)
        if clean.size < labels.size:
            notes.append(f"{labels.size - clean.size:,} noise rows (label -1) left out.")
        if X is None or clean.size == 0:
            notes.append("No usable feature column or no clustered row: undefined."
                         if X is None else "Every row is noise: undefined.")
            return [self._nan(ctx, m.name, a, notes) for a, _, _ in attributes
                    for m in self.metrics]
        seed = self.random_state if self.random_state is not None else ctx.random_state
        lab = labels[clean]
        # silhouette: exact, or on a seeded sample of the non-noise rows
        sil_rows = clean[sample_rows(clean.size, self.max_rows, seed)]
        sil_notes = list(notes)
        if sil_rows.size < clean.size:
            sil_notes.append(
                f"Silhouette on a seeded sample of {sil_rows.size:,} of {clean.size:,} non-noise "
                f"rows (seed {seed}); exact up to {self.max_rows:,} rows.")
        sil = silhouette_by_row(X[sil_rows], labels[sil_rows])
        if not np.isfinite(sil).any():
            sil_notes.append("The silhouette is undefined: fewer than 2 clusters among the rows "
                             "used, or every row its own cluster.")
        # cost: every non-noise row, to its cluster's centre
        centres, source = self._centres(ctx, X[clean], lab, notes)
        cost = centre_distances(X[clean], lab, centres, squared=bool(self.squared))
        cost_notes = [*notes, f"Centres: {source}; cost = "
                      + ("squared distance." if self.squared else "Euclidean distance.")]
        out: list[MetricResult] = []
        boot = {"n_bootstrap": int(self.n_bootstrap), "confidence": float(self.confidence),
                "method": "percentile bootstrap, rows resampled within each group, per-row "
                "values held fixed"}
        for attr, codes, names in attributes:
            out.append(self._metric(
                ctx, "silhouette_gap", attr, sil, codes[sil_rows], names, "difference", True,
                seed, sil_notes, {"rows_used": int(sil_rows.size),
                                  "exact": bool(sil_rows.size == clean.size),
                                  "distance": "euclidean", **boot}, "mean silhouette"))
            out.append(self._metric(
                ctx, "cost_ratio", attr, cost, codes[clean], names, "ratio", False, seed,
                cost_notes, {"rows_used": int(clean.size), "centres": source,
                             "squared": bool(self.squared), **boot},
                "mean squared distance to the own centre" if self.squared
                else "mean distance to the own centre"))
        return out

    def _centres(self, ctx: AuditContext, X: np.ndarray, lab: np.ndarray,
                 notes: list[str]) -> tuple[np.ndarray, str]:
        from fairaudit.metrics.group_quality import cluster_means

        P = ctx.labelling.prototypes
        if self.centres == "auto" and P is not None:
            P = np.asarray(P, dtype=np.float64)
            if P.ndim == 2 and P.shape[1] == X.shape[1] and lab.max() < P.shape[0]:
                return P, "the clusterer's prototypes"
            notes.append("The clusterer's prototypes do not match the feature matrix; cluster "
                         "means used instead.")
        return cluster_means(X, lab), "cluster means"

    def _metric(self, ctx: AuditContext, metric: str, attribute: str, values: np.ndarray,
                codes: np.ndarray, names: tuple[str, ...], kind: str, higher_is_better: bool,
                seed: int, notes: list[str], detail: dict[str, Any],
                what: str) -> MetricResult:
        from fairaudit.metrics.group_quality import group_gap

        g = group_gap(values, codes, names, kind=kind, higher_is_better=higher_is_better,
                      min_group=int(self.min_group), n_bootstrap=int(self.n_bootstrap),
                      confidence=float(self.confidence), seed=seed)
        own = list(notes) + list(g.notes)
        if g.left_out:
            own.append(f"Left out of {attribute!r} (fewer than {self.min_group} rows): "
                       + ", ".join(g.left_out) + ".")
        if g.worst is not None and g.best is not None and np.isfinite(g.value):
            by = dict(zip(g.groups, g.means, strict=True))
            spread = (f"{g.value:.3f} lower" if kind == "difference"
                      else f"{g.value:.2f} times as high")
            own.insert(0, f"Worse served: {g.worst!r} of {attribute!r} — {what} "
                          f"{by[g.worst]:.3f}, against {by[g.best]:.3f} for {g.best!r} "
                          f"({spread}).")
        detail = {
            **detail,
            "groups": [{"group": n, "n": s, "mean": finite(m)}
                       for n, s, m in zip(g.groups, g.sizes, g.means, strict=True)],
            "worst_group": g.worst, "best_group": g.best, "left_out": list(g.left_out),
        }
        return MetricResult(
            auditor=self.name, metric=metric, labelling=ctx.labelling.name,
            value=float(g.value), direction=LOWER, attribute=attribute, ci=g.ci,
            n_rows=int(sum(g.sizes)), notes=tuple(own), headline=metric == "silhouette_gap",
            detail=detail,
        )

    def _nan(self, ctx: AuditContext, metric: str, attribute: str,
             notes: list[str]) -> MetricResult:
        return MetricResult(
            auditor=self.name, metric=metric, labelling=ctx.labelling.name, value=float("nan"),
            direction=LOWER, attribute=attribute, n_rows=0, notes=tuple(notes),
            headline=metric == "silhouette_gap",
        )


def _attributes(codes: Any) -> list[tuple[str, np.ndarray, tuple[str, ...]]]:
    """(attribute, codes per row, group names) for each sensitive attribute, then the
    intersection when there are several."""
    out = [(name, codes.codes[:, j], tuple(codes.categories[j]))
           for j, name in enumerate(codes.names)]
    if len(codes.names) > 1:
        inter, names = codes.intersection()
        out.append((INTERSECTION_SEP.join(codes.names), inter, tuple(names)))
    return out


@hookimpl
def fairaudit_register_auditors() -> list[type]:
    return [QualityParityAuditor]
