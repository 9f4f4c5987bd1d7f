"""Benchmark: out-of-sample assignment (``predict``) of the centroid methods, one core.

Fits k-means (scikit-learn), LOFKM, FCM and FFCM on a 20,000-row seeded sample, then assigns
``--n`` new rows (default 2,000,000 x 10, k = 8) with BLAS limited to one thread
(threadpoolctl), so rows/s is per core. Baseline in the same run: scikit-learn's
``KMeans.predict`` on the same rows. Goals: issue 15, >= 1M rows/s per core; issue 25, >= 2M
rows/s per core for the centroid methods and >= 200k rows/s per core for FairDen (``--fairden-n``
rows assigned by FairDen fitted on the same 20,000 rows; CPU time over all cores).

FairDen's rule runs three ways on the same fitted arrays: this checkout's default (float32
products from 6 dimensions on, else the k-d tree) with one thread (rows / CPU s = per core) and
with every core (rows / wall s), and its k-d tree path alone; with ``--main-mr-assign FILE``
(main's ``fairaudit/cluster/_mr_assign.py``, e.g. from ``git show main:...``) also main's
implementation, loaded beside this checkout's, as the same-run baseline. Labels are compared.

    .venv/bin/python benchmarks/bench_predict.py [--n 2000000] [--d 10] [--k 8] [--repeat 3]
    .venv/bin/python benchmarks/bench_predict.py --fairden-only --fairden-n 200000 --d 10 \
        --main-mr-assign /tmp/main_mr_assign.py
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from sklearn.cluster import KMeans
from threadpoolctl import threadpool_limits

from fairaudit.cluster import FairFuzzyCMeans, LOFKMeans, nearest_centre


def make_data(n: int, d: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    comp = rng.integers(0, k, n)
    X = rng.normal(0, 3, (k, d))[comp] + rng.normal(size=(n, d))
    s = (rng.random(n) < 0.2 + 0.6 * (comp % 2)).astype(np.int64)
    return X, s


def timed(fn: Callable[[], np.ndarray], repeat: int) -> tuple[float, float, np.ndarray]:
    best_wall = best_cpu = float("inf")
    out = np.empty(0)
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        best_wall = min(best_wall, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    return best_wall, best_cpu, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2_000_000)
    ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fairden-n", type=int, default=200_000,
                    help="rows FairDen assigns (fitted on the same 20,000 rows); 0 = skip")
    ap.add_argument("--fairden-only", action="store_true", help="skip the centroid methods")
    ap.add_argument("--main-mr-assign", type=Path, default=None,
                    help="main's _mr_assign.py: its FairDen rule as the same-run baseline")
    args = ap.parse_args()
    print(f"date: {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}")
    print(f"machine: {platform.platform()} | python {platform.python_version()} | "
          f"numpy {np.__version__}")
    n_new = args.fairden_n if args.fairden_only else max(args.n, args.fairden_n)
    X, s = make_data(n_new + 20_000, args.d, args.k, args.seed)
    Xf, sf, Xn, sn = X[:20_000], s[:20_000], X[20_000:], s[20_000:]
    if args.fairden_only:
        _fairden(Xf, sf, Xn[: args.fairden_n], sn[: args.fairden_n], args.k, args.repeat,
                 args.main_mr_assign)
        print(f"load average after: {os.getloadavg()}")
        return
    Xn, sn = Xn[: args.n], sn[: args.n]
    km = KMeans(args.k, n_init=1, random_state=0).fit(Xf)
    lofkm = LOFKMeans(args.k, n_init=1, random_state=0, variant="paper").fit(Xf)
    fcm = FairFuzzyCMeans(args.k, fair=False, random_state=0).fit(Xf)
    ffcm = FairFuzzyCMeans(args.k, random_state=0).fit(Xf, sensitive=sf)
    cases: list[tuple[str, Callable[[], np.ndarray]]] = [
        ("sklearn KMeans.predict (baseline)", lambda: km.predict(Xn)),
        ("kmeans plugin (nearest_centre)", lambda: nearest_centre(Xn, km.cluster_centers_)),
        ("LOFKMeans.predict", lambda: lofkm.predict(Xn)),
        ("FCM predict (= nearest centre)", lambda: fcm.predict(Xn)),
        ("FFCM predict, no groups", lambda: ffcm.predict(Xn)),
        ("FFCM predict, with groups", lambda: ffcm.predict(Xn, sensitive=sn)),
        ("FFCM predict_memberships", lambda: ffcm.predict_memberships(Xn)),
    ]
    print(f"assigning {args.n:,} rows x {args.d} features, k = {args.k}, 1 BLAS thread, "
          f"best of {args.repeat}; load average {os.getloadavg()}")
    base = None
    with threadpool_limits(1):
        for name, fn in cases:
            wall, cpu, out = timed(fn, args.repeat)
            base = wall if base is None else base
            print(f"{name:36s} wall {wall:6.3f} s  cpu {cpu:6.3f} s  "
                  f"{args.n / wall / 1e6:6.2f} M rows/s wall  {args.n / cpu / 1e6:6.2f} M rows/s "
                  f"cpu  ratio to baseline {wall / base:5.2f}")
            assert out.shape[0] == args.n
    if args.fairden_n:
        _fairden(Xf, sf, Xn[: args.fairden_n], sn[: args.fairden_n], args.k, args.repeat,
                 args.main_mr_assign)
    agree = float((nearest_centre(Xn, km.cluster_centers_) == km.predict(Xn)).mean())
    print(f"nearest_centre agrees with KMeans.predict on {agree:.6%} of rows")
    print(f"load average after: {os.getloadavg()}")


def _fairden(Xf: np.ndarray, sf: np.ndarray, Xn: np.ndarray, sn: np.ndarray, k: int,
             repeat: int, main_file: Path | None) -> None:
    """FairDen's nearest-fitted-row rule: rows/s per core is rows over CPU seconds (one thread),
    all cores rows over wall seconds. Goal (issue 25): >= 200k rows/s per core."""
    from fairaudit.cluster import FairDen
    from fairaudit.cluster._mr_assign import mutual_reachability_assign

    t0 = time.perf_counter()
    fd = FairDen(k, random_state=0).fit(Xf, sensitive=sf)
    n = Xn.shape[0]
    print(f"FairDen fitted on {Xf.shape[0]:,} rows x {Xf.shape[1]} in "
          f"{time.perf_counter() - t0:.1f} s (min_pts {fd.min_pts_}, {fd.n_clusters_} clusters); "
          f"assigning {n:,} rows; load average {os.getloadavg()}")
    fit = (fd._fit_X, fd._fit_core, fd._fit_labels)
    cases: list[tuple[str, Callable[[], np.ndarray]]] = [
        ("default, 1 thread", lambda: mutual_reachability_assign(*fit, Xn, fd.min_pts_,
                                                                  workers=1)),
        ("k-d tree path, 1 thread", lambda: mutual_reachability_assign(
            *fit, Xn, fd.min_pts_, method="tree", workers=1)),
    ]
    if main_file is not None:
        spec = importlib.util.spec_from_file_location("main_mr_assign", main_file)
        main_mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(main_mod)
        # main's tree asks every core (workers=-1): its CPU time is still its per-core cost
        cases.append(("main's implementation", lambda: main_mod.mutual_reachability_assign(
            *fit, Xn, fd.min_pts_)))
    cases += [
        ("FairDen.predict, all cores", lambda: fd.predict(Xn)),
        ("FairDen.predict with groups, all cores", lambda: fd.predict(Xn, sensitive=sn)),
    ]
    ref = None
    cpus = {}
    for name, fn in cases:
        with threadpool_limits(1):
            wall, cpu, out = timed(fn, repeat)
        ref = out if ref is None else ref
        cpus[name] = cpu
        same = "" if "groups" in name else f"  labels identical: {np.array_equal(out, ref)}"
        print(f"{name:40s} wall {wall:7.3f} s  cpu {cpu:7.3f} s  {n / wall / 1e3:8.1f} k rows/s "
              f"wall  {n / cpu / 1e3:8.1f} k rows/s per core (cpu){same}", flush=True)
    for other in ("k-d tree path, 1 thread", "main's implementation"):
        if other in cpus:
            print(f"default, 1 thread: {cpus[other] / cpus['default, 1 thread']:.2f}x the rows "
                  f"per CPU second of the {other.split(',')[0]}")


if __name__ == "__main__":
    main()
