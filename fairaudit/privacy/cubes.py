"""The count cubes of a published release (``--publish``): which cells get noise (the domain:
declared or observed groups and clusters), which cubes a labelling releases (its joint cube of
every attribute and, for attributes whose table would sum many joint cells, a cube of their
own: :func:`separate_attributes`), their exact counts laid out on those cells, and the released
cubes as the tables the host reads (:class:`ReleasedJoint`, with their parametric replicates).
docs/privacy.md, "Mechanism, budget split, post-processing"."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fairaudit.core.contingency import NOISE_NAME, BootstrapReplicates, JointTable
from fairaudit.core.data import GroupTable
from fairaudit.errors import ConfigError

OBSERVED = "observed in the data, assumed public"
DECLARED = "declared"
SCOPE_COLUMN = ("labels column: each row's cluster is a function of that row alone, so the "
                "guarantee covers every published number")
SCOPE_FITTED = ("clustering fitted by fairaudit on these rows without privacy: the guarantee "
                "covers the counts given the clustering, not the clustering itself (removing a "
                "person could move others between clusters)")


@dataclasses.dataclass(frozen=True)
class Cube:
    labelling: str
    attributes: tuple[str, ...]
    categories: tuple[tuple[str, ...], ...]
    clusters: tuple[int, ...]
    cluster_names: tuple[str, ...] | None
    ordinal: Mapping[str, tuple[str, ...]]
    domain: dict[str, Any]
    scope: str

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self.clusters), *(len(c) for c in self.categories))

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))


def domain_of(lab: Any, joint: JointTable, privacy: Any, ordinal: Mapping[str, Sequence[str]]
            ) -> Cube:
    """The cells that get noise: declared groups (``[privacy] categories`` or ``data.ordinal``)
    or, else, the groups observed (assumed public, stated in the JSON); the same for clusters."""
    cats, how = [], {}
    for j, a in enumerate(joint.attributes):
        if a in privacy.categories:
            cats.append(tuple(privacy.categories[a]))
            how[a] = DECLARED
        elif a in ordinal:
            cats.append(tuple(str(x) for x in ordinal[a]))
            how[a] = DECLARED + " (data.ordinal)"
        else:
            cats.append(tuple(joint.categories[j]))
            how[a] = OBSERVED
    names = joint.cluster_names
    if lab.origin == "column" and privacy.clusters is not None:
        declared = list(privacy.clusters)
        if names is not None:
            names = tuple(sorted(n for n in declared if n != NOISE_NAME))
            ids = tuple(range(len(names)))
        else:
            try:
                ids = tuple(sorted(int(x) for x in declared if x != NOISE_NAME))
            except ValueError:
                raise ConfigError(
                    f"privacy.clusters: labels column {lab.column!r} holds integer ids; declare "
                    f"them as integers (got {declared!r})") from None
        clusters = ((-1,) if NOISE_NAME in declared else ()) + ids
        how["clusters"] = DECLARED
    else:
        clusters = tuple(int(c) for c in np.unique(joint.cluster))
        how["clusters"] = (OBSERVED if lab.origin == "column"
                           else "the fitted clustering's clusters (see scope)")
    scope = SCOPE_COLUMN if lab.origin == "column" else SCOPE_FITTED
    return Cube(lab.name, tuple(joint.attributes), tuple(cats), clusters, names,
                 {a: tuple(str(x) for x in v) for a, v in ordinal.items()}, how, scope)


def dense_counts(cube: Cube, joint: JointTable) -> np.ndarray:
    """The exact counts laid out on the cube's cells; rows outside the domain are left out."""
    out = np.zeros(cube.shape, dtype=np.int64)
    if joint.counts.size == 0:
        return out.reshape(-1)
    k_of = {c: i for i, c in enumerate(cube.clusters)}
    if cube.cluster_names is not None and joint.cluster_names is not None:
        pos = {n: i for i, n in enumerate(cube.cluster_names)}
        ids = [pos.get(joint.cluster_names[c], None) if c >= 0 else -1 for c in joint.cluster]
        kidx = np.array([-1 if i is None else k_of.get(i, -1) for i in ids], dtype=np.int64)
    else:
        kidx = np.array([k_of.get(int(c), -1) for c in joint.cluster], dtype=np.int64)
    keep = kidx >= 0
    index = [kidx]
    for j, cats in enumerate(cube.categories):
        lookup = {n: i for i, n in enumerate(cats)}
        g = np.array([lookup.get(joint.categories[j][c], -1) for c in joint.codes[:, j]],
                     dtype=np.int64)
        keep &= g >= 0
        index.append(g)
    np.add.at(out, tuple(ix[keep] for ix in index), joint.counts[keep])
    return out.reshape(-1)


def released_table(cube: Cube, dense: np.ndarray) -> tuple[JointTable, np.ndarray]:
    """The released cube as a :class:`JointTable` (cells with a count, in canonical order) and
    the positions of those cells in the dense cube (for the bootstrap replicates)."""
    flat = np.flatnonzero(dense > 0)
    idx = np.unravel_index(flat, cube.shape)
    cluster = np.asarray(cube.clusters, dtype=np.int64)[idx[0]]
    codes = (np.column_stack(idx[1:]).astype(np.int64) if len(idx) > 1
             else np.zeros((flat.size, 0), np.int64))
    order = np.lexsort((*codes.T[::-1], cluster)) if flat.size else np.arange(0)
    joint = JointTable(
        attributes=cube.attributes, categories=cube.categories, cluster=cluster[order],
        codes=codes[order], counts=dense[flat][order].astype(np.int64),
        ordinal={a: v for a, v in cube.ordinal.items() if a in cube.attributes},
        null_rows=0, cluster_names=cube.cluster_names,
    )
    return joint, flat[order]


def prune(cube: Cube, dense: np.ndarray, clusters_kept: Sequence[int]
           ) -> tuple[Cube, np.ndarray]:
    """The cube without the groups that have no released cell and the clusters not in
    ``clusters_kept`` (positions; their names would say that someone holds them); cluster ids
    of a labels column of names renumbered."""
    arr = dense.reshape(cube.shape)
    keep = [np.asarray(clusters_kept, dtype=np.int64)] + [
        np.flatnonzero(arr.sum(axis=tuple(a for a in range(arr.ndim) if a != d)) > 0)
        for d in range(1, arr.ndim)]
    arr = arr[np.ix_(*keep)] if all(k.size for k in keep) else np.zeros((0,) * arr.ndim,
                                                                         np.int64)
    clusters = [cube.clusters[i] for i in keep[0]]
    names = cube.cluster_names
    if names is not None:
        kept_names = tuple(names[c] for c in clusters if c >= 0)
        renumber = {c: kept_names.index(names[c]) for c in clusters if c >= 0}
        clusters = [renumber.get(c, -1) for c in clusters]
        names = kept_names
    cats = tuple(tuple(cube.categories[d][i] for i in keep[d + 1])
                 for d in range(len(cube.categories)))
    domain = {a: "chosen privately: groups with a released cell (threshold {t})"
              for a in cube.attributes}
    domain["clusters"] = ("chosen privately: clusters with a released cell (threshold {t})"
                          if cube.domain["clusters"] == OBSERVED else cube.domain["clusters"])
    for a in cube.attributes:
        if cube.domain[a] != OBSERVED:
            domain[a] = cube.domain[a]
    pruned = dataclasses.replace(cube, categories=cats, clusters=tuple(clusters),
                                 cluster_names=names, domain=domain)
    return pruned, arr.reshape(-1)


def separate_attributes(sizes: Sequence[int]) -> tuple[int, ...]:
    """Which attributes of a cube of ``sizes`` groups each get a cube of their own (cluster x
    that attribute) beside the joint cube: the set S that minimises the summed noise variance
    per cell of every attribute's table and the intersection's, (1 + |S|)² (|S| + 1 + Σ_{a∉S}
    m_a), m_a the joint cells summed into one cell of a's table (the product of the other
    attributes' group counts): each cube more multiplies every cell's noise sd by (1 + |S|) / |S|
    (the epsilon is split over more cubes), each attribute in S is read from 1 cell instead of
    m_a. A function of the domain alone (public: declared or assumed-public groups), so the
    choice reveals nothing about the rows. Ties go to fewer cubes."""
    import itertools

    A = len(sizes)
    if A < 2:
        return ()
    total = int(np.prod(sizes))
    m = [total // int(s) for s in sizes]
    best, cost = (), float("inf")
    for k in range(A + 1):
        for S in itertools.combinations(range(A), k):
            c = (1 + k) ** 2 * (k + 1 + sum(m[a] for a in range(A) if a not in S))
            if c < cost:
                best, cost = S, c
    return best


def marginal(joint: JointTable, j: int) -> JointTable:
    """The exact counts of ``joint`` by cluster and its ``j``-th attribute alone (cells may
    repeat: :func:`dense_counts` adds them up)."""
    a = joint.attributes[j]
    return dataclasses.replace(
        joint, attributes=(a,), categories=(joint.categories[j],), codes=joint.codes[:, [j]],
        ordinal={k: v for k, v in joint.ordinal.items() if k == a})


@dataclasses.dataclass(frozen=True)
class ReleasedJoint(JointTable):
    """A labelling's released counts: the joint cube (its cells are this table's, for the
    intersection), and for the attributes released in a cube of their own (``margins``) their
    tables and group sizes from that cube. ``reference``: the cube with the fewest cells (the
    least noisy total), which gives the labelling's row count and cluster sizes."""

    margins: Mapping[str, JointTable] = dataclasses.field(default_factory=dict)
    reference: JointTable | None = None

    @property
    def n(self) -> int:
        ref = self.reference
        return int(ref.counts.sum()) if ref is not None else int(self.counts.sum())

    def table(self, attribute: str) -> GroupTable:
        m = self.margins.get(attribute)
        return m.table(attribute) if m is not None else super().table(attribute)

    def group_sizes(self, attribute: str) -> dict[str, int]:
        m = self.margins.get(attribute)
        return m.group_sizes(attribute) if m is not None else super().group_sizes(attribute)


class ReleaseReplicates(BootstrapReplicates):
    """The parametric replicates of a labelling's cubes: the joint cube's for the
    intersection (and the attributes read from it), each own cube's for its attribute."""

    def __init__(self, joint: JointTable, cells: np.ndarray,
                 margins: Mapping[str, tuple[JointTable, np.ndarray]]) -> None:
        super().__init__(joint, cells)
        self._margins = dict(margins)

    def tables(self, attribute: str, groups: Sequence[int] | None = None,
               clusters: Sequence[int] | None = None) -> np.ndarray:
        own = self._margins.get(attribute)
        if own is None:
            return super().tables(attribute, groups, clusters)
        key = (attribute, None if groups is None else tuple(groups),
               None if clusters is None else tuple(clusters))
        if key not in self._tables:
            arr = own[0].bootstrap_counts(attribute, own[1], groups, clusters)
            arr.flags.writeable = False
            self._tables[key] = arr
        return self._tables[key]
