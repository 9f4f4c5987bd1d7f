"""DCSI — density cluster separability index (Gauss et al. 2024; FairDen appendix C.2).

Plain Euclidean distance, as the authors' R code ``calc_DCSI_RW`` / ``calc_DCSI_multiclass``:

* for cluster i: ε_i = median over its members of the distance to their (2·minPts)-th nearest
  neighbour inside the cluster (self excluded; the furthest available one when the cluster has
  ≤ 2·minPts members);
* core points of i = members whose minPts-th within-cluster neighbour (self excluded) is within
  ε_i;
* Conn(i) = largest edge of the Euclidean minimum spanning tree of i's core points;
* Sep(i, j) = smallest distance between a core point of i and one of j;
* q = Sep(i, j) / max(Conn(i), Conn(j)), DCSI(i, j) = q / (1 + q); DCSI = mean over pairs.

Noise (label −1) is excluded; ``noise_adjusted`` = DCSI × non-noise fraction (FairDen's tables).
Bugs of the public Python port that are NOT reproduced: squared distances, mutating the caller's
labels, collapsing ties in ε, dropping zero-length MST edges.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

from fairaudit.cluster.dc_distance import closest_pair, mutual_reachability_mst

__all__ = ["DCSIPair", "DCSIResult", "dcsi"]


@dataclass(frozen=True)
class DCSIPair:
    """DCSI of one pair of clusters."""

    cluster_a: int
    cluster_b: int
    separation: float
    connectedness_a: float
    connectedness_b: float
    q: float
    value: float


@dataclass(frozen=True)
class DCSIResult:
    """DCSI of a clustering: ``value`` (mean over pairs, noise excluded), ``noise_adjusted``
    (× non-noise fraction), per-pair detail and per-cluster ε / core counts."""

    value: float
    noise_adjusted: float
    pairs: tuple[DCSIPair, ...]
    clusters: tuple[int, ...]
    epsilon: tuple[float, ...]
    n_core: tuple[int, ...]
    connectedness: tuple[float, ...]
    noise_fraction: float
    min_pts: int
    notes: tuple[str, ...] = ()


def _kth_within(P: np.ndarray, ks: tuple[int, ...]) -> list[np.ndarray]:
    """For each k in ``ks``: distance of each row of P to its k-th nearest other row (the
    furthest available one if P has fewer). One k-NN query for all ks."""
    m = P.shape[0]
    kmax = min(max(ks), m - 1)
    if kmax <= 0:
        return [np.zeros(m) for _ in ks]
    d, _ = cKDTree(P).query(P, k=kmax + 1, workers=-1)
    d = d.reshape(m, kmax + 1)
    return [d[:, min(k, m - 1)] for k in ks]


def dcsi(X: np.ndarray, labels: np.ndarray, min_pts: int = 5) -> DCSIResult:
    """DCSI of ``labels`` on features ``X`` (Euclidean). See module docstring."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    labels = np.asarray(labels).reshape(-1).copy()
    if X.ndim != 2 or X.shape[0] != labels.size:
        raise ValueError(
            "The 'labels' parameter of dcsi must have one entry per row of X "
            f"({X.shape[0]}); got {labels.size}."
        )
    if not np.all(np.isfinite(X)):
        raise ValueError("The 'X' parameter of dcsi must not contain NaN or infinite values.")
    if isinstance(min_pts, bool) or not isinstance(min_pts, int | np.integer) or min_pts < 1:
        raise ValueError(f"The 'min_pts' parameter of dcsi must be an int >= 1; got {min_pts!r}.")
    n = labels.size
    noise = labels == -1
    noise_frac = float(noise.mean()) if n else 0.0
    clusters = tuple(int(c) for c in np.unique(labels[~noise]))
    notes: list[str] = []
    eps_l: list[float] = []
    cores: list[np.ndarray] = []
    conn_l: list[float] = []
    for c in clusters:
        P = X[labels == c]
        if P.shape[0] <= 2 * min_pts:
            notes.append(
                f"cluster {c} has {P.shape[0]} <= 2·min_pts members: ε uses its furthest member"
            )
        d_eps, core_d = _kth_within(P, (2 * min_pts, min_pts))
        eps = float(np.median(d_eps)) if P.shape[0] > 1 else 0.0
        core = P[core_d <= eps]
        if core.shape[0] >= 2:
            mst = mutual_reachability_mst(core, 1)
            conn = float(mst.weight.max())
        else:
            conn = 0.0
        eps_l.append(eps)
        cores.append(core)
        conn_l.append(conn)
    pairs: list[DCSIPair] = []
    for a in range(len(clusters)):
        for b in range(a + 1, len(clusters)):
            A, B = cores[a], cores[b]
            sep = closest_pair(A, B)[0] if A.shape[0] and B.shape[0] else math.inf
            conn = max(conn_l[a], conn_l[b])
            if conn > 0:
                q = sep / conn
                val = q / (1.0 + q)
            elif sep > 0:
                q, val = math.inf, 1.0
            else:
                q, val = 0.0, 0.0
            pairs.append(DCSIPair(clusters[a], clusters[b], sep, conn_l[a], conn_l[b], q, val))
    if pairs:
        value = float(np.mean([p.value for p in pairs]))
    else:
        value = math.nan
        notes.append("DCSI needs at least two non-noise clusters")
    return DCSIResult(
        value=value,
        noise_adjusted=value * (1.0 - noise_frac),
        pairs=tuple(pairs),
        clusters=clusters,
        epsilon=tuple(eps_l),
        n_core=tuple(int(c.shape[0]) for c in cores),
        connectedness=tuple(conn_l),
        noise_fraction=noise_frac,
        min_pts=int(min_pts),
        notes=tuple(notes),
    )
