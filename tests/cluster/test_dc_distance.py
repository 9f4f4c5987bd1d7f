"""dc-distance: merge tree vs a brute-force dense minimax oracle (to 1e-12)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairaudit.cluster.dc_distance import (
    closest_pair,
    core_distances,
    dc_distance_matrix,
    merge_tree,
    mutual_reachability_mst,
)


def brute_dc(X: np.ndarray, min_pts: int) -> np.ndarray:
    """Dense oracle: core distance counts the point itself; minimax path by Floyd-Warshall."""
    X = np.asarray(X, dtype=float)
    n = X.shape[0]
    D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    core = np.sort(D, axis=1)[:, min_pts - 1]
    R = np.maximum(D, np.maximum(core[:, None], core[None, :]))
    np.fill_diagonal(R, 0.0)
    M = R.copy()
    for j in range(n):
        M = np.minimum(M, np.maximum(M[:, j : j + 1], M[j : j + 1, :]))
    return M


def _cases():
    rng = np.random.default_rng(12345)
    out = []
    for t in range(24):
        n = int(rng.integers(2, 90))
        d = int(rng.integers(1, 4))
        X = rng.normal(size=(n, d))
        if t % 3 == 0:
            X = np.round(X)  # many ties
        if t % 4 == 0:
            X = np.vstack([X, X[: max(1, n // 2)]])  # duplicates
        m = int(rng.integers(1, min(9, X.shape[0]) + 1))
        out.append((X, m))
    # well-separated blobs: exercises the per-component refinement
    X = np.vstack([rng.normal(size=(150, 2)), rng.normal(size=(150, 2)) + 30.0])
    out.append((X, 5))
    return out


@pytest.mark.parametrize("algorithm", ["boruvka", "prim"])
@pytest.mark.parametrize("case", range(25))
def test_merge_heights_match_brute_force(algorithm, case):
    X, m = _cases()[case]
    oracle = brute_dc(X, m)
    got = merge_tree(X, m, algorithm=algorithm).dc_matrix()
    np.testing.assert_allclose(got, oracle, rtol=0, atol=1e-12)


@pytest.mark.parametrize("d", [4, 6, 10])
@pytest.mark.parametrize("ties", [False, True])
def test_merge_heights_match_brute_force_in_more_dimensions(d, ties):
    """From 4 dimensions on the k-d trees have larger leaves (``_knn.midpoint_tree``: 32 points,
    sliding-midpoint splits); with more points than a leaf, ties and duplicates, the merge
    heights are still the oracle's."""
    from fairaudit.cluster._knn import midpoint_tree

    rng = np.random.default_rng(100 + d)
    X = np.vstack([rng.normal(size=(200, d)), rng.normal(size=(120, d)) + 6.0])
    if ties:
        X = np.vstack([np.round(X), np.round(X[:40])])
    assert 16 < midpoint_tree(X).leafsize < X.shape[0]
    np.testing.assert_allclose(
        merge_tree(X, 7, algorithm="boruvka").dc_matrix(), brute_dc(X, 7), rtol=0, atol=1e-12
    )


def _far_cases():
    rng = np.random.default_rng(777)
    out = []
    for t in range(6):
        d = int(rng.integers(2, 6))
        k = int(rng.integers(2, 4))
        parts = [
            rng.normal(size=(int(rng.integers(40, 120)), d)) + 25.0 * rng.normal(size=d)
            for _ in range(k)
        ]
        parts.append(rng.uniform(-40, 40, size=(3, d)))  # a little noise between the blobs
        X = np.vstack(parts)
        if t % 2 == 0:
            X = np.round(X, 1)  # ties
        if t % 3 == 0:
            X = np.vstack([X, X[:20]])  # duplicates
        out.append((X, int(rng.integers(2, 8))))
    return out


@pytest.mark.parametrize("case", range(6))
def test_pivot_search_matches_brute_force(pivot_calls, caplog, case):
    """Force the pivot search (far-apart components) on small data: still exact."""
    calls = pivot_calls
    X, m = _far_cases()[case]
    with caplog.at_level("DEBUG", logger="fairaudit.cluster.dc_distance"):
        got = merge_tree(X, m, algorithm="boruvka").dc_matrix()
    assert calls, "the pivot search was not exercised"
    assert "pass 1" in caplog.text, "no pivot pass ran"
    np.testing.assert_allclose(got, brute_dc(X, m), rtol=0, atol=1e-12)


def _spy_stages(monkeypatch, stage: str) -> tuple[list, list]:
    """Wrap Borůvka's ``stage`` (``_resolve_by_balls`` or ``_resolve_by_scans``) and its bitwise
    search: returns (components settled per call of the stage, points per bitwise search)."""
    import fairaudit.cluster._boruvka as bo

    settled, bitwise = [], []
    real_stage, real_bitwise = getattr(bo, stage), bo._resolve_bitwise

    def spy(X, core, batch, *a):
        left = real_stage(X, core, batch, *a)
        settled.append(len(batch) - len(left))
        return left

    def spy_bitwise(X, core, q, *a):
        bitwise.append(q.size)
        return real_bitwise(X, core, q, *a)

    monkeypatch.setattr(bo, stage, spy)
    monkeypatch.setattr(bo, "_resolve_bitwise", spy_bitwise)
    return settled, bitwise


def _tight_blobs(seed: int, d: int, k: int, size: tuple[int, int], noise: int,
                 ties: bool, repeat: int) -> np.ndarray:
    """k blobs of uneven spread (sd 0.05-1.5) and sizes in a 40-wide box, a few noise points;
    with ``ties`` rounded to one decimal and the first ``repeat`` rows repeated."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-20, 20, size=(k, d))
    spread = np.exp(rng.uniform(np.log(0.05), np.log(1.5), size=k)) / np.sqrt(d)
    sizes = rng.integers(size[0], size[1], size=k)
    X = np.vstack([c + s * rng.normal(size=(m, d)) for c, s, m in zip(centres, spread, sizes,
                                                                        strict=True)]
                  + [rng.uniform(-20, 20, size=(noise, d))])
    if ties:
        X = np.vstack([np.round(X, 1), np.round(X[:repeat], 1)])
    return X


@pytest.mark.parametrize("cache", [True, False])
@pytest.mark.parametrize("atom", [1, 5, 64])
@pytest.mark.parametrize("d, ties, seed", [(2, False, 0), (3, True, 1), (6, False, 2),
                                            (10, True, 3)])
def test_ball_bounds_between_many_small_components_match_brute_force(monkeypatch, d, ties,
                                                                      seed, atom, cache):
    """Many tight blobs (issue 38's ``many-small``): the points of Borůvka's components that
    ball bounds between atoms (a component's part of a chunk of the leaf order: one point,
    five, 64) cannot rule out get their lightest edge by a scan of the near atoms only (kept
    from the first bound or recomputed) — still the oracle's merge heights, with ties,
    duplicates, noise points and blobs of uneven spread."""
    import fairaudit.cluster._boruvka as bo
    import fairaudit.cluster._boruvka_scans as bs

    monkeypatch.setattr(bs, "_ATOM_SIZE", atom)
    monkeypatch.setattr(bs, "_PRODUCTS_MIN_DIM", 1)  # (from 8 dimensions by default)
    if not cache:  # the near atoms recomputed for every group instead of kept
        monkeypatch.setattr(bs, "_BALL_CACHE", 0)
    monkeypatch.setattr(bo, "_GLOBAL_CAP", 4)  # blobs go to the searches, not deeper k-NN
    settled, _ = _spy_stages(monkeypatch, "_resolve_by_balls")
    X = _tight_blobs(900 + seed, d, 45, (6, 16), 4, ties, repeat=15)
    got = merge_tree(X, 5, algorithm="boruvka").dc_matrix()
    np.testing.assert_allclose(got, brute_dc(X, 5), rtol=0, atol=1e-12)
    assert sum(settled) > 0, "no component was settled by the ball bounds"


@pytest.mark.parametrize("mode", ["scans", "bitwise", "budget"])
@pytest.mark.parametrize("d, ties, seed", [(2, True, 4), (6, False, 5), (10, True, 6)])
def test_product_scans_after_the_balls_match_brute_force(monkeypatch, mode, d, ties, seed):
    """What the k-NN lists and the ball bounds leave goes to product scans within a budget
    (``_resolve_by_scans``), the rest to the bitwise search: the oracle's merge heights with
    every point sent to the scans (balls off), with none (budget 0: all bitwise), and with a
    budget that splits a round between them; components with no edge known yet included."""
    import fairaudit.cluster._boruvka as bo
    import fairaudit.cluster._boruvka_scans as bs

    monkeypatch.setattr(bo, "_GLOBAL_CAP", 4)
    monkeypatch.setattr(bs, "_BALL_MAX_ATOMS", 0)  # every batch past the balls
    monkeypatch.setattr(bs, "_PRODUCTS_MIN_DIM", 1)  # (from 8 dimensions by default)
    scanned, bitwise = _spy_stages(monkeypatch, "_resolve_by_scans")
    X = _tight_blobs(950 + seed, d, 30, (5, 14), 3, ties, repeat=12)
    n = X.shape[0]
    budget = {"scans": 2**62, "bitwise": 0, "budget": 40 * n}[mode]
    monkeypatch.setattr(bs, "_SCAN_MAX_ENTRIES", budget)
    got = merge_tree(X, 5, algorithm="boruvka").dc_matrix()
    np.testing.assert_allclose(got, brute_dc(X, 5), rtol=0, atol=1e-12)
    if mode == "scans":
        assert sum(scanned) > 0 and not bitwise
    elif mode == "bitwise":
        assert sum(scanned) == 0 and bitwise
    else:
        assert sum(scanned) > 0 and bitwise, (scanned, bitwise)


def test_pivot_search_progress_ends_with_every_point_settled(pivot_calls, caplog):
    """The pivot search's last progress record says every point of the component is settled
    (it said "0 of 0 points ruled out" while the exact search of the rest ran)."""
    X, m = _far_cases()[0]
    with caplog.at_level("INFO", logger="fairaudit.progress"):
        merge_tree(X, m, algorithm="boruvka")
    recs = [r.progress for r in caplog.records
            if getattr(r, "progress", {}).get("task", "").startswith("pivot search")]
    assert pivot_calls and recs
    assert all(r["unit"] == "points settled" and r["total"] > 0 for r in recs)
    assert recs[-1]["done"] == recs[-1]["total"]


def _brute_pair(A, B):
    D = np.sqrt(((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))
    i, j = np.unravel_index(np.argmin(D), D.shape)
    return D[i, j]


@pytest.mark.parametrize("pivots", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_closest_pair_matches_brute_force(monkeypatch, pivots, seed):
    import fairaudit.cluster._bichromatic as dcd

    if pivots:
        monkeypatch.setattr(dcd, "_PIVOT_MIN_QUERY", 8)
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 8))
    A = rng.normal(size=(int(rng.integers(1, 300)), d))
    B = rng.normal(size=(int(rng.integers(1, 300)), d)) + rng.uniform(0, 12) * rng.normal(size=d)
    if seed % 2:
        A, B = np.round(A, 1), np.round(B, 1)  # ties and duplicates
    dist, i, j = closest_pair(A, B)
    assert dist == pytest.approx(_brute_pair(A, B), rel=0, abs=1e-12)
    assert np.linalg.norm(A[i] - B[j]) == pytest.approx(dist, abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(
    na=st.integers(1, 60),
    nb=st.integers(1, 60),
    gap=st.floats(0, 50),
    seed=st.integers(0, 2**31 - 1),
)
def test_closest_pair_property(na, nb, gap, seed):
    import fairaudit.cluster._bichromatic as dcd

    rng = np.random.default_rng(seed)
    A = np.round(rng.normal(size=(na, 3)), 2)
    B = np.round(rng.normal(size=(nb, 3)), 2) + gap
    old = dcd._PIVOT_MIN_QUERY
    dcd._PIVOT_MIN_QUERY = 4  # exercise the pivot search on small sets
    try:
        dist, i, j = closest_pair(A, B)
    finally:
        dcd._PIVOT_MIN_QUERY = old
    assert dist == pytest.approx(_brute_pair(A, B), rel=0, abs=1e-12)
    assert dist == pytest.approx(closest_pair(B, A)[0], abs=0)


def test_core_distance_counts_the_point_itself():
    X = np.array([[0.0], [1.0], [3.0], [7.0]])
    # min_pts = 2: the nearest *other* point
    np.testing.assert_allclose(core_distances(X, 2), [1.0, 1.0, 2.0, 4.0])
    np.testing.assert_allclose(core_distances(X, 1), [0.0, 0.0, 0.0, 0.0])


def test_hand_computed_line():
    # points 0, 1, 3, 7 with min_pts = 2: core = [1, 1, 2, 4]
    # MR edges: (0,1)=1, (1,2)=2, (2,3)=4 -> dc: d(0,1)=1, d(0,2)=2, d(0,3)=4
    X = np.array([[0.0], [1.0], [3.0], [7.0]])
    D = dc_distance_matrix(X, 2)
    expected = np.array([[0, 1, 2, 4], [1, 0, 2, 4], [2, 2, 0, 4], [4, 4, 4, 0]], dtype=float)
    np.testing.assert_allclose(D, expected)


def test_mst_total_weight_matches_dense_prim():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 3))
    a = mutual_reachability_mst(X, 7, algorithm="boruvka")
    b = mutual_reachability_mst(X, 7, algorithm="prim")
    assert a.u.size == 299 and b.u.size == 299
    assert abs(a.weight.sum() - b.weight.sum()) < 1e-9
    np.testing.assert_allclose(np.sort(a.weight), np.sort(b.weight), atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(2, 60),
    m=st.integers(1, 6),
    b=st.integers(1, 4),
    seed=st.integers(0, 2**31 - 1),
)
def test_ultrametric_product_matches_dense(n, m, b, seed):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, 2)), 1)
    m = min(m, n)
    T = merge_tree(X, m)
    D = T.dc_matrix()
    V = rng.normal(size=(n, b))
    np.testing.assert_allclose(T.dc_matmul(V), D @ V, atol=1e-9 * max(1.0, np.abs(D).max()) * n)
    np.testing.assert_allclose(T.dc_matmul(V[:, 0]), D @ V[:, 0], atol=1e-8 * n)
    # ultrametric inequality and symmetry
    assert np.allclose(D, D.T)
    i, j, k = rng.integers(0, n, size=3)
    assert D[i, k] <= max(D[i, j], D[j, k]) + 1e-12


def test_leaf_order_makes_nodes_contiguous():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 2))
    T = merge_tree(X, 4)
    n = T.n
    for t in range(n - 1):
        node = n + t
        s, m = T.node_start[node], T.node_size[node]
        a, b = int(T.linkage[t, 0]), int(T.linkage[t, 1])
        leaves_a = set(T.order[T.node_start[a] : T.node_start[a] + T.node_size[a]].tolist())
        leaves_b = set(T.order[T.node_start[b] : T.node_start[b] + T.node_size[b]].tolist())
        assert set(T.order[s : s + m].tolist()) == leaves_a | leaves_b


@pytest.mark.parametrize(
    ("X", "m", "msg"),
    [
        (np.array([[0.0], [np.nan]]), 1, "NaN"),
        (np.zeros((3, 2)), 0, "min_pts"),
        (np.zeros((3, 2)), 4, "min_pts"),
    ],
)
def test_bad_input(X, m, msg):
    with pytest.raises(ValueError, match=msg):
        merge_tree(X, m)


@pytest.mark.parametrize("ties", [False, True])
def test_merge_tree_does_not_depend_on_row_order(ties):
    """The Borůvka path works over the rows in their k-d tree's leaf order and maps the MST back
    (``dc_distance._boruvka_mst``): the merge heights and the core distances of a shuffled copy
    are those of the original, row for row, bit for bit."""
    rng = np.random.default_rng(5)
    X = (rng.integers(0, 3, size=(1500, 4)).astype(float) if ties
         else rng.normal(size=(1500, 5)) * rng.uniform(0.2, 3.0, size=5))
    shuffle = rng.permutation(X.shape[0])
    a = merge_tree(X, 7, algorithm="boruvka")
    b = merge_tree(X[shuffle], 7, algorithm="boruvka")
    np.testing.assert_array_equal(a.heights(), b.heights())
    np.testing.assert_array_equal(a.core_distances[shuffle], b.core_distances)
    mst = mutual_reachability_mst(X, 7, algorithm="boruvka")
    assert mst.u.size == X.shape[0] - 1
    np.testing.assert_array_equal(np.sort(mst.weight), a.heights())


def _kruskal_reference(n, u, v, w):
    """Plain Kruskal over (weight, u, v) order, keeping the first edge that joins two sets."""
    parent = list(range(n))

    def find(a):
        while parent[a] != a:
            a = parent[a]
        return a

    keep = []
    for e in np.lexsort((v, u, w)).tolist():
        a, b = find(int(u[e])), find(int(v[e]))
        if a != b:
            parent[a] = b
            keep.append(e)
    keep = np.asarray(keep, dtype=np.int64)
    return u[keep], v[keep], w[keep]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("extra", ["repeats", "repeats and cycles"])
def test_kruskal_filter_matches_plain_kruskal(seed, extra):
    """``_boruvka._kruskal_filter``: a spanning tree with repeated edges (both orientations, as
    Borůvka picks them) takes the fast path, one with extra edges (equal weights: tie cycles)
    the union-find pass; both give plain Kruskal's edges, in its order."""
    from fairaudit.cluster._boruvka import _kruskal_filter

    rng = np.random.default_rng(seed)
    n = 400
    v = np.arange(1, n)
    u = (rng.random(n - 1) * v).astype(np.int64)
    w = rng.integers(0, 5, n - 1).astype(float)  # many equal weights
    rep = rng.choice(n - 1, 120, replace=False)
    uu, vv, ww = np.r_[u, v[rep]], np.r_[v, u[rep]], np.r_[w, w[rep]]
    if extra == "repeats and cycles":
        a, b = rng.integers(0, n, 30), rng.integers(0, n, 30)
        ok = a != b
        uu, vv = np.r_[uu, a[ok]], np.r_[vv, b[ok]]
        ww = np.r_[ww, rng.integers(0, 5, int(ok.sum())).astype(float)]
    got = _kruskal_filter(n, uu, vv, ww)
    ref = _kruskal_reference(n, uu, vv, ww)
    for g, r in zip((got.u, got.v, got.weight), ref, strict=True):
        np.testing.assert_array_equal(g, r)


@pytest.mark.parametrize("d", [1, 3, 10])
@pytest.mark.parametrize("min_pts", [1, 4, 21])
def test_repeated_rows_collapse_to_the_same_merge_heights(monkeypatch, caplog, d, min_pts):
    """Many repeated rows (integer codes): the MST is taken over the distinct rows, each copy
    joined to its first row at its core distance (``dc_distance._mst_of_distinct_rows``). The
    dc-distances are the dense oracle's, and the merge heights and core distances those of the
    MST over every row (the collapse switched off), bit for bit."""
    import logging

    from fairaudit.cluster import dc_distance as dc

    rng = np.random.default_rng(40 + d + min_pts)
    base = np.round(rng.normal(size=(70, d)) * 1.5)
    X = base[rng.integers(0, 70, size=420)]  # piles of copies of 70 rows (fewer when they meet)
    X = np.vstack([X, X[:60] + 0.25])  # and a few rows beside them
    with caplog.at_level(logging.DEBUG, logger="fairaudit.cluster.dc_distance"):
        a = merge_tree(X, min_pts, algorithm="boruvka")
    assert any("distinct of" in r.getMessage() for r in caplog.records)
    np.testing.assert_allclose(a.dc_matrix(), brute_dc(X, min_pts), rtol=0, atol=1e-12)
    monkeypatch.setattr(dc, "_DUPLICATE_SHARE", 2.0)  # never collapse
    b = merge_tree(X, min_pts, algorithm="boruvka")
    np.testing.assert_array_equal(a.heights(), b.heights())
    np.testing.assert_array_equal(a.core_distances, b.core_distances)


def test_one_distinct_row():
    """Every row the same: every dc-distance is the (zero) core distance."""
    X = np.ones((50, 3))
    t = merge_tree(X, 5, algorithm="boruvka")
    np.testing.assert_array_equal(t.heights(), np.zeros(49))
    np.testing.assert_array_equal(t.dc_matrix(), brute_dc(X, 5))
