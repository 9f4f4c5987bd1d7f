"""The stages of a run, each a small function from one frozen :class:`RunState` to the next.

    load -> count -> materialise -> check -> preprocess -> cluster -> assign -> noise -> audit
         -> gate -> document -> publish -> twins -> explain -> verdicts

``load`` (reading the input and validating the chain against its columns) is done by
:func:`fairaudit.core.runner.run_chain`, which then runs :data:`STAGES` in order. A stage
returns ``dataclasses.replace(state, ...)`` with what it adds; nothing it was given is changed
(the document too is a new mapping at each of the last five stages). Engines plug in at
``count`` (the pass over every row that counts groups) and ``assign`` (every row through the
fitted steps). ``noise`` runs only with ``--publish``: from there on every count is a noisy one.
Per-step timings (``--timing``) are recorded by the state's clock, as before the stages.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from fairaudit.core.assign import FittedStep
from fairaudit.core.components import AuditContext, CountingAuditor
from fairaudit.core.contingency import (
    BootstrapReplicates,
    JointTable,
    joint_from_frame,
)
from fairaudit.core.data import AuditData, ColumnRoles, Labelling
from fairaudit.core.document import (
    build_document,
    frame_fingerprint,
    json_params,
    jsonable,
    publish_document,
)
from fairaudit.core.fit_quality import recording_warnings
from fairaudit.core.inputs import (
    DEFAULT_MAX_ROWS,
    binning_notes,
    check_groups,
    decimal_comma_notes,
    label_ids,
    materialise_rows,
    skip_feature_steps,
    source_name,
)
from fairaudit.core.spec import ChainSpec
from fairaudit.core.steps import (
    DATA_LABELLING,
    Clock,
    audit_step,
    fit_transform,
    guard,
    instantiate,
    labelling_from,
    run_checks,
    run_counting,
)
from fairaudit.errors import ConfigError, FairauditError, InputError
from fairaudit.report.model import AuditDocument
from fairaudit.report.results import TARGET_NOTE, AuditRun, MetricResult, overall_status

if TYPE_CHECKING:
    from fairaudit.core.io import BackgroundFingerprint

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunState:
    """Everything a run knows after a stage. Stages fill the fields below the line in order."""

    spec: ChainSpec
    host: Any
    engine: Any
    clock: Clock
    path: Any
    lf: Any
    roles: ColumnRoles
    in_memory: bool
    started: float
    fingerprint: BackgroundFingerprint | None = None
    """The input file's content hash (:func:`fairaudit.core.io.fingerprint`), computed on a
    thread from the ``hash`` stage on: its ``result()`` waits for the hash. None for a table in memory
    (``document`` hashes its rows)."""
    # ---------------------------------------------------------------- filled by the stages
    joint_full: JointTable | None = None
    n_input: int = 0
    data: AuditData | None = None
    sample_info: Mapping[str, Any] | None = None
    sample_data: AuditData | None = None
    """The in-memory rows as materialised (before preprocessing): what ``assign`` starts from."""
    skipped_note: str | None = None
    checks: tuple[Mapping[str, Any], ...] = ()
    feature_notes: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    seeds: tuple[int, ...] = ()
    seeds_used: int = 0
    preprocessing: tuple[Mapping[str, Any], ...] = ()
    fitted_pre: tuple[FittedStep, ...] = ()
    fitted_clu: tuple[FittedStep, ...] = ()
    labellings: tuple[Labelling, ...] = ()
    joints: Mapping[str, JointTable] = field(default_factory=dict)
    release: Any = None
    results: tuple[MetricResult, ...] = ()
    gates: tuple[Any, ...] = ()
    doc: AuditDocument | None = None
    """The typed document, from the ``document`` stage on: every later stage takes it and
    returns a new one (its JSON is :meth:`AuditDocument.to_json`)."""

    def classes(self, kind: str, group: str) -> list[type]:
        """The component classes of the chain's ``group`` steps (``"audit"``, ...)."""
        return [self.host.registry.get(kind, s.use).cls for s in getattr(self.spec, group)]

    def next_seed(self) -> tuple[int, RunState]:
        """The next seed of the chain's seed sequence, and the state that has used it."""
        return self.seeds[self.seeds_used], dataclasses.replace(self, seeds_used=self.seeds_used + 1)


def _seeds(seed: int, n: int) -> tuple[int, ...]:
    ss = np.random.SeedSequence(seed)
    return tuple(int(c.generate_state(1, dtype=np.uint32)[0]) for c in ss.spawn(n))


# ----------------------------------------------------------------------------- the stages
def count(s: RunState) -> RunState:
    """One pass over every row (the engine's): group x label counts of the input."""
    spec = s.spec
    joint_full, n_input = s.clock.run(
        "load", "count", None,
        lambda: s.engine.count(s.lf, path=s.path, roles=s.roles,
                               reader_options=dict(spec.data.reader_options)),
    )
    if n_input == 0:
        raise InputError(f"{source_name(s.path)}: the table is empty (no rows)")
    check_groups(joint_full, s.roles, n_input, spec, s.lf)
    if joint_full.null_rows and spec.data.on_null == "error":
        raise InputError(
            f"{source_name(s.path)}: {joint_full.null_rows} row(s) have a null value in "
            + ", ".join(repr(c) for c in (*s.roles.sensitive, *(filter(None, [s.roles.labels]))))
            + " (--on-null error); fix them or use --on-null exclude"
        )
    n_seeds = len(spec.preprocess) + len(spec.cluster) + len(spec.audit) + 1
    return dataclasses.replace(s, joint_full=joint_full, n_input=n_input,
                               seeds=_seeds(spec.data.seed, n_seeds))


def materialise(s: RunState) -> RunState:
    """The rows held in memory (a seeded sample above the clusterers' ``max_rows``), when a
    clusterer or a feature-reading auditor needs them."""
    spec = s.spec
    cluster_classes = s.classes("clusterer", "cluster")
    need_rows = bool(spec.cluster) or any(
        not issubclass(c, CountingAuditor) for c in s.classes("auditor", "audit"))
    if not need_rows:
        if spec.data.sample is None:
            return s
        from fairaudit.core.params import as_given

        msg = (f"{as_given('sample', spec.data.sample, spec.source)} has no effect: no step "
               "reads rows (no clusterer, and every auditor counts the whole table)")
        log.warning("%s", msg)
        return dataclasses.replace(s, notes=(*s.notes, msg))
    limits = [c.max_rows for c in cluster_classes if c.max_rows]
    max_rows = spec.data.sample or (min(limits) if limits else DEFAULT_MAX_ROWS)
    data, sample_info = s.clock.run(
        "load", "materialise", None,
        lambda: materialise_rows(s.lf, s.roles, spec, s.n_input, max_rows,
                                 draw=getattr(s.engine, "draw_rows", None),
                                 n_valid=s.n_input - s.joint_full.null_rows,
                                 sample_to=_auditors_rows(s)),
    )
    skipped_note = None
    if not data.roles.features and not spec.cluster:
        # a labels audit needs only the sensitive and labels columns: the steps that read
        # features (e.g. the proxy auditor and its encoder) have nothing to look at
        spec, skipped_note = skip_feature_steps(spec, s.host.registry, data.roles)
    return dataclasses.replace(s, spec=spec, data=data, sample_info=sample_info,
                               sample_data=data, skipped_note=skipped_note)


def _auditors_rows(s: RunState) -> int | None:
    """Without clusterers (and without ``--sample``), the rows the feature-reading auditors
    read at most (the largest of their :meth:`~fairaudit.core.components.Auditor.rows_needed`),
    or None when one of them reads every row it is given."""
    if s.spec.cluster or s.spec.data.sample:
        return None
    needed = []
    for step, cls in zip(s.spec.audit, s.classes("auditor", "audit"), strict=True):
        if issubclass(cls, CountingAuditor):
            continue
        try:
            n = instantiate(cls, step, 0, s.spec).rows_needed()
        except Exception:  # noqa: BLE001 - a step that fails here reports itself when it runs
            n = None
        if n is None:
            return None
        needed.append(int(n))
    return max(needed) if needed else None


def check(s: RunState) -> RunState:
    """The input checks, computed natively (none in a ``--publish`` release)."""
    checks = [] if s.spec.privacy.publish else s.clock.run(
        "checks", "input", None,
        lambda: run_checks(s.lf, s.data, s.roles, s.joint_full, s.spec, s.n_input,
                           engine=s.engine),
    )
    feature_notes = tuple(s.data.notes) if s.data is not None else ()
    bins = [*binning_notes(s.joint_full, s.roles, s.lf), *decimal_comma_notes(s.data)]
    for note in bins:
        log.warning("%s", note)
    notes = (*s.notes, *feature_notes, *([s.skipped_note] if s.skipped_note else []), *bins)
    return dataclasses.replace(s, checks=tuple(checks), feature_notes=feature_notes, notes=notes)


def preprocess(s: RunState) -> RunState:
    """Fit and apply each preprocessor in order (on the in-memory rows). Without clusterers the
    features feed only the auditors that read them: when preprocessing leaves none (every
    column constant, or text with too many levels), those steps are skipped with a note, never
    an error (a labels audit needs only the sensitive and labels columns) — unless the user
    named the features."""
    if s.spec.cluster or not s.spec.preprocess or s.spec.data.features is not None:
        return _preprocess(s)  # features the user named: a problem with them is an error
    try:
        out = _preprocess(s)
    except ConfigError as exc:
        return _skip_features(s, f"preprocessing left no feature to read ({exc})")
    if out.data is not None and not out.data.features.columns:
        return _skip_features(s, "preprocessing left no feature column")
    return out


def _skip_features(s: RunState, why: str) -> RunState:
    spec, note = skip_feature_steps(s.spec, s.host.registry, s.data.roles, why=why)
    log.warning("%s", note)
    return dataclasses.replace(s, spec=spec, notes=(*s.notes, note))


def _preprocess(s: RunState) -> RunState:
    data = s.data
    fitted: list[FittedStep] = []
    docs: list[Mapping[str, Any]] = []
    for step, cls in zip(s.spec.preprocess, s.classes("preprocessor", "preprocess"), strict=True):
        seed, s = s.next_seed()
        comp = instantiate(cls, step, seed, s.spec)
        fitted.append(FittedStep(step.label, comp, "sensitive" in cls.requires, step.use))
        view = data if "sensitive" in cls.requires else data.without_sensitive()
        data = guard(step, s.clock.run, "preprocessor", step.label, None, fit_transform, comp,
                     view, spec=s.spec)
        docs.append(
            {"name": step.label, "use": step.use, "params": json_params(comp.get_params()),
             "notes": list(comp.notes()), "report": jsonable(getattr(comp, "report_", {}))}
        )
    return dataclasses.replace(s, data=data, fitted_pre=tuple(fitted), preprocessing=tuple(docs))


def cluster(s: RunState) -> RunState:
    """The labellings: the labels column (counted in ``count``) and each clusterer's fit; a
    ``fair = false`` twin gets its fair step's parameters, seed and input."""
    spec, roles, data = s.spec, s.roles, s.data
    labellings: list[Labelling] = []
    joints: dict[str, JointTable] = {}
    notes = list(s.notes)
    if roles.labels is not None:
        labels_arr = None
        if data is not None:
            labels_arr = label_ids(data.frame.get_column(roles.labels), s.joint_full)
        lab = Labelling(
            name=roles.labels,
            labels=labels_arr if labels_arr is not None else np.zeros(0, dtype=np.int64),
            origin="column",
            column=roles.labels,
        )
        labellings.append(lab)
        joints[lab.name] = s.joint_full
        if data is not None:
            data = data.with_labelling(lab)

    chosen_k: int | None = spec.options.k
    if spec.options.k is not None and not spec.cluster:
        from fairaudit.core.params import as_given

        msg = (f"{as_given('k', spec.options.k, spec.source)} has no effect: no clusterer "
               f"runs (the labels column {roles.labels!r} is audited as it is); add a clusterer to fit k clusters")
        log.warning("%s", msg)
        notes.append(msg)
    default_chain = spec.source.endswith(":default")
    fair_steps: dict[str, tuple[dict[str, Any], AuditData]] = {}
    fitted_clu: list[FittedStep] = []
    for step, cls in zip(spec.cluster, s.classes("clusterer", "cluster"), strict=True):
        if step.twin_of is not None:  # fair = false twin: its fair step's params, seed and input
            if step.twin_of not in fair_steps:
                continue
            params, view = fair_steps[step.twin_of]
            comp = guard(step, lambda c=cls, p=params: c(**{**p, "fair": False}))
        else:
            seed, s = s.next_seed()
            comp = instantiate(cls, step, seed, spec, k=chosen_k)
            view = data if "sensitive" in cls.requires else data.without_sensitive()
            fair_steps[step.label] = (dict(comp.get_params()), view)
        try:
            fitted, raised = guard(step, s.clock.run, "clusterer", step.label, step.label,
                                   recording_warnings, comp.fit, view)
        except FairauditError as exc:
            if default_chain and labellings:
                notes.append(f"{step.use} was skipped in the default comparison: {exc}")
                log.warning("%s skipped: %s", step.use, exc)
                fair_steps.pop(step.label, None)  # no twin without its fair labelling
                continue
            raise
        lab = labelling_from(fitted, cls, step, data, s.clock.timings[-1].seconds)
        if raised:  # the clusterer's own warnings.warn: into the labelling's warnings
            lab = dataclasses.replace(lab, fit={**(lab.fit or {}), "warnings": raised})
        fitted_clu.append(FittedStep(lab.name, fitted, "sensitive" in cls.requires, step.use))
        if chosen_k is None and "n_clusters" in lab.params:
            chosen_k = lab.n_clusters if lab.n_clusters >= 2 else None
        labellings.append(lab)
        data = data.with_labelling(lab)
        joints[lab.name] = joint_from_frame(
            data.frame, label=None, sensitive=roles.sensitive, ordinal=roles.ordinal,
            labels_array=lab.labels,
        )
    return dataclasses.replace(s, data=data, labellings=tuple(labellings), joints=joints,
                               fitted_clu=tuple(fitted_clu), notes=tuple(notes))


def assign(s: RunState) -> RunState:
    """Every input row through the fitted steps (the engine's pass), when the clusterers were
    fitted on a sample: counting metrics then use every row."""
    if s.sample_info is None or not s.fitted_clu:
        return s
    res = s.clock.run(
        "assign", "every row", None,
        lambda: s.engine.assign(s.lf, path=s.path,
                                reader_options=dict(s.spec.data.reader_options),
                                template=s.sample_data, preprocessors=list(s.fitted_pre),
                                clusterers=list(s.fitted_clu),
                                on_nonfinite=s.spec.data.on_nonfinite,
                                total=s.n_input - s.joint_full.null_rows),
    )
    for (part, labelling), seconds in res.seconds.items():  # --timing: the pass's parts
        s.clock.record("assign", part, labelling, seconds)
    fitted_rows = s.sample_data.n_rows
    joints = dict(s.joints)
    out = []
    for lab in s.labellings:
        if res.warnings.get(lab.name):  # predict's own warnings.warn, as fit's
            lab = dataclasses.replace(lab, fit={**(lab.fit or {}),
                                                "predict_warnings": res.warnings[lab.name]})
        if lab.name in res.joints:
            joints[lab.name] = res.joints[lab.name]
            # the clusterer's own notes describe its fit, on the sample, not every row audited
            lab = dataclasses.replace(lab, notes=tuple(
                n if n.startswith(TARGET_NOTE) else f"(fit on the {fitted_rows:,}-row sample) {n}"
                for n in lab.notes))
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
    sample_info = s.sample_info
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
    return dataclasses.replace(s, labellings=tuple(out), joints=joints, sample_info=sample_info)


def noise(s: RunState) -> RunState:
    """``--publish`` only: noise the count cubes once; every later count is a noisy one."""
    if not s.spec.privacy.publish:
        return s
    from fairaudit.privacy.publish import Release

    release = s.clock.run("publish", "noise", None, Release, list(s.labellings), s.joints,
                          s.spec.privacy, s.roles.ordinal)
    return dataclasses.replace(s, release=release, joints=dict(release.joints),
                               joint_full=release.joint_full)


def audit(s: RunState) -> RunState:
    """Every auditor on every labelling (once for auditors that judge the data)."""
    spec, data, release = s.spec, s.data, s.release
    audit_seed, s = s.next_seed()
    results: list[MetricResult] = []
    audit_classes = s.classes("auditor", "audit")
    if spec.options.bootstrap > 0 and any(issubclass(c, CountingAuditor) for c in audit_classes):
        from fairaudit.core.limits import check_bootstrap_memory

        check_bootstrap_memory(s.joints, spec.options.bootstrap, spec.options.min_cell,
                               spec.options.max_memory)
    for lab_index, lab in enumerate(s.labellings):
        joint = s.joints[lab.name]
        tables = joint.tables()
        boot = None
        if spec.options.bootstrap > 0:
            # each attribute its own stream (the run's seed, labelling, attribute): its
            # interval does not depend on which other attributes or steps the chain has
            # (docs/metrics.md, "Uncertainty")
            boot = (release.replicates(lab.name, spec.options.bootstrap,
                                       np.random.default_rng([audit_seed, lab_index]))
                    if release else BootstrapReplicates.per_attribute(
                        joint, spec.options.bootstrap, spec.data.seed, lab.name))
        for step, cls in zip(spec.audit, audit_classes, strict=True):
            if not cls.per_labelling and lab_index > 0:
                continue  # about the data, not a clustering: run once
            comp = instantiate(cls, step, audit_seed, spec)
            if issubclass(cls, CountingAuditor):
                produced = s.clock.run(
                    "auditor", step.label, lab.name, run_counting, comp, lab, joint, tables,
                    boot, spec, release,
                )
            else:
                if data is None or lab.labels.size == 0:
                    continue
                ctx = AuditContext(
                    labelling=data.labellings.get(lab.name, lab), tables=tables,
                    data=data if "sensitive" in cls.requires else data.without_sensitive(),
                    random_state=audit_seed,
                )
                produced = guard(step, s.clock.run, "auditor", step.label, lab.name,
                                 audit_step, comp, ctx)
                if not cls.per_labelling:
                    produced = [dataclasses.replace(r, labelling=DATA_LABELLING) for r in produced]
                if s.feature_notes and "features" in cls.requires:
                    produced = [dataclasses.replace(r, notes=(*r.notes, *s.feature_notes))
                                for r in produced]
            results.extend(produced)
    return dataclasses.replace(s, results=tuple(results))


def _all_noise(joint: JointTable | None) -> bool:
    return joint is not None and joint.n > 0 and not bool((joint.cluster >= 0).any())


def gate(s: RunState) -> RunState:
    """Judge every threshold on the whole scope the chain promised (see fairaudit.ops.gates)."""
    from fairaudit.ops.gates import evaluate_gates, scopes_for

    # the fair = false twins (--twins) are there for comparison, the price of fairness: no gate
    # judges them (to gate a plain method, name it with --cluster / a [[cluster]] step)
    twins = {step.label for step in s.spec.cluster if step.twin_of is not None}
    gated = [lab for lab in s.labellings if lab.name not in twins]
    scopes = scopes_for(s.classes("auditor", "audit"), [lab.name for lab in gated],
                        s.joint_full.attribute_names, data_labelling=DATA_LABELLING)
    reasons = {
        lab.name: "every row of this labelling is noise (label -1), so no group metric exists"
        for lab in gated if _all_noise(s.joints.get(lab.name))
    }
    judged, gates = evaluate_gates([r for r in s.results if r.labelling not in twins],
                                   s.spec.thresholds, scopes, reasons=reasons)
    it = iter(judged)
    results = [r if r.labelling in twins else next(it) for r in s.results]
    notes = list(s.notes)
    if s.release is not None:  # the data's own notes quote exact counts
        from fairaudit.privacy.publish import published_notes

        notes = published_notes()
    notes.extend(
        f"labelling {lab.name!r}: every row is noise (label -1); no counting metric can be "
        "computed for it, and any threshold on one fails"
        for lab in s.labellings if _all_noise(s.joints.get(lab.name)))
    return dataclasses.replace(s, results=tuple(results), gates=tuple(gates), notes=tuple(notes))


def document(s: RunState) -> RunState:
    """The exact audit document of everything above."""
    doc = build_document(
        spec=s.spec, path=s.path, roles=s.roles, n_input=s.n_input, joint_full=s.joint_full,
        data=s.data, sample_info=s.sample_info, labellings=list(s.labellings), joints=s.joints,
        results=list(s.results), checks=list(s.checks), preprocessing=list(s.preprocessing),
        notes=list(s.notes), status=overall_status(list(s.results), list(s.gates)),
        host=s.host, timings=s.clock.timings, total=time.perf_counter() - s.started,
        fingerprint=(frame_fingerprint(s.path) if s.fingerprint is None else s.fingerprint.result()),
    )
    if s.in_memory:
        doc["input"] = {**doc["input"], "path": "<in-memory table>", "format": "polars"}
    from fairaudit.sources import describe_source

    source = describe_source(s.path, s.spec.data.reader_options, s.engine,
                             fingerprint=doc["input"]["fingerprint"])
    if source is not None:  # a database, object store or Delta table (the URL masked)
        doc["input"] = {**doc["input"], **source}
    doc["gates"] = [g.to_json() for g in s.gates]
    labs = []
    for lab_doc in doc["labellings"]:  # names of the clusters of a labels column of names
        names = s.joints[lab_doc["name"]].cluster_names if lab_doc["name"] in s.joints else None
        labs.append(lab_doc if names is None else {**lab_doc, "cluster_names": list(names)})
    doc["labellings"] = labs
    if not s.spec.options.timing:
        doc.pop("timing", None)  # byte-identical JSON for the same input, seed and version
    return dataclasses.replace(s, doc=AuditDocument.from_json(doc))


def _edit(s: RunState, edit: Callable[[dict[str, Any]], Mapping[str, Any]]) -> RunState:
    """A stage's edit of the document: ``edit`` reads and returns the JSON form (the helpers
    below work on it), the state holds the typed document again."""
    return dataclasses.replace(s, doc=AuditDocument.from_json(edit(s.doc.to_json())))


def publish(s: RunState) -> RunState:
    """What is published: the analyst's exact report, or the ``--publish`` release's document."""
    return _edit(s, lambda doc: publish_document(
        doc, s.spec, joints=s.joints, joint_full=s.joint_full, release=s.release))


def twins(s: RunState) -> RunState:
    """The price of fairness: each fair labelling against its ``fair = false`` twin."""
    from fairaudit.core.twins import price_of_fairness

    return _edit(s, lambda doc: {**doc, "twins": price_of_fairness(doc)})


def explain(s: RunState) -> RunState:
    """A sentence per headline result, from the published document alone."""
    from fairaudit.report.explain import explain_results, metric_specs

    return _edit(s, lambda doc: explain_results(doc, metric_specs(s.host.registry)))


def verdicts(s: RunState) -> RunState:
    """The per-attribute verdicts and the glossary, from the published document alone."""
    from fairaudit.report.explain import add_verdicts, metric_specs

    return _edit(s, lambda doc: add_verdicts(doc, metric_specs(s.host.registry)))


def hash_input(s: RunState) -> RunState:
    """Start the input's content hash on its thread: after the passes over the data, which use
    every core, beside the steps that mostly use one (:class:`~fairaudit.core.io.
    BackgroundFingerprint`)."""
    if s.fingerprint is not None:
        s.fingerprint.start()
    return s


STAGES: tuple[tuple[str, Callable[[RunState], RunState]], ...] = (
    ("count", count), ("materialise", materialise), ("hash", hash_input), ("check", check),
    ("preprocess", preprocess), ("cluster", cluster), ("assign", assign), ("noise", noise),
    ("audit", audit), ("gate", gate), ("document", document), ("publish", publish),
    ("twins", twins), ("explain", explain), ("verdicts", verdicts),
)
"""The stages after ``load``, in order."""


def _progress_name(name: str, s: RunState) -> str | None:
    """The progress display's name of a stage the clock does not time (None: timed steps)."""
    if name == "gate":
        return f"gate: {len(s.spec.thresholds)} threshold(s)"
    if name == "twins":
        pairs = sum(1 for step in s.spec.cluster if step.twin_of is not None)
        return f"twins: {pairs} fair labelling(s) against their twins"
    if name == "explain":
        heads = sum(1 for r in (s.doc.results if s.doc is not None else ()) if r.headline is True)
        return f"explain: {heads} headline result(s)"
    if name in ("document", "publish", "verdicts"):
        return name
    return None


def run_stages(state: RunState) -> AuditRun:
    """Run :data:`STAGES` from ``state`` (after ``load``) and return the finished run. Stages
    the clock does not time still show in the progress display (a step each)."""
    from fairaudit.core.progress import step as progress_step

    for name, stage in STAGES:
        log.debug("stage %s", name)
        shown = _progress_name(name, state)
        if shown is None:
            state = stage(state)
        else:
            with progress_step(shown):
                state = stage(state)
    return AuditRun(state.doc.to_json())
