"""Fixture plugin: clusterers that produce each kind of degenerate labelling, and a fair
clusterer with a ``fair`` parameter (twins).

All work on the feature ``x1`` of the synthetic table (``tests/conftest.make_synthetic``) and on
row positions, so the expected sizes are exact.
"""

from __future__ import annotations

import numpy as np

from fairaudit.core.components import Clusterer, Interval
from fairaudit.hookspecs import hookimpl


class Shares(Clusterer):
    """Rows in order, split by ``shares`` (fractions, in order): e.g. (0.95, 0.05)."""

    name = "shares"
    constraints = {"n_clusters": Interval(int, 1, None)}

    def __init__(self, n_clusters: int = 2, *, shares: tuple = (0.5, 0.5)) -> None:
        self.n_clusters = n_clusters
        self.shares = shares

    def fit(self, data):
        n = data.n_rows
        edges = np.round(np.cumsum([0.0, *self.shares]) * n).astype(int)
        edges[-1] = n
        labels = np.zeros(n, dtype=np.int64)
        for c in range(len(self.shares)):
            labels[edges[c]:edges[c + 1]] = c
        self.labels_ = labels
        return self


class Stuck(Clusterer):
    """Two halves; reports ``n_iter_ = max_iter`` (and ``converged_`` when given), an
    objective history and the n_clusters it fitted."""

    name = "stuck"
    constraints = {"max_iter": Interval(int, 1, None)}

    def __init__(self, n_clusters: int = 2, *, max_iter: int = 10, converged=None) -> None:
        self.n_clusters = n_clusters
        self.max_iter = max_iter
        self.converged = converged

    def fit(self, data):
        n = data.n_rows
        self.labels_ = (np.arange(n) >= n // 2).astype(np.int64)
        self.n_iter_ = self.max_iter
        self.objective_ = np.array([9.0, 5.0, 4.5])
        if self.converged is not None:
            self.converged_ = bool(self.converged)
        return self


class FairSplit(Clusterer):
    """Two clusters by ``x2`` above its mean; with ``fair=True`` a seeded random split instead (fair in
    expectation, poorly separated). ``objective_`` is the sum of squared distances to the
    cluster means; ``extras_`` records the labellings the step saw."""

    name = "fairsplit"
    requires = frozenset({"features", "sensitive"})
    constraints = {"n_clusters": Interval(int, 2, 2)}

    def __init__(self, n_clusters: int = 2, *, fair: bool = True,
                 random_state: int | None = None) -> None:
        self.n_clusters = n_clusters
        self.fair = fair
        self.random_state = random_state

    def fit(self, data):
        X = data.feature_matrix()
        y = data.features.get_column("x2").to_numpy()
        labels = (y > y.mean()).astype(np.int64)  # planted segment 0 (80 % F) against the rest
        data.sensitive_codes()  # declared: the fair version may use the groups
        if self.fair:  # a random split: every group in the population's proportions
            labels = np.random.default_rng(self.random_state).integers(0, 2, size=labels.size)
        self.labels_ = labels
        means = np.stack([X[labels == c].mean(axis=0) for c in (0, 1)])
        self.objective_ = float(((X - means[labels]) ** 2).sum())
        self.extras_ = {"seen_labellings": sorted(data.labellings)}
        return self


@hookimpl
def fairaudit_register_clusterers() -> list[type]:
    return [Shares, Stuck, FairSplit]
