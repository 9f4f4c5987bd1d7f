"""Out-of-sample assignment of FairClusteringEnsemble (``FairClusteringEnsemble.predict``).

A new row is described by its base labels (and optionally its groups). Rows whose vote pattern
occurs among the fitted rows take that pattern's majority consensus label; other rows take the
label that minimises their share of the FCE objective with every fitted block held fixed
(``docs/methods/fce.md``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "apply_lookup",
    "closed_form_labels",
    "group_values",
    "groups_as_fitted",
    "pattern_lookup",
]


def pattern_lookup(keys: np.ndarray, labels: np.ndarray, c: int) -> dict[bytes, int]:
    """Vote pattern (row of ``keys``) -> majority consensus label (ties: smaller label)."""
    keys = np.ascontiguousarray(keys, dtype=np.int64)
    uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    counts = np.zeros((uniq.shape[0], c), dtype=np.int64)
    np.add.at(counts, (inv, labels), 1)
    major = counts.argmax(axis=1)
    return {row.tobytes(): int(lab) for row, lab in zip(uniq, major, strict=True)}


def apply_lookup(table: dict[bytes, int], keys: np.ndarray, out: np.ndarray) -> None:
    keys = np.ascontiguousarray(keys, dtype=np.int64)
    for j in np.flatnonzero(out < 0):
        hit = table.get(keys[j].tobytes())
        if hit is not None:
            out[j] = hit


def group_values(sensitive: Any, n: int) -> list[np.ndarray] | None:
    """Sorted group values per attribute as fit saw them (stacked-column order)."""
    if sensitive is None:
        return None
    S = np.asarray(sensitive, dtype=object) if not isinstance(sensitive, np.ndarray) else sensitive
    if S.ndim == 1:
        S = S.reshape(-1, 1)
    return [
        np.unique(S[:, j].astype(str) if S.dtype == object else S[:, j]) for j in range(S.shape[1])
    ]


def groups_as_fitted(
    sensitive: Any, n: int, values: list[np.ndarray] | None, name: str
) -> np.ndarray | None:
    """Stacked group columns of new rows, coded as at fit; None when fit had no groups."""
    if values is None:
        return None
    S = np.asarray(sensitive, dtype=object) if not isinstance(sensitive, np.ndarray) else sensitive
    if S.ndim == 1:
        S = S.reshape(-1, 1)
    if S.ndim != 2 or S.shape != (n, len(values)):
        raise ValueError(
            f"{name}.predict: 'sensitive' must have shape ({n}, {len(values)}) like at fit; got "
            f"{S.shape}."
        )
    out = np.empty((n, len(values)), dtype=np.int64)
    offset = 0
    for j, vals in enumerate(values):
        col = S[:, j].astype(str) if S.dtype == object else S[:, j]
        pos = np.clip(np.searchsorted(vals, col), 0, vals.size - 1)
        bad = vals[pos] != col
        if bad.any():
            raise ValueError(
                f"{name}.predict: sensitive attribute {j} has a group not seen at fit "
                f"({col[np.flatnonzero(bad)[0]]!r}); fitted groups are {list(vals)}."
            )
        out[:, j] = pos + offset
        offset += vals.size
    return out


def closed_form_labels(
    codes: np.ndarray,
    groups: np.ndarray | None,
    *,
    weights: np.ndarray,
    rotation: np.ndarray,
    base_rotations: tuple[np.ndarray, ...],
    contingency: np.ndarray,
    lambda1: float,
    lambda2: float,
    group_weights: np.ndarray | None = None,
) -> np.ndarray:
    """For each new row (base codes, -1 = abstain): argmin over clusters b of its share of the
    FCE objective with every fitted block fixed — min over h of sum_i alpha_i^2 ||h - y_i R_i||^2
    + lambda1 ||e_b - h R||^2 (closed form), plus lambda2 * sum_a (2 A[g_a, b] + 1) when
    ``groups`` (stacked group codes as at fit) are given; ``group_weights`` (T,) weight each
    group's term (the fit's ``group_weights_``; None = 1)."""
    alpha2 = weights**2
    R = rotation
    K, c = R.shape
    n_new, m = codes.shape
    lam1, lam2 = lambda1, lambda2
    targets = np.zeros((n_new, m, K))
    valid = codes >= 0
    for i, Ri in enumerate(base_rotations):
        targets[valid[:, i], i] = Ri[codes[valid[:, i], i]]
    a = (valid * alpha2).sum(axis=1)  # (n_new,)
    u = np.einsum("i,nik->nk", alpha2, targets)
    # h (a I + lam1 R R^T) = rhs per row, through the eigendecomposition of R R^T (shared);
    # a row no base votes for (a = 0) takes h = e_b R^T, which makes its share of J zero
    w, V = np.linalg.eigh(R @ R.T)
    voted = a > 0
    cost = np.empty((n_new, c))
    for b in range(c):
        rhs = u + lam1 * R[:, b][None, :]
        h = np.tile(R[:, b], (n_new, 1))
        h[voted] = ((rhs[voted] @ V) / (a[voted, None] + lam1 * w[None, :])) @ V.T
        ens = np.einsum("i,ni->n", alpha2, ((h[:, None, :] - targets) ** 2).sum(axis=2) * valid)
        e = -(h @ R)
        e[:, b] += 1.0
        cost[:, b] = ens + lam1 * (e**2).sum(axis=1)
    if groups is not None and lam2 > 0:
        A = contingency
        for col in range(groups.shape[1]):
            w = 1.0 if group_weights is None else np.asarray(group_weights)[groups[:, col]][:, None]
            cost += lam2 * w * (2.0 * A[groups[:, col]] + 1.0)
    return cost.argmin(axis=1).astype(np.int64)
