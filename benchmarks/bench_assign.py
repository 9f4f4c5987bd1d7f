"""Benchmark: fit a clusterer on a sample, then assign every row of a partitioned dataset —
the whole ``fairaudit audit`` path (issue 15, item 5), local engine vs a local Dask cluster.

    nice python benchmarks/bench_assign.py generate --rows 50000000 --files 50 --dir /tmp/fa
    nice python benchmarks/bench_assign.py run --dir /tmp/fa --cluster kmeans:n_clusters=8 \
        --sample 200000 [--files-used 50] [--workers 2]

``generate`` writes (seeded) ``--files`` Parquet files of a Gaussian mixture (``--d`` numeric
features ``x1..xd``, 8 components) with two sensitive columns ``sex`` (2 groups, linked to the
component) and ``race`` (5 groups). ``run`` times, each in a fresh process, ``fairaudit audit
GLOB --sensitive sex,race --features x1,..,xd --cluster SPEC --sample N --audit balance
--bootstrap 0 --timing`` on the first ``--files-used`` files, once on the local engine and once
with ``--workers W``, and prints from the JSON's timing block the seconds of the fit and of the
assignment pass, the rows assigned, and rows/s per core (rows / (seconds x cores used); the
assignment pass of the local engine uses polars' threads and one numpy thread per batch, so
all of the machine's cores are counted for it, the Dask pass uses ``W`` single-threaded
workers). The CPU time of the child process and its descendants is printed too.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def generate(folder: Path, rows: int, files: int, d: int, seed: int = 0) -> None:
    import numpy as np
    import polars as pl

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 3, (8, d))
    sexes = np.array(["female", "male"])
    races = np.array(["white", "black", "asian", "amer-indian", "other"])
    per = rows // files
    for i in range(files):
        n = per if i < files - 1 else rows - per * (files - 1)
        comp = rng.integers(0, 8, size=n)
        X = centres[comp] + rng.normal(size=(n, d))
        sex = sexes[(rng.random(n) < 0.2 + 0.6 * (comp % 2)).astype(np.int8)]
        race = races[rng.choice(5, size=n, p=[0.7, 0.12, 0.1, 0.03, 0.05])]
        cols = {"sex": sex, "race": race, **{f"x{j + 1}": X[:, j] for j in range(d)}}
        pl.DataFrame(cols).write_parquet(folder / f"part{i:03d}.parquet")
        print(f"wrote part{i:03d} ({n:,} rows)", flush=True)


def one_run(args: argparse.Namespace, files: list[Path], d: int, workers: int | None
            ) -> dict:
    features = ",".join(f"x{j + 1}" for j in range(d))
    with tempfile.TemporaryDirectory() as tmp:
        # a glob over the chosen files: a folder of symlinks keeps the command short
        link = Path(tmp) / "data"
        link.mkdir()
        for f in files:
            (link / f.name).symlink_to(f)
        out = Path(tmp) / "audit.html"
        cmd = [str(Path(sys.executable).parent / "fairaudit"), "audit", str(link / "*.parquet"),
               "--sensitive", "sex,race", "--features", features, "--cluster", args.cluster,
               "--sample", str(args.sample), "--audit", "balance", "--bootstrap", "0",
               "--timing", "--quiet", "-o", str(out)]
        if workers:
            cmd += ["--workers", str(workers)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
        doc = json.loads(out.with_suffix(".json").read_text())
    steps = doc["timing"]["steps"]

    def secs(kind: str) -> float:
        return sum(s["seconds"] for s in steps if s["kind"] == kind)

    lab = doc["labellings"][0]
    return {
        "cmd": " ".join(cmd[1:]),
        "wall": wall,
        "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "fit": secs("clusterer"),
        "assign": secs("assign"),
        "count": sum(s["seconds"] for s in steps if s["step"] == "count"),
        "assignment": lab["extras"].get("assignment", {}),
        "composition": lab.get("composition"),
        "results": [(r["attribute"], r["metric"], r["value"]) for r in doc["results"]],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    g = sub.add_parser("generate")
    g.add_argument("--rows", type=int, default=50_000_000)
    g.add_argument("--files", type=int, default=50)
    g.add_argument("--d", type=int, default=5)
    g.add_argument("--dir", type=Path, required=True)
    r = sub.add_parser("run")
    r.add_argument("--dir", type=Path, required=True)
    r.add_argument("--cluster", default="kmeans:n_clusters=8")
    r.add_argument("--sample", type=int, default=200_000)
    r.add_argument("--files-used", type=int, default=None)
    r.add_argument("--workers", type=int, default=2)
    r.add_argument("--no-local", action="store_true")
    args = ap.parse_args()
    if args.what == "generate":
        generate(args.dir, args.rows, args.files, args.d)
        return

    import polars as pl

    files = sorted(args.dir.glob("*.parquet"))[: args.files_used]
    schema = pl.read_parquet_schema(files[0])
    d = sum(1 for c in schema if c.startswith("x"))
    cores = os.cpu_count() or 1
    print(f"date: {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')} · {platform.node()} · "
          f"{cores} cores · python {platform.python_version()} · polars {pl.__version__}")
    print(f"{len(files)} files, {d} features; load average before {os.getloadavg()}")
    runs = []
    for workers in ([] if args.no_local else [None]) + ([args.workers] if args.workers else []):
        res = one_run(args, files, d, workers)
        used = workers or cores
        n = res["assignment"].get("rows_assigned", 0)
        res["engine"] = f"dask, {workers} workers" if workers else "local"
        res["per_core"] = n / res["assign"] / used if res["assign"] else float("nan")
        runs.append(res)
        print(f"$ {res['cmd']}")
        print(f"  {res['engine']}: wall {res['wall']:.1f} s, CPU {res['cpu']:.1f} s; fit "
              f"{res['fit']:.1f} s; assign {res['assign']:.1f} s for {n:,} rows "
              f"({res['assignment'].get('rows_fitted', 0):,} fitted) = {n / res['assign']:,.0f} "
              f"rows/s = {res['per_core']:,.0f} rows/s per core ({used} cores); "
              f"count pass {res['count']:.1f} s", flush=True)
    if len(runs) == 2:
        same = runs[0]["results"] == runs[1]["results"]
        print(f"same JSON numbers on both engines: {same}; dask / local wall "
              f"{runs[1]['wall'] / runs[0]['wall']:.2f}, assign "
              f"{runs[1]['assign'] / runs[0]['assign']:.2f}")
    print(f"load average after {os.getloadavg()}")


if __name__ == "__main__":
    main()
