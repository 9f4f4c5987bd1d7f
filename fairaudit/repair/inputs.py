"""The repair's inputs: the table as the audit reads it (for the groups and segments), the
table as it is (for the output: every row and column unchanged), and the counts problem.

Rows with a null sensitive value or label, and noise (label -1), are not moved and not
counted, as the audit leaves them out; they keep their label in the new column.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

import numpy as np

from fairaudit.errors import ConfigError, InputError
from fairaudit.repair.problem import CountProblem, Scope, Target
from fairaudit.repair.spec import RepairSpec

__all__ = ["Rows", "Source", "build_problem", "load_rows", "open_source"]


@dataclass(frozen=True)
class Source:
    """Where the rows come from."""

    analysis: Any
    """polars LazyFrame as the audit reads it (null markers applied)."""
    raw: Any
    """polars LazyFrame of the rows as they are (CSV: every cell as text)."""
    path: str | None
    """The input's path (None: a table in memory)."""
    format: str | None
    """``parquet`` or ``csv`` (None: in memory; the output's suffix decides)."""
    separator: str = ","

    @property
    def name(self) -> str:
        from fairaudit.core.io import IN_MEMORY

        return self.path or IN_MEMORY


def open_source(spec: RepairSpec, data: Any, host: Any) -> Source:
    """Open ``data`` (a path, or a table in memory) twice: as the audit reads it and raw."""
    import polars as pl

    from fairaudit.core.io import as_polars, resolve_input, with_null_markers

    data = as_polars(data)
    options = dict(spec.reader_options)
    if isinstance(data, pl.DataFrame | pl.LazyFrame):
        lf = data.lazy()
        return Source(with_null_markers(lf, options.get("null_values", ())), lf, None, None)
    if data is None:
        raise ConfigError("no input data: give DATA (a Parquet or CSV file)")
    inp = resolve_input(data)
    analysis = host.read_table(data, options)
    if analysis is None:
        raise InputError(f"{data}: no installed reader handles this input")
    if inp.format == "parquet":
        raw = pl.scan_parquet([str(f) for f in inp.files], hive_partitioning=True)
        return Source(analysis, raw, data, "parquet")
    if len(inp.files) != 1:
        raise InputError(f"{data}: fairaudit repair reads one CSV file (this input is "
                         f"{len(inp.files)} files); give one file, or Parquet")
    path = inp.files[0]
    sep = options.get("separator") or ("\t" if path.suffix.lower() == ".tsv" else ",")
    raw = pl.scan_csv(str(path), separator=sep, infer_schema=False)
    return Source(analysis, raw, data, "csv", sep)


@dataclass(frozen=True)
class Rows:
    """The eligible rows' groups and segments, and what the problem is built from."""

    n_rows: int
    eligible: np.ndarray
    """(n,) bool: non-null sensitive values and label, label not noise."""
    cell: np.ndarray
    """(n_e,) joint cell of each eligible row."""
    segment: np.ndarray
    """(n_e,) segment index (0..K-1) of each eligible row."""
    cell_codes: np.ndarray
    """(S, A) group code of each attribute for each joint cell."""
    categories: tuple[tuple[str, ...], ...]
    segments: tuple[str, ...]
    """Segment names (labels as text)."""
    features: np.ndarray | None
    """(n_e, p) float64 feature values of the eligible rows."""
    n_null: int
    n_noise: int

    @property
    def counts(self) -> np.ndarray:
        S, K = self.cell_codes.shape[0], len(self.segments)
        return np.bincount(self.cell * K + self.segment, minlength=S * K).reshape(S, K)


def _missing(columns: list[str], wanted: list[tuple[str, str]], source: str) -> None:
    for col, what in wanted:
        if col not in columns:
            close = difflib.get_close_matches(col, columns, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise InputError(f"{what} {col!r}: no such column in {source}{hint}; columns: "
                             f"{', '.join(columns[:20])}{' ...' if len(columns) > 20 else ''}")


def load_rows(spec: RepairSpec, src: Source) -> Rows:
    """Read the sensitive, labels and feature columns once; check them; code the rows."""
    import polars as pl

    from fairaudit.core.contingency import joint_from_frame, label_codes

    schema = src.analysis.collect_schema()
    columns = list(schema.names())
    _missing(columns, [(c, "sensitive column") for c in spec.sensitive]
             + [(spec.labels, "labels column")]
             + [(c, "feature column") for c in spec.features], src.name)
    if spec.new_column in columns:
        raise ConfigError(f"{spec.label('column')} {spec.new_column}: {src.name} already has a "
                          f"column of that name; name the new one with {spec.label('column')}")
    for c in spec.features:
        if not schema[c].is_numeric():
            raise InputError(f"feature column {c!r} has type {schema[c]}; the cost of a move is "
                             "a distance on numeric features: give numeric columns")
    frame = src.analysis.select([spec.labels, *spec.sensitive, *spec.features]).collect()
    joint = joint_from_frame(frame, label=spec.labels, sensitive=list(spec.sensitive))
    lab = frame.get_column(spec.labels)
    if joint.cluster_names is not None:
        ids = label_codes(lab, joint.cluster_names)
    else:
        if lab.dtype.is_float():
            lab = lab.cast(pl.Int64, strict=False)
        ids = lab.fill_null(-2).cast(pl.Int64).to_numpy()
    null = lab.is_null().to_numpy() if joint.cluster_names is None else ids == -2
    codes = []
    for j, s in enumerate(spec.sensitive):
        col = frame.get_column(s)
        lookup = {name: i for i, name in enumerate(joint.categories[j])}
        code = col.cast(pl.String).replace_strict(lookup, default=-1,
                                                  return_dtype=pl.Int64).to_numpy()
        null |= col.is_null().to_numpy()
        codes.append(np.where(col.is_null().to_numpy(), -1, code))
    codes_arr = np.column_stack(codes).astype(np.int64)
    eligible = ~null & (ids >= 0)
    n_noise = int((~null & (ids == -1)).sum())
    if not eligible.any():
        raise InputError(f"{src.name}: no row has a segment and every sensitive value (rows "
                         "with a null or noise label are not repaired)")
    seg_ids = ids[eligible]
    uniq_seg = np.unique(seg_ids)
    segment = np.searchsorted(uniq_seg, seg_ids).astype(np.int64)
    if uniq_seg.size < 2:
        raise InputError(f"labels column {spec.labels!r}: one segment only; a repair moves "
                         "people between segments")
    cell_codes, cell = np.unique(codes_arr[eligible], axis=0, return_inverse=True)
    names = (tuple(joint.cluster_names[i] for i in uniq_seg) if joint.cluster_names is not None
             else tuple(str(int(i)) for i in uniq_seg))
    feats = None
    if spec.features:
        X = frame.select(list(spec.features)).cast(pl.Float64).to_numpy()[eligible]
        bad = ~np.isfinite(X)
        if bad.any():
            j = int(np.flatnonzero(bad.any(axis=0))[0])
            raise InputError(f"feature column {spec.features[j]!r}: {int(bad[:, j].sum()):,} "
                             "missing or non-finite values among the rows to repair; the "
                             "distance of a move needs every value (fill or drop them first)")
        feats = X
    return Rows(int(frame.height), eligible, cell.reshape(-1).astype(np.int64), segment,
                cell_codes.astype(np.int64), joint.categories, names, feats,
                int(null.sum()), n_noise)


def intersection_name(spec: RepairSpec) -> str | None:
    from fairaudit.core.data import INTERSECTION_SEP

    return INTERSECTION_SEP.join(spec.sensitive) if len(spec.sensitive) > 1 else None


def _scope(name: str, group_of_cell: np.ndarray, group_names: tuple[str, ...],
           n_cell: np.ndarray, min_cell: int) -> Scope:
    sizes = np.bincount(group_of_cell, weights=n_cell, minlength=len(group_names))
    keep = sizes >= min_cell
    remap = np.full(len(group_names), -1, dtype=np.int64)
    remap[keep] = np.arange(int(keep.sum()))
    present_small = tuple(group_names[g] for g in np.flatnonzero(~keep & (sizes > 0)))
    return Scope(name, remap[group_of_cell],
                 tuple(group_names[g] for g in np.flatnonzero(keep)), present_small)


def build_problem(spec: RepairSpec, rows: Rows) -> tuple[CountProblem, list[str]]:
    """The counts problem (attribute tables, targets resolved per attribute) and notes."""
    from fairaudit.core.data import INTERSECTION_SEP

    N = rows.counts
    n_cell = N.sum(axis=1).astype(float)
    notes: list[str] = []
    scopes = {}
    for j, a in enumerate(spec.sensitive):
        scopes[a] = _scope(a, rows.cell_codes[:, j], rows.categories[j], n_cell, spec.min_cell)
    inter = intersection_name(spec)
    if inter is not None:
        names = tuple(INTERSECTION_SEP.join(rows.categories[j][int(c)]
                                            for j, c in enumerate(row))
                      for row in rows.cell_codes)
        scopes[inter] = _scope(inter, np.arange(N.shape[0]), names, n_cell, spec.min_cell)
    targets: list[Target] = []
    specific = {(t.metric, t.attribute) for t in spec.targets if t.attribute is not None}
    for t in spec.targets:
        if t.attribute is None:  # every attribute without a target of its own for the metric
            attrs = [a for a in list(spec.sensitive) + ([inter] if spec.intersection and inter
                                                        else [])
                     if (t.metric, a) not in specific]
        elif t.attribute in scopes:
            attrs = [t.attribute]
        else:
            valid = ", ".join(scopes)
            raise ConfigError(f"{t.source or spec.label('target')}: {t.attribute!r} is not a "
                              f"sensitive attribute here; expected one of {valid}")
        for a in attrs:
            sc = scopes[a]
            if len(sc.groups) < 2:
                notes.append(f"{t.metric} on {a}: fewer than two groups with at least "
                             f"{spec.min_cell} people; the audit does not judge it, so the "
                             "repair does not constrain it")
                continue
            targets.append(Target(t.metric, float(t.value), a))
    used = {t.attribute for t in targets}
    for a, sc in scopes.items():
        if a in used and sc.left_out:
            notes.append(f"{a}: groups with fewer than {spec.min_cell} people are left out of "
                         f"the targets, as the audit leaves them out as too small to judge: "
                         f"{', '.join(sc.left_out[:8])}"
                         + (f" and {len(sc.left_out) - 8} more" if len(sc.left_out) > 8 else ""))
    keep = [sc for a, sc in scopes.items() if a in spec.sensitive or a in used]
    problem = CountProblem(N, tuple(keep), tuple(targets), spec.keep_sizes)
    return problem, notes
