"""The one group-by behind every counting metric, its marginals, and bootstrap replicates.

A :class:`JointTable` holds the row counts of every (cluster, group of each sensitive attribute)
cell. Every attribute's group x cluster table — each attribute alone and the intersection — is a
marginal of it, so one pass over the data (a streaming polars group-by for columns in the input,
or a group-by of the in-memory rows for a clusterer's labels) is all counting auditors need.
Tables of partitions add up: the joint table of a dataset is the sum of its partitions' tables.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from fairaudit.core.data import INTERSECTION_SEP, GroupTable
from fairaudit.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

LABEL_KEY = "__fairaudit_label__"


@dataclass(frozen=True)
class JointTable:
    """Counts per (cluster, group codes) cell; noise cells have cluster -1."""

    attributes: tuple[str, ...]
    categories: tuple[tuple[str, ...], ...]
    """Group names per attribute, indexed by code (sorted, or the declared ordinal order)."""
    cluster: np.ndarray
    """(m,) int64 cluster label per cell."""
    codes: np.ndarray
    """(m, a) int64 group code per attribute per cell."""
    counts: np.ndarray
    """(m,) int64 rows per cell."""
    ordinal: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    null_rows: int = 0
    """Rows left out because a sensitive value or the label was null."""
    cluster_names: tuple[str, ...] | None = None
    """For a labels column of names (strings, categories): the name of cluster id ``i``; ids
    follow the sorted names, and the name ``"-1"`` is noise. ``None`` for integer labels."""

    # ------------------------------------------------------------------ summaries
    @property
    def n(self) -> int:
        return int(self.counts.sum())

    @property
    def attribute_names(self) -> tuple[str, ...]:
        if len(self.attributes) < 2:
            return self.attributes
        return self.attributes + (INTERSECTION_SEP.join(self.attributes),)

    def group_index(self, attribute: str) -> tuple[np.ndarray, tuple[str, ...]]:
        """Per-cell group index for ``attribute`` (a column or the ``a|b`` intersection)."""
        if attribute in self.attributes:
            j = self.attributes.index(attribute)
            return self.codes[:, j], self.categories[j]
        if attribute != INTERSECTION_SEP.join(self.attributes):
            raise KeyError(attribute)
        uniq, inv = np.unique(self.codes, axis=0, return_inverse=True)
        names = tuple(
            INTERSECTION_SEP.join(self.categories[j][int(c)] for j, c in enumerate(row))
            for row in uniq
        )
        return inv.reshape(-1), names

    def group_sizes(self, attribute: str) -> dict[str, int]:
        """Rows per group (noise included), for every group present."""
        idx, names = self.group_index(attribute)
        sizes = np.bincount(idx, weights=self.counts, minlength=len(names)).astype(np.int64)
        return {names[i]: int(sizes[i]) for i in range(len(names)) if sizes[i] > 0}

    def table(self, attribute: str) -> GroupTable:
        """The group x cluster table of ``attribute`` (noise apart; empty rows/columns dropped)."""
        gidx, names, clean, clusters, kidx = self._layout(attribute)
        t = np.zeros((len(names), len(clusters)), dtype=np.int64)
        np.add.at(t, (gidx[clean], kidx[clean]), self.counts[clean])
        noise = np.zeros(len(names), dtype=np.int64)
        np.add.at(noise, gidx[~clean], self.counts[~clean])
        keep_g = t.sum(axis=1) > 0  # a group whose rows are all noise has no place in the table
        return GroupTable(
            attribute=attribute,
            groups=tuple(n for n, keep in zip(names, keep_g, strict=True) if keep),
            clusters=tuple(int(c) for c in clusters),
            counts=t[keep_g],
            noise=noise[keep_g],
            ordinal=attribute in self.ordinal,
        )

    def tables(self) -> dict[str, GroupTable]:
        return {a: self.table(a) for a in self.attribute_names}

    def _layout(self, attribute: str):
        gidx, names = self.group_index(attribute)
        clean = self.cluster >= 0
        clusters = np.unique(self.cluster[clean])
        kidx = np.searchsorted(clusters, self.cluster)
        return gidx, names, clean, clusters, kidx

    def bootstrap_counts(self, attribute: str, resampled: np.ndarray,
                         groups: Sequence[int] | None = None,
                         clusters: Sequence[int] | None = None) -> np.ndarray:
        """Marginalise resampled joint cell counts (B x m) into (B x groups x clusters) tables,
        laid out like :meth:`table` (same group and cluster order).

        ``groups`` / ``clusters`` (positions in :meth:`table`'s rows and columns, increasing)
        keep only those rows and columns, as ``out[:, groups][:, :, clusters]`` would, without
        building the whole stack first.

        The stack is in Fortran order (the replicate index varies fastest in memory): the
        layout auditors have always been given (it is what that fancy-index slicing returns).
        numpy's sums follow the memory layout, so the metrics' values over the replicates, and
        the intervals taken from them, are the same to the last bit only in the same layout."""
        gidx, names, clean, all_clusters, kidx = self._layout(attribute)
        # the rows of table(): groups with a non-noise row, in name order
        kept = np.bincount(gidx[clean], weights=self.counts[clean], minlength=len(names)) > 0
        G, K = int(kept.sum()), len(all_clusters)
        g_of_name = np.where(kept, np.cumsum(kept) - 1, -1).astype(np.int64)
        g_of_cell = g_of_name[gidx] if gidx.size else np.zeros(0, np.int64)
        k_of_cell = np.where(clean, kidx, -1)
        if groups is not None:
            sel = np.full(G + 1, -1, dtype=np.int64)
            sel[np.asarray(groups, dtype=np.int64)] = np.arange(len(groups))
            g_of_cell, G = sel[g_of_cell], len(groups)  # -1 (not kept) maps to -1
        if clusters is not None:
            sel = np.full(K + 1, -1, dtype=np.int64)
            sel[np.asarray(clusters, dtype=np.int64)] = np.arange(len(clusters))
            k_of_cell, K = sel[k_of_cell], len(clusters)
        ok = clean & (g_of_cell >= 0) & (k_of_cell >= 0)
        B = resampled.shape[0]
        # built as (clusters x groups) rows of B replicates each: C order of that is Fortran
        # order of (B x groups x clusters)
        out = np.zeros((K * G, B), dtype=np.int64)
        row = k_of_cell[ok] * G + g_of_cell[ok]
        if row.size:
            # several joint cells fall into one table cell (other attributes' groups): sum
            # them in integers, so the counts are exact
            order = np.argsort(row, kind="stable")
            uniq, start = np.unique(row[order], return_index=True)
            cells = np.ascontiguousarray(np.asarray(resampled[:, ok], dtype=np.int64).T)[order]
            out[uniq] = cells if uniq.size == row.size else np.add.reduceat(cells, start, axis=0)
        return out.reshape(K, G, B).transpose(2, 1, 0)


class BootstrapReplicates:
    """Multinomial bootstrap replicates of one joint table (:func:`resample_joint`, B x cells)
    and, built on first use and then shared by every auditor of the labelling, their group x
    cluster tables per attribute (:meth:`JointTable.bootstrap_counts`). The tables are
    read-only: an auditor that changed one would change it for the next.

    :meth:`per_attribute` draws each attribute's replicates from its own random stream instead
    (the host's way): an attribute's intervals then do not depend on which other attributes
    are audited beside it."""

    def __init__(self, joint: JointTable, resampled: np.ndarray | None,
                 streams: Callable[[str], np.random.Generator] | None = None,
                 n_boot: int | None = None) -> None:
        self.joint = joint
        self.cells = resampled
        self._streams = streams
        self._n_boot = int(resampled.shape[0]) if resampled is not None else int(n_boot or 0)
        self._tables: dict[tuple[Any, ...], np.ndarray] = {}

    @classmethod
    def per_attribute(cls, joint: JointTable, n_boot: int, seed: int,
                      labelling: str) -> BootstrapReplicates:
        """Replicates whose stream for ``attribute`` is seeded by (``seed``, the labelling's
        name, the attribute's name) alone (:func:`attribute_stream`)."""
        return cls(joint, None, lambda a: attribute_stream(seed, labelling, a), n_boot)

    @property
    def n_boot(self) -> int:
        return self._n_boot

    def tables(self, attribute: str, groups: Sequence[int] | None = None,
               clusters: Sequence[int] | None = None) -> np.ndarray:
        """(B x groups x clusters) replicates of ``attribute``'s table, rows and columns as in
        :meth:`JointTable.bootstrap_counts`."""
        key = (attribute, None if groups is None else tuple(groups),
               None if clusters is None else tuple(clusters))
        if key not in self._tables:
            cells = self.cells
            if cells is None:
                assert self._streams is not None
                cells = resample_attribute(self.joint, attribute, self._n_boot,
                                           self._streams(attribute))
            arr = self.joint.bootstrap_counts(attribute, cells, groups, clusters)
            arr.flags.writeable = False
            self._tables[key] = arr
        return self._tables[key]


def joint_from_frame(
    frame: pl.DataFrame | pl.LazyFrame,
    *,
    label: str | None,
    sensitive: Sequence[str],
    ordinal: Mapping[str, Sequence[str]] | None = None,
    labels_array: np.ndarray | None = None,
) -> JointTable:
    """Count (label, sensitive...) cells with one group-by.

    ``label`` names an integer column of ``frame``; ``labels_array`` gives labels for an in-memory
    frame instead; with neither, every row is cluster 0 (group sizes only). Null keys are counted
    in ``null_rows`` and left out.
    """
    import polars as pl

    ordinal = dict(ordinal or {})
    lf = frame.lazy() if isinstance(frame, pl.DataFrame) else frame
    if labels_array is not None:
        if not isinstance(frame, pl.DataFrame):
            raise TypeError("labels_array needs an in-memory DataFrame")
        lf = frame.select(list(sensitive)).with_columns(
            pl.Series(LABEL_KEY, np.asarray(labels_array, dtype=np.int64))
        ).lazy()
        key = LABEL_KEY
    elif label is not None:
        key = label
    else:
        lf = lf.select(list(sensitive)).with_columns(pl.lit(0, dtype=pl.Int64).alias(LABEL_KEY))
        key = LABEL_KEY
    agg = (
        lf.group_by([key, *sensitive])
        .agg(pl.len().alias("__n__"))
        .collect(engine="streaming")
    )
    return _joint_from_counts(agg, key=key, label=label, sensitive=sensitive, ordinal=ordinal)


def joint_from_slices(
    frame: pl.LazyFrame,
    n_rows: int,
    *,
    label: str | None,
    sensitive: Sequence[str],
    ordinal: Mapping[str, Sequence[str]] | None = None,
    slice_rows: int = 4_000_000,
    on_rows: Callable[[int], None] | None = None,
) -> JointTable:
    """:func:`joint_from_frame` of a lazy input of ``n_rows`` rows counted slice by slice,
    calling ``on_rows(rows read so far)`` after each slice. The same table as one group-by: the
    slices' cell counts are added, then put in the canonical order. Meant for Parquet, where a
    slice reads only its row groups (a CSV slice would re-read the file from its start)."""
    import polars as pl

    key = label if label is not None else LABEL_KEY
    lf = frame.select(list(dict.fromkeys([*filter(None, [label]), *sensitive])))
    if label is None:
        lf = lf.with_columns(pl.lit(0, dtype=pl.Int64).alias(LABEL_KEY))
    parts: list[pl.DataFrame] = []
    for start in range(0, max(n_rows, 1), slice_rows):
        parts.append(lf.slice(start, slice_rows).group_by([key, *sensitive])
                     .agg(pl.len().alias("__n__")).collect(engine="streaming"))
        if on_rows is not None:
            on_rows(min(n_rows, start + slice_rows))
    agg = (pl.concat(parts, how="vertical").group_by([key, *sensitive])
           .agg(pl.col("__n__").sum()))
    return _joint_from_counts(agg, key=key, label=label, sensitive=sensitive,
                              ordinal=dict(ordinal or {}))


def joint_from_counts(agg: pl.DataFrame, *, key: str, label: str | None,
                      sensitive: Sequence[str], ordinal: Mapping[str, Sequence[str]]
                      ) -> JointTable:
    """The :class:`JointTable` of a group-by computed elsewhere (a database's ``GROUP BY``):
    one row per cell with the columns ``key`` (the label, or :data:`LABEL_KEY`), the sensitive
    columns and ``__n__`` (its rows); null keys are counted in ``null_rows``. The same table as
    :func:`joint_from_frame` of those rows."""
    return _joint_from_counts(agg, key=key, label=label, sensitive=sensitive, ordinal=ordinal)


def _joint_from_counts(agg: pl.DataFrame, *, key: str, label: str | None,
                       sensitive: Sequence[str], ordinal: Mapping[str, Sequence[str]]
                       ) -> JointTable:
    """The :class:`JointTable` of the group-by's cells (``key``, sensitive..., ``__n__``)."""
    import polars as pl

    null_mask = pl.any_horizontal([pl.col(c).is_null() for c in [key, *sensitive]])
    null_rows = int(agg.filter(null_mask).get_column("__n__").sum() or 0)
    agg = agg.filter(~null_mask)
    cluster_col = agg.get_column(key)
    names: tuple[str, ...] | None = None
    cluster: np.ndarray | None = None
    if agg.height == 0:
        cluster = np.zeros(0, dtype=np.int64)  # no rows: the caller names the cause
    elif _is_named(cluster_col.dtype):
        names = label_names(cluster_col)
        cluster = label_codes(cluster_col, names)  # int64 (no Series from numpy: numpy.ma)
    elif not cluster_col.dtype.is_integer():
        if cluster_col.dtype.is_float():
            vals = cluster_col.to_numpy()
            if not np.all(np.isfinite(vals)) or not np.all(vals == np.round(vals)):
                raise InputError(
                    f"labels column {label!r} has non-integral values; expected integer "
                    "cluster ids (-1 = noise)"
                )
            cluster_col = cluster_col.cast(pl.Int64)
        else:
            raise InputError(
                f"labels column {label!r} has type {cluster_col.dtype}; expected integer cluster "
                "ids (-1 = noise) or cluster names (strings)"
            )
    if cluster is None:
        cluster = cluster_col.cast(pl.Int64).to_numpy()
    if (cluster < -1).any():
        raise InputError(
            f"labels column {label!r} has negative ids other than -1 (noise): "
            f"{sorted(set(cluster[cluster < -1].tolist()))[:5]}"
        )
    codes, cats = [], []
    for s in sensitive:
        values = agg.get_column(s).cast(pl.String).to_numpy().astype(str)
        order = ordinal.get(s)
        if order:
            order = tuple(str(v) for v in order)
            unknown = sorted(set(values) - set(order))
            if unknown:
                raise InputError(
                    f"sensitive column {s!r} has values {unknown[:5]} missing from its declared "
                    f"ordinal order {list(order)}"
                )
            lookup = {v: i for i, v in enumerate(order)}
            codes.append(np.array([lookup[v] for v in values], dtype=np.int64))
            cats.append(order)
        else:
            uniq, inv = np.unique(values, return_inverse=True)
            codes.append(inv.astype(np.int64).reshape(-1))
            cats.append(tuple(str(u) for u in uniq))
    counts = agg.get_column("__n__").cast(pl.Int64).to_numpy()
    code_arr = (
        np.column_stack(codes).astype(np.int64) if codes else np.zeros((len(counts), 0), np.int64)
    )
    # canonical cell order so the same data always gives the same table
    order_idx = np.lexsort((*code_arr.T[::-1], cluster)) if len(counts) else np.arange(0)
    return JointTable(
        attributes=tuple(sensitive),
        categories=tuple(cats),
        cluster=cluster[order_idx],
        codes=code_arr[order_idx],
        counts=counts[order_idx],
        ordinal={k: tuple(str(x) for x in v) for k, v in ordinal.items()},
        null_rows=null_rows,
        cluster_names=names,
    )


NOISE_NAME = "-1"
"""In a labels column of names, this name marks noise (as the id -1 does in integer labels)."""


def _is_named(dtype: pl.DataType) -> bool:
    import polars as pl

    return dtype == pl.String or isinstance(dtype, pl.Categorical | pl.Enum) or dtype == pl.Boolean


def label_names(values: pl.Series) -> tuple[str, ...]:
    """The sorted distinct cluster names of a labels column of names (noise and nulls apart)."""
    import polars as pl

    uniq = values.cast(pl.String).drop_nulls().unique().to_list()
    return tuple(sorted(str(v) for v in uniq if str(v) != NOISE_NAME))


def label_codes(values: pl.Series, names: Sequence[str]) -> np.ndarray:
    """Integer ids (int64) of a labels column of names: the position in ``names``; the name
    ``"-1"`` is noise (-1). Nulls become -2 (callers filter them first)."""
    import polars as pl

    lookup = {n: i for i, n in enumerate(names)}
    lookup[NOISE_NAME] = -1
    mapped = values.cast(pl.String).replace_strict(lookup, default=-2, return_dtype=pl.Int64)
    return mapped.to_numpy().astype(np.int64)


def resample_joint(joint: JointTable, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Multinomial bootstrap of the non-noise cells (noise cells kept as observed): (B x m)."""
    counts = joint.counts.astype(np.int64)
    clean = joint.cluster >= 0
    out = np.tile(counts, (n_boot, 1))
    n = int(counts[clean].sum())
    if n > 0:
        p = counts[clean] / n
        out[:, clean] = rng.multinomial(n, p, size=n_boot)
    return out


def _name_key(name: str) -> int:
    """A stable 64-bit key of a name (Python's hash() is salted per process)."""
    import hashlib

    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "little")


def attribute_stream(seed: int, labelling: str, attribute: str) -> np.random.Generator:
    """The bootstrap stream of one attribute of one labelling: a child of the run's seed keyed
    by both names, so it does not change when other attributes or labellings are added."""
    ss = np.random.SeedSequence(int(seed), spawn_key=(_name_key(labelling), _name_key(attribute)))
    return np.random.default_rng(ss)


def resample_attribute(joint: JointTable, attribute: str, n_boot: int,
                       rng: np.random.Generator) -> np.ndarray:
    """Multinomial bootstrap of ``attribute``'s own (cluster, group) table, as B x joint cells
    that :meth:`JointTable.bootstrap_counts` marginalises back to it: each (cluster, group)
    class's count sits on the first joint cell of the class. The classes are drawn in the
    order (cluster, group index), which does not depend on the other attributes in the joint
    table; noise cells are kept as observed, as :func:`resample_joint` does."""
    gidx, _ = joint.group_index(attribute)
    counts = joint.counts.astype(np.int64)
    keys, first, inv = np.unique(np.column_stack([joint.cluster, gidx]), axis=0,
                                 return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    per_class = np.bincount(inv, weights=counts, minlength=len(keys)).astype(np.int64)
    out = np.zeros((n_boot, counts.size), dtype=np.int64)
    clean = keys[:, 0] >= 0
    out[:, first[~clean]] = per_class[~clean]
    n = int(per_class[clean].sum())
    if n > 0:
        out[:, first[clean]] = rng.multinomial(n, per_class[clean] / n, size=n_boot)
    return out


def sum_joint_tables(tables: Sequence[JointTable]) -> JointTable:
    """The joint table of the union of disjoint row sets: cell counts added by (cluster, group
    names). Partitions may have seen different groups; the categories of the sum are the union
    (sorted, or the declared ordinal order)."""
    import polars as pl

    if not tables:
        raise ValueError("sum_joint_tables needs at least one table")
    tables, names = _common_cluster_names(tables)
    first = tables[0]
    attrs = first.attributes
    frames = []
    for t in tables:
        if t.attributes != attrs:
            raise ValueError(f"joint tables over different attributes: {t.attributes} vs {attrs}")
        cols: dict[str, Any] = {LABEL_KEY: t.cluster, "__n__": t.counts}
        for j, a in enumerate(attrs):
            cats = np.asarray(t.categories[j], dtype=object)
            cols[a] = cats[t.codes[:, j]] if len(t.counts) else np.zeros(0, dtype=object)
        frames.append(pl.DataFrame(cols, schema={LABEL_KEY: pl.Int64, "__n__": pl.Int64,
                                                 **{a: pl.String for a in attrs}}))
    agg = pl.concat(frames).group_by([LABEL_KEY, *attrs]).agg(pl.col("__n__").sum())
    cluster = agg.get_column(LABEL_KEY).to_numpy()
    codes, cats = [], []
    for a in attrs:
        values = agg.get_column(a).to_numpy().astype(str)
        order = first.ordinal.get(a)
        if order:
            lookup = {v: i for i, v in enumerate(order)}
            codes.append(np.array([lookup[v] for v in values], dtype=np.int64))
            cats.append(tuple(order))
        else:
            uniq, inv = np.unique(values, return_inverse=True)
            codes.append(inv.astype(np.int64).reshape(-1))
            cats.append(tuple(str(u) for u in uniq))
    counts = agg.get_column("__n__").to_numpy().astype(np.int64)
    code_arr = (np.column_stack(codes).astype(np.int64) if codes
                else np.zeros((len(counts), 0), np.int64))
    order_idx = np.lexsort((*code_arr.T[::-1], cluster)) if len(counts) else np.arange(0)
    return JointTable(
        attributes=attrs,
        categories=tuple(cats),
        cluster=cluster[order_idx].astype(np.int64),
        codes=code_arr[order_idx],
        counts=counts[order_idx],
        ordinal=dict(first.ordinal),
        null_rows=sum(t.null_rows for t in tables),
        cluster_names=names,
    )


def _common_cluster_names(tables: Sequence[JointTable]
                          ) -> tuple[Sequence[JointTable], tuple[str, ...] | None]:
    """Partitions of a labels column of names number their clusters by their own names: renumber
    every table by the union of the names (sorted) so the ids add up."""
    import dataclasses

    if all(t.cluster_names is None for t in tables):
        return tables, None
    union = tuple(sorted({n for t in tables for n in (t.cluster_names or ())}))
    pos = {n: i for i, n in enumerate(union)}
    out = []
    for t in tables:
        own = t.cluster_names or ()
        lookup = np.array([pos[n] for n in own] + [-1], dtype=np.int64)  # index -1 -> noise
        ids = np.where(t.cluster >= 0, lookup[np.where(t.cluster >= 0, t.cluster, -1)], -1)
        out.append(dataclasses.replace(t, cluster=ids.astype(np.int64), cluster_names=union))
    return out, union
