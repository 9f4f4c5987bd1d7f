"""LOFKM's incremental LCD (issue 25): point LCDs from cached in-cluster neighbour lists.

Oracle: after any sequence of membership changes and prototype moves, every member's value is
the metric's own (``_cluster_lcd`` on a fresh k-d tree over the members) bit for bit, and equal
to lists built from scratch — on continuous data, rounded data with exact ties, and duplicated
rows. The refinement gives the same result with the lists as with a full recomputation.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairaudit.cluster import _lcd_lists as ll
from fairaudit.cluster._lcd_sample import SampleLists
from fairaudit.metrics.local_connectivity import _cluster_lcd


def _data(kind: int, n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    if kind == 0:
        return rng.normal(size=(n, d))
    if kind == 1:  # rounded: many exact ties between different rows
        return rng.integers(0, 4, size=(n, d)).astype(float)
    X = rng.normal(size=(n, d))  # copies of rows
    return np.vstack([X, X[rng.integers(0, n, size=n // 2)]])


def _check(X, cl, members, c, t, sample=None):
    got = ll.point_values(X, cl, c, t, 1)
    ref, _ = _cluster_lcd(X[members], c, t, 1)
    np.testing.assert_array_equal(got, ref)
    fresh = ll.build(X, members, t, 1, sample)
    np.testing.assert_array_equal(ll.point_values(X, fresh, c, t, 1), ref)


@pytest.mark.parametrize("from_sample", [False, True])
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), kind=st.integers(0, 2), n=st.integers(8, 300),
       d=st.integers(1, 4), t=st.integers(1, 6), steps=st.integers(1, 6))
def test_incremental_values_are_the_metrics_bit_for_bit(from_sample, seed, kind, n, d, t, steps):
    # from_sample: the lists are filtered from the sample's own (one query over all rows,
    # issue 25), the tree over the members asked only where those are too short
    rng = np.random.default_rng(seed)
    X = _data(kind, n, d, rng)
    n = X.shape[0]
    lab = rng.integers(0, 2, n)
    members = np.flatnonzero(lab == 0)
    c = X.mean(axis=0) + rng.normal(size=d) * 0.2
    sample = SampleLists(X, t, 1) if from_sample else None
    cl = ll.build(X, members, t, 1, sample)
    _check(X, cl, members, c, t, sample)
    for _ in range(steps):
        flip = rng.choice(n, size=int(rng.integers(1, max(2, n // 5))), replace=False)
        lab[flip] = rng.integers(0, 2, flip.size)
        if rng.random() < 0.5:  # a prototype move
            c = c + rng.normal(size=d) * 0.3
        members = np.flatnonzero(lab == 0)
        cl = ll.update(X, cl, members, t, 1)
        np.testing.assert_array_equal(cl.members, members)
        _check(X, cl, members, c, t, sample)


def test_values_for_a_subset_and_small_clusters():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 2))
    for members in (np.array([], dtype=np.int64), np.array([3]), np.array([3, 7]),
                    np.arange(0, 60, 4)):
        cl = ll.build(X, members, 5, 1)
        c = X[members].mean(axis=0) if members.size else np.zeros(2)
        ref, _ = _cluster_lcd(X[members], c, 5, 1)
        np.testing.assert_array_equal(ll.point_values(X, cl, c, 5, 1), ref)
        if members.size > 2:
            pos = np.array([2, 0])
            np.testing.assert_array_equal(ll.point_values(X, cl, c, 5, 1, pos=pos), ref[pos])


def test_a_list_untouched_by_a_move_is_kept():
    # rows far from every row that changes cluster keep their lists: no new query for them
    rng = np.random.default_rng(2)
    X = np.vstack([rng.normal(size=(200, 2)), rng.normal(size=(200, 2)) + 20.0])
    cl = ll.build(X, np.arange(400), 5, 1)
    new = ll.update(X, cl, np.arange(1, 400), 5, 1)  # row 0 leaves
    far = np.arange(200, 399)  # positions of rows 201..399 in the new cluster
    np.testing.assert_array_equal(new.nb[far], cl.nb[far + 1])
    assert not ll.touched(X, cl, far + 1, np.array([0])).any()


def _tables():
    rng = np.random.default_rng(11)
    cont = np.vstack([rng.normal(size=(400, 3)), rng.normal(size=(250, 3)) * 0.6 + 2.0])
    ties = np.vstack([cont, rng.integers(0, 4, size=(150, 3)).astype(float)])
    dup = np.vstack([cont, cont[rng.integers(0, 650, size=300)]])
    return {"continuous": cont, "ties": ties, "copies": dup}


@pytest.mark.parametrize("from_sample", [False, True])
@pytest.mark.parametrize("name", ["continuous", "ties", "copies"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_refinement_with_lists_equals_full_recomputation(name, seed, from_sample, monkeypatch):
    import fairaudit.cluster.lcd_refine as lr

    X = _tables()[name]
    rng = np.random.default_rng(seed)
    C = X[rng.choice(X.shape[0], size=4, replace=False)]
    monkeypatch.setattr(lr, "SAMPLE_LISTS", from_sample)
    _same_refinement(X, C, monkeypatch, INCREMENTAL=False)


def _same_refinement(X, C, monkeypatch, **switch):
    """The refinement of C on X gives the same result with the module's ``switch`` settings."""
    import fairaudit.cluster.lcd_refine as lr

    fast = lr.refine_prototypes(X, C, t=5, min_size=8)
    for name, value in switch.items():
        monkeypatch.setattr(lr, name, value)
    full = lr.refine_prototypes(X, C, t=5, min_size=8)
    np.testing.assert_array_equal(fast.centres, full.centres)
    np.testing.assert_array_equal(fast.labels, full.labels)
    assert (fast.avg_lcd, fast.avg_lcd_start, fast.moves, fast.evaluations, fast.rounds) == (
        full.avg_lcd, full.avg_lcd_start, full.moves, full.evaluations, full.rounds)


def test_lofkm_fit_identical_with_the_old_path(monkeypatch):
    import fairaudit.cluster.lcd_refine as lr
    from fairaudit.cluster import LOFKMeans

    X = _tables()["copies"]
    a = LOFKMeans(4, random_state=0, refine_rows=500).fit(X)
    monkeypatch.setattr(lr, "INCREMENTAL", False)
    b = LOFKMeans(4, random_state=0, refine_rows=500).fit(X)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    assert a.refinement_ == b.refinement_


def test_over_the_memory_budget_the_refinement_recomputes(monkeypatch):
    # lists beyond LIST_BYTES are not kept (refine_rows raised far): the same result
    import fairaudit.cluster.lcd_refine as lr

    X = _tables()["continuous"]
    C = X[[0, 100, 400, 600]]
    fast = lr.refine_prototypes(X, C, t=5, min_size=8)
    monkeypatch.setattr(lr, "LIST_BYTES", 0)
    slow = lr.refine_prototypes(X, C, t=5, min_size=8)
    np.testing.assert_array_equal(fast.centres, slow.centres)
    assert (fast.avg_lcd, fast.moves, fast.evaluations) == (slow.avg_lcd, slow.moves,
                                                            slow.evaluations)


@pytest.mark.parametrize("from_sample", [False, True])
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), kind=st.integers(0, 2), n=st.integers(8, 300),
       t=st.integers(1, 6))
def test_look_up_values_of_a_trial_are_its_values_or_nan(from_sample, seed, kind, n, t):
    # the cheap bound's values: lists of the current members, prototype and size of a trial;
    # every value it gives is the trial's own (the metric's), the rest are NaN (not computed)
    rng = np.random.default_rng(seed)
    X = _data(kind, n, 2, rng)
    n = X.shape[0]
    lab = rng.integers(0, 2, n)
    cur = np.flatnonzero(lab == 0)
    cl = ll.build(X, cur, t, 1, SampleLists(X, t, 1) if from_sample else None)
    ll.point_values(X, cl, X.mean(axis=0), t, 1)  # deepen some lists, as the refinement does
    flip = rng.choice(n, size=int(rng.integers(1, max(2, n // 6))), replace=False)
    lab2 = lab.copy()
    lab2[flip] = 1 - lab2[flip]
    trial = np.flatnonzero(lab2 == 0)
    c = X.mean(axis=0) + rng.normal(size=2) * 0.3
    kept = np.intersect1d(cur, trial)
    pos = np.searchsorted(cur, kept)
    moved = np.setxor1d(cur, trial)
    pos = pos[~ll.touched(X, cl, pos, moved)]
    got = ll.point_values(X, cl, c, t, 1, pos=pos, size=trial.size)
    ref, _ = _cluster_lcd(X[trial], c, t, 1)
    want = ref[np.searchsorted(trial, cur[pos])]
    ok = ~np.isnan(got)
    np.testing.assert_array_equal(got[ok], want[ok])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), kind=st.integers(0, 2), n=st.integers(8, 300),
       t=st.integers(1, 6))
def test_sample_lists_answer_as_a_query_over_the_members(seed, kind, n, t):
    # oracle: brute-force distances. Every answered list holds, in order, the members nearer
    # than its horizon (all of them: its trusted entries), with the tree's distances; the
    # look-up "a moved row inside the horizon" is the brute-force answer where it is known
    rng = np.random.default_rng(seed)
    X = _data(kind, n, 2, rng)
    n = X.shape[0]
    sample = SampleLists(X, t, 1)
    members = np.flatnonzero(rng.random(n) < 0.6)
    if members.size < 2:
        return
    mask = np.zeros(n, dtype=bool)
    mask[members] = True
    q = min(2 * t + 3, members.size)
    g, d, tr, h, ok = sample.lists(mask, members, q, members.size)
    D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2))
    for i in np.flatnonzero(ok):
        x = members[i]
        near = members[D[x, members] < h[i]]
        assert tr[i] >= (members.size if q == members.size else q - 1)
        assert set(g[i, :tr[i]].tolist()) == set(near.tolist()) and tr[i] == near.size
        np.testing.assert_allclose(d[i, :tr[i]], D[x, g[i, :tr[i]]], rtol=1e-12, atol=1e-12)
        assert np.all(np.diff(d[i, :tr[i]]) >= 0)
    moved = np.zeros(n, dtype=bool)
    moved[rng.choice(n, size=max(1, n // 10), replace=False)] = True
    hit, known = sample.touched(members, h, moved)
    want = np.array([(D[x, moved] < hh).any() for x, hh in zip(members, h, strict=True)])
    np.testing.assert_array_equal(hit[known], want[known])


@pytest.mark.parametrize("from_sample", [False, True])
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), kind=st.integers(0, 2), n=st.integers(8, 300),
       d=st.integers(1, 4), t=st.integers(1, 6))
def test_pruned_values_give_the_metrics_maximum(from_sample, seed, kind, n, d, t):
    # prune=True (the cluster's maximum only): every value given is the metric's, the maximum
    # and the first member attaining it are the metric's, and a pruned point is below it
    rng = np.random.default_rng(seed)
    X = _data(kind, n, d, rng)
    members = np.flatnonzero(rng.random(X.shape[0]) < 0.7)
    c = X[members].mean(axis=0) + rng.normal(size=d) * rng.choice([0.0, 0.5, 2.0])
    cl = ll.build(X, members, t, 1, SampleLists(X, t, 1) if from_sample else None)
    got = ll.point_values(X, cl, c, t, 1, prune=True)
    ref, _ = _cluster_lcd(X[members], c, t, 1)
    if members.size == 0:
        return
    kept = ~np.isnan(got)
    np.testing.assert_array_equal(got[kept], ref[kept])
    assert np.nanmax(got) == ref.max()
    assert int(np.nanargmax(got)) == int(np.argmax(ref))
    assert (ref[~kept] < ref.max()).all()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_refinement_with_pruning_equals_without(seed, monkeypatch):
    X = _tables()["ties" if seed == 1 else "copies"]
    rng = np.random.default_rng(seed)
    C = X[rng.choice(X.shape[0], size=4, replace=False)]
    _same_refinement(X, C, monkeypatch, PRUNE=False)
