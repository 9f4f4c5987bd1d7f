"""Fairlet clustering: Backurs et al.'s scalable fairlet decomposition (ICML 2019) or
Chierichetti et al.'s min-cost-flow decomposition (NeurIPS 2017), then k-median (or k-means) on
the fairlet centres; every row takes its fairlet's cluster, so every cluster is a union of
fairlets and has balance >= p/q between the two groups.

- ``decomposition="scalable"`` (default): the quadtree decomposition with target p/q (default:
  the largest p/q <= the data's minority/majority ratio with q <= 10; the FairDen authors run
  p = 1, q = ceil(majority / minority), which leaves 1:1 pairs and (q, 1) fairlets whose group
  shares are far from the data's); fairlet centres are medoids, clustered by weighted k-medoids (Backurs et al. use
  MATLAB's ``kmedoids``). ``objective="kmeans"``: centres are fairlet means, clustered by weighted
  k-means (scikit-learn).
- ``decomposition="mcf"``: (1, q)-fairlets by an exact min-cost flow; O(n^2) variables, refused
  above ``mcf_max_rows`` rows (default 1,000; the FairDen paper's runs exceeded two hours above
  2,000 rows).
- ``fair=False``: the same k-median / k-means on the rows themselves (every row its own fairlet):
  the twin.

``predict(X)`` gives the nearest centre; ``predict(X, sensitive=s)`` decomposes the new rows into
fairlets (scalable decomposition) and gives every fairlet the cluster nearest its centre, so the
new rows' clusters keep the balance.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from fairaudit._rng import as_generator
from fairaudit.cluster._fairlet_decomp import (
    fairlet_centres,
    fairlet_index,
    mcf_fairlets,
    scalable_fairlets,
)
from fairaudit.cluster._field import check_int, nearest, sensitive_codes, sq_dist, start_fit

__all__ = ["FairletClustering", "MCF_MAX_ROWS", "tightest_target", "weighted_kmedoids"]

logger = logging.getLogger(__name__)

MCF_MAX_ROWS = 1000
"""Default ``mcf_max_rows``: the MCF decomposition's LP has (n/2)^2 edge variables."""
AUTO_MAX_Q = 10
"""``q="auto"`` (scalable): the tightest balance target p/q below the data's ratio with q <= this."""
CANDIDATES = 1000
"""k-medoids: a cluster's medoid is searched among at most this many of its members."""


def tightest_target(small: int, large: int, max_q: int = AUTO_MAX_Q) -> tuple[int, int]:
    """The largest p/q <= small/large with q <= ``max_q`` (ties: the smaller q)."""
    best = (1, math.ceil(large / small))
    for q in range(1, max_q + 1):
        p = (small * q) // large
        if p >= 1 and p * best[1] > best[0] * q:
            best = (p, q)
    g = math.gcd(*best)
    return best[0] // g, best[1] // g


def _cost(X: np.ndarray, w: np.ndarray, C: np.ndarray) -> tuple[float, np.ndarray]:
    lab = np.empty(X.shape[0], dtype=np.int64)
    tot = 0.0
    for s in range(0, X.shape[0], 65_536):
        d = np.sqrt(sq_dist(X[s:s + 65_536], C))
        lab[s:s + 65_536] = d.argmin(axis=1)
        tot += float((w[s:s + 65_536] * d.min(axis=1)).sum())
    return tot, lab


def weighted_kmedoids(
    X: np.ndarray, w: np.ndarray, k: int, rng: np.random.Generator, *, n_init: int = 10,
    max_iter: int = 100,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Weighted k-medoids (Voronoi iteration, k-means++-style seeding with weights): minimises
    sum_i w_i d(x_i, nearest medoid) over medoids among the rows. Returns (medoid rows, labels,
    cost); the lowest cost of ``n_init`` starts is kept."""
    n = X.shape[0]
    best = None
    for _ in range(n_init):
        med = [int(rng.choice(n, p=w / w.sum()))]
        dmin = np.sqrt(sq_dist(X, X[med]).ravel())
        while len(med) < k:
            pr = w * dmin ** 2
            nxt = int(rng.choice(n, p=pr / pr.sum())) if pr.sum() > 0 else int(rng.integers(n))
            med.append(nxt)
            dmin = np.minimum(dmin, np.sqrt(sq_dist(X, X[[nxt]]).ravel()))
        med_a = np.array(med)
        cost, lab = _cost(X, w, X[med_a])
        for _ in range(max_iter):
            new = med_a.copy()
            for c in range(k):
                mem = np.flatnonzero(lab == c)
                if mem.size == 0:
                    continue
                cand = mem if mem.size <= CANDIDATES else np.union1d(
                    rng.choice(mem, CANDIDATES, replace=False), [med_a[c]])
                tot = np.zeros(cand.size)
                for s in range(0, mem.size, 4096):
                    blk = mem[s:s + 4096]
                    tot += (np.sqrt(sq_dist(X[cand], X[blk])) * w[blk][None, :]).sum(axis=1)
                new[c] = cand[int(tot.argmin())]
            if np.array_equal(new, med_a):
                break
            new_cost, new_lab = _cost(X, w, X[new])
            if new_cost >= cost - 1e-12 * max(cost, 1.0):
                break
            med_a, cost, lab = new, new_cost, new_lab
        if best is None or cost < best[2]:
            best = (med_a, lab, cost)
    assert best is not None
    return best


class FairletClustering(ClusterMixin, BaseEstimator):
    """Fairlet decomposition + k-median / k-means on fairlet centres (two groups).

    Parameters
    ----------
    n_clusters : int, default=2
    fair : bool, default=True
        ``False``: k-median / k-means on the rows (no fairlets): the twin.
    decomposition : {"scalable", "mcf"}, default="scalable"
        Backurs et al.'s quadtree decomposition or Chierichetti et al.'s min-cost flow.
    objective : {"kmedian", "kmeans"}, default="kmedian"
    p, q : int or "auto"
        Balance target p/q (p <= q). ``q="auto"``: the largest p/q <= minority / majority with
        q <= 10 (fairlets near the data's ratio; p = 1, q = ceil(majority / minority) is the FairDen
        authors' setting). The MCF decomposition takes p = 1 and t = q (auto: that ceiling).
    n_init : int, default=10
        Starts of the k-median / k-means on the centres.
    mcf_max_rows : int, default=1000
        ``decomposition="mcf"`` refuses more rows than this (ValueError).
    random_state : int, Generator or None
    """


    # fitted attributes (set by ``fit``), typed for type checkers
    labels_: NDArray[np.intp]
    cluster_centers_: NDArray[np.float64]
    fairlet_labels_: NDArray[np.intp]
    n_fairlets_: int
    objective_: float
    balance_target_: tuple[int, int] | None
    fair_applied_: bool
    n_features_in_: int

    def __init__(
        self,
        n_clusters: int = 2,
        *,
        fair: bool = True,
        decomposition: str = "scalable",
        objective: str = "kmedian",
        p: int = 1,
        q: int | str = "auto",
        n_init: int = 10,
        mcf_max_rows: int = MCF_MAX_ROWS,
        random_state: Any = None,
    ) -> None:
        self.n_clusters = n_clusters
        self.fair = fair
        self.decomposition = decomposition
        self.objective = objective
        self.p = p
        self.q = q
        self.n_init = n_init
        self.mcf_max_rows = mcf_max_rows
        self.random_state = random_state

    def _red(self, sensitive: Any, n: int, name: str) -> np.ndarray | None:
        attrs = sensitive_codes(sensitive, n, name, fair=bool(self.fair))
        if attrs is None or not self.fair:
            return None
        if len(attrs) != 1 or len(attrs[0][0]) != 2:
            groups = [len(g) for g, _ in attrs]
            raise ValueError(
                f"{name} balances exactly one sensitive attribute with two groups; got "
                f"{len(attrs)} attribute(s) with {groups} group(s)."
            )
        return attrs[0][1] == 0

    def _pq(self, red: np.ndarray, name: str) -> tuple[int, int]:
        r, b = int(red.sum()), int((~red).sum())
        if self.q == "auto":
            if self.decomposition == "mcf":
                return 1, math.ceil(max(r, b) / min(r, b))
            return tightest_target(min(r, b), max(r, b))
        p = check_int(name, "p", self.p, 1)
        q = check_int(name, "q", self.q, 1)
        if p > q:
            raise ValueError(f"The 'p' parameter of {name} must be <= q; got p = {p}, q = {q}.")
        if self.decomposition == "mcf" and p != 1:
            raise ValueError(f"{name}: the MCF decomposition takes p = 1 (a (1, q) target).")
        g = math.gcd(p, q)
        return p // g, q // g

    def fit(self, X: Any, y: Any = None, *, sensitive: Any = None) -> FairletClustering:
        from sklearn.cluster import KMeans

        name, X, n, k = start_fit(self, X)
        check_int(name, "n_init", self.n_init, 1)
        mcf_max = check_int(name, "mcf_max_rows", self.mcf_max_rows, 2)
        if self.decomposition not in ("scalable", "mcf"):
            raise ValueError(f"The 'decomposition' parameter of {name} must be 'scalable' or "
                             f"'mcf'; got {self.decomposition!r}.")
        if self.objective not in ("kmedian", "kmeans"):
            raise ValueError(f"The 'objective' parameter of {name} must be 'kmedian' or "
                             f"'kmeans'; got {self.objective!r}.")
        rng = as_generator(self.random_state)
        red = self._red(sensitive, n, name)
        if red is not None:
            if red.all() or not red.any():
                raise ValueError(f"{name}: one of the two groups is empty.")
            p, q = self._pq(red, name)
            if self.decomposition == "mcf":
                if n > mcf_max:
                    raise ValueError(
                        f"The MCF fairlet decomposition of {name} solves a flow with "
                        f"(n/2)^2 edges and is limited to mcf_max_rows = {mcf_max} rows; got "
                        f"{n}. Fit on a sample, or use decomposition='scalable'."
                    )
                fairlets, _ = mcf_fairlets(X, red, q, squared=self.objective == "kmeans")
            else:
                fairlets = scalable_fairlets(X, red, p, q, rng)
            self.balance_target_ = (p, q)
        else:
            fairlets = [np.array([i]) for i in range(n)]
            self.balance_target_ = None
        centres = fairlet_centres(X, fairlets, medoid=self.objective == "kmedian")
        w = np.array([f.size for f in fairlets], dtype=float)
        m = centres.shape[0]
        if k > m:
            raise ValueError(f"{name}: n_clusters = {k} exceeds the {m} fairlets.")
        if self.objective == "kmedian":
            med, lab, cost = weighted_kmedoids(centres, w, k, rng, n_init=int(self.n_init))
            self.cluster_centers_ = centres[med]
        else:
            km = KMeans(k, n_init=int(self.n_init), random_state=int(rng.integers(2**31 - 1)))
            km.fit(centres, sample_weight=w)
            lab, cost = km.labels_, float(km.inertia_)
            self.cluster_centers_ = km.cluster_centers_
        fidx = fairlet_index(n, fairlets)
        self.labels_ = np.asarray(lab, dtype=np.int64)[fidx]
        self.fairlet_labels_ = fidx
        self.n_fairlets_ = int(m)
        self.objective_ = float(cost)
        self.fair_applied_ = red is not None
        return self

    def fit_predict(self, X: Any, y: Any = None, *, sensitive: Any = None) -> NDArray[np.intp]:
        return self.fit(X, sensitive=sensitive).labels_

    def predict(self, X: Any, sensitive: Any = None, *, random_state: Any = None) -> NDArray[np.intp]:
        """Nearest centre; with ``sensitive`` (two groups), the new rows are decomposed into
        fairlets (scalable decomposition, the fitted p/q when the new rows allow it) and each
        fairlet goes to the centre nearest its own centre."""
        check_is_fitted(self, "labels_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        if sensitive is None or not self.fair_applied_ or X.shape[0] < 2:
            return nearest(X, self.cluster_centers_)
        red = self._red(sensitive, X.shape[0], type(self).__name__)
        if red is None or red.all() or not red.any() or self.balance_target_ is None:
            return nearest(X, self.cluster_centers_)
        p, q = self.balance_target_
        r, b = int(red.sum()), int((~red).sum())
        if min(r, b) * q < max(r, b) * p:  # the new rows are less balanced than the fit's target
            p, q = 1, math.ceil(max(r, b) / min(r, b))
        rng = as_generator(random_state if random_state is not None else 0)
        fairlets = scalable_fairlets(X, red, p, q, rng)
        centres = fairlet_centres(X, fairlets, medoid=self.objective == "kmedian")
        return nearest(centres, self.cluster_centers_)[fairlet_index(X.shape[0], fairlets)]
