"""Property tests (hypothesis) and brute-force oracles for fairaudit.metrics.counting."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.optimize import linprog
from scipy.stats import wasserstein_distance

from fairaudit.metrics import counting as C

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SCALARS = {
    "balance_min": C.balance_min,
    "balance_mean": C.balance_mean,
    "ed": C.ed,
    "ed_max": lambda N: C.ed(N, how="max"),
    "ed_sum": lambda N: C.ed(N, how="sum"),
    "wd": C.wd,
    "wd_max": lambda N: C.wd(N, how="max"),
    "wd_fairkm": lambda N: C.wd(N, "fairkm-compat"),
    "cce": C.cce,
    "fairness_cce": C.fairness_cce,
    "mnce": C.mnce,
    "ne": C.ne,
    "fce_fair": C.fce_fair,
    "balance_prime": C.balance_prime,
    "proportion": C.proportion,
}
PER_CLUSTER = {
    "balance": C.balance_per_cluster,
    "ed": C.ed_per_cluster,
    "wd": C.wd_per_cluster,
    "wd_fairkm": lambda N: C.wd_per_cluster(N, "fairkm-compat"),
    "fairness_cce": C.fairness_cce_per_cluster,
    "nce": C.nce_per_cluster,
    "fce_fair": C.fce_fair_per_cluster,
    "balance_prime": C.balance_prime_per_cluster,
    "proportion": C.proportion_per_cluster,
}


@st.composite
def tables(draw, max_g=5, max_k=5, max_count=40):
    """Count tables whose rows and columns all have positive sums."""
    g = draw(st.integers(1, max_g))
    k = draw(st.integers(1, max_k))
    N = draw(arrays(np.int64, (g, k), elements=st.integers(0, max_count)))
    N = N.copy()
    for i in range(g):  # make every row and column non-empty
        if N[i].sum() == 0:
            N[i, draw(st.integers(0, k - 1))] = 1
    for j in range(k):
        if N[:, j].sum() == 0:
            N[draw(st.integers(0, g - 1)), j] = 1
    return N


@st.composite
def mirrored(draw):
    """N = a b^T: every cluster has exactly the population's group distribution."""
    a = np.array(draw(st.lists(st.integers(1, 9), min_size=1, max_size=5)))
    b = np.array(draw(st.lists(st.integers(1, 9), min_size=1, max_size=5)))
    return np.outer(a, b)


# ------------------------------------------------------------------------------- oracles
def naive_balance(N):
    """Straight from FairDen eq. 6-7 with Python loops."""
    g, k = N.shape
    n = N.sum()
    out = []
    for j in range(k):
        size = N[:, j].sum()
        vals = []
        for i in range(g):
            r = N[i].sum() / n
            rk = N[i, j] / size
            vals.append(0.0 if rk == 0 else min(r / rk, rk / r))
        out.append(min(vals))
    return out


def emd_lp(p, q, cost):
    """Earth mover's distance by linear programming (brute-force oracle)."""
    g = len(p)
    A_eq, b_eq = [], []
    for i in range(g):
        row = np.zeros((g, g))
        row[i, :] = 1
        A_eq.append(row.ravel())
        b_eq.append(p[i])
    for j in range(g):
        col = np.zeros((g, g))
        col[:, j] = 1
        A_eq.append(col.ravel())
        b_eq.append(q[j])
    res = linprog(cost.ravel(), A_eq=np.array(A_eq), b_eq=np.array(b_eq), bounds=(0, None))
    assert res.success
    return res.fun


# ------------------------------------------------------------------------------- properties
@SETTINGS
@given(tables())
def test_balance_matches_naive_definition_and_range(N):
    pc = C.balance_per_cluster(N)
    np.testing.assert_allclose(pc, naive_balance(N), rtol=1e-12, atol=1e-15)
    assert np.all((pc >= 0) & (pc <= 1))
    res = C.balance(N)
    assert 0 <= res.min <= res.mean <= 1


@SETTINGS
@given(mirrored())
def test_mirrored_clusters_are_perfect(N):
    assert C.balance_min(N) == 1.0  # exact: N[g,k] n == |g| |k| in integers
    assert np.all(C.ed_per_cluster(N) < 1e-12)
    for ground in ("zero-one", "ordinal", "fairkm-compat"):
        assert np.all(C.wd_per_cluster(N, ground) < 1e-12)
    if N.shape[0] > 1:
        assert C.mnce(N) == pytest.approx(1.0)
    assert C.fce_fair(N) == pytest.approx(N[:, 0].min() / N[:, 0].max())


@SETTINGS
@given(tables(), st.randoms(use_true_random=False))
def test_invariant_to_relabelling_groups_and_clusters(N, rnd):
    g, k = N.shape
    rows = list(range(g))
    cols = list(range(k))
    rnd.shuffle(rows)
    rnd.shuffle(cols)
    P = N[rows][:, cols]
    for name, f in SCALARS.items():
        a, b = f(N), f(P)
        assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-9, abs=1e-12), name
    for name, f in PER_CLUSTER.items():
        np.testing.assert_allclose(f(P), f(N)[cols], rtol=1e-9, atol=1e-12, err_msg=name)


@SETTINGS
@given(tables())
def test_ranges(N):
    g, k = N.shape
    assert np.all(C.ed_per_cluster(N) >= 0) and np.all(C.ed_per_cluster(N) <= math.sqrt(2) + 1e-12)
    for ground in ("zero-one", "fairkm-compat"):
        w = C.wd_per_cluster(N, ground)
        assert np.all(w >= 0) and np.all(w <= 1 + 1e-12)
    w = C.wd_per_cluster(N, "ordinal")
    assert np.all(w >= 0) and np.all(w <= g - 1 + 1e-12)
    assert 0 < C.cce(N) <= 1
    assert 0 <= C.fairness_cce(N) <= 1
    assert 0 <= C.fce_fair(N) <= 1
    assert 0 <= C.balance_prime(N) <= 1 / g + 1e-12
    assert k / g - 1e-12 <= C.proportion(N) <= k + 1e-12
    m = C.mnce(N)
    assert math.isnan(m) if g == 1 else -1e-12 <= m <= 1 + 1e-12
    e = C.ne(N)
    assert math.isnan(e) if k == 1 else -1e-12 <= e <= 1 + 1e-12


@SETTINGS
@given(tables(max_g=4, max_k=3))
def test_wd_against_oracles(N):
    g, k = N.shape
    px = N.sum(axis=1) / N.sum()
    idx = np.arange(g)
    zero_one = 1.0 - np.eye(g)
    ordinal = np.abs(idx[:, None] - idx[None, :]).astype(float)
    for j in range(k):
        pk = N[:, j] / N[:, j].sum()
        assert C.wd_per_cluster(N)[j] == pytest.approx(emd_lp(pk, px, zero_one), abs=1e-7)
        assert C.wd_per_cluster(N, "ordinal")[j] == pytest.approx(emd_lp(pk, px, ordinal), abs=1e-7)
        assert C.wd_per_cluster(N, "ordinal")[j] == pytest.approx(
            wasserstein_distance(idx, idx, pk, px), abs=1e-9
        )
        pos = np.cumsum(np.arange(1, g + 1))  # strictly increasing, uneven gaps
        assert C.wd_per_cluster(N, "ordinal", positions=pos)[j] == pytest.approx(
            wasserstein_distance(pos, pos, pk, px), abs=1e-9
        )
        # FairKM's code: the probability vectors passed as samples
        assert C.wd_per_cluster(N, "fairkm-compat")[j] == pytest.approx(
            wasserstein_distance(px, pk), abs=1e-12
        )


@SETTINGS
@given(st.floats(0.05, 0.95), st.floats(0.05, 0.95), st.integers(1, 20))
def test_fairkm_compat_is_blind_to_group_identity(a, b, scale):
    # cluster distribution (a, 1-a) against population (1-a, a): fairkm-compat 0, 0/1 ground not
    assume(abs(a - 0.5) > 0.01)
    base = np.array([[a, 1 - a], [1 - a, a]])
    assert wasserstein_distance(base[0], base[1]) == pytest.approx(0.0, abs=1e-12)
    # build a table whose population is (1-a, a) and whose cluster 0 is (a, 1-a)
    x = np.array([a, 1 - a])
    pop = np.array([1 - a, a])
    # cluster 1 = 2 * pop - x (valid distribution when it is non-negative) -> equal sizes
    y = 2 * pop - x
    assume(np.all(y >= 0))
    N = np.column_stack([x, y]) * 1000 * scale
    assert C.wd_per_cluster(N, "fairkm-compat")[0] == pytest.approx(0.0, abs=1e-9)
    assert C.wd_per_cluster(N, "zero-one")[0] == pytest.approx(abs(2 * a - 1), rel=1e-9)
    assert C.wd_per_cluster(N, "zero-one")[0] > 0


@SETTINGS
@given(st.lists(tables(max_g=4, max_k=4), min_size=1, max_size=4))
def test_stacked_tables_match_single_tables(tabs):
    g = max(t.shape[0] for t in tabs)
    k = max(t.shape[1] for t in tabs)
    stack = np.zeros((len(tabs), g, k))
    for b, t in enumerate(tabs):
        stack[b, : t.shape[0], : t.shape[1]] = t  # padding = empty rows/columns
    for name, f in SCALARS.items():
        got = f(stack)
        assert got.shape == (len(tabs),)
        want = [f(t) for t in tabs]
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12, err_msg=name)
    for name, f in PER_CLUSTER.items():
        got = f(stack)
        assert got.shape == (len(tabs), k)
        for b, t in enumerate(tabs):
            np.testing.assert_allclose(got[b, : t.shape[1]], f(t), rtol=1e-9, atol=1e-12)
            assert np.all(np.isnan(got[b, t.shape[1] :])), name  # empty clusters -> NaN
    np.testing.assert_allclose(
        C.noise_adjusted_balance(stack, np.full(len(tabs), 7)),
        [C.noise_adjusted_balance(t, 7) for t in tabs],
    )


@SETTINGS
@given(tables(max_g=4, max_k=4), st.integers(0, 3), st.integers(0, 3))
def test_empty_rows_and_columns_in_a_stack_are_dropped(N, where_row, where_col):
    # inserting an empty group and an empty cluster changes nothing (plug-in rule), except that
    # the empty cluster's own per-cluster value is NaN
    g, k = N.shape
    r = min(where_row, g)
    c = min(where_col, k)
    padded = np.insert(np.insert(N, r, 0, axis=0), c, 0, axis=1)[None]
    for name, f in SCALARS.items():
        a, b = f(N), f(padded)[0]
        assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-9, abs=1e-12), name
    with pytest.raises(ValueError):
        C.balance(padded[0])  # a single table must not have empty rows/columns


@SETTINGS
@given(tables(max_g=4, max_k=3))
def test_ordinal_keeps_positions_of_empty_rows(N):
    # an empty middle group keeps its place in the declared order: mass moved across it
    # travels two steps
    g, k = N.shape
    assume(g >= 2)
    padded = np.insert(N, 1, 0, axis=0)
    idx = np.arange(g + 1)
    px = padded.sum(axis=1) / padded.sum()
    got = C.wd_per_cluster(padded[None], "ordinal")[0]
    for j in range(k):
        pk = padded[:, j] / padded[:, j].sum()
        assert got[j] == pytest.approx(wasserstein_distance(idx, idx, pk, px), abs=1e-9)


@SETTINGS
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(-1, 3)), min_size=1, max_size=80),
    st.integers(1, 4),
    st.randoms(use_true_random=False),
)
def test_tables_of_partitions_add_up_to_the_whole(rows, n_parts, rnd):
    groups = np.array([r[0] for r in rows])
    labels = np.array([r[1] for r in rows])
    part = np.array([rnd.randrange(n_parts) for _ in rows])

    def as_counter(ct):
        return Counter(
            {
                (ct.groups[i], ct.clusters[j]): int(ct.counts[i, j])
                for i in range(len(ct.groups))
                for j in range(len(ct.clusters))
                if ct.counts[i, j]
            }
        )

    if np.all(labels == -1):
        return
    whole = C.contingency_table(groups, labels)
    total, noise = Counter(), 0
    for p in range(n_parts):
        m = part == p
        if not m.any() or np.all(labels[m] == -1):
            noise += int(m.sum())
            continue
        ct = C.contingency_table(groups[m], labels[m])
        total += as_counter(ct)
        noise += ct.n_noise
    assert total == as_counter(whole)
    assert noise == whole.n_noise == int((labels == -1).sum())
    assert whole.counts.sum() + whole.n_noise == len(rows)
    # the counting metrics accept the table as built (no empty rows/columns)
    C.balance(whole.counts)


@SETTINGS
@given(
    tables(max_g=6, max_k=4).filter(lambda t: t.shape[0] >= 2),
    st.randoms(use_true_random=False),
)
def test_marginal_tables_add_up(N, rnd):
    codes = np.array([rnd.randrange(2) for _ in range(N.shape[0])])
    M = C.marginalize(N, codes, 2)
    assert M.sum() == N.sum()
    np.testing.assert_array_equal(M.sum(axis=0), N.sum(axis=0))
    for v in (0, 1):
        np.testing.assert_array_equal(M[v], N[codes == v].sum(axis=0))


@SETTINGS
@given(tables(), st.floats(0.01, 1000.0))
def test_scale_invariance_and_weighted_counts(N, s):
    # every metric depends on the table only through proportions, so weighted (non-integer)
    # counts, e.g. summed fuzzy memberships, are scored consistently
    for name, f in SCALARS.items():
        a, b = f(N), f(N * s)
        assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-9, abs=1e-12), name
