"""The averaging attack of issue 34 on any table: does the privacy ledger hold on YOUR data?

    .venv/bin/python benchmarks/privacy_attack.py DATA --sensitive race,sex --labels decile \
        [--decile-of age] [--separator ';'] [--nights 4] [--epsilon 1] [--budget 1]

An attacker (or a careless pipeline) publishes trivially changed copies of one table, each with
``--privacy-budget BUDGET`` at ``--epsilon EPS``: the table as Parquet, shuffled, as CSV, as CRLF
CSV with every cell quoted, with a sensitive column renamed, with an extra column and a space in
a column's name, in another folder, through ``./..``, and as a LazyFrame through the API. The
average of every granted release, rounded, is compared with the exact intersection x labels
cells. Four ways of naming the copies' data source, each against one ledger:

* ``unguarded``: every copy in a ledger of its own (what every copy obtained before issue 34:
  a fresh budget each) — the attack's power;
* ``default``: no source named; ``fresh name``: a new ``--privacy-source`` per copy; ``one
  name``: the same source for every copy.

Then the pipeline: ``--nights`` nightly hive partitions (``root/date=YYYY-MM-DD/part-0.parquet``,
each night one person fewer) published with the default source against one ledger, budget
``2 x EPS``, and the same nights each named after its date (``customers-2026-12-0N``): the
sketch recognises them when the table has a near-unique column, the counts when it is large
enough to tell. Last, the two halves of a random split (other people) under two source names
must both be published: a false alarm fails the check.

The ledger holds when ``default``, ``fresh name`` and ``one name`` each spend at most BUDGET and
recover no more cells than one release, the default nightly source at most two releases, and
both halves are published. Prints one line per row of the figures and a verdict;
exits 1 if the ledger did not hold. ``--labels-from`` with ``--decile-of COL`` builds the labels
column as the deciles of a numeric column. docs/privacy.md, "The privacy unit and the data
source", states what is and is not recognised.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

log = logging.getLogger("privacy_attack")
LABELS = "decile"


def load(path: str, separator: str, decile_of: str | None, labels: str | None) -> pl.DataFrame:
    df = (pl.read_parquet(path) if path.endswith(".parquet") else
          pl.read_csv(path, separator=separator, infer_schema_length=10_000))
    if decile_of is not None:
        x = df[decile_of].cast(pl.Float64)
        edges = np.unique(np.quantile(x.drop_nulls().to_numpy(), np.linspace(0.1, 0.9, 9)))
        df = df.with_columns(pl.Series(LABELS, np.searchsorted(edges, x.to_numpy(),
                                                               side="right") + 1))
    elif labels is None:
        raise SystemExit("give --labels COL (an integer column) or --decile-of COL")
    return df


def copies(df: pl.DataFrame, tmp: Path, sensitive: list[str]) -> list[tuple[str, Any, list]]:
    """(name, input, its sensitive columns) of each trivially changed copy."""
    (tmp / "data").mkdir()
    (tmp / "elsewhere").mkdir()
    base = tmp / "data" / "people.parquet"
    df.write_parquet(base)
    df.sample(fraction=1.0, shuffle=True, seed=1).write_parquet(tmp / "data" / "shuffled.parquet")
    df.write_csv(tmp / "data" / "people.csv")
    crlf = tmp / "data" / "crlf_quoted.csv"
    crlf.write_bytes(df.write_csv(quote_style="always").replace("\n", "\r\n").encode())
    first = sensitive[0]
    df.rename({first: first.upper() if first != first.upper() else first.lower()}).write_parquet(
        tmp / "data" / "renamed.parquet")
    unused = next((c for c in df.columns if c not in sensitive and c != LABELS), None)
    extra = df.with_columns(pl.lit("x").alias("note "))
    if unused is not None:
        extra = extra.rename({unused: unused + " "})
    extra.write_parquet(tmp / "data" / "extra.parquet")
    df.write_parquet(tmp / "elsewhere" / "people.parquet")
    renamed = [first.upper() if first != first.upper() else first.lower(), *sensitive[1:]]
    return [("parquet", base, sensitive), ("again", base, sensitive),
            ("shuffled", tmp / "data" / "shuffled.parquet", sensitive),
            ("csv", tmp / "data" / "people.csv", sensitive),
            ("crlf+quoted", crlf, sensitive),
            ("renamed column", tmp / "data" / "renamed.parquet", renamed),
            ("extra column", tmp / "data" / "extra.parquet", sensitive),
            ("another folder", tmp / "elsewhere" / "people.parquet", sensitive),
            ("./ and ..", f"{tmp}/elsewhere/./../data/./people.parquet", sensitive),
            ("lazyframe", df.lazy().reverse(), sensitive)]


def publish(data: Any, sensitive: list[str], labels: str, ledger: Path, source: str | None,
            epsilon: float, budget: float) -> dict | None:
    """One release through the API; None when it was refused (exit 2 on the CLI)."""
    import fairaudit
    from fairaudit.errors import ConfigError

    if not isinstance(data, str | Path) and source is None:
        return None  # an in-memory table must name its source: refused
    try:
        run = fairaudit.audit(str(data) if isinstance(data, Path) else data,
                              sensitive=sensitive, labels=labels, publish=True, epsilon=epsilon,
                              privacy_budget=budget, ledger=str(ledger), new_ledger=True,
                              privacy_source=source, bootstrap=20, audit=["balance"])
    except ConfigError as exc:
        log.info("refused: %s", str(exc)[:160])
        return None
    return run.to_json()


def cells(doc: dict, key: str) -> dict[tuple[str, int], int]:
    (lab,) = doc["labellings"]
    comp = next(v for k, v in lab["composition"].items() if k.lower() == key.lower())
    return {(str(g), int(c)): int(n) for g, row in zip(comp["groups"], comp["counts"], strict=True)
            for c, n in zip(comp["clusters"], row, strict=True)}


def recovered(docs: list[dict], truth: dict, key: str, small: int) -> tuple[int, int]:
    """(cells, cells of at most ``small`` people) that the rounded average gets exactly."""
    if not docs:
        return 0, 0
    keys = sorted(truth)
    avg = np.mean([[cells(d, key).get(k, 0) for k in keys] for d in docs], axis=0)
    hit = [round(a) == truth[k] for a, k in zip(avg, keys, strict=True)]
    return sum(hit), sum(h for h, k in zip(hit, keys, strict=True) if truth[k] <= small)


def exact(df: pl.DataFrame, sensitive: list[str], labels: str) -> dict[tuple[str, int], int]:
    g = df.drop_nulls([*sensitive, labels]).group_by([*sensitive, labels]).len()
    return {("|".join(str(v) for v in r[:-2]), int(r[-2])): int(r[-1]) for r in g.iter_rows()}


def attack(df, sensitive, labels, tmp, epsilon, budget) -> bool:
    key = "|".join(sensitive)
    truth = exact(df, sensitive, labels)
    small = sum(1 for v in truth.values() if v <= 5)
    print(f"cells: {len(truth)} ({small} of at most 5 people)")
    held = True
    for mode in ("unguarded", "default", "fresh name", "one name"):
        docs, granted = [], []
        work = tmp / mode.replace(" ", "_")
        work.mkdir()
        for i, (name, data, sens) in enumerate(copies(df, work, sensitive)):
            ledger = work / (f"ledger{i}.json" if mode == "unguarded" else "ledger.json")
            source = {"unguarded": f"copy-{i}", "default": None, "fresh name": f"copy-{i}",
                      "one name": "people"}[mode]
            doc = publish(data, sens, labels, ledger, source, epsilon, budget)
            if doc is not None:
                docs.append(doc)
                granted.append(name)
        distinct = {d["input"]["fingerprint"] for d in docs}
        spent = epsilon * len(distinct)
        hits, small_hits = recovered(docs, truth, key, 5)
        one, one_small = recovered(docs[:1], truth, key, 5)
        ok = mode == "unguarded" or (spent <= budget + 1e-9 and hits <= one)
        held &= ok
        print(f"{mode:>10}: {len(docs)} releases returned ({len(distinct)} distinct, epsilon "
              f"{spent:g} spent on the same people), averaging recovers {hits} cells "
              f"({small_hits} small); one release {one} ({one_small}); granted: "
              f"{', '.join(granted) or 'none'}{'' if ok else '  <-- NOT HELD'}")
    return held


def nights(df, sensitive, labels, tmp, epsilon, n_nights) -> bool:
    rng = np.random.default_rng(0)
    order = rng.permutation(df.height)
    root = tmp / "segments"
    held = True
    for mode in ("default", "dated names"):
        ledger = tmp / f"nightly-{mode.replace(' ', '_')}.json"
        granted = 0
        for night in range(n_nights):
            day = f"2026-12-{night + 1:02d}"
            folder = root / mode.replace(" ", "_") / f"date={day}"
            folder.mkdir(parents=True)
            part = folder / "part-0.parquet"
            df[np.sort(order[night:])].write_parquet(part)
            source = None if mode == "default" else f"customers-{day}"
            doc = publish(part, sensitive, labels, ledger, source, epsilon, 2 * epsilon)
            granted += doc is not None
        note = ""
        if mode == "default":  # one dataset, one budget: two releases at most
            held &= granted <= 2
            note = "" if granted <= 2 else "  <-- NOT HELD"
        else:  # informative: the names are the owner's declaration
            note = (" (recognised: the sketch or the counts)" if granted == 1 else
                    " (not recognised: no near-unique column, and too small to tell by the "
                    "counts; each name is a new population)")
        print(f"nightly, {mode}: {granted} of {n_nights} nights published at epsilon {epsilon:g}, "
              f"budget {2 * epsilon:g}{note}")
    return held


def halves(df, sensitive, labels, tmp, epsilon) -> bool:
    """Other people are not refused: the two halves of a random split (two samples of one
    population, the hardest honest case) under two source names, one ledger."""
    ledger = tmp / "halves.json"
    order = np.random.default_rng(1).permutation(df.height)
    granted = 0
    for i, rows in enumerate((order[: df.height // 2], order[df.height // 2:])):
        part = tmp / f"half{i}.parquet"
        df[np.sort(rows)].write_parquet(part)
        granted += publish(part, sensitive, labels, ledger, f"half-{i}", epsilon,
                           epsilon) is not None
    print(f"two halves (other people) under two names: {granted} of 2 published"
          f"{'' if granted == 2 else '  <-- A FALSE ALARM'}")
    return granted == 2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data")
    ap.add_argument("--sensitive", required=True)
    ap.add_argument("--labels", default=None)
    ap.add_argument("--decile-of", default=None)
    ap.add_argument("--separator", default=",")
    ap.add_argument("--nights", type=int, default=4)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--budget", type=float, default=1.0)
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO if args.v else logging.ERROR)
    sensitive = [s.strip() for s in args.sensitive.split(",")]
    df = load(args.data, args.separator, args.decile_of, args.labels)
    labels = args.labels or LABELS
    start, cpu = time.perf_counter(), sum(os.times()[:2])
    print(f"{args.data}: {df.height} rows; sensitive {', '.join(sensitive)}; labels {labels}; "
          f"load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_STATE_HOME"] = str(Path(tmp) / "state")  # never the user's ledger
        held = attack(df, sensitive, labels, Path(tmp), args.epsilon, args.budget)
        held &= nights(df, sensitive, labels, Path(tmp), args.epsilon, args.nights)
        held &= halves(df, sensitive, labels, Path(tmp), args.epsilon)
    print(f"{'HELD' if held else 'NOT HELD'}; wall {time.perf_counter() - start:.0f} s, CPU "
          f"{sum(os.times()[:2]) - cpu:.0f} s, load {os.getloadavg()[0]:.1f}")
    sys.exit(0 if held else 1)


if __name__ == "__main__":
    main()
