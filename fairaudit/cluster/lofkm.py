"""LOFKM: k-means with local-outlier-factor weights (Deepak P, IDEAS 2020, seed 002 §5).

``W(X) = max(LOF_t(X), 1)`` (eq. 10) with the standard LOF of Breunig et al. on ``t`` neighbours
(query point excluded; rows tied with the t-th neighbour included, as in Breunig's definition),
which on data without such ties is exactly scikit-learn's ``LocalOutlierFactor``; the neighbour
search runs on a multi-threaded ``scipy.spatial.cKDTree`` (:func:`local_outlier_factor`). The weighted objective (eq. 11) is
minimised by Lloyd iterations whose assignment step is plain nearest-prototype (eq. 12) and whose
prototype step is the W-weighted mean (eq. 13) — exactly ``KMeans.fit(X, sample_weight=W)``.

Duplicates: LOF's local reachability density is infinite for a point with at least ``t`` exact
copies (scikit-learn adds 1e-10 to the mean reachability distance, turning "infinite" into 1e10
and the neighbouring LOFs into ~1e10 weights). When X contains duplicate rows we compute LOF on
the distinct rows (Breunig et al.'s remedy: neighbourhoods over distinct points) and give every
copy the weight of its distinct row; weights are therefore always finite and >= 1.
"""

from __future__ import annotations

import logging
import numbers
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.spatial import cKDTree
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import KMeans
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from fairaudit.cluster._ffcm_ops import nearest_centre
from fairaudit.cluster._knn import self_knn
from fairaudit.cluster._progress import Progress
from fairaudit.cluster.ffcm import _check_constant, _check_X

__all__ = ["LOFKMeans", "local_outlier_factor", "lof_weights"]

logger = logging.getLogger(__name__)


TIE_RTOL = 1e-9
"""Distances within this relative tolerance of the t-th neighbour's count as ties (the same rule
as LCD's): decimal data rarely gives bit-equal distances for points that are equally far apart."""


def local_outlier_factor(
    X: np.ndarray, n_neighbors: int, *, n_jobs: int | None = None
) -> np.ndarray:
    """Breunig et al.'s LOF (2000, definitions 3–7) of every row of ``X`` (distinct rows,
    ``n_neighbors < n``).

    With t = ``n_neighbors``: ``t-dist(p)`` is the distance to p's t-th nearest other row;
    the neighbourhood ``N_t(p)`` is every other row within ``t-dist(p)`` — *all* rows tied with
    the t-th one included (within :data:`TIE_RTOL`), so the result does not depend on how a
    search tree orders equal distances; ``reach_t(p, o) = max(d(p, o), t-dist(o))``,
    ``lrd(p) = 1 / (mean_{o in N_t(p)} reach_t(p, o) + 1e-10)``,
    ``LOF(p) = mean_{o in N_t(p)} lrd(o) / lrd(p)``.

    Without ties at the t-th neighbour this is exactly scikit-learn's
    ``-LocalOutlierFactor(t).fit(X).negative_outlier_factor_`` (which keeps exactly t neighbours
    and breaks ties by its tree's order; same 1e-10 guard). The neighbour search runs on a
    multi-threaded ``scipy.spatial.cKDTree``; ``n_jobs``: threads (None or -1 = all cores).
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    n = X.shape[0]
    t = int(n_neighbors)
    workers = -1 if n_jobs is None else int(n_jobs)
    tree = cKDTree(X)
    kq = min(t + 2, n)  # the row itself, t others, and one more to detect ties
    dist, ind = self_knn(tree, X, kq, workers=workers)
    # rows are distinct, so each row is its own unique nearest neighbour (distance 0): column 0
    dist, ind = dist[:, 1:], ind[:, 1:]
    kdist = dist[:, t - 1]
    if kq == t + 2:
        tied = dist[:, t] <= kdist * (1.0 + TIE_RTOL)
    else:
        tied = np.zeros(n, dtype=bool)
    if not tied.any():
        # fixed-size neighbourhoods: the same arithmetic as scikit-learn
        dist, ind = dist[:, :t], ind[:, :t]
        reach = np.maximum(dist, kdist[ind])
        lrd = 1.0 / (np.mean(reach, axis=1) + 1e-10)
        return np.mean(lrd[ind] / lrd[:, np.newaxis], axis=1)
    # variable-size neighbourhoods: an edge list (src, dst, d)
    fixed = np.flatnonzero(~tied)
    src = [np.repeat(fixed, t)]
    dst = [ind[fixed, :t].ravel()]
    dd = [dist[fixed, :t].ravel()]
    rows = np.flatnonzero(tied)
    balls = tree.query_ball_point(
        X[rows], r=kdist[rows] * (1.0 + TIE_RTOL), workers=workers, return_sorted=False
    )
    lens = np.fromiter((len(b) for b in balls), dtype=np.int64, count=rows.size)
    s_t = np.repeat(rows, lens)
    d_t = np.fromiter((j for b in balls for j in b), dtype=np.int64, count=int(lens.sum()))
    keep = d_t != s_t
    s_t, d_t = s_t[keep], d_t[keep]
    src.append(s_t)
    dst.append(d_t)
    dd.append(np.linalg.norm(X[s_t] - X[d_t], axis=1))
    src_a, dst_a, d_a = np.concatenate(src), np.concatenate(dst), np.concatenate(dd)
    cnt = np.bincount(src_a, minlength=n).astype(np.float64)
    reach = np.maximum(d_a, kdist[dst_a])
    lrd = 1.0 / (np.bincount(src_a, weights=reach, minlength=n) / cnt + 1e-10)
    return np.bincount(src_a, weights=lrd[dst_a], minlength=n) / cnt / lrd


_MIX = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                 0xD6E8FEB86659FD93, 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53], dtype=np.uint64)


def distinct_rows(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(first, inverse)`` of ``np.unique`` over X's rows as bytes (a void view): the first
    occurrence of each distinct row, in the order of the rows' bytes, and each row's distinct
    row. Computed from a sort of one 64-bit hash per row instead of the rows themselves (1M × 6:
    0.1 s against 0.4 s), then checked row by row; on a hash collision, ``np.unique`` itself.
    ``X``: C-contiguous float64."""
    n, d = X.shape
    bits = X.view(np.uint64)
    with np.errstate(over="ignore"):
        h = bits[:, 0] * _MIX[0]
        for j in range(1, d):
            h = (h ^ (h >> np.uint64(29))) + bits[:, j] * _MIX[j % _MIX.size]
    order = np.argsort(h, kind="stable")
    hs = h[order]
    start = np.empty(n, dtype=bool)
    start[:1] = True
    np.not_equal(hs[1:], hs[:-1], out=start[1:])
    group = np.empty(n, dtype=np.intp)
    group[order] = np.cumsum(start) - 1
    rep = order[start]  # the first row of each hash group (the sort is stable)
    view = X.view(np.dtype((np.void, X.dtype.itemsize * d))).ravel()
    if not (bits == bits[rep[group]]).all():  # two different rows with one hash
        _, first, inverse = np.unique(view, return_index=True, return_inverse=True)
        return first, inverse.ravel()
    by_bytes = np.argsort(view[rep], kind="stable")  # distinct rows: np.unique's order
    rank = np.empty(rep.size, dtype=np.intp)
    rank[by_bytes] = np.arange(rep.size)
    return rep[by_bytes], rank[group]


def lof_weights(
    X: np.ndarray, n_neighbors: int, *, n_jobs: int | None = None
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Return ``(weights, lof, deduplicated)`` with ``weights = max(lof, 1)`` (eq. 10).

    ``lof`` is Breunig's LOF over ``n_neighbors`` neighbours (query point excluded). When X has
    duplicate rows, LOF is computed on the distinct rows and broadcast to the copies.
    """
    # + 0.0 maps -0.0 to 0.0, so rows that are equal as points are equal as bytes
    X = np.ascontiguousarray(X, dtype=np.float64) + 0.0
    n = X.shape[0]
    first, inverse = distinct_rows(X)
    dedup = first.size < n
    Xu = X[first] if dedup else X
    nu = Xu.shape[0]
    if n_neighbors >= nu:
        what = "distinct points" if dedup else "points"
        raise ValueError(
            f"The 'n_neighbors' parameter of LOFKMeans must be < the number of {what} "
            f"({nu}); got {n_neighbors}."
        )
    lof_u = local_outlier_factor(Xu, n_neighbors, n_jobs=n_jobs)
    lof = lof_u[inverse] if dedup else lof_u
    if not np.isfinite(lof).all():  # pragma: no cover - defensive, dedup removes the cause
        raise FloatingPointError("LOF produced non-finite values.")
    return np.maximum(lof, 1.0), lof, dedup


VARIANTS = ("targeted", "paper")
"""``variant`` values of :class:`LOFKMeans`."""


class LOFKMeans(ClusterMixin, BaseEstimator):
    """Local-connectivity k-means (LOFKM).

    Parameters
    ----------
    n_clusters : int, default=8
    fair : bool, default=True
        ``False`` drops the LOF weights (every weight 1): the same code path and the same seeded
        starts give plain k-means (the unfair twin).
    n_neighbors : int, default=5
        t, the LOF neighbourhood size.
    n_init : int, default=10
        Number of seeded starts; the one with the lowest weighted objective is kept.
    init : {"k-means++", "random"}, default="k-means++"
    max_iter : int, default=300
    tol : float, default=1e-4
        scikit-learn's KMeans tolerance (relative to the mean feature variance).
    n_jobs : int or None
        Threads for the neighbour searches of LOF and of the targeted refinement (None or -1 =
        all cores, as KMeans uses); the result does not depend on it.
    random_state : int, RandomState or None
    variant : {"targeted", "paper"}, default="targeted"
        ``"paper"``: LOF-weighted k-means (eq. 10–13) and nothing else. ``"targeted"``: the
        paper's solution and plain k-means from the same starts are each refined by a greedy
        descent of AvgLCD over prototype moves towards each cluster's worst-connected point
        (:mod:`fairaudit.cluster.lcd_refine`, t = ``n_neighbors``); the lower AvgLCD is kept.
        Labels stay the nearest-prototype assignment (eq. 12). ``fair=False`` ignores it.
        The result's AvgLCD (the ``lcd`` auditor's, t = ``n_neighbors``, on every row of X)
        is never above the twin's: on at most ``refine_rows`` rows by the refinement's
        construction, beyond it by an exact whole-table comparison (``refinement_["kept"]``).
    refine_rows : int, default=20000
        The refinement judges AvgLCD on at most this many rows (a seeded sample beyond it).
        Beyond it, the refined results (best on the sample first) are compared with the
        twin's solution on the whole table (exact AvgLCD of each): the first below the twin's
        is kept — the twin's solution only when every refined one is higher there.
    """


    # fitted attributes (set by ``fit``), typed for type checkers
    labels_: NDArray[np.intp]
    cluster_centers_: NDArray[np.float64]
    lof_: NDArray[np.float64] | None
    weights_: NDArray[np.float64]
    deduplicated_: bool
    inertia_: float
    n_iter_: int
    converged_: bool
    refinement_: dict[str, Any] | None
    n_features_in_: int

    def __init__(
        self,
        n_clusters: int = 8,
        *,
        fair: bool = True,
        n_neighbors: int = 5,
        n_init: int = 10,
        init: str = "k-means++",
        max_iter: int = 300,
        tol: float = 1e-4,
        n_jobs: int | None = None,
        random_state: int | np.random.RandomState | None = None,
        variant: str = "targeted",
        refine_rows: int = 20_000,
    ) -> None:
        self.n_clusters = n_clusters
        self.fair = fair
        self.n_neighbors = n_neighbors
        self.n_init = n_init
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.variant = variant
        self.refine_rows = refine_rows

    def _validate(self, n: int) -> None:
        name = "LOFKMeans"

        def _int(param: str, lo: int) -> int:
            v = getattr(self, param)
            if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < lo:
                raise ValueError(
                    f"The '{param}' parameter of {name} must be an int >= {lo}; got {v!r}."
                )
            return int(v)

        k = _int("n_clusters", 1)
        if k > n:
            raise ValueError(
                f"The 'n_clusters' parameter of {name} must be <= n_samples = {n}; got {k}."
            )
        t = _int("n_neighbors", 1)
        if t >= n:
            raise ValueError(
                f"The 'n_neighbors' parameter of {name} must be < n_samples = {n}; got {t}."
            )
        if not isinstance(self.fair, bool | np.bool_):
            raise ValueError(f"The 'fair' parameter of {name} must be a bool; got {self.fair!r}.")
        _int("n_init", 1)
        _int("max_iter", 1)
        _int("refine_rows", 2)
        if self.variant not in VARIANTS:
            raise ValueError(
                f"The 'variant' parameter of {name} must be one of {', '.join(VARIANTS)}; "
                f"got {self.variant!r}."
            )
        if self.init not in ("k-means++", "random"):
            raise ValueError(
                f"The 'init' parameter of {name} must be 'k-means++' or 'random'; got {self.init!r}."
            )
        tol = self.tol
        if not isinstance(tol, numbers.Real) or isinstance(tol, bool) or not tol >= 0:
            raise ValueError(f"The 'tol' parameter of {name} must be a float >= 0; got {tol!r}.")

    def fit(
        self, X: Any, y: Any = None, *, sample_weight: Any = None, sensitive: Any = None
    ) -> LOFKMeans:
        """Fit LOFKM. ``sample_weight`` (optional) multiplies the LOF weights; ``y`` and
        ``sensitive`` are ignored (LOFKM's fairness is local connectivity, not groups)."""
        name = "LOFKMeans"
        X = validate_data(self, X, dtype=np.float64, ensure_all_finite=False, ensure_min_samples=2)
        X = _check_X(X, name)
        n = X.shape[0]
        self._validate(n)
        _check_constant(X, name)
        rng = check_random_state(self.random_state)
        targeted = self.fair and self.variant == "targeted" and int(self.n_clusters) > 1
        # steps: LOF weights, the weighted k-means, the refinement (targeted)
        progress = Progress("LOFKM", 3 if targeted else 2, "steps")
        if self.fair:
            weights, lof, dedup = lof_weights(X, int(self.n_neighbors), n_jobs=self.n_jobs)
            if dedup:
                logger.info("%s: duplicate rows found; LOF computed on distinct rows.", name)
        else:
            weights, lof, dedup = np.ones(n), None, False
        w = weights
        if sample_weight is not None:
            sw = np.asarray(sample_weight, dtype=np.float64)
            if sw.shape != (n,) or not np.isfinite(sw).all() or (sw < 0).any():
                raise ValueError(
                    f"The 'sample_weight' argument of {name} must be {n} finite values >= 0."
                )
            w = w * sw
        progress.update(1)
        seed = rng.randint(np.iinfo(np.int32).max)
        plain = None
        if targeted:
            # the twin's solution (plain k-means from the same seeded starts) is one start of the
            # refinement; the other, a local minimum of the LOF-weighted objective (eq. 11), is
            # reached by weighted Lloyd iterations from it: one start instead of n_init seeded
            # ones (the refinement judges both starts by AvgLCD; docs/methods/lofkm.md)
            plain = self._kmeans(seed).fit(X, sample_weight=sample_weight)
            km = KMeans(n_clusters=int(self.n_clusters), init=plain.cluster_centers_, n_init=1,
                        max_iter=int(self.max_iter), tol=float(self.tol)).fit(X, sample_weight=w)
        else:
            km = self._kmeans(seed).fit(X, sample_weight=w)
        self.lof_ = lof
        self.weights_ = weights
        self.deduplicated_ = dedup
        self.cluster_centers_ = km.cluster_centers_
        self.labels_ = km.labels_.astype(np.intp)  # scikit-learn gives int32
        self.inertia_ = float(km.inertia_)  # weighted objective, eq. 11
        self.n_iter_ = int(km.n_iter_)
        self.converged_ = bool(km.n_iter_ < int(self.max_iter))
        self.refinement_ = None
        progress.update(2)
        if targeted:
            assert plain is not None
            self._refine(X, w, [("lof", km.cluster_centers_), ("kmeans", plain.cluster_centers_)],
                         rng, plain)
        progress.close()
        return self

    def _kmeans(self, seed: int) -> Any:
        return KMeans(
            n_clusters=int(self.n_clusters),
            init=self.init,
            n_init=int(self.n_init),
            max_iter=int(self.max_iter),
            tol=float(self.tol),
            random_state=seed,
        )

    def _refine(self, X: np.ndarray, w: np.ndarray, starts: list, rng: Any, plain: Any) -> None:
        """``variant="targeted"``: refine each start, keep the lower AvgLCD (ties: the paper's).
        ``starts``: (name, centres) with a ``"kmeans"`` start = the twin's solution (``plain``,
        the fitted twin k-means). On a sample (n > ``refine_rows``), the refined results are
        compared with the twin's solution on the whole table, in order: the first below the
        twin's AvgLCD there is kept, the twin's only when every refined one is higher
        (:func:`fairaudit.cluster.lcd_refine.whole_table_choice`)."""
        from fairaudit.cluster import lcd_refine, nearest_centre
        from fairaudit.cluster.lcd_refine import refine_prototypes, whole_table_choice

        n = X.shape[0]
        rows = np.arange(n)
        if n > int(self.refine_rows):
            rows = np.sort(rng.choice(n, size=int(self.refine_rows), replace=False))
        Xs = X[rows]
        m = Xs.shape[0]
        k = int(self.n_clusters)
        lo_share, hi_share = int(np.ceil(0.01 * m)), int(np.floor(0.9 * m))
        sized = [(name, c, np.bincount(nearest_centre(Xs, c), minlength=k)) for name, c in starts]
        # Size bounds: the report's degenerate bounds (1 %, 90 % of the rows); the upper one
        # widened to the plain k-means start's largest cluster (the twin's solution). A cluster
        # a start already has under 1 % (a handful of extreme rows, or a well-separated small
        # group the twin finds) is frozen: its prototype and members stay as they are. The LOF
        # start is refined only when it has no small cluster and fits the bounds; no move leaves
        # them, so the result has no small cluster the twin lacks, and, the twin's solution being
        # a start, never a higher AvgLCD on these rows.
        ref = next(x[2] for x in sized if x[0] == "kmeans")
        lo = max(1, lo_share)
        hi = int(max(hi_share, ref.max()))
        refined = []  # (name, refinement), the lowest AvgLCD on the rows judged first
        workers = -1 if self.n_jobs is None else int(self.n_jobs)  # as the LOF search
        lists: dict = {}  # neighbour lists of the sample's clusters, shared by both starts
        for name, centres, sizes in sized:
            small = tuple(int(j) for j in np.flatnonzero(sizes < lo))
            if name != "kmeans" and (small or sizes.max() > hi):
                continue  # a start with a small cluster of its own (the twin's are frozen)
            r = refine_prototypes(Xs, centres, t=int(self.n_neighbors), min_size=lo,
                                  max_size=hi, frozen=small, workers=workers, lists=lists)
            refined.append((name, r))
        refined.sort(key=lambda x: x[1].avg_lcd)  # stable: ties keep the paper's start first
        name, r = refined[0]
        centres, labels = r.centres, nearest_centre(X, r.centres)
        table = {"kept": "refined", "avg_lcd_table": float(r.avg_lcd), "twin_avg_lcd_table": None}
        if lcd_refine.TABLE_CHECK and (m < n or not np.array_equal(
                nearest_centre(X, plain.cluster_centers_), plain.labels_)):
            # the sample's AvgLCD is not the table's (nor, in a rare tie, the k-means start's
            # nearest-prototype labels the twin's): keep a refined result only if it is no less
            # fair than the twin's solution on every row (docs/methods/lofkm.md)
            cands = [(c.centres, labels if i == 0 else nearest_centre(X, c.centres))
                     for i, (_, c) in enumerate(refined)]
            ch = whole_table_choice(X, cands, plain.cluster_centers_, plain.labels_,
                                    t=int(self.n_neighbors), workers=workers)
            if ch.kept < 0:
                centres, labels = plain.cluster_centers_, plain.labels_
            else:
                name, r = refined[ch.kept]
                centres, labels = cands[ch.kept]
            table = {"kept": "refined" if ch.kept >= 0 else "twin",
                     "avg_lcd_table": ch.avg_lcd, "twin_avg_lcd_table": ch.twin_avg_lcd}
            logger.info("LOFKMeans: whole-table AvgLCD of the refined results %s, the twin's "
                        "%.6g; kept %s.", ", ".join(f"{v:.6g}" for v in ch.candidates),
                        ch.twin_avg_lcd, table["kept"])
        self.cluster_centers_ = centres
        self.labels_ = np.asarray(labels)
        d2 = ((X - centres[self.labels_]) ** 2).sum(axis=1)
        self.inertia_ = float((w * d2).sum())
        self.refinement_ = {
            "start": name, "avg_lcd_start": float(r.avg_lcd_start), "avg_lcd": float(r.avg_lcd),
            "moves": int(r.moves), "evaluations": int(r.evaluations), "rounds": int(r.rounds),
            "rows": int(r.rows), **table,
        }

    def fit_predict(
        self, X: Any, y: Any = None, *, sample_weight: Any = None, sensitive: Any = None
    ) -> NDArray[np.intp]:
        """Fit and return ``labels_``."""
        return self.fit(X, sample_weight=sample_weight).labels_

    def predict(self, X: Any) -> NDArray[np.intp]:
        """Nearest prototype (eq. 12); on the training rows of a converged fit this is
        ``labels_`` (Lloyd's fixed point)."""
        check_is_fitted(self, "cluster_centers_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return nearest_centre(X, self.cluster_centers_)
