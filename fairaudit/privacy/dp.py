"""The differentially private release of count cubes: OpenDP's discrete Laplace mechanism, its
accounting, the post-processing to consistent non-negative integer tables, and the parametric
bootstrap that puts sampling and noise into the intervals (docs/privacy.md, "Publishing with
differential privacy").

Privacy unit: one row = one person; neighbouring tables differ by adding or removing one row.
A row adds 1 to exactly one cell of each count cube (OpenDP's ``make_count_by_categories`` is
1-stable from the symmetric distance to the L1 distance) — a labelling's joint cube and each
attribute's own cube alike (:mod:`fairaudit.privacy.cubes`) — so the concatenation of ``C``
cubes moves by at most ``C`` in L1. One ``make_laplace`` measurement on the concatenated integer
vector, scale found by ``binary_search_param`` for ``d_in = C``, releases every cube at once; the
epsilon recorded is that measurement's own privacy map at ``d_in = C`` (the budget falls
equally on the ``C`` cubes: each gets ``epsilon / C``).

Noise comes only from OpenDP's sampler (operating-system randomness). The bootstrap's simulated
noise (numpy, seeded by the published seed) is post-processing of the release: it never touches
the data.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MECHANISM = "discrete Laplace (OpenDP make_laplace on integer counts)"
THRESHOLD_MECHANISM = ("discrete Laplace with a threshold (OpenDP make_laplace_threshold): "
                       "only cells whose noisy count reaches the threshold are released")
NEIGHBOURS = "add or remove one row"
PUBLISH_FEATURE = "--publish (a differentially private release)"
"""How a missing OpenDP names the feature (``pip install 'fairaudit-clusters[publish]'``)."""
MAX_CELLS = 50_000
"""Largest number of cells of all cubes together: each cell gets noise, and the bootstrap holds
replicates x cells integers."""


def _opendp():
    from fairaudit.errors import require_extra

    dp = require_extra("opendp.prelude", "publish", PUBLISH_FEATURE)

    dp.enable_features("contrib")
    return dp


def cube_stability() -> int:
    """L1 change of one labelling's count cube when one row is added or removed: OpenDP's own
    stability map of ``make_count_by_categories`` at a symmetric distance of 1."""
    dp = _opendp()
    t = dp.t.make_count_by_categories(
        dp.vector_domain(dp.atom_domain(T=str)), dp.symmetric_distance(),
        categories=["cell"], null_category=False, MO="L1Distance<i64>", TOA="i64",
    )
    return int(t.map(1))


@dataclass(frozen=True)
class Mechanism:
    """One discrete Laplace measurement over the concatenation of ``n_cubes`` count cubes."""

    measurement: object
    scale: float
    d_in: int
    epsilon: float
    """OpenDP's privacy map of ``measurement`` at ``d_in`` (what the release spends)."""
    n_cubes: int

    def to_json(self) -> dict[str, object]:
        return {"scale": self.scale, "d_in": self.d_in, "cubes": self.n_cubes,
                "epsilon_per_cube": self.epsilon / max(self.n_cubes, 1)}


@functools.lru_cache(maxsize=32)
def mechanism(epsilon: float, n_cubes: int) -> Mechanism:
    """The smallest-noise discrete Laplace measurement whose privacy map at ``d_in`` (``n_cubes``
    times one cube's stability) is at most ``epsilon``."""
    dp = _opendp()
    domain = dp.vector_domain(dp.atom_domain(T="i64"))
    metric = dp.l1_distance(T="i64")
    d_in = n_cubes * cube_stability()
    scale = float(dp.binary_search_param(
        lambda s: dp.m.make_laplace(domain, metric, scale=s), d_in=d_in, d_out=float(epsilon)))
    meas = dp.m.make_laplace(domain, metric, scale=scale)
    return Mechanism(meas, scale, d_in, float(meas.map(d_in)), n_cubes)


@dataclass(frozen=True)
class ThresholdMechanism:
    """OpenDP's discrete Laplace with a threshold over a map of cells (keys) -> counts: only
    cells whose noisy count reaches ``threshold`` are released, so the cells (and the group and
    cluster names in them) are chosen privately — an unknown domain (Rogers 2023). Each row
    touches one cell of each of the ``n_cubes`` cubes: ``d_in = (n_cubes, n_cubes, 1)`` (cells
    changed, L1, L-infinity); ``(epsilon, delta)`` is OpenDP's privacy map there."""

    measurement: object
    scale: float
    threshold: int
    d_in: tuple[int, int, int]
    epsilon: float
    delta: float
    n_cubes: int

    def to_json(self) -> dict[str, object]:
        return {"scale": self.scale, "threshold": self.threshold, "d_in": list(self.d_in),
                "cubes": self.n_cubes}


@functools.lru_cache(maxsize=32)
def threshold_mechanism(epsilon: float, delta: float, n_cubes: int) -> ThresholdMechanism:
    """The smallest noise for ``epsilon``, then the smallest threshold for ``delta``."""
    dp = _opendp()
    domain = dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T="i64"))
    metric = dp.l01inf_distance(dp.absolute_distance(T="i64"))
    k = n_cubes * cube_stability()
    d_in = (n_cubes, k, cube_stability())
    big = 2**30

    def meas(scale: float, threshold: int) -> object:
        return dp.m.make_laplace_threshold(domain, metric, scale=scale, threshold=threshold)

    scale = float(dp.binary_search(lambda s: meas(s, big).map(d_in)[0] <= epsilon,
                                   bounds=(1e-6, 1e6)))
    threshold = int(dp.binary_search(lambda t: meas(scale, t).map(d_in)[1] <= delta,
                                     bounds=(1, big)))
    m = meas(scale, threshold)
    eps, dlt = m.map(d_in)
    return ThresholdMechanism(m, scale, threshold, d_in, float(eps), float(dlt), n_cubes)


def add_threshold_noise(mech: ThresholdMechanism, counts: dict[str, int]) -> dict[str, int]:
    """The released cells: OpenDP's noisy counts of the cells that reach the threshold."""
    return {str(k): int(v) for k, v in mech.measurement(dict(counts)).items()}


def add_noise(mech: Mechanism, counts: np.ndarray) -> np.ndarray:
    """``counts`` (int64 vector) plus OpenDP's discrete Laplace noise. The one place the data
    meets randomness (tests replace it to inject a chosen noise vector)."""
    return np.asarray(mech.measurement(np.asarray(counts, dtype=np.int64).tolist()),
                      dtype=np.int64)


# ---------------------------------------------------------------------------- post-processing
def nonnegative_integer(noisy: np.ndarray) -> np.ndarray:
    """Non-negative integer cubes with the noisy total, closest to ``noisy`` (rows of a 2-d array
    are cubes): the Euclidean projection onto ``{x >= 0, sum x = max(sum noisy, 0)}`` (a common
    shift ``tau`` of every cell, clamped at 0; Duchi et al. 2008), then rounded by largest
    remainder so the total is kept. Deterministic: ties go to the lower index. Every margin is
    then a sum of this one cube, so margins agree."""
    y = np.atleast_2d(np.asarray(noisy, dtype=np.float64))
    B, n = y.shape
    total = np.maximum(y.sum(axis=1), 0.0)
    u = -np.sort(-y, axis=1)
    css = np.cumsum(u, axis=1) - total[:, None]
    j = np.arange(1, n + 1, dtype=np.float64)
    cond = u - css / j > 0
    rho = n - np.argmax(cond[:, ::-1], axis=1)  # last index where cond holds, 1-based
    tau = css[np.arange(B), rho - 1] / rho
    x = np.maximum(y - tau[:, None], 0.0)
    x[total == 0] = 0.0
    base = np.floor(x + 1e-9)
    short = (total - base.sum(axis=1)).round().astype(np.int64)
    frac = x - base
    order = np.argsort(-frac, axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(n)[None, :].repeat(B, axis=0), axis=1)
    out = base.astype(np.int64) + (rank < short[:, None])
    return out[0] if np.ndim(noisy) == 1 else out


# ---------------------------------------------------------------------------- bootstrap
def discrete_laplace(rng: np.random.Generator, scale: float, size: Sequence[int]) -> np.ndarray:
    """Simulated discrete Laplace noise of ``scale`` (difference of two geometric variables),
    for the bootstrap only: P(z) proportional to exp(-|z| / scale)."""
    p = -math.expm1(-1.0 / scale)
    return rng.geometric(p, size=size) - rng.geometric(p, size=size)


def discrete_laplace_variance(scale: float) -> float:
    """Variance of the release's noise per cell (public: a function of the scale alone)."""
    from fairaudit.metrics.noisy_cells import discrete_laplace_variance as var

    return var(scale)


def parametric_replicates(cube: np.ndarray, scale: float, n_boot: int,
                          rng: np.random.Generator) -> np.ndarray:
    """(B x cells) replicates of a released cube that carry both uncertainties: rows drawn
    again (multinomial with the released cell shares and total), fresh noise of the release's
    distribution, the same post-processing. A function of the release and the seed alone."""
    cube = np.asarray(cube, dtype=np.int64).reshape(-1)
    n = int(cube.sum())
    if n == 0:
        sampled = np.zeros((n_boot, cube.size), dtype=np.int64)
    else:
        sampled = rng.multinomial(n, cube / n, size=n_boot)
    return nonnegative_integer(sampled + discrete_laplace(rng, scale, sampled.shape))


def thresholded_replicates(cube: np.ndarray, scale: float, threshold: int, n_boot: int,
                           rng: np.random.Generator) -> np.ndarray:
    """Replicates of a thresholded release: rows drawn again from the released cells, fresh
    noise, cells below the threshold dropped (as the release did)."""
    cube = np.asarray(cube, dtype=np.int64).reshape(-1)
    n = int(cube.sum())
    if n == 0:
        return np.zeros((n_boot, cube.size), dtype=np.int64)
    noisy = rng.multinomial(n, cube / n, size=n_boot) + discrete_laplace(rng, scale,
                                                                         (n_boot, cube.size))
    return np.where(noisy >= threshold, noisy, 0).astype(np.int64)
