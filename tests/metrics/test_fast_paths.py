"""Oracles for the fast paths of the interval code (issue 12, item 6: 10,000 clusters).

* Koopman bounds: one bisection per distinct (x1, n1, x2, n2) tuple must give, bit for bit,
  what one bisection per cell gives, and a scalar pure-Python bisection agrees to 1e-12.
* Distance intervals: computed block by block of replicates, they must equal, bit for bit, the
  whole-stack computation (the reference below is the code before the change, verbatim).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairaudit.metrics import distance_intervals as D
from fairaudit.metrics import intervals as I
from fairaudit.metrics import score as S
from fairaudit.metrics.bootstrap import resample_counts


# ------------------------------------------------------------------------------ Koopman
def _koopman_scalar(x1: float, n1: float, x2: float, n2: float, alpha: float):
    """One cell, plain floats and math.exp: the same score statistic and brackets, bisected."""
    from scipy.special import ndtri

    crit = float(ndtri(1.0 - alpha)) ** 2

    def stat(theta: float) -> float:
        N = n1 + n2
        A = theta * N
        B = -(theta * n1 + x1 + n2 + theta * x2)
        C = x1 + x2
        disc = math.sqrt(max(B * B - 4.0 * A * C, 0.0))
        p2 = 2.0 * C / (-B + disc)
        p1 = min(max(theta * p2, 1e-300), 1.0 - 1e-15)
        p2 = min(max(p2, 1e-300), 1.0 - 1e-15)
        return (x1 - n1 * p1) ** 2 / (n1 * p1 * (1 - p1)) + (x2 - n2 * p2) ** 2 / (
            n2 * p2 * (1 - p2))

    def bisect(a: float, b: float, inside_at_low: bool) -> float:
        for _ in range(48):
            mid = 0.5 * (a + b)
            inside = stat(math.exp(mid)) <= crit
            if inside_at_low:
                a, b = (mid, b) if inside else (a, mid)
            else:
                a, b = (a, mid) if inside else (mid, b)
        return math.exp(b) if inside_at_low else math.exp(a)

    lo, hi = 0.0, math.inf
    if x1 > 0 and x2 > 0:
        e = math.log((x1 / n1) / (x2 / n2))
        lo = bisect(e - 40.0, e, False)
        hi = bisect(e, e + 40.0, True)
    elif x2 > 0:
        s0 = math.log((0.5 / n1) / (x2 / n2)) - 30.0
        hi = bisect(s0, s0 + 80.0, True)
    elif x1 > 0:
        s1 = math.log((x1 / n1) / (0.5 / n2)) + 30.0
        lo = bisect(s1 - 80.0, s1, False)
    return lo, hi


def _random_cells(rng: np.random.Generator, m: int) -> tuple[np.ndarray, ...]:
    n1 = rng.integers(1, 60, m).astype(float)
    n2 = rng.integers(1, 3000, m).astype(float)
    x1 = np.floor(rng.random(m) * (n1 + 1))
    x2 = np.floor(rng.random(m) * np.minimum(n2 + 1, 8))  # small counts: many repeats
    return x1, n1, x2, n2


@pytest.mark.parametrize("alpha", [0.025, 0.025 / 500, 1e-7])
def test_koopman_vectorised_matches_scalar_bisection(alpha):
    rng = np.random.default_rng(7)
    x1, n1, x2, n2 = _random_cells(rng, 300)
    lo, hi = I.ratio_score_interval(x1, n1, x2, n2, alpha)
    for i in range(x1.size):
        slo, shi = _koopman_scalar(x1[i], n1[i], x2[i], n2[i], alpha)
        est = (x1[i] / n1[i]) / (x2[i] / n2[i]) if x2[i] > 0 else math.inf
        slo, shi = min(slo, est), max(shi, est)
        assert lo[i] == pytest.approx(slo, rel=1e-12, abs=0.0), i
        assert hi[i] == pytest.approx(shi, rel=1e-12, abs=0.0) or hi[i] == shi == math.inf, i


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 4000),
       st.sampled_from([0.025, 0.001, 1e-6]))
def test_koopman_once_per_distinct_cell_is_bit_identical(seed, m, alpha):
    rng = np.random.default_rng(seed)
    x1, n1, x2, n2 = _random_cells(rng, m)
    lo, hi = I.ratio_score_interval(x1, n1, x2, n2, alpha)  # distinct tuples above 64 cells
    ref_lo, ref_hi = S._ratio_score(x1.copy(), n1.copy(), x2.copy(), n2.copy(), alpha)
    assert np.array_equal(lo, ref_lo) and np.array_equal(hi, ref_hi)


def test_koopman_keeps_the_shape_of_its_input():
    x1 = np.arange(200, dtype=float).reshape(4, 50) % 3
    lo, hi = I.ratio_score_interval(x1, 40.0, 5.0, 100.0, 0.025)
    assert lo.shape == hi.shape == (4, 50)
    lo, hi = I.ratio_score_interval(2, 40, 5, 100, 0.025)
    assert np.ndim(lo) == np.ndim(hi) == 0


# ------------------------------------------------------------------------------ distances
def _distance_reference(N, replicates, level=0.95, *, ground="zero-one", max_undefined=0.1):
    """distance_intervals before the blocks: the whole (B, groups, clusters) stack at once."""
    T = np.asarray(N, dtype=np.float64)
    R = np.asarray(replicates, dtype=np.float64)
    q = float(level)
    pk = T.sum(axis=0) / T.sum()
    pkr = R.sum(axis=1) / R.sum(axis=(1, 2))[:, None]
    if len(R) < 2:
        return {}
    sizes = T.sum(axis=0)
    sparse = T.shape[0] >= 2 and sizes[sizes < 10].sum() > 0.05 * sizes.sum()
    lost = int((R.sum(axis=1) == 0).any(axis=1).sum()) if T.shape[0] >= 2 else 0
    out = {}
    for name, kind, g in (("ed", "ed", "zero-one"), ("wd", "wd-" + ground, ground)):
        v = D._deviations(T, g)
        vr = D._deviations(R, g)
        d = D._norm(v, kind)
        e_norm = D._norm(vr - v[None], kind)
        e_weighted = D._norm(np.where(pkr[:, None, :] > 0, pkr[:, None, :] * vr, 0.0)
                             - (pk * v)[None], kind)
        estimates = {name: float((pk * d).sum()), f"{name}_max": float(d.max()),
                     f"{name}_sum": float(d.sum())}
        errors = {name: e_weighted.sum(axis=1), f"{name}_max": e_norm.max(axis=1),
                  f"{name}_sum": e_norm.sum(axis=1)}
        one = np.sqrt(2.0) if kind == "ed" else (1.0 if kind == "wd-zero-one" else len(T) - 1.0)
        for metric, est in estimates.items():
            whole = (0.0, float(one * (T.shape[1] if metric.endswith("_sum") else 1)))
            if sparse or (metric != name and lost > max_undefined * len(R)):
                out[metric] = whole
                continue
            e = errors[metric]
            ok = np.isfinite(e)
            if ok.sum() < 2 or (~ok).sum() > max_undefined * e.size:
                continue
            c = float(np.quantile(e[ok], q))
            out[metric] = (max(0.0, est - c), est + c)
    return out


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 11), st.integers(1, 60),
       st.integers(1, 80), st.integers(1, 400), st.sampled_from(["zero-one", "ordinal"]),
       st.sampled_from(["F", "C", "F-float"]))
def test_distance_intervals_in_blocks_are_bit_identical(seed, g, k, b, block, ground, layout):
    """In the stack's own memory layout: the host passes Fortran-ordered stacks (replicate
    index fastest), and numpy's sums follow the layout at the last bit."""
    rng = np.random.default_rng(seed)
    T = rng.integers(0, 6, (g, k)) * (1 if seed % 2 else 20)  # sparse, or not
    T[:, T.sum(axis=0) == 0] = 1
    T[T.sum(axis=1) == 0, 0] = 1
    R = resample_counts(T, b, rng)  # small clusters vanish in some replicates: NaN errors
    if layout != "C":
        R = np.asfortranarray(R, dtype=np.float64 if layout == "F-float" else np.int64)
    ref = _distance_reference(T, R, 0.9, ground=ground)
    old = D._BLOCK_ELEMENTS
    try:
        D._BLOCK_ELEMENTS = block
        got = D.distance_intervals(T, R, 0.9, ground=ground)
    finally:
        D._BLOCK_ELEMENTS = old
    assert got.keys() == ref.keys()
    for metric, (lo, hi) in ref.items():
        iv = dataclasses.astuple(got[metric])
        assert repr(iv[:2]) == repr((lo, hi)), metric  # bit for bit, signed zeros included


@pytest.mark.parametrize("ground", ["zero-one", "ordinal"])
@pytest.mark.parametrize("singletons", [0, 1, 3, 300])
def test_distance_intervals_skip_when_replicates_lose_clusters_as_before(ground, singletons):
    """Clusters of one row vanish from most replicates: the max and the sum get their whole
    range (too little data), the weighted means their interval (p_k v_k is 0 for a vanished
    cluster), as the whole-stack code finds; without them, the same intervals."""
    rng = np.random.default_rng(singletons)
    T = np.hstack([rng.integers(20, 60, (3, 4)), np.eye(3, dtype=np.int64)[:, [0] * singletons]])
    R = np.asfortranarray(resample_counts(T, 200, rng))
    ref = _distance_reference(T, R, 0.95, ground=ground)
    got = D.distance_intervals(T, R, 0.95, ground=ground)
    assert {m: dataclasses.astuple(iv)[:2] for m, iv in got.items()} == ref
    whole = (0.0, 1.0 if ground == "zero-one" else 2.0)
    assert (ref["wd_max"] == whole) == (singletons > 0)  # lost in replicates: no information
    # the weighted mean is defined whatever clusters vanish; its whole range only where tiny
    # clusters hold over 5 % of the rows (300 singletons beside about 480 rows)
    assert (ref["wd"] == whole) == (singletons == 300)
