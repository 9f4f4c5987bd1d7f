"""Built-in baseline clusterers: ``kmeans`` (scikit-learn) and ``dbscan``."""

from __future__ import annotations

from typing import Any

import numpy as np

from fairaudit.core.components import AnyOf, Clusterer, Interval, Options
from fairaudit.core.data import AuditData
from fairaudit.hookspecs import hookimpl


class KMeansClusterer(Clusterer):
    """k-means (scikit-learn ``KMeans``); ``n_clusters="auto"`` picks k in ``k_range`` by
    silhouette on a seeded sample."""

    name = "kmeans"
    description = "k-means baseline (scikit-learn); k by silhouette when n_clusters='auto'."
    requires = frozenset({"features"})
    provides = frozenset({"labels", "prototypes"})
    max_rows = None
    constraints = {
        "n_clusters": AnyOf((Interval(int, 2, None), Options(("auto",)))),
        "n_init": Interval(int, 1, None),
        "max_iter": Interval(int, 1, None),
        "k_min": Interval(int, 2, None),
        "k_max": Interval(int, 2, None),
    }
    param_docs = {
        "n_clusters": "number of clusters, or 'auto' (silhouette over k_min..k_max, passing "
                      "over k whose k-means labelling is degenerate)",
        "n_init": "k-means restarts (best inertia kept)",
        "max_iter": "iterations per run",
        "k_min": "smallest k tried by 'auto'",
        "k_max": "largest k tried by 'auto'",
        "random_state": "seed (filled from the chain seed when unset)",
    }

    def __init__(
        self,
        n_clusters: int | str = "auto",
        *,
        n_init: int = 10,
        max_iter: int = 300,
        k_min: int = 2,
        k_max: int = 8,
        random_state: int | None = None,
    ):
        self.n_clusters = n_clusters
        self.n_init = n_init
        self.max_iter = max_iter
        self.k_min = k_min
        self.k_max = k_max
        self.random_state = random_state

    def fit(self, data: AuditData) -> KMeansClusterer:
        from sklearn.cluster import KMeans

        from fairaudit.cluster.baselines import select_k_silhouette

        X = data.feature_matrix()
        extras: dict[str, Any] = {}
        k = self.n_clusters
        if k == "auto":
            from fairaudit.core.fit_quality import DOMINANT_SHARE, SEPARATED, TINY_SHARE

            sel = select_k_silhouette(
                X, range(self.k_min, self.k_max + 1), random_state=self.random_state,
                max_share=DOMINANT_SHARE, min_share=TINY_SHARE, separated=SEPARATED,
            )
            k = sel.k
            reasons = dict(sel.degenerate)
            extras["k_selection"] = {
                "method": "silhouette",
                "sample_size": sel.sample_size,
                "scores": [
                    {"k": kk, "silhouette": s, **({"degenerate": reasons[kk]}
                                                  if kk in reasons else {})}
                    for kk, s in sel.scores
                ],
            }
            note = f"k = {k} chosen by silhouette over {self.k_min}..{self.k_max}"
            if sel.all_degenerate:
                note += "; every k gave a degenerate k-means labelling of the sample"
            elif reasons:
                skipped = ", ".join(f"{kk} ({why.replace('_', ' ')})"
                                    for kk, why in sorted(reasons.items()))
                note += f", passing over degenerate k: {skipped}"
            self.notes_ = (note,)
        if k > X.shape[0]:
            raise ValueError(
                f"The 'n_clusters' parameter of kmeans ({k}) is larger than the number of rows "
                f"({X.shape[0]})"
            )
        km = KMeans(
            n_clusters=k, n_init=self.n_init, max_iter=self.max_iter,
            random_state=self.random_state,
        ).fit(X)
        self.labels_ = km.labels_.astype(np.int64)
        self.cluster_centers_ = km.cluster_centers_
        self.prototypes_ = km.cluster_centers_
        self.n_clusters_ = int(k)
        self.inertia_ = float(km.inertia_)
        self.extras_ = {**extras, "inertia": float(km.inertia_)}
        self.converged_ = bool(km.n_iter_ < self.max_iter)
        return self

    def predict(self, data: AuditData) -> np.ndarray:
        """Nearest fitted centroid (Lloyd's assignment step); equals ``labels_`` on the training
        rows of a converged fit."""
        from fairaudit.cluster import nearest_centre

        return nearest_centre(data.feature_matrix(), self.cluster_centers_).astype(np.int64)


class DBSCANClusterer(Clusterer):
    """DBSCAN (scikit-learn); noise is labelled -1."""

    name = "dbscan"
    description = "DBSCAN baseline (scikit-learn); noise = -1."
    requires = frozenset({"features"})
    provides = frozenset({"labels"})
    max_rows = 200_000
    constraints = {
        "eps": Interval(float, 0, None, closed="neither"),
        "min_samples": Interval(int, 1, None),
    }
    param_docs = {
        "eps": "neighbourhood radius (on the preprocessed, standardised features)",
        "min_samples": "points in an eps-neighbourhood (incl. the point) to be a core point",
    }

    def __init__(self, eps: float = 0.5, *, min_samples: int = 5):
        self.eps = eps
        self.min_samples = min_samples

    def fit(self, data: AuditData) -> DBSCANClusterer:
        from sklearn.cluster import DBSCAN

        X = data.feature_matrix()
        db = DBSCAN(eps=self.eps, min_samples=self.min_samples).fit(X)
        self.labels_ = db.labels_.astype(np.int64)
        self.core_X_ = X[db.core_sample_indices_]
        self.core_labels_ = self.labels_[db.core_sample_indices_]
        return self

    def predict(self, data: AuditData) -> np.ndarray:
        """Label of the nearest core sample when it is within eps, else -1 (noise): DBSCAN's
        own rule for border points (Ester et al. 1996; Schubert et al. 2017). On the training
        rows this reproduces labels_ except border points within eps of cores of two clusters
        (DBSCAN gives them the cluster that reached them first; predict the nearest core's)."""
        from sklearn.neighbors import NearestNeighbors

        if not hasattr(self, "core_X_"):
            raise RuntimeError("dbscan: predict called before fit")
        X = data.feature_matrix()
        out = np.full(X.shape[0], -1, dtype=np.int64)
        if self.core_X_.shape[0] and X.shape[0]:
            d, i = NearestNeighbors(n_neighbors=1).fit(self.core_X_).kneighbors(X)
            near = d[:, 0] <= self.eps
            out[near] = self.core_labels_[i[near, 0]]
        return out


@hookimpl
def fairaudit_register_clusterers() -> list[type]:
    return [KMeansClusterer, DBSCANClusterer]
