"""The one validation of a :class:`~fairaudit.core.spec.ChainSpec` against the installed
components (and the data's columns when given).

Validation collects every problem before reporting, each with its TOML path
(``cluster[1].params.n_cluster: unknown parameter (did you mean n_clusters?)``). It checks, in
order: unknown keys, unknown component names, parameter binding, parameter constraints, the
requires/provides data flow, thresholds, and (when a schema is given) that named columns exist.
"""


from __future__ import annotations

import difflib
import inspect
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from fairaudit.core.artifacts import INPUT_ARTIFACTS, LABELS
from fairaudit.core.csv_checks import separator_hint
from fairaudit.core.spec import (
    _TOML_NAMES,
    DEFAULT_AUDITORS,
    ChainSpec,
    Options,
    StepSpec,
    _Problems,
    privacy_problems,
)
from fairaudit.errors import ChainValidationError
from fairaudit.ops.gates import check_threshold
from fairaudit.report.results import Threshold


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
    spec = _with_step_paths(spec)
    problems = _Problems()
    problems.items.extend(spec.problems)
    # the values of the spec itself: a ChainSpec built in Python meets the same checks as the
    # chain file's keys and the flags (fairaudit.core.params); privacy options without publish
    for path, msg in _value_problems(spec):
        problems.add(path, msg)
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
    no_groups: list[str] = []  # steps that need sensitive columns when none are given
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
            _needs(step, missing, problems, no_groups)
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
            _needs(step, missing, problems, no_groups)
        available |= set(cls.provides) | {LABELS}
    if LABELS not in available:
        problems.add("cluster", "nothing to audit: set data.labels or add a [[cluster]] step")
    if not spec.audit:
        problems.add("audit", "no auditors: add at least one [[audit]] step, e.g. [[audit]] "
                     'use = "balance" (without --chain, `fairaudit audit` runs '
                     f"{', '.join(DEFAULT_AUDITORS)})")
    metric_specs: dict[str, Any] = {}
    for step in spec.audit:
        cls = classes.get(step.path)
        if cls is None:
            continue
        missing = set(cls.requires) - available
        if missing:
            _needs(step, missing, problems, no_groups)
        for m in cls.metrics:
            metric_specs[m.name] = (m, step)
    if no_groups and columns is None:  # with columns, _check_columns says it
        problems.add("data.sensitive", "no sensitive columns given (data.sensitive = ['a', 'b']); "
                     + ", ".join(dict.fromkeys(no_groups)) + " need them")

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
        twin = next((st for st in spec.cluster
                     if st.twin_of is not None and st.label == th.labelling), None)
        if twin is not None:
            problems.add(th.source or "threshold",
                         f"labelling {th.labelling!r} is the fair = false twin of "
                         f"{twin.twin_of!r}, fitted for comparison: twins are not gated; to gate "
                         f"the plain method, add it as a clusterer step of its own "
                         f"({twin.use}:fair=false, with another name)")

    _check_roles(spec, problems)
    if columns is not None:
        _check_columns(spec, list(columns), problems)
    if problems.items:
        items = problems.items
        where = spec.source
        if spec.source.startswith("flags"):
            items = [(_flag_path(p), _words(m, _FLAG_WORDS)) for p, m in items]
            where = "command line"
        elif spec.source.startswith(API):
            items = [(_api_path(p), _words(m, _API_WORDS)) for p, m in items]
            where = API
        elif spec.source == PYTHON:
            items = [(_python_path(p), _words(m, _PYTHON_WORDS)) for p, m in items]
        raise ChainValidationError(items, where)
    return replace(spec, thresholds=tuple(resolved), problems=())


PYTHON = "python"
"""``ChainSpec.source`` of a spec built in Python: problems are named as its attributes."""
API = "api"
"""``ChainSpec.source`` of the keywords of ``fairaudit.audit``: problems name the keyword."""

_CHAIN_ROOTS = ("data", "options", "privacy", "engine", "preprocess", "cluster", "audit")
_PYTHON_WORDS = (
    ("data.features and data.exclude", "DataSpec(features=...) and DataSpec(exclude=...)"),
    ("add [[cluster]] steps or data.labels first",
     "add StepSpec('cluster', ...) steps or DataSpec(labels=...) first"),
    ("add a [[cluster]] step", "add a StepSpec('cluster', ...) to chain.cluster"),
    ("add at least one [[audit]] step", "add at least one StepSpec('audit', ...) to chain.audit"),
    ("set data.labels", "set DataSpec(labels=...)"),
    ("(data.sensitive = ['a', 'b'])", "(DataSpec(sensitive=('a', 'b')))"),
)
_API_WORDS = (
    ("data.features and data.exclude", "features= and exclude="),
    ("add [[cluster]] steps or data.labels first", "pass cluster= or labels= as well"),
    ("set data.labels or add a [[cluster]] step", "pass labels= or cluster="),
    ("add at least one [[audit]] step", "pass audit= (or skip fewer auditors)"),
    ("(data.sensitive = ['a', 'b'])", "(sensitive=['a', 'b'])"),
    ("(options.bootstrap = 0)", "(bootstrap=0)"),
)
_FLAG_WORDS = (
    ("data.features and data.exclude", "--features and --exclude"),
    ("add [[cluster]] steps or data.labels first", "add --cluster or --labels as well"),
    ("set data.labels or add a [[cluster]] step", "give --labels or --cluster"),
    ("add at least one [[audit]] step", "give --audit (or skip fewer auditors)"),
    ("(data.sensitive = ['a', 'b'])", "(--sensitive A,B)"),
    ("(options.bootstrap = 0)", "(--bootstrap 0)"),
)


def _with_step_paths(spec: ChainSpec) -> ChainSpec:
    """``spec`` with every step that has no ``path`` named by its place (``chain.cluster[0]``
    in a spec built in Python, ``cluster[0]`` otherwise)."""
    prefix = "chain." if spec.source == PYTHON else ""
    named = {}
    for group in ("preprocess", "cluster", "audit"):
        steps = getattr(spec, group)
        if any(not s.path for s in steps):
            named[group] = tuple(s if s.path else replace(s, path=f"{prefix}{group}[{i}]")
                                 for i, s in enumerate(steps))
    return replace(spec, **named) if named else spec


def _python_path(path: str) -> str:
    """A problem's path as the attribute of a ``ChainSpec`` built in Python (``chain.``...)."""
    root = path.split(".", 1)[0].split("[", 1)[0]
    if root == "threshold":
        return "chain.thresholds" + path[len("threshold"):]
    return f"chain.{path}" if root in _CHAIN_ROOTS else path


def _words(msg: str, words: Sequence[tuple[str, str]]) -> str:
    """``msg`` with the chain file's words replaced by the surface's (``words``)."""
    for toml, other in words:
        msg = msg.replace(toml, other)
    return msg


def _api_path(path: str) -> str:
    """A problem's path as the keyword of ``fairaudit.audit`` (``sensitive``, ``bootstrap``);
    steps the keywords added are already named ``cluster[0]``, thresholds ``fail_under['wd']``."""
    from fairaudit.core.params import PARAMS

    for p in PARAMS.values():
        if p.key and "." in p.key and (path == p.key or path.startswith((f"{p.key}[",
                                                                          f"{p.key}."))):
            return p.name
    return path


def _bound_path(th: Threshold) -> str:
    """Where a threshold's bound was given: the flag and its text, or ``threshold[i].min``."""
    if th.source.startswith("threshold["):
        return f"{th.source}.{th.bound}"
    return th.source or "threshold"


def _needs(step: StepSpec, missing: set[str], problems: _Problems, no_groups: list[str]
           ) -> None:
    """A step's missing inputs; missing only sensitive columns when none are given is one
    problem for the whole chain (``no_groups``), not one per step."""
    if missing == {"sensitive"}:
        no_groups.append(step.use)
        return
    problems.add(step.path, f"{step.use!r} needs {sorted(missing)}, which nothing provides")


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
    for i, col in enumerate(spec.data.exclude):
        if col in (spec.data.features or ()):
            problems.add(f"data.exclude[{i}]",
                         f"column {col!r} is listed in both data.features and data.exclude: "
                         "one of them would be ignored; list it in one only")
    if spec.data.labels is not None and spec.data.labels in seen:
        problems.add("data.labels",
                     f"column {spec.data.labels!r} is both the labels column and a sensitive "
                     "column; a clustering cannot be audited against itself")
    if spec.options.bootstrap == 0 and spec.options.ci_method != Options.ci_method:
        problems.add("options.ci_method",  # the default method is no choice to ignore
                     f"{spec.options.ci_method!r} chooses how confidence intervals are made, "
                     "but intervals are off (options.bootstrap = 0) and it would be ignored; "
                     "give a number of bootstrap replicates or drop the interval method")
    if spec.options.bootstrap == 0 and spec.options.ci_level != Options.ci_level:
        problems.add("options.ci_level",  # likewise the level of intervals that are not made
                     f"a confidence level of {spec.options.ci_level:g} would be ignored: "
                     "intervals are off (options.bootstrap = 0); give a number of bootstrap "
                     "replicates or drop the level")


def _flag_path(path: str) -> str:
    """Name the CLI option for a problem in a chain built from flags (``data.exclude[0]`` ->
    ``--exclude``, ``options.ci_method`` -> ``--ci-method``)."""
    from fairaudit.core.params import PARAMS

    for p in PARAMS.values():
        if p.flag and p.key and "." in p.key and (
                path == p.key or path.startswith((f"{p.key}[", f"{p.key}."))):
            return p.flag
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
            if len(columns) == 1 and not close:
                # one column whose name holds the others: the file was split on the wrong
                # character (a ';' or tab CSV read as ',')
                how = separator_hint(columns[0])
                if how is not None:
                    hint = f" (the file was read as one column, {columns[0][:60]!r}: {how})"
            problems.add(path, f"column {col!r} is not in the data{hint}")

    if not spec.data.sensitive:
        problems.add("data.sensitive", "no sensitive columns given (data.sensitive = ['a', 'b'])")
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


def _value_problems(spec: ChainSpec) -> list[tuple[str, str]]:
    """Each ``data.*``, ``options.*`` and ``engine.*`` value of ``spec`` checked by its one
    declared check (:data:`fairaudit.core.params.PARAMS`), named by its chain key."""
    from fairaudit.core.params import PARAMS, problem

    out = []
    for name, p in PARAMS.items():
        if p.key is None or "." not in p.key or name == "separator":
            continue
        table, key = p.key.split(".", 1)
        holder = {"data": spec.data, "options": spec.options, "engine": spec.engine}.get(table)
        if holder is None or not hasattr(holder, key):
            continue
        msg = problem(name, getattr(holder, key))
        if msg is not None:
            out.append((p.key, msg))
    return out
