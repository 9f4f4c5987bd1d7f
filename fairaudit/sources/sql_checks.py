"""The input checks of a database source, on the database's ``GROUP BY`` instead of rows.

A labels audit reads no row: the checks that read the frame for a file (``table_not_empty``,
``sensitive_not_null``, ``labels_integral``) are evaluated on the grouped rows of
:func:`fairaudit.sources.sql_count.grouped_rows` — each distinct (labels, sensitive...) row with
the number of rows it stands for — with the same expectations and Great Expectations' semantics
as :class:`fairaudit.core.check_eval.NativeBackend` (NaN is null, map checks judge the non-null
values), every row counted. The group checks use the exact counts, as for files. With
clusterers or feature-based auditors the checks run on the in-memory sample, as for files.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fairaudit.core.check_eval import PARTIAL, NativeBackend, _condition, _missing


class GroupedRowsBackend(NativeBackend):
    """Evaluates the row checks on distinct rows, row ``i`` standing for ``weights[i]`` rows;
    the group tables natively."""

    def __init__(self, weights: Any) -> None:
        import numpy as np

        self.weights = np.asarray(weights, dtype=np.int64)
        self._rows: Any = None

    def frame(self, sample: Any, columns: Sequence[str]) -> Any:
        self._rows = super().frame(sample, columns)
        return self._rows

    def run(self, frame: Any, checks: Sequence[Any], result_format: dict[str, Any]) -> list[Any]:
        if frame is not self._rows:  # a group table: plain rows
            return super().run(frame, checks, result_format)
        return [(c, c.result(*self._weighted(frame, c))) for c in checks]

    def _weighted(self, frame: Any, check: Any) -> tuple[bool, dict[str, Any]]:
        w = self.weights
        kw, kind = check.kwargs, check.expectation
        if kind == "expect_column_to_exist":
            return kw["column"] in frame.columns, {}
        n = int(w.sum())
        if kind == "expect_table_row_count_to_be_between":
            lo, hi = kw.get("min_value"), kw.get("max_value")
            return (lo is None or n >= lo) and (hi is None or n <= hi), {"observed_value": n}
        series = frame.get_column(kw["column"])
        missing = _missing(series).to_numpy()
        n_missing = int(w[missing].sum())
        if kind == "expect_column_values_to_not_be_null":
            ok = n == 0 or (n - n_missing) / n >= kw.get("mostly", 1.0)
            return ok, {"element_count": n, "unexpected_count": n_missing}
        if kind not in ("expect_column_values_to_be_integral",
                        "expect_column_values_to_be_finite"):
            raise ValueError(f"{kind} is not a row check of grouped rows")
        values = series.filter(~missing)
        weights = w[~missing]
        bad = ~_condition(values, integral=kind.endswith("integral")).to_numpy()
        n_bad = int(weights[bad].sum())
        nonnull = n - n_missing
        examples: list[Any] = []
        for v, k in zip(values.filter(bad).to_list(), weights[bad].tolist(), strict=True):
            examples.extend([v] * min(int(k), PARTIAL - len(examples)))
            if len(examples) >= PARTIAL:
                break
        ok = nonnull == 0 or (nonnull - n_bad) / nonnull >= kw.get("mostly", 1.0)
        return ok, {"element_count": n, "missing_count": n_missing, "unexpected_count": n_bad,
                    "partial_unexpected_list": examples}


def grouped_checks_input(grouped: Any, count_column: str) -> tuple[Any, GroupedRowsBackend]:
    """The frame and backend :func:`fairaudit.core.checks.run_input_checks` takes for grouped
    rows."""
    return grouped.drop(count_column), GroupedRowsBackend(grouped.get_column(count_column))
