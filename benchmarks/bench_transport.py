"""FairDen's proportional rounding: the exact transport step (fair_rounding._transport, numpy
successive shortest paths) against POT's network simplex (``ot.emd``, the solver it replaced),
alternated in one go on the same problems; POT is optional (pip install pot).

    python benchmarks/bench_transport.py [--sizes 2000x4,5000x8,20000x10] [--repeat 3]

Prints per size: median seconds of each solver, their ratio, and the relative difference of the
objectives (0 = the same optimum).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from fairaudit.cluster.fair_rounding import _transport


def _pot(cost: np.ndarray, caps: np.ndarray) -> np.ndarray:
    import ot

    n, k = cost.shape
    used = np.flatnonzero(caps > 0)
    plan = ot.emd(np.ones(n), caps[used].astype(float), np.ascontiguousarray(cost[:, used]),
                  numItermax=max(100_000, 100 * n * k))
    return used[np.argmax(plan, axis=1)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="2000x4,5000x8,20000x10,20000x3")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    try:
        import ot  # noqa: F401

        have_pot = True
    except ImportError:
        have_pot = False
    print("n x k | ours s | POT s | ours/POT | objective rel. diff")
    for spec in a.sizes.split(","):
        n, k = (int(x) for x in spec.split("x"))
        rng = np.random.default_rng(0)
        # squared distances of rows to k centres, caps = a proportional split (as in FairDen)
        H, C = rng.normal(size=(n, 3)), rng.normal(size=(k, 3))
        cost = ((H[:, None, :] - C[None]) ** 2).sum(-1)
        caps = np.bincount(rng.integers(0, k, n), minlength=k)
        ours, pot = [], []
        for _ in range(a.repeat):
            t = time.perf_counter()
            lab = _transport(cost, caps)
            ours.append(time.perf_counter() - t)
            if have_pot:
                t = time.perf_counter()
                ref = _pot(cost, caps)
                pot.append(time.perf_counter() - t)
        o = statistics.median(ours)
        if have_pot:
            p = statistics.median(pot)
            obj, obj_ref = cost[np.arange(n), lab].sum(), cost[np.arange(n), ref].sum()
            print(f"{n} x {k} | {o:.3f} | {p:.3f} | {o / p:.2f} | {(obj - obj_ref) / obj_ref:.1e}")
        else:
            print(f"{n} x {k} | {o:.3f} | - | - | -")


if __name__ == "__main__":
    main()
