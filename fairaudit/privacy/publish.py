"""A published release (``--publish``): every labelling's count cubes (:mod:`fairaudit.privacy.
cubes`: the joint cube and, where it would make an attribute's table a sum of many cells, the
attribute's own) noised once, and the document built from those noisy counts alone
(docs/privacy.md, "Publishing with differential privacy").

The runner builds the exact document as always, but from the post-processed noisy cubes
(:meth:`Release.joints`) with intervals from :meth:`Release.replicates`; :meth:`Release.document`
then removes what is not a function of those counts and declares the ``privacy`` block. The
mechanism and its accounting live in :mod:`fairaudit.privacy.dp`; what was spent, in
:mod:`fairaudit.privacy.ledger`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fairaudit.core.contingency import BootstrapReplicates, JointTable
from fairaudit.errors import ConfigError
from fairaudit.privacy import dp
from fairaudit.privacy.cubes import (
    DECLARED,
    Cube,
    ReleasedJoint,
    ReleaseReplicates,
    dense_counts,
    domain_of,
    marginal,
    prune,
    released_table,
    separate_attributes,
)

LEFT_OUT = (
    "input checks (they quote exact counts)",
    "row and exclusion counts of the input, the sample size and the input's fingerprint "
    "(input.fingerprint identifies the release instead)",
    "metrics that are not functions of the counts (silhouette, DCSI, LCD, proxy associations)",
    "fitted parameters, fit diagnostics and the notes of clusterers and preprocessors",
    "run timings",
)
"""What a published document leaves out (each is a function of the rows, not of the noisy
counts); stated in ``privacy.left_out`` and the report's banner."""


class Release:
    """The noisy, post-processed count cubes of one published run: per labelling the joint cube
    (clusters x every attribute) and, where :func:`separate_attributes` says so, one cube per
    attribute (clusters x that attribute)."""

    def __init__(self, labellings: Sequence[Any], joints: Mapping[str, JointTable],
                 privacy: Any, ordinal: Mapping[str, Sequence[str]]) -> None:
        names = [lab.name for lab in labellings if lab.name in joints]
        if not names:
            raise ConfigError("--publish: nothing to release (no labelling was counted)")
        by_name = {lab.name: lab for lab in labellings}
        cubes: list[Cube] = []
        exact: list[np.ndarray] = []
        for n in names:
            joint_cube = domain_of(by_name[n], joints[n], privacy, ordinal)
            cubes.append(joint_cube)
            exact.append(dense_counts(joint_cube, joints[n]))
            for j in separate_attributes([len(c) for c in joint_cube.categories]):
                a = joint_cube.attributes[j]
                own = dataclasses.replace(
                    joint_cube, attributes=(a,), categories=(joint_cube.categories[j],),
                    domain={a: joint_cube.domain[a], "clusters": joint_cube.domain["clusters"]})
                cubes.append(own)
                exact.append(dense_counts(own, marginal(joints[n], j)))
        self.cubes = cubes
        cells = sum(c.size for c in self.cubes)
        if cells > dp.MAX_CELLS:
            raise ConfigError(
                f"--publish: the count cubes have {cells:,} cells in all (groups of every "
                f"sensitive attribute x clusters per labelling, and the attributes' own cubes), "
                f"more than {dp.MAX_CELLS:,}: "
                "too sparse to publish with useful accuracy; audit fewer attributes, groups or "
                "labellings per release")
        self.private_domain = privacy.domain == "private"
        parts = self._noisy_threshold(exact, privacy) if self.private_domain else \
            self._noisy_public(exact, privacy)  # the only noise, once
        if self.private_domain:  # names of groups and clusters with no released cell go
            parts = self._pruned(parts)
        self.parts = parts
        """Per cube (in :attr:`cubes` order), its released cells (dense, cube order)."""
        self._tables = [released_table(c, p) for c, p in zip(self.cubes, parts, strict=True)]
        self.dense: dict[str, np.ndarray] = {}
        self.joints: dict[str, JointTable] = {}
        for cube, part in zip(self.cubes, parts, strict=True):
            self.dense.setdefault(cube.labelling, part)  # the labelling's joint cube is first
        for lab in self.dense:
            self.joints[lab] = self._released_joint(lab)
        self.privacy = privacy

    def _of(self, labelling: str) -> list[int]:
        """Positions of ``labelling``'s cubes: its joint cube first, then its own cubes."""
        return [i for i, c in enumerate(self.cubes) if c.labelling == labelling]

    def _released_joint(self, labelling: str) -> JointTable:
        first, *own = self._of(labelling)
        joint = self._tables[first][0]
        if not own:
            return joint
        margins = {self.cubes[i].attributes[0]: self._tables[i][0] for i in own}
        ref = min(own, key=lambda i: self.cubes[i].size)
        return ReleasedJoint(**{f.name: getattr(joint, f.name)
                                for f in dataclasses.fields(JointTable)},
                             margins=margins, reference=self._tables[ref][0])

    def _pruned(self, parts: list[np.ndarray]) -> list[np.ndarray]:
        """Private domain: each cube without the groups that have no released cell, and a
        labelling's cubes without the clusters that have none in any of them (one numbering
        of the clusters for all the labelling's tables)."""
        out = list(parts)
        for lab in dict.fromkeys(c.labelling for c in self.cubes):
            idx = self._of(lab)
            kept = set()
            for i in idx:
                arr = parts[i].reshape(self.cubes[i].shape)
                kept |= set(np.flatnonzero(arr.reshape(arr.shape[0], -1).sum(axis=1) > 0))
            for i in idx:
                self.cubes[i], out[i] = prune(self.cubes[i], parts[i], sorted(kept))
        return out

    def _noisy_public(self, exact: list[np.ndarray], privacy: Any) -> list[np.ndarray]:
        """Every cell of the (declared or public) domain gets discrete Laplace noise."""
        self.mechanism = dp.mechanism(privacy.epsilon, len(self.cubes))
        noisy = dp.add_noise(self.mechanism, np.concatenate(exact))
        bounds = np.cumsum([0, *(c.size for c in self.cubes)])
        return [dp.nonnegative_integer(noisy[a:b]) for a, b in zip(bounds, bounds[1:],
                                                                   strict=False)]

    def _noisy_threshold(self, exact: list[np.ndarray], privacy: Any) -> list[np.ndarray]:
        """Only the cells present in the data are candidates; those whose noisy count reaches
        the threshold are released (unknown domain), the others are 0."""
        self.mechanism = dp.threshold_mechanism(privacy.epsilon, privacy.delta, len(self.cubes))
        cells = {f"{i}:{j}": int(v) for i, e in enumerate(exact) for j in np.flatnonzero(e)
                 for v in (e[j],)}
        released = dp.add_threshold_noise(self.mechanism, cells)
        out = [np.zeros_like(e) for e in exact]
        for key, v in released.items():
            i, j = key.split(":")
            out[int(i)][int(j)] = v
        return out

    def unreleased(self, labelling: str) -> dict[str, frozenset[str]]:
        """attribute (and the ``a|b`` intersection) -> groups with a cell of the cube this
        labelling's table of the attribute is read from that a private-domain release did not
        publish: that cell's count is unknown (below the threshold), not zero, so every margin
        of the group is unknown and the group is too small to judge for this labelling. A
        cluster with no released cell in that cube is not in its table. Empty for a public
        domain (every cell released)."""
        from fairaudit.core.contingency import INTERSECTION_SEP

        if not self.private_domain:
            return {}
        out: dict[str, frozenset[str]] = {}
        for i in self._of(labelling):  # the joint cube first: own cubes override it
            cube = self.cubes[i]
            arr = self.parts[i].reshape(cube.shape)
            if arr.size == 0:
                continue
            arr = arr[arr.reshape(arr.shape[0], -1).sum(axis=1) > 0]  # clusters in the table
            zero = arr <= 0
            for j, a in enumerate(cube.attributes):
                axes = tuple(d for d in range(arr.ndim) if d != j + 1)
                out[a] = frozenset(cube.categories[j][g]
                                   for g in np.flatnonzero(zero.any(axis=axes)))
            if len(cube.attributes) > 1:
                partial = zero.any(axis=0) & (arr.sum(axis=0) > 0)
                out[INTERSECTION_SEP.join(cube.attributes)] = frozenset(
                    INTERSECTION_SEP.join(cube.categories[j][int(g)] for j, g in enumerate(idx))
                    for idx in zip(*np.nonzero(partial), strict=True))
        return out

    @property
    def joint_full(self) -> JointTable:
        """Group sizes of the release: the first labelling's cubes (no extra noise spent)."""
        return self.joints[self.cubes[0].labelling]

    def _replicates(self, i: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
        """Parametric replicates of cube ``i``, on the cells of its released table."""
        if self.private_domain:
            reps = dp.thresholded_replicates(self.parts[i], self.mechanism.scale,
                                             self.mechanism.threshold, n_boot, rng)
        else:
            reps = dp.parametric_replicates(self.parts[i], self.mechanism.scale, n_boot, rng)
        return reps[:, self._tables[i][1]]

    def replicates(self, labelling: str, n_boot: int, rng: np.random.Generator
                   ) -> BootstrapReplicates:
        """Parametric bootstrap replicates of one labelling's released cubes (the joint cube's
        first, then each own cube's, from the one stream), laid out on their cells."""
        first, *own = self._of(labelling)
        cells = self._replicates(first, n_boot, rng)
        margins = {self.cubes[i].attributes[0]: (self._tables[i][0],
                                                 self._replicates(i, n_boot, rng))
                   for i in own}
        if not margins:
            return BootstrapReplicates(self.joints[labelling], cells)
        return ReleaseReplicates(self.joints[labelling], cells, margins)

    def interval_options(self, labelling: str) -> dict[str, Any]:
        """How the auditors' intervals of ``labelling`` are computed from this release (keyword
        arguments of :func:`fairaudit.core.counting_audit.run_counting_auditor`)."""
        del labelling  # one mechanism for every cube of the release
        return {"noise": dp.discrete_laplace_variance(self.mechanism.scale)}

    # ------------------------------------------------------------------ the document
    def release_id(self) -> str:
        """A hash of the released cubes and epsilon (post-processing: it identifies the release
        for compare, history and export, and says nothing more about the data)."""
        import hashlib

        h = hashlib.sha256(repr(self.mechanism.epsilon).encode())
        for cube, part in zip(self.cubes, self.parts, strict=True):
            h.update(cube.labelling.encode())
            if len(cube.attributes) == 1 and cube is not self.cubes[self._of(cube.labelling)[0]]:
                h.update(b"own cube:" + cube.attributes[0].encode())
            h.update(np.ascontiguousarray(part, dtype="<i8").tobytes())
        return "dp-release:" + h.hexdigest()

    def block(self) -> dict[str, Any]:
        import importlib.metadata as md

        m = self.mechanism
        private = self.private_domain
        extra: dict[str, Any] = {}
        if private:
            extra["threshold"] = m.threshold
        return {
            "mode": "dp",
            "mechanism": dp.THRESHOLD_MECHANISM if private else dp.MECHANISM,
            "library": f"opendp {md.version('opendp')}",
            "measure": ("approximate (epsilon, delta)-DP" if private
                        else "pure epsilon-DP (max divergence)"),
            "epsilon": m.epsilon,
            "delta": m.delta if private else 0.0,
            "unit": f"one row = one person; neighbouring tables: {dp.NEIGHBOURS}",
            "noise_scale": m.scale,
            **extra,
            "d_in": m.d_in[1] if private else m.d_in,
            "split": (f"the epsilon falls equally on the {m.n_cubes} count cube(s) (per "
                      "labelling: clusters x every attribute, and clusters x each attribute "
                      "released in a cube of its own): "
                      f"{m.epsilon / m.n_cubes:.6g} each"),
            "cubes": [
                {"labelling": c.labelling, "attributes": list(c.attributes), "cells": c.size,
                 "domain": {k: v.replace("{t}", str(extra.get("threshold")))
                            for k, v in c.domain.items()},
                 "scope": c.scope}
                for c in self.cubes
            ],
            "post_processing": (
                "cells below the threshold are not released: their counts are unknown, not "
                "zero, and a group with such a cell in a labelling is too small to judge there "
                "(listed with the reason 'cells below the private release threshold'); every margin, metric, interval, "
                "verdict and gate is computed from the released cells alone" if private else
                "each noisy cube projected onto non-negative tables with its noisy total "
                "(Euclidean projection onto the simplex), rounded to integers by largest "
                "remainder; every margin, metric, interval, verdict and gate is computed from "
                "these cubes alone"),
            "intervals": (
                "from the released counts and the mechanism's public noise variance only: the "
                "balance and CCE families by per-cell score bounds whose variance is sampling's "
                "plus the noise's (a cell the noise can hide bounds nothing from above), one "
                "critical value calibrated by the parametric bootstrap (rows drawn again from "
                "the released cube, fresh noise of the release's distribution, the same "
                "post-processing); the distances by triangle bounds over those replicates; the "
                "other metrics by their percentiles"),
            "left_out": list(LEFT_OUT),
            "outside_declared": self.outside_declared(),
            "spent": None,
            "spent_delta": None,
            "budget": self.privacy.budget,
            "ledger": None,
        }

    def outside_declared(self) -> str | None:
        """The statement that rows outside the declared groups or clusters are left out, made
        whenever groups or clusters are declared: whether any row was actually outside is not
        published (a function of the rows, not of the noisy counts: it could reveal one
        person)."""
        declared = {k for c in self.cubes for k, v in c.domain.items() if v.startswith(DECLARED)}
        what = [f"the declared groups of {a}" for a in sorted(declared - {"clusters"})]
        if "clusters" in declared:
            what.append("the declared clusters")
        if not what:
            return None
        return (f"rows outside {' or '.join(what)} are left out of this release (whether there "
                "were any is not published)")

    def document(self, doc: dict[str, Any]) -> dict[str, Any]:
        """``doc`` (built from :attr:`joints`) without what is not a function of the noisy
        counts, with the ``privacy`` block."""
        from fairaudit.core.fit_quality import degenerate_warnings

        inp = doc["input"]
        inp["rows"] = inp.get("rows_audited")
        inp["fingerprint"] = self.release_id()  # the data's own hash would identify it
        inp["exclusions"] = {}
        inp["sample"] = None
        inp["excluded_columns"] = {c: why for c, why in (inp.get("excluded_columns") or {}).items()
                                   if why == "listed in exclude"}
        for p in doc.get("preprocessing", []):
            p["notes"], p["report"] = [], {}
        for lab in doc.get("labellings", []):
            lab["notes"], lab["extras"], lab["fit"] = [], {}, None
            lab["params"] = {k: v for k, v in lab.get("params", {}).items()
                             if k != "n_clusters_fitted"}
            ref = getattr(self.joints.get(lab.get("name")), "reference", None)
            if ref is not None:  # the least noisy of the labelling's cubes
                _cluster_sizes(lab, ref)
            sizes = {int(c["cluster"]): int(c["n"]) for c in lab.get("cluster_sizes", [])}
            lab["warnings"] = degenerate_warnings(sizes, params=lab["params"],
                                                  component=lab.get("component"))
        doc["checks"] = []
        doc.pop("timing", None)
        doc["privacy"] = self.block()
        return doc


def _cluster_sizes(lab: dict[str, Any], joint: JointTable) -> None:
    """A labelling's row count and cluster sizes in the document, from ``joint``."""
    clean = joint.cluster >= 0
    sizes = np.bincount(joint.cluster[clean], weights=joint.counts[clean]).astype(np.int64) \
        if clean.any() else np.zeros(0, np.int64)
    lab["n_rows"] = int(joint.counts.sum())
    lab["n_noise"] = int(joint.counts[~clean].sum())
    lab["cluster_sizes"] = [{"cluster": c, "n": int(n)} for c, n in enumerate(sizes) if n > 0]
    lab["n_clusters"] = len(lab["cluster_sizes"])


def published_notes() -> list[str]:
    return ["published release (differential privacy): every number is computed from noisy "
            "counts; left out: " + "; ".join(LEFT_OUT)]


# ---------------------------------------------------------------------------- the run
def prepare(spec: Any, registry: Any) -> Any:
    """The chain of a published run: counting auditors only (the others read rows, not counts;
    they are listed as left out), and no clusterer fitted on these rows unless
    ``[privacy] fitted = "conditional"`` accepts the narrower guarantee."""
    from fairaudit.core.components import CountingAuditor
    from fairaudit.errors import require_extra

    require_extra("opendp", "publish", dp.PUBLISH_FEATURE)  # before any work: exit 2, the pip line
    if spec.cluster and spec.privacy.fitted != "conditional":
        names = ", ".join(dict.fromkeys(s.use for s in spec.cluster))
        raise ConfigError(
            f"--publish: the chain fits {names} on the audited rows; a clustering fitted on the "
            "data depends on every row, and the noise on the counts does not cover that. Publish "
            "a labels column (--labels; segments assigned by a model fitted elsewhere), or accept "
            "a guarantee conditional on the fitted clustering with --dp-fitted conditional "
            "([privacy] fitted = \"conditional\", dp_fitted=\"conditional\")")
    unknown = sorted(set(spec.privacy.categories) - set(spec.data.sensitive))
    if unknown:
        raise ConfigError(f"privacy.categories (--dp-categories): {', '.join(map(repr, unknown))} "
                          f"is not a sensitive column; expected one of "
                          f"{', '.join(map(repr, spec.data.sensitive))}")
    if spec.privacy.clusters is not None and spec.data.labels is None:
        raise ConfigError("privacy.clusters (--dp-clusters): declares the clusters of a labels "
                          "column, and the chain has none (data.labels / --labels)")
    if spec.options.bootstrap < 1:
        raise ConfigError("--bootstrap 0: a published release shows every number with its "
                          "interval (noise and sampling); give --bootstrap N > 0 with --publish")
    kept = tuple(s for s in spec.audit
                 if issubclass(registry.get("auditor", s.use).cls, CountingAuditor))
    if not kept:
        raise ConfigError("--publish: none of the chain's auditors works from counts alone "
                          f"({', '.join(s.use for s in spec.audit)}); add e.g. --audit balance")
    return dataclasses.replace(
        spec, audit=kept, options=dataclasses.replace(spec.options, timing=False),
        preprocess=spec.preprocess if spec.cluster else (),  # features only feed clusterers
    )
