"""The Dask engine gives the same audit as the local engine (small data, a LocalCluster)."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest

pytest.importorskip("distributed")

from fixture_plugins import load_fixture_plugin  # noqa: E402

from fairaudit.core.build import chain_from_flags
from fairaudit.core.engines import DaskEngine, LocalEngine  # noqa: E402
from fairaudit.core.plugins import Host, make_plugin_manager  # noqa: E402
from fairaudit.core.runner import run_chain  # noqa: E402
from fairaudit.errors import ConfigError, InputError  # noqa: E402


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    import shutil

    from fixture_plugins import FIXTURE_PLUGINS

    eng = DaskEngine(workers=2)
    # the fixture plugin is imported from a file path here; the workers need it as a module
    # under the same name (an installed plugin package is importable there already)
    copy = tmp_path_factory.mktemp("plugin") / "fairaudit_fixture_extras.py"
    shutil.copy(FIXTURE_PLUGINS / "extras.py", copy)
    eng.client().upload_file(str(copy))
    yield eng
    eng.close()


@pytest.fixture
def host():
    pm = make_plugin_manager(entrypoints=False)
    pm.register(load_fixture_plugin("extras"), name="extras")
    return Host(pm)


@pytest.fixture
def parts(tmp_path):
    rng = np.random.default_rng(3)
    d = tmp_path / "parts"
    d.mkdir()
    for i in range(4):
        n = 1500 + 300 * i
        sex = rng.choice(["f", "m"], size=n)
        race = rng.choice(["a", "b", "c", "d"], size=n, p=[0.5, 0.3, 0.17, 0.03])
        x1 = rng.normal(size=n) + (sex == "f") * 0.3
        pl.DataFrame({
            "sex": sex, "race": race, "x1": x1, "x2": rng.normal(size=n),
            "segment": rng.integers(0, 4, size=n),
        }).write_parquet(d / f"part-{i}.parquet")
    return d


def _numbers(run):
    return [(r["labelling"], r["metric"], r["attribute"], r["value"], r["ci"])
            for r in run.results]


def test_labels_audit_is_identical_to_the_local_engine(engine, host, parts):
    spec = chain_from_flags(host.registry, sensitive=["sex", "race"], labels="segment")
    local = run_chain(spec, host, data_path=str(parts / "*.parquet"), engine=LocalEngine())
    dask = run_chain(spec, host, data_path=str(parts / "*.parquet"), engine=engine)
    assert _numbers(dask) == _numbers(local)
    assert dask.labellings[0]["composition"] == local.labellings[0]["composition"]
    assert dask.doc["input"]["rows"] == local.doc["input"]["rows"] == 1500 * 4 + 300 * 6


def test_assignment_of_every_row_is_identical(engine, host, parts):
    spec = chain_from_flags(host.registry, sensitive=["sex"], features=["x1", "x2"],
                            clusters=["sign_predict"], sample=800, bootstrap=50)
    local = run_chain(spec, host, data_path=str(parts), engine=LocalEngine())
    dask = run_chain(spec, host, data_path=str(parts), engine=engine)
    assert _numbers(dask) == _numbers(local)
    lab = dask.labellings[0]
    assert lab["extras"]["assignment"]["rows_assigned"] == dask.doc["input"]["rows"]


def test_a_file_a_worker_cannot_read_is_named(engine, host, parts):
    bad = parts / "part-9.parquet"
    bad.write_bytes(b"PAR1" + b"\0" * 64 + b"PAR1")
    spec = chain_from_flags(host.registry, sensitive=["sex"], labels="segment")
    with pytest.raises(InputError, match="part-"):
        run_chain(spec, host, data_path=str(parts / "*.parquet"), engine=engine)


def test_in_memory_tables_are_refused(engine, host):
    spec = chain_from_flags(host.registry, sensitive=["sex"], labels="segment")
    df = pl.DataFrame({"sex": ["f", "m"] * 50, "segment": [0, 1] * 50})
    with pytest.raises(ConfigError, match="in-memory"):
        run_chain(dataclasses.replace(spec), host, data_path=df, engine=engine)
