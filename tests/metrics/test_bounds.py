"""Sure bounds of counting metrics over a box of tables (fairaudit.metrics.bounds).

Oracle: every integer table in a small box (cells, row sums, column sums and total in their
ranges) is enumerated and every metric computed exactly with fairaudit.metrics.counting; the
bounds must contain all of them. With every count known they must collapse to the value.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from fairaudit.metrics import counting
from fairaudit.metrics.bounds import SUPPORTED, TableBox, metric_bounds, per_cluster_bounds

EXACT = {
    "balance": counting.balance_min,
    "balance_mean": counting.balance_mean,
    "ed": lambda T: counting.ed(T, "weighted-mean"),
    "ed_max": lambda T: counting.ed(T, "max"),
    "ed_sum": lambda T: counting.ed(T, "sum"),
    "wd": lambda T: counting.wd(T, "zero-one", "weighted-mean"),
    "wd_max": lambda T: counting.wd(T, "zero-one", "max"),
    "wd_sum": lambda T: counting.wd(T, "zero-one", "sum"),
    "fairness_cce": counting.fairness_cce,
    "cce": counting.cce,
    "mnce": counting.mnce,
    "ne": counting.ne,
    "fce_fair": counting.fce_fair,
    "balance_prime": counting.balance_prime,
    "proportion": counting.proportion,
}
ORDINAL = {
    "wd": lambda T: counting.wd(T, "ordinal", "weighted-mean"),
    "wd_max": lambda T: counting.wd(T, "ordinal", "max"),
    "wd_sum": lambda T: counting.wd(T, "ordinal", "sum"),
}
PER_CLUSTER = {
    "balance": counting.balance_per_cluster,
    "ed": counting.ed_per_cluster,
    "wd:zero-one": lambda T: counting.wd_per_cluster(T, "zero-one"),
    "wd:ordinal": lambda T: counting.wd_per_cluster(T, "ordinal"),
    "fairness_cce": counting.fairness_cce_per_cluster,
    "nce": counting.nce_per_cluster,
    "fce_fair": counting.fce_fair_per_cluster,
    "balance_prime": counting.balance_prime_per_cluster,
    "proportion": counting.proportion_per_cluster,
}
TOL = 1e-9


def test_every_metric_of_the_builtin_auditors_is_covered():
    assert set(EXACT) | {"balance_noise_adjusted"} == SUPPORTED


def _tables_in(box: TableBox) -> np.ndarray:
    """Every integer table in the box whose sums lie in their ranges (clusters non-empty)."""
    G, K = box.shape
    ranges = [range(int(box.lo[g, k]), int(box.hi[g, k]) + 1)
              for g in range(G) for k in range(K)]
    out = []
    for cells in itertools.product(*ranges):
        T = np.array(cells, dtype=np.int64).reshape(G, K)
        rows, cols, n = T.sum(axis=1), T.sum(axis=0), T.sum()
        if (np.all(rows >= box.rows_lo) and np.all(rows <= box.rows_hi)
                and np.all(cols >= np.maximum(box.cols_lo, 1)) and np.all(cols <= box.cols_hi)
                and box.n_lo <= n <= box.n_hi and np.all(rows > 0)):
            out.append(T)
    return np.array(out)


def _random_box(rng: np.random.Generator) -> tuple[np.ndarray, TableBox]:
    """A true table and a box around it: some cells and sums only known to a range."""
    G, K = int(rng.integers(2, 4)), int(rng.integers(2, 4))
    while True:
        T = rng.integers(0, 7, size=(G, K))
        if np.all(T.sum(axis=1) > 0) and np.all(T.sum(axis=0) > 0):
            break
    hidden = rng.random((G, K)) < 0.35
    if hidden.sum() > 4:  # keep the enumeration small
        idx = np.flatnonzero(hidden)[4:]
        hidden.flat[idx] = False
    below = rng.integers(0, 3, size=(G, K))
    above = rng.integers(0, 3, size=(G, K))
    lo = np.where(hidden, np.maximum(T - below, 0), T)
    hi = np.where(hidden, T + above, T)
    rows, cols, n = T.sum(axis=1), T.sum(axis=0), int(T.sum())

    def fuzz(v, p):
        m = rng.random(v.shape) < p
        return (np.where(m, np.maximum(v - rng.integers(0, 3, v.shape), 1), v),
                np.where(m, v + rng.integers(0, 3, v.shape), v))

    r_lo, r_hi = fuzz(rows, 0.3)
    c_lo, c_hi = fuzz(cols, 0.3)
    exact_n = rng.random() < 0.7
    noise = int(rng.integers(0, 5))
    box = TableBox(lo, hi, r_lo, r_hi, c_lo, c_hi,
                   n if exact_n else n - int(rng.integers(0, 3)),
                   n if exact_n else n + int(rng.integers(0, 3)),
                   max(noise - 1, 0), noise + 1)
    return T, box


def _exact(metric: str, T: np.ndarray, noise: np.ndarray, ordinal: bool) -> np.ndarray:
    if metric == "balance_noise_adjusted":
        return np.asarray(counting.noise_adjusted_balance(T, noise), dtype=float)
    fn = (ORDINAL if ordinal else {}).get(metric, EXACT[metric])
    return np.asarray(fn(T), dtype=float)


@pytest.mark.parametrize("seed", range(150))
def test_bounds_contain_every_table_of_the_box(seed):
    rng = np.random.default_rng(seed)
    T, box = _random_box(rng)
    tables = _tables_in(box)
    assert len(tables) >= 1 and any(np.array_equal(t, T) for t in tables)
    noises = np.arange(box.noise_lo, box.noise_hi + 1)
    for ordinal in (False, True):
        for metric in sorted(SUPPORTED):
            b = metric_bounds(metric, box, wd_ground="ordinal" if ordinal else "zero-one")
            if metric == "balance_noise_adjusted":
                vals = np.concatenate([_exact(metric, tables, np.full(len(tables), z), ordinal)
                                       for z in noises])
            else:
                vals = _exact(metric, tables, None, ordinal)  # type: ignore[arg-type]
            vals = vals[~np.isnan(vals)]
            if b is None:
                assert metric in ("mnce", "ne")  # may be unbounded (entropy 0 possible)
                continue
            assert b[0] <= b[1] + TOL
            assert np.all(vals >= b[0] - TOL), (metric, b, vals.min())
            assert np.all(vals <= b[1] + TOL), (metric, b, vals.max())


@pytest.mark.parametrize("seed", range(60))
def test_per_cluster_bounds_contain_every_table_of_the_box(seed):
    rng = np.random.default_rng(1000 + seed)
    _, box = _random_box(rng)
    tables = _tables_in(box)
    for kind, fn in PER_CLUSTER.items():
        lo, hi = per_cluster_bounds(kind, box)
        vals = np.asarray(fn(tables), dtype=float)
        ok = ~np.isnan(vals)
        assert np.all((vals >= lo[None, :] - TOL) | ~ok), kind
        assert np.all((vals <= hi[None, :] + TOL) | ~ok), kind


@pytest.mark.parametrize("seed", range(40))
def test_bounds_collapse_to_the_value_when_every_count_is_known(seed):
    rng = np.random.default_rng(2000 + seed)
    G, K = int(rng.integers(2, 6)), int(rng.integers(2, 8))
    T = rng.integers(0, 50, size=(G, K))
    T[:, T.sum(axis=0) == 0] = 1
    T[T.sum(axis=1) == 0, :] = 1
    noise = int(rng.integers(0, 20))
    for ordinal in (False, True):
        box = TableBox.exact(T, noise=noise, ordinal=ordinal)
        for metric in sorted(SUPPORTED):
            v = float(_exact(metric, T[None], np.array([noise]), ordinal)[0])
            b = metric_bounds(metric, box, wd_ground="ordinal" if ordinal else "zero-one")
            if math.isnan(v):
                continue
            assert b is not None, metric
            assert b[0] == pytest.approx(v, abs=1e-12) and b[1] == pytest.approx(v, abs=1e-12)


def test_a_hand_computed_balance_bound():
    # cluster 0 holds 1..9 of group A (hidden, primary-like), 100 of group B; cluster 1 is known
    # group sizes A = 50, B = 150 are published, so cluster 1 holds A: 50 - x, B: 50.
    # The cluster sizes are hidden: |0| = 100 + x, |1| = 100 - x + 50.
    lo = np.array([[1, 41], [100, 50]])
    hi = np.array([[9, 49], [100, 50]])
    box = TableBox(lo, hi, np.array([50, 150]), np.array([50, 150]),
                   np.array([101, 91]), np.array([109, 99]), 200, 200)
    b = metric_bounds("balance", box)
    # exact balance over x = 1..9 is worst at x = 1: share of A in cluster 0 = 1/101 against
    # 50/200 = 0.25 -> 0.0396; at x = 9: 9/109 / 0.25 = 0.330 (cluster 1 stays near 0.5)
    vals = [counting.balance_min(np.array([[x, 50 - x], [100, 50]])) for x in range(1, 10)]
    assert b[0] <= min(vals) + TOL and b[1] >= max(vals) - TOL
    # here the box is tight: |0| = x + 100 with the 100 known, so the share of A is x / (x + 100)
    assert b[0] == pytest.approx(1 / 101 / 0.25) == pytest.approx(min(vals))
    assert b[1] == pytest.approx(9 / 109 / 0.25) == pytest.approx(max(vals))


def test_order_blind_wd_has_no_bounds():
    box = TableBox.exact(np.array([[3, 4], [5, 6]]))
    assert metric_bounds("wd", box, wd_ground="fairkm-compat") is None
    assert metric_bounds("not_a_metric", box) is None
