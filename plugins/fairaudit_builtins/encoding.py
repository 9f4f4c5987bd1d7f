"""Built-in preprocessor ``encode``: one-hot / ordinal encoding and standardisation.

A thin adapter over :class:`fairaudit.preprocess.CategoricalEncoder` (polars in, polars out). The
raw categorical columns stay available to clusterers that use them directly (FairDen's Goodall
similarity) through ``AuditData.categorical_frame()``; only the feature table is replaced.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from fairaudit.core.components import AnyOf, Interval, Options, Preprocessor, TypeIs
from fairaudit.core.data import AuditData
from fairaudit.hookspecs import hookimpl

MISSING_LEVEL = "(missing)"


class EncodePreprocessor(Preprocessor):
    """One-hot encode categorical features (rare levels merged), ordinal-code declared orders,
    standardise numeric features."""

    name = "encode"
    description = (
        "One-hot encoding with rare-level bucketing, ordinal codes for declared orders, "
        "standardised numeric columns."
    )
    requires = frozenset({"features"})
    provides = frozenset({"features"})
    constraints = {
        "categorical": AnyOf((Options(("auto",)), TypeIs((list, tuple), "a list of column names"))),
        "ordinal": AnyOf((Options((None,)), TypeIs((dict,), "a table {column = [levels]}"))),
        "max_levels": Interval(int, 2, None),
        "min_frequency": Interval(float, 0.0, 1.0, closed="left"),
        "standardize": TypeIs((bool,), "true or false"),
        "missing": Options(("category", "error")),
    }
    param_docs = {
        "categorical": "'auto' (String/Categorical/Enum/Boolean columns) or a list of columns",
        "ordinal": "{column = [levels in order]}: coded 0..L-1, then standardised",
        "max_levels": "at most this many one-hot columns per categorical column",
        "min_frequency": "levels rarer than this share of rows are merged into '__other__'",
        "standardize": "standardise numeric and ordinal columns (mean 0, sd 1)",
        "missing": "null in a categorical column: 'category' = its own level '(missing)' "
        "(noted in the report), 'error' = refuse",
    }

    def __init__(
        self,
        *,
        categorical: str | list[str] = "auto",
        ordinal: dict[str, list[Any]] | None = None,
        max_levels: int = 50,
        min_frequency: float = 0.01,
        standardize: bool = True,
        missing: str = "category",
    ) -> None:
        self.categorical = categorical
        self.ordinal = ordinal
        self.max_levels = max_levels
        self.min_frequency = min_frequency
        self.standardize = standardize
        self.missing = missing

    def _fill_missing(self, features: Any) -> tuple[Any, list[str]]:
        """Nulls in non-numeric columns become the level '(missing)' (missing='category')."""
        import polars as pl

        if self.missing != "category":
            return features, []
        cols = [
            c for c, t in features.schema.items()
            if not t.is_numeric() and features.get_column(c).null_count() > 0
        ]
        if not cols:
            return features, []
        filled = features.with_columns(
            [pl.col(c).cast(pl.String).fill_null(MISSING_LEVEL) for c in cols]
        )
        return filled, cols

    def _encoder(self) -> Any:
        from fairaudit.preprocess import CategoricalEncoder

        categorical = self.categorical
        if not isinstance(categorical, str):
            categorical = list(categorical)
        return CategoricalEncoder(
            categorical=categorical,
            ordinal=self.ordinal,
            max_levels=self.max_levels,
            min_frequency=self.min_frequency,
            standardize=self.standardize,
        )

    def fit(self, data: AuditData) -> EncodePreprocessor:
        features, filled = self._fill_missing(data.features)
        self.filled_missing_ = tuple(filled)
        self.encoder_ = self._encoder().fit(features)
        enc = self.encoder_
        self.report_ = {
            "features_out": list(enc.feature_names_out_),
            "source_columns": dict(enc.source_columns_),
            "categorical_columns": list(enc.categorical_columns_),
            "numeric_columns": list(enc.numeric_columns_),
            "ordinal_columns": list(enc.ordinal_columns_),
            "dropped_columns": list(enc.dropped_columns_),
            "bucketed": {col: list(levels) for col, levels in enc.bucketed_.items()},
        }
        return self

    def transform(self, data: AuditData) -> AuditData:
        if not hasattr(self, "encoder_"):
            raise ValueError("the 'encode' preprocessor is not fitted; call fit first")
        features, _ = self._fill_missing(data.features)
        # a column the encoder dropped (constant: it carries nothing) is no feature for any later
        # step either, including those that read the raw columns (FairDen's categorical frame)
        dropped = set(self.encoder_.dropped_columns_)
        roles = dataclasses.replace(
            data.roles, features=tuple(c for c in data.roles.features if c not in dropped))
        return data.replace(features=self.encoder_.transform(features), roles=roles)

    def notes(self) -> tuple[str, ...]:
        enc = getattr(self, "encoder_", None)
        filled = tuple(
            f"nulls in categorical column {c!r} were encoded as the level {MISSING_LEVEL!r}"
            for c in getattr(self, "filled_missing_", ())
        )
        return filled + (tuple(enc.notes_) if enc is not None else ())


@hookimpl
def fairaudit_register_preprocessors() -> list[type[Preprocessor]]:
    return [EncodePreprocessor]
