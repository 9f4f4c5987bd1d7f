"""What a published release costs against the analyst's exact audit of the same labels column.

    nice .venv/bin/python benchmarks/bench_publish.py --rows 100000,1000000 --clusters 10

Both runs audit a generated Parquet table (sex 2 groups, race 6, age band 5; a labels column of
``--clusters`` segments) with the counting auditors balance and distribution, 200 bootstrap
replicates; the publish run adds the noise, the parametric bootstrap and the ledger. Runs are
alternated (exact, publish, exact, publish, ...) and the medians compared (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl


def make_table(n: int, k: int, path: Path) -> None:
    rng = np.random.default_rng(0)
    pl.DataFrame({
        "sex": rng.choice(["F", "M"], n),
        "race": rng.choice(list("abcdef"), n, p=[0.5, 0.2, 0.15, 0.1, 0.04, 0.01]),
        "age": rng.choice(["<25", "25-34", "35-49", "50-64", "65+"], n),
        "segment": rng.integers(0, k, n),
    }).write_parquet(path)


def main() -> None:
    import fairaudit

    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="100000,1000000")
    ap.add_argument("--clusters", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(x) for x in args.rows.split(",")):
            path = Path(tmp) / f"t{n}.parquet"
            make_table(n, args.clusters, path)
            fairaudit.audit(str(path), sensitive=["sex", "race", "age"],  # warm-up: imports
                            labels="segment", audit=["balance", "distribution"])
            times: dict[str, list[float]] = {"exact": [], "publish": []}
            for r in range(args.repeat):
                for mode in ("exact", "publish"):
                    kw = ({"publish": True, "ledger": str(Path(tmp) / f"l{n}-{r}.json")}
                          if mode == "publish" else {})
                    t0 = time.perf_counter()
                    fairaudit.audit(str(path), sensitive=["sex", "race", "age"],
                                    labels="segment", audit=["balance", "distribution"], **kw)
                    times[mode].append(time.perf_counter() - t0)
            e, p = statistics.median(times["exact"]), statistics.median(times["publish"])
            cells = args.clusters * 2 * 6 * 5
            print(f"rows {n:,}  cells {cells:,}  exact {e:.2f} s  publish {p:.2f} s  "
                  f"ratio {p / e:.2f}")


if __name__ == "__main__":
    main()
