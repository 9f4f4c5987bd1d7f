"""LOFKM on more rows than ``refine_rows``: whole-table AvgLCD of the fit against its twin's,
with the whole-table check (default) and without it (main before 2026-11-27), and the CPU of
each fit (issue 25 follow-up; docs/methods/lofkm.md).

    nice .venv/bin/python benchmarks/lofkm_whole_table.py [--k 4] [--seeds 0,1,2,3,4] \
        [--tables adult200k,bank,adult]

Tables as in ``lofkm_refine_rows.py`` (z-scored numeric columns from ``../shared/data``). Per fit:
the twin's AvgLCD (``fairaudit.metrics.lcd``, t = 5, every row), the fit's with the check and
without it (``lcd_refine.TABLE_CHECK = False``: the sample's best refined result), which
partition the check kept, and CPU seconds of the twin, the fit with the check and without it,
fitted back to back in one process on one BLAS/OpenMP thread. The last line counts the fits
at or below the twin.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from lofkm_refine_rows import DATA, _table  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", default="4", help="comma-separated")
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--tables", default="adult200k,bank,adult")
    args = ap.parse_args()
    if not DATA.exists():
        sys.exit(f"{DATA} not found: this script needs the shared public datasets")
    import sklearn.cluster  # noqa: F401  (load the OpenMP runtime before capping it)
    from threadpoolctl import threadpool_limits

    from fairaudit.cluster import LOFKMeans, lcd_refine
    from fairaudit.metrics import lcd

    def fit(X, k, seed, **kw):
        c = time.process_time()
        est = LOFKMeans(k, random_state=seed, **kw).fit(X)
        return est, time.process_time() - c, lcd(X, est.labels_, est.cluster_centers_).avg_lcd

    print(f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, load average "
          f"{os.getloadavg()[0]:.1f}; whole-table AvgLCD, t = 5")
    print("| table | k | seed | twin | fair (check) | kept | fair (no check) | fair / twin | "
          "CPU s twin / check / no check |")
    print("|---|---|---|---|---|---|---|---|---|")
    at_or_below = below = below_main = total = 0
    with threadpool_limits(1):
        for name in args.tables.split(","):
            X = _table(name)
            for k in (int(x) for x in args.k.split(",")):
                for seed in (int(s) for s in args.seeds.split(",")):
                    _, c_t, a_t = fit(X, k, seed, fair=False)
                    est, c_f, a_f = fit(X, k, seed)
                    lcd_refine.TABLE_CHECK = False
                    try:
                        _, c_m, a_m = fit(X, k, seed)
                    finally:
                        lcd_refine.TABLE_CHECK = True
                    kept = est.refinement_["kept"]
                    if kept == "refined" and a_f != a_m:
                        kept = "refined (other start)"
                    total += 1
                    at_or_below += a_f <= a_t
                    below += a_f < a_t
                    below_main += a_m < a_t
                    print(f"| {name} ({X.shape[0]:,}) | {k} | {seed} | {a_t:.4f} | {a_f:.4f} | "
                          f"{kept} | {a_m:.4f} | {a_f / a_t:.3f} | {c_t:.2f} / {c_f:.2f} / "
                          f"{c_m:.2f} |", flush=True)
    print(f"\nat or below the twin: {at_or_below} of {total} (strictly below: {below}); "
          f"without the check strictly below: {below_main} of {total}")


if __name__ == "__main__":
    main()
