"""Benchmark: a labels column with thousands of clusters (issue 12, item 6).

    python benchmarks/bench_many_clusters.py [--rows 20000] [--clusters 10000]
        [--baseline-src DIR] [--repeat 1] [--profile]

Generates (seeded) a Parquet file of ``--rows`` rows with a ``segment`` column of ``--clusters``
ids and two sensitive columns (``sex``: 2 groups, ``race``: 5 groups), then runs, each in a fresh
process, ``fairaudit audit FILE --sensitive sex,race --labels segment --quiet`` (default
options: GX checks, balance / distribution / capacity with 200 bootstrap replicates, JSON and
HTML). With ``--baseline-src DIR`` (a source checkout of an older fairaudit, e.g. made with
``git archive <commit> | tar -x -C DIR``) the same command also runs with ``PYTHONPATH=DIR``
and ``DIR/plugins``, in the same run, for a before/after comparison.

Reports wall time, peak RSS of the child, and the sizes of the HTML and the JSON. With
``--profile`` it first runs the same audit of this checkout once in this process under cProfile
(process time) and prints where the time goes: the fairaudit functions with the largest
cumulative time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def generate(path: Path, rows: int, clusters: int, seed: int = 0) -> None:
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(seed)
    segment = rng.integers(0, clusters, size=rows)
    sex = np.array(["female", "male"])[(rng.random(rows) < 0.4).astype(np.int8)]
    race = np.array(["white", "black", "asian", "amer-indian", "other"])[
        rng.choice(5, size=rows, p=[0.7, 0.12, 0.1, 0.03, 0.05])
    ]
    pl.DataFrame({"segment": segment, "sex": sex, "race": race}).write_parquet(path)


def run_once(data: Path, out: Path, src: Path | None) -> dict:
    env = dict(os.environ)
    argv = ["fairaudit", "audit", str(data), "--sensitive", "sex,race", "--labels", "segment",
            "--quiet", "--out", str(out)]
    # the child reports its own peak RSS on its last stderr line
    code = ("import resource, runpy, sys\n"
            f"sys.argv = {argv!r}\n"
            "try:\n    runpy.run_module('fairaudit.cli', run_name='__main__')\n"
            "finally:\n    print('maxrss', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,"
            " file=sys.stderr)\n")
    cmd = [sys.executable, "-c", code]
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(src), str(src / "plugins")])
        env["FAIRAUDIT_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    # cwd outside any checkout: "" on sys.path must not shadow PYTHONPATH
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False,
                          cwd=out.parent)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr}")
    lines = proc.stderr.splitlines()
    peak_kb = int(lines[-1].split()[1])
    js = out.with_suffix(".json")
    return {
        "wall_s": wall,
        "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "peak_mb": peak_kb / 1024,
        "html_mb": out.stat().st_size / 1e6,
        "json_mb": js.stat().st_size / 1e6,
        "stderr_lines": len([x for x in lines[:-1] if x.strip()]),
    }


def profile(data: Path, out: Path, top: int = 25) -> None:
    """One in-process run under cProfile with process time; prints the top fairaudit frames."""
    import cProfile
    import io
    import pstats

    from fairaudit.cli import main as cli

    argv = ["audit", str(data), "--sensitive", "sex,race", "--labels", "segment", "--quiet",
            "--out", str(out)]
    prof = cProfile.Profile(time.process_time)
    t0 = time.process_time()
    prof.enable()
    try:
        cli(argv, standalone_mode=False)
    except SystemExit as exc:  # the CLI exits with the audit's status (1 = a check failed)
        if exc.code not in (0, 1, None):
            raise
    finally:
        prof.disable()
    total = time.process_time() - t0
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf).sort_stats("cumulative")
    stats.print_stats(r"fairaudit|fairaudit_builtins", top)
    print(f"profile: {total:.1f} s process time in one process (with the lazy imports of "
          "polars, Great Expectations and matplotlib; cProfile adds to the Python-heavy parts)")
    print(buf.getvalue())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--clusters", type=int, default=10_000)
    ap.add_argument("--baseline-src", type=Path, default=None)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "many.parquet"
        generate(data, args.rows, args.clusters)
        if args.profile:
            profile(data, Path(tmp) / "profile.html")
        rows = []
        variants = [("this checkout", None)]
        if args.baseline_src is not None:
            variants.insert(0, (f"baseline {args.baseline_src}", args.baseline_src))
        for name, src in variants:
            for i in range(args.repeat):
                r = run_once(data, Path(tmp) / f"r{i}-{len(rows)}.html", src)
                rows.append((name, r))
                print(name, {k: round(v, 2) for k, v in r.items()}, flush=True)
    print()
    print(f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}, "
          f"python {platform.python_version()}")
    print(f"`python benchmarks/bench_many_clusters.py --rows {args.rows} --clusters "
          f"{args.clusters}" + (" --baseline-src DIR" if args.baseline_src else "") + "`")
    print()
    print("| code | wall | CPU | peak RSS | HTML | JSON |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, r in rows:
        print(f"| {name} | {r['wall_s']:.1f} s | {r['cpu_s']:.1f} s | {r['peak_mb']:.0f} MB | "
              f"{r['html_mb']:.2f} MB | {r['json_mb']:.2f} MB |")


if __name__ == "__main__":
    main()
