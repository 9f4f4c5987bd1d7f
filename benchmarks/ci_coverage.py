"""Coverage of the true value by the 95 % intervals of balance, fairness_CCE and Balance′ (or,
with ``--distances``, of wd_max and ed_max), per regime of issue 23 (the regimes and the
simulation are those of the `slow` tests
``tests/metrics/test_intervals.py::test_calibrated_coverage_simulation`` and
``::test_calibrated_max_distance_coverage``).

    python benchmarks/ci_coverage.py [--distances | --null] [--draws 400] [--seed 2026] [REGIME ...] > new.tsv
    PYTHONPATH=<an older checkout> python benchmarks/ci_coverage.py > old.tsv
    python benchmarks/ci_coverage.py --markdown old.tsv new.tsv
    python benchmarks/ci_coverage.py --tables [--draws 200] [DESIGN ...] > tables.tsv
    python benchmarks/ci_coverage.py --markdown-tables old_tables.tsv tables.tsv

Prints one tab-separated row per regime, metric and method (conservative, calibrated): true
value, coverage, share of draws missed below and above, median width, median lower end. With
``--markdown``: the table of docs/metrics.md (conservative, the old file's calibrated and the
new file's calibrated on the same draws).

``--tables``: the real-table designs of ``benchmarks/table_designs.py`` instead (public tables
shipped with fairaudit as populations, 20 % draws without replacement, the default audit),
one row per design and metric: the summary of :func:`table_designs.summary` (coverage, misses,
median width, oracle width and ratio, the conservative method's coverage and width, median
estimate and bias-corrected value, share of draws decided against 0.8).
``--markdown-tables``: their table in docs/metrics.md (before / now on the same draws).
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import sys
from pathlib import Path

logger = logging.getLogger("ci_coverage")
TEST = Path(__file__).resolve().parent.parent / "tests" / "metrics" / "test_intervals.py"
NAMES = {"balance": "`balance`", "balance_min": "`balance`", "balance_mean": "`balance_mean`",
         "fairness_cce": "`fairness_cce`",
         "balance_prime": "`balance_prime`", "wd_max": "`wd_max`", "ed_max": "`ed_max`"}


def simulate(regimes: list[str], draws: int, seed: int, distances: bool = False,
             null: bool = False) -> None:
    spec = importlib.util.spec_from_file_location("test_intervals", TEST)
    ti = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ti)
    import fairaudit

    print(f"# fairaudit from {Path(fairaudit.__file__).parent}; {draws} draws, seed {seed}")
    run = ti.distance_regime_coverage if distances else ti.regime_coverage
    if not regimes:
        regimes = list(ti.DIST_REGIMES if distances else
                       ti.NULL_REGIMES if null else
                       [r for r in ti.REGIMES if r not in ti.NULL_REGIMES])
    for regime in regimes:
        res = run(regime, draws=draws, seed=seed)
        for metric, (truth,) in res["truth"].items():
            for method in ("conservative", "calibrated"):
                row = "\t".join(f"{v:.6g}" for v in res[method][metric])
                print(f"{regime}\t{metric}\t{truth:.6g}\t{method}\t{row}", flush=True)


def tables(designs: list[str], draws: int, seed: int) -> None:
    spec = importlib.util.spec_from_file_location("fairaudit_bench_table_designs",
                                                  Path(__file__).resolve().parent
                                                  / "table_designs.py")
    td = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = td
    spec.loader.exec_module(td)
    import fairaudit

    print(f"# fairaudit from {Path(fairaudit.__file__).parent}; {draws} draws, seed {seed}")
    keys = None
    for name in designs or list(td.DESIGNS):
        for metric, r in td.run_design(name, draws, seed).items():
            s = td.summary(r["truth"], r["rows"], metric)
            if keys is None:
                keys = list(s)
                print("design\tmetric\t" + "\t".join(keys))
            print(f"{name}\t{metric}\t" + "\t".join(f"{s[k]:.6g}" for k in keys), flush=True)


def load_tables(path: str) -> dict[tuple[str, str], dict[str, float]]:
    lines = [ln for ln in Path(path).read_text().splitlines() if ln and not ln.startswith("#")]
    head = lines[0].split("\t")
    return {(v[0], v[1]): dict(zip(head[2:], map(float, v[2:]), strict=True))
            for v in (ln.split("\t") for ln in lines[1:])}


def markdown_tables(old_path: str, new_path: str) -> None:
    old, new = load_tables(old_path), load_tables(new_path)

    def pc(x: float) -> str:
        return f"{100 * x:.1f}".rstrip("0").rstrip(".")

    print("| design | metric (population value) | coverage: before / now | misses now below / "
          "above | median width: before / now | oracle width | ratio: before / now | "
          "median estimate / bias-corrected | decided against 0.8: before / now |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (design, metric), n in new.items():
        o = old.get((design, metric))
        if o is None:
            continue
        dec = (f"{pc(o['decided'])} / {pc(n['decided'])} %" if metric != "balance_prime"
               else "–")
        print(f"| {design} | {NAMES[metric]} ({n['truth']:.3g}) | {pc(o['coverage'])} / "
              f"**{pc(n['coverage'])}** % | {pc(n['below'])} / {pc(n['above'])} % | "
              f"{o['width']:.3g} / **{n['width']:.3g}** | {n['oracle']:.3g} | "
              f"{o['ratio']:.2f} / **{n['ratio']:.2f}** | {n['estimate']:.3g} / "
              f"{n['corrected']:.3g} | {dec} |")


def load(path: str) -> dict[tuple[str, str, str], list[float]]:
    out = {}
    for line in Path(path).read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        regime, metric, truth, method, *vals = line.split("\t")
        out[(regime, metric, method)] = [float(truth), *map(float, vals)]
    return out


def markdown(old_path: str, new_path: str) -> None:
    old, new = load(old_path), load(new_path)

    def pc(x: float) -> str:
        return f"{100 * x:.2f}".rstrip("0").rstrip(".")

    def f(x: float) -> str:
        return f"{x:.3g}" if x >= 0.01 else f"{x:.2g}"

    print("| regime | metric (true value) | coverage: conservative / last session / new | "
          "misses of new below / above | median width: conservative / last / new | "
          "median lower end: conservative / last / new |")
    print("|---|---|---|---|---|---|")
    for (regime, metric, method), c2 in new.items():
        if method != "calibrated":
            continue
        c0, c1 = new[(regime, metric, "conservative")], old[(regime, metric, "calibrated")]
        if old[(regime, metric, "conservative")][1] != c0[1]:
            logger.warning("%s %s: the two files are not the same draws", regime, metric)
        truth = 0.0 if abs(c2[0]) < 1e-12 else c2[0]  # a fair population's 1e-18
        print(f"| {regime} | {NAMES[metric]} ({truth:.3g}) | {pc(c0[1])} / {pc(c1[1])} / "
              f"**{pc(c2[1])}** % | {pc(c2[2])} / {pc(c2[3])} % | {f(c0[4])} / {f(c1[4])} / "
              f"{f(c2[4])} | {f(c0[5])} / {f(c1[5])} / {f(c2[5])} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("regimes", nargs="*")
    ap.add_argument("--draws", type=int, default=None,
                    help="draws per regime (default 400) or design (default 200)")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--markdown", nargs=2, metavar=("OLD", "NEW"))
    ap.add_argument("--distances", action="store_true",
                    help="wd_max and ed_max (bootstrap-triangle vs calibrated)")
    ap.add_argument("--tables", action="store_true",
                    help="the real-table designs (benchmarks/table_designs.py)")
    ap.add_argument("--markdown-tables", nargs=2, metavar=("OLD", "NEW"))
    ap.add_argument("--null", action="store_true",
                    help="the random-label small-cell grid (NULL_REGIMES: smallest group 30 / "
                         "60 / 120 people x 2 / 4 / 8 groups x 4 / 8 segments, and null-h4)")
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if a.markdown:
        markdown(*a.markdown)
    elif a.markdown_tables:
        markdown_tables(*a.markdown_tables)
    elif a.tables:
        tables(a.regimes, a.draws or 200, a.seed)
    else:
        simulate(a.regimes, a.draws or 400, a.seed, a.distances, a.null)


if __name__ == "__main__":
    main()
