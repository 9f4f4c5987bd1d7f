"""Fair fuzzy c-means (FFCM; Xu et al., seed 001) and vanilla fuzzy c-means (``eta=0``).

Objective (paper eq. 4)::

    J = sum_i sum_j u_ij^m (||p_j - c_i||^2 + eta_raw * bias_{p_j -> C_i})

``bias_{p_j -> C_i}`` is the normalised fair loss Nbias(C_i) of eq. 3 computed with ``p_j`` counted
in ``C_i`` and every other point's hard assignment (argmax membership) unchanged. It depends on
``p_j`` only through its groups and through whether ``p_j`` currently sits in ``C_i``, so for every
attribute we tabulate ``Nbias`` of each cluster "as is" and "with one more member of group g" and
gather: O(n * k * attributes) per sweep.

Update order: a *vectorised (Jacobi) sweep*. Within one iteration all biases are computed from
the hard assignment left by the previous iteration, then every membership is updated at once.
The paper's Algorithm 1 walks the points round-robin and lets each update change the counts seen
by the next point (Gauss-Seidel). The two orders share their fixed points; the Jacobi sweep is
what makes the O(n k A) vectorised form possible. See ``docs/methods/ffcm.md``.

Scale-free eta: by default (``eta_scale="variance"``) the fair-loss weight used inside the
objective is ``eta_raw = eta * s2`` with ``s2`` the mean squared distance of the points to their
mean (the total variance). The paper's values (10^2 ... 10^7) are raw squared-distance units;
pass ``eta_scale="none"`` to use them verbatim.
"""

from __future__ import annotations

import logging
import numbers
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import kmeans_plusplus
from sklearn.utils import check_random_state

__all__ = ["FairFuzzyCMeans", "encode_sensitive", "nbias_tables"]

logger = logging.getLogger(__name__)

_CHUNK = 4096  # rows per block: blocks stay in cache and BLAS stays single-threaded


def _check_X(X: Any, owner: str) -> np.ndarray:
    try:
        X = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"X passed to {owner} must be numeric; got {exc}.") from exc
    if X.ndim != 2:
        raise ValueError(f"X passed to {owner} must be a 2-D array; got {X.ndim} dimension(s).")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X passed to {owner} must be non-empty; got shape {X.shape}.")
    if not np.isfinite(X).all():
        bad = np.flatnonzero(~np.isfinite(X).all(axis=0)).tolist()
        raise ValueError(
            f"X passed to {owner} must contain only finite values; "
            f"columns {bad} contain NaN or infinity."
        )
    return X


def _check_constant(X: np.ndarray, owner: str) -> None:
    if X.shape[0] < 2:
        return
    const = np.flatnonzero(np.ptp(X, axis=0) == 0).tolist()
    if const:
        raise ValueError(
            f"X passed to {owner} has constant feature column(s) {const}; drop them before "
            "clustering (they carry no information)."
        )


def encode_sensitive(
    sensitive: Any, n_samples: int, owner: str
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Encode one or several sensitive attributes as integer codes.

    ``sensitive`` is a 1-D array (one attribute) or a 2-D array / sequence of columns
    (n_samples x n_attributes). Returns ``[(groups, codes), ...]``, one entry per attribute, where
    ``groups`` are the sorted distinct values and ``codes`` the row-wise index into them.
    """
    arr = np.asarray(sensitive)
    if arr.ndim == 1:
        cols = [arr]
    elif arr.ndim == 2:
        if arr.shape[0] != n_samples and arr.shape[1] == n_samples:
            arr = arr.T
        cols = [arr[:, a] for a in range(arr.shape[1])]
    else:
        raise ValueError(
            f"The 'sensitive' argument of {owner} must be 1-D (one attribute) or 2-D "
            f"(n_samples x n_attributes); got {arr.ndim} dimensions."
        )
    out = []
    for a, col in enumerate(cols):
        if col.shape[0] != n_samples:
            raise ValueError(
                f"The 'sensitive' argument of {owner} must have {n_samples} rows (one per "
                f"sample); got {col.shape[0]}."
            )
        if col.dtype == object:
            if any(v is None or (isinstance(v, float) and v != v) for v in col):
                raise ValueError(
                    f"The 'sensitive' argument of {owner} has missing values in attribute {a}."
                )
            col = col.astype(str)
        elif col.dtype.kind == "f" and not np.isfinite(col).all():
            raise ValueError(
                f"The 'sensitive' argument of {owner} has missing values in attribute {a}."
            )
        groups, codes = np.unique(col, return_inverse=True)
        out.append((groups, codes.astype(np.intp).ravel()))
    return out


def nbias_tables(counts: np.ndarray, ratios: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-cluster fair loss of one attribute (eq. 1-2, before the 1/l normalisation).

    ``counts`` is the (groups x clusters) hard-assignment contingency table, ``ratios`` the
    dataset group distribution. Returns ``(stay, add)``: ``stay[i]`` = sum_s (N[s,i]/|C_i| - r_s)^2
    (0 for an empty cluster), ``add[g, i]`` = the same for cluster i with one extra member of
    group g.
    """
    counts = np.asarray(counts, dtype=np.float64)
    sizes = counts.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(sizes > 0, counts / np.where(sizes > 0, sizes, 1.0), 0.0)
    stay = np.where(sizes > 0, ((frac - ratios[:, None]) ** 2).sum(axis=0), 0.0)
    # With one extra member of group g: frac' = (N[:, i] + e_g) / (n_i + 1).
    fa = counts / (sizes + 1.0)  # (l, k)
    base = ((fa - ratios[:, None]) ** 2).sum(axis=0)  # (k,)
    # correction for row g: ((fa_g + 1/(n+1)) - r_g)^2 - (fa_g - r_g)^2
    inc = 1.0 / (sizes + 1.0)
    corr = 2.0 * (fa - ratios[:, None]) * inc[None, :] + inc[None, :] ** 2
    add = base[None, :] + corr
    return stay, add


class FairFuzzyCMeans(ClusterMixin, BaseEstimator):
    """Fair fuzzy c-means (Xu et al. 2021); ``eta=0`` is vanilla fuzzy c-means (Bezdek).

    Parameters
    ----------
    n_clusters : int, default=4
        Number of clusters k (>= 2).
    m : float, default=2.0
        Fuzzifier (> 1).
    eta : float, default=1.0
        Weight of the fair loss (>= 0). Scale-free by default: the raw weight is
        ``eta * s2`` with ``s2`` the total variance of X (see ``eta_scale``). ``0`` gives FCM.
    eta_scale : {"variance", "none"}, default="variance"
        ``"none"`` uses ``eta`` verbatim in squared-distance units, as in the paper.
    max_iter : int, default=300
        Maximum number of sweeps (the paper uses T = 10).
    tol : float, default=1e-6
        Stop when ``|J_t - J_{t-1}| < tol * |J_{t-1}|`` (relative, so scale-free); ``tol=0``
        runs exactly ``max_iter`` sweeps.
    init : {"k-means++", "random"} or array of shape (n_clusters, n_features)
        ``"k-means++"`` (default): seeded k-means++ centres, memberships from eq. 6 with eta = 0.
        ``"random"``: random memberships (rows of a uniform Dirichlet), as in the paper.
        An array: initial centres, memberships from eq. 6 with eta = 0.
    random_state : int, RandomState or None
    """

    def __init__(
        self,
        n_clusters: int = 4,
        *,
        m: float = 2.0,
        eta: float = 1.0,
        eta_scale: str = "variance",
        max_iter: int = 300,
        tol: float = 1e-6,
        init: str | np.ndarray = "k-means++",
        random_state: int | np.random.RandomState | None = None,
    ) -> None:
        self.n_clusters = n_clusters
        self.m = m
        self.eta = eta
        self.eta_scale = eta_scale
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.random_state = random_state

    def _validate_params(self, n_samples: int) -> None:
        name = "FairFuzzyCMeans"
        k = self.n_clusters
        if not isinstance(k, numbers.Integral) or isinstance(k, bool) or k < 2:
            raise ValueError(
                f"The 'n_clusters' parameter of {name} must be an int >= 2; got {k!r}."
            )
        if k > n_samples:
            raise ValueError(
                f"The 'n_clusters' parameter of {name} must be <= n_samples = {n_samples}; got {k}."
            )
        m = self.m
        if not isinstance(m, numbers.Real) or isinstance(m, bool) or not np.isfinite(m) or m <= 1:
            raise ValueError(f"The 'm' parameter of {name} must be a finite float > 1; got {m!r}.")
        eta = self.eta
        if (
            not isinstance(eta, numbers.Real)
            or isinstance(eta, bool)
            or not np.isfinite(eta)
            or eta < 0
        ):
            raise ValueError(
                f"The 'eta' parameter of {name} must be a finite float >= 0; got {eta!r}."
            )
        if self.eta_scale not in ("variance", "none"):
            raise ValueError(
                f"The 'eta_scale' parameter of {name} must be 'variance' or 'none'; "
                f"got {self.eta_scale!r}."
            )
        it = self.max_iter
        if not isinstance(it, numbers.Integral) or isinstance(it, bool) or it < 1:
            raise ValueError(f"The 'max_iter' parameter of {name} must be an int >= 1; got {it!r}.")
        tol = self.tol
        if not isinstance(tol, numbers.Real) or isinstance(tol, bool) or not tol >= 0:
            raise ValueError(f"The 'tol' parameter of {name} must be a float >= 0; got {tol!r}.")
        if isinstance(self.init, str):
            if self.init not in ("k-means++", "random"):
                raise ValueError(
                    f"The 'init' parameter of {name} must be 'k-means++', 'random' or an array of "
                    f"shape (n_clusters, n_features); got {self.init!r}."
                )

    # --------------------------------------------------------------------- fit
    def fit(self, X: Any, y: Any = None, *, sensitive: Any = None) -> FairFuzzyCMeans:
        """Fit on features X (n x d) with sensitive attribute(s) ``sensitive``.

        ``sensitive`` may be omitted only when ``eta == 0`` (vanilla FCM).
        """
        name = "FairFuzzyCMeans"
        X = _check_X(X, name)
        n, d = X.shape
        self._validate_params(n)
        _check_constant(X, name)
        k = int(self.n_clusters)
        m = float(self.m)
        rng = check_random_state(self.random_state)

        attrs: list[tuple[np.ndarray, np.ndarray]] = []
        if sensitive is not None:
            attrs = encode_sensitive(sensitive, n, name)
            for a, (groups, _) in enumerate(attrs):
                if len(groups) < 2:
                    warnings.warn(
                        f"Sensitive attribute {a} passed to {name} has a single group "
                        f"({groups[0]!r}); its fair loss is always zero.",
                        UserWarning,
                        stacklevel=2,
                    )
        elif self.eta > 0:
            raise ValueError(
                f"{name}.fit needs the 'sensitive' argument when eta > 0 (got None); "
                "pass eta=0 for vanilla fuzzy c-means."
            )

        mean = X.mean(axis=0)
        X = X - mean  # centred copy: distances are translation invariant, fewer cancellations
        s2 = float(np.einsum("ij,ij->", X, X)) / n
        eta_raw = float(self.eta) * (s2 if self.eta_scale == "variance" else 1.0)
        use_fair = eta_raw > 0 and len(attrs) > 0
        floor = max(s2, 1e-300) * 1e-12  # guards 1/0 when a point sits on a centre

        # ratios, codes, normalisation per attribute
        fair = []
        for groups, codes in attrs:
            lg = len(groups)
            ratios = np.bincount(codes, minlength=lg) / n
            fair.append((codes, lg, ratios))

        p = 1.0 / (m - 1.0)
        # Augmented rows [x, |x|^2, 1]: one matmul with [-2C^T; 1; |c|^2] gives |x - c|^2.
        Xa = np.empty((n, d + 2), dtype=np.float64)
        Xa[:, :d] = X
        Xa[:, d] = np.einsum("ij,ij->i", X, X)
        Xa[:, d + 1] = 1.0
        comb, shape = _combined_codes(fair) if use_fair else (None, ())
        combined = comb is not None
        codes_arg: np.ndarray | list[np.ndarray] | None = (
            comb if combined else [c for c, _, _ in fair] if use_fair else None
        )

        # ----- initial memberships -> initial centres and labels
        U = np.empty((n, k), dtype=np.float64)
        if isinstance(self.init, str) and self.init == "random":
            U[:] = rng.dirichlet(np.ones(k), size=n)
            W = U**m
            den = W.sum(axis=0)
            centres = (W.T @ X) / np.maximum(den, 1e-300)[:, None]
            labels = np.argmax(U, axis=1)
        else:
            if isinstance(self.init, str):
                seed = rng.randint(np.iinfo(np.int32).max)
                centres, _ = kmeans_plusplus(X, k, random_state=seed)
            else:
                centres = np.asarray(self.init, dtype=np.float64)
                if centres.shape != (k, d) or not np.isfinite(centres).all():
                    raise ValueError(
                        f"The 'init' parameter of {name} as an array must be finite with shape "
                        f"({k}, {d}); got shape {centres.shape}."
                    )
                centres = centres - mean
            _, num, den, labels = _sweep(Xa, d, centres, None, None, None, m, p, floor, U)
            centres = _new_centres(num, den, centres)

        history: list[float] = []
        n_iter = 0
        for it in range(int(self.max_iter)):
            tables = _fair_tables(fair, labels, k, eta_raw, combined, shape) if use_fair else None
            J, num, den, labels = _sweep(Xa, d, centres, tables, codes_arg, labels, m, p, floor, U)
            history.append(J)
            n_iter = it + 1
            centres = _new_centres(num, den, centres)
            if len(history) >= 2 and abs(history[-1] - history[-2]) < self.tol * abs(history[-2]):
                break
        else:
            logger.info("%s did not converge in %d iterations.", name, self.max_iter)
        del Xa

        # Final state: memberships U are those of the last sweep; report the centres they imply.
        self.memberships_ = U
        self.cluster_centers_ = centres + mean
        self.labels_ = np.argmax(U, axis=1)
        self.objective_ = np.asarray(history)
        self.n_iter_ = n_iter
        self.eta_raw_ = eta_raw
        self.data_scale_ = s2
        self.groups_ = [g for g, _ in attrs]
        self.n_features_in_ = d
        if fair:
            self.cluster_bias_ = _cluster_bias(fair, self.labels_, k)
        else:
            self.cluster_bias_ = np.zeros(k)
        return self

    def fit_predict(self, X: Any, y: Any = None, *, sensitive: Any = None) -> np.ndarray:
        return self.fit(X, sensitive=sensitive).labels_


_FairSpec = Sequence[tuple[np.ndarray, int, np.ndarray]]
_MAX_COMBINED = 1 << 16


def _combined_codes(fair: _FairSpec) -> tuple[np.ndarray | None, tuple[int, ...]]:
    """One code per intersection of the attributes' groups (None when there are too many)."""
    shape = tuple(lg for _, lg, _ in fair)
    if int(np.prod(shape)) > _MAX_COMBINED:
        return None, shape
    comb = np.zeros(fair[0][0].shape[0], dtype=np.intp)
    for codes, lg, _ in fair:
        comb *= lg
        comb += codes
    return comb, shape


def _cluster_bias(fair: _FairSpec, labels: np.ndarray, k: int) -> np.ndarray:
    """Nbias(C_i) of eq. 3 for the hard assignment ``labels``."""
    total = np.zeros(k)
    for codes, lg, ratios in fair:
        counts = np.bincount(codes * k + labels, minlength=lg * k).reshape(lg, k)
        total += nbias_tables(counts, ratios)[0] / lg
    return total


def _fair_tables(
    fair: _FairSpec,
    labels: np.ndarray,
    k: int,
    eta_raw: float,
    combined: bool,
    shape: tuple[int, ...],
) -> tuple[np.ndarray, list[np.ndarray] | np.ndarray]:
    """eta * bias tables for one sweep.

    Returns ``(stay, add)``: ``stay[i]`` = eta * Nbias(C_i) (a point already in C_i leaves the
    counts unchanged, whatever its groups), and ``add`` = eta * Nbias(C_i + one point of the
    given groups): a (G x k) table over combined group codes, or a list of per-attribute tables
    already divided by the attribute's number of groups.
    """
    stay = np.zeros(k)
    adds = []
    for codes, lg, ratios in fair:
        counts = np.bincount(codes * k + labels, minlength=lg * k).reshape(lg, k)
        st, ad = nbias_tables(counts, ratios)
        stay += st / lg
        adds.append(ad * (eta_raw / lg))
    stay *= eta_raw
    if not combined:
        return stay, adds
    table = np.zeros((*shape, k))
    for a, ad in enumerate(adds):
        idx = [np.newaxis] * len(shape) + [slice(None)]
        idx[a] = slice(None)
        table = table + ad[tuple(idx)]
    return stay, table.reshape(-1, k)


def _new_centres(num: np.ndarray, den: np.ndarray, old: np.ndarray) -> np.ndarray:
    centres = num / np.where(den > 0, den, 1.0)[:, None]
    empty = den <= 0
    if empty.any():
        centres[empty] = old[empty]
    return centres


def _sweep(
    Xa: np.ndarray,
    d: int,
    centres: np.ndarray,
    tables: tuple[np.ndarray, Any] | None,
    codes: np.ndarray | list[np.ndarray] | None,
    labels: np.ndarray | None,
    m: float,
    p: float,
    floor: float,
    U: np.ndarray,
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """One vectorised sweep of eq. 6 over all points, in row chunks.

    Writes the memberships into ``U`` and returns the objective (eq. 4) of the new memberships,
    the numerator / denominator of the next centres (sum u^m x, sum u^m) and the new hard labels.
    """
    n = Xa.shape[0]
    k = centres.shape[0]
    caug = np.empty((d + 2, k))
    caug[:d] = -2.0 * centres.T
    caug[d] = 1.0
    caug[d + 1] = np.einsum("ij,ij->i", centres, centres)
    ones = np.ones(k)
    J = 0.0
    num = np.zeros((k, d))
    den = np.zeros(k)
    new_labels = np.empty(n, dtype=np.intp)
    rows_all = np.arange(_CHUNK)
    m2 = m == 2.0
    for start in range(0, n, _CHUNK):
        stop = min(start + _CHUNK, n)
        xa = Xa[start:stop]
        E = xa @ caug
        if tables is not None:
            assert labels is not None
            stay, add = tables
            lab = labels[start:stop]
            rows = rows_all[: stop - start]
            if isinstance(codes, np.ndarray):  # combined group codes, one gather
                B = np.take(add, codes[start:stop], axis=0)
            else:  # more than 65536 group intersections: one gather per attribute
                assert codes is not None
                B = np.zeros_like(E)
                for c, ad in zip(codes, add, strict=True):
                    B += np.take(ad, c[start:stop], axis=0)
            B[rows, lab] = stay[lab]
            E += B
        np.maximum(E, floor, out=E)
        if p == 1.0:
            inv = np.divide(1.0, E)
        else:
            inv = np.divide(E.min(axis=1, keepdims=True), E)
            inv **= p
        s = inv @ ones
        new_labels[start:stop] = inv.argmax(axis=1)
        inv /= s[:, None]
        u = inv
        U[start:stop] = u
        if m2:
            if p == 1.0:
                J += float((1.0 / s).sum())  # sum_i u_i^2 E_i = 1 / sum_i (1/E_i)
            else:  # pragma: no cover - p == 1 exactly when m == 2
                J += float(np.einsum("ij,ij->", u * u, E))
            w = u * u
        else:
            w = u**m
            J += float(np.einsum("ij,ij->", w, E))
        num += w.T @ xa[:, :d]
        den += w.sum(axis=0)
    return J, num, den, new_labels
