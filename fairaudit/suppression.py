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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["MAX_CUBE_CELLS", "MAX_PRIMARIES", "Cube", "Infeasible", "Spec", "labelling_specs",
           "protect_cube", "published_attr_sets", "totals_cube", "totals_specs"]

MAX_PRIMARIES = 3_000
"""Above this many primary cells in one cube the caller withholds its counts wholesale."""
MAX_CUBE_CELLS = 5_000_000
_CANDIDATES = 3


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


def _candidates(cube: Cube, axis: int, base: int, k: int) -> list[int]:
    size = cube.axis_sizes(axis)
    order = [int(i) for i in np.argsort(-size, kind="stable") if int(i) != base]
    return order[:k]


def _induced(cube: Cube, pattern: Mapping[tuple[int, ...], int]) -> list[tuple[Spec, tuple]]:
    """Published entries a signed cube pattern changes (they must be suppressed)."""
    out = []
    for s in cube.specs:
        acc: dict[tuple, int] = {}
        for idx, sign in pattern.items():
            j = cube.spec_index(s, idx)
            if j is not None:
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
    cost: int
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


def _subcubes(cube: Cube, varied: list[int], fixed: Mapping[int, int],
              alts: list[list[int]], exclude_level: Mapping[int, int] | None = None) -> list[_Sub]:
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
                            sum(_weight(cube, s2) for s2, e in induced if not cube.supp[s2][e]),
                            dict(zip(varied, combo, strict=True)),
                            tuple(int(grids[free.index(a), j]) for a in free), free))
    return out


def _search(cube: Cube, spec: Spec, idx: tuple[int, ...], x: int, mc: int, *,
            forced: _Sub | None = None, single: bool = False,
            totals_free: bool = False) -> list[_Sub]:
    """Hypercubes protecting the primary ``spec[idx] = x``: one with room down >= 1, and
    (with disjoint negative corners, so their rooms add up) room up >= min_cell - x.
    Among the candidates the cheapest (fewest new suppressions per unit of room) win."""
    ax_c = cube.d
    fixed = {a: idx[i] for i, a in enumerate(spec.attrs)}
    if spec.mode == "each":
        fixed[ax_c] = idx[-1]
    subs: list[_Sub] = []
    if forced is not None:  # the attribute corners of a linked totals table; clusters free
        fx = dict(fixed)
        fx.update({a: forced.level[i] for i, a in enumerate(forced.free) if a < ax_c})
        varied = sorted(forced.alternates)
        subs = _subcubes(cube, varied, fx, [[forced.alternates[a]] for a in varied])
    elif spec.mode == "clean":
        varied = list(spec.attrs) + [ax_c]
        alts = [_candidates(cube, a, fixed[a], _CANDIDATES) for a in spec.attrs] + [[cube.noise]]
        if all(alts):
            subs = _subcubes(cube, varied, fixed, alts, {ax_c: cube.noise})
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
                alts = [_candidates(cube, a, fixed[a], _CANDIDATES) for a in varied]
                if all(alts):
                    subs += _subcubes(cube, list(varied), fixed, alts)
    need = mc - x
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
    for s, idx, _ in prim:
        cube.supp[s][idx] = True
    chosen = {}
    for s, idx, x in prim:
        f = (forced or {}).get((s, idx))
        subs = _search(cube, s, idx, x, mc, forced=f, single=single, totals_free=totals_free)
        for sub in subs:
            for s2, e in sub.induced:
                cube.supp[s2][e] = True
        chosen[(s, idx)] = subs[0]
    return chosen


def totals_cube(X: np.ndarray) -> Cube:
    """The group totals of cube counts ``X`` as a cube of their own (one cluster level)."""
    T = X.sum(axis=-1, keepdims=True)
    cube = Cube(T, totals_specs(T.ndim - 1), None)
    cube.init()
    return cube
