"""Benchmark: ``fairaudit repair`` on 1,000,000 rows, 10 segments, 2 sensitive attributes
(issue 39; goal: under a minute).

    nice python benchmarks/bench_repair.py [--rows 1000000] [--segments 10] [--features]
        [--objective moves|cost] [--bootstrap 200] [--dir /tmp/fa_repair]

Writes (seeded) one Parquet file: ``sex`` (2 groups) and ``race`` (5 groups, the smallest 3 %)
whose mix depends on the segment (planted imbalance: race balance about 0.3, sex about 0.6),
10 segments, 3 numeric features ``x1..x3`` (a Gaussian per segment). Then times, each in a
fresh process and back to back:

1. the baseline: ``fairaudit audit DATA --sensitive sex,race --labels segment --audit
   balance,distribution,capacity`` (the audit the repair runs twice);
2. ``fairaudit repair DATA --sensitive sex,race --labels segment --target balance=0.8 --out
   OUT.parquet`` (``--features x1,x2,x3`` with ``--features``; ``--objective cost`` too).

Prints, per run: wall seconds, CPU seconds (user + sys of the child), peak resident memory of
the child (ru_maxrss), the ratio to the baseline, the moves and the LP bound, and the
machine's load (``os.getloadavg``) before each run.
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
import time
from pathlib import Path


def generate(path: Path, rows: int, segments: int, seed: int = 0) -> None:
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(seed)
    seg = rng.integers(0, segments, size=rows)
    p_female = 0.25 + 0.5 * (seg % 2)  # odd segments mostly female
    sex = np.where(rng.random(rows) < p_female, "female", "male")
    base = np.array([0.70, 0.12, 0.10, 0.05, 0.03])
    tilt = rng.dirichlet(np.ones(5) * 1.5, size=segments)
    probs = 0.5 * base + 0.5 * tilt
    u = rng.random(rows)
    race_idx = (u[:, None] > np.cumsum(probs[seg], axis=1)).sum(axis=1)
    races = np.array(["white", "black", "asian", "other", "amer-indian"])
    centres = rng.normal(0, 3, (segments, 3))
    X = centres[seg] + rng.normal(size=(rows, 3))
    pl.DataFrame({"id": np.arange(rows), "sex": sex, "race": races[np.minimum(race_idx, 4)],
                  "segment": seg, "x1": X[:, 0], "x2": X[:, 1], "x3": X[:, 2]}
                 ).write_parquet(path)


def child(cmd: list[str]) -> dict:
    load = os.getloadavg()
    t0 = time.perf_counter()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"{cmd[1]} exited {proc.returncode}")
    return {"wall": wall, "cpu": (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime),
            "peak_mb": r1.ru_maxrss / 1024, "load": load, "stdout": proc.stdout}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--segments", type=int, default=10)
    ap.add_argument("--features", action="store_true")
    ap.add_argument("--objective", choices=["moves", "cost"], default="moves")
    ap.add_argument("--bootstrap", type=int, default=200)
    ap.add_argument("--target", default="balance=0.8")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/fa_repair"))
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    data = args.dir / f"seg_{args.rows}_{args.segments}.parquet"
    if not data.exists():
        generate(data, args.rows, args.segments)
    fa = str(Path(sys.executable).with_name("fairaudit"))
    common = ["--sensitive", "sex,race", "--labels", "segment", "--bootstrap",
              str(args.bootstrap), "-q"]
    base = child([fa, "audit", str(data), *common, "--audit", "balance",
                  "--audit", "distribution", "--audit", "capacity",
                  "--out", str(args.dir / "audit.html")])
    out = args.dir / "repaired.parquet"
    extra = (["--features", "x1,x2,x3"] if args.features or args.objective == "cost" else [])
    extra += ["--objective", args.objective]
    rep = child([fa, "repair", str(data), *common, "--target", args.target, "--out", str(out),
                 *extra])
    doc = json.loads(out.with_suffix(".json").read_text())
    s = doc["solution"]
    print(f"# {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}, "
          f"{os.cpu_count()} cores, python {platform.python_version()}")
    print(f"# data: {args.rows:,} rows, {args.segments} segments, sex x race; target "
          f"{args.target}; objective {args.objective}; features {bool(extra[:-2])}; "
          f"bootstrap {args.bootstrap}")
    for name, r in (("audit (baseline)", base), ("repair", rep)):
        print(f"{name:18} wall {r['wall']:7.2f} s  cpu {r['cpu']:7.2f} s  peak "
              f"{r['peak_mb']:7.0f} MB  load {r['load'][0]:.2f}  "
              f"ratio {r['wall'] / base['wall']:.2f}x")
    bound = "none" if s["lp_bound"] is None else f"{s['lp_bound']:,.3f}"
    print(f"moves {s['moves']:,}; objective {s['objective']} = {s['value']:,.3f} (LP bound "
          f"{bound}, proven {s['optimal']}, {s['method']}); targets "
          + "; ".join(f"{t['metric']}[{t['attribute']}] {t['before']:.3f} -> {t['after']:.3f}"
                      for t in doc["targets"]))


if __name__ == "__main__":
    main()
