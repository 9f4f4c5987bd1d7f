"""Clustering quality per group: does a labelling fit one group of people worse than another?

Two per-row quantities, averaged per group (rows of noise, label < 0, are removed by the caller):

- the silhouette s(i) of each row (Rousseeuw 1987; scikit-learn's ``silhouette_samples``,
  Euclidean): the *silhouette gap* is the largest group mean minus the smallest (0 = every group
  equally well clustered; holisticai's ``silhouette_diff`` for two groups);
- the distance of each row to the centre of its own cluster, ``‖x_i − c_ℓ(i)‖`` (or its square,
  the k-means cost of socially fair clustering, Ghadiri et al. 2021, Abbasi et al. 2021): the
  *cost ratio* is the largest group mean over the smallest (1 = equal cost; holisticai's
  ``social_fairness_ratio`` for two groups).

Confidence intervals: a percentile bootstrap that resamples rows with replacement within each
group (group sizes fixed) and holds the per-row values fixed. For the cost with given centres
the rows' values are independent, and the interval covers the population gap or ratio at about
its stated rate (tests/metrics/test_group_quality.py simulates it). A row's silhouette depends
on the other rows: that interval covers the sampling error of the group means given the
clustering, not the variability of the clustering itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fairaudit.metrics.quality import silhouette_by_row

__all__ = ["GroupGap", "centre_distances", "cluster_means", "group_gap", "silhouette_by_row"]


def cluster_means(X: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Mean of each cluster 0..max(labels) (rows of clusters without members are NaN)."""
    X = np.asarray(X, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    k = int(labels.max()) + 1 if labels.size else 0
    sums = np.zeros((k, X.shape[1]))
    np.add.at(sums, labels, X)
    counts = np.bincount(labels, minlength=k).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums / counts[:, None]


def centre_distances(X: np.ndarray, labels: np.ndarray, centres: np.ndarray, *,
                     squared: bool = False) -> np.ndarray:
    """Euclidean distance of every row to its own cluster's centre (``centres[labels[i]]``);
    squared with ``squared=True`` (the k-means cost)."""
    X = np.asarray(X, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    centres = np.asarray(centres, dtype=np.float64)
    if (labels < 0).any():
        raise ValueError("labels contain noise (-1): remove noise rows first")
    if centres.ndim != 2 or centres.shape[1] != X.shape[1] or labels.max(initial=-1) >= len(
            centres):
        raise ValueError(f"centres must be (k x {X.shape[1]}) with a row for every label")
    sq = ((X - centres[labels]) ** 2).sum(axis=1)
    return sq if squared else np.sqrt(sq)


@dataclass(frozen=True)
class GroupGap:
    """Per-group means of a per-row value and their spread.

    ``value``: largest mean minus smallest (``kind="difference"``) or largest over smallest
    (``kind="ratio"``); ``ci``: its percentile-bootstrap interval; ``best`` / ``worst``: the
    groups with the best and worst mean (``higher_is_better`` says which end is best);
    ``groups`` / ``means`` / ``sizes``: the groups used; ``left_out``: groups with fewer than
    ``min_group`` rows (or no finite values)."""

    value: float
    ci: tuple[float, float] | None
    groups: tuple[str, ...]
    means: tuple[float, ...]
    sizes: tuple[int, ...]
    best: str | None
    worst: str | None
    left_out: tuple[str, ...]
    notes: tuple[str, ...] = ()


def _spread(means: np.ndarray, kind: str) -> np.ndarray:
    hi, lo = means.max(axis=-1), means.min(axis=-1)
    if kind == "difference":
        return hi - lo
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(lo > 0, hi / np.where(lo > 0, lo, 1.0), np.nan)


def group_gap(
    values: np.ndarray,
    codes: np.ndarray,
    names: tuple[str, ...] | list[str],
    *,
    kind: str = "difference",
    higher_is_better: bool = True,
    min_group: int = 2,
    n_bootstrap: int = 200,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> GroupGap:
    """Spread of the per-group means of ``values`` (rows with group ``codes`` into ``names``).

    Undefined (NaN, with a note) with fewer than two usable groups, or for a ratio whose
    smallest mean is 0. ``n_bootstrap = 0`` gives no interval.
    """
    if kind not in ("difference", "ratio"):
        raise ValueError("kind must be 'difference' or 'ratio'")
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    codes = np.asarray(codes, dtype=np.int64).reshape(-1)
    if values.size != codes.size:
        raise ValueError(f"values has {values.size} rows but codes has {codes.size}")
    used_rows: list[np.ndarray] = []
    groups: list[str] = []
    left_out: list[str] = []
    for g, name in enumerate(names):
        v = values[(codes == g) & np.isfinite(values)]
        if v.size == 0:
            continue
        if v.size < min_group:
            left_out.append(str(name))
            continue
        groups.append(str(name))
        used_rows.append(v)
    notes: list[str] = []
    if left_out:
        notes.append(f"{len(left_out)} group(s) with fewer than {min_group} rows left out.")
    means = np.array([v.mean() for v in used_rows])
    sizes = tuple(int(v.size) for v in used_rows)
    if len(groups) < 2:
        notes.append("undefined: fewer than two groups with enough rows.")
        return GroupGap(math.nan, None, tuple(groups), tuple(float(m) for m in means), sizes,
                        None, None, tuple(left_out), tuple(notes))
    value = float(_spread(means, kind))
    if kind == "ratio" and means.min() <= 0:
        notes.append(f"undefined: group {groups[int(np.argmin(means))]!r} has a mean of 0.")
    best_i = int(np.argmax(means) if higher_is_better else np.argmin(means))
    worst_i = int(np.argmin(means) if higher_is_better else np.argmax(means))
    ci = None
    if n_bootstrap > 0 and math.isfinite(value):
        rng = np.random.default_rng(seed)
        boot = np.empty((int(n_bootstrap), len(groups)))
        for j, v in enumerate(used_rows):
            step = max(1, 2_000_000 // v.size)  # replicates per chunk: bounded memory
            for b0 in range(0, int(n_bootstrap), step):
                b1 = min(int(n_bootstrap), b0 + step)
                boot[b0:b1, j] = v[rng.integers(0, v.size, (b1 - b0, v.size))].mean(axis=1)
        reps = _spread(boot, kind)
        reps = reps[np.isfinite(reps)]
        if reps.size:
            a = (1.0 - confidence) / 2.0
            ci = (float(np.quantile(reps, a)), float(np.quantile(reps, 1.0 - a)))
    return GroupGap(value, ci, tuple(groups), tuple(float(m) for m in means), sizes,
                    groups[best_i], groups[worst_i], tuple(left_out), tuple(notes))
