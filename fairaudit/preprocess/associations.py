"""Association of features with protected attributes on the same rows: Cramér's V and mutual
information of each feature (cut into at most ``max_bins`` quantile bins) with each attribute.
The proxy auditor reports them beside FUFS's proxy scores."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["FeatureAssociations", "feature_associations"]


@dataclass(frozen=True)
class FeatureAssociations:
    """Association of every feature with every protected attribute, on the same rows.

    ``cramers_v`` and ``mutual_information`` (nats) have shape (d, a); ``n_bins`` is the number
    of categories each feature was cut into (its distinct values when at most ``max_bins``,
    otherwise quantile bins).
    """

    cramers_v: np.ndarray
    mutual_information: np.ndarray
    n_bins: np.ndarray
    n_rows: int


def _discretise(x: np.ndarray, max_bins: int) -> np.ndarray:
    uniq, inv = np.unique(x, return_inverse=True)
    if uniq.size <= max_bins:
        return inv.reshape(-1)
    edges = np.unique(np.quantile(x, np.linspace(0, 1, max_bins + 1)[1:-1]))
    return np.searchsorted(edges, x, side="right")


def _codes(col: np.ndarray) -> np.ndarray:
    return np.unique(col.astype(str) if col.dtype == object else col, return_inverse=True)[1]


def feature_associations(X: Any, sensitive: Any, *, max_bins: int = 10) -> FeatureAssociations:
    """Cramér's V and mutual information between each column of X and each protected attribute.

    Numeric features with more than ``max_bins`` distinct values are cut at quantiles into at most
    ``max_bins`` bins; protected attributes are taken as categories. Cramér's V is
    ``sqrt(chi2 / (n (min(r, c) - 1)))`` on the contingency table (no bias correction), 0 when a
    side has a single category.
    """
    X = np.asarray(X, dtype=np.float64)
    S = np.asarray(sensitive)
    if S.ndim == 1:
        S = S.reshape(-1, 1)
    if X.ndim != 2 or S.shape[0] != X.shape[0]:
        raise ValueError(
            f"feature_associations: X (n x d) and sensitive (n x a) must have the same rows; got "
            f"{X.shape} and {S.shape}."
        )
    n, d = X.shape
    a = S.shape[1]
    V = np.zeros((d, a))
    MI = np.zeros((d, a))
    bins = np.zeros(d, dtype=np.int64)
    s_codes = [_codes(S[:, j]) for j in range(a)]
    for f in range(d):
        xf = _discretise(X[:, f], max_bins)
        r = int(xf.max()) + 1
        bins[f] = r
        for j, sc in enumerate(s_codes):
            c = int(sc.max()) + 1
            N = np.zeros((r, c))
            np.add.at(N, (xf, sc), 1.0)
            N = N[N.sum(axis=1) > 0][:, N.sum(axis=0) > 0]
            rr, cc = N.shape
            if rr < 2 or cc < 2:
                continue
            E = N.sum(axis=1, keepdims=True) * N.sum(axis=0, keepdims=True) / n
            chi2 = float(np.sum((N - E) ** 2 / E))
            V[f, j] = np.sqrt(chi2 / (n * (min(rr, cc) - 1)))
            P = N / n
            nz = P > 0
            MI[f, j] = float(np.sum(P[nz] * np.log(P[nz] / (E[nz] / n))))
    return FeatureAssociations(V, MI, bins, n)
