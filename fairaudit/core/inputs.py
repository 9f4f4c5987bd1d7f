"""The input side of a run: column roles from the chain and the schema, the checks on the
groups that every audit needs, and the in-memory rows (seeded sample, ID-like and non-finite
columns, rows the feature-based steps cannot use).
"""


from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from fairaudit.core.contingency import (
    JointTable,
)
from fairaudit.core.data import ROW_ID, AuditData, ColumnRoles
from fairaudit.core.spec import ChainSpec
from fairaudit.errors import ConfigError, InputError

log = logging.getLogger(__name__)

DEFAULT_MAX_ROWS = 100_000
"""Rows held in memory for clustering when no clusterer sets a lower ``max_rows``."""
MAX_GROUPS = 10_000


def label_ids(column: Any, joint: JointTable) -> np.ndarray:
    """Integer cluster ids of the in-memory labels column (names mapped as in the joint table)."""
    import polars as pl

    from fairaudit.core.contingency import label_codes

    if joint.cluster_names is not None:
        return label_codes(column, joint.cluster_names)
    return column.cast(pl.Int64).to_numpy()


def resolve_roles(spec: ChainSpec, schema: Any) -> ColumnRoles:
    import polars as pl

    cols = list(schema.names())
    sensitive = tuple(spec.data.sensitive)
    labels = spec.data.labels
    excluded: dict[str, str] = {c: "listed in exclude" for c in spec.data.exclude}
    nested = {c for c in cols if _is_nested(schema[c])}
    for role, named in (("sensitive", sensitive), ("labels", (labels,) if labels else ()),
                        ("features", spec.data.features or ())):
        for c in named:
            if c in nested:
                raise InputError(
                    f"{role} column {c!r} has the nested type {schema[c]}; expected a flat "
                    "column (string, number or boolean): unnest or explode it first"
                )
    if spec.data.features is not None:
        features = tuple(spec.data.features)
    else:
        binary = {c for c in cols if schema[c] == pl.Binary and c not in spec.data.exclude}
        skip = set(spec.data.exclude) | {labels} | nested | binary
        if not spec.data.allow_sensitive_features:
            skip |= set(sensitive)
        temporal = {c for c in cols if c not in skip and schema[c].is_temporal()}
        features = tuple(c for c in cols if c not in skip and c not in temporal)
        for c in sorted(nested - set(spec.data.exclude)):
            excluded[c] = f"nested type {schema[c]} (list/struct/array): ignored"
        for c in sorted(binary - set(sensitive)):  # bytes (images, hashes): no feature reads them
            excluded[c] = "binary type (bytes): ignored; cast it to text to use it as a feature"
        for c in sorted(temporal):
            excluded[c] = (f"date/time ({schema[c].base_type()}): not used as a feature "
                           "(cast it to a number to use it); "
                           f"{exclude_name(spec, 'exclude', c)} silences this note")
    if not spec.data.allow_sensitive_features:
        leaked = [c for c in features if c in sensitive]
        if leaked:
            raise ConfigError(
                f"sensitive column(s) {leaked} are listed as features; sensitive columns are "
                "never given to clusterers unless allow_sensitive_features = true"
            )
    if labels in features:
        features = tuple(c for c in features if c != labels)
    for s in sensitive:
        dtype = schema[s]
        if dtype.is_float():
            raise InputError(
                f"sensitive column {s!r} has float type {dtype}; expected categories (string, "
                "integer code or boolean) — bin it first"
            )
    return ColumnRoles(
        sensitive=sensitive,
        features=features,
        labels=labels,
        ordinal=dict(spec.data.ordinal),
        excluded=excluded,
    )


def exclude_name(spec: ChainSpec, what: str, column: str | None = None) -> str:
    """``--exclude date`` / ``exclude=['date']`` / ``data.exclude = ['date']``: the column role
    ``what`` (``exclude`` or ``features``) as the user writes it where the chain came from."""
    from fairaudit.core.params import PARAMS

    p = PARAMS[what]
    val = "" if column is None else column
    if spec.source.startswith("flags"):
        return f"{p.flag} {val}".rstrip()
    if spec.source.startswith("api") or spec.source == "python":
        return f"{p.name}=[{val!r}]" if column is not None else f"{p.name}="
    return f"{p.key} = [{val!r}]" if column is not None else str(p.key)


def _is_nested(dtype: Any) -> bool:
    """List, Array and Struct columns (and Python objects): no role can read them."""
    import polars as pl

    return bool(dtype.is_nested()) or dtype == pl.Object


def skip_feature_steps(spec: ChainSpec, registry: Any, roles: ColumnRoles,
                       why: str | None = None) -> tuple[ChainSpec, str]:
    """The chain without the preprocessors and auditors that read features (none is left, or
    ``why`` says what else), and the note that says so. Only the counting auditors remain;
    none left is an InputError."""
    dropped = [s for s in spec.audit
               if "features" in registry.get("auditor", s.use).cls.requires]
    kept = tuple(s for s in spec.audit if s not in dropped)
    if why is None:
        aside = ", ".join(f"{c!r} ({why})" for c, why in roles.excluded.items())
        why = "no feature column is left" + (f" (set aside: {aside})" if aside else "")
    if not kept:
        raise InputError(f"{why}, and every auditor of the chain ("
                         + ", ".join(s.use for s in dropped) + ") reads features; add an "
                         "auditor that counts groups, e.g. --audit balance")
    steps = [s.use for s in (*spec.preprocess, *dropped)]
    note = f"{why}: skipped " + ", ".join(steps) + " (they read features)"
    log.info(note)
    return dataclasses.replace(spec, audit=kept, preprocess=()), note


def source_name(path: Any) -> str:
    """How messages name the input: its path, or ``<in-memory table>`` (never a frame dump)."""
    from fairaudit.core.io import IN_MEMORY
    from fairaudit.sources.urls import mask

    return mask(path) if isinstance(path, str) else IN_MEMORY


def check_groups(joint: JointTable, roles: ColumnRoles, n_input: int, spec: ChainSpec,
                  lf: Any = None) -> None:
    n = joint.n
    if n == 0:
        raise InputError(_nothing_left(roles, n_input, lf))
    for s in roles.sensitive:
        sizes = joint.group_sizes(s)
        if len(sizes) > MAX_GROUPS or (n >= 100 and len(sizes) > 0.5 * n):
            raise InputError(
                f"sensitive column {s!r} has {len(sizes)} distinct values in {n} rows: it looks "
                "like an identifier, not a group attribute; choose a categorical column "
                "(or bin it)"
            )
        if len(sizes) < 2:
            only = next(iter(sizes), None)
            raise InputError(
                f"sensitive column {s!r} has a single group ({only!r}) among the audited rows: "
                "fairness between groups is undefined; choose another attribute"
            )


NUMERIC_MANY_GROUPS = 20
"""A numeric sensitive column with more distinct values than this is probably a measurement
(age, income): each value is audited as its own group, so a note suggests binning it."""


def binning_notes(joint: JointTable, roles: ColumnRoles, lf: Any) -> list[str]:
    """A note per numeric sensitive column with many distinct values (``age``: 62 groups of
    single years), suggesting bands; the data are audited as given."""
    schema = lf.collect_schema()
    out = []
    for s in roles.sensitive:
        n_groups = len(joint.group_sizes(s))
        if s in schema and schema[s].is_numeric() and n_groups > NUMERIC_MANY_GROUPS:
            out.append(
                f"sensitive column {s!r} is numeric with {n_groups} distinct values, each "
                "audited as its own group (many small groups: wide intervals, fragile "
                f"verdicts); if it is a measurement such as an age, bin it into a few bands "
                "before the audit (e.g. 18-29, 30-44, 45-64, 65+)")
    return out


_DECIMAL_COMMA = r"^[+-]?(\d{1,3}(\.\d{3})+|\d+),\d+$"
"""A number written with a decimal comma (``6,907755``, ``1.234,5``)."""


def decimal_comma_notes(data: Any) -> list[str]:
    """A note per text feature column whose values are numbers written with a decimal comma:
    read as text, they would be clustered as categories (one-hot), silently."""
    import polars as pl

    if data is None:
        return []
    out = []
    id_like = [c for c, why in data.roles.excluded.items() if str(why).startswith("unique per")]
    for c in (*data.roles.features, *id_like):
        if c not in data.frame.columns or data.frame.schema[c] != pl.String:
            continue
        values = data.frame.get_column(c).drop_nulls()
        if values.len() == 0:
            continue
        looks = values.str.contains(_DECIMAL_COMMA)
        if float(looks.mean()) >= 0.9:
            example = values.filter(looks)[0]
            out.append(
                f"feature column {c!r} holds numbers written with a decimal comma (e.g. "
                f"{example!r}) and is read as text "
                f"{'(unique per row, so set aside as ID-like)' if c in id_like else 'categories'}"
                "; pass --decimal-comma (chain: "
                "data.decimal_comma = true; Python: decimal_comma=True) to read them as numbers")
    return out


def _nothing_left(roles: ColumnRoles, n_input: int, lf: Any) -> str:
    """Why no row is left to audit, naming the column(s) at fault."""
    import polars as pl

    cols = [*roles.sensitive, *filter(None, [roles.labels])]
    if lf is not None:
        nulls = lf.select([pl.col(c).null_count() for c in cols]).collect().row(0)
        empty = [c for c, k in zip(cols, nulls, strict=True) if k == n_input]
        if empty:
            kinds = ["labels column" if c == roles.labels else "sensitive column" for c in empty]
            return ("; ".join(f"{k} {c!r} is null in every row" for k, c in
                              zip(kinds, empty, strict=True))
                    + ": nothing left to audit")
    return (f"every row has a null value in at least one of {', '.join(map(repr, cols))} "
            "(no row has them all): nothing left to audit")


def materialise_rows(lf: Any, roles: ColumnRoles, spec: ChainSpec, n_input: int, max_rows: int,
                     draw: Any = None, *, n_valid: int | None = None,
                     sample_to: int | None = None):
    """The rows held in memory: every row with its sensitive and labels values, or — above
    ``max_rows`` such rows — a seeded sample of ``max_rows`` of them (of ``sample_to`` rows when
    given: what the feature-reading auditors of a chain without clusterers read). ``n_valid``:
    the number of such rows when the count already knows it (``n_input`` minus its null rows),
    so that no pass is spent counting them again, nor reading their row numbers when every row
    is valid (the sample is the same).

    ``draw(columns, keys, max_rows, seed) -> (frame, valid rows, sample_info)`` draws them where
    the data lives (a database engine's ``draw_rows``); by default they are drawn here, from
    ``lf``."""

    cols = list(dict.fromkeys([*roles.features, *roles.sensitive, *filter(None, [roles.labels])]))
    keys = [*roles.sensitive, *filter(None, [roles.labels])]
    if draw is not None:
        frame, n_valid, sample_info = draw(cols, keys, max_rows, spec.data.seed)
    else:
        frame, n_valid, sample_info = _draw_rows(lf, cols, keys, spec, n_input, max_rows,
                                                 n_valid=n_valid, sample_to=sample_to)
    return _rows_in_memory(frame, roles, spec, n_input, n_valid, sample_info)


def _draw_rows(lf: Any, cols: list[str], keys: list[str], spec: ChainSpec, n_input: int,
               max_rows: int, *, n_valid: int | None, sample_to: int | None):
    """The rows without a null key, a seeded sample of ``max_rows`` (``sample_to``) of them when
    there are more than ``max_rows`` (a choice of row numbers)."""
    import polars as pl

    q = lf.with_row_index(ROW_ID).select([ROW_ID, *cols])
    not_null = [pl.col(c).is_not_null() for c in keys]
    if not_null:
        q = q.filter(pl.all_horizontal(not_null))
    sample_info = None
    if n_valid is None:
        n_valid = int(q.select(pl.len()).collect(engine="streaming").item())
    if n_valid > max_rows:
        max_rows = int(min(max_rows, sample_to)) if sample_to else max_rows
        rng = np.random.default_rng(spec.data.seed)
        # the same draw as ``rng.choice(valid_ids, ...)``, without handing numpy the array
        # (0.58 s for 20M row numbers; positions: 0.3 ms)
        pick = rng.choice(n_valid, size=max_rows, replace=False)
        if n_valid == n_input:  # no null key: the valid rows are the row numbers 0..n-1
            keep = np.sort(pick)
        else:
            valid_ids = q.select(ROW_ID).collect(engine="streaming").get_column(ROW_ID).to_numpy()
            keep = np.sort(valid_ids[pick])
        q = _take_rows(lf, cols, keep, not_null)
        sample_info = {
            "rows": int(max_rows),
            "seed": spec.data.seed,
            "note": (
                f"clusterers and feature-based metrics used a seeded random sample of "
                f"{max_rows:,} of {n_valid:,} rows; counting metrics of labels columns in the "
                "input use every row"
            ),
        }
    _check_rows_memory(lf, cols, min(n_valid, max_rows), spec)
    return q.collect(engine="streaming"), n_valid, sample_info


def _rows_in_memory(frame: Any, roles: ColumnRoles, spec: ChainSpec, n_input: int, n_valid: int,
                    sample_info: Any):
    """The AuditData of the drawn rows: ID-like columns set aside, non-finite features."""
    import polars as pl

    excluded_nulls = n_input - n_valid
    roles_features = list(roles.features)
    # ID-like feature columns (unique per row) tell nothing about structure: exclude, with a note
    excluded = dict(roles.excluded)
    if spec.data.features is None:
        for c in [c for c in roles_features if _is_index_column(c, frame)]:
            roles_features.remove(c)
            excluded[c] = "a row index written out as a column (ID-like)"
    if spec.data.features is None and frame.height >= 20:
        for c in list(roles_features):
            dtype = frame.schema[c]
            if not (dtype == pl.String or dtype.is_integer()):
                continue
            if frame.get_column(c).n_unique() == frame.height and (
                dtype == pl.String or _looks_like_id(c, frame.get_column(c))
            ):
                roles_features.remove(c)
                excluded[c] = "unique per row (ID-like)"
    roles = dataclasses.replace(roles, features=tuple(roles_features), excluded=excluded)
    exclusions: dict[str, int] = {}
    if excluded_nulls:
        exclusions["null value in a sensitive or labels column"] = excluded_nulls
    data = AuditData(
        frame=frame,
        roles=roles,
        features=frame.select(roles_features),
        n_input_rows=n_input,
        sample_note=None if sample_info is None else sample_info["note"],
        exclusions=exclusions,
    )
    # non-finite numeric features
    bad = [
        c for c in roles_features
        if frame.schema[c].is_numeric()
        and (frame.get_column(c).is_null().any()
             or (frame.schema[c].is_float() and not frame.get_column(c).is_finite().all()))
    ]
    if bad and spec.cluster and spec.source.endswith(":default"):
        # the default comparison sets a mostly-missing column aside, as a labels audit does
        # (a column present only for some people would otherwise drop everyone else)
        data, bad = _set_aside_mostly_missing(spec, data, frame, bad)
    if bad:
        if spec.data.on_nonfinite == "error" and not spec.cluster:
            # only auditors read features (e.g. proxy): they use the rows and columns they can
            return _skip_nonfinite(data, frame, bad), sample_info
        if spec.data.on_nonfinite == "drop":
            masks = {c: _nonfinite_mask(frame, c) for c in bad}
            rows_bad = np.logical_or.reduce(list(masks.values()))
            _check_drop(spec, masks, int(rows_bad.sum()), frame.height)
            data = data.filter_rows(~rows_bad, "missing or non-finite feature value")
        else:
            counts = {c: int(_nonfinite_mask(frame, c).sum()) for c in bad}
            worst = max(bad, key=lambda c: counts[c])
            rows_bad = int(np.logical_or.reduce([_nonfinite_mask(frame, c) for c in bad]).sum())
            raise InputError(
                "feature column(s) " + ", ".join(f"{c!r} ({counts[c]:,} rows)" for c in bad)
                + f" contain missing or non-finite values ({rows_bad:,} of {frame.height:,} "
                f"rows in all); leave them out ({exclude_name(spec, 'exclude', worst)}) or drop "
                f"those rows ({option_text(spec, 'on_nonfinite', 'drop')}"
                + (f": more than {spec.data.max_drop:.0%} of the rows, so it needs "
                   f"{option_text(spec, 'max_drop', min(1.0, round(rows_bad / frame.height + 0.005, 2)))} too"
                   if rows_bad > spec.data.max_drop * frame.height else "") + ")"
            )
    return data, sample_info


def _take_rows(lf: Any, cols: list[str], keep: np.ndarray, not_null: list[Any]) -> Any:
    """The lazy frame of rows ``keep`` (sorted row numbers) of ``lf``: the row-number filter
    goes first, then the columns and the null filter (the rows kept are valid already)."""
    import polars as pl

    q = lf.with_row_index(ROW_ID)
    ids = pl.Series(ROW_ID, keep).cast(q.collect_schema()[ROW_ID])
    q = q.filter(pl.col(ROW_ID).is_in(ids.implode())).select([ROW_ID, *cols])
    return q.filter(pl.all_horizontal(not_null)) if not_null else q


MOSTLY_MISSING = 0.5
"""A feature column with more than this share of missing or non-finite values is set aside by
the default comparison and by feature auditors (it describes only some of the people)."""


def _set_aside_mostly_missing(spec: ChainSpec, data: AuditData, frame: Any, bad: Sequence[str]
                              ) -> tuple[AuditData, list[str]]:
    """The default comparison: feature columns missing (or non-finite) in more than half the
    rows are set aside with a note; the others stay for ``--on-nonfinite`` to decide."""
    n = max(frame.height, 1)
    aside = [c for c in bad if _nonfinite_mask(frame, c).sum() > MOSTLY_MISSING * n]
    if not aside:
        return data, list(bad)
    feats = tuple(c for c in data.roles.features if c not in aside)
    counts = {c: f"missing or non-finite in {int(_nonfinite_mask(frame, c).sum()):,} of "
                 f"{frame.height:,} rows" for c in aside}
    why = {c: f"mostly missing ({counts[c]})" for c in aside}
    note = ("the default comparison set aside feature column(s) "
            + ", ".join(f"{c!r} ({counts[c]})" for c in aside)
            + ": missing for most people, so clustering on them would describe only the "
            f"others; name them in {exclude_name(spec, 'features')} to use them")
    log.warning("%s", note)
    data = data.replace(
        roles=dataclasses.replace(data.roles, features=feats,
                                  excluded={**data.roles.excluded, **why}),
        features=data.features.drop(aside), notes=(*data.notes, note))
    return data, [c for c in bad if c not in aside]


def _check_drop(spec: ChainSpec, masks: dict[str, np.ndarray], dropped: int, n: int) -> None:
    """``--on-nonfinite drop`` may drop at most ``--max-drop`` of the rows (default half): an
    audit of the rest would describe another population than the input's."""
    if n == 0 or dropped <= spec.data.max_drop * n:
        return
    worst = sorted(masks, key=lambda c: -int(masks[c].sum()))
    cols = ", ".join(f"{c!r} ({int(masks[c].sum()):,} rows)" for c in worst[:5])
    allow = min(1.0, round(dropped / n + 0.005, 2))
    raise InputError(
        f"{option_text(spec, 'on_nonfinite', 'drop')} would drop {dropped:,} of {n:,} rows "
        f"({dropped / n:.0%}), more than {option_text(spec, 'max_drop', spec.data.max_drop)} "
        f"allows: missing or non-finite values in {cols}; the audit would describe another "
        f"population than the input's. Leave the column(s) out "
        f"({exclude_name(spec, 'exclude', worst[0])}), or allow the drop with "
        f"{option_text(spec, 'max_drop', allow)}")


def option_text(spec: ChainSpec, name: str, value: Any) -> str:
    """``--max-drop 0.7`` / ``max_drop=0.7`` / ``data.max_drop = 0.7``: parameter ``name`` with
    ``value`` as the user writes it where the chain came from."""
    from fairaudit.core.params import PARAMS

    p = PARAMS[name]
    if spec.source.startswith("flags") and p.flag:
        return f"{p.flag} {value}"
    if spec.source.startswith("api") or spec.source == "python" or not p.key:
        return f"{p.name}={value!r}"
    return f"{p.key} = {value!r}"


def rows_bytes(schema: Any, cols: Sequence[str], rows: int) -> float:
    """The memory of ``rows`` in-memory rows of ``cols``: 8 bytes a number (and its validity),
    about 40 a text cell (polars' view plus a short string), twice over for the copies the
    steps make (the frame, the features, the encoded matrix)."""
    import polars as pl

    per_row = sum(40 if schema[c] == pl.String else 9 for c in cols)
    return 2.0 * rows * per_row


def _check_rows_memory(lf: Any, cols: Sequence[str], rows: int, spec: ChainSpec) -> None:
    """Exit 2 before the rows are read into memory when they would need more than
    ``--max-memory`` (a large ``--sample`` of a wide table)."""
    from fairaudit.core.limits import check_memory

    need = rows_bytes(lf.collect_schema(), cols, rows)
    check_memory(need, spec.options.max_memory,
                 f"the {rows:,} rows held in memory ({len(cols)} columns)",
                 f"lower {option_text(spec, 'sample', max(2, rows // 4))}"
                 + (" or leave columns out (--exclude)" if len(cols) > 2 else ""))


def _nonfinite_mask(frame: Any, column: str) -> np.ndarray:
    """True where ``column`` holds a null, NaN or infinite value."""
    col = frame.get_column(column)
    ok = col.is_not_null()
    if frame.schema[column].is_float():
        ok = ok & col.is_finite().fill_null(False)
    return ~ok.to_numpy()


def _skip_nonfinite(data: AuditData, frame: Any, bad: Sequence[str]) -> AuditData:
    """Feature-reading auditors (no clusterer in the chain) skip what they cannot use: rows with
    a missing or non-finite feature value, and — when that would leave fewer than half the rows —
    first the columns with the most such values. The note says what was skipped; the counting
    metrics are unaffected (they never read features)."""
    masks = {c: _nonfinite_mask(frame, c) for c in bad}
    keep_cols = sorted(bad, key=lambda c: (int(masks[c].sum()), c))
    skipped_cols: list[str] = []
    n = frame.height
    while keep_cols:
        rows_bad = np.zeros(n, dtype=bool)
        for c in keep_cols:
            rows_bad |= masks[c]
        if n - int(rows_bad.sum()) >= max(1, n // 2):
            break
        skipped_cols.append(keep_cols.pop())  # the column with the most bad values
    rows_bad = np.zeros(n, dtype=bool)
    for c in keep_cols:
        rows_bad |= masks[c]
    parts = []
    if skipped_cols:
        feats = tuple(c for c in data.roles.features if c not in skipped_cols)
        excluded = {**data.roles.excluded,
                    **{c: "mostly missing or non-finite values" for c in skipped_cols}}
        data = data.replace(
            roles=dataclasses.replace(data.roles, features=feats, excluded=excluded),
            features=data.features.drop(skipped_cols),
        )
        parts.append("column(s) " + ", ".join(repr(c) for c in skipped_cols)
                     + " (mostly missing or non-finite)")
    n_rows = int(rows_bad.sum())
    if n_rows:
        data = data.filter_rows(~rows_bad, "missing or non-finite feature value "
                                "(feature-based metrics only)")
        parts.append(f"{n_rows:,} of {n:,} row(s) with a missing or non-finite value in "
                     + ", ".join(repr(c) for c in keep_cols))
    note = ("feature-based metrics skipped " + " and ".join(parts)
            + "; counting metrics use every row (with clusterers, --on-nonfinite decides)")
    log.info(note)
    return data.replace(notes=(*data.notes, note))


_INDEX_NAMES = re.compile(r"|Unnamed: \d+|\.\.\.\d+|index|level_0|rownames|row\.names|X")
"""Names that tables give a written-out row index: the empty header of pandas' ``to_csv`` and
R's ``write.csv`` (polars reads it as ``""``), ``Unnamed: 0`` (pandas' ``read_csv``),
``...1`` (readr), ``index`` / ``level_0`` (pandas' ``reset_index``), ``rownames`` (R's
``write.csv`` of a tibble, ``Rdatasets``' CSV files), ``row.names`` and ``X`` (R's
``read.csv`` of such a file)."""


def _is_index_column(name: str, frame: Any) -> bool:
    """A row index written out as a column: an index name, unique per row (any table size)."""
    import polars as pl

    if not _INDEX_NAMES.fullmatch(name.strip()) or frame.height < 2:
        return False
    dtype = frame.schema[name]
    col = frame.get_column(name)
    return (dtype == pl.String or dtype.is_integer()) and col.null_count() == 0 and (
        col.n_unique() == frame.height)


def _looks_like_id(name: str, col: Any) -> bool:
    lname = name.lower()
    if lname in ("id", "key", "uuid", "index") or lname.endswith(("_id", "id", "_key")):
        return True
    s = col.drop_nulls()
    if s.len() < 3:
        return False
    diffs = s.sort().diff().drop_nulls()
    if diffs.n_unique() == 1:  # a running number
        return True
    # a running number with gaps (row names of a subset, ids of the rows kept): unique
    # integers in increasing order as the file has them
    return bool(s.dtype.is_integer() and (s.diff().drop_nulls() > 0).all())
