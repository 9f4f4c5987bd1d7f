"""Benchmark: FUFS's fit against a base revision's, on the census table (issue 38, second pass).

    .venv/bin/python benchmarks/bench_fufs_descent.py [--base c2a9218] [--rows 1000 3000]

The base revision's ``fairaudit/preprocess/fufs.py`` (self-contained up to c2a9218: kernels by
scipy's gemm, every step formed in full) is loaded from git beside the current estimator; both
fit the same seeded rows of UCI Adult (``../shared/data/adult/adult.csv``, nulls dropped,
``CategoricalEncoder``, protected = sex), one after the other in this process. Printed per row
count: whether the selected features and both rankings are identical, the largest score
difference, and wall / CPU seconds of each fit with the CPU ratio.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parent.parent
ADULT = ROOT.parent / "shared" / "data" / "adult" / "adult.csv"


def _base_fufs(rev: str):  # noqa: ANN202 - a module loaded from git
    text = subprocess.run(["git", "show", f"{rev}:fairaudit/preprocess/fufs.py"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout
    path = Path(tempfile.mkdtemp()) / "base_fufs.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("base_fufs", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["base_fufs"] = mod
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default="c2a9218")
    ap.add_argument("--rows", type=int, nargs="+", default=[1000, 3000])
    ap.add_argument("--select", type=float, default=0.3)
    a = ap.parse_args()
    if not ADULT.exists():
        raise SystemExit(f"{ADULT} not found: this benchmark needs the census table")
    from fairaudit.preprocess import FUFS, CategoricalEncoder

    base = _base_fufs(a.base)
    df = pl.read_csv(ADULT, null_values=["?"]).drop_nulls()
    sex = df["sex"].to_numpy()
    X = CategoricalEncoder().fit_transform(df.drop(["sex", "income-per-year"])).to_numpy()
    X = X.astype(float)
    print(f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC · {platform.platform()} · "
          f"{os.cpu_count()} cores · load {os.getloadavg()[0]:.1f} · base {a.base}")
    rng = np.random.default_rng(0)
    for n in a.rows:
        idx = rng.choice(X.shape[0], n, replace=False)
        fits = []
        for cls in (base.FUFS, FUFS):
            t, c = time.perf_counter(), time.process_time()
            f = cls(a.select, random_state=0).fit(X[idx], sensitive=sex[idx])
            fits.append((f, time.perf_counter() - t, time.process_time() - c))
        (f0, w0, c0), (f1, w1, c1) = fits
        print(f"n={n} d={X.shape[1]}: support {np.array_equal(f0.support_, f1.support_)}, "
              f"ranking {np.array_equal(f0.ranking_, f1.ranking_)}, proxy ranking "
              f"{np.array_equal(f0.proxy_ranking_, f1.proxy_ranking_)}; max |score diff| "
              f"{np.nanmax(np.abs(f0.scores_ - f1.scores_)):.2e}, proxy "
              f"{np.nanmax(np.abs(f0.proxy_scores_ - f1.proxy_scores_)):.2e}; base {w0:.2f} s "
              f"wall / {c0:.2f} s CPU, this {w1:.2f} / {c1:.2f}: {c0 / c1:.2f}x less CPU")


if __name__ == "__main__":
    main()
