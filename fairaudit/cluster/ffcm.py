"""Fair fuzzy c-means (FFCM; Xu et al., seed 001); ``fair=False`` is fuzzy c-means (Bezdek).

One unit: one estimator (FFCM); both variants share the membership update and the eta search.

Two forms of the fairness term (``variant``), both added to the squared distances inside the
membership update (paper eq. 6), ``u_ij ~ (||p_j - c_i||^2 + eta_raw * pen_ij)^(-1/(m-1))``:

* ``"paper"``: ``pen_ij = bias_{p_j -> C_i}``, the normalised fair loss Nbias(C_i) of eq. 3 with
  ``p_j`` counted in ``C_i`` and every other point's hard assignment unchanged (eq. 3-6 as
  printed). Its group-specific part is O(1/|C_i|), so it has almost no effect on real data
  (docs/reproduction/centroid.md).
* ``"targeted"`` (default): ``pen_ij`` is the derivative of the size-weighted fair loss
  ``F = 1/(2 n/k) sum_i sum_s (N_si - r_s n_i)^2`` (soft counts) with respect to ``u_ij``: for a
  point of group g in cluster i, ``(n_i k/n) (e_gi - sum_s r_s e_si)`` with ``e_si`` the excess
  share of group s in cluster i. It pushes the over-represented group out of each cluster and
  pulls the under-represented ones in, with an O(1) weight. The fit starts from the converged
  fuzzy c-means solution (the twin) and each sweep moves the penalty table a damped step towards
  the penalty of the current memberships, until the objective settles.

Both tables depend on a point only through its groups (and, for ``"paper"``, through whether it
already sits in the cluster): one table per sweep, one gather per point, O(n k attributes).
Derivations, the choice of eta and the update order: ``docs/methods/ffcm.md``.
"""

from __future__ import annotations

import logging
import numbers
import warnings
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import kmeans_plusplus
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from fairaudit.cluster._ffcm_ops import (
    Anderson,
    TableStep,
    cluster_bias,
    combine_tables,
    combined_codes,
    count_index,
    fair_tables,
    nbias_tables,
    nearest_centre,
    new_centres,
    sweep,
    targeted_penalties,
)
from fairaudit.cluster._progress import Progress

__all__ = [
    "FairFuzzyCMeans", "auto_fuzzifier", "encode_sensitive", "fuzzifier_estimate", "nbias_tables",
]

logger = logging.getLogger(__name__)

TARGETED_ETA = 3.0
"""Default ``eta`` of the targeted term (``eta="auto"``), in units of the typical gap between a
row's squared distances to its two nearest centres (``eta_scale="gap"``):
chosen on the Adult/Bank reproduction (docs/methods/ffcm.md, "Choosing eta")."""
TABLE_STEP = 0.2
"""Targeted term: each sweep moves the penalty table by this fraction of the way to the penalty
of the current memberships (after the first sweeps: step max(TABLE_STEP, 1/t)). A damped
fixed-point iteration: at convergence the table is the penalty of the final memberships."""
PAPER_ETA = 1.0
"""Default ``eta`` of the paper-literal term, in units of the total variance."""

ETA_FACTORS = (1.0, 1.0 / 3.0, 1.0 / 9.0, 3.0, 9.0)
"""Factors of ``eta`` the targeted refinement tries in turn; the first whose hard labels have a
lower size-weighted Ed than the twin's is kept (else the twin's solution, said in notes)."""
TABLE_FORMS = ("soft", "hard")
"""Counts the targeted table is computed from, tried in turn (each with every ETA_FACTORS):
``"soft"`` = the memberships (the derivative of the soft fair loss, docs/methods/ffcm.md);
``"hard"`` = the argmax labels (one-hot), for twins whose soft composition is already near the
population's while the hard labels are not (Bank's numeric columns at k = 2)."""
ANDERSON_MEMORY = 5
"""Targeted term, ``acceleration="anderson"``: residuals kept by the Anderson acceleration of the
fair sweeps (docs/methods/ffcm.md, "Iteration and convergence")."""
ANDERSON_START = 4
ACCELERATIONS = ("adaptive", "anderson", "none")
FULL_STEP_RATE = 0.5
"""Targeted term, ``acceleration="adaptive"``: the fair sweeps take full table steps once two
damped sweeps in a row showed the undamped map contracting at a local rate |lam| <= this
(:class:`~fairaudit.cluster._ffcm_ops.TableStep`; docs/methods/ffcm.md)."""
STANDARD_M = 2.0
"""The fuzzifier of the FFCM paper and of most FCM software; ``m="auto"`` never exceeds it."""


def fuzzifier_estimate(n: int, d: int) -> float:
    """Schwämmle & Jensen's fuzzifier estimate m_SJ(n, d) (Bioinformatics 26(22):2841-2848,
    2010; Mfuzz's ``mestimate``): the smallest m at which fuzzy c-means finds no structure in
    randomised data of n rows and d dimensions,

    m_SJ = 1 + (1418/n + 22.05)·d⁻² + (12.33/n + 0.243)·d^(−0.0406·ln n − 0.1134).

    It falls towards 1 as d grows: in many dimensions all distances to the centres are alike
    and a fixed m = 2 flattens every membership to ≈ 1/k."""
    if n < 1 or d < 1:
        raise ValueError(f"fuzzifier_estimate needs n >= 1 and d >= 1; got n={n}, d={d}.")
    return float(
        1.0 + (1418.0 / n + 22.05) * d**-2.0
        + (12.33 / n + 0.243) * d ** (-0.0406 * np.log(n) - 0.1134)
    )


def auto_fuzzifier(n: int, d: int) -> float:
    """``m="auto"``: min(2, m_SJ(n, d)) — the standard m = 2 where the data allow it (on the
    FFCM paper's 3-5 features m_SJ ≥ 2), Schwämmle & Jensen's estimate where m = 2 would leave
    memberships flat (e.g. 1.04 on one-hot encoded Adult, d ≈ 100)."""
    return min(STANDARD_M, fuzzifier_estimate(n, d))


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


def _fit_sensitive(
    sensitive: Any, n: int, name: str, wanted: bool
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Encode ``sensitive`` (validating it whenever given); warn when it is missing but wanted."""
    if sensitive is None:
        if wanted:
            warnings.warn(
                f"{name}.fit got no 'sensitive' groups, so the fairness term has nothing to act "
                "on: the result is the unfair twin (fair=False). Pass fit(X, sensitive=S).",
                UserWarning,
                stacklevel=3,
            )
        return []
    attrs = encode_sensitive(sensitive, n, name)
    for a, (groups, _) in enumerate(attrs):
        if len(groups) < 2 and wanted:
            warnings.warn(
                f"Sensitive attribute {a} passed to {name} has a single group "
                f"({groups[0]!r}); its fair loss is always zero.",
                UserWarning,
                stacklevel=3,
            )
    return attrs


class FairFuzzyCMeans(ClusterMixin, BaseEstimator):
    """Fair fuzzy c-means (Xu et al. 2021); ``fair=False`` is vanilla fuzzy c-means (Bezdek).

    Parameters
    ----------
    n_clusters : int, default=4
        Number of clusters k (>= 1; k = 1 is allowed, as in scikit-learn's KMeans).
    fair : bool, default=True
        ``False`` switches the fairness term off: the same code path and start give fuzzy
        c-means (the unfair twin).
    variant : {"targeted", "paper"}, default="targeted"
        ``"targeted"``: the term pushes each cluster's over-represented group out (derivative of
        the size-weighted fair loss; docs/methods/ffcm.md). ``"paper"``: eq. 3-6 as printed.
    eta : float or "auto", default="auto"
        Weight of the fairness term (>= 0; 0 gives FCM). ``"auto"``: 3 for ``"targeted"``,
        1 for ``"paper"``. Scale-free, in the unit set by ``eta_scale``.
    eta_scale : {"auto", "gap", "variance", "none"}, default="auto"
        Unit of ``eta``: ``"gap"`` = mean over the rows of the gap between the squared distances
        to their nearest and second-nearest centre (of the twin's solution for ``"targeted"``),
        ``"variance"`` = total variance of X, ``"none"`` = raw squared-distance units (the
        paper's 1e2..1e7). ``"auto"``: ``"gap"`` for ``"targeted"``, ``"variance"`` for
        ``"paper"``.
    m : float or "auto", default=2.0
        Fuzzifier (> 1). ``"auto"`` = min(2, m_SJ(n, d)) with Schwämmle & Jensen's estimate
        (:func:`fuzzifier_estimate`): the standard m = 2 unless the data's dimension makes it
        flatten every membership (one-hot encoded tables), see ``docs/methods/ffcm.md``. The
        value used is ``m_``.
    max_iter : int, default=300
        Maximum number of sweeps (the paper uses T = 10); per phase for the targeted form (its
        fuzzy c-means start, then the fair refinement), so its ``n_iter_`` (every sweep of the
        fit) can reach ``2 * max_iter``.
    tol : float, default=1e-6
        Stop when ``|J_t - J_{t-1}| < tol * |J_{t-1}|`` (relative, so scale-free); ``tol=0``
        runs exactly ``max_iter`` sweeps.
    init : {"k-means++", "random"} or array of shape (n_clusters, n_features)
        ``"k-means++"`` (default): seeded k-means++ centres, memberships from eq. 6 without the
        term. ``"random"``: random memberships (rows of a uniform Dirichlet), as in the paper.
        An array: initial centres.
    random_state : int, RandomState or None
    acceleration : {"none", "adaptive", "anderson"}, default="none"
        Targeted form only: how the fair sweeps move the penalty table. ``"none"``: the damped
        sweeps. ``"adaptive"`` (soft table): the damped step until the damped iteration is seen
        contracting near a fixed point, then full steps (safeguarded, back to damped when the
        residual grows): the same fixed points as ``"none"`` on real data, in fewer sweeps, but
        it can change which η candidate step 4 keeps (docs/methods/ffcm.md, "Iteration and
        convergence"). ``"anderson"`` extrapolates the damped sweeps (centres and penalty table)
        from the last few (Anderson acceleration): a fixed point of the same equations, but it
        can settle in another, less fair one than the damped path.

    Attributes
    ----------
    labels_, memberships_, cluster_centers_ (the centres the final memberships were computed
    from), objective_ (J after every sweep), n_iter_, converged_, eta_raw_, fair_applied_
    (False when the term was off: ``fair=False``, ``eta=0`` or no ``sensitive``),
    fairness_penalty_ (per attribute, the (groups x k) table a new point of each group gets,
    already multiplied by ``eta_raw_``; None when the term was off), groups_, cluster_bias_
    (Nbias(C_i) of eq. 3 at the end), n_features_in_.

    Sensitive groups are passed to ``fit(X, y=None, sensitive=S)`` (n values or n x a). Without
    them the term has nothing to act on: ``fit`` warns and fits the unfair twin.
    """


    # fitted attributes (set by ``fit``), typed for type checkers
    labels_: NDArray[np.intp]
    memberships_: NDArray[np.float64]
    cluster_centers_: NDArray[np.float64]
    objective_: NDArray[np.float64]
    n_iter_: int
    converged_: bool
    m_: float
    eta_raw_: float
    eta_reductions_: tuple[float, ...]
    fair_table_: str | None
    data_scale_: float
    fair_applied_: bool
    groups_: list[NDArray[Any]]
    fairness_penalty_: list[NDArray[np.float64]] | None
    cluster_bias_: NDArray[np.float64]
    n_features_in_: int

    def __init__(
        self,
        n_clusters: int = 4,
        *,
        fair: bool = True,
        variant: str = "targeted",
        eta: float | str = "auto",
        eta_scale: str = "auto",
        m: float = 2.0,
        max_iter: int = 300,
        tol: float = 1e-6,
        init: str | np.ndarray = "k-means++",
        random_state: int | np.random.RandomState | None = None,
        acceleration: str = "none",
    ) -> None:
        self.n_clusters = n_clusters
        self.fair = fair
        self.variant = variant
        self.eta = eta
        self.eta_scale = eta_scale
        self.m = m
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.random_state = random_state
        self.acceleration = acceleration

    def _validate_params(self, n_samples: int) -> tuple[float, str]:
        """Check the parameters; return the effective (eta, eta_scale)."""
        name = "FairFuzzyCMeans"
        k = self.n_clusters
        if not isinstance(k, numbers.Integral) or isinstance(k, bool) or k < 1:
            raise ValueError(
                f"The 'n_clusters' parameter of {name} must be an int >= 1; got {k!r}."
            )
        if k > n_samples:
            raise ValueError(
                f"The 'n_clusters' parameter of {name} must be <= n_samples = {n_samples}; got {k}."
            )
        if not isinstance(self.fair, bool | np.bool_):
            raise ValueError(f"The 'fair' parameter of {name} must be a bool; got {self.fair!r}.")
        if self.variant not in ("targeted", "paper"):
            raise ValueError(
                f"The 'variant' parameter of {name} must be 'targeted' or 'paper'; "
                f"got {self.variant!r}."
            )
        m = self.m
        if isinstance(m, str) and m == "auto":
            pass
        elif not isinstance(m, numbers.Real) or isinstance(m, bool) or not np.isfinite(m) or m <= 1:
            raise ValueError(
                f"The 'm' parameter of {name} must be a finite float > 1 or 'auto'; got {m!r}."
            )
        eta = self.eta
        if isinstance(eta, str) and eta == "auto":
            eta = TARGETED_ETA if self.variant == "targeted" else PAPER_ETA
        if (
            not isinstance(eta, numbers.Real)
            or isinstance(eta, bool)
            or not np.isfinite(eta)
            or eta < 0
        ):
            raise ValueError(
                f"The 'eta' parameter of {name} must be 'auto' or a finite float >= 0; "
                f"got {eta!r}."
            )
        scale = self.eta_scale
        if scale not in ("auto", "gap", "variance", "none"):
            raise ValueError(
                f"The 'eta_scale' parameter of {name} must be 'auto', 'gap', 'variance' or "
                f"'none'; got {scale!r}."
            )
        if scale == "auto":
            scale = "gap" if self.variant == "targeted" else "variance"
        it = self.max_iter
        if not isinstance(it, numbers.Integral) or isinstance(it, bool) or it < 1:
            raise ValueError(f"The 'max_iter' parameter of {name} must be an int >= 1; got {it!r}.")
        tol = self.tol
        if not isinstance(tol, numbers.Real) or isinstance(tol, bool) or not tol >= 0:
            raise ValueError(f"The 'tol' parameter of {name} must be a float >= 0; got {tol!r}.")
        if self.acceleration not in ACCELERATIONS:
            raise ValueError(
                f"The 'acceleration' parameter of {name} must be 'none', 'adaptive' or "
                f"'anderson'; got {self.acceleration!r}."
            )
        if isinstance(self.init, str):
            if self.init not in ("k-means++", "random"):
                raise ValueError(
                    f"The 'init' parameter of {name} must be 'k-means++', 'random' or an array of "
                    f"shape (n_clusters, n_features); got {self.init!r}."
                )
        return float(eta), scale

    # --------------------------------------------------------------------- fit
    def fit(self, X: Any, y: Any = None, *, sensitive: Any = None) -> FairFuzzyCMeans:
        """Fit on features X (n x d) with sensitive attribute(s) ``sensitive`` (n or n x a).

        ``y`` is ignored. Without ``sensitive`` (or with ``fair=False`` / ``eta=0``) the result
        is fuzzy c-means from the same start.
        """
        name = "FairFuzzyCMeans"
        X = validate_data(self, X, dtype=np.float64, ensure_all_finite=False, ensure_min_samples=2)
        X = _check_X(X, name)
        n, d = X.shape
        eta, scale = self._validate_params(n)
        _check_constant(X, name)
        k = int(self.n_clusters)
        m = auto_fuzzifier(n, d) if isinstance(self.m, str) else float(self.m)
        self.m_ = m
        rng = check_random_state(self.random_state)
        wanted = bool(self.fair) and eta > 0
        attrs = _fit_sensitive(sensitive, n, name, wanted)
        targeted = self.variant == "targeted"

        mean = X.mean(axis=0)
        X = X - mean  # centred copy: distances are translation invariant, fewer cancellations
        s2 = float(np.einsum("ij,ij->", X, X)) / n
        floor = max(s2, 1e-300) * 1e-12  # guards 1/0 when a point sits on a centre
        fair = [
            (codes, len(groups), np.bincount(codes, minlength=len(groups)) / n)
            for groups, codes in attrs
        ]
        use_fair = wanted and len(fair) > 0

        p = 1.0 / (m - 1.0)
        # Augmented rows [x, |x|^2, 1]: one matmul with [-2C^T; 1; |c|^2] gives |x - c|^2.
        Xa = np.empty((n, d + 2), dtype=np.float64)
        Xa[:, :d] = X
        Xa[:, d] = np.einsum("ij,ij->i", X, X)
        Xa[:, d + 1] = 1.0
        comb, shape = combined_codes(fair) if use_fair else (None, ())
        # the soft counts of the targeted table: one bincount over U per sweep (n x k indices)
        index: np.ndarray | list[np.ndarray] | None = None
        if use_fair and targeted:
            index = (count_index(comb, k) if comb is not None
                     else [count_index(c, k) for c, _, _ in fair])
        codes_arg: np.ndarray | list[np.ndarray] | None = (
            comb if comb is not None else [c for c, _, _ in fair] if use_fair else None
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
            _, num, den, labels = sweep(Xa, d, centres, None, None, None, m, p, floor, U)
            centres = new_centres(num, den, centres)
        # Phases: "fcm" = plain sweeps (the twin, and the targeted form's start); "fair" = the
        # targeted term (damped penalty table); "paper" = eq. 3-6 from the start.
        if not use_fair:
            phases = ["fcm"]
        else:
            phases = ["fcm", "fair"] if targeted else ["paper"]
        eta_raw = 0.0
        history: list[float] = []
        n_iter = 0
        converged = True  # every phase settled before max_iter
        avg: list[np.ndarray] | None = None
        used = centres
        reductions: list[float] = []  # targeted: eta factors tried (ETA_FACTORS)
        kept_form: str | None = None  # targeted: the table form of the kept refinement
        for phase in phases:
            if phase != "fcm":
                if scale == "gap":  # typical margin between a row's two nearest centres
                    unit = _gap_scale(X, centres)
                else:
                    unit = s2 if scale == "variance" else 1.0
                eta_raw = eta * unit
            if phase == "fair":
                # The refinement is kept only if it lowers the size-weighted Ed of the hard
                # labels (the method's target) against the twin without raising the summed Ed
                # (the paper's); otherwise eta is divided by 3 (twice), then multiplied by 3
                # and 9, then the twin is kept.
                twin = (U.copy(), centres, used, labels.copy(), len(history), converged)
                ed_twin, ed_sum_twin = _hard_eds(fair, labels, k)
                full = eta_raw
                tries = [(form, f) for form in TABLE_FORMS for f in ETA_FACTORS]
                progress = Progress("FFCM eta candidates", len(tries), "candidates")
                for tried, (form, factor) in enumerate(tries):
                    progress.update(tried)
                    ph = "fair" if form == "soft" else "hard"
                    U[:] = twin[0]
                    centres, used, labels = twin[1], twin[2], twin[3].copy()
                    del history[twin[4] :]
                    eta_raw = full * factor
                    reductions.append(factor)
                    avg = None
                    centres, used, labels, settled = self._phase(
                        ph, Xa, d, centres, used, labels, U, fair, comb, shape, codes_arg,
                        k, m, p, floor, eta_raw, history, avg_box := [None], s2, index,
                    )
                    avg = avg_box[0]
                    converged = twin[5] and settled
                    ed_w, ed_sum = _hard_eds(fair, labels, k)
                    logger.debug(
                        "FFCM %s eta factor %g: weighted Ed %.6f (twin %.6f), summed Ed %.6f "
                        "(twin %.6f)", ph, factor, ed_w, ed_twin, ed_sum, ed_sum_twin,
                    )
                    if ed_w < ed_twin - 1e-12 and ed_sum <= ed_sum_twin + 1e-12:
                        kept_form = form
                        progress.close(tried + 1)
                        break
                else:  # no eta lowered the fair loss: the twin's solution, said in notes_
                    U[:] = twin[0]
                    centres, used, labels = twin[1], twin[2], twin[3]
                    del history[twin[4] :]
                    converged = twin[5]
                    eta_raw, avg = 0.0, None
                    reductions.append(0.0)
                    progress.close()
                continue
            centres, used, labels, settled = self._phase(
                phase, Xa, d, centres, used, labels, U, fair, comb, shape, codes_arg,
                k, m, p, floor, eta_raw, history, [None], s2, index,
            )
            converged = converged and settled
        n_iter = len(history)
        if not converged:
            logger.info("%s did not converge in %d iterations.", name, self.max_iter)
        del Xa

        self.memberships_ = U
        self.cluster_centers_ = used + mean
        self.labels_ = np.argmax(U, axis=1)
        self.objective_ = np.asarray(history)
        self.n_iter_ = n_iter
        self.converged_ = converged
        self.eta_raw_ = eta_raw if use_fair else 0.0
        self.eta_reductions_ = tuple(reductions)
        self.fair_table_ = kept_form
        self.data_scale_ = s2
        self.fair_applied_ = use_fair
        self.groups_ = [g for g, _ in attrs]
        self.fairness_penalty_: list[np.ndarray] | None = None
        use_fair = use_fair and eta_raw > 0  # False when the refinement was rejected
        self.fair_applied_ = use_fair
        if use_fair:
            if targeted:  # the penalty the final memberships were computed with
                assert avg is not None
                pens = avg
            else:  # a new point joins a cluster: the "add" table of eq. 3
                pens = [
                    nbias_tables(
                        np.bincount(c * k + self.labels_, minlength=lg * k).reshape(lg, k), r
                    )[1]
                    / lg
                    for c, lg, r in fair
                ]
            self.fairness_penalty_ = [eta_raw * t for t in pens]
        self.cluster_bias_ = cluster_bias(fair, self.labels_, k) if fair else np.zeros(k)
        return self

    def _phase(
        self, phase: str, Xa: np.ndarray, d: int, centres: np.ndarray, used: np.ndarray,
        labels: np.ndarray, U: np.ndarray, fair: Any, comb: Any, shape: tuple[int, ...],
        codes_arg: Any, k: int, m: float, p: float, floor: float, eta_raw: float,
        history: list[float], avg_box: list[Any], s2: float, index: Any = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
        """Sweeps of one phase until the objective settles or ``max_iter``; appends to
        ``history``; the targeted table's final value is left in ``avg_box[0]``."""
        start = len(history)
        avg: list[np.ndarray] | None = None
        # Anderson acceleration of the damped fixed point (centres, table) -> (centres', table')
        # once the table step is constant; the state is scaled so that a unit change moves the
        # squared distances by about one unit of the data's variance in both parts.
        aa = (
            Anderson(ANDERSON_MEMORY)
            if phase in ("fair", "hard") and self.acceleration == "anderson"
            else None
        )
        x_prev: np.ndarray | None = None
        # acceleration="adaptive": full table steps once the damped iteration contracts (soft
        # table only: the hard table is a step function of U, its residual has no local rate)
        relax = (
            TableStep(TABLE_STEP, FULL_STEP_RATE)
            if phase == "fair" and self.acceleration == "adaptive"
            else None
        )
        c_unit = 1.0 / np.sqrt(max(s2, 1e-300))
        t_unit = eta_raw / max(s2, 1e-300)
        task = "FCM sweeps" if phase == "fcm" else "FFCM sweeps"
        progress = Progress(task, int(self.max_iter), "sweeps")
        for it in range(int(self.max_iter)):
            progress.update(it)
            tables: Any = None
            if phase in ("fair", "hard"):  # damped move of the table towards the current penalty
                # "hard": the table from the hard labels' counts (one-hot of the argmax)
                counts_from = _one_hot(U) if phase == "hard" else U
                new = targeted_penalties(fair, counts_from, comb, shape, index)
                step = max(TABLE_STEP, 1.0 / (it + 1))
                if relax is not None and avg is not None:
                    residual = np.sqrt(sum(float(((b - a) ** 2).sum())
                                           for a, b in zip(avg, new, strict=True)))
                    step = relax.step(float(residual), step)
                avg = (
                    new
                    if avg is None
                    else [a + (b - a) * step for a, b in zip(avg, new, strict=True)]
                )
                if aa is not None and it >= ANDERSON_START:
                    g = np.concatenate([centres.ravel() * c_unit, *(t.ravel() * t_unit for t in avg)])
                    if x_prev is not None:
                        z = aa.next(x_prev, g)
                        centres = z[: centres.size].reshape(centres.shape) / c_unit
                        pos = centres.size
                        out = []
                        for t in avg:  # a penalty table is >= 0 (its minimum over clusters is 0)
                            out.append(np.maximum(z[pos : pos + t.size].reshape(t.shape) / t_unit, 0.0))
                            pos += t.size
                        avg = out
                        g = np.concatenate(
                            [centres.ravel() * c_unit, *(t.ravel() * t_unit for t in avg)]
                        )
                    x_prev = g
                scaled = [eta_raw * t for t in avg]
                tables = (None, combine_tables(scaled, shape) if comb is not None else scaled)
            elif phase == "paper":
                tables = fair_tables(fair, labels, k, eta_raw, comb is not None, shape)
            used = centres
            J, num, den, labels = sweep(Xa, d, centres, tables, codes_arg, labels, m, p, floor, U)
            history.append(J)
            centres = new_centres(num, den, centres)
            done = len(history) - start >= 2 and _settled(history, -1, self.tol)
            if done and relax is not None and relax.full_steps:
                # J is not monotone in the fair phase; after full steps one small change can be
                # a turning point of J, not the fixed point: two small changes in a row
                done = len(history) - start >= 3 and _settled(history, -2, self.tol)
            if done:
                avg_box[0] = avg
                progress.close(it + 1)
                return centres, used, labels, True
        avg_box[0] = avg
        progress.close()
        return centres, used, labels, False

    def fit_predict(self, X: Any, y: Any = None, *, sensitive: Any = None) -> NDArray[np.intp]:
        """Fit and return ``labels_`` (argmax memberships of the training rows)."""
        return self.fit(X, sensitive=sensitive).labels_

    # ----------------------------------------------------------------- predict
    def predict_memberships(self, X: Any, sensitive: Any = None) -> NDArray[np.float64]:
        """Memberships of new rows from the fitted centres (eq. 6).

        Without ``sensitive``: plain fuzzy c-means memberships, u_ij ~ ||x_j - c_i||^(-2/(m-1)).
        With ``sensitive`` (and a fitted fairness term): the fitted penalty table of each new
        row's groups is added to its squared distances. A new row does not change the fitted
        clusters' composition, so the table is frozen at its fitted value.
        """
        check_is_fitted(self, "cluster_centers_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        C = self.cluster_centers_
        E = np.einsum("ij,ij->i", X, X)[:, None] - 2.0 * (X @ C.T) + np.einsum("ij,ij->i", C, C)
        if sensitive is not None and self.fairness_penalty_ is not None:
            E += self._penalty(sensitive, X.shape[0])
        floor = max(self.data_scale_, 1e-300) * 1e-12
        np.maximum(E, floor, out=E)
        inv = np.divide(E.min(axis=1, keepdims=True), E) ** (1.0 / (float(self.m_) - 1.0))
        inv /= inv.sum(axis=1, keepdims=True)
        return inv

    def predict(self, X: Any, sensitive: Any = None) -> NDArray[np.intp]:
        """Cluster of each new row: argmax of :meth:`predict_memberships` (without
        ``sensitive``: the nearest fitted centre)."""
        check_is_fitted(self, "cluster_centers_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        if sensitive is None or self.fairness_penalty_ is None:
            return nearest_centre(X, self.cluster_centers_)
        # memberships decrease with E = |x - c|^2 + penalty: the argmax is the argmin of E
        pen = self._penalty(sensitive, X.shape[0])
        C = self.cluster_centers_
        pen += np.einsum("ij,ij->i", C, C)
        pen -= 2.0 * (X @ C.T)
        return np.argmin(pen, axis=1)

    def _penalty(self, sensitive: Any, n: int) -> np.ndarray:
        name = "FairFuzzyCMeans.predict"
        assert self.fairness_penalty_ is not None
        arr = np.asarray(sensitive)
        cols = [arr] if arr.ndim == 1 else [arr[:, a] for a in range(arr.shape[1])]
        if len(cols) != len(self.groups_) or any(len(c) != n for c in cols):
            raise ValueError(
                f"The 'sensitive' argument of {name} must have {n} rows and "
                f"{len(self.groups_)} attribute(s), as in fit."
            )
        out = np.zeros((n, self.cluster_centers_.shape[0]))
        for a, (col, groups, table) in enumerate(
            zip(cols, self.groups_, self.fairness_penalty_, strict=True)
        ):
            col = col.astype(str) if groups.dtype.kind == "U" else col
            idx = np.searchsorted(groups, col)
            idx = np.clip(idx, 0, len(groups) - 1)
            unknown = groups[idx] != col
            if unknown.any():
                raise ValueError(
                    f"The 'sensitive' argument of {name} has group(s) not seen in fit in "
                    f"attribute {a}: {sorted(set(np.asarray(col)[unknown].tolist()))[:5]}."
                )
            out += table[idx]
        return out

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags


def _hard_ed(fair: Any, labels: np.ndarray, k: int) -> float:
    """Size-weighted Ed of the hard labels (fairaudit's ``ed``), summed over the attributes:
    sum over clusters i of (n_i / n) * ||N_i / n_i - r||_2."""
    return _hard_eds(fair, labels, k)[0]


def _hard_eds(fair: Any, labels: np.ndarray, k: int) -> tuple[float, float]:
    """Ed of the hard labels, size-weighted (fairaudit's ``ed``) and summed over the clusters
    (the paper's Tables 2-3), each summed over the attributes."""
    weighted = summed = 0.0
    n = labels.shape[0]
    for codes, lg, ratios in fair:
        N = np.bincount(codes * k + labels, minlength=lg * k).reshape(lg, k).astype(np.float64)
        size = N.sum(axis=0)
        present = size > 0
        P = N[:, present] / size[present]
        dist = np.sqrt(((P - ratios[:, None]) ** 2).sum(0))
        weighted += float((size[present] / n * dist).sum())
        summed += float(dist.sum())
    return weighted, summed


def _settled(history: list[float], t: int, tol: float) -> bool:
    """The relative change of J at ``history[t]`` is below ``tol``."""
    return abs(history[t] - history[t - 1]) < tol * abs(history[t - 1])


def _one_hot(U: np.ndarray) -> np.ndarray:
    """The hard labels (argmax of each row of U) as a one-hot membership matrix."""
    H = np.zeros_like(U)
    H[np.arange(U.shape[0]), np.argmax(U, axis=1)] = 1.0
    return H


def _gap_scale(X: np.ndarray, centres: np.ndarray) -> float:
    """Mean over points of the gap between the squared distances to the nearest and the
    second-nearest centre (1.0 with a single centre, where the term has nothing to move)."""
    if centres.shape[0] < 2:
        return 1.0
    total = 0.0
    cc = np.einsum("ij,ij->i", centres, centres)
    for a in range(0, X.shape[0], 65536):
        xb = X[a : a + 65536]
        D = np.einsum("ij,ij->i", xb, xb)[:, None] - 2.0 * xb @ centres.T + cc
        if D.shape[1] > 2:  # the two smallest in their sorted places (same values as a sort)
            D.partition(1, axis=1)
        else:
            D.sort(axis=1)
        total += float((D[:, 1] - D[:, 0]).sum())
    return max(total / X.shape[0], 1e-300)
