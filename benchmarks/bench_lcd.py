"""Benchmark: fairaudit.metrics.local_connectivity on ``--n`` points (default 100,000), t = 5.

Data: mixture of 8 Gaussians in ``--d`` dimensions, labels from seeded k-means (the setting the
metric audits). Baseline in the same run: building the same per-cluster KD-trees and one
``query(k=t+1)`` per point (the least any exact t-neighbour method must do), so the ratio shows
the cost of the growing-k search for *qualifying* neighbours. Target (issue 4): < 60 s at 100k,
memory O(n) (peak RSS printed).

    .venv/bin/python benchmarks/bench_lcd.py --n 100000 --d 10
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import resource
import time

import numpy as np
from scipy.spatial import cKDTree
from sklearn.cluster import KMeans

from fairaudit.metrics.local_connectivity import lcd


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--t", type=int, default=5)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(f"date: {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}")
    print(
        f"machine: {platform.platform()} | {platform.machine()} | python {platform.python_version()}"
    )
    rng = np.random.default_rng(args.seed)
    comp = rng.integers(0, args.k, args.n)
    X = rng.normal(0, 3, (args.k, args.d))[comp] + rng.normal(size=(args.n, args.d))
    labels = KMeans(args.k, n_init=1, random_state=args.seed).fit(X).labels_
    print(f"data {X.shape}, k={args.k}, t={args.t}, workers={args.workers}")

    print(f"load average before: {os.getloadavg()}")
    t0, c0 = time.perf_counter(), time.process_time()
    for c in range(args.k):
        Y = X[labels == c]
        cKDTree(Y).query(Y, k=args.t + 1, workers=args.workers)
    tb, cb = time.perf_counter() - t0, time.process_time() - c0
    t0, c0 = time.perf_counter(), time.process_time()
    res = lcd(X, labels, t=args.t, workers=args.workers)
    tl, cl = time.perf_counter() - t0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"baseline per-cluster KD-tree + query(k=t+1): wall {tb:.2f}s cpu {cb:.2f}s")
    print(f"lcd: wall {tl:.2f}s cpu {cl:.2f}s  AvgLCD {res.avg_lcd:.4f}  MaxLCD {res.max_lcd:.4f}")
    print(
        f"ratio lcd / baseline: wall {tl / tb:.2f}, cpu {cl / cb:.2f}; peak RSS {peak:.0f} MB "
        f"(X is {X.nbytes / 2**20:.0f} MB)"
    )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
