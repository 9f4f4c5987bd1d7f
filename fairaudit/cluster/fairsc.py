"""FairSC: spectral clustering with group-fairness constraints (Kleindessner, Samadi, Awasthi and
Morgenstern, "Guarantees for Spectral Clustering with Fairness Constraints", ICML 2019).

Affinity graph: the symmetric k-nearest-neighbour graph of the rows (k = 15, as the FairDen paper
builds it for tabular data, ``W = (A + A^T) / 2`` with ``A`` scikit-learn's ``kneighbors_graph``);
``affinity="connectivity"`` gives every edge weight 1 (scikit-learn's spectral clustering),
``"distance"`` weights an edge by its length as the FairDen authors' code does.

With h groups of one sensitive attribute, ``F`` is the n x (h-1) matrix with columns
``f_s = 1[g = s] - |s|/n`` (Algorithm 2/3 of the paper). FairSC (unnormalized, ratio cut) takes
the k eigenvectors of the Laplacian ``L = D - W`` with the smallest eigenvalues *in the subspace*
``F^T H = 0`` and runs k-means on the rows of ``H``; normalized FairSC (normalized cut) solves the
generalised problem ``L h = lambda D h`` in the same subspace. The paper writes both with a dense
null-space basis ``Z`` of ``F^T`` (n x (n-h+1)); that is used for n <= ``dense_max`` rows (the
small-n oracle). Above it, the same eigenvectors are found without forming ``Z``: Lanczos
(scipy's ``eigsh``) on the sparse operator ``P (cI - L) P`` with ``P`` the projection onto the
complement of ``F`` (its k largest eigenvalues are ``c`` minus the k smallest of ``L`` there,
``c = 2 max degree``); for the normalized form on ``P D^-1/2 W D^-1/2 P`` with the constraint
``D^-1/2 F`` and ``h = D^-1/2 w`` — O(n k) memory, no fill-in.

``fair=False`` is the same pipeline without the constraint (ordinary unnormalized / normalized
spectral clustering: the twin). Several sensitive attributes are balanced through their
intersection (one group per combination present). ``predict`` gives a new row the majority
cluster of its ``n_neighbors`` nearest fitted rows (FairSC has no out-of-sample rule).
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
    intersect_codes,
    sensitive_codes,
    start_fit,
)

__all__ = [
    "FairSC", "conductance", "fair_spectral_embedding", "isolated_sets", "knn_affinity",
    "proportion_gap",
]

logger = logging.getLogger(__name__)

DENSE_MAX = 1500
"""Default ``dense_max``: up to this many rows the paper's dense null-space computation runs."""
ISOLATION = 0.02
"""Default ``isolation``: a small cluster whose conductance (cut / volume) is below this is set
aside."""
ASIDE_ROUNDS = 3
"""At most this many refits after setting near-isolated clusters aside."""


def knn_affinity(X: np.ndarray, n_neighbors: int, affinity: str = "connectivity") -> Any:
    """Symmetric k-NN affinity ``(A + A^T) / 2`` (scipy CSR). ``n_neighbors`` is capped at n-1."""
    from sklearn.neighbors import kneighbors_graph

    k = min(int(n_neighbors), X.shape[0] - 1)
    mode = "distance" if affinity == "distance" else "connectivity"
    A = kneighbors_graph(X, n_neighbors=k, mode=mode, include_self=False)
    return (0.5 * (A + A.T)).tocsr()


def conductance(W: Any, labels: np.ndarray) -> np.ndarray:
    """cut(C, rest) / vol(C) of every cluster C of ``labels`` (0..k-1) in the graph ``W``."""
    k = int(labels.max()) + 1
    deg = np.asarray(W.sum(axis=1)).ravel()
    Wc = W.tocoo()
    same = labels[Wc.row] == labels[Wc.col]
    inner = np.bincount(labels[Wc.row][same], weights=Wc.data[same], minlength=k)
    vol = np.bincount(labels, weights=deg, minlength=k)
    return np.where(vol > 0, 1.0 - inner / np.maximum(vol, 1e-300), 0.0)


def isolated_sets(W: Any, labels: np.ndarray | None, isolation: float, k: int
                  ) -> list[np.ndarray]:
    """Small sets the graph barely ties to the rest: without ``labels`` the connected
    components, with them the clusters whose conductance is below ``isolation`` — of those,
    each with fewer than n / (2k) rows (half a cluster of equal sizes)."""
    from scipy.sparse.csgraph import connected_components

    if labels is None:
        nc, labels = connected_components(W, directed=False)
        if nc == 1:
            return []
        weak = np.ones(nc, dtype=bool)
    else:
        weak = conductance(W, labels) < isolation
    sizes = np.bincount(labels, minlength=weak.size)
    weak &= sizes < labels.size / (2.0 * k)
    return [labels == c for c in np.flatnonzero(weak)]


def proportion_gap(labels: np.ndarray, codes: np.ndarray) -> float:
    """How far the clusters are from FairSC's constraint (every cluster has the data's group
    proportions): max over clusters k and groups g of |share of g in k - r_g| / r_g."""
    k, h = int(labels.max()) + 1, int(codes.max()) + 1
    N = np.zeros((k, h))
    np.add.at(N, (labels, codes), 1.0)
    r = N.sum(axis=0) / N.sum()
    share = N / np.maximum(N.sum(axis=1, keepdims=True), 1.0)
    return float((np.abs(share - r[None, :]) / np.maximum(r[None, :], 1e-300)).max())


def _constraint_matrix(codes: np.ndarray, h: int) -> np.ndarray:
    """F (n x (h-1)): ``f_s = 1[g = s] - |s|/n`` for the first h-1 groups."""
    n = codes.shape[0]
    F = np.zeros((n, max(h - 1, 0)))
    for s in range(h - 1):
        col = (codes == s).astype(float)
        F[:, s] = col - col.mean()
    return F


def fair_spectral_embedding(
    W: Any, codes: np.ndarray | None, h: int, k: int, *, normalized: bool,
    dense_max: int = DENSE_MAX, rng: np.random.Generator | None = None,
    tol: float = 1e-6, maxiter: int = 10,
) -> tuple[np.ndarray, np.ndarray, str]:
    """``(H, eigenvalues, solver)``: the k smallest (generalised) eigenvectors of the Laplacian of
    ``W`` in the subspace ``F^T H = 0`` (no constraint when ``codes`` is None)."""
    import scipy.sparse as sp

    n = W.shape[0]
    deg = np.asarray(W.sum(axis=1)).ravel()
    if normalized and (deg <= 0).any():
        raise ValueError("normalized FairSC needs every row to have an edge (degree > 0).")
    L = (sp.diags(deg) - W).tocsr()
    F = _constraint_matrix(codes, h) if codes is not None else np.zeros((n, 0))
    if n - F.shape[1] < k:
        raise ValueError(
            f"FairSC needs n - (groups - 1) >= n_clusters; got n = {n}, {F.shape[1] + 1} groups, "
            f"k = {k}."
        )
    if n <= dense_max:
        from scipy.linalg import eigh, null_space

        Ld = L.toarray()
        Z = null_space(F.T) if F.shape[1] else np.eye(n)
        M = Z.T @ Ld @ Z
        M = (M + M.T) / 2
        if normalized:
            Dz = Z.T @ (deg[:, None] * Z)
            vals, Y = eigh(M, (Dz + Dz.T) / 2, subset_by_index=[0, k - 1])
        else:
            vals, Y = eigh(M, subset_by_index=[0, k - 1])
        return Z @ Y, vals, "dense"
    from scipy.sparse.linalg import LinearOperator, eigsh

    rng = rng if rng is not None else np.random.default_rng(0)
    if normalized:
        # w = D^1/2 h: the k largest eigenvectors of D^-1/2 W D^-1/2 with (D^-1/2 F)^T w = 0
        dm = 1.0 / np.sqrt(deg)
        A = (sp.diags(dm) @ W @ sp.diags(dm)).tocsr()
        Fc = F * dm[:, None]
        shift = 1.0
    else:
        # c - lambda: the k largest eigenvectors of cI - L (c >= lambda_max, Gershgorin)
        shift = 2.0 * float(deg.max())
        A = (sp.diags(shift - deg) + W).tocsr()
        Fc = F
    Q = np.linalg.qr(Fc)[0] if Fc.shape[1] else None

    def matvec(b: np.ndarray) -> np.ndarray:
        b = np.asarray(b).ravel()
        if Q is None:
            return A @ b
        b = b - Q @ (Q.T @ b)
        x = A @ b
        return x - Q @ (Q.T @ x)

    op = LinearOperator((n, n), matvec=matvec, dtype=np.float64)
    ncv = min(n, max(4 * k + 1, 40))
    vals, V = eigsh(op, k=k, which="LA", tol=tol, ncv=ncv, maxiter=maxiter * n,
                    v0=rng.standard_normal(n))
    order = np.argsort(-vals)
    vals, V = vals[order], V[:, order]
    lam = shift - vals
    if normalized:
        V = V * dm[:, None]
    return V, lam, "lanczos"


class FairSC(ClusterMixin, BaseEstimator):
    """Fair spectral clustering (Kleindessner et al. 2019); ``fair=False`` is spectral clustering.

    Parameters
    ----------
    n_clusters : int, default=2
    fair : bool, default=True
        ``False``: no fairness constraint (ordinary spectral clustering on the same graph).
    normalized : bool, default=False
        ``True``: normalized FairSC (normalized cut, the paper's Algorithm 3).
    n_neighbors : int, default=15
        k of the k-NN affinity graph (the FairDen paper's 15).
    affinity : {"connectivity", "distance"}, default="connectivity"
        Edge weights: 1, or the edge's length (the FairDen authors' code).
    n_init : int, default=10
        k-means restarts on the spectral embedding.
    dense_max : int, default=1500
        Up to this many rows the paper's dense null-space computation runs; above, Lanczos.
    isolation : float in [0, 1), default=0.02
        Small sets the graph barely ties to the rest (docs/methods/fairsc.md): every connected
        component, and every cluster found whose conductance cut/volume is below
        ``isolation``, with fewer than n / (2 n_clusters) rows is set aside; FairSC is refitted
        on the graph of the other rows (at most 3 times) and each row set aside joins the
        majority cluster of its ``n_neighbors`` nearest clustered rows. 0: the k-NN graph as
        it is (the paper's pipeline).
    random_state : int, Generator or None

    Attributes
    ----------
    labels_, embedding_, eigenvalues_, solver_, n_groups_, fair_applied_
    aside_ : ndarray of bool
        Rows set aside as small isolated sets (assigned by their nearest clustered rows).
    aside_rounds_ : int
        Refits after setting near-isolated clusters aside.
    """


    # fitted attributes (set by ``fit``), typed for type checkers
    labels_: NDArray[np.intp]
    embedding_: NDArray[np.float64]
    eigenvalues_: NDArray[np.float64]
    solver_: str
    n_groups_: int
    fair_applied_: bool
    aside_: NDArray[np.bool_]
    aside_rounds_: int
    proportion_gap_: float
    n_features_in_: int

    def __init__(
        self,
        n_clusters: int = 2,
        *,
        fair: bool = True,
        normalized: bool = False,
        n_neighbors: int = 15,
        affinity: str = "connectivity",
        n_init: int = 10,
        dense_max: int = DENSE_MAX,
        isolation: float = ISOLATION,
        random_state: Any = None,
    ) -> None:
        self.n_clusters = n_clusters
        self.fair = fair
        self.normalized = normalized
        self.n_neighbors = n_neighbors
        self.affinity = affinity
        self.n_init = n_init
        self.dense_max = dense_max
        self.isolation = isolation
        self.random_state = random_state

    def fit(self, X: Any, y: Any = None, *, sensitive: Any = None) -> FairSC:
        """Fit on X (n x d) with ``sensitive`` groups (1-D, or n x a: their intersection)."""

        name, X, n, k = start_fit(self, X)
        t = check_int(name, "n_neighbors", self.n_neighbors, 1)
        check_int(name, "n_init", self.n_init, 1)
        check_int(name, "dense_max", self.dense_max, 0)
        if self.affinity not in ("connectivity", "distance"):
            raise ValueError(
                f"The 'affinity' parameter of {name} must be 'connectivity' or 'distance'; got "
                f"{self.affinity!r}."
            )
        rng = as_generator(self.random_state)
        attrs = sensitive_codes(sensitive, n, name, fair=bool(self.fair))
        codes, h = (None, 1)
        if attrs is not None and self.fair:
            codes, h = intersect_codes(attrs)
            if h < 2:
                codes = None
        isolation = check_float(name, "isolation", self.isolation, 0.0, 1.0, open_hi=True)
        seed = int(rng.integers(2**31 - 1))
        # candidate 0: the k-NN graph as it is; then the graph without the small isolated sets
        # (components, then near-isolated clusters found), refitted at most ASIDE_ROUNDS times
        kept = np.ones(n, dtype=bool)
        W = knn_affinity(X, t, self.affinity)
        best = None
        for rounds in range(ASIDE_ROUNDS + 1):
            fit = self._fit_kept(X, W, kept, codes, h, k, seed, rng)
            gap = proportion_gap(fit["labels"], codes) if codes is not None else 0.0
            if best is None or gap < best["gap"] - 1e-9:
                best = {**fit, "gap": gap, "rounds": rounds}
            if isolation <= 0 or codes is None or h < 2 or rounds == ASIDE_ROUNDS:
                break
            sets = isolated_sets(W, None, isolation, k) if rounds == 0 else []
            sets += isolated_sets(W, fit["kept_labels"], isolation, k)
            if not sets:
                break
            idx = np.flatnonzero(kept)
            kept = kept.copy()
            kept[idx[np.logical_or.reduce(sets)]] = False
            W = knn_affinity(X[kept], t, self.affinity)
            logger.info("FairSC: %d isolated set(s) of %s rows set aside; refit %d",
                        len(sets), [int(m.sum()) for m in sets], rounds + 1)
        self.embedding_ = best["H"]
        self.eigenvalues_ = np.asarray(best["vals"], dtype=float)
        self.solver_ = best["solver"]
        self.n_groups_ = int(h)
        self.fair_applied_ = bool(codes is not None and h > 1)
        self.aside_ = ~best["kept"]
        self.aside_rounds_ = int(best["rounds"])
        self.proportion_gap_ = float(best["gap"])
        self._nn, self._nn_labels = best["nn"], best["kept_labels"]
        self.labels_ = best["labels"]
        return self

    def _fit_kept(self, X: np.ndarray, W: Any, kept: np.ndarray, codes: np.ndarray | None,
                  h: int, k: int, seed: int, rng: np.random.Generator) -> dict:
        """FairSC on the rows ``kept`` (graph ``W`` over them); the others take the majority
        cluster of their nearest kept rows."""
        from sklearn.cluster import KMeans
        from sklearn.neighbors import NearestNeighbors

        ck, hk = None, 1
        if codes is not None and h > 1:
            ck = np.unique(codes[kept], return_inverse=True)[1].ravel()
            hk = int(ck.max()) + 1
        H, vals, solver = fair_spectral_embedding(
            W, ck if hk > 1 else None, hk, k, normalized=bool(self.normalized),
            dense_max=int(self.dense_max), rng=rng,
        )
        km = KMeans(n_clusters=k, n_init=int(self.n_init), random_state=seed).fit(H)
        t = min(int(self.n_neighbors), int(kept.sum()))
        self._nn = NearestNeighbors(n_neighbors=t).fit(X[kept])
        self._nn_labels = km.labels_.astype(np.int64)
        labels = np.empty(X.shape[0], dtype=np.int64)
        labels[kept] = self._nn_labels
        if (~kept).any():
            labels[~kept] = self._vote(X[~kept], k)
        return {"H": H, "vals": vals, "solver": solver, "kept": kept, "labels": labels,
                "kept_labels": self._nn_labels, "nn": self._nn}

    def fit_predict(self, X: Any, y: Any = None, *, sensitive: Any = None) -> NDArray[np.intp]:
        return self.fit(X, sensitive=sensitive).labels_

    def predict(self, X: Any) -> NDArray[np.intp]:
        """Majority cluster among the ``n_neighbors`` nearest fitted rows (ties: the nearer)."""
        check_is_fitted(self, "labels_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return self._vote(X, int(self.labels_.max()) + 1)

    def _vote(self, X: np.ndarray, k: int) -> np.ndarray:
        out = np.empty(X.shape[0], dtype=np.int64)
        for s in range(0, X.shape[0], 50_000):
            d, idx = self._nn.kneighbors(X[s:s + 50_000])
            lab = self._nn_labels[idx]
            w = 1.0 / (1.0 + np.arange(lab.shape[1]))[None, :] * 1e-6 + 1.0  # tie-break: nearer
            votes = np.zeros((lab.shape[0], k))
            np.add.at(votes, (np.repeat(np.arange(lab.shape[0]), lab.shape[1]), lab.ravel()),
                      np.broadcast_to(w, lab.shape).ravel())
            out[s:s + 50_000] = votes.argmax(axis=1)
        return out
