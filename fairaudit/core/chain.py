"""Declared chains: TOML (or CLI flags) -> frozen :class:`ChainSpec` -> validated.

Validation collects every problem before reporting, each with its TOML path
(``cluster[1].params.n_cluster: unknown parameter (did you mean n_clusters?)``). It checks, in
order: unknown keys, unknown component names, parameter binding, parameter constraints, the
requires/provides data flow, thresholds, and (when a schema is given) that named columns exist.
"""

from __future__ import annotations

import difflib
import inspect
import re
import tomllib
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fairaudit.core.artifacts import INPUT_ARTIFACTS, LABELS
from fairaudit.errors import ChainValidationError, ConfigError
from fairaudit.ops.gates import check_threshold
from fairaudit.report.results import Threshold

DEFAULT_AUDITORS: tuple[str, ...] = ("balance", "distribution", "capacity", "quality", "proxy")
"""Auditors run when a chain names none (those installed). ``quality`` (silhouette, on a sample)
and ``proxy`` (proxy features, on a sample) are left out when the data has no feature columns."""

DEFAULT_CLUSTERERS: tuple[str, ...] = ("kmeans", "fairden", "ffcm")
"""Clusterers compared by ``fairaudit audit`` when no labels column and no clusterer are given
(those installed; each is fitted on a sample when the data exceeds its ``max_rows``)."""

DEFAULT_PREPROCESSORS: tuple[str, ...] = ("encode",)

SUPPRESS_RETIRED = (
    "cell suppression was retired: the report shows exact values, small groups included, and "
    "is for people allowed to see the data; for a report you may share, use --publish (a "
    "differentially private release; docs/privacy.md)"
)

SUPPRESS_DEPRECATED = ("{name} is deprecated and has no effect: exact values are the default "
                       "(docs/privacy.md)")


def retired_suppress(value: Any, name: str) -> str | None:
    """Check the retired ``suppress`` option (``--no-suppress``, ``options.suppress``,
    ``suppress=``). ``None`` (not given) passes. ``False`` asks for what now always happens
    (exact values): accepted with a :class:`FutureWarning`. Anything else asks for protection
    that no longer exists: the problem is returned, for the caller to refuse with ``name``
    (never silently publish exact small counts to someone who asked for them to be hidden)."""
    if value is None:
        return None
    if value is False:
        warnings.warn(SUPPRESS_DEPRECATED.format(name=name), FutureWarning, stacklevel=3)
        return None
    return f"got {value!r}; {SUPPRESS_RETIRED}"

DEFAULT_TWINS = True
"""Whether a chain built from flags (the default comparison, or ``--cluster`` steps named on the
command line or in ``fairaudit.audit``) also fits the ``fair = false`` twin of each fair
clusterer (``--twins`` / ``--no-twins`` for any chain; a chain file's ``[options] twins``,
default false, for a chain file). Measured on the demo: the twins' fits add 14-37 %
to the default run (``docs/cli.md``)."""

_DATA_KEYS = {
    "path": "input file, directory or glob",
    "sensitive": "list of sensitive columns",
    "labels": "existing labels column to audit",
    "features": "feature columns (default: all others)",
    "exclude": "columns to leave out of the features",
    "ordinal": "table: attribute -> ordered list of its groups",
    "seed": "int seed for every random step",
    "sample": "fit clusterers on at most this many rows",
    "on_null": "'exclude' or 'error' for null sensitive / label values",
    "on_nonfinite": "'error' or 'drop' for NaN / inf feature values",
    "allow_sensitive_features": "also give sensitive columns to clusterers as features",
    "separator": "CSV separator",
}
_OPTION_KEYS = {
    "min_cell": "groups with fewer rows are too small to judge (listed as such)",
    "suppress": "retired (cell suppression); false is accepted and ignored",
    "bootstrap": "bootstrap replicates for confidence intervals (0 = off)",
    "ci_level": "confidence level",
    "ci_method": "'calibrated' (bootstrap critical value) or 'conservative' (Bonferroni) intervals",
    "k": "number of clusters for clusterers left unset",
    "timing": "record step timings and the creation time in the JSON (not reproducible)",
    "twins": "also fit every fair clusterer with fair = false (its twin) for the price of fairness",
}
_STEP_KEYS = {"use", "name", "params"}
_AUDIT_KEYS = _STEP_KEYS | {"threshold", "severity", "on", "metric", "attribute"}
ON_VALUES = ("value", "ci", "lower", "upper")
"""What a threshold judges: the value, the CI's conservative end (lower for a lower bound, upper
for an upper bound), or a named end of the CI."""
_THRESHOLD_KEYS = {"metric", "min", "max", "on", "attribute", "severity", "labelling"}
_ENGINE_KEYS = {
    "name": "'local' (polars on this machine) or 'dask'",
    "scheduler": "address of a running Dask scheduler, e.g. 'tcp://host:8786'",
    "workers": "start a local Dask cluster of this many worker processes",
}
ENGINE_NAMES = ("local", "dask")
_PRIVACY_KEYS = {
    "publish": "true: make a differentially private release (docs/privacy.md)",
    "epsilon": "privacy loss of one release (pure epsilon-DP), a finite number > 0",
    "budget": "total epsilon the ledger allows for this data source",
    "ledger": "path of the privacy ledger (default $XDG_STATE_HOME/fairaudit/ledger.json)",
    "source": "name of the data source in the ledger (default: the input's absolute path)",
    "categories": "table: attribute = [its groups], the declared (public) group domain",
    "clusters": "the declared (public) cluster names of a labels column",
    "fitted": "'refuse' (default) or 'conditional': publish labellings fitted on these rows",
    "domain": "'public' (declared or observed groups, every cell noised) or 'private' (cells "
              "chosen privately by a threshold; needs delta)",
    "delta": "delta of the 'private' domain (default 1e-7; > 0 and <= 1e-3)",
}
FITTED_CHOICES = ("refuse", "conditional")
DOMAIN_CHOICES = ("public", "private")
_TOP_KEYS = {"data", "options", "preprocess", "cluster", "audit", "threshold", "compare",
             "engine", "privacy"}


@dataclass(frozen=True)
class StepSpec:
    """One ``[[preprocess]]``, ``[[cluster]]`` or ``[[audit]]`` entry."""

    kind: str
    use: str
    path: str
    params: Mapping[str, Any] = field(default_factory=dict)
    name: str | None = None
    twin_of: str | None = None
    """Label of the fair step this ``fair = false`` twin copies (seed, k and input included)."""

    @property
    def label(self) -> str:
        return self.name or self.use


@dataclass(frozen=True)
class DataSpec:
    path: str | None = None
    sensitive: tuple[str, ...] = ()
    labels: str | None = None
    features: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    ordinal: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    seed: int = 0
    sample: int | None = None
    on_null: str = "exclude"
    on_nonfinite: str = "error"
    allow_sensitive_features: bool = False
    reader_options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Options:
    min_cell: int = 10
    bootstrap: int = 200
    ci_level: float = 0.95
    ci_method: str = "calibrated"
    """Interval method of the min-of-ratios metrics (docs/metrics.md, "Uncertainty")."""
    k: int | None = None
    timing: bool = False
    """Put the ``timing`` block (creation time, seconds per step) in the JSON. Off by default so
    the same input, seed and version give byte-identical JSON."""
    twins: bool = False


@dataclass(frozen=True)
class PrivacySpec:
    """The ``[privacy]`` table (``--publish`` ...; ``fairaudit.audit(publish=...)``): whether the
    run makes a differentially private release, and its parameters (docs/privacy.md)."""

    publish: bool = False
    epsilon: float = 1.0
    budget: float | None = None
    ledger: str | None = None
    source: str | None = None
    categories: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    clusters: tuple[str, ...] | None = None
    fitted: str = "refuse"
    domain: str = "public"
    delta: float = 1e-7
    given: frozenset[str] = field(default=frozenset(), compare=False, repr=False)
    """The parameters (other than ``publish``) set explicitly: without ``publish`` they are
    refused, never silently ignored."""

    def to_json(self) -> dict[str, Any]:
        return {"publish": self.publish, "epsilon": self.epsilon, "budget": self.budget,
                "categories": {k: list(v) for k, v in self.categories.items()},
                "clusters": None if self.clusters is None else list(self.clusters),
                "fitted": self.fitted, "domain": self.domain, "delta": self.delta}


def privacy_problems(p: PrivacySpec, name: Mapping[str, str], *,
                     require_publish: bool = True) -> list[tuple[str, str]]:
    """What is wrong with ``p``: ``(parameter, message)`` pairs, the parameter spelled by
    ``name`` (``privacy.epsilon`` in a chain, ``--epsilon`` on the command line, ``epsilon=``
    in the API). The one check of privacy parameters for chain, CLI and API.

    ``require_publish=False`` leaves out the rule that privacy options need ``publish``: a chain
    file's ``[privacy]`` table may hold them for a ``--publish`` given on the command line;
    :func:`validate_chain` applies the rule to the finished chain."""
    import math

    out: list[tuple[str, str]] = []
    if not p.publish and require_publish:
        publish = name["publish"] + (" = true" if name["publish"].startswith("privacy") else "")
        for k in sorted(p.given - {"publish"}):
            out.append((name.get(k, k), f"needs {publish}: without it the run makes the "
                        "analyst's exact report and this privacy option would be ignored"))
        if out:
            return out

    def number(v: Any) -> bool:
        return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)

    if not number(p.epsilon) or p.epsilon <= 0:
        out.append((name["epsilon"], f"must be a finite number > 0; got {p.epsilon!r}"))
    if p.budget is not None:
        if not number(p.budget) or p.budget <= 0:
            out.append((name["budget"], f"must be a finite number > 0; got {p.budget!r}"))
        elif number(p.epsilon) and p.budget < p.epsilon:
            out.append((name["budget"], f"{p.budget!r} is below one release (epsilon "
                        f"{p.epsilon!r}): no release could ever be made"))
    if p.domain not in DOMAIN_CHOICES:
        out.append((name["domain"], f"must be one of {', '.join(DOMAIN_CHOICES)}; got "
                    f"{p.domain!r}"))
    if not number(p.delta) or not 0 < p.delta <= 1e-3:
        out.append((name["delta"], f"must be a number > 0 and <= 1e-3; got {p.delta!r}"))
    if p.fitted not in FITTED_CHOICES:
        out.append((name["fitted"], f"must be one of {', '.join(FITTED_CHOICES)}; got "
                    f"{p.fitted!r}"))
    for attr, groups in p.categories.items():
        where = (f"{name['categories']}.{attr}" if name["categories"].startswith("privacy")
                 else name["categories"])
        if not isinstance(groups, tuple | list) or not groups or len(set(groups)) != len(groups):
            out.append((where, f"{attr}: must be a non-empty list of distinct group names"))
        elif len(groups) < 2:
            out.append((where, f"{attr}: declares {len(groups)} group ({groups[0]!r}); declare "
                        "at least two (every group of the attribute): a release of one group "
                        "compares nothing, and the rows of the other groups would be left out"))
    if p.clusters is not None and (not p.clusters or len(set(p.clusters)) != len(p.clusters)):
        out.append((name["clusters"], "must be a non-empty list of distinct cluster names"))
    for key in ("ledger", "source"):
        v = getattr(p, key)
        if v is not None and (not isinstance(v, str) or not v.strip()):
            out.append((name[key], f"must be a non-empty string; got {v!r}"))
    return out


_TOML_NAMES = {k: f"privacy.{k}" for k in _PRIVACY_KEYS}
FLAG_NAMES = {"publish": "--publish", "epsilon": "--epsilon", "budget": "--privacy-budget",
              "ledger": "--ledger", "source": "--privacy-source", "categories": "--dp-categories",
              "clusters": "--dp-clusters", "fitted": "--dp-fitted", "domain": "--dp-domain",
              "delta": "--delta"}
API_NAMES = {"publish": "publish=", "epsilon": "epsilon=", "budget": "privacy_budget=",
             "ledger": "ledger=", "source": "privacy_source=", "categories": "dp_categories=",
             "clusters": "dp_clusters=", "fitted": "dp_fitted=", "domain": "dp_domain=",
             "delta": "delta="}


def check_privacy(p: PrivacySpec, names: Mapping[str, str] = FLAG_NAMES) -> PrivacySpec:
    """``p`` if valid, else :class:`ConfigError` naming every bad parameter (exit 2)."""
    problems = privacy_problems(p, names)
    if problems:
        raise ConfigError("; ".join(f"{k}: {m}" for k, m in problems))
    return p


@dataclass(frozen=True)
class EngineSpec:
    """The ``[engine]`` table: where the passes over every row run (:mod:`fairaudit.core.engines`).

    ``name`` is ``"local"`` (the default) or ``"dask"``; a Dask engine takes ``scheduler`` (the
    address of a running cluster) or ``workers`` (a local cluster of that many processes), or
    neither, and then reads ``DASK_SCHEDULER_ADDRESS`` when the run starts. The engine is not
    part of the audit's JSON: both engines give identical results.
    """

    name: str = "local"
    scheduler: str | None = None
    workers: int | None = None


@dataclass(frozen=True)
class ChainSpec:
    data: DataSpec
    options: Options = Options()
    preprocess: tuple[StepSpec, ...] = ()
    cluster: tuple[StepSpec, ...] = ()
    audit: tuple[StepSpec, ...] = ()
    thresholds: tuple[Threshold, ...] = ()
    source: str = "flags"
    problems: tuple[tuple[str, str], ...] = ()
    """Problems found while parsing; reported together with validation's (all at once)."""
    engine: EngineSpec = EngineSpec()
    privacy: PrivacySpec = PrivacySpec()

    def to_json(self) -> dict[str, Any]:
        def step(s: StepSpec) -> dict[str, Any]:
            return {"use": s.use, "name": s.label, "params": _jsonable(dict(s.params))}

        return {
            "source": self.source,
            "seed": self.data.seed,
            "preprocess": [step(s) for s in self.preprocess],
            "cluster": [step(s) for s in self.cluster],
            "audit": [step(s) for s in self.audit],
            "thresholds": [t.to_json() for t in self.thresholds],
            "options": {
                "min_cell": self.options.min_cell,
                "bootstrap": self.options.bootstrap,
                "ci_level": self.options.ci_level,
                "ci_method": self.options.ci_method,
                "k": self.options.k,
                "timing": self.options.timing,
                "twins": self.options.twins,
                "on_null": self.data.on_null,
                "on_nonfinite": self.data.on_nonfinite,
                "sample": self.data.sample,
            },
        }


def _jsonable(x: Any) -> Any:
    if isinstance(x, Mapping):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, str | int | float | bool) or x is None:
        return x
    return repr(x)


# --------------------------------------------------------------------------- parsing
class _Problems:
    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def add(self, path: str, msg: str) -> None:
        self.items.append((path, msg))

    def unknown_keys(self, table: Mapping[str, Any], known: set[str] | Mapping, path: str) -> None:
        for key in table:
            if key not in known:
                close = difflib.get_close_matches(key, list(known), n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                where = f"{path}.{key}" if path else key
                self.add(where, f"unknown key{hint}")


def load_chain(path: str | Path) -> ChainSpec:
    """Read and parse a chain TOML file (structure only; see :func:`validate_chain`)."""
    from fairaudit.core.limits import MAX_TOML_BYTES, MAX_TOML_DEPTH, check_nesting, read_limited

    p = Path(path)
    if not p.exists():
        raise ConfigError(f"{p}: no such chain file")
    text = read_limited(p, MAX_TOML_BYTES, "chain file", ConfigError)
    check_nesting(text, str(p), MAX_TOML_DEPTH, toml=True, error=ConfigError)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: not valid TOML: {exc}") from None
    except RecursionError:  # nesting the scan above cannot see (dotted keys)
        raise ConfigError(f"{p}: nested too deeply to read") from None
    return parse_chain(doc, source=str(p))


def parse_chain(doc: Mapping[str, Any], *, source: str = "<chain>") -> ChainSpec:
    problems = _Problems()
    problems.unknown_keys(doc, _TOP_KEYS, "")
    data_doc = doc.get("data", {})
    if not isinstance(data_doc, Mapping):
        problems.add("data", "must be a table")
        data_doc = {}
    problems.unknown_keys(data_doc, _DATA_KEYS, "data")
    opt_doc = doc.get("options", {})
    if not isinstance(opt_doc, Mapping):
        problems.add("options", "must be a table")
        opt_doc = {}
    problems.unknown_keys(opt_doc, _OPTION_KEYS, "options")

    data = _parse_data(data_doc, problems)
    options = _parse_options(opt_doc, problems)
    engine = _parse_engine(doc.get("engine", {}), problems)
    privacy = _parse_privacy(doc.get("privacy", {}), problems)
    steps: dict[str, list[StepSpec]] = {}
    thresholds: list[Threshold] = []
    for kind in ("preprocess", "cluster", "audit"):
        entries = doc.get(kind, [])
        if isinstance(entries, Mapping):
            entries = [entries]
        if not isinstance(entries, list):
            problems.add(kind, f"must be an array of tables ([[{kind}]])")
            entries = []
        steps[kind] = []
        for i, entry in enumerate(entries):
            path = f"{kind}[{i}]"
            if not isinstance(entry, Mapping):
                problems.add(path, "must be a table")
                continue
            problems.unknown_keys(entry, _AUDIT_KEYS if kind == "audit" else _STEP_KEYS, path)
            use = entry.get("use")
            if not isinstance(use, str) or not use:
                problems.add(f"{path}.use", "missing: name the component to use")
                continue
            params = entry.get("params", {})
            if not isinstance(params, Mapping):
                problems.add(f"{path}.params", "must be a table")
                params = {}
            name = entry.get("name")
            if name is not None and not isinstance(name, str):
                problems.add(f"{path}.name", "must be a string")
                name = None
            steps[kind].append(StepSpec(kind, use, path, dict(params), name))
            if kind == "audit" and "threshold" in entry:
                th = _threshold_from_audit(entry, path, problems)
                if th is not None:
                    thresholds.append(th)
    th_entries = doc.get("threshold", [])
    if isinstance(th_entries, Mapping):
        th_entries = [th_entries]
    for i, entry in enumerate(th_entries if isinstance(th_entries, list) else []):
        th = _parse_threshold_table(entry, f"threshold[{i}]", problems)
        if th is not None:
            thresholds.append(th)
    return ChainSpec(
        problems=tuple(problems.items),
        data=data,
        options=options,
        preprocess=tuple(steps["preprocess"]),
        cluster=tuple(steps["cluster"]),
        audit=tuple(steps["audit"]),
        thresholds=tuple(thresholds),
        source=source,
        engine=engine,
        privacy=privacy,
    )


def _parse_privacy(d: Any, problems: _Problems) -> PrivacySpec:
    """``[privacy]``: checked by :func:`privacy_problems`, as the CLI's and the API's values."""
    if not isinstance(d, Mapping):
        problems.add("privacy", f"must be a table ([privacy]); got {d!r}")
        return PrivacySpec()
    problems.unknown_keys(d, _PRIVACY_KEYS, "privacy")
    kw: dict[str, Any] = {k: d[k] for k in ("epsilon", "budget", "ledger", "source", "fitted",
                                            "domain", "delta") if k in d}
    if "publish" in d:
        if isinstance(d["publish"], bool):
            kw["publish"] = d["publish"]
        else:
            problems.add("privacy.publish", f"must be true or false; got {d['publish']!r}")
    if "categories" in d:
        c = d["categories"]
        if isinstance(c, Mapping) and all(isinstance(v, list) for v in c.values()):
            kw["categories"] = {str(k): tuple(str(x) for x in v) for k, v in c.items()}
        else:
            problems.add("privacy.categories", "must be a table: attribute = [its groups]")
    if "clusters" in d:
        if isinstance(d["clusters"], list):
            kw["clusters"] = tuple(str(x) for x in d["clusters"])
        else:
            problems.add("privacy.clusters", "must be a list of cluster names")
    spec = PrivacySpec(**kw, given=frozenset(k for k in d if k in _PRIVACY_KEYS) - {"publish"})
    bad = privacy_problems(spec, _TOML_NAMES, require_publish=False)
    for path, msg in bad:
        problems.add(path, msg)
    return PrivacySpec() if bad else spec


def _parse_engine(d: Any, problems: _Problems) -> EngineSpec:
    """``[engine]``: ``name``, and for Dask ``scheduler`` or ``workers`` (not both)."""
    if not isinstance(d, Mapping):
        problems.add("engine", f"must be a table ([engine]); got {d!r}")
        return EngineSpec()
    problems.unknown_keys(d, _ENGINE_KEYS, "engine")
    ok = True
    scheduler = d.get("scheduler")
    if scheduler is not None and not _is_address(scheduler):
        problems.add("engine.scheduler", "must be a Dask scheduler address such as "
                     f"'tcp://host:8786' (a string, no spaces); got {scheduler!r}")
        ok = False
    workers = d.get("workers")
    from fairaudit.core.params import problem

    if workers is not None and (msg := problem("workers", workers)) is not None:
        problems.add("engine.workers", msg)
        ok = False
    if scheduler is not None and workers is not None:
        problems.add("engine", "give scheduler (a running Dask cluster) or workers (a local "
                     "cluster of that many processes), not both")
        ok = False
    name = d.get("name", "dask" if scheduler is not None or workers is not None else "local")
    if name not in ENGINE_NAMES:
        problems.add("engine.name", f"must be one of {', '.join(map(repr, ENGINE_NAMES))}; "
                     f"got {name!r}")
        return EngineSpec()
    if name == "local" and (scheduler is not None or workers is not None):
        key = "scheduler" if scheduler is not None else "workers"
        problems.add(f"engine.{key}", "only for name = 'dask'; the local engine runs on this "
                     "machine")
        ok = False
    if not ok:
        return EngineSpec()
    return EngineSpec(name=name, scheduler=scheduler, workers=workers)


def _is_address(value: Any) -> bool:
    """A scheduler address as Dask takes it: ``tcp://host:8786``, ``tls://…``, ``host:port``."""
    if not isinstance(value, str) or not value or any(c.isspace() for c in value):
        return False
    scheme, sep, rest = value.partition("://")
    if sep:
        return scheme in ("tcp", "tls", "ucx", "inproc", "ws", "wss") and bool(rest)
    return True


def _checked(d: Mapping[str, Any], key: str, name: str, path: str, problems: _Problems,
             kw: dict[str, Any]) -> None:
    """``d[key]`` checked by :mod:`fairaudit.core.params` (the one validation of every parameter)."""
    from fairaudit.core import params

    if key not in d:
        return
    msg = params.problem(name, d[key])
    if msg is not None:
        problems.add(path, msg)
    else:
        kw[key] = params.check(name, d[key])


def _parse_data(d: Mapping[str, Any], problems: _Problems) -> DataSpec:
    kw: dict[str, Any] = {}
    if "path" in d:
        kw["path"] = str(d["path"])
    for key in ("sensitive", "exclude", "features", "labels", "seed", "sample", "on_null",
                "on_nonfinite", "allow_sensitive_features"):
        _checked(d, key, key, f"data.{key}", problems, kw)
    if kw.get("features") is None:
        kw.pop("features", None)
    if "ordinal" in d:
        o = d["ordinal"]
        if isinstance(o, Mapping) and all(isinstance(v, list) for v in o.values()):
            kw["ordinal"] = {k: tuple(str(x) for x in v) for k, v in o.items()}
        else:
            problems.add("data.ordinal", "must be a table: attribute = [ordered groups]")
    sep: dict[str, Any] = {}
    _checked(d, "separator", "separator", "data.separator", problems, sep)
    if sep.get("separator") is not None:
        kw["reader_options"] = {"separator": sep["separator"]}
    return DataSpec(**kw)


def _parse_options(d: Mapping[str, Any], problems: _Problems) -> Options:
    kw: dict[str, Any] = {}
    for key in ("min_cell", "bootstrap", "ci_level", "ci_method", "k", "timing", "twins"):
        _checked(d, key, key, f"options.{key}", problems, kw)
    if "suppress" in d:
        problem = retired_suppress(d["suppress"], "options.suppress")
        if problem is not None:
            problems.add("options.suppress", problem)
    return Options(**{k: v for k, v in kw.items() if v is not None or k == "k"})


def _threshold_from_audit(entry: Mapping[str, Any], path: str, problems: _Problems):
    value = entry["threshold"]
    if isinstance(value, bool) or not isinstance(value, int | float):
        problems.add(f"{path}.threshold", f"must be a number; got {value!r}")
        return None
    severity = entry.get("severity", "error")
    on = entry.get("on", "value")
    if severity not in ("error", "warning"):
        problems.add(f"{path}.severity", "must be 'error' or 'warning'")
        return None
    if on not in ON_VALUES:
        problems.add(f"{path}.on", "must be 'value', 'ci', 'lower' or 'upper'")
        return None
    # metric and bound are resolved against the auditor's metrics during validation
    return Threshold(
        metric=entry.get("metric") or f"@{entry['use']}",
        value=float(value),
        bound="auto",
        on=on,
        attribute=entry.get("attribute"),
        severity=severity,
        source=path,
    )


def _parse_threshold_table(entry: Any, path: str, problems: _Problems):
    if not isinstance(entry, Mapping):
        problems.add(path, "must be a table")
        return None
    problems.unknown_keys(entry, _THRESHOLD_KEYS, path)
    metric = entry.get("metric")
    if not isinstance(metric, str):
        problems.add(f"{path}.metric", "missing: name the metric")
        return None
    if ("min" in entry) == ("max" in entry):
        problems.add(path, "give exactly one of min or max")
        return None
    bound = "min" if "min" in entry else "max"
    value = entry[bound]
    if isinstance(value, bool) or not isinstance(value, int | float):
        problems.add(f"{path}.{bound}", "must be a number")
        return None
    ok = True
    on = entry.get("on", "value")
    if on not in ON_VALUES:
        problems.add(f"{path}.on", f"must be 'value', 'ci', 'lower' or 'upper'; got {on!r}")
        ok = False
    severity = entry.get("severity", "error")
    if severity not in ("error", "warning"):
        problems.add(f"{path}.severity", f"must be 'error' or 'warning'; got {severity!r}")
        ok = False
    for key in ("attribute", "labelling"):
        if key in entry and not isinstance(entry[key], str):
            problems.add(f"{path}.{key}", "must be a string")
            ok = False
    if not ok:
        return None
    return Threshold(
        metric=metric,
        value=float(value),
        bound=bound,
        on=on,
        attribute=entry.get("attribute"),
        severity=severity,
        labelling=entry.get("labelling"),
        source=path,
    )


_THRESHOLD_KEY = re.compile(
    r"^(?P<metric>[A-Za-z0-9_\-.]+)(@(?P<on>ci|lower|upper))?(\[(?P<attr>[^\]]+)\])?$"
)


def parse_threshold_flag(text: str, bound: str, flag: str, severity: str = "error") -> Threshold:
    """Parse ``METRIC[@ci|@lower|@upper][[ATTRIBUTE]]=VALUE`` from ``--fail-under`` / ``--fail-over`` (or, with
    ``severity="warning"``, ``--warn-under`` / ``--warn-over``)."""
    key, eq, raw = text.strip().rpartition("=")
    if not eq or not _THRESHOLD_KEY.match(key.strip()) or not raw.strip():
        raise ConfigError(
            f"{flag} {text!r}: expected METRIC=VALUE, METRIC@ci=VALUE or METRIC[attribute]=VALUE "
            "(e.g. balance=0.8)"
        )
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{flag} {text!r}: {raw.strip()!r} is not a number") from None
    return threshold_from(key.strip(), value, bound, f"{flag} {text.strip()}", severity)


def threshold_from(key: str, value: float, bound: str, source: str,
                   severity: str = "error") -> Threshold:
    """A threshold from ``METRIC[@ci|@lower|@upper][[ATTRIBUTE]]`` and its bound (the keys of
    ``fairaudit.audit(fail_under={...})``; ``source`` names it in messages)."""
    m = _THRESHOLD_KEY.match(key)
    if not m:
        raise ConfigError(f"{source}: expected METRIC, METRIC@ci or METRIC[attribute] as the key "
                          "(e.g. 'balance')")
    return Threshold(
        metric=m["metric"],
        value=float(value),
        bound=bound,
        on=m["on"] or "value",
        attribute=m["attr"],
        severity=severity,
        source=source,
    )


def parse_component_flag(text: str, flag: str = "--cluster") -> tuple[str, dict[str, Any]]:
    """Parse ``NAME[:key=value,...]`` (values as TOML literals, else strings)."""
    name, _, rest = text.partition(":")
    name = name.strip()
    if not name:
        raise ConfigError(f"{flag} {text!r}: expected NAME[:key=value,...]")
    params: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in _split_params(rest))):
        key, eq, raw = part.partition("=")
        if not eq or not key.strip():
            raise ConfigError(f"{flag} {text!r}: {part!r} is not key=value")
        params[key.strip()] = _literal(raw.strip())
    return name, params


def _component(item: str | tuple[str, Mapping[str, Any]], flag: str
               ) -> tuple[str, dict[str, Any]]:
    """A component named as ``NAME[:k=v,...]`` text or as a parsed ``(name, params)`` pair."""
    if isinstance(item, str):
        return parse_component_flag(item, flag)
    name, params = item
    return name, dict(params)


def _split_params(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def _literal(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


# --------------------------------------------------------------------------- validation
def validate_chain(
    spec: ChainSpec,
    registry: Any,
    *,
    columns: Sequence[str] | None = None,
) -> ChainSpec:
    """Check a chain against the installed components (and the data's columns when given).

    Returns the spec with thresholds resolved (``[[audit]] threshold`` -> the auditor's headline
    metric and its direction). Raises :class:`ChainValidationError` listing every problem.
    """
    problems = _Problems()
    problems.items.extend(spec.problems)
    if not spec.privacy.publish:  # privacy options of a chain file with no publish anywhere
        for path, msg in privacy_problems(spec.privacy, _TOML_NAMES):
            problems.add(path, msg)
    kinds = {"preprocess": "preprocessor", "cluster": "clusterer", "audit": "auditor"}
    classes: dict[str, type] = {}
    for group in ("preprocess", "cluster", "audit"):
        for step in getattr(spec, group):
            kind = kinds[group]
            if not registry.has(kind, step.use):
                problems.add(f"{step.path}.use", registry.unknown_message(kind, step.use))
                continue
            cls = registry.get(kind, step.use).cls
            classes[step.path] = cls
            _check_params(cls, step, problems)

    # names of labellings must be unique
    seen: dict[str, str] = {}
    if spec.data.labels:
        seen[spec.data.labels] = "data.labels"
    for step in spec.cluster:
        if step.label in seen:
            problems.add(
                f"{step.path}.name",
                f"labelling name {step.label!r} is already used by {seen[step.label]}; "
                "give this step a distinct name",
            )
        seen[step.label] = step.path

    # data flow
    available = set(INPUT_ARTIFACTS)
    if not spec.data.sensitive:
        available.discard("sensitive")
    if spec.data.labels:
        available.add(LABELS)
    for step in spec.preprocess:
        cls = classes.get(step.path)
        if cls is None:
            continue
        missing = set(cls.requires) - available
        if missing:
            problems.add(step.path, f"{step.use!r} needs {sorted(missing)}, which nothing provides")
        available |= set(cls.provides)
    for step in spec.cluster:
        cls = classes.get(step.path)
        if cls is None:
            available.add(LABELS)  # an unknown clusterer is reported above: no cascade of
            continue               # "needs labels" problems for every auditor
        needs = set(cls.requires)
        missing = needs - available - ({"labellings"} if "labellings" in needs else set())
        if "labellings" in needs and LABELS not in available:
            problems.add(step.path, f"{step.use!r} combines earlier labellings, but there are none "
                         "before it (add [[cluster]] steps or data.labels first)")
        if missing:
            problems.add(step.path, f"{step.use!r} needs {sorted(missing)}, which nothing provides")
        available |= set(cls.provides) | {LABELS}
    if LABELS not in available:
        problems.add("cluster", "nothing to audit: set data.labels or add a [[cluster]] step")
    if not spec.audit:
        problems.add("audit", "no auditors: add at least one [[audit]] step")
    metric_specs: dict[str, Any] = {}
    for step in spec.audit:
        cls = classes.get(step.path)
        if cls is None:
            continue
        missing = set(cls.requires) - available
        if missing:
            problems.add(step.path, f"{step.use!r} needs {sorted(missing)}, which nothing provides")
        for m in cls.metrics:
            metric_specs[m.name] = (m, step)

    # thresholds
    resolved: list[Threshold] = []
    for th in spec.thresholds:
        if th.metric.startswith("@"):
            step_use = th.metric[1:]
            cls = next(
                (classes[s.path] for s in spec.audit if s.use == step_use and s.path in classes),
                None,
            )
            if cls is None:
                continue
            m = cls.headline()
            bound = "min" if m.direction.value == "higher_is_better" else "max"
            th = replace(th, metric=m.name, bound=bound)
            for msg in check_threshold(th, m, bootstrap=spec.options.bootstrap):
                problems.add(f"{th.source}.threshold" if th.source else "threshold", msg)
            resolved.append(th)
            continue
        if th.metric not in metric_specs:
            close = difflib.get_close_matches(th.metric, list(metric_specs), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            problems.add(
                th.source or "threshold",
                f"threshold on unknown metric {th.metric!r}{hint}; the chain's auditors give: "
                + ", ".join(sorted(metric_specs)),
            )
            continue
        m, _ = metric_specs[th.metric]
        for msg in check_threshold(th, m, bootstrap=spec.options.bootstrap):
            problems.add(_bound_path(th), msg)
        resolved.append(th)
        if th.attribute is not None and spec.data.sensitive:
            attrs = set(spec.data.sensitive)
            if len(spec.data.sensitive) > 1:
                attrs.add("|".join(spec.data.sensitive))
            if not m.per_attribute:
                problems.add(th.source or "threshold",
                             f"{th.metric!r} is not computed per attribute; drop [{th.attribute}]")
            elif th.attribute not in attrs:
                problems.add(th.source or "threshold",
                             f"unknown attribute {th.attribute!r}; expected one of {sorted(attrs)}")
        if th.labelling is not None and th.labelling not in seen and not (
            th.labelling == "(data)" and not _step_per_labelling(metric_specs[th.metric][1],
                                                                 classes)
        ):
            problems.add(th.source or "threshold",
                         f"unknown labelling {th.labelling!r}; the chain's labellings are "
                         + (", ".join(repr(x) for x in seen) or "none"))

    _check_roles(spec, problems)
    if columns is not None:
        _check_columns(spec, list(columns), problems)
    if problems.items:
        items = problems.items
        if spec.source.startswith("flags"):
            items = [(_flag_path(p), m) for p, m in items]
        raise ChainValidationError(items, "command line" if spec.source.startswith("flags")
                                   else spec.source)
    return replace(spec, thresholds=tuple(resolved), problems=())


def _bound_path(th: Threshold) -> str:
    """Where a threshold's bound was given: the flag and its text, or ``threshold[i].min``."""
    if th.source.startswith("threshold["):
        return f"{th.source}.{th.bound}"
    return th.source or "threshold"


def _step_per_labelling(step: StepSpec, classes: Mapping[str, type]) -> bool:
    cls = classes.get(step.path)
    return bool(getattr(cls, "per_labelling", True))


def _check_roles(spec: ChainSpec, problems: _Problems) -> None:
    """Column roles that contradict each other (no data needed)."""
    seen: dict[str, int] = {}
    for i, col in enumerate(spec.data.sensitive):
        if col in seen:
            problems.add(f"data.sensitive[{i}]",
                         f"sensitive column {col!r} is given twice; list each column once")
        seen.setdefault(col, i)
    if spec.data.labels is not None and spec.data.labels in seen:
        problems.add("data.labels",
                     f"column {spec.data.labels!r} is both the labels column and a sensitive "
                     "column; a clustering cannot be audited against itself")


def _flag_path(path: str) -> str:
    """Name the CLI option for a problem in a chain built from flags."""
    for key, flag in (("data.sensitive", "--sensitive"), ("data.labels", "--labels"),
                      ("data.features", "--features"), ("data.exclude", "--exclude")):
        if path.startswith(key):
            return flag
    return path


def _check_params(cls: type, step: StepSpec, problems: _Problems) -> None:
    sig = inspect.signature(cls.__init__)
    names = [p for p in list(sig.parameters)[1:]]
    for key in step.params:
        if key not in names:
            close = difflib.get_close_matches(key, names, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            problems.add(
                f"{step.path}.params.{key}",
                f"unknown parameter of {step.use!r}{hint}; it takes: {', '.join(names) or 'none'}",
            )
    known = {k: v for k, v in step.params.items() if k in names}
    try:
        sig.bind(None, **known)
    except TypeError as exc:
        problems.add(f"{step.path}.params", f"{exc}")
        return
    for key, msg in cls.check_params(known):
        problems.add(f"{step.path}.params.{key}", msg)


def _check_columns(spec: ChainSpec, columns: list[str], problems: _Problems) -> None:
    def check(col: str, path: str) -> None:
        if col not in columns:
            close = difflib.get_close_matches(col, columns, n=3)
            hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
            problems.add(path, f"column {col!r} is not in the data{hint}")

    if not spec.data.sensitive:
        problems.add("data.sensitive", "no sensitive columns given (--sensitive A,B)")
    for i, col in enumerate(spec.data.sensitive):
        check(col, f"data.sensitive[{i}]")
    if spec.data.labels:
        check(spec.data.labels, "data.labels")
    for i, col in enumerate(spec.data.features or ()):
        check(col, f"data.features[{i}]")
    for i, col in enumerate(spec.data.exclude):
        check(col, f"data.exclude[{i}]")
    for key in spec.data.ordinal:
        if key not in spec.data.sensitive:
            problems.add(f"data.ordinal.{key}", "ordinal orders are for sensitive attributes")


# --------------------------------------------------------------------------- CLI flags
def _given(flag: Any, default: Any) -> Any:
    """A flag's value when the user gave it (not None), else ``default``."""
    return default if flag is None else flag


def _target_auditors(cluster_steps: Sequence[StepSpec], audit: Sequence[StepSpec],
                     registry: Any) -> list[StepSpec]:
    """The auditor of each clusterer's own fairness target (``twins.FAIRNESS_TARGETS``, e.g.
    ``lcd`` for ``lofkm``) when the default auditors leave it out, so that the method — and its
    price of fairness — is judged on its own target, not on balance."""
    from fairaudit.core.twins import FAIRNESS_TARGETS

    have = {s.use for s in audit}
    out: list[StepSpec] = []
    for step in cluster_steps:
        for auditor, _ in FAIRNESS_TARGETS.get(step.use, ())[:1]:
            if auditor not in have and registry.has("auditor", auditor):
                have.add(auditor)
                i = len(audit) + len(out)
                out.append(StepSpec("audit", auditor, f"default.audit[{i}]", {}, auditor))
    return out


def chain_from_flags(
    registry: Any,
    *,
    sensitive: Sequence[str],
    labels: str | None = None,
    features: Sequence[str] | None = None,
    exclude: Sequence[str] = (),
    clusters: Sequence[str | tuple[str, Mapping[str, Any]]] = (),
    k: int | None = None,
    seed: int | None = None,
    sample: int | None = None,
    thresholds: Sequence[Threshold] = (),
    min_cell: int | None = None,
    on_null: str | None = None,
    on_nonfinite: str | None = None,
    bootstrap: int | None = None,
    ci_method: str | None = None,
    audits: Sequence[str | tuple[str, Mapping[str, Any]]] = (),
    skip_audits: Sequence[str] = (),
    timing: bool | None = None,
    base: ChainSpec | None = None,
    twins: bool | None = None,
    privacy: Mapping[str, Any] | None = None,
    privacy_names: Mapping[str, str] = FLAG_NAMES,
) -> ChainSpec:
    """Build a chain from ``fairaudit audit`` flags (optionally over a ``--chain`` file).

    Without ``--labels`` and without ``--cluster``, the default comparison clusters with every
    installed clusterer of :data:`DEFAULT_CLUSTERERS` (k-means first: its k, chosen by silhouette
    unless ``--k`` is given, is used by the others). Default preprocessing is ``encode``; default
    auditors are :data:`DEFAULT_AUDITORS`; ``audits`` (``--audit NAME[:k=v,...]``) replaces them
    (or, over a chain file, adds to its ``[[audit]]`` steps) and ``skip_audits``
    (``--skip-audit NAME``) leaves auditors out, e.g. the slow ``proxy``.
    ``privacy`` holds the privacy parameters given as flags (``PrivacySpec`` field -> value; a
    ``None`` value is not given): they override the chain file's ``[privacy]`` table and are
    checked by :func:`check_privacy`, the parameter named as in ``privacy_names``.
    """
    from fairaudit.core.params import check as check_param

    min_cell = check_param("min_cell", min_cell)  # callers other than the CLI and the API
    given_privacy = {k: v for k, v in (privacy or {}).items() if v is not None}
    unknown = set(given_privacy) - set(PrivacySpec.__dataclass_fields__)
    if unknown:
        raise ConfigError(f"unknown privacy parameter(s): {sorted(unknown)}")
    base_privacy = base.privacy if base is not None else PrivacySpec()
    # a parameter is named as the user gave it: the flag (or argument), else the chain's key
    names = {k: (privacy_names[k] if k in given_privacy or k == "publish" else _TOML_NAMES[k])
             for k in privacy_names}
    privacy_spec = check_privacy(
        replace(base_privacy, **given_privacy,
                given=base_privacy.given | (set(given_privacy) - {"publish"})),
        names,
    )
    audit_steps: list[StepSpec] = []
    for i, item in enumerate(audits):
        name, params = _component(item, "--audit")
        audit_steps.append(StepSpec("audit", name, f"--audit[{i}]", params, name))
    skip = tuple(dict.fromkeys(skip_audits))
    for name in skip:
        if not registry.has("auditor", name):
            raise ConfigError(f"--skip-audit {name}: {registry.unknown_message('auditor', name)}")
    cluster_steps: list[StepSpec] = []
    parsed = [_component(item, "--cluster") for item in clusters]
    for i, (name, params) in enumerate(parsed):
        label = name if sum(1 for n, _ in parsed if n == name) == 1 else None
        cluster_steps.append(
            StepSpec("cluster", name, f"--cluster[{i}]", params, label or f"{name}-{i + 1}")
        )
    source = "flags"
    if base is not None:
        data = base.data
        data = replace(
            data,
            sensitive=tuple(sensitive) or data.sensitive,
            labels=labels if labels is not None else data.labels,
            features=tuple(features) if features else data.features,
            exclude=tuple(exclude) or data.exclude,
            seed=_given(seed, data.seed),
            sample=_given(sample, data.sample),
            on_null=_given(on_null, data.on_null),
            on_nonfinite=_given(on_nonfinite, data.on_nonfinite),
        )
        o = base.options
        opts = replace(
            o,
            k=_given(k, o.k),
            min_cell=_given(min_cell, o.min_cell),
            bootstrap=_given(bootstrap, o.bootstrap),
            ci_method=_given(ci_method, o.ci_method),
            timing=_given(timing, o.timing),
            twins=_given(twins, o.twins),
        )
        # thresholds given on the command line are judged first, so they win over the chain's
        return replace(
            base,
            data=data,
            options=opts,
            privacy=privacy_spec,
            cluster=base.cluster + tuple(cluster_steps),
            audit=_skip(base.audit + tuple(audit_steps), skip),
            thresholds=tuple(thresholds) + base.thresholds,
        )
    if not cluster_steps and labels is None:
        source = "flags:default"
        for i, name in enumerate(n for n in DEFAULT_CLUSTERERS if registry.has("clusterer", n)):
            cluster_steps.append(StepSpec("cluster", name, f"default.cluster[{i}]", {}, name))
    audit = audit_steps or [
        StepSpec("audit", name, f"default.audit[{i}]", {}, name)
        for i, name in enumerate(n for n in DEFAULT_AUDITORS if registry.has("auditor", n))
    ]
    if not audit_steps:  # default auditors: add each named fair method's own target auditor
        audit.extend(_target_auditors(cluster_steps, audit, registry))
    audit = list(_skip(tuple(audit), skip))
    needs_features = bool(cluster_steps) or any(
        "features" in registry.get("auditor", s.use).cls.requires
        for s in audit if registry.has("auditor", s.use)
    )
    preprocess = []
    if needs_features:
        for i, name in enumerate(
            n for n in DEFAULT_PREPROCESSORS if registry.has("preprocessor", n)
        ):
            preprocess.append(StepSpec("preprocess", name, f"default.preprocess[{i}]", {}, name))
    return ChainSpec(
        data=DataSpec(
            sensitive=tuple(sensitive),
            labels=labels,
            features=tuple(features) if features else None,
            exclude=tuple(exclude),
            seed=seed or 0,
            sample=sample,
            on_null=_given(on_null, "exclude"),
            on_nonfinite=_given(on_nonfinite, "error"),
        ),
        options=Options(
            min_cell=_given(min_cell, 10),
            bootstrap=_given(bootstrap, 200),
            ci_method=_given(ci_method, "calibrated"),
            k=k,
            timing=_given(timing, False),
            twins=_given(twins, DEFAULT_TWINS),
        ),
        preprocess=tuple(preprocess),
        cluster=tuple(cluster_steps),
        audit=tuple(audit),
        thresholds=tuple(thresholds),
        source=source,
        privacy=privacy_spec,
    )


def _skip(steps: tuple[StepSpec, ...], names: Sequence[str]) -> tuple[StepSpec, ...]:
    """``steps`` without the auditors named in ``names`` (by component or step name)."""
    return tuple(s for s in steps if s.use not in names and s.label not in names)
