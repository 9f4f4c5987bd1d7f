"""Rebuild examples/data/adult_sample.parquet from the UCI Adult data (seeded, reproducible).

    python examples/make_adult_sample.py ../shared/data/adult/adult.csv

Takes a seeded random sample of 4,000 rows of the UCI Adult training split, turns "?" into
nulls, and writes Parquet. The sample ships with fairaudit as its demo data (CC BY 4.0,
attribution in examples/data/README.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

ROWS = 4000
SEED = 20261122


def main(src: str) -> None:
    df = pl.read_csv(src, null_values=["?"], infer_schema_length=10_000)
    sample = df.sample(n=ROWS, seed=SEED, shuffle=True)
    out = Path(__file__).parent / "data" / "adult_sample.parquet"
    sample.write_parquet(out, compression="zstd", statistics=True)
    print(f"wrote {out} ({sample.height} rows, {sample.width} columns)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/adult/adult.csv")
