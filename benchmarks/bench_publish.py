"""What a published release costs against the analyst's exact audit of the same labels column,
and what of it is the ledger's accounting (the data's fingerprint and sketch).

    nice .venv/bin/python benchmarks/bench_publish.py --rows 100000,1000000 --clusters 10

Both runs audit a generated Parquet table (sex 2 groups, race 6, age band 5; a labels column of
``--clusters`` segments; a sparse person id and an income, which the sketch keeps) with the
counting auditors balance and distribution, 200 bootstrap replicates; the publish run adds the
fingerprint pass, the noise, the parametric bootstrap and the ledger; ``counts`` is the
near-copy check's exact cube alone (fairaudit.privacy.nearcopy). Runs are alternated
(exact, publish, fingerprint, content only, counts, exact, ...) and the medians compared (docs/benchmarks.md); wall
and CPU (user + sys of this process) times are printed with the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl


def make_table(n: int, k: int, path: Path) -> None:
    rng = np.random.default_rng(0)
    pl.DataFrame({
        "person_id": 10**9 + rng.choice(10**10, n, replace=False),
        "sex": rng.choice(["F", "M"], n),
        "race": rng.choice(list("abcdef"), n, p=[0.5, 0.2, 0.15, 0.1, 0.04, 0.01]),
        "age": rng.choice(["<25", "25-34", "35-49", "50-64", "65+"], n),
        "income": np.round(rng.lognormal(10, 1, n), 2),
        "segment": rng.integers(0, k, n),
    }).write_parquet(path)


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def main() -> None:
    import fairaudit
    from fairaudit.privacy.fingerprint import fingerprint_frame
    from fairaudit.privacy.nearcopy import exact_cube

    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="100000,1000000")
    ap.add_argument("--clusters", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    audited = ["sex", "race", "age", "segment"]
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(x) for x in args.rows.split(",")):
            path = Path(tmp) / f"t{n}.parquet"
            make_table(n, args.clusters, path)
            fairaudit.audit(str(path), sensitive=["sex", "race", "age"],  # warm-up: imports
                            labels="segment", audit=["balance", "distribution"])
            wall: dict[str, list[float]] = {m: [] for m in ("exact", "publish", "fingerprint",
                                                             "content only", "counts")}
            cpu: dict[str, list[float]] = {m: [] for m in wall}
            for r in range(args.repeat):
                for mode in wall:
                    t0, c0 = time.perf_counter(), _cpu()
                    if mode in ("exact", "publish"):
                        kw = ({"publish": True, "ledger": str(Path(tmp) / f"l{n}-{r}.json"),
                               "new_ledger": True, "privacy_budget": 1.0}
                              if mode == "publish" else {})
                        fairaudit.audit(str(path), sensitive=["sex", "race", "age"],
                                        labels="segment", audit=["balance", "distribution"],
                                        **kw)
                    elif mode == "counts":  # the near-copy check's exact cube
                        exact_cube(pl.scan_parquet(path), audited[:3], audited[3])
                    else:
                        fingerprint_frame(pl.scan_parquet(path), audited,
                                          sketch=mode == "fingerprint")
                    wall[mode].append(time.perf_counter() - t0)
                    cpu[mode].append(_cpu() - c0)
            med = {m: (statistics.median(wall[m]), statistics.median(cpu[m])) for m in wall}
            e = med["exact"]
            cells = args.clusters * 2 * 6 * 5
            print(f"rows {n:,}  cells {cells:,}  load {os.getloadavg()[0]:.1f}")
            for m, (w, c) in med.items():
                print(f"  {m:<13} wall {w:6.2f} s  cpu {c:6.2f} s  ratio to exact: wall "
                      f"{w / e[0]:.2f}, cpu {c / e[1]:.2f}")


if __name__ == "__main__":
    main()
