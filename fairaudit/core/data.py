"""The data model that flows between chain steps.

Everything here is frozen: a step returns ``data.replace(...)`` and never mutates what it got.
Rows are dropped only through :meth:`AuditData.filter_rows`, which keeps every aligned array in sync
and records why. :meth:`AuditData.feature_matrix` is the single place features become numpy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fairaudit.errors import InputError, MissingArtifactError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import polars as pl

ROW_ID = "__fairaudit_row__"
"""Name of the row-number column the host adds to every input (0-based position in the input)."""

INTERSECTION_SEP = "|"


@dataclass(frozen=True)
class ColumnRoles:
    """Which input column plays which part."""

    sensitive: tuple[str, ...]
    features: tuple[str, ...]
    labels: str | None = None
    ordinal: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Sensitive attributes declared ordinal, with their group order (used by Wd)."""
    excluded: Mapping[str, str] = field(default_factory=dict)
    """Columns left out of the features, with the reason."""

    @property
    def intersection(self) -> str | None:
        """Name of the intersectional attribute (``None`` with a single sensitive attribute)."""
        if len(self.sensitive) < 2:
            return None
        return INTERSECTION_SEP.join(self.sensitive)

    @property
    def attributes(self) -> tuple[str, ...]:
        """Every attribute audited: each sensitive column, then the intersection."""
        inter = self.intersection
        return self.sensitive + ((inter,) if inter else ())


@dataclass(frozen=True)
class Labelling:
    """One clustering of the in-memory rows (an existing column or a clusterer's output)."""

    name: str
    labels: np.ndarray
    """int64 per row of ``AuditData.frame``; -1 = noise."""
    origin: str
    """``"column"`` for a labels column in the data, ``"clusterer"`` otherwise."""
    column: str | None = None
    """Source column (its counting metrics use every row of the input, not just a sample)."""
    component: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    memberships: np.ndarray | None = None
    prototypes: np.ndarray | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    notes: tuple[str, ...] = ()
    fit: Mapping[str, Any] = field(default_factory=dict)
    """What the fitted clusterer reported about its fit (``fairaudit.core.fit_quality.fit_diagnostics``)."""

    @property
    def n_clusters(self) -> int:
        import numpy as np

        return int(np.unique(self.labels[self.labels >= 0]).size)


@dataclass(frozen=True)
class SensitiveCodes:
    """Sensitive attributes as integer codes (for fair clusterers and counting)."""

    names: tuple[str, ...]
    codes: np.ndarray
    """n x a int64 codes, one column per attribute."""
    categories: tuple[tuple[str, ...], ...]
    """Group names per attribute, indexed by code."""

    def intersection(self) -> tuple[np.ndarray, tuple[str, ...]]:
        """Codes of the intersectional attribute and its group names (``a|b``)."""
        import numpy as np

        if self.codes.shape[1] == 1:
            return self.codes[:, 0].copy(), self.categories[0]
        uniq, inv = np.unique(self.codes, axis=0, return_inverse=True)
        names = tuple(
            INTERSECTION_SEP.join(self.categories[j][int(c)] for j, c in enumerate(row))
            for row in uniq
        )
        return inv.reshape(-1).astype(np.int64), names


@dataclass(frozen=True)
class GroupTable:
    """Group x cluster counts for one attribute of one labelling. Noise is kept apart."""

    attribute: str
    groups: tuple[str, ...]
    clusters: tuple[int, ...]
    counts: np.ndarray
    """groups x clusters, int64; every row and column has a positive sum."""
    noise: np.ndarray
    """Noise rows (label -1) per group, int64."""
    ordinal: bool = False
    """True when ``groups`` is in a declared order (ordinal Wd)."""

    def with_counts(self, counts: np.ndarray) -> GroupTable:
        return dataclasses.replace(self, counts=counts)

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    @property
    def n_noise(self) -> int:
        return int(self.noise.sum())


@dataclass(frozen=True)
class AuditData:
    """The rows a chain works on, their column roles, and what earlier steps produced."""

    frame: pl.DataFrame
    """In-memory rows: the row id, raw features, sensitive and labels columns."""
    roles: ColumnRoles
    features: pl.DataFrame
    """The feature table clusterers see (numeric after preprocessing)."""
    labellings: Mapping[str, Labelling] = field(default_factory=dict)
    n_input_rows: int = 0
    """Rows in the whole input (before exclusions and sampling)."""
    sample_note: str | None = None
    include_sensitive: bool = True
    notes: tuple[str, ...] = ()
    exclusions: Mapping[str, int] = field(default_factory=dict)
    """Rows dropped from the in-memory data, by reason."""
    _memo: dict[str, Any] | None = field(default=None, init=False, repr=False, compare=False)
    """Arrays computed once and shared by every step that asks (see :meth:`shared`); ``None``:
    each call computes them afresh. Not copied by ``replace`` (a changed table is other data)."""

    # ----------------------------------------------------------------- basic views
    @property
    def n_rows(self) -> int:
        return self.frame.height

    def replace(self, **changes: Any) -> AuditData:
        return dataclasses.replace(self, **changes)

    def require(self, key: str) -> None:
        """Raise :class:`MissingArtifactError` unless artifact ``key`` is available."""
        ok = {
            "features": self.features.width > 0,
            "categorical": True,
            "sensitive": self.include_sensitive and bool(self.roles.sensitive),
            "labels": bool(self.labellings),
            "labellings": bool(self.labellings),
            "prototypes": any(lab.prototypes is not None for lab in self.labellings.values()),
            "memberships": any(lab.memberships is not None for lab in self.labellings.values()),
            "weights": False,
        }.get(key, False)
        if not ok:
            raise MissingArtifactError(f"this step needs {key!r}, which no earlier step provided")

    def without_sensitive(self) -> AuditData:
        """The view given to components that do not declare ``sensitive``."""
        return self._sharing(dataclasses.replace(self, include_sensitive=False))

    def shared(self) -> AuditData:
        """The same data, computing :meth:`feature_matrix` and :meth:`sensitive_codes` once for
        every step that asks (the assignment pass: five labellings' ``predict`` on one batch).
        Their arrays are then read-only: a step that wants to change one copies it first (steps
        never change their input). Views (:meth:`without_sensitive`, :meth:`with_labelling`)
        share the arrays; any other change (``replace``) drops them."""
        out = dataclasses.replace(self)
        object.__setattr__(out, "_memo", {})
        return out

    def _sharing(self, view: AuditData) -> AuditData:
        """``view`` (same rows and features) with this data's shared arrays."""
        if self._memo is not None:
            object.__setattr__(view, "_memo", self._memo)
        return view

    @property
    def row_ids(self) -> np.ndarray:
        return self.frame.get_column(ROW_ID).to_numpy()

    def feature_matrix(self) -> np.ndarray:
        """The features as a float64 array (n x d, C order). The only place features become
        numpy."""
        memo = self._memo
        if memo is not None and "X" in memo:
            return memo["X"]
        X = self._feature_matrix()
        if memo is not None:
            X.flags.writeable = False
            memo["X"] = X
        return X

    def _feature_matrix(self) -> np.ndarray:
        import numpy as np
        import polars as pl

        if self.features.width == 0:
            raise InputError("no feature columns are left to cluster on (see --features/--exclude)")
        bad = [
            c for c, t in self.features.schema.items()
            if not (t.is_numeric() or t == pl.Boolean)
        ]
        if bad:
            raise InputError(
                "feature column(s) " + ", ".join(repr(c) for c in bad) + " are not numeric; "
                "add the 'encode' preprocessor (chain file: [[preprocess]] use = \"encode\"; Python: "
                "StepSpec('preprocess', 'encode')) "
                "or exclude them"
            )
        # C order straight from polars: 7x faster than its default Fortran order and a copy
        X = self.features.cast({c: pl.Float64 for c in self.features.columns}).to_numpy(
            order="c", writable=True)
        X = np.ascontiguousarray(X, dtype=np.float64)
        if not np.isfinite(X).all():
            cols = [
                self.features.columns[j] for j in np.flatnonzero(~np.isfinite(X).all(axis=0))
            ]
            raise InputError(
                "feature column(s) " + ", ".join(repr(c) for c in cols)
                + " contain missing or non-finite values; exclude them or use "
                "--on-nonfinite drop"
            )
        return X

    @property
    def feature_names(self) -> tuple[str, ...]:
        return tuple(self.features.columns)

    def categorical_frame(self) -> pl.DataFrame:
        """Raw (unencoded) categorical feature columns, for components that use them directly."""
        import polars as pl

        cols = [
            c for c in self.roles.features
            if c in self.frame.columns
            and self.frame.schema[c] in (pl.String, pl.Categorical, pl.Boolean)
            or (c in self.frame.columns and isinstance(self.frame.schema[c], pl.Enum))
        ]
        return self.frame.select(cols)

    def numeric_raw_frame(self) -> pl.DataFrame:
        """Raw numeric feature columns (before any preprocessing)."""
        cols = [
            c for c in self.roles.features
            if c in self.frame.columns and self.frame.schema[c].is_numeric()
        ]
        return self.frame.select(cols)

    def sensitive_codes(self) -> SensitiveCodes:
        """Sensitive attributes as integer codes. Only for components that require them.

        Codes number a column's values (as strings; a null is ``"None"``) in sorted order, or
        in the declared order of an ordinal column."""
        import numpy as np

        if not self.include_sensitive:
            raise MissingArtifactError(
                "sensitive attributes are not given to this component: declare 'sensitive' in "
                "its requires"
            )
        memo = self._memo
        if memo is not None and "sensitive_codes" in memo:
            return memo["sensitive_codes"]
        codes = []
        cats = []
        for name in self.roles.sensitive:
            c, levels = _codes(self.frame.get_column(name), self.roles.ordinal.get(name))
            codes.append(c)
            cats.append(levels)
        out = SensitiveCodes(
            tuple(self.roles.sensitive), np.column_stack(codes).astype(np.int64), tuple(cats)
        )
        if memo is not None:
            out.codes.flags.writeable = False
            memo["sensitive_codes"] = out
        return out

    # ----------------------------------------------------------------- changes
    def with_labelling(self, labelling: Labelling) -> AuditData:
        if labelling.name in self.labellings:
            raise ValueError(f"a labelling named {labelling.name!r} already exists")
        return self._sharing(dataclasses.replace(
            self, labellings={**self.labellings, labelling.name: labelling}
        ))

    def filter_rows(self, mask: np.ndarray, reason: str) -> AuditData:
        """Keep rows where ``mask`` is true, in every aligned table, recording ``reason``."""
        import numpy as np
        import polars as pl

        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (self.n_rows,):
            raise ValueError(f"mask has shape {mask.shape}; expected ({self.n_rows},)")
        dropped = int((~mask).sum())
        if dropped == 0:
            return self
        keep = pl.Series(mask)
        labellings = {
            name: dataclasses.replace(
                lab,
                labels=lab.labels[mask],
                memberships=None if lab.memberships is None else lab.memberships[mask],
            )
            for name, lab in self.labellings.items()
        }
        excl = dict(self.exclusions)
        excl[reason] = excl.get(reason, 0) + dropped
        return dataclasses.replace(
            self,
            frame=self.frame.filter(keep),
            features=self.features.filter(keep),
            labellings=labellings,
            exclusions=excl,
        )


def _codes(column: pl.Series, order: Any) -> tuple[np.ndarray, tuple[str, ...]]:
    """Integer codes of one sensitive column and its levels: the values as strings (null:
    ``"None"``) numbered in sorted order (code point order, as ``np.unique``), or in ``order``
    (an ordinal column's declared levels; a value outside them is a ``KeyError``). Through a
    polars Enum: 20x faster than sorting the strings in numpy (same codes)."""
    import numpy as np
    import polars as pl

    values = column.cast(pl.String).fill_null("None")
    if order:
        levels = tuple(order)
        if all(isinstance(v, str) for v in levels) and len(set(levels)) == len(levels):
            try:
                c = values.cast(pl.Enum(list(levels))).to_physical().to_numpy()
                return c.astype(np.int64), levels
            except pl.exceptions.InvalidOperationError:
                pass  # a value outside the levels: the KeyError below names it
        lookup = {v: i for i, v in enumerate(levels)}
        return np.array([lookup[v] for v in values.to_list()], dtype=np.int64), levels
    uniq = values.unique().sort()
    c = values.cast(pl.Enum(uniq.to_list())).to_physical().to_numpy()
    return c.astype(np.int64), tuple(uniq.to_list())


def sample_rows(n: int, max_rows: int | None, seed: int | None) -> np.ndarray:
    """Sorted row positions of a seeded sample of at most ``max_rows`` of ``n`` rows
    (every row when ``max_rows`` is None or not smaller than ``n``)."""
    import numpy as np

    if max_rows is None or n <= max_rows:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, int(max_rows), replace=False))
