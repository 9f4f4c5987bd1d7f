"""FFCM's fair-phase schedules on real data: ``acceleration="adaptive"`` against the default damped
sweeps (``"none"``) and the twin (``fair=False``), each fit on the same rows: fairness of the
kept labels (size-weighted and summed Ed, Wd, balance), sweeps and CPU time (issue 25 item 2: a
faster schedule must not make any fit less fair).

    .venv/bin/python benchmarks/ffcm_schedules.py [--seeds 0,1,2] [--k 2,4,8] \
        [--cases adult5k,adult20k,adult200k,bank,student] [--tol 1e-6] [--max-iter 300]

Cases (``../shared/data``, z-scored numeric columns): Adult's six numeric columns with sex (5,000,
20,000 and 200,000 rows drawn with the seed, with replacement beyond 32,561), Bank's seven
numeric columns with marital (45,211 rows), Student's numeric columns with sex (649 rows).
``--tol 1e-9 --max-iter 3000`` runs every fit to a tight tolerance: whether the two schedules end
on the same fixed point (same labels). One BLAS thread.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import os
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def _cases() -> dict:
    import polars as pl

    def adult(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        df = pl.read_csv(DATA / "adult" / "adult.csv")
        df = df.sample(n, seed=seed, with_replacement=n > df.height)
        cols = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss",
                "hours-per-week")
        return df.select(cols).to_numpy().astype(float), df["sex"].to_numpy()

    def bank(seed: int) -> tuple[np.ndarray, np.ndarray]:
        df = pl.read_csv(DATA / "bank" / "bank-full.csv", separator=";")
        cols = ("age", "balance", "day", "duration", "campaign", "pdays", "previous")
        return df.select(cols).to_numpy().astype(float), df["marital"].to_numpy()

    def student(seed: int) -> tuple[np.ndarray, np.ndarray]:
        df = pl.read_csv(DATA / "student" / "student_performance.csv")
        cols = [c for c, t in zip(df.columns, df.dtypes, strict=True) if t.is_numeric()]
        return df.select(cols).to_numpy().astype(float), df["sex"].to_numpy()

    return {"adult5k": lambda s: adult(5000, s), "adult20k": lambda s: adult(20000, s),
            "adult200k": lambda s: adult(200000, s), "bank": bank, "student": student}


def _fit(X, s, k, seed, tol, max_iter, fair, acc):
    from fairaudit.cluster import FairFuzzyCMeans
    from fairaudit.metrics.counting import balance_mean, balance_min, ed, wd

    c = time.process_time()
    e = FairFuzzyCMeans(k, random_state=seed, fair=fair, tol=tol, max_iter=max_iter,
                        acceleration=acc).fit(X, sensitive=s)
    cpu = time.process_time() - c
    codes = np.unique(s, return_inverse=True)[1]
    N = np.bincount(codes * k + e.labels_, minlength=(codes.max() + 1) * k).reshape(-1, k)
    N = N[:, N.sum(0) > 0]
    return dict(cpu=cpu, n_iter=int(e.n_iter_), tried=len(e.eta_reductions_),
                ed=float(ed(N)), ed_sum=float(ed(N, how="sum")), wd=float(wd(N)),
                bal_min=float(balance_min(N)), bal_mean=float(balance_mean(N)),
                labels=hashlib.sha256(e.labels_.tobytes()).hexdigest())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--k", default="2,4,8")
    ap.add_argument("--cases", default="adult5k,adult20k,adult200k,bank,student")
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--max-iter", type=int, default=300)
    args = ap.parse_args()
    import sklearn.cluster  # noqa: F401  (load OpenMP first: threadpoolctl caps loaded pools)
    from threadpoolctl import threadpool_limits

    print(f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, tol {args.tol}, max_iter "
          f"{args.max_iter}, load average {os.getloadavg()[0]:.1f}")
    print("| case | seed | k | twin Ed | damped Ed | adaptive Ed | change | damped / adaptive "
          "Wd | balance (mean) | sweeps damped / adaptive (η tried) | CPU vs twin damped / "
          "adaptive | same labels |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    cases = _cases()
    changes, same, total = [], 0, 0
    with threadpool_limits(1):
        for case in args.cases.split(","):
            for seed in (int(x) for x in args.seeds.split(",")):
                X, s = cases[case](seed)
                X = (X - X.mean(0)) / X.std(0)
                for k in (int(x) for x in args.k.split(",")):
                    fit = [_fit(X, s, k, seed, args.tol, args.max_iter, fair, acc)
                           for fair, acc in ((False, "none"), (True, "none"),
                                             (True, "adaptive"))]
                    t, d, a = fit
                    change = 100 * (a["ed"] - d["ed"]) / d["ed"]
                    changes.append(change)
                    total += 1
                    same += a["labels"] == d["labels"]
                    print(f"| {case} | {seed} | {k} | {t['ed']:.5f} | {d['ed']:.5f} | "
                          f"{a['ed']:.5f} | {change:+.2f} % | {d['wd']:.5f} / {a['wd']:.5f} | "
                          f"{d['bal_mean']:.4f} / {a['bal_mean']:.4f} | {d['n_iter']} ({d['tried']}) / "
                          f"{a['n_iter']} ({a['tried']}) | {d['cpu'] / t['cpu']:.2f}× / "
                          f"{a['cpu'] / t['cpu']:.2f}× | {'yes' if a['labels'] == d['labels'] else 'no'} |",
                          flush=True)
    worse = [c for c in changes if c > 0]
    print(f"\n{total} fits: same labels {same}; adaptive less fair (weighted Ed) in {len(worse)} "
          f"(largest {max(worse, default=0):+.2f} %), fairer in "
          f"{sum(c < 0 for c in changes)}; median change {np.median(changes):+.2f} %.")


if __name__ == "__main__":
    main()
