"""Clustering algorithms (layer 1: numpy in, scikit-learn-style estimators out)."""

from __future__ import annotations

from typing import TYPE_CHECKING

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

if TYPE_CHECKING:  # what type checkers see; at run time the names load lazily (above)
    from fairaudit.cluster._ffcm_ops import (
        nearest_centre as nearest_centre,
    )
    from fairaudit.cluster.bera import (
        BeraFairAssignment as BeraFairAssignment,
    )
    from fairaudit.cluster.dc_distance import (
        MergeTree as MergeTree,
    )
    from fairaudit.cluster.dc_distance import (
        core_distances as core_distances,
    )
    from fairaudit.cluster.dc_distance import (
        dc_distance_matrix as dc_distance_matrix,
    )
    from fairaudit.cluster.dc_distance import (
        merge_tree as merge_tree,
    )
    from fairaudit.cluster.dc_distance import (
        mutual_reachability_mst as mutual_reachability_mst,
    )
    from fairaudit.cluster.fairden import (
        ExcludedGroups as ExcludedGroups,
    )
    from fairaudit.cluster.fairden import (
        FairDen as FairDen,
    )
    from fairaudit.cluster.fairlets import (
        FairletClustering as FairletClustering,
    )
    from fairaudit.cluster.fairsc import (
        FairSC as FairSC,
    )
    from fairaudit.cluster.fce import (
        FairClusteringEnsemble as FairClusteringEnsemble,
    )
    from fairaudit.cluster.fce import (
        kmeans_bases as kmeans_bases,
    )
    from fairaudit.cluster.ffcm import (
        FairFuzzyCMeans as FairFuzzyCMeans,
    )
    from fairaudit.cluster.lofkm import (
        LOFKMeans as LOFKMeans,
    )
    from fairaudit.cluster.vfc import (
        VariationalFairClustering as VariationalFairClustering,
    )
