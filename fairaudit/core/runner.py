"""Run a validated chain: load -> checks -> preprocess -> cluster -> audit -> evaluate.

The runner knows components only through the registry. Counting auditors never see rows: a
labels column in the input is counted with one streaming group-by over the whole input; the
labels of clusterers (fitted in memory, on a seeded sample when the input is large) with one
group-by of the in-memory rows.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import math
import platform
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from fairaudit import __version__
from fairaudit.core.assign import FittedStep
from fairaudit.core.chain import ChainSpec, StepSpec, validate_chain
from fairaudit.core.components import (
    AuditContext,
    Auditor,
    CountingAuditor,
    Direction,
    Preprocessor,
)
from fairaudit.core.contingency import (
    BootstrapReplicates,
    JointTable,
    joint_from_frame,
    resample_joint,
)
from fairaudit.core.data import ROW_ID, AuditData, ColumnRoles, Labelling
from fairaudit.core.fit_quality import cluster_silhouettes, degenerate_warnings, fit_diagnostics
from fairaudit.core.progress import step as progress_step
from fairaudit.core.progress import what_of
from fairaudit.core.twins import expand_twins, price_of_fairness
from fairaudit.errors import ConfigError, FairauditError, InputError
from fairaudit.report.explain import explain, metric_specs
from fairaudit.report.results import (
    SCHEMA_VERSION,
    AuditRun,
    MetricResult,
    Status,
    overall_status,
)

log = logging.getLogger(__name__)

DATA_LABELLING = "(data)"
"""The ``labelling`` of results from auditors that judge the data, not a clustering."""
DEFAULT_MAX_ROWS = 100_000
"""Rows held in memory for clustering when no clusterer sets a lower ``max_rows``."""
CHECK_SAMPLE_ROWS = 100_000
MAX_GROUPS = 10_000

Progress = Callable[[str], None]


@dataclass(frozen=True)
class StepTiming:
    kind: str
    step: str
    labelling: str | None
    seconds: float


class _Clock:
    def __init__(self, host: Any, progress: Progress | None):
        self.host = host
        self.progress = progress
        self.timings: list[StepTiming] = []

    def run(self, kind: str, step: str, labelling: str | None, fn: Callable[..., Any],
            *args: Any) -> Any:
        if self.progress is not None:
            what = f"{kind} {step}" + (f" on {labelling}" if labelling else "")
            self.progress(what)
        t0 = time.perf_counter()
        with progress_step(what_of(kind, step, labelling)):  # fairaudit.progress records
            out = fn(*args)
        dt = time.perf_counter() - t0
        self.timings.append(StepTiming(kind, step, labelling, dt))
        self.host.step_finished(step=step, kind=kind, labelling=labelling, seconds=dt)
        log.info("%s %s%s: %.3f s", kind, step, f" on {labelling}" if labelling else "", dt)
        return out


def _seeds(seed: int, n: int) -> list[int]:
    ss = np.random.SeedSequence(seed)
    return [int(c.generate_state(1, dtype=np.uint32)[0]) for c in ss.spawn(n)]


def run_chain(
    spec: ChainSpec,
    host: Any,
    *,
    data_path: Any = None,
    progress: Progress | None = None,
    engine: Any = None,
) -> AuditRun:
    """Run ``spec`` on ``data_path`` (or ``spec.data.path``) and return the :class:`AuditRun`.

    ``data_path`` is a path, directory or glob (read through the ``fairaudit_read_table`` hook),
    or an in-memory ``polars.DataFrame`` / ``LazyFrame``. ``engine`` runs the passes over every
    row (:mod:`fairaudit.core.engines`; default: polars on this machine).
    """
    from fairaudit.core.engines import LocalEngine

    engine = engine if engine is not None else LocalEngine()
    import polars as pl


    started = time.perf_counter()
    clock = _Clock(host, progress)
    path = data_path if data_path is not None else spec.data.path
    in_memory = isinstance(path, pl.DataFrame | pl.LazyFrame)
    if not in_memory and not path:
        raise ConfigError("no input data: give DATA on the command line or data.path in the chain")

    def _load():
        if in_memory:
            return path.lazy()
        lf = host.read_table(path, dict(spec.data.reader_options))
        if lf is None:
            raise InputError(f"{path}: no installed reader handles this input")
        return lf

    lf = clock.run("load", "read", None, _load)
    schema = lf.collect_schema()
    columns = list(schema.names())
    if not columns:
        raise InputError(f"{_source_name(path)}: the table has no columns")
    spec = validate_chain(expand_twins(spec, host.registry), host.registry, columns=columns)
    roles = _resolve_roles(spec, schema)

    if spec.privacy.publish:
        from fairaudit.privacy.publish import prepare, run_published

        spec = prepare(spec, host.registry)
        return run_published(
            spec, path, lambda: _frame_fingerprint(path) if in_memory else _fingerprint(path),
            lambda: _run_warm(spec, host, lf, path, in_memory, roles, clock, progress, started,
                              engine),
        )
    return _run_warm(spec, host, lf, path, in_memory, roles, clock, progress, started, engine)


def _fingerprint(path: Any) -> str:
    from fairaudit.core.io import fingerprint

    return fingerprint(path)


def _run_warm(spec, host, lf, path, in_memory, roles, clock, progress, started, engine):
    return _run_validated(spec, host, lf, path, in_memory, roles, clock, progress, started,
                          None, engine)


def _run_validated(spec, host, lf, path, in_memory, roles, clock, progress, started, warm,
                   engine):

    from fairaudit.core.io import fingerprint

    # ------------------------------------------------------------ one pass: counts per group
    joint_full, n_input = clock.run(
        "load", "count", None,
        lambda: engine.count(lf, path=path, roles=roles,
                             reader_options=dict(spec.data.reader_options), progress=progress),
    )
    if n_input == 0:
        raise InputError(f"{_source_name(path)}: the table is empty (no rows)")
    _check_groups(joint_full, roles, n_input, spec, lf)
    if joint_full.null_rows and spec.data.on_null == "error":
        raise InputError(
            f"{_source_name(path)}: {joint_full.null_rows} row(s) have a null value in "
            + ", ".join(repr(c) for c in (*roles.sensitive, *(filter(None, [roles.labels]))))
            + " (--on-null error); fix them or use --on-null exclude"
        )

    # ------------------------------------------------------------ in-memory rows (if needed)
    registry = host.registry
    cluster_classes = [registry.get("clusterer", s.use).cls for s in spec.cluster]
    pre_classes = [registry.get("preprocessor", s.use).cls for s in spec.preprocess]
    audit_classes = [registry.get("auditor", s.use).cls for s in spec.audit]
    need_rows = bool(spec.cluster) or any(
        not issubclass(c, CountingAuditor) for c in audit_classes
    )
    data = None
    sample_info = None
    if need_rows:
        limits = [c.max_rows for c in cluster_classes if c.max_rows]
        max_rows = spec.data.sample or (min(limits) if limits else DEFAULT_MAX_ROWS)
        data, sample_info = clock.run(
            "load", "materialise", None,
            lambda: _materialise(lf, roles, spec, n_input, max_rows),
        )

    skipped_note = None
    if data is not None and not data.roles.features and not spec.cluster:
        # a labels audit needs only the sensitive and labels columns: the steps that read
        # features (e.g. the proxy auditor and its encoder) have nothing to look at
        spec, skipped_note = _skip_feature_steps(spec, registry, data.roles)
        audit_classes = [registry.get("auditor", s.use).cls for s in spec.audit]
        pre_classes = []

    # ------------------------------------------------------------ input checks
    checks = [] if spec.privacy.publish else clock.run(  # a release publishes no input check
        "checks", "input", None,
        lambda: _run_checks(lf, data, roles, joint_full, spec, n_input),
    )

    feature_notes = tuple(data.notes) if data is not None else ()
    notes_from_data = list(feature_notes) + ([skipped_note] if skipped_note else [])
    seeds = _seeds(spec.data.seed, len(spec.preprocess) + len(spec.cluster) + len(spec.audit) + 1)
    seed_iter = iter(seeds)
    preprocessing: list[dict[str, Any]] = []
    notes: list[str] = notes_from_data

    # ------------------------------------------------------------ preprocess
    sample_data = data
    fitted_pre: list[FittedStep] = []
    fitted_clu: list[FittedStep] = []
    for step, cls in zip(spec.preprocess, pre_classes, strict=True):
        comp = _instantiate(cls, step, next(seed_iter), spec)
        fitted_pre.append(FittedStep(step.label, comp, "sensitive" in cls.requires, step.use))
        view = data if "sensitive" in cls.requires else data.without_sensitive()

        data = _guard(step, clock.run, "preprocessor", step.label, None, _fit_transform, comp, view)
        preprocessing.append(
            {"name": step.label, "use": step.use, "params": _json_params(comp.get_params()),
             "notes": list(comp.notes()), "report": _jsonable(getattr(comp, "report_", {}))}
        )

    # ------------------------------------------------------------ labellings
    labellings: list[Labelling] = []
    joints: dict[str, JointTable] = {}
    if roles.labels is not None:
        labels_arr = None
        if data is not None:
            labels_arr = _label_ids(data.frame.get_column(roles.labels), joint_full)
        lab = Labelling(
            name=roles.labels,
            labels=labels_arr if labels_arr is not None else np.zeros(0, dtype=np.int64),
            origin="column",
            column=roles.labels,
        )
        labellings.append(lab)
        joints[lab.name] = joint_full
        if data is not None:
            data = data.with_labelling(lab)

    chosen_k: int | None = spec.options.k
    default_chain = spec.source == "flags:default"
    fair_steps: dict[str, tuple[dict[str, Any], AuditData]] = {}
    for step, cls in zip(spec.cluster, cluster_classes, strict=True):
        if step.twin_of is not None:  # fair = false twin: its fair step's params, seed and input
            if step.twin_of not in fair_steps:
                continue
            params, view = fair_steps[step.twin_of]
            comp = _guard(step, lambda c=cls, p=params: c(**{**p, "fair": False}))
        else:
            comp = _instantiate(cls, step, next(seed_iter), spec, k=chosen_k)
            view = data if "sensitive" in cls.requires else data.without_sensitive()
            fair_steps[step.label] = (dict(comp.get_params()), view)
        try:
            fitted = _guard(step, clock.run, "clusterer", step.label, step.label, comp.fit, view)
        except FairauditError as exc:
            if default_chain and labellings:
                notes.append(f"{step.use} was skipped in the default comparison: {exc}")
                log.warning("%s skipped: %s", step.use, exc)
                fair_steps.pop(step.label, None)  # no twin without its fair labelling
                continue
            raise
        lab = _labelling_from(fitted, cls, step, data, clock.timings[-1].seconds)
        fitted_clu.append(FittedStep(lab.name, fitted, "sensitive" in cls.requires, step.use))
        if chosen_k is None and "n_clusters" in lab.params:
            chosen_k = lab.n_clusters if lab.n_clusters >= 2 else None
        labellings.append(lab)
        data = data.with_labelling(lab)
        joints[lab.name] = joint_from_frame(
            data.frame, label=None, sensitive=roles.sensitive, ordinal=roles.ordinal,
            labels_array=lab.labels,
        )

    # ------------------------------------------------------------ every row, not the sample
    if sample_info is not None and fitted_clu:
        labellings, sample_info = _assign_every_row(
            lf, path, engine, sample_data, fitted_pre, fitted_clu, labellings, joints,
            sample_info, spec, clock, progress,
        )

    # ------------------------------------------------------------ the release (--publish)
    release = None
    if spec.privacy.publish:  # noise once; from here on every count is a noisy one
        from fairaudit.privacy.publish import Release

        release = clock.run("publish", "noise", None, Release, labellings, joints, spec.privacy,
                            roles.ordinal)
        joints = dict(release.joints)
        joint_full = release.joint_full

    # ------------------------------------------------------------ audits
    results: list[MetricResult] = []
    audit_seed = next(seed_iter)
    for lab_index, lab in enumerate(labellings):
        joint = joints[lab.name]
        tables = joint.tables()
        boot = None
        if spec.options.bootstrap > 0:
            rng = np.random.default_rng([audit_seed, lab_index])
            boot = (release.replicates(lab.name, spec.options.bootstrap, rng) if release
                    else BootstrapReplicates(joint,
                                             resample_joint(joint, spec.options.bootstrap, rng)))
        for step, cls in zip(spec.audit, audit_classes, strict=True):
            if not cls.per_labelling and lab_index > 0:
                continue  # about the data, not a clustering: run once
            comp = _instantiate(cls, step, audit_seed, spec)
            if issubclass(cls, CountingAuditor):
                produced = clock.run(
                    "auditor", step.label, lab.name, _run_counting, comp, lab, joint, tables, boot,
                    spec, release.unreleased(lab.name) if release is not None else None,
                )
            else:
                if data is None or lab.labels.size == 0:
                    continue
                ctx = AuditContext(
                    labelling=data.labellings.get(lab.name, lab), tables=tables,
                    data=data if "sensitive" in cls.requires else data.without_sensitive(),
                    random_state=audit_seed,
                )
                produced = _guard(step, clock.run, "auditor", step.label, lab.name, _audit, comp, ctx)
                if not cls.per_labelling:
                    produced = [dataclasses.replace(r, labelling=DATA_LABELLING) for r in produced]
                if feature_notes and "features" in cls.requires:
                    produced = [dataclasses.replace(r, notes=(*r.notes, *feature_notes))
                                for r in produced]
            results.extend(produced)

    results, gates = _gates(spec, audit_classes, labellings, joints, joint_full, results)
    if release is not None:  # the data's own notes quote exact counts
        from fairaudit.privacy.publish import published_notes

        notes = published_notes()
    notes.extend(_all_noise_notes(labellings, joints))
    status = overall_status(results, gates)
    doc = _document(
        spec=spec, path=path, roles=roles, n_input=n_input, joint_full=joint_full, data=data,
        sample_info=sample_info, labellings=labellings, joints=joints, results=results,
        checks=checks, preprocessing=preprocessing, notes=notes, status=status, host=host,
        timings=clock.timings, total=time.perf_counter() - started,
        fingerprint=_frame_fingerprint(path) if in_memory else fingerprint(path),
    )
    if in_memory:
        doc["input"]["path"] = "<in-memory table>"
        doc["input"]["format"] = "polars"
    doc["gates"] = [g.to_json() for g in gates]
    for lab_doc in doc["labellings"]:  # names of the clusters of a labels column of names
        names = joints[lab_doc["name"]].cluster_names if lab_doc["name"] in joints else None
        if names is not None:
            lab_doc["cluster_names"] = list(names)
    if not spec.options.timing:
        doc.pop("timing", None)  # byte-identical JSON for the same input, seed and version
    doc = _release(doc, spec, joints=joints, joint_full=joint_full, release=release)
    doc["twins"] = price_of_fairness(doc)
    doc = explain(doc, metric_specs(host.registry))  # last: sentences and verdicts
    run = AuditRun(doc)
    host.run_finished(run=run)
    return run


# ---------------------------------------------------------------------------- release
def _release(doc: dict[str, Any], spec: ChainSpec, *, joints: Mapping[str, JointTable],
             joint_full: JointTable, release: Any = None) -> dict[str, Any]:
    """The document this run writes, made from the exact one (``doc``).

    The one place where what is published is decided; the price of fairness, the sentences and
    the verdicts are computed afterwards from its result alone. ``joints`` (labelling name ->
    joint count table, noise as cluster -1) and ``joint_full`` (the input's groups) are the
    counts every group-related number of ``doc`` derives from.

    The default is the analyst's report: exact values everywhere, small groups included, for
    people allowed to see the data (``privacy.mode = "exact"``, docs/privacy.md).
    With ``--publish``, ``release`` (:class:`fairaudit.privacy.publish.Release`) made ``joints`` and
    ``joint_full`` from noisy counts before anything was computed from them; its document drops
    what is not a function of those counts and declares ``privacy.mode = "dp"``.
    """
    if release is not None:
        return release.document(doc)
    del joints, joint_full  # the exact report publishes ``doc`` as it is
    doc["privacy"] = {"mode": "exact"}
    return doc


# ---------------------------------------------------------------------------- helpers
def _assign_every_row(lf, path, engine, sample_data, fitted_pre, fitted_clu, labellings, joints,
                      sample_info, spec, clock, progress):
    """Assign every input row with the fitted clusterers and count them (fairaudit.core.assign);
    replaces the sample's joint tables in ``joints`` and notes what was done per labelling."""
    res = clock.run(
        "assign", "every row", None,
        lambda: engine.assign(lf, path=path, reader_options=dict(spec.data.reader_options),
                              template=sample_data, preprocessors=fitted_pre,
                              clusterers=fitted_clu, on_nonfinite=spec.data.on_nonfinite,
                              progress=progress),
    )
    fitted_rows = sample_data.n_rows
    out = []
    for lab in labellings:
        if lab.name in res.joints:
            joints[lab.name] = res.joints[lab.name]
            note = (f"fitted on a seeded sample of {fitted_rows:,} rows, then every one of the "
                    f"{res.rows_assigned:,} rows was assigned with predict: its counting "
                    "metrics use every row")
            info = {"rows_fitted": fitted_rows, "rows_assigned": res.rows_assigned,
                    "rows_not_assigned": dict(res.rows_skipped)}
            lab = dataclasses.replace(lab, notes=(*lab.notes, note),
                                      extras={**lab.extras, "assignment": info})
        elif lab.name in res.cannot_predict:
            lab = dataclasses.replace(lab, notes=(*lab.notes, res.cannot_predict[lab.name]),
                                      extras={**lab.extras, "assignment": {
                                          "rows_fitted": fitted_rows, "rows_assigned": 0}})
        out.append(lab)
    if res.joints:
        sample_info = {
            **sample_info,
            "rows_assigned": res.rows_assigned,
            "note": (
                f"clusterers were fitted on a seeded random sample of {sample_info['rows']:,} "
                f"rows and then assigned all {res.rows_assigned:,} rows, so counting metrics "
                "use every row; feature-based metrics (density, connectivity, silhouette, "
                "proxy) use the sample"
            ),
        }
    return out, sample_info


def _gates(spec, audit_classes, labellings, joints, joint_full, results):
    """Judge every threshold on the whole scope the chain promised (see fairaudit.ops.gates)."""
    from fairaudit.ops.gates import evaluate_gates, scopes_for

    scopes = scopes_for(audit_classes, [lab.name for lab in labellings],
                        joint_full.attribute_names, data_labelling=DATA_LABELLING)
    reasons = {
        lab.name: "every row of this labelling is noise (label -1), so no group metric exists"
        for lab in labellings if _all_noise(joints.get(lab.name))
    }
    return evaluate_gates(results, spec.thresholds, scopes, reasons=reasons)


def _label_ids(column: Any, joint: JointTable) -> np.ndarray:
    """Integer cluster ids of the in-memory labels column (names mapped as in the joint table)."""
    import polars as pl

    from fairaudit.core.contingency import label_codes

    if joint.cluster_names is not None:
        return label_codes(column, joint.cluster_names)
    return column.cast(pl.Int64).to_numpy()


def _all_noise(joint: JointTable | None) -> bool:
    return joint is not None and joint.n > 0 and not bool((joint.cluster >= 0).any())


def _all_noise_notes(labellings, joints) -> list[str]:
    return [
        f"labelling {lab.name!r}: every row is noise (label -1); no counting metric can be "
        "computed for it, and any threshold on one fails"
        for lab in labellings if _all_noise(joints.get(lab.name))
    ]


def _fit_transform(comp: Preprocessor, view: AuditData) -> AuditData:
    return comp.fit_transform(view).replace(include_sensitive=True)


def _audit(comp: Auditor, ctx: AuditContext) -> list[MetricResult]:
    return list(comp.audit(ctx))


def _guard(step: StepSpec, fn: Callable[..., Any], *args: Any) -> Any:
    """Turn a component's ValueError into a ConfigError that names the chain step."""
    try:
        return fn(*args)
    except FairauditError:
        raise
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{step.path} ({step.use}): {exc}") from exc


def _instantiate(cls: type, step: StepSpec, seed: int, spec: ChainSpec, k: int | None = None):
    params = dict(step.params)
    sig = inspect.signature(cls.__init__).parameters
    if "random_state" in sig and "random_state" not in params:
        params["random_state"] = seed
    if "n_clusters" in sig and "n_clusters" not in params:
        if spec.options.k is not None:
            params["n_clusters"] = spec.options.k
        elif k is not None:
            params["n_clusters"] = k
    try:
        return cls(**params)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{step.path} ({step.use}): {exc}") from exc


def _labelling_from(comp: Any, cls: type, step: StepSpec, data: AuditData, seconds: float):
    labels = getattr(comp, "labels_", None)
    if labels is None:
        raise FairauditError(f"clusterer {step.use!r} did not set labels_")
    labels = np.asarray(labels)
    if labels.shape != (data.n_rows,):
        raise FairauditError(
            f"clusterer {step.use!r} set labels_ of shape {labels.shape}; expected ({data.n_rows},)"
        )
    memberships = getattr(comp, "memberships_", None)
    prototypes = getattr(comp, "prototypes_", getattr(comp, "cluster_centers_", None))
    for key, value in (("memberships", memberships), ("prototypes", prototypes)):
        if key in cls.provides and value is None:
            raise FairauditError(f"clusterer {step.use!r} declares {key!r} but did not set it")
    params = dict(comp.get_params())
    fitted_k = getattr(comp, "n_clusters_", None)
    if fitted_k is not None:
        params = {**params, "n_clusters_fitted": int(fitted_k)}
    return Labelling(
        name=step.label,
        labels=labels.astype(np.int64),
        origin="clusterer",
        component=step.use,
        params=params,
        memberships=None if memberships is None else np.asarray(memberships, dtype=float),
        prototypes=None if prototypes is None else np.asarray(prototypes, dtype=float),
        extras=_jsonable(getattr(comp, "extras_", {})),
        seconds=seconds,
        notes=tuple(getattr(comp, "notes_", ())),
        fit=fit_diagnostics(comp),
    )


def _resolve_roles(spec: ChainSpec, schema: Any) -> ColumnRoles:
    cols = list(schema.names())
    sensitive = tuple(spec.data.sensitive)
    labels = spec.data.labels
    excluded: dict[str, str] = {c: "listed in exclude" for c in spec.data.exclude}
    nested = {c for c in cols if _is_nested(schema[c])}
    for role, named in (("sensitive", sensitive), ("labels", (labels,) if labels else ()),
                        ("features", spec.data.features or ())):
        for c in named:
            if c in nested:
                raise InputError(
                    f"{role} column {c!r} has the nested type {schema[c]}; expected a flat "
                    "column (string, number or boolean): unnest or explode it first"
                )
    if spec.data.features is not None:
        features = tuple(spec.data.features)
    else:
        skip = set(spec.data.exclude) | {labels} | nested
        if not spec.data.allow_sensitive_features:
            skip |= set(sensitive)
        features = tuple(c for c in cols if c not in skip)
        for c in sorted(nested - set(spec.data.exclude)):
            excluded[c] = f"nested type {schema[c]} (list/struct/array): ignored"
    if not spec.data.allow_sensitive_features:
        leaked = [c for c in features if c in sensitive]
        if leaked:
            raise ConfigError(
                f"sensitive column(s) {leaked} are listed as features; sensitive columns are "
                "never given to clusterers unless allow_sensitive_features = true"
            )
    if labels in features:
        features = tuple(c for c in features if c != labels)
    for s in sensitive:
        dtype = schema[s]
        if dtype.is_float():
            raise InputError(
                f"sensitive column {s!r} has float type {dtype}; expected categories (string, "
                "integer code or boolean) — bin it first"
            )
    return ColumnRoles(
        sensitive=sensitive,
        features=features,
        labels=labels,
        ordinal=dict(spec.data.ordinal),
        excluded=excluded,
    )


def _is_nested(dtype: Any) -> bool:
    """List, Array and Struct columns (and Python objects): no role can read them."""
    import polars as pl

    return bool(dtype.is_nested()) or dtype == pl.Object


def _skip_feature_steps(spec: ChainSpec, registry: Any, roles: ColumnRoles
                        ) -> tuple[ChainSpec, str]:
    """The chain without the preprocessors and auditors that read features (none is left), and
    the note that says so. Only the counting auditors remain; none left is an InputError."""
    dropped = [s for s in spec.audit
               if "features" in registry.get("auditor", s.use).cls.requires]
    kept = tuple(s for s in spec.audit if s not in dropped)
    aside = ", ".join(f"{c!r} ({why})" for c, why in roles.excluded.items())
    why = "no feature column is left" + (f" (set aside: {aside})" if aside else "")
    if not kept:
        raise InputError(f"{why}, and every auditor of the chain ("
                         + ", ".join(s.use for s in dropped) + ") reads features; add an "
                         "auditor that counts groups, e.g. --audit balance")
    steps = [s.use for s in (*spec.preprocess, *dropped)]
    note = f"{why}: skipped " + ", ".join(steps) + " (they read features)"
    log.info(note)
    return dataclasses.replace(spec, audit=kept, preprocess=()), note


def _source_name(path: Any) -> str:
    """How messages name the input: its path, or ``<in-memory table>`` (never a frame dump)."""
    from fairaudit.core.io import IN_MEMORY

    return path if isinstance(path, str) else IN_MEMORY


def _check_groups(joint: JointTable, roles: ColumnRoles, n_input: int, spec: ChainSpec,
                  lf: Any = None) -> None:
    n = joint.n
    if n == 0:
        raise InputError(_nothing_left(roles, n_input, lf))
    for s in roles.sensitive:
        sizes = joint.group_sizes(s)
        if len(sizes) > MAX_GROUPS or (n >= 100 and len(sizes) > 0.5 * n):
            raise InputError(
                f"sensitive column {s!r} has {len(sizes)} distinct values in {n} rows: it looks "
                "like an identifier, not a group attribute; choose a categorical column "
                "(or bin it)"
            )
        if len(sizes) < 2:
            only = next(iter(sizes), None)
            raise InputError(
                f"sensitive column {s!r} has a single group ({only!r}) among the audited rows: "
                "fairness between groups is undefined; choose another attribute"
            )


def _nothing_left(roles: ColumnRoles, n_input: int, lf: Any) -> str:
    """Why no row is left to audit, naming the column(s) at fault."""
    import polars as pl

    cols = [*roles.sensitive, *filter(None, [roles.labels])]
    if lf is not None:
        nulls = lf.select([pl.col(c).null_count() for c in cols]).collect().row(0)
        empty = [c for c, k in zip(cols, nulls, strict=True) if k == n_input]
        if empty:
            kinds = ["labels column" if c == roles.labels else "sensitive column" for c in empty]
            return ("; ".join(f"{k} {c!r} is null in every row" for k, c in
                              zip(kinds, empty, strict=True))
                    + ": nothing left to audit")
    return (f"every row has a null value in at least one of {', '.join(map(repr, cols))} "
            "(no row has them all): nothing left to audit")


def _materialise(lf: Any, roles: ColumnRoles, spec: ChainSpec, n_input: int, max_rows: int):
    import polars as pl

    cols = list(dict.fromkeys([*roles.features, *roles.sensitive, *filter(None, [roles.labels])]))
    q = lf.with_row_index(ROW_ID).select([ROW_ID, *cols])
    not_null = [pl.col(c).is_not_null() for c in [*roles.sensitive, *filter(None, [roles.labels])]]
    if not_null:
        q = q.filter(pl.all_horizontal(not_null))
    sample_info = None
    n_valid = int(q.select(pl.len()).collect(engine="streaming").item())
    if n_valid > max_rows:
        rng = np.random.default_rng(spec.data.seed)
        valid_ids = q.select(ROW_ID).collect(engine="streaming").get_column(ROW_ID).to_numpy()
        keep = np.sort(rng.choice(valid_ids, size=max_rows, replace=False))
        q = q.filter(pl.col(ROW_ID).is_in(keep.tolist()))
        sample_info = {
            "rows": int(max_rows),
            "seed": spec.data.seed,
            "note": (
                f"clusterers and feature-based metrics used a seeded random sample of "
                f"{max_rows:,} of {n_valid:,} rows; counting metrics of labels columns in the "
                "input use every row"
            ),
        }
    frame = q.collect(engine="streaming")
    excluded_nulls = n_input - n_valid
    roles_features = list(roles.features)
    # ID-like feature columns (unique per row) tell nothing about structure: exclude, with a note
    excluded = dict(roles.excluded)
    if spec.data.features is None:
        for c in [c for c in roles_features if _is_index_column(c, frame)]:
            roles_features.remove(c)
            excluded[c] = "a row index written out as a column (ID-like)"
    if spec.data.features is None and frame.height >= 20:
        for c in list(roles_features):
            dtype = frame.schema[c]
            if not (dtype == pl.String or dtype.is_integer()):
                continue
            if frame.get_column(c).n_unique() == frame.height and (
                dtype == pl.String or _looks_like_id(c, frame.get_column(c))
            ):
                roles_features.remove(c)
                excluded[c] = "unique per row (ID-like)"
    roles = dataclasses.replace(roles, features=tuple(roles_features), excluded=excluded)
    exclusions: dict[str, int] = {}
    if excluded_nulls:
        exclusions["null value in a sensitive or labels column"] = excluded_nulls
    data = AuditData(
        frame=frame,
        roles=roles,
        features=frame.select(roles_features),
        n_input_rows=n_input,
        sample_note=None if sample_info is None else sample_info["note"],
        exclusions=exclusions,
    )
    # non-finite numeric features
    bad = [
        c for c in roles_features
        if frame.schema[c].is_numeric()
        and (frame.get_column(c).is_null().any()
             or (frame.schema[c].is_float() and not frame.get_column(c).is_finite().all()))
    ]
    if bad:
        if spec.data.on_nonfinite == "error" and not spec.cluster:
            # only auditors read features (e.g. proxy): they use the rows and columns they can
            return _skip_nonfinite(data, frame, bad), sample_info
        if spec.data.on_nonfinite == "drop":
            mask = np.ones(frame.height, dtype=bool)
            for c in bad:
                col = frame.get_column(c)
                ok = col.is_not_null()
                if frame.schema[c].is_float():
                    ok = ok & col.is_finite().fill_null(False)
                mask &= ok.to_numpy()
            data = data.filter_rows(mask, "missing or non-finite feature value")
        else:
            raise InputError(
                "feature column(s) " + ", ".join(repr(c) for c in bad)
                + " contain missing or non-finite values; exclude them (--exclude) or drop "
                "those rows (--on-nonfinite drop)"
            )
    return data, sample_info


def _nonfinite_mask(frame: Any, column: str) -> np.ndarray:
    """True where ``column`` holds a null, NaN or infinite value."""
    col = frame.get_column(column)
    ok = col.is_not_null()
    if frame.schema[column].is_float():
        ok = ok & col.is_finite().fill_null(False)
    return ~ok.to_numpy()


def _skip_nonfinite(data: AuditData, frame: Any, bad: Sequence[str]) -> AuditData:
    """Feature-reading auditors (no clusterer in the chain) skip what they cannot use: rows with
    a missing or non-finite feature value, and — when that would leave fewer than half the rows —
    first the columns with the most such values. The note says what was skipped; the counting
    metrics are unaffected (they never read features)."""
    masks = {c: _nonfinite_mask(frame, c) for c in bad}
    keep_cols = sorted(bad, key=lambda c: (int(masks[c].sum()), c))
    skipped_cols: list[str] = []
    n = frame.height
    while keep_cols:
        rows_bad = np.zeros(n, dtype=bool)
        for c in keep_cols:
            rows_bad |= masks[c]
        if n - int(rows_bad.sum()) >= max(1, n // 2):
            break
        skipped_cols.append(keep_cols.pop())  # the column with the most bad values
    rows_bad = np.zeros(n, dtype=bool)
    for c in keep_cols:
        rows_bad |= masks[c]
    parts = []
    if skipped_cols:
        feats = tuple(c for c in data.roles.features if c not in skipped_cols)
        excluded = {**data.roles.excluded,
                    **{c: "mostly missing or non-finite values" for c in skipped_cols}}
        data = data.replace(
            roles=dataclasses.replace(data.roles, features=feats, excluded=excluded),
            features=data.features.drop(skipped_cols),
        )
        parts.append("column(s) " + ", ".join(repr(c) for c in skipped_cols)
                     + " (mostly missing or non-finite)")
    n_rows = int(rows_bad.sum())
    if n_rows:
        data = data.filter_rows(~rows_bad, "missing or non-finite feature value "
                                "(feature-based metrics only)")
        parts.append(f"{n_rows:,} of {n:,} row(s) with a missing or non-finite value in "
                     + ", ".join(repr(c) for c in keep_cols))
    note = ("feature-based metrics skipped " + " and ".join(parts)
            + "; counting metrics use every row (with clusterers, --on-nonfinite decides)")
    log.info(note)
    return data.replace(notes=(*data.notes, note))


_INDEX_NAMES = re.compile(r"|Unnamed: \d+|\.\.\.\d+|index|level_0")
"""Names that tables give a written-out row index: the empty header of pandas' ``to_csv`` and
R's ``write.csv`` (polars reads it as ``""``), ``Unnamed: 0`` (pandas' ``read_csv``),
``...1`` (readr), ``index`` / ``level_0`` (pandas' ``reset_index``)."""


def _is_index_column(name: str, frame: Any) -> bool:
    """A row index written out as a column: an index name, unique per row (any table size)."""
    import polars as pl

    if not _INDEX_NAMES.fullmatch(name.strip()) or frame.height < 2:
        return False
    dtype = frame.schema[name]
    col = frame.get_column(name)
    return (dtype == pl.String or dtype.is_integer()) and col.null_count() == 0 and (
        col.n_unique() == frame.height)


def _looks_like_id(name: str, col: Any) -> bool:
    lname = name.lower()
    if lname in ("id", "key", "uuid", "index") or lname.endswith(("_id", "id", "_key")):
        return True
    s = col.drop_nulls().sort()
    if s.len() < 3:
        return False
    diffs = s.diff().drop_nulls()
    return bool(diffs.n_unique() == 1)  # a running number


def _run_checks(lf, data, roles, joint, spec, n_input) -> list[dict[str, Any]]:
    import polars as pl

    from fairaudit.core.checks import run_input_checks

    if data is not None:
        sample = data.frame.drop(ROW_ID)
    else:
        cols = list(dict.fromkeys([*roles.sensitive, *filter(None, [roles.labels])]))
        sample = lf.select(cols).head(CHECK_SAMPLE_ROWS).collect(engine="streaming")
    group_counts = {a: joint.group_sizes(a) for a in joint.attribute_names}
    feats = [c for c in (data.roles.features if data is not None else ()) if c in sample.columns]
    results = run_input_checks(
        sample.select([c for c in sample.columns if c in set(feats) | set(roles.sensitive)
                       | {roles.labels}]),
        sensitive=list(roles.sensitive),
        labels=roles.labels,
        features=feats,
        group_counts=group_counts,
        min_cell=spec.options.min_cell,
        n_rows=n_input,
    )
    del pl
    return [r.to_json() for r in results]


# ---------------------------------------------------------------------------- counting
def _run_counting(comp: CountingAuditor, lab, joint, tables, boot, spec,
                  unreleased=None) -> list[MetricResult]:
    from fairaudit.core.counting_audit import run_counting_auditor

    return run_counting_auditor(comp, lab.name, joint, tables, boot,
                                min_cell=spec.options.min_cell, level=spec.options.ci_level,
                                ci_method=spec.options.ci_method,
                                # a release's intervals must carry the noise: the bootstrap's
                                own_intervals=not spec.privacy.publish, unreleased=unreleased)


# ---------------------------------------------------------------------------- the document
def _jsonable(x: Any) -> Any:
    if isinstance(x, Mapping):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating | float):
        f = float(x)
        return None if math.isnan(f) or math.isinf(f) else f
    if isinstance(x, str | int | bool) or x is None:
        return x
    if isinstance(x, Direction | Status):
        return x.value
    return repr(x)


def _json_params(params: Mapping[str, Any]) -> dict[str, Any]:
    return _jsonable(dict(params))


def _composition(joint: JointTable) -> dict:
    """Exact group x cluster tables of a labelling."""
    out = {}
    for attribute, t in joint.tables().items():
        counts = t.counts
        sizes = counts.sum(axis=0)
        pop = counts.sum(axis=1) / max(counts.sum(), 1)
        share = counts / np.where(sizes > 0, sizes, 1)
        out[attribute] = {
            "groups": list(t.groups),
            "clusters": [int(k) for k in t.clusters],
            "counts": [[int(v) for v in row] for row in counts],
            "population_share": [float(p) for p in pop],
            "cluster_share": [[float(v) for v in row] for row in share],
            "noise": [int(v) for v in t.noise],
        }
    return out


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"fairaudit": __version__}
    for pkg in ("polars", "numpy", "scipy", "scikit-learn", "great-expectations", "pluggy",
                "jinja2"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def _document(*, spec, path, roles, n_input, joint_full, data, sample_info, labellings, joints,
              results, checks, preprocessing, notes, status, host, timings, total, fingerprint):
    mc = spec.options.min_cell
    groups = {}
    for a in joint_full.attribute_names:
        sizes = joint_full.group_sizes(a)
        tot = sum(sizes.values())
        groups[a] = [
            {"group": g, "n": n, "share": n / tot if tot else None, "small": n < mc}
            for g, n in sizes.items()
        ]
    exclusions = {}
    if joint_full.null_rows:
        exclusions["null value in a sensitive or labels column"] = joint_full.null_rows
    if data is not None:
        for k, v in data.exclusions.items():
            exclusions[k] = max(v, exclusions.get(k, 0))
    lab_docs = []
    for lab in labellings:
        joint = joints[lab.name]
        clean = joint.cluster >= 0
        sizes: dict[int, int] = {}
        for c, n in zip(joint.cluster[clean], joint.counts[clean], strict=True):
            sizes[int(c)] = sizes.get(int(c), 0) + int(n)
        n_noise = int(joint.counts[~clean].sum())
        lab_docs.append({
            "name": lab.name,
            "origin": lab.origin,
            "component": lab.component,
            "column": lab.column,
            "params": _json_params(lab.params),
            "n_rows": int(joint.n),
            "n_clusters": len(sizes),
            "n_noise": n_noise,
            "cluster_sizes": [{"cluster": c, "n": n} for c, n in sorted(sizes.items())],
            "notes": list(lab.notes),
            "extras": _jsonable(lab.extras),
            "fit": _jsonable(lab.fit) if lab.fit else None,
            "warnings": degenerate_warnings(sizes, params=lab.params, fit=lab.fit,
                                            component=lab.component,
                                            separation=cluster_silhouettes(results, lab.name),
                                            memberships=lab.memberships,
                                            names=joint.cluster_names),
            "composition": _composition(joint),
        })
    res_docs = []
    for r in results:
        d = r.to_json()
        d["per_cluster"] = [dict(r) for r in d["per_cluster"]]
        d["detail"] = _jsonable(d["detail"])
        res_docs.append(d)
    rows_audited = int(joint_full.n)
    plugins = [
        {"name": p.name, "package": p.package, "version": p.version, "builtin": p.builtin}
        for p in sorted(host.plugins.values(), key=lambda p: p.name)
    ]
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "fairaudit", "version": __version__},
        "status": status.value,
        "input": {
            "path": str(path),
            "format": _format_of(path),
            "rows": int(n_input),
            "rows_audited": rows_audited,
            "fingerprint": fingerprint,
            "columns": [c for c in (data.frame.columns if data is not None else [])
                        if c != ROW_ID] or list(roles.sensitive)
                       + ([roles.labels] if roles.labels else []),
            "sensitive": list(roles.sensitive),
            "attributes": list(joint_full.attribute_names),
            "ordinal": {k: list(v) for k, v in roles.ordinal.items()},
            "labels": roles.labels,
            "features": list(data.roles.features) if data is not None else [],
            "excluded_columns": dict(data.roles.excluded) if data is not None
            else dict(roles.excluded),
            "exclusions": exclusions,
            "sample": sample_info,
            "groups": groups,
        },
        "chain": spec.to_json(),
        "preprocessing": preprocessing,
        "labellings": lab_docs,
        "results": res_docs,
        "checks": checks,
        "notes": notes,
        "environment": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "versions": _versions(),
            "plugins": plugins,
        },
        "timing": {
            "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "total_seconds": round(total, 4),
            "steps": [
                {"kind": t.kind, "step": t.step, "labelling": t.labelling,
                 "seconds": round(t.seconds, 4)}
                for t in timings
            ],
        },
    }


def _frame_fingerprint(frame: Any) -> str:
    import hashlib

    import polars as pl

    if isinstance(frame, pl.LazyFrame):
        return "unavailable (lazy in-memory table)"
    h = hashlib.sha256()
    h.update(str(frame.schema).encode())
    h.update(frame.hash_rows(seed=0).to_numpy().tobytes())
    return "rowhash:" + h.hexdigest()


def _format_of(path: Any) -> str:
    if not isinstance(path, str):
        return "polars"
    from fairaudit.core.io import resolve_input

    try:
        return resolve_input(path).format
    except FairauditError:
        return "plugin"


