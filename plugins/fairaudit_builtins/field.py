"""Built-in clusterers of the fair-clustering field (issue 27): ``fairsc``, ``fairlets``, ``bera``
and ``vfc`` — adapters of the scikit-learn estimators in ``fairaudit.cluster`` (FairSC,
FairletClustering, BeraFairAssignment, VariationalFairClustering).

Each fits on the features with the sensitive attributes as the groups to balance, has a
``fair=false`` twin (the same pipeline without fairness), and assigns new rows with ``predict``
(with their groups, so that the fair methods stay fair on the rows they did not fit). Not in the
default comparison: reach them with ``--cluster NAME[:key=value]``, a chain's ``[[cluster]]`` or
the API. docs/methods/{fairsc,fairlets,bera,vfc}.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fairaudit.core.components import AnyOf, Clusterer, Interval, Options, TypeIs
from fairaudit.core.data import AuditData
from fairaudit.errors import ConfigError, InputError
from fairaudit.hookspecs import hookimpl
from fairaudit.report.results import TARGET_NOTE, finite

_BOOL = TypeIs((bool,), "true or false")


class _FieldClusterer(Clusterer):
    """Common fit/predict plumbing: build the estimator, fit on the features and groups."""

    requires = frozenset({"features", "sensitive"})
    provides = frozenset({"labels"})
    method = ""
    predict_groups = False
    """True: ``predict`` passes the new rows' groups (a fair assignment of new rows)."""

    def _estimator(self) -> Any:  # pragma: no cover - interface
        raise NotImplementedError

    def _groups(self, data: AuditData) -> np.ndarray:
        return data.sensitive_codes().codes

    def fit(self, data: AuditData) -> _FieldClusterer:
        X = data.feature_matrix()
        est = self._estimator().fit(X, sensitive=self._groups(data))
        self.estimator_ = est
        self.labels_ = est.labels_.astype(np.int64)
        centres = getattr(est, "cluster_centers_", None)
        if "prototypes" in self.provides and centres is not None:
            self.prototypes_ = centres
        self.extras_: dict[str, Any] = {"method": self.method, "fair": bool(est.fair_applied_)}
        self.notes_: tuple[str, ...] = ()
        self._finish(est, data)
        return self

    def _finish(self, est: Any, data: AuditData) -> None:
        return None

    def predict(self, data: AuditData) -> np.ndarray:
        """The estimator's predict with the new rows' groups (see the method's docs)."""
        est = getattr(self, "estimator_", None)
        if est is None:
            raise RuntimeError(f"{self.name}: predict called before fit")
        X = data.feature_matrix()
        if not (est.fair_applied_ and self.predict_groups):
            return np.asarray(est.predict(X), dtype=np.int64)
        return np.asarray(est.predict(X, sensitive=self._groups(data)), dtype=np.int64)


def _several(data: AuditData) -> tuple[str, ...]:
    return tuple(data.sensitive_codes().names)


# ---------------------------------------------------------------------------------- FairSC
class FairSCClusterer(_FieldClusterer):
    """FairSC (Kleindessner et al., ICML 2019) on the k-NN graph of the features."""

    name = "fairsc"
    method = "fairsc"
    description = (
        "Fair spectral clustering (FairSC, Kleindessner et al. 2019) on a 15-NN graph; "
        "normalized=true for normalized FairSC; one attribute, any number of groups."
    )
    max_rows = 20_000
    constraints = {
        "n_clusters": Interval(int, 2, None),
        "fair": _BOOL,
        "normalized": _BOOL,
        "n_neighbors": Interval(int, 1, None),
        "affinity": Options(("connectivity", "distance")),
        "n_init": Interval(int, 1, None),
        "isolation": Interval(float, 0.0, 1.0, closed="left"),
    }
    param_docs = {
        "n_clusters": "number of clusters k",
        "fair": "false: spectral clustering on the same graph without the constraint (the twin)",
        "normalized": "true: normalized FairSC (normalized cut); false: unnormalized (ratio cut)",
        "n_neighbors": "k of the k-NN affinity graph (the FairDen paper's 15)",
        "affinity": "edge weights: 'connectivity' (1) or 'distance' (the FairDen authors' code)",
        "n_init": "k-means restarts on the spectral embedding",
        "isolation": "small sets the graph barely ties to the rest (conductance below this) are "
                     "set aside and assigned by their neighbours; 0: the graph as it is",
        "random_state": "seed (filled from the chain seed when unset)",
    }

    def __init__(self, n_clusters: int = 2, *, fair: bool = True, normalized: bool = False,
                 n_neighbors: int = 15, affinity: str = "connectivity", n_init: int = 10,
                 isolation: float = 0.02, random_state: int | None = None) -> None:
        self.n_clusters = n_clusters
        self.fair = fair
        self.normalized = normalized
        self.n_neighbors = n_neighbors
        self.affinity = affinity
        self.n_init = n_init
        self.isolation = isolation
        self.random_state = random_state

    def _estimator(self) -> Any:
        from fairaudit.cluster import FairSC

        return FairSC(self.n_clusters, fair=self.fair, normalized=self.normalized,
                      n_neighbors=self.n_neighbors, affinity=self.affinity, n_init=self.n_init,
                      isolation=self.isolation, random_state=self.random_state)

    def _finish(self, est: Any, data: AuditData) -> None:
        self.extras_.update({
            "normalized": bool(self.normalized), "solver": est.solver_,
            "eigenvalues": [finite(v) for v in est.eigenvalues_], "groups": est.n_groups_,
            "rows_set_aside": int(est.aside_.sum()),
        })
        names = _several(data)
        notes = []
        if est.fair_applied_ and len(names) > 1:
            notes.append(f"{TARGET_NOTE}FairSC balances one attribute, so it balanced the "
                         f"intersection of {', '.join(names)} ({est.n_groups_} groups), not "
                         "each attribute on its own.")
        if est.aside_.any():
            notes.append(f"FairSC set aside {int(est.aside_.sum())} rows that the k-NN graph "
                         "barely ties to the rest (isolation) and gave each the cluster of its "
                         "nearest clustered rows.")
        if notes:
            self.notes_ = tuple(notes)


# ---------------------------------------------------------------------------------- fairlets
class FairletsClusterer(_FieldClusterer):
    """Fairlet decomposition + k-median on fairlet centres (two groups)."""

    name = "fairlets"
    method = "fairlets"
    description = (
        "Fairlets: scalable fairlet decomposition (Backurs et al. 2019) or min-cost flow "
        "(decomposition=mcf, Chierichetti et al. 2017) then k-median on the fairlet centres; "
        "one attribute with two groups."
    )
    provides = frozenset({"labels", "prototypes"})
    max_rows = 200_000
    predict_groups = True
    constraints = {
        "n_clusters": Interval(int, 2, None),
        "fair": _BOOL,
        "decomposition": Options(("scalable", "mcf")),
        "objective": Options(("kmedian", "kmeans")),
        "p": Interval(int, 1, None),
        "q": AnyOf((Interval(int, 1, None), Options(("auto",)))),
        "n_init": Interval(int, 1, None),
        "mcf_max_rows": Interval(int, 2, None),
        "attribute": TypeIs((str,), "a sensitive column name or 'auto'"),
    }
    param_docs = {
        "n_clusters": "number of clusters k",
        "fair": "false: k-median/k-means on the rows, no fairlets (the twin)",
        "attribute": "the two-group sensitive attribute to balance; 'auto': the only one, or the "
        "first with two groups (the report names it)",
        "decomposition": "'scalable' (Backurs et al., quadtree) or 'mcf' (Chierichetti et al., "
        "exact min-cost flow; small n only)",
        "objective": "'kmedian' (fairlet medoids, weighted k-medoids) or 'kmeans'",
        "p": "balance target p/q: minority rows per fairlet (with q set)",
        "q": "balance target p/q; 'auto': the largest p/q <= the data's ratio with q <= 10 "
        "(mcf: p = 1, q = ceil(majority/minority))",
        "n_init": "starts of the k-median/k-means on the fairlet centres",
        "mcf_max_rows": "decomposition=mcf refuses more rows than this (exit 2; use --sample)",
        "random_state": "seed (filled from the chain seed when unset)",
    }

    def __init__(self, n_clusters: int = 2, *, fair: bool = True,
                 decomposition: str = "scalable", objective: str = "kmedian", p: int = 1,
                 q: int | str = "auto", n_init: int = 10, mcf_max_rows: int = 1000,
                 attribute: str = "auto", random_state: int | None = None) -> None:
        self.n_clusters = n_clusters
        self.fair = fair
        self.decomposition = decomposition
        self.objective = objective
        self.p = p
        self.q = q
        self.n_init = n_init
        self.mcf_max_rows = mcf_max_rows
        self.attribute = attribute
        self.random_state = random_state

    def _attribute(self, data: AuditData) -> int:
        s = data.sensitive_codes()
        sizes = [len(c) for c in s.categories]
        if self.attribute != "auto":
            if self.attribute not in s.names:
                raise ConfigError(
                    f"fairlets: attribute={self.attribute!r} is not a sensitive column; the "
                    f"sensitive columns are {', '.join(s.names)}."
                )
            j = s.names.index(self.attribute)
        else:
            two = [j for j, g in enumerate(sizes) if g == 2]
            j = two[0] if two else 0
        if sizes[j] != 2:
            got = ", ".join(f"{n} ({g} groups)" for n, g in zip(s.names, sizes, strict=True))
            raise InputError(
                f"fairlets balances one sensitive attribute with exactly two groups; got {got}. "
                "Name a two-group column with --sensitive, or use fairsc, bera or vfc."
            )
        return j

    def _groups(self, data: AuditData) -> np.ndarray:
        return data.sensitive_codes().codes[:, self._attribute(data)]

    def fit(self, data: AuditData) -> FairletsClusterer:
        if self.fair and self.decomposition == "mcf" and data.n_rows > int(self.mcf_max_rows):
            raise ConfigError(
                f"fairlets: decomposition=mcf solves a min-cost flow with (n/2)^2 edges and is "
                f"limited to mcf_max_rows = {self.mcf_max_rows} rows; got {data.n_rows}. Fit on "
                f"a sample (--sample {self.mcf_max_rows}) or use decomposition=scalable."
            )
        super().fit(data)
        return self

    def _estimator(self) -> Any:
        from fairaudit.cluster import FairletClustering

        return FairletClustering(
            self.n_clusters, fair=self.fair, decomposition=self.decomposition,
            objective=self.objective, p=self.p, q=self.q, n_init=self.n_init,
            mcf_max_rows=self.mcf_max_rows, random_state=self.random_state)

    def _finish(self, est: Any, data: AuditData) -> None:
        self.extras_.update({"n_fairlets": est.n_fairlets_, "objective": finite(est.objective_),
                             "decomposition": self.decomposition})
        if est.balance_target_ is not None:
            p, q = est.balance_target_
            names = data.sensitive_codes().names
            attr = names[self._attribute(data)]
            self.extras_["balance_target"] = [p, q]
            self.extras_["attribute"] = attr
            notes = [f"{est.n_fairlets_:,} fairlets ({self.decomposition}) of {attr}, each with "
                     f"group ratio >= {p}/{q}; every cluster is a union of fairlets."]
            if len(names) > 1:
                others = ", ".join(n for n in names if n != attr)
                notes.append(f"fairlets balance one attribute: {attr}; {others} not balanced.")
            self.notes_ = tuple(notes)


# ---------------------------------------------------------------------------------- Bera
class BeraClusterer(_FieldClusterer):
    """Bera et al.'s fair assignment LP over k-means centres."""

    name = "bera"
    method = "bera"
    description = (
        "Fair assignment (Bera et al. 2019): LP over k-means centres with per-group bounds "
        "r_g(1-delta) .. r_g/(1-delta), iterative rounding and an integer repair so every "
        "cluster meets the bounds; several attributes and groups."
    )
    provides = frozenset({"labels", "prototypes"})
    max_rows = 50_000
    predict_groups = True
    constraints = {
        "n_clusters": Interval(int, 2, None),
        "fair": _BOOL,
        "delta": Interval(float, 0.0, 1.0, closed="left"),
        "n_init": Interval(int, 1, None),
        "repair": _BOOL,
        "chunk_size": Interval(int, 2, None),
    }
    param_docs = {
        "n_clusters": "number of clusters k",
        "fair": "false: the k-means labels of the same centres (the twin)",
        "delta": "bounds: each group's share of each cluster within r_g(1-delta) .. "
        "r_g/(1-delta) (the paper's delta; its experiments: 0.2)",
        "n_init": "k-means starts for the centres",
        "repair": "true: when the rounding breaks a bound by a row or two, re-assign rows "
        "(an integer program) so every cluster meets the bounds; false: the paper's rounding "
        "alone",
        "chunk_size": "predict solves the assignment of new rows in chunks of this many rows",
        "random_state": "seed (filled from the chain seed when unset)",
    }

    def __init__(self, n_clusters: int = 2, *, fair: bool = True, delta: float = 0.2,
                 n_init: int = 10, repair: bool = True, chunk_size: int = 20_000,
                 random_state: int | None = None) -> None:
        self.n_clusters = n_clusters
        self.fair = fair
        self.delta = delta
        self.n_init = n_init
        self.repair = repair
        self.chunk_size = chunk_size
        self.random_state = random_state

    def _estimator(self) -> Any:
        from fairaudit.cluster import BeraFairAssignment

        return BeraFairAssignment(self.n_clusters, fair=self.fair, delta=float(self.delta),
                                  n_init=self.n_init, repair=self.repair,
                                  chunk_size=self.chunk_size,
                                  random_state=self.random_state)

    def _finish(self, est: Any, data: AuditData) -> None:
        self.extras_.update({"delta": finite(self.delta), "lp_objective": finite(est.lp_objective_),
                             "rounding_rounds": int(est.rounds_),
                             "repaired_rows": int(est.repaired_rows_),
                             "bounds_broken": len(est.bound_violations_)})
        if est.fair_applied_:
            n = est.labels_.size
            moved = int((est.labels_ != est.kmeans_labels_).sum())
            notes = [f"Fair assignment moved {moved:,} of the {n:,} fitted rows from their "
                     f"nearest k-means centre (delta = {self.delta})."]
            if est.repaired_rows_ and not est.bound_violations_:
                notes.append(f"The integer repair re-assigned {est.repaired_rows_:,} rows after "
                             f"the rounding, so in the {n:,} fitted rows every cluster's group "
                             "shares meet the delta bounds.")
            elif est.repaired_rows_:
                notes.append(f"The integer repair re-assigned {est.repaired_rows_:,} rows after "
                             "the rounding.")
            empty = int(self.n_clusters) - int(np.unique(est.labels_).size)
            if empty:
                notes.append(f"{empty} of the {self.n_clusters} clusters were left empty in "
                             f"the fit: too small to hold every group's share of the {n:,} "
                             "fitted rows in whole rows.")
            if est.bound_violations_:
                notes.append(f"In the {n:,} fitted rows {len(est.bound_violations_)} (cluster, "
                             "group) bounds are not met: no integer assignment of the movable "
                             "rows meets them.")
            self.notes_ = tuple(notes)


# ---------------------------------------------------------------------------------- VFC
class VFCClusterer(_FieldClusterer):
    """Variational fair clustering (Ziko et al., AAAI 2021), k-means objective."""

    name = "vfc"
    method = "vfc"
    description = (
        "Variational fair clustering (Ziko et al. 2021): k-means plus lambda x KL of each "
        "cluster's group distribution from the data's; lambda by the authors' rule (auto)."
    )
    max_rows = 100_000
    predict_groups = True
    constraints = {
        "n_clusters": Interval(int, 2, None),
        "fair": _BOOL,
        "lmbda": AnyOf((Interval(float, 0.0, None), Options(("auto",)))),
        "lipschitz": Interval(float, 0.0, None, closed="neither"),
        "max_iter": Interval(int, 1, None),
    }
    param_docs = {
        "n_clusters": "number of clusters k",
        "fair": "false: k-means (Lloyd) from the same start (the twin)",
        "lmbda": "weight of the fairness term; 'auto': lowest fairness error over 10..10000",
        "lipschitz": "L of the bound update (authors: 2.0)",
        "max_iter": "outer iterations",
        "random_state": "seed (filled from the chain seed when unset)",
    }

    def __init__(self, n_clusters: int = 2, *, fair: bool = True, lmbda: float | str = "auto",
                 lipschitz: float = 2.0, max_iter: int = 100,
                 random_state: int | None = None) -> None:
        self.n_clusters = n_clusters
        self.fair = fair
        self.lmbda = lmbda
        self.lipschitz = lipschitz
        self.max_iter = max_iter
        self.random_state = random_state

    def _estimator(self) -> Any:
        from fairaudit.cluster import VariationalFairClustering

        lam = self.lmbda if self.lmbda == "auto" else float(self.lmbda)
        return VariationalFairClustering(self.n_clusters, fair=self.fair, lmbda=lam,
                                         lipschitz=float(self.lipschitz),
                                         max_iter=self.max_iter, random_state=self.random_state)

    def _finish(self, est: Any, data: AuditData) -> None:
        self.extras_.update({
            "lmbda": finite(est.lmbda_), "fairness_error": finite(est.fairness_error_),
            "lambda_search": [{k: finite(v) if isinstance(v, float) else v for k, v in t.items()}
                              for t in est.lambda_search_],
        })
        if est.fair_applied_ and self.lmbda == "auto":
            self.notes_ = (f"lambda = {est.lmbda_:g}: the lowest fairness error over "
                           f"{len(est.lambda_search_)} values (the authors' rule).",)


@hookimpl
def fairaudit_register_clusterers() -> list[type[Clusterer]]:
    return [FairSCClusterer, FairletsClusterer, BeraClusterer, VFCClusterer]
