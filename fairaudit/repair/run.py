"""``fairaudit repair`` end to end: read, solve, choose who moves, write the new column, and
audit before and after with the same auditors (the after-audit reads the table as written).

The result is a :class:`~fairaudit.repair.result.RepairResult`; nothing is written here
(:mod:`fairaudit.repair.write` writes the table, the report and the JSON as one unit).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import numpy as np

from fairaudit.errors import InfeasibleTargetError
from fairaudit.repair.inputs import Rows, Source, build_problem, load_rows, open_source
from fairaudit.repair.problem import CountProblem, Infeasible, evaluate
from fairaudit.repair.result import RepairResult, Solved, build_document
from fairaudit.repair.spec import DEFAULT_AUDITS, LINEAR_METRICS, RepairSpec

log = logging.getLogger(__name__)

__all__ = ["run_repair"]


def solve(spec: RepairSpec, rows: Rows, problem: CountProblem) -> Solved:
    """The repair of ``problem`` by the spec's objective; who moves chosen by the features or
    the seed."""
    import math

    from fairaudit.repair.people import Features, choose_movers

    K = len(rows.segments)
    feats = (Features.of(rows.features, rows.segment, K, spec.features)
             if rows.features is not None else None)
    try:
        if spec.objective == "cost":
            from fairaudit.repair.cost import solve_cost

            assert feats is not None
            c = solve_cost(problem, rows.cell, rows.segment, feats, time_limit=spec.time_limit,
                           seed=spec.seed)
            mv = c.moves
            return Solved(c.counts, mv.rows, mv.to, mv.plan, int(mv.rows.size),
                          c.lp_cost, c.lp_cost, c.optimal, c.method, c.cost, c.lp_moves,
                          objective="cost")
        from fairaudit.repair.program import solve_counts

        sol = solve_counts(problem, time_limit=spec.time_limit)
    except Infeasible as exc:
        raise InfeasibleTargetError(f"no repair meets the targets: {exc.reason}") from None
    except ValueError as exc:  # a target the program cannot take
        from fairaudit.errors import ConfigError

        raise ConfigError(f"{spec.label('target')}: {exc}") from None
    mv = choose_movers(rows.cell, rows.segment, problem.counts, sol.counts, features=feats,
                       seed=spec.seed)
    lower = max(float(math.ceil(sol.lp_bound - 1e-6)),
                float(sol.moves) * (1 - sol.gap) if not sol.optimal else float(sol.moves))
    return Solved(sol.counts, mv.rows, mv.to, mv.plan, sol.moves, sol.lp_bound, lower,
                  sol.optimal, "integer program" + ("" if sol.optimal else " (not proven)"),
                  mv.cost, None, sol.margin)


def _new_column(src: Source, rows: Rows, solved: Solved, spec: RepairSpec) -> Any:
    """Every input row, unchanged, plus the new column: each moved person takes the value of
    a person already in the receiving segment (so the column keeps the labels' type and, in a
    CSV, their spelling)."""
    import polars as pl

    raw = src.raw.collect()
    if raw.height != rows.n_rows:
        raise RuntimeError(f"the raw table has {raw.height} rows, the audit's reading "
                           f"{rows.n_rows}")
    pos = np.flatnonzero(rows.eligible)
    K = len(rows.segments)
    first = np.full(K, -1, dtype=np.int64)
    order = np.argsort(rows.segment, kind="stable")
    starts = np.searchsorted(rows.segment[order], np.arange(K))
    first[:] = pos[order[starts]]
    idx = np.arange(rows.n_rows, dtype=np.int64)
    idx[pos[solved.moves_rows]] = first[solved.moves_to]
    col = raw.get_column(spec.labels).gather(pl.Series(idx)).alias(spec.new_column)
    return raw.with_columns(col)


def audit_spec(spec: RepairSpec, host: Any, labels: str, exclude: tuple[str, ...],
               problem: CountProblem, chain: Any = None) -> Any:
    """The chain of the before and after audits: the same auditors, the targets as gates on
    exactly the attributes they constrain."""
    from fairaudit.core.build import chain_from_flags
    from fairaudit.report.results import Threshold

    thresholds = [Threshold(metric=t.metric, value=t.value,
                            bound="min" if LINEAR_METRICS[t.metric] == "higher" else "max",
                            attribute=t.attribute, source=f"repair target {t.metric}"
                            f"[{t.attribute}]") for t in problem.targets]
    if chain is not None:
        data = dataclasses.replace(chain.data, labels=labels, sensitive=spec.sensitive,
                                   exclude=tuple(dict.fromkeys((*chain.data.exclude, *exclude))))
        return dataclasses.replace(chain, data=data, cluster=(),
                                   thresholds=tuple(chain.thresholds) + tuple(thresholds))
    audits = DEFAULT_AUDITS + (("quality",) if spec.features else ())
    return chain_from_flags(
        host.registry, sensitive=spec.sensitive, labels=labels,
        features=spec.features or None, exclude=exclude, seed=spec.seed,
        min_cell=spec.min_cell, bootstrap=spec.bootstrap, ci_method=spec.ci_method,
        audits=audits, thresholds=thresholds, twins=False,
        reader_options=dict(spec.reader_options))


def _audit(chain: Any, host: Any, data: Any) -> Any:
    from fairaudit.core.runner import run_chain

    return run_chain(chain, host, data_path=data)


def run_repair(spec: RepairSpec, data: Any, *, host: Any = None, chain: Any = None,
               out_format: str | None = None) -> RepairResult:
    """Repair ``data`` (a path or a table in memory) as ``spec`` asks. ``chain``: a chain
    file's ChainSpec whose ``[[audit]]`` steps and options the audits use. ``out_format``:
    the format of the written table when the input is in memory (``parquet``, ``csv``)."""
    import tempfile
    from pathlib import Path

    from fairaudit.core.plugins import Host
    from fairaudit.core.progress import step

    host = host or Host.create()
    with step("repair: read"):
        src = open_source(spec, data, host)
        rows = load_rows(spec, src)
        problem, notes = build_problem(spec, rows)
    if not problem.targets:
        from fairaudit.errors import ConfigError

        raise ConfigError(f"{spec.label('target')}: no target applies: " + "; ".join(notes))
    with step("repair: solve"):
        solved = solve(spec, rows, problem)
    check = evaluate(problem, rows_counts_after(rows, solved))
    if not all(e["met"] for e in check) or not np.array_equal(
            rows_counts_after(rows, solved), solved.counts):
        raise RuntimeError("the moves chosen do not give the repaired counts")
    with step("repair: new column"):
        table = _new_column(src, rows, solved, spec)
    fmt = src.format or out_format or "parquet"
    before_chain = audit_spec(spec, host, spec.labels, (), problem, chain)
    after_chain = audit_spec(spec, host, spec.new_column, (spec.labels,), problem, chain)
    with step("repair: audit before"):
        before = _audit(before_chain, host, src.path if src.path is not None else
                        src.raw.collect())
    with step("repair: audit after"):
        from fairaudit.repair.write import serialise

        if src.path is not None:  # the after-audit reads the table exactly as written
            with tempfile.TemporaryDirectory(prefix="fairaudit-repair-") as tmp:
                written = Path(tmp) / f"repaired.{fmt}"
                written.write_bytes(serialise(table, fmt, src.separator))
                after = _audit(after_chain, host, str(written))
        else:
            after = _audit(after_chain, host, table)
    doc = build_document(spec, src, rows, problem, solved, before, after, notes, fmt)
    return RepairResult(doc=doc, table=table, format=fmt, separator=src.separator,
                        before=before, after=after, spec=spec, input_path=src.path)


def rows_counts_after(rows: Rows, solved: Solved) -> np.ndarray:
    seg = rows.segment.copy()
    seg[solved.moves_rows] = solved.moves_to
    S, K = rows.cell_codes.shape[0], len(rows.segments)
    return np.bincount(rows.cell * K + seg, minlength=S * K).reshape(S, K)
