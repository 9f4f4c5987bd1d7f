"""Clustering algorithms (layer 1: numpy in, scikit-learn-style estimators out)."""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "FairClusteringEnsemble": "fairaudit.cluster.fce",
    "kmeans_bases": "fairaudit.cluster.fce",
    "FairFuzzyCMeans": "fairaudit.cluster.ffcm",
    "LOFKMeans": "fairaudit.cluster.lofkm",
    "FairDen": "fairaudit.cluster.fairden",
    "ExcludedGroups": "fairaudit.cluster.fairden",
    "MergeTree": "fairaudit.cluster.dc_distance",
    "merge_tree": "fairaudit.cluster.dc_distance",
    "dc_distance_matrix": "fairaudit.cluster.dc_distance",
    "mutual_reachability_mst": "fairaudit.cluster.dc_distance",
    "core_distances": "fairaudit.cluster.dc_distance",
}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
