"""Bootstrap confidence intervals for counting metrics, by resampling the contingency table.

Resampling rows with replacement and re-counting is the same as drawing the whole table from a
multinomial distribution with the observed cell proportions and the same total, so the bootstrap
costs nothing per data row. Resample the JOINT table (intersectional groups x clusters) and
marginalise each replicate (:func:`fairaudit.metrics.counting.marginalize`) to get the tables of
the single attributes, so that all metrics of one replicate come from the same resampled rows.

Replicates may have empty rows (a small group that is not drawn) or empty columns (a small
cluster that is not drawn). The counting metrics score such a replicate as the host would score
a dataset with those counts: empty rows and columns are dropped (plug-in principle). A
replicate whose metric is then undefined (e.g. only one group left for MNCE) gives NaN, and
:func:`percentile_interval` drops NaN replicates; when more than ``max_undefined`` of them are
NaN the interval is (nan, nan) because what remains would be conditioned on an unrepresentative
subset of resamples. See ``docs/metrics.md`` ("Uncertainty").
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

logger = logging.getLogger(__name__)

__all__ = [
    "BootstrapInterval",
    "bootstrap_interval",
    "bootstrap_samples",
    "in_blocks",
    "replicate_blocks",
    "percentile_interval",
    "resample_counts",
]

RngLike = np.random.Generator | int | np.random.SeedSequence | None

# cap on B * cells held in memory at once by bootstrap_samples (float64: 8 bytes per element)
_DEFAULT_MAX_ELEMENTS = 4_000_000
# elements of the stack per block in in_blocks: a few MB, so a block's temporaries stay in cache
_BLOCK_ELEMENTS = 1 << 18


def _rng(rng: RngLike) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, (int, np.integer, np.random.SeedSequence)):
        return np.random.default_rng(rng)
    raise ValueError(
        f"The 'rng' parameter must be a numpy Generator, an int seed or None; got {type(rng)!r}."
    )


def _counts(N: ArrayLike) -> NDArray[np.int64]:
    arr = np.asarray(N)
    if arr.ndim < 1 or arr.size == 0:
        raise ValueError(f"The 'N' parameter must be a non-empty table of counts; got {arr.shape}.")
    if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
        raise ValueError(f"The 'N' parameter must be numeric counts; got dtype {arr.dtype}.")
    f = arr.astype(np.float64)
    if not np.all(np.isfinite(f)) or np.any(f < 0) or np.any(f != np.round(f)):
        raise ValueError(
            "The 'N' parameter must contain non-negative integer counts to be resampled."
        )
    out = f.astype(np.int64)
    if out.sum() <= 0:
        raise ValueError("The 'N' parameter must have a positive total count; got 0.")
    return out


def _n_boot(n_boot: int) -> int:
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise ValueError(f"The 'n_boot' parameter must be an int >= 1; got {n_boot!r}.")
    return int(n_boot)


def resample_counts(N: ArrayLike, n_boot: int, rng: RngLike) -> NDArray[np.int64]:
    """Draw ``n_boot`` multinomial replicates of the whole table with the same total.

    Returns an int64 array of shape ``(n_boot, *N.shape)``. The result depends only on ``N``,
    ``n_boot`` and the generator state; drawing in chunks from the same generator gives the same
    replicates as one call (numpy draws the rows of a multinomial batch one after the other).
    """
    counts = _counts(N)
    b = _n_boot(n_boot)
    gen = _rng(rng)
    total = int(counts.sum())
    p = counts.ravel() / total
    draws = gen.multinomial(total, p, size=b)
    return draws.reshape((b, *counts.shape))


def bootstrap_samples(
    N: ArrayLike,
    statistic: Callable[[NDArray[np.int64]], ArrayLike],
    n_boot: int = 1000,
    rng: RngLike = None,
    *,
    max_elements: int = _DEFAULT_MAX_ELEMENTS,
) -> NDArray[np.float64]:
    """Apply a vectorised ``statistic`` to ``n_boot`` resampled tables, in memory-bounded chunks.

    ``statistic`` maps a stack of tables of shape (b, *N.shape) to an array whose first axis has
    length b (e.g. ``fairaudit.metrics.counting.balance_min``, or a function that marginalises a
    joint table first). Returns the concatenated values, shape (n_boot, ...). The replicates are
    the same as ``resample_counts(N, n_boot, rng)`` whatever the chunking.
    """
    counts = _counts(N)
    b = _n_boot(n_boot)
    gen = _rng(rng)
    if not isinstance(max_elements, (int, np.integer)) or max_elements < 1:
        raise ValueError(f"The 'max_elements' parameter must be an int >= 1; got {max_elements!r}.")
    chunk = max(1, int(max_elements) // max(1, counts.size))
    out: list[NDArray[np.float64]] = []
    done = 0
    while done < b:
        m = min(chunk, b - done)
        reps = resample_counts(counts, m, gen)
        vals = np.asarray(statistic(reps), dtype=np.float64)
        if vals.ndim < 1 or vals.shape[0] != m:
            raise ValueError(
                "The 'statistic' must return one value per replicate (first axis of length "
                f"{m}); got shape {vals.shape}."
            )
        out.append(vals)
        done += m
    return np.concatenate(out, axis=0)


def in_blocks(
    statistic: Callable[[NDArray[np.float64]], Mapping[str, ArrayLike]],
    counts: ArrayLike,
    *,
    max_elements: int = _BLOCK_ELEMENTS,
) -> dict[str, NDArray[np.float64]]:
    """``statistic`` (a stack of tables (b, ...) -> {name: values of shape (b, ...)}) applied
    to blocks of the replicates ``counts`` (B, ...) and concatenated along the first axis.

    For a statistic computed replicate by replicate (every vectorised counting metric is) the
    values are those of one call on the whole stack, bit for bit; the blocks only keep each
    step's temporaries in cache (a stack of 200 tables of 10 x 10,000 is 160 MB per temporary).
    Each block is converted to float64 once, keeping the stack's memory layout (numpy's sums
    follow it), and holds at least two replicates: with one, numpy drops the replicate axis and
    may sum the others in another order."""
    arr = np.asarray(counts)
    if arr.ndim < 1 or arr.shape[0] < 1:
        raise ValueError(f"The 'counts' parameter must be a non-empty stack; got {arr.shape}.")
    per = max(1, int(np.prod(arr.shape[1:], dtype=np.int64)))
    parts: dict[str, list[NDArray[np.float64]]] = {}
    for b0, b1 in replicate_blocks(arr.shape[0], max(1, int(max_elements) // per)):
        block = np.asarray(arr[b0:b1], dtype=np.float64)
        for key, val in statistic(block).items():
            parts.setdefault(key, []).append(np.asarray(val, dtype=np.float64))
    return {key: np.concatenate(v, axis=0) for key, v in parts.items()}


def replicate_blocks(n_boot: int, step: int) -> list[tuple[int, int]]:
    """Consecutive ``[start, stop)`` blocks of about ``step`` replicates covering ``n_boot``,
    none with a single replicate unless ``n_boot`` is 1 (see :func:`in_blocks`)."""
    step = max(2, int(step))
    out = [(b0, min(n_boot, b0 + step)) for b0 in range(0, n_boot, step)]
    if len(out) > 1 and out[-1][1] - out[-1][0] == 1:
        out[-2:] = [(out[-2][0], n_boot)]
    return out


def percentile_interval(
    samples: ArrayLike, level: float = 0.95, *, max_undefined: float = 0.1
) -> tuple[float, float]:
    """Percentile bootstrap interval ``(lower, upper)`` at the given ``level``.

    NaN replicates (metric undefined in that replicate) are dropped. If more than
    ``max_undefined`` (a fraction) of them are NaN, or fewer than two remain, the interval is
    ``(nan, nan)``. Quantiles use numpy's default (linear interpolation).
    """
    s = np.asarray(samples, dtype=np.float64)
    if s.ndim != 1 or s.size == 0:
        raise ValueError(
            f"The 'samples' parameter must be a non-empty 1-D array; got shape {s.shape}."
        )
    if (
        isinstance(level, bool)
        or not isinstance(level, (float, int, np.floating))
        or not (0.0 < float(level) < 1.0)
    ):
        raise ValueError(f"The 'level' parameter must be a float in (0, 1); got {level!r}.")
    if not (0.0 <= float(max_undefined) <= 1.0):
        raise ValueError(
            f"The 'max_undefined' parameter must be a fraction in [0, 1]; got {max_undefined!r}."
        )
    ok = ~np.isnan(s)
    n_bad = int(s.size - ok.sum())
    if n_bad > max_undefined * s.size or ok.sum() < 2:
        logger.debug("bootstrap interval undefined: %d of %d replicates undefined", n_bad, s.size)
        return (float("nan"), float("nan"))
    alpha = (1.0 - float(level)) / 2.0
    lo, hi = np.quantile(s[ok], [alpha, 1.0 - alpha])
    return (float(lo), float(hi))


@dataclass(frozen=True)
class BootstrapInterval:
    """A point estimate with its percentile bootstrap interval."""

    value: float
    lower: float
    upper: float
    level: float
    n_boot: int
    n_undefined: int


def bootstrap_interval(
    N: ArrayLike,
    statistic: Callable[[NDArray[np.int64]], ArrayLike],
    *,
    n_boot: int = 1000,
    level: float = 0.95,
    rng: RngLike = None,
    max_undefined: float = 0.1,
    max_elements: int = _DEFAULT_MAX_ELEMENTS,
) -> BootstrapInterval:
    """Point estimate ``statistic(N)`` and its percentile bootstrap interval for a scalar
    statistic (one value per table). ``statistic`` receives stacks of tables (b, *N.shape)."""
    counts = _counts(N)
    value = np.asarray(statistic(counts[None]), dtype=np.float64)
    if value.shape != (1,):
        raise ValueError(
            f"The 'statistic' must return one scalar per table; got shape {value.shape} for one."
        )
    samples = bootstrap_samples(counts, statistic, n_boot, rng, max_elements=max_elements)
    if samples.ndim != 1:
        raise ValueError(
            f"The 'statistic' must return one scalar per table; got shape {samples.shape}."
        )
    lo, hi = percentile_interval(samples, level, max_undefined=max_undefined)
    return BootstrapInterval(
        value=float(value[0]),
        lower=lo,
        upper=hi,
        level=float(level),
        n_boot=int(samples.shape[0]),
        n_undefined=int(np.isnan(samples).sum()),
    )
