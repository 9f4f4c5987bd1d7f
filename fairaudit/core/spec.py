"""The typed configuration of a run: one frozen :class:`ChainSpec` (data, options, steps,
thresholds, engine, privacy). The chain TOML (:mod:`fairaudit.core.chain`), the command-line
flags and ``fairaudit.audit(...)`` (:mod:`fairaudit.core.build`) all build this object; a user
may build it directly in Python. It is checked once, by :func:`fairaudit.core.validate.validate_chain`
(each parameter's own check is declared once, in :mod:`fairaudit.core.params`).
"""


from __future__ import annotations

import difflib
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fairaudit.errors import ConfigError
from fairaudit.report.results import Threshold

DEFAULT_AUDITORS: tuple[str, ...] = ("balance", "distribution", "capacity", "quality", "proxy")
"""Auditors ``fairaudit audit`` runs when no --audit flag names one (those installed; a chain
file names its own ``[[audit]]`` steps). ``quality`` (silhouette, on a sample)
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
    "max_drop": "largest share of the rows on_nonfinite = 'drop' may drop (0.5 = half)",
    "allow_sensitive_features": "also give sensitive columns to clusterers as features",
    "separator": "CSV separator",
    "null_values": "list of cell texts read as missing, added to the defaults",
    "default_nulls": "false: only empty cells (and null_values) are missing, not NA, NULL, ...",
    "decimal_comma": "true: a CSV's numbers are written 3,5 (with separator = ';')",
    "source": "the same as path: a database URL, an object-store path, a file, folder or glob",
    "table": "database source: the table to audit (name or schema.name)",
    "query": "database source: the SELECT to audit (instead of table)",
    "key": "database source: a column that identifies rows (orders and seeds the sample)",
    "format": "'parquet', 'csv' or 'delta' (object stores without a suffix, Delta tables)",
    "version": "Delta table: the version to audit (default: the latest)",
}
READER_OPTIONS = ("separator", "null_values", "default_nulls", "decimal_comma", "table", "query",
                  "key", "format", "version")
"""The ``[data]`` keys (and ``fairaudit.audit`` keywords, ``--separator`` ... flags) that are
reader options: they go to the table reader (``DataSpec.reader_options``)."""

_OPTION_KEYS = {
    "min_cell": "groups with fewer rows are too small to judge (listed as such)",
    "suppress": "retired (cell suppression); false is accepted and ignored",
    "bootstrap": "bootstrap replicates for confidence intervals (0 = off)",
    "ci_level": "confidence level",
    "ci_method": "'calibrated' (bootstrap critical value) or 'conservative' (Bonferroni) intervals",
    "k": "number of clusters for clusterers left unset",
    "timing": "record step timings and the creation time in the JSON (not reproducible)",
    "twins": "also fit every fair clusterer with fair = false (its twin) for the price of fairness",
    "max_memory": "memory a run may plan to use, e.g. '16G' (default: 80% of what is available)",
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
    "epsilon": "privacy loss of one release (pure epsilon-DP), from 0.001 to 10",
    "budget": "the data source's total epsilon, recorded by its first release",
    "ledger": "path of the privacy ledger (default $XDG_STATE_HOME/fairaudit/ledger.json)",
    "source": "the data source (population) whose budget a release spends (default: the "
              "input's folder, hive partition folders stripped)",
    "categories": "table: attribute = [its groups], the declared (public) group domain",
    "clusters": "the declared (public) cluster names of a labels column",
    "fitted": "'refuse' (default) or 'conditional': publish labellings fitted on these rows",
    "domain": "'public' (declared or observed groups, every cell noised) or 'private' (cells "
              "chosen privately by a threshold; needs delta)",
    "delta": "delta of the 'private' domain (default 1e-7; >= 1e-15 and <= 1e-3)",
    "new_ledger": "true: start a new ledger at privacy.ledger when it does not exist",
    "allow_large_epsilon": "true: accept an epsilon above 10 (at most 1000)",
}
EPSILON_CEILING = 10.0
"""Largest epsilon per release without ``allow_large_epsilon`` (docs/privacy.md, "Choosing
epsilon": at 10 the odds of anything published may change by e^10 = 22,026)."""
EPSILON_MAX = 1000.0
"""Largest epsilon at all: above it no cell gets any noise (the release is the exact table)."""
EPSILON_FLOOR = 1e-3
"""Smallest epsilon: below it the noise (sd about 1,400 people per cell) says nothing, and the
mechanism's scale leaves the range OpenDP searches."""
DELTA_FLOOR = 1e-15
"""Smallest delta: below it the private domain's threshold leaves the range OpenDP searches."""
DELTA_MAX = 1e-3
_ALLOW_LARGE = ("--allow-large-epsilon ([privacy] allow_large_epsilon = true, "
                "allow_large_epsilon=True)")
FITTED_CHOICES = ("refuse", "conditional")
DOMAIN_CHOICES = ("public", "private")
_TOP_KEYS = {"data", "options", "preprocess", "cluster", "audit", "threshold", "compare",
             "engine", "privacy", "repair"}
"""``[compare]`` and ``[repair]`` are read by their own modules (fairaudit/ops/baseline.py,
fairaudit/repair/spec.py)."""


@dataclass(frozen=True)
class StepSpec:
    """One step of a chain: a ``[[preprocess]]``, ``[[cluster]]`` or ``[[audit]]`` entry.

    Built in Python, e.g. ``StepSpec("cluster", "kmeans", params={"n_clusters": 4})``:

    * ``kind``: ``"preprocess"``, ``"cluster"`` or ``"audit"`` — the tuple of
      :class:`ChainSpec` it goes in;
    * ``use``: the component's registered name (``fairaudit plugins`` lists them);
    * ``path``: where the step is named in messages (``cluster[0].params.n_cluster: unknown
      parameter``). Optional: left empty, a step of a ``ChainSpec`` built in Python is named
      by its place, ``chain.cluster[0]``; a chain file's steps are named by their TOML path
      (``cluster[0]``), flags by the flag (``--cluster[0]``);
    * ``params``: the component's keyword parameters (scikit-learn style);
    * ``name``: the labelling's name in the report (default: ``use``); two steps of one
      component need distinct names;
    * ``twin_of``: set by the host for a ``fair = false`` twin (leave it ``None``).
    """

    kind: str
    use: str
    path: str = ""
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
    max_drop: float = 0.5
    """Largest share of the rows ``on_nonfinite = "drop"`` may drop; more is an error naming the
    columns (the audit would describe another population than the input's)."""
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
    max_memory: int | None = None
    """Bytes a run may plan to use (``--max-memory``); ``None``: 80 % of the memory available
    (:func:`fairaudit.core.limits.memory_bound`)."""


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
    new_ledger: bool = False
    """Start a new ledger at ``ledger`` when it does not exist (a typo must not)."""
    allow_large_epsilon: bool = False
    given: frozenset[str] = field(default=frozenset(), compare=False, repr=False)
    """The parameters (other than ``publish``) set explicitly: without ``publish`` they are
    refused, never silently ignored."""


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
    elif p.epsilon < EPSILON_FLOOR:
        out.append((name["epsilon"], f"{p.epsilon!r} is below {EPSILON_FLOOR:g}: the noise "
                    "(sd about 1,400 people per cell at 0.001) would say nothing, and the "
                    "mechanism's scale leaves the range OpenDP searches"))
    elif p.epsilon > EPSILON_MAX:
        out.append((name["epsilon"], f"{p.epsilon!r} is above {EPSILON_MAX:g}, the most "
                    f"fairaudit accepts even with {_ALLOW_LARGE}: no cell would get any noise "
                    "(the release would be the exact table)"))
    elif p.epsilon > EPSILON_CEILING and not p.allow_large_epsilon:
        out.append((name["epsilon"], f"{p.epsilon!r} is above {EPSILON_CEILING:g}, fairaudit's "
                    "ceiling per release: the odds of anything published may change by "
                    f"e^{p.epsilon:g}, and nearly every cell is exact; "
                    f"give {_ALLOW_LARGE} to publish it anyway (at most {EPSILON_MAX:g})"))
    if p.budget is not None:
        if not number(p.budget) or p.budget <= 0:
            out.append((name["budget"], f"must be a finite number > 0; got {p.budget!r}"))
        elif number(p.epsilon) and p.budget < p.epsilon:
            out.append((name["budget"], f"{p.budget!r} is below one release (epsilon "
                        f"{p.epsilon!r}): no release could ever be made"))
    if p.domain not in DOMAIN_CHOICES:
        out.append((name["domain"], f"must be one of {', '.join(DOMAIN_CHOICES)}; got "
                    f"{p.domain!r}"))
    if not number(p.delta) or not DELTA_FLOOR <= p.delta <= DELTA_MAX:
        out.append((name["delta"], f"must be a number >= {DELTA_FLOOR:g} and <= "
                    f"{DELTA_MAX:g}; got {p.delta!r} (below {DELTA_FLOOR:g} the private "
                    "domain's threshold leaves the range OpenDP searches)"))
    elif "delta" in p.given and p.domain == "public":
        domain = {"--delta": "--dp-domain private", "delta=": "dp_domain='private'"}.get(
            name["delta"], "privacy.domain = 'private'")
        out.append((name["delta"], f"is the delta of {domain}; the public domain is pure "
                    "epsilon-DP (no delta) and would ignore it"))
    for key in ("new_ledger", "allow_large_epsilon"):
        if not isinstance(getattr(p, key), bool):
            out.append((name[key], f"must be true or false; got {getattr(p, key)!r}"))
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
              "delta": "--delta", "new_ledger": "--new-ledger",
              "allow_large_epsilon": "--allow-large-epsilon"}
API_NAMES = {"publish": "publish=", "epsilon": "epsilon=", "budget": "privacy_budget=",
             "ledger": "ledger=", "source": "privacy_source=", "categories": "dp_categories=",
             "clusters": "dp_clusters=", "fitted": "dp_fitted=", "domain": "dp_domain=",
             "delta": "delta=", "new_ledger": "new_ledger=",
             "allow_large_epsilon": "allow_large_epsilon="}


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
    """The whole configuration of a run (see docs/architecture.md, "One configuration").

    ``source`` says where it came from, which decides how problems are named: ``"python"``
    (the default: built in Python, named as attributes, ``chain.options.bootstrap``), a chain
    file's path (TOML keys, ``options.bootstrap``), ``"flags"`` (command-line options)."""

    data: DataSpec
    options: Options = Options()
    preprocess: tuple[StepSpec, ...] = ()
    cluster: tuple[StepSpec, ...] = ()
    audit: tuple[StepSpec, ...] = ()
    thresholds: tuple[Threshold, ...] = ()
    source: str = "python"
    problems: tuple[tuple[str, str], ...] = ()
    """Problems found while parsing; reported together with validation's (all at once)."""
    engine: EngineSpec = EngineSpec()
    privacy: PrivacySpec = PrivacySpec()
    compare: Mapping[str, Any] | None = field(default=None, compare=False)
    """The chain's ``[compare]`` table as written (``baseline``, ``tolerance``, ...), read by
    :func:`fairaudit.ops.baseline.resolve`; ``None`` when the chain has none."""

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
