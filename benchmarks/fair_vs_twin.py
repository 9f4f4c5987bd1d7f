"""Each fair clusterer against its own twin (``fair = false``) on public tables (issue 13).

For every public table in ``../shared/data`` with a person-level sensitive attribute and every
seed, runs the audit a user would run (``fairaudit audit TABLE --sensitive ATTR --seed S``: the
default comparison kmeans / fairden / ffcm with their twins, k chosen by k-means' silhouette)
plus the two other fair clusterers (``lofkm``, ``fce`` with its default bases = the earlier
labellings) and their twins, all at that k. Auditors: balance, distribution (Ed), capacity
(fairness_cce), quality (silhouette on a seeded sample) and lcd (AvgLCD); bootstrap off (the
point values do not depend on it); exact values (the analyst's report). Each fair method is
judged on its own target:

    fairden: balance (minimum over clusters, noise excluded) higher is better
    ffcm:    Ed (size-weighted)                             lower is better
    fce:     fairness_cce                                   higher is better
    lofkm:   AvgLCD                                         lower is better

The table gives, per method / table / attribute, the target of the fair labelling and of its
twin (mean over seeds), the gain (positive = fairer; mean ± sd, min over seeds), how many seeds
were strictly fairer / equal / less fair, the silhouette of both, and the seeds with a
degenerate-labelling warning. ``--extra`` adds clusterer flags to every run, e.g.
``--extra fairden:noise_rule=recompute`` is *not* possible (it would add a second fairden step);
use ``--params fairden:KEY=VALUE`` to change the parameters of a built-in step.

    nice .venv/bin/python benchmarks/fair_vs_twin.py --seeds 0,1,2,3,4 --out benchmarks/_out/fvt.md

Needs ``../shared/data``; exits with a message when it is absent.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import statistics
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
if not DATA.exists():
    DATA = Path("/work/shared/data")

# table key -> (path, separator, sensitive attributes to audit one at a time, features or None)
ADULT_NUM = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")
BANK_NUM = ("age", "balance", "day", "duration", "campaign", "pdays", "previous")
TABLES: dict[str, tuple[str, str, tuple[str, ...], tuple[str, ...] | None]] = {
    "adult": ("adult/adult.csv", ",", ("sex", "race"), None),
    "bank": ("bank/bank-full.csv", ";", ("marital",), None),
    "student": ("student/student_performance.csv", ",", ("sex",), None),
    # numeric features only (`--features ...`): tables like the credit-card one of issue 13
    "adult-num": ("adult/adult.csv", ",", ("sex", "race"), ADULT_NUM),
    "bank-num": ("bank/bank-full.csv", ";", ("marital",), BANK_NUM),
}
DEFAULT_TABLES = ("adult", "bank", "student")
METHODS = ("fairden", "ffcm", "lofkm", "fce")
CLUSTERERS = ("kmeans", "fairden", "ffcm", "lofkm", "fce")
AUDITS = ("balance", "distribution", "capacity", "quality", "lcd")


def _run(path: Path, sep: str, attr: str, seed: int, sample: int | None, rows: int | None,
         params: dict[str, dict[str, str]], features: tuple[str, ...] | None) -> dict:
    from fairaudit.api import audit

    clusters = []
    for name in CLUSTERERS:
        extra = params.get(name)
        clusters.append(name if not extra else
                        name + ":" + ",".join(f"{k}={v}" for k, v in extra.items()))
    import polars as pl

    # the file as `fairaudit audit FILE --separator SEP` reads it (the API takes a frame)
    frame = pl.read_csv(path, separator=sep, infer_schema_length=10_000)
    if rows is not None and rows < frame.height:  # a seeded extract of the table
        frame = frame.sample(rows, seed=seed)
    run = audit(frame, sensitive=[attr], cluster=clusters, twins=True, seed=seed,
                bootstrap=0, audit=list(AUDITS), sample=sample,
                features=list(features) if features else None)
    doc = run.doc
    labs = {lab["name"]: lab for lab in doc["labellings"]}
    rows = {}
    for t in doc.get("twins") or ():
        if t.get("attribute") not in (attr, None):
            continue
        fair, twin = labs[t["fair"]], labs[t["twin"]]
        rows[t["component"]] = {
            "metric": f"{t['target_auditor']}.{t['target_metric']}",
            "direction": t["direction"],
            "fair": t["fair_value"], "twin": t["twin_value"], "gain": t["gain"],
            "sil_fair": t["fair_quality"], "sil_twin": t["twin_quality"],
            "warn_fair": list(fair.get("warnings") or ()),
            "warn_twin": list(twin.get("warnings") or ()),
            "k": fair.get("n_clusters"), "k_twin": twin.get("n_clusters"),
            "sizes_fair": [c["n"] for c in fair.get("cluster_sizes") or ()],
            "sizes_twin": [c["n"] for c in twin.get("cluster_sizes") or ()],
            "noise_fair": fair.get("n_noise"), "noise_twin": twin.get("n_noise"),
        }
    return rows


def _fmt(x: float | None, nd: int = 4) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{nd}f}"


def _summary(method: str, table: str, attr: str, per_seed: dict[int, dict]) -> str:
    got = [r for r in per_seed.values() if r is not None]
    if not got:
        return f"| {method} | {table} | {attr} | no result | | | | | | | |"
    gains = [r["gain"] for r in got if r["gain"] is not None]
    fair = [r["fair"] for r in got if r["fair"] is not None]
    twin = [r["twin"] for r in got if r["twin"] is not None]
    better = sum(g > 1e-12 for g in gains)
    equal = sum(abs(g) <= 1e-12 for g in gains)
    worse = sum(g < -1e-12 for g in gains)
    sd = statistics.stdev(gains) if len(gains) > 1 else 0.0
    rel = [100 * r["gain"] / abs(r["twin"]) for r in got
           if r["gain"] is not None and r["twin"] not in (None, 0)]
    sf = [r["sil_fair"] for r in got if r["sil_fair"] is not None]
    st = [r["sil_twin"] for r in got if r["sil_twin"] is not None]
    degen = sorted({s for s, r in per_seed.items() if r and (r["warn_fair"])})
    degen_t = sorted({s for s, r in per_seed.items() if r and (r["warn_twin"])})
    ks = sorted({r["k"] for r in got})
    return (
        f"| {method} | {table} | {attr} | {got[0]['metric']} | "
        f"{_fmt(statistics.fmean(fair))} | {_fmt(statistics.fmean(twin))} | "
        f"{_fmt(statistics.fmean(gains))} ± {_fmt(sd)} (min {_fmt(min(gains))}) | "
        f"{_fmt(statistics.fmean(rel), 1) if rel else '—'} | {better}/{equal}/{worse} | "
        f"{_fmt(statistics.fmean(sf), 3) if sf else '—'} / "
        f"{_fmt(statistics.fmean(st), 3) if st else '—'} | "
        f"{','.join(map(str, ks))} | {degen or '-'} / {degen_t or '-'} |"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--tables", default=",".join(DEFAULT_TABLES),
                    help="comma list of " + ", ".join(TABLES) + " (table or table:attribute)")
    ap.add_argument("--sample", type=int, default=None,
                    help="fit the clusterers on a seeded sample of this many rows "
                         "(the audit's --sample; every row is still assigned and audited)")
    ap.add_argument("--rows", type=int, default=None,
                    help="audit a seeded random extract of this many rows of each table (drawn "
                         "with the run's seed, so the spread over seeds includes the draw)")
    ap.add_argument("--params", action="append", default=[],
                    help="NAME:KEY=VALUE[,KEY=VALUE] for a built-in step (and its twin)")
    ap.add_argument("--csv", action="append", default=[], metavar="FILE:ATTR[+ATTR][:SEP]",
                    help="also run on any CSV of people (held-out tables): every column but the "
                         "sensitive ones is a feature, as `fairaudit audit FILE --sensitive "
                         "ATTR` does; attributes audited one at a time")
    ap.add_argument("--out", type=Path, default=None, help="also write the table (markdown)")
    ap.add_argument("--json", type=Path, default=None, help="per-seed rows as JSON")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    if not DATA.exists():
        print(f"public data not found at {DATA}; nothing to do", file=sys.stderr)
        return 0
    params: dict[str, dict[str, str]] = {}
    for text in args.params:
        name, _, rest = text.partition(":")
        for kv in rest.split(","):
            k, _, v = kv.partition("=")
            params.setdefault(name, {})[k] = v
    seeds = [int(s) for s in args.seeds.split(",")]
    jobs = []
    for item in args.csv:
        file, _, rest = item.partition(":")
        attrs_text, _, sep = rest.partition(":")
        path = Path(file).resolve()
        attrs = tuple(attrs_text.split("+"))
        import polars as pl

        header = pl.read_csv(path, separator=sep or ",", n_rows=1).columns
        feats = tuple(c for c in header if c not in attrs)  # no sensitive column is a feature
        for attr in attrs:
            jobs.append((path.stem, str(path), sep or ",", attr, feats))
    for item in filter(None, args.tables.split(",")):
        table, _, only = item.partition(":")
        rel, sep, attrs, features = TABLES[table]
        for attr in ([only] if only else attrs):
            jobs.append((table, rel, sep, attr, features))
    results: dict[tuple[str, str], dict[int, dict]] = {}
    for table, rel, sep, attr, features in jobs:
        results[(table, attr)] = {}
        for seed in seeds:
            t0 = time.perf_counter()
            try:
                rows = _run(DATA / rel, sep, attr, seed, args.sample, args.rows, params,
                            features)
            except Exception as exc:  # noqa: BLE001 - a benchmark reports and goes on
                print(f"{table}/{attr} seed {seed}: {type(exc).__name__}: {exc}", file=sys.stderr)
                rows = {}
            results[(table, attr)][seed] = rows
            line = ", ".join(
                f"{m} {_fmt(r['fair'])} vs {_fmt(r['twin'])}" for m, r in rows.items()
            )
            print(f"# {table}/{attr} seed {seed} ({time.perf_counter() - t0:.0f} s): {line}",
                  flush=True)
    header = (
        "| method | table | attribute | target | fair | twin | gain ± sd (min) | gain % | "
        "seeds fairer/equal/less | silhouette fair / twin | k | degenerate seeds fair / twin |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [header]
    for method in METHODS:
        for (table, attr), per_seed in results.items():
            lines.append(_summary(method, table, attr,
                                  {s: rows.get(method) for s, rows in per_seed.items()}))
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(
            {f"{t}/{a}": {str(s): r for s, r in ps.items()} for (t, a), ps in results.items()},
            indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
