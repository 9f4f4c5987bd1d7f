"""Variational fair clustering (Ziko, Yuan, Granger and Ben Ayed, AAAI 2021), k-means objective.

Objective over soft assignments S (n x K, rows on the simplex):

    E(S) = sum_{p,k} s_pk ||x_p - c_k||^2  +  lambda sum_k sum_j -u_j log P(j | k),
    P(j | k) = V_j^T S_k / 1^T S_k,

u_j the share of group j in the data (the KL divergence of each cluster's group distribution from
the data's, up to a constant). Each outer iteration updates the centres (means of the current
hard clusters), then runs the paper's bound optimisation (its Eq. 9–10, the authors'
``bound_update``): from S = softmax(-a) (a = squared distances), repeat

    b_pk = lambda sum_j ( u_j / 1^T S_k  -  u_j [p in j] / V_j^T S_k ),
    S <- normalise( S * exp((-a - b) / L) )

until the bound's energy changes by less than 1e-5 relatively; labels are argmax S. The outer
loop stops when E changes by less than 1e-4 relatively (or a cluster empties: the previous
solution is kept). Rows are z-scored and L2-normalised first (``normalize=True``, the authors'
preprocessing). Several attributes add their terms (a row is in one group per attribute).

``lmbda="auto"``: the authors' selection rule (``test_fair_clustering.py``, ``--lmbda-tune``):
fit over a grid of lambda and keep the one with the lowest fairness error
sum_k KL(U || P_k); our grid is the geometric 10, 30, ..., 10 000 spanning their 0–9 900 range.
``fair=False`` (or lambda = 0) is Lloyd's k-means from the same k-means++ start: the twin.

``predict(X)``: nearest centre; ``predict(X, sensitive=S)``: the bound optimisation for the new
rows with the fitted centres and lambda.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from fairaudit._rng import as_generator
from fairaudit.cluster._field import (
    check_float,
    check_int,
    nearest,
    sensitive_codes,
    sq_dist,
    start_fit,
)

__all__ = ["VariationalFairClustering", "LAMBDA_GRID", "bound_update", "fairness_error"]

logger = logging.getLogger(__name__)

LAMBDA_GRID = (10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0, 10000.0)
"""Grid of ``lmbda="auto"``: geometric over the authors' tuning range (0 to 9 900)."""


def _softmax_rows(Z: np.ndarray) -> np.ndarray:
    Z = Z - Z.max(axis=1, keepdims=True)
    E = np.exp(Z)
    return E / E.sum(axis=1, keepdims=True)


def _group_sums(S: np.ndarray, codes: np.ndarray, G: int) -> np.ndarray:
    """V_j^T S_k for every group j and cluster k (G x K)."""
    return np.stack([np.bincount(codes, weights=S[:, k], minlength=G)
                     for k in range(S.shape[1])], axis=1)


def _fair_grad(S: np.ndarray, groups: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """b / lambda: sum over attributes and groups of u_j / 1^T S_k - u_j [p in j] / V_j^T S_k."""
    size = np.maximum(S.sum(axis=0), 1e-15)
    out = np.zeros_like(S)
    for codes, u in groups:
        VS = np.maximum(_group_sums(S, codes, u.size), 1e-15)
        out += (u.sum() / size)[None, :] - (u[:, None] / VS)[codes]
    return out


def _fair_energy(S: np.ndarray, groups: list[tuple[np.ndarray, np.ndarray]]) -> float:
    size = np.maximum(S.sum(axis=0), 1e-20)
    tot = 0.0
    for codes, u in groups:
        VS = _group_sums(S, codes, u.size)
        tot += float((u[:, None] * (np.log(size)[None, :] - np.log(np.maximum(VS, 1e-20)))).sum())
    return tot


def bound_update(a: np.ndarray, groups: list[tuple[np.ndarray, np.ndarray]], lmbda: float,
                 L: float = 2.0, max_iter: int = 10_000, tol: float = 1e-5) -> np.ndarray:
    """The paper's bound optimisation of S for fixed costs ``a`` (n x K); returns S."""
    S = _softmax_rows(-a)
    old = np.inf
    for i in range(max_iter):
        S_in = S
        b = lmbda * _fair_grad(S, groups)
        T = _softmax_rows((-a - b) / L)
        S = S_in * T
        tot = S.sum(axis=1, keepdims=True)
        dead = (tot[:, 0] <= 0) | ~np.isfinite(tot[:, 0])
        if dead.any():  # underflow of the product: restart those rows from the bound's softmax
            S[dead], tot[dead] = T[dead], 1.0
        S /= tot
        E = float(np.nansum(S * np.log(np.maximum(S, 1e-15)) - S * np.log(np.maximum(S_in, 1e-15))
                            + a * S + b * S))
        if i > 1 and abs(E - old) <= tol * abs(old):
            break
        old = E
    return S


def fairness_error(labels: np.ndarray, groups: list[tuple[np.ndarray, np.ndarray]], k: int
                   ) -> float:
    """sum_k KL(U || P_k) over attributes (the authors' ``get_fair_accuracy_proportional``)."""
    tot = 0.0
    for codes, u in groups:
        N = np.zeros((u.size, k))
        np.add.at(N, (codes, labels), 1.0)
        P = N / np.maximum(N.sum(axis=0, keepdims=True), 1e-20)
        tot += float((u[:, None] * (np.log(u)[:, None] - np.log(np.maximum(P, 1e-20)))).sum())
    return tot


class VariationalFairClustering(ClusterMixin, BaseEstimator):
    """Variational fair clustering (k-means objective); ``fair=False`` is k-means.

    Parameters
    ----------
    n_clusters : int, default=2
    fair : bool, default=True
    lmbda : float >= 0 or "auto", default="auto"
        Weight of the fairness term (the paper's lambda); "auto": the lowest fairness error over
        :data:`LAMBDA_GRID`.
    lipschitz : float > 0, default=2.0
        L of the bound update (the authors' default 2.0).
    normalize : bool, default=True
        z-score the columns and L2-normalise the rows first (the authors' preprocessing).
    max_iter : int, default=100
        Outer iterations (the authors' 100).
    random_state : int, Generator or None
    """


    # fitted attributes (set by ``fit``), typed for type checkers
    labels_: NDArray[np.intp]
    cluster_centers_: NDArray[np.float64]
    lmbda_: float
    fairness_error_: float
    lambda_search_: list[dict[str, Any]]
    mean_: NDArray[np.float64]
    scale_: NDArray[np.float64]
    n_iter_: int
    fair_applied_: bool
    n_features_in_: int

    def __init__(
        self,
        n_clusters: int = 2,
        *,
        fair: bool = True,
        lmbda: float | str = "auto",
        lipschitz: float = 2.0,
        normalize: bool = True,
        max_iter: int = 100,
        random_state: Any = None,
    ) -> None:
        self.n_clusters = n_clusters
        self.fair = fair
        self.lmbda = lmbda
        self.lipschitz = lipschitz
        self.normalize = normalize
        self.max_iter = max_iter
        self.random_state = random_state

    def _prep(self, X: np.ndarray) -> np.ndarray:
        if not self.normalize:
            return X
        Z = (X - self.mean_) / self.scale_
        return Z / np.sqrt(np.maximum((Z * Z).sum(axis=1), 1e-14))[:, None]

    def fit(self, X: Any, y: Any = None, *, sensitive: Any = None) -> VariationalFairClustering:
        from sklearn.cluster import kmeans_plusplus

        name, X, n, k = start_fit(self, X)
        check_int(name, "max_iter", self.max_iter, 1)
        check_float(name, "lipschitz", self.lipschitz, 1e-12)
        if self.lmbda != "auto":
            check_float(name, "lmbda", self.lmbda, 0.0)
        rng = as_generator(self.random_state)
        self.mean_ = X.mean(axis=0)
        sd = X.std(axis=0)
        self.scale_ = np.where(sd > 0, sd, 1.0)
        Z = self._prep(X)
        attrs = sensitive_codes(sensitive, n, name, fair=bool(self.fair))
        groups = None
        if attrs is not None and self.fair:
            groups = [(c, np.bincount(c, minlength=len(g)) / n) for g, c in attrs]
        C0, _ = kmeans_plusplus(Z, k, random_state=int(rng.integers(2**31 - 1)))
        if groups is None:
            lams = [0.0]
        elif self.lmbda == "auto":
            lams = list(LAMBDA_GRID)
        else:
            lams = [float(self.lmbda)]
        tried = []
        best = None
        for lam in lams:
            C, lab, it = self._run(Z, C0, groups, lam)
            err = fairness_error(lab, groups, k) if groups is not None else float("nan")
            tried.append({"lmbda": lam, "fairness_error": err, "n_iter": it})
            if best is None or (groups is not None and err < best[3] - 1e-12):
                best = (C, lab, lam, err, it)
        C, lab, lam, err, it = best
        self.cluster_centers_ = C
        self.labels_ = lab.astype(np.int64)
        self.lmbda_ = float(lam)
        self.fairness_error_ = float(err)
        self.lambda_search_ = tried
        self.n_iter_ = int(it)
        self.fair_applied_ = groups is not None
        return self

    def _run(self, Z: np.ndarray, C0: np.ndarray, groups: Any, lam: float
             ) -> tuple[np.ndarray, np.ndarray, int]:
        k = C0.shape[0]
        C = C0.copy()
        lab = nearest(Z, C)
        old_E = np.inf
        it = 0
        for it in range(1, int(self.max_iter) + 1):
            if it > 1:
                C = np.stack([Z[lab == c].mean(axis=0) for c in range(k)])
            a = sq_dist(Z, C)
            if groups is not None and lam > 0:
                S = bound_update(a, groups, lam, float(self.lipschitz))
                new = S.argmax(axis=1)
            else:
                S = None
                new = a.argmin(axis=1)
            if np.unique(new).size < k:  # a cluster emptied: keep the previous solution
                break
            lab = new
            if S is None:
                E = float(a[np.arange(lab.size), lab].sum())
            else:
                E = float((S * a).sum()) + lam * _fair_energy(S, groups)
            if it > 1 and abs(E - old_E) <= 1e-4 * abs(old_E):
                break
            old_E = E
        C = np.stack([Z[lab == c].mean(axis=0) if (lab == c).any() else C[c] for c in range(k)])
        return C, lab, it

    def fit_predict(self, X: Any, y: Any = None, *, sensitive: Any = None) -> NDArray[np.intp]:
        return self.fit(X, sensitive=sensitive).labels_

    def predict(self, X: Any, sensitive: Any = None) -> NDArray[np.intp]:
        """Nearest centre (in the normalised space); with ``sensitive``, the bound optimisation
        of the new rows' assignments with the fitted centres and lambda."""
        check_is_fitted(self, "cluster_centers_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        Z = self._prep(X)
        if sensitive is None or not self.fair_applied_ or self.lmbda_ == 0:
            return nearest(Z, self.cluster_centers_)
        from fairaudit.cluster.ffcm import encode_sensitive

        n = X.shape[0]
        attrs = encode_sensitive(sensitive, n, type(self).__name__)
        groups = [(c, np.bincount(c, minlength=len(g)) / n) for g, c in attrs]
        S = bound_update(sq_dist(Z, self.cluster_centers_), groups, self.lmbda_,
                         float(self.lipschitz))
        return S.argmax(axis=1).astype(np.int64)
