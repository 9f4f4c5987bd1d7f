"""FUFS's objective (seed 004, Xing et al., CIKM 2021): its kernels, the loss, the closed-form
gradients and the projected-gradient descent that :class:`fairaudit.preprocess.fufs.FUFS` runs.

With RBF kernels ``K_X`` on the (standardised) non-protected features X, ``K_M`` on the selected
features ``diag(m) X``, ``K_G`` on the decomposed features ``diag(g)(I - diag(m)) X``, a kernel
``K_P`` on the protected attributes, and the centring matrix ``H = I - 11^T/n``, FUFS minimises

    L(m, g) = -tr(H K_X H K_M) + alpha tr(H K_M H K_P) - alpha tr(H K_G H K_P)
              + beta (||m||_1 + ||g||_1),          m, g in [0, 1]^d

by projected gradient steps, alternating g then m, starting from ones. ``m`` ranks features by
utility-without-protected-information (``scores_``); ``g`` flags the *proxy* features that carry
the protected information (``proxy_scores_``).

Gradients in closed form. With ``D_f[i, j] = (x_if - x_jf)^2`` and a symmetric n x n matrix Q,
``<Q, D_f> = 2 (X^2)^T (Q 1) - 2 colsum(X * (Q X))`` gives all d inner products with two matrix
products. Writing ``A~ = H A H`` and ``W = -K_X~ + alpha K_P~``:

    dL/dm_f = -2 gamma m_f <W * K_M, D_f> - 2 alpha gamma w_f g_f <K_P~ * K_G, D_f> + beta
    dL/dg_f = 2 alpha gamma w_f (1 - m_f) <K_P~ * K_G, D_f> + beta,        w_f = g_f (1 - m_f)

Cost O(n^2 d) per step: exact for n <= ``max_samples``; beyond it a seeded uniform row sample of
``max_samples`` rows is used (recorded in ``sample_indices_`` and ``notes_``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["FUFSState", "fufs_gradients", "fufs_loss"]


@dataclass(frozen=True)
class FUFSState:
    """The data FUFS optimises over (standardised X, centred kernels), after sampling."""

    X: np.ndarray
    KXc: np.ndarray
    KPc: np.ndarray
    gamma: float
    alpha: float
    beta: float
    scale: float


def _center(K: np.ndarray) -> np.ndarray:
    """H K H without forming H."""
    row = K.mean(axis=0, keepdims=True)
    col = K.mean(axis=1, keepdims=True)
    out = K - row
    out -= col
    out += K.mean()
    return out


def _rbf(X: np.ndarray, w: np.ndarray | None, gamma: float) -> np.ndarray:
    """exp(-gamma ||diag(w) (x_i - x_j)||^2) through one matrix product (in place, no n x n
    temporaries). Columns with zero weight are skipped; all-zero weights give the ones matrix.

    numpy's ``Z @ Z.T`` is a symmetric rank-k update (half the products of a general matrix
    product), and numpy alone keeps ``scipy.linalg`` (0.15 s to import) out of an audit."""
    if w is None:
        Z = X
    else:
        nz = np.flatnonzero(w)
        if nz.size == 0:
            return np.ones((X.shape[0], X.shape[0]), dtype=X.dtype)
        Z = X[:, nz] * w[nz].astype(X.dtype)
    # -gamma ||z_i - z_j||^2 = 2 gamma z_i.z_j - gamma |z_i|^2 - gamma |z_j|^2
    gsq = (gamma * np.einsum("ij,ij->i", Z, Z)).astype(Z.dtype)
    D = Z @ Z.T
    D *= Z.dtype.type(2.0 * gamma)
    D -= gsq[:, None]
    D -= gsq[None, :]
    np.minimum(D, 0.0, out=D)
    np.exp(D, out=D)
    return D


def _inner_with_sqdiff(
    Q: np.ndarray, X: np.ndarray, X2: np.ndarray, cols: np.ndarray | None = None
) -> np.ndarray:
    """All d values <Q, D_f> for symmetric Q, D_f[i,j] = (x_if - x_jf)^2 (only ``cols`` are
    computed when given; the others are 0)."""
    if cols is None:
        return 2.0 * (X2.T @ Q.sum(axis=1)) - 2.0 * np.einsum("if,if->f", X, Q @ X)
    out = np.zeros(X.shape[1])
    if cols.size:
        Xc = X[:, cols]
        out[cols] = 2.0 * (X2[:, cols].T @ Q.sum(axis=1)) - 2.0 * np.einsum("if,if->f", Xc, Q @ Xc)
    return out


def _tied(x: np.ndarray, rtol: float = 1e-4) -> np.ndarray:
    """Tie classes of ``x`` for ordering: values closer than ``rtol`` times the largest
    magnitude (gap by gap, in sorted order) share a class; classes increase with the value.

    FUFS' scores and gradients carry relative errors of about 1e-6 from the kernel products
    (the same tables under two OpenBLAS kernels differ by up to 2.6e-6 in the final gradient),
    so features tied in exact arithmetic — the two one-hot columns of a binary variable — would
    otherwise be ordered by the last bits, which BLAS kernels and CPUs change."""
    x = np.asarray(x, dtype=float).ravel()
    if x.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(x, kind="stable")
    finite = x[order][np.isfinite(x[order])]
    scale = float(np.max(np.abs(finite))) if finite.size else 0.0
    gaps = np.diff(x[order])
    new_class = ~(np.abs(gaps) <= rtol * scale)  # NaN gaps start a new class
    classes = np.empty(x.size, dtype=np.int64)
    classes[order] = np.r_[0, np.cumsum(new_class)]
    return classes


def fufs_loss(state: FUFSState, m: np.ndarray, g: np.ndarray) -> float:
    """L(m, g) evaluated directly (kernel-alignment terms divided by ``state.scale``)."""
    KM = _rbf(state.X, m, state.gamma)
    KG = _rbf(state.X, g * (1.0 - m), state.gamma)
    util = np.sum(state.KXc * KM)
    fair = np.sum(state.KPc * KM) - np.sum(state.KPc * KG)
    return float((-util + state.alpha * fair) / state.scale + state.beta * (m.sum() + g.sum()))


def fufs_gradients(state: FUFSState, m: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Analytic (dL/dm, dL/dg) at (m, g)."""
    X, gamma, alpha = state.X, state.gamma, state.alpha
    X2 = X * X
    w = g * (1.0 - m)
    KM = _rbf(X, m, gamma)
    KG = _rbf(X, w, gamma)
    QM = (-state.KXc + alpha * state.KPc) * KM
    QG = state.KPc * KG
    inner_m = _inner_with_sqdiff(QM, X, X2)
    inner_g = _inner_with_sqdiff(QG, X, X2)
    s = state.scale
    grad_m = (-2.0 * gamma * m * inner_m - 2.0 * alpha * gamma * w * g * inner_g) / s + state.beta
    grad_g = (2.0 * alpha * gamma * w * (1.0 - m) * inner_g) / s + state.beta
    return grad_m, grad_g


def _descend(
    state: FUFSState, m: np.ndarray, g: np.ndarray, lr: float, max_iter: int
) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """``max_iter`` alternating projected-gradient steps (g, then m at the new g) from (m, g).

    The closed forms of :func:`fufs_gradients`, sharing kernels, with the work that cannot change
    the result skipped (exact, tested against the step-by-step loop):

    - a feature whose gradient coefficient is 0 needs no kernel product (e.g. g at the start,
      where w = g(1 - m) = 0); when every coefficient of a term is 0 its kernel is not formed;
    - K(w) with w = 0 is the ones matrix: its alignment with the centred K_P is computed once;
    - K(m) is formed again only when m moved, and so are the terms that depend on m alone (its
      loss term <W, K(m)> and the products of the m step's utility gradient): while m rests at
      a bound and g moves (the common case), a step costs no n x n pass at all;
    - once a step leaves (m, g) unchanged every later step repeats it: the remaining losses are
      that step's and the loop stops.

    Returns the final (m, g) and the loss before each step."""
    X, KPc = state.X, state.KPc
    X2 = X * X
    a, gam, sc, b = state.alpha, state.gamma, state.scale, state.beta
    d = X.shape[1]
    zeros = np.zeros(d)
    Wc = np.multiply(KPc, a)
    Wc -= state.KXc  # -K_X~ + alpha K_P~, constant
    KM = _rbf(X, m, gam)
    buf = np.empty_like(KM)
    kp_ones: float | None = None  # <K_P~, 1 1^T>, the loss term at w = 0
    # the terms of K(m) alone, computed once per K(m): <W, K(m)> and <W * K(m), D_f>
    wkm: np.floating | None = None  # kept in the kernels' dtype: the same loss, bit for bit
    inner_m: np.ndarray | None = None
    losses: list[float] = []
    for step in range(max_iter):
        m0, g0 = m, g
        # g step at (m, g)
        w = g * (1.0 - m)
        coef_g = 2.0 * a * gam * w * (1.0 - m)
        cols = np.flatnonzero(coef_g)
        if w.any():
            KG = _rbf(X, w, gam)
            kg = float(np.vdot(KPc, KG))
        else:
            KG = None
            if kp_ones is None:
                kp_ones = float(np.vdot(KPc, np.ones_like(KPc)))
            kg = kp_ones
        if wkm is None:
            wkm = np.vdot(Wc, KM)
        losses.append(float((wkm - a * kg) / sc + b * (m.sum() + g.sum())))
        if cols.size:  # w != 0 wherever coef_g != 0, so KG was formed
            assert KG is not None
            KG *= KPc
            inner_g = _inner_with_sqdiff(KG, X, X2, cols)
        else:
            inner_g = zeros
        del KG
        g = np.clip(g - lr * (coef_g * inner_g / sc + b), 0.0, 1.0)
        # m step at (m, new g)
        w = g * (1.0 - m)
        coef_mg = -2.0 * a * gam * w * g
        cols = np.flatnonzero(coef_mg)
        if cols.size:
            KG = _rbf(X, w, gam)
            KG *= KPc
            inner_g = _inner_with_sqdiff(KG, X, X2, cols)
            del KG
        else:
            inner_g = zeros
        coef_mm = -2.0 * gam * m
        if inner_m is None:  # its columns (m != 0) depend on m alone too
            cols = np.flatnonzero(coef_mm)
            if cols.size:
                np.multiply(KM, Wc, out=buf)
                inner_m = _inner_with_sqdiff(buf, X, X2, cols)
            else:
                inner_m = zeros
        m = np.clip(m - lr * ((coef_mm * inner_m + coef_mg * inner_g) / sc + b), 0.0, 1.0)
        moved = not np.array_equal(m, m0)
        if not moved and np.array_equal(g, g0):
            losses.extend([losses[-1]] * (max_iter - step - 1))
            break
        if moved:
            KM = _rbf(X, m, gam)
            wkm = inner_m = None
    return m, g, losses
