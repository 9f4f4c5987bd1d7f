"""Shared fixtures: a built-ins-only host, a seeded synthetic table, its Parquet file, the CLI."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import settings

# fairaudit's pytest plugin is opt-in (no pytest11 entry point): its fixtures
# (fairaudit_host, fairaudit_data) are loaded here, as a plugin author's conftest.py would.
pytest_plugins = ["fairaudit.testing"]

# Never let GX phone home, whatever the test does.
os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
# OpenMP threads (scikit-learn's k-means) sleep instead of spinning while they wait: on a shared,
# loaded machine the spinning made k-means 100x slower (issue 25: the LOFKM test files took 504 s
# at load 15, 45 s with this; docs/benchmarks.md). Read once, when libgomp loads: set before any
# test imports scikit-learn. Results do not depend on it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# Hypothesis in CI: the same examples on every run (derandomize), so a run cannot flake, and no
# example database carried between runs. Loaded when CI is set (CI services set it; the lead
# runs `CI=true bash .ci/run`); HYPOTHESIS_PROFILE names another profile. Locally the default
# profile keeps exploring.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "default"))

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_DATA = ROOT / "examples" / "data" / "adult_sample.parquet"


def make_synthetic(n: int = 2000, seed: int = 0) -> pl.DataFrame:
    """Seeded table with a planted imbalance: segment 0 is 80% F, the others 20% F."""
    rng = np.random.default_rng(seed)
    segment = rng.integers(0, 3, size=n)
    p_f = np.where(segment == 0, 0.8, 0.2)
    sex = np.where(rng.random(n) < p_f, "F", "M")
    race = rng.choice(["a", "b", "c"], size=n, p=[0.6, 0.3, 0.1])
    centres = np.array([[0.0, 0.0], [5.0, 5.0], [-5.0, 5.0]])
    X = centres[segment] + rng.normal(size=(n, 2))
    return pl.DataFrame(
        {
            "customer_id": np.arange(n),
            "x1": X[:, 0],
            "x2": X[:, 1],
            "channel": rng.choice(["web", "store"], size=n),
            "sex": sex,
            "race": race,
            "segment": segment,
        }
    )


@pytest.fixture(autouse=True)
def _own_state_home(tmp_path_factory, monkeypatch):
    """Every test gets its own ``$XDG_STATE_HOME`` (the default privacy ledger lives there): no
    test reads or spends the user's own ledger, and tests running in parallel (pytest-xdist)
    never share one."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))


@pytest.fixture
def host():
    """A host with the built-in plugins only (no entry points)."""
    from fairaudit.core.plugins import Host

    return Host.create(entrypoints=False)


@pytest.fixture
def synthetic() -> pl.DataFrame:
    return make_synthetic()


@pytest.fixture
def parquet_path(tmp_path: Path, synthetic: pl.DataFrame) -> Path:
    path = tmp_path / "customers.parquet"
    synthetic.write_parquet(path)
    return path


@pytest.fixture
def cli():
    from click.testing import CliRunner

    return CliRunner()


@pytest.fixture
def run_cli(cli, tmp_path):
    """Invoke the CLI in tmp_path; returns the click Result."""
    from fairaudit.cli import main

    def _run(*args: str):
        cwd = os.getcwd()
        os.chdir(tmp_path)
        try:
            return cli.invoke(main, [str(a) for a in args], catch_exceptions=False)
        finally:
            os.chdir(cwd)

    return _run


# The clustering tests' fixture that forces FairDen's Borůvka pivot search (kept here, not in a
# tests/cluster/conftest.py: a second module named `conftest` shadows this one for the test
# modules that import helpers from it).
@pytest.fixture
def pivot_calls(monkeypatch) -> list:
    """Force the Borůvka pivot search onto small data (components of a few dozen points far
    apart, every pass run, deep k-NN queries capped); returns a list that gets one entry per
    pivot search."""
    import fairaudit.cluster._boruvka as bo
    import fairaudit.cluster._boruvka_scans as bs

    monkeypatch.setattr(bo, "_PIVOT_MIN_QUERY", 8)
    monkeypatch.setattr(bo, "_FINISH_ENTRIES", 0)
    monkeypatch.setattr(bo, "_PIVOT_GRAPH_K", 4)
    monkeypatch.setattr(bo, "_PIVOT_GAP", 0.5)
    monkeypatch.setattr(bo, "_GLOBAL_CAP", 16)
    monkeypatch.setattr(bs, "_BALL_MAX_ATOMS", 0)  # the ball bounds first would settle them
    calls: list = []
    real = bo._resolve_component_pivots
    monkeypatch.setattr(
        bo, "_resolve_component_pivots", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    return calls


# ------------------------------------------------------------ signals without racing the clock
_SIGNAL_CHILD = """
import os, sys, time
_ready_fd = int(sys.argv[1])
def ready():
    '''Announce on the pipe that the run reached the phase under test, then wait for the
    parent's signal (a Python signal handler interrupts the sleep).'''
    os.write(_ready_fd, b"ready\\n")
    os.close(_ready_fd)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        time.sleep(0.01)
    os._exit(97)  # the signal never came
{patch}
from fairaudit.cli import main
sys.argv = ["fairaudit", *sys.argv[2:]]
main()
"""


def signal_when_ready(patch: str, sig: str, args: list[str], *, env: dict | None = None,
                      timeout: float = 600.0):
    """Run ``fairaudit ARGS`` in a child whose ``patch`` (Python source) calls ``ready()`` at the
    phase under test; send ``sig`` (a ``signal`` name) once the child said it is there, and
    return the finished ``subprocess.CompletedProcess`` (text stdout/stderr).

    The signal is sent only after the child reached the phase and waits in it, so the test
    means the same on an idle and on a loaded machine (no sleep, no race). A child that never
    reaches the phase is not signalled: its exit code and stderr say why."""
    import select
    import signal
    import subprocess
    import sys
    import tempfile

    read_fd, write_fd = os.pipe()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", _SIGNAL_CHILD.format(patch=patch), str(write_fd), *args],
            pass_fds=(write_fd,), stdout=out, stderr=err, env=env, text=True)
        os.close(write_fd)
        try:
            with os.fdopen(read_fd, "rb") as marker:
                ready = select.select([marker], [], [], timeout)[0]
                line = marker.readline() if ready else b""
            if line == b"ready\n":
                proc.send_signal(getattr(signal, sig))
            proc.wait(timeout=timeout)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out.read(), err.read())
