"""Built-in centroid clusterers ``ffcm``, ``fcm``, ``lofkm`` and the ``lcd`` auditor (issue 4).

One unit: this module is the ``builtins_centroid`` plugin (one entry point, named in every
audit's ``environment.plugins``); its clusterers, auditor and two sections are registered
together, so a split would change the plugin list users see (a follow-up with its own entry point).

- ``ffcm``: fair fuzzy c-means (seed 001) on the features, with the sensitive attributes as the
  fair-loss groups. Provides labels (argmax membership), prototypes and memberships; ``extras_``
  holds the membership-weighted group composition of every cluster beside the hard one.
- ``fcm``: the same estimator with the fairness term off (vanilla fuzzy c-means, the paper's
  baseline); it does not see the sensitive attributes. ``ffcm:fair=false`` is the same fit.
- ``lofkm``: k-means with LOF weights (seed 002); ``extras_`` summarises the weights;
  ``lofkm:fair=false`` is k-means from the same starts.
- ``predict(data)`` on each clusterer assigns new rows (nearest fitted centre; FFCM adds the fitted
  penalty of each row's groups).
- ``lcd``: local connectivity disagreement (seed 002 eq. 1-9): AvgLCD (headline) and MaxLCD,
  the clusters with the worst local connectivity and their worst points (input row ids), and a
  histogram of per-point LCD.
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
    TypeIs,
)
from fairaudit.core.data import AuditData, sample_rows
from fairaudit.hookspecs import hookimpl
from fairaudit.report.results import MetricResult, finite


def membership_composition(
    memberships: np.ndarray, labels: np.ndarray, codes: np.ndarray, groups: tuple[str, ...]
) -> list[dict[str, Any]]:
    """Per cluster: expected group shares under soft assignment beside the hard-assignment shares.

    soft share of group g in cluster k = sum_j u_jk [g_j = g] / sum_j u_jk;
    hard share = rows of g labelled k / rows labelled k.
    """
    n, k = memberships.shape
    G = len(groups)
    onehot = np.zeros((n, G))
    onehot[np.arange(n), codes] = 1.0
    soft = onehot.T @ memberships  # (G, k) expected counts
    soft_size = memberships.sum(axis=0)
    hard = np.zeros((G, k))
    np.add.at(hard, (codes, labels), 1.0)
    hard_size = hard.sum(axis=0)
    pop = onehot.sum(axis=0) / n
    rows = []
    for c in range(k):
        rows.append(
            {
                "cluster": c,
                "soft_size": finite(soft_size[c]),
                "hard_size": int(hard_size[c]),
                "groups": [
                    {
                        "group": str(groups[g]),
                        "population_share": finite(pop[g]),
                        "soft_share": finite(soft[g, c] / soft_size[c]) if soft_size[c] > 0 else None,
                        "hard_share": finite(hard[g, c] / hard_size[c]) if hard_size[c] > 0 else None,
                    }
                    for g in range(G)
                ],
            }
        )
    return rows


_FCM_CONSTRAINTS = {
    "n_clusters": Interval(int, 2, None),
    "m": AnyOf((Interval(float, 1.0, None, closed="neither"), Options(("auto",)))),
    "max_iter": Interval(int, 1, None),
    "tol": Interval(float, 0.0, None),
    "init": Options(("k-means++", "random")),
}
_FCM_DOCS = {
    "n_clusters": "number of clusters k",
    "m": "fuzzifier (> 1); 'auto' = min(2, Schwämmle-Jensen estimate for the rows and "
    "dimensions): 2 unless the encoded features are so many that m = 2 flattens memberships",
    "max_iter": "maximum sweeps (the FFCM paper uses 10)",
    "tol": "stop when the objective changes by less than tol x its value",
    "init": "'k-means++' centres or 'random' memberships (as in the paper)",
    "random_state": "seed (filled from the chain seed when unset)",
}


class FFCMClusterer(Clusterer):
    """Fair fuzzy c-means: FCM with a group-proportion term (Xu et al., ACML 2021)."""

    name = "ffcm"
    description = (
        "Fair fuzzy c-means (FFCM, seed 001): fuzzy c-means plus a term on each cluster's group "
        "proportions (default: the targeted form, pushing each cluster's over-represented group "
        "out); soft memberships."
    )
    requires = frozenset({"features", "sensitive"})
    provides = frozenset({"labels", "prototypes", "memberships"})
    max_rows = None
    constraints = {
        **_FCM_CONSTRAINTS,
        "fair": TypeIs((bool,), "true or false"),
        "variant": Options(("targeted", "paper")),
        "eta": AnyOf((Interval(float, 0.0, None), Options(("auto",)))),
        "eta_scale": Options(("auto", "gap", "variance", "none")),
        "acceleration": Options(("adaptive", "anderson", "none")),
    }
    param_docs = {
        **_FCM_DOCS,
        "fair": "false: the fairness term off (fuzzy c-means from the same start: the twin)",
        "variant": "'targeted' (pushes each cluster's over-represented group out; default) or "
        "'paper' (eq. 3-6 as printed; almost no effect on real data)",
        "eta": "weight of the fairness term; 'auto' = 3 (targeted) or 1 (paper), scale-free",
        "eta_scale": "unit of eta: 'gap' (mean gap between a row's squared distances to its two "
        "nearest centres), 'variance' (total variance), 'none' (raw, as the paper's 1e2..1e7); "
        "'auto' = gap (targeted) / variance (paper)",
        "acceleration": "targeted form: 'none' (default) = the damped fair sweeps; 'adaptive' "
        "takes full table steps once they contract (the same fixed points on real data in "
        "fewer sweeps; it can change which eta candidate is kept); 'anderson' extrapolates "
        "them from the last few (it can settle in a less fair fixed point)",
    }

    def __init__(
        self,
        n_clusters: int = 4,
        *,
        fair: bool = True,
        variant: str = "targeted",
        eta: float | str = "auto",
        eta_scale: str = "auto",
        m: float | str = "auto",
        max_iter: int = 300,
        tol: float = 1e-6,
        init: str = "k-means++",
        random_state: int | None = None,
        acceleration: str = "none",
    ) -> None:
        self.n_clusters = n_clusters
        self.fair = fair
        self.variant = variant
        self.eta = eta
        self.eta_scale = eta_scale
        self.m = m
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.random_state = random_state
        self.acceleration = acceleration

    def _estimator(self, fair: bool) -> Any:
        from fairaudit.cluster import FairFuzzyCMeans

        return FairFuzzyCMeans(
            self.n_clusters,
            fair=fair,
            variant=getattr(self, "variant", "targeted"),
            eta=getattr(self, "eta", "auto"),
            eta_scale=getattr(self, "eta_scale", "auto"),
            m=self.m if isinstance(self.m, str) else float(self.m),
            max_iter=self.max_iter,
            tol=float(self.tol),
            init=self.init,
            random_state=self.random_state,
            acceleration=getattr(self, "acceleration", "none"),
        )

    def _finish(self, est: Any, method: str) -> None:
        self.labels_ = est.labels_.astype(np.int64)
        self.memberships_ = est.memberships_
        self.prototypes_ = est.cluster_centers_
        self.estimator_ = est
        self.converged_ = bool(est.converged_)
        self.n_iter_ = int(est.n_iter_)
        hist = [float(v) for v in est.objective_]
        self.extras_: dict[str, Any] = {
            "method": method,
            "fair": bool(est.fair_applied_),
            "n_iter": int(est.n_iter_),
            "converged": bool(est.converged_),
            "objective": hist[-200:],
            "eta_raw": finite(est.eta_raw_),
            "m": finite(est.m_),
            "data_scale": finite(est.data_scale_),
            "mean_max_membership": finite(est.memberships_.max(axis=1).mean()),
        }
        notes = []
        if not est.converged_:
            notes.append(
                f"{method.upper()} stopped after max_iter = {self.max_iter} sweeps before the "
                "objective settled."
            )
        self.notes_ = tuple(notes)

    def fit(self, data: AuditData) -> FFCMClusterer:
        X = data.feature_matrix()
        codes = data.sensitive_codes()
        est = self._estimator(bool(self.fair)).fit(X, sensitive=codes.codes)
        self._categories = codes.categories
        self._finish(est, "ffcm")
        self.extras_["variant"] = str(self.variant)
        self.extras_["fair_table"] = getattr(est, "fair_table_", None)
        tried = tuple(getattr(est, "eta_reductions_", ()))
        if tried and tried[-1] == 0.0:  # every weight tried was rejected (step 6)
            self.notes_ = (
                *self.notes_,
                "FFCM: no weight of the fairness term tried (eta x 1, 1/3, 1/9, 3, 9; soft and "
                "hard counts) lowered the hard labels' size-weighted Ed below fuzzy c-means', so "
                "the labels are its twin's (fuzzy c-means from the same start).",
            )
        attrs: list[tuple[str, np.ndarray, tuple[str, ...]]] = [
            (name, codes.codes[:, j], codes.categories[j]) for j, name in enumerate(codes.names)
        ]
        if len(codes.names) > 1:
            inter, inter_names = codes.intersection()
            attrs.append(("|".join(codes.names), inter, inter_names))
        self.extras_["composition"] = {
            name: membership_composition(est.memberships_, self.labels_, c, g)
            for name, c, g in attrs
        }
        self.extras_["cluster_bias"] = [finite(v) for v in est.cluster_bias_]
        return self

    def predict(self, data: AuditData) -> np.ndarray:
        """Clusters of new rows from the fitted centres, with the fitted penalty of each row's
        groups (frozen: a new row does not change the clusters' composition). A row whose group
        was not in the fitted rows (e.g. a rare group missing from the sample) gets no penalty:
        the nearest fitted centre."""
        est = self.estimator_
        X = data.feature_matrix()
        if est.fairness_penalty_ is None:
            return est.predict(X).astype(np.int64)
        codes = _fitted_codes(data, self._categories)
        known = (codes >= 0).all(axis=1)
        if known.all():  # the usual case: no copy of X, one product
            return est.predict(X, sensitive=codes).astype(np.int64)
        out = np.empty(X.shape[0], dtype=np.int64)
        out[~known] = est.predict(X[~known])
        if known.any():
            out[known] = est.predict(X[known], sensitive=codes[known])
        return out


def _fitted_codes(data: AuditData, fitted: tuple[tuple[str, ...], ...]) -> np.ndarray:
    """The new rows' sensitive codes in the code space of the fit (by group name; -1 for a
    group the fit did not see)."""
    codes = data.sensitive_codes()
    out = np.empty_like(codes.codes)
    for j, (cats, old) in enumerate(zip(codes.categories, fitted, strict=True)):
        index = {g: i for i, g in enumerate(old)}
        remap = np.array([index.get(g, -1) for g in cats], dtype=np.int64)
        out[:, j] = remap[codes.codes[:, j]]
    return out


class FCMClusterer(FFCMClusterer):
    """Vanilla fuzzy c-means (FFCM with the fairness term off)."""

    name = "fcm"
    description = "Fuzzy c-means (Bezdek): FFCM with the fairness term off; soft memberships."
    requires = frozenset({"features"})
    provides = frozenset({"labels", "prototypes", "memberships"})
    constraints = dict(_FCM_CONSTRAINTS)
    param_docs = dict(_FCM_DOCS)

    def __init__(
        self,
        n_clusters: int = 4,
        *,
        m: float | str = "auto",
        max_iter: int = 300,
        tol: float = 1e-6,
        init: str = "k-means++",
        random_state: int | None = None,
    ) -> None:
        self.n_clusters = n_clusters
        self.m = m
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.random_state = random_state

    def fit(self, data: AuditData) -> FCMClusterer:
        X = data.feature_matrix()
        est = self._estimator(False).fit(X)
        self._finish(est, "fcm")
        return self

    def predict(self, data: AuditData) -> np.ndarray:
        """Nearest fitted centre (= argmax of the FCM memberships of the new rows)."""
        return self.estimator_.predict(data.feature_matrix()).astype(np.int64)


class LOFKMClusterer(Clusterer):
    """LOFKM: k-means whose prototypes are pulled towards sparsely connected points."""

    name = "lofkm"
    description = (
        "Local-connectivity k-means (LOFKM, seed 002): k-means with weights max(LOF, 1), "
        "pulling prototypes towards sparsely connected points."
    )
    requires = frozenset({"features"})
    provides = frozenset({"labels", "prototypes"})
    max_rows = 200_000
    constraints = {
        "n_clusters": Interval(int, 2, None),
        "fair": TypeIs((bool,), "true or false"),
        "n_neighbors": Interval(int, 1, None),
        "n_init": Interval(int, 1, None),
        "init": Options(("k-means++", "random")),
        "max_iter": Interval(int, 1, None),
        "variant": Options(("targeted", "paper")),
        "refine_rows": Interval(int, 2, None),
    }
    param_docs = {
        "n_clusters": "number of clusters K",
        "fair": "false: no LOF weights, no refinement (k-means from the same seeded starts: the "
        "twin)",
        "variant": "'targeted' (LOF-weighted and plain k-means solutions each refined by prototype "
        "moves that lower AvgLCD; the lower kept) or 'paper' (LOF-weighted k-means only)",
        "refine_rows": "the refinement judges AvgLCD on at most this many rows (seeded sample)",
        "n_neighbors": "t, the LOF neighbourhood (paper: 3-5)",
        "n_init": "seeded starts; the lowest weighted objective is kept",
        "init": "'k-means++' or 'random' starting prototypes",
        "max_iter": "Lloyd iterations per start",
        "random_state": "seed (filled from the chain seed when unset)",
    }

    def __init__(
        self,
        n_clusters: int = 8,
        *,
        fair: bool = True,
        n_neighbors: int = 5,
        n_init: int = 10,
        init: str = "k-means++",
        max_iter: int = 300,
        variant: str = "targeted",
        refine_rows: int = 20_000,
        random_state: int | None = None,
    ) -> None:
        self.n_clusters = n_clusters
        self.fair = fair
        self.n_neighbors = n_neighbors
        self.n_init = n_init
        self.init = init
        self.max_iter = max_iter
        self.variant = variant
        self.refine_rows = refine_rows
        self.random_state = random_state

    def fit(self, data: AuditData) -> LOFKMClusterer:
        from fairaudit.cluster import LOFKMeans

        X = data.feature_matrix()
        est = LOFKMeans(
            self.n_clusters,
            fair=bool(self.fair),
            n_neighbors=self.n_neighbors,
            n_init=self.n_init,
            init=self.init,
            max_iter=self.max_iter,
            random_state=self.random_state,
            variant=self.variant,
            refine_rows=self.refine_rows,
        ).fit(X)
        self.labels_ = est.labels_.astype(np.int64)
        self.prototypes_ = est.cluster_centers_
        self.estimator_ = est
        self.converged_ = bool(est.converged_)
        self.n_iter_ = int(est.n_iter_)
        w = est.weights_
        ids = data.row_ids
        top = np.argsort(-w, kind="stable")[:10]
        self.extras_ = {
            "method": "lofkm",
            "fair": bool(self.fair),
            "n_neighbors": int(self.n_neighbors),
            "inertia_weighted": finite(est.inertia_),
            "deduplicated": bool(est.deduplicated_),
        }
        if self.fair:
            self.extras_["weights"] = {
                "share_above_1": finite((w > 1).mean()),
                "quantiles": {str(q): finite(np.quantile(w, q)) for q in (0.5, 0.9, 0.99, 1.0)},
                "top_rows": [{"row": int(ids[i]), "weight": finite(w[i])} for i in top],
            }
        notes = []
        ref = est.refinement_
        if ref is not None:
            self.extras_["refinement"] = dict(ref)
            start = ("the LOF-weighted k-means solution" if ref["start"] == "lof"
                     else "the plain k-means solution (it refined to a lower AvgLCD than the "
                          "LOF-weighted one)")
            notes.append(
                f"Targeted refinement: {ref['moves']} prototype move(s) from {start} lowered "
                f"AvgLCD (t = {int(self.n_neighbors)}) from {ref['avg_lcd_start']:.4f} to "
                f"{ref['avg_lcd']:.4f} on {ref['rows']:,} rows; labels are the nearest "
                "prototypes."
            )
            if ref.get("twin_avg_lcd_table") is not None:
                notes.append(
                    f"Checked on every row: AvgLCD {ref['avg_lcd_table']:.4f}, plain k-means "
                    f"{ref['twin_avg_lcd_table']:.4f}; "
                    + ("the refined prototypes were less fair there, so the plain k-means "
                       "solution is kept." if ref["kept"] == "twin" else
                       "the refined prototypes are kept.")
                )
        if est.deduplicated_:
            notes.append(
                "The features contain duplicate rows; LOF was computed on the distinct rows and "
                "each copy got its row's weight (finite weights)."
            )
        self.notes_ = tuple(notes)
        return self

    def predict(self, data: AuditData) -> np.ndarray:
        """Nearest fitted prototype (eq. 12)."""
        return self.estimator_.predict(data.feature_matrix()).astype(np.int64)


class LCDAuditor(Auditor):
    """Local connectivity disagreement of a labelling (seed 002, eq. 1-9)."""

    name = "lcd"
    description = (
        "Local connectivity disagreement (seed 002): how poorly each point's t nearest "
        "same-cluster neighbours towards its prototype support its membership; AvgLCD / MaxLCD."
    )
    requires = frozenset({"labels", "features"})
    metrics = (
        MetricSpec(
            "avg_lcd",
            Direction.LOWER_IS_BETTER,
            "Mean over clusters of the worst member's LCD (AvgLCD, eq. 9)",
            range=None,
            headline=True,
            bootstrap=False,
            per_attribute=False,
        ),
        MetricSpec(
            "max_lcd",
            Direction.LOWER_IS_BETTER,
            "Worst cluster's LCD (MaxLCD, eq. 8)",
            range=None,
            bootstrap=False,
            per_attribute=False,
        ),
    )
    constraints = {
        "t": Interval(int, 1, None),
        "prototypes": Options(("auto", "means")),
        "max_samples": AnyOf((Interval(int, 100, None), Options((None,)))),
        "n_worst": Interval(int, 1, None),
        "bins": Interval(int, 2, None),
    }
    param_docs = {
        "t": "neighbours per point (paper: 3, 4, 5)",
        "prototypes": "'auto': the clusterer's prototypes when it provides them, else cluster "
        "means; 'means': always cluster means",
        "max_samples": "above this many rows, LCD is computed on a seeded row sample",
        "n_worst": "worst clusters / worst points listed per cluster",
        "bins": "histogram bins for per-point LCD",
        "random_state": "seed for the row sample (filled from the chain seed when unset)",
    }

    def __init__(
        self,
        *,
        t: int = 5,
        prototypes: str = "auto",
        max_samples: int | None = 200_000,
        n_worst: int = 5,
        bins: int = 20,
        random_state: int | None = None,
    ) -> None:
        self.t = t
        self.prototypes = prototypes
        self.max_samples = max_samples
        self.n_worst = n_worst
        self.bins = bins
        self.random_state = random_state

    def audit(self, ctx: AuditContext) -> list[MetricResult]:
        from fairaudit.metrics import lcd

        data = ctx.data
        if data is None:
            return []
        X = data.feature_matrix()
        labels = np.asarray(ctx.labelling.labels, dtype=np.int64)
        ids = data.row_ids
        notes: list[str] = []
        seed = self.random_state if self.random_state is not None else ctx.random_state
        rows = sample_rows(len(labels), self.max_samples, seed)
        if rows.size < len(labels):
            notes.append(
                f"LCD computed on a seeded sample of {self.max_samples} of {len(labels)} rows "
                "(neighbourhoods are those of the sample)."
            )
        Xs, ls = X[rows], labels[rows]
        if not (ls >= 0).any():
            return [
                self._result(ctx, m, float("nan"), len(rows), ("no non-noise rows",), {}, ())
                for m in ("avg_lcd", "max_lcd")
            ]
        protos = None
        source = "cluster means"
        P = ctx.labelling.prototypes
        if self.prototypes == "auto" and P is not None:
            P = np.asarray(P, dtype=float)
            if P.ndim == 2 and P.shape[1] == X.shape[1] and ls.max() < P.shape[0]:
                protos, source = P, "clusterer prototypes"
            else:
                notes.append(
                    "The clusterer's prototypes do not match the feature matrix; cluster means "
                    "used instead."
                )
        res = lcd(Xs, ls, prototypes=protos, t=int(self.t))
        if (ls < 0).any():
            notes.append(f"{int((ls < 0).sum())} noise rows excluded from LCD.")
        sizes = {int(c): int((ls == c).sum()) for c in res.clusters}
        per_cluster = tuple(
            {
                "cluster": int(c),
                "lcd": finite(res.cluster_lcd[i]),
                "mean_lcd": finite(res.cluster_mean_lcd[i]),
                "size": sizes[int(c)],
                "worst_row": int(ids[rows[res.cluster_worst_row[i]]]),
            }
            for i, c in enumerate(res.clusters)
        )
        worst = []
        for c in res.worst_clusters(int(self.n_worst)):
            i = int(np.flatnonzero(res.clusters == c)[0])
            pts = res.worst_points(int(self.n_worst), cluster=c)
            worst.append(
                {
                    "cluster": int(c),
                    "lcd": finite(res.cluster_lcd[i]),
                    "size": sizes[int(c)],
                    "worst_points": [
                        {
                            "row": int(ids[rows[j]]),
                            "lcd": finite(res.point_lcd[j]),
                            "support": int(res.n_support[j]),
                        }
                        for j in pts
                    ],
                }
            )
        vals = res.point_lcd[~np.isnan(res.point_lcd)]
        counts, edges = np.histogram(vals, bins=int(self.bins))
        detail = {
            "t": int(self.t),
            "prototypes": source,
            "rows_used": len(rows),
            "worst_clusters": worst,
            "histogram": {"counts": counts.tolist(), "edges": [float(e) for e in edges]},
            "point_lcd_quantiles": {str(q): finite(np.quantile(vals, q)) for q in (0.5, 0.9, 0.99)},
            "share_zero": finite((vals == 0).mean()),
        }
        return [
            self._result(ctx, "avg_lcd", res.avg_lcd, len(rows), tuple(notes), detail, per_cluster),
            self._result(ctx, "max_lcd", res.max_lcd, len(rows), tuple(notes), {}, per_cluster),
        ]

    def _result(
        self,
        ctx: AuditContext,
        metric: str,
        value: float,
        n_rows: int,
        notes: tuple[str, ...],
        detail: dict[str, Any],
        per_cluster: tuple[dict[str, Any], ...],
    ) -> MetricResult:
        return MetricResult(
            auditor=self.name,
            metric=metric,
            labelling=ctx.labelling.name,
            value=float(value),
            direction=Direction.LOWER_IS_BETTER,
            n_rows=n_rows,
            notes=notes,
            headline=metric == "avg_lcd",
            detail=detail,
            per_cluster=per_cluster,
        )


@hookimpl
def fairaudit_register_clusterers() -> list[type[Clusterer]]:
    return [FFCMClusterer, FCMClusterer, LOFKMClusterer]


@hookimpl
def fairaudit_register_auditors() -> list[type[Auditor]]:
    return [LCDAuditor]


# ============================================================================ report sections
class LCDSection(ReportSection):
    """Local connectivity: AvgLCD/MaxLCD per labelling, the worst clusters and their worst
    points (input row numbers), and the distribution of per-point LCD."""

    name = "lcd"
    title = "Local connectivity (LCD)"
    order = 450
    template = "sections/lcd.html.j2"
    auditors = ("lcd",)

    def applies(self, run: Any) -> bool:
        return bool(run.results_for(auditor="lcd"))

    def context(self, run: Any) -> dict[str, Any]:
        from fairaudit.report import charts

        blocks = []
        for r in run.results_for(auditor="lcd", metric="avg_lcd"):
            maxr = run.results_for(auditor="lcd", metric="max_lcd", labelling=r["labelling"])
            detail = r.get("detail") or {}
            hist = detail.get("histogram") or {}
            svg = None
            counts, edges = hist.get("counts"), hist.get("edges")
            if counts and edges and sum(counts) > 0:
                mids = [(a + b) / 2 for a, b in zip(edges[:-1], edges[1:], strict=True)]
                values = np.repeat(np.asarray(mids, dtype=float), np.asarray(counts, dtype=int))
                svg = charts.histogram(
                    values.tolist(), bins=list(edges), xlabel="LCD of a point",
                    title=f"Per-point LCD — {r['labelling']}", log=True,
                )
            blocks.append({
                "labelling": r["labelling"],
                "avg": r["value"],
                "max": maxr[0]["value"] if maxr else None,
                "status": r["status"],
                "threshold": r["threshold"],
                "t": detail.get("t"),
                "prototypes": detail.get("prototypes"),
                "rows_used": detail.get("rows_used"),
                "quantiles": detail.get("point_lcd_quantiles") or {},
                "share_zero": detail.get("share_zero"),
                "worst": detail.get("worst_clusters") or [],
                "per_cluster": r.get("per_cluster") or [],
                "notes": r.get("notes") or [],
                "svg": svg,
            })
        return {"blocks": blocks}


class SoftCompositionSection(ReportSection):
    """For clusterings with soft memberships (FFCM/FCM): each group's expected share of a cluster
    under the memberships, beside its hard-assignment share and its population share."""

    name = "soft_composition"
    title = "Membership-weighted composition"
    order = 350
    template = "sections/soft_composition.html.j2"

    def applies(self, run: Any) -> bool:
        return any((lab.get("extras") or {}).get("composition") for lab in run.labellings)

    def context(self, run: Any) -> dict[str, Any]:
        from fairaudit.report import charts

        blocks = []
        for lab in run.labellings:
            comp = (lab.get("extras") or {}).get("composition") or {}
            for attribute, clusters in comp.items():
                if not clusters:
                    continue
                groups = [g["group"] for g in clusters[0]["groups"]][:12]
                rows = []
                for c in clusters:
                    for g in c["groups"][:12]:
                        rows.append({
                            "cluster": c["cluster"], "group": g["group"],
                            "population": g["population_share"], "soft": g["soft_share"],
                            "hard": g["hard_share"],
                        })
                shares = [[g["soft_share"] for g in c["groups"][:12]] for c in clusters]
                svg = charts.composition_bars(
                    [f"cluster {c['cluster']}" for c in clusters], groups, shares,
                    title=f"{lab['name']}: expected group share under memberships — {attribute}",
                )
                blocks.append({"labelling": lab["name"], "attribute": attribute, "rows": rows,
                               "svg": svg})
        return {"blocks": blocks}


@hookimpl
def fairaudit_register_report_sections() -> list[type]:
    return [LCDSection, SoftCompositionSection]
