"""LOFKM's targeted refinement on more rows than it judges: whole-table AvgLCD against the twin,
and the fit's CPU, for several ``refine_rows`` (issue 25, fifth pass).

The refinement judges AvgLCD on a seeded sample of ``refine_rows`` rows (20,000 by default) and
guarantees it no higher than the twin's *there*. This script measures what that buys on the whole
table (``fairaudit.metrics.lcd``, t = 5, with the fitted prototypes), seed by seed, and what a
smaller sample would save:

    nice .venv/bin/python benchmarks/lofkm_refine_rows.py [--k 4] [--seeds 0,1,2,3,4] \
        [--refine-rows 20000,10000,5000] [--tables adult200k,bank,adult]

Tables (z-scored numeric columns, from ``../shared/data``): ``adult200k`` = Adult's six numeric
columns drawn to 200,000 rows with replacement (``bench_fair_twins.py``'s table), ``bank`` =
Bank's seven numeric columns (45,211 rows), ``adult`` = Adult's six (32,561 rows). One
BLAS/OpenMP thread. Needs ``../shared/data``; exits with a message when it is absent.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
ADULT = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")
BANK = ("age", "balance", "day", "duration", "campaign", "pdays", "previous")


def _z(X: np.ndarray) -> np.ndarray:
    X = np.asarray(X, dtype=float)
    return (X - X.mean(axis=0)) / X.std(axis=0)


def _table(name: str) -> np.ndarray:
    import polars as pl

    if name == "adult200k":
        df = pl.read_csv(DATA / "adult" / "adult.csv").sample(200_000, seed=0,
                                                               with_replacement=True)
        return _z(df.select(ADULT).to_numpy())
    if name == "adult":
        return _z(pl.read_csv(DATA / "adult" / "adult.csv").select(ADULT).to_numpy())
    if name == "bank":
        df = pl.read_csv(DATA / "bank" / "bank-full.csv", separator=";")
        return _z(df.select(BANK).to_numpy())
    raise SystemExit(f"unknown table {name!r}: adult200k, bank or adult")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--refine-rows", default="20000,10000,5000")
    ap.add_argument("--tables", default="adult200k,bank,adult")
    args = ap.parse_args()
    if not DATA.exists():
        sys.exit(f"{DATA} not found: this script needs the shared public datasets")
    import sklearn.cluster  # noqa: F401  (load the OpenMP runtime before capping it)
    from threadpoolctl import threadpool_limits

    from fairaudit.cluster import LOFKMeans
    from fairaudit.metrics import lcd

    sizes = [int(x) for x in args.refine_rows.split(",")]
    print(f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, k = {args.k}, load average "
          f"{os.getloadavg()[0]:.1f}; whole-table AvgLCD (fit CPU s)")
    print("| table | seed | twin | " + " | ".join(f"refine_rows {r:,}" for r in sizes) + " |")
    print("|---|---|---|" + "---|" * len(sizes))
    with threadpool_limits(1):
        for name in args.tables.split(","):
            X = _table(name)
            for seed in (int(s) for s in args.seeds.split(",")):
                twin = LOFKMeans(args.k, random_state=seed, fair=False).fit(X)
                base = lcd(X, twin.labels_, twin.cluster_centers_, t=5).avg_lcd
                cells = []
                for r in sizes:
                    c = time.process_time()
                    est = LOFKMeans(args.k, random_state=seed, refine_rows=r).fit(X)
                    cpu = time.process_time() - c
                    v = lcd(X, est.labels_, est.cluster_centers_, t=5).avg_lcd
                    mark = "below" if v < base else "not below"
                    cells.append(f"{v:.4f} ({cpu:.2f} s; {mark})")
                print(f"| {name} ({X.shape[0]:,}) | {seed} | {base:.4f} | "
                      + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
