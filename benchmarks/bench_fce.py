"""Benchmark: FairClusteringEnsemble on n rows, m base labellings, c clusters.

Synthetic ensemble: a planted partition z (c clusters), m bases that each relabel a random 30 %
of the rows, a binary protected attribute correlated with z. Baseline in the same run: the same
fit with ``lambda2=0`` (fairness off, the authors' shipped setting).

    .venv/bin/python benchmarks/bench_fce.py --n 100000 --m 10 --c 8
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from fairaudit.cluster import FairClusteringEnsemble


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--m", type=int, default=10)
    ap.add_argument("--c", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(f"machine: {platform.platform()} | {platform.machine()} | numpy {np.__version__}")

    rng = np.random.default_rng(args.seed)
    n, m, c = args.n, args.m, args.c
    z = rng.integers(0, c, n)
    bases = np.column_stack(
        [np.where(rng.random(n) < 0.3, rng.integers(0, c, n), z) for _ in range(m)]
    )
    s = (rng.random(n) < np.where(z < c // 2, 0.75, 0.3)).astype(int)

    def groups_spread(labels: np.ndarray) -> float:
        N = np.zeros((2, c))
        np.add.at(N, (s, labels), 1)
        gamma = N / N.sum(axis=1, keepdims=True)
        x = c * gamma
        return float(np.min(np.minimum(x, 1 / np.maximum(x, 1e-12))))  # fairness_CCE

    for lam in (0.0, "auto"):
        t0 = time.perf_counter()
        est = FairClusteringEnsemble(c, lambda2=lam, random_state=args.seed + 1)
        est.fit(bases, sensitive=s)
        dt = time.perf_counter() - t0
        moves = [h.moves for h in est.objective_[1:]]
        print(
            f"lambda2={lam!s:>5} (used {est.lambda2_:.3g}): {dt:.2f}s, {est.n_iter_} iterations, "
            f"moves per iteration {moves}, fairness_CCE {groups_spread(est.labels_):.3f}, "
            f"{dt / est.n_iter_:.2f}s/iteration"
        )


if __name__ == "__main__":
    main()
