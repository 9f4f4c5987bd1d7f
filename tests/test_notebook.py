"""A run at home in a notebook (issue 37): ``examples/notebook.ipynb`` executed in a real Jupyter
kernel (nbclient + ipykernel), its last expression ``run`` displayed as the answer-first view.

The kernel may start slowly on a loaded machine: generous timeouts, no wall-time assertion. The
notebook runs in its own ``tmp_path`` copy (with the bundled data), the kernel's runtime and
IPython folders there too: nothing shared between xdist workers; the kernel's ports are chosen
free by jupyter_client.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _outputs(cell) -> dict[str, str]:
    """The mime bundle of a code cell's result (``execute_result`` or ``display_data``)."""
    for out in cell.get("outputs") or ():
        if out.get("output_type") in ("execute_result", "display_data"):
            return dict(out["data"])
    return {}


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    import os

    work = tmp_path_factory.mktemp("notebook")
    shutil.copy(EXAMPLES / "notebook.ipynb", work / "notebook.ipynb")
    (work / "data").mkdir()
    shutil.copy(EXAMPLES / "data" / "adult_sample.parquet", work / "data")
    nb = nbformat.read(work / "notebook.ipynb", as_version=4)
    # the kernel's own environment (this process's is left alone)
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(work / "runtime"),
           "IPYTHONDIR": str(work / "ipython"), "MPLBACKEND": "agg"}
    client = nbclient.NotebookClient(
        nb, timeout=900, startup_timeout=600, kernel_name="python3",
        resources={"metadata": {"path": str(work)}})
    client.execute(env=env)
    return nb, work


def _cell(nb, source_start: str):
    return next(c for c in nb.cells if c.cell_type == "code" and c.source.startswith(source_start))


def test_the_last_expression_shows_the_answer_first_view(executed):
    import fairaudit

    nb, work = executed
    bundle = _outputs(_cell(nb, "run = fairaudit.audit("))
    assert {"text/html", "text/markdown", "text/plain"} <= set(bundle), sorted(bundle)
    html = bundle["text/html"]
    assert html.lstrip().startswith('<div class="fairaudit-view">'), html[:200]
    assert "<script" not in html.lower()
    # the answer: a verdict per attribute, the deciding cell, the number and its interval
    saved = fairaudit.load(work / "audit.json")
    assert saved.verdicts, "the audit has verdicts"
    for v in saved.verdicts:
        assert f"<strong>{v.attribute}</strong>" in html
        assert v.verdict in html
        assert v.decided_by is not None and v.decided_by.metric in html
        if v.decided_by.ci_low is not None:
            assert f"[{v.decided_by.ci_low:.3f}, {v.decided_by.ci_high:.3f}]" in html
    # what the kernel displayed is the view of the document it saved
    assert html == saved._repr_html_()
    assert bundle["text/plain"] == repr(saved)
    assert bundle["text/markdown"] == saved._repr_markdown_()
    assert "This report contains exact counts" in bundle["text/plain"]


def test_the_notebook_reads_results_as_data(executed):
    nb, work = executed
    records = _outputs(_cell(nb, "[(v.attribute"))["text/plain"]
    doc = json.loads((work / "audit.json").read_text(encoding="utf-8"))
    for v in doc["verdicts"]:
        assert f"('{v['attribute']}', '{v['labelling']}', '{v['verdict']}'" in records
    frame = _outputs(_cell(nb, "results = run.to_polars()"))
    assert "text/html" in frame and "ci_low" in frame["text/html"]  # polars' own HTML table
    n_head = sum(1 for r in doc["results"] if r["headline"])
    assert re.search(rf"shape: \({n_head}, 7\)", frame["text/plain"]), frame["text/plain"][:200]
    assert _outputs(_cell(nb, "html_path, json_path ="))["text/plain"] == "True"
    assert (work / "audit.html").stat().st_size > 0
