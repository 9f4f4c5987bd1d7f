"""The wheel ships what an installed fairaudit needs: the built-in plugins (as the top-level
package ``fairaudit_builtins``, never ``plugins``), the templates, the demo data and the entry
points."""

from __future__ import annotations

import configparser
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--no-index", "-q", "-w", str(out), str(ROOT)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if proc.returncode != 0 and "No module named" in proc.stderr and "hatchling" in proc.stderr:
        pytest.skip("hatchling is not installed (pip install hatchling)")
    assert proc.returncode == 0, proc.stderr
    wheels = list(out.glob("fairaudit_clusters-*.whl"))
    assert len(wheels) == 1, wheels
    with zipfile.ZipFile(wheels[0]) as zf:
        yield zf


def _names(zf: zipfile.ZipFile) -> list[str]:
    return zf.namelist()


def test_builtin_plugins_are_shipped_as_their_own_package(wheel):
    names = _names(wheel)
    for module in ("__init__", "io", "clusterers", "auditors", "sections"):
        assert f"fairaudit_builtins/{module}.py" in names
    top_level = {n.split("/")[0] for n in names}
    assert "plugins" not in top_level, "the wheel installs a top-level 'plugins' package"
    assert not any(n.startswith("plugins/") for n in names)
    assert top_level <= {"fairaudit", "fairaudit_builtins"} | {
        t for t in top_level if t.endswith(".dist-info")
    }, top_level


def test_templates_and_demo_data_are_inside_the_package(wheel):
    names = set(_names(wheel))
    assert "fairaudit/templates/base.html.j2" in names
    section_templates = [n for n in names if n.startswith("fairaudit/templates/sections/")]
    assert section_templates
    src = {p.relative_to(ROOT / "templates").as_posix() for p in (ROOT / "templates").rglob("*")
           if p.is_file()}  # fmt: skip
    assert {f"fairaudit/templates/{s}" for s in src} <= names
    assert "fairaudit/demo_data/adult_sample.parquet" in names
    data = wheel.read("fairaudit/demo_data/adult_sample.parquet")
    assert data[:4] == b"PAR1"
    assert data == (ROOT / "examples" / "data" / "adult_sample.parquet").read_bytes()


def test_entry_points(wheel):
    ep_file = next(n for n in _names(wheel) if n.endswith(".dist-info/entry_points.txt"))
    parser = configparser.ConfigParser()
    parser.optionxform = str  # keep case
    parser.read_string(wheel.read(ep_file).decode("utf-8"))
    from fairaudit.core.plugins import DEFAULT_PLUGINS

    assert dict(parser["fairaudit"]) == {name: module for name, module in DEFAULT_PLUGINS}
    assert parser["console_scripts"]["fairaudit"] == "fairaudit.cli:run"  # main, then a fast exit
    # the pytest plugin is opt-in (-p fairaudit.testing): no pytest11 entry point
    assert "pytest11" not in parser


def test_metadata_pins_great_expectations_in_its_extra(wheel):
    """GX is the [gx] extra (not a core dependency), pinned to the 1.x it is tested with."""
    meta = next(n for n in _names(wheel) if n.endswith(".dist-info/METADATA"))
    text = wheel.read(meta).decode("utf-8")
    requires = [line for line in text.splitlines() if line.startswith("Requires-Dist:")]
    gx = [r for r in requires if "great-expectations" in r]
    assert gx and all("extra ==" in r for r in gx), gx  # [gx], and [all] / [test] that hold it
    assert any("extra == 'gx'" in r or 'extra == "gx"' in r for r in gx), gx
    assert "<2" in gx[0] and ">=1.24" in gx[0]
    core = [r for r in requires if "extra ==" not in r]
    assert not any(name in r for r in core for name in ("opendp", "great-expectations", "pandas",
                                                          "dask")), core
    assert "Provides-Extra: all" in text and "Provides-Extra: publish" in text


def test_no_stray_files(wheel):
    bad = [n for n in _names(wheel) if "__pycache__" in n or n.endswith((".pyc", ".tmp"))]
    assert not bad
    assert not any(n.startswith(("tests/", "benchmarks/")) for n in _names(wheel))


def test_licence_types_and_metadata(wheel):
    names = _names(wheel)
    lic = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    assert lic, "LICENSE is not in the wheel"
    assert b"Apache License" in wheel.read(lic[0])
    assert "fairaudit/py.typed" in names
    assert "fairaudit/__main__.py" in names
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = wheel.read(meta).decode("utf-8")
    assert "Name: fairaudit-clusters" in text.splitlines()
    assert "License-Expression: Apache-2.0" in text
    assert "Typing :: Typed" in text
    assert any(line.startswith("Project-URL: Source,") for line in text.splitlines())
    requires = [line for line in text.splitlines() if line.startswith("Requires-Dist:")]
    assert not any(r.split()[1].lower() == "pot" for r in requires), "POT is a core dependency"


def test_sdist_has_the_licence(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "hatchling", "build", "-t", "sdist", "-d",
                           str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0 and "No module named" in proc.stderr:
        pytest.skip("hatchling is not installed (pip install hatchling)")
    assert proc.returncode == 0, proc.stderr
    import tarfile

    [sdist] = tmp_path.glob("fairaudit_clusters-*.tar.gz")
    with tarfile.open(sdist) as tf:
        members = tf.getnames()
    assert any(m.endswith("/LICENSE") for m in members)
    assert any(m.endswith("/fairaudit/py.typed") for m in members)
