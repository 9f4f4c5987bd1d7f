"""Benchmark: the count pass of a labels audit on the local engine vs the Dask engine vs a bare
polars group-by, in the same run.

    python benchmarks/bench_engines.py [--rows 50000000] [--files 20] [--workers 2] [--repeat 3]
        [--dir /tmp/fairaudit_bench] [--cli]

Generates (once, seeded) a partitioned Parquet dataset under ``--dir`` (an int cluster
column and two categorical sensitive columns), then times, in this process:

* baseline: `pl.scan_parquet(glob).group_by([cluster, sex, race]).agg(pl.len())` (streaming)
* local: `LocalEngine().count(...)` — what `fairaudit audit --labels` runs
* dask: `DaskEngine(workers=N).count(...)` on a local cluster of N worker processes (the
  cluster start is timed apart)

and checks that the local and Dask joint tables are identical. With ``--cli`` it also times the
whole command, each in a fresh process: ``fairaudit audit GLOB --sensitive sex,race --labels
cluster --quiet`` on the local engine and with ``--workers N`` (cluster start included), and
checks that their JSON results are identical. Prints Markdown tables for docs/benchmarks.md
(median of --repeat runs; ratios against the baseline of the same run).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def generate(folder: Path, rows: int, files: int, seed: int = 0) -> None:
    import numpy as np
    import polars as pl

    if folder.exists() and len(list(folder.glob("*.parquet"))) == files:
        return
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    sexes = np.array(["female", "male"])
    races = np.array(["white", "black", "asian", "amer-indian", "other"])
    per = rows // files
    for i in range(files):
        n = per if i < files - 1 else rows - per * (files - 1)
        cluster = rng.integers(0, 8, size=n, dtype=np.int32)
        sex = sexes[(rng.random(n) < 0.3 + 0.05 * (cluster % 3)).astype(np.int8)]
        race = races[rng.choice(5, size=n, p=[0.7, 0.12, 0.1, 0.03, 0.05])]
        pl.DataFrame({"cluster": cluster, "sex": sex, "race": race}).write_parquet(
            folder / f"part{i:03d}.parquet")


def main() -> None:
    import numpy as np
    import polars as pl

    from fairaudit.core.data import ColumnRoles
    from fairaudit.core.engines import DaskEngine, LocalEngine

    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=50_000_000)
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "fairaudit_bench")
    ap.add_argument("--cli", action="store_true")
    args = ap.parse_args()
    folder = args.dir / f"engines_{args.rows}_{args.files}"
    generate(folder, args.rows, args.files)
    glob = str(folder / "*.parquet")
    roles = ColumnRoles(sensitive=("sex", "race"), features=(), labels="cluster")

    def baseline():
        return (pl.scan_parquet(glob).group_by(["cluster", "sex", "race"]).agg(pl.len())
                .collect(engine="streaming"))

    def local():
        return LocalEngine().count(pl.scan_parquet(glob), path=glob, roles=roles,
                                   reader_options={})

    t0 = time.perf_counter()
    dask = DaskEngine(workers=args.workers)
    dask.client()
    start = time.perf_counter() - t0

    def on_dask():
        return dask.count(None, path=glob, roles=roles, reader_options={})

    times: dict[str, list[float]] = {"baseline": [], "local": [], "dask": []}
    for _ in range(args.repeat):
        for name, fn in (("baseline", baseline), ("local", local), ("dask", on_dask)):
            t = time.perf_counter()
            out = fn()
            times[name].append(time.perf_counter() - t)
            if name == "local":
                j_local = out[0]
            if name == "dask":
                j_dask = out[0]
    dask.close()
    same = (np.array_equal(j_local.counts, j_dask.counts)
            and np.array_equal(j_local.cluster, j_dask.cluster)
            and np.array_equal(j_local.codes, j_dask.codes))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{dt.date.today()} · {platform.node()} · {os.cpu_count()} cores · "
          f"{platform.python_version()} · polars {pl.__version__} · load "
          f"{os.getloadavg()[0]:.1f}")
    print(f"`python benchmarks/bench_engines.py --rows {args.rows} --files {args.files} "
          f"--workers {args.workers} --repeat {args.repeat}`; identical tables: {same}\n")
    print("| pass | median wall (s) | ratio to baseline |")
    print("|---|---|---|")
    for k in ("baseline", "local", "dask"):
        print(f"| {k} | {med[k]:.2f} | {med[k] / med['baseline']:.2f} |")
    print(f"| dask cluster start ({args.workers} workers) | {start:.2f} | |")
    if args.cli:
        cli_runs(glob, args)


def cli_runs(glob: str, args: argparse.Namespace) -> None:
    """The whole ``fairaudit audit --labels`` command, local vs --workers N, fresh processes."""
    import json

    exe = str(Path(sys.executable).parent / "fairaudit")
    base = [exe, "audit", glob, "--sensitive", "sex,race", "--labels", "cluster", "--quiet"]
    times: dict[str, list[float]] = {"local": [], "dask": []}
    results: dict[str, list] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeat):
            for name, extra in (("local", []), ("dask", ["--workers", str(args.workers)])):
                out = Path(tmp) / f"{name}.html"
                t = time.perf_counter()
                proc = subprocess.run([*base, *extra, "-o", str(out)], capture_output=True,
                                      text=True)
                times[name].append(time.perf_counter() - t)
                if proc.returncode not in (0, 1):
                    raise SystemExit(f"{name} failed ({proc.returncode}): {proc.stderr}")
                doc = json.loads(out.with_suffix(".json").read_text())
                results[name] = [(r["labelling"], r["metric"], r["attribute"], r["value"],
                                  r["ci"]) for r in doc["results"]]
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\n`{' '.join(base[1:])} [--workers {args.workers}]`, fresh processes; identical "
          f"JSON results: {results['local'] == results['dask']}; load "
          f"{os.getloadavg()[0]:.1f}\n")
    print("| command | median wall (s) | runs (s) | ratio to local |")
    print("|---|---|---|---|")
    for k in ("local", "dask"):
        runs = ", ".join(f"{t:.1f}" for t in times[k])
        print(f"| {k} | {med[k]:.2f} | {runs} | {med[k] / med['local']:.2f} |")


if __name__ == "__main__":
    main()
