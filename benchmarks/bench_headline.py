"""Benchmark: the headline command (`fairaudit audit data.parquet --sensitive sex,race`) at
100,000 and 1,000,000 rows, and a 20M-row labels audit against a bare polars count (issue 38).

    .venv/bin/python benchmarks/bench_headline.py headline [--rows 100000 1000000] [--repeat 1]
    .venv/bin/python benchmarks/bench_headline.py labels [--rows 20000000] [--repeat 3]

``headline``: the public census table (UCI Adult, ``../shared/data/adult/adult.csv``, 32,561
rows, 15 columns) upsampled (seeded) to the largest row count — rows drawn with replacement,
every numeric column plus Gaussian noise of 2 % of its standard deviation, so that no two rows
are identical — written once to ``benchmarks/_data/adult_up_<n>.parquet``; each smaller row
count (at least the audit's sample size, 100,000) is that table's own seeded sample
(:func:`sample_of`: the rows ``fairaudit audit`` of the large table fits its clusterers on, in
its order), so that at 100,000 rows the two audits fit exactly the same rows — same k by
silhouette, same FairDen and FFCM fits — and differ only by what the rows beyond the sample
cost (reading, encoding, assigning and counting them). Then, back to back in fresh processes,
``fairaudit audit FILE --sensitive sex,race --timing --json OUT --quiet`` (the default
comparison: k-means with k by silhouette, FairDen and FFCM with their twins, fitted on the
seeded 100,000-row sample; then every row assigned). Reported per run: wall, CPU (user +
system of the child), peak RSS, the load average, and the ``--timing`` steps (fits, the
assignment pass per labelling, auditors); then the ratio of the largest to the smallest row
count, on wall and on CPU.

``labels``: a seeded Parquet file of ``--rows`` rows (``sex``, ``race``, a ``segment`` label
column of 8 values and one numeric feature ``score``) under ``benchmarks/_data/``; interleaved
rounds of the bare polars read-and-count (``scan_parquet(...).group_by([segment, sex,
race]).agg(pl.len())``, streaming) and ``fairaudit audit FILE --sensitive sex,race --labels
segment --quiet`` (checks, the three counting auditors with 200 bootstrap replicates, quality
and proxy on their samples, HTML + JSON). Ratios per round, wall and CPU.

The machine is shared: read the CPU figures and the same-run ratios (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BIN = Path(sys.executable).parent
ADULT = ROOT.parent / "shared" / "data" / "adult" / "adult.csv"
DEFAULT_SAMPLE = 100_000  # fairaudit.core.inputs.DEFAULT_MAX_ROWS: rows the clusterers fit
NUMERIC = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")

sys.path.insert(0, str(HERE))
from bench_audit import _WRAP  # noqa: E402  (the timed child process: wall, peak RSS, CPU)


def measure(cmd: list[str]) -> dict[str, float]:
    """Wall, peak RSS (MB) and CPU seconds (user + system) of ``cmd`` in a fresh process."""
    load = os.getloadavg()[0]
    proc = subprocess.run([sys.executable, "-c", _WRAP, *cmd], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    wall, rss, cpu = (float(v) for v in proc.stdout.split())
    return {"wall": wall, "rss_mb": rss, "cpu": cpu, "load": load}


def upsample_adult(path: Path, rows: int, seed: int = 0) -> None:
    """The census table upsampled to ``rows`` rows (seeded; numeric columns jittered)."""
    import numpy as np
    import polars as pl

    if path.exists():
        return
    if not ADULT.exists():
        raise SystemExit(f"{ADULT} not found: the headline benchmark needs the census table")
    path.parent.mkdir(parents=True, exist_ok=True)
    base = pl.read_csv(ADULT)
    rng = np.random.default_rng(seed)
    take = rng.integers(0, base.height, size=rows)
    frame = base[take]
    cols = []
    for c in NUMERIC:
        v = frame.get_column(c).cast(pl.Float64).to_numpy()
        sd = float(base.get_column(c).cast(pl.Float64).std())
        cols.append(pl.Series(c, v + rng.normal(scale=0.02 * sd, size=rows)))
    frame = frame.with_columns(cols)
    tmp = path.with_suffix(".tmp.parquet")
    frame.write_parquet(tmp)
    tmp.replace(path)


def sample_of(path: Path, source: Path, rows: int, seed: int = 0) -> None:
    """The ``rows`` rows of ``source`` that ``fairaudit audit source`` (``--seed seed``, no null
    in any column) fits its clusterers on, in its order — drawn by the audit's own draw
    (``fairaudit.core.inputs._draw_rows``) — so an audit of this file fits exactly what the
    audit of ``source`` fits, and the two runs differ only by the rows beyond the sample."""
    import polars as pl

    from fairaudit.core.data import ROW_ID
    from fairaudit.core.inputs import _draw_rows
    from fairaudit.core.spec import ChainSpec, DataSpec

    if path.exists():
        return
    lf = pl.scan_parquet(source)
    cols = lf.collect_schema().names()
    n = int(lf.select(pl.len()).collect().item())
    if lf.null_count().collect().sum_horizontal().item():
        raise SystemExit(f"{source} has nulls: the sample would skip those rows")
    spec = ChainSpec(data=DataSpec(sensitive=(cols[0],), seed=seed))
    frame, _, _ = _draw_rows(lf, cols, [], spec, n, rows, n_valid=n, sample_to=None)
    tmp = path.with_suffix(".tmp.parquet")
    frame.drop(ROW_ID).write_parquet(tmp)
    tmp.replace(path)


def generate_labels(path: Path, rows: int, seed: int = 0) -> None:
    """``rows`` rows of sex, race, an 8-valued segment and one numeric feature (seeded)."""
    import numpy as np
    import polars as pl

    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    segment = rng.integers(0, 8, size=rows, dtype=np.int32)
    sex = (rng.random(rows) < 0.3 + 0.05 * (segment % 3)).astype(np.uint8)
    race = rng.choice(5, size=rows, p=[0.7, 0.12, 0.1, 0.03, 0.05]).astype(np.uint8)
    frame = pl.DataFrame({
        "segment": segment,
        "sex": pl.Series(sex).replace_strict([0, 1], ["female", "male"]),
        "race": pl.Series(race).replace_strict(
            list(range(5)), ["white", "black", "asian", "amer-indian", "other"]),
        "score": rng.normal(size=rows) + 0.3 * segment,
    })
    tmp = path.with_suffix(".tmp.parquet")
    frame.write_parquet(tmp)
    tmp.replace(path)


def _header(what: str) -> None:
    print(f"\n{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC · {platform.platform()} · "
          f"{os.cpu_count()} cores · Python {platform.python_version()} · {what}")


def _steps(doc: dict) -> list[tuple[str, float]]:
    """The ``--timing`` steps of an audit JSON, as (name, seconds)."""
    out = []
    for t in doc.get("timing", {}).get("steps", []):
        name = " ".join(str(v) for v in (t.get("kind"), t.get("step"), t.get("labelling"))
                        if v)
        out.append((name, float(t.get("seconds", 0.0))))
    return out


def headline(rows: list[int], repeat: int) -> None:
    fa = str(BIN / "fairaudit")
    out = HERE / "_out"
    out.mkdir(exist_ok=True)
    files = {}
    big = rows[-1]
    files[big] = HERE / "_data" / f"adult_up_{big}.parquet"
    upsample_adult(files[big], big)
    for n in rows[:-1]:
        if n < DEFAULT_SAMPLE:  # below the sample size the audit fits every row: no same fits
            raise SystemExit(f"--rows {n}: the comparison needs row counts >= {DEFAULT_SAMPLE:,}")
        files[n] = HERE / "_data" / f"adult_up_{big}_sample_{n}.parquet"
        sample_of(files[n], files[big], n)
    _header("headline command, " + ", ".join(f"{n:,}" for n in rows) + " rows")
    res: dict[int, list[dict]] = {n: [] for n in rows}
    for _ in range(repeat):
        for n in rows:  # interleaved: each ratio compares runs made under the same load
            js = out / f"headline_{n}.json"
            m = measure([fa, "audit", str(files[n]), "--sensitive", "sex,race", "--timing",
                         "--quiet", "--json", str(js), "--out", str(out / f"headline_{n}.html")])
            doc = json.loads(js.read_text())
            m["steps"] = _steps(doc)
            m["k"] = sorted({lab.get("n_clusters") for lab in doc.get("labellings", [])},
                            key=str)
            res[n].append(m)
            print(json.dumps({"rows": n, **{k: v for k, v in m.items() if k != "steps"}}),
                  flush=True)
    print("| rows | wall (s) | CPU (s) | peak RSS (MB) | load | the slowest steps (s) |")
    print("| ---: | ---: | ---: | ---: | ---: | --- |")
    for n in rows:
        for m in res[n]:
            top = sorted(m["steps"], key=lambda t: -t[1])[:8]
            print(f"| {n:,} | {m['wall']:.1f} | {m['cpu']:.1f} | {m['rss_mb']:.0f} | "
                  f"{m['load']:.1f} | " + "; ".join(f"{a} {b:.1f}" for a, b in top) + " |")
    lo, hi = rows[0], rows[-1]
    for key in ("wall", "cpu"):
        ratios = [b[key] / a[key] for a, b in zip(res[lo], res[hi], strict=True)]
        print(f"{key}: {hi:,} ÷ {lo:,} rows per round: "
              + ", ".join(f"{r:.2f}" for r in ratios)
              + f"; median {statistics.median(ratios):.2f}")
    # k by silhouette is chosen on each table's own sample, so the fits differ in work when the
    # two tables get different k: the ratio with the fits of the small run in both, i.e. the
    # small run plus what the large run spends outside its fits (read, count, assign, audit)
    eq = []
    for a, b in zip(res[lo], res[hi], strict=True):
        fits = [sum(sec for name, sec in m["steps"] if name.startswith("clusterer "))
                for m in (a, b)]
        eq.append((a["wall"] + (b["wall"] - fits[1]) - (a["wall"] - fits[0])) / a["wall"])
    print("k chosen per round: " + "; ".join(f"{lo:,}: {a['k']}, {hi:,}: {b['k']}"
                                             for a, b in zip(res[lo], res[hi], strict=True)))
    print(f"wall with the fits equalised (the {lo:,}-row run's fits in both): "
          + ", ".join(f"{r:.2f}" for r in eq) + f"; median {statistics.median(eq):.2f}")
    for n in rows:
        print(f"\nsteps at {n:,} rows (first round):")
        for name, sec in res[n][0]["steps"]:
            print(f"  {sec:8.2f}  {name}")


BARE = """
import sys, polars as pl
df = (pl.scan_parquet(sys.argv[1]).group_by(["segment", "sex", "race"]).agg(pl.len())
      .collect(engine="streaming"))
assert df.height > 0
"""


def labels(rows: int, repeat: int) -> None:
    fa = str(BIN / "fairaudit")
    out = HERE / "_out"
    out.mkdir(exist_ok=True)
    data = HERE / "_data" / f"labels_feature_{rows}.parquet"
    generate_labels(data, rows)
    audit = [fa, "audit", str(data), "--sensitive", "sex,race", "--labels", "segment",
             "--quiet", "--timing", "--json", str(out / "labels.json"),
             "--out", str(out / "labels.html")]
    subprocess.run(audit, check=False, stdout=subprocess.DEVNULL)  # warm the caches
    _header(f"labels audit of {rows:,} rows (one numeric feature) vs a bare polars count")
    rounds = []
    for _ in range(repeat):
        base = measure([sys.executable, "-c", BARE, str(data)])
        run = measure(audit)
        rounds.append((base, run))
        print(json.dumps({"bare": base, "audit": run}), flush=True)
    print("| round | bare wall / CPU (s) | audit wall / CPU (s) | audit RSS (MB) | load | "
          "ratio wall | ratio CPU |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for i, (b, a) in enumerate(rounds, 1):
        print(f"| {i} | {b['wall']:.2f} / {b['cpu']:.2f} | {a['wall']:.2f} / {a['cpu']:.2f} | "
              f"{a['rss_mb']:.0f} | {a['load']:.1f} | {a['wall'] / b['wall']:.2f} | "
              f"{a['cpu'] / b['cpu']:.2f} |")
    for key in ("wall", "cpu"):
        r = [a[key] / b[key] for b, a in rounds]
        print(f"{key} ratio: median {statistics.median(r):.2f}, max {max(r):.2f}")
    print("steps of the last audit:")
    for name, sec in _steps(json.loads((out / "labels.json").read_text())):
        print(f"  {sec:8.2f}  {name}")


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    h = sub.add_parser("headline")
    h.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    h.add_argument("--repeat", type=int, default=1)
    lab = sub.add_parser("labels")
    lab.add_argument("--rows", type=int, default=20_000_000)
    lab.add_argument("--repeat", type=int, default=3)
    g = sub.add_parser("generate", help="only write the data files")
    g.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    a = ap.parse_args()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "fairaudit"),
                    str(ROOT / "plugins")], check=True, stdout=subprocess.DEVNULL)
    if a.cmd == "headline":
        headline(sorted(a.rows), a.repeat)
    elif a.cmd == "labels":
        labels(a.rows, a.repeat)
    else:
        rows = sorted(a.rows)
        upsample_adult(HERE / "_data" / f"adult_up_{rows[-1]}.parquet", rows[-1])
        for n in rows[:-1]:
            sample_of(HERE / "_data" / f"adult_up_{rows[-1]}_sample_{n}.parquet",
                      HERE / "_data" / f"adult_up_{rows[-1]}.parquet", n)


if __name__ == "__main__":
    main()
