"""The ``fairaudit`` command line. The only module that prints or exits.

Exit codes: 0 ran and every error-severity threshold passed; 1 ran and a threshold failed;
2 usage, configuration or input error; 3 internal error; 130 interrupted (Ctrl-C); 143
terminated (SIGTERM). ``--debug`` adds a traceback and fairaudit's debug log, never another code;
``--verbose`` (``-v``) fairaudit's info log (what each step did), on stderr.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from fairaudit import __distribution__

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143
log = logging.getLogger("fairaudit")
_OWN_LOGGERS = ("fairaudit", "fairaudit_builtins")


class _Terminated(BaseException):
    """Raised in the main thread when the process receives SIGTERM (like KeyboardInterrupt, so
    every ``finally`` and atomic write cleans up on the way out)."""


def _set_verbose(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """``--verbose`` on the group or on a command: remembered for :func:`_setup_logging`."""
    if value:
        ctx.find_root().meta["fairaudit.verbose"] = True


def _verbose_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--verbose", "-v", is_flag=True, expose_value=False,
                        callback=_set_verbose,
                        help="fairaudit's info log on stderr: what each step did.")(fn)


def _setup_logging(debug: bool, quiet: bool) -> None:
    """Warnings (errors with --quiet) from everyone; with --verbose, fairaudit's own info log;
    with --debug, its debug log — never third-party debug logs (Great Expectations alone writes
    thousands of lines)."""
    ctx = click.get_current_context(silent=True)
    verbose = bool(ctx and ctx.find_root().meta.get("fairaudit.verbose"))
    level = logging.ERROR if quiet else logging.WARNING
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", force=True)
    own_level = logging.DEBUG if debug else logging.INFO if verbose else logging.NOTSET
    for own in _OWN_LOGGERS:
        logging.getLogger(own).setLevel(own_level)
    for noisy in ("great_expectations", "numba", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.ERROR)


def _handle_errors(fn: Callable[..., int | None]) -> Callable[..., None]:
    """Map exceptions to exit codes; a traceback only with --debug."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        from fairaudit.errors import FairauditError

        debug = bool(kwargs.get("debug"))
        previous = _on_sigterm()
        try:
            code = fn(*args, **kwargs)
        except FairauditError as exc:
            _traceback(debug)
            click.echo(f"error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except click.exceptions.Exit:
            raise
        except click.ClickException:
            raise
        except KeyboardInterrupt:
            _traceback(debug)
            click.echo("interrupted (Ctrl-C)", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except _Terminated:
            _traceback(debug)
            click.echo("terminated (SIGTERM)", err=True)
            sys.exit(EXIT_TERMINATED)
        except Exception as exc:  # an internal error: say so, briefly
            _traceback(debug)
            click.echo(
                f"internal error: {type(exc).__name__}: {exc}\n"
                + ("" if debug else "run again with --debug for the traceback, and ")
                + "please report it",
                err=True,
            )
            sys.exit(EXIT_INTERNAL)
        finally:
            _restore_sigterm(previous)
        sys.exit(code or EXIT_OK)

    return wrapper


def _traceback(debug: bool) -> None:
    if debug:
        import traceback

        click.echo(traceback.format_exc().rstrip(), err=True)


def _on_sigterm() -> Any:
    """Turn SIGTERM into :class:`_Terminated` in the main thread; returns the old handler."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None

    def _raise(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends at once
        raise _Terminated()

    try:
        return signal.signal(signal.SIGTERM, _raise)
    except (ValueError, OSError):  # pragma: no cover - not the main interpreter
        return None


def _restore_sigterm(previous: Any) -> None:
    import signal

    if previous is not None:
        signal.signal(signal.SIGTERM, previous)


def _common(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = _verbose_option(fn)
    fn = click.option("--debug", is_flag=True,
                      help="fairaudit's debug log and tracebacks (the exit code is unchanged).")(fn)
    fn = click.option("--quiet", "-q", is_flag=True, help="No progress or summary output (errors only).")(fn)
    fn = click.option(
        "--disable-plugin",
        "disabled",
        multiple=True,
        metavar="NAME",
        help="Do not load plugin NAME (repeatable). Also: FAIRAUDIT_DISABLE_PLUGINS=a,b.",
    )(fn)
    return fn


def _engine_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--engine / --scheduler / --workers: they override the chain's [engine] table."""
    fn = click.option("--workers", type=int, default=None,
                      help="Count and assign on a local Dask cluster of N worker processes.")(fn)
    fn = click.option("--scheduler", metavar="ADDRESS", default=None,
                      help="Count and assign every row on a Dask cluster (tcp://host:8786; "
                      "default: env DASK_SCHEDULER_ADDRESS). Needs pip install "
                      "'fairaudit[dask]'.")(fn)
    fn = click.option("--engine", "engine_name", type=click.Choice(["local", "dask"]),
                      default=None,
                      help="Where the passes over every row run; overrides the chain's "
                      "[engine] (local also ignores DASK_SCHEDULER_ADDRESS) [default: local].")(fn)
    return fn


def _make_engine(spec: Any, engine_name: str | None, scheduler: str | None,
                 workers: int | None) -> Any:
    from fairaudit.core.engines import engine_for
    from fairaudit.core.params import check

    workers = check("workers", workers, "cli")
    return engine_for(spec.engine, name=engine_name, scheduler=scheduler, workers=workers)


def _privacy_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--publish and its parameters (docs/privacy.md); they override the chain's [privacy]."""
    opts = [
        click.option("--publish", is_flag=True, default=None,
                     help="Make a differentially private release (shareable) instead of the "
                     "analyst's exact report; see docs/privacy.md."),
        click.option("--epsilon", type=float, default=None, metavar="EPS",
                     help="Privacy loss of this release (pure epsilon-DP) [default: 1.0]."),
        click.option("--privacy-budget", type=float, default=None, metavar="EPS",
                     help="Total epsilon the ledger allows for this data source; a release "
                     "that would pass it exits 2."),
        click.option("--ledger", type=click.Path(dir_okay=False), default=None, metavar="PATH",
                     help="Privacy ledger [default: $XDG_STATE_HOME/fairaudit/ledger.json]."),
        click.option("--privacy-source", default=None, metavar="NAME",
                     help="Name of the data source in the ledger [default: the input's path]."),
        click.option("--dp-categories", multiple=True, metavar="ATTR=G1,G2",
                     help="Declare the public groups of a sensitive attribute (repeatable); "
                     "undeclared attributes use the groups observed, assumed public."),
        click.option("--dp-clusters", default=None, metavar="C1,C2",
                     help="Declare the public cluster names of the labels column."),
        click.option("--dp-fitted", type=click.Choice(["refuse", "conditional"]), default=None,
                     help="Publish clusterings fitted on these rows, with a guarantee "
                     "conditional on the clustering [default: refuse]."),
        click.option("--dp-domain", type=click.Choice(["public", "private"]), default=None,
                     help="public: declared or observed groups, every cell noised (pure DP); "
                     "private: cells chosen privately by a threshold ((epsilon, delta)-DP) "
                     "[default: public]."),
        click.option("--delta", type=float, default=None, metavar="DELTA",
                     help="delta of --dp-domain private [default: 1e-7]."),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def _privacy_flags(publish, epsilon, budget, ledger, source, categories, clusters, fitted,
                   domain, delta) -> dict[str, Any]:
    from fairaudit.errors import ConfigError

    cats: dict[str, tuple[str, ...]] | None = None
    if categories:
        cats = {}
        for text in categories:
            attr, sep, groups = text.partition("=")
            if not sep or not attr.strip():
                raise ConfigError(f"--dp-categories: expected ATTR=G1,G2,...; got {text!r}")
            cats[attr.strip()] = _split([groups])
    return {"publish": publish, "epsilon": epsilon, "budget": budget, "ledger": ledger,
            "source": source, "categories": cats,
            "clusters": None if clusters is None else _split([clusters]), "fitted": fitted,
            "domain": domain, "delta": delta}


def _host(disabled: Sequence[str]) -> Any:
    from fairaudit.core.plugins import Host

    return Host.create(blocked=disabled)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name=__distribution__, prog_name="fairaudit")
@_verbose_option
def main() -> None:
    """Audit the fairness of clusterings and segmentations of people.

    \b
    Quick start:
      fairaudit audit data.parquet --sensitive gender,race
      fairaudit audit data.parquet --sensitive sex --labels segment --fail-under balance=0.8
      fairaudit run chain.toml data.parquet
    Exit codes: 0 passed, 1 a threshold failed, 2 usage/config/input error, 3 internal error.
    """


def _split(values: Sequence[str]) -> tuple[str, ...]:
    out: list[str] = []
    for v in values:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return tuple(out)


def _default_json(out: Path) -> Path:
    return out.with_suffix(".json")


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
@click.option("--fail-under", multiple=True, metavar="METRIC[@ci|@upper]=VALUE",
              help="Fail (exit 1) when METRIC is below VALUE. @ci judges the CI's lower end "
              "(fail unless shown to be above), @upper its upper end (fail only when shown to "
              "be below).")
@click.option("--fail-over", multiple=True, metavar="METRIC[@ci|@lower]=VALUE",
              help="Fail (exit 1) when METRIC is above VALUE. @ci judges the CI's upper end, "
              "@lower its lower end (fail only when shown to be above).")
@click.option("--warn-under", multiple=True, metavar="METRIC[@ci|@upper]=VALUE",
              help="Warn (reported, exit 0) when METRIC is below VALUE (same forms).")
@click.option("--warn-over", multiple=True, metavar="METRIC[@ci|@lower]=VALUE",
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
@click.option("--bootstrap", type=int, default=None,
              help="Bootstrap replicates for confidence intervals, 0 = off, at most 10,000 "
              "[default: 200].")
@click.option("--ci-method", type=click.Choice(["calibrated", "conservative"]), default=None,
              help="Intervals of the min-of-ratios metrics (balance, fairness_cce, ...): "
              "'calibrated' (bootstrap of the maximum standardised deviation, close to the "
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
          separator, bootstrap, ci_method, engine_name, scheduler, workers, twins, baseline,
          tolerances, quiet, debug, disabled, publish, epsilon, privacy_budget, ledger,
          privacy_source, dp_categories, dp_clusters, dp_fitted, dp_domain, delta) -> int:
    """Audit DATA (Parquet file, directory or glob of Parquet files, or CSV)."""
    from fairaudit.core.chain import (
        SUPPRESS_DEPRECATED,
        chain_from_flags,
        load_chain,
        parse_threshold_flag,
    )
    from fairaudit.core.params import check, check_all
    from fairaudit.errors import ConfigError

    _setup_logging(debug, quiet)
    # every option checked in one place (fairaudit.core.params) before any work
    opts = check_all({"k": k, "seed": seed, "sample": sample, "min_cell": min_cell,
                      "bootstrap": bootstrap, "separator": separator, "workers": workers},
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
                               dp_categories, dp_clusters, dp_fitted, dp_domain, delta),
    )
    if separator is not None:
        import dataclasses

        spec = dataclasses.replace(
            spec, data=dataclasses.replace(spec.data, reader_options={"separator": separator})
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
        with step("render report"):
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
    from fairaudit.core.chain import load_chain, validate_chain

    _setup_logging(debug, quiet)
    host = _host(disabled)
    spec = load_chain(chain_file)
    validate_chain(spec, host.registry)
    if not quiet:
        click.echo(f"{chain_file}: OK ({len(spec.preprocess)} preprocess, {len(spec.cluster)} "
                   f"cluster, {len(spec.audit)} audit step(s))")
    return EXIT_OK


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@_common
@_handle_errors
def plugins(as_json: bool, quiet: bool, debug: bool, disabled: Sequence[str]) -> int:
    """List installed components: name, kind, plugin, package and version."""
    _setup_logging(debug, quiet)
    host = _host(disabled)
    rows = [
        {"name": i.name, "kind": i.kind, "plugin": i.plugin, "package": i.package,
         "version": i.version}
        for i in host.registry.all()
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return EXIT_OK
    w = max(len(r["name"]) for r in rows) if rows else 4
    click.echo(f"{'NAME':<{w}}  {'KIND':<12}  {'PLUGIN':<24}  PACKAGE")
    for r in rows:
        click.echo(f"{r['name']:<{w}}  {r['kind']:<12}  {r['plugin']:<24}  "
                   f"{r['package']} {r['version']}")
    return EXIT_OK


@main.command()
@click.argument("name")
@_common
@_handle_errors
def describe(name: str, quiet: bool, debug: bool, disabled: Sequence[str]) -> int:
    """Show a component's parameters, defaults, constraints and data flow."""
    import inspect
    import textwrap

    from fairaudit.errors import ConfigError

    _setup_logging(debug, quiet)
    host = _host(disabled)
    found = host.registry.find(name)
    if not found:
        import difflib

        names = sorted({i.name for i in host.registry.all()})
        close = difflib.get_close_matches(name, names, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"no component named {name!r}{hint}; see `fairaudit plugins`")
    for info in found:
        cls = info.cls
        click.echo(f"{info.name}  ({info.kind}, plugin {info.plugin}, "
                   f"{info.package} {info.version})")
        desc = getattr(cls, "description", "") or (inspect.getdoc(cls) or "")
        if desc:
            click.echo(textwrap.indent(textwrap.fill(desc, 88), "  "))
        if hasattr(cls, "requires"):
            click.echo(f"  requires: {', '.join(sorted(cls.requires)) or '-'}")
            click.echo(f"  provides: {', '.join(sorted(cls.provides)) or '-'}")
        if getattr(cls, "max_rows", None):
            click.echo(f"  max_rows: {cls.max_rows:,} (larger inputs are sampled)")
        if hasattr(cls, "param_specs"):
            specs = cls.param_specs()
            click.echo("  parameters:" if specs else "  parameters: none")
            for p in specs:
                default = "(required)" if p.required else f"= {p.default!r}"
                line = f"    {p.name} {default}"
                if p.constraint:
                    line += f"  [{p.constraint}]"
                click.echo(line)
                if p.doc:
                    click.echo(textwrap.indent(textwrap.fill(p.doc, 80), "        "))
        for m in getattr(cls, "metrics", ()):
            flag = " (headline)" if m.headline else ""
            click.echo(f"  metric {m.name}: {m.direction.value}{flag} — {m.description}")
    return EXIT_OK


@main.command()
@click.argument("audit_json", metavar="AUDIT.json", type=click.Path(dir_okay=False))
@click.option("--out", "-o", "out", type=click.Path(dir_okay=False), default="fairaudit-report.html",
              show_default=True, help="HTML report path.")
@click.option("--templates", "template_dirs", multiple=True, type=click.Path(file_okay=False),
              help="Extra template folder searched first (override built-in templates).")
@_common
@_handle_errors
def render(audit_json: str, out: str, template_dirs: Sequence[str], quiet: bool, debug: bool,
           disabled: Sequence[str]) -> int:
    """Re-render the HTML report from a saved AUDIT.json (no recomputation)."""
    from fairaudit.ops.compare import load_audit
    from fairaudit.report.outputs import InputRef, check_outputs
    from fairaudit.report.render import write_html
    from fairaudit.report.results import AuditRun

    _setup_logging(debug, quiet)
    p = Path(audit_json)
    check_outputs({"--out": out}, [InputRef("AUDIT.json", audit_json)])
    run_obj = AuditRun(load_audit(p))
    host = _host(disabled)
    write_html(run_obj, Path(out), host, template_dirs=[Path(t) for t in template_dirs])
    if not quiet:
        click.echo(f"report: {Path(out).resolve()}")
    return EXIT_OK


def _guard_outputs(inputs: Sequence[Path], outputs: Sequence[Path | None]) -> None:
    """Refuse an output path that is one of the input files, or a folder that does not exist."""
    from fairaudit.errors import ConfigError

    ins = [p.resolve() for p in inputs]
    seen: set[Path] = set()
    for out in outputs:
        if out is None:
            continue
        r = out.resolve()
        if r in ins:
            raise ConfigError(f"{out}: this is also an input file; write the output elsewhere "
                              "(fairaudit never writes over its inputs)")
        if r in seen:
            raise ConfigError(f"{out}: given for two outputs")
        seen.add(r)
        if not r.parent.exists():
            raise ConfigError(f"{out}: the folder {out.parent} does not exist")


def _write_outputs(pairs: Sequence[tuple[Path | None, Callable[[], str]]]) -> None:
    """Render every output first, then write them (atomically): a failed render writes nothing."""
    from fairaudit.core.io import atomic_write_text

    texts = [(p, make()) for p, make in pairs if p is not None]
    for p, text in texts:
        atomic_write_text(p, text)


@main.command()
@click.argument("baseline", metavar="BASELINE.json", type=click.Path(dir_okay=False))
@click.argument("current", metavar="CURRENT.json", type=click.Path(dir_okay=False))
@click.option("--out", "-o", "out", type=click.Path(dir_okay=False), default=None,
              help="Write the comparison as an HTML page.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None,
              help="Write the comparison as JSON (schema: fairaudit/schema/compare.schema.json).")
@click.option("--tolerance", "tolerances", multiple=True, metavar="METRIC[[ATTR]]=DELTA",
              help="Allowed worsening of a headline metric before the gate fails (repeatable; "
              "METRIC, METRIC[ATTR] or * for all) [default: 0].")
@click.option("--allow-version-change", is_flag=True,
              help="Compare audits made with different fairaudit/plugin versions anyway.")
@_common
@_handle_errors
def compare(baseline: str, current: str, out: str | None, json_out: str | None,
            tolerances: Sequence[str], allow_version_change: bool, quiet: bool, debug: bool,
            disabled: Sequence[str]) -> int:
    """Compare CURRENT.json with BASELINE.json: the change of every metric, with an interval.

    Exit 1 when a headline metric got significantly worse by more than its tolerance, 0 otherwise,
    2 when a file is not an audit JSON or the two audits cannot be compared."""
    from fairaudit.ops.compare import compare as run_compare
    from fairaudit.ops.compare import exit_code

    _setup_logging(debug, quiet)
    out_p, json_p = (Path(out) if out else None), (Path(json_out) if json_out else None)
    _guard_outputs([Path(baseline), Path(current)], [out_p, json_p])
    cmp = run_compare(baseline, current, tolerance=tolerances,
                      allow_version_change=allow_version_change)

    def _html() -> str:
        from fairaudit.report.diffreport import render_comparison_html

        return render_comparison_html(cmp)

    _write_outputs([(json_p, lambda: json.dumps(cmp, indent=2, ensure_ascii=False)),
                    (out_p, _html)])
    if not quiet:
        _comparison_summary(cmp)
        for label, p in (("report", out_p), ("json", json_p)):
            if p is not None:
                click.echo(f"{label + ':':7} {p.resolve()}")
    return exit_code(cmp)


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _comparison_summary(cmp: Any) -> None:
    s = cmp["summary"]
    click.echo(f"fairaudit compare: {cmp['status'].upper()}  ({s['compared']} results compared, "
               f"{s['significant']} significant change(s): {s['worse']} worse, {s['better']} "
               f"better; {s['gate_failures']} headline gate(s) failed)")
    for c in cmp["changes"]:
        if not c["headline"] or not (c["significant"] or c["gate"] == "fail"):
            continue
        attr = f"[{c['attribute']}]" if c["attribute"] else ""
        tag = "FAIL" if c["gate"] == "fail" else c["direction"].upper()
        click.echo(f"  {tag:6} {c['labelling']} {c['metric']}{attr}: {_fmt(c['baseline'])} -> "
                   f"{_fmt(c['current'])} (change {c['delta']:+.3f}, interval "
                   f"[{c['ci'][0]:+.3f}, {c['ci'][1]:+.3f}])")
    for n in cmp["notes"]:
        click.echo(f"  note: {n}")


@main.command()
@click.argument("audits", metavar="AUDIT.json...", nargs=-1, required=True,
                type=click.Path(exists=False))
@click.option("--out", "-o", "out", type=click.Path(dir_okay=False), default=None,
              help="Write the trend report as an HTML page [default: history.html when no "
              "output is given].")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None,
              help="Write the same data as JSON.")
@click.option("--csv", "csv_out", type=click.Path(dir_okay=False), default=None,
              help="Write one row per run and headline result as CSV.")
@_common
@_handle_errors
def history(audits: Sequence[str], out: str | None, json_out: str | None, csv_out: str | None,
            quiet: bool, debug: bool, disabled: Sequence[str]) -> int:
    """A trend report over many audit runs (files, or folders of *.json), ordered by date."""
    from fairaudit.ops.history import build_history, history_csv

    _setup_logging(debug, quiet)
    if out is None and json_out is None and csv_out is None:
        out = "history.html"
    paths = [Path(out) if out else None, Path(json_out) if json_out else None,
             Path(csv_out) if csv_out else None]
    inputs = [f for a in audits for f in (sorted(Path(a).glob("*.json")) if Path(a).is_dir()
                                          else [Path(a)])]
    _guard_outputs(inputs, paths)
    hist = build_history(audits)

    def _html() -> str:
        from fairaudit.report.diffreport import render_history_html

        return render_history_html(hist)

    _write_outputs([(paths[1], lambda: json.dumps(hist, indent=2, ensure_ascii=False)),
                    (paths[2], lambda: history_csv(hist)), (paths[0], _html)])
    if not quiet:
        runs = hist["runs"]
        failed = sum(1 for r in runs if r["gate_failed"])
        click.echo(f"fairaudit history: {len(runs)} run(s) from {runs[0]['date']} to "
                   f"{runs[-1]['date']}, {failed} with a failed gate, "
                   f"{len(hist['series'])} headline series")
        for n in hist["notes"]:
            click.echo(f"  note: {n}")
        if hist["skipped"]:
            click.echo(f"  skipped {len(hist['skipped'])} file(s) that are not audit JSON")
        for label, p in zip(("report", "json", "csv"), paths, strict=True):
            if p is not None:
                click.echo(f"{label + ':':7} {p.resolve()}")
    return EXIT_OK


@main.command()
@click.argument("audits", metavar="AUDIT.json...", nargs=-1, required=True,
                type=click.Path(dir_okay=False))
@click.option("--csv", "csv_out", type=click.Path(dir_okay=False), required=True,
              help="Write one row per (audit, labelling, metric, attribute) as CSV.")
@click.option("--headline-only", is_flag=True, help="Only the headline metrics.")
@_common
@_handle_errors
def export(audits: Sequence[str], csv_out: str, headline_only: bool, quiet: bool, debug: bool,
           disabled: Sequence[str]) -> int:
    """A flat table of results for BI tools and warehouses (see docs/cli.md for the columns)."""
    from fairaudit.ops.compare import load_audit
    from fairaudit.ops.export import export_csv

    _setup_logging(debug, quiet)
    out = Path(csv_out)
    _guard_outputs([Path(a) for a in audits], [out])
    docs = []
    for a in audits:
        doc = load_audit(a)
        if headline_only:
            doc = dict(doc, results=[r for r in doc["results"] if r.get("headline")])
        docs.append((doc, a))
    text = export_csv(docs)
    _write_outputs([(out, lambda: text)])
    if not quiet:
        click.echo(f"csv:    {out.resolve()} ({text.count(chr(10)) - 1} rows)")
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
    from fairaudit.core.chain import chain_from_flags

    _setup_logging(debug, quiet)
    host = _host(disabled)
    spec = chain_from_flags(host.registry, sensitive=("sex", "race"), seed=0)
    data = str(demo_data_path())
    if not quiet:
        click.echo(f"auditing the example data {data} (sensitive: sex, race)")
    _run_and_write(spec, host, data, Path(out), None, quiet)
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    main()
