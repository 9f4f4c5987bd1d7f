"""Hand-computed values for every counting metric (fairaudit.metrics.counting).

Every expected value below is worked out by hand in the comments from the definitions in
docs/metrics.md; the code under test never produces an expected value.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from fairaudit.metrics import counting as C

LN = math.log

# ---------------------------------------------------------------------------------------------
# Case A: two groups x two clusters
#   N = [[10, 20],      group 0: |g0| = 30, r0 = .3
#        [30, 40]]      group 1: |g1| = 70, r1 = .7        n = 100, |k0| = 40, |k1| = 60
# ---------------------------------------------------------------------------------------------
A = np.array([[10, 20], [30, 40]])


def test_case_a_balance():
    # k0 shares: .25, .75 -> min(.25/.3, .3/.25) = 5/6 ; .75/.7 = 15/14 -> 14/15  => 5/6
    # k1 shares: 1/3, 2/3 -> (1/3)/.3 = 10/9 -> 9/10 ; (2/3)/.7 = 20/21         => 9/10
    res = C.balance(A)
    np.testing.assert_allclose(res.per_cluster, [5 / 6, 9 / 10])
    assert res.min == pytest.approx(5 / 6)
    assert res.mean == pytest.approx((5 / 6 + 9 / 10) / 2)  # = 13/15
    assert C.balance_min(A) == pytest.approx(5 / 6)
    assert C.balance_mean(A) == pytest.approx(13 / 15)
    np.testing.assert_allclose(C.balance_per_cluster(A), [5 / 6, 9 / 10])


def test_case_a_noise_adjusted_balance():
    # 25 noise rows: non-noise fraction 100/125 = .8
    assert C.noise_adjusted_balance(A, 25) == pytest.approx(13 / 15 * 0.8)
    assert C.noise_adjusted_balance(A, 25, how="min") == pytest.approx(5 / 6 * 0.8)
    assert C.noise_adjusted_balance(A, 0) == pytest.approx(13 / 15)


def test_case_a_ed_wd():
    # P_X = (.3, .7); P_0 = (.25, .75), P_1 = (1/3, 2/3)
    # Ed_0 = sqrt(2 * .05^2) = .05 sqrt2 ; Ed_1 = sqrt(2 * (1/30)^2) = sqrt2 / 30
    ed0, ed1 = 0.05 * math.sqrt(2), math.sqrt(2) / 30
    np.testing.assert_allclose(C.ed_per_cluster(A), [ed0, ed1])
    assert C.ed(A) == pytest.approx((40 * ed0 + 60 * ed1) / 100)
    assert C.ed(A, how="max") == pytest.approx(ed0)
    assert C.ed(A, how="sum") == pytest.approx(ed0 + ed1)
    # Wd 0/1 = TV: .5 * (.05 + .05) = .05 ; .5 * (2/30) = 1/30; weighted (2 + 2)/100 = .04
    np.testing.assert_allclose(C.wd_per_cluster(A), [0.05, 1 / 30])
    assert C.wd(A) == pytest.approx(0.04)
    # two groups: ordinal EMD = |CDF difference at group 0| = the same values
    np.testing.assert_allclose(C.wd_per_cluster(A, "ordinal"), [0.05, 1 / 30])
    # fairkm-compat: sorted (.25,.75) vs (.3,.7): (.05+.05)/2 ; (1/3,2/3) vs (.3,.7): 1/30
    np.testing.assert_allclose(C.wd_per_cluster(A, "fairkm-compat"), [0.05, 1 / 30])


def test_case_a_cce_family():
    # CCE = 40 / 60
    assert C.cce(A) == pytest.approx(2 / 3)
    # gamma: g0 (|G|=30): 1/3, 2/3 -> c*gamma = 2/3, 4/3 -> 2/3, 3/4
    #        g1 (|G|=70): 3/7, 4/7 -> 6/7, 8/7 -> 6/7, 7/8
    np.testing.assert_allclose(C.fairness_cce_per_cluster(A), [2 / 3, 3 / 4])
    assert C.fairness_cce(A) == pytest.approx(2 / 3)
    # H(X) = -(.3 ln .3 + .7 ln .7); H_0 = -(.25 ln .25 + .75 ln .75); H_1 = -(1/3 ln 1/3 + ...)
    hx = -(0.3 * LN(0.3) + 0.7 * LN(0.7))  # 0.6108643
    h0 = -(0.25 * LN(0.25) + 0.75 * LN(0.75))  # 0.5623351
    h1 = -(1 / 3 * LN(1 / 3) + 2 / 3 * LN(2 / 3))  # 0.6365142
    np.testing.assert_allclose(C.nce_per_cluster(A), [h0 / hx, h1 / hx])
    assert C.mnce(A) == pytest.approx(0.5623351 / 0.6108643, rel=1e-6)
    # NE: sizes .4, .6 -> -(.4 ln .4 + .6 ln .6) / ln 2 = 0.6730117 / 0.6931472
    assert C.ne(A) == pytest.approx(0.6730117 / 0.6931472, rel=1e-6)
    # fair (raw counts): k0 10/30, k1 20/40 -> 1/3
    np.testing.assert_allclose(C.fce_fair_per_cluster(A), [1 / 3, 1 / 2])
    assert C.fce_fair(A) == pytest.approx(1 / 3)


def test_case_a_fufs():
    # Balance' = min(.25, 1/3) ; Proportion = .75 + 2/3
    np.testing.assert_allclose(C.balance_prime_per_cluster(A), [0.25, 1 / 3])
    assert C.balance_prime(A) == pytest.approx(0.25)
    np.testing.assert_allclose(C.proportion_per_cluster(A), [0.75, 2 / 3])
    assert C.proportion(A) == pytest.approx(0.75 + 2 / 3)


# ---------------------------------------------------------------------------------------------
# Case B: three groups x three clusters
#   N = [[10,  4, 6],    |g0| = 20, r = .2
#        [10, 20, 10],   |g1| = 40, r = .4
#        [20, 16, 4]]    |g2| = 40, r = .4       n = 100, |k| = 40, 40, 20
#   shares: k0 (.25, .25, .5)   k1 (.1, .5, .4)   k2 (.3, .5, .2)
# ---------------------------------------------------------------------------------------------
B3 = np.array([[10, 4, 6], [10, 20, 10], [20, 16, 4]])


def test_case_b_balance():
    # k0: .25/.2 = 1.25 -> .8 ; .25/.4 = .625 ; .5/.4 = 1.25 -> .8      => .625
    # k1: .1/.2 = .5 ; .5/.4 -> .8 ; .4/.4 = 1                           => .5
    # k2: .3/.2 = 1.5 -> 2/3 ; .5/.4 -> .8 ; .2/.4 = .5                  => .5
    res = C.balance(B3)
    np.testing.assert_allclose(res.per_cluster, [0.625, 0.5, 0.5])
    assert res.min == pytest.approx(0.5)
    assert res.mean == pytest.approx(1.625 / 3)


def test_case_b_ed_wd():
    # P_X = (.2, .4, .4); differences: k0 (.05, -.15, .1), k1 (-.1, .1, 0), k2 (.1, .1, -.2)
    ed = [math.sqrt(0.035), math.sqrt(0.02), math.sqrt(0.06)]
    np.testing.assert_allclose(C.ed_per_cluster(B3), ed)
    assert C.ed(B3) == pytest.approx((40 * ed[0] + 40 * ed[1] + 20 * ed[2]) / 100)
    # TV: .5 * .3 = .15 ; .5 * .2 = .1 ; .5 * .4 = .2 ; weighted (6 + 4 + 4)/100
    np.testing.assert_allclose(C.wd_per_cluster(B3), [0.15, 0.1, 0.2])
    assert C.wd(B3) == pytest.approx(0.14)
    assert C.wd(B3, how="max") == pytest.approx(0.2)
    assert C.wd(B3, how="sum") == pytest.approx(0.45)
    # ordinal (row order 0 < 1 < 2): sum of |CDF differences| at rows 0 and 1
    # k0: |.05| + |.05 - .15| = .15 ; k1: |-.1| + |0| = .1 ; k2: |.1| + |.2| = .3
    np.testing.assert_allclose(C.wd_per_cluster(B3, "ordinal"), [0.15, 0.1, 0.3])
    assert C.wd(B3, "ordinal") == pytest.approx((6 + 4 + 6) / 100)
    # declared positions 0, 1, 3 (an unobserved level between rows 1 and 2): the gap after
    # row 1 counts twice. k0: .05*1 + .1*2 = .25 ; k1: .1*1 + 0*2 = .1 ; k2: .1*1 + .2*2 = .5
    np.testing.assert_allclose(
        C.wd_per_cluster(B3, "ordinal", positions=[0, 1, 3]), [0.25, 0.1, 0.5]
    )
    assert C.wd(B3, "ordinal", positions=[0, 1, 3]) == pytest.approx((10 + 4 + 10) / 100)
    # fairkm-compat: sorted P_X (.2, .4, .4)
    # k0 (.25, .25, .5): (.05 + .15 + .1)/3 ; k1 (.1, .4, .5): (.1 + 0 + .1)/3 ; k2 (.2,.3,.5): .2/3
    np.testing.assert_allclose(C.wd_per_cluster(B3, "fairkm-compat"), [0.1, 0.2 / 3, 0.2 / 3])


def test_case_b_cce_family():
    assert C.cce(B3) == pytest.approx(20 / 40)
    # c = 3. gamma rows: g0 (.5, .2, .3) -> c*g (1.5, .6, .9) -> (2/3, .6, .9)
    #                    g1 (.25, .5, .25) -> (.75, 1.5, .75) -> (.75, 2/3, .75)
    #                    g2 (.5, .4, .1) -> (1.5, 1.2, .3) -> (2/3, 5/6, .3)
    np.testing.assert_allclose(C.fairness_cce_per_cluster(B3), [2 / 3, 0.6, 0.3])
    assert C.fairness_cce(B3) == pytest.approx(0.3)
    # H(X) = .2*1.6094379 + .8*.9162907 = 1.0549202
    # H_0 = 1.0397208, H_1 = .2302585 + .3465736 + .3665163 = .9433484, H_2 = 1.0296530
    np.testing.assert_allclose(
        C.nce_per_cluster(B3), np.array([1.0397208, 0.9433484, 1.0296530]) / 1.0549202, rtol=1e-6
    )
    assert C.mnce(B3) == pytest.approx(0.9433484 / 1.0549202, rel=1e-6)
    # NE: sizes (.4, .4, .2): 1.0549202 / ln 3
    assert C.ne(B3) == pytest.approx(1.0549202 / 1.0986123, rel=1e-6)
    # fair: k0 10/20, k1 4/20, k2 4/10 -> .2
    np.testing.assert_allclose(C.fce_fair_per_cluster(B3), [0.5, 0.2, 0.4])
    assert C.fce_fair(B3) == pytest.approx(0.2)


def test_case_b_fufs():
    # Balance': min shares .25, .1, .2 -> .1 ; Proportion: .5 + .5 + .5
    assert C.balance_prime(B3) == pytest.approx(0.1)
    np.testing.assert_allclose(C.balance_prime_per_cluster(B3), [0.25, 0.1, 0.2])
    assert C.proportion(B3) == pytest.approx(1.5)


# ---------------------------------------------------------------------------------------------
# Case C: intersectional, two attributes sex in {F, M} x race in {A, B}, two clusters
#   joint rows  F|A [ 5,  5]   F|B [15,  5]   M|A [10, 20]   M|B [10, 30]
#   n = 100, |k| = 40, 60; joint r = (.1, .2, .3, .4)
#   sex table  = F [20, 10], M [20, 50]  (r = .3, .7)
#   race table = A [15, 25], B [25, 35]  (r = .4, .6)
# ---------------------------------------------------------------------------------------------
JOINT = np.array([[5, 5], [15, 5], [10, 20], [10, 30]])
SEX_CODES = [0, 0, 1, 1]
RACE_CODES = [0, 1, 0, 1]


def test_marginalize_two_attributes():
    np.testing.assert_array_equal(C.marginalize(JOINT, SEX_CODES), [[20, 10], [20, 50]])
    np.testing.assert_array_equal(C.marginalize(JOINT, RACE_CODES), [[15, 25], [25, 35]])
    stack = np.stack([JOINT, 2 * JOINT])
    np.testing.assert_array_equal(C.marginalize(stack, SEX_CODES)[1], [[40, 20], [40, 100]])


def test_contingency_table_intersectional():
    sex = ["F"] * 30 + ["M"] * 70
    race = ["A"] * 10 + ["B"] * 20 + ["A"] * 30 + ["B"] * 40
    labels = [0] * 5 + [1] * 5 + [0] * 15 + [1] * 5 + [0] * 10 + [1] * 20 + [0] * 10 + [1] * 30
    ct = C.contingency_table(np.column_stack([sex, race]), labels)
    assert ct.groups == (("F", "A"), ("F", "B"), ("M", "A"), ("M", "B"))
    assert ct.clusters == (0, 1)
    np.testing.assert_array_equal(ct.counts, JOINT)
    assert ct.n_noise == 0


def test_case_c_intersectional_balance():
    # joint k0 shares (.125, .375, .25, .25): .125/.1 -> .8 ; .375/.2 = 1.875 -> 8/15 ;
    #                                         .25/.3 = 5/6 ; .25/.4 = .625          => 8/15
    # joint k1 shares (1/12, 1/12, 1/3, 1/2): (1/12)/.1 = 5/6 ; (1/12)/.2 = 5/12 ;
    #                                         (1/3)/.3 -> .9 ; .5/.4 -> .8          => 5/12
    res = C.balance(JOINT)
    np.testing.assert_allclose(res.per_cluster, [8 / 15, 5 / 12])
    assert res.min == pytest.approx(5 / 12)
    assert res.mean == pytest.approx(57 / 120)
    # sex: k0 (.5, .5): .5/.3 -> .6, .5/.7 = 5/7 => .6 ; k1 (1/6, 5/6): 5/9, 21/25 => 5/9
    sex = C.balance(C.marginalize(JOINT, SEX_CODES))
    np.testing.assert_allclose(sex.per_cluster, [0.6, 5 / 9])
    assert sex.mean == pytest.approx(52 / 90)
    # race: k0 (.375, .625): .9375, .6/.625 = .96 => .9375 ; k1 (5/12, 7/12): .96, 35/36 => .96
    race = C.balance(C.marginalize(JOINT, RACE_CODES))
    np.testing.assert_allclose(race.per_cluster, [0.9375, 0.96])
    assert race.min == pytest.approx(0.9375)
    # each attribute alone is better balanced than the intersection here
    assert res.min < min(sex.min, race.min)


def test_absent_group_gives_zero_not_nan():
    # group 1 absent from cluster 1: balance(k1) = 0, fairness_CCE(k1) = 0, fair = 0,
    # Balance'(k1) = 0; the cluster's entropy is 0 -> MNCE 0.
    N = np.array([[5, 5], [10, 0]])
    assert C.balance_per_cluster(N)[1] == 0.0
    assert C.fairness_cce_per_cluster(N)[1] == 0.0
    assert C.fce_fair(N) == 0.0
    assert C.balance_prime(N) == 0.0
    assert C.mnce(N) == 0.0
    # rows 10 and 10 -> P_X = (.5, .5); cluster 1 = (1, 0) -> TV = .5
    assert C.wd_per_cluster(N)[1] == pytest.approx(0.5)


def test_undefined_values_are_nan():
    one_group = np.array([[3, 7]])
    assert math.isnan(C.mnce(one_group))  # H(group) = 0
    assert np.all(np.isnan(C.nce_per_cluster(one_group)))
    one_cluster = np.array([[3], [7]])
    assert math.isnan(C.ne(one_cluster))  # log 1 = 0
    # a single cluster mirrors the population by definition
    assert C.balance_min(one_cluster) == 1.0
    assert C.cce(one_cluster) == 1.0
    assert C.fairness_cce(one_cluster) == 1.0


def test_fairkm_compat_ignores_group_identity():
    # P_X = (.3, .7) (rows 9, 21), cluster 0 = (.7, .3): fairkm-compat 0, 0/1 ground .4
    N = np.array([[7, 2], [3, 18]])
    assert C.wd_per_cluster(N, "fairkm-compat")[0] == pytest.approx(0.0, abs=1e-12)
    assert C.wd_per_cluster(N, "zero-one")[0] == pytest.approx(0.4)


def test_aggregate():
    assert C.aggregate([0.1, 0.3], [1, 3]) == pytest.approx(1.0 / 4)
    assert C.aggregate([0.1, 0.3], [1, 3], how="max") == pytest.approx(0.3)
    assert C.aggregate([0.1, 0.3], [1, 3], how="sum") == pytest.approx(0.4)
    # empty clusters (size 0) are skipped even when NaN; NaN in a real cluster propagates
    assert C.aggregate([0.1, np.nan], [2, 0], how="max") == pytest.approx(0.1)
    assert math.isnan(C.aggregate([0.1, np.nan], [2, 1]))
    out = C.aggregate([[0.1, 0.3], [0.2, 0.2]], [[1, 1], [5, 0]])
    np.testing.assert_allclose(out, [0.2, 0.2])


def test_noise_adjusted_batch():
    stack = np.stack([A, A])
    out = C.noise_adjusted_balance(stack, np.array([0, 100]))
    np.testing.assert_allclose(out, [13 / 15, 13 / 30])


# ---------------------------------------------------------------------------------------------
# External reference: the FairDen authors' code (mean balance). Tables counted from
# /work/shared/reference/fairden/*.csv (sensitive x reference_fairden_label, and x label);
# expected values are the "balance" / "balance_ground_truth" fields of the matching JSON files.
# ---------------------------------------------------------------------------------------------
FAIRDEN_REFERENCE = [
    ("n100 fairden", [[21, 29], [26, 24]], 0.8996386993175431),
    ("n200 fairden", [[50, 50], [54, 46]], 0.9599358974358975),
    ("n500 fairden", [[240, 10], [238, 12]], 0.9524534043362496),
    ("n1000 fairden", [[484, 16], [473, 27]], 0.8663458968190323),
    ("n2000 fairden", [[957, 43], [957, 43]], 1.0),
    ("moons fairden", [[500, 245], [500, 255]], 0.9899552572706936),
    ("moons truth", [[245, 500, 0], [255, 0, 500]], 0.3288590604026846),
    ("n100 truth", [[19, 0, 6, 2, 3, 4, 10, 6], [23, 1, 5, 3, 2, 3, 8, 5]], 0.7586219336219336),
    (
        "n1000 truth",
        [[205, 8, 72, 2, 29, 16, 33, 83, 52], [219, 6, 35, 2, 25, 27, 36, 94, 56]],
        0.8895310420633942,
    ),
]


@pytest.mark.parametrize(("name", "table", "expected"), FAIRDEN_REFERENCE)
def test_balance_matches_fairden_reference_code(name, table, expected):
    assert C.balance_mean(np.array(table)) == pytest.approx(expected, rel=1e-12)


# ---------------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("bad", "match"),
    [
        ([1, 2, 3], "shape"),
        ([[1, -1], [2, 3]], "non-negative"),
        ([[1, np.nan], [2, 3]], "finite"),
        ([[0, 0], [2, 3]], r"rows \[0\]"),
        ([[0, 1], [0, 3]], r"columns \[0\]"),
        (np.zeros((0, 2)), "at least one group"),
    ],
)
def test_invalid_tables_raise(bad, match):
    with pytest.raises(ValueError, match=match):
        C.balance(bad)


def test_invalid_options_raise():
    with pytest.raises(ValueError, match="'ground'"):
        C.wd_per_cluster(A, ground="euclid")
    with pytest.raises(ValueError, match="'how'"):
        C.ed(A, how="mean")
    with pytest.raises(ValueError, match="'how'"):
        C.aggregate([1.0], [1.0], how="median")
    with pytest.raises(ValueError, match="'n_noise'"):
        C.noise_adjusted_balance(A, -1)
    with pytest.raises(ValueError, match="'positions'"):
        C.wd_per_cluster(B3, "ordinal", positions=[0, 2, 1])
    with pytest.raises(ValueError, match="'positions'"):
        C.wd(B3, "zero-one", positions=[0, 1, 2])
    with pytest.raises(ValueError, match="'row_codes'"):
        C.marginalize(JOINT, [0, 1])


def test_metric_info_covers_scalar_metrics():
    for name in ("cce", "fairness_cce", "mnce", "ne", "fce_fair", "balance_prime", "proportion"):
        assert name in C.METRICS and callable(getattr(C, name))
    assert C.METRICS["proportion"].higher_is_better is False
    assert C.METRICS["balance_min"].higher_is_better is True


def test_lazy_exports():
    import fairaudit.metrics as M

    assert M.balance is C.balance
    assert M.resample_counts.__module__ == "fairaudit.metrics.bootstrap"
