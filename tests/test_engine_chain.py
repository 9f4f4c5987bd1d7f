"""The chain's [engine] table: parsing and validation, precedence of the command line, and the
same JSON numbers whether the engine comes from the TOML, the flags or nowhere (local)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from fairaudit.core.chain import load_chain, parse_chain
from fairaudit.core.engines import DaskEngine, LocalEngine, engine_for
from fairaudit.core.spec import EngineSpec
from fairaudit.errors import ConfigError


def _problems(doc):
    return dict(parse_chain(doc).problems)


# ------------------------------------------------------------------------------ parsing
@pytest.mark.parametrize("table, expected", [
    ({}, EngineSpec()),
    ({"name": "local"}, EngineSpec()),
    ({"name": "dask"}, EngineSpec("dask")),
    ({"name": "dask", "workers": 2}, EngineSpec("dask", None, 2)),
    ({"workers": 3}, EngineSpec("dask", None, 3)),  # name implied
    ({"scheduler": "tcp://10.0.0.5:8786"}, EngineSpec("dask", "tcp://10.0.0.5:8786")),
    ({"scheduler": "scheduler-host:8786"}, EngineSpec("dask", "scheduler-host:8786")),
])
def test_engine_table_is_parsed(table, expected):
    spec = parse_chain({"engine": table})
    assert spec.problems == ()
    assert spec.engine == expected


def test_no_engine_table_is_local():
    assert parse_chain({}).engine == EngineSpec("local", None, None)


@pytest.mark.parametrize("table, path, words", [
    ({"name": "spark"}, "engine.name", "'local', 'dask'; got 'spark'"),
    ({"name": 1}, "engine.name", "got 1"),
    ({"workers": 0}, "engine.workers", "an int in [1, 1024]; got 0"),
    ({"workers": "2"}, "engine.workers", "got '2'"),
    ({"workers": True}, "engine.workers", "got True"),
    ({"workers": 1.5}, "engine.workers", "got 1.5"),
    ({"scheduler": ""}, "engine.scheduler", "address"),
    ({"scheduler": 8786}, "engine.scheduler", "got 8786"),
    ({"scheduler": "http://host:8786"}, "engine.scheduler", "tcp://host:8786"),
    ({"scheduler": "tcp://host :8786"}, "engine.scheduler", "no spaces"),
    ({"scheduler": "tcp://h:1", "workers": 2}, "engine", "not both"),
    ({"name": "local", "workers": 2}, "engine.workers", "only for name = 'dask'"),
    ({"name": "local", "scheduler": "tcp://h:1"}, "engine.scheduler", "only for name"),
    ({"worker": 2}, "engine.worker", "did you mean workers"),
    ({"address": "tcp://h:1"}, "engine.address", "unknown key"),
])
def test_bad_engine_values_are_named(table, path, words):
    problems = _problems({"engine": table})
    assert path in problems, problems
    assert words in problems[path]


def test_engine_must_be_a_table():
    assert "must be a table" in _problems({"engine": "dask"})["engine"]


# ------------------------------------------------------------------------------ precedence
def test_precedence_without_dask():
    # local everywhere: no Dask needed
    assert isinstance(engine_for(None, env={}), LocalEngine)
    assert isinstance(engine_for(EngineSpec(), env={}), LocalEngine)
    assert isinstance(engine_for(EngineSpec("dask", None, 2), name="local", env={}), LocalEngine)
    assert isinstance(engine_for(EngineSpec("dask", None, 2), name="local",
                                 env={"DASK_SCHEDULER_ADDRESS": "tcp://h:1"}), LocalEngine)
    # the Python API does not pick up the environment unless Dask is asked for
    assert isinstance(engine_for(EngineSpec(), env={"DASK_SCHEDULER_ADDRESS": "tcp://h:1"},
                                 env_default=False), LocalEngine)
    with pytest.raises(ConfigError, match="drop --scheduler/--workers"):
        engine_for(None, name="local", workers=2, env={})
    with pytest.raises(ConfigError, match="engine.name = 'dask': say where to run"):
        engine_for(EngineSpec("dask"), env={})
    with pytest.raises(ConfigError, match="--engine dask: say where"):
        engine_for(EngineSpec(), name="dask", env={})
    with pytest.raises(ConfigError, match="not both"):
        engine_for(None, scheduler="tcp://h:1", workers=2, env={})


def test_precedence_with_dask():
    pytest.importorskip("distributed")
    env = {"DASK_SCHEDULER_ADDRESS": "tcp://from-env:8786"}
    toml = EngineSpec("dask", None, 3)

    def where(eng):
        assert isinstance(eng, DaskEngine)  # nothing is started before the first pass
        return (eng.scheduler, eng.workers)

    assert where(engine_for(toml, env={})) == (None, 3)
    assert where(engine_for(EngineSpec("dask", "tcp://t:1"), env={})) == ("tcp://t:1", None)
    assert where(engine_for(toml, workers=2, env=env)) == (None, 2)  # flag > env > file
    assert where(engine_for(toml, scheduler="tcp://f:1", env=env)) == ("tcp://f:1", None)
    assert where(engine_for(toml, env=env)) == ("tcp://from-env:8786", None)
    assert where(engine_for(EngineSpec(), env=env)) == ("tcp://from-env:8786", None)
    assert where(engine_for(EngineSpec("dask"), env=env, env_default=False)) == (
        "tcp://from-env:8786", None)
    assert where(engine_for(toml, name="dask", env={})) == (None, 3)


# ------------------------------------------------------------------------------ CLI
def _write_chain(path: Path, engine: str = "") -> Path:
    path.write_text(
        '[data]\nsensitive = ["sex", "race"]\nfeatures = ["x1", "x2"]\nsample = 900\nseed = 5\n'
        '[options]\nbootstrap = 40\n'
        '[[preprocess]]\nuse = "encode"\n'
        '[[cluster]]\nuse = "kmeans"\nparams = { n_clusters = 3 }\n'
        '[[audit]]\nuse = "balance"\n[[audit]]\nuse = "distribution"\n'
        + engine
    )
    return path


def test_bad_engine_in_a_chain_exits_2(run_cli, tmp_path, parquet_path):
    chain = _write_chain(tmp_path / "bad.toml", '[engine]\nname = "dask"\nworkers = -1\n')
    for args in (("validate", chain), ("run", chain, parquet_path, "-o", tmp_path / "r.html"),
                 ("audit", parquet_path, "--chain", chain, "-o", tmp_path / "r.html")):
        result = run_cli(*args)
        assert result.exit_code == 2, result.output
        assert "engine.workers" in result.output and "an int in [1, 1024]" in result.output
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "r.json").exists()
    chain = _write_chain(tmp_path / "bad2.toml", '[engine]\nnodes = 2\n')
    result = run_cli("validate", chain)
    assert result.exit_code == 2 and "engine.nodes: unknown key" in result.output


def test_dask_chain_without_an_address_exits_2(run_cli, tmp_path, parquet_path, monkeypatch):
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    chain = _write_chain(tmp_path / "c.toml", '[engine]\nname = "dask"\n')
    result = run_cli("run", chain, parquet_path, "-o", tmp_path / "r.html")
    assert result.exit_code == 2, result.output
    assert "engine.name = 'dask'" in result.output and "DASK_SCHEDULER_ADDRESS" in result.output


# ------------------------------------------------------------------------------ on a cluster
@pytest.fixture(scope="module")
def cluster():
    pytest.importorskip("distributed")
    from distributed import LocalCluster

    c = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                     dashboard_address=None)
    yield c.scheduler_address
    c.close()


@pytest.fixture
def parts(tmp_path):
    rng = np.random.default_rng(11)
    d = tmp_path / "parts"
    d.mkdir()
    for i in range(3):
        n = 1200 + 400 * i
        comp = rng.integers(0, 3, size=n)
        x = np.array([[0, 0], [4, 4], [-4, 4]])[comp] + rng.normal(size=(n, 2))
        pl.DataFrame({
            "sex": np.where(rng.random(n) < 0.3 + 0.2 * comp, "f", "m"),
            "race": rng.choice(["a", "b", "c"], size=n, p=[0.6, 0.3, 0.1]),
            "x1": x[:, 0], "x2": x[:, 1],
        }).write_parquet(d / f"part-{i}.parquet")
    return d


@pytest.fixture
def dask_passes(monkeypatch):
    """The passes the Dask engine ran (``count`` / ``assign``), in order."""
    seen: list[str] = []
    run = DaskEngine._run

    def spy(self, fn, files, what, *args):
        seen.append(what)
        return run(self, fn, files, what, *args)

    monkeypatch.setattr(DaskEngine, "_run", spy)
    return seen


def _numbers(json_path: Path):
    doc = json.loads(json_path.read_text())
    return ([(r["labelling"], r["metric"], r["attribute"], r["value"], r["ci"])
             for r in doc["results"]],
            [lab.get("extras", {}).get("assignment") for lab in doc["labellings"]],
            doc["input"]["rows"])


def test_engine_from_toml_flags_and_local_give_the_same_numbers(run_cli, tmp_path, parts,
                                                                 cluster, monkeypatch,
                                                                 dask_passes):
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    data = str(parts / "*.parquet")
    plain = _write_chain(tmp_path / "plain.toml")
    on_dask = _write_chain(tmp_path / "dask.toml", f'[engine]\nscheduler = "{cluster}"\n')
    runs = {
        "local": ("run", plain, data),
        "toml": ("run", on_dask, data),
        "flags": ("run", plain, data, "--scheduler", cluster),
        "audit-flags": ("audit", data, "--chain", plain, "--scheduler", cluster),
        "toml-overridden-local": ("run", on_dask, data, "--engine", "local"),
    }
    out = {}
    for name, args in runs.items():
        dask_passes.clear()
        result = run_cli(*args, "-o", tmp_path / f"{name}.html", "--quiet")
        assert result.exit_code in (0, 1), result.output
        out[name] = _numbers(tmp_path / f"{name}.json")
        assert dask_passes == ([] if name.endswith("local") else ["count", "assign"]), name
    results, assignment, rows = out["local"]
    assert rows == 1200 + 1600 + 2000
    assert assignment[0]["rows_assigned"] == rows and assignment[0]["rows_fitted"] == 900
    for name in runs:
        assert out[name] == out["local"], name


def test_environment_address_is_used_by_the_cli(run_cli, tmp_path, parts, cluster, monkeypatch,
                                                dask_passes):
    data = str(parts / "*.parquet")
    chain = _write_chain(tmp_path / "c.toml", '[engine]\nname = "dask"\n')
    local = run_cli("run", _write_chain(tmp_path / "p.toml"), data, "-o", tmp_path / "l.html",
                    "--quiet")
    assert local.exit_code in (0, 1), local.output
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", cluster)
    result = run_cli("run", chain, data, "-o", tmp_path / "d.html", "--quiet")
    assert result.exit_code in (0, 1), result.output
    assert _numbers(tmp_path / "d.json") == _numbers(tmp_path / "l.json")
    assert dask_passes == ["count", "assign"]


def test_python_api_takes_the_chain_engine(tmp_path, parts, cluster, monkeypatch, dask_passes):
    import fairaudit

    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    chain = _write_chain(tmp_path / "c.toml", f'[engine]\nscheduler = "{cluster}"\n')
    assert load_chain(chain).engine == EngineSpec("dask", cluster)
    data = str(parts / "*.parquet")
    a = fairaudit.audit(data, sensitive=[], chain=chain)
    assert dask_passes == ["count", "assign"]
    b = fairaudit.audit(data, sensitive=[], chain=chain, engine="local")
    assert dask_passes == ["count", "assign"]
    assert a.results == b.results
    with pytest.raises(ConfigError, match="in-memory"):
        fairaudit.audit(pl.read_parquet(data), sensitive=[], chain=chain)
