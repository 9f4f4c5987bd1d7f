"""Out-of-sample assignment by the nearest fitted row in mutual reachability.

The model is HDBSCAN's ``approximate_predict`` (McInnes & Healy 2017, "Accelerated hierarchical
density based clustering", and the ``hdbscan`` package's prediction module): a new point x joins
the fitted structure through its smallest mutual-reachability edge
r(x, y) = max(d(x, y), κ(x), κ(y)), which is also its smallest dc-distance to any fitted row.

Two exact paths give the same labels row for row (tested): k-d tree queries, and from 7
dimensions on, for fits of 1,024 to 65,536 rows and at least 2,048 new rows, float32 matrix
products over cells of the fitted rows (:mod:`fairaudit.cluster._mr_products`), which settle
almost every row and hand the rest (ties within rounding, rows whose winner lies beyond their q
nearest, tiles needing too many products) to the tree.
"""

from __future__ import annotations

import numpy as np

from fairaudit.cluster._knn import leaf_ordered, midpoint_tree
from fairaudit.cluster._progress import Progress

__all__ = ["mutual_reachability_assign"]

_FIRST_K = 16  # neighbours asked for a row at distance 0 from fitted rows (its label)
_BATCH = 65_536
_PRODUCT_MIN_D = 7  # below, the k-d tree is as fast or faster (measured, docs/benchmarks/fairden.md)
_PRODUCT_MIN_FIT = 1_024
_PRODUCT_MAX_FIT = 65_536  # above, the tree can be faster (10-d, fit 100,000: 0.8-1.5x)
_PRODUCT_MIN_ROWS = 2_048


def mutual_reachability_assign(
    fit_X: np.ndarray,
    fit_core: np.ndarray,
    fit_labels: np.ndarray,
    X: np.ndarray,
    min_pts: int,
    *,
    method: str = "auto",
    workers: int = -1,
    index: dict | None = None,
) -> np.ndarray:
    """Labels of new rows ``X``: the label of the fitted row y minimising, in this order,
    r(x, y) = max(d(x, y), κ(x), κ(y)), then d(x, y), then the row number of y.

    κ(x) = distance to the (min_pts − 1)-th nearest fitted row (x counts itself, so it is the
    fit's core-distance convention); κ(y) = ``fit_core``. A row at distance 0 from fitted rows
    takes the label of the first of them (an identical row is that row; before issue 38, with
    more than max(16, q) identical fitted rows, the first of those the k-d tree returned).
    ``method``: ``"auto"`` (products where they are faster, see the module), ``"tree"`` or
    ``"products"`` (products wherever they apply); all
    give the same labels. ``workers``: threads (-1: one per core). ``index``: a dict the caller
    keeps between calls on the same fitted rows (batches of one pass), where the search
    structures over them are kept instead of being rebuilt per call (the labels are the same).
    """
    fit_X = np.asarray(fit_X, dtype=np.float64)
    fit_core = np.asarray(fit_core, dtype=np.float64)
    X = np.asarray(X, dtype=np.float64)
    if method not in ("auto", "tree", "products"):
        raise ValueError(f"method must be 'auto', 'tree' or 'products', got {method!r}")
    n_fit, d = fit_X.shape
    out = np.empty(X.shape[0], dtype=np.int64)
    if X.shape[0] == 0:
        return out
    q = max(int(min_pts) - 1, 1)
    progress = Progress("FairDen assignment", X.shape[0], "rows")
    todo = np.arange(X.shape[0])
    use = method == "products" or (
        method == "auto" and d >= _PRODUCT_MIN_D and X.shape[0] >= _PRODUCT_MIN_ROWS
    )
    use = use and _PRODUCT_MIN_FIT <= n_fit <= _PRODUCT_MAX_FIT and q < n_fit
    if use and np.isfinite(X).all():  # (non-finite rows: the tree refuses them, as before)
        from fairaudit.cluster._mr_products import Cells, product_labels

        cells = index.get("cells") if index is not None else None
        if cells is None:
            cells = Cells(fit_X, fit_core, fit_labels, q)
            if index is not None:
                index["cells"] = cells
        out, unsettled = product_labels(cells, X, q, progress, workers)
        todo = np.flatnonzero(unsettled)
    if todo.size:
        tree = index.get("tree") if index is not None else None
        if tree is None:
            tree = leaf_ordered(fit_X)[1:]
            if index is not None:
                index["tree"] = tree
        out[todo] = _tree_assign(fit_X, fit_core, fit_labels, X[todo], q,
                                 None if todo.size < X.shape[0] else progress, workers, tree)
    progress.close()
    return out


def _tree_assign(fit_X: np.ndarray, fit_core: np.ndarray, fit_labels: np.ndarray,
                 X: np.ndarray, q: int, progress: Progress | None, workers: int = -1,
                 tree: tuple | None = None) -> np.ndarray:
    """The rule by k-d tree queries: each row asks K neighbours and doubles K until no row not
    yet seen can win (such a row has r >= d >= the K-th distance). ``tree``: ``(perm, tree)``
    from :func:`~fairaudit.cluster._knn.leaf_ordered` of ``fit_X`` (built here when not given):
    the tree holds the fitted rows in its leaf order, so its answers are mapped back to row
    numbers (``perm``) before anything reads them (the ties go by the caller's row number)."""
    n_fit = fit_X.shape[0]
    out = np.empty(X.shape[0], dtype=np.int64)
    perm, tree = leaf_ordered(fit_X)[1:] if tree is None else tree
    # rows are answered independently: ask them in a spatially coherent order (the leaf order
    # of a k-d tree over the new rows), so consecutive queries walk the same nodes of ``tree``
    spatial = np.asarray(midpoint_tree(X).indices) if X.shape[0] > 1 else np.arange(X.shape[0])
    X = X[spatial]
    k_zero = int(min(n_fit, max(_FIRST_K, q)))
    for lo in range(0, X.shape[0], _BATCH):
        rows = np.arange(lo, min(lo + _BATCH, X.shape[0]))
        # first ask q neighbours: κ(x) is the q-th, and most rows are settled by them (the
        # winner's r equals κ(x) at a distance under it); the others ask 2K, 4K, ...
        # (measured: 1.3× the rows/s of a first K = 2q, and in 3–5 dimensions 1.2–1.4× that
        # of a first K = 16; identical labels)
        K = int(min(n_fit, q))
        while rows.size:
            d, idx = tree.query(X[rows], k=K, workers=workers)
            d = d.reshape(rows.size, K)
            idx = perm[idx.reshape(rows.size, K)]
            kappa = d[:, min(q, K) - 1]
            r = np.maximum(np.maximum(d, kappa[:, None]), fit_core[idx])
            # lexicographic (r, d, index): columns are sorted by d; break equal (r, d) by index
            best_r = r.min(axis=1)
            cand = r == best_r[:, None]
            d_c = np.where(cand, d, np.inf)
            best_d = d_c.min(axis=1)
            cand &= d_c == best_d[:, None]
            best = np.where(cand, idx, n_fit).min(axis=1)
            zero = d[:, 0] == 0.0
            if zero.any():
                # a row at distance 0 takes the first identical fitted row: all of them are
                # among the K returned unless the K-th is identical too (the columns are sorted
                # by distance); then ask max(16, q), and for those still all identical, every
                # fitted row at distance 0
                zr = rows[zero]
                dz, iz = d[zero], idx[zero]
                first = np.where(dz == 0.0, iz, n_fit).min(axis=1)
                more = np.flatnonzero(dz[:, -1] == 0.0)
                if more.size and K < k_zero:
                    d2, i2 = tree.query(X[zr[more]], k=k_zero, workers=workers)
                    d2, i2 = d2.reshape(more.size, k_zero), perm[i2.reshape(more.size, k_zero)]
                    first[more] = np.where(d2 == 0.0, i2, n_fit).min(axis=1)
                    more = more[d2[:, -1] == 0.0]
                if more.size:
                    hits = tree.query_ball_point(X[zr[more]], r=0.0)
                    first[more] = [int(perm[h].min()) for h in hits]
                best[zero] = first
            dK = d[:, -1]
            done = (best_r < dK) | ((best_r == dK) & (best_d < dK)) | zero | (K >= n_fit)
            out[rows[done]] = fit_labels[best[done]]
            rows = rows[~done]
            K = int(min(n_fit, 2 * K))
        if progress is not None:
            progress.update(min(lo + _BATCH, X.shape[0]))
    res = np.empty_like(out)
    res[spatial] = out
    return res
