"""Fixture plugin: a clusterer whose ``fit`` and ``predict`` raise ``UserWarning`` s (as Bera's
"the labels break N of the bounds") and a note about its fit."""

from __future__ import annotations

import warnings

import numpy as np

from fairaudit.core.components import Clusterer, Interval
from fairaudit.hookspecs import hookimpl


class WarningClusterer(Clusterer):
    name = "warner"
    requires = frozenset({"features"})
    provides = frozenset({"labels"})
    constraints = {"n_clusters": Interval(int, 2, None)}

    def __init__(self, n_clusters: int = 2, *, random_state: int | None = None) -> None:
        self.n_clusters = n_clusters
        self.random_state = random_state

    def fit(self, data):
        X = data.feature_matrix()
        self.labels_ = (X[:, 0] > np.median(X[:, 0])).astype(np.int64)
        self.notes_ = (f"Every one of the {X.shape[0]} fitted rows meets the bounds.",)
        warnings.warn("warner: fit emptied 1 of the 2 clusters", UserWarning, stacklevel=2)
        warnings.warn("warner: fit emptied 1 of the 2 clusters", UserWarning, stacklevel=2)
        return self

    def predict(self, data):
        X = data.feature_matrix()
        warnings.warn(f"warner: the labels break {X.shape[0] // 10} of the bounds", UserWarning,
                      stacklevel=2)
        warnings.warn("an old keyword", DeprecationWarning, stacklevel=2)
        return (X[:, 0] > 0).astype(np.int64)


@hookimpl
def fairaudit_register_clusterers() -> list[type]:
    return [WarningClusterer]
