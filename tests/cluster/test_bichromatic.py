"""The product search of the Borůvka pivot search (``_bichromatic``) against brute force, and the
merge tree it serves against a dense Prim oracle on mutual reachability (far-apart components,
ties, 2 and 10 dimensions, small product blocks so that every block and thread path runs)."""

from __future__ import annotations

import numpy as np
import pytest

import fairaudit.cluster._bichromatic as bc
from fairaudit.cluster.dc_distance import merge_tree, mutual_reachability_mst


@pytest.fixture
def small_blocks(monkeypatch):
    """Products of 3 rows × 16 points: many blocks, and threads over column ranges."""
    monkeypatch.setattr(bc, "_ROWS", 3)
    monkeypatch.setattr(bc, "_COLS", 16)


def _brute_reach(X, core, rows, others):
    D = np.linalg.norm(X[rows][:, None, :] - X[others][None, :, :], axis=-1)
    return D, np.maximum(np.maximum(D, core[others][None, :]), core[rows][:, None])


def _table(X, use):
    """A :class:`~bc.ScanTable` of X (the Borůvka rounds' shared operands) or None."""
    return bc.ScanTable(X) if use else None


@pytest.mark.parametrize("use_table", [False, True])
@pytest.mark.parametrize("d", [1, 2, 10])
@pytest.mark.parametrize("seed", range(4))
def test_nearest_lower_bound(small_blocks, d, seed, use_table):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, d))
    X[150:] += 8.0
    if seed % 2:
        X = np.round(X, 1)  # ties and duplicates
    rows = np.arange(0, 150, 3)
    others = np.arange(150, 300)
    g_lb, q = bc.nearest_lower_bound(X, rows, others, workers=2, table=_table(X, use_table))
    D, _ = _brute_reach(X, np.zeros(300), rows, others)
    g = D.min(axis=1)
    scale = np.sqrt(bc._REL * 2 * (np.abs(X).max() * 2) ** 2 * d)
    assert np.all(g_lb <= g)  # a lower bound ...
    assert np.all(g - g_lb <= scale)  # ... within the margin
    assert np.all(np.isin(q, others))
    dq = np.linalg.norm(X[rows] - X[q], axis=1)
    assert np.all(dq - g <= scale)  # a near-nearest point


def _two_sets(d, seed, shift):
    """260 points in two sets of 130 ``shift`` apart; odd seeds rounded (exact ties), seeds
    from 2 on rounded core distances."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(260, d))
    X[130:] += shift
    if seed % 2:
        X = np.round(X)  # many exact ties
    core = rng.uniform(0, 1.5, size=260)
    if seed % 10 >= 2:
        core = np.round(core, 1)
    rows = np.arange(130)
    others = np.arange(130, 260)
    return X, core, rows, others, _brute_reach(X, core, rows, others)[1]


def _far_points(d):
    """40 points 30 away from the test sets: rows of the table's point set that no scan reads,
    which move its mean away from the scanned subsets."""
    return np.random.default_rng(99).normal(size=(40, d)) + 30.0


@pytest.mark.parametrize("use_table", [False, True])
@pytest.mark.parametrize("d", [2, 10])
@pytest.mark.parametrize("seed", range(4))
def test_lightest_below_is_exact(small_blocks, d, seed, use_table):
    X, core, rows, others, R = _two_sets(d, 10 + seed, 2.5)
    if use_table:  # the sets far from the table's mean: its margin must still hold
        X = np.vstack([X, _far_points(d)])
    U = float(np.quantile(R.min(axis=1), 0.5))
    r, q = bc.lightest_below(X, core, rows, others, U, workers=2, table=_table(X, use_table))
    want = R.min(axis=1)
    below = want < U
    np.testing.assert_array_equal(r[below], want[below])  # exact, same formula
    assert np.all(np.isinf(r[~below])) and np.all(q[~below] == -1)
    # ties: the smallest index among the lightest
    for t in np.flatnonzero(below):
        assert q[t] == others[np.flatnonzero(R[t] == want[t])[0]]



def test_scan_table_of_another_point_set_is_refused():
    X = np.random.default_rng(0).normal(size=(50, 3))
    with pytest.raises(ValueError, match="another point set"):
        bc.lightest_below(X, np.zeros(50), np.arange(5), np.arange(5, 50), 10.0,
                          table=bc.ScanTable(X[:, :2]))



@pytest.mark.parametrize("use_table", [False, True])
@pytest.mark.parametrize("d", [2, 10])
@pytest.mark.parametrize("seed", range(6))
def test_lightest_below_ties_at_a_rows_core_distance(small_blocks, d, seed, use_table):
    # rows whose core distance exceeds most of their distances to the other set: all those
    # edges weigh exactly core(p) and tie; the smallest partner index wins, whatever the order
    # of ``others`` (shuffled here). Some core distances are set to an exact distance of the
    # row (a pair on the boundary of the tie) and some partners' core distances to the row's.
    rng = np.random.default_rng(100 + seed)
    X, core, rows, others, _ = _two_sets(d, seed, 0.8)
    D = np.linalg.norm(X[rows][:, None, :] - X[others][None, :, :], axis=-1)
    q_at = rng.integers(0, others.size, size=rows.size)
    core[rows] = np.where(rng.random(rows.size) < 0.5, D[np.arange(rows.size), q_at],
                          np.sort(D, axis=1)[np.arange(rows.size),
                                             rng.integers(40, 90, size=rows.size)])
    twin = rng.choice(others.size, size=others.size // 4, replace=False)
    core[others[twin]] = core[rng.choice(rows, size=twin.size)]
    others = rng.permutation(others)
    R = _brute_reach(X, core, rows, others)[1]
    want = R.min(axis=1)
    U = float(want.max()) * 1.01 + 1e-9
    if use_table:
        X = np.vstack([X, _far_points(d)])
    for lightest_only in (False, True):
        r, q = bc.lightest_below(X, np.r_[core, np.zeros(X.shape[0] - core.size)], rows,
                                 others, U, workers=2, lightest_only=lightest_only,
                                 table=_table(X, use_table))
        at = want == want.min() if lightest_only else np.ones(rows.size, dtype=bool)
        np.testing.assert_array_equal(r[at], want[at])
        assert np.all(q[~at] == -1)
        for t in np.flatnonzero(at):
            assert q[t] == others[R[t] == want[t]].min()


@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (1, 1), (7, 3), (128, 700)])
@pytest.mark.parametrize("share", [0.0, 0.001, 0.5, 1.0])
@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_nonzero2_is_numpys_nonzero(shape, share, layout):
    # the scans' row-major (row, column) pairs, in np.nonzero's order and dtype
    m = np.random.default_rng(len(shape) + shape[0]).random(shape) < share
    if layout == "F":
        m = np.asfortranarray(m)
    elif layout == "strided":
        m = np.repeat(m, 2, axis=1)[:, ::2]
    want, got = np.nonzero(m), bc.nonzero2(m)
    assert len(got) == 2
    for w, g in zip(want, got, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)

@pytest.mark.parametrize("use_table", [False, True])
@pytest.mark.parametrize("d", [2, 10])
@pytest.mark.parametrize("seed", range(4))
def test_lightest_only_gives_the_minimum_and_every_row_reaching_it(small_blocks, d, seed,
                                                                   use_table):
    # issue 38: the limits drop to the lightest edge any row found; the rows whose lightest
    # edge is the minimum get it (ties: every such row, the smallest partner), the rest none
    X, core, rows, others, R = _two_sets(d, 20 + seed, 0.8)  # close: many pairs within U
    want = R.min(axis=1)
    U = float(np.quantile(want, 0.9))
    if use_table:
        X = np.vstack([X, _far_points(d)])
    r, q = bc.lightest_below(X, core, rows, others, U, workers=2, lightest_only=True,
                             table=_table(X, use_table))
    m = want.min()
    at = want == m
    np.testing.assert_array_equal(r[at], want[at])
    assert np.all(np.isinf(r[~at])) and np.all(q[~at] == -1)
    for t in np.flatnonzero(at):
        assert q[t] == others[np.flatnonzero(R[t] == m)[0]]


def _prim_mr(X, min_pts):
    """Dense Prim's algorithm on mutual reachability (core counts the point itself)."""
    n = X.shape[0]
    D = np.linalg.norm(X[:, None, :] - X[None, :, :], axis=-1)
    core = np.sort(D, axis=1)[:, min_pts - 1]
    R = np.maximum(D, np.maximum(core[:, None], core[None, :]))
    in_tree = np.zeros(n, dtype=bool)
    in_tree[0] = True
    best = R[0].copy()
    w = []
    for _ in range(n - 1):
        b = np.where(in_tree, np.inf, best)
        j = int(np.argmin(b))
        w.append(b[j])
        in_tree[j] = True
        best = np.minimum(best, R[j])
    return np.sort(np.array(w))


def _far_blobs(d, seed, ties):
    rng = np.random.default_rng(seed)
    parts = [rng.normal(size=(int(rng.integers(60, 160)), d)) + 12.0 * rng.normal(size=d)
             for _ in range(int(rng.integers(2, 5)))]
    parts.append(rng.uniform(-30, 30, size=(4, d)))  # noise between the blobs
    X = np.vstack(parts)
    if ties:
        X = np.vstack([np.round(X), np.round(X[:25])])
    return X


@pytest.mark.parametrize("d", [2, 10])
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_pivot_search_matches_dense_prim(pivot_calls, small_blocks, d, ties, seed):
    """MST weights (sorted) and merge heights equal a dense Prim on mutual reachability, with
    the pivot search forced onto small components far apart."""
    calls = pivot_calls
    X = _far_blobs(d, 40 + seed, ties)
    m = 5
    want = _prim_mr(X, m)
    mst = mutual_reachability_mst(X, m, algorithm="boruvka")
    assert calls, "the pivot search was not exercised"
    np.testing.assert_allclose(np.sort(mst.weight), want, rtol=0, atol=1e-12)
    assert mst.weight.sum() == pytest.approx(want.sum(), rel=1e-14)
    np.testing.assert_allclose(merge_tree(X, m, algorithm="boruvka").heights(), want, atol=1e-12)
