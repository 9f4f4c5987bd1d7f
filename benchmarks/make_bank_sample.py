"""Rebuild examples/data/bank_sample.parquet from the UCI Bank Marketing data (the 10 % file).

    python benchmarks/make_bank_sample.py ../shared/data/bank/bank.csv

Keeps all 4,521 rows of ``bank.csv`` and the columns the real-table designs of
``benchmarks/table_designs.py`` use (age, job, marital, education, balance, contact, duration,
poutcome); no value is changed. CC BY 4.0, attribution in examples/data/README.md.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import polars as pl

COLUMNS = ["age", "job", "marital", "education", "balance", "contact", "duration", "poutcome"]
logger = logging.getLogger("make_bank_sample")


def main(src: str) -> None:
    df = pl.read_csv(src, separator=";").select(COLUMNS)
    out = Path(__file__).resolve().parent.parent / "examples" / "data" / "bank_sample.parquet"
    df.write_parquet(out, compression="zstd", statistics=True)
    logger.info("wrote %s (%d rows, %d columns)", out, df.height, df.width)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/bank/bank.csv")
