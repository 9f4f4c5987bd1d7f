"""One draw where FairSC is less fair than k-means, taken apart (issue 27, third round).

    nice -n 5 .venv/bin/python benchmarks/bench_field_fairsc_case.py [--table bank-married]
        [--seed 2] [--k 2] [--n 1000]

On the draw of ``bench_field_vs_kmeans.py`` (same table, seed and rows) it prints, for k-means,
FairSC and FairSC's twin (no constraint, same graph): minimum balance, the smaller cluster's
group count, the RatioCut of each labelling on FairSC's 15-NN graph, the constrained and
unconstrained eigenvalues; then FairSC's sensitivity to the k-means starts on its embedding, to
the set-aside rule (``isolation=0``), to the k of the k-NN graph and to normalisation.
docs/methods/fairsc.md ("The one run where FairSC was less fair than k-means") quotes it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> None:
    import bench_field_vs_kmeans as B
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score

    from fairaudit.cluster import FairSC
    from fairaudit.cluster.fairsc import knn_affinity
    from fairaudit.metrics.scorers import balance_score

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--table", default="bank-married", choices=sorted(B.TABLES))
    ap.add_argument("--seed", type=int, default=2)
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--n", type=int, default=1000)
    args = ap.parse_args()
    if not B.DATA.exists():
        print(f"{B.DATA} not found: nothing to examine")
        return
    X, s = B.draw(*B.TABLES[args.table](), args.n, args.seed)
    k, seed = args.k, args.seed
    W = knn_affinity(X, 15)

    def ratiocut(lab: np.ndarray) -> float:
        return float(sum(W[lab == c][:, lab != c].sum() / (lab == c).sum()
                         for c in np.unique(lab)))

    km = KMeans(k, n_init=10, random_state=seed).fit(X).labels_
    est = FairSC(k, random_state=seed).fit(X, sensitive=s)
    twin = FairSC(k, fair=False, random_state=seed).fit(X, sensitive=s)
    print(f"{args.table}, k = {k}, draw seed {seed}, {len(s)} rows, group-1 share {s.mean():.3f}")
    for name, lab in (("k-means", km), ("FairSC", est.labels_), ("twin", twin.labels_)):
        small = int(np.argmin(np.bincount(lab)))
        m = lab == small
        print(f"  {name:8s} balance {balance_score(lab, s):.4f}  smaller cluster {m.sum()} rows, "
              f"{int(s[m].sum())} of group 1 ({s[m].mean():.3f})  RatioCut {ratiocut(lab):.3f}")
    print(f"  eigenvalues: constrained {est.eigenvalues_}, twin {twin.eigenvalues_}")
    print(f"  rows set aside: {int(est.aside_.sum())}; ARI FairSC vs k-means "
          f"{adjusted_rand_score(est.labels_, km):.3f}")
    for n_init in (1, 10, 100):
        for rs in range(3):
            fit = KMeans(k, n_init=n_init, random_state=rs).fit(est.embedding_)
            print(f"  k-means on the embedding, n_init {n_init:3d}, random_state {rs}: balance "
                  f"{balance_score(fit.labels_, s):.4f}, inertia {fit.inertia_:.4f}")
    variants = {"isolation=0": {"isolation": 0.0}, "normalized": {"normalized": True},
                **{f"n_neighbors={t}": {"n_neighbors": t} for t in (10, 15, 20, 30)}}
    for name, kw in variants.items():
        lab = FairSC(k, random_state=seed, **kw).fit(X, sensitive=s).labels_
        print(f"  FairSC {name:15s} balance {balance_score(lab, s):.4f}")


if __name__ == "__main__":
    main()
