"""FairDen's assignment rule by float32 matrix products over k-means cells of the fitted rows.

For a new row x the rule of :mod:`fairaudit.cluster._mr_assign` needs κ(x), the distance to the
q-th nearest fitted row (q = min_pts − 1), and then, in almost every case, only the nearest of
the q nearest rows y with κ(y) <= κ(x): its r(x, y) = κ(x) is the smallest r any row can have.
In 5–10 dimensions a k-d tree answers the q nearest rows slowly (a query visits much of a
cluster); here the rows are compared with whole cells of fitted rows at once:

* the fitted rows are grouped into k-means cells of about 256 rows (centre, radius);
* new rows are taken in tiles of rows sharing their nearest cell ("home"); a float32 product
  of the tile with the cells near the home gives an upper bound U(x) >= κ(x) (the q-th smallest
  distance to those rows), cells farther than U(x) from every row of the tile are skipped, and
  the remaining cells are scanned in cache-sized products, keeping each row's fitted rows
  within U(x) (about q + 20 of them);
* the q-th of those, in float32 order, is κ(x): its distance is recomputed exactly, with
  ``cKDTree``'s own arithmetic (``_knn.tree_sqdist``), so κ(x) is bit-identical to the tree
  path's; the winner is the first of the q in float32 order with κ(y) <= κ(x).

Exactness: squared distances come from ``|y − c|² − 2 (x − c)·(y − c) (+ |x − c|²)`` in float32,
c the home cell's centre; each decision allows a per-row margin that bounds the rounding of
that sum (8 (d + 6) u (|x − c| + |y − c|)², u = 2⁻²⁴, for every y that can matter). A row is
*not settled* here, and goes to the k-d tree path, whenever the float32 order could be wrong for
what the label depends on: another row within the margin of the q-th (ties at κ(x)), two
eligible rows within the margin of each other (ties in d, decided by row number), a fitted row
possibly at distance 0, no eligible row among the q (the winner then has r > κ(x) and may lie
farther), or a tile that would need more than ``_COLS_MAX`` columns (the tree is cheaper then).
So the labels are those of the k-d tree path, row for row (tested against it and against a
brute-force oracle).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from fairaudit.cluster._knn import tree_sqdist

__all__ = ["Cells", "product_labels"]

_CELL = 256  # fitted rows per k-means cell
_TILE = 512  # new rows per tile (at most 512: 9 bits of the sort key)
_NEAR = 300  # fitted rows near the home cell that give the first bound U(x)
_CHUNK = 1024  # fitted rows per product (512 × 1024 float32 = 2 MB)
_COLS_MAX = 16_384  # a tile that needs more fitted rows goes to the k-d tree
_SHARED = 0.5  # a cell needed by fewer of a tile's rows is scanned for those rows only
_U = 2.0**-24  # float32 unit roundoff
_SAFE = 2.0  # margins: twice the rounding bound (d + 4) u (2|x - c||y - c| + |y - c|²)
_COL_BITS = 22  # sort key: row (9 bits) | float32 value (32 bits) | fitted row (22 bits)


def _nearest_centre(X: np.ndarray, C: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """Index of the nearest centre for each row, by float32 products in cache-sized chunks (a
    grouping, not a decision of the rule: rounding only changes which tile a row is in)."""
    Ct = np.ascontiguousarray(-2.0 * (C - mu).T, dtype=np.float32)
    sq = ((C - mu) ** 2).sum(axis=1).astype(np.float32)
    out = np.empty(X.shape[0], dtype=np.int64)
    step = 8192
    for lo in range(0, X.shape[0], step):
        G = (X[lo : lo + step] - mu).astype(np.float32) @ Ct
        G += sq
        out[lo : lo + step] = G.argmin(axis=1)
    return out


class Cells:
    """The fitted rows grouped into k-means cells (rows reordered cell by cell)."""

    def __init__(self, fit_X: np.ndarray, fit_core: np.ndarray, fit_labels: np.ndarray,
                 q: int) -> None:
        n, d = fit_X.shape
        k = max(1, n // _CELL)
        self.mu = fit_X.mean(axis=0)
        rng = np.random.default_rng(0)
        sample = fit_X[rng.choice(n, size=min(n, 64 * k), replace=False)]
        C = sample[rng.choice(sample.shape[0], size=k, replace=False)]
        for _ in range(6):  # Lloyd steps on the sample: compact cells, not an optimum
            h = _nearest_centre(sample, C, self.mu)
            cnt = np.bincount(h, minlength=k)
            S = np.zeros_like(C)
            np.add.at(S, h, sample)
            C = np.where(cnt[:, None] > 0, S / np.maximum(cnt, 1)[:, None], C)
        home = _nearest_centre(fit_X, C, self.mu)
        order = np.argsort(home, kind="stable")
        size = np.bincount(home, minlength=k)
        size = size[size > 0]
        self.row = order  # fitted row of each column
        self.X = fit_X[order]
        self.core = fit_core[order]
        self.labels = fit_labels[order]
        self.end = np.cumsum(size)
        self.start = self.end - size
        self.size = size
        self.centre = np.add.reduceat(self.X, self.start, axis=0) / size[:, None]
        cell_of = np.repeat(np.arange(size.size), size)
        r2 = tree_sqdist(self.X, self.centre[cell_of])
        self.radius = np.sqrt(np.maximum.reduceat(r2, self.start)) * (1 + 1e-9)
        self.csq = np.einsum("ij,ij->i", self.centre, self.centre)
        # the cells nearest each cell's centre, holding >= max(_NEAR, 2q) rows: the first bound
        D = ((self.centre[:, None, :] - self.centre[None, :, :]) ** 2).sum(axis=-1)
        want = max(_NEAR, 2 * q)
        self.near = []
        for b in range(size.size):
            o = np.argsort(D[b], kind="stable")
            m = int(np.searchsorted(np.cumsum(size[o]), want)) + 1
            self.near.append(np.sort(o[:m]))
        self.near_cols = [self.columns(c) for c in self.near]

    def columns(self, cells: np.ndarray) -> np.ndarray:
        if cells.size == 0:
            return np.empty(0, dtype=np.int64)
        return np.concatenate([np.arange(self.start[b], self.end[b]) for b in cells])

    def home(self, X: np.ndarray) -> np.ndarray:
        """The nearest cell of each row."""
        return _nearest_centre(X, self.centre, self.mu)


def _products(cells: Cells, cols: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, float]:
    """The (m, d + 1) float32 factor of fitted columns ``cols`` centred at c (last column:
    squared norms), so that ``A @ F.T`` = |y − c|² − 2 (x − c)·(y − c); and the largest squared
    norm."""
    B = cells.X[cols] - c
    F = np.empty((cols.size, B.shape[1] + 1), dtype=np.float32)
    F[:, :-1] = B
    sq = np.einsum("ij,ij->i", B, B)
    F[:, -1] = sq
    return F, float(sq.max()) if sq.size else 0.0


def _scan(A: np.ndarray, F: np.ndarray, lim: np.ndarray, colmap: np.ndarray,
          found: list, rows: np.ndarray | None = None) -> None:
    """Entries of ``A @ F.T`` at or below each row's ``lim``, in chunks of fitted rows that stay
    in cache (only the ``rows`` of A and lim when given): appends (row, fitted column, value)
    arrays. The products are laid out fitted row by new row, so that the comparison with the
    rows' limits runs along contiguous memory (1.5x faster than across it, measured)."""
    if rows is not None:
        A, lim = A[rows], lim[rows]
    At = np.ascontiguousarray(A.T)
    T = A.shape[0]
    buf = np.empty((min(_CHUNK, F.shape[0]), T), dtype=np.float32)
    for a in range(0, F.shape[0], _CHUNK):
        w = min(_CHUNK, F.shape[0] - a)
        if w != buf.shape[0]:
            buf = np.empty((w, T), dtype=np.float32)
        np.matmul(F[a : a + w], At, out=buf)
        f = np.flatnonzero(buf <= lim)
        if f.size:
            j, r = np.divmod(f, T)
            found.append((r if rows is None else rows[r], colmap[a + j], buf.ravel()[f]))


def _tile(cells: Cells, Xt: np.ndarray, hb: int, q: int) -> tuple[np.ndarray, np.ndarray]:
    """Labels of a tile of new rows with home cell ``hb``, and which of them are settled."""
    T, d = Xt.shape
    c = cells.centre[hb]
    P = Xt - c
    sqP = np.einsum("ij,ij->i", P, P)
    A = np.empty((T, d + 1), dtype=np.float32)
    A[:, :d] = -2.0 * P
    A[:, d] = 1.0
    # first bound: the q-th smallest distance to the rows of the cells near the home cell
    cols_n = cells.near_cols[hb]
    Fn, mn = _products(cells, cols_n, c)
    Gn = A @ Fn.T
    t1 = np.partition(Gn, q - 1, axis=1)[:, q - 1].astype(np.float64)
    pm = float(sqP.max())
    err_n = _SAFE * (d + 4) * _U * (pm + mn + 2 * np.sqrt(pm * mn))
    U = np.sqrt(np.maximum(t1 + sqP + err_n, 0.0))  # U(x) >= κ(x)
    # cells that may hold a row within U(x) of each row (ball bounds); a cell that few rows of
    # the tile need is scanned for those rows only
    Cc = cells.centre - c
    D2 = sqP[:, None] - 2.0 * (P @ Cc.T) + np.einsum("ij,ij->i", Cc, Cc)
    D2 -= 1e-12 * (sqP[:, None] + cells.csq + float(c @ c)) + 1e-300
    need = np.sqrt(np.maximum(D2, 0.0)) - cells.radius <= U[:, None]
    need[:, cells.near[hb]] = False
    share = need.mean(axis=0)
    union = np.flatnonzero(share)
    if cols_n.size + int(cells.size[union].sum()) > _COLS_MAX:
        return np.zeros(T, dtype=np.int64), np.ones(T, dtype=bool)
    # per-row rounding margin of a float32 value, for every fitted row within ~U(x) of x
    pn = np.sqrt(sqP)
    qn = pn + 1.001 * U
    err = _SAFE * (d + 4) * _U * (2 * pn * qn + qn * qn)
    qn = pn + 1.001 * np.sqrt(U * U + 2 * err)
    err = _SAFE * (d + 4) * _U * (2 * pn * qn + qn * qn) + 1e-12 * (sqP + U * U)
    lim = (U * U - sqP + err).astype(np.float32)
    lim = np.nextafter(lim, np.float32(np.inf))[:, None]
    f = np.flatnonzero(Gn <= lim)
    r, j = np.divmod(f, Gn.shape[1])
    found = [(r, cols_n[j], Gn.ravel()[f])]
    common = union[share[union] >= _SHARED]
    if common.size:
        cols_c = cells.columns(common)
        _scan(A, _products(cells, cols_c, c)[0], lim[:, 0], cols_c, found)
    for b in union[share[union] < _SHARED].tolist():
        cols_b = np.arange(cells.start[b], cells.end[b])
        _scan(A, _products(cells, cols_b, c)[0], lim[:, 0], cols_b, found,
              np.flatnonzero(need[:, b]))
    row = np.concatenate([x[0] for x in found])
    col = np.concatenate([x[1] for x in found])
    val = np.concatenate([x[2] for x in found])
    # one sort of (row, float32 value, column) keys orders every row's candidates by value
    v = val.view(np.int32)
    key = (v ^ ((v >> 31) & 0x7FFFFFFF)).astype(np.int64) + (1 << 31)
    key = (row.astype(np.int64) << (32 + _COL_BITS)) | (key << _COL_BITS) | col
    key.sort()
    cnt = np.bincount(row, minlength=T)
    at = (np.cumsum(cnt) - cnt)[:, None] + np.arange(q + 1)
    have = np.arange(q + 1) < cnt[:, None]
    ks = key[np.minimum(at, key.size - 1)]
    Cs = ks & ((1 << _COL_BITS) - 1)
    w = (((ks >> _COL_BITS) & 0xFFFFFFFF) - (1 << 31)).astype(np.int32)
    E = (w ^ ((w >> 31) & 0x7FFFFFFF)).view(np.float32).astype(np.float64)
    E[~have] = np.inf
    band = 2 * err
    bad = (cnt < q) | (E[:, 0] + sqP <= band) | (E[:, q] <= E[:, q - 1] + band)
    bad |= err > 1e-3 * U * U  # margins too wide to be useful: the tree decides
    if q >= 2:
        bad |= E[:, q - 2] >= E[:, q - 1] - band
    Cs[bad] = 0
    kappa = np.sqrt(tree_sqdist(Xt, cells.X[Cs[:, q - 1]]))  # exact, as the tree's
    elig = cells.core[Cs[:, :q]] <= kappa[:, None]
    bad |= ~elig.any(axis=1)
    first = elig.argmax(axis=1)
    e_first = E[np.arange(T), first]
    later = elig & (np.arange(q) > first[:, None]) & (E[:, :q] <= (e_first + band)[:, None])
    bad |= later.any(axis=1)
    return cells.labels[Cs[np.arange(T), first]], bad


def product_labels(cells: Cells, X: np.ndarray, q: int, progress=None, workers: int = -1
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Labels of the rows of X by the products, and a mask of the rows not settled (to be
    answered by the k-d tree path; their labels here are meaningless). Tiles run in
    ``workers`` threads (-1: one per core; numpy's products, comparisons and sorts release the
    GIL), each with a single BLAS thread."""
    from threadpoolctl import threadpool_limits

    home = cells.home(X)
    order = np.argsort(home, kind="stable")
    h = home[order]
    Xs = X[order]
    cuts = np.flatnonzero(np.r_[True, h[1:] != h[:-1], True]).tolist()
    tiles = [(lo, min(lo + _TILE, b)) for a, b in zip(cuts[:-1], cuts[1:], strict=True)
             for lo in range(a, b, _TILE)]
    lab = np.empty(X.shape[0], dtype=np.int64)
    unsettled = np.empty(X.shape[0], dtype=bool)

    def run(batch: list[tuple[int, int]]) -> int:
        for lo, hi in batch:
            rows = order[lo:hi]
            lab[rows], unsettled[rows] = _tile(cells, Xs[lo:hi], int(h[lo]), q)
        return sum(hi - lo for lo, hi in batch)

    batches = [tiles[i : i + 8] for i in range(0, len(tiles), 8)]
    n_w = (os.cpu_count() or 1) if workers == -1 else max(1, workers)
    done = 0
    with threadpool_limits(1, user_api="blas"):
        if n_w == 1 or len(batches) == 1:
            results = map(run, batches)
        else:
            ex = ThreadPoolExecutor(min(n_w, len(batches)))
            results = ex.map(run, batches)
        for k in results:
            done += k
            if progress is not None:
                progress.update(done)
        if n_w > 1 and len(batches) > 1:
            ex.shutdown()
    return lab, unsettled
