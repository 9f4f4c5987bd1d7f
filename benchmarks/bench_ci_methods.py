"""Benchmark: the calibrated (score-max-bootstrap) against the conservative
(score-intersection) intervals of balance, fairness_cce and Balance' on a large table
(issue 23), alternated in one process so both see the same load.

    nice python benchmarks/bench_ci_methods.py [--groups 5] [--clusters 10000] [--rows 200000]
        [--replicates 200] [--repeats 3]

Prints, per metric, the median seconds of each method, their ratio (calibrated / conservative),
the calibrated method's peak traced memory (tracemalloc) and the size of its contact set.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import time
import tracemalloc

import numpy as np

from fairaudit.metrics import intervals as I
from fairaudit.metrics.bootstrap import resample_counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=5)
    ap.add_argument("--clusters", type=int, default=10_000)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--replicates", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(a.groups * a.clusters)).reshape(a.groups, a.clusters)
    T = rng.multinomial(a.rows, P.ravel()).reshape(P.shape)
    T = T[:, T.sum(axis=0) > 0]
    R = resample_counts(T, a.replicates, rng)
    print(f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {platform.processor() or platform.machine()}"
          f", {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; table {T.shape[0]} x "
          f"{T.shape[1]}, {a.rows:,} rows, {a.replicates} replicates")
    for f in (I.balance_interval, I.fairness_cce_interval, I.balance_prime_interval):
        old, new = [], []
        for _ in range(a.repeats):  # alternated
            t = time.perf_counter()
            f(T)
            old.append(time.perf_counter() - t)
            t = time.perf_counter()
            iv = f(T, replicates=R)
            new.append(time.perf_counter() - t)
        tracemalloc.start()
        f(T, replicates=R)
        peak = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
        o, n = statistics.median(old), statistics.median(new)
        print(f"{f.__name__:24s} conservative {o:6.2f} s  calibrated {n:6.2f} s  ratio "
              f"{n / o if o > 0 else float('inf'):5.1f}x  peak {peak:5.0f} MB  contact cells "
              f"{iv.contact_cells:,}")


if __name__ == "__main__":
    main()
