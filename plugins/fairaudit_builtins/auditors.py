"""Built-in counting auditors: ``balance``, ``distribution`` (Ed/Wd) and ``capacity`` (CCE family).

Each is a function of a group x cluster table alone (``fairaudit.metrics.counting``); the host
runs them for every attribute and the intersection, and bootstraps the joint table for CIs.
Formulas and references: ``docs/metrics.md``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fairaudit.components import CountingAuditor, Direction, MetricSpec, Options
from fairaudit.data import GroupTable
from fairaudit.hookspecs import hookimpl
from fairaudit.metrics import counting, intervals

HIGHER = Direction.HIGHER_IS_BETTER
LOWER = Direction.LOWER_IS_BETTER


def _per_cluster(table: GroupTable, values: np.ndarray, metric: str) -> list[dict[str, Any]]:
    sizes = table.counts.sum(axis=0)
    return [
        {"metric": metric, "cluster": int(c), "value": _f(v), "n": int(n)}
        for c, v, n in zip(table.clusters, values, sizes, strict=True)
    ]


def _first(batch: Mapping[str, np.ndarray]) -> dict[str, float]:
    return {k: float(np.asarray(v).reshape(-1)[0]) for k, v in batch.items()}


def _f(x: float) -> float | None:
    x = float(x)
    return None if np.isnan(x) else x


class BalanceAuditor(CountingAuditor):
    """Balance (Chierichetti et al.; Bera et al.; FairDen eq. 6-7)."""

    name = "balance"
    description = (
        "Per-cluster balance min_g min(r_g/r_g(k), r_g(k)/r_g); dataset minimum (headline), "
        "mean over clusters (FairDen's convention) and, with noise, FairDen's noise-adjusted value."
    )
    metrics = (
        MetricSpec("balance", HIGHER, "minimum over clusters of the per-cluster balance",
                   headline=True),
        MetricSpec("balance_mean", HIGHER, "mean over clusters of the per-cluster balance"),
        MetricSpec("balance_noise_adjusted", HIGHER,
                   "mean balance without noise rows x non-noise fraction (FairDen)"),
    )

    def __init__(self) -> None:
        pass

    def compute(self, table: GroupTable) -> Mapping[str, float]:
        b = counting.balance(table.counts)
        out = {"balance": float(b.min), "balance_mean": float(b.mean)}
        if table.n_noise:
            out["balance_noise_adjusted"] = float(
                counting.noise_adjusted_balance(table.counts, table.n_noise)
            )
        return out

    def intervals(self, table: GroupTable, level: float,
                  replicates: np.ndarray) -> Mapping[str, Any]:
        out: dict[str, Any] = {
            "balance": intervals.balance_interval(table.counts, level),
            "balance_mean": intervals.balance_mean_interval(table.counts, level),
        }
        if table.n_noise:
            # the noise fraction is a constant factor (noise rows are not resampled)
            frac = table.n / (table.n + table.n_noise)
            m = out["balance_mean"]
            out["balance_noise_adjusted"] = dataclasses.replace(
                m, lower=m.lower * frac, upper=m.upper * frac
            )
        return out

    def compute_batch(self, table: GroupTable, counts: np.ndarray) -> Mapping[str, np.ndarray]:
        out = {
            "balance": np.asarray(counting.balance_min(counts), dtype=float),
            "balance_mean": np.asarray(counting.balance_mean(counts), dtype=float),
        }
        if table.n_noise:
            out["balance_noise_adjusted"] = np.asarray(
                counting.noise_adjusted_balance(counts, table.n_noise), dtype=float
            )
        return out

    def breakdown(self, table: GroupTable) -> Sequence[Mapping[str, Any]]:
        pc = counting.balance_per_cluster(table.counts)
        rows = _per_cluster(table, pc, "balance")
        # the group that sets each cluster's balance
        r = table.counts.sum(axis=1) / table.counts.sum()
        rk = table.counts / table.counts.sum(axis=0, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.minimum(r[:, None] / rk, rk / r[:, None])
        ratio = np.where(rk > 0, ratio, 0.0)
        worst = np.argmin(ratio, axis=0)
        for row, gi in zip(rows, worst, strict=True):
            row["worst_group"] = table.groups[int(gi)]
        mean_rows = [dict(r, metric="balance_mean") for r in rows]
        return rows + mean_rows


class DistributionAuditor(CountingAuditor):
    """Ed / Wd between each cluster's group distribution and the dataset's (FFCM §5.2)."""

    name = "distribution"
    description = (
        "Euclidean (Ed) and earth mover's (Wd) distance between each cluster's group distribution "
        "and the dataset's; size-weighted mean (headline), max and sum over clusters."
    )
    constraints = {"wd_ground": Options(("auto", "zero-one", "ordinal", "fairkm-compat"))}
    param_docs = {
        "wd_ground": "ground metric of Wd: 'auto' = ordinal for attributes declared ordinal, "
        "else 0/1 (total variation); 'fairkm-compat' reproduces FairKM's code (order-blind)"
    }
    metrics = (
        MetricSpec("wd", LOWER, "size-weighted mean over clusters of Wd", headline=True,
                   range=None),
        MetricSpec("wd_max", LOWER, "largest per-cluster Wd", range=None),
        MetricSpec("wd_sum", LOWER, "sum over clusters of Wd", range=None),
        MetricSpec("ed", LOWER, "size-weighted mean over clusters of Ed", range=(0, 2**0.5)),
        MetricSpec("ed_max", LOWER, "largest per-cluster Ed", range=(0, 2**0.5)),
        MetricSpec("ed_sum", LOWER, "sum over clusters of Ed", range=None),
    )

    def __init__(self, wd_ground: str = "auto") -> None:
        self.wd_ground = wd_ground

    def _ground(self, table: GroupTable) -> str:
        if self.wd_ground == "auto":
            return "ordinal" if table.ordinal else "zero-one"
        return self.wd_ground

    def compute(self, table: GroupTable) -> Mapping[str, float]:
        return _first(self.compute_batch(table, table.counts[None]))

    def intervals(self, table: GroupTable, level: float,
                  replicates: np.ndarray) -> Mapping[str, Any]:
        ground = self._ground(table)
        if ground == "fairkm-compat":  # not a norm of a deviation: percentile interval
            return {}
        return intervals.distance_intervals(table.counts, replicates, level, ground=ground)

    def compute_batch(self, table: GroupTable, counts: np.ndarray) -> Mapping[str, np.ndarray]:
        ground = self._ground(table)
        sizes = counts.sum(axis=1)
        out = {}
        for key, pc in (
            ("ed", counting.ed_per_cluster(counts)),
            ("wd", counting.wd_per_cluster(counts, ground=ground)),
        ):
            out[key] = np.asarray(counting.aggregate(pc, sizes, "weighted-mean"), dtype=float)
            out[f"{key}_max"] = np.asarray(counting.aggregate(pc, sizes, "max"), dtype=float)
            out[f"{key}_sum"] = np.asarray(counting.aggregate(pc, sizes, "sum"), dtype=float)
        return out

    def breakdown(self, table: GroupTable) -> Sequence[Mapping[str, Any]]:
        ed = counting.ed_per_cluster(table.counts)
        wd = counting.wd_per_cluster(table.counts, ground=self._ground(table))
        return _per_cluster(table, wd, "wd") + _per_cluster(table, ed, "ed")


class CapacityAuditor(CountingAuditor):
    """The CCE family (FCE) and FUFS's Balance′ and Proportion."""

    name = "capacity"
    description = (
        "Cluster-capacity fairness: fairness_CCE (headline), CCE, MNCE, NE, FCE's 'fair', and "
        "FUFS's Balance' and Proportion."
    )
    metrics = (
        MetricSpec("fairness_cce", HIGHER, "min over clusters and groups of "
                   "min(c·γ, 1/(c·γ)), γ = share of the group in the cluster", headline=True),
        MetricSpec("cce", HIGHER, "smallest / largest cluster size"),
        MetricSpec("mnce", HIGHER, "min over clusters of H(group | cluster) / H(group)"),
        MetricSpec("ne", HIGHER, "normalised entropy of cluster sizes"),
        MetricSpec("fce_fair", HIGHER, "min over clusters of min_g N / max_g N (FCE code)"),
        MetricSpec("balance_prime", HIGHER, "FUFS Balance': min_k min_g N[g,k]/|k|",
                   range=None),
        MetricSpec("proportion", LOWER, "FUFS Proportion: Σ_k max_g N[g,k]/|k|", range=None),
    )

    def __init__(self) -> None:
        pass

    def compute(self, table: GroupTable) -> Mapping[str, float]:
        return _first(self.compute_batch(table, table.counts[None]))

    def intervals(self, table: GroupTable, level: float,
                  replicates: np.ndarray) -> Mapping[str, Any]:
        return {
            "fairness_cce": intervals.fairness_cce_interval(table.counts, level),
            "cce": intervals.cce_interval(table.counts, level),
            "fce_fair": intervals.fce_fair_interval(table.counts, level),
            "balance_prime": intervals.balance_prime_interval(table.counts, level),
        }

    def compute_batch(self, table: GroupTable, counts: np.ndarray) -> Mapping[str, np.ndarray]:
        fns = {
            "fairness_cce": counting.fairness_cce,
            "cce": counting.cce,
            "mnce": counting.mnce,
            "ne": counting.ne,
            "fce_fair": counting.fce_fair,
            "balance_prime": counting.balance_prime,
            "proportion": counting.proportion,
        }
        return {k: np.asarray(f(counts), dtype=float) for k, f in fns.items()}

    def breakdown(self, table: GroupTable) -> Sequence[Mapping[str, Any]]:
        return (
            _per_cluster(table, counting.fairness_cce_per_cluster(table.counts), "fairness_cce")
            + _per_cluster(table, counting.nce_per_cluster(table.counts), "mnce")
            + _per_cluster(table, counting.fce_fair_per_cluster(table.counts), "fce_fair")
        )


@hookimpl
def fairaudit_register_auditors() -> list[type]:
    return [BalanceAuditor, DistributionAuditor, CapacityAuditor]
