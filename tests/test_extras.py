"""The core install and its extras (issue 37, part 4).

``pip install fairaudit-clusters`` brings what an exact audit, the built-in clusterers and the
report need; OpenDP (``[publish]``), Great Expectations (``[gx]``), Dask (``[dask]``), pandas
(``[pandas]``) and the database drivers (``[sql]``) are extras, all in ``[all]``. A feature whose
extra is missing exits 2 with the exact pip line: simulated here in a subprocess by an import
finder that answers "no module named ..." for the package and its submodules, as Python does
when it is not installed (``sys.modules[name] = None`` would do for most, but scikit-learn reads
``sys.modules["pandas"]`` itself). README.md states
the measured size of a core install (a fresh virtualenv)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import numpy as np
import polars as pl
import pytest

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
OPTIONAL = ("opendp", "great_expectations", "pandas", "dask", "distributed", "sqlalchemy")
"""Modules an exact audit, the built-in clusterers and the report never import."""


def _name(requirement: str) -> str:
    return requirement.split(";")[0].split("[")[0].split(">")[0].split("<")[0].split("=")[0] \
        .strip().lower().replace("_", "-")


def test_the_core_dependencies_leave_the_optional_worlds_out():
    core = {_name(r) for r in PYPROJECT["project"]["dependencies"]}
    for heavy in ("opendp", "great-expectations", "pandas", "dask", "sqlalchemy", "pyarrow"):
        assert heavy not in core, heavy
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert {_name(r) for r in extras["publish"]} == {"opendp"}
    assert any(r.startswith("great-expectations>=1.24,<2") for r in extras["gx"])
    assert {_name(r) for r in extras["dask"]} == {"dask"}
    assert {_name(r) for r in extras["pandas"]} == {"pandas"}


def test_all_lists_every_runtime_extra():
    """``[all]`` (what ``make demo`` and ``make test`` install) names every extra but the
    developers' own: an extra added later must be added there too."""
    extras = PYPROJECT["project"]["optional-dependencies"]
    (line,) = extras["all"]
    assert line.startswith("fairaudit-clusters[") and line.endswith("]")
    listed = set(line[len("fairaudit-clusters["):-1].split(","))
    assert listed == set(extras) - {"all", "test", "bench"}
    assert "fairaudit-clusters[all]" in extras["test"]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert '-e ".[all]"' in makefile  # make demo (with the pinned constraints)
    assert '-e ".[all,test]"' in makefile  # make test


@pytest.fixture
def table(tmp_path) -> Path:
    rng = np.random.default_rng(5)
    n = 400
    path = tmp_path / "people.parquet"
    pl.DataFrame({"sex": rng.choice(["F", "M"], size=n), "segment": rng.integers(0, 3, size=n),
                  "age": rng.normal(40, 10, size=n), "hours": rng.normal(38, 6, size=n),
                  }).write_parquet(path)
    return path


BLOCK = textwrap.dedent("""
    import sys

    class _NotInstalled:
        def __init__(self, names):
            self.names = set(names)

        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in self.names:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    def block(names):
        sys.meta_path.insert(0, _NotInstalled(names))
""")


def _cli_without(modules: tuple[str, ...], args: list[str], cwd: Path
                 ) -> subprocess.CompletedProcess[str]:
    script = BLOCK + textwrap.dedent(f"""
        block({list(modules)!r})
        from fairaudit.cli import main
        main(args={args!r}, prog_name="fairaudit")
    """)
    return subprocess.run([sys.executable, "-c", script], cwd=cwd, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.parametrize(("modules", "flags", "extra", "module"), [
    (("opendp",), ["--publish", "--ledger", "ledger.json"], "publish", "opendp"),
    (("distributed", "dask"), ["--workers", "2"], "dask", "distributed"),
])
def test_a_missing_extra_exits_2_with_the_pip_line(table, tmp_path, modules, flags, extra,
                                                   module):
    proc = _cli_without(modules, ["audit", str(table), "--sensitive", "sex", "--labels",
                                  "segment", "--out", "r.html", *flags], tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert f"pip install 'fairaudit-clusters[{extra}]'" in proc.stderr, proc.stderr
    assert f"needs {module}, which is not installed" in proc.stderr
    assert "Traceback" not in proc.stderr
    # nothing written, no ledger begun: the check comes before any work
    assert sorted(p.name for p in tmp_path.iterdir()) == ["people.parquet"]


def test_the_gx_integration_without_gx_names_its_extra(tmp_path):
    script = BLOCK + textwrap.dedent("""
        block(["great_expectations"])
        from fairaudit.errors import MissingExtraError
        try:
            import fairaudit.gx.expectations
        except MissingExtraError as exc:
            assert isinstance(exc, ImportError) and exc.exit_code == 2
            print(exc)
        else:
            raise SystemExit("imported without GX")
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "pip install 'fairaudit-clusters[gx]'" in proc.stdout


@pytest.mark.parametrize("blocked", [False, True], ids=["installed", "not-installed"])
def test_the_core_path_needs_no_optional_package(tmp_path, table, blocked):
    """An exact audit with a built-in clusterer, its report, the saved JSON read back and
    compared: it runs with every optional package refused (as in a core install), and with them
    installed it imports none of them (scikit-learn itself imports pandas when it is installed:
    not counted)."""
    script = BLOCK + textwrap.dedent(f"""
        if {blocked!r}:
            block({list(OPTIONAL)!r})
        import fairaudit
        from fairaudit.cli import main
        run = fairaudit.audit({str(table)!r}, sensitive="sex", bootstrap=20,
                              cluster=[("kmeans", {{"n_clusters": 3}})],
                              features=["age", "hours"], skip_audit=["proxy"])
        fairaudit.write_report(run, "r.html")
        back = fairaudit.load("r.json")
        back.to_polars(), back.verdicts, back._repr_html_(), repr(back)
        try:
            main(args=["compare", "r.json", "r.json", "--out", "c.html"], prog_name="fairaudit")
        except SystemExit as exc:
            assert exc.code == 0, exc.code
        loaded = sorted(m for m in {list(OPTIONAL)!r} if m in sys.modules)
        print("loaded:", [m for m in loaded if m != "pandas"])
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "loaded: []" in proc.stdout, proc.stdout
    assert (tmp_path / "r.html").is_file() and (tmp_path / "c.html").is_file()
