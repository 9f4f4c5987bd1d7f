"""One validation of the run parameters, for the CLI, the chain (TOML) and the Python API.

Every parameter is declared once in :data:`PARAMS`: its keyword (``fairaudit.audit(...)``), its
command-line flag, its chain key, what it expects, and one check that returns the normalised
value. A bad value gives a :class:`~fairaudit.errors.ConfigError` that names the parameter as the
user gave it (``bootstrap``, ``--bootstrap`` or ``options.bootstrap``) and says what was expected,
before any work starts. A new parameter (say a privacy budget) is one more :class:`Param` here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from fairaudit.errors import ConfigError

MAX_BOOTSTRAP = 10_000
"""Largest number of bootstrap replicates: 10,000 is the count recommended for percentile
intervals at the 99% level; more only costs memory (the replicates of every joint table are held
at once) and time."""
MAX_SEED = 2**63 - 1
MAX_WORKERS = 1024

Surface = str  # "api" | "cli" | "chain"


class Invalid(Exception):
    """Raised by a check: the value is not what the parameter expects."""


@dataclass(frozen=True)
class Param:
    name: str
    """Keyword of :func:`fairaudit.audit`."""
    flag: str | None
    """Command-line option of ``fairaudit audit`` (None: not on the command line)."""
    key: str | None
    """Key in the chain TOML (None: not in a chain)."""
    expected: str
    check: Callable[[Any], Any]

    def label(self, surface: Surface) -> str:
        if surface == "cli" and self.flag:
            return self.flag
        if surface == "chain" and self.key:
            return self.key
        return self.name


# ----------------------------------------------------------------------------- checks
def _is_int(v: Any) -> bool:
    import numpy as np

    return isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_)


def integer(lo: int, hi: int | None = None) -> Callable[[Any], int]:
    def check(v: Any) -> int:
        if not _is_int(v) or v < lo or (hi is not None and v > hi):
            raise Invalid
        return int(v)

    return check


def number(lo: float, hi: float, *, hi_open: bool = False) -> Callable[[Any], float]:
    def check(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, int | float) and not _is_numpy_number(v):
            raise Invalid
        f = float(v)
        if not math.isfinite(f) or f < lo or f > hi or (hi_open and f == hi):
            raise Invalid
        return f

    return check


def _is_numpy_number(v: Any) -> bool:
    import numpy as np

    return isinstance(v, np.integer | np.floating) and not isinstance(v, np.bool_)


def boolean(v: Any) -> bool:
    import numpy as np

    if not isinstance(v, bool | np.bool_):
        raise Invalid
    return bool(v)


def choice(*values: str) -> Callable[[Any], str]:
    def check(v: Any) -> str:
        if not isinstance(v, str) or v not in values:
            raise Invalid
        return v

    return check


def text(v: Any) -> str:
    if not isinstance(v, str):
        raise Invalid
    return str(v)


def column(v: Any) -> str:
    """A column name (the empty name of an unnamed column included)."""
    return text(v)


def names(v: Any) -> tuple[str, ...]:
    """Column or component names: ``"a,b"`` or an iterable of strings (list, tuple, numpy array,
    pandas Index). A mapping or a set (no order) is refused."""
    if isinstance(v, str):  # "" alone names the unnamed column (a CSV's empty header)
        return ("",) if v == "" else tuple(x.strip() for x in v.split(",") if x.strip())
    if isinstance(v, Mapping | set | frozenset | bytes) or not isinstance(v, Iterable):
        raise Invalid
    out = tuple(v)
    if not all(isinstance(x, str) for x in out):
        raise Invalid
    return tuple(str(x) for x in out)


def markers(v: Any) -> tuple[str, ...]:
    """Cell texts: ``"a, b"`` (each stripped; ``""`` alone is the empty cell) or a list of strings
    (kept as given: ``[" "]`` is a marker too)."""
    if isinstance(v, str):
        return tuple(x.strip() for x in v.split(",") if x.strip()) or ("",)
    return names(v)


def bounds(v: Any) -> dict[str, float]:
    """``{METRIC[@ci][[ATTR]]: number}``."""
    if not isinstance(v, Mapping):
        raise Invalid
    out = {}
    for key, value in v.items():
        if not isinstance(key, str) or not key:
            raise Invalid
        out[key] = number(-math.inf, math.inf)(value)
    return out


_STEP_KEYS = frozenset({"use", "params", "name"})


def components(v: Any) -> tuple[tuple[str, dict[str, Any]] | tuple[str, dict[str, Any], str]
                                | str, ...]:
    """``"name:k=v"`` strings, ``(name, {param: value})`` pairs, or mappings shaped as a chain's
    steps (``{"use": name, "params": {...}, "name": label}``; ``params`` and ``name`` optional)
    -> strings, pairs and ``(name, params, label)`` triples. A bad element is named."""
    if isinstance(v, str):
        v = [v]
    if isinstance(v, Mapping) or not isinstance(v, Iterable):
        raise Invalid
    out: list[Any] = []
    for i, item in enumerate(v):
        if isinstance(item, str) and item.strip():
            out.append(item)
        elif (isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[0], str)
              and item[0] and isinstance(item[1], Mapping)
              and all(isinstance(k, str) for k in item[1])):
            out.append((item[0], dict(item[1])))
        elif (isinstance(item, Mapping) and set(item) <= _STEP_KEYS
              and isinstance(item.get("use"), str) and item["use"]
              and isinstance(item.get("params", {}), Mapping)
              and all(isinstance(k, str) for k in item.get("params", {}))
              and isinstance(item.get("name", ""), str)):
            step = (item["use"], dict(item.get("params", {})))
            out.append((*step, item["name"]) if item.get("name") else step)
        else:
            extra = sorted(map(str, set(item) - _STEP_KEYS)) if isinstance(item, Mapping) else []
            why = (f" with unknown key(s) {extra} (a step has use, params, name)" if extra else
                   " without 'use' (the component's name)"
                   if isinstance(item, Mapping) and not item.get("use") else "")
            raise Invalid(f"element [{i}] is {_show(item)}{why}")
    return tuple(out)


def path_like(v: Any) -> str:
    import os

    if not isinstance(v, str | os.PathLike) or not isinstance(os.fspath(v), str) \
            or not os.fspath(v):
        raise Invalid
    return os.fspath(v)


def group_lists(v: Any) -> dict[str, tuple[str, ...]]:
    """``{attribute: [group, ...]}``: each value a list of names, never one string (``"F,M"``
    would be split into characters)."""
    if not isinstance(v, Mapping):
        raise Invalid
    out = {}
    for attr, groups in v.items():
        if not isinstance(attr, str) or isinstance(groups, str):
            raise Invalid(f"[{attr!r}] is {_show(groups)}, not a list of group names"
                          if isinstance(attr, str) else f"key {_show(attr)} is not a column name")
        try:
            out[attr] = names_list(groups)
        except Invalid:
            raise Invalid(f"[{attr!r}] is {_show(groups)}, not a list of group names") from None
    return out


def names_list(v: Any) -> tuple[str, ...]:
    """A list of names (strings; numbers are written as text): never one string."""
    if isinstance(v, str | bytes | Mapping | set | frozenset) or not isinstance(v, Iterable):
        raise Invalid
    out = tuple(v)
    if not all(isinstance(x, str | int) and not isinstance(x, bool) for x in out):
        raise Invalid
    return tuple(str(x) for x in out)


def audit_source(v: Any) -> Any:
    """An earlier audit: a JSON file's path, its document (a mapping) or an ``AuditRun``."""
    if isinstance(v, Mapping) or (hasattr(v, "doc") and isinstance(v.doc, Mapping)):
        return v
    return path_like(v)


def size(v: Any) -> int:
    """Bytes: ``"16G"``, ``"512M"``, ``"1.5 GiB"`` or a number of bytes (at least 1 MiB)."""
    from fairaudit.core.limits import parse_size

    n = parse_size(v)
    if n is None or n < 1024**2:
        raise Invalid
    return n


def chain_like(v: Any) -> Any:
    """A chain: a :class:`~fairaudit.core.spec.ChainSpec` built in Python, or a TOML file's path."""
    from fairaudit.core.spec import ChainSpec

    return v if isinstance(v, ChainSpec) else path_like(v)


def one_char(v: Any) -> str:
    if not isinstance(v, str) or len(v) != 1:
        raise Invalid
    return v


def positive(v: Any) -> float:
    """A finite number > 0."""
    f = number(0.0, math.inf)(v)
    if f <= 0:
        raise Invalid
    return f


def reason(v: Any) -> str:
    """A non-empty text (what a record says about why)."""
    if not isinstance(v, str) or not v.strip():
        raise Invalid
    return v.strip()


def optional(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def opt(v: Any) -> Any:
        return None if v is None else check(v)

    return opt


_COLS = "a column name or a list of column names"
_BOUNDS = "a mapping METRIC -> number, e.g. {'balance': 0.8}"

PARAMS: dict[str, Param] = {p.name: p for p in (
    Param("sensitive", "--sensitive", "data.sensitive", _COLS, names),
    Param("labels", "--labels", "data.labels", "a column name (a string)", optional(column)),
    Param("features", "--features", "data.features", _COLS, optional(names)),
    Param("exclude", "--exclude", "data.exclude", _COLS, names),
    Param("seed", "--seed", "data.seed", f"an int in [0, {MAX_SEED}]",
          optional(integer(0, MAX_SEED))),
    Param("sample", "--sample", "data.sample", "an int >= 2 (rows)", optional(integer(2))),
    Param("on_null", "--on-null", "data.on_null", "'exclude' or 'error'",
          optional(choice("exclude", "error"))),
    Param("on_nonfinite", "--on-nonfinite", "data.on_nonfinite", "'error' or 'drop'",
          optional(choice("error", "drop"))),
    Param("max_drop", "--max-drop", "data.max_drop",
          "a share of the rows in [0, 1] (0.5 = at most half may be dropped)",
          optional(number(0.0, 1.0))),
    Param("allow_sensitive_features", None, "data.allow_sensitive_features", "true or false",
          boolean),
    Param("separator", "--separator", "data.separator", "one character", optional(one_char)),
    Param("null_values", "--null-values", "data.null_values",
          "cell texts read as missing: 'a,b' or a list of strings", optional(markers)),
    Param("default_nulls", "--default-nulls", "data.default_nulls", "true or false",
          optional(boolean)),
    Param("decimal_comma", "--decimal-comma", "data.decimal_comma", "true or false",
          optional(boolean)),
    Param("table", "--table", "data.table", "a table name ('people' or 'crm.people')",
          optional(text)),
    Param("query", "--query", "data.query", "a SELECT statement (text)", optional(text)),
    Param("key", "--key", "data.key", "a column name (a string)", optional(column)),
    Param("format", "--format", "data.format", "'parquet', 'csv' or 'delta'",
          optional(choice("parquet", "csv", "delta"))),
    Param("version", "--version", "data.version", "an int >= 0 (a Delta table version)",
          optional(integer(0))),
    Param("k", "--k", "options.k", "an int >= 2", optional(integer(2))),
    Param("min_cell", "--min-cell", "options.min_cell",
          "an int >= 1 (groups with fewer rows are too small to judge)", optional(integer(1))),
    Param("bootstrap", "--bootstrap", "options.bootstrap",
          f"an int in [0, {MAX_BOOTSTRAP:,}] (0 = no intervals)",
          optional(integer(0, MAX_BOOTSTRAP))),
    Param("ci_method", "--ci-method", "options.ci_method", "'calibrated' or 'conservative'",
          optional(choice("calibrated", "conservative"))),
    Param("ci_level", None, "options.ci_level", "a number in [0.5, 1)",
          number(0.5, 1.0, hi_open=True)),
    Param("timing", "--timing", "options.timing", "true or false", optional(boolean)),
    Param("max_memory", "--max-memory", "options.max_memory",
          "a size such as '16G', '512M' or a number of bytes (at least 1M)", optional(size)),
    Param("twins", "--twins", "options.twins", "true or false", optional(boolean)),
    Param("fail_under", "--fail-under", None, _BOUNDS, optional(bounds)),
    Param("fail_over", "--fail-over", None, _BOUNDS, optional(bounds)),
    Param("warn_under", "--warn-under", None, _BOUNDS, optional(bounds)),
    Param("warn_over", "--warn-over", None, _BOUNDS, optional(bounds)),
    Param("tolerance", "--tolerance", None, "a mapping METRIC[[ATTR]] -> allowed worsening",
          optional(bounds)),
    Param("cluster", "--cluster", "cluster",
          "clusterer names 'name:k=v', (name, {param: value}) pairs or {'use': name, "
          "'params': {...}, 'name': label} steps", components),
    Param("audit", "--audit", "audit",
          "auditor names 'name:k=v', (name, {param: value}) pairs or {'use': name, "
          "'params': {...}} steps", components),
    Param("skip_audit", "--skip-audit", None, "auditor names", names),
    Param("disabled_plugins", "--disable-plugin", None, "plugin names", names),
    Param("chain", "--chain", None, "a ChainSpec or the path of a chain TOML file",
          optional(chain_like)),
    Param("engine", "--engine", "engine.name", "'local' or 'dask'",
          optional(choice("local", "dask"))),
    Param("scheduler", "--scheduler", "engine.scheduler",
          "a Dask scheduler address such as 'tcp://host:8786'", optional(text)),
    Param("workers", "--workers", "engine.workers", f"an int in [1, {MAX_WORKERS}]",
          optional(integer(1, MAX_WORKERS))),
    # fairaudit repair (fairaudit/repair/spec.py; the [repair] table of a chain)
    Param("target", "--target", "repair.target",
          "a mapping METRIC[[ATTR]] -> number, e.g. {'balance': 0.8}", optional(bounds)),
    Param("column", "--as", "repair.column", "a column name (a string)", optional(column)),
    Param("intersection", "--intersection", "repair.intersection", "true or false",
          optional(boolean)),
    Param("keep_sizes", "--keep-sizes", "repair.keep_sizes",
          "a share in [0, 1), e.g. 0.05 for each segment's size within +-5 %",
          optional(number(0.0, 1.0, hi_open=True))),
    Param("objective", "--objective", "repair.objective", "'moves' or 'cost'",
          optional(choice("moves", "cost"))),
    Param("time_limit", "--time-limit", "repair.time_limit", "a number of seconds in (0, 86400]",
          optional(number(1e-3, 86400.0))),
    Param("out", "--out", "repair.out", "a file path (.parquet or .csv)",
          optional(path_like)),
    Param("report", "--report", "repair.report", "a file path (.html)", optional(path_like)),
    Param("json", "--json", "repair.json", "a file path (.json)", optional(path_like)),
    Param("baseline", "--baseline", "compare.baseline",
          "the path of an audit JSON, its document (a mapping) or an AuditRun",
          optional(audit_source)),
    Param("baseline_missing", "--baseline-missing", "compare.missing", "'error' or 'skip'",
          optional(choice("error", "skip"))),
    Param("publish", "--publish", "privacy.publish", "True or False", optional(boolean)),
    Param("ledger", "--ledger", "privacy.ledger", "a file path (str or pathlib.Path)",
          optional(path_like)),
    Param("privacy_source", "--privacy-source", "privacy.source", "a name (a string)",
          optional(text)),
    Param("dp_categories", "--dp-categories", "privacy.categories",
          "a mapping attribute -> list of group names, e.g. {'sex': ['F', 'M']}",
          optional(group_lists)),
    Param("dp_clusters", "--dp-clusters", "privacy.clusters",
          "a list of cluster names, e.g. ['A', 'B']", optional(names_list)),
    # fairaudit ledger raise / lower (fairaudit/cli/ledger_commands.py)
    Param("budget_to", "--to", None, "a finite number > 0 (the source's new budget, epsilon)",
          positive),
    Param("budget_reason", "--reason", None, "a non-empty text saying why", reason),
)}


def problem(name: str, value: Any) -> str | None:
    """What is wrong with ``value`` for parameter ``name`` ("expected ...; got ..."), or None."""
    try:
        PARAMS[name].check(value)
    except Invalid as exc:
        return f"expected {PARAMS[name].expected}; got {_show(value)}{_detail(exc)}"
    return None


def check(name: str, value: Any, surface: Surface = "api") -> Any:
    """The normalised value, or :class:`ConfigError` naming the parameter on ``surface``."""
    p = PARAMS[name]
    try:
        return p.check(value)
    except Invalid as exc:
        raise ConfigError(f"{p.label(surface)}: expected {p.expected}; got {_show(value)}"
                          f"{_detail(exc)}") from None


def _detail(exc: Invalid) -> str:
    """Which part of the value is wrong, when the check said so (``; element [1] is ...``)."""
    return f"; {exc.args[0]}" if exc.args else ""


def check_all(values: Mapping[str, Any], surface: Surface = "api") -> dict[str, Any]:
    """Every value checked (in the order given); the first bad one raises."""
    return {name: check(name, value, surface) for name, value in values.items()}


def _show(value: Any) -> str:
    """A short description of a bad value (never a whole table's printout)."""
    kind = type(value).__name__
    try:
        text_ = repr(value)
    except Exception:  # pragma: no cover - a repr that fails
        text_ = f"<{kind}>"
    if "\n" in text_ or len(text_) > 60:
        shape = getattr(value, "shape", None)
        return f"a {type(value).__module__.split('.')[0]}.{kind}" + (
            f" of shape {tuple(shape)}" if shape is not None else "")
    return f"{text_} ({kind})" if not isinstance(value, str) else text_


def as_given(name: str, value: Any, source: str) -> str:
    """Parameter ``name`` set to ``value`` as the user wrote it, for a note: ``--k 3`` in a
    chain built from flags, ``k=3`` in Python, ``options.k = 3`` in a chain file (``source`` is
    the chain's :attr:`~fairaudit.core.spec.ChainSpec.source`)."""
    p = PARAMS[name]
    if source.startswith("flags") and p.flag:
        return f"{p.flag} {value}"
    if source.startswith("api") or source == "python" or not p.key:
        return f"{p.name}={value!r}"
    return f"{p.key} = {value!r}"
