"""The host's native input checks agree with the same checks run through Great Expectations, on
the shipped data (and on damaged copies of it: nulls, NaN, infinities, fractional labels, an
unnamed column, an ID-like attribute); and an audit never imports GX."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from conftest import EXAMPLE_DATA, make_synthetic

from fairaudit.core.checks import run_input_checks as native
from fairaudit.gx.checks import run_input_checks as via_gx

DATA = Path(__file__).resolve().parent / "data"


def _counts(frame: pl.DataFrame, sensitive: list[str]) -> dict[str, dict]:
    """The host's exact group counts: per attribute and the intersection (nulls dropped)."""
    present = [s for s in sensitive if s in frame.columns]
    out = {}
    for s in present:
        g = frame.drop_nulls(s).group_by(s).len()
        out[s] = dict(zip(g[s].cast(pl.String).to_list(), g["len"].to_list(), strict=True))
    if len(present) > 1:
        key = pl.concat_str([pl.col(s).cast(pl.String) for s in present], separator="|")
        g = frame.drop_nulls(present).select(key.alias("k")).group_by("k").len()
        out["|".join(present)] = dict(zip(g["k"].to_list(), g["len"].to_list(), strict=True))
    return out


def _fixtures() -> list[tuple[str, pl.DataFrame, list[str], str | None, list[str]]]:
    adult = pl.read_parquet(EXAMPLE_DATA)
    field = pl.read_csv(DATA / "field" / "adult_sample.csv")
    fairden = pl.read_csv(DATA / "fairden" / "dataset_n_200.csv")
    synth = make_synthetic(n=600)
    rng = np.random.default_rng(1)
    feats = ["age", "education-num", "hours-per-week", "capital-gain", "workclass"]
    damaged = adult.with_columns(
        pl.when(pl.Series(rng.random(adult.height) < 0.04)).then(None)
        .otherwise(pl.col("race")).alias("race"),
        pl.Series("hours-per-week", np.where(rng.random(adult.height) < 0.01, np.nan,
                                             adult["hours-per-week"].cast(pl.Float64))),
        pl.Series("age", np.where(rng.random(adult.height) < 0.01, np.inf,
                                  adult["age"].cast(pl.Float64))),
        pl.Series("segment", rng.integers(0, 4, adult.height) + np.where(
            rng.random(adult.height) < 0.02, 0.5, 0.0)),
    )
    labels_null = synth.with_columns(
        pl.when(pl.col("x1") > 4).then(None).otherwise(pl.col("segment")).alias("segment"))
    return [
        ("adult", adult, ["sex", "race"], None, feats),
        ("adult-damaged", damaged, ["sex", "race"], "segment", feats),
        ("adult-too-many-nulls", damaged.with_columns(
            pl.when(pl.col("sex") == "Female").then(None).otherwise(pl.col("sex")).alias("sex")),
         ["sex", "race"], None, []),
        ("field", field, ["sex", "race"], None, ["age", "capital-gain"]),
        ("fairden", fairden, ["sensitive"], "label", [f"feat_{i}" for i in range(10)]),
        ("synthetic", synth, ["sex", "race", "channel"], "segment", ["x1", "x2", "nope"]),
        ("labels-with-nulls", labels_null, ["sex"], "segment", ["x1"]),
        ("string-labels", synth.with_columns(pl.col("segment").cast(pl.String)), ["sex"],
         "segment", []),
        ("id-like", synth, ["customer_id", "sex"], None, []),
        ("missing-columns", synth, ["sex", "gone"], "gone_too", ["x1"]),
        ("unnamed", synth.rename({"race": ""}), ["", "sex"], None, []),
        ("empty", synth.head(0), ["sex", "race"], "segment", ["x1"]),
        # group names that differ only in case, spacing, Unicode form or look-alike letters (one group spelled twice)
        ("case-and-spaces", synth.with_columns(
            pl.when(pl.col("x1") > 5).then(pl.col("sex").str.to_uppercase())
            .otherwise(pl.col("sex")).alias("sex"),
            pl.when(pl.col("x2") > 0).then(pl.col("race") + "  ").otherwise(pl.col("race"))
            .alias("race")), ["sex", "race"], "segment", []),
    ]


@pytest.mark.parametrize("case", _fixtures(), ids=lambda c: c[0])
def test_native_checks_equal_great_expectations(case):
    _, frame, sensitive, labels, features = case
    kwargs = dict(sensitive=sensitive, labels=labels, features=features,
                  group_counts=_counts(frame, sensitive), min_cell=10, n_rows=frame.height)
    mine = native(frame, **kwargs)
    oracle = via_gx(frame, **kwargs)
    assert [r.name for r in mine] == [r.name for r in oracle]
    for a, b in zip(mine, oracle, strict=True):
        assert a == b


def test_a_labels_audit_never_imports_great_expectations(tmp_path: Path):
    """Input checks without GX (nor pandas, matplotlib, scikit-learn, scipy) in a three-column
    audit."""
    data = tmp_path / "t.csv"
    pl.read_parquet(EXAMPLE_DATA).select("sex", "race", "education").write_csv(data)
    script = (
        "import sys, fairaudit\n"
        f"run = fairaudit.audit({str(data)!r}, sensitive=['sex', 'race'],"
        " labels='education', bootstrap=20)\n"
        "assert run.doc['checks'], 'no checks ran'\n"
        "heavy = ('great_expectations', 'pandas', 'matplotlib', 'sklearn', 'scipy')\n"
        "heavy = sorted(m for m in heavy if m in sys.modules)\n"
        "print(heavy)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
