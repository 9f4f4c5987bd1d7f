"""Bera, Chakrabarty, Flores and Negahbani, "Fair Algorithms for Clustering" (NeurIPS 2019):
k-means centres, then the *fair assignment* linear program and its iterative rounding.

Given centres c_1..c_k (scikit-learn k-means), the LP chooses fractional assignments
x_ij >= 0 with sum_i x_ij = 1 minimising sum_ij x_ij ||x_j - c_i||^2 subject to, for every
attribute, group g and centre i,

    beta_g sum_j x_ij  <=  sum_{j in g} x_ij  <=  alpha_g sum_j x_ij,
    beta_g = r_g (1 - delta),  alpha_g = r_g / (1 - delta),

with r_g the group's share of the rows (the paper's delta; its experiments use delta = 0.2).
Groups of several attributes may overlap (a row belongs to one group per attribute). Solved with
scipy's HiGHS.

Rounding (Bera et al. Section 4; the authors' ``iterative_rounding.py``): rows the LP assigns
integrally are fixed; on the fractional rest an LP with the same costs keeps, for every centre and
every (centre, group), the total fractional assignment between its floor and its ceiling —
each such constraint only while it has more than 2 Delta fractional variables (Delta = number of
attributes + 1, as in their code) — and is re-solved (a vertex solution), fixing new integral
rows, until none is fractional. The result violates each bound by a small additive amount
(the paper's 4 Delta + 3): a cluster the LP holds at its bound can end a row short. When it does,
:func:`integer_repair` (``repair=True``, the default) re-assigns the LP's fractional rows — more
if needed — by a mixed-integer program, so the labels meet every bound in whole rows (or a
warning names the bounds it could not meet); docs/methods/bera.md.

``fair=False`` returns the k-means labels of the same centres (the twin). ``predict(X)`` gives
the nearest centre; ``predict(X, sensitive=S)`` solves the fair assignment for the new rows
(seeded chunks of ``chunk_size`` rows, each satisfying the bounds, so their union does).
"""

from __future__ import annotations

import logging
import numbers
import time
import warnings
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

__all__ = ["BeraFairAssignment", "bound_violations", "fair_assignment_lp", "integer_repair",
           "iterative_rounding"]

logger = logging.getLogger(__name__)

INT_TOL = 1e-6
"""An LP value above 1 - INT_TOL is an integral assignment."""


def _bounds(attrs: list[np.ndarray], shares: list[np.ndarray], delta: float
            ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    return [(codes, s * (1.0 - delta), s / (1.0 - delta)) for codes, s in zip(attrs, shares,
                                                                            strict=True)]


def fair_assignment_lp(
    cost: np.ndarray, attrs: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
) -> tuple[np.ndarray, float]:
    """Solve the fair assignment LP. ``cost``: n x k; ``attrs``: per attribute (codes, beta,
    alpha) with codes in 0..G-1. Returns (x as n x k, objective). Raises ValueError when
    infeasible."""
    import scipy.sparse as sp
    from scipy.optimize import linprog

    n, k = cost.shape
    var = np.arange(n * k).reshape(n, k)
    rows, cols, vals = [], [], []
    r = 0
    for codes, beta, alpha in attrs:
        G = beta.size
        for g in range(G):
            ing = (codes == g).astype(float)
            for i in range(k):
                # sum_{j in g} x_ij - alpha_g sum_j x_ij <= 0
                rows.append(np.full(n, r))
                cols.append(var[:, i])
                vals.append(ing - alpha[g])
                # beta_g sum_j x_ij - sum_{j in g} x_ij <= 0
                rows.append(np.full(n, r + 1))
                cols.append(var[:, i])
                vals.append(beta[g] - ing)
                r += 2
    A_ub = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(r, n * k))
    A_eq = sp.csr_matrix((np.ones(n * k), (np.repeat(np.arange(n), k), var.ravel())),
                         shape=(n, n * k))
    scale = float(cost.max()) if cost.size and cost.max() > 0 else 1.0  # same optimum
    res = linprog(cost.ravel() / scale, A_ub=A_ub, b_ub=np.zeros(r), A_eq=A_eq, b_eq=np.ones(n),
                  bounds=(0, 1), method="highs-ds")
    if res.status == 4:  # numerical trouble of the dual simplex: interior point + crossover
        logger.info("fair assignment LP: dual simplex failed (%s); interior point", res.message)
        res = linprog(cost.ravel() / scale, A_ub=A_ub, b_ub=np.zeros(r), A_eq=A_eq,
                      b_eq=np.ones(n), bounds=(0, 1), method="highs-ipm")
    if res.status != 0:
        raise ValueError(f"the fair assignment LP has no solution ({res.message.strip()})")
    return res.x.reshape(n, k), float(res.fun) * scale


def iterative_rounding(
    x: np.ndarray, cost: np.ndarray, attrs: list[np.ndarray], *, max_rounds: int = 100
) -> tuple[np.ndarray, int]:
    """Bera et al.'s iterative rounding of an LP assignment ``x`` (n x k). ``attrs``: group
    codes per attribute. Returns (labels, rounds)."""
    import scipy.sparse as sp
    from scipy.optimize import linprog

    n, k = x.shape
    labels = np.full(n, -1, dtype=np.int64)
    big = 2 * (len(attrs) + 1)
    rounds = 0
    while True:
        integral = x.max(axis=1) > 1 - INT_TOL
        labels[integral] = x[integral].argmax(axis=1)
        frac = np.flatnonzero(labels < 0)
        if frac.size == 0 or rounds >= max_rounds:
            break
        rounds += 1
        xf = x[frac]
        support = xf > INT_TOL
        jj, ii = np.nonzero(support)
        nv = jj.size
        c = cost[frac][jj, ii]
        A_eq = sp.csr_matrix((np.ones(nv), (jj, np.arange(nv))), shape=(frac.size, nv))
        rows, cols, vals, lo, hi = [], [], [], [], []
        r = 0
        masks = [np.ones(nv, dtype=bool)]
        for codes in attrs:
            cg = codes[frac][jj]
            masks += [cg == g for g in np.unique(cg)]
        for mask in masks:
            for i in range(k):
                sel = np.flatnonzero(mask & (ii == i))
                if sel.size <= big:
                    continue
                tot = float(xf[jj[sel], ii[sel]].sum())
                rows.append(np.full(sel.size, r))
                cols.append(sel)
                vals.append(np.ones(sel.size))
                lo.append(np.floor(tot + 1e-9))
                hi.append(np.ceil(tot - 1e-9))
                r += 1
        kw: dict[str, Any] = {}
        if r:
            M = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                              shape=(r, nv))
            kw = {"A_ub": sp.vstack([M, -M]).tocsr(),
                  "b_ub": np.concatenate([np.array(hi), -np.array(lo)])}
        res = linprog(c / (float(c.max()) if c.size and c.max() > 0 else 1.0), A_eq=A_eq,
                      b_eq=np.ones(frac.size), bounds=(0, 1), method="highs-ds",
                      **kw)
        new = np.zeros_like(xf)
        if res.status == 0:
            new[jj, ii] = res.x
        if res.status != 0 or (new.max(axis=1) > 1 - INT_TOL).sum() == 0:
            # no progress (never seen): the rest go to their cheapest supported centre
            logger.warning("iterative rounding made no progress; %d rows rounded greedily",
                           frac.size)
            cf = np.where(support, cost[frac], np.inf)
            labels[frac] = cf.argmin(axis=1)
            break
        x = x.copy()
        x[frac] = new
    return labels, rounds


def bound_violations(
    labels: np.ndarray, k: int, attrs: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
) -> list[dict[str, Any]]:
    """Every (cluster, attribute, group) whose count lies outside
    [beta_g |C_i|, alpha_g |C_i|] (relative tolerance 1e-9), with the count, the cluster's size,
    the bounds and whether any integer count could meet them at that size."""
    size = np.bincount(labels, minlength=k).astype(float)
    out = []
    for a, (codes, beta, alpha) in enumerate(attrs):
        N = np.zeros((beta.size, k))
        np.add.at(N, (codes, labels), 1.0)
        lo, hi = beta[:, None] * size[None, :], alpha[:, None] * size[None, :]
        tol = 1e-9 * np.maximum(size, 1.0)[None, :]
        for g, i in zip(*np.nonzero((N < lo - tol) | (N > hi + tol)), strict=True):
            out.append({"cluster": int(i), "attribute": a, "group": int(g), "count": int(N[g, i]),
                        "size": int(size[i]), "low": float(lo[g, i]), "high": float(hi[g, i]),
                        "integer_possible": bool(np.floor(hi[g, i] + tol[0, i])
                                                 >= np.ceil(lo[g, i] - tol[0, i]))})
    return out


def _movable(labels: np.ndarray, cost: np.ndarray, codes: list[np.ndarray], per: int
             ) -> np.ndarray:
    """Rows that may move in a repair: for every cluster i and group g, the ``per`` members of
    (i, g) cheapest to move out and the ``per`` rows of g elsewhere cheapest to move into i."""
    n, k = cost.shape
    own = cost[np.arange(n), labels]
    other = np.where(np.arange(k)[None, :] == labels[:, None], np.inf, cost).min(axis=1)
    pick = np.zeros(n, dtype=bool)
    for c in codes:
        for g in np.unique(c):
            ing = c == g
            for i in range(k):
                for mask, score in ((ing & (labels == i), other - own),
                                    (ing & (labels != i), cost[:, i] - own)):
                    idx = np.flatnonzero(mask)
                    if idx.size > per:
                        idx = idx[np.argpartition(score[idx], per - 1)[:per]]
                    pick[idx] = True
    return pick


def integer_repair(
    labels: np.ndarray, x: np.ndarray, cost: np.ndarray,
    attrs: list[tuple[np.ndarray, np.ndarray, np.ndarray]], *,
    levels: tuple[int, ...] = (0, 8, 64, 512), max_variables: int = 200_000,
    time_limit: float = 60.0,
) -> tuple[np.ndarray, int, list[dict[str, Any]]]:
    """Labels that meet every bound with integer counts, at the least assignment cost over the
    rows allowed to move, or the input labels when none is found.

    Bera et al.'s rounding leaves an additive violation of a few rows per (cluster, group)
    bound, so a cluster at its bound in the LP can end a row short (balance 0.799 at
    delta = 0.2). When the rounded labels break a bound, a mixed-integer program (HiGHS via
    :func:`scipy.optimize.milp`) re-assigns the rows the LP left fractional — every other row
    keeps its label — minimising the same cost subject to every bound on the integer counts:
    Bera et al.'s integer fair assignment problem restricted to those rows. If that is
    infeasible (e.g. a cluster too small to hold every group's share in whole rows), the movable
    set grows by ``levels``: for every cluster and group the ``per`` rows cheapest to move out
    of / into it, while the program has at most ``max_variables`` variables. Like the LP, the
    program may leave a centre with no rows when that is cheapest (the estimator warns). All
    solves share ``time_limit`` seconds; a solve stopped by it returns its best assignment found
    (a relative gap of 1e-3 counts as optimal).

    Returns (labels, rows changed, violations left) — violations as :func:`bound_violations`;
    empty when the bounds hold.
    """
    n, k = cost.shape
    left = bound_violations(labels, k, attrs)
    if not left:
        return labels, 0, left
    frac = x.max(axis=1) <= 1 - INT_TOL
    codes = [c for c, _, _ in attrs]
    sets, seen = [], set()
    for per in levels:
        move = frac | (_movable(labels, cost, codes, per) if per else False)
        m = int(move.sum())
        if m in seen or m == 0:
            continue
        if m * k > max_variables:
            break
        seen.add(m)
        sets.append(np.flatnonzero(move))
    end = time.monotonic() + float(time_limit)
    for idx in sets:
        budget = end - time.monotonic()
        if budget <= 0:
            logger.info("integer repair: time limit of %g s reached", time_limit)
            break
        new = _repair_milp(labels, idx, cost, attrs, budget)
        if new is not None:
            return new, int((new != labels).sum()), []
    return labels, 0, left


def _repair_milp(labels: np.ndarray, idx: np.ndarray, cost: np.ndarray,
                 attrs: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
                 time_limit: float) -> np.ndarray | None:
    """The least-cost labels that move only the rows ``idx`` and meet every bound, or None."""
    import scipy.sparse as sp
    from scipy.optimize import Bounds, LinearConstraint, milp

    n, k = cost.shape
    m = idx.size
    fixed = np.ones(n, dtype=bool)
    fixed[idx] = False
    size_fix = np.bincount(labels[fixed], minlength=k).astype(float)
    var = np.arange(m * k).reshape(m, k)
    rows, cols, vals, ub = [], [], [], []
    r = 0
    for c, beta, alpha in attrs:
        N_fix = np.zeros((beta.size, k))
        np.add.at(N_fix, (c[fixed], labels[fixed]), 1.0)
        for g in range(beta.size):
            ing = (c[idx] == g).astype(float)
            for i in range(k):
                tol = 1e-9 * max(size_fix[i], 1.0)
                rows += [np.full(m, r), np.full(m, r + 1)]
                cols += [var[:, i], var[:, i]]
                vals += [ing - alpha[g], beta[g] - ing]
                ub += [alpha[g] * size_fix[i] - N_fix[g, i] + tol,
                       N_fix[g, i] - beta[g] * size_fix[i] + tol]
                r += 2
    A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(r, m * k))
    E = sp.csr_matrix((np.ones(m * k), (np.repeat(np.arange(m), k), var.ravel())),
                      shape=(m, m * k))
    cons = [LinearConstraint(A, -np.inf, np.array(ub)), LinearConstraint(E, 1, 1)]
    cm = cost[idx]
    scale = float(cm.max()) if cm.size and cm.max() > 0 else 1.0
    res = milp(cm.ravel() / scale, integrality=np.ones(m * k), bounds=Bounds(0, 1),
               constraints=cons,
               options={"time_limit": float(time_limit), "mip_rel_gap": 1e-3})
    if res.x is None:
        logger.info("integer repair, %d movable rows: %s", m, res.message)
        return None
    new = labels.copy()
    new[idx] = res.x.reshape(m, k).argmax(axis=1)
    if bound_violations(new, k, attrs):  # beyond the solver's tolerance: not a repair
        return None
    return new


class BeraFairAssignment(ClusterMixin, BaseEstimator):
    """Bera et al.'s fair assignment over k-means centres; ``fair=False`` is k-means.

    Parameters
    ----------
    n_clusters : int, default=2
    fair : bool, default=True
    delta : float in [0, 1), default=0.2
        Bounds beta_g = r_g (1 - delta), alpha_g = r_g / (1 - delta) (the paper's delta).
    n_init, max_iter : k-means starts and iterations for the centres.
    repair : bool, default=True
        When the rounded labels break a bound (the rounding's additive violation), re-assign
        the LP's fractional rows — more rows if needed — by a mixed-integer program so that
        every cluster's group counts meet the bounds (:func:`integer_repair`); a warning names
        the bounds no integer assignment of those rows meets. ``False``: the paper's rounding
        alone.
    chunk_size : int, default=20000
        ``predict`` with groups solves the assignment in seeded chunks of this many rows.
    random_state : int, Generator or None

    Attributes
    ----------
    labels_, cluster_centers_, kmeans_labels_, lp_objective_, rounds_ : as named.
    repaired_rows_ : int
        Rows the integer repair moved (0: the rounding met every bound).
    bound_violations_ : list of dict
        Bounds the delivered labels break (empty when every cluster's shares are within
        [r_g (1 - delta), r_g / (1 - delta)]).
    """


    # fitted attributes (set by ``fit``), typed for type checkers
    labels_: NDArray[np.intp]
    cluster_centers_: NDArray[np.float64]
    kmeans_labels_: NDArray[np.intp]
    n_iter_: int
    fair_applied_: bool
    lp_objective_: float | None
    rounds_: int
    repaired_rows_: int
    bound_violations_: list[dict[str, Any]]
    group_shares_: list[NDArray[np.float64]]
    n_features_in_: int

    def __init__(
        self,
        n_clusters: int = 2,
        *,
        fair: bool = True,
        delta: float = 0.2,
        n_init: int = 10,
        max_iter: int = 300,
        repair: bool = True,
        chunk_size: int = 20_000,
        random_state: Any = None,
    ) -> None:
        self.n_clusters = n_clusters
        self.fair = fair
        self.delta = delta
        self.n_init = n_init
        self.max_iter = max_iter
        self.repair = repair
        self.chunk_size = chunk_size
        self.random_state = random_state

    def fit(self, X: Any, y: Any = None, *, sensitive: Any = None) -> BeraFairAssignment:
        from sklearn.cluster import KMeans

        name, X, n, k = start_fit(self, X)
        check_int(name, "n_init", self.n_init, 1)
        check_int(name, "max_iter", self.max_iter, 1)
        check_int(name, "chunk_size", self.chunk_size, 2)
        check_float(name, "delta", self.delta, 0.0, 1.0, open_hi=True)
        attrs = sensitive_codes(sensitive, n, name, fair=bool(self.fair))
        # an int seed goes to k-means as it is: the centres (and the twin) are those of
        # KMeans(n_clusters, n_init, random_state=seed) on the same rows
        seed = self.random_state
        if not isinstance(seed, numbers.Integral) or isinstance(seed, bool):
            seed = int(as_generator(seed).integers(2**31 - 1))
        km = KMeans(k, n_init=int(self.n_init), max_iter=int(self.max_iter),
                    random_state=int(seed)).fit(X)
        self.cluster_centers_ = km.cluster_centers_
        self.kmeans_labels_ = km.labels_.astype(np.int64)
        self.n_iter_ = int(km.n_iter_)
        self.fair_applied_ = bool(attrs is not None and self.fair)
        self.lp_objective_ = None
        self.rounds_ = 0
        self.repaired_rows_ = 0
        self.bound_violations_: list[dict[str, Any]] = []
        if not self.fair_applied_:
            self.labels_ = self.kmeans_labels_
            return self
        codes = [c for _, c in attrs]
        self.group_shares_ = [np.bincount(c, minlength=len(g)) / n for g, c in attrs]
        (self.labels_, self.lp_objective_, self.rounds_, self.repaired_rows_,
         self.bound_violations_) = self._assign(X, codes, self.group_shares_)
        if self.bound_violations_:
            _warn_violations(self.bound_violations_, attrs, float(self.delta), bool(self.repair))
        empty = k - np.unique(self.labels_).size
        if empty and self.repaired_rows_:
            warnings.warn(
                f"BeraFairAssignment: to meet the delta = {float(self.delta):g} bounds in whole "
                f"rows at the least cost the repair emptied {empty} of the {k} clusters (a "
                "cluster must be large enough to hold every group's share in whole rows: a group "
                "of 1% needs 80-100 rows at delta = 0.2). A larger delta, fewer clusters or "
                "scaled features keep more clusters.", UserWarning, stacklevel=2)
        return self

    def _assign(self, X: np.ndarray, codes: list[np.ndarray], shares: list[np.ndarray]
                ) -> tuple[np.ndarray, float, int, int, list[dict[str, Any]]]:
        cost = sq_dist(X, self.cluster_centers_)
        bounds = _bounds(codes, shares, float(self.delta))
        x, obj = fair_assignment_lp(cost, bounds)
        labels, rounds = iterative_rounding(x, cost, codes)
        attrs = [(c, lo, hi) for c, (_, lo, hi) in zip(codes, bounds, strict=True)]
        if not self.repair:
            return labels, obj, rounds, 0, bound_violations(labels, cost.shape[1], attrs)
        labels, moved, left = integer_repair(labels, x, cost, attrs)
        return labels, obj, rounds, moved, left

    def fit_predict(self, X: Any, y: Any = None, *, sensitive: Any = None) -> NDArray[np.intp]:
        return self.fit(X, sensitive=sensitive).labels_

    def predict(self, X: Any, sensitive: Any = None) -> NDArray[np.intp]:
        """Nearest centre; with ``sensitive`` (the fit's attributes) the fair assignment of the
        new rows to the fitted centres, bounds from the new rows' own group shares."""
        check_is_fitted(self, "cluster_centers_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        if sensitive is None or not self.fair_applied_:
            return nearest(X, self.cluster_centers_)
        from fairaudit.cluster.ffcm import encode_sensitive

        n = X.shape[0]
        attrs = encode_sensitive(sensitive, n, type(self).__name__)
        codes = [c for _, c in attrs]
        shares = [np.bincount(c, minlength=len(g)) / n for g, c in attrs]
        order = np.random.default_rng(0).permutation(n)
        m = max(1, int(np.ceil(n / int(self.chunk_size))))
        out = np.empty(n, dtype=np.int64)
        left: list[dict[str, Any]] = []
        for part in np.array_split(order, m):
            part = np.sort(part)
            try:
                lab, *_, bad = self._assign(X[part], [c[part] for c in codes], shares)
            except ValueError:  # a chunk's groups too far from the shares: its own shares
                own = [np.bincount(c[part], minlength=len(g)) / part.size
                       for (g, _), c in zip(attrs, codes, strict=True)]
                lab, *_, bad = self._assign(X[part], [c[part] for c in codes], own)
            out[part] = lab
            left += bad
        if left:
            _warn_violations(left, attrs, float(self.delta), bool(self.repair))
        return out


def _warn_violations(left: list[dict[str, Any]], attrs: list[tuple[np.ndarray, np.ndarray]],
                     delta: float, repair: bool) -> None:
    """One UserWarning naming the bounds the labels break and why."""
    parts = []
    for v in left[:5]:
        group = attrs[v["attribute"]][0][v["group"]]
        why = "" if v["integer_possible"] else (
            " — no whole number of rows lies in that range at this cluster size")
        parts.append(f"cluster {v['cluster']} ({v['size']} rows) has {v['count']} of group "
                     f"'{group}' (attribute {v['attribute']}), bounds {v['low']:.2f} to "
                     f"{v['high']:.2f}{why}")
    more = f"; and {len(left) - 5} more" if len(left) > 5 else ""
    how = ("the integer repair found no re-assignment of the rows it may move that meets "
           "them within its time limit; a larger delta or fewer clusters may be feasible"
           if repair else
           "the paper's rounding (repair=False) leaves an additive violation; repair=True "
           "re-assigns rows to meet them")
    warnings.warn(
        f"BeraFairAssignment: the labels break {len(left)} of the delta = {delta:g} bounds: "
        + "; ".join(parts) + more + f". ({how}.)", UserWarning, stacklevel=3)
