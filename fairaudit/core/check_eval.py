"""The native evaluation of the input checks (:mod:`fairaudit.core.checks`) on polars frames,
with Great Expectations' semantics on pandas: NaN in a float column is null; map checks
(integral, finite) judge the non-null values only and pass vacuously when there are none;
``mostly`` is the passing fraction; at most :data:`PARTIAL` example values of a failed map check.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["PARTIAL", "NativeBackend", "is_finite_scalar", "is_integral_scalar",
           "pandas_dtype_name", "value_counts"]

PARTIAL = 20  # example values kept per failed map check (GX's partial_unexpected_count)


def is_integral_scalar(value: Any) -> bool:
    """An int, a bool, or a finite float without a fractional part (numpy scalars too)."""
    import numpy as np

    if isinstance(value, bool | np.bool_ | int | np.integer):
        return True
    if isinstance(value, float | np.floating):
        return bool(np.isfinite(value) and float(value).is_integer())
    return False


def is_finite_scalar(value: Any) -> bool:
    """An int, a bool, or a finite float (numpy scalars too)."""
    import numpy as np

    if isinstance(value, bool | np.bool_ | int | np.integer):
        return True
    if isinstance(value, float | np.floating):
        return bool(np.isfinite(value))
    return False


def pandas_dtype_name(series: Any) -> str:
    """The dtype a polars column gets in the pandas frame GX validates (numbers stay numpy;
    integers with nulls become float64; a boolean without nulls stays bool; the rest object)."""
    import polars as pl

    dtype = series.dtype
    if dtype.is_numeric():
        if dtype.is_float():
            return "float32" if dtype == pl.Float32 else "float64"
        if series.null_count():
            return "float64"
        return str(series.head(1).to_numpy().dtype)
    if dtype == pl.Boolean and series.null_count() == 0:
        return "bool"
    return "object"




class NativeBackend:
    """Evaluates the checks' expectations on polars frames, with GX's semantics."""

    def frame(self, sample: Any, columns: Sequence[str]) -> Any:
        import polars as pl

        if not isinstance(sample, pl.DataFrame):
            sample = _from_pandas(sample)
        return sample.select([c for c in columns if c in sample.columns])

    def table(self, groups: list[str], counts: list[int]) -> Any:
        import polars as pl

        return pl.DataFrame({"group": pl.Series(groups, dtype=pl.String),
                             "count": pl.Series(counts, dtype=pl.Int64),
                             "folded": pl.Series([fold_name(g) for g in groups],
                                                 dtype=pl.String)})

    def close(self) -> None:
        pass

    def run(self, frame: Any, checks: Sequence[Any], result_format: dict[str, Any]) -> list[Any]:
        """``(check, CheckResult)`` per :class:`~fairaudit.core.checks.Check`."""
        return [(c, c.result(*self._evaluate(frame, c))) for c in checks]

    def _evaluate(self, frame: Any, check: Any) -> tuple[bool, dict[str, Any]]:
        kw = check.kwargs
        kind = check.expectation
        if kind == "expect_column_to_exist":
            return kw["column"] in frame.columns, {}
        if kind == "expect_table_row_count_to_be_between":
            n = frame.height
            lo, hi = kw.get("min_value"), kw.get("max_value")
            return (lo is None or n >= lo) and (hi is None or n <= hi), {"observed_value": n}
        series = frame.get_column(kw["column"])
        n = series.len()
        missing = _missing(series)
        n_missing = int(missing.sum())
        if kind == "expect_column_values_to_not_be_null":
            ok = n == 0 or (n - n_missing) / n >= kw.get("mostly", 1.0)
            return ok, {"element_count": n, "unexpected_count": n_missing}
        values = series.filter(~missing)
        if kind == "expect_column_values_to_be_between":  # the counts of the group table
            lo = kw["min_value"]
            bad_idx = [i for i, v in enumerate(series.to_list()) if v is not None and v < lo]
            return not bad_idx, {"element_count": n, "missing_count": n_missing,
                                 "unexpected_count": len(bad_idx),
                                 "unexpected_index_list": bad_idx}
        if kind == "expect_column_values_to_be_unique":  # every copy of a repeated value
            from collections import Counter

            seen = series.to_list()
            repeated = {v for v, c in Counter(seen).items() if v is not None and c > 1}
            bad_idx = [i for i, v in enumerate(seen) if v in repeated]
            return not bad_idx, {"element_count": n, "missing_count": n_missing,
                                 "unexpected_count": len(bad_idx),
                                 "unexpected_index_list": bad_idx,
                                 "partial_unexpected_list": [seen[i] for i in bad_idx][:PARTIAL]}
        good = _condition(values, integral=kind == "expect_column_values_to_be_integral")
        unexpected = values.filter(~good)
        nonnull = n - n_missing
        ok = nonnull == 0 or (nonnull - unexpected.len()) / nonnull >= kw.get("mostly", 1.0)
        return ok, {"element_count": n, "missing_count": n_missing,
                    "unexpected_count": unexpected.len(),
                    "partial_unexpected_list": unexpected.head(PARTIAL).to_list()}


_LOOKALIKE = str.maketrans(
    # Cyrillic and Greek letters drawn like Latin ones (Unicode's confusables, the common ones)
    "АВЕЅІЈКМНОРСТХУаеіјорсхуѕԁԛԝΑΒΕΖΗΙΚΜΝΟΡΤΥΧοϲ",
    "ABESIJKMHOPCTXYaeijopcxysdqwABEZHIKMNOPTYXoc")


def fold_name(name: str) -> str:
    """A group name as a reader sees it: Unicode-normalised (NFKC: "Fémale" composed or with a
    combining accent, full-width letters), without invisible characters (zero-width spaces and
    joiners, soft hyphens, byte-order marks), Cyrillic/Greek look-alike letters read as the
    Latin ones ("Мale"), spaces collapsed, case folded. Two names of a column with the same
    fold ("Male", "male ", "Male\u200b") are probably one group spelled two ways."""
    import unicodedata

    text = unicodedata.normalize("NFKC", name)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return " ".join(text.translate(_LOOKALIKE).split()).casefold()


def _missing(series: Any) -> Any:
    """GX's null on pandas: null, or NaN in a float column."""
    mask = series.is_null()
    if series.dtype.is_float():
        mask = mask | series.is_nan().fill_null(False)
    return mask


def _condition(values: Any, *, integral: bool) -> Any:
    """Which non-null values pass ``integral`` (or finite) — as GX's row conditions judge them."""
    import polars as pl

    dtype = values.dtype
    if dtype.is_integer() or dtype == pl.Boolean:
        return pl.Series([True] * values.len(), dtype=pl.Boolean)
    if dtype.is_float():
        ok = values.is_finite()
        return (ok & (values == values.floor())) if integral else ok
    test = is_integral_scalar if integral else is_finite_scalar
    return pl.Series([test(v) for v in values.to_list()], dtype=pl.Boolean)


def _from_pandas(frame: Any) -> Any:
    """A pandas frame as a polars frame, column by column (no pyarrow): NaN stays NaN in float
    columns and becomes null in object columns, as pandas' own null test sees it."""
    import polars as pl

    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - no pandas, so no pandas frame either
        pd = None
    if pd is None or not isinstance(frame, pd.DataFrame):
        raise TypeError(
            "The 'sample' parameter of run_input_checks must be a polars DataFrame; "
            f"got {type(frame).__name__}."
        )
    cols = []
    for name in frame.columns:
        col = frame[name]
        if pd.api.types.is_numeric_dtype(col.dtype) and col.dtype != object:
            cols.append(pl.Series(str(name), col.to_numpy()))
        else:
            values = [None if pd.isna(v) else v for v in col.tolist()]
            try:
                cols.append(pl.Series(str(name), values, strict=False))
            except (TypeError, ValueError, pl.exceptions.PolarsError):
                cols.append(pl.Series(str(name), values, dtype=pl.Object))
    return pl.DataFrame(cols, height=len(frame)) if cols else pl.DataFrame(height=len(frame))


def value_counts(series: Any) -> dict[Any, int]:
    """Group sizes of a sample column, nulls (and NaN) left out; integers with nulls are
    counted as floats, as in the pandas frame GX sees."""
    import polars as pl

    s = series.filter(~_missing(series))
    if series.dtype.is_integer() and series.null_count():
        s = s.cast(pl.Float64)
    counts = s.to_frame("value").group_by("value").len()
    return dict(zip(counts.get_column("value").to_list(), counts.get_column("len").to_list(),
                    strict=True))
