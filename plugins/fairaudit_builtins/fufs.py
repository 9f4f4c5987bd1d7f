"""Built-in FUFS components: preprocessor ``fufs`` and auditor ``proxy`` (proxy-feature analysis).

* ``fufs`` keeps the features FUFS ranks best (structure kept, protected information left out)
  and records, for the report, every feature's proxy score, utility score and its association
  (Cramér's V, mutual information) with each sensitive attribute on the same rows.
* ``proxy`` reports, per sensitive attribute, the strongest association of any feature with it
  (lower is better) and the full per-feature table in ``detail`` (cheap: a seeded row sample).

Both see the sensitive attributes only to measure them; they never become features.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fairaudit.core.components import (
    AnyOf,
    AuditContext,
    Auditor,
    Direction,
    Interval,
    MetricSpec,
    Options,
    Preprocessor,
    ReportSection,
)
from fairaudit.core.data import AuditData
from fairaudit.hookspecs import hookimpl
from fairaudit.report.results import MetricResult, finite

_COMMON_CONSTRAINTS = {
    "alpha": Interval(float, 0.0, None),
    "beta": Interval(float, 0.0, None),
    "gamma": AnyOf((Interval(float, 0.0, None, closed="neither"), Options(("auto",)))),
    "max_iter": Interval(int, 1, None),
    "learning_rate": Interval(float, 0.0, None, closed="neither"),
    "max_samples": Interval(int, 10, None),
}
_COMMON_DOCS = {
    "alpha": "weight of the fairness terms (paper: 1)",
    "beta": "l1 weight on the selection and proxy vectors (paper: 0.1)",
    "gamma": "RBF width on standardised features; 'auto' = 1/d",
    "max_iter": "projected-gradient steps (paper: 50)",
    "learning_rate": "step size (normalised traces)",
    "max_samples": "rows used in the n x n kernels; a seeded sample above this",
    "random_state": "seed of the row sample (filled from the chain seed when unset)",
}


def proxy_table(
    X: np.ndarray,
    names: Sequence[str],
    codes: Any,
    *,
    alpha: float,
    beta: float,
    gamma: float | str,
    max_iter: int,
    learning_rate: float,
    max_samples: int,
    random_state: Any,
    max_bins: int = 10,
    n_features_to_select: int | float = 0.3,
) -> tuple[Any, list[dict[str, Any]], dict[str, Any]]:
    """Fit FUFS and measure associations on the same rows. Returns (fufs, rows, summary)."""
    from fairaudit.preprocess import FUFS
    from fairaudit.preprocess.associations import feature_associations

    S = codes.codes
    attributes = list(codes.names)
    if len(attributes) > 1:
        inter, _ = codes.intersection()
        S = np.column_stack([S, inter])
        attributes.append("|".join(codes.names))
    k = n_features_to_select
    if isinstance(k, int) and k > X.shape[1]:
        k = X.shape[1]
    fufs = FUFS(
        k,
        alpha=alpha,
        beta=beta,
        gamma=gamma,
        max_iter=max_iter,
        learning_rate=learning_rate,
        max_samples=max_samples,
        random_state=random_state,
    ).fit(X, sensitive=codes.codes)
    rows_used = fufs.sample_indices_
    Xr = X if rows_used is None else X[rows_used]
    Sr = S if rows_used is None else S[rows_used]
    assoc = feature_associations(Xr, Sr, max_bins=max_bins)
    proxy_rank = {int(f): r + 1 for r, f in enumerate(fufs.proxy_ranking_)}
    rows = []
    for f, name in enumerate(names):
        rows.append(
            {
                "feature": name,
                "proxy_score": finite(fufs.proxy_scores_[f]),
                "utility_score": finite(fufs.scores_[f]),
                "proxy_rank": proxy_rank[f],
                "selected": bool(fufs.support_[f]),
                "excluded": f in fufs.excluded_features_,
                "associations": {
                    attr: {
                        "cramers_v": finite(assoc.cramers_v[f, j]),
                        "mutual_information": finite(assoc.mutual_information[f, j]),
                    }
                    for j, attr in enumerate(attributes)
                },
            }
        )
    rows.sort(key=lambda r: r["proxy_rank"])
    summary = {
        "method": "fufs",
        "rows_used": int(assoc.n_rows),
        "sampled": rows_used is not None,
        "attributes": attributes,
        "association_measure": "Cramér's V (features cut into at most "
        f"{max_bins} quantile bins); mutual information in nats",
        "notes": list(fufs.notes_),
    }
    return fufs, rows, summary


class FUFSPreprocessor(Preprocessor):
    """Fairness-aware unsupervised feature selection (FUFS, CIKM 2021)."""

    name = "fufs"
    description = (
        "Fairness-aware unsupervised feature selection (FUFS): keeps structure-preserving "
        "features that carry little protected information; flags proxy features."
    )
    requires = frozenset({"features", "sensitive"})
    provides = frozenset({"features"})
    constraints = {
        "n_features_to_select": AnyOf(
            (Interval(int, 1, None), Interval(float, 0.0, 1.0, closed="right"))
        ),
        **_COMMON_CONSTRAINTS,
    }
    param_docs = {
        "n_features_to_select": "features kept: a count, or a fraction of the features",
        **_COMMON_DOCS,
    }

    def __init__(
        self,
        n_features_to_select: int | float = 0.3,
        *,
        alpha: float = 1.0,
        beta: float = 0.1,
        gamma: float | str = "auto",
        max_iter: int = 50,
        learning_rate: float = 0.05,
        max_samples: int = 2000,
        random_state: int | None = None,
    ) -> None:
        self.n_features_to_select = n_features_to_select
        self.alpha = alpha
        self.beta = beta
        self.gamma = gamma
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.max_samples = max_samples
        self.random_state = random_state

    def fit(self, data: AuditData) -> FUFSPreprocessor:
        X = data.feature_matrix()
        names = list(data.feature_names)
        fufs, rows, summary = proxy_table(
            X,
            names,
            data.sensitive_codes(),
            alpha=self.alpha,
            beta=self.beta,
            gamma=self.gamma,
            max_iter=self.max_iter,
            learning_rate=self.learning_rate,
            max_samples=self.max_samples,
            random_state=self.random_state,
            n_features_to_select=self.n_features_to_select,
        )
        self.fufs_ = fufs
        self.selected_ = tuple(n for n, keep in zip(names, fufs.support_, strict=True) if keep)
        self.report_ = {**summary, "selected": list(self.selected_), "features": rows}
        notes = list(fufs.notes_)
        if fufs.excluded_features_:
            notes.append(
                "Excluded from selection as copies of a sensitive attribute: "
                + ", ".join(names[f] for f in fufs.excluded_features_)
            )
        top = rows[0]
        notes.append(
            f"FUFS kept {len(self.selected_)} of {len(names)} features; strongest proxy: "
            f"{top['feature']!r} (proxy score {top['proxy_score']:.3g})."
            if top["proxy_score"] is not None
            else f"FUFS kept {len(self.selected_)} of {len(names)} features."
        )
        self.notes_ = tuple(notes)
        return self

    def transform(self, data: AuditData) -> AuditData:
        if not hasattr(self, "selected_"):
            raise ValueError("the 'fufs' preprocessor is not fitted; call fit first")
        return data.replace(features=data.features.select(list(self.selected_)))

    def notes(self) -> tuple[str, ...]:
        return tuple(getattr(self, "notes_", ()))


class ProxyAuditor(Auditor):
    """Proxy features: how strongly any feature stands in for a sensitive attribute."""

    name = "proxy"
    description = (
        "Proxy-feature analysis: FUFS proxy scores and each feature's association (Cramér's V, "
        "mutual information) with each sensitive attribute, on a seeded row sample."
    )
    requires = frozenset({"features", "sensitive"})
    per_labelling = False
    metrics = (
        MetricSpec(
            "max_proxy_association",
            Direction.LOWER_IS_BETTER,
            "Largest Cramér's V between any feature and the sensitive attribute",
            range=(0.0, 1.0),
            headline=True,
            bootstrap=False,
            per_attribute=True,
        ),
    )
    constraints = {**_COMMON_CONSTRAINTS, "max_bins": Interval(int, 2, None)}
    param_docs = {**_COMMON_DOCS, "max_bins": "quantile bins per numeric feature for Cramér's V"}

    def __init__(
        self,
        *,
        alpha: float = 1.0,
        beta: float = 0.1,
        gamma: float | str = "auto",
        max_iter: int = 50,
        learning_rate: float = 0.05,
        max_samples: int = 1000,
        max_bins: int = 10,
        random_state: int | None = None,
    ) -> None:
        self.alpha = alpha
        self.beta = beta
        self.gamma = gamma
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.max_samples = max_samples
        self.max_bins = max_bins
        self.random_state = random_state

    def rows_needed(self) -> int | None:
        return int(self.max_samples)

    def audit(self, ctx: AuditContext) -> list[MetricResult]:
        data = ctx.data
        if data is None:
            return []
        X = data.feature_matrix()
        names = list(data.feature_names)
        seed = self.random_state if self.random_state is not None else ctx.random_state
        _, rows, summary = proxy_table(
            X,
            names,
            data.sensitive_codes(),
            alpha=self.alpha,
            beta=self.beta,
            gamma=self.gamma,
            max_iter=self.max_iter,
            learning_rate=self.learning_rate,
            max_samples=self.max_samples,
            random_state=seed,
            max_bins=self.max_bins,
            n_features_to_select=1,
        )
        results = []
        for attr in summary["attributes"]:
            vals = [
                (r["associations"][attr]["cramers_v"], r["feature"])
                for r in rows
                if r["associations"][attr]["cramers_v"] is not None
            ]
            best = max(vals) if vals else (float("nan"), None)
            notes = list(summary["notes"])
            if best[1] is not None:
                notes.append(f"strongest proxy of {attr}: {best[1]!r} (Cramér's V {best[0]:.3f})")
            results.append(
                MetricResult(
                    auditor=self.name,
                    metric="max_proxy_association",
                    labelling=ctx.labelling.name,
                    value=float(best[0]),
                    direction=Direction.LOWER_IS_BETTER,
                    attribute=attr,
                    n_rows=summary["rows_used"],
                    notes=tuple(notes),
                    headline=True,
                    detail={**summary, "top_feature": best[1], "features": rows},
                )
            )
        return results


@hookimpl
def fairaudit_register_preprocessors() -> list[type[Preprocessor]]:
    return [FUFSPreprocessor]


@hookimpl
def fairaudit_register_auditors() -> list[type[Auditor]]:
    return [ProxyAuditor]


# ============================================================================ report section
class ProxySection(ReportSection):
    """Proxy features: which features carry the sensitive information (FUFS proxy score) and how
    strongly each is associated with each sensitive attribute, on the same rows."""

    name = "proxy"
    title = "Proxy features"
    order = 250
    template = "sections/proxy.html.j2"
    auditors = ("proxy",)

    def applies(self, run: Any) -> bool:
        return bool(run.results_for(auditor="proxy")) or any(
            p.get("use") == "fufs" for p in run.doc.get("preprocessing", [])
        )

    def context(self, run: Any) -> dict[str, Any]:
        from fairaudit.report import charts

        results = run.results_for(auditor="proxy")
        source = None
        if results:
            detail = results[0].get("detail") or {}
            rows = detail.get("features") or []
            source = "proxy auditor"
        else:
            pre = next(p for p in run.doc["preprocessing"] if p.get("use") == "fufs")
            detail = pre.get("report") or {}
            rows = detail.get("features") or []
            source = "fufs preprocessor"
        kept = next(
            (set(p.get("report", {}).get("selected") or []) for p in run.doc.get("preprocessing", [])
             if p.get("use") == "fufs"),
            None,
        )
        attributes = list(detail.get("attributes") or [])
        top = [r for r in rows if r.get("proxy_score") is not None][:20]
        svg = charts.hbar(
            [r["feature"] for r in top], [r["proxy_score"] for r in top],
            title="FUFS proxy score (higher = carries more sensitive information)",
            xlabel="proxy score", max_bars=20,
        ) if top else None
        table = []
        for r in rows:
            assoc = r.get("associations") or {}
            table.append({
                "feature": r["feature"],
                "proxy_score": r.get("proxy_score"),
                "proxy_rank": r.get("proxy_rank"),
                "utility_score": r.get("utility_score"),
                "kept": (r["feature"] in kept) if kept is not None else None,
                "excluded": r.get("excluded", False),
                "assoc": [
                    {"v": (assoc.get(a) or {}).get("cramers_v"),
                     "mi": (assoc.get(a) or {}).get("mutual_information")}
                    for a in attributes
                ],
            })
        headline = [
            {"attribute": r["attribute"], "value": r["value"], "status": r["status"],
             "threshold": r["threshold"], "notes": r.get("notes") or []}
            for r in results
        ]
        return {
            "svg": svg, "rows": table, "attributes": attributes, "headline": headline,
            "rows_used": detail.get("rows_used"), "sampled": detail.get("sampled"),
            "measure": detail.get("association_measure"), "source": source,
            "fufs_kept": kept is not None,
        }


@hookimpl
def fairaudit_register_report_sections() -> list[type]:
    return [ProxySection]
