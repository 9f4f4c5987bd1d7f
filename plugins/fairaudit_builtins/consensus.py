"""Built-in clusterer ``fce``: fair consensus of several labellings (FCE, seed 003).

In a chain, ``fce`` combines earlier labellings (``[[cluster]]`` steps and/or the ``data.labels``
column) named in ``labellings``; with ``labellings`` unset it combines every earlier labelling
except other ``fce`` consensuses when there are at least two, and otherwise has the estimator
make ``n_bases`` seeded k-means bases from the features (kept for ``predict``). ``extras_`` compares the consensus with each base on balance, fairness_CCE, CCE, MNCE,
NE and ARI, for the report.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fairaudit.core.components import AnyOf, Clusterer, Interval, Options, ReportSection, TypeIs
from fairaudit.core.data import AuditData
from fairaudit.hookspecs import hookimpl
from fairaudit.report.results import finite


def _table(labels: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """groups x clusters counts without noise rows and without empty rows / columns."""
    keep = labels >= 0
    lab = np.unique(labels[keep], return_inverse=True)[1]
    N = np.zeros((int(groups.max()) + 1, int(lab.max()) + 1 if lab.size else 0), dtype=np.int64)
    np.add.at(N, (groups[keep], lab), 1)
    return N[N.sum(axis=1) > 0][:, N.sum(axis=0) > 0]


def compare_labellings(
    labellings: dict[str, np.ndarray], attributes: dict[str, np.ndarray], consensus: str
) -> list[dict[str, Any]]:
    """One row per (labelling, attribute): counting metrics and ARI with the consensus."""
    from sklearn.metrics import adjusted_rand_score

    from fairaudit.metrics import balance, cce, fairness_cce, mnce, ne

    rows: list[dict[str, Any]] = []
    ref = labellings[consensus]
    for name, labels in labellings.items():
        keep = labels >= 0
        ari = adjusted_rand_score(ref[keep], labels[keep]) if keep.any() else float("nan")
        for attribute, groups in attributes.items():
            N = _table(labels, groups)
            row: dict[str, Any] = {
                "labelling": name,
                "attribute": attribute,
                "is_consensus": name == consensus,
                "n_clusters": int(N.shape[1]),
                "noise": int((~keep).sum()),
                "ari_with_consensus": finite(ari),
            }
            if N.shape[0] >= 1 and N.shape[1] >= 1:
                b = balance(N)
                row.update(
                    balance_min=finite(b.min),
                    balance_mean=finite(b.mean),
                    fairness_cce=finite(fairness_cce(N)),
                    cce=finite(cce(N)),
                    mnce=finite(mnce(N)) if N.shape[0] > 1 else None,
                    ne=finite(ne(N)) if N.shape[1] > 1 else None,
                )
            rows.append(row)
    return rows


class FCEClusterer(Clusterer):
    """Fair clustering ensemble: a fair, equal-capacity consensus of several labellings."""

    name = "fce"
    description = (
        "Fair clustering ensemble (FCE, PAMI 2025): fair, equal-capacity consensus of earlier "
        "labellings or of seeded k-means bases."
    )
    requires = frozenset({"features", "sensitive"})
    provides = frozenset({"labels"})
    max_rows = 200_000
    constraints = {
        "n_clusters": AnyOf((Interval(int, 2, None), Options((None,)))),
        "labellings": AnyOf((Options((None,)), TypeIs((list, tuple), "a list of labelling names"))),
        "n_bases": Interval(int, 2, None),
        "lambda1": Interval(float, 0.0, None, closed="neither"),
        "lambda2": AnyOf((Interval(float, 0.0, None), Options(("auto",)))),
        "max_iter": Interval(int, 1, None),
        "fair": Options((True, False)),
        "group_weights": Options(("share", "count")),
    }
    param_docs = {
        "n_clusters": "consensus clusters (default: the median k of the bases)",
        "labellings": "names of earlier labellings to combine (default: all but other fce "
        "consensuses, if >= 2)",
        "n_bases": "k-means bases generated from the features when no labellings are combined",
        "lambda1": "weight of the discretisation term (paper: 1e-3)",
        "lambda2": "weight of the fairness/capacity term ||G^T Y||^2; 'auto' scales with n, c",
        "max_iter": "outer iterations",
        "fair": "false = the unfair consensus twin (fairness/capacity term off, lambda2 = 0)",
        "group_weights": "'share' (each group's counts relative to its size, as fairness_CCE "
        "measures them; default) or 'count' (the paper's ||G^T Y||^2: small groups hardly count)",
        "random_state": "seed (filled from the chain seed when unset)",
    }

    def __init__(
        self,
        n_clusters: int | None = None,
        *,
        labellings: list[str] | None = None,
        n_bases: int = 10,
        lambda1: float = 1e-3,
        lambda2: float | str = "auto",
        max_iter: int = 100,
        fair: bool = True,
        group_weights: str = "share",
        random_state: int | None = None,
    ) -> None:
        self.n_clusters = n_clusters
        self.labellings = labellings
        self.n_bases = n_bases
        self.lambda1 = lambda1
        self.lambda2 = lambda2
        self.max_iter = max_iter
        self.fair = fair
        self.group_weights = group_weights
        self.random_state = random_state

    def _bases(self, data: AuditData) -> tuple[dict[str, np.ndarray], str]:
        """Earlier labellings to combine (name -> labels), or ({}, "kmeans") when FCE makes
        seeded k-means bases from the features itself."""
        available = dict(data.labellings)
        if self.labellings is not None:
            names = list(self.labellings)
            unknown = [n for n in names if n not in available]
            if unknown:
                raise ValueError(
                    f"fce: unknown labelling(s) {unknown} in 'labellings'; earlier labellings are "
                    f"{sorted(available)}"
                )
            if len(names) < 2:
                raise ValueError(
                    f"fce needs at least two base labellings in 'labellings'; got {names}"
                )
            return {n: np.asarray(available[n].labels) for n in names}, "labellings"
        # default: every earlier labelling except other FCE consensuses, so that an fce step
        # and its fair=false twin combine the same bases
        default = {n: lab for n, lab in available.items() if lab.component != self.name}
        if len(default) >= 2:
            return {n: np.asarray(lab.labels) for n, lab in default.items()}, "labellings"
        return {}, "kmeans"  # generated by the estimator itself (bases="kmeans")

    def fit(self, data: AuditData) -> FCEClusterer:
        from fairaudit.cluster import FairClusteringEnsemble

        bases, origin = self._bases(data)
        codes = data.sensitive_codes()
        common = {
            "lambda1": self.lambda1,
            "lambda2": self.lambda2,
            "max_iter": self.max_iter,
            "random_state": self.random_state,
            "fair": bool(self.fair),
            "group_weights": str(getattr(self, "group_weights", "share")),
        }
        if origin == "kmeans":
            k = self.n_clusters or 8
            est = FairClusteringEnsemble(k, bases="kmeans", n_bases=self.n_bases, **common).fit(
                data.feature_matrix(), sensitive=codes.codes
            )
            bases = {
                f"kmeans_base_{j}": np.asarray(km.labels_, dtype=np.int64)
                for j, km in enumerate(est.base_estimators_)
            }
            B = np.column_stack(list(bases.values()))
        else:
            B = np.column_stack(list(bases.values())).astype(np.int64)
            k = self.n_clusters
            if k is None:
                ks = [len(np.unique(b[b >= 0])) for b in B.T]
                k = max(2, int(np.median(ks)))
            est = FairClusteringEnsemble(k, **common).fit(B, sensitive=codes.codes)
        self.labels_ = est.labels_.astype(np.int64)
        self.n_clusters_ = k
        self.estimator_ = est
        self.bases_ = tuple(bases)
        self.bases_origin_ = origin
        # bases that are labels columns of the input: predict reads them from the rows
        self._column_bases = frozenset(
            n for n in bases if n in data.labellings and data.labellings[n].origin == "column"
        )

        attributes = {name: codes.codes[:, j] for j, name in enumerate(codes.names)}
        if len(codes.names) > 1:
            inter, _ = codes.intersection()
            attributes["|".join(codes.names)] = inter
        all_labels = {**bases, "consensus": self.labels_}
        self.extras_ = {
            "method": "fce",
            "bases_origin": origin,
            "bases": list(bases),
            "weights": {n: float(w) for n, w in zip(bases, est.weights_, strict=True)},
            "lambda1": float(self.lambda1),
            "lambda2": float(est.lambda2_),
            "lambda2_tried": [float(v) for v in est.lambda2_tried_],
            "fair": bool(self.fair),
            "n_iter": int(est.n_iter_),
            "objective": [
                {
                    "iteration": h.iteration,
                    "objective": h.objective,
                    "ensemble": h.ensemble,
                    "discretisation": h.discretisation,
                    "fairness": h.fairness,
                    "moves": h.moves,
                }
                for h in est.objective_
            ],
            "comparison": compare_labellings(all_labels, attributes, "consensus"),
        }
        notes = []
        if origin == "kmeans":
            notes.append(
                f"FCE combined {len(bases)} seeded k-means bases (k = {self.n_clusters or 8}) "
                "generated from the features."
            )
        else:
            notes.append(f"FCE combined the labellings {', '.join(bases)}.")
        if any((b < 0).any() for b in B.T):
            notes.append(
                "Noise rows (-1) in a base abstain from that base's vote; the consensus labels "
                "every row."
            )
        if not self.fair:
            notes.append("fair=false: the fairness/capacity term was switched off (the twin).")
        elif est.lambda2_tried_ and not est.fair_applied_:
            notes.append(
                "No weight of the fairness/capacity term up to "
                f"{est.lambda2_tried_[-1]:.3g} gave a consensus fairer (fairness_CCE) than the "
                "unfair one from the same start: the result is the unfair consensus (the twin)."
            )
        elif len(est.lambda2_tried_) > 1:
            notes.append(
                f"lambda2 'auto' was raised to {est.lambda2_:.3g} "
                f"({len(est.lambda2_tried_) - 1} step(s) of x3): the smaller weights did not make "
                "the consensus fairer (fairness_CCE) than the unfair one from the same start."
            )
        self.notes_ = tuple(notes)
        return self

    def predict(self, data: AuditData) -> np.ndarray:
        """Consensus labels of (new) rows from their base labels (``FairClusteringEnsemble.
        predict``). Generated k-means bases label the rows themselves; combined labellings must
        be present in ``data.labellings`` under the same names (each base clusterer's own
        predictions for these rows), or, for a labels column of the input, in ``data.frame`` — a
        base that cannot assign new rows makes FCE unable to."""
        import polars as pl

        est = getattr(self, "estimator_", None)
        if est is None:
            raise RuntimeError("fce: predict called before fit")
        codes = data.sensitive_codes()
        if self.bases_origin_ == "kmeans":
            return est.predict(data.feature_matrix(), sensitive=codes.codes).astype(np.int64)
        else:
            cols = []
            missing = []
            for n in self.bases_:
                if n in data.labellings:
                    cols.append(np.asarray(data.labellings[n].labels))
                elif n in self._column_bases and n in data.frame.columns:
                    cols.append(data.frame.get_column(n).cast(pl.Int64).to_numpy())
                else:
                    missing.append(n)
            if missing:
                raise NotImplementedError(
                    f"fce cannot assign new rows without the base labellings {missing} for "
                    "them (their clusterers' predictions); available: "
                    f"{sorted(data.labellings)}"
                )
            B = np.column_stack(cols)
        return est.predict(B.astype(np.int64), sensitive=codes.codes).astype(np.int64)


@hookimpl
def fairaudit_register_clusterers() -> list[type[Clusterer]]:
    return [FCEClusterer]


# ============================================================================ report section
class ConsensusSection(ReportSection):
    """FCE: the fair consensus against each base labelling it combined."""

    name = "consensus"
    title = "Fair consensus (FCE)"
    order = 380
    template = "sections/consensus.html.j2"

    def applies(self, run: Any) -> bool:
        return any((lab.get("extras") or {}).get("comparison") for lab in run.labellings)

    def context(self, run: Any) -> dict[str, Any]:
        blocks = []
        for lab in run.labellings:
            extras = lab.get("extras") or {}
            rows = extras.get("comparison")
            if not rows:
                continue
            attributes = list(dict.fromkeys(r["attribute"] for r in rows))
            blocks.append(
                {
                    "labelling": lab["name"],
                    "attributes": attributes,
                    "rows": rows,
                    "weights": extras.get("weights"),
                    "lambda2": extras.get("lambda2"),
                    "notes": lab.get("notes") or [],
                }
            )
        return {"blocks": blocks}


@hookimpl
def fairaudit_register_report_sections() -> list[type]:
    return [ConsensusSection]
