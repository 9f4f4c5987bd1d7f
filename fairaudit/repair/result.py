"""The repair's typed result and its JSON document (docs/repair.md, "The JSON").

The document holds everything the HTML report shows (it is rendered from the JSON alone):
the parameters, the program's size, the price (people moved beside the LP bound; distance
added when features are given), the targets before and after (the after values from the
after-audit of the written column, with its intervals), the segments' sizes, the moves as a
from x to table per group, and the two audits in full.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from fairaudit.repair.inputs import Rows, Source
    from fairaudit.repair.problem import CountProblem
    from fairaudit.repair.spec import RepairSpec
    from fairaudit.report.results import AuditRun

__all__ = ["REPAIR_SCHEMA_VERSION", "RepairResult", "Solved", "build_document",
           "meaning_sentence"]

REPAIR_SCHEMA_VERSION = "1.0"
MAX_CELL_TABLES = 200
"""Joint cells beyond this many get no from x to table of their own in the JSON (each
attribute's groups always do)."""


@dataclass(frozen=True)
class Solved:
    """What the optimisation decided."""

    counts: np.ndarray
    moves_rows: np.ndarray
    moves_to: np.ndarray
    plan: np.ndarray
    moves: int
    lp_bound: float | None
    """The LP relaxation's optimum of the objective (people moved, or distance added); None
    when the least-cost LP did not finish in time."""
    lower_bound: float | None
    """A proven lower bound of the objective over every repair (None: unknown)."""
    optimal: bool
    method: str
    cost: float | None = None
    """Distance added (features given)."""
    lp_moves: float | None = None
    """People the cost LP moves (fractionally)."""
    margin: float = 0.0

    objective: str = "moves"

    @property
    def value(self) -> float:
        """The objective's value: people moved, or distance added."""
        return float(self.cost or 0.0) if self.objective == "cost" else float(self.moves)


@dataclass(frozen=True)
class RepairResult:
    """What ``fairaudit.repair(...)`` returns.

    ``table`` is every input row with the new column (a polars DataFrame); ``doc`` the JSON
    document; ``before`` / ``after`` the two audits (:class:`~fairaudit.report.results.AuditRun`).
    :meth:`write` writes the table, the HTML report and the JSON as one unit."""

    doc: Mapping[str, Any]
    table: Any
    format: str
    separator: str
    before: AuditRun
    after: AuditRun
    spec: RepairSpec = field(repr=False)
    input_path: str | None = None

    @property
    def moves(self) -> int:
        """People who change segment."""
        return int(self.doc["solution"]["moves"])

    @property
    def lp_bound(self) -> float | None:
        """The LP relaxation's optimum of the objective: no repair moves fewer people (with
        ``objective="cost"``: adds less distance; None when that LP did not finish)."""
        v = self.doc["solution"]["lp_bound"]
        return None if v is None else float(v)

    @property
    def optimal(self) -> bool:
        return bool(self.doc["solution"]["optimal"])

    @property
    def column(self) -> str:
        return str(self.doc["output"]["column"])

    @property
    def labels(self) -> Any:
        """The new column (a polars Series)."""
        return self.table.get_column(self.column)

    @property
    def cost(self) -> float | None:
        """Distance added by the moves (features given), else None."""
        c = self.doc.get("cost")
        return None if not c else float(c["distance_added"])

    def to_json(self) -> dict[str, Any]:
        return dict(self.doc)

    def write(self, out: str | Path | None = None, report: str | Path | None = None,
              json: str | Path | None = None) -> tuple[Path, Path, Path]:
        """Write the repaired table (``out``: .parquet or .csv), the HTML report and the JSON
        (default: next to ``out``) as one unit: all three or none. Refuses a path that is the
        input. Returns the three paths."""
        from fairaudit.repair.write import write_repair

        return write_repair(self, out, report, json)

    def _repr_html_(self) -> str:
        s = self.doc["solution"]
        import html

        bound = "unknown" if s["lp_bound"] is None else f"{s['lp_bound']:,.2f}"
        return (f"<p><b>fairaudit repair</b>: {s['moves']:,} people moved "
                f"({s['objective']}: {s['value']:,.2f}, LP bound {bound}); column "
                f"<code>{html.escape(self.column)}</code>. {html.escape(self.doc['meaning'])}</p>")


def meaning_sentence(moves: int, n: int, labels: str, column: str) -> str:
    if moves == 0:
        return (f"The segmentation already meets the targets: {column} equals {labels} and "
                "nobody moves, so the segments mean what they meant.")
    return (f"Repairing changes what the segments mean: {moves:,} of {n:,} people "
            f"({moves / n:.1%}) are now in a segment that the rule behind {labels} did not put "
            f"them in, so a segment of {column} is no longer \u201ceveryone that rule "
            "selects\u201d; whatever was built on the old segments (offers, prices, models, "
            "reports) must be checked against the new ones before they replace them.")


def _headline(run: AuditRun, metric: str, attribute: str) -> dict[str, Any] | None:
    for r in run.doc.get("results", []):
        if r.get("metric") == metric and r.get("attribute") == attribute:
            return r
    return None


def _targets_view(problem: CountProblem, before: AuditRun, after: AuditRun,
                  counts_before: np.ndarray, counts_after: np.ndarray) -> list[dict[str, Any]]:
    from fairaudit.repair.problem import evaluate
    from fairaudit.repair.spec import LINEAR_METRICS

    out = []
    eb = evaluate(problem, counts_before)
    ea = evaluate(problem, counts_after)
    for t, b, a in zip(problem.targets, eb, ea, strict=True):
        rb, ra = _headline(before, t.metric, t.attribute), _headline(after, t.metric,
                                                                     t.attribute)
        after_value = ra.get("value") if ra else None
        if after_value is None or not (abs(after_value - a["value"]) <= 1e-9):
            raise RuntimeError(f"the after-audit's {t.metric}[{t.attribute}] "
                               f"({after_value}) is not the repair's ({a['value']})")
        out.append({
            "metric": t.metric, "attribute": t.attribute, "target": t.value,
            "direction": LINEAR_METRICS[t.metric],
            "before": b["value"], "before_ci": rb.get("ci") if rb else None,
            "met_before": b["met"],
            "after": after_value, "after_ci": ra.get("ci"), "met_after": a["met"],
            "after_ci_meets": _ci_meets(ra.get("ci"), t.value, LINEAR_METRICS[t.metric]),
        })
    return out


def _ci_meets(ci: Any, value: float, direction: str) -> bool | None:
    if not ci or ci[0] is None:
        return None
    return bool(ci[0] >= value) if direction == "higher" else bool(ci[1] <= value)


def _moves_tables(spec: RepairSpec, rows: Rows, problem: CountProblem, plan: np.ndarray
                  ) -> list[dict[str, Any]]:
    """From x to tables: per attribute and group (every group), then per joint cell."""
    from fairaudit.core.data import INTERSECTION_SEP

    out: list[dict[str, Any]] = []
    for j, a in enumerate(spec.sensitive):
        for code, g in enumerate(rows.categories[j]):
            sel = rows.cell_codes[:, j] == code
            if not sel.any():
                continue
            t = plan[sel].sum(axis=0)
            out.append({"attribute": a, "group": g, "moved": int(t.sum()),
                        "table": t.astype(int).tolist()})
    if len(spec.sensitive) > 1 and rows.cell_codes.shape[0] <= MAX_CELL_TABLES:
        inter = INTERSECTION_SEP.join(spec.sensitive)
        for s, codes in enumerate(rows.cell_codes):
            name = INTERSECTION_SEP.join(rows.categories[j][int(c)] for j, c in enumerate(codes))
            out.append({"attribute": inter, "group": name, "moved": int(plan[s].sum()),
                        "table": plan[s].astype(int).tolist()})
    return out


def build_document(spec: RepairSpec, src: Source, rows: Rows, problem: CountProblem,
                   solved: Solved, before: AuditRun, after: AuditRun, notes: list[str],
                   fmt: str) -> dict[str, Any]:
    from fairaudit import __version__

    N = problem.counts
    M = solved.counts
    n = int(N.sum())
    S, K = problem.shape
    out_path, report, js = spec.paths()
    cost = None
    if spec.features:
        cost = {"features": list(spec.features), "objective": spec.objective,
                "distance_added": float(solved.cost or 0.0),
                "lp_distance_added": solved.lp_bound if spec.objective == "cost" else None,
                "per_move": float(solved.cost or 0.0) / solved.moves if solved.moves else 0.0,
                "definition": "sum over the people moved of max(d(x, centroid of the new "
                              "segment) - d(x, centroid of the old one), 0); Euclidean "
                              "distance on the features standardised over the rows repaired; "
                              "centroids of the segments as they were"}
    doc: dict[str, Any] = {
        "schema_version": REPAIR_SCHEMA_VERSION,
        "kind": "repair",
        "tool": {"name": "fairaudit", "version": __version__},
        "status": "repaired" if solved.moves else "unchanged",
        "input": {"path": src.path, "format": src.format, "rows": rows.n_rows,
                  "rows_repaired": n, "rows_null": rows.n_null, "rows_noise": rows.n_noise,
                  "fingerprint": (before.doc.get("input") or {}).get("fingerprint")},
        "output": {"path": str(out_path) if out_path else None, "format": fmt,
                   "column": spec.new_column, "report": str(report) if report else None,
                   "json": str(js) if js else None},
        "parameters": spec.to_json(),
        "program": {
            "segments": list(rows.segments), "cells": S,
            "attributes": [{"attribute": sc.attribute, "groups": list(sc.groups),
                            "left_out": list(sc.left_out)} for sc in problem.scopes],
            "targets": [{"metric": t.metric, "attribute": t.attribute, "value": t.value}
                        for t in problem.targets],
            "variables": 2 * S * K, "objective": spec.objective,
        },
        "solution": {
            "objective": spec.objective,
            "moves": int(solved.moves), "share_moved": solved.moves / n if n else 0.0,
            "value": solved.value,
            "lp_bound": solved.lp_bound, "lower_bound": solved.lower_bound,
            "optimal": bool(solved.optimal), "method": solved.method,
            "margin": float(solved.margin),
            "rounding_allowance": S * K,
        },
        "cost": cost,
        "targets": _targets_view(problem, before, after, N, M),
        "segments": [{"segment": name, "before": int(N[:, k].sum()),
                      "after": int(M[:, k].sum())} for k, name in enumerate(rows.segments)],
        "moves": _moves_tables(spec, rows, problem, solved.plan),
        "meaning": meaning_sentence(int(solved.moves), n, spec.labels, spec.new_column),
        "notes": list(notes),
        "before": before.to_json(),
        "after": after.to_json(),
    }
    if spec.objective == "cost":
        doc["solution"]["lp_moves"] = solved.lp_moves
    after_in = doc["after"].setdefault("input", {})
    after_in["path"] = str(out_path) if out_path else after_in.get("path")
    return doc
