"""Where the width of the calibrated balance interval goes, on the real-table designs of
``benchmarks/table_designs.py`` (issue 40; the table of docs/metrics.md, "Where the width goes").

    python benchmarks/ci_width.py [--draws 200] [--seed 2026] [DESIGN ...] > width.tsv

Per design, on the same draws: the default interval, and the interval with one ingredient
replaced by an oracle or a simpler rule, each with its coverage and median width:

* ``pointwise``: both ends at the pointwise score bounds (z at 2.5 %: no multiplicity at all);
* ``plug-in``: the upper end's critical value from the replicates measured from θ̂ for every
  cell (no cell may tie the minimum: what a bootstrap of the observed table assumes);
* ``oracle-config``: the replicates measured from the population's own gaps (each cell's
  replicate deviation shifted by its true distance to the true minimum): the tie structure
  known;
* ``oracle-c``: critical values that miss exactly 2.5 % at each end over these draws (from the
  score statistics at the population value): the whole sampling distribution known;
* the oracle width itself (the spread of the plug-in's error).

Also per design: the cells that could set the minimum (pointwise bounds overlapping the
smallest upper bound), the oracle critical values, and the one-sided miss rates of the plain
and the skewness-corrected score bounds of the population's minimising cell at 2.5 %.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import sys
from pathlib import Path

import numpy as np

logger = logging.getLogger("ci_width")
HERE = Path(__file__).resolve().parent


def _designs():
    spec = importlib.util.spec_from_file_location("fairaudit_bench_table_designs",
                                                  HERE / "table_designs.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _cells(P: np.ndarray) -> np.ndarray:
    q = P * P.sum() / np.outer(P.sum(axis=1), P.sum(axis=0))
    return np.where(q > 0, np.minimum(q, 1.0 / np.where(q > 0, q, 1.0)), 0.0)


def decompose(td, name: str, draws: int, seed: int) -> dict[str, float]:
    from fairaudit.metrics import calibrate as K
    from fairaudit.metrics import counting as C
    from fairaudit.metrics import intervals as I
    from fairaudit.metrics.score import _z

    P, _ = td.population(td.DESIGNS[name])
    truth = float(C.balance_min(P[None].astype(float))[0])
    za = _z(0.025)
    rows: dict[str, list[tuple[float, float]]] = {k: [] for k in (
        "default", "pointwise", "plug-in", "oracle-config")}
    stats, ests, tables, near, cell_miss = [], [], [], [], []
    for d in td.draws(P, draws, seed, td.N_BOOT, td.DESIGNS[name].attribute):
        T = d.table.astype(float)
        bounds, est = I._balance_cells(T)
        est = est.ravel()
        plain = lambda a, s, b=bounds: b(a, s, skew=False)  # noqa: E731
        cal = I._balance_calibration(T, d.replicates)
        iv = I.balance_interval(d.table, td.LEVEL, d.replicates)
        rows["default"].append((iv.lower, min(iv.upper, 1.0)))
        ests.append(float(est.min()))
        lo_pw = np.minimum(plain(0.025, "lower").ravel(), est)
        hi_pw = np.maximum(plain(0.025, "upper").ravel(), est)
        rows["pointwise"].append((float(lo_pw.min()), min(float(hi_pw.min()), 1.0)))
        near.append(int(np.count_nonzero(lo_pw <= hi_pw.min())))
        theta = float(est.min())
        idx = np.arange(est.size)
        # the population's cells of the judged groups and segments, and their gaps
        kept = P[list(d.kept_groups)][:, list(d.kept_segments)]
        true_cells = _cells(kept.astype(float)).ravel()
        gaps = true_cells - true_cells.min()
        _, above = cal.miss(idx, theta, np.full(idx.size, theta))
        low = np.nan_to_num(above, nan=np.inf).min(axis=1)
        for key, at in (("plug-in", np.full(est.size, theta)),
                        ("oracle-config", np.clip(est - gaps, theta, est))):
            below, _ = cal.miss(idx, theta, at)
            s = np.clip(np.maximum(np.nan_to_num(below, nan=-np.inf).max(axis=1), low),
                        -1e6, 1e6)
            c = K.critical_value(s, 0.95) if theta > 0 else za
            hi = np.maximum(plain(K.one_sided(c), "upper").ravel(), est).min()
            rows[key].append((float(lo_pw.min()), min(float(hi), 1.0)))
        # the score statistics of the observed table at the population's value
        own = I._balance_calibration(T, np.stack([T, T]))
        b, a = own.miss(idx, truth, np.full(idx.size, truth))
        stats.append((float(np.nan_to_num(b[0], nan=-np.inf).max()),
                      float(np.nan_to_num(a[0], nan=np.inf).min())))
        tables.append((T, bounds, est))
        j = int(np.argmin(np.where(np.isfinite(true_cells), true_cells, np.inf)))
        cell = []
        for skew in (False, True):
            lo_j = bounds(0.025, "lower", skew=skew).ravel()[j]
            hi_j = bounds(0.025, "upper", skew=skew).ravel()[j]
            cell += [lo_j > true_cells[j], hi_j < true_cells[j]]
        cell_miss.append(cell)
    su, sl = np.array(stats).T
    c_u, c_l = float(np.quantile(su, 0.975)), float(np.quantile(sl, 0.975))
    rows["oracle-c"] = []
    for _T, bounds, est in tables:
        lo = np.minimum(bounds(K.one_sided(max(c_l, 0.0)), "lower", skew=False).ravel(),
                        est).min()
        hi = np.maximum(bounds(K.one_sided(max(c_u, 0.0)), "upper", skew=False).ravel(),
                        est).min()
        rows["oracle-c"].append((float(lo), min(float(hi), 1.0)))
    err = np.array(ests) - truth
    out = {"truth": truth, "oracle": float(np.quantile(err, 0.975) - np.quantile(err, 0.025)),
           "cells": float(tables[0][0].size), "near": float(np.median(near)),
           "oracle_c_upper": c_u, "oracle_c_lower": c_l}
    for key, ends in rows.items():
        lo, hi = np.array(ends).T
        out[f"{key}_coverage"] = float(np.mean((lo <= truth) & (truth <= hi)))
        out[f"{key}_width"] = float(np.median(hi - lo))
    m = np.array(cell_miss, dtype=float).mean(axis=0)
    out.update(plain_lower_miss=m[0], plain_upper_miss=m[1], skew_lower_miss=m[2],
               skew_upper_miss=m[3])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("designs", nargs="*")
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--seed", type=int, default=2026)
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    td = _designs()
    names = a.designs or [d for d in td.DESIGNS]
    header = None
    for name in names:
        res = decompose(td, name, a.draws, a.seed)
        if header is None:
            header = list(res)
            print("design\t" + "\t".join(header))
        print(name + "\t" + "\t".join(f"{res[k]:.6g}" for k in header), flush=True)


if __name__ == "__main__":
    main()
