"""Benchmark DCSI on generated DENSIRED-like data (see bench_fairden.densired_like).

.venv/bin/python benchmarks/bench_dcsi.py --n 100000
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_fairden import densired_like  # noqa: E402

from fairaudit.metrics.density_separation import dcsi  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="+", default=[10000, 100000])
    a = ap.parse_args()
    for n in a.n:
        X, _ = densired_like(n, k=2, seed=0)
        X = (X - X.mean(0)) / X.std(0)
        # labels: the generator's two chains (rows were permuted; recover by 2-means on X)
        from sklearn.cluster import KMeans

        labels = KMeans(2, n_init=3, random_state=0).fit_predict(X)
        t = time.perf_counter()
        r = dcsi(X, labels, min_pts=5)
        dt = time.perf_counter() - t
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            json.dumps(
                {"n": n, "seconds": round(dt, 3), "dcsi": r.value, "peak_rss_mb": round(peak, 1)}
            )
        )


if __name__ == "__main__":
    main()
