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
    say,
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
@click.option("--max-drop", type=float, default=None, metavar="SHARE",
              help="With --on-nonfinite drop: the largest share of the rows that may be "
              "dropped; more is an error naming the columns [default: 0.5].")
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
@click.option("--table", metavar="NAME", default=None,
              help="DATA is a database URL: audit this table (NAME or SCHEMA.NAME); counted "
              "in the database (docs/sources.md).")
@click.option("--query", metavar="SQL", default=None,
              help="DATA is a database URL: audit the rows of this SELECT (instead of --table).")
@click.option("--key", metavar="COL", default=None,
              help="Database source: a column that identifies rows; it orders the rows read "
              "and seeds the sample [default: the row's values].")
@click.option("--format", "data_format", type=click.Choice(["parquet", "csv", "delta"]),
              default=None,
              help="The input's format where its name does not say it: an object-store prefix, "
              "or a Delta table (a folder with _delta_log/ is read as Delta anyway).")
@click.option("--version", "table_version", type=int, default=None, metavar="N",
              help="Delta table: audit version N [default: the latest].")
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
@click.option("--baseline-missing", type=click.Choice(["error", "skip"]), default=None,
              help="When the --baseline file does not exist (yet): exit 2, or audit without "
              "comparing, with a note (the first night of a schedule) [default: error].")
@_privacy_options
@_common
@_handle_errors
def audit(data: str, sensitive, labels, features, exclude, chain_file, clusters, k, seed,
          sample, out, json_out, fail_under, fail_over, warn_under, warn_over, audits,
          skip_audits, summary_md, timing, min_cell, no_suppress, on_null, on_nonfinite, max_drop,
          separator, decimal_comma, null_values, default_nulls, table, query, key, data_format,
          table_version, bootstrap, ci_method, engine_name, scheduler, max_memory,
          workers, twins, baseline, tolerances, baseline_missing, quiet, debug, disabled, publish, epsilon, privacy_budget, ledger,
          privacy_source, dp_categories, dp_clusters, dp_fitted, dp_domain, delta, new_ledger,
          allow_large_epsilon) -> int:
    """Audit DATA: a Parquet file, directory or glob, a CSV file, an object-store path
    (s3://bucket/prefix/*.parquet), a Delta table, or a database URL with --table or --query
    (postgresql://user@host/db, duckdb:///file.duckdb, sqlite:///file.db; docs/sources.md)."""
    from fairaudit.core.build import chain_from_flags
    from fairaudit.core.chain import load_chain, parse_threshold_flag
    from fairaudit.core.params import check, check_all
    from fairaudit.core.spec import SUPPRESS_DEPRECATED
    from fairaudit.errors import ConfigError

    _setup_logging(debug, quiet)
    # every option checked in one place (fairaudit.core.params) before any work
    opts = check_all({"k": k, "seed": seed, "sample": sample, "min_cell": min_cell,
                      "bootstrap": bootstrap, "separator": separator, "workers": workers,
                      "null_values": null_values, "table": table, "query": query, "key": key,
                      "version": table_version, "max_drop": max_drop,
                      "max_memory": max_memory},
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
        on_nonfinite=on_nonfinite, max_drop=opts["max_drop"], max_memory=opts["max_memory"],
        bootstrap=bootstrap, ci_method=ci_method, audits=audits,
        skip_audits=_split(skip_audits), timing=timing, base=base, twins=twins,
        privacy=_privacy_flags(publish, epsilon, privacy_budget, ledger, privacy_source,
                               dp_categories, dp_clusters, dp_fitted, dp_domain, delta,
                               new_ledger, allow_large_epsilon),
        reader_options={"separator": opts["separator"], "null_values": opts["null_values"],
                        "default_nulls": default_nulls,
                        "decimal_comma": decimal_comma or None, "table": opts["table"],
                        "query": opts["query"], "key": opts["key"], "format": data_format,
                        "version": opts["version"]},
    )
    engine, base_opts = preflight(spec, host, engine_name, scheduler, workers,
                                  baseline=baseline, tolerances=tolerances,
                                  missing=baseline_missing)
    try:
        return _run_and_write(spec, host, data, out, json_out, quiet, summary_md, engine=engine,
                              chain_file=chain_file, baseline=base_opts)
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
        scheduler: str | None, workers: int | None, max_memory: str | None, quiet: bool,
        debug: bool, disabled: Sequence[str]) -> int:
    """Run the chain in CHAIN.toml on DATA (or on its data.path). A chain with a [repair]
    table repairs data.labels (see `fairaudit repair`); --out is then its HTML report."""
    import dataclasses

    from fairaudit.core.chain import parse_chain, read_chain_document
    from fairaudit.repair.spec import load_repair_table

    _setup_logging(debug, quiet)
    host = _host(disabled)
    from fairaudit.core.params import check

    max_memory = check("max_memory", max_memory, "cli")
    doc = read_chain_document(chain_file)  # once: a chain from a pipe can be read only once
    if load_repair_table(chain_file, doc=doc) is not None:
        from fairaudit.cli.repair_commands import run_chain_repair

        given = click.get_current_context().get_parameter_source("out")
        return run_chain_repair(chain_file, data,
                                out if given == click.core.ParameterSource.COMMANDLINE else None,
                                json_out, host, quiet)
    spec = parse_chain(doc, source=str(chain_file))
    if timing:
        spec = dataclasses.replace(spec, options=dataclasses.replace(spec.options, timing=True))
    if max_memory is not None:
        spec = dataclasses.replace(spec, options=dataclasses.replace(spec.options,
                                                                     max_memory=max_memory))
    engine, base_opts = preflight(spec, host, engine_name, scheduler, workers)
    try:
        return _run_and_write(spec, host, data, out, json_out, quiet, summary_md,
                              chain_file=chain_file, engine=engine, baseline=base_opts)
    finally:
        engine.close()


def preflight(spec: Any, host: Any, engine_name: str | None = None,
              scheduler: str | None = None, workers: int | None = None, *,
              baseline: str | None = None, tolerances: Sequence[str] = (),
              missing: str | None = None) -> tuple[Any, Any]:
    """Every check of ``audit`` and ``run`` before they read data, and all that ``validate``
    does: the engine's options (no connection is made), the baseline and ``[compare]`` table
    (the baseline read and checked), and the chain against the installed components
    (:func:`fairaudit.core.runner.check_chain`: parameters, data flow, thresholds against each
    metric's range, the ``fair = false`` twins, a ``--publish`` release's rules). Returns the
    engine (the caller closes it) and the baseline options."""
    from fairaudit.core.runner import check_chain
    from fairaudit.ops.baseline import check_baseline, resolve

    engine = _make_engine(spec, engine_name, scheduler, workers)
    try:
        options = resolve(baseline, tolerances, spec, missing=missing)
        check_baseline(options)
        check_chain(spec, host.registry)
    except BaseException:
        engine.close()
        raise
    return engine, options


def _run_and_write(spec, host, data, out: str | Path, json_out: str | Path | None, quiet: bool,
                   summary_md: str | Path | None = None, engine: Any = None,
                   chain_file: str | None = None, baseline: Any = None) -> int:
    from fairaudit.core.plugins import blaming_plugins
    from fairaudit.core.progress import show_progress, step
    from fairaudit.core.runner import run_chain
    from fairaudit.report.outputs import check_outputs, input_refs, output_path, write_outputs
    from fairaudit.report.render import render_html

    out = output_path("--out", out)
    json_path = output_path("--json", json_out) or _default_json(out)
    summary_md = output_path("--summary-md", summary_md)
    inputs = input_refs(data if data is not None else spec.data.path, "DATA")
    inputs += input_refs(chain_file, "chain")
    outputs = {"--out": out, "--json": json_path, "--summary-md": summary_md}
    # before any computation: never overwrite the input, --out != --json, only regular files,
    # folders writable
    check_outputs(outputs, inputs)
    if baseline is not None:
        from fairaudit.ops.baseline import guard_paths

        guard_paths(baseline, (out, json_path, summary_md))
    # progress on stderr (bars on a terminal, periodic lines otherwise), never in the outputs
    with show_progress(enabled=not quiet):
        run_obj = run_chain(spec, host, data_path=data, engine=engine)
        if baseline is not None:
            from fairaudit.ops.baseline import attach_comparison

            run_obj = attach_comparison(run_obj, baseline)
        with step("render report"), blaming_plugins(host):  # a plugin's report section
            html = render_html(run_obj, host)  # render fully before writing anything
    files: list[tuple[Path, str]] = [
        (json_path, json.dumps(run_obj.to_json(), indent=2, ensure_ascii=False)), (out, html)]
    if summary_md is not None:
        from fairaudit.report.summary import markdown

        files.append((summary_md, markdown(run_obj.doc, str(out), str(json_path))))
    write_outputs(files)  # every output of the run, or none
    if not quiet:
        _summary(run_obj, out, json_path)
        if "comparison" in run_obj.doc:
            _comparison_summary(run_obj.doc["comparison"])
    return run_obj.exit_code


def _summary(run_obj: Any, out: Path, json_path: Path) -> None:
    from fairaudit.report.summary import console_lines

    for line in console_lines(run_obj.doc, getattr(run_obj, "ledger_now", None)):
        say(line)
    say(f"report: {out.resolve()}")
    say(f"json:   {json_path.resolve()}")


@main.command()
@click.argument("chain_file", metavar="CHAIN.toml", type=click.Path(dir_okay=False))
@_common
@_handle_errors
def validate(chain_file: str, quiet: bool, debug: bool, disabled: Sequence[str]) -> int:
    """Check CHAIN.toml against the installed components (every problem at once)."""
    from fairaudit.core.chain import parse_chain, read_chain_document

    _setup_logging(debug, quiet)
    host = _host(disabled)
    from fairaudit.repair.spec import load_repair_table

    doc = read_chain_document(chain_file)  # once: a chain from a pipe can be read only once
    spec = parse_chain(doc, source=str(chain_file))
    if load_repair_table(chain_file, doc=doc) is not None:  # every [repair] key and target checked
        from fairaudit.repair.chain import check_chain_repair, with_default_audits

        check_chain_repair(chain_file)
        spec = with_default_audits(spec)
    engine, _ = preflight(spec, host)  # the checks `run` makes before it reads data
    engine.close()
    if not quiet:
        say(f"{chain_file}: OK ({len(spec.preprocess)} preprocess, {len(spec.cluster)} "
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
        say(f"auditing the example data {data} (sensitive: sex, race)")
    _run_and_write(spec, host, data, out, None, quiet)
    return EXIT_OK

