"""Input checks the host runs before auditing, through an in-memory Great Expectations context.

:func:`run_input_checks` validates the columns that matter with GX 1.x and returns one
:class:`CheckResult` per check, in a fixed order:

1. ``table_not_empty`` -- the (sampled) input has rows.
2. per sensitive column, in the order given: ``sensitive_exists``, ``sensitive_not_null``
   (at most ``max_null_fraction`` nulls in the sample), ``sensitive_groups`` (at least 2 groups),
   ``sensitive_not_id`` (not ID-like: groups <= 50% of rows and <= 10,000), ``group_min_cell``
   (every group has >= ``min_cell`` rows; a warning);
3. ``group_min_cell`` for every other key of ``group_counts`` (intersections such as ``a|b``),
   sorted by key;
4. for the labels column: ``labels_exists``, ``labels_integral`` (numeric labels only: a column
   of strings or categories holds cluster names);
5. per feature, in the order given: ``feature_exists`` and, for numeric features,
   ``feature_not_nan`` and ``feature_finite``.

Checks on a column that does not exist are skipped (its ``*_exists`` check already failed).
Row-level checks run on the host's sample (converted to pandas without pyarrow); group checks run
on small pandas frames of the exact full-data group counts, so they cost nothing per row.

Great Expectations is imported only inside :func:`run_input_checks`, never at import time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import polars

__all__ = [
    "ERROR",
    "ID_LIKE_MAX_FRACTION",
    "ID_LIKE_MAX_GROUPS",
    "WARNING",
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
_SAMPLE_FORMAT = {"result_format": "SUMMARY", "partial_unexpected_count": 20}
_AGGREGATE_FORMAT = {"result_format": "COMPLETE"}


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one input check.

    Attributes:
        name: stable id, e.g. ``"sensitive_exists[gender]"``.
        expectation: the GX expectation type used, e.g. ``"expect_column_to_exist"``.
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


def _group_frame(counts: Mapping[Any, int]) -> pd.DataFrame:
    """One row per group (null keys dropped), sorted by group name: columns group, count."""
    import numpy as np
    import pandas as pd

    rows = sorted(
        (str(k), int(v))
        for k, v in counts.items()
        if k is not None and not (isinstance(k, float) and np.isnan(k))
    )
    return pd.DataFrame(
        {
            "group": pd.Series([g for g, _ in rows], dtype=object),
            "count": np.asarray([c for _, c in rows], dtype=np.int64),
        }
    )


@dataclass(frozen=True)
class _Spec:
    """One check: the GX expectation to run and how to turn its result into a CheckResult."""

    order: tuple[Any, ...]
    name: str
    column: str | None
    severity: str
    expectation: Any
    describe: Callable[[Any], tuple[str, str]]  # GX result -> (observed, expected)


def _exception_message(info: Any) -> str | None:
    """First line of the error GX caught while evaluating an expectation, or None.

    GX reports either ``{"raised_exception": ..., "exception_message": ...}`` or, when a metric
    failed, a dict of such records keyed by metric id.
    """
    if not isinstance(info, Mapping):
        return None
    records = [info] if "raised_exception" in info else list(info.values())
    for record in records:
        if isinstance(record, Mapping) and record.get("raised_exception"):
            text = str(record.get("exception_message") or "unknown error").strip()
            return text.splitlines()[0] if text else "unknown error"
    return None


class _Runner:
    """Validates frames against lists of specs in one ephemeral GX context."""

    def __init__(self) -> None:
        from fairaudit.gx import expectations as fx  # first: switches GX analytics off

        # isort: split
        import great_expectations as gx
        from great_expectations.data_context.data_context.context_factory import project_manager
        from great_expectations.exceptions import DataContextRequiredError

        self._gx = gx
        # gx.get_context() makes its context the process-wide "current" one; remember the
        # caller's so that close() can give it back (their own GX work is left as it was).
        try:
            self._previous = project_manager.get_current_project()
        except DataContextRequiredError:
            self._previous = None
        self._context = fx.ephemeral_context()
        asset = self._context.data_sources.add_pandas(name="fairaudit").add_dataframe_asset(
            name="frame"
        )
        self._batch_definition = asset.add_batch_definition_whole_dataframe("whole")
        self._n_suites = 0

    def close(self) -> None:
        """Restore the caller's current GX context (or none)."""
        self._gx.data_context.set_context(self._previous)

    def run(
        self, frame: pd.DataFrame, specs: Sequence[_Spec], result_format: dict[str, Any]
    ) -> list[tuple[_Spec, CheckResult]]:
        if not specs:
            return []
        self._n_suites += 1
        suite = self._gx.ExpectationSuite(name=f"fairaudit_input_checks_{self._n_suites}")
        for i, spec in enumerate(specs):
            spec.expectation.meta = {"fairaudit_check": i}
            suite.add_expectation(spec.expectation)
        batch = self._batch_definition.get_batch(batch_parameters={"dataframe": frame})
        validation = batch.validate(suite, result_format=result_format)
        by_index = {r.expectation_config.meta["fairaudit_check"]: r for r in validation.results}
        out = []
        for i, spec in enumerate(specs):
            result = by_index[i]
            expectation_type = result.expectation_config.type
            message = _exception_message(result.exception_info)
            if message is not None:
                observed = f"{_q(spec.column)}: the check could not be evaluated: {message}"
                expected = f"{_q(spec.column)}: a column the check can evaluate"
                success = False
            else:
                observed, expected = spec.describe(result.result)
                success = bool(result.success)
            out.append(
                (
                    spec,
                    CheckResult(
                        name=spec.name,
                        expectation=expectation_type,
                        column=spec.column,
                        success=success,
                        severity=spec.severity,
                        observed=observed,
                        expected=expected,
                    ),
                )
            )
        return out


# --------------------------------------------------------------------------------------------
# check builders
# --------------------------------------------------------------------------------------------


def _exists_spec(order: tuple[Any, ...], kind: str, column: str, present: bool, gx: Any) -> _Spec:
    role = {"sensitive": "sensitive column", "labels": "labels column", "feature": "feature"}[kind]

    def describe(_: Any) -> tuple[str, str]:
        seen = "is present" if present else "is missing from the data"
        return f"{role} {_q(column)} {seen}", f"{role} {_q(column)} exists"

    return _Spec(
        order,
        f"{kind}_exists[{column}]",
        column,
        ERROR,
        gx.expectations.ExpectColumnToExist(column=column),
        describe,
    )


def _not_null_spec(
    order: tuple[Any, ...], name: str, column: str, mostly: float, what: str, gx: Any
) -> _Spec:
    def describe(res: Mapping[str, Any]) -> tuple[str, str]:
        n = int(res.get("element_count", 0))
        bad = int(res.get("unexpected_count", 0))
        observed = f"{_q(column)}: {bad:,} of {n:,} sampled rows are {what} ({_pct(bad, n)})"
        if mostly >= 1.0:
            expected = f"{_q(column)}: no {what} values"
        else:
            expected = f"{_q(column)}: at most {100 * (1 - mostly):.1f}% {what} values"
        return observed, expected

    return _Spec(
        order,
        f"{name}[{column}]",
        column,
        ERROR,
        gx.expectations.ExpectColumnValuesToNotBeNull(column=column, mostly=mostly),
        describe,
    )


def _unexpected_examples(res: Mapping[str, Any]) -> str:
    examples = res.get("partial_unexpected_list") or []
    return f" (e.g. {_examples(examples)})" if examples else ""


def _id_limit(n_rows: int) -> int:
    """Most groups a sensitive column may have before it looks like an ID (never below 2)."""
    return max(2, min(ID_LIKE_MAX_GROUPS, int(n_rows * ID_LIKE_MAX_FRACTION)))


def _group_specs(
    key: str,
    frame: pd.DataFrame,
    *,
    is_column: bool,
    list_names: bool,
    n_rows: int,
    min_cell: int,
    order: tuple[Any, ...],
    gx: Any,
    counted_on: str,
) -> list[_Spec]:
    groups = frame["group"].tolist()
    counts = frame["count"].tolist()
    n_groups = len(groups)
    specs: list[_Spec] = []
    if is_column:

        def describe_groups(res: Mapping[str, Any]) -> tuple[str, str]:
            seen = int(res.get("observed_value") or 0)
            observed = f"{_q(key)} has {_plural(seen, 'group')}"
            if 0 < seen <= 3:
                observed += f" ({_names(groups)})"
            observed += f" in {counted_on}"
            return observed, f"{_q(key)}: at least 2 groups to compare"

        specs.append(
            _Spec(
                (*order, 0),
                f"sensitive_groups[{key}]",
                key,
                ERROR,
                gx.expectations.ExpectTableRowCountToBeBetween(min_value=2),
                describe_groups,
            )
        )
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

        specs.append(
            _Spec(
                (*order, 1),
                f"sensitive_not_id[{key}]",
                key,
                ERROR,
                gx.expectations.ExpectTableRowCountToBeBetween(max_value=limit),
                describe_id,
            )
        )

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

    specs.append(
        _Spec(
            (*order, 2),
            f"group_min_cell[{key}]",
            key,
            WARNING,
            gx.expectations.ExpectColumnValuesToBeBetween(column="count", min_value=min_cell),
            describe_cells,
        )
    )
    return specs


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
    sample: polars.DataFrame,
    *,
    sensitive: Sequence[str],
    labels: str | None,
    features: Sequence[str],
    group_counts: Mapping[str, Mapping[Any, int]],
    min_cell: int,
    n_rows: int,
    max_null_fraction: float = 0.05,
) -> tuple[CheckResult, ...]:
    """Run the input checks through an ephemeral GX context and return their results.

    Args:
        sample: the input's relevant columns (the host passes a seeded sample of at most ~100k
            rows). A pandas DataFrame is accepted too.
        sensitive: sensitive column names, in report order.
        labels: the labels column of an existing clustering, or None.
        features: feature column names (numeric ones are checked for NaN / +-inf).
        group_counts: per sensitive attribute (and intersection key ``"a|b"``), the exact
            group -> row count on the full data; null keys are ignored (nulls are checked on the
            sample). A sensitive column missing from this mapping is counted on the sample.
        min_cell: groups with fewer rows are reported (warning).
        n_rows: rows in the full data (for the ID-like rule).
        max_null_fraction: largest tolerated fraction of nulls in a sensitive column.

    Returns:
        The check results, ordered as described in the module docstring.

    Raises:
        ValueError: for an invalid ``min_cell``, ``n_rows`` or ``max_null_fraction``.
        TypeError: when ``sample`` is not a polars (or pandas) DataFrame.
    """
    _validate_parameters(min_cell, n_rows, max_null_fraction)
    started = time.perf_counter()
    sensitive = list(dict.fromkeys(sensitive))
    features = [f for f in dict.fromkeys(features) if f not in sensitive and f != labels]
    wanted = list(dict.fromkeys([*sensitive, *([labels] if labels is not None else []),
                                 *features]))
    from fairaudit.gx.expectations import _to_pandas

    frame = _to_pandas(sample, wanted)
    import pandas as pd

    # GX needs non-empty column names: an unnamed column (a CSV's empty header) is checked as
    # "(unnamed column)" and its results name it by its real (empty) name again
    alias = {c: f"(unnamed column{'' if i == 0 else f' {i + 1}'})"
             for i, c in enumerate(c for c in wanted if not c.strip())}
    if alias:
        frame = frame.rename(columns=alias)
        sensitive = [alias.get(c, c) for c in sensitive]
        features = [alias.get(c, c) for c in features]
        group_counts = {alias.get(k, k): v for k, v in group_counts.items()}
        labels = alias.get(labels, labels) if labels is not None else None
    labels_are_names = labels is not None and labels in frame.columns and not (
        pd.api.types.is_numeric_dtype(frame[labels].dtype))

    runner = _Runner()
    try:
        results = _run_all(
            runner,
            frame,
            sensitive=sensitive,
            labels=labels,
            labels_are_names=labels_are_names,
            features=features,
            group_counts=group_counts,
            min_cell=min_cell,
            n_rows=n_rows,
            max_null_fraction=max_null_fraction,
            started=started,
        )
    finally:
        runner.close()
    if alias:
        back = {a: c for c, a in alias.items()}
        results = tuple(replace(r, column=back.get(r.column, r.column)) for r in results)
    return results


def _run_all(
    runner: _Runner,
    frame: pd.DataFrame,
    *,
    sensitive: list[str],
    labels: str | None,
    labels_are_names: bool,
    features: list[str],
    group_counts: Mapping[str, Mapping[Any, int]],
    min_cell: int,
    n_rows: int,
    max_null_fraction: float,
    started: float,
) -> tuple[CheckResult, ...]:
    present = set(frame.columns)
    n_sample = len(frame)
    gx = runner._gx
    from fairaudit.gx import expectations as fx

    specs: list[_Spec] = []

    def describe_rows(res: Mapping[str, Any]) -> tuple[str, str]:
        seen = int(res.get("observed_value") or 0)
        return (
            f"the input has {n_rows:,} rows ({seen:,} in the checked sample)",
            "the input has at least 1 row",
        )

    specs.append(
        _Spec(
            (0,),
            "table_not_empty",
            None,
            ERROR,
            gx.expectations.ExpectTableRowCountToBeBetween(min_value=1),
            describe_rows,
        )
    )
    mostly = 1.0 - float(max_null_fraction)
    for i, column in enumerate(sensitive):
        specs.append(_exists_spec((1, i, 0), "sensitive", column, column in present, gx))
        if column in present:
            specs.append(
                _not_null_spec((1, i, 1), "sensitive_not_null", column, mostly, "null", gx)
            )
    if labels is not None:
        specs.append(_exists_spec((3, 0), "labels", labels, labels in present, gx))
        if labels in present and not labels_are_names:  # names (strings) are cluster names

            def describe_labels(res: Mapping[str, Any], column: str = labels) -> tuple[str, str]:
                n = int(res.get("element_count", 0)) - int(res.get("missing_count", 0))
                bad = int(res.get("unexpected_count", 0))
                dtype = frame[column].dtype
                observed = (
                    f"{_q(column)} (dtype {dtype}): {bad:,} of {n:,} non-null sampled values "
                    f"are not integers{_unexpected_examples(res)}"
                )
                return observed, f"{_q(column)}: integer cluster labels (-1 = noise)"

            specs.append(
                _Spec(
                    (3, 1),
                    f"labels_integral[{labels}]",
                    labels,
                    ERROR,
                    fx.ExpectColumnValuesToBeIntegral(column=labels),
                    describe_labels,
                )
            )
    import pandas as pd

    for i, column in enumerate(features):
        specs.append(_exists_spec((4, i, 0), "feature", column, column in present, gx))
        if column not in present:
            continue
        dtype = frame[column].dtype
        if not pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype):
            continue
        specs.append(_not_null_spec((4, i, 1), "feature_not_nan", column, 1.0, "null/NaN", gx))

        def describe_finite(res: Mapping[str, Any], column: str = column) -> tuple[str, str]:
            n = int(res.get("element_count", 0)) - int(res.get("missing_count", 0))
            bad = int(res.get("unexpected_count", 0))
            observed = (
                f"{_q(column)}: {bad:,} of {n:,} non-null sampled values are infinite"
                f"{_unexpected_examples(res)}"
            )
            return observed, f"{_q(column)}: finite numeric values only"

        specs.append(
            _Spec(
                (4, i, 2),
                f"feature_finite[{column}]",
                column,
                ERROR,
                fx.ExpectColumnValuesToBeFinite(column=column),
                describe_finite,
            )
        )
    results = runner.run(frame, specs, _SAMPLE_FORMAT)

    # group-level checks on small aggregate frames (exact full-data counts)
    extra_keys = sorted(k for k in group_counts if k not in sensitive)
    group_jobs: list[tuple[str, bool, tuple[Any, ...]]] = [
        (c, True, (1, i, 2)) for i, c in enumerate(sensitive)
    ]
    group_jobs += [(k, False, (2, j)) for j, k in enumerate(extra_keys)]
    id_like: set[str] = set()  # filled column by column; intersections come after the columns
    for key, is_column, order in group_jobs:
        if key in group_counts:
            counts = group_counts[key]
            counted_on = f"{n_rows:,} rows"
        elif is_column and key in present:
            counts = frame[key].value_counts(dropna=True).to_dict()
            counted_on = f"the {n_sample:,}-row sample"
            logger.debug("group_counts has no entry for %r; counting it on the sample", key)
        else:
            continue
        group_frame = _group_frame(counts)
        if is_column and len(group_frame) > _id_limit(n_rows):
            id_like.add(key)
        specs_g = _group_specs(
            key,
            group_frame,
            is_column=is_column,
            list_names=not (id_like & {key, *key.split(_SEPARATOR)}),
            n_rows=n_rows,
            min_cell=min_cell,
            order=order,
            gx=gx,
            counted_on=counted_on,
        )
        results += runner.run(group_frame, specs_g, _AGGREGATE_FORMAT)

    results.sort(key=lambda pair: pair[0].order)
    logger.debug("ran %d input checks in %.2f s", len(results), time.perf_counter() - started)
    return tuple(result for _, result in results)
