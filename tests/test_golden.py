"""Golden tests: the same inputs give the same JSON and HTML, byte for byte after normalisation.

They pin the program's observable behaviour (issue 24: "prove it is the same program") across
refactors. Each case runs the CLI (or ``fairaudit.audit``) in-process on small data and compares
its outputs with ``tests/golden/<case>.*``.

What is normalised (and only this), because it changes between machines and runs:

* JSON: ``environment`` (Python, platform, library and plugin versions) -> ``"<environment>"``;
  ``tool.version`` -> ``"<version>"``; ``timing`` (durations, creation time) -> ``"<timing>"``;
  absolute paths of the test's temporary folder and of the repository -> ``<tmp>`` / ``<root>``;
  floats are stored rounded to 9 significant digits (readable diffs).
  Compare/history documents: the same paths, versions, and dates (``date`` fields are file
  modification times, set to fixed values by the test).
* HTML: the same paths and version strings; rows of the plugin table for plugins of other
  packages (what is installed) are dropped. Inline ``<svg>`` charts are kept in full.

What is compared exactly and what within a tolerance (``tests/golden_compare.py``): the JSON as
a parsed structure — keys, list lengths, types, strings, integers, booleans and nulls exactly,
floats within a relative 1e-6 (plus 1e-12 absolute); the HTML, CSV and every JSON string as text
— the words exactly, integers (counts) exactly, decimal numbers within the same tolerance or one
unit of their last printed digit. So a headline value that changes in its 5th significant digit,
a verdict word, a count or a sentence fails the test; the last bits of floating point that BLAS
kernels, thread counts and CPUs move (seen: the 8th-9th digit) do not
(``tests/test_golden_compare.py`` shows both).

The golden files were made with Python 3.11.7, numpy 2.4.6, scipy 1.17.1, polars 2.1.0,
scikit-learn 1.9.1 on Linux x86-64 (OpenBLAS); the versions the tests install are pinned in
``constraints/test.txt``.

Regenerate after an intended change of output: ``FAIRAUDIT_UPDATE_GOLDEN=1 pytest
tests/test_golden.py`` and review the diff of ``tests/golden/``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_DATA, ROOT, make_synthetic
from golden_compare import RTOL, json_differences, text_differences

GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("FAIRAUDIT_UPDATE_GOLDEN") == "1"
_OTHER_PLUGIN_ROW = re.compile(
    r"<tr><td><code>[^<]*</code></td><td>(?!fairaudit-clusters<)[^<]*</td>"
    r"<td>(?:[^<]|<version>)*</td></tr>\n")
"""A row of the report's plugin table for a plugin of another package (e.g. the example plugin
that ``make install-test`` installs): what is installed, not what the program does."""
_FIXED_MTIMES = (1_790_000_000, 1_790_086_400, 1_790_172_800)  # 2026-09-21.. (history dates)


def _versions() -> list[str]:
    import importlib.metadata as md
    import platform
    import sys

    out = {platform.platform(), sys.version.split()[0]}
    for dist in ("fairaudit-clusters", "polars", "numpy", "scipy", "scikit-learn",
                 "great-expectations", "pluggy", "jinja2",
                 "fairaudit-example-plugin"):
        try:
            out.add(md.version(dist))
        except md.PackageNotFoundError:
            pass
    return sorted(out, key=len, reverse=True)


def _round(x: Any) -> Any:
    if isinstance(x, float):
        return float(f"{x:.9g}")
    if isinstance(x, list):
        return [_round(v) for v in x]
    if isinstance(x, dict):
        return {k: _round(v) for k, v in x.items()}
    return x


def _paths(text: str, tmp: Path) -> str:
    for p, name in ((tmp.resolve(), "<tmp>"), (tmp, "<tmp>"), (ROOT, "<root>")):
        text = text.replace(str(p), name)
    return text


def norm_json(doc: Any, tmp: Path) -> str:
    doc = json.loads(_paths(json.dumps(doc), tmp))
    if isinstance(doc, dict):
        if "environment" in doc:
            doc["environment"] = "<environment>"
        if "timing" in doc:
            doc["timing"] = "<timing>"
        if isinstance(doc.get("tool"), dict) and "version" in doc["tool"]:
            doc["tool"]["version"] = "<version>"
    return json.dumps(_round(doc), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def norm_html(html: str, tmp: Path) -> str:
    html = _paths(html, tmp)
    for v in _versions():
        html = re.sub(rf"(?<![\w.]){re.escape(v)}(?![\w.])", "<version>", html)
    return _OTHER_PLUGIN_ROW.sub("", html)


def check(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"no golden file {path}; run with FAIRAUDIT_UPDATE_GOLDEN=1"
    expected = path.read_text(encoding="utf-8")
    if name.endswith(".json"):
        diffs = json_differences(json.loads(expected), json.loads(text))
    else:
        diffs = text_differences(expected, text)
    if diffs:
        pytest.fail(f"{name} differs from the golden file (floats compared within a relative "
                    f"{RTOL:g}, everything else exactly):\n  " + "\n  ".join(diffs))


def _audit(run_cli, tmp: Path, case: str, *args: str) -> dict[str, Any]:
    html, js = tmp / f"{case}.html", tmp / f"{case}.json"
    result = run_cli(*args, "--out", str(html), "--json", str(js))
    assert result.exit_code in (0, 1), result.output
    doc = json.loads(js.read_text(encoding="utf-8"))
    check(f"{case}.json", norm_json(doc, tmp))
    check(f"{case}.html", norm_html(html.read_text(encoding="utf-8"), tmp))
    return doc


@pytest.fixture
def small_data(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    make_synthetic(n=1500, seed=0).write_parquet(a)
    make_synthetic(n=1500, seed=1).write_parquet(b)
    return a, b


def test_demo(run_cli, tmp_path):
    """What ``make demo`` runs: the default clusterers (with twins) on the example data."""
    _audit(run_cli, tmp_path, "demo", "audit", str(EXAMPLE_DATA), "--sensitive", "sex,race")


def test_labels_audit_with_gates(run_cli, tmp_path, small_data):
    _audit(run_cli, tmp_path, "labels", "audit", str(small_data[0]), "--sensitive", "sex,race",
           "--labels", "segment", "--bootstrap", "100", "--fail-under", "balance@ci=0.3",
           "--warn-over", "ed[sex]=0.1")


def test_chain_run(run_cli, tmp_path, small_data):
    _audit(run_cli, tmp_path, "chain", "run", str(ROOT / "examples/chains/audit_segments.toml"),
           str(small_data[0]))


def test_clusterers_with_twins(run_cli, tmp_path, small_data):
    _audit(run_cli, tmp_path, "twins", "audit", str(small_data[0]), "--sensitive", "sex",
           "--features", "x1,x2", "--bootstrap", "30", "--twins",
           "--cluster", "kmeans:n_clusters=3", "--cluster", "fairden:n_clusters=3,min_pts=5")


def test_python_api(tmp_path, small_data):
    import fairaudit

    run = fairaudit.audit(str(small_data[0]), sensitive=["sex"], features=["x1", "x2"],
                          cluster=[("kmeans", {"n_clusters": 3})], bootstrap=50,
                          fail_over={"ed[sex]": 0.5}, twins=False)
    check("api.json", norm_json(run.to_json(), tmp_path))


def test_compare_and_history(run_cli, tmp_path, small_data):
    docs = []
    for i, data in enumerate(small_data):
        js = tmp_path / f"run{i}.json"
        result = run_cli("audit", str(data), "--sensitive", "sex,race", "--labels", "segment",
                         "--bootstrap", "50", "--out", str(tmp_path / f"run{i}.html"),
                         "--json", str(js))
        assert result.exit_code == 0, result.output
        os.utime(js, (_FIXED_MTIMES[i], _FIXED_MTIMES[i]))
        docs.append(js)
    result = run_cli("compare", str(docs[0]), str(docs[1]), "--out", str(tmp_path / "cmp.html"),
                     "--json", str(tmp_path / "cmp.json"))
    assert result.exit_code in (0, 1), result.output
    check("compare.json", norm_json(json.loads((tmp_path / "cmp.json").read_text()), tmp_path))
    check("compare.html", norm_html((tmp_path / "cmp.html").read_text(), tmp_path))
    result = run_cli("history", str(docs[0]), str(docs[1]), "--out", str(tmp_path / "h.html"),
                     "--json", str(tmp_path / "h.json"), "--csv", str(tmp_path / "h.csv"))
    assert result.exit_code == 0, result.output
    check("history.json", norm_json(json.loads((tmp_path / "h.json").read_text()), tmp_path))
    check("history.html", norm_html((tmp_path / "h.html").read_text(), tmp_path))
    check("history.csv", _paths((tmp_path / "h.csv").read_text(), tmp_path))
