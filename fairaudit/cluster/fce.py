"""FCE: fair clustering ensemble with equal cluster capacity (seed 003).

One unit: one estimator (FCE), its consensus updates and capacity rounding in the paper's order.

Given ``m`` base labellings ``Y_i`` (one-hot, n x k_i) and protected groups ``G`` (one-hot, n x T),
FCE finds a consensus labelling ``Y`` (one-hot, n x c) minimising

    J = sum_i alpha_i^2 ||H - Y_i R_i||^2 + lambda1 ||Y - H R||^2 + lambda2 ||G^T Y||^2

over an orthonormal embedding ``H`` (n x K, K = max(c, k_1..k_m)), square rotations ``R_i``
(K x K, they align each base to the embedding, so no Hungarian matching is needed), a
semi-orthogonal ``R`` (K x c), weights ``alpha`` on the simplex, and ``Y``. ``(G^T Y)[t, k]`` is the
number of rows of group t in cluster k, so the last term is minimal when every group is spread
evenly over equally large clusters (fairness *and* equal capacity, the paper's fairness_CCE).

Every block update is an exact minimiser of J given the others (polar factors for H, R, R_i;
closed form for alpha; an improving coordinate descent for Y), so J evaluated directly never
increases; ``objective_`` records it after every iteration.

Treatment of noise (-1) in a base labelling: the row *abstains* in that base — its row of Y_i is
all zeros, so that base neither pulls it towards a cluster nor gets aligned on it. The consensus
itself labels every row (no noise).
"""

from __future__ import annotations

import logging
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from fairaudit._rng import as_generator
from fairaudit.cluster._fce_predict import (
    apply_lookup,
    closed_form_labels,
    group_values,
    groups_as_fitted,
    pattern_lookup,
)

logger = logging.getLogger(__name__)

__all__ = ["FCEIteration", "FairClusteringEnsemble", "fce_objective", "kmeans_bases"]


@dataclass(frozen=True)
class FCEIteration:
    """Objective J and its three terms after one iteration."""

    iteration: int
    objective: float
    ensemble: float
    discretisation: float
    fairness: float
    moves: int


def _polar(M: np.ndarray) -> np.ndarray:
    """Orthogonal polar factor U V^T of M (argmax of tr(Q^T M) over Q with Q^T Q = I)."""
    U, _, Vt = np.linalg.svd(M, full_matrices=False)
    return U @ Vt


def _encode_bases(base_labels: Any, name: str) -> tuple[np.ndarray, list[int], list[np.ndarray]]:
    """Validate base labellings -> (n x m int array with codes 0..k_i-1 and -1), k_i list, the
    label value of each code per base."""
    if isinstance(base_labels, list | tuple) and base_labels and not np.isscalar(base_labels[0]):
        lengths = {len(b) for b in base_labels}
        if len(lengths) > 1:
            raise ValueError(
                f"{name}: base labellings have different lengths {sorted(lengths)}; every "
                "labelling must label the same rows."
            )
        arr = np.column_stack([np.asarray(b) for b in base_labels])
    else:
        arr = np.asarray(base_labels)
    if arr.ndim != 2:
        raise ValueError(
            f"{name}: 'base_labels' must be an n x m array (one column per base labelling); got "
            f"an array with shape {arr.shape}."
        )
    n, m = arr.shape
    if m < 2:
        raise ValueError(f"{name}: an ensemble needs at least two base labellings; got {m}.")
    if n < 2:
        raise ValueError(f"{name}: need at least two rows; got {n}.")
    if not np.issubdtype(arr.dtype, np.integer):
        if (
            np.issubdtype(arr.dtype, np.floating)
            and np.all(np.isfinite(arr))
            and np.all(arr == np.round(arr))
        ):
            arr = arr.astype(np.int64)
        else:
            raise ValueError(
                f"{name}: base labels must be integers (-1 for noise); got dtype {arr.dtype}."
            )
    if (arr < -1).any():
        raise ValueError(f"{name}: base labels must be >= -1 (-1 = noise); got {arr.min()}.")
    codes = np.full((n, m), -1, dtype=np.int64)
    ks: list[int] = []
    values: list[np.ndarray] = []
    for j in range(m):
        col = arr[:, j]
        valid = col >= 0
        if not valid.any():
            raise ValueError(f"{name}: base labelling {j} marks every row as noise.")
        uniq, inv = np.unique(col[valid], return_inverse=True)
        codes[valid, j] = inv
        ks.append(len(uniq))
        values.append(uniq)
    return codes, ks, values


def _encode_groups(sensitive: Any, n: int, name: str) -> tuple[np.ndarray, list[int]]:
    """Sensitive values -> (n x p int array of global group columns in the stacked G), sizes."""
    if sensitive is None:
        return np.zeros((n, 1), dtype=np.int64), [1]
    S = np.asarray(sensitive, dtype=object) if not isinstance(sensitive, np.ndarray) else sensitive
    if S.ndim == 1:
        S = S.reshape(-1, 1)
    if S.ndim != 2 or S.shape[0] != n:
        raise ValueError(
            f"{name}: 'sensitive' must have one row per labelled row ({n}); got shape {S.shape}."
        )
    cols = []
    sizes = []
    offset = 0
    for j in range(S.shape[1]):
        col = S[:, j]
        try:
            bad = np.array([v is None or (isinstance(v, float) and v != v) for v in col])
        except TypeError:  # pragma: no cover - defensive
            bad = np.zeros(n, dtype=bool)
        if bad.any():
            raise ValueError(
                f"{name}: sensitive attribute {j} has {int(bad.sum())} missing values; drop or "
                "label those rows first."
            )
        _, inv = np.unique(col.astype(str) if col.dtype == object else col, return_inverse=True)
        cols.append(inv.astype(np.int64) + offset)
        t = int(inv.max()) + 1
        sizes.append(t)
        offset += t
    return np.column_stack(cols), sizes


def _one_hot(codes: np.ndarray, k: int) -> sp.csr_matrix:
    """Sparse n x k one-hot matrix; rows with code -1 are all zero."""
    n = codes.shape[0]
    valid = codes >= 0
    rows = np.flatnonzero(valid)
    return sp.csr_matrix((np.ones(rows.size), (rows, codes[valid])), shape=(n, k), dtype=np.float64)


def fce_objective(
    H: np.ndarray,
    R: np.ndarray,
    rotations: Sequence[np.ndarray],
    alpha: np.ndarray,
    labels: np.ndarray,
    base_codes: np.ndarray,
    groups: np.ndarray,
    n_groups: int,
    n_clusters: int,
    lambda1: float,
    lambda2: float,
    group_weights: np.ndarray | None = None,
) -> tuple[float, float, float, float]:
    """J and its terms, evaluated directly from the matrices (no incremental state).

    ``base_codes`` is n x m (codes, -1 = abstain), ``groups`` n x p (stacked group columns).
    ``group_weights`` (T,): the fairness term is sum_t w_t sum_k A[t, k]^2 (None = all 1, the
    paper's ||G^T Y||^2).
    """
    n = H.shape[0]
    ens = 0.0
    for i, Ri in enumerate(rotations):
        codes = base_codes[:, i]
        YR = np.zeros_like(H)
        valid = codes >= 0
        YR[valid] = Ri[codes[valid]]
        ens += float(alpha[i] ** 2 * np.sum((H - YR) ** 2))
    D = H @ R
    D[np.arange(n), labels] -= 1.0
    disc = float(np.sum(D**2))
    A = np.zeros(n_groups * n_clusters)
    for a in range(groups.shape[1]):
        A += np.bincount(groups[:, a] * n_clusters + labels, minlength=n_groups * n_clusters)
    gw = np.ones(n_groups) if group_weights is None else np.asarray(group_weights, float)
    fair = float(np.sum(gw[:, None] * A.reshape(n_groups, n_clusters) ** 2))
    return ens + lambda1 * disc + lambda2 * fair, ens, disc, fair


GROUP_WEIGHTS = ("count", "share")
"""``group_weights``: "count" = the paper's ||G^T Y||^2 (every person weighs 1); "share" = each
group's counts in units of its attribute's largest group, i.e. weight (max_s |G_s| / |G_t|)^2
on group t (>= 1: never weaker than the paper's term; docs/methods/fce.md)."""


def group_weight_vector(groups: np.ndarray, group_sizes: list[int], n: int,
                        mode: str) -> np.ndarray:
    """Weights w_t of the stacked groups for ``group_weights=mode``."""
    T = int(sum(group_sizes))
    if mode == "count":
        return np.ones(T)
    counts = np.maximum(np.bincount(groups.ravel(), minlength=T).astype(np.float64), 1.0)
    largest = np.repeat(
        [counts[o:o + t].max() for o, t in zip(np.cumsum([0, *group_sizes[:-1]]), group_sizes,
                                                 strict=True)],
        group_sizes,
    )
    return (largest / counts) ** 2


LAMBDA2_FACTORS = (1.0, 3.0, 9.0, 27.0, 81.0)
"""Multiples of the ``lambda2="auto"`` weight tried in turn (docs/methods/fce.md)."""


def _mean_cce(A: np.ndarray, group_sizes: Any, c: int) -> float:
    """fairness_CCE of the consensus, averaged over the attributes (A: groups stacked over the
    attributes x clusters)."""
    from fairaudit.metrics import fairness_cce

    vals, start = [], 0
    for size in group_sizes:
        vals.append(float(fairness_cce(A[start:start + int(size)])))
        start += int(size)
    return float(np.mean(vals)) if vals else 0.0


class FairClusteringEnsemble(ClusterMixin, BaseEstimator):
    """Fair clustering ensemble with equal cluster capacity (FCE, seed 003).

    Parameters
    ----------
    n_clusters : int
        Number of consensus clusters ``c`` (>= 1; 1 puts every row in one cluster).
    lambda1 : float, default 1e-3
        Weight of the discretisation term ``||Y - HR||^2`` (the paper fixes 1e-3).
    lambda2 : float or "auto", default "auto"
        Weight of the fairness / capacity term ``||G^T Y||^2``, in the units of the objective
        above. The useful range depends on n: with H orthonormal its entries are about
        ``sqrt(c/n)`` while group counts are about ``n/(cT)``. ``"auto"`` uses
        ``lambda1 * T * c**1.5 / n**1.5`` (T = number of groups): fairness then overrides a clear
        ensemble vote once a group's count in one cluster exceeds another's by one equal share
        ``n/(cT)``. The fitted value is ``lambda2_``. ``0`` switches fairness off (the authors'
        shipped script).
    max_iter : int, default 100
        Maximum outer iterations (the paper converges within 10; with the fairness term at the
        default weight, 7-8 clusters on Adult's numeric columns needed 30-100, so 30 stopped
        short on 6 of 10 seeds).
    tol : float, default 1e-6
        Stop when the relative decrease of J is below ``tol``.
    max_sweeps : int, default 5
        Coordinate-descent sweeps over the rows per Y update (the authors do 5).
    group_weights : {"count", "share"}, default "count"
        ``"count"``: the paper's term ||G^T Y||^2, every person weighs 1, so a small group's
        spread over the clusters hardly counts. ``"share"``: group t's counts are measured in
        units of its attribute's largest group (weight (max_s |G_s| / |G_t|)^2 >= 1), so the
        term is the squared error of fairness_CCE's own quantity |pi_k ∩ G_t| / |G_t| for every
        group alike, and never weaker than the paper's for any group (same minimiser per group;
        docs/methods/fce.md). The weights used are ``group_weights_``.
    random_state : int, Generator, RandomState or None
        Seeds the random initial Y (and the k-means bases with ``bases="kmeans"``).
    fair : bool, default True
        ``False`` switches the fairness / capacity term off (lambda2 = 0, whatever ``lambda2``
        says): the unfair consensus through the same code path, the fair method's twin.
    bases : {"precomputed", "kmeans"}, default "precomputed"
        What ``X`` is. ``"precomputed"``: an n x m matrix of base labellings (-1 = noise).
        ``"kmeans"``: numeric features; ``n_bases`` seeded k-means bases with ``n_clusters``
        clusters each (one k-means++ start, the paper's protocol) are fitted on them and kept in
        ``base_estimators_`` so that :meth:`predict` can label new rows.
    n_bases : int, default 10
        Number of k-means bases with ``bases="kmeans"`` (ignored otherwise).

    Conventions (scikit-learn)
    --------------------------
    ``fit(X, y=None, *, sensitive=None)``; ``y`` is ignored. Without ``sensitive`` only the
    capacity term acts (T = 1, the paper's special case: equal cluster sizes, no groups).
    ``predict(X, sensitive=None)`` labels new rows from their base labels (see :meth:`predict`).

    Attributes
    ----------
    labels_ : ndarray of shape (n,)
        Consensus labels 0..c-1 (every cluster non-empty).
    weights_ : ndarray of shape (m,)
        Base weights alpha (sum to 1).
    objective_ : tuple of FCEIteration
        J and its terms after initialisation (iteration 0) and after every iteration.
    n_iter_ : int
    lambda2_ : float
        The fairness weight actually used.
    contingency_ : ndarray of shape (T, c)
        Group x cluster counts of the consensus (stacked over attributes).
    embedding_ : ndarray of shape (n, K)
        The orthonormal embedding H.
    n_clusters_bases_ : tuple of int
        Number of clusters found in each base labelling (noise excluded).
    """


    # fitted attributes (set by ``fit``), typed for type checkers
    labels_: NDArray[np.intp]
    weights_: NDArray[np.float64]
    objective_: tuple[FCEIteration, ...]
    n_iter_: int
    lambda2_: float
    lambda2_tried_: tuple[float, ...]
    fair_applied_: bool
    group_weights_: NDArray[np.float64]
    contingency_: NDArray[np.int64]
    embedding_: NDArray[np.float64]
    rotation_: NDArray[np.float64]
    base_rotations_: tuple[NDArray[np.float64], ...]
    n_clusters_bases_: tuple[int, ...]
    group_sizes_: tuple[int, ...]
    base_estimators_: tuple[Any, ...]
    n_features_in_: int

    def __init__(
        self,
        n_clusters: int = 8,
        *,
        lambda1: float = 1e-3,
        lambda2: float | str = "auto",
        max_iter: int = 100,
        tol: float = 1e-6,
        max_sweeps: int = 5,
        random_state: int | np.random.Generator | np.random.RandomState | None = None,
        fair: bool = True,
        bases: str = "precomputed",
        n_bases: int = 10,
        group_weights: str = "count",
    ) -> None:
        self.n_clusters = n_clusters
        self.lambda1 = lambda1
        self.lambda2 = lambda2
        self.max_iter = max_iter
        self.tol = tol
        self.max_sweeps = max_sweeps
        self.random_state = random_state
        self.fair = fair
        self.bases = bases
        self.n_bases = n_bases
        self.group_weights = group_weights

    def __sklearn_tags__(self):  # noqa: ANN204 - sklearn's Tags type
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags

    def _validate(self) -> None:
        name = type(self).__name__

        def _int(param: str, lo: int) -> None:
            v = getattr(self, param)
            if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < lo:
                raise ValueError(
                    f"The '{param}' parameter of {name} must be an int >= {lo}; got {v!r}."
                )

        _int("n_clusters", 1)
        _int("max_iter", 1)
        _int("max_sweeps", 1)
        _int("n_bases", 2)
        if self.group_weights not in GROUP_WEIGHTS:
            raise ValueError(
                f"The 'group_weights' parameter of {name} must be one of 'count', 'share'; "
                f"got {self.group_weights!r}."
            )
        if not isinstance(self.fair, bool | np.bool_):
            raise ValueError(f"The 'fair' parameter of {name} must be a bool; got {self.fair!r}.")
        if self.bases not in ("precomputed", "kmeans"):
            raise ValueError(
                f"The 'bases' parameter of {name} must be 'precomputed' or 'kmeans'; got "
                f"{self.bases!r}."
            )
        for param, allow_zero in (("lambda1", False), ("tol", True)):
            v = getattr(self, param)
            ok = isinstance(v, numbers.Real) and not isinstance(v, bool) and np.isfinite(v)
            if not ok or v < 0 or (v == 0 and not allow_zero):
                bound = ">= 0" if allow_zero else "> 0"
                raise ValueError(
                    f"The '{param}' parameter of {name} must be a float {bound}; got {v!r}."
                )
        lam2 = self.lambda2
        if isinstance(lam2, str):
            if lam2 != "auto":
                raise ValueError(
                    f"The 'lambda2' parameter of {name} must be a float >= 0 or 'auto'; "
                    f"got {lam2!r}."
                )
        elif (
            not isinstance(lam2, numbers.Real)
            or isinstance(lam2, bool)
            or not np.isfinite(lam2)
            or lam2 < 0
        ):
            raise ValueError(
                f"The 'lambda2' parameter of {name} must be a float >= 0 or 'auto'; got {lam2!r}."
            )

    def fit(self, X: Any, y: None = None, *, sensitive: Any = None) -> FairClusteringEnsemble:
        """Combine base labellings into a fair consensus.

        ``X``: with ``bases="precomputed"`` the base labellings (n x m, -1 = noise/abstain);
        with ``bases="kmeans"`` numeric features from which the bases are made.
        ``sensitive``: protected attribute values, shape (n,) or (n, p) for several attributes
        (each attribute's groups get their own block in G). ``None`` keeps only the capacity
        term (T = 1, the paper's special case).
        """
        self._validate()
        name = type(self).__name__
        rng = as_generator(self.random_state)
        c = int(self.n_clusters)
        if self.bases == "kmeans":
            Xf = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
            if c > Xf.shape[0]:
                raise ValueError(
                    f"The 'n_clusters' parameter of {name} must be at most the number of rows "
                    f"({Xf.shape[0]}) so that no cluster is empty; got {c}."
                )
            models = _fit_kmeans_models(
                Xf, [c] * int(self.n_bases), int(rng.integers(0, 2**31 - 1)), max_iter=100
            )
            self.base_estimators_ = tuple(models)
            base_labels = np.column_stack([km.labels_ for km in models]).astype(np.int64)
        else:
            base_labels = X
        codes, ks, base_values = _encode_bases(base_labels, name)
        n, m = codes.shape
        if self.bases == "precomputed":
            self.n_features_in_ = m
        if c > n:
            raise ValueError(
                f"The 'n_clusters' parameter of {name} must be at most the number of rows ({n}) "
                f"so that no cluster is empty; got {c}."
            )
        groups, group_sizes = _encode_groups(sensitive, n, name)
        T = int(sum(group_sizes))
        K = max(c, *ks)
        lam1 = float(self.lambda1)
        lam2 = lam1 * T * c**1.5 / n**1.5 if isinstance(self.lambda2, str) else float(self.lambda2)
        if not self.fair:
            lam2 = 0.0
        gw = group_weight_vector(groups, group_sizes, n, str(self.group_weights))

        Ys = [_one_hot(codes[:, i], K) for i in range(m)]
        YsT = [Yi.T.tocsr() for Yi in Ys]
        init = rng.integers(0, c, size=n)
        init[rng.permutation(n)[:c]] = np.arange(c)  # every cluster starts non-empty

        def solve(lam2: float) -> dict:
            return self._solve(Ys, YsT, codes, groups, T, c, K, lam1, lam2, gw, init.copy())

        self.lambda2_tried_ = ()
        self.fair_applied_ = bool(self.fair) and lam2 > 0
        if self.fair_applied_ and isinstance(self.lambda2, str) and sensitive is not None:
            # "auto": keep the first weight of LAMBDA2_FACTORS whose consensus has a strictly
            # higher fairness_CCE than the unfair consensus from the same start (else the latter)
            twin = solve(0.0)
            target = _mean_cce(twin["A"], group_sizes, c)
            tried = []
            for factor in LAMBDA2_FACTORS:
                st = solve(lam2 * factor)
                tried.append(float(lam2 * factor))
                if _mean_cce(st["A"], group_sizes, c) > target + 1e-12:
                    lam2 = lam2 * factor
                    break
            else:
                st, lam2 = twin, 0.0
                self.fair_applied_ = False
            self.lambda2_tried_ = tuple(tried)
        else:
            st = solve(lam2)
        labels, A, H, R = st["labels"], st["A"], st["H"], st["R"]
        rotations, alpha, history, n_iter = st["rotations"], st["alpha"], st["history"], st["n_iter"]

        self.labels_ = labels.copy()
        self.weights_ = alpha
        self.objective_ = tuple(history)
        self.n_iter_ = n_iter
        self.lambda2_ = lam2
        self.group_weights_ = gw
        self.contingency_ = A.copy()
        self.embedding_ = H
        self.rotation_ = R
        self.base_rotations_ = tuple(rotations)
        self.n_clusters_bases_ = tuple(ks)
        self.group_sizes_ = tuple(group_sizes)
        # the fitted vote patterns for predict: (base codes [+ groups]) -> consensus label
        self._base_values = base_values
        self._lookup = pattern_lookup(codes, labels, c)
        self._lookup_groups = (
            pattern_lookup(np.column_stack([codes, groups]), labels, c)
            if sensitive is not None
            else None
        )
        self._group_values = group_values(sensitive, n)
        return self

    def _solve(self, Ys: list, YsT: list, codes: np.ndarray, groups: np.ndarray, T: int, c: int,
               K: int, lam1: float, lam2: float, gw: np.ndarray, init: np.ndarray) -> dict:
        """The alternating minimisation from the initial labels ``init`` with fairness weight
        ``lam2`` (0 = the unfair consensus)."""
        m = len(Ys)
        p = groups.shape[1]
        # initialisation (authors): R = R_i = I, alpha = 1/m, H = polar(sum Y_i), Y random
        alpha = np.full(m, 1.0 / m)
        rotations = [np.eye(K) for _ in range(m)]
        R = np.eye(K, c)
        H = _polar(sum(Ys[1:], Ys[0]).toarray())
        labels = init
        A = np.zeros((T, c), dtype=np.int64)
        for a in range(p):
            A += np.bincount(groups[:, a] * c + labels, minlength=T * c).reshape(T, c)
        sizes = np.bincount(labels, minlength=c).astype(np.int64)

        def objective(it: int, moves: int) -> FCEIteration:
            J, ens, disc, fair = fce_objective(
                H, R, rotations, alpha, labels, codes, groups, T, c, lam1, lam2, gw
            )
            return FCEIteration(it, J, ens, disc, fair, moves)

        history = [objective(0, 0)]
        n_iter = 0
        for it in range(1, int(self.max_iter) + 1):
            n_iter = it
            # --- Y: improving coordinate descent, counts kept incrementally
            moves = self._y_step(H @ R, lam1, lam2, groups, A, sizes, labels, gw)
            # --- R: polar factor of H^T Y (K x c)
            Yc = _one_hot(labels, c)
            R = _polar(np.asarray((Yc.T @ H).T))
            # --- R_i: polar factor of Y_i^T H (K x K)
            rotations = [_polar(np.asarray(YiT @ H)) for YiT in YsT]
            # --- H: polar factor of sum alpha_i^2 Y_i R_i + lambda1 Y R^T
            B = lam1 * np.asarray(Yc @ R.T)
            for i in range(m):
                B += alpha[i] ** 2 * np.asarray(Ys[i] @ rotations[i])
            H = _polar(B)
            # --- alpha_i proportional to ||H - Y_i R_i||^-2
            errs = np.empty(m)
            for i in range(m):
                YR = np.asarray(Ys[i] @ rotations[i])
                errs[i] = np.sum((H - YR) ** 2)
            inv = 1.0 / np.maximum(errs, np.finfo(float).tiny)
            alpha = inv / inv.sum()
            history.append(objective(it, moves))
            prev, cur = history[-2].objective, history[-1].objective
            logger.debug("FCE iteration %d: J=%.6g moves=%d", it, cur, moves)
            if prev - cur <= self.tol * max(abs(prev), np.finfo(float).tiny):
                break

        return {"labels": labels, "A": A, "H": H, "R": R, "rotations": rotations,
                "alpha": alpha, "history": history, "n_iter": n_iter}

    def fit_predict(self, X: Any, y: None = None, *, sensitive: Any = None) -> NDArray[np.intp]:
        """``fit`` and return ``labels_``."""
        return self.fit(X, sensitive=sensitive).labels_

    def predict(self, X: Any, *, sensitive: Any = None) -> NDArray[np.intp]:
        """Consensus labels of new rows from their base labels (out-of-sample).

        ``X``: with ``bases="precomputed"`` the new rows' labels from the *same* base
        clusterers, one column per base in fit's order (-1 = the base abstains, e.g. noise);
        with ``bases="kmeans"`` features, labelled by the fitted ``base_estimators_``.

        A row whose vote pattern (its base labels, and its groups when ``sensitive`` is given
        both here and at fit) occurs among the fitted rows gets the consensus label most of
        those rows got (ties: the smaller label) — on the training rows this reproduces
        ``labels_`` wherever the consensus gave one pattern one label. A new pattern gets the
        label b minimising the FCE objective with the row added and everything fitted held
        fixed: min over h of sum_i alpha_i^2 ||h - y_i R_i||^2 + lambda1 ||e_b - h R||^2
        (closed form; h unconstrained, since one row cannot keep H orthonormal), plus the
        increase lambda2 * sum_a (2 A[g_a, b] + 1) of ||G^T Y||^2 when ``sensitive`` is given
        (A = fitted group x cluster counts; fitted without groups, the capacity term with one
        group always applies). Base label values not seen at fit abstain.
        """
        check_is_fitted(self, "labels_")
        name = type(self).__name__
        if self.bases == "kmeans":
            Xf = validate_data(self, X, dtype=np.float64, reset=False)
            codes = np.column_stack([km.predict(Xf) for km in self.base_estimators_])
        else:
            arr = np.asarray(X)
            if arr.ndim != 2 or arr.shape[1] != len(self._base_values):
                raise ValueError(
                    f"{name}.predict: X must be an n x {len(self._base_values)} matrix of base "
                    f"labels (one column per base, fit's order); got shape {arr.shape}."
                )
            codes = np.full(arr.shape, -1, dtype=np.int64)
            for i, vals in enumerate(self._base_values):
                pos = np.searchsorted(vals, arr[:, i])
                pos = np.clip(pos, 0, max(vals.size - 1, 0))
                hit = (vals.size > 0) & (vals[pos] == arr[:, i])
                codes[hit, i] = pos[hit]
        n_new = codes.shape[0]
        groups = None
        if self._group_values is None:
            # fitted without groups: the capacity term (T = 1) is part of J for every row
            groups = np.zeros((n_new, 1), dtype=np.int64)
        elif sensitive is not None:
            groups = groups_as_fitted(sensitive, n_new, self._group_values, name)
        out = np.full(n_new, -1, dtype=np.int64)
        if groups is not None and self._lookup_groups is not None:
            apply_lookup(self._lookup_groups, np.column_stack([codes, groups]), out)
        apply_lookup(self._lookup, codes, out)
        rest = np.flatnonzero(out < 0)
        if rest.size:
            out[rest] = self._closed_form(codes[rest], None if groups is None else groups[rest])
        return out

    def _closed_form(self, codes: np.ndarray, groups: np.ndarray | None) -> np.ndarray:
        """argmin over b of the row's share of J (see :meth:`predict`)."""
        return closed_form_labels(
            codes,
            groups,
            weights=self.weights_,
            rotation=self.rotation_,
            base_rotations=self.base_rotations_,
            contingency=self.contingency_,
            lambda1=float(self.lambda1),
            lambda2=float(self.lambda2_),
            group_weights=getattr(self, "group_weights_", None),
        )

    def _y_step(
        self,
        P: np.ndarray,
        lam1: float,
        lam2: float,
        groups: np.ndarray,
        A: np.ndarray,
        sizes: np.ndarray,
        labels: np.ndarray,
        group_weights: np.ndarray | None = None,
    ) -> int:
        """Minimise lam1 ||Y - P||^2 + lam2 ||G^T Y||^2 over Y by improving single-row moves.

        Placing row i in cluster b, the others fixed, costs 2 (-lam1 P[i,b] + lam2 sum_a
        A'[g_a(i), b]) + const, with A' the counts without row i. Each sweep scores every row
        against the counts at the sweep's start (vectorised, O(n c p)), then visits only the
        rows with an improving move, re-scoring each against the *current* counts and moving it
        only if that strictly lowers the objective and does not empty its cluster. Every applied
        move therefore decreases J; a sweep with no improving move is a coordinate-wise minimum.
        ``A``, ``sizes`` and ``labels`` are updated in place. Returns the number of moves.
        """
        n, c = P.shape
        p = groups.shape[1]
        rows = np.arange(n)
        gw = np.ones(A.shape[0]) if group_weights is None else np.asarray(group_weights, float)
        weighted = bool(np.any(gw != 1.0))
        scale = lam1 * float(np.abs(P).max()) + lam2 * float(n) * float(gw.max())
        eps = 1e-12 * max(scale, 1e-300)
        total = 0
        for _ in range(int(self.max_sweeps)):
            if weighted:
                Wg = gw[groups]  # (n, p)
                S = -lam1 * P + lam2 * (Wg[:, :, None] * A[groups]).sum(axis=1)
                S[rows, labels] -= lam2 * Wg.sum(axis=1)
            else:
                S = -lam1 * P + lam2 * A[groups].sum(axis=1)
                S[rows, labels] -= lam2 * p
            best = S.min(axis=1)
            candidates = np.flatnonzero(best < S[rows, labels] - eps)
            if candidates.size == 0:
                break
            # sequential pass in plain Python (scalar work on short lists is several times
            # faster than numpy calls on length-c arrays); counts stay exact integers
            moved = 0
            A_l = A.tolist()
            gw_l = gw.tolist()
            sizes_l = sizes.tolist()
            P_l = P[candidates].tolist()
            g_l = groups[candidates].tolist()
            lab_l = labels[candidates].tolist()
            c_range = range(c)
            for idx in range(candidates.size):
                a = lab_l[idx]
                if sizes_l[a] <= 1:
                    continue
                prow = P_l[idx]
                rows_g = [A_l[t] for t in g_l[idx]]
                if weighted:
                    ws = [gw_l[t] for t in g_l[idx]]
                    s_vals = [
                        lam2 * sum(wt * r[b] for wt, r in zip(ws, rows_g, strict=True))
                        - lam1 * prow[b]
                        for b in c_range
                    ]
                    s_vals[a] -= lam2 * sum(ws)
                elif p == 1:
                    cnt = rows_g[0]
                    s_vals = [lam2 * cnt[b] - lam1 * prow[b] for b in c_range]
                    s_vals[a] -= lam2 * p
                else:
                    s_vals = [lam2 * sum(r[b] for r in rows_g) - lam1 * prow[b] for b in c_range]
                    s_vals[a] -= lam2 * p
                best_s = min(s_vals)
                b = s_vals.index(best_s)
                if b != a and best_s < s_vals[a] - eps:
                    for r in rows_g:
                        r[a] -= 1
                        r[b] += 1
                    sizes_l[a] -= 1
                    sizes_l[b] += 1
                    lab_l[idx] = b
                    moved += 1
            A[...] = np.asarray(A_l, dtype=A.dtype).reshape(A.shape)
            sizes[...] = sizes_l
            labels[candidates] = lab_l
            total += moved
            if moved == 0:
                break
        return total


def _fit_kmeans_models(
    X: np.ndarray, ks: Sequence[int], seed: int, *, max_iter: int = 100
) -> list[Any]:
    """Seeded k-means models, one k-means++ start each (the bases' diversity is the point)."""
    from sklearn.cluster import KMeans

    seeds = as_generator(seed).integers(0, 2**31 - 1, size=len(ks))
    return [
        KMeans(n_clusters=k, n_init=1, max_iter=max_iter, random_state=int(sd)).fit(X)
        for k, sd in zip(ks, seeds, strict=True)
    ]


def kmeans_bases(
    X: Any,
    n_clusters: int | Sequence[int],
    n_bases: int = 10,
    random_state: int | np.random.Generator | np.random.RandomState | None = None,
    *,
    max_iter: int = 100,
) -> np.ndarray:
    """``n_bases`` seeded k-means labellings of X as an n x n_bases int array.

    ``n_clusters`` may be one int or one per base (diverse bases). Each base gets its own seed
    drawn from ``random_state``; k-means runs with one k-means++ start (diversity is the point).
    """
    from sklearn.cluster import KMeans

    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"kmeans_bases: X must be a 2-D array; got shape {X.shape}.")
    if not np.all(np.isfinite(X)):
        raise ValueError("kmeans_bases: X contains non-finite values (NaN or inf).")
    if not isinstance(n_bases, numbers.Integral) or n_bases < 2:
        raise ValueError(
            f"The 'n_bases' parameter of kmeans_bases must be an int >= 2; got {n_bases!r}."
        )
    ks = [int(n_clusters)] * n_bases if np.isscalar(n_clusters) else [int(k) for k in n_clusters]
    if len(ks) != n_bases:
        raise ValueError(f"kmeans_bases: got {len(ks)} values of 'n_clusters' for {n_bases} bases.")
    if min(ks) < 2 or max(ks) > X.shape[0]:
        raise ValueError(
            f"The 'n_clusters' parameter of kmeans_bases must be in [2, n_rows={X.shape[0]}]; "
            f"got {ks}."
        )
    seeds = as_generator(random_state).integers(0, 2**31 - 1, size=n_bases)
    out = np.empty((X.shape[0], n_bases), dtype=np.int64)
    for j in range(n_bases):
        km = KMeans(n_clusters=ks[j], n_init=1, max_iter=max_iter, random_state=int(seeds[j]))
        out[:, j] = km.fit_predict(X)
    return out
