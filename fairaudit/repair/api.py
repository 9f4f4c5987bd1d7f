"""``fairaudit.repair(...)``: what ``fairaudit repair`` does, from Python.

    >>> import fairaudit
    >>> res = fairaudit.repair("customers.parquet", sensitive=["sex", "race"],
    ...                        labels="segment", target={"balance": 0.8})
    >>> res.moves, res.lp_bound, res.optimal
    >>> res.labels                       # the new column (polars Series)
    >>> res.write("repaired.parquet")    # + repaired.html, repaired.json (all three or none)
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fairaudit.repair.result import RepairResult


def repair(
    data: Any,
    *,
    sensitive: Sequence[str] | str | None = None,
    labels: str | None = None,
    target: Mapping[str, float] | None = None,
    column: str | None = None,
    intersection: bool | None = None,
    keep_sizes: float | None = None,
    objective: str | None = None,
    features: Sequence[str] | str | None = None,
    seed: int | None = None,
    min_cell: int | None = None,
    bootstrap: int | None = None,
    ci_method: str | None = None,
    time_limit: float | None = None,
    out: str | Path | None = None,
    report: str | Path | None = None,
    json: str | Path | None = None,
    separator: str | None = None,
    null_values: Sequence[str] | str | None = None,
    default_nulls: bool | None = None,
    decimal_comma: bool | None = None,
    chain: str | Path | None = None,
    progress: bool = False,
) -> RepairResult:
    """Repair the segmentation in column ``labels`` of ``data`` (a Parquet or CSV path, or a
    polars / pandas DataFrame): move the fewest people (``objective="cost"``: add the least
    distance on ``features``) so that every segment meets ``target`` — a mapping
    ``METRIC[[ATTR]] -> value`` as ``fail_under`` takes, e.g. ``{"balance": 0.8,
    "balance[race]": 0.9}``; the metrics linear in the counts: balance, balance_prime,
    fairness_cce, cce (at least the value), wd, wd_max (at most) — for each attribute of
    ``sensitive`` (and their intersection with ``intersection=True``).

    ``column`` names the new column (default ``<labels>_fair``); ``keep_sizes`` keeps every
    segment's size within that share of its size (``0.05``: ±5 %); ``seed`` fixes the random
    choice of who moves when no ``features`` are given (with features: those whose move adds
    the least distance); ``min_cell`` (default 10): groups smaller than that are not held to the
    targets, as the audit does not judge them; ``bootstrap`` / ``ci_method`` for the
    before and after audits' intervals; ``time_limit`` (seconds, default 60) for the solver.
    ``chain``: a chain TOML file whose ``[data]``, ``[options]``, ``[[audit]]`` and ``[repair]``
    tables supply what is not given here.

    With ``out`` (and optionally ``report``, ``json``) the table, the HTML report and the JSON
    are written as one unit (paths checked before any work; the input is never written);
    otherwise call :meth:`RepairResult.write` later. An infeasible target raises
    :class:`~fairaudit.errors.InfeasibleTargetError` naming the group that makes it so; a bad
    parameter :class:`~fairaudit.errors.ConfigError` naming it.
    """
    from fairaudit.errors import ConfigError

    if not isinstance(progress, bool):
        raise ConfigError(f"progress: expected True or False; got {progress!r}")
    given = {"sensitive": sensitive, "labels": labels, "target": target, "column": column,
             "intersection": intersection, "keep_sizes": keep_sizes, "objective": objective,
             "features": features, "seed": seed, "min_cell": min_cell,
             "bootstrap": bootstrap, "ci_method": ci_method, "time_limit": time_limit,
             "out": out, "report": report, "json": json}
    reader = {"separator": separator, "null_values": null_values,
              "default_nulls": default_nulls, "decimal_comma": decimal_comma}
    from fairaudit.repair.chain import spec_from

    spec, audit_chain, data_path = spec_from(given, reader, "api", chain)
    if data is None:
        data = data_path
    return run_and_write(spec, data, audit_chain=audit_chain, progress=progress)


def run_and_write(spec: Any, data: Any, *, audit_chain: Any = None, progress: bool = False,
                  host: Any = None) -> RepairResult:
    """Check the outputs (when the spec names them), repair, write: the one sequence of the
    CLI, the chain and the API."""
    from fairaudit.core.io import as_polars
    from fairaudit.core.progress import show_progress
    from fairaudit.repair.run import run_repair
    from fairaudit.repair.write import check_paths

    data = as_polars(data)
    fmt = _input_format(data)
    if spec.out is not None:  # before any work: never over the input, folders writable
        check_paths(spec, data if isinstance(data, str) else None, fmt)
    with show_progress() if progress else contextlib.nullcontext():
        result = run_repair(spec, data, host=host, chain=audit_chain,
                            out_format=_suffix_format(spec.out))
    if spec.out is not None:
        result.write()
    return result


def _input_format(data: Any) -> str | None:
    if not isinstance(data, str):
        return None
    from fairaudit.core.io import resolve_input

    return resolve_input(data).format


def _suffix_format(out: str | None) -> str | None:
    if out is None:
        return None
    from fairaudit.repair.write import _FORMATS

    return _FORMATS.get(Path(out).suffix.lower())
