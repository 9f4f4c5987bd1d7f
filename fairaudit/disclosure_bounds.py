"""Published bounds for values that disclosure control withholds.

When :func:`fairaudit.disclosure.protect` suppresses counts of a table, the metric values of that
table are withheld. In their place the document publishes *bounds*: an interval that contains
the value for every table consistent with what is published. It is computed from the published
numbers alone, in two steps:

1. :func:`published_ranges`: the range of every suppressed count, group total and cluster size
   of one published table, by propagating the published sums (each row and column of the table
   adds up to its published or bounded total; the totals add up to the number of rows) until
   nothing narrows. Known facts the report states anyway enter too: a group left out as too
   small has 1 to ``min_cell - 1`` rows, a judged group at least ``min_cell``, a listed cluster
   at least one.
2. :func:`table_box` cuts the ranges down to the table a result was computed on (the judged
   groups and their clusters) as a :class:`fairaudit.metrics.bounds.TableBox`, and the auditor's
   :meth:`~fairaudit.components.CountingAuditor.bounds` turns it into an interval per metric by
   interval arithmetic.

Both steps read only the published entries of the cube (``cube.values`` where ``cube.supp`` is
false) and facts the report publishes, so the interval tells nothing the published numbers do
not already tell: it is a consequence of them. It is sound, not tight (other published tables,
e.g. the intersection, are not used).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fairaudit.metrics.bounds import TableBox
from fairaudit.suppression import Cube, Spec

__all__ = ["Ranges", "published_ranges", "table_box"]

_MAX_SWEEPS = 200


@dataclass(frozen=True)
class Ranges:
    """Integer ranges of one published table: groups (rows, flattened over the attribute set's
    axes) x cluster levels (noise last when there is noise)."""

    cells_lo: np.ndarray
    cells_hi: np.ndarray
    all_lo: np.ndarray
    """Each group's total over every level, noise included."""
    all_hi: np.ndarray
    clean_lo: np.ndarray
    """Each group's total over the clusters (noise excluded)."""
    clean_hi: np.ndarray
    sizes_lo: np.ndarray
    """Each level's size (cluster sizes; the noise count last)."""
    sizes_hi: np.ndarray
    noise: int | None
    n: int


def _known(values: np.ndarray, hidden: np.ndarray, lo_default, hi_default
           ) -> tuple[np.ndarray, np.ndarray]:
    v = values.astype(np.int64)
    lo = np.where(hidden, lo_default, v).astype(np.int64)
    hi = np.where(hidden, hi_default, v).astype(np.int64)
    return lo, hi


def _sum_rule(part_lo, part_hi, tot_lo, tot_hi, axis: int):
    """One pass of ``sum(parts along axis) == total`` on ranges; returns narrowed copies."""
    s_lo, s_hi = part_lo.sum(axis=axis), part_hi.sum(axis=axis)
    tot_lo, tot_hi = np.maximum(tot_lo, s_lo), np.minimum(tot_hi, s_hi)
    t_lo, t_hi = np.expand_dims(tot_lo, axis), np.expand_dims(tot_hi, axis)
    o_lo, o_hi = np.expand_dims(s_lo, axis) - part_lo, np.expand_dims(s_hi, axis) - part_hi
    part_lo = np.maximum(part_lo, t_lo - o_hi)
    part_hi = np.minimum(part_hi, t_hi - o_lo)
    return part_lo, part_hi, tot_lo, tot_hi


def published_ranges(cube: Cube, attrs: tuple[int, ...], min_cell: int,
                     small: np.ndarray) -> Ranges:
    """Ranges of every count of the published table of attribute set ``attrs`` of ``cube``
    (after :func:`fairaudit.suppression.protect_cube`), from its published entries only.

    ``small`` (one flag per group, flattened like the table's rows) marks the groups the report
    announces as too small to judge (fewer than ``min_cell`` rows); the others present have at
    least ``min_cell``."""
    each, tot = Spec(attrs, "each"), Spec(attrs, "all")
    L = cube.X.shape[-1]
    n = int(cube.X.sum())  # the number of rows: always published
    E = cube.values[each].reshape(-1, L)
    c_lo, c_hi = _known(E, cube.supp[each].reshape(-1, L), 0, n)
    A = cube.values[tot].reshape(-1)
    a_hidden = cube.supp[tot].reshape(-1)
    # what the report says of every group anyway: judged (>= min_cell) or too small (< min_cell)
    small = np.asarray(small, dtype=bool).reshape(-1)
    a_lo, a_hi = _known(A, a_hidden, np.where(small, 1, min_cell), np.where(small, min_cell - 1, n))
    noise = cube.noise
    clean = Spec(attrs, "clean")
    if noise is not None and clean in cube.values:
        cl_lo, cl_hi = _known(cube.values[clean].reshape(-1), cube.supp[clean].reshape(-1), 0, n)
    else:
        cl_lo, cl_hi = a_lo.copy(), a_hi.copy()
    sizes = Spec((), "each")
    z_lo, z_hi = _known(cube.values[sizes], cube.supp[sizes], 1, n)
    cols = np.arange(L) != noise if noise is not None else np.ones(L, dtype=bool)
    n_arr = np.array(n)
    for _ in range(_MAX_SWEEPS):
        before = (c_lo.sum(), c_hi.sum(), a_lo.sum(), a_hi.sum(), cl_lo.sum(), cl_hi.sum(),
                  z_lo.sum(), z_hi.sum())
        c_lo, c_hi, a_lo, a_hi = _sum_rule(c_lo, c_hi, a_lo, a_hi, axis=1)
        if noise is not None:
            p_lo, p_hi, cl_lo, cl_hi = _sum_rule(c_lo[:, cols], c_hi[:, cols], cl_lo, cl_hi, 1)
            c_lo[:, cols], c_hi[:, cols] = p_lo, p_hi
            # the noise cell is the group's total minus its clean total
            c_lo[:, noise] = np.maximum(c_lo[:, noise], a_lo - cl_hi)
            c_hi[:, noise] = np.minimum(c_hi[:, noise], a_hi - cl_lo)
            a_lo = np.maximum(a_lo, cl_lo + c_lo[:, noise])
            a_hi = np.minimum(a_hi, cl_hi + c_hi[:, noise])
            cl_lo = np.maximum(cl_lo, a_lo - c_hi[:, noise])
            cl_hi = np.minimum(cl_hi, a_hi - c_lo[:, noise])
        else:
            cl_lo, cl_hi = a_lo, a_hi
        c_lo, c_hi, z_lo, z_hi = _sum_rule(c_lo, c_hi, z_lo, z_hi, axis=0)
        a_lo, a_hi, _, _ = _sum_rule(a_lo, a_hi, n_arr, n_arr, axis=0)
        z_lo, z_hi, _, _ = _sum_rule(z_lo, z_hi, n_arr, n_arr, axis=0)
        after = (c_lo.sum(), c_hi.sum(), a_lo.sum(), a_hi.sum(), cl_lo.sum(), cl_hi.sum(),
                 z_lo.sum(), z_hi.sum())
        if after == before:
            break
    if noise is None:
        cl_lo, cl_hi = a_lo, a_hi
    return Ranges(c_lo, c_hi, a_lo, a_hi, cl_lo, cl_hi, z_lo, z_hi, noise, n)


def table_box(r: Ranges, rows: Sequence[int], clusters: Sequence[int] | None,
              ordinal: bool = False) -> TableBox | None:
    """The box of the table a result was computed on: the judged groups ``rows`` (indices into
    the ranges' groups, in the table's order) and the cluster levels ``clusters`` where it has
    members (``None``: work them out; ``None`` is returned when that is not certain)."""
    rows = list(rows)
    L = r.cells_lo.shape[1]
    clean = [k for k in range(L) if k != r.noise]
    lo, hi = r.cells_lo[rows][:, clean], r.cells_hi[rows][:, clean]
    other = np.ones(r.cells_lo.shape[0], dtype=bool)
    other[rows] = False
    ccl = r.cells_lo[other][:, clean].sum(axis=0)
    cch = r.cells_hi[other][:, clean].sum(axis=0)
    cols_lo = np.maximum(lo.sum(axis=0), r.sizes_lo[clean] - cch)
    cols_hi = np.minimum(hi.sum(axis=0), r.sizes_hi[clean] - ccl)
    if clusters is None:
        present = cols_hi > 0
        if np.any(present & (cols_lo < 1)):
            return None  # whether such a cluster is in the table depends on hidden counts
        keep = np.flatnonzero(present)
    else:
        keep = np.array([clean.index(k) for k in clusters], dtype=np.int64)
        if np.any(cols_hi[keep] < 1):
            return None
    rows_lo, rows_hi = r.clean_lo[rows], r.clean_hi[rows]
    if np.any(rows_hi < 1):
        return None
    noise_lo = noise_hi = 0
    if r.noise is not None:
        noise_lo = int(r.cells_lo[rows, r.noise].sum())
        noise_hi = int(r.cells_hi[rows, r.noise].sum())
    return TableBox(
        lo[:, keep], hi[:, keep], np.maximum(rows_lo, 1), rows_hi,
        np.maximum(cols_lo[keep], 1), cols_hi[keep], 0, r.n, noise_lo, noise_hi, ordinal,
    ).tightened()
