"""Plain baselines: k-means with k chosen by silhouette, and DBSCAN (scikit-learn)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class KSelection:
    """The silhouette score of every k tried, and the chosen k (highest score, smallest k on ties)."""

    k: int
    scores: tuple[tuple[int, float], ...]
    sample_size: int


def select_k_silhouette(
    X: np.ndarray,
    k_values: Sequence[int] = tuple(range(2, 9)),
    *,
    sample_size: int = 2000,
    n_init: int = 4,
    random_state: int | None = None,
) -> KSelection:
    """Choose k for k-means by the silhouette score on a seeded sample of at most ``sample_size``.

    Each k is fitted on the sample with ``n_init`` seeded starts; k values not smaller than the
    number of distinct sample points are skipped.
    """
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    X = np.asarray(X, dtype=np.float64)
    rng = np.random.default_rng(random_state)
    if X.shape[0] > sample_size:
        idx = np.sort(rng.choice(X.shape[0], size=sample_size, replace=False))
        Xs = X[idx]
    else:
        Xs = X
    n_distinct = np.unique(Xs, axis=0).shape[0]
    scores: list[tuple[int, float]] = []
    for k in k_values:
        if k < 2 or k >= n_distinct:
            continue
        seed = int(rng.integers(2**31 - 1))
        labels = KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit_predict(Xs)
        if np.unique(labels).size < 2:
            continue
        scores.append((int(k), float(silhouette_score(Xs, labels))))
    if not scores:
        raise ValueError(
            f"cannot choose k: the data has {n_distinct} distinct point(s); need at least 3"
        )
    best = max(scores, key=lambda s: (s[1], -s[0]))
    log.info("silhouette choice of k: %s -> k=%d", scores, best[0])
    return KSelection(best[0], tuple(scores), int(Xs.shape[0]))
