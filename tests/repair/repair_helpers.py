"""Helpers of the repair tests: the attribute tables of a joint-cell table."""

from __future__ import annotations

import numpy as np

from fairaudit.repair.problem import Scope


def scopes_of(codes: np.ndarray, names: tuple[str, ...], n_cell: np.ndarray,
              min_cell: int = 1, intersection: bool = False) -> tuple[Scope, ...]:
    out = []
    for j, a in enumerate(names):
        gc = codes[:, j]
        sizes = np.bincount(gc, weights=n_cell)
        keep = sizes >= min_cell
        remap = -np.ones(sizes.size, dtype=np.int64)
        remap[keep] = np.arange(int(keep.sum()))
        out.append(Scope(a, remap[gc], tuple(f"{a}={g}" for g in np.flatnonzero(keep))))
    if intersection:
        out.append(Scope("|".join(names), np.arange(codes.shape[0]),
                         tuple(str(tuple(c)) for c in codes)))
    return tuple(out)
