"""FairDen: fair density-based clustering (Krieger, Beer et al., ICLR 2025; seed ``000``).

One unit: one estimator (FairDen), Algorithm 1 with its two interchangeable solvers.

Algorithm 1 of the paper with two interchangeable solvers:

* ``solver="dense"`` — the paper's algorithm on explicit n×n matrices (null space of Fᵀ,
  generalised eigenproblem). The oracle; O(n²) memory, O(n³) time.
* ``solver="matrix-free"`` — never forms an n×n matrix: products with the dc-distance use its
  ultrametric merge tree (O(n) per vector), Goodall1 products use per-category sums
  (O(n·d_c)), and the constrained generalised eigenproblem is solved by LOBPCG with B = D and
  the constraint block D⁻¹F.
* ``solver="auto"`` — dense up to ``AUTO_DENSE_MAX_N`` rows (measured break-even, see
  ``docs/benchmarks/fairden.md``) and when memory allows, matrix-free above.

See ``docs/methods/fairden.md`` for conventions and deviations from the reference code.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import KMeans
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from fairaudit.cluster._fairden_ops import (
    AffinityOperator,
    DenseSolver,
    GoodallOperator,
    MatrixFreeSolver,
    dense_bytes_needed,
    encode_columns,
    fairness_matrix,
)
from fairaudit.cluster._mr_assign import mutual_reachability_assign
from fairaudit.cluster._progress import Progress
from fairaudit.cluster.dc_distance import MergeTree, merge_tree
from fairaudit.core.limits import available_memory

__all__ = ["AUTO_DENSE_MAX_N", "NOISE_RULES", "ExcludedGroups", "FairDen"]

logger = logging.getLogger(__name__)

AUTO_DENSE_MAX_N = 64
"""``solver="auto"`` uses the dense solver up to this many rows (measured break-even)."""

MEMORY_SAFETY = 0.5
"""The dense solver may use at most this fraction of MemAvailable."""

NOISE_RULES = ("literal", "recompute")
"""``noise_rule`` values: ``"literal"`` = Algorithm 1 as written (k-means with k+1, k+2, ... on
the same k-eigenvector embedding); ``"recompute"`` = k+1 eigenvectors for k+1 clusters."""


@dataclass(frozen=True)
class ExcludedGroups:
    """Sensitive groups with fewer than k members, and the rows excluded because of them.

    ``groups``/``sizes`` list the too-small (intersectional) groups; ``rows`` the indices of the
    excluded rows (empty unless ``small_groups="drop"``). Excluded rows get label −1.
    """

    groups: tuple[str, ...]
    sizes: tuple[int, ...]
    rows: tuple[int, ...]
    policy: str

    @property
    def n_rows(self) -> int:
        return len(self.rows)


def _row_groups(S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct groups of the rows of ``S`` (n x a) and each row's: (names, inverse), a name
    being ``"|".join(str(v) for v in row)``. Integer columns are combined as codes, and only the
    distinct rows are turned into text (the names are the same)."""
    if S.dtype.kind in "iub" and S.shape[0]:
        uniq, inv = _unique_code_rows(S)
        rows = uniq.astype(object)
    else:
        text = np.asarray(["|".join(str(v) for v in row) for row in S.astype(object)],
                          dtype=object)
        return np.unique(text, return_inverse=True)
    names = np.asarray(["|".join(str(v) for v in row) for row in rows], dtype=object)
    return names, inv.reshape(-1)


def _unique_code_rows(S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(S, axis=0, return_inverse=True)`` of integer codes (n x a), by one integer
    key per row: the codes' offsets from their column minimum in mixed radix, the first column
    most significant, so that the keys sort as the rows do. ``np.unique`` over rows sorts them
    as opaque records: 0.5 s for 250,000 rows of two columns (FairDen's predict, once per batch
    of an audit's pass over the data), the key 0.01 s. Codes whose ranges do not fit one key
    (their product above 2**62) go to ``np.unique``."""
    if S.dtype.kind in "bi" or S.dtype.itemsize < 8:  # (uint64 may not fit int64)
        A = S.astype(np.int64)
        lo = A.min(axis=0)
        # Python ints: no overflow
        span = [int(b) - int(a) + 1 for a, b in zip(lo, A.max(axis=0), strict=True)]
        if math.prod(span) <= 2**62:
            key = np.zeros(A.shape[0], dtype=np.int64)
            for j, w in enumerate(span):
                key = key * w + (A[:, j] - lo[j])
            ukey, inv = np.unique(key, return_inverse=True)
            rows = np.empty((ukey.size, A.shape[1]), dtype=np.int64)
            rest = ukey
            for j in range(A.shape[1] - 1, -1, -1):
                rest, rows[:, j] = np.divmod(rest, span[j])
                rows[:, j] += lo[j]
            return rows.astype(S.dtype), inv.reshape(-1)
    uniq, inv = np.unique(S, axis=0, return_inverse=True)
    return uniq, inv.reshape(-1)


def _as_2d(a: object, name: str, n: int | None) -> np.ndarray:
    arr = np.asarray(a)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(
            f"The '{name}' parameter of FairDen must be a 1-D or 2-D array; got {arr.ndim} "
            "dimensions."
        )
    if n is not None and arr.shape[0] != n:
        raise ValueError(
            f"The '{name}' parameter of FairDen must have one row per row of X ({n}); "
            f"got {arr.shape[0]}."
        )
    return arr


class FairDen(ClusterMixin, BaseEstimator):
    """Fair density-based clustering (FairDen).

    Parameters
    ----------
    n_clusters : int, default 2
        Number of non-noise clusters wanted (k). The noise rule may end with more. ``1`` is
        allowed (every row in one cluster, trivially balanced; as scikit-learn's KMeans).
    min_pts : int or "auto", default "auto"
        μ of the paper: core distances count the point itself, and final clusters smaller than μ
        become noise. ``"auto"`` = 2d − 1 with d = numeric features + sensitive attributes (the
        convention of the reference experiments; 21 for 10 features and one sensitive column).
    solver : {"auto", "dense", "matrix-free"}, default "auto"
    n_init : int, default 10
        k-means restarts on the embedding.
    random_state : int, Generator, RandomState or None
        Seeds k-means and the LOBPCG start block.
    small_groups : {"error", "drop"}, default "error"
        What to do with sensitive groups smaller than k (they cannot be balanced): raise, or
        exclude their rows (label −1, recorded in ``excluded_``).
    single_group : {"error", "unconstrained"}, default "error"
        All rows in one group leaves the fairness constraint empty: raise, or run plain
        (unconstrained) density-based spectral clustering.
    tol : float, default 1e-5
        Relative residual tolerance of the matrix-free eigensolver (scaled by the mean degree).
    max_iter : int, default 300
        Iteration cap of the matrix-free eigensolver.
    mst_algorithm : {"auto", "boruvka", "prim"}, default "auto"
        Minimum-spanning-tree algorithm of the dc-distance.
    fair : bool, default True
        ``False`` switches the fairness constraint off (Fᵀh = 0 dropped, no rows excluded for
        small groups): unconstrained dc-distance spectral clustering through the same code path,
        the fair method's twin.
    noise_rule : {"literal", "recompute"}, default "literal"
        Algorithm 1 lines 8–14: while fewer than k clusters have at least μ points, k-means runs
        again with one more cluster. ``"literal"`` (the paper and the authors' code) keeps the
        k-eigenvector embedding; ``"recompute"`` recomputes the embedding with as many
        eigenvectors as clusters (this package's rule before 2026-11-23).
    min_cluster_share : float in [0, 1), default 0.01
        The noise rule (Alg. 1 lines 8–14) treats a cluster as too small when it has fewer than
        max(μ, ⌈min_cluster_share · n⌉) rows (n = rows clustered). ``0`` is the paper's rule (μ
        only). On heavy-tailed data the top of the dc-hierarchy is a handful of extreme rows
        (e.g. Adult's capital-gain = 99,999 block, 0.4 % of the rows); as noise they no longer
        take one of the k clusters (docs/methods/fairden.md).
    rounding : {"proportional", "kmeans"}, default "proportional"
        How the fair embedding becomes labels (only under the constraint). ``"kmeans"`` is the
        paper's: plain k-means on the rows of H, which can snap back to the unfair partition.
        ``"proportional"`` then runs Lloyd iterations from that k-means solution in which every
        cluster keeps each group's share of the clustered rows (exact transport per group,
        :mod:`fairaudit.cluster.fair_rounding`; docs/methods/fairden.md). The twin
        (``fair=False``) always rounds with plain k-means.

    Conventions (scikit-learn)
    --------------------------
    ``fit(X, y=None, *, sensitive=None, categorical=None)``: ``y`` is ignored. ``sensitive`` (one
    or more columns, one row per row of X) is the fairness constraint. Without it FairDen has no
    groups to balance: it warns (``UserWarning``) and runs unconstrained (``constrained_`` is
    False), like ``fair=False``. ``predict(X)`` assigns new rows to the fitted clusters (nearest
    fitted row in mutual reachability, see :meth:`predict`).

    Attributes
    ----------
    labels_ : (n,) int array, −1 = noise (or excluded row)
    n_clusters_ : int, number of non-noise clusters after the noise rule
    embedding_ : (n, k_used) spectral embedding H (NaN rows for excluded rows)
    eigenvalues_ : (k_used,) generalised eigenvalues
    min_pts_ : int, μ used
    min_cluster_size_ : int, the noise rule's smallest cluster, max(μ, ⌈min_cluster_share·n⌉)
    solver_ : str, solver used
    groups_ : tuple of str, intersectional group names (``a|b`` for several attributes)
    excluded_ : ExcludedGroups
    merge_tree_ : MergeTree of the (kept) rows
    k_history_ : tuple of the k values tried by the noise rule
    constrained_ : bool, whether the fairness constraint was applied
    rounding_ : dict or None, the proportional rounding's Lloyd rounds, convergence and rows
        moved away from the plain k-means labels (None when it did not run)
    n_features_in_ : int
    """


    # fitted attributes (set by ``fit``), typed for type checkers
    labels_: NDArray[np.intp]
    n_clusters_: int
    embedding_: NDArray[np.float64]
    eigenvalues_: NDArray[np.float64]
    merge_tree_: MergeTree
    k_history_: tuple[int, ...]
    constrained_: bool
    excluded_: ExcludedGroups
    groups_: tuple[str, ...]
    min_pts_: int
    min_cluster_size_: int
    solver_: str
    rounding_: dict[str, Any] | None
    n_features_in_: int

    def __init__(
        self,
        n_clusters: int = 2,
        *,
        min_pts: int | str = "auto",
        solver: str = "auto",
        n_init: int = 10,
        random_state: int | np.random.Generator | np.random.RandomState | None = None,
        small_groups: str = "error",
        single_group: str = "error",
        tol: float = 1e-5,
        max_iter: int = 300,
        mst_algorithm: str = "auto",
        fair: bool = True,
        noise_rule: str = "literal",
        rounding: str = "proportional",
        min_cluster_share: float = 0.01,
    ) -> None:
        self.n_clusters = n_clusters
        self.min_pts = min_pts
        self.solver = solver
        self.n_init = n_init
        self.random_state = random_state
        self.small_groups = small_groups
        self.single_group = single_group
        self.tol = tol
        self.max_iter = max_iter
        self.mst_algorithm = mst_algorithm
        self.fair = fair
        self.noise_rule = noise_rule
        self.rounding = rounding
        self.min_cluster_share = min_cluster_share

    def __sklearn_tags__(self):  # noqa: ANN204 - sklearn's Tags type
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        tags.input_tags.allow_nan = False
        return tags

    # ------------------------------------------------------------------------------------
    def _validate_params(self) -> None:
        k = self.n_clusters
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise ValueError(
                f"The 'n_clusters' parameter of FairDen must be an int >= 1; got {k!r}."
            )
        m = self.min_pts
        if not (m == "auto" or (isinstance(m, int | np.integer) and not isinstance(m, bool))):
            raise ValueError(
                f"The 'min_pts' parameter of FairDen must be 'auto' or an int >= 2; got {m!r}."
            )
        if m != "auto" and m < 2:
            raise ValueError(
                f"The 'min_pts' parameter of FairDen must be 'auto' or an int >= 2; got {m!r}."
            )
        if self.solver not in ("auto", "dense", "matrix-free"):
            raise ValueError(
                "The 'solver' parameter of FairDen must be one of 'auto', 'dense', "
                f"'matrix-free'; got {self.solver!r}."
            )
        ni = self.n_init
        if isinstance(ni, bool) or not isinstance(ni, int | np.integer) or ni < 1:
            raise ValueError(f"The 'n_init' parameter of FairDen must be an int >= 1; got {ni!r}.")
        if self.small_groups not in ("error", "drop"):
            raise ValueError(
                "The 'small_groups' parameter of FairDen must be 'error' or 'drop'; "
                f"got {self.small_groups!r}."
            )
        if self.single_group not in ("error", "unconstrained"):
            raise ValueError(
                "The 'single_group' parameter of FairDen must be 'error' or 'unconstrained'; "
                f"got {self.single_group!r}."
            )
        if not isinstance(self.tol, float | int) or not self.tol > 0:
            raise ValueError(
                f"The 'tol' parameter of FairDen must be a float > 0; got {self.tol!r}."
            )
        mi = self.max_iter
        if isinstance(mi, bool) or not isinstance(mi, int | np.integer) or mi < 1:
            raise ValueError(
                f"The 'max_iter' parameter of FairDen must be an int >= 1; got {mi!r}."
            )
        if not isinstance(self.fair, bool | np.bool_):
            raise ValueError(f"The 'fair' parameter of FairDen must be a bool; got {self.fair!r}.")
        share = self.min_cluster_share
        if (isinstance(share, bool) or not isinstance(share, int | float | np.number)
                or not 0 <= float(share) < 1):
            raise ValueError(
                "The 'min_cluster_share' parameter of FairDen must be a number in [0, 1); "
                f"got {share!r}."
            )
        if self.rounding not in ("proportional", "kmeans"):
            raise ValueError(
                "The 'rounding' parameter of FairDen must be one of 'proportional', 'kmeans'; "
                f"got {self.rounding!r}."
            )
        if self.noise_rule not in NOISE_RULES:
            raise ValueError(
                "The 'noise_rule' parameter of FairDen must be one of 'literal', 'recompute'; "
                f"got {self.noise_rule!r}."
            )
        if self.mst_algorithm not in ("auto", "boruvka", "prim"):
            raise ValueError(
                "The 'mst_algorithm' parameter of FairDen must be one of 'auto', 'boruvka', "
                f"'prim'; got {self.mst_algorithm!r}."
            )

    def fit(
        self,
        X: np.ndarray,
        y: object = None,
        *,
        sensitive: np.ndarray | None = None,
        categorical: np.ndarray | None = None,
    ) -> FairDen:
        """Cluster ``X`` (numeric features) fairly w.r.t. ``sensitive`` (one or more columns,
        combined into the intersectional attribute); ``categorical`` columns enter through the
        Goodall1 similarity (eq. 15). ``y`` is ignored (scikit-learn convention). Without
        ``sensitive`` the fit is unconstrained and a ``UserWarning`` says so."""
        self._validate_params()
        k = int(self.n_clusters)
        Xa = self._check_X(X, reset=True)
        n, d_num = Xa.shape
        if k >= n:
            raise ValueError(
                f"The 'n_clusters' parameter of FairDen must be < the number of rows ({n}); got {k}."
            )
        if sensitive is None:
            warnings.warn(
                "FairDen.fit got no 'sensitive' groups: the fairness constraint is empty and the "
                "clustering is unconstrained (pass sensitive=... to balance groups).",
                UserWarning,
                stacklevel=2,
            )
            S = np.zeros((n, 0), dtype=object)
        else:
            S = _as_2d(sensitive, "sensitive", n)
        n_attr = S.shape[1]
        if n_attr:
            s_codes, s_uniques = encode_columns(S.astype(object))
            # intersectional group codes
            comb_codes, inv = np.unique(s_codes, axis=0, return_inverse=True)
            group = inv.reshape(-1).astype(np.int64)
            names = tuple(
                "|".join(str(s_uniques[j][c]) for j, c in enumerate(row)) for row in comb_codes
            )
        else:
            group = np.zeros(n, dtype=np.int64)
            names = ("(all rows)",)
        cat_codes = None
        if categorical is not None:
            C = _as_2d(categorical, "categorical", n)
            if C.shape[1]:
                cat_codes, cat_uniques = encode_columns(C.astype(object))
                for j, u in enumerate(cat_uniques):
                    if u.size < 2:
                        raise ValueError(
                            f"The 'categorical' parameter of FairDen: column {j} has a single "
                            f"value ({u[0]!r}); drop it (it carries no information)."
                        )
        d_cat = 0 if cat_codes is None else cat_codes.shape[1]
        constrained = bool(self.fair) and n_attr > 0

        # groups too small to balance (only under the constraint)
        sizes = np.bincount(group, minlength=len(names))
        small = np.flatnonzero(sizes < k) if constrained else np.zeros(0, dtype=np.int64)
        keep = np.ones(n, dtype=bool)
        if small.size:
            desc = ", ".join(f"{names[g]!r} ({sizes[g]} rows)" for g in small)
            if self.small_groups == "error":
                raise ValueError(
                    f"Sensitive group(s) {desc} have fewer than n_clusters={k} members and "
                    "cannot be balanced; pass small_groups='drop' to exclude their rows "
                    "(reported in excluded_)."
                )
            keep = ~np.isin(group, small)
            # info, not warning: the fairaudit report states the exclusion; estimator users
            # read excluded_
            logger.info("FairDen: excluding %d rows of small groups %s", (~keep).sum(), desc)
        self.excluded_ = ExcludedGroups(
            groups=tuple(names[g] for g in small),
            sizes=tuple(int(sizes[g]) for g in small),
            rows=tuple(int(i) for i in np.flatnonzero(~keep)),
            policy=str(self.small_groups),
        )
        kept = np.flatnonzero(keep)
        Xk = Xa[kept]
        gk = group[kept]
        _, gk = np.unique(gk, return_inverse=True)
        n_groups = int(gk.max()) + 1 if gk.size else 0
        self.groups_ = tuple(names[g] for g in np.unique(group[kept]))
        if constrained and n_groups < 2:
            if self.single_group == "error":
                raise ValueError(
                    "All rows are in one sensitive group "
                    f"({self.groups_[0] if self.groups_ else '?'!r}): the fairness constraint is "
                    "empty. Pass single_group='unconstrained' to run plain density-based "
                    "clustering."
                )
            logger.warning("FairDen: one sensitive group; running without fairness constraint")
        nk = kept.size
        mu = 2 * (d_num + n_attr) - 1 if self.min_pts == "auto" else int(self.min_pts)
        self.min_pts_ = mu
        if mu > nk:
            raise ValueError(
                f"The 'min_pts' parameter of FairDen ({mu}) must be <= the number of rows ({nk})."
            )
        if nk < k * mu:
            raise ValueError(
                f"FairDen needs at least n_clusters·min_pts = {k}·{mu} = {k * mu} rows to find "
                f"{k} non-noise clusters of at least min_pts points; got {nk}."
            )

        # steps: merge tree, embedding and k-means (per k tried), fair rounding
        progress = Progress("FairDen", 3, "steps")
        progress.update(0)
        t0 = time.perf_counter()
        tree: MergeTree = merge_tree(Xk, mu, algorithm=self.mst_algorithm)
        progress.update(1)
        logger.info(
            "FairDen: dc-distance merge tree of %d rows in %.1f s", nk, time.perf_counter() - t0
        )
        if tree.max_height <= 0:
            raise ValueError(
                "All dc-distances are 0 (every row has at least min_pts − 1 exact duplicates of "
                "a single point): there is no density structure to cluster."
            )
        goodall = GoodallOperator.from_codes(cat_codes[kept]) if d_cat else None
        op = AffinityOperator(
            tree=tree,
            goodall=goodall,
            w_num=d_num / (d_num + d_cat),
            w_cat=d_cat / (d_num + d_cat),
        )
        # fair=False (the twin): the same code path with an empty constraint block
        F = fairness_matrix(gk, n_groups if constrained else 1)

        rs = check_random_state(self.random_state)
        seed_solver = int(rs.randint(np.iinfo(np.int32).max))
        seed_km = int(rs.randint(np.iinfo(np.int32).max))
        solver = self._choose_solver(nk)
        self.solver_ = solver
        if solver == "dense":
            eig = DenseSolver(op, F)
        else:
            eig = MatrixFreeSolver(
                op,
                F,
                tol=float(self.tol),
                max_iter=int(self.max_iter),
                rng=np.random.default_rng(seed_solver),
            )

        # Algorithm 1, lines 8-18: k smallest eigenvectors, k-means, noise rule, k += 1.
        # "literal": the embedding keeps k columns and only k-means is re-run with k+1, k+2, ...
        # "recompute": the embedding is recomputed with k_cur eigenvectors for every k_cur.
        k_cur = k
        history = []
        min_size = max(mu, int(np.ceil(float(self.min_cluster_share) * nk)))
        self.min_cluster_size_ = min_size
        max_k = nk - (n_groups - 1 if constrained else 0)
        w = H = None
        while True:
            if k_cur > max_k:
                hint = (
                    " or try noise_rule='recompute' (k-means on the same k eigenvectors only "
                    "splits clusters further)"
                    if self.noise_rule == "literal"
                    else ""
                )
                raise ValueError(
                    f"FairDen could not find {k} non-noise clusters of at least {min_size} "
                    f"points (min_pts={mu}, min_cluster_share={self.min_cluster_share}; tried "
                    f"k = {k}..{k_cur - 1}); lower min_pts, min_cluster_share or "
                    f"n_clusters{hint}."
                )
            history.append(k_cur)
            t0 = time.perf_counter()
            if H is None or self.noise_rule == "recompute":
                w, H = eig.solve(k_cur)
            t1 = time.perf_counter()
            km = KMeans(n_clusters=k_cur, n_init=int(self.n_init), random_state=seed_km)
            lab = km.fit_predict(H)
            logger.info(
                "FairDen: k=%d: %s eigensolver %.1f s, k-means %.1f s",
                k_cur,
                solver,
                t1 - t0,
                time.perf_counter() - t1,
            )
            counts = np.bincount(lab, minlength=k_cur)
            big = counts >= min_size
            if int(big.sum()) >= k:
                break
            logger.info(
                "FairDen: %d of %d clusters smaller than %d rows; k -> %d",
                int((~big).sum()),
                k_cur,
                min_size,
                k_cur + 1,
            )
            k_cur += 1
        progress.update(2)
        remap = np.full(k_cur, -1, dtype=np.int64)
        remap[big] = np.arange(int(big.sum()))
        lab = remap[lab]
        self.rounding_ = None
        if constrained and self.rounding == "proportional" and int(big.sum()) > 1:
            from fairaudit.cluster.fair_rounding import proportional_kmeans

            inn = lab >= 0
            codes = np.unique(gk[inn], return_inverse=True)[1]
            rr = proportional_kmeans(H[inn], codes, lab[inn])
            moved = int((rr.labels != lab[inn]).sum())
            lab[inn] = rr.labels
            self.rounding_ = {"rounds": rr.n_iter, "converged": rr.converged, "moved": moved}
        progress.close()
        labels = np.full(n, -1, dtype=np.int64)
        labels[kept] = lab
        emb = np.full((n, H.shape[1]), np.nan)
        emb[kept] = H
        self.labels_ = labels
        self.n_clusters_ = int(big.sum())
        self.embedding_ = emb
        self.eigenvalues_ = np.asarray(w)
        self.merge_tree_ = tree
        self.k_history_ = tuple(history)
        self.constrained_ = constrained
        # the fitted structure for predict: kept rows, their core distances and labels
        self._fit_X = Xk
        self._fit_core = np.asarray(tree.core_distances, dtype=np.float64)
        # predict's search structures, filled per group on first use: the dict is made here so
        # predict changes its content, never the estimator's attributes (sklearn's contract)
        self._predict_index = (Xk, {})
        self._fit_labels = labels[kept]
        # group of each kept row, for the group-aware predict of a proportional rounding
        self._fit_groups = (np.asarray([names[g] for g in group[kept]], dtype=object)
                            if self.rounding_ is not None else None)
        return self

    def fit_predict(
        self,
        X: np.ndarray,
        y: object = None,
        *,
        sensitive: np.ndarray | None = None,
        categorical: np.ndarray | None = None,
    ) -> NDArray[np.intp]:
        """``fit`` and return ``labels_``."""
        return self.fit(X, sensitive=sensitive, categorical=categorical).labels_

    def predict(self, X: np.ndarray, *, sensitive: np.ndarray | None = None) -> NDArray[np.intp]:
        """Assign new rows to the fitted clusters (out-of-sample), −1 = noise.

        After a proportional rounding (``rounding_`` is set) the labels depend on the group, so
        with ``sensitive`` (the same columns as in ``fit``) a new row of group g is matched only
        with the fitted rows of group g (κ(x) then counts those rows), which keeps each group's
        split over the clusters; rows of a group the fit did not see, and every row when
        ``sensitive`` is not given, are matched with all fitted rows as below.

        A new row x gets the label of the fitted row y nearest in mutual reachability
        r(x, y) = max(d(x, y), κ(x), κ(y)) (ties: smaller Euclidean distance, then lower row
        number), κ(x) = distance to the (min_pts − 1)-th nearest fitted row (x counts itself,
        the fit's convention) and κ(y) the fitted core distances. This is HDBSCAN's
        ``approximate_predict`` (McInnes & Healy 2017) on FairDen's merge tree: the smallest
        dc-distance from x to the fitted rows is min_y r(x, y). A row identical to a fitted row
        gets that row's label (so predict on the training rows reproduces ``labels_``, except
        rows excluded for small groups, which predict assigns like any row, and exact
        duplicates the fit labelled differently). x is noise when that nearest row is noise.
        Categorical columns do not enter the assignment (the groups only as said above).
        """
        check_is_fitted(self, "labels_")
        Xn = self._check_X(X, reset=False)
        mu = int(self.min_pts_)
        fit_groups = getattr(self, "_fit_groups", None)
        if sensitive is None or fit_groups is None:
            return mutual_reachability_assign(self._fit_X, self._fit_core, self._fit_labels, Xn,
                                              mu, index=self._search_index(None))
        names, inv = _row_groups(_as_2d(sensitive, "sensitive", Xn.shape[0]))
        out = np.empty(Xn.shape[0], dtype=np.int64)
        unseen = np.ones(Xn.shape[0], dtype=bool)
        for g in np.unique(fit_groups):
            at = np.flatnonzero(names == g)
            if at.size == 0:
                continue
            rows = np.flatnonzero(inv == at[0])
            if rows.size == 0:
                continue
            mine = np.flatnonzero(fit_groups == g)
            out[rows] = mutual_reachability_assign(
                self._fit_X[mine], self._fit_core[mine], self._fit_labels[mine], Xn[rows],
                min(mu, mine.size), index=self._search_index(g),
            )
            unseen[rows] = False
        if unseen.any():
            out[unseen] = mutual_reachability_assign(
                self._fit_X, self._fit_core, self._fit_labels, Xn[unseen], mu,
                index=self._search_index(None),
            )
        return out

    def _search_index(self, group: object) -> dict:
        """The search structures over the fitted rows (all, or one group's) that predict keeps
        between calls: one pass over a large table calls predict once per batch. Rebuilt after
        a new fit (they belong to its fitted rows)."""
        cache = getattr(self, "_predict_index", None)
        if cache is None or cache[0] is not self._fit_X:
            # an estimator fitted before this attribute existed, or _fit_X set by hand: no
            # cache kept, so predict leaves the estimator unchanged
            return {}
        return cache[1].setdefault(group, {})

    def _check_X(self, X: object, *, reset: bool) -> np.ndarray:
        try:
            Xa = validate_data(
                self,
                X,
                dtype=np.float64,
                ensure_all_finite=False,
                ensure_min_samples=1 if not reset else 2,
                reset=reset,
            )
        except ValueError as exc:
            if "convert" in str(exc) or "string" in str(exc):
                raise ValueError(
                    f"The 'X' parameter of FairDen must hold numeric features ({exc}); pass "
                    "categorical columns through 'categorical='."
                ) from exc
            raise
        if not np.all(np.isfinite(Xa)):
            bad = np.argwhere(~np.isfinite(Xa))[0]
            raise ValueError(
                "The 'X' parameter of FairDen must not contain NaN or infinite values (inf); "
                f"found one at row {bad[0]}, column {bad[1]}."
            )
        return Xa

    def _choose_solver(self, n: int) -> str:
        need = dense_bytes_needed(n)
        avail = available_memory()
        fits = avail is None or need <= MEMORY_SAFETY * avail
        if self.solver == "dense":
            if not fits:
                raise ValueError(
                    f"solver='dense' would need about {need / 2**30:.1f} GiB for n={n} rows but "
                    f"only {MEMORY_SAFETY * (avail or 0) / 2**30:.1f} GiB may be used "
                    "(half of MemAvailable); use solver='matrix-free' or 'auto'."
                )
            return "dense"
        if self.solver == "matrix-free":
            return "matrix-free"
        if n <= AUTO_DENSE_MAX_N and fits:
            return "dense"
        return "matrix-free"
