"""Categorical encoding of a table into an all-Float64 feature matrix.

``CategoricalEncoder`` turns a polars DataFrame with numeric, categorical and ordinal columns into a
numeric polars DataFrame for the numeric clustering chain:

* numeric columns are standardised (z-score, population standard deviation);
* categorical columns (String / Categorical / Enum / Boolean, or the names given) are one-hot
  encoded, one Float64 0/1 column per level, named ``"<column>=<level>"``; rare levels
  (relative frequency below ``min_frequency``) and, past ``max_levels``, the least frequent levels
  are merged into one ``"__other__"`` level;
* ordinal columns (``ordinal={column: [ordered levels]}``) become codes ``0..L-1`` and are then
  standardised like numeric columns.

Columns that carry nothing (a categorical column with one level, a constant numeric or ordinal
column) are dropped and a sentence saying so is added to ``notes_``.

This module is the one layer-1 exception to the "no polars" rule: encoding is a table operation
and must run close to polars' own ``to_dummies`` speed on tens of millions of rows.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    import numpy as np

logger = logging.getLogger(__name__)

__all__ = ["OTHER_LEVEL", "CategoricalEncoder"]

OTHER_LEVEL = "__other__"
"""Name of the level that rare levels are merged into."""

_SEP = "="


def _is_categorical_dtype(dtype: pl.DataType) -> bool:
    return (
        dtype == pl.String
        or dtype == pl.Boolean
        or isinstance(dtype, pl.Categorical | pl.Enum)
        or dtype == pl.Categorical
    )


def _tmp(name: str) -> str:
    return f"\x00code:{name}"


def _key_expr(name: str, dtype: pl.DataType) -> pl.Expr:
    """The column as String (levels are always compared as strings)."""
    if dtype == pl.String:
        return pl.col(name)
    return pl.col(name).cast(pl.String)



def _location_scale(values: np.ndarray) -> tuple[float, float] | None:
    """Mean and standard deviation of a column's values by numpy over contiguous values, or
    None when the column carries no information (constant, or a zero or non-finite std).
    (Polars sums a column chunk by chunk, and the chunks of a sample read by the streaming
    engine vary from run to run: its mean varied in the last bit between runs of the same
    audit.)"""
    mean, std = float(values.mean()), float(values.std())
    if bool(values.max() == values.min()) or not std > 0 or not math.isfinite(std):
        return None
    return mean, std

class CategoricalEncoder:
    """One-hot / ordinal encoding with rare-level bucketing and numeric standardisation.

    Parameters
    ----------
    categorical : "auto" or sequence of str, default "auto"
        ``"auto"``: every String, Categorical, Enum or Boolean column (except the ordinal ones) is
        categorical. A sequence: exactly these columns are categorical (e.g. an integer-coded
        occupation column); the remaining non-ordinal columns must be numeric.
    ordinal : mapping of str to sequence, optional
        ``{column: [levels in order]}``. Levels map to codes ``0..L-1``. A value not in the list is
        an error (at fit and transform).
    max_levels : int, default 50
        At most this many output columns per categorical column (``"__other__"`` included).
    min_frequency : float, default 0.01
        Levels with a relative frequency below this (in the data given to ``fit``) are merged into
        ``"__other__"``. A single rare level is kept as it is (merging it alone would only rename
        it). Must be in ``[0, 1)``.
    standardize : bool, default True
        Standardise numeric and ordinal columns to mean 0, standard deviation 1 (``ddof=0``).
        One-hot columns stay 0/1.

    Attributes
    ----------
    feature_names_in_ : tuple of str
        Columns seen by ``fit``.
    feature_names_out_ : tuple of str
        Output columns, in input-column order.
    source_columns_ : dict of str to str
        Output feature -> source column.
    categorical_columns_, numeric_columns_, ordinal_columns_ : tuple of str
        Encoded columns by kind (dropped columns excluded).
    dropped_columns_ : tuple of str
        Input columns dropped because they carry no information.
    levels_ : dict of str to tuple of str
        Per categorical column, its output levels (``"__other__"`` last when present).
    bucketed_ : dict of str to tuple of str
        Per categorical column with bucketing, the original levels merged into ``"__other__"``.
    means_, scales_ : dict of str to float
        Standardisation statistics of numeric and ordinal columns (mean 0 / scale 1 when
        ``standardize=False``).
    notes_ : tuple of str
        Human-readable sentences on what was bucketed or dropped.
    """


    # fitted attributes (set by ``fit``), typed for type checkers
    feature_names_in_: tuple[str, ...]
    input_dtypes_: dict[str, pl.DataType]
    feature_names_out_: tuple[str, ...]
    source_columns_: dict[str, str]
    categorical_columns_: tuple[str, ...]
    numeric_columns_: tuple[str, ...]
    ordinal_columns_: tuple[str, ...]
    ordinal_levels_: dict[str, tuple[str, ...]]
    dropped_columns_: tuple[str, ...]
    levels_: dict[str, tuple[str, ...]]
    bucketed_: dict[str, tuple[str, ...]]
    means_: dict[str, float]
    scales_: dict[str, float]
    notes_: tuple[str, ...]

    def __init__(
        self,
        *,
        categorical: str | Sequence[str] = "auto",
        ordinal: Mapping[str, Sequence[Any]] | None = None,
        max_levels: int = 50,
        min_frequency: float = 0.01,
        standardize: bool = True,
    ) -> None:
        self.categorical = categorical
        self.ordinal = ordinal
        self.max_levels = max_levels
        self.min_frequency = min_frequency
        self.standardize = standardize

    # ------------------------------------------------------------------ validation
    def _validate_params(self, df: pl.DataFrame) -> tuple[list[str], dict[str, list[Any]]]:
        name = type(self).__name__
        if not isinstance(df, pl.DataFrame):
            raise TypeError(f"{name}.fit expects a polars DataFrame; got {type(df).__name__}.")
        if df.width == 0:  # (polars gives a frame without columns height 0 too)
            raise ValueError(f"{name}.fit got no column: there is no feature column to encode "
                             "(the table holds only the sensitive and labels columns, or every "
                             "other column was excluded or set aside)")
        if df.height == 0:
            raise ValueError(f"{name}.fit needs at least one row; got an empty DataFrame.")
        if (
            not isinstance(self.max_levels, int)
            or isinstance(self.max_levels, bool)
            or self.max_levels < 2
        ):
            raise ValueError(
                f"The 'max_levels' parameter of {name} must be an int >= 2; got {self.max_levels!r}."
            )
        mf = self.min_frequency
        if isinstance(mf, bool) or not isinstance(mf, int | float) or not (0.0 <= mf < 1.0):
            raise ValueError(
                f"The 'min_frequency' parameter of {name} must be a float in [0, 1); got {mf!r}."
            )
        if not isinstance(self.standardize, bool):
            raise ValueError(
                f"The 'standardize' parameter of {name} must be a bool; got {self.standardize!r}."
            )
        columns = df.columns
        ordinal: dict[str, list[Any]] = {}
        if self.ordinal is not None:
            if not isinstance(self.ordinal, Mapping):
                raise ValueError(
                    f"The 'ordinal' parameter of {name} must be a mapping "
                    f"{{column: [ordered levels]}} or None; got {type(self.ordinal).__name__}."
                )
            for col, levels in self.ordinal.items():
                if col not in columns:
                    raise ValueError(
                        f"The 'ordinal' parameter of {name} names column {col!r}, which is not "
                        f"in the data (columns: {columns})."
                    )
                if isinstance(levels, str) or not isinstance(levels, Sequence) or not levels:
                    raise ValueError(
                        f"The 'ordinal' parameter of {name} must give a non-empty list of "
                        f"ordered levels for {col!r}; got {levels!r}."
                    )
                if len(set(levels)) != len(levels):
                    raise ValueError(
                        f"The 'ordinal' parameter of {name} lists a level twice for {col!r}: "
                        f"{list(levels)!r}."
                    )
                ordinal[col] = list(levels)
        if isinstance(self.categorical, str):
            if self.categorical != "auto":
                raise ValueError(
                    f"The 'categorical' parameter of {name} must be 'auto' or a list of column "
                    f"names; got {self.categorical!r}."
                )
            cats = [c for c in columns if c not in ordinal and _is_categorical_dtype(df.schema[c])]
        else:
            cats = list(self.categorical)
            for col in cats:
                if not isinstance(col, str) or col not in columns:
                    raise ValueError(
                        f"The 'categorical' parameter of {name} names column {col!r}, which is "
                        f"not in the data (columns: {columns})."
                    )
                if col in ordinal:
                    raise ValueError(
                        f"Column {col!r} is listed in both 'categorical' and 'ordinal' of {name}; "
                        "give it in one of them."
                    )
        return cats, ordinal

    @staticmethod
    def _check_nulls(df: pl.DataFrame, columns: Sequence[str], where: str) -> None:
        if not columns:
            return
        counts = df.select(pl.col(list(columns)).null_count()).row(0)
        bad = [(c, k) for c, k in zip(columns, counts, strict=True) if k]
        if bad:
            desc = ", ".join(f"{c!r} ({k} nulls)" for c, k in bad)
            raise ValueError(
                f"CategoricalEncoder.{where}: missing values in column(s) {desc}; impute or drop "
                "those rows first (nulls are never coerced silently)."
            )

    @staticmethod
    def _check_finite(df: pl.DataFrame, columns: Sequence[str], where: str) -> None:
        floats = [c for c in columns if df.schema[c].is_float()]
        if not floats:
            return
        ok = df.select(pl.col(floats).is_finite().all()).row(0)
        bad = [c for c, good in zip(floats, ok, strict=True) if not good]
        if bad:
            raise ValueError(
                f"CategoricalEncoder.{where}: non-finite values (NaN or inf) in numeric "
                f"column(s) {bad}; clean them first."
            )

    # ------------------------------------------------------------------ fit
    def fit(self, df: pl.DataFrame) -> CategoricalEncoder:
        """Learn levels, buckets and standardisation statistics from ``df``."""
        cats, ordinal = self._validate_params(df)
        schema = df.schema
        numeric: list[str] = []
        for col in df.columns:
            if col in ordinal or col in cats:
                continue
            dtype = schema[col]
            if not dtype.is_numeric():
                raise ValueError(
                    f"CategoricalEncoder.fit: column {col!r} has dtype {dtype}, which is neither "
                    "numeric nor categorical; cast it, declare it in 'categorical' or "
                    "'ordinal', or exclude it."
                )
            numeric.append(col)
        self._check_nulls(df, df.columns, "fit")
        self._check_finite(df, numeric, "fit")

        n = df.height
        notes: list[str] = []
        dropped: list[str] = []
        levels_out: dict[str, tuple[str, ...]] = {}
        bucketed: dict[str, tuple[str, ...]] = {}
        means: dict[str, float] = {}
        scales: dict[str, float] = {}
        kinds: dict[str, str] = {}

        # categorical: level counts (one group-by per column, run in parallel; the small
        # result is cast to String so every level is compared as a string)
        lazy = df.lazy()
        count_frames = pl.collect_all([
            lazy.group_by(pl.col(col).alias("level"))
            .len(name="count")
            .with_columns(pl.col("level").cast(pl.String))
            for col in cats
        ]) if cats else []
        for col, counts in zip(cats, count_frames, strict=True):
            pairs = sorted(
                zip(
                    counts.get_column("level").to_list(),
                    counts.get_column("count").to_list(),
                    strict=True,
                ),
                key=lambda p: (-p[1], p[0]),
            )
            if len(pairs) <= 1:
                dropped.append(col)
                notes.append(
                    f"Dropped categorical column '{col}': it has a single value "
                    f"({pairs[0][0]!r}) and carries no information."
                )
                continue
            if any(level == OTHER_LEVEL for level, _ in pairs):
                raise ValueError(
                    f"CategoricalEncoder.fit: column {col!r} has a level named {OTHER_LEVEL!r}, "
                    "which is reserved for merged rare levels; rename it."
                )
            threshold = self.min_frequency * n
            rare = {level for level, k in pairs if k < threshold}
            if len(rare) == 1 and len(pairs) <= self.max_levels:
                rare = set()  # merging one level alone would only rename it
            kept = [level for level, _ in pairs if level not in rare]
            if len(kept) + (1 if rare else 0) > self.max_levels:
                # keep the most frequent (max_levels - 1); the rest joins __other__
                kept = kept[: self.max_levels - 1]
                rare = {level for level, _ in pairs} - set(kept)
            merged = tuple(level for level, _ in pairs if level in rare)  # by frequency
            out = tuple(sorted(kept)) + ((OTHER_LEVEL,) if merged else ())
            if len(out) <= 1:
                dropped.append(col)
                notes.append(
                    f"Dropped categorical column '{col}': after merging rare levels only one "
                    "level remains, so it carries no information."
                )
                continue
            if merged:
                bucketed[col] = merged
                share = sum(k for level, k in pairs if level in rare) / n
                notes.append(
                    f"Column '{col}': merged {len(merged)} of {len(pairs)} levels "
                    f"({share:.1%} of rows) into '{OTHER_LEVEL}' "
                    f"(levels under {self.min_frequency:.2%} of rows, at most "
                    f"{self.max_levels} columns per categorical column)."
                )
            levels_out[col] = out
            kinds[col] = "categorical"

        # ordinal: codes, checked against the declared levels
        ordinal_keep: list[str] = []
        for col, levels in ordinal.items():
            codes = self._ordinal_codes(df, col, levels, "fit").cast(pl.Float64).to_numpy()
            moments = _location_scale(codes)
            if moments is None:
                dropped.append(col)
                notes.append(
                    f"Dropped ordinal column '{col}': every row has the same level, so it "
                    "carries no information."
                )
                continue
            means[col], scales[col] = moments if self.standardize else (0.0, 1.0)
            kinds[col] = "ordinal"
            ordinal_keep.append(col)

        # numeric: mean / std as the ordinal codes' (_location_scale)
        for col in numeric:
            moments = _location_scale(df.get_column(col).cast(pl.Float64).to_numpy())
            if moments is None:
                dropped.append(col)
                notes.append(
                    f"Dropped numeric column '{col}': it is constant, so it carries no "
                    "information (and standardising it would divide by zero)."
                )
                continue
            means[col], scales[col] = moments if self.standardize else (0.0, 1.0)
            kinds[col] = "numeric"

        names: list[str] = []
        source: dict[str, str] = {}
        for col in df.columns:
            kind = kinds.get(col)
            if kind is None:
                continue
            outs = (
                [f"{col}{_SEP}{level}" for level in levels_out[col]]
                if kind == "categorical"
                else [col]
            )
            for out in outs:
                if out in source:
                    raise ValueError(
                        f"CategoricalEncoder.fit: output feature name {out!r} occurs twice "
                        f"(from columns {source[out]!r} and {col!r}); rename one of them."
                    )
                source[out] = col
                names.append(out)
        if not names:
            raise ValueError(
                "CategoricalEncoder.fit: every column was dropped ("
                + "; ".join(n.removeprefix("Dropped ").rstrip(".") for n in notes[:3])
                + ("; ..." if len(notes) > 3 else "") + "); nothing to encode."
            )
        for note in notes:
            logger.info(note)

        self.feature_names_in_ = tuple(df.columns)
        self.input_dtypes_ = {c: schema[c] for c in df.columns}
        self.feature_names_out_ = tuple(names)
        self.source_columns_ = source
        self.categorical_columns_ = tuple(c for c in df.columns if kinds.get(c) == "categorical")
        self.numeric_columns_ = tuple(c for c in df.columns if kinds.get(c) == "numeric")
        self.ordinal_columns_ = tuple(ordinal_keep)
        self.ordinal_levels_ = {c: tuple(ordinal[c]) for c in ordinal_keep}
        self.dropped_columns_ = tuple(c for c in df.columns if c in set(dropped))
        self.levels_ = levels_out
        self.bucketed_ = bucketed
        self.means_ = means
        self.scales_ = scales
        self.notes_ = tuple(notes)
        return self

    @staticmethod
    def _ordinal_codes(df: pl.DataFrame, col: str, levels: list[Any], where: str) -> pl.Series:
        dtype = df.schema[col]
        key = pl.col(col)
        old: list[Any] = list(levels)
        if not dtype.is_numeric():
            key = _key_expr(col, dtype)
            old = [str(v) for v in levels]
        try:
            codes = df.select(
                key.replace_strict(
                    old, list(range(len(levels))), default=-1, return_dtype=pl.Int64
                ).alias("c")
            ).get_column("c")
        except (pl.exceptions.InvalidOperationError, pl.exceptions.ComputeError) as exc:
            raise ValueError(
                f"CategoricalEncoder.{where}: cannot match ordinal column {col!r} (dtype {dtype}) "
                f"to its declared levels {levels!r}: {exc}"
            ) from exc
        if (codes < 0).any():
            unknown = df.filter(codes < 0).get_column(col).cast(pl.String).unique().sort().head(10)
            raise ValueError(
                f"CategoricalEncoder.{where}: ordinal column {col!r} has values not among its "
                f"declared levels {levels!r}: {unknown.to_list()} (first 10 shown)."
            )
        return codes

    # ------------------------------------------------------------------ transform
    def _check_fitted(self) -> None:
        if not hasattr(self, "feature_names_out_"):
            raise ValueError(
                "This CategoricalEncoder is not fitted yet; call 'fit' before 'transform'."
            )

    def transform(self, df: pl.DataFrame) -> pl.DataFrame:
        """Encode ``df`` with the fitted levels and statistics; returns all-Float64 columns."""
        return self._transform(df, checked=False)

    def _transform(self, df: pl.DataFrame, *, checked: bool) -> pl.DataFrame:
        self._check_fitted()
        if not isinstance(df, pl.DataFrame):
            raise TypeError(
                f"CategoricalEncoder.transform expects a polars DataFrame; got {type(df).__name__}."
            )
        needed = [*self.categorical_columns_, *self.numeric_columns_, *self.ordinal_columns_]
        missing = [c for c in needed if c not in df.columns]
        if missing:
            raise ValueError(
                f"CategoricalEncoder.transform: column(s) {missing} seen in fit are missing."
            )
        if not checked:
            self._check_nulls(df, needed, "transform")
        for col in self.numeric_columns_:
            if not df.schema[col].is_numeric():
                raise ValueError(
                    f"CategoricalEncoder.transform: column {col!r} was numeric in fit but has "
                    f"dtype {df.schema[col]} now."
                )
        if not checked:
            self._check_finite(df, self.numeric_columns_, "transform")
        schema = df.schema

        # stage 1: one integer code per categorical column (through an Enum whose categories
        # are the kept levels then the merged ones: code >= #kept means '__other__', null means
        # unseen in fit) and per ordinal column (-1 = not a declared level)
        work_exprs: list[pl.Expr] = [pl.col(c) for c in self.numeric_columns_]
        for col in self.categorical_columns_:
            work_exprs.append(
                _key_expr(col, schema[col])
                .cast(pl.Enum(self._enum_levels(col)), strict=False)
                .to_physical()
                .alias(_tmp(col))
            )
        for col in self.ordinal_columns_:
            levels = list(self.ordinal_levels_[col])
            dtype = schema[col]
            key, old = pl.col(col), levels
            if not dtype.is_numeric():
                key, old = _key_expr(col, dtype), [str(v) for v in levels]
            work_exprs.append(
                key.replace_strict(
                    old, list(range(len(old))), default=-1, return_dtype=pl.Int32
                ).alias(_tmp(col))
            )
        try:
            work = df.select(work_exprs)
        except (pl.exceptions.InvalidOperationError, pl.exceptions.ComputeError) as exc:
            raise ValueError(f"CategoricalEncoder.transform: cannot map levels: {exc}") from exc
        coded = [*self.categorical_columns_, *self.ordinal_columns_]
        if coded:
            checks = [
                pl.col(_tmp(c)).is_null().any()
                if c in self.levels_ and self.levels_[c][-1] != OTHER_LEVEL
                else pl.lit(False)
                for c in self.categorical_columns_
            ] + [(pl.col(_tmp(c)) < 0).any() for c in self.ordinal_columns_]
            flags = work.select([e.alias(str(i)) for i, e in enumerate(checks)]).row(0)
            for col, bad in zip(coded, flags, strict=True):
                if not bad:
                    continue
                code = work.get_column(_tmp(col))
                unseen = (
                    df.filter(code.is_null() | (code.cast(pl.Int64) < 0))
                    .get_column(col)
                    .cast(pl.String)
                    .unique()
                    .sort()
                    .head(10)
                    .to_list()
                )
                what = (
                    f"levels not seen in fit and no '{OTHER_LEVEL}' level to put them in"
                    if col in self.levels_
                    else f"values not among its declared levels {list(self.ordinal_levels_[col])}"
                )
                raise ValueError(
                    f"CategoricalEncoder.transform: column {col!r} has {what}: {unseen} "
                    "(first 10 shown)."
                )

        # stage 2: one expression per output column, in feature_names_out_ order
        exprs: list[pl.Expr] = []
        for col in self.feature_names_in_:
            if col in self.levels_:
                t = pl.col(_tmp(col))
                out = self.levels_[col]
                n_kept = len(out) - 1 if out[-1] == OTHER_LEVEL else len(out)
                # when/then/otherwise writes Float64 directly (about 3x cheaper than casting a
                # boolean mask); a null code (unseen level) fails every `t == j` and is caught
                # by the otherwise-branch of the __other__ column
                for j, level in enumerate(out[:n_kept]):
                    exprs.append(
                        pl.when(t == j).then(1.0).otherwise(0.0).alias(f"{col}{_SEP}{level}")
                    )
                if n_kept < len(out):
                    exprs.append(
                        pl.when(t < n_kept)
                        .then(0.0)
                        .otherwise(1.0)
                        .alias(f"{col}{_SEP}{OTHER_LEVEL}")
                    )
            elif col in self.ordinal_levels_:
                e = pl.col(_tmp(col)).cast(pl.Float64)
                exprs.append(((e - self.means_[col]) / self.scales_[col]).alias(col))
            elif col in self.means_:
                e = pl.col(col).cast(pl.Float64)
                if self.standardize:
                    e = (e - self.means_[col]) / self.scales_[col]
                exprs.append(e.alias(col))
        return work.select(exprs)

    def _enum_levels(self, col: str) -> list[str]:
        out = self.levels_[col]
        if out[-1] == OTHER_LEVEL:
            return [*out[:-1], *self.bucketed_[col]]
        return list(out)

    def fit_transform(self, df: pl.DataFrame) -> pl.DataFrame:
        """``fit(df)`` then ``transform(df)``."""
        # fit has already checked nulls and non-finite values on this very frame
        return self.fit(df)._transform(df, checked=True)

    def get_feature_names_out(self) -> tuple[str, ...]:
        """Output feature names (scikit-learn convention)."""
        self._check_fitted()
        return self.feature_names_out_
