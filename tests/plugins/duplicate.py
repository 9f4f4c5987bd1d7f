"""Fixture plugin: registers a clusterer named ``kmeans``, clashing with the built-in."""

from __future__ import annotations

import numpy as np

from fairaudit.core.components import Clusterer
from fairaudit.hookspecs import hookimpl


class OtherKMeans(Clusterer):
    name = "kmeans"

    def __init__(self) -> None:
        pass

    def fit(self, data):
        self.labels_ = np.zeros(data.n_rows, dtype=np.int64)
        return self


@hookimpl
def fairaudit_register_clusterers() -> list[type]:
    return [OtherKMeans]
