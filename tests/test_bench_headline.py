"""The headline benchmark's small table is the large table's own sample
(``benchmarks/bench_headline.py``).

Its ratio of 1M to 100k rows compares two audits that fit the same rows only if
``sample_of`` draws exactly the rows the audit of the large file draws; this pins that to
``fairaudit.core.inputs._draw_rows`` (the draw the audit makes).
"""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import polars as pl
import pytest
from conftest import ROOT

from fairaudit.core.data import ROW_ID
from fairaudit.core.inputs import _draw_rows
from fairaudit.core.spec import ChainSpec, DataSpec


def _bench():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location(
            "bench_headline", ROOT / "benchmarks" / "bench_headline.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


@pytest.mark.parametrize(("n", "m", "seed"), [(500, 50, 0), (2_000, 1_999, 0), (3_000, 700, 9)])
def test_sample_of_is_the_audits_own_sample(tmp_path, n, m, seed):
    rng = np.random.default_rng(n)
    frame = pl.DataFrame({"sex": rng.choice(["f", "m"], n), "x": rng.normal(size=n),
                          "y": np.arange(n, dtype=np.int64)})
    src = tmp_path / "big.parquet"
    frame.write_parquet(src)
    out = tmp_path / "small.parquet"
    _bench().sample_of(out, src, m, seed=seed)
    spec = ChainSpec(data=DataSpec(sensitive=("sex",), seed=seed))
    drawn, n_valid, info = _draw_rows(pl.scan_parquet(src), ["sex", "x", "y"], ["sex", "x"],
                                      spec, n, m, n_valid=None, sample_to=None)
    assert n_valid == n and info["rows"] == m
    small = pl.read_parquet(out)
    assert small.equals(drawn.drop(ROW_ID))
    assert small.get_column("y").to_list() == drawn.get_column(ROW_ID).to_list()


def test_sample_of_refuses_a_table_with_nulls(tmp_path):
    src = tmp_path / "big.parquet"
    pl.DataFrame({"sex": ["f", None, "m"], "x": [1.0, 2.0, 3.0]}).write_parquet(src)
    with pytest.raises(SystemExit, match="nulls"):
        _bench().sample_of(tmp_path / "small.parquet", src, 2)
