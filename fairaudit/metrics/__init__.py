"""Fairness and quality metrics (layer 1: numpy arrays and contingency tables)."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    "silhouette_by_row": "fairaudit.metrics.quality",
    "GroupGap": "fairaudit.metrics.group_quality",
    "centre_distances": "fairaudit.metrics.group_quality",
    "cluster_means": "fairaudit.metrics.group_quality",
    "group_gap": "fairaudit.metrics.group_quality",
    **{n: "fairaudit.metrics.scorers" for n in ("balance_score", "ed_score", "wd_score", "fairness_cce_score", "fairness_scorer")},
}

__all__ = list(_LAZY)


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals())

if TYPE_CHECKING:  # what type checkers see; at run time the names load lazily (above)
    from fairaudit.metrics.bootstrap import (
        BootstrapInterval as BootstrapInterval,
    )
    from fairaudit.metrics.bootstrap import (
        bootstrap_interval as bootstrap_interval,
    )
    from fairaudit.metrics.bootstrap import (
        bootstrap_samples as bootstrap_samples,
    )
    from fairaudit.metrics.bootstrap import (
        percentile_interval as percentile_interval,
    )
    from fairaudit.metrics.bootstrap import (
        resample_counts as resample_counts,
    )
    from fairaudit.metrics.counting import (
        METRICS as METRICS,
    )
    from fairaudit.metrics.counting import (
        BalanceResult as BalanceResult,
    )
    from fairaudit.metrics.counting import (
        ContingencyTable as ContingencyTable,
    )
    from fairaudit.metrics.counting import (
        MetricInfo as MetricInfo,
    )
    from fairaudit.metrics.counting import (
        aggregate as aggregate,
    )
    from fairaudit.metrics.counting import (
        balance as balance,
    )
    from fairaudit.metrics.counting import (
        balance_mean as balance_mean,
    )
    from fairaudit.metrics.counting import (
        balance_min as balance_min,
    )
    from fairaudit.metrics.counting import (
        balance_per_cluster as balance_per_cluster,
    )
    from fairaudit.metrics.counting import (
        balance_prime as balance_prime,
    )
    from fairaudit.metrics.counting import (
        balance_prime_per_cluster as balance_prime_per_cluster,
    )
    from fairaudit.metrics.counting import (
        cce as cce,
    )
    from fairaudit.metrics.counting import (
        contingency_table as contingency_table,
    )
    from fairaudit.metrics.counting import (
        ed as ed,
    )
    from fairaudit.metrics.counting import (
        ed_per_cluster as ed_per_cluster,
    )
    from fairaudit.metrics.counting import (
        fairness_cce as fairness_cce,
    )
    from fairaudit.metrics.counting import (
        fairness_cce_per_cluster as fairness_cce_per_cluster,
    )
    from fairaudit.metrics.counting import (
        fce_fair as fce_fair,
    )
    from fairaudit.metrics.counting import (
        fce_fair_per_cluster as fce_fair_per_cluster,
    )
    from fairaudit.metrics.counting import (
        marginalize as marginalize,
    )
    from fairaudit.metrics.counting import (
        mnce as mnce,
    )
    from fairaudit.metrics.counting import (
        nce_per_cluster as nce_per_cluster,
    )
    from fairaudit.metrics.counting import (
        ne as ne,
    )
    from fairaudit.metrics.counting import (
        noise_adjusted_balance as noise_adjusted_balance,
    )
    from fairaudit.metrics.counting import (
        proportion as proportion,
    )
    from fairaudit.metrics.counting import (
        proportion_per_cluster as proportion_per_cluster,
    )
    from fairaudit.metrics.counting import (
        wd as wd,
    )
    from fairaudit.metrics.counting import (
        wd_per_cluster as wd_per_cluster,
    )
    from fairaudit.metrics.density_separation import (
        DCSIPair as DCSIPair,
    )
    from fairaudit.metrics.density_separation import (
        DCSIResult as DCSIResult,
    )
    from fairaudit.metrics.density_separation import (
        dcsi as dcsi,
    )
    from fairaudit.metrics.group_quality import (
        GroupGap as GroupGap,
    )
    from fairaudit.metrics.group_quality import (
        centre_distances as centre_distances,
    )
    from fairaudit.metrics.group_quality import (
        cluster_means as cluster_means,
    )
    from fairaudit.metrics.group_quality import (
        group_gap as group_gap,
    )
    from fairaudit.metrics.intervals import (
        Interval as Interval,
    )
    from fairaudit.metrics.intervals import (
        balance_interval as balance_interval,
    )
    from fairaudit.metrics.intervals import (
        balance_mean_interval as balance_mean_interval,
    )
    from fairaudit.metrics.intervals import (
        balance_prime_interval as balance_prime_interval,
    )
    from fairaudit.metrics.intervals import (
        cce_interval as cce_interval,
    )
    from fairaudit.metrics.intervals import (
        distance_intervals as distance_intervals,
    )
    from fairaudit.metrics.intervals import (
        fairness_cce_interval as fairness_cce_interval,
    )
    from fairaudit.metrics.intervals import (
        fce_fair_interval as fce_fair_interval,
    )
    from fairaudit.metrics.intervals import (
        ratio_score_interval as ratio_score_interval,
    )
    from fairaudit.metrics.intervals import (
        wilson_interval as wilson_interval,
    )
    from fairaudit.metrics.local_connectivity import (
        LCDResult as LCDResult,
    )
    from fairaudit.metrics.local_connectivity import (
        lcd as lcd,
    )
    from fairaudit.metrics.quality import (
        SilhouetteResult as SilhouetteResult,
    )
    from fairaudit.metrics.quality import (
        silhouette as silhouette,
    )
    from fairaudit.metrics.quality import (
        silhouette_by_row as silhouette_by_row,
    )
    from fairaudit.metrics.scorers import (
        balance_score as balance_score,
    )
    from fairaudit.metrics.scorers import (
        ed_score as ed_score,
    )
    from fairaudit.metrics.scorers import (
        fairness_cce_score as fairness_cce_score,
    )
    from fairaudit.metrics.scorers import (
        fairness_scorer as fairness_scorer,
    )
    from fairaudit.metrics.scorers import (
        wd_score as wd_score,
    )

