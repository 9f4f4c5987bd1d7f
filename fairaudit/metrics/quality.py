"""Clustering quality: the silhouette (Rousseeuw 1987) with its per-cluster means.

For row i in cluster C: a(i) = mean distance to the other members of C, b(i) = smallest mean
distance to the members of another cluster, s(i) = (b - a) / max(a, b), and s(i) = 0 when C has
one member (scikit-learn's convention). The silhouette is the mean of s over all rows. Euclidean
distance. Noise rows (label < 0) must be removed by the caller. Undefined (NaN, with a note) for
fewer than 2 clusters or when every row is its own cluster.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fairaudit._threads import cores, over_ranges

__all__ = ["SilhouetteResult", "silhouette", "silhouette_by_row"]

_CHUNK_ENTRIES = 1 << 20
"""Distances held at a time by :func:`silhouette_by_row`, over all its threads (8 MB; but at
least :data:`_MIN_BLOCK_ROWS` rows a block). Blocks this small stay in cache between their
passes (product, sums, clip, square root, product) and cost few page faults: measured at 5,000
rows, 0.045-0.061 s instead of 0.080-0.086 s with 64 MB (docs/benchmarks.md)."""
_MIN_BLOCK_ROWS = 64
"""Rows a block holds at least: the product with the cluster indicator of fewer rows costs
more than the cache saves (50,000 x 15: blocks of 10 rows 10.7 s, of 32 rows 8.6 s, of 64 rows
7.1 s; 64 MB blocks 7.4 s)."""
_THREADED_ENTRIES = 1 << 22
"""Distance matrices of at least this many entries (about 2,000 rows) are computed on one
thread per core."""


@dataclass(frozen=True)
class SilhouetteResult:
    """Mean silhouette ``value``, and per cluster (``clusters`` order) its mean and size."""

    value: float
    clusters: tuple[int, ...]
    per_cluster: tuple[float, ...]
    sizes: tuple[int, ...]
    notes: tuple[str, ...] = ()


def _checked(X: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X, dtype=np.float64)
    labels = np.asarray(labels).reshape(-1)
    if X.shape[0] != labels.size:
        raise ValueError(f"X has {X.shape[0]} rows but labels has {labels.size}")
    if (labels < 0).any():
        raise ValueError("labels contain noise (-1): remove noise rows before the silhouette")
    return X, labels


def _defined(k: int, n: int) -> bool:
    return 2 <= k <= n - 1


def silhouette_by_row(X: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Silhouette of every row (no noise rows); all NaN when it is undefined (fewer than two
    clusters, or every row its own cluster). O(n²) time, chunked memory.

    scikit-learn's ``silhouette_samples`` (euclidean) in numpy: the same distances (|x|² − 2x·y
    + |y|², clipped at 0, the diagonal 0, square root), summed per cluster by a product with the
    cluster indicator, s = 0 for a row alone in its cluster; equal to it within float rounding
    (tested), without importing scikit-learn (a labels audit then imports no scikit-learn,
    SciPy statistics or pandas: about a second of a short audit)."""
    X, labels = _checked(X, labels)
    clusters, inv = np.unique(labels, return_inverse=True)
    inv = inv.reshape(-1)
    n, k = labels.size, clusters.size
    if not _defined(k, n):
        return np.full(n, np.nan)
    freqs = np.bincount(inv, minlength=k)
    member = np.zeros((n, k))
    member[np.arange(n), inv] = 1.0
    sq = np.einsum("ij,ij->i", X, X)
    sums = np.empty((n, k))
    XT = -2.0 * X.T

    def block(a: int, b: int) -> None:
        D = X[a:b] @ XT
        D += sq[a:b, None]
        D += sq[None, :]
        np.maximum(D, 0.0, out=D)
        D[np.arange(b - a), np.arange(a, b)] = 0.0
        np.sqrt(D, out=D)
        sums[a:b] = D @ member

    # blocks of rows on one thread per core (numpy releases the GIL in each pass), within the
    # same memory as one block at a time; each block writes its own rows of ``sums``
    workers = min(cores(), 4) if n * n >= _THREADED_ENTRIES else 1
    step = min(n, max(_MIN_BLOCK_ROWS, _CHUNK_ENTRIES // (n * workers)))

    def span(a0: int, b0: int) -> None:
        for a in range(a0, b0, step):
            block(a, min(b0, a + step))

    if workers > 1:
        over_ranges(span, n, workers, min_span=step)
    else:
        span(0, n)
    rows = np.arange(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        intra = sums[rows, inv] / (freqs[inv] - 1)
        sums[rows, inv] = np.inf
        inter = (sums / freqs).min(axis=1)
        s = (inter - intra) / np.maximum(intra, inter)
    return np.nan_to_num(s)


def silhouette(X: np.ndarray, labels: np.ndarray) -> SilhouetteResult:
    """Silhouette of ``labels`` (no noise) on ``X`` (n x d). O(n²) time, chunked memory."""
    X, labels = _checked(X, labels)
    clusters, sizes = np.unique(labels, return_counts=True)
    k = clusters.size
    if not _defined(k, labels.size):
        why = (
            "fewer than 2 clusters among the rows used"
            if k < 2 else "every row is its own cluster"
        )
        return SilhouetteResult(
            math.nan, tuple(int(c) for c in clusters), tuple(math.nan for _ in clusters),
            tuple(int(n) for n in sizes), (f"silhouette is undefined: {why}.",),
        )
    s = silhouette_by_row(X, labels)
    per = [float(s[labels == c].mean()) for c in clusters]
    return SilhouetteResult(
        float(s.mean()), tuple(int(c) for c in clusters), tuple(per),
        tuple(int(n) for n in sizes),
    )
