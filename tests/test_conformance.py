"""Every built-in component passes fairaudit.testing's conformance checks (the same ones third
parties run), and the checks themselves catch the mistakes they are meant to catch."""

from __future__ import annotations

import numpy as np
import pytest

from fairaudit.core.components import Clusterer, CountingAuditor, Direction, MetricSpec
from fairaudit.core.plugins import Host
from fairaudit.testing import check_component, component_checks, parametrize_with_checks

_HOST = Host.create(entrypoints=False)
BUILTIN_CLASSES = [info.cls for info in _HOST.registry.all()]


def test_there_are_builtins_of_every_kind():
    kinds = {info.kind for info in _HOST.registry.all()}
    assert {"preprocessor", "clusterer", "auditor", "section"} <= kinds


@parametrize_with_checks(BUILTIN_CLASSES)
def test_builtin_conformance(component, check):
    check(component)


def test_example_plugin_conformance():
    host = Host.create()
    for kind in ("auditor", "section"):
        check_component(host.registry.get(kind, "representation_gap").cls)


# ----------------------------------------------------------------------------- the checks work
class _SetsAttributeInInit(Clusterer):
    name = "bad_init"

    def __init__(self, n_clusters: int = 2):
        self.n_clusters = n_clusters
        self.cache = {}

    def fit(self, data):
        self.labels_ = np.zeros(data.n_rows, dtype=np.int64)
        return self


class _ChangesParams(Clusterer):
    name = "bad_fit"

    def __init__(self, n_clusters: int = 2):
        self.n_clusters = n_clusters

    def fit(self, data):
        self.n_clusters = 7
        self.labels_ = np.zeros(data.n_rows, dtype=np.int64)
        return self


class _Unseeded(Clusterer):
    name = "unseeded"

    def __init__(self, n_clusters: int = 2):
        self.n_clusters = n_clusters

    def fit(self, data):
        self.labels_ = np.random.default_rng().integers(0, self.n_clusters, size=data.n_rows)
        return self


class _WrongShape(Clusterer):
    name = "wrong_shape"

    def __init__(self) -> None:
        pass

    def fit(self, data):
        self.labels_ = np.zeros(data.n_rows - 1, dtype=np.int64)
        return self


class _UndeclaredMetric(CountingAuditor):
    name = "undeclared"
    metrics = (MetricSpec("declared", Direction.HIGHER_IS_BETTER, "x"),)

    def __init__(self) -> None:
        pass

    def compute(self, table):
        return {"declared": 1.0, "surprise": 2.0}


@pytest.mark.parametrize(
    ("cls", "failing_check"),
    [
        (_SetsAttributeInInit, "check_no_attributes_set_in_init"),
        (_ChangesParams, "check_fit_does_not_change_params"),
        (_Unseeded, "check_same_seed_same_output"),
        (_WrongShape, "check_provides_what_it_declares"),
        (_UndeclaredMetric, "check_auditor_results"),
    ],
)
def test_checks_catch_bad_components(cls, failing_check):
    with pytest.raises(AssertionError) as exc:
        check_component(cls)
    assert failing_check in str(exc.value)
    assert cls.__name__ in str(exc.value)


def test_sections_get_section_checks_only():
    section = _HOST.registry.get("section", "summary").cls
    names = [c.__name__ for c in component_checks(section)]
    assert "check_section" in names and "check_fit_does_not_change_params" not in names
