"""LCD-targeted prototype refinement: LOFKM's ``variant="targeted"`` (issue 13).

LOFKM (seed 002, §5) pulls prototypes towards sparsely connected points with LOF weights, to lower
the local connectivity disagreement (LCD, §4.2) of the partition. On standardised, one-hot encoded
tables the weights moved AvgLCD by ±3 % with a spread larger than the mean: the method was not
fairer than its twin (plain k-means) on its own target (docs/reproduction/fair_vs_twin.md).

The refinement aims at the target itself. The worst point X* of a cluster (the member attaining
LCD(C), eq. 7) is poorly connected because its t nearest fellow members that lie towards the
prototype are far off the straight line to it; moving the prototype towards X* shortens
dist(X*, c), which removes neighbours from N_t^C(X*) (eq. 1–2) and lowers LCD(X*, C). A greedy
descent on AvgLCD (eq. 9) therefore tries, cluster by cluster in decreasing order of LCD(C),

    c ← c + a · (X* − c)   for a in ``steps`` (first improving step kept),

re-assigns every row to its nearest prototype (eq. 12: labels and ``predict`` stay consistent) and
keeps the move only when AvgLCD of the whole partition decreases. It stops after a round without
an accepted move or after ``max_rounds`` rounds. A move that would leave a cluster smaller than
``min_size`` rows or larger than ``max_size`` is not tried, so the refinement never makes a
labelling degenerate. Clusters listed in ``frozen`` (those already under ``min_size`` at the
start, e.g. a handful of extreme rows) keep their prototype and exactly their members: a move
that adds a row to one or takes a row from one is not tried, so a small cluster the start had is
neither grown into a less separated one nor emptied. AvgLCD never increases.

Cost: most trial moves are rejected. A trial is first judged on a lower bound of its AvgLCD (the
exact point LCDs of a few members of each changed cluster, :data:`BOUND_ROWS`); only a trial the
bound cannot reject has every member's LCD computed. Same decisions, same result, 3-3.5× less
CPU on Adult's 20,000-row refinement sample (issue 25; docs/benchmarks.md). Those point LCDs come
from neighbour lists kept per cluster across moves (:data:`INCREMENTAL`,
:mod:`fairaudit.cluster._lcd_lists`): a move re-queries only the members whose lists a row that
changed cluster enters; the values are the metric's bit for bit. Those lists are filtered from
the refinement sample's own nearest rows, queried once (:data:`SAMPLE_LISTS`,
:mod:`fairaudit.cluster._lcd_sample`), and a cluster's maximum skips the deeper rounds of the
members that cannot attain it (:data:`PRUNE`); same values, same result (issue 25, fifth pass).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

logger = logging.getLogger(__name__)

STEPS = (0.5, 0.25, 0.1, 0.05, -0.1)
"""Fractions of the way from the prototype to the cluster's worst point (negative: away)."""
BOUND_ROWS = 64
"""Early rejection of a trial move: the point LCDs of this many members per changed cluster (those
with the highest LCD before the move, plus the rows it gains) bound the trial's AvgLCD from below;
when the bound already fails the acceptance test the move is rejected without computing every
member's LCD. The decisions, and so the result, are those of the full computation (tested);
0 switches the bound off."""
INCREMENTAL = True
"""Point LCDs from cached in-cluster neighbour lists (:mod:`fairaudit.cluster._lcd_lists`): a
list is queried again only when a row that joins or leaves its cluster lies inside it, and a
prototype move recomputes the arithmetic alone. The metric's values bit for bit, so the same
decisions and result (tested against ``False``: every member's LCD from a fresh k-d tree per
cluster, as :func:`fairaudit.metrics.lcd` computes it)."""
SAMPLE_LISTS = True
"""The clusters' lists are filtered from the sample's own nearest rows, queried once
(:mod:`fairaudit.cluster._lcd_sample`) instead of asked of a tree per cluster after every move:
the same lists, so the same values and result (tested against ``False``)."""
PRUNE = True
"""LCD(C) from the lists computes past the first round only the points that can attain the
maximum (:func:`fairaudit.cluster._lcd_lists.point_values`, ``prune``): the same maximum and
worst point; the members kept for the lower bounds are the highest computed ones (the bounds
stay bounds, so the decisions are the same; tested against ``False``)."""
LIST_BYTES = 256 * 2**20
"""The lists hold 2 × 2 × (8t + 9) numbers per row (31 MB at 20,000 rows, t = 5); beyond this
budget (``refine_rows`` raised past ~160,000) the refinement recomputes instead (same result)."""


@dataclass(frozen=True)
class Refinement:
    """Prototypes and labels after the refinement, AvgLCD before and after, moves accepted,
    LCD evaluations and rounds (on ``rows`` rows: all, or the seeded evaluation sample)."""

    centres: np.ndarray
    labels: np.ndarray
    avg_lcd_start: float
    avg_lcd: float
    moves: int
    evaluations: int
    rounds: int
    rows: int


def refine_prototypes(
    X: np.ndarray,
    centres: np.ndarray,
    *,
    t: int = 5,
    min_size: int = 1,
    max_size: int | None = None,
    steps: tuple[float, ...] = STEPS,
    max_rounds: int = 6,
    workers: int = 1,
    frozen: tuple[int, ...] = (),
    lists: dict | None = None,
) -> Refinement:
    """Greedy descent of AvgLCD over prototype moves towards each cluster's worst point (module
    docstring). ``X`` (n × d), ``centres`` (k × d); returns the refined centres and the
    nearest-prototype labels of ``X``. ``lists``: a dict left by an earlier call on the same
    ``X`` and ``t`` (its neighbour lists are reused where they still hold; filled in place)."""
    from fairaudit.cluster import _lcd_lists as ll
    from fairaudit.cluster import _lcd_sample as ls
    from fairaudit.cluster import nearest_centre
    from fairaudit.cluster._progress import Progress
    from fairaudit.metrics.local_connectivity import _cluster_lcd

    X = np.asarray(X, dtype=np.float64)
    C = np.array(centres, dtype=np.float64, copy=True)
    k = C.shape[0]
    n = X.shape[0]
    max_size = n if max_size is None else int(max_size)

    scratch = np.empty(n)  # dist(s, c) by row, reused by every list evaluation

    def _summary(rows: np.ndarray, vals: np.ndarray) -> tuple[float, int, np.ndarray]:
        # NaN: a point that cannot attain the maximum (point_values(prune=True)); argsort puts
        # them last
        i = int(np.nanargmax(vals))
        top = rows[np.argsort(-vals, kind="stable")[:BOUND_ROWS]] if BOUND_ROWS else rows[:0]
        return float(vals[i]), int(rows[i]), top

    def lists_for(j: int, rows: np.ndarray, base: dict) -> ll.ClusterLists:
        """Cluster j's lists for the members ``rows``, from ``base[j]`` when there is one."""
        if j in base:
            return ll.update(X, base[j], rows, t, workers)
        return ll.build(X, rows, t, workers, sample)

    def cluster_lcd(lab: np.ndarray, cent: np.ndarray, j: int,
                    base: dict | None = None) -> tuple[float, int, np.ndarray]:
        """LCD(C_j) (eq. 7) and the member attaining it, as ``lcd`` computes them, and the
        members with the highest point LCDs (for the early rejection). With ``base`` (the
        incremental path), the lists used are left in ``base[j]``."""
        rows = np.flatnonzero(lab == j)
        if base is not None:
            cl = base[j] = lists_for(j, rows, base)
            if rows.size == 0:
                return 0.0, -1, rows
            return _summary(rows, ll.point_values(X, cl, cent[j], t, workers, scratch=scratch,
                                                  prune=PRUNE))
        if rows.size == 0:
            return 0.0, -1, rows
        vals, _ = _cluster_lcd(X[rows], cent[j], t, workers)
        return _summary(rows, vals)

    def lower_bound(lab2: np.ndarray, cent: np.ndarray, j: int, gained: np.ndarray) -> float:
        """A lower bound of LCD(C_j) after a move: the largest point LCD among the members that
        had the highest ones before it and the rows it gained (exact point values)."""
        rows = np.flatnonzero(lab2 == j)
        cand = np.union1d(per[j][2], gained)
        cand = cand[np.isin(cand, rows)]  # the top members it kept, and the rows it gained
        if cand.size == 0:
            return 0.0
        pos = np.searchsorted(rows, cand)
        # a fresh tree over the trial's members, one thread (a few dozen rows per query): less
        # work than updating every member's list for a trial the bound may reject
        return float(point_lcd(X[rows], cent[j], pos, t, 1).max())

    def quick_bound(lab: np.ndarray, lab2: np.ndarray, cent: np.ndarray, j: int,
                    moved: np.ndarray) -> float:
        """A lower bound of LCD(C_j) after a move from the current lists alone: the point LCDs
        of the top members it kept whose lists no joining or leaving row enters (a subset of
        :func:`lower_bound`'s rows, so never above it)."""
        assert lists is not None
        cl = lists[j]
        top = per[j][2]
        top = top[lab2[top] == j]
        if top.size == 0:
            return 0.0
        pos = np.searchsorted(cl.members, top)
        mv = np.flatnonzero(moved & ((lab == j) | (lab2 == j)))
        pos = pos[~ll.touched(X, cl, pos, mv)]
        size = int(np.count_nonzero(lab2 == j))
        v = ll.point_values(X, cl, cent[j], t, workers, pos=pos, scratch=scratch, size=size)
        v = v[~np.isnan(v)]
        return float(v.max()) if v.size else 0.0

    lab = nearest_centre(X, C)
    fixed = sorted({int(j) for j in frozen})
    free = np.ones(k, dtype=bool)
    free[fixed] = False
    movable = int(free.sum()) >= 2  # one free cluster alone can only trade rows with frozen ones
    sample = None
    if INCREMENTAL and n * ll.list_bytes(t) <= LIST_BYTES:
        # cluster -> its neighbour lists (for the current labels once computed)
        lists = {} if lists is None else lists
        if SAMPLE_LISTS and n * ls.sample_bytes(t) <= LIST_BYTES:
            # the sample's own lists, queried once; the clusters' lists are filtered from them
            sample = lists.get("sample")
            if sample is None:
                sample = lists["sample"] = ls.SampleLists(X, t, workers)
    else:
        lists = None
    per = [cluster_lcd(lab, C, j, lists) for j in range(k)]
    present = np.bincount(lab, minlength=k) > 0
    start = best = float(np.mean([per[j][0] for j in range(k) if present[j]]))
    evaluations, moves, rounds = 1, 0, 0
    tol = 1e-12 * max(1.0, abs(best))
    progress = Progress("LOFKM refinement", int(max_rounds), "rounds")
    while rounds < int(max_rounds):
        progress.update(rounds)
        rounds += 1
        improved = False
        order = np.argsort(-np.array([v[0] for v in per]), kind="stable")
        for c in order:
            c = int(c)
            worst = per[c][1]
            if worst < 0 or not free[c] or not movable:
                continue
            for a in steps:
                trial = C.copy()
                trial[c] = C[c] + a * (X[worst] - C[c])
                lab2 = nearest_centre(X, trial)
                sizes = np.bincount(lab2, minlength=k)
                if sizes[free].min() < min_size or sizes.max() > max_size:
                    continue
                # only the moved cluster and the clusters that gained or lost rows change
                moved = lab2 != lab
                if fixed and (np.isin(lab[moved], fixed).any()
                              or np.isin(lab2[moved], fixed).any()):
                    continue
                changed = {c, *np.unique(lab[moved]).tolist(), *np.unique(lab2[moved]).tolist()}
                lists2 = None if lists is None else {}  # the trial's lists, by cluster
                if BOUND_ROWS and lists is not None:
                    # the same test on a weaker bound that needs no new tree: rejects a subset
                    # of what the bound below rejects, at a fraction of its cost
                    vals = [per[j][0] for j in range(k)]
                    for j in changed:
                        if sizes[j] > 0:
                            vals[j] = quick_bound(lab, lab2, trial, j, moved)
                    bound = float(np.mean([vals[j] for j in range(k) if sizes[j] > 0]))
                    if not bound < best - tol:
                        evaluations += 1
                        continue
                if BOUND_ROWS:
                    # early rejection: exact values of the unchanged clusters, lower bounds of
                    # the changed ones; fails the test below => the full values fail it too
                    gained_all = np.flatnonzero(moved)
                    vals = [per[j][0] for j in range(k)]
                    for j in changed:
                        if sizes[j] > 0:
                            vals[j] = lower_bound(lab2, trial, j,
                                                  gained_all[lab2[gained_all] == j])
                    bound = float(np.mean([vals[j] for j in range(k) if sizes[j] > 0]))
                    if not bound < best - tol:
                        evaluations += 1
                        continue
                per2 = list(per)
                for j in changed:
                    if lists2 is not None and j not in lists2:
                        lists2[j] = lists_for(j, np.flatnonzero(lab2 == j), lists)
                    per2[j] = cluster_lcd(lab2, trial, j, lists2)
                evaluations += 1
                avg = float(np.mean([per2[j][0] for j in range(k) if sizes[j] > 0]))
                if avg < best - tol:
                    C, lab, per, best = trial, lab2, per2, avg
                    if lists is not None:
                        lists.update(lists2)
                    moves += 1
                    improved = True
                    break
        if not improved:
            break
    progress.close(rounds)
    logger.info("LCD refinement: AvgLCD %.6g -> %.6g (%d moves, %d evaluations, %d rounds)",
                start, best, moves, evaluations, rounds)
    return Refinement(C, lab.astype(np.int64), start, best, moves, evaluations, rounds, n)


def point_lcd(Y: np.ndarray, c: np.ndarray, rows: np.ndarray, t: int, workers: int) -> np.ndarray:
    """LCD(X, C) of the members ``rows`` of one cluster (rows of ``Y``, prototype ``c``): the
    values :func:`fairaudit.metrics.local_connectivity._cluster_lcd` gives those rows, bit for
    bit, without asking the other members' neighbours."""
    from fairaudit.metrics.local_connectivity import _cluster_lcd

    return _cluster_lcd(Y, c, t, workers, rows=rows)[0]



TABLE_CHECK = True
"""On more rows than it judged, LOFKM keeps the first refined result whose whole-table AvgLCD is
below the twin's, or the twin's solution when each is higher (:func:`whole_table_choice`). ``False``: the sample's
best refined result, unchecked, as before 2026-11-27 (for the benchmarks and tests that show
what the check changes)."""


@dataclass(frozen=True)
class TableChoice:
    """The whole-table comparison of refined results with the twin's solution: the index of the
    candidate kept (-1: the twin's solution), the kept partition's exact AvgLCD on the table,
    the twin's, and every candidate's."""

    kept: int
    avg_lcd: float
    twin_avg_lcd: float
    candidates: tuple[float, ...]


def whole_table_choice(X: np.ndarray, candidates: list[tuple[np.ndarray, np.ndarray]],
                       twin_centres: np.ndarray, twin_labels: np.ndarray, *, t: int = 5,
                       workers: int = 1) -> TableChoice:
    """The first of ``candidates`` ((centres, labels), in order of preference) whose AvgLCD on
    all of ``X`` is below the twin's (``twin_centres``, ``twin_labels``); when none is, the
    lowest of those equal to it, else the twin's solution. A candidate after the first below
    the twin is not computed (each costs a pass over the table). The values are those
    :func:`fairaudit.metrics.lcd` gives, bit for bit (its per-cluster maxima,
    :func:`fairaudit.metrics.local_connectivity.cluster_maxima`, averaged in its order), so
    the comparison is exact. A cluster with the same prototype and members as the twin's is
    computed once. A candidate equal to the twin's AvgLCD is kept before the twin's."""
    from fairaudit.metrics.local_connectivity import cluster_maxima

    twin_labels = np.asarray(twin_labels, dtype=np.int64)
    ids_t = np.unique(twin_labels)
    val_t = cluster_maxima(X, twin_labels, twin_centres, t, workers=workers)[0]
    avg_t = float(val_t.mean())
    avgs = []
    for centres, labels in candidates:
        labels = np.asarray(labels, dtype=np.int64)
        ids = np.unique(labels)
        val = np.zeros(ids.size)
        same = np.array([j in ids_t and j < twin_centres.shape[0]
                         and np.array_equal(centres[j], twin_centres[j])
                         and np.array_equal(labels == j, twin_labels == j) for j in ids],
                        dtype=bool)
        val[same] = val_t[np.searchsorted(ids_t, ids[same])]
        if not same.all():
            val[~same] = cluster_maxima(X, labels, centres, t, workers=workers,
                                        clusters=ids[~same])[0]
        avgs.append(float(val.mean()))
        if avgs[-1] < avg_t:
            break
    best = int(np.argmin(avgs)) if avgs else -1  # the first of equal values
    if best >= 0 and avgs[best] <= avg_t:
        return TableChoice(best, avgs[best], avg_t, tuple(avgs))
    return TableChoice(-1, avg_t, avg_t, tuple(avgs))
