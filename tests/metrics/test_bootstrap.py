"""Tests for fairaudit.metrics.bootstrap: reproducibility, resampling law, NaN handling and a
coverage sanity check of the percentile interval."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fairaudit.metrics import bootstrap as B
from fairaudit.metrics import counting as C

JOINT = np.array([[5, 5], [15, 5], [10, 20], [10, 30]])


def test_resample_shape_total_and_dtype():
    reps = B.resample_counts(JOINT, 200, np.random.default_rng(0))
    assert reps.shape == (200, 4, 2)
    assert reps.dtype == np.int64
    assert np.all(reps >= 0)
    assert np.all(reps.sum(axis=(1, 2)) == JOINT.sum())


def test_resample_is_reproducible_with_a_seed():
    a = B.resample_counts(JOINT, 50, np.random.default_rng(42))
    b = B.resample_counts(JOINT, 50, np.random.default_rng(42))
    c = B.resample_counts(JOINT, 50, np.random.default_rng(43))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    np.testing.assert_array_equal(B.resample_counts(JOINT, 50, 42), a)  # int seed accepted


def test_resample_follows_the_multinomial_law():
    # E[N*] = N, Var[N*_c] = n p_c (1 - p_c)
    reps = B.resample_counts(JOINT, 20_000, np.random.default_rng(1)).astype(float)
    n = JOINT.sum()
    p = JOINT / n
    np.testing.assert_allclose(reps.mean(axis=0), JOINT, atol=0.15)
    np.testing.assert_allclose(reps.var(axis=0), n * p * (1 - p), rtol=0.05)


def test_zero_cells_stay_zero():
    N = np.array([[4, 0], [0, 6]])
    reps = B.resample_counts(N, 100, np.random.default_rng(3))
    assert np.all(reps[:, 0, 1] == 0) and np.all(reps[:, 1, 0] == 0)


def test_bootstrap_samples_chunking_does_not_change_replicates():
    full = C.balance_min(B.resample_counts(JOINT, 333, np.random.default_rng(7)))
    chunked = B.bootstrap_samples(
        JOINT, C.balance_min, 333, np.random.default_rng(7), max_elements=8 * 10
    )
    np.testing.assert_array_equal(full, chunked)


def test_joint_resampling_then_marginalising():
    # the host resamples the joint table and marginalises: marginal totals still equal n
    reps = B.resample_counts(JOINT, 100, np.random.default_rng(5))
    sex = C.marginalize(reps, [0, 0, 1, 1])
    assert sex.shape == (100, 2, 2)
    assert np.all(sex.sum(axis=(1, 2)) == JOINT.sum())
    vals = C.balance_mean(sex)
    assert vals.shape == (100,) and np.all((vals >= 0) & (vals <= 1))


def test_percentile_interval_known_values():
    s = np.arange(101, dtype=float)  # quantiles of 0..100 are exact
    assert B.percentile_interval(s, 0.9) == pytest.approx((5.0, 95.0))
    assert B.percentile_interval(s, 0.5) == pytest.approx((25.0, 75.0))


def test_percentile_interval_drops_undefined_replicates():
    s = np.concatenate([np.arange(101, dtype=float), [np.nan] * 5])  # < 10% undefined
    assert B.percentile_interval(s, 0.9) == pytest.approx((5.0, 95.0))
    many = np.concatenate([np.arange(80, dtype=float), [np.nan] * 20])  # 20% undefined
    lo, hi = B.percentile_interval(many, 0.9)
    assert math.isnan(lo) and math.isnan(hi)
    lo, hi = B.percentile_interval(many, 0.9, max_undefined=0.25)
    assert lo == pytest.approx(np.quantile(np.arange(80), 0.05))
    assert all(math.isnan(x) for x in B.percentile_interval([1.0, np.nan, np.nan], 0.9))


def test_undefined_replicates_are_nan_not_zero():
    # group 1 has a single row: some replicates lose it, leaving one group -> MNCE undefined
    N = np.array([[30, 30], [1, 0]])
    reps = B.resample_counts(N, 400, np.random.default_rng(11))
    vals = C.mnce(reps)
    lost = reps[:, 1].sum(axis=1) == 0
    assert lost.any() and (~lost).any()
    assert np.all(np.isnan(vals[lost]))
    assert not np.any(np.isnan(vals[~lost]))
    # balance stays defined (the vanished group is dropped from that replicate)
    assert not np.any(np.isnan(C.balance_min(reps)))


def test_bootstrap_interval_reproducible_and_contains_estimate():
    r1 = B.bootstrap_interval(JOINT * 10, C.balance_mean, n_boot=300, rng=123)
    r2 = B.bootstrap_interval(JOINT * 10, C.balance_mean, n_boot=300, rng=123)
    assert r1 == r2
    assert r1.value == pytest.approx(C.balance_mean(JOINT * 10))
    assert r1.lower <= r1.value <= r1.upper
    assert r1.n_boot == 300 and r1.n_undefined == 0 and r1.level == 0.95


def test_interval_narrows_with_more_data():
    small = B.bootstrap_interval(JOINT, C.ed, n_boot=400, rng=0)
    large = B.bootstrap_interval(JOINT * 100, C.ed, n_boot=400, rng=0)
    assert (large.upper - large.lower) < (small.upper - small.lower) / 5


def test_coverage_sanity():
    # Draw 150 samples of n = 2000 rows from a known population table P, bootstrap each, and
    # count how often the 95% percentile interval contains the population value. Smooth
    # statistics away from their boundaries: Ed (weighted mean) and the mean balance.
    P = np.array([[0.10, 0.15, 0.05], [0.20, 0.10, 0.15], [0.05, 0.10, 0.10]])
    truth = {"ed": C.ed(P), "balance_mean": C.balance_mean(P)}
    funcs = {"ed": C.ed, "balance_mean": C.balance_mean}
    rng = np.random.default_rng(2024)
    hits = dict.fromkeys(funcs, 0)
    reps = 150
    for _ in range(reps):
        N = rng.multinomial(2000, P.ravel()).reshape(P.shape)
        boot = B.resample_counts(N, 400, rng)
        for name, f in funcs.items():
            lo, hi = B.percentile_interval(f(boot), 0.95)
            hits[name] += lo <= truth[name] <= hi
    for name in funcs:
        cover = hits[name] / reps
        # nominal .95; binomial sd over 150 repetitions ~ .018
        assert 0.87 <= cover <= 1.0, (name, cover)


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        ([[1.5, 2], [3, 4]], "integer"),
        ([[-1, 2], [3, 4]], "integer"),
        ([[0, 0], [0, 0]], "positive total"),
    ],
)
def test_resample_rejects_bad_tables(bad, match):
    with pytest.raises(ValueError, match=match):
        B.resample_counts(bad, 10, np.random.default_rng(0))


def test_bad_parameters():
    with pytest.raises(ValueError, match="'n_boot'"):
        B.resample_counts(JOINT, 0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="'rng'"):
        B.resample_counts(JOINT, 5, "seed")
    with pytest.raises(ValueError, match="'level'"):
        B.percentile_interval([1.0, 2.0], 1.5)
    with pytest.raises(ValueError, match="'statistic'"):
        B.bootstrap_samples(JOINT, lambda t: np.zeros(3), 10, 0)
    with pytest.raises(ValueError, match="'statistic'"):
        B.bootstrap_interval(JOINT, C.balance_per_cluster, n_boot=10, rng=0)
