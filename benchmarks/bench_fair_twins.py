"""What the fairness mechanisms of issue 13 cost: each fair estimator against its paper form and
its twin, fitted on the same rows in the same run (ratios are the point; the machine is shared).

    nice .venv/bin/python benchmarks/bench_fair_twins.py --rows 5000,20000 [--k 4] [--seed 0] \
        [--methods LOFKM,FFCM] [--threads 1] [--synthetic] [--repeat 2]

Rows: a seeded draw of Adult's numeric columns (age, fnlwgt, education-num, capital-gain,
capital-loss, hours-per-week; z-scored), sensitive = sex, from ``../shared/data`` — or, without
it, a seeded synthetic table of the same shape (lognormal amounts, a 2-group attribute correlated
with two columns). Fits:

* FairDen: ``rounding="proportional"`` (default) vs ``"kmeans"`` (the paper) vs ``fair=False``.
* LOFKM: ``variant="targeted"`` (default) vs ``"paper"`` vs ``fair=False``.
* FCE (10 k-means bases): ``lambda2="auto"`` with its escalation vs one explicit weight (the same
  auto value, no escalation) vs ``fair=False``.
* FFCM: default (targeted, damped sweeps) vs ``variant="paper"`` vs ``fair=False``;
  ``FFCM-adaptive``: the targeted form with ``acceleration="adaptive"`` (full table steps once
  the damped sweeps contract); ``FFCM-anderson``: with ``acceleration="anderson"``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import platform
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "adult" / "adult.csv"
COLS = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")


def _table(n: int, seed: int, synthetic: bool = False) -> tuple[np.ndarray, np.ndarray, str]:
    if DATA.exists() and not synthetic:
        import polars as pl

        df = pl.read_csv(DATA)
        df = df.sample(n, seed=seed, with_replacement=n > df.height)
        X = df.select(COLS).to_numpy().astype(float)
        s = df["sex"].to_numpy()
        src = f"Adult numeric columns, {n:,} rows" + (" (drawn with replacement)"
                                                        if n > 32_561 else "")
    else:
        rng = np.random.default_rng(seed)
        s = np.where(rng.random(n) < 0.33, "F", "M")
        X = np.c_[rng.lognormal(0, 1, (n, 3)), rng.normal(0, 1, (n, 3))]
        X[:, 0] += (s == "F") * 1.5
        X[:, 3] -= (s == "F") * 0.8
        src = f"synthetic, {n:,} rows"
    X = (X - X.mean(0)) / X.std(0)
    return X, s, src


def _time(fn, repeat: int = 1) -> tuple[float, float]:
    """(wall, CPU) seconds of a call, each the least over ``repeat`` calls; CPU over all
    threads of this process."""
    best = (float("inf"), float("inf"))
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        best = (min(best[0], time.perf_counter() - t), min(best[1], time.process_time() - c))
    return best


def _runs(X: np.ndarray, s: np.ndarray, k: int, seed: int, n: int) -> dict:
    """name -> (fair fit, paper-form fit or None, twin fit), each a no-argument callable."""
    from fairaudit.cluster import FairClusteringEnsemble, FairDen, FairFuzzyCMeans, LOFKMeans

    runs = {
        "FairDen": (
            lambda: FairDen(k, random_state=seed, small_groups="drop").fit(X, sensitive=s),
            lambda: FairDen(k, random_state=seed, small_groups="drop",
                            rounding="kmeans").fit(X, sensitive=s),
            lambda: FairDen(k, random_state=seed, fair=False).fit(X, sensitive=s),
        ),
        "LOFKM": (
            lambda: LOFKMeans(k, random_state=seed).fit(X),
            lambda: LOFKMeans(k, random_state=seed, variant="paper").fit(X),
            lambda: LOFKMeans(k, random_state=seed, fair=False).fit(X),
        ),
        "FFCM": (
            lambda: FairFuzzyCMeans(k, random_state=seed).fit(X, sensitive=s),
            lambda: FairFuzzyCMeans(k, random_state=seed, variant="paper").fit(X, sensitive=s),
            lambda: FairFuzzyCMeans(k, random_state=seed, fair=False).fit(X, sensitive=s),
        ),
        "FFCM-adaptive": (
            lambda: FairFuzzyCMeans(k, random_state=seed, acceleration="adaptive").fit(
                X, sensitive=s),
            None,
            lambda: FairFuzzyCMeans(k, random_state=seed, fair=False).fit(X, sensitive=s),
        ),
        "FFCM-anderson": (
            lambda: FairFuzzyCMeans(k, random_state=seed, acceleration="anderson").fit(
                X, sensitive=s),
            None,
            lambda: FairFuzzyCMeans(k, random_state=seed, fair=False).fit(X, sensitive=s),
        ),
    }
    T = 2
    lam = 1e-3 * T * k**1.5 / n**1.5  # the "auto" weight, explicit: no escalation
    runs["FCE"] = (
        lambda: FairClusteringEnsemble(k, bases="kmeans", random_state=seed).fit(
            X, sensitive=s),
        lambda: FairClusteringEnsemble(k, bases="kmeans", random_state=seed,
                                       lambda2=lam).fit(X, sensitive=s),
        lambda: FairClusteringEnsemble(k, bases="kmeans", random_state=seed,
                                       fair=False).fit(X, sensitive=s),
    )
    return runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="5000,20000")
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--synthetic", action="store_true",
                    help="the synthetic table even when Adult is available (no duplicate rows: "
                    "Adult drawn with replacement beyond 32,561 rows has many, which slows "
                    "FairDen's k-NN)")
    ap.add_argument("--methods", default="FairDen,LOFKM,FFCM,FFCM-adaptive,FFCM-anderson,FCE",
                    help="comma-separated subset of FairDen, LOFKM, FFCM, FFCM-adaptive, "
                    "FFCM-anderson, FCE")
    ap.add_argument("--threads", type=int, default=0,
                    help="cap the BLAS / OpenMP thread pools (threadpoolctl); 0 = no cap. On a "
                    "loaded machine scikit-learn's OpenMP k-means can spend more time waiting "
                    "for its second thread than computing: --threads 1 gives steadier ratios")
    ap.add_argument("--repeat", type=int, default=1,
                    help="fit each form this many times, keep the least wall and CPU time")
    args = ap.parse_args()
    wanted = args.methods.split(",")
    print(f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {platform.platform()}, "
          f"python {platform.python_version()}, k = {args.k}, seed {args.seed}, "
          f"threads {args.threads or 'uncapped'}, load average {os.getloadavg()[0]:.1f}")
    print("| rows | method | fair (default) s | paper form s | twin s | fair / paper | "
          "fair / twin | fair CPU s | twin CPU s | fair / twin (CPU) | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    k, seed = args.k, args.seed
    limit = contextlib.nullcontext()
    if args.threads:
        # load scikit-learn's OpenMP runtime first: threadpoolctl caps only the thread pools of
        # libraries already loaded
        import sklearn.cluster  # noqa: F401
        from threadpoolctl import threadpool_limits

        limit = threadpool_limits(args.threads)
    with limit:
        for n in (int(x) for x in args.rows.split(",")):
            X, s, src = _table(n, seed, args.synthetic)
            runs = _runs(X, s, k, seed, n)
            for name, (fair, paper, twin) in runs.items():
                if name not in wanted:
                    continue
                load = os.getloadavg()[0]
                tf, cf = _time(fair, args.repeat)
                tp = _time(paper, args.repeat)[0] if paper else float("nan")
                tt, ct = _time(twin, args.repeat)
                print(f"| {n:,} ({src.split(',')[0]}) | {name} | {tf:.2f} | "
                      f"{'—' if paper is None else f'{tp:.2f}'} | {tt:.2f} | "
                      f"{'—' if paper is None else f'{tf / tp:.1f}×'} | {tf / tt:.2f}× | "
                      f"{cf:.2f} | {ct:.2f} | {cf / ct:.2f}× | {load:.1f} |", flush=True)


if __name__ == "__main__":
    main()
