"""A Great Expectations Checkpoint with fairaudit's fairness expectations, as a pipeline step.

Run:  python examples/gx_checkpoint_example.py                      # the bundled Adult sample
      python examples/gx_checkpoint_example.py --data t.parquet --labels segment --sensitive sex
      python examples/gx_checkpoint_example.py --min-balance 0.95    # make it fail

Exit code: 0 when every expectation passed, 1 when the checkpoint failed (so an orchestrator
or CI job stops), 2 on bad arguments. Without ``--data`` it audits the bundled 4,000-row UCI
Adult sample segmented by age band (under 30 / 30-49 / 50 and over) — an existing segmentation,
the kind a marketing team would use. Polars reads the file; fairaudit.gx.expectations.pandas_frame
converts it for GX (GX 1.x has no polars engine).
"""

# ruff: noqa: T201  (printing is this example's job)

import argparse
import sys
from pathlib import Path

import polars as pl

# Import fairaudit.gx.expectations first: it switches GX analytics off before GX is imported.
import fairaudit.gx.expectations as fx

# isort: split
import great_expectations as gx

HERE = Path(__file__).resolve().parent


def load(args: argparse.Namespace) -> tuple[pl.DataFrame, str, list[str]]:
    if args.data:
        path = Path(args.data)
        frame = pl.read_csv(path) if path.suffix == ".csv" else pl.read_parquet(path)
        return frame, args.labels, [s for s in args.sensitive.split(",") if s]
    frame = pl.read_parquet(HERE / "data" / "adult_sample.parquet")
    age = pl.col("age")
    frame = frame.with_columns(
        pl.when(age < 30).then(0).when(age < 50).then(1).otherwise(2).alias("age_band")
    )
    return frame, "age_band", ["sex"]


def build_suite(labels: str, sensitive: list[str], args: argparse.Namespace) -> gx.ExpectationSuite:
    suite = gx.ExpectationSuite(name="segment fairness")
    suite.add_expectation(gx.expectations.ExpectColumnValuesToNotBeNull(column=labels))
    common = {"cluster_column": labels, "sensitive_columns": sensitive}
    suite.add_expectation(fx.ExpectClusterBalanceToBeAtLeast(**common, min_value=args.min_balance))
    suite.add_expectation(fx.ExpectClusterWdToBeAtMost(**common, max_value=args.max_wd))
    suite.add_expectation(fx.ExpectClusterEdToBeAtMost(**common, max_value=args.max_ed))
    # judge the conservative end of the 95 % interval, not the point value
    suite.add_expectation(fx.ExpectClusterMetricLowerBoundToBeAtLeast(
        **common, metric="balance", min_value=args.min_balance_ci))
    suite.add_expectation(fx.ExpectClusterMetricUpperBoundToBeAtMost(
        **common, metric="wd", max_value=args.max_wd_ci))
    return suite


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="fairness checkpoint")
    ap.add_argument("--data")
    ap.add_argument("--labels", default="segment")
    ap.add_argument("--sensitive", default="sex")
    ap.add_argument("--min-balance", type=float, default=0.5)
    ap.add_argument("--max-wd", type=float, default=0.2)
    ap.add_argument("--max-ed", type=float, default=0.3)
    ap.add_argument("--min-balance-ci", type=float, default=0.4)
    ap.add_argument("--max-wd-ci", type=float, default=0.25)
    args = ap.parse_args(argv)
    frame, labels, sensitive = load(args)

    context = fx.ephemeral_context()
    batch_definition = (
        context.data_sources.add_pandas(name="segments")
        .add_dataframe_asset(name="table")
        .add_batch_definition_whole_dataframe("all rows")
    )
    suite = context.suites.add(build_suite(labels, sensitive, args))
    validation = context.validation_definitions.add(
        gx.ValidationDefinition(name="fairness", data=batch_definition, suite=suite)
    )
    # A Checkpoint runs validations and then its actions (e.g. UpdateDataDocsAction or a Slack
    # notification); none here, so nothing is written anywhere.
    checkpoint = context.checkpoints.add(
        gx.Checkpoint(name="nightly fairness", validation_definitions=[validation], actions=[])
    )
    result = checkpoint.run(
        batch_parameters={"dataframe": fx.pandas_frame(frame, [labels, *sensitive])}
    )
    for run in result.run_results.values():
        for r in run.results:
            status = "PASS" if r.success else "FAIL"
            kwargs = {k: v for k, v in r.expectation_config.kwargs.items()
                      if k not in ("cluster_column", "sensitive_columns", "batch_id")}
            print(f"{status}  {r.expectation_config.type}  {kwargs}  "
                  f"observed={r.result.get('observed_value')}")
    print(f"checkpoint success: {result.success}")
    return 0 if result.success else 1


if __name__ == "__main__":
    sys.exit(main())
