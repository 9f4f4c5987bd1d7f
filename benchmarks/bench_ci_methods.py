"""Benchmark: the calibrated (score-max-bootstrap) against the conservative
(score-intersection) intervals of balance, fairness_cce and Balance' on a large table
(issue 23), alternated in one process so both see the same load.

    nice python benchmarks/bench_ci_methods.py [--groups 5] [--clusters 10000] [--rows 200000]
        [--replicates 200] [--repeats 3] [--concentration 1]
    nice python benchmarks/bench_ci_methods.py --audit data.csv --sensitive sex,race
        --labels education [--repeats 3]
    nice python benchmarks/bench_ci_methods.py --distances [--clusters 10000] ...

Prints, per metric, the median seconds of each method, their ratio (calibrated / conservative),
the calibrated method's peak traced memory (tracemalloc) and the size of its contact set.
With ``--audit``: a whole default audit of a table (``fairaudit.audit``) per method, alternated,
and the seconds spent in its interval step (the counting auditors' own intervals, every
attribute). With ``--distances``: the intervals of Ed and Wd (``distance_intervals``) with and
without the calibrated ``wd_max`` / ``ed_max`` on the same table.
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
    ap.add_argument("--concentration", type=float, default=1.0,
                    help="Dirichlet concentration of the cell probabilities (large: even cells, "
                    "no empty cell, so the calibration is not skipped for a minimum of 0)")
    ap.add_argument("--audit", help="a table to audit with both methods (interval step timed)")
    ap.add_argument("--sensitive", default="sex,race")
    ap.add_argument("--labels", default=None)
    ap.add_argument("--distances", action="store_true",
                    help="time distance_intervals (conservative vs calibrated wd_max / ed_max)")
    a = ap.parse_args()
    if a.audit:
        audit_step(a)
        return
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.full(a.groups * a.clusters, a.concentration)).reshape(a.groups,
                                                                                a.clusters)
    T = rng.multinomial(a.rows, P.ravel()).reshape(P.shape)
    T = T[:, T.sum(axis=0) > 0]
    R = resample_counts(T, a.replicates, rng)
    print(f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {platform.processor() or platform.machine()}"
          f", {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; table {T.shape[0]} x "
          f"{T.shape[1]}, {a.rows:,} rows, {a.replicates} replicates")
    if a.distances:
        distance_step(T, R, a.repeats)
        return
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
        print(f"{f.__name__:24s} conservative {o:7.3f} s  calibrated {n:7.3f} s  ratio "
              f"{n / o if o > 0 else float('inf'):5.1f}x  peak {peak:5.0f} MB  contact cells "
              f"{iv.contact_cells:,}")


def distance_step(T: np.ndarray, R: np.ndarray, repeats: int) -> None:
    """Time the intervals of Ed and Wd with and without the calibrated maxima, alternated."""
    from fairaudit.metrics.distance_intervals import distance_intervals

    times: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(repeats):
        for calibrated in times:
            t = time.perf_counter()
            ivs = distance_intervals(T, R, calibrated=calibrated)
            times[calibrated].append(time.perf_counter() - t)
    tracemalloc.start()
    distance_intervals(T, R, calibrated=True)
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    o, n = statistics.median(times[False]), statistics.median(times[True])
    contact = ivs["wd_max"].contact_cells if "wd_max" in ivs else 0
    print(f"distance_intervals       conservative {o:7.3f} s  calibrated {n:7.3f} s  ratio "
          f"{n / o if o > 0 else float('inf'):5.1f}x  peak {peak:5.0f} MB  contact clusters "
          f"(wd_max) {contact:,}")


def audit_step(a: argparse.Namespace) -> None:
    """Time the interval step of a default audit of ``a.audit`` under both methods."""
    import fairaudit
    from fairaudit import counting_audit

    spent = [0.0]
    inner = counting_audit._own_intervals

    def timed(*args, **kwargs):
        t = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - t

    counting_audit._own_intervals = timed
    print(f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {platform.processor() or platform.machine()}"
          f", {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; fairaudit.audit({a.audit!r}, "
          f"sensitive={a.sensitive!r}, labels={a.labels!r}), {a.replicates} replicates")
    times: dict[str, list[tuple[float, float]]] = {"conservative": [], "calibrated": []}
    for _ in range(a.repeats):  # alternated
        for method in times:
            spent[0] = 0.0
            t = time.perf_counter()
            fairaudit.audit(a.audit, sensitive=a.sensitive.split(","), labels=a.labels,
                            bootstrap=a.replicates, ci_method=method)
            times[method].append((time.perf_counter() - t, spent[0]))
    for method, runs in times.items():
        total = statistics.median(r[0] for r in runs)
        step = statistics.median(r[1] for r in runs)
        print(f"{method:13s} audit {total:6.2f} s   interval step {step:6.3f} s")


if __name__ == "__main__":
    main()
