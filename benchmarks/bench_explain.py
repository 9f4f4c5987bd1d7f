"""Benchmark: the explain pass (`fairaudit.report.explain.explain`) against writing the same document.

    python benchmarks/bench_explain.py [--repeat 3]

Builds, for each size (groups x clusters), the audit JSON of one labels column and one
attribute from seeded random counts (the built-in balance / distribution / capacity auditors,
exact counts, as in the analyst's report), then times in the same run:

* baseline: `json.dumps(doc)` (the cost of writing the document once);
* explain: `explain(doc, specs)` (sentences, verdicts, glossary).

Prints a Markdown table (best of --repeat) with the ratio explain / baseline.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time

import numpy as np

SIZES = ((5, 4), (50, 10), (500, 20), (2000, 50))


def make_doc(counts: np.ndarray, min_cell: int = 10) -> dict:
    from fairaudit_builtins.auditors import BalanceAuditor, CapacityAuditor, DistributionAuditor

    from fairaudit.core.data import GroupTable

    g, k = counts.shape
    groups = tuple(f"g{i}" for i in range(g))
    table = GroupTable("group", groups, tuple(range(k)), counts, np.zeros(g, np.int64))
    sizes, pop = counts.sum(axis=0), counts.sum(axis=1) / counts.sum()

    results = []
    for aud in (BalanceAuditor(), DistributionAuditor(), CapacityAuditor()):
        for metric, value in aud.compute(table).items():
            spec = next(m for m in aud.metrics if m.name == metric)
            rows = [dict({k: v for k, v in r.items() if k != "metric"}, n=int(r["n"]))
                    for r in aud.breakdown_for(table, metric)]
            results.append({
                "auditor": aud.name, "metric": metric, "labelling": "segment",
                "attribute": "group", "value": None if math.isnan(value) else float(value),
                "ci": [0.0, 1.0] if spec.headline else None, "direction": spec.direction.value,
                "headline": spec.headline, "threshold": None, "per_cluster": rows,
                "detail": {}, "notes": [],
            })
    return {
        "chain": {"options": {"min_cell": min_cell, "ci_level": 0.95}},
        "input": {"groups": {"group": [{"group": x} for x in groups]}},
        "labellings": [{
            "name": "segment", "origin": "column", "column": "segment", "n_rows": int(sizes.sum()),
            "n_noise": 0,
            "cluster_sizes": [{"cluster": c, "n": int(s)} for c, s in enumerate(sizes)],
            "composition": {"group": {
                "groups": list(groups), "clusters": list(range(k)),
                "counts": counts.tolist(),
                "population_share": pop.tolist(),
                "cluster_share": [[float(v / s) for v, s in zip(row, sizes, strict=True)]
                                  for row in counts],
                "noise": [0] * g}},
        }],
        "results": results,
    }


def best(fn, repeat: int) -> float:
    out = math.inf
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t)
    return out


def main() -> None:
    from fairaudit_builtins.auditors import BalanceAuditor, CapacityAuditor, DistributionAuditor

    from fairaudit.report.explain import explain, specs_from_classes

    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    specs = specs_from_classes([BalanceAuditor, DistributionAuditor, CapacityAuditor])
    rng = np.random.default_rng(2026)
    print(f"{platform.platform()}, Python {platform.python_version()}, best of {args.repeat}")
    print("| groups x clusters | json.dumps (s) | explain (s) | ratio |")
    print("|---|---|---|---|")
    for g, k in SIZES:
        counts = rng.integers(0, 200, size=(g, k)).astype(np.int64)
        counts[counts < 20] = rng.integers(1, 10, size=int((counts < 20).sum()))  # small cells
        doc = make_doc(counts)
        base = best(lambda doc=doc: json.dumps(doc), args.repeat)
        t = best(lambda doc=doc: explain(doc, specs), args.repeat)
        print(f"| {g:,} x {k} | {base:.4f} | {t:.4f} | {t / base:.1f} |")


if __name__ == "__main__":
    main()
