"""Reproduction: FCE with seeded k-means bases on Adult (sex, then race) and Bank (marital).

For each (dataset, attribute): m = 10 k-means bases (k = c, one k-means++ start each, seeded) on
the standardised numeric columns; the FCE consensus with lambda2 = 0 (the authors' shipped
script: fairness off), lambda2 = "auto" (our default) and a sweep of lambda2 over
[1e-5, 10] (the paper's tuning range) plus the auto-scaled range below it. Reported:
fairness_CCE, balance (min over clusters), CCE, MNCE, NE of the consensus, the mean over the
bases, and ARI of the consensus with the bases (mean).

Needs /work/shared/data (skips with a message otherwise).

    .venv/bin/python benchmarks/reproduce_fce.py [--c 5] [--out docs/reproduction/fce_results.md]
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
from sklearn.metrics import adjusted_rand_score

from fairaudit.cluster import FairClusteringEnsemble, kmeans_bases
from fairaudit.metrics import balance, cce, fairness_cce, mnce, ne

DATA = Path("/work/shared/data")

DATASETS = {
    "adult": {
        "path": DATA / "adult" / "adult.csv",
        "read": {"separator": ","},
        "numeric": [
            "age",
            "fnlwgt",
            "education-num",
            "capital-gain",
            "capital-loss",
            "hours-per-week",
        ],
        "attributes": ["sex", "race"],
    },
    "bank": {
        "path": DATA / "bank" / "bank-full.csv",
        "read": {"separator": ";"},
        "numeric": ["age", "balance", "day", "duration", "campaign", "pdays", "previous"],
        "attributes": ["marital"],
    },
}


def table(labels: np.ndarray, groups: np.ndarray) -> np.ndarray:
    lab = np.unique(labels, return_inverse=True)[1]
    N = np.zeros((int(groups.max()) + 1, int(lab.max()) + 1))
    np.add.at(N, (groups, lab), 1)
    return N[N.sum(axis=1) > 0][:, N.sum(axis=0) > 0]


def metrics(labels: np.ndarray, groups: np.ndarray) -> dict[str, float]:
    N = table(labels, groups)
    return {
        "fairness_CCE": float(fairness_cce(N)),
        "balance": float(balance(N).min),
        "CCE": float(cce(N)),
        "MNCE": float(mnce(N)),
        "NE": float(ne(N)),
    }


def fmt(d: dict[str, float]) -> str:
    return " | ".join(f"{d[k]:.3f}" for k in ("fairness_CCE", "balance", "CCE", "MNCE", "NE"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--c", type=int, default=5)
    ap.add_argument("--m", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if not DATA.exists():
        print(f"skipped: {DATA} is not available (the reproduction needs the shared datasets)")
        return 0
    lines: list[str] = []

    def say(s: str = "") -> None:
        print(s)
        lines.append(s)

    say(f"machine: {platform.platform()} | numpy {np.__version__} | c = {args.c}, m = {args.m}")
    head = "| setting | fairness_CCE | balance | CCE | MNCE | NE | ARI with bases | s |"
    rule = "|---|---|---|---|---|---|---|---|"
    for name, spec in DATASETS.items():
        df = pl.read_csv(spec["path"], **spec["read"])
        X = df.select(spec["numeric"]).to_numpy().astype(float)
        X = (X - X.mean(axis=0)) / X.std(axis=0)
        t0 = time.perf_counter()
        bases = kmeans_bases(X, args.c, n_bases=args.m, random_state=args.seed)
        t_bases = time.perf_counter() - t0
        for attr in spec["attributes"]:
            groups = np.unique(df.get_column(attr).to_numpy().astype(str), return_inverse=True)[1]
            say()
            say(
                f"### {name} (n = {df.height}), sensitive = {attr} "
                f"({groups.max() + 1} groups), k-means bases built in {t_bases:.1f}s"
            )
            say()
            say(head)
            say(rule)
            base_m = [metrics(bases[:, j], groups) for j in range(args.m)]
            mean_base = {k: float(np.mean([b[k] for b in base_m])) for k in base_m[0]}
            say(f"| bases (mean of {args.m}) | {fmt(mean_base)} | - | - |")
            settings: list[tuple[str, float | str]] = [("lambda2 = 0", 0.0), ("auto", "auto")]
            n = df.height
            T = int(groups.max()) + 1
            auto = 1e-3 * T * args.c**1.5 / n**1.5
            for mult in (0.1, 10.0, 100.0):
                settings.append((f"{mult:g} x auto", auto * mult))
            for lam in (1e-5, 1e-3, 1e-1, 10.0):
                settings.append((f"lambda2 = {lam:g}", lam))
            for label, lam in settings:
                t0 = time.perf_counter()
                est = FairClusteringEnsemble(args.c, lambda2=lam, random_state=args.seed)
                est.fit(bases, sensitive=groups)
                dt = time.perf_counter() - t0
                ari = np.mean(
                    [adjusted_rand_score(bases[:, j], est.labels_) for j in range(args.m)]
                )
                lab = f"{label} ({est.lambda2_:.2g})" if label == "auto" else label
                say(f"| FCE {lab} | {fmt(metrics(est.labels_, groups))} | {ari:.3f} | {dt:.1f} |")
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
