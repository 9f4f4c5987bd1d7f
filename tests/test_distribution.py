"""fairaudit as users install and use it: `python -m fairaudit`, `--verbose`, typed public API
(mypy on a user's script), and Great Expectations imported only where input checks run."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import textwrap

import numpy as np
import polars as pl
import pytest

from fairaudit import __distribution__


def test_distribution_name_and_python_m(tmp_path):
    version = importlib.metadata.version(__distribution__)
    proc = subprocess.run([sys.executable, "-m", "fairaudit", "--version"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"fairaudit, version {version}"
    meta = importlib.metadata.metadata(__distribution__)
    assert meta["Name"] == "fairaudit-clusters"


def test_verbose_logs_each_step(tmp_path, cli):
    from fairaudit.cli import main

    rng = np.random.default_rng(0)
    path = tmp_path / "t.parquet"
    pl.DataFrame({"x": rng.normal(size=200), "sex": rng.choice(["F", "M"], 200),
                  "segment": rng.integers(0, 2, 200)}).write_parquet(path)
    args = ["audit", str(path), "--sensitive", "sex", "--labels", "segment",
            "--out", str(tmp_path / "r.html")]
    quiet = cli.invoke(main, args)
    assert quiet.exit_code == 0, quiet.output
    assert "INFO fairaudit" not in quiet.output
    for flags in (["--verbose"], ["-v"]):
        loud = cli.invoke(main, [*args, *flags])
        assert loud.exit_code == 0, loud.output
        assert re.search(r"INFO fairaudit\.core\.runner: auditor balance on segment: [\d.]+ s",
                         loud.output), loud.output
    top = cli.invoke(main, ["--verbose", *args])  # also before the command
    assert "INFO fairaudit.core.runner" in top.output


_USER_SCRIPT = textwrap.dedent("""
    import numpy as np
    import fairaudit
    from fairaudit.cluster import FairDen, LOFKMeans
    from fairaudit.metrics import balance_score

    run = fairaudit.audit("customers.parquet", sensitive=["sex"], labels="segment")
    reveal_type(run)
    reveal_type(run.exit_code)
    X = np.zeros((10, 2))
    s = np.zeros(10, dtype=int)
    fd = FairDen(n_clusters=2).fit(X, sensitive=s)
    reveal_type(fd)
    reveal_type(fd.labels_)
    reveal_type(LOFKMeans(n_clusters=2).fit(X))
    reveal_type(balance_score(fd.labels_, s))
""")


@pytest.mark.slow
def test_mypy_sees_the_typed_api(tmp_path):
    pytest.importorskip("mypy")
    (tmp_path / "user.py").write_text(_USER_SCRIPT)
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--follow-imports=silent", "--ignore-missing-imports",
         "--cache-dir", str(tmp_path / ".mypy_cache"), "user.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    revealed = re.findall(r'Revealed type is "([^"]+)"', proc.stdout)
    assert revealed[:3] == ["fairaudit.report.results.AuditRun", "int",
                            "fairaudit.cluster.fairden.FairDen"], proc.stdout
    assert revealed[3].startswith("numpy.ndarray"), proc.stdout
    assert revealed[4:] == ["fairaudit.cluster.lofkm.LOFKMeans", "float"], proc.stdout
    assert "error" not in proc.stdout, proc.stdout


def test_great_expectations_only_where_input_checks_run(tmp_path):
    """The host, the registry, reports from JSON, comparisons and the algorithms never import
    GX (the input checks do, when an audit runs them)."""
    script = textwrap.dedent("""
        import sys
        import fairaudit, fairaudit.api, fairaudit.core.runner, fairaudit.cli, fairaudit.ops.compare
        import fairaudit.ops.history, fairaudit.report.render
        from fairaudit.core.plugins import Host
        from fairaudit.cluster import FairDen
        from fairaudit.metrics import balance_score
        host = Host.create()
        assert host.registry
        FairDen, balance_score
        bad = sorted(m for m in ("great_expectations", "altair", "ot") if m in sys.modules)
        assert not bad, bad
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_shell_completion_as_documented(tmp_path):
    import os
    import shutil

    exe = shutil.which("fairaudit", path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.skip("the fairaudit script is not installed beside this interpreter")
    env = {**os.environ, "_FAIRAUDIT_COMPLETE": "bash_source"}
    script = subprocess.run([exe], env=env, capture_output=True, text=True, timeout=300)
    assert "_fairaudit_completion()" in script.stdout
    env = {**os.environ, "_FAIRAUDIT_COMPLETE": "bash_complete", "COMP_WORDS": "fairaudit au",
           "COMP_CWORD": "1"}
    words = subprocess.run([exe], env=env, capture_output=True, text=True, timeout=300)
    assert "plain,audit" in words.stdout.splitlines()
