"""Reproduce LOFKM vs k-means (seed 002, Tables 2-3) on Yeast, Wireless and Avila.

K = number of classes (10, 4, 12); t in {3, 4, 5} is both LOFKM's LOF neighbourhood and LCD's t.
Each of ``--starts`` seeded random starts (init="random", one start each, as in the paper's
"random initialization of cluster prototypes") is scored with AvgLCD / MaxLCD (prototypes = the
method's centres), silhouette (Euclidean; Avila on a seeded 5,000-row sample) and purity against
the class column; the table shows means over starts. Features are used as published (no scaling;
the paper does not mention any). Avila = training + test split (20,867 rows, as in Table 1).

Needs /work/shared/data (skips otherwise).

    .venv/bin/python benchmarks/reproduce_lofkm.py [--starts 20] [--out benchmarks/_out/lofkm.md]
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.cluster import KMeans
from sklearn.metrics import silhouette_score

from fairaudit.cluster.lofkm import LOFKMeans
from fairaudit.metrics.local_connectivity import lcd

DATA = Path("/work/shared/data")

PAPER = {  # (AvgLCD t=3,4,5), (MaxLCD t=3,4,5), Sil, Pur ; KM then LOFKM (Sil/Pur at t=3)
    "yeast": {
        "KM": ((0.93, 1.18, 1.42), (1.20, 1.57, 2.00), 0.26, 0.42),
        "LOFKM": ((0.92, 1.08, 1.15), (1.15, 1.53, 1.98), 0.27, 0.41),
    },
    "wireless": {
        "KM": ((1.24, 1.68, 2.04), (1.32, 1.79, 2.24), 0.40, 0.93),
        "LOFKM": ((1.18, 1.56, 1.90), (1.31, 1.73, 1.95), 0.39, 0.77),
    },
    "avila": {
        "KM": ((1.11, 1.48, 1.83), (1.33, 1.77, 2.19), 0.15, 0.46),
        "LOFKM": ((0.99, 1.31, 1.61), (1.32, 1.80, 2.19), 0.18, 0.45),
    },
}


def load(name: str) -> tuple[np.ndarray, np.ndarray]:
    if name == "yeast":
        rows = [ln.split() for ln in (DATA / "yeast" / "yeast.data").read_text().splitlines()]
        rows = [r for r in rows if r]
        X = np.array([[float(v) for v in r[1:9]] for r in rows])
        y = np.array([r[9] for r in rows])
    elif name == "wireless":
        A = np.loadtxt(DATA / "wireless_indoor" / "wifi_localization.txt")
        X, y = A[:, :7], A[:, 7].astype(int).astype(str)
    else:
        parts = []
        for f in ("avila-tr.txt", "avila-ts.txt"):
            lines = (DATA / "avila" / f).read_text().splitlines()
            parts += [ln.split(",") for ln in lines if ln and not ln.startswith("f1")]
        X = np.array([[float(v) for v in r[:10]] for r in parts])
        y = np.array([r[10].strip() for r in parts])
    return X, y


def purity(y: np.ndarray, labels: np.ndarray) -> float:
    total = 0
    for c in np.unique(labels):
        _, counts = np.unique(y[labels == c], return_counts=True)
        total += counts.max()
    return total / len(y)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--starts", type=int, default=20)
    ap.add_argument("--datasets", default="yeast,wireless,avila")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if not DATA.exists():
        print(f"{DATA} not found: skipping the LOFKM reproduction.")
        sys.exit(0)
    ts = (3, 4, 5)
    lines = [
        f"date: {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}; "
        f"machine: {platform.platform()}; python {platform.python_version()}; "
        f"starts={args.starts}",
        "",
        "| data | method | AvgLCD t=3 | t=4 | t=5 | MaxLCD t=3 | t=4 | t=5 | Sil t=3/4/5 | "
        "Pur t=3/4/5 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in args.datasets.split(","):
        t0 = time.perf_counter()
        X, y = load(name)
        K = len(np.unique(y))
        sil_kw = {"sample_size": 5000} if len(X) > 5000 else {}
        res: dict[str, dict[str, list]] = {
            m: {
                "avg": [[] for _ in ts],
                "max": [[] for _ in ts],
                "sil": [[] for _ in ts],
                "pur": [[] for _ in ts],
            }
            for m in ("KM", "LOFKM")
        }
        for r in range(args.starts):
            km = KMeans(K, init="random", n_init=1, random_state=r).fit(X)
            sil = silhouette_score(X, km.labels_, random_state=r, **sil_kw)
            pur = purity(y, km.labels_)
            for i, t in enumerate(ts):
                L = lcd(X, km.labels_, prototypes=km.cluster_centers_, t=t)
                res["KM"]["avg"][i].append(L.avg_lcd)
                res["KM"]["max"][i].append(L.max_lcd)
                res["KM"]["sil"][i].append(sil)
                res["KM"]["pur"][i].append(pur)
                lk = LOFKMeans(K, n_neighbors=t, init="random", n_init=1, random_state=r,
                               variant="paper").fit(X)
                L = lcd(X, lk.labels_, prototypes=lk.cluster_centers_, t=t)
                res["LOFKM"]["avg"][i].append(L.avg_lcd)
                res["LOFKM"]["max"][i].append(L.max_lcd)
                res["LOFKM"]["sil"][i].append(
                    silhouette_score(X, lk.labels_, random_state=r, **sil_kw)
                )
                res["LOFKM"]["pur"][i].append(purity(y, lk.labels_))
        for m in ("KM", "LOFKM"):
            R = {key: [float(np.mean(v)) for v in vals] for key, vals in res[m].items()}
            p = PAPER[name][m]
            lines.append(
                f"| {name} (n={len(X)}, K={K}) | {m} | "
                + " | ".join(f"{a:.3f} ({b:.2f})" for a, b in zip(R["avg"], p[0], strict=True))
                + " | "
                + " | ".join(f"{a:.3f} ({b:.2f})" for a, b in zip(R["max"], p[1], strict=True))
                + f" | {'/'.join(f'{v:.3f}' for v in R['sil'])} ({p[2]:.2f}) | "
                + f"{'/'.join(f'{v:.3f}' for v in R['pur'])} ({p[3]:.2f}) |"
            )
            print(lines[-1], flush=True)
        km_avg = [float(np.mean(v)) for v in res["KM"]["avg"]]
        lo_avg = [float(np.mean(v)) for v in res["LOFKM"]["avg"]]
        km_max = [float(np.mean(v)) for v in res["KM"]["max"]]
        lo_max = [float(np.mean(v)) for v in res["LOFKM"]["max"]]
        lines.append(
            f"| {name} | improvement % | "
            + " | ".join(f"{100 * (a - b) / a:.1f}" for a, b in zip(km_avg, lo_avg, strict=True))
            + " | "
            + " | ".join(f"{100 * (a - b) / a:.1f}" for a, b in zip(km_max, lo_max, strict=True))
            + " | | |"
        )
        print(lines[-1], f"[{time.perf_counter() - t0:.0f}s]", flush=True)
    lines.append("")
    lines.append("Paper values in parentheses (Tables 2-3; Sil/Pur for LOFKM at t=3).")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
