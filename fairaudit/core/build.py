"""The :class:`~fairaudit.core.spec.ChainSpec` of ``fairaudit audit`` flags and of
``fairaudit.audit(...)`` keywords (optionally over a chain file): the default comparison,
default preprocessing and auditors, and values given on the command line over the file's.
Components arrive as ``(name, params)`` pairs (or ``NAME[:k=v,...]`` text a user typed); nothing
here writes flag strings.
"""


from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from fairaudit.core.chain import (
    _component,
)
from fairaudit.core.spec import (
    _TOML_NAMES,
    DEFAULT_AUDITORS,
    DEFAULT_CLUSTERERS,
    DEFAULT_PREPROCESSORS,
    DEFAULT_TWINS,
    FLAG_NAMES,
    ChainSpec,
    DataSpec,
    Options,
    PrivacySpec,
    StepSpec,
    check_privacy,
)
from fairaudit.errors import ConfigError
from fairaudit.report.results import Threshold


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
    max_drop: float | None = None,
    max_memory: int | None = None,
    bootstrap: int | None = None,
    ci_method: str | None = None,
    audits: Sequence[str | tuple[str, Mapping[str, Any]]] = (),
    skip_audits: Sequence[str] = (),
    timing: bool | None = None,
    base: ChainSpec | None = None,
    twins: bool | None = None,
    privacy: Mapping[str, Any] | None = None,
    privacy_names: Mapping[str, str] = FLAG_NAMES,
    surface: str = "cli",
    reader_options: Mapping[str, Any] | None = None,
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
    ``reader_options`` (``separator``, ``null_values``, ``default_nulls``; a ``None`` value is not
    given) override the chain file's. ``surface`` is who calls: ``"cli"`` (steps named ``--cluster[0]``, ``source = "flags"``) or
    ``"api"`` (keywords of ``fairaudit.audit``: ``cluster[0]``, ``source = "api"``), so that every
    problem names what the user wrote.
    """
    if surface not in ("cli", "api"):
        raise ValueError(f"surface must be 'cli' or 'api'; got {surface!r}")
    cli = surface == "cli"
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
        where = f"--audit[{i}]" if cli else f"audit[{i}]"
        name, params, label = _component(item, "--audit" if cli else where)
        audit_steps.append(StepSpec("audit", name, where, params, label or name))
    skip = tuple(dict.fromkeys(skip_audits))
    for name in skip:
        if not registry.has("auditor", name):
            where = f"--skip-audit {name}" if cli else f"skip_audit {name!r}"
            raise ConfigError(f"{where}: {registry.unknown_message('auditor', name)}")
    cluster_steps: list[StepSpec] = []
    places = [f"--cluster[{i}]" if cli else f"cluster[{i}]" for i in range(len(clusters))]
    parsed = [_component(item, "--cluster" if cli else where)
              for item, where in zip(clusters, places, strict=True)]
    for i, (name, params, given) in enumerate(parsed):
        label = given or (name if sum(1 for n, *_ in parsed if n == name) == 1 else None)
        cluster_steps.append(
            StepSpec("cluster", name, places[i], params, label or f"{name}-{i + 1}")
        )
    source = "flags" if cli else "api"
    reader = {k: v for k, v in (reader_options or {}).items() if v is not None}
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
            max_drop=_given(max_drop, data.max_drop),
            reader_options={**data.reader_options, **reader},
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
            max_memory=_given(max_memory, o.max_memory),
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
        source = f"{source}:default"
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
            max_drop=_given(max_drop, 0.5),
            reader_options=reader,
        ),
        options=Options(
            min_cell=_given(min_cell, 10),
            bootstrap=_given(bootstrap, 200),
            ci_method=_given(ci_method, "calibrated"),
            k=k,
            timing=_given(timing, False),
            twins=_given(twins, DEFAULT_TWINS),
            max_memory=max_memory,
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
