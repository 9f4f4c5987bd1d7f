"""FUFS: fairness-aware unsupervised feature selection (seed 004, Xing et al., CIKM 2021).

One unit: the estimator (validation, sampling, the sensitive kernel, the selection rule and
its fitted attributes). Its objective — kernels, loss, gradients, descent — is
:mod:`fairaudit.preprocess.fufs_objective`; the associations the proxy auditor reports beside
it, :mod:`fairaudit.preprocess.associations`.

Cost O(n^2 d) per step: exact for n <= ``max_samples``; beyond it a seeded uniform row sample of
``max_samples`` rows is used (recorded in ``sample_indices_`` and ``notes_``).
"""

from __future__ import annotations

import logging
import numbers
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fairaudit._rng import as_generator
from fairaudit.preprocess.fufs_objective import (
    FUFSState,
    _center,
    _descend,
    _inner_with_sqdiff,
    _rbf,
    _tied,
    fufs_gradients,
    fufs_loss,
)

logger = logging.getLogger(__name__)

__all__ = ["FUFS"]


class FUFS:
    """Fairness-aware unsupervised feature selection (FUFS, seed 004).

    Parameters
    ----------
    n_features_to_select : int or float, default 0.3
        Number of features to keep (int >= 1) or a fraction of the features (float in (0, 1]).
    alpha : float, default 1.0
        Weight of the fairness terms (paper: 1, or 0.01 with beta = 10).
    beta : float, default 0.1
        l1 weight on m and g.
    kernel : "rbf", default "rbf"
        Kernel on the features (the paper's choice; the only one implemented).
    gamma : float or "auto", default "auto"
        RBF width on the standardised features: ``exp(-gamma ||x - y||^2)``. ``"auto"`` is
        ``1 / d`` (so a typical squared distance 2d gives exp(-2)). The authors' kernel is
        ``exp(-||x - y||^2 / sigma^2)`` with sigma = 1, i.e. ``gamma = 1``.
    standardize : bool, default True
        z-score the features before the kernels (constant features stay 0). ``False`` uses X as
        given (the authors' setting on their [0, 1]-normalised data).
    sensitive_kernel : "auto", "equality" or "rbf", default "auto"
        Kernel on the protected attributes. ``"equality"``: K_P[i, j] = share of attributes on
        which rows i and j are in the same group (the group-equality kernel). ``"rbf"``: RBF on the
        standardised attributes with gamma ``1 / p``. ``"auto"``: rbf when every attribute is
        floating point, equality otherwise.
    normalize : bool, default True
        Divide the kernel-alignment traces by a fixed scale: the largest utility gradient
        ``|dtr(H K_X H K_M)/dm_f|`` at the start (m = 1). beta and the learning rate are then
        relative to the most useful feature's pull, the same for any n, gamma or sample.
        ``False`` reproduces the authors' unnormalised traces (``scale_ = 1``).
    max_iter : int, default 50
        Alternating projected-gradient steps (the authors use 50).
    learning_rate : float, default 0.05
        Step size (with ``normalize=True`` gradients are O(1); the authors' 1e-2 applies to their
        unnormalised traces).
    max_samples : int, default 5000
        Rows used in the O(n^2) kernels; above it a seeded uniform sample of this many rows.
    dtype : "float32" or "float64", default "float32"
        Precision of the n x n kernels and their products (float32 halves memory and time;
        scores change in about the 5th digit). The gradient oracle functions work in either.
    random_state : int, Generator or None
        Seeds the row sample.

    Attributes
    ----------
    scores_ : ndarray of shape (d,)
        Final m (higher = more useful and less protected information). NaN for excluded features.
    proxy_scores_ : ndarray of shape (d,)
        Final g (higher = stronger proxy of the protected attributes). NaN for excluded features.
    ranking_ : ndarray of shape (d,)
        Feature indices from best to worst by ``scores_`` (excluded last).
    proxy_ranking_ : ndarray of shape (d,)
        Feature indices from strongest to weakest proxy.
    support_ : ndarray of bool, shape (d,)
        The selected features.
    n_features_selected_ : int
    excluded_features_ : tuple of int
        Features that are a copy (a function) of a protected attribute; excluded from the fit.
    sample_indices_ : ndarray or None
        Rows used when n > max_samples, else None.
    gamma_ : float
    loss_ : tuple of float
        L before every step and at the end (not guaranteed monotone: fixed-step projected
        gradient).
    final_gradients_ : tuple of two ndarrays of shape (d,)
        dL/dm and dL/dg at the end (used to break ties between scores at a bound).
    scale_ : float
        The constant the kernel-alignment traces were divided by (see ``normalize``).
    notes_ : tuple of str
    """


    # fitted attributes (set by ``fit``), typed for type checkers
    n_features_in_: int
    scores_: NDArray[np.float64]
    proxy_scores_: NDArray[np.float64]
    ranking_: NDArray[np.intp]
    proxy_ranking_: NDArray[np.intp]
    support_: NDArray[np.bool_]
    n_features_selected_: int
    excluded_features_: tuple[int, ...]
    sample_indices_: NDArray[np.intp] | None
    gamma_: float
    scale_: float
    sensitive_kernel_: str
    loss_: tuple[float, ...]
    final_gradients_: tuple[NDArray[np.float64], NDArray[np.float64]]
    notes_: tuple[str, ...]

    def __init__(
        self,
        n_features_to_select: int | float = 0.3,
        *,
        alpha: float = 1.0,
        beta: float = 0.1,
        kernel: str = "rbf",
        gamma: float | str = "auto",
        sensitive_kernel: str = "auto",
        normalize: bool = True,
        standardize: bool = True,
        max_iter: int = 50,
        learning_rate: float = 0.05,
        max_samples: int = 5000,
        dtype: str = "float32",
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        self.n_features_to_select = n_features_to_select
        self.alpha = alpha
        self.beta = beta
        self.kernel = kernel
        self.gamma = gamma
        self.sensitive_kernel = sensitive_kernel
        self.normalize = normalize
        self.standardize = standardize
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.max_samples = max_samples
        self.dtype = dtype
        self.random_state = random_state

    # ------------------------------------------------------------------ validation
    def _validate(self) -> None:
        name = type(self).__name__

        def real(param: str, lo: float, strict: bool) -> None:
            v = getattr(self, param)
            ok = isinstance(v, numbers.Real) and not isinstance(v, bool) and np.isfinite(v)
            if not ok or v < lo or (strict and v == lo):
                op = ">" if strict else ">="
                raise ValueError(
                    f"The '{param}' parameter of {name} must be a float {op} {lo}; got {v!r}."
                )

        def integer(param: str, lo: int) -> None:
            v = getattr(self, param)
            if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < lo:
                raise ValueError(
                    f"The '{param}' parameter of {name} must be an int >= {lo}; got {v!r}."
                )

        real("alpha", 0.0, False)
        real("beta", 0.0, False)
        real("learning_rate", 0.0, True)
        integer("max_iter", 1)
        integer("max_samples", 10)
        if self.dtype not in ("float32", "float64"):
            raise ValueError(
                f"The 'dtype' parameter of {name} must be 'float32' or 'float64'; "
                f"got {self.dtype!r}."
            )
        if self.kernel != "rbf":
            raise ValueError(
                f"The 'kernel' parameter of {name} must be 'rbf'; got {self.kernel!r}."
            )
        if self.sensitive_kernel not in ("auto", "equality", "rbf"):
            raise ValueError(
                f"The 'sensitive_kernel' parameter of {name} must be 'auto', 'equality' or 'rbf'; "
                f"got {self.sensitive_kernel!r}."
            )
        if not isinstance(self.standardize, bool):
            raise ValueError(
                f"The 'standardize' parameter of {name} must be a bool; got {self.standardize!r}."
            )
        if not isinstance(self.normalize, bool):
            raise ValueError(
                f"The 'normalize' parameter of {name} must be a bool; got {self.normalize!r}."
            )
        if isinstance(self.gamma, str):
            if self.gamma != "auto":
                raise ValueError(
                    f"The 'gamma' parameter of {name} must be a float > 0 or 'auto'; "
                    f"got {self.gamma!r}."
                )
        else:
            real("gamma", 0.0, True)
        k = self.n_features_to_select
        if isinstance(k, bool) or not isinstance(k, numbers.Real):
            raise ValueError(
                f"The 'n_features_to_select' parameter of {name} must be an int >= 1 or a float "
                f"in (0, 1]; got {k!r}."
            )
        if isinstance(k, numbers.Integral):
            if k < 1:
                raise ValueError(
                    f"The 'n_features_to_select' parameter of {name} must be an int >= 1 or a "
                    f"float in (0, 1]; got {k!r}."
                )
        elif not (0.0 < k <= 1.0):
            raise ValueError(
                f"The 'n_features_to_select' parameter of {name} must be an int >= 1 or a float "
                f"in (0, 1]; got {k!r}."
            )

    @staticmethod
    def _sensitive_matrix(sensitive: Any, n: int, name: str) -> tuple[np.ndarray, bool]:
        """(n x p array, all_floating)."""
        S = np.asarray(sensitive)
        if S.ndim == 1:
            S = S.reshape(-1, 1)
        if S.ndim != 2 or S.shape[0] != n:
            raise ValueError(
                f"{name}: 'sensitive' must have one row per row of X ({n}); got shape {S.shape}."
            )
        floating = np.issubdtype(S.dtype, np.floating)
        if floating and not np.all(np.isfinite(S)):
            raise ValueError(f"{name}: 'sensitive' contains non-finite values (NaN or inf).")
        if S.dtype == object and any(v is None for v in S.ravel()):
            raise ValueError(f"{name}: 'sensitive' contains missing values (None).")
        return S, floating

    @staticmethod
    def _copies_of_sensitive(X: np.ndarray, S: np.ndarray, floating: bool) -> list[int]:
        """Features that are a function of a categorical protected attribute (constant within
        each of its groups, not constant overall), or exactly affine in a numeric one."""
        out: list[int] = []
        n, d = X.shape
        for a in range(S.shape[1]):
            col = S[:, a]
            if floating:
                s = (col - col.mean()) / (col.std() or 1.0)
                for f in range(d):
                    x = X[:, f]
                    sd = x.std()
                    if sd > 0 and abs(np.mean((x - x.mean()) / sd * s)) > 1 - 1e-9:
                        out.append(f)
            else:
                _, inv = np.unique(
                    col.astype(str) if col.dtype == object else col, return_inverse=True
                )
                order = np.argsort(inv, kind="stable")
                inv_s = inv[order]
                starts = np.flatnonzero(np.r_[True, inv_s[1:] != inv_s[:-1]])
                Xs = X[order]
                mx = np.maximum.reduceat(Xs, starts, axis=0)
                mn = np.minimum.reduceat(Xs, starts, axis=0)
                within_const = np.all(mx == mn, axis=0)
                varies = X.max(axis=0) > X.min(axis=0)
                out.extend(np.flatnonzero(within_const & varies).tolist())
        return sorted(set(out))

    # ------------------------------------------------------------------ fit
    def fit(self, X: Any, y: None = None, *, sensitive: Any) -> FUFS:
        """Score the features of X (n x d, numeric) against the protected ``sensitive``."""
        self._validate()
        name = type(self).__name__
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"{name}: X must be a 2-D array (n x d); got shape {X.shape}.")
        n, d = X.shape
        if n < 3:
            raise ValueError(f"{name}: need at least 3 rows; got {n}.")
        if not np.all(np.isfinite(X)):
            bad = np.flatnonzero(~np.all(np.isfinite(X), axis=0)).tolist()
            raise ValueError(f"{name}: X has non-finite values (NaN or inf) in columns {bad}.")
        if sensitive is None:
            raise ValueError(f"{name}.fit needs 'sensitive' (the protected attributes).")
        S, floating = self._sensitive_matrix(sensitive, n, name)
        notes: list[str] = []

        excluded = self._copies_of_sensitive(X, S, floating)
        if excluded:
            notes.append(
                f"Excluded feature(s) {excluded}: they are copies (functions) of a protected "
                "attribute, so they cannot be selected and are not scored."
            )
        active = np.array([f for f in range(d) if f not in set(excluded)], dtype=np.int64)
        k = self.n_features_to_select
        k_abs = int(k) if isinstance(k, numbers.Integral) else max(1, int(round(k * active.size)))
        if k_abs > active.size:
            raise ValueError(
                f"The 'n_features_to_select' parameter of {name} asks for {k_abs} features, but "
                f"only {active.size} are available (X has {d} columns"
                + (
                    f", {len(excluded)} excluded as copies of a protected attribute"
                    if excluded
                    else ""
                )
                + ")."
            )

        rng = as_generator(self.random_state)
        sample = None
        if n > self.max_samples:
            sample = np.sort(rng.choice(n, size=int(self.max_samples), replace=False))
            notes.append(
                f"FUFS used a seeded uniform sample of {self.max_samples} of {n} rows "
                "(the kernels are n x n)."
            )
        dt = np.dtype(self.dtype)
        Xa = X[:, active] if sample is None else X[np.ix_(sample, active)]
        Sa = S if sample is None else S[sample]
        if self.standardize:
            mu, sd = Xa.mean(axis=0), Xa.std(axis=0)
            Xs = ((Xa - mu) / np.where(sd > 0, sd, 1.0)).astype(dt)
        else:
            Xs = np.array(Xa, dtype=dt)
        n_used, d_act = Xs.shape
        gamma = 1.0 / max(d_act, 1) if isinstance(self.gamma, str) else float(self.gamma)

        kind = self.sensitive_kernel
        if kind == "auto":
            kind = "rbf" if floating else "equality"
        if kind == "rbf":
            if not floating and not np.issubdtype(Sa.dtype, np.number):
                raise ValueError(
                    f"{name}: sensitive_kernel='rbf' needs numeric protected attributes; got "
                    f"dtype {Sa.dtype}."
                )
            P = Sa.astype(np.float64)
            psd = P.std(axis=0)
            P = ((P - P.mean(axis=0)) / np.where(psd > 0, psd, 1.0)).astype(dt)
            KP = _rbf(P, None, 1.0 / P.shape[1])
        else:
            KP = np.zeros((n_used, n_used), dtype=dt)
            for a in range(Sa.shape[1]):
                col = Sa[:, a]
                _, inv = np.unique(
                    col.astype(str) if col.dtype == object else col, return_inverse=True
                )
                KP += inv[:, None] == inv[None, :]
            KP /= Sa.shape[1]
        KX = _rbf(Xs, None, gamma)
        KXc = _center(KX)
        scale = 1.0
        if self.normalize:
            # the strongest utility pull at the start (m = 1, so K_M = K_X): beta and the
            # learning rate are then relative to the most useful feature, for any n and gamma
            pull = 2.0 * gamma * np.abs(_inner_with_sqdiff(KXc * KX, Xs, Xs * Xs))
            scale = float(pull.max()) if pull.size and pull.max() > 0 else 1.0
        state = FUFSState(
            X=Xs,
            KXc=KXc,
            KPc=_center(KP),
            gamma=gamma,
            alpha=float(self.alpha),
            beta=float(self.beta),
            scale=scale,
        )
        del KP, KX

        m = np.ones(d_act)
        g = np.ones(d_act)
        lr = float(self.learning_rate)
        m, g, losses = _descend(state, m, g, lr, int(self.max_iter))
        losses.append(fufs_loss(state, m, g))

        scores = np.full(d, np.nan)
        proxy = np.full(d, np.nan)
        scores[active] = m
        proxy[active] = g
        # best first; ties (e.g. several m_f at a bound) broken by the final gradient (how hard
        # the objective still pushes), then column order; excluded features (NaN) last. Values
        # within 1e-4 of the largest are tied (_tied): features tied in exact arithmetic (the
        # two one-hot columns of a binary variable) must not swap places between machines.
        final_grad_m, final_grad_g = fufs_gradients(state, m, g)
        ranking = active[np.lexsort((active, _tied(final_grad_m), -_tied(m)))]
        proxy_ranking = active[np.lexsort((active, _tied(final_grad_g), -_tied(g)))]
        ranking = np.r_[ranking, np.array(excluded, dtype=np.int64)]
        proxy_ranking = np.r_[proxy_ranking, np.array(excluded, dtype=np.int64)]
        support = np.zeros(d, dtype=bool)
        support[ranking[:k_abs]] = True
        for note in notes:
            logger.info(note)

        self.n_features_in_ = d
        self.scores_ = scores
        self.proxy_scores_ = proxy
        self.ranking_ = ranking
        self.proxy_ranking_ = proxy_ranking
        self.support_ = support
        self.n_features_selected_ = k_abs
        self.excluded_features_ = tuple(excluded)
        self.sample_indices_ = sample
        self.gamma_ = gamma
        self.scale_ = scale
        self.sensitive_kernel_ = kind
        self.loss_ = tuple(losses)
        full_gm = np.full(d, np.nan)
        full_gg = np.full(d, np.nan)
        full_gm[active] = final_grad_m
        full_gg[active] = final_grad_g
        self.final_gradients_ = (full_gm, full_gg)
        self.notes_ = tuple(notes)
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "support_"):
            raise ValueError("This FUFS instance is not fitted yet; call 'fit' first.")

    def get_support(self, indices: bool = False) -> np.ndarray:
        """Boolean mask (or indices) of the selected features."""
        self._check_fitted()
        return np.flatnonzero(self.support_) if indices else self.support_.copy()

    def transform(self, X: Any) -> NDArray[Any]:
        """The selected columns of X (original values, in column order)."""
        self._check_fitted()
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"FUFS.transform: X must have {self.n_features_in_} columns; got shape {X.shape}."
            )
        return X[:, self.support_]

    def fit_transform(self, X: Any, y: None = None, *, sensitive: Any) -> NDArray[Any]:
        """``fit`` then ``transform``."""
        return self.fit(X, sensitive=sensitive).transform(X)
