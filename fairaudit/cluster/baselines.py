"""Plain baselines: k-means with k chosen by silhouette, and DBSCAN (scikit-learn)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class KSelection:
    """The silhouette score of every k tried, and the chosen k.

    ``k`` is the highest-scoring k (smallest k on ties) among those whose k-means labelling of
    the sample is not degenerate; ``degenerate`` maps each k that was passed over to the reason
    (``"dominant_cluster"`` or ``"tiny_cluster"``). When every k is degenerate the best score is
    chosen anyway and ``all_degenerate`` is true.
    """

    k: int
    scores: tuple[tuple[int, float], ...]
    sample_size: int
    degenerate: tuple[tuple[int, str], ...] = ()
    all_degenerate: bool = False


def degenerate_reason(
    labels: np.ndarray,
    sample_silhouettes: np.ndarray,
    *,
    max_share: float,
    min_share: float,
    separated: float,
) -> str | None:
    """Why a labelling of a sample is degenerate, or None.

    ``"dominant_cluster"``: one cluster holds more than ``max_share`` of the rows.
    ``"tiny_cluster"``: a cluster holds less than ``min_share`` of the rows and its members'
    mean silhouette is below ``separated`` (a well separated small group is forced by the
    data and is not degenerate). The same rules as the report's degenerate-labelling warnings.
    """
    values, counts = np.unique(labels, return_counts=True)
    n = labels.shape[0]
    if counts.max() > max_share * n:
        return "dominant_cluster"
    for value, count in zip(values, counts, strict=True):
        if count < min_share * n and float(sample_silhouettes[labels == value].mean()) < separated:
            return "tiny_cluster"
    return None


def select_k_silhouette(
    X: np.ndarray,
    k_values: Sequence[int] = tuple(range(2, 9)),
    *,
    sample_size: int = 2000,
    n_init: int = 4,
    random_state: int | None = None,
    max_share: float | None = 0.9,
    min_share: float = 0.01,
    separated: float = 0.5,
) -> KSelection:
    """Choose k for k-means by the silhouette score on a seeded sample of at most ``sample_size``.

    Each k is fitted on the sample with ``n_init`` seeded starts; k values not smaller than the
    number of distinct sample points are skipped. A k whose labelling of the sample is
    degenerate (:func:`degenerate_reason`: one cluster over ``max_share`` of the rows, or a
    cluster under ``min_share`` that is not well separated) is passed over: on heavy-tailed data
    the best silhouette is often "a handful of extreme rows against the rest", which splits no
    one. ``max_share=None`` turns this off (the plain silhouette choice).
    """
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_samples

    X = np.asarray(X, dtype=np.float64)
    rng = np.random.default_rng(random_state)
    if X.shape[0] > sample_size:
        idx = np.sort(rng.choice(X.shape[0], size=sample_size, replace=False))
        Xs = X[idx]
    else:
        Xs = X
    n_distinct = np.unique(Xs, axis=0).shape[0]
    scores: list[tuple[int, float]] = []
    flagged: list[tuple[int, str]] = []
    for k in k_values:
        if k < 2 or k >= n_distinct:
            continue
        seed = int(rng.integers(2**31 - 1))
        labels = KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit_predict(Xs)
        if np.unique(labels).size < 2:
            continue
        sil = silhouette_samples(Xs, labels)
        scores.append((int(k), float(sil.mean())))
        if max_share is not None:
            reason = degenerate_reason(labels, sil, max_share=max_share, min_share=min_share,
                                       separated=separated)
            if reason is not None:
                flagged.append((int(k), reason))
    if not scores:
        raise ValueError(
            f"cannot choose k: the data has {n_distinct} distinct point(s); need at least 3"
        )
    passed = {k for k, _ in flagged}
    usable = [s for s in scores if s[0] not in passed]
    best = max(usable or scores, key=lambda s: (s[1], -s[0]))
    log.info("silhouette choice of k: %s (degenerate: %s) -> k=%d", scores, flagged, best[0])
    return KSelection(best[0], tuple(scores), int(Xs.shape[0]), tuple(flagged),
                      all_degenerate=not usable)
