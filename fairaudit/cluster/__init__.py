"""Clustering algorithms (layer 1: numpy in, scikit-learn-style estimators out)."""

from __future__ import annotations

from fairaudit._lazy import lazy_attributes

_LAZY = {
    "FairClusteringEnsemble": "fairaudit.cluster.fce",
    "kmeans_bases": "fairaudit.cluster.fce",
    "FairFuzzyCMeans": "fairaudit.cluster.ffcm",
    "LOFKMeans": "fairaudit.cluster.lofkm",
    "FairSC": "fairaudit.cluster.fairsc",
    "FairletClustering": "fairaudit.cluster.fairlets",
    "BeraFairAssignment": "fairaudit.cluster.bera",
    "VariationalFairClustering": "fairaudit.cluster.vfc",
    "nearest_centre": "fairaudit.cluster._ffcm_ops",
    "FairDen": "fairaudit.cluster.fairden",
    "ExcludedGroups": "fairaudit.cluster.fairden",
    "MergeTree": "fairaudit.cluster.dc_distance",
    "merge_tree": "fairaudit.cluster.dc_distance",
    "dc_distance_matrix": "fairaudit.cluster.dc_distance",
    "mutual_reachability_mst": "fairaudit.cluster.dc_distance",
    "core_distances": "fairaudit.cluster.dc_distance",
}

__all__ = list(_LAZY)


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals())
