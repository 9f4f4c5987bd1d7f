"""Fairlet decompositions of two-group data (layer 1, numpy/scipy).

A (p, q)-fairlet is a small set of rows whose two groups stand in a ratio of at least p/q
(``p <= q``); a clustering made of whole fairlets has balance >= p/q in every cluster.

- :func:`scalable_fairlets`: Backurs, Indyk, Onak, Schieber, Vakilian and Wagner, "Scalable Fair
  Clustering" (ICML 2019), Algorithm 2: a randomly shifted 2^d-ary tree (quadtree) over the rows;
  at every node each child keeps a (p, q)-balanced set of its unmatched rows and passes the rest
  up, the node splits the passed-up rows into minimal fairlets (:func:`basic_fairlets`), and the
  children recurse. O(n d depth).
- :func:`mcf_fairlets`: Chierichetti, Kumar, Lattanzi and Vassilvitskii, "Fair Clustering Through
  Fairlets" (NeurIPS 2017), the (1, t)-fairlet decomposition as a min-cost flow: every row of the
  majority group sends one unit towards the minority rows, each row sends or receives at most t,
  the cost of an edge is the rows' distance (k-median) or squared distance (k-means). Solved
  exactly as a linear program (HiGHS; the network matrix is totally unimodular, so the optimum
  is integral). O(n^2) variables: small n only.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "balanced", "basic_fairlets", "fairlet_centres", "fairlet_index", "mcf_fairlets",
    "scalable_fairlets",
]

MAX_DEPTH = 60
"""Quadtree levels at most (cells then are 2^-60 of the data's spread: duplicates)."""


def balanced(r: int, b: int, p: int, q: int) -> bool:
    """True when (r, b) is empty or both non-empty with min(r/b, b/r) >= p/q."""
    if r == 0 and b == 0:
        return True
    if r == 0 or b == 0:
        return False
    return min(r, b) * q >= max(r, b) * p


def basic_fairlets(reds: np.ndarray, blues: np.ndarray, p: int, q: int) -> list[np.ndarray]:
    """Split a (p, q)-balanced set into (p, q)-fairlets of at most p + q rows plus one fixing
    fairlet and pairs (Chierichetti et al. 2017, Lemma 3).

    With R >= B (else swap): take (q majority, p minority) fairlets while the excess R - B is at
    least q - p; the remaining excess e < q - p goes with ceil(e p / (q - p)) minority rows into one
    fairlet; the rest are 1:1 pairs.
    """
    if reds.size < blues.size:
        reds, blues = blues, reds
    R, B = reds.size, blues.size
    if R == 0:
        return []
    if not balanced(R, B, p, q):
        raise ValueError(f"basic_fairlets: ({R}, {B}) is not ({p}, {q})-balanced")
    out: list[np.ndarray] = []
    r0 = b0 = 0
    if q > p:
        m = min((R - B) // (q - p), B // p)
        for _ in range(m):
            out.append(np.concatenate([reds[r0:r0 + q], blues[b0:b0 + p]]))
            r0 += q
            b0 += p
        e = (R - r0) - (B - b0)
        if e > 0:
            pb = math.ceil(e * p / (q - p))
            out.append(np.concatenate([reds[r0:r0 + pb + e], blues[b0:b0 + pb]]))
            r0 += pb + e
            b0 += pb
    for i in range(R - r0):
        out.append(np.array([reds[r0 + i], blues[b0 + i]]))
    return out


def _split(X: np.ndarray, idx: np.ndarray, lower: np.ndarray, upper: np.ndarray,
           shift: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    mid = 0.5 * (lower + upper)
    bits = (X[idx] + shift) <= mid
    packed = np.packbits(bits, axis=1)
    view = np.ascontiguousarray(packed).view(np.dtype((np.void, packed.shape[1]))).ravel()
    _, first, inv = np.unique(view, return_index=True, return_inverse=True)
    inv = inv.ravel()
    order = np.argsort(inv, kind="stable")
    bounds = np.searchsorted(inv[order], np.arange(first.size + 1))
    children = []
    for c in range(first.size):
        rows = idx[order[bounds[c]:bounds[c + 1]]]
        b = bits[first[c]]
        children.append((rows, np.where(b, lower, mid), np.where(b, mid, upper)))
    return children


def _pass_up(R: list[int], B: list[int], p: int, q: int) -> tuple[list[int], list[int]]:
    """Rows each child passes up (reds, blues) so that every child keeps a (p, q)-balanced set
    and the passed-up set is balanced (Backurs et al. 2019, Algorithm 2, steps 1-3)."""
    R, B = list(R), list(B)
    up_r, up_b = [0] * len(R), [0] * len(R)
    for i in range(len(R)):  # 1: what a child cannot keep
        if R[i] >= B[i]:
            x = max(0, R[i] - (B[i] * q) // p)
            R[i] -= x
            up_r[i] += x
        else:
            x = max(0, B[i] - (R[i] * q) // p)
            B[i] -= x
            up_b[i] += x
    NR, NB = sum(up_r), sum(up_b)
    if NR >= NB:
        missing = max(0, math.ceil(NR * p / q) - NB)
    else:
        missing = max(0, math.ceil(NB * p / q) - NR)
    for i in range(len(R)):  # 2: what a child can give of the short colour and stay balanced
        if missing == 0:
            break
        if NR >= NB:
            can = B[i] - math.ceil(R[i] * p / q) if R[i] else B[i]
            x = max(0, min(can, missing))
            B[i] -= x
            up_b[i] += x
            NB += x
        else:
            can = R[i] - math.ceil(B[i] * p / q) if B[i] else R[i]
            x = max(0, min(can, missing))
            R[i] -= x
            up_r[i] += x
            NR += x
        missing -= x
    for i in range(len(R)):  # 3: a child's unsaturated remainder
        if balanced(NR, NB, p, q):
            break
        big, small = (R[i], B[i]) if R[i] >= B[i] else (B[i], R[i])
        s = big // q
        xb, xs = big - q * s, small - p * s
        if R[i] >= B[i]:
            xr, xbl = xb, xs
        else:
            xr, xbl = xs, xb
        R[i] -= xr
        B[i] -= xbl
        up_r[i] += xr
        up_b[i] += xbl
        NR += xr
        NB += xbl
    ok = balanced(NR, NB, p, q) and all(balanced(R[i], B[i], p, q) for i in range(len(R)))
    if not ok:  # never seen; a valid fallback: the node takes every row itself
        up_r = [R[i] + up_r[i] for i in range(len(R))]
        up_b = [B[i] + up_b[i] for i in range(len(R))]
    return up_r, up_b


def scalable_fairlets(
    X: np.ndarray, red: np.ndarray, p: int, q: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """Backurs et al.'s quadtree (p, q)-fairlet decomposition; ``red`` is a boolean mask of one
    group. Every row ends in exactly one fairlet. Raises ValueError when the data are not
    (p, q)-balanced."""
    n, d = X.shape
    if not balanced(int(red.sum()), int(n - red.sum()), p, q):
        raise ValueError(
            f"the two groups ({int(red.sum())}, {int(n - red.sum())} rows) are not balanced at "
            f"p/q = {p}/{q}: no ({p}, {q})-fairlet decomposition exists"
        )
    lower = X.min(axis=0).astype(float)
    upper = X.max(axis=0).astype(float)
    spread = upper - lower
    shift = rng.uniform(0.0, 1.0, d) * spread
    upper = upper + spread
    out: list[np.ndarray] = []
    stack: list[tuple[np.ndarray, np.ndarray, np.ndarray, int]] = [
        (np.arange(n), lower, upper, 0)]
    while stack:
        idx, lo, hi, depth = stack.pop()
        if idx.size == 0:
            continue
        is_red = red[idx]
        leaf = idx.size <= 1 or depth >= MAX_DEPTH or not np.ptp(X[idx], axis=0).any()
        if leaf:
            out.extend(basic_fairlets(idx[is_red], idx[~is_red], p, q))
            continue
        children = _split(X, idx, lo, hi, shift)
        if len(children) == 1:  # no split at this level: descend without a node of its own
            rows, clo, chi = children[0]
            stack.append((rows, clo, chi, depth + 1))
            continue
        reds = [rows[red[rows]] for rows, _, _ in children]
        blues = [rows[~red[rows]] for rows, _, _ in children]
        up_r, up_b = _pass_up([r.size for r in reds], [b.size for b in blues], p, q)
        pr = [reds[i][reds[i].size - up_r[i]:] for i in range(len(children))]
        pb = [blues[i][blues[i].size - up_b[i]:] for i in range(len(children))]
        out.extend(basic_fairlets(np.concatenate(pr), np.concatenate(pb), p, q))
        for i, (_, clo, chi) in enumerate(children):
            keep = np.concatenate([reds[i][:reds[i].size - up_r[i]],
                                   blues[i][:blues[i].size - up_b[i]]])
            stack.append((keep, clo, chi, depth + 1))
    return out


def mcf_fairlets(X: np.ndarray, red: np.ndarray, t: int, *, squared: bool = False
                 ) -> tuple[list[np.ndarray], float]:
    """Chierichetti et al.'s (1, t)-fairlet decomposition by min-cost flow, solved exactly.

    Flow network (their Section 4, the t copies of a row merged: they only bound how much a row
    sends or receives): the majority rows M each supply 1, the minority rows m each demand 1; an
    edge M_i -> m_j costs d(i, j) (``squared``: d^2); a source beta sends up to t - 1 extra units
    to each M_i and has supply |m|; each m_j forwards up to t - 1 units to a sink rho of demand
    |M|; beta -> rho carries the rest (capacity min(|M|, |m|)). Every connected component of the
    rows joined by a used edge is a fairlet: a component with a majority and b minority rows
    carries f >= max(a, b) units and f <= t min(a, b), so its ratio is at least 1/t.
    Returns the fairlets and the flow's cost.
    """
    import scipy.sparse as sp
    from scipy.optimize import linprog
    from scipy.sparse.csgraph import connected_components

    maj = np.flatnonzero(red) if red.sum() >= (~red).sum() else np.flatnonzero(~red)
    mino = np.setdiff1d(np.arange(X.shape[0]), maj)
    a, b = maj.size, mino.size
    if b == 0 or a > t * b:
        raise ValueError(
            f"the groups ({a}, {b} rows) are not balanced at 1/{t}: no (1, {t})-fairlet "
            "decomposition exists"
        )
    from scipy.spatial.distance import cdist

    D = cdist(X[maj], X[mino], "sqeuclidean" if squared else "euclidean")
    # variables: e_ij (a*b), s_i = beta->M_i (a), r_j = m_j->rho (b), z = beta->rho (1)
    ne = a * b
    nv = ne + a + b + 1
    c = np.concatenate([D.ravel(), np.zeros(a + b + 1)])
    rows, cols, vals = [], [], []
    ii = np.repeat(np.arange(a), b)
    jj = np.tile(np.arange(b), a)
    e = np.arange(ne)
    # node M_i: 1 + s_i = sum_j e_ij
    rows += [ii, np.arange(a)]
    cols += [e, ne + np.arange(a)]
    vals += [np.ones(ne), -np.ones(a)]
    # node m_j: sum_i e_ij = 1 + r_j
    rows += [a + jj, a + np.arange(b)]
    cols += [e, ne + a + np.arange(b)]
    vals += [np.ones(ne), -np.ones(b)]
    # beta: sum_i s_i + z = b ; rho: sum_j r_j + z = a
    rows += [np.full(a, a + b), np.array([a + b]), np.full(b, a + b + 1), np.array([a + b + 1])]
    cols += [ne + np.arange(a), np.array([nv - 1]), ne + a + np.arange(b), np.array([nv - 1])]
    vals += [np.ones(a), np.ones(1), np.ones(b), np.ones(1)]
    A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(a + b + 2, nv))
    rhs = np.concatenate([np.ones(a), np.ones(b), [b, a]])
    bounds = np.zeros((nv, 2))
    bounds[:, 1] = np.inf
    bounds[ne:ne + a + b, 1] = t - 1
    bounds[nv - 1, 1] = min(a, b)
    res = linprog(c, A_eq=A, b_eq=rhs, bounds=bounds, method="highs")
    if res.status != 0:  # pragma: no cover - feasible by the balance check above
        raise RuntimeError(f"MCF fairlet LP failed: {res.message}")
    flow = res.x[:ne].reshape(a, b)
    used = np.argwhere(flow > 0.5)
    n = X.shape[0]
    G = sp.coo_matrix((np.ones(len(used)), (maj[used[:, 0]], mino[used[:, 1]])), shape=(n, n))
    _, comp = connected_components(G, directed=False)
    order = np.argsort(comp, kind="stable")
    cuts = np.flatnonzero(np.diff(comp[order])) + 1
    return [np.sort(g) for g in np.split(order, cuts)], float(res.fun)


def fairlet_centres(X: np.ndarray, fairlets: list[np.ndarray], *, medoid: bool) -> np.ndarray:
    """Each fairlet's medoid (its row with the least summed distance to the others: k-median,
    Backurs et al.) or its mean (k-means)."""
    C = np.empty((len(fairlets), X.shape[1]))
    for i, f in enumerate(fairlets):
        P = X[f]
        if not medoid:
            C[i] = P.mean(axis=0)
            continue
        d = np.sqrt(((P[:, None, :] - P[None, :, :]) ** 2).sum(axis=2))
        C[i] = P[int(d.sum(axis=1).argmin())]
    return C


def fairlet_index(n: int, fairlets: list[np.ndarray]) -> np.ndarray:
    """Fairlet number of every row."""
    out = np.full(n, -1, dtype=np.int64)
    for i, f in enumerate(fairlets):
        out[f] = i
    return out
