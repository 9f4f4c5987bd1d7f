"""Add fairaudit's fairness expectations to your own Great Expectations suite.

Run:  python examples/gx_suite_example.py

Builds a small pandas frame (a segmentation of 12 customers by sex and age band, plus one noise
row), adds the fairness expectations to a GX suite next to an ordinary GX expectation, validates
the frame in an in-memory context and prints the results. Some expectations pass and some fail
on purpose, so the script exits 1: like a pipeline step, it exits 0 only when the whole suite
passes. (For a GX Checkpoint with actions see gx_checkpoint_example.py.)
"""

# ruff: noqa: T201  (printing is this example's job)

import json
import sys

import pandas as pd

# Import fairaudit.gx.expectations first: it switches GX analytics off (GX_ANALYTICS_ENABLED=False)
# before GX is imported, then registers fairaudit's expectations with GX.
import fairaudit.gx.expectations as fx

# isort: split
import great_expectations as gx


def build_frame() -> pd.DataFrame:
    # segment 0: 3 women, 1 man; segment 1: 3 women, 5 men; one noise row (-1)
    rows = [
        (0, "F", "young"),
        (0, "F", "old"),
        (0, "F", "young"),
        (0, "M", "old"),
        (1, "F", "young"),
        (1, "F", "old"),
        (1, "F", "young"),
        (1, "M", "old"),
        (1, "M", "young"),
        (1, "M", "old"),
        (1, "M", "young"),
        (1, "M", "old"),
        (-1, "M", "young"),
    ]
    return pd.DataFrame(rows, columns=["segment", "sex", "age_band"])


def main() -> int:
    frame = build_frame()

    # An in-memory context: no files, no analytics, no progress bars.
    # (gx.get_context(mode="ephemeral") works too.)
    context = fx.ephemeral_context()
    batch_definition = (
        context.data_sources.add_pandas(name="customers")
        .add_dataframe_asset(name="segments")
        .add_batch_definition_whole_dataframe("all rows")
    )

    suite = context.suites.add(gx.ExpectationSuite(name="segment fairness"))
    suite.add_expectation(gx.expectations.ExpectColumnValuesToNotBeNull(column="sex"))
    suite.add_expectation(fx.ExpectColumnValuesToBeIntegral(column="segment"))
    # balance per segment: min over segments (Chierichetti/Bera) ...
    suite.add_expectation(
        fx.ExpectClusterBalanceToBeAtLeast(
            cluster_column="segment", sensitive_columns="sex", min_value=0.5
        )
    )
    # ... or the mean over segments (FairDen), on the intersection sex x age band
    suite.add_expectation(
        fx.ExpectClusterBalanceToBeAtLeast(
            cluster_column="segment",
            sensitive_columns=["sex", "age_band"],
            min_value=0.6,
            aggregate="mean",
        )
    )
    # capacity fairness (fairness_CCE): is each group spread evenly over the segments?
    suite.add_expectation(
        fx.ExpectClusterCapacityFairnessToBeAtLeast(
            cluster_column="segment", sensitive_columns="sex", min_value=0.5
        )
    )

    validation = context.validation_definitions.add(
        gx.ValidationDefinition(name="fairness check", data=batch_definition, suite=suite)
    )
    result = validation.run(batch_parameters={"dataframe": frame})

    for r in result.results:
        config = r.expectation_config
        observed = r.result.get("observed_value")
        status = "PASS" if r.success else "FAIL"
        print(f"{status}  {config.type}  {json.dumps(dict(config.kwargs))}  observed={observed}")
        details = r.result.get("details") or {}
        for cluster in details.get("per_cluster", []):
            metric = {k: v for k, v in cluster.items() if k in ("balance", "fairness_cce")}
            print(f"        segment {cluster['cluster']}: size={cluster['size']} {metric}")
    print(f"suite success: {result.success}")
    return 0 if result.success else 1


if __name__ == "__main__":
    sys.exit(main())
