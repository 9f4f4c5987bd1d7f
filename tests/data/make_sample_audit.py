"""Generate tests/data/sample_audit.json (+ _xss variant) for the report tests.

Values are computed from a planted joint table with fairaudit.metrics.counting; CIs from a
seeded multinomial bootstrap. Run: python tests/data/make_sample_audit.py
"""

import json
import sys

import numpy as np

from fairaudit.metrics import counting as C

rng = np.random.default_rng(7)
SEX = ["Female", "Male"]
RACE = ["White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other"]


def make(xss=False):
    race = list(RACE)
    if xss:
        race[4] = "<script>alert(1)</script>"
    joint_groups = [f"{s}|{r}" for s in SEX for r in race]
    # planted joint tables: rows = joint groups, cols = clusters
    seg = np.array(
        [
            [310, 180, 95, 60],  # F White
            [40, 38, 12, 9],  # F Black
            [14, 9, 6, 4],  # F API
            [3, 2, 1, 1],  # F AIE
            [6, 4, 2, 3],  # F Other
            [420, 610, 390, 260],  # M White
            [45, 52, 30, 12],
            [30, 25, 18, 11],
            [8, 10, 5, 4],
            [9, 7, 6, 5],
        ]
    )
    km = np.array(
        [
            [260, 240, 145],
            [31, 48, 20],
            [11, 13, 9],
            [2, 3, 2],
            [5, 6, 4],
            [700, 520, 460],
            [50, 55, 34],
            [34, 30, 20],
            [10, 9, 8],
            [10, 9, 8],
        ]
    )
    seg_noise = np.array([5, 2, 0, 0, 0, 9, 1, 1, 0, 0])  # rows labelled -1 in the column
    min_cell = 10

    def tables(J):
        sex = np.stack([J[:5].sum(0), J[5:].sum(0)])
        race_t = np.stack([J[i] + J[i + 5] for i in range(5)])
        return {"sex": (SEX, sex), "race": (race, race_t), "sex|race": (joint_groups, J)}

    def tables_noise(v):
        return {
            "sex": np.array([v[:5].sum(), v[5:].sum()]),
            "race": np.array([v[i] + v[i + 5] for i in range(5)]),
            "sex|race": v,
        }

    labellings = []
    results = []
    thresholds = [
        {
            "metric": "balance",
            "value": 0.8,
            "bound": "min",
            "on": "value",
            "attribute": None,
            "severity": "error",
            "labelling": None,
            "source": "--fail-under",
        },
        {
            "metric": "fairness_cce",
            "value": 0.5,
            "bound": "min",
            "on": "ci",
            "attribute": None,
            "severity": "warning",
            "labelling": None,
            "source": "--fail-under",
        },
        {
            "metric": "ed",
            "value": 0.1,
            "bound": "max",
            "on": "value",
            "attribute": "sex",
            "severity": "error",
            "labelling": None,
            "source": "chain.toml",
        },
    ]

    def threshold_for(metric, attribute):
        for th in thresholds:
            if th["metric"] == metric and (th["attribute"] in (None, attribute)):
                return th
        return None

    def status(th, value, ci):
        if th is None:
            return "not_evaluated"
        x = value
        if th["on"] == "ci" and ci is not None:
            x = ci[0] if th["bound"] == "min" else ci[1]
        if x is None:
            return "not_applicable"
        ok = x >= th["value"] if th["bound"] == "min" else x <= th["value"]
        return "pass" if ok else ("fail" if th["severity"] == "error" else "warn")

    def boot(fn, J, B=200):
        n = int(J.sum())
        p = (J / n).ravel()
        reps = rng.multinomial(n, p, size=B).reshape((B,) + J.shape)
        v = np.asarray(fn(reps), dtype=float)
        v = v[np.isfinite(v)]
        return [round(float(np.quantile(v, 0.025)), 4), round(float(np.quantile(v, 0.975)), 4)]

    def r4(x):
        x = float(x)
        return None if not np.isfinite(x) else round(x, 4)

    for name, J, noise, origin in (
        ("segment", seg, seg_noise, "column"),
        ("kmeans", km, np.zeros(10, int), "clusterer"),
    ):
        tabs = tables(J)
        ntabs = tables_noise(noise)
        k = J.shape[1]
        sizes = J.sum(0)
        comp = {}
        for attr, (groups, T) in tabs.items():
            pop = T.sum(1) / T.sum()
            share = T / T.sum(0, keepdims=True)
            counts = T.tolist()
            cshare = [[r4(x) for x in row] for row in share]
            comp[attr] = {
                "groups": groups,
                "clusters": list(range(k)),
                "counts": counts,
                "population_share": [r4(x) for x in pop],
                "cluster_share": cshare,
                "noise": [int(x) for x in ntabs[attr]],
            }
        labellings.append(
            {
                "name": name,
                "origin": origin,
                "component": None if origin == "column" else "kmeans",
                "column": "segment" if origin == "column" else None,
                "params": {}
                if origin == "column"
                else {"n_clusters": 3, "n_init": "auto", "random_state": 1234},
                "n_rows": int(J.sum() + noise.sum()),
                "n_clusters": k,
                "n_noise": int(noise.sum()),
                "cluster_sizes": [{"cluster": c, "n": int(sizes[c])} for c in range(k)],
                "notes": (
                    [
                        f"{int(noise.sum())} rows carry the noise label -1 and are excluded from the tables."
                    ]
                    if noise.sum()
                    else ["k = 3 chosen by silhouette over 2..8 on a seeded sample of 2,000 rows."]
                ),
                "extras": {} if origin == "column" else {"inertia": 18342.7, "silhouette": 0.212},
                "composition": comp,
            }
        )
        for attr, (groups, T) in tabs.items():
            # marginalised bootstrap: resample joint, then marginalise
            def on(fn, attr=attr):
                def f(reps):
                    if attr == "sex":
                        R = np.stack([reps[:, :5].sum(1), reps[:, 5:].sum(1)], axis=1)
                    elif attr == "race":
                        R = np.stack([reps[:, i] + reps[:, i + 5] for i in range(5)], axis=1)
                    else:
                        R = reps
                    return fn(R)

                return f

            specs = [
                (
                    "balance",
                    "balance",
                    True,
                    C.balance_min(T),
                    on(C.balance_min),
                    C.balance_per_cluster(T),
                    "higher_is_better",
                ),
                (
                    "balance",
                    "balance_mean",
                    False,
                    C.balance_mean(T),
                    on(C.balance_mean),
                    None,
                    "higher_is_better",
                ),
                (
                    "distribution",
                    "ed",
                    False,
                    C.ed(T),
                    on(C.ed),
                    C.ed_per_cluster(T),
                    "lower_is_better",
                ),
                (
                    "distribution",
                    "wd",
                    True,
                    C.wd(T),
                    on(C.wd),
                    C.wd_per_cluster(T),
                    "lower_is_better",
                ),
                (
                    "capacity",
                    "fairness_cce",
                    True,
                    C.fairness_cce(T),
                    on(C.fairness_cce),
                    C.fairness_cce_per_cluster(T),
                    "higher_is_better",
                ),
                (
                    "capacity",
                    "mnce",
                    False,
                    C.mnce(T),
                    on(C.mnce),
                    C.nce_per_cluster(T),
                    "higher_is_better",
                ),
            ]
            if noise.sum():
                specs.insert(
                    2,
                    (
                        "balance",
                        "balance_noise_adjusted",
                        False,
                        C.noise_adjusted_balance(T, int(ntabs[attr].sum())),
                        None,
                        None,
                        "higher_is_better",
                    ),
                )
            for aud, metric, head, val, bfn, pc, direction in specs:
                ci = boot(bfn, J) if bfn is not None else None
                th = threshold_for(metric, attr)
                v = r4(val)
                results.append(
                    {
                        "auditor": aud,
                        "metric": metric,
                        "labelling": name,
                        "attribute": attr,
                        "value": v,
                        "ci": ci,
                        "direction": direction,
                        "headline": head,
                        "threshold": th,
                        "status": status(th, v, ci),
                        "n_rows": int(J.sum()),
                        "notes": [],
                        "per_cluster": []
                        if pc is None
                        else [
                            dict(
                                {
                                    "metric": metric,
                                    "cluster": c,
                                    "value": r4(pc[c]),
                                    "n": int(T[:, c].sum()),
                                },
                                **(
                                    {
                                        "worst_group": groups[
                                            int(
                                                np.argmin(
                                                    np.where(
                                                        T[:, c] > 0,
                                                        np.minimum(
                                                            (T[:, c] / T[:, c].sum())
                                                            / (T.sum(1) / T.sum()),
                                                            (T.sum(1) / T.sum())
                                                            / np.where(
                                                                T[:, c] > 0,
                                                                T[:, c] / T[:, c].sum(),
                                                                1,
                                                            ),
                                                        ),
                                                        0,
                                                    )
                                                )
                                            )
                                        ]
                                    }
                                    if metric == "balance"
                                    else {}
                                ),
                            )
                            for c in range(k)
                        ],
                        "detail": {},
                    }
                )
        for aud, metric, fn in (("capacity", "cce", C.cce), ("capacity", "ne", C.ne)):
            T = tabs["sex"][1]
            results.append(
                {
                    "auditor": aud,
                    "metric": metric,
                    "labelling": name,
                    "attribute": None,
                    "value": r4(fn(T)),
                    "ci": None,
                    "direction": "higher_is_better",
                    "headline": False,
                    "threshold": None,
                    "status": "not_evaluated",
                    "n_rows": int(J.sum()),
                    "notes": ["depends on cluster sizes only"],
                    "per_cluster": [],
                    "detail": {},
                }
            )
        # a non-counting auditor without its own section (exercises the generic section)
        results.append(
            {
                "auditor": "dcsi",
                "metric": "dcsi",
                "labelling": name,
                "attribute": None,
                "value": 0.4123 if name == "kmeans" else None,
                "ci": None,
                "direction": "higher_is_better",
                "headline": True,
                "threshold": None,
                "status": "not_evaluated",
                "n_rows": int(J.sum()),
                "notes": []
                if name == "kmeans"
                else ["undefined: cluster 3 has fewer than 2*min_pts core points"],
                "per_cluster": [
                    {
                        "cluster": c,
                        "value": r4(0.3 + 0.05 * c),
                        "n": int(sizes[c]),
                        "core_points": int(sizes[c] * 0.8),
                    }
                    for c in range(k)
                ],
                "detail": {"min_pts": 5},
            }
        )

    rows_audited = int(seg.sum() + seg_noise.sum())
    groups_block = {}
    for attr, (groups, T) in tables(seg + seg_noise[:, None] * 0).items():
        tot = T.sum(1)
        groups_block[attr] = [
            {
                "group": g,
                "n": int(n),
                "share": r4(n / T.sum()),
                "small": bool(n < min_cell),
            }
            for g, n in zip(groups, tot, strict=True)
        ]
    statuses = {r["status"] for r in results}
    overall = (
        "fail"
        if "fail" in statuses
        else "warn"
        if "warn" in statuses
        else "pass"
        if "pass" in statuses
        else "not_evaluated"
    )
    cols = [
        "id",
        "age",
        "workclass",
        "education-num",
        "marital-status",
        "occupation",
        "hours-per-week",
        "sex",
        "race",
        "segment",
    ]
    if xss:
        cols.append("<script>alert(1)</script>")
    doc = {
        "schema_version": "1.1",
        "tool": {"name": "fairaudit", "version": "0.1.0"},
        "status": overall,
        "input": {
            "path": "examples/data/adult_sample.parquet"
            if not xss
            else "data/<img src=x onerror=alert(1)>.parquet",
            "format": "parquet",
            "rows": rows_audited + 13,
            "rows_audited": rows_audited,
            "fingerprint": "sha256:3f1c9a0d5e7b2c4a8f6e1d0b9c7a5e3f2d1c0b9a8f7e6d5c4b3a2918f7e6d5c4",
            "columns": cols,
            "sensitive": ["sex", "race"],
            "attributes": ["sex", "race", "sex|race"],
            "ordinal": {},
            "labels": "segment",
            "features": [
                "age",
                "workclass",
                "education-num",
                "marital-status",
                "occupation",
                "hours-per-week",
            ]
            + (["<script>alert(1)</script>"] if xss else []),
            "excluded_columns": {"id": "unique per row (ID-like)"},
            "exclusions": {"null value in a sensitive column": 13},
            "sample": None,
            "groups": groups_block,
        },
        "chain": {
            "source": "flags",
            "seed": 7,
            "preprocess": [
                {"use": "encode", "params": {"max_categories": 20, "scale": "standard"}}
            ],
            "cluster": [
                {
                    "use": "kmeans",
                    "name": "kmeans",
                    "params": {"n_clusters": 3, "n_init": "auto", "random_state": 1234},
                }
            ],
            "audit": [
                {"use": "balance", "params": {}},
                {"use": "distribution", "params": {"ground": "zero-one", "how": "weighted-mean"}},
                {"use": "capacity", "params": {}},
                {"use": "dcsi", "params": {"min_pts": 5}},
            ],
            "thresholds": thresholds,
            "options": {
                "min_cell": min_cell,
                "bootstrap": 200,
                "ci_level": 0.95,
                "on_null": "exclude",
            },
        },
        "preprocessing": [
            {
                "name": "encode",
                "notes": [
                    "one-hot encoded 4 categorical columns (51 indicator columns)",
                    "standardised 2 numeric columns",
                ],
                "report": {},
            }
        ],
        "labellings": labellings,
        "results": results,
        "checks": [
            {
                "name": "sensitive_exists[sex]",
                "expectation": "expect_column_to_exist",
                "column": "sex",
                "success": True,
                "severity": "error",
                "observed": "present",
                "expected": "column exists",
            },
            {
                "name": "sensitive_exists[race]",
                "expectation": "expect_column_to_exist",
                "column": "race",
                "success": True,
                "severity": "error",
                "observed": "present",
                "expected": "column exists",
            },
            {
                "name": "sensitive_not_null[sex]",
                "expectation": "expect_column_values_to_not_be_null",
                "column": "sex",
                "success": True,
                "severity": "error",
                "observed": "0.0% null",
                "expected": ">= 95% non-null",
            },
            {
                "name": "sensitive_not_null[race]",
                "expectation": "expect_column_values_to_not_be_null",
                "column": "race",
                "success": True,
                "severity": "error",
                "observed": "0.3% null",
                "expected": ">= 95% non-null",
            },
            {
                "name": "group_sizes[sex|race]",
                "expectation": "expect_column_value_counts_to_be_at_least",
                "column": "sex|race",
                "success": False,
                "severity": "warning",
                "observed": "2 groups below min_cell=10",
                "expected": "every group >= 10 rows",
            },
            {
                "name": "labels_integral[segment]",
                "expectation": "expect_column_values_to_be_of_type",
                "column": "segment",
                "success": True,
                "severity": "error",
                "observed": "Int64",
                "expected": "integer",
            },
            {
                "name": "features_finite",
                "expectation": "expect_column_values_to_be_between",
                "column": None,
                "success": True,
                "severity": "error",
                "observed": "all finite",
                "expected": "finite values",
            },
        ],
        "privacy": {"mode": "exact"},
        "environment": {
            "python": "3.11.7",
            "platform": "Linux-6.1.0-x86_64-with-glibc2.36",
            "versions": {
                "fairaudit": "0.1.0",
                "polars": "1.20.0",
                "numpy": "2.4.0",
                "scikit-learn": "1.9.0",
                "great-expectations": "1.24.0",
                "matplotlib": "3.11.2",
            },
            "plugins": [
                {"name": n, "package": "fairaudit", "version": "0.1.0"}
                for n in (
                    "builtins_auditors",
                    "builtins_clusterers",
                    "builtins_preprocessors",
                    "builtins_sections",
                )
            ],
        },
        "timing": {
            "created": "2026-11-22T10:00:00Z",
            "total_seconds": 1.93,
            "steps": [
                {"kind": "load", "step": "load", "labelling": None, "seconds": 0.08},
                {"kind": "checks", "step": "checks", "labelling": None, "seconds": 0.61},
                {"kind": "preprocessor", "step": "encode", "labelling": None, "seconds": 0.05},
                {"kind": "clusterer", "step": "kmeans", "labelling": "kmeans", "seconds": 0.42},
                {"kind": "auditor", "step": "balance", "labelling": "segment", "seconds": 0.03},
                {"kind": "auditor", "step": "balance", "labelling": "kmeans", "seconds": 0.03},
            ],
        },
    }
    if xss:
        doc["input"]["excluded_columns"]["<b>bold</b>"] = "unique per row (ID-like) <i>x</i>"
        doc["labellings"][1]["notes"].append("note with <script>alert('n')</script>")
    return doc


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data"
    for suffix, xss in (("", False), ("_xss", True)):
        with open(f"{out}/sample_audit{suffix}.json", "w") as f:
            json.dump(make(xss), f, indent=1, ensure_ascii=False)
            f.write("\n")
