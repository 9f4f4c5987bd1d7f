"""Built-in ``fairden`` clusterer (FairDen, seed 000) and ``dcsi`` auditor (issue 3).

Thin adapters over ``fairaudit.cluster.FairDen`` and ``fairaudit.metrics.dcsi``:

- ``fairden`` clusters on the *raw* numeric feature columns (z-scored here, as the FairDen
  experiments do) and uses the raw categorical feature columns itself through the Goodall1
  similarity (eq. 15); the sensitive attributes are the fairness constraint (their intersection
  is balanced), never features. ``extras_`` carries what a density report section needs: a
  seeded 2-D projection sample with labels (noise = −1), the rows excluded for small groups,
  min_pts, the solver and the k tried by the noise rule.
- ``dcsi``: DCSI (headline, noise excluded) and its noise-adjusted value, with per-pair detail.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fairaudit.core.components import (
    AnyOf,
    AuditContext,
    Auditor,
    Clusterer,
    Direction,
    Interval,
    MetricSpec,
    Options,
    ReportSection,
)
from fairaudit.core.data import AuditData, sample_rows
from fairaudit.hookspecs import hookimpl
from fairaudit.report.results import MetricResult, finite

_PROJECTION_POINTS = 2000


class FairDenClusterer(Clusterer):
    """FairDen: fair density-based clustering (Krieger, Beer et al., ICLR 2025)."""

    name = "fairden"
    description = (
        "Fair density-based clustering (FairDen, ICLR 2025): spectral clustering of the "
        "dc-distance under a balance constraint on the intersectional sensitive groups; "
        "categorical features through Goodall1; noise = -1."
    )
    requires = frozenset({"features", "sensitive"})
    provides = frozenset({"labels"})
    max_rows = 100_000
    constraints = {
        "n_clusters": Interval(int, 2, None),
        "min_pts": AnyOf((Interval(int, 2, None), Options(("auto",)))),
        "solver": Options(("auto", "dense", "matrix-free")),
        "n_init": Interval(int, 1, None),
        "small_groups": Options(("error", "drop")),
        "single_group": Options(("error", "unconstrained")),
        "use_categorical": Options((True, False)),
        "standardize": Options((True, False)),
        "fair": Options((True, False)),
        "noise_rule": Options(("literal", "recompute")),
        "rounding": Options(("proportional", "kmeans")),
        "min_cluster_share": Interval(float, 0, 1, closed="left"),
    }
    param_docs = {
        "n_clusters": "number of non-noise clusters wanted (the noise rule may end with more)",
        "min_pts": "density parameter μ (core distance and smallest cluster); 'auto' = 2d − 1, "
        "d = numeric features + sensitive attributes",
        "solver": "'dense' (exact, small n), 'matrix-free' (O(n) memory), 'auto'",
        "n_init": "k-means restarts on the spectral embedding",
        "small_groups": "sensitive groups smaller than k: 'error' or 'drop' their rows (reported)",
        "single_group": "only one sensitive group: 'error' or run 'unconstrained'",
        "use_categorical": "use the raw categorical feature columns (Goodall1 similarity)",
        "standardize": "z-score the numeric columns first (as in the FairDen experiments)",
        "fair": "false = the unconstrained twin (same code path, balance constraint off)",
        "noise_rule": "'literal' (Alg. 1: k-means with k+1 on the same k eigenvectors) or "
        "'recompute' (k+1 eigenvectors)",
        "min_cluster_share": "clusters under max(min_pts, this share of the rows) become noise "
        "(the noise rule; 0 = the paper's min_pts only)",
        "rounding": "'proportional' (every cluster keeps each group's share; docs/methods/fairden.md)"
        " or 'kmeans' (the paper: plain k-means on the fair embedding)",
        "random_state": "seed (filled from the chain seed when unset)",
    }

    def __init__(
        self,
        n_clusters: int = 2,
        *,
        min_pts: int | str = "auto",
        solver: str = "auto",
        n_init: int = 10,
        small_groups: str = "drop",
        single_group: str = "error",
        use_categorical: bool = True,
        standardize: bool = True,
        fair: bool = True,
        noise_rule: str = "literal",
        rounding: str = "proportional",
        min_cluster_share: float = 0.01,
        random_state: int | None = None,
    ) -> None:
        self.n_clusters = n_clusters
        self.min_pts = min_pts
        self.solver = solver
        self.n_init = n_init
        self.small_groups = small_groups
        self.single_group = single_group
        self.use_categorical = use_categorical
        self.standardize = standardize
        self.fair = fair
        self.noise_rule = noise_rule
        self.rounding = rounding
        self.min_cluster_share = min_cluster_share
        self.random_state = random_state

    @staticmethod
    def _matrix(data: AuditData) -> tuple[np.ndarray, bool]:
        raw = data.numeric_raw_frame()
        if raw.width:
            return raw.to_numpy().astype(np.float64), True
        return data.feature_matrix(), False

    def fit(self, data: AuditData) -> FairDenClusterer:
        from fairaudit.cluster import FairDen

        notes: list[str] = []
        X, from_raw = self._matrix(data)
        if not from_raw:
            notes.append("No raw numeric columns: FairDen used the preprocessed feature matrix.")
        self.center_ = np.zeros(X.shape[1])
        self.scale_ = np.ones(X.shape[1])
        if self.standardize:
            sd = X.std(axis=0)
            sd[sd == 0] = 1.0
            self.center_, self.scale_ = X.mean(axis=0), sd
            X = (X - self.center_) / self.scale_
        cat = None
        if self.use_categorical:
            cf = data.categorical_frame()
            if cf.width:
                cat = cf.cast({c: str for c in cf.columns}).to_numpy().astype(object)
        sc = data.sensitive_codes()
        est = FairDen(
            int(self.n_clusters),
            min_pts=self.min_pts,
            solver=self.solver,
            n_init=int(self.n_init),
            random_state=self.random_state,
            small_groups=self.small_groups,
            single_group=self.single_group,
            fair=bool(self.fair),
            noise_rule=self.noise_rule,
            rounding=self.rounding,
            min_cluster_share=float(self.min_cluster_share),
        ).fit(X, sensitive=sc.codes, categorical=cat)
        self._categories = sc.categories
        self.estimator_ = est
        self.labels_ = est.labels_.astype(np.int64)
        ex = est.excluded_
        if ex.groups:
            names = []
            for g in ex.groups:
                parts = g.split("|")
                names.append(
                    "|".join(sc.categories[j][int(p)] for j, p in enumerate(parts))
                    if len(parts) == len(sc.categories)
                    else g
                )
            notes.append(
                f"{ex.n_rows} rows of sensitive groups smaller than k ({', '.join(names)}) were "
                "excluded from FairDen and labelled -1."
            )
        n_noise = int((self.labels_ == -1).sum()) - ex.n_rows
        if n_noise:
            notes.append(f"{n_noise:,} rows are noise (clusters smaller than "
                         f"{est.min_cluster_size_:,} rows: max(min_pts, "
                         f"{self.min_cluster_share:g} of the rows)).")
        if len(est.k_history_) > 1:
            how = (
                "k-means re-run on the same embedding"
                if self.noise_rule == "literal"
                else "embedding recomputed"
            )
            left = (f"; with clusters under {est.min_cluster_size_:,} rows as noise, "
                    f"{int(est.n_clusters_)} clusters remain"
                    if int(est.n_clusters_) < est.k_history_[-1] else "")
            notes.append(
                f"Noise rule: a cluster was too small, so k increased from {est.k_history_[0]} "
                f"to {est.k_history_[-1]} ({how}){left}."
            )
        if not self.fair:
            notes.append("fair=false: the balance constraint was switched off (the twin).")
        elif est.rounding_ is not None:
            notes.append(
                "Proportional rounding: every cluster holds each sensitive group in its share of "
                f"the clustered rows ({est.rounding_['moved']:,} rows moved from the plain "
                f"k-means rounding of the fair embedding, {est.rounding_['rounds']} rounds)."
            )
        # seeded 2-D projection sample for a density report section (PCA of the used features)
        rng = np.random.default_rng(0 if self.random_state is None else self.random_state)
        n = X.shape[0]
        idx = np.sort(rng.choice(n, min(n, _PROJECTION_POINTS), replace=False))
        Xc = X - X.mean(axis=0)
        if X.shape[1] >= 2:
            _, _, vt = np.linalg.svd(Xc[idx], full_matrices=False)
            P = Xc[idx] @ vt[:2].T
        else:
            P = np.column_stack([Xc[idx, 0], np.zeros(idx.size)])
        self.extras_ = {
            "method": "fairden",
            "min_pts": int(est.min_pts_),
            "solver": est.solver_,
            "k_history": [int(k) for k in est.k_history_],
            "noise_rule": self.noise_rule,
            "rounding": est.rounding_ and {"method": "proportional", **est.rounding_},
            "fair": bool(self.fair),
            "n_clusters": int(est.n_clusters_),
            "n_noise": n_noise,
            "excluded_groups": [
                {"group": g, "size": int(s)} for g, s in zip(ex.groups, ex.sizes, strict=True)
            ],
            "n_excluded_rows": ex.n_rows,
            "eigenvalues": [finite(v) for v in est.eigenvalues_],
            # no row ids (JSON stays lean; the chart needs only the coordinates), 4 digits
            "projection": {
                "points": int(idx.size),
                "x": [_digits4(v) for v in P[:, 0]],
                "y": [_digits4(v) for v in P[:, 1]],
                "label": [int(v) for v in self.labels_[idx]],
            },
        }
        self.notes_ = tuple(notes)
        return self

    def predict(self, data: AuditData) -> np.ndarray:
        """Labels of (new) rows: the fitted row nearest in mutual reachability, on the same
        z-scored numeric columns (``FairDen.predict``); -1 = noise. After a proportional rounding
        the row's sensitive group selects the fitted rows it is matched with (same group);
        categorical columns do not enter the assignment."""
        est = getattr(self, "estimator_", None)
        if est is None:
            raise RuntimeError("fairden: predict called before fit")
        X, _ = self._matrix(data)
        if X.shape[1] != self.center_.size:
            raise ValueError(
                f"fairden: predict got {X.shape[1]} numeric feature columns; fit had "
                f"{self.center_.size}."
            )
        Xs = (X - self.center_) / self.scale_
        if est.rounding_ is None:
            return est.predict(Xs).astype(np.int64)
        from fairaudit_builtins.centroid import _fitted_codes

        return est.predict(Xs, sensitive=_fitted_codes(data, self._categories)).astype(np.int64)


class DCSIAuditor(Auditor):
    """DCSI (Gauss et al. 2024): density-based separation of clusters, noise excluded."""

    name = "dcsi"
    description = (
        "Density cluster separability index (Gauss et al. 2024, FairDen App. C.2): mean over "
        "cluster pairs of q/(1+q), q = separation of core points / max connectedness."
    )
    requires = frozenset({"labels", "features"})
    metrics = (
        MetricSpec(
            "dcsi",
            Direction.HIGHER_IS_BETTER,
            "DCSI over non-noise rows (mean over cluster pairs)",
            headline=True,
            bootstrap=False,
            per_attribute=False,
        ),
        MetricSpec(
            "dcsi_noise_adjusted",
            Direction.HIGHER_IS_BETTER,
            "DCSI × non-noise fraction (FairDen's tables)",
            bootstrap=False,
            per_attribute=False,
        ),
    )
    constraints = {
        "min_pts": Interval(int, 1, None),
        "max_samples": AnyOf((Interval(int, 100, None), Options((None,)))),
    }
    param_docs = {
        "min_pts": "core-point parameter (paper: 5)",
        "max_samples": "above this many rows DCSI is computed on a seeded row sample",
        "random_state": "seed for the row sample (filled from the chain seed when unset)",
    }

    def __init__(
        self,
        *,
        min_pts: int = 5,
        max_samples: int | None = 100_000,
        random_state: int | None = None,
    ) -> None:
        self.min_pts = min_pts
        self.max_samples = max_samples
        self.random_state = random_state

    def audit(self, ctx: AuditContext) -> list[MetricResult]:
        from fairaudit.metrics.density_separation import dcsi

        data = ctx.data
        if data is None:
            return []
        X = data.feature_matrix()
        labels = np.asarray(ctx.labelling.labels, dtype=np.int64)
        notes: list[str] = []
        seed = self.random_state if self.random_state is not None else ctx.random_state
        rows = sample_rows(labels.size, self.max_samples, seed)
        if rows.size < labels.size:
            notes.append(f"DCSI computed on a seeded sample of {rows.size} of {labels.size} rows.")
        res = dcsi(X[rows], labels[rows], min_pts=int(self.min_pts))
        notes.extend(res.notes)
        pairs = [
            {
                "cluster_a": p.cluster_a,
                "cluster_b": p.cluster_b,
                "separation": finite(p.separation),
                "connectedness_a": finite(p.connectedness_a),
                "connectedness_b": finite(p.connectedness_b),
                "q": finite(p.q),
                "value": finite(p.value),
            }
            for p in res.pairs
        ]
        per_cluster = tuple(
            {
                "cluster": int(c),
                "epsilon": finite(e),
                "n_core": int(nc),
                "connectedness": finite(cn),
                "size": int((labels[rows] == c).sum()),
            }
            for c, e, nc, cn in zip(
                res.clusters, res.epsilon, res.n_core, res.connectedness, strict=True
            )
        )
        detail: dict[str, Any] = {
            "pairs": pairs,
            "min_pts": int(self.min_pts),
            "noise_fraction": finite(res.noise_fraction),
            "rows_used": int(rows.size),
        }
        out = []
        for metric, value, det in (
            ("dcsi", res.value, detail),
            ("dcsi_noise_adjusted", res.noise_adjusted, {}),
        ):
            out.append(
                MetricResult(
                    auditor=self.name,
                    metric=metric,
                    labelling=ctx.labelling.name,
                    value=float(value),
                    direction=Direction.HIGHER_IS_BETTER,
                    per_cluster=per_cluster,
                    n_rows=int(rows.size),
                    notes=tuple(notes),
                    headline=metric == "dcsi",
                    detail=det,
                )
            )
        return out


@hookimpl
def fairaudit_register_clusterers() -> list[type[Clusterer]]:
    return [FairDenClusterer]


@hookimpl
def fairaudit_register_auditors() -> list[type[Auditor]]:
    return [DCSIAuditor]


def _digits4(v: float) -> float | None:
    """A chart coordinate to 4 significant digits (None when not finite)."""
    v = finite(v)
    return None if v is None else float(f"{v:.4g}")


# ============================================================================ report section
class DensitySection(ReportSection):
    """Density-based clusterings: the clusters over a 2-D projection (noise in grey) and the
    DCSI separation of every cluster pair."""

    name = "density"
    title = "Density-based clusterings"
    order = 420
    template = "sections/density.html.j2"
    auditors = ("dcsi",)

    def applies(self, run: Any) -> bool:
        return bool(run.results_for(auditor="dcsi")) or any(
            (lab.get("extras") or {}).get("projection") for lab in run.labellings
        )

    def context(self, run: Any) -> dict[str, Any]:
        from fairaudit.report import charts

        blocks = []
        for lab in run.labellings:
            extras = lab.get("extras") or {}
            proj = extras.get("projection")
            res = run.results_for(auditor="dcsi", labelling=lab["name"])
            if not proj and not res:
                continue
            svg = None
            if proj and proj.get("x"):
                svg = charts.scatter(
                    proj["x"],
                    proj["y"],
                    proj["label"],
                    title=f"{lab['name']}: clusters over a 2-D projection (PCA), noise in grey",
                )
            head = next((r for r in res if r["metric"] == "dcsi"), None)
            adj = next((r for r in res if r["metric"] == "dcsi_noise_adjusted"), None)
            pairs = ((head or {}).get("detail") or {}).get("pairs") or []
            blocks.append(
                {
                    "labelling": lab["name"],
                    "n_noise": lab.get("n_noise"),
                    "svg": svg,
                    "dcsi": None if head is None else head["value"],
                    "dcsi_adjusted": None if adj is None else adj["value"],
                    "status": None if head is None else head["status"],
                    "threshold": None if head is None else head["threshold"],
                    "pairs": pairs,
                    "notes": [] if head is None else head.get("notes") or [],
                    "excluded_groups": extras.get("excluded_groups") or [],
                    "k_history": extras.get("k_history") or [],
                    "min_pts": extras.get("min_pts"),
                }
            )
        return {"blocks": blocks}


@hookimpl
def fairaudit_register_report_sections() -> list[type]:
    return [DensitySection]
