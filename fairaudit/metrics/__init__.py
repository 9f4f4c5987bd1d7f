"""Fairness and quality metrics (layer 1: numpy arrays and contingency tables)."""

from __future__ import annotations

from fairaudit._lazy import lazy_attributes

_LAZY = {
    "METRICS": "fairaudit.metrics.counting",
    "BalanceResult": "fairaudit.metrics.counting",
    "ContingencyTable": "fairaudit.metrics.counting",
    "MetricInfo": "fairaudit.metrics.counting",
    "aggregate": "fairaudit.metrics.counting",
    "balance": "fairaudit.metrics.counting",
    "balance_mean": "fairaudit.metrics.counting",
    "balance_min": "fairaudit.metrics.counting",
    "balance_per_cluster": "fairaudit.metrics.counting",
    "balance_prime": "fairaudit.metrics.counting",
    "balance_prime_per_cluster": "fairaudit.metrics.counting",
    "cce": "fairaudit.metrics.counting",
    "contingency_table": "fairaudit.metrics.counting",
    "ed": "fairaudit.metrics.counting",
    "ed_per_cluster": "fairaudit.metrics.counting",
    "fairness_cce": "fairaudit.metrics.counting",
    "fairness_cce_per_cluster": "fairaudit.metrics.counting",
    "fce_fair": "fairaudit.metrics.counting",
    "fce_fair_per_cluster": "fairaudit.metrics.counting",
    "marginalize": "fairaudit.metrics.counting",
    "mnce": "fairaudit.metrics.counting",
    "nce_per_cluster": "fairaudit.metrics.counting",
    "ne": "fairaudit.metrics.counting",
    "noise_adjusted_balance": "fairaudit.metrics.counting",
    "proportion": "fairaudit.metrics.counting",
    "proportion_per_cluster": "fairaudit.metrics.counting",
    "wd": "fairaudit.metrics.counting",
    "wd_per_cluster": "fairaudit.metrics.counting",
    "BootstrapInterval": "fairaudit.metrics.bootstrap",
    "bootstrap_interval": "fairaudit.metrics.bootstrap",
    "bootstrap_samples": "fairaudit.metrics.bootstrap",
    "percentile_interval": "fairaudit.metrics.bootstrap",
    "resample_counts": "fairaudit.metrics.bootstrap",
    "Interval": "fairaudit.metrics.intervals",
    "balance_interval": "fairaudit.metrics.intervals",
    "balance_mean_interval": "fairaudit.metrics.intervals",
    "balance_prime_interval": "fairaudit.metrics.intervals",
    "cce_interval": "fairaudit.metrics.intervals",
    "distance_intervals": "fairaudit.metrics.distance_intervals",
    "fairness_cce_interval": "fairaudit.metrics.intervals",
    "fce_fair_interval": "fairaudit.metrics.intervals",
    "ratio_score_interval": "fairaudit.metrics.intervals",
    "wilson_interval": "fairaudit.metrics.intervals",
    "LCDResult": "fairaudit.metrics.local_connectivity",
    "lcd": "fairaudit.metrics.local_connectivity",
    "DCSIResult": "fairaudit.metrics.density_separation",
    "DCSIPair": "fairaudit.metrics.density_separation",
    "dcsi": "fairaudit.metrics.density_separation",
    "SilhouetteResult": "fairaudit.metrics.quality",
    "silhouette": "fairaudit.metrics.quality",
    **{n: "fairaudit.metrics.scorers" for n in ("balance_score", "ed_score", "wd_score", "fairness_cce_score", "fairness_scorer")},
}

__all__ = list(_LAZY)


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals())
