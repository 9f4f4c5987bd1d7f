"""Bera et al. (NeurIPS 2019), "Fair Algorithms for Clustering": their experiment re-run on
their own subsamples with our ``BeraFairAssignment`` (issue 27).

    nice -n 5 .venv/bin/python benchmarks/reproduce_bera.py [--seeds 3] [--k 2,4,6,8,10]

The authors' setting (``nicolasjulioflores/fair_algorithms_for_clustering``,
``config/dataset_configs.ini`` and ``example_config.ini``): ``data/subsampled_bank.csv`` (1,000
rows; columns age, balance, duration; groups marital (3) and default (2) *at once*, i.e.
overlapping groups) and ``data/subsampled_adult.csv`` (600 rows; age, final-weight,
education-num, capital-gain, hours-per-week; race (5) and sex (2) at once); ``scaling =
false`` (raw features), ``clustering_method = kmeans``, delta = 0.2. For each k and seed we
report, as their output JSON does: the k-means cost and the fair cost (sum of squared distances
to the assigned centre) and their ratio (the price of fairness), the balance of every attribute
(minimum over clusters) for k-means and for the fair assignment, and the largest additive
violation of a bound by the rounded assignment, in rows: max over clusters C and groups g of
max(beta_g |C| - |C & g|, |C & g| - alpha_g |C|, 0). These are for the paper's algorithm
(``repair=False``: LP + their iterative rounding). Beside them, our default (``repair=True``):
its price of fairness, balance, how many bounds it leaves broken and how many clusters it
empties (docs/methods/bera.md).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np

DATA = Path("/work/shared/data")
SETS = {
    "bank (marital + default)": ("bank/subsampled_bank.csv", ";", ["age", "balance", "duration"],
                                 ["marital", "default"]),
    "adult (race + sex)": ("adult/subsampled_adult.csv", ",",
                           ["age", "final-weight", "education-num", "capital-gain",
                            "hours-per-week"], ["race", "sex"]),
}


def load(name: str) -> tuple[np.ndarray, list[np.ndarray]]:
    import pandas as pd

    path, sep, cols, attrs = SETS[name]
    df = pd.read_csv(DATA / path, sep=sep, skipinitialspace=True)
    X = df[cols].to_numpy(float)
    return X, [np.unique(df[a].astype(str), return_inverse=True)[1].ravel() for a in attrs]


def violation(labels: np.ndarray, codes: np.ndarray, delta: float) -> float:
    r = np.bincount(codes) / codes.size
    worst = 0.0
    for c in np.unique(labels):
        m = labels == c
        size = m.sum()
        cnt = np.bincount(codes[m], minlength=r.size)
        lo, hi = r * (1 - delta) * size, r / (1 - delta) * size
        worst = max(worst, float(np.max(np.maximum(lo - cnt, cnt - hi))))
    return max(worst, 0.0)


def main() -> None:
    from fairaudit.cluster import BeraFairAssignment
    from fairaudit.cluster._field import sq_dist
    from fairaudit.metrics.scorers import balance_score

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--k", default="2,4,6,8,10")
    ap.add_argument("--delta", type=float, default=0.2)
    ap.add_argument("--out", type=Path, default=Path("docs/benchmarks/field/bera.md"))
    args = ap.parse_args()
    if not DATA.exists():
        print(f"{DATA} not found: nothing to reproduce")
        return
    warnings.simplefilter("ignore", UserWarning)  # broken bounds are in the table's columns
    lines = [
        "# Bera et al.'s experiment on their subsamples (reproduce_bera.py)", "",
        f"Command: `nice -n 5 .venv/bin/python benchmarks/reproduce_bera.py --seeds {args.seeds} "
        f"--k {args.k} --delta {args.delta}`; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
        f"; load {os.getloadavg()[0]:.1f}. Mean over seeds (min–max). Balance = minimum over "
        "clusters, per attribute (k-means → fair). 'Paper' = LP + their iterative rounding "
        "(`repair=False`); violation = its largest additive violation of a bound, in rows (the "
        "paper's bound: 4Δ + 3 = 15 with Δ = 3, the authors' README: 'no more than 3-4' seen). "
        "'Repaired' = our default (`repair=True`): bounds left broken (summed over seeds) and "
        "clusters emptied (summed over seeds).", "",
        "| data | k | cost ratio fair / k-means (paper) | balance k-means | balance paper | "
        "violation (rows) | LP rounds | cost ratio repaired | balance repaired | broken / "
        "emptied |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in SETS:
        X, attrs = load(name)
        S = np.column_stack(attrs)
        for k in [int(v) for v in args.k.split(",")]:
            rec = []
            for seed in range(args.seeds):
                est = BeraFairAssignment(k, delta=args.delta, repair=False,
                                         random_state=seed).fit(X, sensitive=S)
                rep = BeraFairAssignment(k, delta=args.delta, random_state=seed).fit(
                    X, sensitive=S)
                d = sq_dist(X, est.cluster_centers_)
                idx = np.arange(len(X))
                base = d[idx, est.kmeans_labels_].sum()
                rec.append((d[idx, est.labels_].sum() / base,
                            [balance_score(est.kmeans_labels_, a) for a in attrs],
                            [balance_score(est.labels_, a) for a in attrs],
                            max(violation(est.labels_, a, args.delta) for a in attrs),
                            est.rounds_,
                            d[idx, rep.labels_].sum() / base,
                            [balance_score(rep.labels_, a) for a in attrs],
                            len(rep.bound_violations_),
                            k - np.unique(rep.labels_).size))
                print(name, k, seed, rec[-1], flush=True)

            col = [np.array(c, dtype=float) for c in zip(*rec, strict=True)]

            def fmt(v: np.ndarray) -> str:
                return " / ".join(f"{c.mean():.2f}" for c in v.T)

            ratio, vio, rratio = col[0], col[3], col[5]
            lines.append(
                f"| {name} | {k} | {ratio.mean():.3f} ({ratio.min():.3f}–{ratio.max():.3f}) | "
                f"{fmt(col[1])} | {fmt(col[2])} | {vio.mean():.1f} (max {vio.max():.1f}) | "
                f"{col[4].mean():.1f} | {rratio.mean():.3f} ({rratio.min():.3f}–"
                f"{rratio.max():.3f}) | {fmt(col[6])} | {int(col[7].sum())} / "
                f"{int(col[8].sum())} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
