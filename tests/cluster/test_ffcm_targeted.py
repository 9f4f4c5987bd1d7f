"""FFCM's targeted fairness term, the fair/unfair twins and out-of-sample assignment.

Oracles: a loop implementation of the targeted penalty (counts summed row by row) and of the
whole two-phase fit (plain FCM sweeps, then sweeps whose penalty table moves towards the penalty
of the current memberships), and loop formulas for the memberships of new rows.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairaudit.cluster._ffcm_ops import targeted_penalty
from fairaudit.cluster.ffcm import TABLE_STEP, FairFuzzyCMeans
from fairaudit.metrics import ed_score, wd_score


def penalty_literal(U, codes, lg, k):
    """dF/du_ij of F = 1/(2 n/k) sum_i sum_s (N_si - r_s n_i)^2, then shifted per group."""
    n = len(codes)
    r = [sum(1 for c in codes if c == s) / n for s in range(lg)]
    out = np.zeros((lg, k))
    for i in range(k):
        N = [sum(U[j, i] for j in range(n) if codes[j] == s) for s in range(lg)]
        ni = sum(N)
        for g in range(lg):
            # d/du of (1/(2nbar)) sum_s (N_s - r_s n_i)^2 for a row of group g
            out[g, i] = sum(
                (N[s] - r[s] * ni) * ((1.0 if s == g else 0.0) - r[s]) for s in range(lg)
            ) / (n / k)
    return out - out.min(axis=1, keepdims=True)


def test_targeted_penalty_is_the_derivative_of_the_fair_loss():
    rng = np.random.default_rng(0)
    n, k, lg = 30, 3, 3
    U = rng.dirichlet(np.ones(k), size=n)
    codes = rng.integers(0, lg, n)
    counts = np.array([[U[codes == s, i].sum() for i in range(k)] for s in range(lg)])
    ratios = np.bincount(codes, minlength=lg) / n
    np.testing.assert_allclose(
        targeted_penalty(counts, ratios, k), penalty_literal(U, codes, lg, k), atol=1e-12
    )

    # and it is the finite-difference derivative of F (up to the per-group shift)
    def F(V):
        N = np.array([[V[codes == s, i].sum() for i in range(k)] for s in range(lg)])
        return ((N - ratios[:, None] * N.sum(0)[None]) ** 2).sum() / (2 * n / k)

    j, i, h = 4, 1, 1e-6
    V = U.copy()
    V[j, i] += h
    raw = (F(V) - F(U)) / h
    pen = penalty_literal(U, codes, lg, k)
    shift = raw - pen[codes[j], i]
    V2 = U.copy()
    i2 = 2
    V2[j, i2] += h
    assert (F(V2) - F(U)) / h - pen[codes[j], i2] == pytest.approx(shift, abs=1e-4)


def oracle_targeted(X, codes, k, eta, centres0, max_iter, tol, hard=False, adaptive=False):
    """Loop version of the targeted fit (m = 2, eta_scale='gap', one attribute); ``hard``: the
    table from the argmax labels' counts instead of the memberships; ``adaptive``: the table's
    step of ``acceleration="adaptive"`` (full steps once the damped residual shrinks with a
    local rate |lam| <= 1/2 for two sweeps) and its stop (two small changes of J in a row).
    Returns (U, centres, objective history, number of full steps)."""
    X = np.asarray(X, float)
    X = X - X.mean(0)
    n = len(X)
    lg = int(codes.max()) + 1

    def memberships(C, P):
        U = np.zeros((n, k))
        for j in range(n):
            e = [max(float(((X[j] - C[i]) ** 2).sum()) + (P[codes[j], i] if P is not None else 0),
                     1e-300) for i in range(k)]
            inv = [1.0 / v for v in e]
            U[j] = np.array(inv) / sum(inv)
        return U

    def centres_of(U):
        W = U**2
        return (W.T @ X) / W.sum(0)[:, None]

    def J(U, C, P):
        return sum(
            U[j, i] ** 2 * (((X[j] - C[i]) ** 2).sum() + (P[codes[j], i] if P is not None else 0))
            for j in range(n) for i in range(k)
        )

    U = memberships(centres0 - 0, None)
    C = centres_of(U)
    hist = []
    for _ in range(max_iter):  # phase 1: fuzzy c-means
        Cu = C
        U = memberships(C, None)
        hist.append(J(U, Cu, None))
        C = centres_of(U)
        if len(hist) >= 2 and abs(hist[-1] - hist[-2]) < tol * abs(hist[-2]):
            break
    unit = np.mean([np.diff(sorted(((x - c) ** 2).sum() for c in C))[0] for x in X])
    avg = None
    start = len(hist)
    res, steps, full, good, banned = [], [], False, 0, False
    n_full = 0

    def small(t):  # relative change of J at history index t below tol
        return abs(hist[t] - hist[t - 1]) < tol * abs(hist[t - 1])

    for it in range(max_iter):  # phase 2: the table moves towards the current penalty
        counts_from = U
        if hard:  # one-hot of each row's argmax
            counts_from = np.zeros_like(U)
            for j in range(n):
                counts_from[j, int(np.argmax(U[j]))] = 1.0
        new = penalty_literal(counts_from, codes, lg, k)
        step = max(TABLE_STEP, 1.0 / (it + 1))
        if adaptive and avg is not None:
            r = float(np.sqrt(((new - avg) ** 2).sum()))
            if res and res[-1] > 0:
                q = r / res[-1]
                lam = 1.0 - (1.0 - q) / steps[-1]
                if full:
                    if q >= 1.0:
                        full, good = False, 0
                    elif (steps[-2:] == [1.0, 1.0] and len(res) >= 2
                          and q * (res[-1] / res[-2]) > (1.0 - TABLE_STEP) ** 2):
                        full, banned = False, True
                elif not banned and step <= TABLE_STEP and q < 1.0 and abs(lam) <= 0.5:
                    good += 1
                    full = good >= 2
                else:
                    good = 0
            if full:
                step = 1.0
                n_full += 1
            res.append(r)
            steps.append(step)
        avg = new if avg is None else avg + (new - avg) * step
        P = eta * unit * avg
        Cu = C
        U = memberships(C, P)
        hist.append(J(U, Cu, P))
        C = centres_of(U)
        t = len(hist) - 1
        if t - start >= 1 and small(t) and (not adaptive or (t - start >= 2 and small(t - 1))):
            break
    return U, Cu, np.array(hist), n_full


def _correlated(seed=0, n=60):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 2))
    s = (rng.random(n) < 0.15 + 0.7 * X[:, 0]).astype(int)
    return X, s


def test_targeted_fit_matches_loop_oracle():
    X, s = _correlated(1, n=40)
    init = np.array([[0.2, 0.5], [0.8, 0.5], [0.5, 0.9]])
    est = FairFuzzyCMeans(3, eta=3.0, init=init, max_iter=60, tol=1e-8,
                           acceleration="none").fit(X, sensitive=s)
    # the oracle runs one fair phase at the eta the fit kept (step 4 may try several)
    factor = est.eta_reductions_[-1]
    assert factor > 0
    U, C, hist, _ = oracle_targeted(X, s, 3, 3.0 * factor, init - X.mean(0), 60, 1e-8)
    assert est.n_iter_ == len(hist)
    np.testing.assert_allclose(est.objective_, hist, rtol=1e-8)
    np.testing.assert_allclose(est.memberships_, U, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(est.cluster_centers_, C + X.mean(0), rtol=1e-7, atol=1e-10)


def test_twin_is_fcm_through_the_same_path():
    X, s = _correlated(2, n=200)
    fair = FairFuzzyCMeans(2, random_state=0).fit(X, sensitive=s)
    twin = FairFuzzyCMeans(2, fair=False, random_state=0).fit(X, sensitive=s)
    fcm = FairFuzzyCMeans(2, eta=0.0, random_state=0).fit(X)
    np.testing.assert_array_equal(twin.memberships_, fcm.memberships_)
    assert not twin.fair_applied_ and twin.fairness_penalty_ is None and twin.eta_raw_ == 0.0
    # the fair fit starts with exactly the twin's sweeps, then refines
    t = twin.n_iter_
    np.testing.assert_array_equal(fair.objective_[:t], twin.objective_)
    assert fair.n_iter_ > t and fair.fair_applied_


@pytest.mark.parametrize("seed", range(5))
def test_fair_version_is_fairer_than_its_twin_on_ed(seed):
    # groups tied to the first feature: FCM splits along it; the targeted term must mix groups
    X, s = _correlated(seed, n=300)
    fair = FairFuzzyCMeans(2, random_state=seed).fit(X, sensitive=s)
    twin = FairFuzzyCMeans(2, fair=False, random_state=seed).fit(X, sensitive=s)
    assert fair.converged_ and twin.converged_
    assert ed_score(fair.labels_, s) < 0.9 * ed_score(twin.labels_, s)
    assert wd_score(fair.labels_, s) < 0.9 * wd_score(twin.labels_, s)
    assert np.bincount(fair.labels_, minlength=2).min() > 0


def test_larger_eta_is_fairer():
    X, s = _correlated(7, n=300)
    eds = [
        ed_score(FairFuzzyCMeans(2, eta=e, random_state=0).fit(X, sensitive=s).labels_, s)
        for e in (0.0, 1.0, 3.0)
    ]
    assert eds[0] > eds[1] > eds[2]


def test_scale_free_and_translation_invariant():
    X, s = _correlated(3, n=120)
    a = FairFuzzyCMeans(3, random_state=0).fit(X, sensitive=s)
    b = FairFuzzyCMeans(3, random_state=0).fit(10.0 * X + 1e4, sensitive=s)
    np.testing.assert_allclose(a.memberships_, b.memberships_, rtol=1e-6, atol=1e-8)


def test_two_attributes_combined_and_per_attribute_paths_agree(monkeypatch):
    import fairaudit.cluster._ffcm_ops as ops

    X, s = _correlated(4, n=120)
    s2 = np.random.default_rng(4).integers(0, 3, 120)
    S = np.c_[s, s2]
    a = FairFuzzyCMeans(3, random_state=0, max_iter=80).fit(X, sensitive=S)
    monkeypatch.setattr(ops, "MAX_COMBINED", 1)
    b = FairFuzzyCMeans(3, random_state=0, max_iter=80).fit(X, sensitive=S)
    np.testing.assert_allclose(a.memberships_, b.memberships_, rtol=1e-10)


def test_missing_sensitive_warns_and_fits_the_twin():
    X, s = _correlated(5, n=100)
    with pytest.warns(UserWarning, match="no 'sensitive'"):
        a = FairFuzzyCMeans(2, random_state=0).fit(X)
    b = FairFuzzyCMeans(2, fair=False, random_state=0).fit(X)
    np.testing.assert_array_equal(a.memberships_, b.memberships_)
    assert not a.fair_applied_
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        FairFuzzyCMeans(2, fair=False, random_state=0).fit(X)


def test_convergence_is_exposed():
    X, s = _correlated(6, n=100)
    est = FairFuzzyCMeans(2, random_state=0).fit(X, sensitive=s)
    assert est.converged_ and est.n_iter_ == len(est.objective_)
    short = FairFuzzyCMeans(2, random_state=0, max_iter=2).fit(X, sensitive=s)
    assert not short.converged_


# ----------------------------------------------------------------------------- predict
def _memberships_literal(X, C, m, pen=None):
    out = np.zeros((len(X), len(C)))
    for j, x in enumerate(X):
        e = [float(((x - c) ** 2).sum()) + (0.0 if pen is None else pen[j, i])
             for i, c in enumerate(C)]
        inv = [v ** (-1.0 / (m - 1.0)) for v in e]
        out[j] = np.array(inv) / sum(inv)
    return out


@pytest.mark.parametrize("m", [2.0, 1.5])
def test_predict_memberships_oracle(m):
    X, s = _correlated(8, n=150)
    est = FairFuzzyCMeans(3, m=m, random_state=0).fit(X, sensitive=s)
    new = np.random.default_rng(9).random((20, 2))
    snew = np.random.default_rng(10).integers(0, 2, 20)
    np.testing.assert_allclose(
        est.predict_memberships(new), _memberships_literal(new, est.cluster_centers_, m),
        rtol=1e-9,
    )
    pen = np.array([[est.fairness_penalty_[0][g, i] for i in range(3)] for g in snew])
    np.testing.assert_allclose(
        est.predict_memberships(new, sensitive=snew),
        _memberships_literal(new, est.cluster_centers_, m, pen),
        rtol=1e-9,
    )
    nearest = np.argmin(((new[:, None] - est.cluster_centers_[None]) ** 2).sum(-1), axis=1)
    np.testing.assert_array_equal(est.predict(new), nearest)


def test_predict_on_training_rows_reproduces_labels():
    X, s = _correlated(11, n=300)
    twin = FairFuzzyCMeans(3, fair=False, random_state=0, tol=1e-12, max_iter=2000).fit(X)
    assert twin.converged_
    np.testing.assert_array_equal(twin.predict(X), twin.labels_)
    fair = FairFuzzyCMeans(3, random_state=0).fit(X, sensitive=s)
    # with the groups, the penalty table of the final sweep applies: exactly the training rule
    # (cluster_centers_ and fairness_penalty_ are what the final memberships were computed from)
    np.testing.assert_array_equal(fair.predict(X, sensitive=s), fair.labels_)
    np.testing.assert_allclose(fair.predict_memberships(X, sensitive=s), fair.memberships_,
                               rtol=1e-9, atol=1e-12)
    # without them: the nearest centre, which differs exactly where the term moved a row
    moved = fair.predict(X) != fair.labels_
    assert moved.any()


def test_predict_rejects_unknown_groups_and_bad_shapes():
    X, s = _correlated(12, n=80)
    est = FairFuzzyCMeans(2, random_state=0).fit(X, sensitive=np.where(s == 1, "f", "m"))
    est.predict(X[:5], sensitive=np.array(["f", "m", "f", "f", "m"]))
    with pytest.raises(ValueError, match="not seen in fit"):
        est.predict(X[:2], sensitive=np.array(["f", "x"]))
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :1])
    with pytest.raises(ValueError, match="rows"):
        est.predict(X[:3], sensitive=np.array(["f", "m"]))


def test_converged_needs_every_phase_to_settle():
    # an FCM start cut short by max_iter is not hidden by a fair phase that settles
    X, s = _correlated(13, n=200)
    twin = FairFuzzyCMeans(3, fair=False, random_state=0, max_iter=3).fit(X)
    fair = FairFuzzyCMeans(3, random_state=0, max_iter=3).fit(X, sensitive=s)
    assert not twin.converged_ and not fair.converged_


@pytest.mark.parametrize("seed", range(6))
def test_never_less_fair_than_the_twin_on_hard_ed(seed):
    # the refinement is kept only if it lowers the size-weighted Ed of the hard labels
    # (eta, eta / 3, / 9, x 3, x 9, else the twin)
    from fairaudit.cluster.ffcm import ETA_FACTORS, _hard_ed

    rng = np.random.default_rng(seed)
    X = np.c_[rng.normal(size=(150, 6)), rng.random((150, 1)) < 0.5]  # a near-proxy column
    s = (X[:, -1] + (rng.random(150) < 0.2)) % 2
    codes = s.astype(int)
    spec = [(codes, 2, np.bincount(codes, minlength=2) / 150)]
    for eta in (1.0, 30.0, 1000.0):
        fair = FairFuzzyCMeans(4, eta=eta, random_state=seed).fit(X, sensitive=s)
        twin = FairFuzzyCMeans(4, fair=False, random_state=seed).fit(X, sensitive=s)
        # _hard_ed is fairaudit's size-weighted ed
        assert _hard_ed(spec, fair.labels_, 4) == pytest.approx(ed_score(fair.labels_, codes))
        assert fair.eta_reductions_[-1] in (*ETA_FACTORS, 0.0)
        if fair.eta_reductions_[-1] == 0.0:  # rejected: the twin's fit, term off
            np.testing.assert_array_equal(fair.labels_, twin.labels_)
            assert not fair.fair_applied_ and fair.fairness_penalty_ is None
        else:
            assert ed_score(fair.labels_, codes) < ed_score(twin.labels_, codes)


def test_hard_table_fit_matches_loop_oracle():
    # X independent of the group: the twin's soft composition is already near the population's,
    # every soft-table refinement fails step 4, and the hard-count table (TABLE_FORMS[1]) is kept
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    s = (rng.random(60) < 0.4).astype(int)
    init = X[[0, 1]]
    est = FairFuzzyCMeans(2, init=init, max_iter=80, tol=1e-8, acceleration="none").fit(
        X, sensitive=s)
    twin = FairFuzzyCMeans(2, fair=False, init=init, max_iter=80, tol=1e-8).fit(X, sensitive=s)
    assert est.fair_table_ == "hard"
    assert ed_score(est.labels_, s) < ed_score(twin.labels_, s)
    factor = est.eta_reductions_[-1]
    U, C, hist, _ = oracle_targeted(X, s, 2, 3.0 * factor, init - X.mean(0), 80, 1e-8, hard=True)
    np.testing.assert_allclose(est.memberships_, U, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(est.cluster_centers_, C + X.mean(0), rtol=1e-7, atol=1e-10)
    assert est.n_iter_ == len(hist)
    np.testing.assert_allclose(est.objective_, hist, rtol=1e-8)


def test_strictly_fairer_than_the_twin_on_random_tables():
    # simulation: random tables, groups independent of or correlated with the features, 1 or 2
    # attributes, k = 2..6. Before the hard-count table (2026-11-24) 11 of 120 such draws
    # returned the twin (equal Ed); every draw must now be strictly fairer.
    from fairaudit.cluster.ffcm import _hard_eds

    forms = []
    for seed in range(40):
        rng = np.random.default_rng(seed)
        n = int(rng.choice([200, 500]))
        d = int(rng.integers(2, 8))
        k = int(rng.integers(2, 7))
        X = rng.normal(size=(n, d)) * rng.gamma(1.0, 1.0, size=d)
        corr = rng.choice([0.0, 0.02, 0.1, 0.4])
        s = (rng.random(n) < 0.3 + corr * np.tanh(X[:, 0])).astype(int)
        if rng.random() < 0.3:
            s = s + 2 * (rng.random(n) < 0.2)
        fair = FairFuzzyCMeans(k, random_state=seed).fit(X, sensitive=s)
        twin = FairFuzzyCMeans(k, fair=False, random_state=seed).fit(X, sensitive=s)
        spec = [(s, int(s.max()) + 1, np.bincount(s) / n)]
        w_fair, sum_fair = _hard_eds(spec, fair.labels_, k)
        w_twin, sum_twin = _hard_eds(spec, twin.labels_, k)
        assert w_fair < w_twin, (seed, fair.eta_reductions_)
        assert sum_fair <= sum_twin + 1e-12
        assert np.bincount(fair.labels_, minlength=k).min() > 0
        forms.append(fair.fair_table_)
    assert "hard" in forms and "soft" in forms


def test_anderson_finds_the_fixed_point_of_a_contraction_faster():
    from fairaudit.cluster._ffcm_ops import Anderson

    rng = np.random.default_rng(0)
    Q = np.linalg.qr(rng.normal(size=(6, 6)))[0]
    A = Q @ np.diag([0.98, 0.95, 0.9, 0.5, 0.2, 0.1]) @ Q.T  # slow linear contraction
    b = rng.normal(size=6)
    fixed = np.linalg.solve(np.eye(6) - A, b)

    def steps(accelerate):
        aa, x = Anderson(5), np.zeros(6)
        for t in range(1, 2000):
            g = A @ x + b
            if np.linalg.norm(g - x) < 1e-10:
                return t, x
            x = aa.next(x, g) if accelerate else g
        return 2000, x

    t_plain, x_plain = steps(False)
    t_aa, x_aa = steps(True)
    np.testing.assert_allclose(x_aa, fixed, atol=1e-8)
    np.testing.assert_allclose(x_plain, fixed, atol=1e-7)
    assert t_aa < t_plain / 10


@pytest.mark.parametrize("seed", range(3))
def test_accelerated_fit_is_a_self_consistent_fixed_point(seed):
    # at convergence the table the final memberships were computed with is the penalty of those
    # memberships, and the centres are their weighted means: the damped iteration's fixed point
    from fairaudit.cluster._ffcm_ops import targeted_penalties

    X, s = _correlated(seed, n=400)
    est = FairFuzzyCMeans(3, random_state=seed, max_iter=3000, tol=1e-13,
                          acceleration="anderson").fit(X, sensitive=s)
    assert est.converged_ and est.fair_table_ == "soft"
    codes = np.unique(s, return_inverse=True)[1]
    fair = [(codes, 2, np.bincount(codes) / len(codes))]
    pen = targeted_penalties(fair, est.memberships_, None, (2,))[0]
    np.testing.assert_allclose(est.fairness_penalty_[0] / est.eta_raw_, pen, atol=1e-6)
    W = est.memberships_**2
    np.testing.assert_allclose(
        est.cluster_centers_, (W.T @ X) / W.sum(0)[:, None], atol=1e-6
    )
    slow = FairFuzzyCMeans(3, random_state=seed, max_iter=3000, tol=1e-13,
                           acceleration="none").fit(X, sensitive=s)
    assert est.n_iter_ < slow.n_iter_


@pytest.mark.parametrize("k", [2, 3, 8])
def test_gap_scale_equals_the_sorted_oracle_bit_for_bit(k):
    from fairaudit.cluster.ffcm import _gap_scale

    rng = np.random.default_rng(k)
    X = rng.normal(size=(70_000, 4))
    X[::3] = np.round(X[::3])  # ties between centres' distances
    C = np.round(rng.normal(size=(k, 4)))
    if k > 2:
        C[1] = C[0]
    total = 0.0
    for a in range(0, len(X), 65536):  # the previous code: full sort of each block
        b = np.einsum("ij,ij->i", X[a:a + 65536], X[a:a + 65536])[:, None] - 2.0 * X[
            a:a + 65536] @ C.T + np.einsum("ij,ij->i", C, C)
        b.sort(axis=1)
        total += float((b[:, 1] - b[:, 0]).sum())
    assert _gap_scale(X, C) == max(total / len(X), 1e-300)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 3000), k=st.integers(1, 9),
       groups=st.integers(1, 12))
def test_soft_counts_in_one_bincount_are_the_column_counts_bit_for_bit(seed, n, k, groups):
    # issue 25: the targeted table's soft counts in one pass over U (count_index) add each bin's
    # rows in the same order as the k column bincounts: equal bit for bit, so fits are unchanged
    from fairaudit.cluster._ffcm_ops import count_index, soft_counts, targeted_penalties

    rng = np.random.default_rng(seed)
    U = rng.dirichlet(np.ones(k), size=n)
    codes = rng.integers(0, groups, n)
    np.testing.assert_array_equal(
        soft_counts(codes, groups, U, count_index(codes, k)), soft_counts(codes, groups, U))
    other = rng.integers(0, 3, n)
    fair = [(c, g, np.bincount(c, minlength=g) / n) for c, g in ((codes, groups), (other, 3))]
    idx = [count_index(c, k) for c, _, _ in fair]
    for a, b in zip(targeted_penalties(fair, U, None, (groups, 3), idx),
                    targeted_penalties(fair, U, None, (groups, 3)), strict=True):
        np.testing.assert_array_equal(a, b)
    comb = codes * 3 + other  # the combined group codes, one bincount
    for a, b in zip(targeted_penalties(fair, U, comb, (groups, 3), count_index(comb, k)),
                    targeted_penalties(fair, U, comb, (groups, 3)), strict=True):
        np.testing.assert_array_equal(a, b)


def test_table_step_takes_full_steps_only_where_the_damped_iteration_contracts():
    from fairaudit.cluster._ffcm_ops import TableStep

    def run(lam, sweeps=40):
        """Scalar residual of T <- T + s (P(T) - T) with P(T) = lam T: r shrinks by 1 - s(1-lam)."""
        ts, r, steps = TableStep(0.2), 1.0, []
        for it in range(1, sweeps):
            s = ts.step(r, max(0.2, 1.0 / (it + 1)))
            steps.append(s)
            r *= abs(1.0 - s * (1.0 - lam))
        return steps, ts.full_steps

    steps, full = run(0.1)  # fast undamped contraction: full steps once two damped sweeps
    assert steps[:4] == [0.5, 1 / 3, 0.25, 0.2]  # (the 1/t start is never sped up)
    assert steps[4:] == [1.0] * 35 and full == 35
    steps, full = run(0.9)  # |lam| > 1/2: the damped schedule throughout
    assert full == 0 and set(steps[3:]) == {0.2}
    steps, full = run(-0.7)  # oscillating undamped map: |lam| > 1/2, damped
    assert full == 0

    # a full step that lets the residual grow sends it back to the damped step (re-armed)
    ts = TableStep(0.2)
    for r, base in ((1.0, 0.2), (0.82, 0.2), (0.67, 0.2)):
        s = ts.step(r, base)
    assert s == 1.0
    assert ts.step(0.9, 0.2) == 0.2
    # two full steps that shrink the residual less than two damped ones: damped for good
    ts = TableStep(0.2)
    for r in (1.0, 0.82, 0.67, 0.6, 0.55, 0.5):
        s = ts.step(r, 0.2)
    assert s == 0.2
    assert all(ts.step(r, 0.2) == 0.2 for r in (0.4, 0.33, 0.27, 0.2, 0.15))


@pytest.mark.parametrize("seed", [1, 3])
def test_adaptive_fit_matches_loop_oracle(seed):
    # acceleration="adaptive": the same two phases as the damped oracle, with the table's full
    # steps and the two-small-changes stop written out in the loop oracle
    X, s = _correlated(seed, n=40)
    init = np.array([[0.2, 0.5], [0.8, 0.5], [0.5, 0.9]])
    est = FairFuzzyCMeans(3, eta=3.0, init=init, max_iter=60, tol=1e-8,
                          acceleration="adaptive").fit(X, sensitive=s)
    assert est.fair_table_ == "soft"
    factor = est.eta_reductions_[-1]
    U, C, hist, n_full = oracle_targeted(
        X, s, 3, 3.0 * factor, init - X.mean(0), 60, 1e-8, adaptive=True)
    assert n_full > 0  # the fast path ran
    assert est.n_iter_ == len(hist)
    np.testing.assert_allclose(est.objective_, hist, rtol=1e-8)
    np.testing.assert_allclose(est.memberships_, U, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(est.cluster_centers_, C + X.mean(0), rtol=1e-7, atol=1e-10)
    # run to a tight tolerance, it ends where the damped iteration ends (the same fixed point)
    damped = FairFuzzyCMeans(3, eta=3.0, init=init, max_iter=3000, tol=1e-10,
                             acceleration="none").fit(X, sensitive=s)
    tight = FairFuzzyCMeans(3, eta=3.0, init=init, max_iter=3000, tol=1e-10,
                            acceleration="adaptive").fit(X, sensitive=s)
    assert damped.converged_ and tight.converged_
    assert tight.eta_reductions_ == damped.eta_reductions_
    np.testing.assert_array_equal(tight.labels_, damped.labels_)
    np.testing.assert_allclose(tight.memberships_, damped.memberships_, atol=1e-6)


def test_acceleration_values_and_bad_value():
    X, s = _correlated(4, n=120)
    for acc in ("none", "adaptive", "anderson"):
        est = FairFuzzyCMeans(2, random_state=0, acceleration=acc).fit(X, sensitive=s)
        assert est.converged_
    with pytest.raises(ValueError, match="'acceleration' parameter.*'adaptive'.*'fast'"):
        FairFuzzyCMeans(2, acceleration="fast").fit(X, sensitive=s)
