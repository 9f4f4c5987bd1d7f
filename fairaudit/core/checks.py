"""Input checks the host runs before auditing, computed natively (polars) from the rows and the
exact group counts already in memory.

:func:`run_input_checks` returns one :class:`CheckResult` per check, in a fixed order:

1. ``table_not_empty`` -- the (sampled) input has rows.
2. per sensitive column, in the order given: ``sensitive_exists``, ``sensitive_not_null``
   (at most ``max_null_fraction`` nulls in the sample), ``sensitive_groups`` (at least 2 groups),
   ``sensitive_not_id`` (not ID-like: groups <= 50% of rows and <= 10,000), ``group_min_cell``
   (every group has >= ``min_cell`` rows; a warning), ``sensitive_names_distinct`` (no two group
   names differ only in case, spacing, Unicode form or look-alike letters, e.g. ``'Excellent'`` / ``'excellent '``;
   a warning; not for an ID-like column);
3. ``group_min_cell`` for every other key of ``group_counts`` (intersections such as ``a|b``),
   sorted by key;
4. for the labels column: ``labels_exists``, ``labels_integral`` (numeric labels only: a column
   of strings or categories holds cluster names);
5. per feature, in the order given: ``feature_exists`` and, for numeric features,
   ``feature_not_nan`` and ``feature_finite``.

Checks on a column that does not exist are skipped (its ``*_exists`` check already failed).
Row-level checks run on the host's sample; group checks on the exact full-data group counts, so
they cost nothing per row.

Each check is stated as the Great Expectations expectation that decides it (``expectation`` and
its arguments): this module evaluates it with GX's semantics (NaN counts as null; map checks
skip nulls; an empty table passes a map check vacuously), and
:func:`fairaudit.gx.checks.run_input_checks` runs the very same checks through a GX context (for
GX users, and as the oracle of the tests: both give equal results). Nothing here imports GX.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

from fairaudit.core.check_eval import (
    PARTIAL,
    NativeBackend,
    fold_name,
    is_finite_scalar,
    is_integral_scalar,
    pandas_dtype_name,
    value_counts,
)

__all__ = [
    "ERROR",
    "is_finite_scalar",
    "is_integral_scalar",
    "ID_LIKE_MAX_FRACTION",
    "ID_LIKE_MAX_GROUPS",
    "WARNING",
    "Check",
    "CheckResult",
    "run_input_checks",
]

logger = logging.getLogger(__name__)

ERROR = "error"
"""Severity: the audit cannot be trusted (or run) while this check fails."""
WARNING = "warning"
"""Severity: the audit runs, but the reader should know."""

ID_LIKE_MAX_FRACTION = 0.5
"""A sensitive column with more groups than this fraction of the rows looks like an ID."""
ID_LIKE_MAX_GROUPS = 10_000
"""A sensitive column with more groups than this looks like an ID."""

_SEPARATOR = "|"  # joins column names in intersection keys ("sex|race")
_MAX_NAMED = 10  # at most this many group names / example values in a message
SAMPLE_FORMAT = {"result_format": "SUMMARY", "partial_unexpected_count": PARTIAL}
AGGREGATE_FORMAT = {"result_format": "COMPLETE"}


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one input check.

    Attributes:
        name: stable id, e.g. ``"sensitive_exists[gender]"``.
        expectation: the GX expectation type that states it, e.g. ``"expect_column_to_exist"``.
        column: the column (or intersection key such as ``"sex|race"``) checked, or None for
            table-level checks.
        success: whether the check passed.
        severity: ``"error"`` (the audit cannot be trusted / run) or ``"warning"``.
        observed: short human text: what was seen (names the column and the numbers).
        expected: short human text: what was expected (names the column and the numbers).
    """

    name: str
    expectation: str
    column: str | None
    success: bool
    severity: str
    observed: str
    expected: str

    def to_json(self) -> dict[str, Any]:
        """Plain JSON-serialisable dict with the fields above (the report's ``checks`` entry)."""
        return asdict(self)


@dataclass(frozen=True)
class Check:
    """One check: the GX expectation that states it and how its result reads.

    ``describe`` turns the expectation's result (GX's ``result`` dict: ``observed_value``,
    ``element_count``, ``missing_count``, ``unexpected_count``, ``partial_unexpected_list``,
    ``unexpected_index_list``) into the ``(observed, expected)`` sentences."""

    order: tuple[Any, ...]
    name: str
    column: str | None
    severity: str
    expectation: str
    kwargs: Mapping[str, Any]
    describe: Callable[[Mapping[str, Any]], tuple[str, str]] = field(compare=False)

    def result(self, success: bool, res: Mapping[str, Any]) -> CheckResult:
        observed, expected = self.describe(res)
        return CheckResult(self.name, self.expectation, self.column, bool(success),
                           self.severity, observed, expected)


class Backend(Protocol):
    """Evaluates checks on a frame: :class:`NativeBackend` here, GX in :mod:`fairaudit.gx.checks`."""

    def frame(self, sample: Any, columns: Sequence[str]) -> Any: ...

    def table(self, groups: list[str], counts: list[int]) -> Any: ...

    def run(self, frame: Any, checks: Sequence[Check],
            result_format: dict[str, Any]) -> list[tuple[Check, CheckResult]]: ...

    def close(self) -> None: ...


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def _q(name: object) -> str:
    """Quote a column / group name for messages."""
    return repr(str(name))


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "n/a"


def _names(values: Sequence[str], limit: int = _MAX_NAMED) -> str:
    shown = ", ".join(_q(v) for v in values[:limit])
    if len(values) > limit:
        shown += f", ... ({len(values) - limit:,} more)"
    return shown


def _examples(values: Sequence[Any], limit: int = 3) -> str:
    distinct: list[str] = []
    for value in values:
        text = repr(value)
        if text not in distinct:
            distinct.append(text)
    return ", ".join(distinct[:limit])


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _unexpected_examples(res: Mapping[str, Any]) -> str:
    examples = res.get("partial_unexpected_list") or []
    return f" (e.g. {_examples(examples)})" if examples else ""


def _id_limit(n_rows: int) -> int:
    """Most groups a sensitive column may have before it looks like an ID (never below 2)."""
    return max(2, min(ID_LIKE_MAX_GROUPS, int(n_rows * ID_LIKE_MAX_FRACTION)))


def _group_rows(counts: Mapping[Any, int]) -> tuple[list[str], list[int]]:
    """Groups (null keys dropped) sorted by name, and their counts."""
    rows = sorted(
        (str(k), int(v))
        for k, v in counts.items()
        if k is not None and not (isinstance(k, float) and math.isnan(k))
    )
    return [g for g, _ in rows], [c for _, c in rows]


# --------------------------------------------------------------------------------------------
# check builders
# --------------------------------------------------------------------------------------------


def _exists_check(order: tuple[Any, ...], kind: str, column: str, present: bool) -> Check:
    role = {"sensitive": "sensitive column", "labels": "labels column", "feature": "feature"}[kind]

    def describe(_: Any) -> tuple[str, str]:
        seen = "is present" if present else "is missing from the data"
        return f"{role} {_q(column)} {seen}", f"{role} {_q(column)} exists"

    return Check(order, f"{kind}_exists[{column}]", column, ERROR, "expect_column_to_exist",
                 {"column": column}, describe)


def _not_null_check(order: tuple[Any, ...], name: str, column: str, mostly: float,
                    what: str) -> Check:
    def describe(res: Mapping[str, Any]) -> tuple[str, str]:
        n = int(res.get("element_count", 0))
        bad = int(res.get("unexpected_count", 0))
        observed = f"{_q(column)}: {bad:,} of {n:,} sampled rows are {what} ({_pct(bad, n)})"
        if mostly >= 1.0:
            expected = f"{_q(column)}: no {what} values"
        else:
            expected = f"{_q(column)}: at most {100 * (1 - mostly):.1f}% {what} values"
        return observed, expected

    return Check(order, f"{name}[{column}]", column, ERROR,
                 "expect_column_values_to_not_be_null", {"column": column, "mostly": mostly},
                 describe)


def _group_checks(key: str, groups: list[str], counts: list[int], *, is_column: bool,
                  list_names: bool, n_rows: int, min_cell: int, order: tuple[Any, ...],
                  counted_on: str) -> list[Check]:
    n_groups = len(groups)
    checks: list[Check] = []
    if is_column:

        def describe_groups(res: Mapping[str, Any]) -> tuple[str, str]:
            seen = int(res.get("observed_value") or 0)
            observed = f"{_q(key)} has {_plural(seen, 'group')}"
            if 0 < seen <= 3:
                observed += f" ({_names(groups)})"
            observed += f" in {counted_on}"
            return observed, f"{_q(key)}: at least 2 groups to compare"

        checks.append(Check((*order, 0), f"sensitive_groups[{key}]", key, ERROR,
                            "expect_table_row_count_to_be_between", {"min_value": 2},
                            describe_groups))
        limit = _id_limit(n_rows)

        def describe_id(res: Mapping[str, Any]) -> tuple[str, str]:
            seen = int(res.get("observed_value") or 0)
            observed = (
                f"{_q(key)} has {_plural(seen, 'distinct value')} in {n_rows:,} rows "
                f"({_pct(seen, n_rows)})"
            )
            if seen > limit:
                observed += (
                    "; it is probably an ID or free-text column, not a sensitive attribute "
                    "(choose a grouping column, or bin it first)"
                )
            expected = (
                f"{_q(key)}: at most {limit:,} groups (no more than "
                f"{100 * ID_LIKE_MAX_FRACTION:.0f}% of rows and {ID_LIKE_MAX_GROUPS:,})"
            )
            return observed, expected

        checks.append(Check((*order, 1), f"sensitive_not_id[{key}]", key, ERROR,
                            "expect_table_row_count_to_be_between", {"max_value": limit},
                            describe_id))

    if is_column and list_names:
        checks.append(_distinct_names_check(key, groups, order))

    def describe_cells(res: Mapping[str, Any]) -> tuple[str, str]:
        idx = sorted(int(i) for i in (res.get("unexpected_index_list") or []))
        small = sorted(((counts[i], groups[i]) for i in idx), key=lambda t: (t[0], t[1]))
        if n_groups == 0:
            observed = f"{_q(key)}: no groups to check"
        elif not small:
            observed = (
                f"{_q(key)}: every one of {_plural(n_groups, 'group')} has at least "
                f"{_plural(min_cell, 'row')}"
            )
        else:
            if not list_names:
                # the names of an ID-like column's groups are identifiers: never list them
                detail = "names not listed (the attribute looks like an ID)"
            else:
                detail = ", ".join(f"{_q(g)} (n={c:,})" for c, g in small[:_MAX_NAMED])
                if len(small) > _MAX_NAMED:
                    detail += f", ... ({len(small) - _MAX_NAMED:,} more)"
            verb = "has" if len(small) == 1 else "have"
            observed = (
                f"{_q(key)}: {len(small):,} of {_plural(n_groups, 'group')} {verb} fewer than "
                f"{min_cell:,} rows: {detail}"
            )
        expected = f"{_q(key)}: every group has at least min_cell={min_cell:,} rows"
        return observed, expected

    checks.append(Check((*order, 2), f"group_min_cell[{key}]", key, WARNING,
                        "expect_column_values_to_be_between",
                        {"column": "count", "min_value": min_cell}, describe_cells))
    return checks


def _distinct_names_check(key: str, groups: list[str], order: tuple[Any, ...]) -> Check:
    """Group names of one column that differ only in case, spacing, Unicode form or look-alike letters
    (``'Excellent'``, ``'excellent '``): audited as separate groups, probably one group spelled
    two ways. A warning; the data are never changed (on the distinct names only)."""

    def describe(res: Mapping[str, Any]) -> tuple[str, str]:
        sets: dict[str, list[str]] = {}
        for i in sorted(int(i) for i in (res.get("unexpected_index_list") or [])):
            sets.setdefault(fold_name(groups[i]), []).append(groups[i])
        expected = (f"{_q(key)}: group names that differ in more than case or surrounding "
                    "spaces")
        if not sets:
            return f"{_q(key)}: no two group names differ only in case, spacing, Unicode form or look-alike letters", \
                expected
        shown = "; ".join(", ".join(_q(g) for g in names) for names in list(sets.values())[:5])
        if len(sets) > 5:
            shown += f"; ... ({len(sets) - 5:,} more)"
        n = sum(len(v) for v in sets.values())
        observed = (
            f"{_q(key)}: {n:,} group names differ only in case, spacing, Unicode form or look-alike letters and are "
            f"audited as separate groups: {shown}; if each set is one group, fix the values "
            "upstream (e.g. trim and lower-case the column) and audit again: fairaudit does not "
            "change the data")
        return observed, expected

    return Check((*order, 3), f"sensitive_names_distinct[{key}]", key, WARNING,
                 "expect_column_values_to_be_unique", {"column": "folded"}, describe)


def _map_describe(column: str, dtype: str, failing: str,
                  wanted: str) -> Callable[[Mapping[str, Any]], tuple[str, str]]:
    """The sentences of a map check (integral, finite): how many non-null values fail it."""

    def describe(res: Mapping[str, Any]) -> tuple[str, str]:
        n = int(res.get("element_count", 0)) - int(res.get("missing_count", 0))
        bad = int(res.get("unexpected_count", 0))
        observed = (f"{_q(column)}{dtype}: {bad:,} of {n:,} non-null sampled values {failing}"
                    f"{_unexpected_examples(res)}")
        return observed, f"{_q(column)}: {wanted}"

    return describe


def _row_checks(kinds: Mapping[str, str], *, sensitive: list[str], labels: str | None,
                labels_are_names: bool, features: list[str], n_rows: int,
                max_null_fraction: float) -> list[Check]:
    """The checks on the sampled rows (``kinds``: present column -> its pandas dtype name)."""

    def describe_rows(res: Mapping[str, Any]) -> tuple[str, str]:
        seen = int(res.get("observed_value") or 0)
        return (
            f"the input has {n_rows:,} rows ({seen:,} in the checked sample)",
            "the input has at least 1 row",
        )

    checks = [Check((0,), "table_not_empty", None, ERROR,
                    "expect_table_row_count_to_be_between", {"min_value": 1}, describe_rows)]
    mostly = 1.0 - float(max_null_fraction)
    for i, column in enumerate(sensitive):
        checks.append(_exists_check((1, i, 0), "sensitive", column, column in kinds))
        if column in kinds:
            checks.append(_not_null_check((1, i, 1), "sensitive_not_null", column, mostly, "null"))
    if labels is not None:
        checks.append(_exists_check((3, 0), "labels", labels, labels in kinds))
        if labels in kinds and not labels_are_names:  # names (strings) are cluster names

            describe_labels = _map_describe(
                labels, f" (dtype {kinds[labels]})", "are not integers",
                "integer cluster labels (-1 = noise)")
            checks.append(Check((3, 1), f"labels_integral[{labels}]", labels, ERROR,
                                "expect_column_values_to_be_integral", {"column": labels},
                                describe_labels))
    for i, column in enumerate(features):
        checks.append(_exists_check((4, i, 0), "feature", column, column in kinds))
        if column not in kinds or kinds[column] in ("object", "bool"):
            continue
        checks.append(_not_null_check((4, i, 1), "feature_not_nan", column, 1.0, "null/NaN"))

        describe_finite = _map_describe(column, "", "are infinite",
                                        "finite numeric values only")
        checks.append(Check((4, i, 2), f"feature_finite[{column}]", column, ERROR,
                            "expect_column_values_to_be_finite", {"column": column},
                            describe_finite))
    return checks


# --------------------------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------------------------


def _validate_parameters(min_cell: int, n_rows: int, max_null_fraction: float) -> None:
    if isinstance(min_cell, bool) or not isinstance(min_cell, int) or min_cell < 1:
        raise ValueError(
            f"The 'min_cell' parameter of run_input_checks must be an int >= 1; got {min_cell!r}."
        )
    if isinstance(n_rows, bool) or not isinstance(n_rows, int) or n_rows < 0:
        raise ValueError(
            f"The 'n_rows' parameter of run_input_checks must be an int >= 0; got {n_rows!r}."
        )
    if not (0.0 <= float(max_null_fraction) <= 1.0):
        raise ValueError(
            "The 'max_null_fraction' parameter of run_input_checks must be a number in [0, 1]; "
            f"got {max_null_fraction!r}."
        )


def run_input_checks(
    sample: Any,
    *,
    sensitive: Sequence[str],
    labels: str | None,
    features: Sequence[str],
    group_counts: Mapping[str, Mapping[Any, int]],
    min_cell: int,
    n_rows: int,
    max_null_fraction: float = 0.05,
    backend: Backend | None = None,
) -> tuple[CheckResult, ...]:
    """Run the input checks and return their results.

    Args:
        sample: the input's relevant columns (the host passes its rows in memory, or a sample of
            at most ~100k rows): a polars DataFrame (a pandas DataFrame is accepted too).
        sensitive: sensitive column names, in report order.
        labels: the labels column of an existing clustering, or None.
        features: feature column names (numeric ones are checked for NaN / +-inf).
        group_counts: per sensitive attribute (and intersection key ``"a|b"``), the exact
            group -> row count on the full data; null keys are ignored (nulls are checked on the
            sample). A sensitive column missing from this mapping is counted on the sample.
        min_cell: groups with fewer rows are reported (warning).
        n_rows: rows in the full data (for the ID-like rule).
        max_null_fraction: largest tolerated fraction of nulls in a sensitive column.
        backend: what evaluates the checks: native polars (default), or
            :func:`fairaudit.gx.checks.run_input_checks`'s Great Expectations context.

    Returns:
        The check results, ordered as described in the module docstring.

    Raises:
        ValueError: for an invalid ``min_cell``, ``n_rows`` or ``max_null_fraction``.
        TypeError: when ``sample`` is not a polars (or pandas) DataFrame.
    """
    import polars as pl

    _validate_parameters(min_cell, n_rows, max_null_fraction)
    started = time.perf_counter()
    sensitive = list(dict.fromkeys(sensitive))
    features = [f for f in dict.fromkeys(features) if f not in sensitive and f != labels]
    wanted = list(dict.fromkeys([*sensitive, *([labels] if labels is not None else []),
                                 *features]))
    native = NativeBackend()
    rows = native.frame(sample, wanted)  # polars: the column kinds GX would see
    kinds = {c: pandas_dtype_name(rows.get_column(c)) for c in rows.columns}
    if not isinstance(sample, pl.DataFrame):  # pandas: its own dtypes
        from pandas.api.types import is_numeric_dtype

        kinds = {c: str(sample[c].dtype) if is_numeric_dtype(sample[c].dtype) else "object"
                 for c in rows.columns}
    # GX needs non-empty column names: an unnamed column (a CSV's empty header) is checked as
    # "(unnamed column)" and its results name it by its real (empty) name again
    alias = {c: f"(unnamed column{'' if i == 0 else f' {i + 1}'})"
             for i, c in enumerate(c for c in wanted if not c.strip())}
    if alias:
        rows = rows.rename({c: a for c, a in alias.items() if c in rows.columns})
        kinds = {alias.get(c, c): k for c, k in kinds.items()}
        sensitive = [alias.get(c, c) for c in sensitive]
        features = [alias.get(c, c) for c in features]
        group_counts = {alias.get(k, k): v for k, v in group_counts.items()}
        labels = alias.get(labels, labels) if labels is not None else None
    labels_are_names = labels is not None and labels in kinds and kinds[labels] == "object"
    backend = backend or native
    try:
        frame = rows if backend is native else backend.frame(rows, list(rows.columns))
        results = backend.run(frame, _row_checks(
            kinds, sensitive=sensitive, labels=labels, labels_are_names=labels_are_names,
            features=features, n_rows=n_rows, max_null_fraction=max_null_fraction,
        ), SAMPLE_FORMAT)
        results += _run_group_checks(backend, rows, sensitive=sensitive,
                                     group_counts=group_counts, min_cell=min_cell, n_rows=n_rows)
    finally:
        backend.close()
    results.sort(key=lambda pair: pair[0].order)
    logger.debug("ran %d input checks in %.2f s", len(results), time.perf_counter() - started)
    out = tuple(result for _, result in results)
    if alias:
        back = {a: c for c, a in alias.items()}
        out = tuple(replace(r, column=back.get(r.column, r.column)) for r in out)
    return out


def _run_group_checks(backend: Backend, rows: Any, *, sensitive: list[str],
                      group_counts: Mapping[str, Mapping[Any, int]], min_cell: int,
                      n_rows: int) -> list[tuple[Check, CheckResult]]:
    """Group-level checks on small tables of the exact full-data counts."""
    extra_keys = sorted(k for k in group_counts if k not in sensitive)
    jobs: list[tuple[str, bool, tuple[Any, ...]]] = [
        (c, True, (1, i, 2)) for i, c in enumerate(sensitive)
    ]
    jobs += [(k, False, (2, j)) for j, k in enumerate(extra_keys)]
    id_like: set[str] = set()  # filled column by column; intersections come after the columns
    out: list[tuple[Check, CheckResult]] = []
    for key, is_column, order in jobs:
        if key in group_counts:
            counts = group_counts[key]
            counted_on = f"{n_rows:,} rows"
        elif is_column and key in rows.columns:
            counts = value_counts(rows.get_column(key))
            counted_on = f"the {rows.height:,}-row sample"
            logger.debug("group_counts has no entry for %r; counting it on the sample", key)
        else:
            continue
        groups, sizes = _group_rows(counts)
        if is_column and len(groups) > _id_limit(n_rows):
            id_like.add(key)
        checks = _group_checks(key, groups, sizes, is_column=is_column,
                               list_names=not (id_like & {key, *key.split(_SEPARATOR)}),
                               n_rows=n_rows, min_cell=min_cell, order=order,
                               counted_on=counted_on)
        out += backend.run(backend.table(groups, sizes), checks, AGGREGATE_FORMAT)
    return out
