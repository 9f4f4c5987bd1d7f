"""Coverage of the published (``--publish``) 95 % intervals, per regime and metric, and how often
random labels are called "unfair" (docs/privacy.md, "Intervals, gates and verdicts"). The
simulation is ``tests/dp_sims.py`` (also run, smaller, by ``tests/test_publish_intervals.py``).

    python benchmarks/dp_coverage.py [--sims 400] [--seed 2026] [--boot 200] [REGIME ...] > new.tsv
    python benchmarks/dp_coverage.py --markdown new.tsv [old.tsv] [--metrics balance,wd]
    python benchmarks/dp_coverage.py --pivot new.tsv old.tsv [--metrics balance,wd]
    python benchmarks/dp_coverage.py --timing

Prints one tab-separated row per regime and metric: true value, draws judged, coverage, its
binomial sd, missed below / above, 'unfair' verdicts, draws without a value (too little data),
median width, median lower end. With ``--markdown``: the table of docs/privacy.md (the old
file's coverage beside the new one's, when given).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

SIMS = Path(__file__).resolve().parent.parent / "tests" / "dp_sims.py"
COLUMNS = ("truth", "n", "coverage", "sd", "below", "above", "unfair_rate", "undefined",
           "median_width", "median_lower")


def _sims():
    spec = importlib.util.spec_from_file_location("dp_sims", SIMS)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["dp_sims"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def simulate(regimes: list[str], sims: int, seed: int, boot: int) -> None:
    mod = _sims()
    import fairaudit

    print(f"# fairaudit from {Path(fairaudit.__file__).parent}; {sims} draws, seed {seed}, "
          f"{boot} replicates; load {os.getloadavg()[0]:.1f}; {time.strftime('%Y-%m-%d')}")
    print("# regime\tmetric\t" + "\t".join(COLUMNS))
    for name in regimes or list(mod.REGIMES):
        t0 = time.process_time()
        stats = mod.coverage(name, sims, seed, boot)
        for metric, st in stats.items():
            n = max(st["n"], 1)
            row = [st["truth"], st["n"], st["coverage"], st["sd"], st["below"] / n,
                   st["above"] / n, st["unfair_rate"], st["undefined"], st["median_width"],
                   st["median_lower"]]
            print(f"{name}\t{metric}\t" + "\t".join(f"{v:.6g}" for v in row), flush=True)
        print(f"# {name}: {time.process_time() - t0:.1f} s CPU", file=sys.stderr, flush=True)


def load(path: str) -> dict[tuple[str, str], dict[str, float]]:
    out = {}
    for line in Path(path).read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        regime, metric, *vals = line.split("\t")
        out[(regime, metric)] = dict(zip(COLUMNS, map(float, vals), strict=True))
    return out


SHOWN = ("balance", "balance_mean", "fairness_cce", "balance_prime", "cce", "fce_fair", "ed",
         "ed_max", "ed_sum", "wd", "wd_max", "wd_sum", "mnce", "ne", "proportion")


def markdown(new_path: str, old_path: str | None = None,
             metrics: tuple[str, ...] = SHOWN) -> None:
    new = load(new_path)
    old = load(old_path) if old_path else {}

    def pc(x: float) -> str:
        return f"{100 * x:.1f}"

    print("| regime | metric (true value) | coverage % (sd) | "
          + ("before % | " if old else "") + "missed below / above % | 'unfair' % | "
          + ("'unfair' before % | " if old else "") + "median width | "
          + ("width before | " if old else "") + "median lower end |")
    print("|---|---|---|" + ("---|" if old else "") + "---|---|" + ("---|" if old else "")
          + "---|" + ("---|" if old else "") + "---|")
    for (regime, metric), st in new.items():
        if metric not in metrics:
            continue
        before = old.get((regime, metric))
        unfair = pc(st["unfair_rate"]) if metric in ("balance", "wd") else "—"
        cells = [regime, f"`{metric}` ({st['truth']:.3g})",
                 f"**{pc(st['coverage'])}** ({pc(st['sd'])})"]
        if old:
            cells.append(pc(before["coverage"]) if before else "—")
        cells += [f"{pc(st['below'])} / {pc(st['above'])}", unfair]
        if old:
            cells.append(pc(before["unfair_rate"]) if before and metric in ("balance", "wd")
                         else "—")
        cells.append(f"{st['median_width']:.3g}")
        if old:
            cells.append(f"{before['median_width']:.3g}" if before else "—")
        cells.append(f"{st['median_lower']:.3g}")
        print("| " + " | ".join(cells) + " |")


def pivot(new_path: str, old_path: str, metrics: tuple[str, ...] = SHOWN) -> None:
    """One row per regime: coverage now (before) of every metric, the 'unfair' rates of
    balance and wd, and balance's and wd's median widths, now (before)."""
    new, old = load(new_path), load(old_path)
    regimes = list(dict.fromkeys(r for r, _ in new))

    def pc(x: float) -> str:
        return f"{100 * x:.1f}".rstrip("0").rstrip(".")

    head = [*metrics, "'unfair' balance", "'unfair' wd", "width balance", "width wd"]
    print("| regime | " + " | ".join(f"`{m}`" if "'" not in m and " " not in m else m
                                       for m in head) + " |")
    print("|---|" + "---|" * len(head))
    for regime in regimes:
        cells = []
        for m in metrics:
            st, before = new.get((regime, m)), old.get((regime, m))
            cells.append("—" if st is None else f"**{pc(st['coverage'])}**"
                         + (f" ({pc(before['coverage'])})" if before else ""))
        for m in ("balance", "wd"):
            st, before = new[(regime, m)], old.get((regime, m))
            cells.append(pc(st["unfair_rate"]) + (f" ({pc(before['unfair_rate'])})"
                                                  if before else ""))
        for m in ("balance", "wd"):
            st, before = new[(regime, m)], old.get((regime, m))
            cells.append(f"{st['median_width']:.3g}" + (f" ({before['median_width']:.3g})"
                                                        if before else ""))
        print(f"| {regime} | " + " | ".join(cells) + " |")


def timing() -> None:
    """CPU time of the three counting auditors' intervals on one release: the release's
    intervals against the percentile intervals of the same replicates (``own_intervals=False``,
    the method before), on the 48 x 6 intersection of 6,000 rows and on 60,000 rows in 50
    segments."""
    import numpy as np

    mod = _sims()
    from fairaudit.core.counting_audit import run_counting_auditor

    big = mod._null(50, mod.A8, np.ones(6))
    for name, cube, n in (("48x6, 6,000 rows", mod.REGIMES["null-48x6-e0.5"].cube, 6000),
                          ("48x50, 60,000 rows", big, 60_000)):
        x = np.random.default_rng(1).multinomial(n, cube.reshape(-1)).reshape(cube.shape)
        rel = mod.release_of(x, 0.5)
        joint = rel.joints["seg"]
        tables = joint.tables()
        for label, opts in (("percentile", {"own_intervals": False}),
                            ("release", rel.interval_options("seg"))):
            t0 = time.process_time()
            for comp in mod._components():
                boot = rel.replicates("seg", 200, np.random.default_rng(0))
                run_counting_auditor(comp, "seg", joint, tables, boot, min_cell=10,
                                     level=0.95, **opts)
            print(f"{name}\t{label}\t{time.process_time() - t0:.2f} s CPU", flush=True)
    print(f"# load {os.getloadavg()[0]:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("regimes", nargs="*")
    ap.add_argument("--sims", type=int, default=400)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--boot", type=int, default=200)
    ap.add_argument("--markdown", nargs="+", metavar="TSV")
    ap.add_argument("--metrics", help="comma-separated metrics of the --markdown table")
    ap.add_argument("--timing", action="store_true",
                    help="CPU time of the intervals of one release, before and now")
    ap.add_argument("--pivot", nargs=2, metavar=("NEW", "OLD"),
                    help="one row per regime: every metric's coverage now (before)")
    a = ap.parse_args()
    metrics = tuple(a.metrics.split(",")) if a.metrics else SHOWN
    if a.timing:
        timing()
    elif a.pivot:
        pivot(*a.pivot, metrics=metrics)
    elif a.markdown:
        markdown(*a.markdown, metrics=metrics)
    else:
        simulate(a.regimes, a.sims, a.seed, a.boot)


if __name__ == "__main__":
    main()
