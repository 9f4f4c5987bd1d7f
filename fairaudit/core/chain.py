"""Chain files: TOML -> frozen :class:`~fairaudit.core.spec.ChainSpec` (structure only), and the
text forms of thresholds (``METRIC[@ci][[attr]]=VALUE``) and components (``NAME[:k=v,...]``)
that the command line and ``fairaudit.audit`` accept.

Parsing collects every problem with its TOML path; :func:`fairaudit.core.validate.validate_chain`
reports them together with its own.
"""


from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fairaudit.core.spec import (
    _AUDIT_KEYS,
    _DATA_KEYS,
    _ENGINE_KEYS,
    _OPTION_KEYS,
    _PRIVACY_KEYS,
    _STEP_KEYS,
    _THRESHOLD_KEYS,
    _TOML_NAMES,
    _TOP_KEYS,
    ENGINE_NAMES,
    ON_VALUES,
    READER_OPTIONS,
    ChainSpec,
    DataSpec,
    EngineSpec,
    Options,
    PrivacySpec,
    StepSpec,
    _Problems,
    privacy_problems,
    retired_suppress,
)
from fairaudit.errors import ConfigError
from fairaudit.report.results import Threshold


def load_chain(path: str | Path) -> ChainSpec:
    """Read and parse a chain TOML file (structure only; see :func:`validate_chain`)."""
    return parse_chain(read_chain_document(path), source=str(path))


def read_chain_document(path: str | Path) -> dict[str, Any]:
    """The TOML document of a chain file, read within the size and nesting limits (the one
    reader of chain files: :func:`load_chain`, a ``[repair]`` table's reader)."""
    from fairaudit.core.limits import MAX_TOML_BYTES, MAX_TOML_DEPTH, check_nesting, read_limited

    p = Path(path)
    if not p.exists():
        raise ConfigError(f"{p}: no such chain file")
    text = read_limited(p, MAX_TOML_BYTES, "chain file", ConfigError)
    check_nesting(text, str(p), MAX_TOML_DEPTH, toml=True, error=ConfigError)
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: not valid TOML: {exc}") from None
    except RecursionError:  # nesting the scan above cannot see (dotted keys)
        raise ConfigError(f"{p}: nested too deeply to read") from None


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
        compare=doc.get("compare"),
    )


def _parse_privacy(d: Any, problems: _Problems) -> PrivacySpec:
    """``[privacy]``: checked by :func:`privacy_problems`, as the CLI's and the API's values."""
    if not isinstance(d, Mapping):
        problems.add("privacy", f"must be a table ([privacy]); got {d!r}")
        return PrivacySpec()
    problems.unknown_keys(d, _PRIVACY_KEYS, "privacy")
    kw: dict[str, Any] = {k: d[k] for k in ("epsilon", "budget", "ledger", "source", "fitted",
                                            "domain", "delta") if k in d}
    for flag in ("publish", "new_ledger", "allow_large_epsilon"):
        if flag in d:
            if isinstance(d[flag], bool):
                kw[flag] = d[flag]
            else:
                problems.add(f"privacy.{flag}", f"must be true or false; got {d[flag]!r}")
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
    if "path" in d and "source" in d:
        problems.add("data.source", "give data.path or data.source (the same key), not both")
    for name in ("path", "source"):  # source: a database URL reads better as a source
        if name in d:
            kw["path"] = str(d[name])
    for key in ("sensitive", "exclude", "features", "labels", "seed", "sample", "on_null",
                "on_nonfinite", "max_drop", "allow_sensitive_features"):
        _checked(d, key, key, f"data.{key}", problems, kw)
    if kw.get("features") is None:
        kw.pop("features", None)
    if "ordinal" in d:
        o = d["ordinal"]
        if isinstance(o, Mapping) and all(isinstance(v, list) for v in o.values()):
            kw["ordinal"] = {k: tuple(str(x) for x in v) for k, v in o.items()}
        else:
            problems.add("data.ordinal", "must be a table: attribute = [ordered groups]")
    reader: dict[str, Any] = {}
    for key in READER_OPTIONS:
        _checked(d, key, key, f"data.{key}", problems, reader)
    reader = {k: v for k, v in reader.items() if v is not None}
    if reader:
        kw["reader_options"] = reader
    return DataSpec(**kw)


def _parse_options(d: Mapping[str, Any], problems: _Problems) -> Options:
    kw: dict[str, Any] = {}
    for key in ("min_cell", "bootstrap", "ci_level", "ci_method", "k", "timing", "twins",
                "max_memory"):
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


def _component(item: str | tuple[Any, ...], flag: str
               ) -> tuple[str, dict[str, Any], str | None]:
    """A component named as ``NAME[:k=v,...]`` text or as a parsed ``(name, params)`` pair or
    ``(name, params, label)`` triple (:func:`fairaudit.core.params.components`): the name, its
    parameters and the label the user gave (None: the default)."""
    if isinstance(item, str):
        return (*parse_component_flag(item, flag), None)
    name, params, *label = item
    return name, dict(params), (label[0] if label else None)


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
    import tomllib

    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


# --------------------------------------------------------------------------- validation
