"""The typed configuration of a repair: one frozen :class:`RepairSpec`, built the same way from
the command line (``fairaudit repair``), a chain's ``[repair]`` table (``fairaudit run``) and
``fairaudit.repair(...)``. Each parameter is declared once in :mod:`fairaudit.core.params`
(keyword, flag, chain key, check), so a bad value is named as the user gave it."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairaudit.errors import ConfigError

__all__ = ["REPAIR_KEYS", "RepairSpec", "RepairTarget", "load_repair_table", "parse_targets",
           "repair_spec"]

REPAIR_KEYS = {
    "target": "table METRIC[[ATTR]] = value, e.g. {balance = 0.8}",
    "column": "name of the new column (default: <labels>_fair)",
    "intersection": "also hold the intersection of the attributes to the targets",
    "keep_sizes": "each segment's size within +- this share of its current size",
    "objective": "'moves' (fewest people moved, default) or 'cost' (least distance added)",
    "time_limit": "seconds the solver may take (default 60)",
    "out": "the repaired table (.parquet or .csv, the input's format)",
    "report": "the HTML report (default: next to out, .html)",
    "json": "the JSON document (default: next to out, .json)",
}
"""The keys of a chain's ``[repair]`` table."""

LINEAR_METRICS: dict[str, str] = {
    "balance": "higher",
    "balance_prime": "higher",
    "fairness_cce": "higher",
    "cce": "higher",
    "wd": "lower",
    "wd_max": "lower",
}
"""The audit's count metrics whose target is a set of linear rows over the counts, and their
direction (``higher``: the target is a lower bound)."""

NONLINEAR_METRICS: dict[str, str] = {
    "balance_mean": "the mean over segments of per-segment minima of ratios whose denominator "
                    "(the segment's size) is a variable: a bilinear constraint",
    "balance_noise_adjusted": "balance_mean times a constant: bilinear, as balance_mean",
    "ed": "a Euclidean norm of share differences (a second-order cone, not a linear row)",
    "ed_max": "a Euclidean norm of share differences (a second-order cone, not a linear row)",
    "ed_sum": "a sum of Euclidean norms of shares (not linear)",
    "wd_sum": "a sum over segments of ratios with variable denominators (not linear)",
    "mnce": "an entropy (not linear)",
    "ne": "an entropy (not linear)",
    "fce_fair": "a ratio of raw group counts, which a repair cannot equalise without changing "
                "group sizes",
    "proportion": "a sum of ratios with variable denominators (not linear)",
}
"""Count metrics the repair does not take as targets, and why (the error says it)."""


def target_problem(metric: str, value: float) -> str | None:
    """What is wrong with the target ``metric = value`` (None: nothing)."""
    import math

    if metric not in LINEAR_METRICS:
        why = NONLINEAR_METRICS.get(metric)
        return (f"{metric}: not a target the repair can meet exactly"
                + (f" ({why})" if why else " (not a count metric of the audit)")
                + f"; targets: {', '.join(LINEAR_METRICS)}")
    if not math.isfinite(value) or not 0 <= value <= 1:
        return f"{metric}={value:g}: expected a value in [0, 1]"
    return None


DEFAULT_TIME_LIMIT = 60.0
DEFAULT_AUDITS: tuple[str, ...] = ("balance", "distribution", "capacity")
"""Auditors of the before and after audits (``quality`` too when features are given; a chain's
own ``[[audit]]`` steps replace them)."""


@dataclass(frozen=True)
class RepairTarget:
    """``metric >= value`` (``<=`` for wd, wd_max); ``attribute`` None = every named attribute
    (and their intersection with ``intersection``)."""

    metric: str
    value: float
    attribute: str | None = None
    source: str = ""
    """How the user wrote it (``--target balance=0.8``), for messages."""

    @property
    def key(self) -> str:
        return self.metric + (f"[{self.attribute}]" if self.attribute else "")


@dataclass(frozen=True)
class RepairSpec:
    """Everything a repair needs (the data, the segmentation, the targets, the outputs)."""

    sensitive: tuple[str, ...]
    labels: str
    targets: tuple[RepairTarget, ...]
    column: str | None = None
    intersection: bool = False
    keep_sizes: float | None = None
    objective: str = "moves"
    features: tuple[str, ...] = ()
    seed: int = 0
    min_cell: int = 10
    bootstrap: int = 200
    ci_method: str = "calibrated"
    time_limit: float = DEFAULT_TIME_LIMIT
    reader_options: Mapping[str, Any] = field(default_factory=dict)
    out: str | None = None
    report: str | None = None
    json: str | None = None
    surface: str = "api"
    """``api``, ``cli`` or ``chain``: how problems name the parameters."""

    @property
    def new_column(self) -> str:
        return self.column if self.column is not None else f"{self.labels}_fair"

    def label(self, name: str) -> str:
        """The parameter ``name`` as this surface spells it (``--keep-sizes``, ...)."""
        from fairaudit.core.params import PARAMS

        return PARAMS[name].label(self.surface)

    def paths(self) -> tuple[Path | None, Path | None, Path | None]:
        """(table, report, json): the report and JSON default to the table's path with .html
        and .json."""
        out = Path(self.out) if self.out else None
        report = Path(self.report) if self.report else (out.with_suffix(".html") if out
                                                         else None)
        js = Path(self.json) if self.json else (
            report.with_suffix(".json") if report else None)
        return out, report, js

    def to_json(self) -> dict[str, Any]:
        return {"sensitive": list(self.sensitive), "labels": self.labels,
                "column": self.new_column,
                "targets": [{"metric": t.metric, "attribute": t.attribute, "value": t.value}
                            for t in self.targets],
                "intersection": self.intersection, "keep_sizes": self.keep_sizes,
                "objective": self.objective, "features": list(self.features),
                "seed": self.seed, "min_cell": self.min_cell, "bootstrap": self.bootstrap,
                "ci_method": self.ci_method, "time_limit": self.time_limit}


def parse_targets(values: Sequence[str] | Mapping[str, Any] | None, surface: str
                  ) -> tuple[RepairTarget, ...]:
    """Targets from ``--target METRIC[[ATTR]]=V`` texts or a ``{METRIC[[ATTR]]: V}`` mapping
    (the keyword and the TOML table): the threshold key syntax of ``--fail-under``, without
    ``@ci`` (a repair meets its targets on the data; the after-audit's intervals are
    reported)."""
    from fairaudit.core import params
    from fairaudit.core.chain import parse_threshold_flag, threshold_from

    name = params.PARAMS["target"].label(surface)
    if values is None or (not isinstance(values, Mapping) and not values):
        return ()
    if isinstance(values, Mapping):
        checked = params.check("target", dict(values), surface)
        items = [threshold_from(k, v, "min", f"{name}[{k!r}]") for k, v in checked.items()]
    else:
        if isinstance(values, str):
            values = [values]
        items = [parse_threshold_flag(t, "min", name) for t in values]
    out = []
    for th in items:
        if th.on != "value":
            raise ConfigError(f"{th.source}: a repair meets its targets on the data itself; "
                              f"write {th.metric}=... without @{th.on} (the after-audit "
                              "reports its intervals)")
        why = target_problem(th.metric, float(th.value))
        if why:
            raise ConfigError(f"{th.source}: {why}")
        out.append(RepairTarget(th.metric, float(th.value), th.attribute, th.source))
    keys = [t.key for t in out]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise ConfigError(f"{name}: {dup[0]} is given twice")
    return tuple(out)


def repair_spec(*, sensitive: Any, labels: Any, target: Any, surface: str = "api",
                column: Any = None, intersection: Any = None, keep_sizes: Any = None,
                objective: Any = None, features: Any = None, seed: Any = None,
                min_cell: Any = None, bootstrap: Any = None, ci_method: Any = None,
                time_limit: Any = None, out: Any = None, report: Any = None,
                json: Any = None, reader_options: Mapping[str, Any] | None = None
                ) -> RepairSpec:
    """The :class:`RepairSpec` of the given values, every one checked (named as ``surface``
    spells it) before any work."""
    from fairaudit.core import params

    v = params.check_all({
        "sensitive": sensitive, "labels": labels, "features": features, "seed": seed,
        "min_cell": min_cell, "bootstrap": bootstrap, "ci_method": ci_method,
        "column": column, "intersection": intersection, "keep_sizes": keep_sizes,
        "objective": objective, "time_limit": time_limit, "out": out, "report": report,
        "json": json}, surface)
    lab = params.PARAMS["labels"].label(surface)
    if not v["sensitive"]:
        raise ConfigError(f"{params.PARAMS['sensitive'].label(surface)}: give at least one "
                          "sensitive column, e.g. sex")
    if v["labels"] is None:
        raise ConfigError(f"{lab}: name the column that holds the segments to repair")
    targets = parse_targets(target, surface)
    if not targets:
        raise ConfigError(f"{params.PARAMS['target'].label(surface)}: give at least one "
                          "target, e.g. balance=0.8")
    objective = v["objective"] or "moves"
    feats = tuple(v["features"] or ())
    if objective == "cost" and not feats:
        raise ConfigError(f"{params.PARAMS['objective'].label(surface)} cost: needs "
                          f"{params.PARAMS['features'].label(surface)} (the columns whose "
                          "distance to the segments' centroids a move adds)")
    col = v["column"]
    if col is not None and not col.strip():
        raise ConfigError(f"{params.PARAMS['column'].label(surface)}: the new column needs a "
                          "name")
    spec = RepairSpec(
        sensitive=tuple(v["sensitive"]), labels=v["labels"], targets=targets, column=col,
        intersection=bool(v["intersection"]), keep_sizes=v["keep_sizes"],
        objective=objective, features=feats, seed=0 if v["seed"] is None else v["seed"],
        min_cell=10 if v["min_cell"] is None else v["min_cell"],
        bootstrap=200 if v["bootstrap"] is None else v["bootstrap"],
        ci_method=v["ci_method"] or "calibrated",
        time_limit=DEFAULT_TIME_LIMIT if v["time_limit"] is None else v["time_limit"],
        reader_options=dict(reader_options or {}), out=v["out"], report=v["report"],
        json=v["json"], surface=surface)
    if spec.new_column in (spec.labels, *spec.sensitive, *spec.features):
        raise ConfigError(f"{spec.label('column')} {spec.new_column}: already the name of an "
                          "input column given here; choose another name")
    for path, name, suffixes in ((spec.report, "report", (".html", ".htm")),
                                 (spec.json, "json", (".json",))):
        if path is not None and Path(path).suffix.lower() not in suffixes:
            raise ConfigError(f"{spec.label(name)} {path}: expected a {suffixes[0]} file")
    return spec


def load_repair_table(path: str | Path, doc: Mapping[str, Any] | None = None
                      ) -> Mapping[str, Any] | None:
    """The ``[repair]`` table of a chain file (None when it has none); unknown keys refused
    with a suggestion. ``doc``: the file's document when the caller has read it already."""
    from fairaudit.core.chain import read_chain_document

    p = Path(path)
    if doc is None:
        doc = read_chain_document(p)
    table = doc.get("repair")
    if table is None:
        return None
    if not isinstance(table, Mapping):
        raise ConfigError(f"{p}: repair: must be a table ([repair] with target = {{balance = "
                          "0.8}})")
    for key in table:
        if key not in REPAIR_KEYS:
            close = difflib.get_close_matches(key, list(REPAIR_KEYS), n=1, cutoff=0.5)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ConfigError(f"{p}: repair.{key}: unknown key{hint}; expected one of "
                              f"{', '.join(REPAIR_KEYS)}")
    if "target" in table and not isinstance(table["target"], Mapping):
        raise ConfigError(f"{p}: repair.target: expected a table, e.g. target = "
                          "{balance = 0.8, \"balance[race]\" = 0.9}")
    return table
