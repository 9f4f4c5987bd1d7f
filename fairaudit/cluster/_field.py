"""Shared checks of the field's fair clusterers (FairSC, fairlets, Bera et al., VFC).

Each estimator validates X with scikit-learn's ``validate_data`` and then these helpers: an integer
parameter check, the sensitive groups as integer codes (one column per attribute, via
:func:`fairaudit.cluster.ffcm.encode_sensitive`), and a chunked nearest-centre search.
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import numpy as np

__all__ = [
    "check_float", "check_int", "intersect_codes", "nearest", "sensitive_codes", "sq_dist",
    "start_fit",
]


def check_int(owner: str, param: str, value: Any, lo: int) -> int:
    """``value`` as an int >= ``lo`` or a ValueError naming the parameter."""
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < lo:
        raise ValueError(f"The '{param}' parameter of {owner} must be an int >= {lo}; got {value!r}.")
    return int(value)


def check_float(owner: str, param: str, value: Any, lo: float, hi: float | None = None,
                *, open_hi: bool = False) -> float:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and value >= lo
    if ok and hi is not None:
        ok = value < hi if open_hi else value <= hi
    if not ok:
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}{')' if open_hi else ']'}"
        raise ValueError(f"The '{param}' parameter of {owner} must be a float {rng}; got {value!r}.")
    return float(value)


def start_fit(est: Any, X: Any) -> tuple[str, np.ndarray, int, int]:
    """``(name, X, n, k)``: X validated (scikit-learn's ``validate_data``, >= 2 rows) and
    ``n_clusters`` an int in 1..n."""
    from sklearn.utils.validation import validate_data

    name = type(est).__name__
    X = validate_data(est, X, dtype=np.float64, ensure_min_samples=2)
    n = X.shape[0]
    k = check_int(name, "n_clusters", est.n_clusters, 1)
    if k > n:
        raise ValueError(f"The 'n_clusters' parameter of {name} must be <= n_samples = {n}.")
    return name, X, n, k


def sensitive_codes(
    sensitive: Any, n: int, owner: str, *, fair: bool
) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """``[(groups, codes), ...]`` per attribute, or None (with a warning when ``fair``) when
    ``sensitive`` is None: the estimator then fits its unfair twin."""
    from fairaudit.cluster.ffcm import encode_sensitive

    if sensitive is None:
        if fair:
            warnings.warn(
                f"{owner}.fit got no 'sensitive' groups, so there is nothing to balance: the "
                "result is the unfair twin (fair=False). Pass fit(X, sensitive=S).",
                UserWarning,
                stacklevel=3,
            )
        return None
    return encode_sensitive(sensitive, n, owner)


def intersect_codes(attrs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, int]:
    """Codes of the intersection of the attributes (one group per combination present)."""
    if len(attrs) == 1:
        return attrs[0][1], len(attrs[0][0])
    stacked = np.stack([c for _, c in attrs], axis=1)
    _, inv = np.unique(stacked, axis=0, return_inverse=True)
    inv = inv.reshape(-1).astype(np.intp)
    return inv, int(inv.max()) + 1


def sq_dist(X: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances rows x centres (clipped at 0)."""
    d = (X * X).sum(axis=1)[:, None] - 2.0 * X @ C.T + (C * C).sum(axis=1)[None, :]
    return np.maximum(d, 0.0)


def nearest(X: np.ndarray, C: np.ndarray, chunk: int = 65_536) -> np.ndarray:
    """Index of the nearest centre of every row (chunked)."""
    out = np.empty(X.shape[0], dtype=np.int64)
    for s in range(0, X.shape[0], chunk):
        out[s:s + chunk] = sq_dist(X[s:s + chunk], C).argmin(axis=1)
    return out
