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
    import polars as pl
    import fairaudit
    from fairaudit.cluster import (BeraFairAssignment, FairClusteringEnsemble, FairDen,
                                   FairFuzzyCMeans, FairletClustering, FairSC, LOFKMeans,
                                   VariationalFairClustering)
    from fairaudit.metrics import balance_score
    from fairaudit.preprocess import FUFS, CategoricalEncoder

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
    # issue 37: results as data, and every estimator's fitted attributes
    reveal_type(run.to_polars())
    reveal_type(run.verdicts[0].decided_by)
    reveal_type(fairaudit.load("audit.json"))
    reveal_type(FairFuzzyCMeans(n_clusters=2).fit(X, sensitive=s).labels_)
    reveal_type(FairFuzzyCMeans(n_clusters=2).fit(X, sensitive=s).memberships_)
    reveal_type(LOFKMeans(n_clusters=2).fit(X).cluster_centers_)
    reveal_type(fd.predict(X))
    reveal_type(FairClusteringEnsemble(n_clusters=2).fit(X, sensitive=s).labels_)
    reveal_type(FairSC(n_clusters=2).fit(X, sensitive=s).labels_)
    reveal_type(FairletClustering(n_clusters=2).fit(X, sensitive=s).cluster_centers_)
    reveal_type(BeraFairAssignment(n_clusters=2).fit(X, sensitive=s).labels_)
    reveal_type(VariationalFairClustering(n_clusters=2).fit(X, sensitive=s).fit_predict(X))
    reveal_type(FUFS().fit(X, sensitive=s).support_)
    reveal_type(CategoricalEncoder().fit(pl.DataFrame({"a": ["x"]})).levels_)
""")
STRICT = ("fairaudit/api.py", "fairaudit/report/results.py", "fairaudit/report/frames.py",
          "fairaudit/report/view.py", "fairaudit/report/values.py", "fairaudit/errors.py")
"""Modules held to ``mypy --strict`` (issue 37: where users look)."""
_INTP = "numpy.signedinteger[numpy._typing._nbit_base._32Bit | numpy._typing._nbit_base._64Bit]"


@pytest.mark.slow
def test_mypy_sees_the_typed_api(tmp_path):
    """A user's script under ``mypy --strict`` sees concrete types (no ``Any``) for the run,
    its frames and records, and every estimator's fitted attributes; the API modules themselves
    are ``--strict`` clean. One mypy run (imported modules followed silently)."""
    pytest.importorskip("mypy")
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    (tmp_path / "user.py").write_text(_USER_SCRIPT)
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
         "--ignore-missing-imports", "--cache-dir", str(tmp_path / ".mypy_cache"), "user.py",
         *(str(root / m) for m in STRICT)],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    revealed = re.findall(r'Revealed type is "([^"]+)"', proc.stdout)
    assert len(revealed) == 20, proc.stdout
    assert revealed[:3] == ["fairaudit.report.results.AuditRun", "int",
                            "fairaudit.cluster.fairden.FairDen"], proc.stdout
    assert revealed[3].startswith("numpy.ndarray"), proc.stdout
    assert revealed[4:6] == ["fairaudit.cluster.lofkm.LOFKMeans", "float"], proc.stdout
    assert revealed[6:9] == ["polars.dataframe.frame.DataFrame",
                             "fairaudit.report.frames.DecidedBy | None",
                             "fairaudit.report.results.AuditRun"], proc.stdout
    labels = f"numpy.ndarray[tuple[Any, ...], numpy.dtype[{_INTP}]]"
    floats = "numpy.ndarray[tuple[Any, ...], numpy.dtype[numpy.float64]]"
    assert revealed[9:] == [labels, floats, floats, labels, labels, labels, floats, labels,
                            labels, "numpy.ndarray[tuple[Any, ...], numpy.dtype[numpy.bool[bool]]]",
                            "dict[str, tuple[str, ...]]"], proc.stdout
    assert "error" not in proc.stdout, proc.stdout
    assert proc.returncode == 0, proc.stdout


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


def _conforms(value, tp) -> bool:
    """``value`` is of the annotated type ``tp`` (the forms the estimators' annotations use)."""
    import types
    import typing

    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is typing.Any:
        return True
    if tp is type(None):
        return value is None
    if origin in (typing.Union, types.UnionType):
        return any(_conforms(value, a) for a in args)
    if origin is np.ndarray:  # NDArray[X] = ndarray[shape, dtype[X]]
        want = typing.get_args(args[1])[0]
        return isinstance(value, np.ndarray) and (want is typing.Any or value.dtype.type is want)
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_conforms(v, args[0]) for v in value)
        return len(args) == len(value) and all(map(_conforms, value, args))
    if origin is list:
        return isinstance(value, list) and all(_conforms(v, args[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(
            _conforms(k, args[0]) and _conforms(v, args[1]) for k, v in value.items())
    if tp is float:  # PEP 484: an int is accepted where a float is
        return isinstance(value, float | int) and not isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, origin or tp)


def _fitted_estimators():
    from fairaudit.cluster import (
        BeraFairAssignment,
        FairClusteringEnsemble,
        FairDen,
        FairFuzzyCMeans,
        FairletClustering,
        FairSC,
        LOFKMeans,
        VariationalFairClustering,
    )
    from fairaudit.preprocess import FUFS, CategoricalEncoder

    rng = np.random.default_rng(0)
    n = 120
    X = np.vstack([rng.normal(0, 1, (n // 2, 3)), rng.normal(4, 1, (n // 2, 3))])
    s = rng.integers(0, 2, n)
    fair = [FairDen(n_clusters=2, random_state=0), FairFuzzyCMeans(n_clusters=2, random_state=0),
            FairFuzzyCMeans(n_clusters=2, fair=False, random_state=0),
            FairClusteringEnsemble(n_clusters=2, bases="kmeans", random_state=0),
            FairSC(n_clusters=2, random_state=0), FairletClustering(n_clusters=2, random_state=0),
            FairletClustering(n_clusters=2, fair=False, random_state=0),
            BeraFairAssignment(n_clusters=2, random_state=0),
            VariationalFairClustering(n_clusters=2, random_state=0)]
    for est in fair:
        yield est.fit(X, sensitive=s), X, s
    for est in (LOFKMeans(n_clusters=2, random_state=0),
                LOFKMeans(n_clusters=2, variant="paper", random_state=0),
                LOFKMeans(n_clusters=2, fair=False, random_state=0)):
        yield est.fit(X), X, None
    yield FUFS(n_features_to_select=2).fit(X, sensitive=s), X, s
    frame = pl.DataFrame({"a": ["x", "y", "x", "z"], "b": [1.0, 2.0, 3.0, 5.0]})
    yield CategoricalEncoder().fit(frame), frame, None


def test_fitted_attributes_are_what_their_annotations_say():
    """The types mypy shows users are promises: every public fitted attribute (``name_``) of
    every estimator is annotated, and its value is of that type (labels are ``np.intp``,
    centres and memberships ``float64``, ...), on fair and ``fair=False`` fits alike."""
    import typing
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = list(_fitted_estimators())
    for est, X, s in fitted:
        hints = typing.get_type_hints(type(est))
        public = {k for k in vars(est) if k.endswith("_") and not k.startswith("_")}
        assert public, type(est).__name__
        missing = public - set(hints)
        assert not missing, f"{type(est).__name__}: fitted attributes without a type: {missing}"
        for name in sorted(public):
            assert _conforms(getattr(est, name), hints[name]), (
                f"{type(est).__name__}.{name}: {getattr(est, name)!r:.80} is not {hints[name]}")
        if hasattr(est, "predict"):
            import inspect

            takes = "sensitive" in inspect.signature(est.predict).parameters
            pred = est.predict(X, sensitive=s) if takes and s is not None else est.predict(X)
            assert pred.dtype.type is np.intp, (type(est).__name__, pred.dtype)
