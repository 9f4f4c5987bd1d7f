"""The host's input checks run through a Great Expectations context (for GX users).

The host computes its input checks natively (:mod:`fairaudit.core.checks`, polars, no GX).
Each of them is stated as a GX expectation; :func:`run_input_checks` here runs the very same
checks through an in-memory GX 1.x context and returns the same :class:`CheckResult` values
(the tests hold the two to equal results). Use it to see the checks as GX validation results, or
to run them where GX is already loaded.

Great Expectations is imported only inside :func:`run_input_checks`, never at import time.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from fairaudit.core.checks import (
    AGGREGATE_FORMAT,
    ERROR,
    ID_LIKE_MAX_FRACTION,
    ID_LIKE_MAX_GROUPS,
    SAMPLE_FORMAT,
    WARNING,
    Check,
    CheckResult,
)
from fairaudit.core.checks import run_input_checks as _run_checks

__all__ = [
    "AGGREGATE_FORMAT",
    "ERROR",
    "ID_LIKE_MAX_FRACTION",
    "ID_LIKE_MAX_GROUPS",
    "SAMPLE_FORMAT",
    "WARNING",
    "CheckResult",
    "run_input_checks",
]

logger = logging.getLogger(__name__)


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


def _class_name(expectation_type: str) -> str:
    """``"expect_column_to_exist"`` -> ``"ExpectColumnToExist"``."""
    return "".join(word.capitalize() for word in expectation_type.split("_"))


class _Runner:
    """Validates frames against lists of checks in one ephemeral GX context (a
    :class:`fairaudit.core.checks.Backend`)."""

    def __init__(self) -> None:
        from fairaudit.gx import expectations as fx  # first: switches GX analytics off

        # isort: split
        import great_expectations as gx
        from great_expectations.data_context.data_context.context_factory import project_manager
        from great_expectations.exceptions import DataContextRequiredError

        self._gx = gx
        self._fx = fx
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

    def frame(self, sample: Any, columns: Sequence[str]) -> Any:
        return self._fx.pandas_frame(sample, list(columns))

    def table(self, groups: list[str], counts: list[int]) -> Any:
        import numpy as np
        import pandas as pd

        from fairaudit.core.check_eval import fold_name

        return pd.DataFrame({"group": pd.Series(groups, dtype=object),
                             "count": np.asarray(counts, dtype=np.int64),
                             "folded": pd.Series([fold_name(g) for g in groups], dtype=object)})

    def close(self) -> None:
        """Restore the caller's current GX context (or none)."""
        self._gx.data_context.set_context(self._previous)

    def expectation(self, check: Check) -> Any:
        name = _class_name(check.expectation)
        cls = getattr(self._fx, name, None) or getattr(self._gx.expectations, name)
        return cls(**check.kwargs)

    def run(self, frame: Any, checks: Sequence[Check],
            result_format: dict[str, Any]) -> list[tuple[Check, CheckResult]]:
        if not checks:
            return []
        self._n_suites += 1
        suite = self._gx.ExpectationSuite(name=f"fairaudit_input_checks_{self._n_suites}")
        for i, check in enumerate(checks):
            expectation = self.expectation(check)
            expectation.meta = {"fairaudit_check": i}
            suite.add_expectation(expectation)
        batch = self._batch_definition.get_batch(batch_parameters={"dataframe": frame})
        validation = batch.validate(suite, result_format=result_format)
        by_index = {r.expectation_config.meta["fairaudit_check"]: r for r in validation.results}
        out = []
        for i, check in enumerate(checks):
            result = by_index[i]
            message = _exception_message(result.exception_info)
            if message is None:
                out.append((check, check.result(bool(result.success), result.result)))
                continue
            q = repr(str(check.column))
            out.append((check, CheckResult(
                name=check.name, expectation=result.expectation_config.type,
                column=check.column, success=False, severity=check.severity,
                observed=f"{q}: the check could not be evaluated: {message}",
                expected=f"{q}: a column the check can evaluate",
            )))
        return out


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
) -> tuple[CheckResult, ...]:
    """The host's input checks (:func:`fairaudit.core.checks.run_input_checks`, same arguments,
    same results), validated through an ephemeral Great Expectations context.

    The caller's current GX context is restored afterwards. Raises ``ValueError`` for an invalid
    ``min_cell``, ``n_rows`` or ``max_null_fraction`` and ``TypeError`` when ``sample`` is not a
    polars (or pandas) DataFrame, before GX is loaded."""
    from fairaudit.core.checks import NativeBackend, _validate_parameters

    _validate_parameters(min_cell, n_rows, max_null_fraction)
    NativeBackend().frame(sample, [])  # the type check, before GX loads
    return _run_checks(sample, sensitive=sensitive, labels=labels, features=features,
                       group_counts=group_counts, min_cell=min_cell, n_rows=n_rows,
                       max_null_fraction=max_null_fraction, backend=_Runner())
