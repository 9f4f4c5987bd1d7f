"""The hypercube method of complementary suppression, on a table of counts of any dimension.

Used by :mod:`fairaudit.disclosure` (which explains the method and the guarantee). A *cube* is
the table of counts per (group of every sensitive attribute, cluster) with noise as the last
cluster level; a :class:`Spec` is one of its published marginals. :func:`protect_cube` marks
every primary entry (``1 <= count < min_cell``) suppressed and, for each, the entries of the
cheapest hypercubes (signed corner patterns that keep every published sum unless they must be
suppressed) that let the entry move down by 1 and up to ``min_cell``. numpy only, no I/O.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["MAX_CUBE_CELLS", "MAX_PRIMARIES", "Cube", "Infeasible", "Spec", "labelling_specs",
           "protect_cube", "published_attr_sets", "totals_cube", "totals_specs"]

MAX_PRIMARIES = 3_000
"""Above this many primary cells in one cube the caller withholds its counts wholesale."""
MAX_CUBE_CELLS = 5_000_000
_CANDIDATES = 3
_SMALL_CANDIDATES = 3
_STRATEGY = "value"
"""``"value"``: cubes are chosen by the people they hide; ``"legacy"``: by the number of new
suppressions among the largest levels, without the pruning pass (kept for
``benchmarks/bench_suppression.py``, which compares both in one run)."""
_PRUNE_LEVELS = 8
"""Levels per axis the pruning pass looks at: those next to suppressed entries (its cubes only
use entries that are suppressed already; tables with at most ``_WIDE_PRUNE`` primaries)."""
_WIDE_PRUNE = 100
_MANY_PRIMARIES = 300
"""Above this many primary cells, one small partner level per axis (the search stays fast)."""
_PRUNE_BUDGET = 2_000
"""Searches the pruning pass may spend on one cube (it stops early beyond that)."""


# ============================================================================ the cube
@dataclass(frozen=True)
class Spec:
    """A published marginal: ``attrs`` kept (cube axes), cluster axis ``each`` (kept), ``all``
    (summed) or ``clean`` (summed over the non-noise levels)."""

    attrs: tuple[int, ...]
    mode: str


@dataclass
class Cube:
    X: np.ndarray                    # (G_1, ..., G_d, K) counts; the last level is noise
    specs: list[Spec]
    noise: int | None                # index of the noise level on the cluster axis
    supp: dict[Spec, np.ndarray] = field(default_factory=dict)
    values: dict[Spec, np.ndarray] = field(default_factory=dict)
    _axis_sizes: dict[int, np.ndarray] = field(default_factory=dict)

    def axis_sizes(self, axis: int) -> np.ndarray:
        if axis not in self._axis_sizes:
            other = tuple(j for j in range(self.X.ndim) if j != axis)
            self._axis_sizes[axis] = self.X.sum(axis=other)
        return self._axis_sizes[axis]

    @property
    def d(self) -> int:
        return self.X.ndim - 1

    def marginal(self, spec: Spec) -> np.ndarray:
        drop = tuple(j for j in range(self.d) if j not in spec.attrs)
        Y = self.X.sum(axis=drop) if drop else self.X
        if spec.mode == "each":
            return Y
        if spec.mode == "all":
            return Y.sum(axis=-1)
        return Y.sum(axis=-1) - (Y[..., self.noise] if self.noise is not None else 0)

    def spec_index(self, spec: Spec, idx: Sequence[int]) -> tuple[int, ...] | None:
        """Where cube cell ``idx`` lands in ``spec`` (None: outside it, e.g. noise in clean)."""
        if spec.mode == "clean" and idx[-1] == self.noise:
            return None
        out = tuple(int(idx[j]) for j in spec.attrs)
        return out + (int(idx[-1]),) if spec.mode == "each" else out

    def init(self) -> None:
        for s in self.specs:
            v = self.marginal(s)
            self.values[s] = v
            self.supp.setdefault(s, np.zeros(v.shape, dtype=bool))


def published_attr_sets(d: int) -> list[tuple[int, ...]]:
    sets = [(j,) for j in range(d)]
    if d >= 2:
        sets.append(tuple(range(d)))
    return sets


def labelling_specs(d: int, has_noise: bool) -> list[Spec]:
    out = []
    for R in published_attr_sets(d):
        out += [Spec(R, "each"), Spec(R, "all")]
        if has_noise:
            out.append(Spec(R, "clean"))
    out.append(Spec((), "each"))
    return out


def totals_specs(d: int) -> list[Spec]:
    return [Spec(R, "all") for R in published_attr_sets(d)]


# ============================================================================ the search
class Infeasible(Exception):
    pass


def _primaries(cube: Cube, mc: int) -> list[tuple[Spec, tuple[int, ...], int]]:
    out = []
    for s in cube.specs:
        if s.attrs == () and s.mode != "each":
            continue  # totals of the whole table: not a cell about a group
        v = cube.values[s]
        for idx in zip(*np.nonzero((v >= 1) & (v < mc)), strict=True):
            out.append((s, tuple(int(i) for i in idx), int(v[idx])))
    # the finest cells first: their cubes often protect the coarser ones as well
    out.sort(key=lambda p: (-len(p[0].attrs), p[0].mode != "each", p[2]))
    return out


def _candidates(cube: Cube, axis: int, base: int, k: int, *,
                spec: Spec | None = None, idx: tuple[int, ...] | None = None,
                need: int = 0, small: int = _SMALL_CANDIDATES,
                supp_only: bool = False) -> list[int]:
    """Alternative levels of ``axis`` for a cube around ``spec[idx]``: the ``k`` largest levels
    (room for sure) and, unless the legacy choice is asked for, the levels whose neighbouring
    entry of ``spec`` is the smallest one that still gives the room needed (``>= need``), then
    the largest of those that give less. Small partners hide fewer people and leave narrower
    ranges than large ones (tau-ARGUS and sdcTable weigh a cell by its value). ``supp_only``
    (the pruning pass): the levels whose neighbouring entry is suppressed (a cube through any
    other level changes a published entry of ``spec`` itself), at most ``_PRUNE_LEVELS``."""
    size = cube.axis_sizes(axis)
    order = [int(i) for i in np.argsort(-size, kind="stable") if int(i) != base]
    out = order[:k]
    if _STRATEGY == "legacy" or spec is None or idx is None:
        return out
    if axis in spec.attrs:
        pos = spec.attrs.index(axis)
    elif axis == cube.d and spec.mode == "each":
        pos = len(idx) - 1
    else:
        return out
    v = cube.values[spec]
    j = list(idx)
    if supp_only:
        hidden = cube.supp[spec]
        out = []
        for lv in order:
            j[pos] = lv
            if hidden[tuple(j)]:
                out.append(lv)
        return out[:_PRUNE_LEVELS]
    scored = []
    for lv in order:
        j[pos] = lv
        n = int(v[tuple(j)])
        if n > 0:
            scored.append((0 if n >= need else 1, n if n >= need else -n, lv))
    scored.sort()
    for _, _, lv in scored[:small]:
        if lv not in out:
            out.append(lv)
    return out


def _induced(cube: Cube, pattern: Mapping[tuple[int, ...], int]) -> list[tuple[Spec, tuple]]:
    """Published entries a signed cube pattern changes (they must be suppressed)."""
    out = []
    noise = cube.noise
    for s in cube.specs:  # inlined :meth:`Cube.spec_index` (the search's inner loop)
        acc: dict[tuple, int] = {}
        attrs, each, clean = s.attrs, s.mode == "each", s.mode == "clean"
        for idx, sign in pattern.items():
            if clean and idx[-1] == noise:
                continue
            j = tuple([idx[a] for a in attrs] + [idx[-1]]) if each else tuple(
                idx[a] for a in attrs)
            acc[j] = acc.get(j, 0) + sign
        out += [(s, j) for j, v in acc.items() if v != 0]
    return out


@dataclass
class _Sub:
    """One hypercube: its signed corners, its room up and down, its negative corners and the
    published entries it changes."""

    pattern: dict[tuple[int, ...], int]
    up: int
    down: int
    neg: frozenset
    induced: list
    cost: float
    alternates: dict[int, int]
    level: tuple[int, ...]
    free: tuple[int, ...]


_TOP_LEVELS = 8


def _weight(cube: Cube, spec: Spec) -> int:
    """Cost of suppressing one more entry. A table that already has a suppressed count has its
    values withheld anyway, so more there is cheap; the first suppression in a table that has
    none withholds that attribute's metrics, so it is dear (dearer for a single attribute than
    for the intersection). Cluster sizes withhold no metric value."""
    if not spec.attrs:
        return 8
    dirty = any(bool(cube.supp[s].any()) for s in cube.specs if s.attrs == spec.attrs)
    if len(spec.attrs) == cube.d:
        return 1 if dirty else 20
    return 2 if dirty else 40


def _cost(cube: Cube, induced: list[tuple[Spec, tuple]]) -> float:
    """What suppressing a cube's new entries costs: each entry's table weight (:func:`_weight`)
    times ``1 + log2(1 + value)`` (legacy: the weight alone). Entries already suppressed are
    free, so a cube that changes only suppressed entries costs 0."""
    if _STRATEGY == "legacy":
        return sum(_weight(cube, s) for s, e in induced if not cube.supp[s][e])
    return sum(_weight(cube, s) * (1.0 + math.log2(1.0 + float(cube.values[s][e])))
               for s, e in induced if not cube.supp[s][e])


def _subcubes(cube: Cube, varied: list[int], fixed: Mapping[int, int],
              alts: list[list[int]], exclude_level: Mapping[int, int] | None = None,
              need: int = 0) -> list[_Sub]:
    free = tuple(a for a in range(cube.X.ndim) if a not in fixed)
    shape_free = [cube.X.shape[a] for a in free]
    grids = np.indices(shape_free).reshape(len(free), -1) if free else np.zeros((0, 1), int)
    for a, lv in (exclude_level or {}).items():
        grids = grids[:, grids[free.index(a)] != lv]
    n_lv = grids.shape[1]
    if n_lv == 0:
        return []
    out: list[_Sub] = []
    for combo in itertools.product(*alts):
        corners = []
        for bits in itertools.product((0, 1), repeat=len(varied)):
            index = []
            for a in range(cube.X.ndim):
                if a in varied and bits[varied.index(a)]:
                    index.append(np.full(n_lv, combo[varied.index(a)]))
                elif a in fixed:
                    index.append(np.full(n_lv, fixed[a]))
                else:
                    index.append(grids[free.index(a)])
            corners.append((sum(bits) % 2, tuple(index)))
        vals = np.stack([cube.X[ix] for _, ix in corners])
        neg = np.array([p == 1 for p, _ in corners])
        up = vals[neg].min(axis=0)
        down = vals[~neg].min(axis=0)
        keep = set(np.argsort(-up, kind="stable")[:_TOP_LEVELS].tolist())
        keep |= set(np.argsort(-down, kind="stable")[:2].tolist())
        if _STRATEGY != "legacy":  # the smallest levels that give the room needed
            enough = np.flatnonzero(up >= max(need, 1))
            keep |= set(enough[np.argsort(up[enough], kind="stable")[:_TOP_LEVELS]].tolist())
        for j in sorted(keep):
            if up[j] <= 0 and down[j] <= 0:
                continue
            pattern: dict[tuple[int, ...], int] = {}
            negs = []
            for p, ix in corners:
                key = tuple(int(c[j]) for c in ix)
                pattern[key] = pattern.get(key, 0) + (-1 if p else 1)
                if p:
                    negs.append(key)
            induced = _induced(cube, pattern)
            out.append(_Sub(pattern, int(up[j]), int(down[j]), frozenset(negs), induced,
                            _cost(cube, induced),
                            dict(zip(varied, combo, strict=True)),
                            tuple(int(grids[free.index(a), j]) for a in free), free))
    return out


def _search(cube: Cube, spec: Spec, idx: tuple[int, ...], x: int, mc: int, *,
            forced: _Sub | None = None, single: bool = False,
            totals_free: bool = False, free_only: bool = False,
            cache: dict | None = None, small_max: int = _SMALL_CANDIDATES) -> list[_Sub]:
    """Hypercubes protecting the primary ``spec[idx] = x``: one with room down >= 1, and
    (with disjoint negative corners, so their rooms add up) room up >= min_cell - x.
    Among the candidates the cheapest (fewest new suppressions, weighed by what they hide,
    per unit of room) win. ``free_only``: only cubes whose entries are all suppressed already
    (the pruning pass). ``small_max``: at most this many small partner levels per axis (fewer
    on big tables, for speed). ``cache`` keeps the candidate cubes per primary (they depend on the
    counts only; their costs on what is suppressed)."""
    need = mc - x
    key = (spec, idx)
    if cache is not None and key in cache:
        subs = cache[key]
        if free_only:
            subs = [s for s in subs if all(cube.supp[s2][e] for s2, e in s.induced)]
            for sub in subs:
                sub.cost = 0
        else:
            for sub in subs:
                sub.cost = _cost(cube, sub.induced)
        return _pick(cube, subs, need, single)
    ax_c = cube.d
    fixed = {a: idx[i] for i, a in enumerate(spec.attrs)}
    if spec.mode == "each":
        fixed[ax_c] = idx[-1]
    subs: list[_Sub] = []
    if forced is not None:  # the attribute corners of a linked totals table; clusters free
        fx = dict(fixed)
        fx.update({a: forced.level[i] for i, a in enumerate(forced.free) if a < ax_c})
        varied = sorted(forced.alternates)
        subs = _subcubes(cube, varied, fx, [[forced.alternates[a]] for a in varied], need=need)
    elif spec.mode == "clean":
        varied = list(spec.attrs) + [ax_c]
        alts = [_candidates(cube, a, fixed[a], _CANDIDATES, spec=spec, idx=idx, need=need)
                for a in spec.attrs] + [[cube.noise]]
        if all(alts):
            subs = _subcubes(cube, varied, fixed, alts, {ax_c: cube.noise}, need=need)
    else:
        kept = list(spec.attrs) + ([ax_c] if spec.mode == "each" else [])
        # every non-empty subset of the kept axes: all of them is the classic hypercube (it
        # changes no coarser table); fewer axes give more room but change coarser tables,
        # whose entries are then suppressed too. Without the cluster axis a cube moves group
        # totals: only when no other labelling shares them (``totals_free``).
        for r in range(len(kept), 0, -1):
            for varied in itertools.combinations(kept, r):
                if spec.mode == "each" and ax_c not in varied and not totals_free:
                    continue
                # fewer small levels per axis when more axes vary (the cubes multiply)
                small = max(0, min(small_max, _SMALL_CANDIDATES + 1 - r))
                alts = [_candidates(cube, a, fixed[a], _CANDIDATES, spec=spec, idx=idx,
                                    need=need, small=small, supp_only=small_max < 0)
                        for a in varied]
                if all(alts):
                    subs += _subcubes(cube, list(varied), fixed, alts, need=need)
    if cache is not None:
        cache[key] = subs
    if free_only:
        subs = [s for s in subs if s.cost == 0]
    return _pick(cube, subs, need, single)


def _pick(cube: Cube, subs: list[_Sub], need: int, single: bool) -> list[_Sub]:
    """The cheapest cubes among ``subs`` that give room down 1 and up ``need``."""
    if single:
        ok = [s for s in subs if s.down >= 1 and s.up >= need]
        if not ok:
            raise Infeasible
        return [min(ok, key=lambda s: (s.cost, -s.up))]
    downs = [s for s in subs if s.down >= 1]
    if not downs:
        raise Infeasible
    first = min(downs, key=lambda s: (s.cost, -s.up))
    chosen = [first]
    used: dict[tuple[int, ...], int] = {c: first.up for c in first.neg}
    total = first.up
    pool = [s for s in subs if s is not first and s.up > 0]
    while total < need and pool:
        def room(s: _Sub) -> int:
            return min(int(cube.X[c]) - used.get(c, 0) for c in s.neg)

        scored = [(r, s) for s in pool if (r := room(s)) > 0]
        if not scored:
            break
        r, best = min(scored, key=lambda t: ((t[1].cost + 1) / min(t[0], need - total), -t[0]))
        pool.remove(best)
        chosen.append(best)
        total += r
        for c in best.neg:
            used[c] = used.get(c, 0) + r
    if total < need:
        raise Infeasible
    return chosen


def protect_cube(cube: Cube, mc: int, *,
                 forced: Mapping[tuple[Spec, tuple[int, ...]], _Sub] | None = None,
                 single: bool = False, totals_free: bool = False,
                 ) -> dict[tuple[Spec, tuple[int, ...]], _Sub]:
    """Primary + complementary suppression on ``cube`` (fills ``cube.supp``). ``forced`` gives
    the attribute corners of some primaries (from the linked totals table); ``single`` asks for
    one cube per primary (totals tables, whose cubes linked tables copy); ``totals_free`` lets a
    cell's cube move suppressed group totals (only when no other labelling shares them).
    Returns the first cube chosen for every primary. Raises :class:`Infeasible`."""
    n_prim = sum(int(np.count_nonzero((v >= 1) & (v < mc))) for v in cube.values.values())
    if n_prim > MAX_PRIMARIES:  # counted before listing them: thousands of tiny clusters
        raise Infeasible
    prim = _primaries(cube, mc)
    locked = {(s, idx) for s, idx, _ in prim}
    locked |= {(s, tuple(int(i) for i in e)) for s in cube.specs
               for e in zip(*np.nonzero(cube.supp[s]), strict=True)}  # given by the caller
    for s, idx, _ in prim:
        cube.supp[s][idx] = True
    chosen: dict[tuple[Spec, tuple[int, ...]], list[_Sub]] = {}
    cache: dict = {}
    for s, idx, x in prim:
        f = (forced or {}).get((s, idx))
        subs = _search(cube, s, idx, x, mc, forced=f, single=single, totals_free=totals_free,
                       cache=None if f is not None else cache,
                       small_max=_SMALL_CANDIDATES if n_prim <= _MANY_PRIMARIES else 1)
        for sub in subs:
            for s2, e in sub.induced:
                cube.supp[s2][e] = True
        chosen[(s, idx)] = subs
        if f is not None:  # linked to the totals table: its cubes stay as they are
            locked.update(e for sub in subs for e in sub.induced)
    if _STRATEGY != "legacy" and not single:
        _prune(cube, mc, prim, chosen, locked, totals_free=totals_free, cache=cache)
    return {k: v[0] for k, v in chosen.items()}


def _prune(cube: Cube, mc: int, prim: list[tuple[Spec, tuple[int, ...], int]],
           chosen: dict[tuple[Spec, tuple[int, ...]], list[_Sub]], locked: set,
           *, totals_free: bool, cache: dict) -> None:
    """Publish again the complementary entries that turned out unnecessary, largest first.

    An entry may be published when every primary whose cubes change it finds other cubes,
    with the same room, that change only entries still suppressed. Every primary then keeps
    a set of cubes whose changed entries are all suppressed: the guarantee's argument holds
    as before. Group totals (shared with the input and other labellings) and entries that the
    caller suppressed or that linked totals cubes need are never published here."""
    x_of = {(s, idx): x for s, idx, x in prim}
    users: dict[tuple[Spec, tuple], set] = {}
    for p, subs in chosen.items():
        for sub in subs:
            for e in sub.induced:
                users.setdefault(e, set()).add(p)
    extra = [(s, tuple(int(i) for i in e)) for s in cube.specs
             for e in zip(*np.nonzero(cube.supp[s]), strict=True)]
    extra = [e for e in extra if e not in locked and not (e[0].mode == "all" and e[0].attrs)]
    extra.sort(key=lambda e: -int(cube.values[e[0]][e[1]]))
    budget = _PRUNE_BUDGET
    wide: dict = {}
    widen = len(prim) <= _WIDE_PRUNE
    for s, e in extra:
        affected = sorted(users.get((s, e), ()), key=lambda p: (p[0].attrs, p[0].mode, p[1]))
        if budget < len(affected):
            break
        cube.supp[s][e] = False
        redo: dict[tuple[Spec, tuple[int, ...]], list[_Sub]] = {}
        try:
            for p in affected:
                budget -= 1
                redo[p] = _search(cube, p[0], p[1], x_of[p], mc, totals_free=totals_free,
                                  free_only=True, cache=wide if widen else cache,
                                  small_max=-1 if widen else 1)
        except Infeasible:
            cube.supp[s][e] = True
            continue
        for p, subs in redo.items():
            for sub in chosen[p]:
                for e2 in sub.induced:
                    users[e2].discard(p)
            chosen[p] = subs
            for sub in subs:
                for e2 in sub.induced:
                    users.setdefault(e2, set()).add(p)


def totals_cube(X: np.ndarray) -> Cube:
    """The group totals of cube counts ``X`` as a cube of their own (one cluster level)."""
    T = X.sum(axis=-1, keepdims=True)
    cube = Cube(T, totals_specs(T.ndim - 1), None)
    cube.init()
    return cube
