"""Property: whatever the shape of the table, ``fairaudit audit`` exits 0, 1 or 2 — never 3 — and
an exit 2 names its culprit (a column, the file or a flag) in a short message.

Hypothesis draws the tables people have: column types (numbers, strings, booleans, categories,
lists, structs), nulls, names (empty, unicode, spaces), 0 to a few thousand rows, Parquet or
CSV, one file or hive partitions / a folder of files. The named cases live in
tests/test_bad_input.py; this test looks for the ones nobody named. Bounded (30 examples) so CI
stays fast.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

NAMES = st.sampled_from(["", "x", "Größe", "名前", "a b", "value", "id", "Unnamed: 0", "s,t",
                         "year", "ñ"])
KINDS = ("float", "int", "str", "bool", "cat", "nulls", "list", "struct", "const", "id")


def _column(kind: str, n: int, rng: np.random.Generator, null_rate: float) -> pl.Series:
    mask = rng.random(n) < null_rate
    if kind == "float":
        values = [None if m else float(v) for m, v in zip(mask, rng.normal(size=n), strict=True)]
        return pl.Series(values, dtype=pl.Float64)
    if kind == "int":
        return pl.Series([None if m else int(v) for m, v in
                          zip(mask, rng.integers(-3, 50, size=n), strict=True)], dtype=pl.Int64)
    if kind in ("str", "cat"):
        s = pl.Series([None if m else str(v) for m, v in
                       zip(mask, rng.choice(["a", "b", "ç", "", " x"], size=n), strict=True)],
                      dtype=pl.String)
        return s.cast(pl.Categorical) if kind == "cat" else s
    if kind == "bool":
        return pl.Series([None if m else bool(v) for m, v in
                          zip(mask, rng.random(n) < 0.5, strict=True)], dtype=pl.Boolean)
    if kind == "nulls":
        return pl.Series([None] * n, dtype=pl.String)
    if kind == "list":
        return pl.Series([[int(v), 1] for v in rng.integers(0, 3, size=n)],
                         dtype=pl.List(pl.Int64))
    if kind == "struct":
        return pl.Series([{"a": int(v), "b": "z"} for v in rng.integers(0, 3, size=n)])
    if kind == "const":
        return pl.Series(["same"] * n, dtype=pl.String)
    return pl.Series([f"p{i}" for i in range(n)], dtype=pl.String)  # id


@st.composite
def tables(draw):
    n = draw(st.one_of(st.integers(0, 40), st.integers(41, 3000)))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    null_rate = draw(st.sampled_from([0.0, 0.0, 0.05, 0.5]))
    sens_kind = draw(st.sampled_from(["str", "int", "bool", "cat", "float", "nulls", "list",
                                      "const", "id"]))
    lab_kind = draw(st.sampled_from(["int", "str", "cat", "float", "nulls", "struct", "const"]))
    extra = draw(st.lists(st.tuples(NAMES, st.sampled_from(KINDS)), max_size=4))
    fmt = draw(st.sampled_from(["parquet", "csv"]))
    layout = draw(st.sampled_from(["file", "file", "hive", "folder"]))
    cols = {"sex": _column(sens_kind, n, rng, null_rate)}
    cols["segment"] = (pl.Series(rng.integers(-1, 4, size=n), dtype=pl.Int64)
                       if lab_kind == "int" and null_rate == 0 else
                       _column(lab_kind, n, rng, null_rate))
    cols["grp"] = _column("str", n, rng, 0.0)
    for name, kind in extra:
        if name not in cols:
            cols[name] = _column(kind, n, rng, null_rate)
    if fmt == "csv":  # CSV holds no nested values
        cols = {k: v for k, v in cols.items()
                if not (v.dtype.is_nested())}
    frame = pl.DataFrame([v.alias(k) for k, v in cols.items()])
    sensitive = draw(st.sampled_from(["sex", "sex,grp", "grp", *[k for k in cols if k][:2]]))
    labels = draw(st.sampled_from(["segment", "segment", *[k for k in cols if k][:1]]))
    return frame, fmt, layout, sensitive, labels


def _write(frame: pl.DataFrame, fmt: str, layout: str, root) -> str:
    def one(f: pl.DataFrame, path) -> None:
        if fmt == "parquet":
            f.write_parquet(path)
        else:
            f.write_csv(path)

    if layout == "file" or frame.height < 2:
        path = root / f"t.{fmt}"
        one(frame, path)
        return str(path)
    half = frame.height // 2
    parts = (frame.head(half), frame.tail(frame.height - half))
    folder = root / "data"
    for i, part in enumerate(parts):
        sub = folder / f"part={i}" if layout == "hive" else folder
        sub.mkdir(parents=True, exist_ok=True)
        one(part, sub / f"{i}.{fmt}")
    return str(folder)


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(case=tables())
def test_any_table_shape_exits_0_1_or_2_naming_the_culprit(case, tmp_path_factory):
    from click.testing import CliRunner

    from fairaudit.cli import main

    frame, fmt, layout, sensitive, labels = case
    root = tmp_path_factory.mktemp("shape")
    data = _write(frame, fmt, layout, root)
    out = root / "out"
    out.mkdir()
    args = ["audit", data, "--sensitive", sensitive, "--labels", labels, "--bootstrap", "0",
            "--skip-audit", "proxy", "-o", str(out / "r.html")]
    r = CliRunner().invoke(main, args, catch_exceptions=False)
    assert r.exit_code in (0, 1, 2), (args, frame.schema, r.output)
    assert "Traceback" not in r.output
    if r.exit_code == 2:
        err = r.stderr.strip()
        assert err.startswith("error:") and len(err.splitlines()) <= 6, err
        culprits = [repr(c) for c in frame.columns] + [data, "--sensitive", "--labels",
                                                       "--skip-audit"]
        culprits += [p.name for p in root.rglob(f"*.{fmt}")]
        assert any(c in err for c in culprits), (args, err)
        assert list(out.iterdir()) == []
    else:
        assert (out / "r.json").is_file()


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_the_strategy_covers_an_audit_that_runs(tmp_path, fmt):
    """The property above is not vacuous: a plain drawn-like table audits (exit 0)."""
    from click.testing import CliRunner

    from fairaudit.cli import main

    rng = np.random.default_rng(0)
    frame = pl.DataFrame({"sex": _column("str", 300, rng, 0.0), "segment":
                          pl.Series(rng.integers(0, 3, size=300)), "": _column("id", 300, rng, 0),
                          "Größe": _column("float", 300, rng, 0.0)})
    data = _write(frame, fmt, "hive", tmp_path)
    r = CliRunner().invoke(main, ["audit", data, "-s", "sex,part", "--labels", "segment",
                                  "--bootstrap", "0", "-o", str(tmp_path / "r.html")])
    assert r.exit_code == 0, r.output
