"""Helpers for testing fairaudit components — for third-party plugin authors and for fairaudit.

In the spirit of scikit-learn's ``check_estimator``::

    from fairaudit.testing import check_component
    check_component(MyClusterer)            # raises AssertionError naming the failed check

    @parametrize_with_checks([MyClusterer, MyAuditor])
    def test_conformance(component, check):
        check(component)

Also a pytest plugin, loaded only where a project asks for it (``pytest -p fairaudit.testing``,
or ``pytest_plugins = ["fairaudit.testing"]`` in its top-level ``conftest.py``), providing the
fixtures ``fairaudit_host`` (a host with built-ins only) and ``fairaudit_data`` (a small seeded
:class:`~fairaudit.core.data.AuditData` with a planted imbalance), plus :func:`registered` and
:func:`record_hooks`. It has no ``pytest11`` entry point: installing fairaudit adds nothing to
other projects' test runs.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from fairaudit.core.components import (
    AuditContext,
    Auditor,
    Clusterer,
    Component,
    CountingAuditor,
    Preprocessor,
    ReportSection,
)

__all__ = [
    "check_component",
    "component_checks",
    "make_data",
    "parametrize_with_checks",
    "record_hooks",
    "registered",
]


# --------------------------------------------------------------------------- sample data
def make_data(n: int = 240, *, seed: int = 0, n_features: int = 3, with_labels: bool = True):
    """A small seeded :class:`AuditData`: two sensitive attributes (``sex``, ``race``), numeric
    features with three blobs, and (optionally) a labels column with a planted imbalance
    (cluster 0 is mostly ``F``)."""
    import numpy as np
    import polars as pl

    from fairaudit.core.data import ROW_ID, AuditData, ColumnRoles, Labelling

    rng = np.random.default_rng(seed)
    blob = rng.integers(0, 3, size=n)
    centres = np.array([[0.0] * n_features, [4.0] * n_features, [-4.0] * n_features])
    X = centres[blob] + rng.normal(size=(n, n_features))
    sex = np.where(rng.random(n) < np.where(blob == 0, 0.8, 0.3), "F", "M")
    race = rng.choice(["a", "b", "c"], size=n, p=[0.5, 0.3, 0.2])
    cols = {f"x{j}": X[:, j] for j in range(n_features)}
    frame = pl.DataFrame({ROW_ID: np.arange(n, dtype=np.uint32), **cols, "sex": sex, "race": race})
    roles = ColumnRoles(sensitive=("sex", "race"), features=tuple(cols))
    data = AuditData(frame=frame, roles=roles, features=frame.select(list(cols)), n_input_rows=n)
    if with_labels:
        data = data.with_labelling(
            Labelling(name="planted", labels=blob.astype(np.int64), origin="clusterer")
        )
    return data


# --------------------------------------------------------------------------- checks
@dataclass(frozen=True)
class _Check:
    name: str
    fn: Callable[[type], None]
    kinds: tuple[type, ...] = field(default=(Component, ReportSection))

    def __call__(self, cls: type) -> None:
        self.fn(cls)

    def __repr__(self) -> str:
        return self.name


def _fail(cls: type, check: str, msg: str) -> None:
    raise AssertionError(f"{cls.__name__} fails {check}: {msg}")


def check_has_name(cls: type) -> None:
    if not isinstance(getattr(cls, "name", None), str) or not cls.name:
        _fail(cls, "check_has_name", "set a non-empty class attribute 'name'")


def check_default_constructible(cls: type) -> None:
    try:
        cls()
    except Exception as exc:  # noqa: BLE001 - report whatever it was
        _fail(cls, "check_default_constructible", f"cls() raised {type(exc).__name__}: {exc}")


def check_no_attributes_set_in_init(cls: type) -> None:
    """``__init__`` only stores its parameters (scikit-learn convention)."""
    obj = cls()
    params = {p.name for p in cls.param_specs()}
    extra = {k for k in vars(obj) if k not in params}
    if extra:
        _fail(cls, "check_no_attributes_set_in_init",
              f"__init__ sets {sorted(extra)}, which are not parameters")
    missing = {p for p in params if p not in vars(obj)}
    if missing:
        _fail(cls, "check_no_attributes_set_in_init",
              f"parameters {sorted(missing)} are not stored under their own name")


def check_get_params_round_trip(cls: type) -> None:
    obj = cls()
    params = obj.get_params()
    clone = cls(**params)
    if clone.get_params() != params:
        _fail(cls, "check_get_params_round_trip", "cls(**obj.get_params()) differs from obj")


def check_defaults_satisfy_constraints(cls: type) -> None:
    errors = cls.check_params(cls().get_params())
    if errors:
        _fail(cls, "check_defaults_satisfy_constraints", f"defaults violate {errors}")


def check_constraints_name_parameters(cls: type) -> None:
    params = {p.name for p in cls.param_specs()}
    unknown = set(cls.constraints) - params
    if unknown:
        _fail(cls, "check_constraints_name_parameters",
              f"constraints on non-parameters {sorted(unknown)}")


def check_declared_artifacts(cls: type) -> None:
    from fairaudit.core.artifacts import ARTIFACTS

    unknown = (set(cls.requires) | set(cls.provides)) - ARTIFACTS
    if unknown:
        _fail(cls, "check_declared_artifacts", f"unknown artifact keys {sorted(unknown)}")


def _fit(cls: type, data: Any, **params: Any) -> Any:
    obj = cls(**params)
    view = data if "sensitive" in cls.requires else data.without_sensitive()
    if issubclass(cls, Preprocessor):
        return obj, obj.fit_transform(view)
    return obj, obj.fit(view)


def _seeded(cls: type) -> dict[str, Any]:
    names = {p.name for p in cls.param_specs()}
    kw: dict[str, Any] = {}
    if "random_state" in names:
        kw["random_state"] = 0
    if "n_clusters" in names:
        kw["n_clusters"] = 3
    return kw


def check_fit_does_not_change_params(cls: type) -> None:
    if not issubclass(cls, Clusterer | Preprocessor):
        return
    data = make_data()
    kw = _seeded(cls)
    obj = cls(**kw)
    before = copy.deepcopy(obj.get_params())
    view = data if "sensitive" in cls.requires else data.without_sensitive()
    (obj.fit_transform(view) if issubclass(cls, Preprocessor) else obj.fit(view))
    if obj.get_params() != before:
        _fail(cls, "check_fit_does_not_change_params", f"{before} -> {obj.get_params()}")


def check_provides_what_it_declares(cls: type) -> None:
    import numpy as np

    if not issubclass(cls, Clusterer):
        return
    data = make_data()
    obj, fitted = _fit(cls, data, **_seeded(cls))
    labels = getattr(fitted, "labels_", None)
    if labels is None or np.asarray(labels).shape != (data.n_rows,):
        _fail(cls, "check_provides_what_it_declares", "labels_ missing or of the wrong shape")
    if not np.issubdtype(np.asarray(labels).dtype, np.integer):
        _fail(cls, "check_provides_what_it_declares", "labels_ must be integers")
    if "memberships" in cls.provides:
        u = np.asarray(getattr(fitted, "memberships_", None))
        if u.ndim != 2 or u.shape[0] != data.n_rows or not np.allclose(u.sum(axis=1), 1):
            _fail(cls, "check_provides_what_it_declares", "memberships_ must be n x k, rows sum 1")
    if "prototypes" in cls.provides:
        proto = getattr(fitted, "prototypes_", getattr(fitted, "cluster_centers_", None))
        if proto is None:
            _fail(cls, "check_provides_what_it_declares", "declares prototypes but sets none")
    extras = getattr(fitted, "extras_", {})
    try:
        json.dumps(extras)
    except TypeError as exc:
        _fail(cls, "check_provides_what_it_declares", f"extras_ is not JSON-serialisable: {exc}")


def check_same_seed_same_output(cls: type) -> None:
    import numpy as np

    data = make_data()
    if issubclass(cls, Clusterer):
        a = _fit(cls, data, **_seeded(cls))[1].labels_
        b = _fit(cls, data, **_seeded(cls))[1].labels_
        if not np.array_equal(a, b):
            _fail(cls, "check_same_seed_same_output", "two fits with the same seed differ")
    elif issubclass(cls, Preprocessor):
        a = _fit(cls, data, **_seeded(cls))[1].features
        b = _fit(cls, data, **_seeded(cls))[1].features
        if not a.equals(b):
            _fail(cls, "check_same_seed_same_output", "two fits with the same seed differ")


def check_preprocessor_does_not_mutate(cls: type) -> None:
    if not issubclass(cls, Preprocessor):
        return
    data = make_data()
    before = data.features.clone()
    _, out = _fit(cls, data, **_seeded(cls))
    if not data.features.equals(before):
        _fail(cls, "check_preprocessor_does_not_mutate", "the input features changed")
    if out.n_rows != data.n_rows:
        _fail(cls, "check_preprocessor_does_not_mutate",
              "rows changed without AuditData.filter_rows")


def check_auditor_results(cls: type) -> None:
    """An auditor declares metrics, and its results are JSON-serialisable and declared."""
    if not issubclass(cls, Auditor):
        return
    if not cls.metrics:
        _fail(cls, "check_auditor_results", "declare at least one MetricSpec in 'metrics'")
    if sum(1 for m in cls.metrics if m.headline) > 1:
        _fail(cls, "check_auditor_results", "at most one headline metric")
    from fairaudit.core.contingency import joint_from_frame

    data = make_data()
    lab = data.labellings["planted"]
    joint = joint_from_frame(data.frame, label=None, sensitive=data.roles.sensitive,
                             labels_array=lab.labels)
    declared = {m.name for m in cls.metrics}
    obj = cls(**{k: v for k, v in _seeded(cls).items() if k == "random_state"})
    if issubclass(cls, CountingAuditor):
        for table in joint.tables().values():
            values = obj.compute(table)
            unknown = set(values) - declared
            if unknown:
                _fail(cls, "check_auditor_results", f"undeclared metrics {sorted(unknown)}")
            json.dumps([dict(r) for r in obj.breakdown(table)])
            json.dumps({k: float(v) for k, v in values.items()})
        return
    ctx = AuditContext(labelling=lab, tables=joint.tables(),
                       data=data if "sensitive" in cls.requires else data.without_sensitive(),
                       random_state=0)
    for r in obj.audit(ctx):
        if r.metric not in declared:
            _fail(cls, "check_auditor_results", f"undeclared metric {r.metric!r}")
        json.dumps(r.to_json())


def check_section(cls: type) -> None:
    if not issubclass(cls, ReportSection):
        return
    for attr in ("name", "title", "template"):
        if not getattr(cls, attr, ""):
            _fail(cls, "check_section", f"set the class attribute {attr!r}")


_COMPONENT_CHECKS = (
    check_has_name,
    check_default_constructible,
    check_no_attributes_set_in_init,
    check_get_params_round_trip,
    check_defaults_satisfy_constraints,
    check_constraints_name_parameters,
    check_declared_artifacts,
    check_fit_does_not_change_params,
    check_provides_what_it_declares,
    check_same_seed_same_output,
    check_preprocessor_does_not_mutate,
    check_auditor_results,
)


def component_checks(cls: type) -> list[Callable[[type], None]]:
    """The checks that apply to ``cls``."""
    if issubclass(cls, ReportSection):
        return [check_has_name, check_section]
    return list(_COMPONENT_CHECKS)


def check_component(cls: type) -> None:
    """Run every applicable conformance check; raise AssertionError on the first failure."""
    if not inspect.isclass(cls):
        raise TypeError("check_component takes a class")
    for check in component_checks(cls):
        check(cls)


def parametrize_with_checks(classes: Sequence[type]) -> Any:
    """``pytest.mark.parametrize`` over (class, check) pairs with readable ids."""
    import pytest

    pairs = [(cls, check) for cls in classes for check in component_checks(cls)]
    ids = [f"{cls.__name__}-{check.__name__}" for cls, check in pairs]
    return pytest.mark.parametrize(("component", "check"), pairs, ids=ids)


# --------------------------------------------------------------------------- plugin helpers
@contextlib.contextmanager
def registered(pm: Any, plugin: Any, name: str | None = None) -> Iterator[Any]:
    """Register ``plugin`` on ``pm`` for the duration of the block."""
    pm.register(plugin, name=name)
    try:
        yield plugin
    finally:
        pm.unregister(plugin)


@dataclass
class HookRecorder:
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def names(self) -> list[str]:
        return [c[0] for c in self.calls]


@contextlib.contextmanager
def record_hooks(pm: Any) -> Iterator[HookRecorder]:
    """Record every hook call (name and arguments) made through ``pm``."""
    rec = HookRecorder()

    def before(hook_name: str, hook_impls: Any, kwargs: dict[str, Any]) -> None:
        rec.calls.append((hook_name, dict(kwargs)))

    def after(outcome: Any, hook_name: str, hook_impls: Any, kwargs: dict[str, Any]) -> None:
        return None

    undo = pm.add_hookcall_monitoring(before, after)
    try:
        yield rec
    finally:
        undo()


# --------------------------------------------------------------------------- pytest fixtures
try:  # `-p fairaudit.testing` / `pytest_plugins` import this module inside pytest
    import pytest as _pytest

    @_pytest.fixture
    def fairaudit_host() -> Any:
        """A :class:`fairaudit.core.plugins.Host` with the built-ins only (no entry points)."""
        from fairaudit.core.plugins import Host

        return Host.create(entrypoints=False)

    @_pytest.fixture
    def fairaudit_data() -> Any:
        """A small seeded :class:`AuditData` with a planted imbalance."""
        return make_data()

except ImportError:  # pragma: no cover - pytest is optional at run time
    pass
