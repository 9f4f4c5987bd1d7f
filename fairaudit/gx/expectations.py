"""Great Expectations (GX 1.x) expectations shipped by fairaudit.

One unit: importing it registers every fairaudit expectation together with the metric provider
it calls in GX's process-wide registry; each expectation is read beside its metric.

Importing this module imports Great Expectations and registers, in GX's process-wide registry,
the custom expectations and metrics below. ``import fairaudit`` never does this; run
``import fairaudit.gx.expectations`` (or ``from fairaudit.gx.expectations import ...``) to get them.

Fairness expectations (batch level, for your own suites):

- :class:`ExpectClusterBalanceToBeAtLeast` -- balance of a clustering (Chierichetti/Bera
  convention ``aggregate="min"``; FairDen's ``aggregate="mean"``) is at least ``min_value``.
- :class:`ExpectClusterCapacityFairnessToBeAtLeast` -- fairness_CCE (FCE notes) is at least
  ``min_value``.
- :class:`ExpectClusterWdToBeAtMost`, :class:`ExpectClusterEdToBeAtMost` -- the representation
  gaps Wd / Ed (lower is fairer) are at most ``max_value``.
- :class:`ExpectClusterMetricLowerBoundToBeAtLeast` / :class:`ExpectClusterMetricUpperBoundToBeAtMost`
  -- the conservative end of a metric's confidence interval (the audit's own interval method)
  clears the bar, as ``@ci`` thresholds do on the CLI.

Both build the (groups x clusters) contingency table from a cluster column and one or more
sensitive columns (several columns = their intersection, e.g. ``female|asian``), exclude rows with
a null cluster or sensitive value and the noise label (``noise_label``, default -1), and call
:mod:`fairaudit.metrics.counting`. The validation result carries ``observed_value`` and a
``details`` dict with the per-cluster breakdown.

Column expectations (the GX form of two host input checks, :mod:`fairaudit.core.checks`;
usable anywhere):

- :class:`ExpectColumnValuesToBeIntegral` -- non-null values are integers (ints, bools, or floats
  without a fractional part); strings fail.
- :class:`ExpectColumnValuesToBeFinite` -- non-null numeric values are finite (no +-inf). GX treats
  NaN as null, so pair it with ``ExpectColumnValuesToNotBeNull`` to also reject NaN.

:func:`ephemeral_context` returns an in-memory GX context with analytics and progress bars off.
"""

import logging
import os
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from fairaudit.errors import require_extra

# GX must never phone home: switch analytics off before GX is imported for the first time.
os.environ["GX_ANALYTICS_ENABLED"] = "False"
require_extra("great_expectations", "gx", "fairaudit.gx (the Great Expectations integration)")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from great_expectations.compatibility import pydantic  # noqa: E402
from great_expectations.core.metric_domain_types import MetricDomainTypes  # noqa: E402
from great_expectations.execution_engine import (  # noqa: E402
    PandasExecutionEngine,
    SqlAlchemyExecutionEngine,
)
from great_expectations.expectations.expectation import (  # noqa: E402
    BatchExpectation,
    ColumnMapExpectation,
)
from great_expectations.expectations.metrics.map_metric_provider import (  # noqa: E402
    ColumnMapMetricProvider,
    column_condition_partial,
)
from great_expectations.expectations.metrics.metric_provider import metric_value  # noqa: E402
from great_expectations.expectations.metrics.table_metric_provider import (  # noqa: E402
    TableMetricProvider,
)

from fairaudit.core.check_eval import is_finite_scalar, is_integral_scalar  # noqa: E402

__all__ = [
    "CONTINGENCY_METRIC",
    "ExpectClusterBalanceToBeAtLeast",
    "ExpectClusterCapacityFairnessToBeAtLeast",
    "ExpectClusterEdToBeAtMost",
    "ExpectClusterMetricLowerBoundToBeAtLeast",
    "ExpectClusterMetricUpperBoundToBeAtMost",
    "ExpectClusterWdToBeAtMost",
    "ExpectColumnValuesToBeFinite",
    "ExpectColumnValuesToBeIntegral",
    "ephemeral_context",
    "metric_interval",
    "pandas_frame",
]

logger = logging.getLogger(__name__)

#: Name of the GX table metric that computes the (groups x clusters) contingency table.
CONTINGENCY_METRIC = "fairaudit.cluster_group_table"
_INTEGRAL_METRIC = "column_values.fairaudit_integral"
_FINITE_METRIC = "column_values.fairaudit_finite"
_GROUP_SEPARATOR = "|"


def ephemeral_context() -> Any:
    """Return a fresh in-memory GX data context: no files, no analytics, no progress bars.

    Returns:
        A ``great_expectations`` ``EphemeralDataContext``. Note that GX also makes it the
        process-wide "current" context (``gx.get_context`` always does).
    """
    import great_expectations as gx
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

    config = DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(),
        analytics_enabled=False,
        progress_bars=ProgressBarsConfig(globally=False, metric_calculations=False),
    )
    return gx.get_context(mode="ephemeral", project_config=config)


# --------------------------------------------------------------------------------------------
# Column map expectations
# --------------------------------------------------------------------------------------------


def _integral_mask(column: pd.Series) -> pd.Series:
    dtype = column.dtype
    if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_integer_dtype(dtype):
        return pd.Series(True, index=column.index)
    if pd.api.types.is_float_dtype(dtype):
        values = column.to_numpy(dtype=float, na_value=np.nan)
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(values) & (values == np.floor(values))
        return pd.Series(ok, index=column.index)
    # object columns: judge element by element (mixed ints and strings happen in CSVs)
    return column.map(is_integral_scalar).astype(bool)


class ColumnValuesIntegral(ColumnMapMetricProvider):
    """Row condition: the value is an integer (int, bool, or a float without fractional part)."""

    condition_metric_name = _INTEGRAL_METRIC

    @column_condition_partial(engine=PandasExecutionEngine)
    def _pandas(cls, column: pd.Series, **kwargs: Any) -> pd.Series:
        return _integral_mask(column)


class ExpectColumnValuesToBeIntegral(ColumnMapExpectation):
    """Expect non-null column values to be integers (e.g. cluster labels).

    Ints and bools pass; floats pass when they have no fractional part (a label column read with
    nulls is often float); strings, fractional floats and +-inf fail. Nulls are ignored (GX
    filters them before the row condition), as with every GX map expectation.

    Args:
        column: the column to check.
        mostly: fraction of non-null values that must pass (default 1).
    """

    map_metric: ClassVar[str] = _INTEGRAL_METRIC
    args_keys: ClassVar[tuple[str, ...]] = ("column",)


def _finite_mask(column: pd.Series) -> pd.Series:
    dtype = column.dtype
    if pd.api.types.is_bool_dtype(dtype):
        return pd.Series(True, index=column.index)
    if pd.api.types.is_numeric_dtype(dtype):
        values = column.to_numpy(dtype=float, na_value=np.nan)
        return pd.Series(np.isfinite(values), index=column.index)
    return column.map(is_finite_scalar).astype(bool)


class ColumnValuesFinite(ColumnMapMetricProvider):
    """Row condition: the value is a finite number."""

    condition_metric_name = _FINITE_METRIC

    @column_condition_partial(engine=PandasExecutionEngine)
    def _pandas(cls, column: pd.Series, **kwargs: Any) -> pd.Series:
        return _finite_mask(column)


class ExpectColumnValuesToBeFinite(ColumnMapExpectation):
    """Expect non-null column values to be finite numbers (no +inf / -inf, no strings).

    GX (on pandas) treats NaN as null and filters nulls before map expectations, so NaN is *not*
    caught here: add ``ExpectColumnValuesToNotBeNull`` on the same column for that.

    Args:
        column: the column to check.
        mostly: fraction of non-null values that must pass (default 1).
    """

    map_metric: ClassVar[str] = _FINITE_METRIC
    args_keys: ClassVar[tuple[str, ...]] = ("column",)


# --------------------------------------------------------------------------------------------
# Contingency-table metric and fairness expectations
# --------------------------------------------------------------------------------------------


def _as_column_list(sensitive_columns: str | list[str] | tuple[str, ...]) -> list[str]:
    if isinstance(sensitive_columns, str):
        return [sensitive_columns]
    return [str(c) for c in sensitive_columns]


def _jsonable(value: Any) -> Any:
    """Python scalar for a pandas/numpy label (JSON-serialisable in GX results)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return int(value)  # integral labels read as float because of nulls
    return value


def contingency_table(
    frame: pd.DataFrame,
    cluster_column: str,
    sensitive_columns: str | list[str] | tuple[str, ...],
    noise_label: int | None = -1,
    count_column: str | None = None,
) -> dict[str, Any]:
    """Compute the (groups x clusters) count table of a pandas frame.

    Rows with a null cluster or sensitive value are excluded and counted; rows whose cluster equals
    ``noise_label`` are excluded and counted apart. With ``count_column`` each row of ``frame``
    stands for that many rows (a pre-aggregated ``GROUP BY`` result, as from a SQL engine). Several sensitive columns form one
    intersectional attribute whose group names join the values with ``|``.

    Returns:
        A JSON-serialisable dict: ``groups`` (list of str), ``clusters`` (list of labels),
        ``counts`` (list of lists, groups x clusters), ``n_rows``, ``n_used``, ``n_null``,
        ``n_noise``.

    Raises:
        ValueError: when a named column is not in the frame.
    """
    columns = _as_column_list(sensitive_columns)
    if not columns:
        raise ValueError("The 'sensitive_columns' parameter must name at least one column; got [].")
    missing = [c for c in [cluster_column, *columns] if c not in frame.columns]
    if missing:
        raise ValueError(
            f"Columns {missing} are not in the batch; available columns: {list(frame.columns)}."
        )
    weights = (np.ones(len(frame), dtype=np.int64) if count_column is None
               else frame[count_column].to_numpy(dtype=np.int64))
    n_rows = int(weights.sum())
    sub = frame[[cluster_column, *columns]]
    keep = sub.notna().all(axis=1).to_numpy()
    n_null = int(n_rows - weights[keep].sum())
    sub, weights = sub[keep], weights[keep]
    n_noise = 0
    if noise_label is not None:
        clusters = sub[cluster_column]
        if pd.api.types.is_numeric_dtype(clusters.dtype):
            is_noise = (clusters == noise_label).to_numpy()
        else:
            is_noise = clusters.map(lambda v: is_integral_scalar(v) and v == noise_label)
            is_noise = is_noise.to_numpy(dtype=bool)
        n_noise = int(weights[is_noise].sum())
        sub, weights = sub[~is_noise], weights[~is_noise]
    if len(columns) == 1:
        group_key = sub[columns[0]].astype(str)
    else:
        group_key = sub[columns[0]].astype(str)
        for c in columns[1:]:
            group_key = group_key + _GROUP_SEPARATOR + sub[c].astype(str)
    table = pd.crosstab(group_key.to_numpy(), sub[cluster_column].to_numpy(), values=weights,
                        aggfunc="sum").fillna(0)
    return {
        "groups": [str(g) for g in table.index],
        "clusters": [_jsonable(k) for k in table.columns],
        "counts": table.to_numpy(dtype=np.int64).tolist(),
        "n_rows": n_rows,
        "n_used": int(weights.sum()),
        "n_null": n_null,
        "n_noise": n_noise,
    }


def _sql_contingency(execution_engine: Any, metric_domain_kwargs: dict,
                     metric_value_kwargs: dict) -> dict[str, Any]:
    """The table of a SQL data source: one ``GROUP BY`` in the database, counted here."""
    import sqlalchemy as sa

    selectable, _, _ = execution_engine.get_compute_domain(
        domain_kwargs=metric_domain_kwargs, domain_type=MetricDomainTypes.TABLE
    )
    columns = [metric_value_kwargs["cluster_column"],
               *_as_column_list(metric_value_kwargs["sensitive_columns"])]
    cols = [sa.column(c) for c in columns]
    query = sa.select(*cols, sa.func.count().label("__fairaudit_n")).select_from(
        selectable).group_by(*cols)
    with execution_engine.get_connection() as con:
        rows = con.execute(query).fetchall()
    frame = pd.DataFrame([tuple(r) for r in rows], columns=[*columns, "__fairaudit_n"])
    frame = frame.astype({c: object for c in columns})
    return contingency_table(frame, metric_value_kwargs["cluster_column"],
                             metric_value_kwargs["sensitive_columns"],
                             metric_value_kwargs.get("noise_label"),
                             count_column="__fairaudit_n")


class ClusterGroupTable(TableMetricProvider):
    """GX table metric: the (groups x clusters) contingency table (see :func:`contingency_table`)."""

    metric_name = CONTINGENCY_METRIC
    value_keys = ("cluster_column", "sensitive_columns", "noise_label")

    @metric_value(engine=PandasExecutionEngine)
    def _pandas(
        cls,
        execution_engine: PandasExecutionEngine,
        metric_domain_kwargs: dict,
        metric_value_kwargs: dict,
        metrics: dict[str, Any],
        runtime_configuration: dict,
    ) -> dict[str, Any]:
        frame, _, _ = execution_engine.get_compute_domain(
            domain_kwargs=metric_domain_kwargs, domain_type=MetricDomainTypes.TABLE
        )
        return contingency_table(
            frame,
            metric_value_kwargs["cluster_column"],
            metric_value_kwargs["sensitive_columns"],
            metric_value_kwargs.get("noise_label"),
        )

    @metric_value(engine=SqlAlchemyExecutionEngine)
    def _sqlalchemy(
        cls,
        execution_engine: SqlAlchemyExecutionEngine,
        metric_domain_kwargs: dict,
        metric_value_kwargs: dict,
        metrics: dict[str, Any],
        runtime_configuration: dict,
    ) -> dict[str, Any]:
        return _sql_contingency(execution_engine, metric_domain_kwargs, metric_value_kwargs)


class _ContingencyExpectation(BatchExpectation):
    """Shared parameters and validation of the expectations on the (groups x clusters) table
    (not registered: abstract). Subclasses add their bound and :meth:`_passes`."""

    cluster_column: str
    sensitive_columns: list[str] | str
    noise_label: int | None = -1

    metric_dependencies: ClassVar[tuple[str, ...]] = (CONTINGENCY_METRIC,)

    @pydantic.validator("sensitive_columns")
    def _check_sensitive_columns(cls, value: list[str] | str) -> list[str] | str:
        if not _as_column_list(value):
            raise ValueError("The 'sensitive_columns' parameter must name at least one column.")
        return value

    @abstractmethod
    def _metric(
        self, table: np.ndarray, groups: list[str], clusters: list[Any]
    ) -> tuple[float, list[dict[str, Any]], dict[str, Any]]:
        """Return (value, per-cluster extra fields, extra detail fields) for ``table``."""
        raise NotImplementedError

    @abstractmethod
    def _passes(self, observed: float) -> bool:
        """Whether a finite observed value meets the expectation's bound."""
        raise NotImplementedError

    def _validate(
        self,
        metrics: dict,
        runtime_configuration: dict | None = None,
        execution_engine: Any = None,
    ) -> dict[str, Any]:
        info = metrics[CONTINGENCY_METRIC]
        details: dict[str, Any] = {
            "cluster_column": self.cluster_column,
            "sensitive_columns": _as_column_list(self.sensitive_columns),
            "groups": info["groups"],
            "n_rows": info["n_rows"],
            "n_used": info["n_used"],
            "n_null_excluded": info["n_null"],
            "n_noise_excluded": info["n_noise"],
        }
        if info["n_used"] == 0:
            details["note"] = "no rows left after excluding nulls and noise"
            return {"success": False, "result": {"observed_value": None, "details": details}}
        counts = np.asarray(info["counts"], dtype=np.int64)
        value, per_cluster_values, extra = self._metric(counts, info["groups"], info["clusters"])
        sizes = counts.sum(axis=0)
        per_cluster = []
        for j, cluster in enumerate(info["clusters"]):
            row = {
                "cluster": cluster,
                "size": int(sizes[j]),
                "group_counts": {g: int(counts[i, j]) for i, g in enumerate(info["groups"])},
            }
            row.update(per_cluster_values[j])
            per_cluster.append(row)
        details.update(extra)
        details["per_cluster"] = per_cluster
        observed = float(value)
        success = bool(np.isfinite(observed) and self._passes(observed))
        if not np.isfinite(observed):
            details["note"] = "the metric is undefined (NaN) for this table"
        return {"success": success, "result": {"observed_value": observed, "details": details}}


class _ClusterFairnessExpectation(_ContingencyExpectation):
    """A fairness score (higher is fairer) of the table is at least ``min_value``."""

    min_value: float

    success_keys: ClassVar[tuple[str, ...]] = (
        "cluster_column",
        "sensitive_columns",
        "min_value",
        "noise_label",
    )
    args_keys: ClassVar[tuple[str, ...]] = ("cluster_column", "sensitive_columns", "min_value")

    @pydantic.validator("min_value")
    def _check_min_value(cls, value: float) -> float:
        if not (0.0 <= float(value) <= 1.0):
            raise ValueError(f"The 'min_value' parameter must be a number in [0, 1]; got {value}.")
        return float(value)

    def _passes(self, observed: float) -> bool:
        return observed >= self.min_value


class ExpectClusterBalanceToBeAtLeast(_ClusterFairnessExpectation):
    """Expect the balance of a clustering to be at least ``min_value``.

    balance(k) = min over groups g of min(r_g / r_g(k), r_g(k) / r_g) with r_g the group's share
    of the data and r_g(k) its share of cluster k (FairDen eq. 6-7; Bera et al.); computed by
    :func:`fairaudit.metrics.counting.balance`. 1 = every cluster mirrors the population.

    Args:
        cluster_column: column holding the cluster label of each row.
        sensitive_columns: one column name or a list; several columns are combined into their
            intersection (groups such as ``female|asian``).
        min_value: pass when the aggregated balance is >= this value (in [0, 1]).
        aggregate: ``"min"`` over clusters (Chierichetti/Bera, default) or ``"mean"`` (FairDen).
        noise_label: cluster label treated as noise and excluded (default -1; None keeps all).

    The result's ``observed_value`` is the aggregated balance; ``details`` holds both aggregates,
    the per-cluster balance, size and group counts, and how many rows were excluded.
    """

    aggregate: Literal["min", "mean"] = "min"

    success_keys: ClassVar[tuple[str, ...]] = (
        *_ClusterFairnessExpectation.success_keys,
        "aggregate",
    )

    def _metric(
        self, table: np.ndarray, groups: list[str], clusters: list[Any]
    ) -> tuple[float, list[dict[str, Any]], dict[str, Any]]:
        from fairaudit.metrics.counting import balance

        result = balance(table)
        per_cluster = [{"balance": float(b)} for b in np.asarray(result.per_cluster)]
        extra = {
            "aggregate": self.aggregate,
            "balance_min": float(result.min),
            "balance_mean": float(result.mean),
        }
        value = result.min if self.aggregate == "min" else result.mean
        return float(value), per_cluster, extra


class ExpectClusterCapacityFairnessToBeAtLeast(_ClusterFairnessExpectation):
    """Expect the capacity fairness (fairness_CCE) of a clustering to be at least ``min_value``.

    fairness_CCE = min over clusters k and groups i of min(c * gamma_i(k), 1 / (c * gamma_i(k)))
    with gamma_i(k) = N[i, k] / |G_i| (the share of group i that lands in cluster k) and c the
    number of clusters (FCE notes); computed by :func:`fairaudit.metrics.counting.fairness_cce`.
    1 = every group is spread evenly over the clusters.

    Args:
        cluster_column: column holding the cluster label of each row.
        sensitive_columns: one column name or a list (combined into their intersection).
        min_value: pass when fairness_CCE >= this value (in [0, 1]).
        noise_label: cluster label treated as noise and excluded (default -1; None keeps all).

    The result's ``observed_value`` is fairness_CCE; ``details.per_cluster`` lists each cluster's
    size, group counts, per-cluster ``fairness_cce`` and ``group_shares`` (gamma_i(k) for every
    group i).
    """

    def _metric(
        self, table: np.ndarray, groups: list[str], clusters: list[Any]
    ) -> tuple[float, list[dict[str, Any]], dict[str, Any]]:
        from fairaudit.metrics.counting import fairness_cce, fairness_cce_per_cluster

        value = fairness_cce(table)
        per_cluster_values = np.asarray(fairness_cce_per_cluster(table), dtype=float)
        shares = table / table.sum(axis=1)[:, None]
        per_cluster = [
            {
                "fairness_cce": float(per_cluster_values[j]),
                "group_shares": {g: float(shares[i, j]) for i, g in enumerate(groups)},
            }
            for j in range(table.shape[1])
        ]
        return float(value), per_cluster, {"n_clusters": int(table.shape[1])}


# --------------------------------------------------------------------------------------------
# Representation gaps (lower is fairer): Wd and Ed
# --------------------------------------------------------------------------------------------


class _ClusterGapExpectation(_ContingencyExpectation):
    """A representation gap (lower is fairer) of the table is at most ``max_value``."""

    max_value: float
    how: Literal["weighted-mean", "max", "sum"] = "weighted-mean"

    success_keys: ClassVar[tuple[str, ...]] = (
        "cluster_column",
        "sensitive_columns",
        "max_value",
        "how",
        "noise_label",
    )
    args_keys: ClassVar[tuple[str, ...]] = ("cluster_column", "sensitive_columns", "max_value")

    @pydantic.validator("max_value")
    def _check_max_value(cls, value: float) -> float:
        v = float(value)
        if not (np.isfinite(v) and v >= 0.0):
            raise ValueError(f"The 'max_value' parameter must be a finite number >= 0; got {value}.")
        return v

    def _passes(self, observed: float) -> bool:
        return observed <= self.max_value


class ExpectClusterWdToBeAtMost(_ClusterGapExpectation):
    """Expect the Wasserstein representation gap Wd of a clustering to be at most ``max_value``.

    Wd(k) is the 1-Wasserstein distance between the group distribution in cluster k and in the
    whole data (ground metric ``zero-one``: half the L1 distance, or ``ordinal`` for groups in the
    order of ``group_order``); aggregated over clusters by ``how`` (size-weighted mean by
    default, as the ``distribution`` auditor's headline ``wd``). 0 = every cluster mirrors the
    population. Computed by :func:`fairaudit.metrics.counting.wd`.

    Args:
        cluster_column, sensitive_columns, noise_label: as for the balance expectation.
        max_value: pass when Wd <= this value (>= 0).
        how: ``"weighted-mean"`` (default), ``"max"`` or ``"sum"`` over clusters.
        ground: ``"zero-one"`` (default) or ``"ordinal"`` (needs ``group_order``).
        group_order: the groups from lowest to highest, for ``ground="ordinal"``.
    """

    ground: Literal["zero-one", "ordinal"] = "zero-one"
    group_order: list[str] | None = None

    success_keys: ClassVar[tuple[str, ...]] = (
        *_ClusterGapExpectation.success_keys,
        "ground",
        "group_order",
    )

    def _metric(
        self, table: np.ndarray, groups: list[str], clusters: list[Any]
    ) -> tuple[float, list[dict[str, Any]], dict[str, Any]]:
        from fairaudit.metrics.counting import wd, wd_per_cluster

        table, groups = _ordered(table, groups, self.group_order if self.ground == "ordinal"
                                 else None)
        if self.ground == "ordinal" and self.group_order is None:
            raise ValueError("ground='ordinal' needs 'group_order' (the groups, lowest first).")
        per = np.asarray(wd_per_cluster(table, ground=self.ground), dtype=float)
        value = float(wd(table, ground=self.ground, how=self.how))
        return value, [{"wd": float(v)} for v in per], {"how": self.how, "ground": self.ground}


class ExpectClusterEdToBeAtMost(_ClusterGapExpectation):
    """Expect the Euclidean representation gap Ed of a clustering to be at most ``max_value``.

    Ed(k) is the Euclidean distance between the group shares in cluster k and in the whole data,
    aggregated over clusters by ``how`` (size-weighted mean by default, as the ``distribution``
    auditor's ``ed``). 0 = every cluster mirrors the population. Computed by
    :func:`fairaudit.metrics.counting.ed`.
    """

    def _metric(
        self, table: np.ndarray, groups: list[str], clusters: list[Any]
    ) -> tuple[float, list[dict[str, Any]], dict[str, Any]]:
        from fairaudit.metrics.counting import ed, ed_per_cluster

        per = np.asarray(ed_per_cluster(table), dtype=float)
        value = float(ed(table, how=self.how))
        return value, [{"ed": float(v)} for v in per], {"how": self.how}


def _ordered(table: np.ndarray, groups: list[str], order: list[str] | None
             ) -> tuple[np.ndarray, list[str]]:
    if order is None:
        return table, groups
    missing = [g for g in groups if g not in order]
    if missing:
        raise ValueError(f"'group_order' does not list the group(s) {missing}; it lists {order}.")
    idx = [groups.index(g) for g in order if g in groups]
    return table[idx], [groups[i] for i in idx]


# --------------------------------------------------------------------------------------------
# Confidence bounds: judge the conservative end of an interval, not the point value
# --------------------------------------------------------------------------------------------

#: metric name -> (function in fairaudit.metrics.counting of a (b x groups x clusters) stack,
#: higher is fairer?)
_CI_METRICS: dict[str, tuple[str, bool]] = {
    "balance": ("balance_min", True),
    "balance_mean": ("balance_mean", True),
    "fairness_cce": ("fairness_cce", True),
    "mnce": ("mnce", True),
    "wd": ("wd", False),
    "ed": ("ed", False),
}
#: metrics with their own (score-intersection) interval in fairaudit.metrics.intervals
_OWN_INTERVAL = {"balance": "balance_interval", "balance_mean": "balance_mean_interval",
                 "fairness_cce": "fairness_cce_interval"}


def metric_interval(table: np.ndarray, metric: str, *, level: float = 0.95, n_boot: int = 200,
                    random_state: int | None = 0, min_cell: int = 10,
                    ci_method: str = "calibrated", groups: Sequence[str] | None = None,
                    clusters: Sequence[Any] | None = None,
                    sensitive_columns: str | Sequence[str] = "sensitive",
                    cluster_column: str = "labels") -> tuple[float, float, float]:
    """``(value, lower, upper)`` of ``metric`` on a (groups x clusters) count table, with the
    interval the audit gives it — by the audit's own code
    (:func:`fairaudit.core.counting_audit.table_interval`): the same auditor, bootstrap streams,
    small-group rule and interval method. The defaults are the audit's (``--bootstrap 200``,
    ``--seed 0``, ``--min-cell 10``, ``--ci-method calibrated``, level 0.95), so that with the
    table's ``groups`` and ``clusters`` and the column names it is exactly the interval
    ``fairaudit audit DATA --sensitive SENSITIVE --labels CLUSTER --fail-under METRIC@ci=...``
    judges. Undefined (NaN) when fewer than two groups have ``min_cell`` rows."""
    return _interval(table, metric, level=level, n_boot=n_boot, random_state=random_state,
                     min_cell=min_cell, ci_method=ci_method, groups=groups, clusters=clusters,
                     sensitive_columns=sensitive_columns, cluster_column=cluster_column)[:3]


def _interval(table: np.ndarray, metric: str, *, level: float, n_boot: int,
              random_state: int | None, min_cell: int, ci_method: str,
              groups: Sequence[str] | None, clusters: Sequence[Any] | None,
              sensitive_columns: str | Sequence[str], cluster_column: str
              ) -> tuple[float, float, float, str]:
    from fairaudit.core.counting_audit import table_interval

    if metric not in _CI_METRICS:
        raise ValueError(f"The 'metric' parameter must be one of {sorted(_CI_METRICS)}; "
                         f"got {metric!r}.")
    counts = np.asarray(table, dtype=np.int64)
    attributes = _as_column_list(sensitive_columns)
    names = list(groups) if groups is not None else [f"g{i}" for i in range(counts.shape[0])]
    split = [tuple(str(g).split(_GROUP_SEPARATOR)) if len(attributes) > 1 else (str(g),)
             for g in names]
    labels = list(clusters) if clusters is not None else list(range(counts.shape[1]))
    result = table_interval(counts, split, labels, attributes, metric, labelling=cluster_column,
                            auditor=_auditor_for(metric), n_boot=n_boot,
                            seed=0 if random_state is None else int(random_state), level=level,
                            min_cell=min_cell, ci_method=ci_method)
    if result is None or result.ci is None:
        value = float("nan") if result is None else float(result.value)
        return value, float("nan"), float("nan"), ""
    method = str(((result.detail or {}).get("interval") or {}).get("method", ""))
    return float(result.value), float(result.ci[0]), float(result.ci[1]), method


def _auditor_for(metric: str) -> Any:
    """The built-in counting auditor that gives ``metric``, as an audit instantiates it."""
    from fairaudit.core.components import CountingAuditor
    from fairaudit.core.plugins import Host

    for info in Host.create(entrypoints=False).registry.all():
        cls = info.cls
        if (info.kind == "auditor" and isinstance(cls, type) and issubclass(cls, CountingAuditor)
                and any(m.name == metric for m in cls.metrics)):
            return cls()
    raise ValueError(f"no installed counting auditor gives {metric!r}")  # pragma: no cover


class _ClusterBoundExpectation(_ContingencyExpectation):
    """Shared parameters of the confidence-bound expectations."""

    metric: str
    level: float = 0.95
    n_boot: int = 200
    random_state: int | None = 0
    min_cell: int = 10
    ci_method: str = "calibrated"

    @pydantic.validator("level")
    def _check_level(cls, value: float) -> float:
        if not (0.5 <= float(value) < 1.0):
            raise ValueError(f"The 'level' parameter must be in [0.5, 1); got {value}.")
        return float(value)

    @pydantic.validator("n_boot")
    def _check_n_boot(cls, value: int) -> int:
        if int(value) < 100:
            raise ValueError(f"The 'n_boot' parameter must be at least 100; got {value}.")
        return int(value)

    @pydantic.validator("min_cell")
    def _check_min_cell(cls, value: int) -> int:
        if int(value) < 1:
            raise ValueError(f"The 'min_cell' parameter must be at least 1; got {value}.")
        return int(value)

    @pydantic.validator("ci_method")
    def _check_ci_method(cls, value: str) -> str:
        if value not in ("calibrated", "conservative"):
            raise ValueError("The 'ci_method' parameter must be 'calibrated' or 'conservative'; "
                             f"got {value!r}.")
        return value

    def _interval(self, table: np.ndarray, groups: list[str], clusters: list[Any]
                  ) -> tuple[float, float, float, str]:
        return _interval(table, self.metric, level=self.level, n_boot=self.n_boot,
                         random_state=self.random_state, min_cell=self.min_cell,
                         ci_method=self.ci_method, groups=groups, clusters=clusters,
                         sensitive_columns=self.sensitive_columns,
                         cluster_column=self.cluster_column)


class ExpectClusterMetricLowerBoundToBeAtLeast(_ClusterBoundExpectation):
    """Expect the lower end of the confidence interval of a fairness score to be at least
    ``min_value``: pass only when the data are convincing, not when the point value happens to
    clear the bar (``--fail-under balance@ci=…`` of the CLI).

    Args:
        metric: ``balance`` (min over clusters), ``balance_mean``, ``fairness_cce`` or ``mnce``.
        min_value: pass when the interval's lower end >= this value.
        level: confidence level (default 0.95); n_boot: bootstrap replicates (default 1000);
        random_state: seed of the bootstrap (default 0: reproducible).

    ``observed_value`` is the lower end; ``details`` has ``value``, ``ci`` and ``level``.
    """

    min_value: float

    success_keys: ClassVar[tuple[str, ...]] = (
        "cluster_column", "sensitive_columns", "metric", "min_value", "level", "n_boot",
        "random_state", "min_cell", "ci_method", "noise_label",
    )
    args_keys: ClassVar[tuple[str, ...]] = ("cluster_column", "sensitive_columns", "metric",
                                            "min_value")

    @pydantic.validator("metric")
    def _check_metric(cls, value: str) -> str:
        higher = sorted(m for m, (_, up) in _CI_METRICS.items() if up)
        if value not in higher:
            raise ValueError(f"The 'metric' parameter must be one of {higher} (higher is "
                             f"fairer; for wd/ed use ExpectClusterMetricUpperBoundToBeAtMost); "
                             f"got {value!r}.")
        return value

    def _passes(self, observed: float) -> bool:
        return observed >= self.min_value

    def _metric(
        self, table: np.ndarray, groups: list[str], clusters: list[Any]
    ) -> tuple[float, list[dict[str, Any]], dict[str, Any]]:
        value, lo, hi, method = self._interval(table, groups, clusters)
        return lo, [{} for _ in range(table.shape[1])], {
            "metric": self.metric, "value": value, "ci": [lo, hi], "level": self.level,
            "method": method, "judged": "lower end of the interval"}


class ExpectClusterMetricUpperBoundToBeAtMost(_ClusterBoundExpectation):
    """Expect the upper end of the confidence interval of a representation gap (``wd`` or
    ``ed``, size-weighted mean over clusters) to be at most ``max_value``.

    ``observed_value`` is the upper end; ``details`` has ``value``, ``ci`` and ``level``.
    """

    max_value: float

    success_keys: ClassVar[tuple[str, ...]] = (
        "cluster_column", "sensitive_columns", "metric", "max_value", "level", "n_boot",
        "random_state", "min_cell", "ci_method", "noise_label",
    )
    args_keys: ClassVar[tuple[str, ...]] = ("cluster_column", "sensitive_columns", "metric",
                                            "max_value")

    @pydantic.validator("metric")
    def _check_metric(cls, value: str) -> str:
        lower = sorted(m for m, (_, up) in _CI_METRICS.items() if not up)
        if value not in lower:
            raise ValueError(f"The 'metric' parameter must be one of {lower} (lower is fairer; "
                             "for balance and the like use "
                             f"ExpectClusterMetricLowerBoundToBeAtLeast); got {value!r}.")
        return value

    def _passes(self, observed: float) -> bool:
        return observed <= self.max_value

    def _metric(
        self, table: np.ndarray, groups: list[str], clusters: list[Any]
    ) -> tuple[float, list[dict[str, Any]], dict[str, Any]]:
        value, lo, hi, method = self._interval(table, groups, clusters)
        return hi, [{} for _ in range(table.shape[1])], {
            "metric": self.metric, "value": value, "ci": [lo, hi], "level": self.level,
            "method": method, "judged": "upper end of the interval"}


# --------------------------------------------------------------------------------------------
# Dataframes: GX 1.x validates pandas (and Spark / SQL through its own engines); polars frames
# are converted for it
# --------------------------------------------------------------------------------------------


def pandas_frame(frame: Any, columns: list[str] | None = None) -> pd.DataFrame:
    """A pandas frame GX can validate, from a pandas or polars DataFrame / LazyFrame.

    GX 1.x has no polars engine. This converts the ``columns`` needed (default: all) column by
    column without pyarrow (numbers stay numpy-backed, integers with nulls become float64 with
    NaN, text and categoricals become ``object`` columns with ``None``), as the host's input
    checks do. A pandas frame is returned as is (restricted to ``columns``)."""
    if isinstance(frame, pd.DataFrame):
        return frame if columns is None else frame.loc[:, list(columns)]
    import polars as pl

    if isinstance(frame, pl.LazyFrame):
        frame = frame.select(columns).collect() if columns else frame.collect()
    if not isinstance(frame, pl.DataFrame):
        raise TypeError(f"expected a pandas or polars DataFrame; got {type(frame).__name__}")
    return _to_pandas(frame, list(columns) if columns else list(frame.columns))


def _to_pandas(sample: Any, columns: list[str] | tuple[str, ...]) -> pd.DataFrame:
    """Convert the needed columns of a polars (or pandas) frame to pandas, without pyarrow.

    Numeric columns become numpy-backed (integers with nulls become float64 with NaN); every other
    column becomes an ``object`` column of Python values with None for nulls.
    """
    import numpy as np
    import pandas as pd

    if isinstance(sample, pd.DataFrame):
        return sample.loc[:, [c for c in columns if c in sample.columns]].copy()

    import polars as pl

    if not isinstance(sample, pl.DataFrame):
        raise TypeError(
            "The 'sample' parameter of run_input_checks must be a polars DataFrame; "
            f"got {type(sample).__name__}."
        )
    data: dict[str, Any] = {}
    for name in columns:
        if name not in sample.columns:
            continue
        series = sample.get_column(name)
        dtype = series.dtype
        if dtype.is_numeric():
            data[name] = series.to_numpy()
        elif dtype == pl.Boolean and series.null_count() == 0:
            data[name] = series.to_numpy()
        else:
            if dtype in (pl.Categorical,) or isinstance(dtype, pl.Enum):
                series = series.cast(pl.String)
            values = series.to_numpy()
            data[name] = pd.Series(np.asarray(values, dtype=object), dtype=object)
    frame = pd.DataFrame(data, index=pd.RangeIndex(sample.height))
    return frame
