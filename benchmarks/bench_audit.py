"""Benchmark: `fairaudit audit --labels` vs a bare polars group-by of the same columns.

    python benchmarks/bench_audit.py [--rows 50000000] [--repeat 3] [--small-only]
                                     [--other /path/to/another/checkout]

Small case (the fixed cost, issue 25): a seeded 7,214-row CSV with three columns (race, sex,
segment) under benchmarks/_data/, timed in the same run, each in a fresh process:

* baseline: `python -c "import polars as pl; pl.read_csv(f).group_by([race, sex, segment]).len()"`
* fairaudit: `fairaudit audit f --sensitive race,sex --labels segment --quiet` (input checks,
  balance/distribution/capacity with 200 bootstrap replicates, JSON + HTML report)

``--other DIR`` also times the audit of another checkout of fairaudit (e.g. ``git archive main |
tar -x -C /tmp/main``) in the same rounds, run as ``python -P -m fairaudit`` with
``PYTHONPATH=DIR:DIR/plugins`` (``-P``: the current folder, perhaps this checkout, must not come
first on the path):
a same-run before/after ratio.

fairaudit's bytecode is compiled first (`compileall`), as pip does when it installs the wheel
(an environment with PYTHONDONTWRITEBYTECODE=1 would otherwise recompile every module per run).
The Jinja template cache is warmed by one untimed run.

Large case:

Generates (once, seeded) a Parquet file with an int cluster column and two categorical sensitive
columns under benchmarks/_data/, then times, in the same run and each in a fresh process:

* baseline: `pl.scan_parquet(f).group_by([cluster, sex, race]).agg(pl.len()).collect(engine="streaming")`
* fairaudit: `fairaudit audit f --sensitive sex,race --labels cluster --quiet` (GX checks,
  balance/distribution/capacity with 200 bootstrap replicates, JSON + HTML report)
* `fairaudit --help` start-up, and `fairaudit audit` on the demo data.

Wall time and peak RSS (ru_maxrss of the child) are reported; the median of --repeat runs.
Prints a Markdown table for docs/benchmarks.md.
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
ROOT = HERE.parent
BIN = Path(sys.executable).parent


def generate(path: Path, rows: int, seed: int = 0) -> None:
    import numpy as np
    import polars as pl

    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    sexes = np.array(["female", "male"])
    races = np.array(["white", "black", "asian", "amer-indian", "other"])
    chunk = 5_000_000
    parts = []
    tmpdir = Path(tempfile.mkdtemp(dir=path.parent))
    for i, start in enumerate(range(0, rows, chunk)):
        n = min(chunk, rows - start)
        cluster = rng.integers(0, 8, size=n, dtype=np.int32)
        sex = sexes[(rng.random(n) < 0.3 + 0.05 * (cluster % 3)).astype(np.int8)]
        race = races[rng.choice(5, size=n, p=[0.7, 0.12, 0.1, 0.03, 0.05])]
        part = tmpdir / f"part{i:03d}.parquet"
        pl.DataFrame({"cluster": cluster, "sex": sex, "race": race}).write_parquet(part)
        parts.append(part)
    pl.scan_parquet([str(p) for p in parts]).sink_parquet(path)
    for p in parts:
        p.unlink()
    tmpdir.rmdir()


SMALL_ROWS = 7_214


def generate_small(path: Path, seed: int = 0) -> None:
    """Three columns like a scored-risk table: race, sex and a segment (seeded)."""
    import numpy as np
    import polars as pl

    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    n = SMALL_ROWS
    race = np.array(["African-American", "Caucasian", "Hispanic", "Other", "Asian",
                     "Native American"])[rng.choice(6, n, p=[0.51, 0.34, 0.09, 0.05, 0.005,
                                                             0.005])]
    sex = np.array(["Male", "Female"])[(rng.random(n) < 0.19).astype(int)]
    segment = np.array(["low", "medium", "high"])[rng.choice(3, n, p=[0.5, 0.3, 0.2])]
    pl.DataFrame({"race": race, "sex": sex, "segment": segment}).write_csv(path)


BARE_COUNT = (
    "import sys, polars as pl; "
    "pl.read_csv(sys.argv[1]).group_by(['race', 'sex', 'segment']).len()"
)

BASELINE = """
import sys, polars as pl
df = (pl.scan_parquet(sys.argv[1]).group_by(["cluster", "sex", "race"]).agg(pl.len())
      .collect(engine="streaming"))
assert df.height > 0
"""


CPU: dict[str, list[float]] = {}
"""CPU seconds (user + system) of each measured command, by its text: on a shared machine the
fairer figure (wall time waits for the other jobs' turns)."""


def measure(cmd: list[str], repeat: int) -> tuple[float, float]:
    walls, rss = [], []
    for _ in range(repeat):
        # run each measurement in a wrapper so RUSAGE_CHILDREN is per command
        wrapper = [sys.executable, "-c", _WRAP, *cmd]
        proc = subprocess.run(wrapper, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
        out = proc.stdout.split()
        walls.append(float(out[0]))
        rss.append(float(out[1]))
        CPU.setdefault(" ".join(cmd), []).append(float(out[2]))
    return statistics.median(walls), max(rss)


_WRAP = """
import resource, subprocess, sys, time
t0 = time.perf_counter()
p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
wall = time.perf_counter() - t0
if p.returncode not in (0, 1):
    sys.stderr.write(p.stderr.decode()[-3000:]); sys.exit(2)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(wall, ru.ru_maxrss / 1024, ru.ru_utime + ru.ru_stime)
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=50_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--small-only", action="store_true",
                    help="only the 7,214-row case and `fairaudit --help`")
    ap.add_argument("--other", type=Path, default=None,
                    help="another checkout whose audit is timed in the same rounds")
    args = ap.parse_args()
    for tree in (ROOT, *([args.other] if args.other else [])):
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "fairaudit"),
                        str(tree / "plugins")], check=True, stdout=subprocess.DEVNULL)
    out = HERE / "_out"
    out.mkdir(exist_ok=True)
    fa = str(BIN / "fairaudit")
    small = HERE / "_data" / f"small_{SMALL_ROWS}.csv"
    generate_small(small)
    small_audit = [fa, "audit", str(small), "--sensitive", "race,sex", "--labels", "segment",
                   "--quiet", "--out", str(out / "small.html")]
    subprocess.run(small_audit, check=False, stdout=subprocess.DEVNULL)  # warm the caches
    # interleaved (baseline, audit, --help) rounds: a shared machine's load changes by the
    # minute, and each ratio should compare runs made under the same load
    cmds = [[sys.executable, "-c", BARE_COUNT, str(small)], small_audit, [fa, "--help"]]
    if args.other:
        other = args.other.resolve()
        env = f"PYTHONPATH={other}:{other / 'plugins'}"
        other_audit = ["env", env, sys.executable, "-P", "-m", "fairaudit", *small_audit[1:-2],
                       "--out", str(out / "small_other.html")]
        subprocess.run(other_audit, check=False, stdout=subprocess.DEVNULL)  # warm
        cmds.append(other_audit)
    rounds = [[measure(c, 1) for c in cmds] for _ in range(args.repeat)]
    med = [(statistics.median(r[i][0] for r in rounds), max(r[i][1] for r in rounds))
           for i in range(len(cmds))]
    ratios = [r[1][0] / r[0][0] for r in rounds]
    rows = [(f"bare polars read_csv + group_by().len() ({SMALL_ROWS:,} rows)", med[0]),
            (f"fairaudit audit --labels ({SMALL_ROWS:,} rows, 3 columns, HTML+JSON)", med[1]),
            ("fairaudit --help", med[2])]
    if args.other:
        rows.append((f"the same audit, {args.other}", med[3]))
    _table(rows, args.repeat, f"rows={SMALL_ROWS:,} (small case)")
    print(f"audit ÷ bare count per round (same minute): {', '.join(f'{r:.2f}' for r in ratios)}"
          f"; median {statistics.median(ratios):.2f}, max {max(ratios):.2f}")
    cpu = [CPU[" ".join(c)] for c in cmds]
    cpu_ratios = [a / b for a, b in zip(cpu[1], cpu[0], strict=True)]
    print(f"CPU seconds (user+system), median: bare {statistics.median(cpu[0]):.3f}, audit "
          f"{statistics.median(cpu[1]):.3f}"
          + (f", {args.other} {statistics.median(cpu[3]):.3f}" if args.other else "")
          + f"; audit ÷ bare on CPU per round: median {statistics.median(cpu_ratios):.2f}, "
          f"max {max(cpu_ratios):.2f}")
    if args.other:
        other_ratios = [r[3][0] / r[0][0] for r in rounds]
        print(f"{args.other} audit ÷ bare count per round: "
              f"{', '.join(f'{r:.2f}' for r in other_ratios)}; median "
              f"{statistics.median(other_ratios):.2f}, max {max(other_ratios):.2f}")
    if args.small_only:
        return
    data = HERE / "_data" / f"labels_{args.rows}.parquet"
    t0 = time.perf_counter()
    generate(data, args.rows)
    print(f"data: {data} ({data.stat().st_size / 1e6:.0f} MB, generated/checked in "
          f"{time.perf_counter() - t0:.0f}s)", file=sys.stderr)
    rows = []
    base = measure([sys.executable, "-c", BASELINE, str(data)], args.repeat)
    rows.append(("bare polars streaming group-by", base))
    audit = measure([fa, "audit", str(data), "--sensitive", "sex,race", "--labels", "cluster",
                     "--quiet", "--out", str(out / "bench.html")], args.repeat)
    rows.append(("fairaudit audit --labels (checks, 3 auditors, 200 bootstrap, HTML+JSON)", audit))
    audit_nb = measure([fa, "audit", str(data), "--sensitive", "sex,race", "--labels", "cluster",
                        "--quiet", "--bootstrap", "0", "--out", str(out / "bench0.html")],
                       args.repeat)
    rows.append(("fairaudit audit --labels --bootstrap 0", audit_nb))
    help_ = measure([fa, "--help"], max(args.repeat, 5))
    rows.append(("fairaudit --help", help_))
    demo = measure([fa, "audit", str(ROOT / "examples/data/adult_sample.parquet"), "--sensitive",
                    "sex,race", "--quiet", "--out", str(out / "demo.html")], args.repeat)
    rows.append(("fairaudit audit on the demo data (4,000 rows, default comparison)", demo))

    _table(rows, args.repeat, f"rows={args.rows:,}")


def _table(rows: list[tuple[str, tuple[float, float]]], repeat: int, what: str) -> None:
    """A Markdown table; the first row is the baseline of the ratios."""
    base = rows[0][1]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\n{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC · {platform.platform()} · "
          f"{os.cpu_count()} cores · load {load:.1f} · Python {platform.python_version()} · "
          f"{what} · median of {repeat}")
    print("| command | wall (s) | peak RSS (MB) | time ÷ baseline | memory ÷ baseline |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, (wall, rss) in rows:
        print(f"| {name} | {wall:.2f} | {rss:.0f} | {wall / base[0]:.2f} | {rss / base[1]:.2f} |")


if __name__ == "__main__":
    main()
