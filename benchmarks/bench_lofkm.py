"""Benchmark: LOFKMeans vs scikit-learn LocalOutlierFactor + KMeans(sample_weight) run separately.

Synthetic data: ``--n`` rows x ``--d`` features, a mixture of 8 Gaussians (seeded). Baseline =
``LocalOutlierFactor(n_neighbors=t, n_jobs=--baseline-n-jobs).fit(X)`` (default -1: both
sides use every core) then ``KMeans(k, n_init=..).fit(X, sample_weight=
max(LOF, 1))``, same data, same process. Runs alternate (baseline, ours) ``--repeat`` times and
the best of each is reported with the ratio ours / baseline, and the largest relative
difference between the two sides' LOF weights (they compute the same LOF). Target (issue 4): ratio <= 1.3 at
1,000,000 x 10.

    .venv/bin/python benchmarks/bench_lofkm.py --n 1000000

Memory: X (n*d*8 bytes) + LOF's neighbour arrays (n*t*16 bytes) + the KD-tree; ~0.5 GB at 1M.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import os
import platform
import time

import numpy as np
import sklearn
from sklearn.cluster import KMeans
from sklearn.neighbors import LocalOutlierFactor

from fairaudit.cluster.lofkm import LOFKMeans


def make_data(n: int, d: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 4, (8, d))
    X = centres[rng.integers(0, 8, n)] + rng.normal(size=(n, d))
    return X


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--t", type=int, default=5)
    ap.add_argument("--n-init", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--baseline-n-jobs", type=int, default=-1)
    args = ap.parse_args()
    print(f"date: {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}")
    print(
        f"machine: {platform.platform()} | {platform.machine()} | python {platform.python_version()}"
    )
    print(f"numpy {np.__version__}, scikit-learn {sklearn.__version__}")
    X = make_data(args.n, args.d, args.seed)
    print(f"data {X.shape}, k={args.k}, t={args.t}, n_init={args.n_init}")

    def baseline() -> np.ndarray:
        lof = LocalOutlierFactor(n_neighbors=args.t, n_jobs=args.baseline_n_jobs).fit(X)
        w = np.maximum(-lof.negative_outlier_factor_, 1.0)
        km = KMeans(args.k, n_init=args.n_init, random_state=args.seed,
                        variant="paper")
        km.fit(X, sample_weight=w)
        return w

    def ours() -> np.ndarray:
        est = LOFKMeans(args.k, n_neighbors=args.t, n_init=args.n_init, random_state=args.seed)
        return est.fit(X).weights_

    print(f"load average before: {os.getloadavg()}")
    best_b, best_o = float("inf"), float("inf")
    cpu_b, cpu_o = float("inf"), float("inf")
    for r in range(args.repeat):
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        w_base = baseline()
        tb, cb = time.perf_counter() - t0, time.process_time() - c0
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        w_ours = ours()
        to, co = time.perf_counter() - t0, time.process_time() - c0
        print(
            f"run {r}: baseline wall {tb:.2f}s cpu {cb:.2f}s, LOFKMeans wall {to:.2f}s cpu {co:.2f}s"
        )
        rel = float(np.max(np.abs(w_ours - w_base) / w_base))
        print(f"run {r}: max relative difference of the LOF weights: {rel:.2e}")
        best_b, best_o = min(best_b, tb), min(best_o, to)
        cpu_b, cpu_o = min(cpu_b, cb), min(cpu_o, co)
    print(
        f"best wall: baseline {best_b:.2f}s, LOFKMeans {best_o:.2f}s, ratio {best_o / best_b:.3f}"
    )
    print(f"best cpu: baseline {cpu_b:.2f}s, LOFKMeans {cpu_o:.2f}s, ratio {cpu_o / cpu_b:.3f}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
