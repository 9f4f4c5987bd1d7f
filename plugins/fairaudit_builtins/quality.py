"""Built-in ``quality`` auditor and the "Clustering quality" and "Price of fairness" sections.

- ``quality``: silhouette of every labelling (headline, higher is better) on a seeded sample of
  rows, on the feature matrix the clusterers were given (after preprocessing); noise rows are
  left out and counted. For density-based labellings (a density clusterer, or any labelling with
  noise) also DCSI on the same sample. The method's own objective is not a metric here (the
  objectives of different methods are not comparable): the host reads it from the fitted
  clusterer into ``labellings[i].fit`` and the quality section shows it.
- ``quality`` section: silhouette, DCSI, the method's objective, convergence and the degenerate-
  labelling warnings (``labellings[i].warnings``), per labelling.
- ``twins`` section: each fair labelling against its ``fair = false`` twin (``doc["twins"]``):
  fairness gained on the method's own target metric and silhouette lost.

Formulas and rules: ``docs/metrics.md`` ("Clustering quality", "Degenerate labellings", "Price
of fairness").
"""

from __future__ import annotations

from collections.abc import Mapping
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
    ReportSection,
)
from fairaudit.core.data import sample_rows
from fairaudit.errors import InputError
from fairaudit.hookspecs import hookimpl
from fairaudit.report import charts
from fairaudit.report.results import MetricResult, finite

DENSITY_BASED = frozenset({"fairden", "dbscan", "hdbscan", "optics"})
"""Components whose labellings get DCSI with ``dcsi = "auto"`` (besides any with noise rows)."""
HIGHER = Direction.HIGHER_IS_BETTER


def _features(data: Any) -> tuple[np.ndarray | None, list[str], list[str]]:
    """The feature matrix; when it has non-finite values (possible in a labels audit), only its
    finite numeric columns. Returns (X or None, columns used, columns skipped)."""
    try:
        X = data.feature_matrix()
        return X, list(data.feature_names), []
    except InputError:
        pass
    used, skipped, cols = [], [], []
    for name, dtype in data.features.schema.items():
        col = data.features.get_column(name)
        if not dtype.is_numeric() and str(dtype) != "Boolean":
            skipped.append(name)
            continue
        arr = col.cast(float).to_numpy()
        if col.null_count() or not np.isfinite(arr).all():
            skipped.append(name)
            continue
        used.append(name)
        cols.append(arr)
    if not cols:
        return None, [], skipped
    return np.ascontiguousarray(np.column_stack(cols), dtype=np.float64), used, skipped


class QualityAuditor(Auditor):
    """Silhouette (all labellings) and DCSI (density-based ones) on a seeded row sample."""

    name = "quality"
    description = (
        "Clustering quality beside fairness: silhouette on a seeded sample of rows (noise left "
        "out), and DCSI for density-based labellings."
    )
    requires = frozenset({"labels", "features"})
    metrics = (
        MetricSpec(
            "silhouette", HIGHER,
            "mean silhouette (b - a) / max(a, b) over the sampled non-noise rows (Euclidean, "
            "on the clusterers' feature matrix)",
            range=(-1.0, 1.0), headline=True, bootstrap=False, per_attribute=False,
            meaning="How well the clusters are separated, not how fair they are: for each row, "
            "how much closer it is to its own cluster than to the nearest other one.",
            good="Above 0.5 is a clear structure, 0.25-0.5 a weak one, near 0 overlapping "
            "clusters (Kaufman & Rousseeuw); compare labellings of the same data.",
            choose_threshold="--fail-under silhouette=0.1 guards against a labelling that no "
            "longer separates anyone; set it from a run you trust.",
            verdict_bound=None,
            verdict_reason="a quality metric: it never enters the fairness verdict",
        ),
        MetricSpec(
            "dcsi", HIGHER,
            "DCSI of density-based labellings on the same sample (noise excluded)",
            bootstrap=False, per_attribute=False,
            meaning="How well density-based clusters are separated relative to how connected "
            "each one is (noise left out).",
            good="Towards 1 = well separated; near 0 = clusters merge.",
            verdict_bound=None,
            verdict_reason="a quality metric: it never enters the fairness verdict",
        ),
    )
    constraints = {
        "sample_size": AnyOf((Interval(int, 100, None), Options((None,)))),
        "dcsi": Options(("auto", "always", "never")),
        "min_pts": Interval(int, 1, None),
    }
    param_docs = {
        "sample_size": "rows drawn (seeded, the same rows for every labelling) for silhouette "
        "and DCSI; None = every row (quadratic cost)",
        "dcsi": "'auto' = DCSI for density-based labellings (a density clusterer or any noise "
        "rows), 'always', or 'never'",
        "min_pts": "DCSI core-point parameter",
        "random_state": "seed of the row sample (filled from the chain seed when unset)",
    }

    def __init__(
        self,
        *,
        sample_size: int | None = 5000,
        dcsi: str = "auto",
        min_pts: int = 5,
        random_state: int | None = None,
    ) -> None:
        self.sample_size = sample_size
        self.dcsi = dcsi
        self.min_pts = min_pts
        self.random_state = random_state

    def rows_needed(self) -> int | None:
        return self.sample_size

    def _density_based(self, ctx: AuditContext, labels: np.ndarray) -> bool:
        if self.dcsi != "auto":
            return self.dcsi == "always"
        return ctx.labelling.component in DENSITY_BASED or bool((labels < 0).any())

    def audit(self, ctx: AuditContext) -> list[MetricResult]:
        from fairaudit.metrics.quality import silhouette

        data = ctx.data
        if data is None:
            return []
        labels = np.asarray(ctx.labelling.labels, dtype=np.int64)
        name = ctx.labelling.name
        X, used, skipped = _features(data)
        notes: list[str] = []
        if skipped:
            notes.append(
                "Left out of the feature matrix (not numeric or not finite): "
                + ", ".join(skipped) + "."
            )
        if X is None:
            notes.append("No usable feature column: quality is undefined.")
            return [self._result(name, "silhouette", float("nan"), 0, notes, {}, ())]
        seed = self.random_state if self.random_state is not None else ctx.random_state
        rows = sample_rows(labels.size, self.sample_size, seed)
        clean = rows[labels[rows] >= 0]
        n_noise = int(rows.size - clean.size)
        if rows.size < labels.size:
            notes.append(
                f"Silhouette on a seeded sample of {rows.size:,} of {labels.size:,} rows "
                f"(seed {seed}; the same rows for every labelling)."
            )
        if n_noise:
            notes.append(f"{n_noise:,} noise {'row' if n_noise == 1 else 'rows'} of the sample "
                         f"{'was' if n_noise == 1 else 'were'} left out.")
        res = silhouette(X[clean], labels[clean])
        notes.extend(res.notes)
        detail = {
            "rows_sampled": int(rows.size),
            "rows_used": int(clean.size),
            "noise_left_out": n_noise,
            "sample_size": self.sample_size,
            "seed": int(seed),
            "features": len(used),
            "distance": "euclidean",
        }
        per_cluster = tuple(
            {"cluster": int(c), "value": finite(v), "n": int(n)}
            for c, v, n in zip(res.clusters, res.per_cluster, res.sizes, strict=True)
        )
        out = [self._result(name, "silhouette", res.value, int(clean.size), notes, detail,
                            per_cluster)]
        if self._density_based(ctx, labels):
            from fairaudit.metrics.density_separation import dcsi

            d = dcsi(X[rows], labels[rows], min_pts=int(self.min_pts))
            out.append(self._result(
                name, "dcsi", d.value, int(clean.size), list(d.notes),
                {"min_pts": int(self.min_pts), "rows_sampled": int(rows.size),
                 "noise_fraction": finite(d.noise_fraction),
                 "noise_adjusted": finite(d.noise_adjusted)}, (),
            ))
        return out

    def _result(self, labelling: str, metric: str, value: float, n_rows: int, notes: list[str],
                detail: dict[str, Any], per_cluster: tuple[dict[str, Any], ...]) -> MetricResult:
        return MetricResult(
            auditor=self.name, metric=metric, labelling=labelling, value=float(value),
            direction=HIGHER, n_rows=n_rows, notes=tuple(notes), headline=metric == "silhouette",
            detail=detail, per_cluster=per_cluster,
        )


# ============================================================================ sections
def _value(run: Any, metric: str, labelling: str) -> Mapping[str, Any] | None:
    res = run.results_for(auditor="quality", metric=metric, labelling=labelling)
    return res[0] if res else None


class QualitySection(ReportSection):
    name = "quality"
    title = "Clustering quality"
    order = 420
    template = "sections/quality.html.j2"
    description = (
        "Silhouette and DCSI per labelling, each method's own objective and convergence, and "
        "warnings about degenerate labellings."
    )
    auditors = ("quality",)

    def applies(self, run: Any) -> bool:
        return bool(run.results_for(auditor="quality")) or any(
            lab.get("warnings") or lab.get("fit") for lab in run.labellings
        )

    def context(self, run: Any) -> dict[str, Any]:
        rows = []
        detail: dict[str, Any] = {}
        for lab in run.labellings:
            sil = _value(run, "silhouette", lab["name"])
            dc = _value(run, "dcsi", lab["name"])
            fit = lab.get("fit") or {}
            if sil and sil.get("detail"):
                detail = sil["detail"]
            rows.append({
                "name": lab["name"],
                "component": lab.get("component") or (
                    f"column {lab.get('column')}" if lab.get("origin") == "column" else ""),
                "silhouette": None if sil is None else sil.get("value"),
                "silhouette_status": None if sil is None else sil.get("status"),
                "silhouette_threshold": None if sil is None else sil.get("threshold"),
                "rows_used": None if sil is None else (sil.get("detail") or {}).get("rows_used"),
                "noise_left_out": None if sil is None
                else (sil.get("detail") or {}).get("noise_left_out"),
                "dcsi": None if dc is None else dc.get("value"),
                "objective": fit.get("objective"),
                "objective_name": fit.get("objective_name"),
                "n_iter": fit.get("n_iter"),
                "max_iter": fit.get("max_iter"),
                "converged": fit.get("converged"),
                "warnings": list(lab.get("warnings") or ()),
                "notes": [] if sil is None else list(sil.get("notes") or ()),
                "per_cluster": [] if sil is None else list(sil.get("per_cluster") or ()),
            })
        svg = None
        vals = [(r["name"], finite(r["silhouette"])) for r in rows]
        vals = [(n, v) for n, v in vals if v is not None]
        if len(vals) > 1:
            svg = charts.hbar([n for n, _ in vals], [v for _, v in vals],
                              title="Silhouette (higher = better separated)")
        return {"rows": rows, "sample": detail, "svg": svg}


class TwinsSection(ReportSection):
    name = "twins"
    title = "Price of fairness"
    order = 350
    template = "sections/twins.html.j2"
    description = (
        "Each fair labelling against its fair = false twin: fairness gained on the method's own "
        "target metric, silhouette lost."
    )

    def applies(self, run: Any) -> bool:
        return bool(run.doc.get("twins"))

    def context(self, run: Any) -> dict[str, Any]:
        entries = [dict(e) for e in run.doc.get("twins") or ()]
        for e in entries:
            gain, loss = finite(e.get("gain")), finite(e.get("quality_loss"))
            ci = e.get("gain_ci")
            e["fairer"] = None if not ci else ci[0] > 0
            e["verdict"] = _verdict(gain, ci, loss)
        shown = [e for e in entries if finite(e.get("gain")) is not None]
        svg = None
        if shown:
            svg = charts.hbar(
                [f"{e['fair']} · {e.get('attribute') or 'all rows'} ({e['target_metric']})"
                 for e in shown],
                [e["gain"] for e in shown],
                title="Fairness gained over the fair = false twin (+ = fairer)",
                reference=0.0, fmt="{:+.3f}",
            )
        return {"entries": entries, "svg": svg}


def _verdict(gain: float | None, ci: Any, loss: float | None) -> str:
    """The reading of a price-of-fairness entry: "fairer" only when the interval of the gain
    lies above 0 (point estimates alone decide nothing)."""
    if gain is None:
        return "not comparable (a value is undefined)"
    if not ci:
        return "not decided: no interval of the gain (--bootstrap 0 or an interval missing)"
    if ci[1] < 0:
        return "less fair than the twin (the interval of the gain lies below 0)"
    if ci[0] <= 0:
        return "no clear gain over the twin (the interval of the gain holds 0)"
    if loss is None:
        return "fairer; quality change unknown"
    if abs(loss) < 0.0005:  # shown as +0.000 / -0.000
        return "fairer; silhouette unchanged to 3 decimals"
    if loss < 0:
        return "fairer at no loss of silhouette"
    return "fairer, at a loss of silhouette"


@hookimpl
def fairaudit_register_auditors() -> list[type]:
    return [QualityAuditor]


@hookimpl
def fairaudit_register_report_sections() -> list[type]:
    return [QualitySection, TwinsSection]
