"""Score-intersection intervals: oracles for the per-cell score intervals, properties of the
combined intervals, and the coverage simulation of issue 11 (a 1 % group, n = 3,000)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from fairaudit.metrics import counting as C
from fairaudit.metrics import distance_intervals as D
from fairaudit.metrics import intervals as I

Z975 = 1.959963984540054


# ------------------------------------------------------------------------------ Wilson
def test_wilson_hand_computed():
    # x = 5 of n = 10 at 95 %: centre 0.5, half-width 1.96 sqrt(.025 + .0960) / 1.384 = 0.2634
    lo, hi = I.wilson_interval(5, 10, 0.025)
    assert lo == pytest.approx(0.236593, abs=1e-5)
    assert hi == pytest.approx(0.763407, abs=1e-5)
    lo, hi = I.wilson_interval(0, 20, 0.025)
    assert lo == 0.0
    assert hi == pytest.approx(Z975**2 / (20 + Z975**2), rel=1e-9)  # x = 0: z^2 / (n + z^2)
    lo, hi = I.wilson_interval(20, 20, 0.025)
    assert hi == 1.0
    assert lo == pytest.approx(20 / (20 + Z975**2), rel=1e-9)


# ------------------------------------------------------------------------------ Koopman
def _koopman_brute(x1, n1, x2, n2, alpha):
    """Invert the Pearson score test on a fine grid, with the restricted MLE found numerically
    (no closed form): the oracle for ratio_score_interval."""
    from scipy.optimize import minimize_scalar
    from scipy.special import ndtri

    crit = ndtri(1 - alpha) ** 2

    def stat(theta):
        def nll(p2):
            p1 = theta * p2
            return -(x1 * np.log(p1) + (n1 - x1) * np.log1p(-p1)
                     + x2 * np.log(p2) + (n2 - x2) * np.log1p(-p2))

        top = min(1.0, 1.0 / theta) * (1 - 1e-12)
        p2 = minimize_scalar(nll, bounds=(1e-12, top), method="bounded",
                             options={"xatol": 1e-13}).x
        p1 = theta * p2
        return (x1 - n1 * p1) ** 2 / (n1 * p1 * (1 - p1)) + (x2 - n2 * p2) ** 2 / (
            n2 * p2 * (1 - p2))

    est = (x1 / n1) / (x2 / n2)
    grid = np.exp(np.linspace(np.log(est) - 4, np.log(est) + 4, 4001))
    inside = np.array([stat(t) <= crit for t in grid])
    return grid[inside].min(), grid[inside].max()


@pytest.mark.parametrize("x1,n1,x2,n2", [(6, 30, 990, 2970), (36, 40, 16, 80), (3, 18, 50, 700),
                                         (120, 400, 300, 600)])
def test_koopman_matches_brute_force_inversion(x1, n1, x2, n2):
    lo, hi = I.ratio_score_interval(x1, n1, x2, n2, 0.025)
    blo, bhi = _koopman_brute(x1, n1, x2, n2, 0.025)
    step = 8 / 4000  # grid spacing in log units
    assert abs(np.log(lo) - np.log(blo)) <= step
    assert abs(np.log(hi) - np.log(bhi)) <= step


def test_koopman_zero_cells():
    lo, hi = I.ratio_score_interval(0, 20, 30, 100, 0.025)
    assert lo == 0.0 and 0 < hi < np.inf
    lo, hi = I.ratio_score_interval(5, 20, 0, 100, 0.025)
    assert 0 < lo < np.inf and hi == np.inf


# ------------------------------------------------------------------------------ properties
tables = arrays(np.int64, st.tuples(st.integers(2, 5), st.integers(2, 5)),
                elements=st.integers(0, 60)).filter(
    lambda t: (t.sum(axis=1) > 0).all() and (t.sum(axis=0) > 0).all())

PAIRS = [
    (C.balance_min, I.balance_interval),
    (C.balance_mean, I.balance_mean_interval),
    (C.fairness_cce, I.fairness_cce_interval),
    (C.fce_fair, I.fce_fair_interval),
    (C.balance_prime, I.balance_prime_interval),
    (C.cce, I.cce_interval),
]


@settings(max_examples=60, deadline=None)
@given(tables)
def test_every_interval_contains_its_estimate_and_widens_with_level(T):
    for metric, interval in PAIRS:
        est = metric(T)
        a = interval(T, 0.90)
        b = interval(T, 0.99)
        assert a.lower <= est + 1e-12 and est <= a.upper + 1e-12, (metric.__name__, a, est)
        assert b.lower <= a.lower + 1e-12 and a.upper <= b.upper + 1e-12, metric.__name__
        assert 0.0 <= b.lower


def test_no_artefactual_zero_when_every_cell_is_observed():
    # 18 people of a small group spread 6/6/6 over three segments: a row bootstrap loses the
    # group in some segment often enough to put its 2.5 % quantile at 0; score bounds do not
    T = np.array([[1200, 1300, 1100], [600, 500, 700], [6, 6, 6]])
    iv = I.balance_interval(T)
    assert iv.lower > 0.2
    assert iv.lower <= C.balance_min(T) <= iv.upper
    # a group really absent from a segment gives 0 in the estimate and the lower end
    T0 = np.array([[1200, 1300, 1100], [600, 500, 700], [9, 9, 0]])
    assert I.balance_interval(T0).lower == 0.0


def test_lower_end_names_the_cell_that_limits_it():
    T = np.array([[1200, 1300, 1100], [600, 500, 700], [2, 10, 6]])
    iv = I.balance_interval(T)
    assert iv.lower_cell == (2, 0)  # the small group in segment 0


def test_one_group_is_exactly_balanced():
    iv = I.balance_interval(np.array([[5, 7, 9]]))
    assert iv.lower == iv.upper == 1.0


# ------------------------------------------------------------------------------ simulation
SHARES = np.array([0.49, 0.30, 0.20, 0.01])
COND = np.array([[0.34, 0.33, 0.33],
                 [0.30, 0.36, 0.34],
                 [0.36, 0.30, 0.34],
                 [0.55, 0.20, 0.25]])  # the 1 % group: about 6 of its 30 people in segment 1


def coverage_simulation(draws: int, seed: int, n: int = 3000, level: float = 0.95,
                        calibrated: bool = False, n_boot: int = 200, cond=COND,
                        metrics=(C.balance_min, C.balance_mean, C.fairness_cce)):
    """Coverage and median width of the 95 % intervals of the headline min-of-ratios metrics
    over ``draws`` samples of n rows from a known population (4 groups, one of 1 %,
    3 segments). ``calibrated``: the score-max-bootstrap method on ``n_boot`` multinomial
    replicates of each sample (what the host does), else the conservative score-intersection.
    Returns {metric: (coverage, median width, median lower end)}."""
    from fairaudit.metrics.bootstrap import resample_counts

    P = SHARES[:, None] * cond
    rng = np.random.default_rng(seed)
    out = {}
    for metric, interval in PAIRS:
        if metric not in metrics:
            continue
        truth = float(metric(P))
        hits, widths, lowers = [], [], []
        seeds = rng.integers(2**32, size=2)
        r = np.random.default_rng(seeds[0])
        r_boot = np.random.default_rng(seeds[1])  # the same samples with and without
        for _ in range(draws):
            T = r.multinomial(n, P.ravel()).reshape(P.shape)
            T = T[T.sum(axis=1) > 0]
            reps = resample_counts(T, n_boot, r_boot) if calibrated else None
            iv = interval(T, level, reps) if calibrated else interval(T, level)
            hits.append(iv.lower <= truth <= iv.upper)
            widths.append(iv.upper - iv.lower)
            lowers.append(iv.lower)
        out[metric.__name__] = (float(np.mean(hits)), float(np.median(widths)),
                                float(np.median(lowers)))
    return out


@pytest.mark.slow
def test_coverage_simulation_one_percent_group():
    """Issue 11: a known population with a 1 % group, n = 3,000, 400 draws. The figures are
    recorded in docs/metrics.md ("Uncertainty")."""
    res = coverage_simulation(draws=400, seed=2026)
    for name, (cov, width, lower) in res.items():
        # at least the stated level (the method is conservative by construction), and
        # informative: the lower end is not pushed to 0 by the small group
        assert cov >= 0.95, (name, cov)
        assert lower > 0.1, (name, lower)
        assert width < 0.8, (name, width)


@pytest.mark.slow
@pytest.mark.parametrize("cond", ["near-tie", "one-cell"])
def test_calibrated_coverage_simulation_one_percent_group(cond):
    """Issue 23: the calibrated intervals (score-max-bootstrap) cover 93-97 % on the 1 %-group
    population, 400 draws x 200 replicates, and are narrower than the conservative ones on the
    same draws. 'near-tie': the 1 % group's three cells all lie near the minimum (the population
    above); 'one-cell': one cell clearly sets it (the lower end is then exact, the upper end
    carries the calibration). Figures in docs/metrics.md."""
    c = COND.copy()
    if cond == "one-cell":
        c[3] = [0.62, 0.10, 0.28]
    metrics = (C.balance_min, C.fairness_cce, C.balance_prime)
    new = coverage_simulation(draws=400, seed=2026, calibrated=True, cond=c, metrics=metrics)
    old = coverage_simulation(draws=400, seed=2026, cond=c, metrics=metrics)
    for name, (cov, width, lower) in new.items():
        if cond == "one-cell" and name != "balance_min":
            # known shortfall (docs/metrics.md): the pointwise Wilson lower end of a cell of
            # about 3 people covers less than its one-sided 97.5 %
            assert cov >= 0.88, (name, cov)
        else:
            # the aim is 93-97 %; 400 draws carry +-1.1 % simulation error (one standard error
            # 0.9 %), and near ties put the true coverage at the top of the aim (about 97 %
            # over 1,100 draws of three seeds: docs/metrics.md)
            assert 0.93 <= cov <= 0.985, (name, cov)
        assert width < old[name][1], (name, width, old[name])
        assert lower >= old[name][2] - 1e-12, (name, lower, old[name])


def test_calibrated_interval_holds_its_estimate_and_sits_inside_the_conservative_one():
    from fairaudit.metrics.bootstrap import resample_counts

    rng = np.random.default_rng(5)
    for _ in range(20):
        T = rng.multinomial(400, (SHARES[:, None] * COND).ravel()).reshape(4, 3)
        T = T[T.sum(axis=1) > 0]
        R = resample_counts(T, 100, rng)
        for metric, interval in PAIRS:
            if metric not in (C.balance_min, C.fairness_cce, C.balance_prime):
                continue
            new, old = interval(T, 0.95, R), interval(T, 0.95)
            assert new.method == I.CALIBRATED_METHOD and old.method == I.METHOD
            assert new.lower <= float(metric(T)) <= new.upper
            assert new.lower == old.lower
            # at least the pointwise bound of a cell the bootstrap cannot move; never above
            # the Bonferroni end by more than the bootstrap's own noise
            assert new.upper <= old.upper + 0.05, (metric.__name__, new, old)


def test_max_deviation_critical_value_by_hand():
    z = np.array([[-1.0, 0.5, -3.0], [0.2, -2.0, 9.0], [np.nan, -0.5, 1.0], [0.0, 0.0, -4.0]])
    # per replicate, the largest deviation below the estimate over the contact cells {0, 1}:
    # 1.0, 2.0, 0.5, 0.0 -> the 0.75 quantile of (0, .5, 1, 2) = 1.25
    assert I.max_deviation_critical_value(z, [True, True, False], 0.25) == pytest.approx(1.25)
    assert I.max_deviation_critical_value(z, [False, False, False], 0.25) == 0.0


def test_calibrated_zero_cell_keeps_its_pointwise_upper_bound():
    """A cell observed at 0 cannot move in the bootstrap: its upper bound stays pointwise."""
    from fairaudit.metrics.bootstrap import resample_counts

    T = np.array([[50, 40, 0], [30, 30, 20]])
    new = I.balance_interval(T, 0.95, resample_counts(T, 200, 1))
    assert new.upper == pytest.approx(I.balance_interval(T, 0.95).upper)
    assert new.upper > 0.1


# ------------------------------------------------------------------------------ distances
DIST = {
    "wd": lambda T, g: C.wd(T, ground=g), "wd_max": lambda T, g: C.wd(T, ground=g, how="max"),
    "wd_sum": lambda T, g: C.wd(T, ground=g, how="sum"), "ed": lambda T, g: C.ed(T),
    "ed_max": lambda T, g: C.ed(T, how="max"), "ed_sum": lambda T, g: C.ed(T, how="sum"),
}


@settings(max_examples=40, deadline=None)
@given(tables, tables, st.sampled_from(["zero-one", "ordinal"]))
def test_triangle_bound_holds_for_any_two_tables(T, U, ground):
    """The oracle of the distance intervals: |d(T) - d(U)| <= the error bound that the
    interval's quantile is taken of (here with U as the single 'replicate')."""
    if T.shape != U.shape:
        return
    # c = the bound for the single replicate U: the interval [d - c, d + c] must contain d(U)
    ivs = D.distance_intervals(T, np.stack([U, U]), level=0.5, ground=ground)
    for name, f in DIST.items():
        d_t, d_u = f(T, ground), f(U, ground)
        iv = ivs[name]
        assert iv.lower - 1e-12 <= d_t <= iv.upper + 1e-12
        assert iv.upper + 1e-9 >= d_u, (name, iv, d_t, d_u)
        assert iv.lower - 1e-9 <= d_u or iv.lower == 0.0, (name, iv, d_t, d_u)


def test_distance_interval_is_a_point_without_sampling_error():
    T = np.array([[30, 10], [10, 30]])
    ivs = D.distance_intervals(T, np.repeat(T[None], 5, axis=0))
    assert ivs["wd"].lower == ivs["wd"].upper == pytest.approx(C.wd(T))


def distance_coverage(draws: int, seed: int, fair: bool, n: int = 3000):
    cond = np.full((4, 3), 1 / 3) if fair else COND
    P = SHARES[:, None] * cond
    rng = np.random.default_rng(seed)
    truth = {k: float(f(P, "zero-one")) for k, f in DIST.items()}
    hits = {k: [] for k in DIST}
    widths = {k: [] for k in DIST}
    from fairaudit.metrics.bootstrap import resample_counts

    for _ in range(draws):
        T = rng.multinomial(n, P.ravel()).reshape(P.shape)
        ivs = D.distance_intervals(T, resample_counts(T, 200, rng))
        for k in DIST:
            hits[k].append(ivs[k].lower <= truth[k] <= ivs[k].upper)
            widths[k].append(ivs[k].upper - ivs[k].lower)
    return {k: (float(np.mean(hits[k])), float(np.median(widths[k]))) for k in DIST}


@pytest.mark.slow
@pytest.mark.parametrize("fair", [False, True])
def test_distance_coverage_simulation(fair):
    """The percentile bootstrap never covered a perfectly fair population (Wd = 0: noise only
    adds distance); the triangle bounds do. Figures in docs/metrics.md."""
    res = distance_coverage(draws=300, seed=11 if fair else 12, fair=fair)
    for name, (cov, _) in res.items():
        assert cov >= (0.9 if fair else 0.95), (name, cov)


def test_calibrated_max_distance_interval_holds_its_estimate_and_is_no_wider():
    from fairaudit.metrics.bootstrap import resample_counts

    rng = np.random.default_rng(8)
    P = SHARES[:, None] * COND * np.array([0.7, 0.2, 0.1])
    P /= P.sum()
    for _ in range(10):
        T = rng.multinomial(3000, P.ravel()).reshape(P.shape)
        R = resample_counts(T, 200, rng)
        old = D.distance_intervals(T, R)
        new = D.distance_intervals(T, R, calibrated=True)
        for m in ("wd_max", "ed_max"):
            assert new[m].method == D.DISTANCE_MAX_METHOD
            assert new[m].lower <= DIST[m](T, "zero-one") <= new[m].upper
            assert new[m].upper <= old[m].upper + 1e-12  # max of quantiles <= quantile of max
        for m in ("wd", "ed", "wd_sum", "ed_sum"):
            assert new[m] == old[m]


@pytest.mark.slow
@pytest.mark.parametrize("fair", [False, True])
def test_calibrated_max_distance_coverage(fair):
    """wd_max / ed_max with per-cluster bounds: at least the stated level (conservative where
    the distance is far from 0, as the shared-error interval); figures in docs/metrics.md."""
    from fairaudit.metrics.bootstrap import resample_counts

    cond = np.full((4, 3), 1 / 3) if fair else COND
    P = SHARES[:, None] * cond
    rng = np.random.default_rng(21 if fair else 22)
    truth = {m: DIST[m](P, "zero-one") for m in ("wd_max", "ed_max")}
    hits = {m: [] for m in truth}
    for _ in range(300):
        T = rng.multinomial(3000, P.ravel()).reshape(P.shape)
        ivs = D.distance_intervals(T, resample_counts(T, 200, rng), calibrated=True)
        for m in truth:
            hits[m].append(ivs[m].lower <= truth[m] <= ivs[m].upper)
    for m in truth:
        assert np.mean(hits[m]) >= (0.92 if fair else 0.95), (m, np.mean(hits[m]))
