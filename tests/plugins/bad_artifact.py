"""Fixture plugin: a clusterer that declares an artifact key outside the closed set."""

from __future__ import annotations

import numpy as np

from fairaudit.core.components import Clusterer
from fairaudit.hookspecs import hookimpl


class BadArtifactClusterer(Clusterer):
    name = "bad_artifact"
    provides = frozenset({"labels", "centroidz"})

    def __init__(self) -> None:
        pass

    def fit(self, data):
        self.labels_ = np.zeros(data.n_rows, dtype=np.int64)
        return self


@hookimpl
def fairaudit_register_clusterers() -> list[type]:
    return [BadArtifactClusterer]
