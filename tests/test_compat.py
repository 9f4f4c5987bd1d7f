"""Old module names (before issue 24's sub-packages) import with a DeprecationWarning and give
the new module itself; a third-party plugin written against them keeps working."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from fairaudit._compat import MOVED


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_name_is_the_new_module(old):
    new = importlib.import_module(MOVED[old])
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=rf"{old} moved to {MOVED[old]}"):
        module = importlib.import_module(old)
    assert module is new
    assert module.__spec__.name == MOVED[old]  # the module keeps its own spec


def test_from_import_of_a_moved_name_points_at_the_caller():
    code = ("import warnings; warnings.simplefilter('error')\n"
            "from fairaudit.components import Clusterer\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 1
    assert 'File "<string>", line 2' in out.stderr
    assert "fairaudit.components moved to fairaudit.core.components" in out.stderr


def test_old_report_module_names():
    from fairaudit.report import render

    with pytest.warns(DeprecationWarning, match="fairaudit.report.render_html moved"):
        from fairaudit.report import render_html
    assert render_html is render.render_html
    from fairaudit.report import charts  # a submodule: no warning

    assert charts.__name__ == "fairaudit.report.charts"


def test_every_moved_module_exists():
    for new in MOVED.values():
        assert importlib.util.find_spec(new) is not None, new


def test_the_deprecation_names_the_next_minor_release_of_this_version():
    """It said 'fairaudit 0.2' as if the move happened there, while this is 0.1.0: the old
    names go in the next minor release after the installed version."""
    import fairaudit
    from fairaudit._compat import removal_release, warn_moved

    major, minor = (int(x) for x in fairaudit.__version__.split(".")[:2])
    assert removal_release() == f"fairaudit {major}.{minor + 1}"
    assert removal_release("0.1.0") == "fairaudit 0.2"
    assert removal_release("1.4.2rc1") == "fairaudit 1.5"
    assert removal_release("dev") == "a future release"
    with pytest.warns(DeprecationWarning) as rec:
        warn_moved("fairaudit.x", "fairaudit.core.x")
    assert str(rec[0].message) == ("fairaudit.x moved to fairaudit.core.x; import it from there: "
                                   f"the old name will be removed in {removal_release()}")
