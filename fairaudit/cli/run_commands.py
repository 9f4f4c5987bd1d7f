"""``fairaudit audit``, ``run``, ``validate`` and ``demo``: run a chain (from flags, a chain file or
the bundled example) and write its report."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from fairaudit.cli.base import (
    EXIT_OK,
    _common,
    _comparison_summary,
    _default_json,
    _engine_options,
    _handle_errors,
    _host,
    _make_engine,
    _privacy_flags,
    _privacy_options,
    _setup_logging,
    _split,
    log,
    main,
)


@main.command()
@click.argument("data", metavar="DATA")
@click.option("--sensitive", "-s", multiple=True, metavar="A,B",
              help="Sensitive columns (comma-separated or repeated).")
@click.option("--labels", metavar="COL",
              help="Audit the existing clustering in column COL (integer ids, -1 = noise, or "
              "cluster names).")
@click.option("--features", multiple=True, metavar="COLS",
              help="Feature columns for clusterers (default: all others).")
@click.option("--exclude", multiple=True, metavar="COLS", help="Columns to leave out of features.")
@click.option("--chain", "chain_file", type=click.Path(dir_okay=False), metavar="FILE",
              help="Start from this chain TOML; flags override its [data] settings.")
@click.option("--cluster", "clusters", multiple=True, metavar="NAME[:k=v,...]",
              help="Add a clusterer (repeatable), e.g. --cluster kmeans:n_clusters=4.")
@click.option("--k", "k", type=int, help="Number of clusters for clusterers.")
@click.option("--seed", type=int, default=None, help="Seed (default 0).")
@click.option("--sample", type=int, default=None,
              help="Fit clusterers on at most N rows (seeded sample).")
@click.option("--out", "-o", "out", type=click.Path(dir_okay=False), default="fairaudit-report.html",
              show_default=True, help="HTML report path.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False),
              help="JSON path (default: next to --out, .json).")
@click.option("--fail-under", multiple=True, metavar="METRIC[@ci|@lower|@upper]=VALUE",
              help="Fail (exit 1) when METRIC is below VALUE. @ci (the same as @lower) judges "
              "the CI's lower end: fail unless shown to be above, so too little data fails; "
              "@upper its upper end: fail only when shown to be below.")
@click.option("--fail-over", multiple=True, metavar="METRIC[@ci|@upper|@lower]=VALUE",
              help="Fail (exit 1) when METRIC is above VALUE. @ci (the same as @upper) judges "
              "the CI's upper end: fail unless shown to be below; @lower its lower end: fail "
              "only when shown to be above.")
@click.option("--warn-under", multiple=True, metavar="METRIC[@ci|@lower|@upper]=VALUE",
              help="Warn (reported, exit 0) when METRIC is below VALUE (same forms).")
@click.option("--warn-over", multiple=True, metavar="METRIC[@ci|@upper|@lower]=VALUE",
              help="Warn (reported, exit 0) when METRIC is above VALUE (same forms).")
@click.option("--audit", "audits", multiple=True, metavar="NAME[:k=v,...]",
              help="Run this auditor (repeatable) instead of the defaults, e.g. an installed "
              "plugin's; with --chain, added to the chain's.")
@click.option("--skip-audit", "skip_audits", multiple=True, metavar="NAME",
              help="Leave out auditor NAME (repeatable), e.g. --skip-audit proxy (the slow "
              "proxy-feature analysis).")
@click.option("--summary-md", type=click.Path(dir_okay=False), metavar="FILE",
              help="Also write the gate summary as Markdown (e.g. $GITHUB_STEP_SUMMARY).")
@click.option("--timing", is_flag=True, default=None,
              help="Record step timings and the creation time in the JSON (it is then no longer "
              "byte-identical between runs).")
@click.option("--min-cell", type=int, default=None,
              help="Groups with fewer rows are too small to judge: left out of the metrics and "
              "listed as such (>= 1) [default: 10].")
@click.option("--no-suppress", is_flag=True, default=None, hidden=True,
              help="Deprecated, no effect: exact values are the default.")
@click.option("--on-null", type=click.Choice(["exclude", "error"]), default=None,
              help="Rows with a null sensitive value or label [default: exclude].")
@click.option("--on-nonfinite", type=click.Choice(["error", "drop"]), default=None,
              help="Clusterers: rows with NaN/inf feature values are an error or dropped "
              "[default: error]. Without clusterers, feature auditors skip such rows.")
@click.option("--separator", metavar="CHAR", default=None,
              help="CSV field separator [default: ',' (tab for .tsv)].")
@click.option("--null-values", metavar="TEXT,...", default=None,
              help="Cell texts read as missing, added to the defaults (empty, NA, N/A, #N/A, "
              "<NA>, NULL, null, NaN, nan, ?), e.g. '-,unknown'. In Parquet and in-memory "
              "tables they apply to text columns.")
@click.option("--decimal-comma", is_flag=True, default=None,
              help="A CSV's numbers are written with a decimal comma (3,5; with --separator "
              "';').")
@click.option("--default-nulls/--no-default-nulls", default=None,
              help="With --no-default-nulls only empty cells (and --null-values) are missing in "
              "a CSV, e.g. where 'NA' is Namibia [default: on].")
@click.option("--bootstrap", type=int, default=None,
              help="Bootstrap replicates for confidence intervals, 0 = off, at most 10,000 "
              "[default: 200].")
@click.option("--ci-method", type=click.Choice(["calibrated", "conservative"]), default=None,
              help="Intervals of the min/max metrics (balance, fairness_cce, Balance', wd_max, "
              "ed_max): 'calibrated' (bootstrap-calibrated test inversion, close to the "
              "stated level) or 'conservative' (Bonferroni, covers more often) "
              "[default: calibrated].")
@_engine_options
@click.option("--twins/--no-twins", default=None,
              help="Also fit each fair clusterer with fair=false (its twin) and report the price "
              "of fairness [default: on unless --chain is given; then the chain's own setting].")
@click.option("--baseline", type=click.Path(dir_okay=False), default=None, metavar="BASE.json",
              help="Also compare with this earlier audit and gate on it (see `fairaudit compare`).")
@click.option("--tolerance", "tolerances", multiple=True, metavar="METRIC[[ATTR]]=DELTA",
              help="With --baseline: allowed worsening of a headline metric [default: 0].")
@_privacy_options
@_common
@_handle_errors
def audit(data: str, sensitive, labels, features, exclude, chain_file, clusters, k, seed,
          sample, out, json_out, fail_under, fail_over, warn_under, warn_over, audits,
          skip_audits, summary_md, timing, min_cell, no_suppress, on_null, on_nonfinite,
          separator, decimal_comma, null_values, default_nulls, bootstrap, ci_method, engine_name,
          scheduler,
          workers, twins, baseline, tolerances, quiet, debug, disabled, publish, epsilon, privacy_budget, ledger,
          privacy_source, dp_categories, dp_clusters, dp_fitted, dp_domain, delta, new_ledger,
          allow_large_epsilon) -> int:
    """Audit DATA (Parquet file, directory or glob of Parquet files, or CSV)."""
    from fairaudit.core.build import chain_from_flags
    from fairaudit.core.chain import load_chain, parse_threshold_flag
    from fairaudit.core.params import check, check_all
    from fairaudit.core.spec import SUPPRESS_DEPRECATED
    from fairaudit.errors import ConfigError

    _setup_logging(debug, quiet)
    # every option checked in one place (fairaudit.core.params) before any work
    opts = check_all({"k": k, "seed": seed, "sample": sample, "min_cell": min_cell,
                      "bootstrap": bootstrap, "separator": separator, "workers": workers,
                      "null_values": null_values},
                     "cli")
    k, seed, sample, min_cell, bootstrap = (opts[n] for n in ("k", "seed", "sample", "min_cell",
                                                                "bootstrap"))
    host = _host(disabled)
    thresholds = [parse_threshold_flag(t, "min", "--fail-under") for t in fail_under]
    thresholds += [parse_threshold_flag(t, "max", "--fail-over") for t in fail_over]
    thresholds += [parse_threshold_flag(t, "min", "--warn-under", "warning") for t in warn_under]
    thresholds += [parse_threshold_flag(t, "max", "--warn-over", "warning") for t in warn_over]
    if no_suppress:
        log.warning(SUPPRESS_DEPRECATED.format(name="--no-suppress"))
    base = load_chain(chain_file) if chain_file else None
    sens = _split(sensitive)
    # --exclude '' names the unnamed column (a CSV's empty header, e.g. a pandas index)
    excluded = tuple(c for v in exclude for c in check("exclude", v, "cli"))
    if not sens and (base is None or not base.data.sensitive):
        raise ConfigError("--sensitive: give at least one sensitive column, e.g. --sensitive sex")
    spec = chain_from_flags(
        host.registry, sensitive=sens, labels=labels, features=_split(features) or None,
        exclude=excluded, clusters=clusters, k=k, seed=seed, sample=sample,
        thresholds=thresholds, min_cell=min_cell, on_null=on_null,
        on_nonfinite=on_nonfinite, bootstrap=bootstrap, ci_method=ci_method, audits=audits,
        skip_audits=_split(skip_audits), timing=timing, base=base, twins=twins,
        privacy=_privacy_flags(publish, epsilon, privacy_budget, ledger, privacy_source,
                               dp_categories, dp_clusters, dp_fitted, dp_domain, delta,
                               new_ledger, allow_large_epsilon),
        reader_options={"separator": opts["separator"], "null_values": opts["null_values"],
                        "default_nulls": default_nulls,
                        "decimal_comma": decimal_comma or None},
    )
    engine = _make_engine(spec, engine_name, scheduler, workers)
    try:
        return _run_and_write(spec, host, data, Path(out),
                              Path(json_out) if json_out else None, quiet,
                              Path(summary_md) if summary_md else None, engine=engine,
                              chain_file=chain_file,
                              baseline=_baseline_options(baseline, tolerances, chain_file))
    finally:
        engine.close()


@main.command()
@click.argument("chain_file", metavar="CHAIN.toml", type=click.Path(dir_okay=False))
@click.argument("data", required=False)
@click.option("--out", "-o", "out", type=click.Path(dir_okay=False),
              default="fairaudit-report.html", show_default=True, help="HTML report path.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False),
              help="JSON path (default: next to --out, .json).")
@click.option("--summary-md", type=click.Path(dir_okay=False), metavar="FILE",
              help="Also write the gate summary as Markdown (e.g. $GITHUB_STEP_SUMMARY).")
@click.option("--timing", is_flag=True, default=None,
              help="Record step timings in the JSON (overrides options.timing).")
@_engine_options
@_common
@_handle_errors
def run(chain_file: str, data: str | None, out: str, json_out: str | None,
        summary_md: str | None, timing: bool | None, engine_name: str | None,
        scheduler: str | None, workers: int | None, quiet: bool, debug: bool,
        disabled: Sequence[str]) -> int:
    """Run the chain in CHAIN.toml on DATA (or on its data.path)."""
    import dataclasses

    from fairaudit.core.chain import load_chain

    _setup_logging(debug, quiet)
    host = _host(disabled)
    spec = load_chain(chain_file)
    if timing:
        spec = dataclasses.replace(spec, options=dataclasses.replace(spec.options, timing=True))
    engine = _make_engine(spec, engine_name, scheduler, workers)
    try:
        return _run_and_write(spec, host, data, Path(out), Path(json_out) if json_out else None,
                              quiet, Path(summary_md) if summary_md else None,
                              chain_file=chain_file, engine=engine,
                              baseline=_baseline_options(None, (), chain_file))
    finally:
        engine.close()


def _baseline_options(baseline: str | None, tolerances: Sequence[str], chain_file: str | None):
    from fairaudit.ops.baseline import resolve

    return resolve(baseline, tolerances, chain_file)


def _run_and_write(spec, host, data, out: Path, json_out: Path | None, quiet: bool,
                   summary_md: Path | None = None, engine: Any = None,
                   chain_file: str | None = None, baseline: Any = None) -> int:
    from fairaudit.core.io import atomic_write_text
    from fairaudit.core.plugins import blaming_plugins
    from fairaudit.core.progress import show_progress, step
    from fairaudit.core.runner import run_chain
    from fairaudit.report.outputs import check_outputs, input_refs, write_outputs
    from fairaudit.report.render import render_html

    json_path = json_out or _default_json(out)
    inputs = input_refs(data if data is not None else spec.data.path, "DATA")
    inputs += input_refs(chain_file, "chain")
    outputs = {"--out": out, "--json": json_path}
    if summary_md is not None:
        _check_summary_path(summary_md, data if data is not None else spec.data.path,
                            out, json_path)
        outputs["--summary-md"] = summary_md
    # before any computation: never overwrite the input, --out != --json, folders writable
    check_outputs(outputs, inputs)
    if baseline is not None:
        from fairaudit.ops.baseline import guard_paths
        from fairaudit.ops.compare import load_audit

        guard_paths(baseline, (out, json_path))
        load_audit(baseline.baseline, what="baseline")  # a bad baseline fails before the run
    # progress on stderr (bars on a terminal, periodic lines otherwise), never in the outputs
    with show_progress(enabled=not quiet):
        run_obj = run_chain(spec, host, data_path=data, engine=engine)
        if baseline is not None:
            from fairaudit.ops.baseline import attach_comparison

            run_obj = attach_comparison(run_obj, baseline)
        with step("render report"), blaming_plugins(host):  # a plugin's report section
            html = render_html(run_obj, host)  # render fully before writing anything
    write_outputs([(json_path, json.dumps(run_obj.to_json(), indent=2, ensure_ascii=False)),
                   (out, html)])
    if summary_md is not None:
        from fairaudit.report.summary import markdown

        atomic_write_text(summary_md, markdown(run_obj.doc, str(out), str(json_path)))
    if not quiet:
        _summary(run_obj, out, json_path)
        if "comparison" in run_obj.doc:
            _comparison_summary(run_obj.doc["comparison"])
    return run_obj.exit_code


def _check_summary_path(summary: Path, data: Any, out: Path, json_path: Path) -> None:
    """--summary-md must not replace the input or another output."""
    import fnmatch

    from fairaudit.core.io import resolve_input
    from fairaudit.errors import ConfigError

    target = summary.resolve()
    for other, flag in ((out, "--out"), (json_path, "--json")):
        if target == other.resolve():
            raise ConfigError(f"--summary-md {summary}: the same file as {flag} {other}")
    if isinstance(data, str):
        try:
            files = resolve_input(data).files
        except Exception:  # the run reports a bad input itself
            files = ()
        for f in files:
            if target == f.resolve():
                raise ConfigError(f"--summary-md {summary}: this is the input file {f}; "
                                  "the input is only ever read")
        root = Path(data)
        if root.is_dir() and target.is_relative_to(root.resolve()):
            raise ConfigError(f"--summary-md {summary}: inside the input folder {data}")
        if any(ch in data for ch in "*?[") and fnmatch.fnmatch(str(target),
                                                              str(Path(data).absolute())):
            raise ConfigError(f"--summary-md {summary}: matches the input pattern {data}")


def _summary(run_obj: Any, out: Path, json_path: Path) -> None:
    from fairaudit.report.summary import console_lines

    for line in console_lines(run_obj.doc, getattr(run_obj, "ledger_now", None)):
        click.echo(line)
    click.echo(f"report: {out.resolve()}")
    click.echo(f"json:   {json_path.resolve()}")


@main.command()
@click.argument("chain_file", metavar="CHAIN.toml", type=click.Path(dir_okay=False))
@_common
@_handle_errors
def validate(chain_file: str, quiet: bool, debug: bool, disabled: Sequence[str]) -> int:
    """Check CHAIN.toml against the installed components (every problem at once)."""
    from fairaudit.core.chain import load_chain
    from fairaudit.core.validate import validate_chain

    _setup_logging(debug, quiet)
    host = _host(disabled)
    spec = load_chain(chain_file)
    validate_chain(spec, host.registry)
    if not quiet:
        click.echo(f"{chain_file}: OK ({len(spec.preprocess)} preprocess, {len(spec.cluster)} "
                   f"cluster, {len(spec.audit)} audit step(s))")
    return EXIT_OK


def demo_data_path() -> Path:
    """The bundled example dataset (a 4,000-row sample of UCI Adult)."""
    import fairaudit

    here = Path(fairaudit.__file__).parent
    for candidate in (here / "demo_data" / "adult_sample.parquet",
                      here.parent / "examples" / "data" / "adult_sample.parquet"):
        if candidate.exists():
            return candidate
    from fairaudit.errors import InputError

    raise InputError("the bundled example data is missing from this installation")


@main.command()
@click.option("--out", "-o", "out", type=click.Path(dir_okay=False), default="fairaudit-report.html",
              show_default=True, help="HTML report path.")
@_common
@_handle_errors
def demo(out: str, quiet: bool, debug: bool, disabled: Sequence[str]) -> int:
    """Audit the bundled example (UCI Adult sample, sensitive sex and race)."""
    from fairaudit.core.build import chain_from_flags

    _setup_logging(debug, quiet)
    host = _host(disabled)
    spec = chain_from_flags(host.registry, sensitive=("sex", "race"), seed=0)
    data = str(demo_data_path())
    if not quiet:
        click.echo(f"auditing the example data {data} (sensitive: sex, race)")
    _run_and_write(spec, host, data, Path(out), None, quiet)
    return EXIT_OK

