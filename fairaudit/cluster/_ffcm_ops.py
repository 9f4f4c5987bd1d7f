"""Vectorised kernels of fuzzy c-means and FFCM (used by :mod:`fairaudit.cluster.ffcm`).

One sweep of eq. 6 over row blocks (:func:`sweep`), the paper-literal bias tables of eq. 3
(:func:`nbias_tables`, :func:`fair_tables`) and the tables of the targeted fairness term
(:func:`targeted_tables`). numpy only; no validation (the estimator validates).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

CHUNK = 4096  # rows per block: blocks stay in cache and BLAS stays single-threaded


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


FairSpec = Sequence[tuple[np.ndarray, int, np.ndarray]]
MAX_COMBINED = 1 << 16


def combined_codes(fair: FairSpec) -> tuple[np.ndarray | None, tuple[int, ...]]:
    """One code per intersection of the attributes' groups (None when there are too many)."""
    shape = tuple(lg for _, lg, _ in fair)
    if int(np.prod(shape)) > MAX_COMBINED:
        return None, shape
    comb = np.zeros(fair[0][0].shape[0], dtype=np.intp)
    for codes, lg, _ in fair:
        comb *= lg
        comb += codes
    return comb, shape


def cluster_bias(fair: FairSpec, labels: np.ndarray, k: int) -> np.ndarray:
    """Nbias(C_i) of eq. 3 for the hard assignment ``labels``."""
    total = np.zeros(k)
    for codes, lg, ratios in fair:
        counts = np.bincount(codes * k + labels, minlength=lg * k).reshape(lg, k)
        total += nbias_tables(counts, ratios)[0] / lg
    return total


def fair_tables(
    fair: FairSpec,
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


def new_centres(num: np.ndarray, den: np.ndarray, old: np.ndarray) -> np.ndarray:
    centres = num / np.where(den > 0, den, 1.0)[:, None]
    empty = den <= 0
    if empty.any():
        centres[empty] = old[empty]
    return centres


def sweep(
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
    damping: float = 1.0,
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """One vectorised sweep of eq. 6 over all points, in row chunks.

    ``tables`` is ``(stay, add)``: ``add`` (groups x k, or one table per attribute) is added to
    the squared distances of a point of the given groups; ``stay`` (k,), when not None, replaces
    it in the point's current cluster ``labels`` (the paper's bias of a point already in C_i).
    ``damping`` < 1 mixes the new memberships with the old ones: u = (1 - a) u_old + a u_new.
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
    rows_all = np.arange(CHUNK)
    m2 = m == 2.0
    for start in range(0, n, CHUNK):
        stop = min(start + CHUNK, n)
        xa = Xa[start:stop]
        E = xa @ caug
        if tables is not None:
            stay, add = tables
            if isinstance(codes, np.ndarray):  # combined group codes, one gather
                B = np.take(add, codes[start:stop], axis=0)
            else:  # more than 65536 group intersections: one gather per attribute
                assert codes is not None
                B = np.zeros_like(E)
                for c, ad in zip(codes, add, strict=True):
                    B += np.take(ad, c[start:stop], axis=0)
            if stay is not None:
                assert labels is not None
                lab = labels[start:stop]
                B[rows_all[: stop - start], lab] = stay[lab]
            E += B
        np.maximum(E, floor, out=E)
        if p == 1.0:
            inv = np.divide(1.0, E)
        else:
            inv = np.divide(E.min(axis=1, keepdims=True), E)
            inv **= p
        s = inv @ ones
        inv /= s[:, None]
        if damping < 1.0:
            u = U[start:stop]
            u *= 1.0 - damping
            u += damping * inv
            new_labels[start:stop] = u.argmax(axis=1)
            w = u**m
            J += float(np.einsum("ij,ij->", w, E))
            num += w.T @ xa[:, :d]
            den += w.sum(axis=0)
            continue
        new_labels[start:stop] = inv.argmax(axis=1)
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


def count_index(codes: np.ndarray, k: int) -> np.ndarray:
    """The bin of every entry of an n x k membership matrix in row-major order, ``code * k +
    cluster``: with it, :func:`soft_counts` is one ``bincount`` over the matrix (issue 25)."""
    return (codes.astype(np.intp)[:, None] * k + np.arange(k, dtype=np.intp)).ravel()


def soft_counts(
    codes: np.ndarray, n_groups: int, U: np.ndarray, index: np.ndarray | None = None
) -> np.ndarray:
    """(groups x k) membership-weighted counts: N[s, i] = sum_j u_ij [g_j = s].

    ``index`` (:func:`count_index` of ``codes``): one pass over U in memory order instead of k
    passes over its columns, about twice as fast. Each bin still adds its rows in row order from
    0.0, so the counts are the same bit for bit (tested)."""
    k = U.shape[1]
    if index is not None:
        return np.bincount(index, weights=U.ravel(), minlength=n_groups * k).reshape(n_groups, k)
    out = np.empty((n_groups, k))
    for i in range(k):
        out[:, i] = np.bincount(codes, weights=U[:, i], minlength=n_groups)
    return out


def targeted_penalty(counts: np.ndarray, ratios: np.ndarray, n_clusters: int) -> np.ndarray:
    """Per (group, cluster) penalty of the targeted fairness term for one attribute.

    With membership-weighted counts N[s, i], cluster sizes n_i, shares f_si = N_si / n_i and
    excess e_si = f_si - r_s, the fair loss F = 1/(2 nbar) sum_i sum_s (N_si - r_s n_i)^2
    (nbar = n / k) has the derivative, for a point of group g in cluster i,
    dF/du_ij = (n_i / nbar) * (e_gi - sum_s r_s e_si):
    positive for the over-represented group of a cluster, negative for the under-represented
    ones, O(1) in the cluster size. The table is shifted per group so that its minimum over the
    clusters is 0 (the squared distance plus penalty stays positive; the order of the clusters
    for a point, and hence which cluster the term favours, is unchanged).
    """
    sizes = counts.sum(axis=0)
    total = sizes.sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(sizes > 0, counts / np.where(sizes > 0, sizes, 1.0), ratios[:, None])
    exc = frac - ratios[:, None]
    grad = (sizes * n_clusters / max(total, 1e-300))[None, :] * (
        exc - (ratios[:, None] * exc).sum(axis=0)[None, :]
    )
    return grad - grad.min(axis=1, keepdims=True)


def targeted_penalties(
    fair: FairSpec, U: np.ndarray, combined: np.ndarray | None, shape: tuple[int, ...],
    index: np.ndarray | list[np.ndarray] | None = None,
) -> list[np.ndarray]:
    """Targeted penalties (one (l_a x k) table per attribute) for the memberships ``U``; the
    soft counts come from one pass over the combined group codes when ``combined`` is given.
    ``index``: :func:`count_index` of ``combined`` (or one per attribute), to count faster."""
    k = U.shape[1]
    joint = None
    if combined is not None:
        ix = index if isinstance(index, np.ndarray) else None
        joint = soft_counts(combined, int(np.prod(shape)), U, ix).reshape(*shape, k)
    pens = []
    for a, (codes, lg, ratios) in enumerate(fair):
        if joint is not None:
            axes = tuple(b for b in range(len(shape)) if b != a)
            counts = joint.sum(axis=axes) if axes else joint
        else:
            counts = soft_counts(codes, lg, U, index[a] if isinstance(index, list) else None)
        pens.append(targeted_penalty(counts, ratios, k))
    return pens


def combine_tables(tables: list[np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
    """Sum per-attribute (l_a x k) tables into one table over the combined group codes."""
    k = tables[0].shape[1]
    table = np.zeros((*shape, k))
    for a, t in enumerate(tables):
        idx: list[Any] = [np.newaxis] * len(shape) + [slice(None)]
        idx[a] = slice(None)
        table = table + t[tuple(idx)]
    return table.reshape(-1, k)


def nearest_centre(X: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Index of the nearest row of C for every row of X, in blocks (|x|^2 dropped: constant)."""
    cc = np.einsum("ij,ij->i", C, C)
    out = np.empty(X.shape[0], dtype=np.intp)
    step = 65536
    for a in range(0, X.shape[0], step):
        D = X[a : a + step] @ (-2.0 * C.T)
        D += cc
        out[a : a + step] = D.argmin(axis=1)
    return out


class Anderson:
    """Anderson acceleration (type II, Walker & Ni 2011) of a fixed-point map x -> G(x) on a
    small state vector (here the centres and the targeted penalty table, not the n x k
    memberships).

    :meth:`next` takes the current iterate x_t and its image G(x_t) and returns x_{t+1} =
    G(x_t) - dG·gamma, gamma the least-squares fit of the last ``memory`` residual differences to
    the current residual f_t = G(x_t) - x_t. A fixed point of G is a fixed point of the
    accelerated iteration (f = 0 gives x_{t+1} = G(x_t) = x_t). Safeguard: when the residual
    grows past ``restart`` times the smallest one seen, the history is dropped and the plain
    step G(x_t) is taken.
    """

    def __init__(self, memory: int = 5, restart: float = 10.0) -> None:
        self.memory = memory
        self.restart = restart
        self._g: list[np.ndarray] = []
        self._f: list[np.ndarray] = []
        self._best = np.inf

    def next(self, x: np.ndarray, g: np.ndarray) -> np.ndarray:
        f = g - x
        norm = float(np.linalg.norm(f))
        if not np.isfinite(norm):
            self._g.clear()
            self._f.clear()
            return g
        if norm > self.restart * self._best:
            self._g.clear()
            self._f.clear()
            self._best = norm
        self._best = min(self._best, norm)
        self._g.append(g)
        self._f.append(f)
        if len(self._f) > self.memory + 1:
            del self._g[0], self._f[0]
        if len(self._f) < 2 or norm == 0.0:
            return g
        dF = np.diff(np.asarray(self._f), axis=0).T  # (state, memory)
        dG = np.diff(np.asarray(self._g), axis=0).T
        gamma = np.linalg.lstsq(dF, f, rcond=1e-10)[0]
        out = g - dG @ gamma
        return out if np.isfinite(out).all() else g


class TableStep:
    """Step of the targeted term's damped table iteration, ``acceleration="adaptive"``.

    The fair sweeps move the penalty table a step ``s`` of the way to the penalty of the current
    memberships: ``T <- T + s (P(T) - T)``. The damped step ``s = base`` (0.2) keeps the first
    sweeps from oscillating, but near a fixed point it also sets the pace: with the undamped
    map's local rate lam, the residual ``r = ||P(T) - T||`` shrinks by ``q = 1 - s (1 - lam)``
    per sweep, 0.8 + 0.2 lam at s = 0.2, where the full step s = 1 would shrink it by lam.

    :meth:`step` reads lam off the last two residuals, ``lam = 1 - (1 - q) / s_prev``, and
    takes full steps once ``confirm`` consecutive sweeps of the damped schedule showed a
    shrinking residual with ``|lam| <= lam_max`` (the iteration is then in the linear regime of
    a fixed point that the undamped map contracts to). Safeguards: back to ``base`` as soon as
    a full step lets the residual grow (re-armed: the test may pass again), and for good once
    two full steps together shrank it less than two damped steps would have (no gain: the
    undamped map oscillates there). While ``base`` is above its final value (the first sweeps'
    1/t steps) the damped schedule is kept. A fixed point of one schedule is a fixed point of
    the other (r = 0 whatever s), so only the path to it changes (docs/methods/ffcm.md).
    """

    def __init__(self, floor: float, lam_max: float = 0.5, confirm: int = 2) -> None:
        self.floor = floor  # the damped schedule's final step (TABLE_STEP)
        self.lam_max = lam_max
        self.confirm = confirm
        self._res: float | None = None
        self._step = 1.0
        self._q: float | None = None
        self._good = 0
        self._fast = False
        self._run = 0  # consecutive full steps
        self._banned = False
        self.full_steps = 0  # full steps taken in all (tests, logs)

    def step(self, residual: float, base: float) -> float:
        """The step of this sweep, given the residual of the current table and the damped
        schedule's step ``base``."""
        q = None
        if self._res:
            q = residual / self._res
            lam = 1.0 - (1.0 - q) / self._step
            if self._fast:
                if q >= 1.0:  # a full step let the residual grow: damped again, re-armed
                    self._fast, self._good = False, 0
                elif (self._run >= 2 and self._q is not None
                      and q * self._q > (1.0 - self.floor) ** 2):
                    self._fast, self._banned = False, True  # no faster than the damped step
            elif not self._banned and base <= self.floor and q < 1.0 and abs(lam) <= self.lam_max:
                self._good += 1
                self._fast = self._good >= self.confirm
            else:
                self._good = 0
        if self._fast:
            s = 1.0
            self._run += 1
            self.full_steps += 1
        else:
            s = base
            self._run = 0
        self._res, self._step, self._q = residual, s, q
        return s
