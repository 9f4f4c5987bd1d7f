"""What the stages do with one component or one step: the clock that times each step (and tells
the hooks and the progress display), instantiating a component from its chain step (seed and k
filled in), turning its errors into ones that name the step, the labelling a fitted clusterer
gives, the input checks and the counting auditors' audit.
"""


from __future__ import annotations

import inspect
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from fairaudit.core.components import (
    AuditContext,
    Auditor,
    CountingAuditor,
    Preprocessor,
)
from fairaudit.core.data import ROW_ID, AuditData, Labelling
from fairaudit.core.document import jsonable
from fairaudit.core.fit_quality import fit_diagnostics
from fairaudit.core.progress import step as progress_step
from fairaudit.core.progress import what_of
from fairaudit.core.spec import ChainSpec, StepSpec
from fairaudit.errors import ConfigError, FairauditError
from fairaudit.report.results import (
    MetricResult,
)

log = logging.getLogger("fairaudit.core.runner")  # the run's step log, as in --verbose before

DATA_LABELLING = "(data)"
"""The ``labelling`` of results from auditors that judge the data, not a clustering."""
CHECK_SAMPLE_ROWS = 100_000

@dataclass(frozen=True)
class StepTiming:
    kind: str
    step: str
    labelling: str | None
    seconds: float


class Clock:
    def __init__(self, host: Any):
        self.host = host
        self.timings: list[StepTiming] = []

    def run(self, kind: str, step: str, labelling: str | None, fn: Callable[..., Any],
            *args: Any) -> Any:
        t0 = time.perf_counter()
        with progress_step(what_of(kind, step, labelling)):  # fairaudit.progress records
            out = fn(*args)
        dt = time.perf_counter() - t0
        self.timings.append(StepTiming(kind, step, labelling, dt))
        self.host.step_finished(step=step, kind=kind, labelling=labelling, seconds=dt)
        log.info("%s %s%s: %.3f s", kind, step, f" on {labelling}" if labelling else "", dt)
        return out

    def record(self, kind: str, step: str, labelling: str | None, seconds: float) -> None:
        """A part of the step timed last (e.g. one labelling's share of the assignment pass),
        timed by the step itself: listed in ``--timing``, not announced again to the hooks."""
        self.timings.append(StepTiming(kind, step, labelling, seconds))


def fit_transform(comp: Preprocessor, view: AuditData) -> AuditData:
    return comp.fit_transform(view).replace(include_sensitive=True)


def audit_step(comp: Auditor, ctx: AuditContext) -> list[MetricResult]:
    return list(comp.audit(ctx))


def guard(step: StepSpec, fn: Callable[..., Any], *args: Any, spec: ChainSpec | None = None
          ) -> Any:
    """Turn a component's ValueError into a ConfigError that names the chain step (a step the
    user did not write is named as the default it is); given ``spec``, a message about a column
    the user can leave out says how (``--exclude date``, ``exclude=['date']``, ...)."""
    try:
        return fn(*args)
    except FairauditError:
        raise
    except (ValueError, TypeError) as exc:
        msg = str(exc)
        col = re.search(r"column '([^']*)'", msg)
        if spec is not None and col and msg.rstrip(".").endswith("exclude it"):
            from fairaudit.core.inputs import exclude_name

            how = (f"leave it out of {exclude_name(spec, 'features')}"
                   if col[1] in (spec.data.features or ()) else
                   exclude_name(spec, "exclude", col[1]))
            msg = f"{msg.rstrip('.')} ({how})"
        raise ConfigError(f"{step_name(step)}: {msg}") from exc


def step_name(step: StepSpec) -> str:
    """``--cluster[0] (kmeans)``; a default step: ``the default preprocessing 'encode'``."""
    if step.path.startswith("default."):
        kind = {"preprocess": "preprocessing", "cluster": "clusterer", "audit": "auditor"}
        return f"the default {kind.get(step.kind, step.kind)} {step.use!r} ({step.path})"
    return f"{step.path} ({step.use})"


def instantiate(cls: type, step: StepSpec, seed: int, spec: ChainSpec, k: int | None = None):
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
        raise ConfigError(f"{step_name(step)}: {exc}") from exc


def labelling_from(comp: Any, cls: type, step: StepSpec, data: AuditData, seconds: float):
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
        extras=jsonable(getattr(comp, "extras_", {})),
        seconds=seconds,
        notes=tuple(getattr(comp, "notes_", ())),
        fit=fit_diagnostics(comp),
    )


def run_checks(lf, data, roles, joint, spec, n_input, engine=None) -> list[dict[str, Any]]:
    import polars as pl

    from fairaudit.core.checks import run_input_checks

    backend = None
    grouped = getattr(engine, "check_rows", lambda: None)() if data is None else None
    if data is not None:
        sample = data.frame.drop(ROW_ID)
    elif grouped is not None:  # a database's GROUP BY: each distinct row with its count
        sample, backend = grouped
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
        backend=backend,
    )
    del pl
    return [r.to_json() for r in results]


# ---------------------------------------------------------------------------- counting
def run_counting(comp: CountingAuditor, lab, joint, tables, boot, spec,
                  release=None) -> list[MetricResult]:
    from fairaudit.core.counting_audit import run_counting_auditor

    # a release's intervals must carry the noise (its variance, public) and read nothing but
    # the release: its parametric replicates, its unreleased cells
    published = {} if release is None else {"unreleased": release.unreleased(lab.name),
                                            **release.interval_options(lab.name)}
    return run_counting_auditor(comp, lab.name, joint, tables, boot,
                                min_cell=spec.options.min_cell, level=spec.options.ci_level,
                                ci_method=spec.options.ci_method, **published)
