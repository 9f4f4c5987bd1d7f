"""Benchmark FairDen (dense vs matrix-free) on the DENSIRED n-series and larger generated data.

One measurement per process (peak RSS is per process):

    .venv/bin/python benchmarks/bench_fairden.py one --n 5000 --solver matrix-free
    .venv/bin/python benchmarks/bench_fairden.py one --n 1000000 --shape walk20
    .venv/bin/python benchmarks/bench_fairden.py series --sizes 1000 2000 5000 --dense-max 5000

Data: ``/work/shared/data/densired_runtime/n/dataset_n_<n>.csv`` when present (the FairDen runtime
study's files), otherwise a seeded DENSIRED-like generator (:func:`densired_like`): two
density-based clusters, each a random walk of Gaussian blobs in 10 dimensions, 0.1 % uniform
noise, binary sensitive attribute (a seeded permutation of 50 % ones). Features are z-scored,
min_pts = 21, k = 2 — the reference README's settings. ``--shape`` picks other density
structures (issue 38): ``walk20`` (two random walks of 20 blobs, step scale 1.0), ``many-small``
(2,000 tight blobs) and ``wide-density`` (40 blobs whose spreads span a 60x range).
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

SHARED = Path("/work/shared/data/densired_runtime/n")


def densired_like(
    n: int, *, d: int = 10, k: int = 2, seed: int = 0, steps: int = 50,
    step_scale: float = 0.6, blob_scale: float = 0.35,
) -> tuple[np.ndarray, np.ndarray]:
    """Seeded DENSIRED-like data: k random-walk chains of ``steps`` Gaussian blobs (walk step
    ``step_scale``, blob sd ``blob_scale``) plus 0.1 % uniform noise."""
    rng = np.random.default_rng(seed)
    n_noise = max(1, n // 1000)
    n_cl = n - n_noise
    sizes = np.full(k, n_cl // k)
    sizes[: n_cl - sizes.sum()] += 1
    parts = []
    for c in range(k):
        start = rng.uniform(-10, 10, size=d)
        walk = start + np.cumsum(rng.normal(scale=step_scale, size=(steps, d)), axis=0)
        which = rng.integers(0, steps, size=sizes[c])
        parts.append(walk[which] + rng.normal(scale=blob_scale, size=(sizes[c], d)))
    return _with_noise(parts, n, n_noise, d, rng)


def blobs(n: int, *, d: int = 10, centres: int, scales: tuple[float, float], box: float = 20.0,
          seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Seeded Gaussian blobs: ``centres`` centres uniform in a box of side ``box``, blob sds
    log-uniform in ``scales``, sizes multinomial (equal shares), plus 0.1 % uniform noise."""
    rng = np.random.default_rng(seed)
    n_noise = max(1, n // 1000)
    n_cl = n - n_noise
    C = rng.uniform(-box / 2, box / 2, size=(centres, d))
    sd = np.exp(rng.uniform(np.log(scales[0]), np.log(scales[1]), size=centres))
    which = rng.integers(0, centres, size=n_cl)
    parts = [C[which] + rng.normal(size=(n_cl, d)) * sd[which, None]]
    return _with_noise(parts, n, n_noise, d, rng)


def _with_noise(parts: list[np.ndarray], n: int, n_noise: int, d: int,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    lo = min(p.min() for p in parts)
    hi = max(p.max() for p in parts)
    parts.append(rng.uniform(lo, hi, size=(n_noise, d)))
    X = np.vstack(parts)
    X = X[rng.permutation(n)]
    s = np.zeros(n, dtype=np.int64)
    s[: n // 2] = 1
    s = rng.permutation(s)
    return X, s


SHAPES = {
    # the benchmark's DENSIRED-like data (the runtime study's generator when its file is absent)
    "densired": lambda n: densired_like(n),
    # issue 38: two random walks of 20 blobs, step scale 1.0 (the 270 s case)
    "walk20": lambda n: densired_like(n, steps=20, step_scale=1.0),
    # many small dense clusters: 2,000 tight blobs (sd 0.05-0.15) in a 20-wide box
    "many-small": lambda n: blobs(n, centres=2000, scales=(0.05, 0.15)),
    # a wide density range: 40 blobs whose sds span 0.05-3 (a 60x range)
    "wide-density": lambda n: blobs(n, centres=40, scales=(0.05, 3.0)),
}
"""The generators of ``--shape`` (all 10-d, 0.1 % uniform noise, binary sensitive attribute)."""


def load(n: int, shape: str = "densired") -> tuple[np.ndarray, np.ndarray, str]:
    if shape != "densired":
        X, s = SHAPES[shape](n)
        return X, s, f"generated ({shape}, seed 0)"
    f = SHARED / f"dataset_n_{n}.csv"
    if f.exists():
        with open(f) as fh:
            header = fh.readline().strip().split(",")
        A = np.loadtxt(f, delimiter=",", skiprows=1)
        if len(header) == A.shape[1] - 1:
            header = ["index", *header]
        low = [h.strip().lower() for h in header]
        X = A[:, [i for i, h in enumerate(low) if h.startswith("feat_")]]
        s = A[:, low.index("sensitive")]
        return X, np.asarray(s, dtype=int), f"DENSIRED {f.name}"
    X, s = densired_like(n)
    return X, s, "generated (densired_like, seed 0)"


def run_one(n: int, solver: str, labels: Path | None = None, shape: str = "densired") -> dict:
    from fairaudit.cluster.fairden import FairDen

    X, s, source = load(n, shape)
    X = (X - X.mean(0)) / X.std(0)
    t0 = time.perf_counter()
    c0 = time.process_time()
    f = FairDen(2, min_pts=21, solver=solver, random_state=0).fit(X, sensitive=s)
    t = time.perf_counter() - t0
    cpu = time.process_time() - c0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    lab = f.labels_
    if labels is not None:  # for same-run comparisons of two code versions
        np.save(labels, lab)
    return {
        "n": n,
        "solver": f.solver_,
        "seconds": round(t, 3),
        "cpu_seconds": round(cpu, 1),
        "load": open("/proc/loadavg").read().split()[:3] if Path("/proc/loadavg").exists() else None,
        "peak_rss_mb": round(peak_mb, 1),
        "source": source,
        "cluster_sizes": np.bincount(lab + 1).tolist(),
        "k_history": list(f.k_history_),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    one = sub.add_parser("one")
    one.add_argument("--n", type=int, required=True)
    one.add_argument("--solver", default="matrix-free")
    one.add_argument("--verbose", action="store_true", help="log FairDen's stages to stderr")
    one.add_argument("--labels", type=Path, default=None, help="save labels_ here (.npy)")
    one.add_argument("--shape", choices=sorted(SHAPES), default="densired",
                     help="the data's density structure (see SHAPES)")
    ser = sub.add_parser("series")
    ser.add_argument("--sizes", type=int, nargs="+", required=True)
    ser.add_argument("--dense-max", type=int, default=5000)
    ser.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    if a.cmd == "one":
        if a.verbose:
            import logging

            logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
            logging.getLogger("fairaudit.cluster.dc_distance").setLevel(logging.DEBUG)
        print(json.dumps(run_one(a.n, a.solver, a.labels, a.shape)))
        return
    print(f"# {platform.platform()} python {platform.python_version()}", flush=True)
    rows = []
    for n in a.sizes:
        for solver in ("matrix-free", "dense"):
            if solver == "dense" and n > a.dense_max:
                continue
            cmd = [sys.executable, __file__, "one", "--n", str(n), "--solver", solver]
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode:
                print(f"n={n} {solver}: FAILED\n{res.stderr[-400:]}", flush=True)
                continue
            row = json.loads(res.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(json.dumps(row), flush=True)
    if a.out:
        a.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
