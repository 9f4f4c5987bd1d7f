"""The fair-clustering field on the FairDen paper's real-world benchmarks (issue 27).

    .venv/bin/python benchmarks/bench_field.py [--seeds 3] [--out docs/benchmarks/field]
    .venv/bin/python benchmarks/bench_field.py --scale 100000      # fit time at n rows

Comparison mode: every method x dataset x seed on the FairDen authors' draws (their configs in
hankyojeong/Fairden config/realworld: columns, sensitive attribute, n_samples, random_state, k = 2;
duplicates on the used columns dropped, then ``DataFrame.sample(n, random_state)``), features
z-scored. Methods: k-means, FairDen, FairSC and normalized FairSC (our default graph and the FairDen
authors' graph: edge weight = length, the sensitive column a feature), fairlets (scalable: our
auto target and the authors' p = 1, q = ceil(majority/minority); MCF on the draw's first 1,000
rows), Bera et al. (delta = 0.2) and VFC (lambda auto). Seeds vary every method's random start on
the same draw (the authors ran one seed). Writes ``field.csv`` (every run), ``field.md``
(mean +- sd over seeds beside the authors' Figure 2 / Table 2 balances from their
``results/rw_experiment/combined.csv``) and ``field.png`` (balance against silhouette and against
DCSI, error bars = sd over seeds, the Pareto front per dataset marked).

Scale mode: fit time of each method on n synthetic rows (5 Gaussian features, two groups 35/65,
two shifted blobs), each beside k-means in the same go (ratio), with ``uptime`` load.

Needs /work/shared/data (skips with a message otherwise).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

DATA = Path("/work/shared/data")
sys.path.insert(0, str(Path(__file__).resolve().parent))

# the authors' balances (results/rw_experiment/combined.csv: Figure 2 / Table 2; mean balance)
PAPER = {
    "adult-race": {"fairden": 0.833, "fairsc": 0.336, "fairsc-n": 0.319},
    "adult-sex": {"fairden": 0.860, "fairsc": 0.404, "fairsc-n": 0.485, "fairlets": 0.947,
                  "fairlets-mcf": 0.937},
    "bank-marital": {"fairden": 0.980, "fairsc": 0.422, "fairsc-n": 0.875},
    "communities-black": {"fairden": 0.920, "fairsc": 0.823, "fairsc-n": 0.857,
                          "fairlets": 0.751, "fairlets-mcf": 0.986},
}
PAPER_NAMES = {"fairlets": "Scalable", "fairlets-mcf": "Fairlet (MCF)", "fairsc": "FairSC",
               "fairsc-n": "FairSC (N)", "fairden": "FairDen"}


# ------------------------------------------------------------------------------------- data
def _draw(df, cols: list[str], sens: str, n: int, rs: int):
    d = df.drop_duplicates(subset=[sens, *cols], ignore_index=True)
    return d.sample(n=n, random_state=rs) if n < len(d) else d


def datasets() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    import pandas as pd
    from reproduce_fairden import ADULT_NUM, adult_frame

    out = {}
    adult = adult_frame()
    for name, sens in (("adult-race", "race"), ("adult-sex", "sex")):
        d = _draw(adult, ADULT_NUM, sens, 2000, 42)
        out[name] = (d[ADULT_NUM].to_numpy(float), d[sens].astype(str).to_numpy())
    bank = pd.read_csv(DATA / "bank" / "bank-full.csv", sep=";")
    cols = ["age", "balance", "duration"]
    d = _draw(bank, cols, "marital", 5000, 21)
    out["bank-marital"] = (d[cols].to_numpy(float), d["marital"].astype(str).to_numpy())
    names = pd.read_csv(DATA / "communities" / "attributes.csv", sep=r"\s+")["attributes"]
    com = pd.read_csv(DATA / "communities" / "communities.data", names=list(names),
                      na_values="?")
    com["black"] = np.where(com["racepctblack"] > 0.06, "black", "else")
    # the authors' 67 columns (their config/realworld/communities.json)
    cols = ["population", "householdsize", "agePct12t21", "agePct12t29", "agePct16t24",
            "agePct65up", "numbUrban", "pctUrban", "medIncome", "pctWWage", "pctWFarmSelf",
            "pctWSocSec", "pctWRetire", "medFamInc", "perCapInc", "PctLess9thGrade",
            "PctNotHSGrad", "PctBSorMore", "PctUnemployed", "PctEmploy", "PctEmplManu",
            "PctEmplProfServ", "PctOccupManu", "PctOccupMgmtProf", "MalePctDivorce",
            "MalePctNevMarr", "FemalePctDiv", "TotalPctDiv", "PersPerFam", "PctFam2Par",
            "PctKids2Par", "PctYoungKids2Par", "PctTeen2Par", "PctWorkMomYoungKids",
            "PctWorkMom", "PctLargHouseFam", "PctLargHouseOccup", "PersPerOccupHous",
            "PersPerOwnOccHous", "PersPerRentOccHous", "PctPersOwnOccup", "PctPersDenseHous",
            "PctHousLess3BR", "MedNumBR", "HousVacant", "PctHousOccup", "PctHousOwnOcc",
            "PctVacantBoarded", "PctVacMore6Mos", "MedYrHousBuilt", "PctHousNoPhone",
            "PctWOFullPlumb", "OwnOccLowQuart", "OwnOccMedVal", "OwnOccHiQuart", "RentLowQ",
            "RentMedian", "RentHighQ", "MedRent", "MedRentPctHousInc", "MedOwnCostPctInc",
            "MedOwnCostPctIncNoMtg", "NumInShelters", "LandArea", "PopDens", "PctUsePubTrans",
            "LemasPctOfficDrugUn"]
    d = _draw(com, cols, "black", 1900, 42)
    out["communities-black"] = (d[cols].to_numpy(float), d["black"].to_numpy())
    return out


# ------------------------------------------------------------------------------------- methods
def _codes(s: np.ndarray) -> np.ndarray:
    return np.unique(s, return_inverse=True)[1].ravel()


def methods(X: np.ndarray, s: np.ndarray, seed: int) -> dict:
    from sklearn.cluster import KMeans

    from fairaudit.cluster import (
        BeraFairAssignment,
        FairDen,
        FairletClustering,
        FairSC,
        VariationalFairClustering,
    )

    g = _codes(s)
    two = g.max() == 1
    sz = (g - g.mean()) / (g.std() or 1.0)
    Xs = np.column_stack([X, sz])  # the FairDen authors' graph: the sensitive column a feature
    small = g.max() == 1 and np.bincount(g).min() >= 2
    d = X.shape[1] + 1
    m = {
        "kmeans": lambda: KMeans(2, n_init=10, random_state=seed).fit(X).labels_,
        "fairden": lambda: FairDen(2, min_pts=2 * d - 1, random_state=seed).fit(
            X, sensitive=g).labels_,
        "fairsc": lambda: FairSC(2, random_state=seed).fit(X, sensitive=g).labels_,
        "fairsc-n": lambda: FairSC(2, normalized=True, random_state=seed).fit(
            X, sensitive=g).labels_,
        # the authors' pipeline: their graph, no set-aside of isolated sets (isolation=0)
        "fairsc-fd": lambda: FairSC(2, affinity="distance", isolation=0.0,
                                    random_state=seed).fit(Xs, sensitive=g).labels_,
        "fairsc-n-fd": lambda: FairSC(2, normalized=True, affinity="distance", isolation=0.0,
                                      random_state=seed).fit(Xs, sensitive=g).labels_,
        "bera": lambda: BeraFairAssignment(2, delta=0.2, random_state=seed).fit(
            X, sensitive=g).labels_,
        "vfc": lambda: VariationalFairClustering(2, random_state=seed).fit(
            X, sensitive=g).labels_,
    }
    if two and small:
        r = np.bincount(g)
        q_fd = math.ceil(r.max() / r.min())
        m["fairlets"] = lambda: FairletClustering(2, random_state=seed).fit(X, sensitive=g).labels_
        m["fairlets-fd"] = lambda: FairletClustering(2, p=1, q=q_fd, random_state=seed).fit(
            X, sensitive=g).labels_
        m["fairlets-mcf"] = lambda: ("first1000", FairletClustering(
            2, decomposition="mcf", random_state=seed).fit(X[:1000], sensitive=g[:1000]).labels_)
    return m


def scores(X: np.ndarray, lab: np.ndarray, s: np.ndarray) -> dict:
    from reproduce_fairden import balance_mean

    from fairaudit.metrics.counting import balance_min
    from fairaudit.metrics.density_separation import dcsi
    from fairaudit.metrics.quality import silhouette
    from fairaudit.metrics.scorers import _table

    out = {"balance": balance_mean(lab, s), "balance_min": float(balance_min(_table(lab, s)))}
    keep = lab >= 0
    if np.unique(lab[keep]).size >= 2:  # noise excluded, x the non-noise share (FairDen's rule)
        out["silhouette"] = float(silhouette(X[keep], lab[keep]).value) * float(keep.mean())
        out["dcsi"] = float(dcsi(X, lab, min_pts=5).noise_adjusted)
    else:
        out["silhouette"] = out["dcsi"] = float("nan")
    return out


# ------------------------------------------------------------------------------------- compare
def compare(seeds: int, out: Path, only: list[str] | None, which: list[str] | None) -> None:
    import csv

    out.mkdir(parents=True, exist_ok=True)
    rows = []
    if (which or only) and (out / "field.csv").exists():  # update: keep the other rows
        with open(out / "field.csv") as fh:
            for r in csv.DictReader(fh):
                if (which and r["dataset"] not in which) or (only and r["method"] not in only):
                    rows.append({k: v if k in ("dataset", "method") else
                                 int(v) if k in ("seed", "n") else float(v)
                                 for k, v in r.items()})
    for dname, (X, s) in datasets().items():
        if which and dname not in which:
            continue
        X = (X - X.mean(axis=0)) / np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)
        for seed in range(seeds):
            for mname, fn in methods(X, s, seed).items():
                if only and mname not in only:
                    continue
                t = time.perf_counter()
                res = fn()
                dt = time.perf_counter() - t
                rows_used = "all"
                if isinstance(res, tuple):
                    rows_used, res = res
                Xe, se = (X[:1000], s[:1000]) if rows_used == "first1000" else (X, s)
                sc = scores(Xe, np.asarray(res), se)
                rows.append({"dataset": dname, "method": mname, "seed": seed, "n": len(se),
                             "seconds": round(dt, 3), **{k: round(v, 4) for k, v in sc.items()}})
                print(f"{dname:18s} {mname:13s} seed {seed} balance {sc['balance']:.3f} "
                      f"sil {sc['silhouette']:.3f} dcsi {sc['dcsi']:.3f} {dt:.1f}s", flush=True)
    with open(out / "field.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    summary = summarise(rows)
    write_markdown(summary, out / "field.md", seeds)
    plot(summary, out / "field.png")


def summarise(rows: list[dict]) -> list[dict]:
    out = []
    keys = sorted({(r["dataset"], r["method"]) for r in rows}, key=lambda k: (k[0], k[1]))
    for dname, mname in keys:
        rs = [r for r in rows if r["dataset"] == dname and r["method"] == mname]
        agg = {"dataset": dname, "method": mname, "n": rs[0]["n"], "runs": len(rs)}
        for m in ("balance", "balance_min", "silhouette", "dcsi", "seconds"):
            v = np.array([r[m] for r in rs], dtype=float)
            agg[m] = float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")
            agg[m + "_sd"] = float(np.nanstd(v)) if np.isfinite(v).any() else float("nan")
        agg["paper"] = PAPER.get(dname, {}).get(mname.replace("-fd", "") if "fairsc" in mname
                                                else mname)
        out.append(agg)
    for dname in {a["dataset"] for a in out}:
        for q in ("silhouette", "dcsi"):
            pts = [a for a in out if a["dataset"] == dname and np.isfinite(a[q])]
            for a in pts:
                a[f"pareto_{q}"] = not any(
                    b["balance"] >= a["balance"] and b[q] >= a[q]
                    and (b["balance"] > a["balance"] or b[q] > a[q]) for b in pts)
    return out


def write_markdown(summary: list[dict], path: Path, seeds: int) -> None:
    load = os.getloadavg()
    lines = [
        "# The field on FairDen's real-world benchmarks (bench_field.py)",
        "",
        f"Command: `.venv/bin/python benchmarks/bench_field.py {' '.join(sys.argv[1:])}`"
        + ("" if not any(a.startswith(("--only", "--datasets")) for a in sys.argv)
           else " (the other methods' / datasets' rows kept from the previous run in field.csv)")
        + f"; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average at the end "
        f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (2 shared cores). Balance = FairDen's "
        "(mean over clusters), min = Chierichetti/Bera's (minimum over clusters); mean ± sd over "
        "seeds; 'paper' = the authors' balance (results/rw_experiment/combined.csv behind their "
        "Figure 2 / Table 2). * = on the Pareto front (balance vs DCSI).",
        "",
        "| dataset | method | n | balance | paper | balance (min) | silhouette | DCSI | s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for a in summary:
        paper = f"{a['paper']:.2f}" if a["paper"] is not None else "–"
        star = " *" if a.get("pareto_dcsi") else ""
        lines.append(
            f"| {a['dataset']} | {a['method']}{star} | {a['n']} | {a['balance']:.3f} ± "
            f"{a['balance_sd']:.3f} | {paper} | {a['balance_min']:.3f} | {a['silhouette']:.3f} ± "
            f"{a['silhouette_sd']:.3f} | {a['dcsi']:.3f} ± {a['dcsi_sd']:.3f} | "
            f"{a['seconds']:.1f} |")
    path.write_text("\n".join(lines) + "\n")


def plot(summary: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dsets = sorted({a["dataset"] for a in summary})
    fig, axes = plt.subplots(2, len(dsets), figsize=(4.2 * len(dsets), 7.5), squeeze=False)
    for j, dname in enumerate(dsets):
        pts = [a for a in summary if a["dataset"] == dname]
        for i, q in enumerate(("silhouette", "dcsi")):
            ax = axes[i, j]
            for a in pts:
                if not np.isfinite(a[q]):
                    continue
                front = a.get(f"pareto_{q}")
                ax.errorbar(a[q], a["balance"], xerr=a[q + "_sd"], yerr=a["balance_sd"],
                            fmt="o", ms=7 if front else 4, mfc="C3" if front else "C0",
                            mec="C3" if front else "C0", ecolor="0.6", capsize=2)
                ax.annotate(a["method"], (a[q], a["balance"]), fontsize=7,
                            xytext=(3, 3), textcoords="offset points")
            fr = sorted((a[q], a["balance"]) for a in pts if a.get(f"pareto_{q}"))
            if fr:
                ax.plot(*zip(*fr, strict=True), "--", color="C3", lw=1)
            ax.set_xlabel(q)
            ax.set_ylabel("balance (mean over clusters)")
            ax.set_title(dname, fontsize=9)
            ax.set_ylim(-0.02, 1.05)
    fig.suptitle("Balance vs quality; red = Pareto front, bars = sd over seeds")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


# ------------------------------------------------------------------------------------- scale
def scale(n: int, only: list[str] | None = None) -> None:
    from sklearn.cluster import KMeans

    from fairaudit.cluster import (
        BeraFairAssignment,
        FairletClustering,
        FairSC,
        VariationalFairClustering,
    )

    rng = np.random.default_rng(0)
    g = (rng.random(n) < 0.35).astype(int)
    X = rng.normal(size=(n, 5)) + np.where(rng.random(n) < 0.5, 0.0, 2.5)[:, None] + 0.5 * g[:, None]
    # the groups further apart (k-means' balance ~0.5): the fair assignment must move rows
    # and the integer repair runs
    Xg = X + 1.5 * g[:, None]
    fits = {
        "fairsc": lambda: FairSC(2, random_state=0).fit(X, sensitive=g),
        "fairsc-n": lambda: FairSC(2, normalized=True, random_state=0).fit(X, sensitive=g),
        "fairlets": lambda: FairletClustering(2, random_state=0).fit(X, sensitive=g),
        "fairlets-kmeans": lambda: FairletClustering(2, objective="kmeans",
                                                     random_state=0).fit(X, sensitive=g),
        "bera": lambda: BeraFairAssignment(2, random_state=0).fit(X, sensitive=g),
        "bera (groups apart)": lambda: BeraFairAssignment(2, random_state=0).fit(
            Xg, sensitive=g),
        "vfc (lambda=1000)": lambda: VariationalFairClustering(2, lmbda=1000.0,
                                                               random_state=0).fit(X, sensitive=g),
    }
    print(f"n = {n:,}, load {os.getloadavg()}")
    for name, fn in fits.items():
        if only and name.split(" ")[0] not in only:
            continue
        t = time.perf_counter()
        km = KMeans(2, n_init=10, random_state=0).fit(Xg if "apart" in name else X)
        base = time.perf_counter() - t
        c0 = time.process_time()
        t = time.perf_counter()
        est = fn()
        dt = time.perf_counter() - t
        cpu = time.process_time() - c0
        from fairaudit.metrics.scorers import balance_score

        extra = ""
        if hasattr(est, "repaired_rows_"):
            extra = (f"  (k-means {balance_score(km.labels_, g):.3f}; repair moved "
                     f"{est.repaired_rows_} rows)")
        print(f"{name:20s} {dt:8.1f} s  cpu {cpu:7.1f} s  k-means {base:6.1f} s  ratio "
              f"{dt / base:6.1f}  balance {balance_score(est.labels_, g):.3f}  load "
              f"{os.getloadavg()[0]:.1f}{extra}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("docs/benchmarks/field"))
    ap.add_argument("--only", default="",
                    help="comma-separated method names to (re)run; the other methods' rows of "
                         "an existing field.csv in --out are kept")
    ap.add_argument("--datasets", default="",
                    help="comma-separated datasets to (re)run; the other rows of an existing "
                         "field.csv in --out are kept")
    ap.add_argument("--scale", type=int, default=0, help="time the fits on this many rows")
    args = ap.parse_args()
    if not DATA.exists():
        print(f"{DATA} not found: nothing to benchmark")
        return
    if args.scale:
        scale(args.scale, [m for m in args.only.split(",") if m] or None)
        return
    compare(args.seeds, args.out, [m for m in args.only.split(",") if m] or None,
            [d for d in args.datasets.split(",") if d] or None)


if __name__ == "__main__":
    main()
