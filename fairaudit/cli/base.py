"""The ``fairaudit`` command line: the ``main`` group, shared options, logging, and the mapping
of errors to exit codes. The CLI package is the only place that prints or exits.

Exit codes: 0 ran and every error-severity threshold passed; 1 ran and a threshold failed;
2 usage, configuration or input error; 3 internal error; 130 interrupted (Ctrl-C); 143
terminated (SIGTERM). ``--debug`` adds a traceback and fairaudit's debug log, never another code;
``--verbose`` (``-v``) fairaudit's info log (what each step did), on stderr.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from fairaudit import __distribution__

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_INTERRUPTED, EXIT_TERMINATED, EXIT_PIPE = 130, 143, 141
log = logging.getLogger("fairaudit")
_OWN_LOGGERS = ("fairaudit", "fairaudit_builtins")


class _Terminated(BaseException):
    """Raised in the main thread when the process receives SIGTERM (like KeyboardInterrupt, so
    every ``finally`` and atomic write cleans up on the way out)."""


def say(text: str = "") -> None:
    """A line of the command's output on stdout. When stdout is closed (``fairaudit plugins |
    head -n 1``), the rest of the output is dropped and the command goes on to the end, exiting
    with its own code: a pipeline acts on the code, as with git and ripgrep."""
    ctx = click.get_current_context(silent=True)
    meta = ctx.find_root().meta if ctx is not None else {}
    if meta.get("fairaudit.stdout_closed"):
        return
    try:
        click.echo(text)
    except BrokenPipeError:
        meta["fairaudit.stdout_closed"] = True
        _silence_stdout()


def _silence_stdout() -> None:
    """Point stdout at the null device (what is still buffered cannot be written anywhere), so
    that no later write or the final flush raises again."""
    import os

    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # a captured stream (tests): nothing to do
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


class _QuietPipe:
    """click's own output (``--help``, ``--version``) on a closed stdout (``fairaudit --help |
    head -1``): what could not be written is dropped and the option ends with its own code, 0,
    as ripgrep's does (click itself exits 1, which fails a ``pipefail`` pipeline)."""

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)  # type: ignore[misc]
        except BrokenPipeError:
            _silence_stdout()
            raise click.exceptions.Exit(EXIT_OK) from None


class _Command(_QuietPipe, click.Command):
    pass


class _Group(_QuietPipe, click.Group):
    command_class = _Command
    group_class = type  # a sub-group (say `fairaudit ledger`) is a _Group too


def _set_verbose(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """``--verbose`` on the group or on a command: remembered for :func:`_setup_logging`."""
    if value:
        ctx.find_root().meta["fairaudit.verbose"] = True


def _verbose_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--verbose", "-v", is_flag=True, expose_value=False,
                        callback=_set_verbose,
                        help="fairaudit's info log on stderr: what each step did.")(fn)


class _ConsoleFormatter(logging.Formatter):
    """fairaudit's own warnings read as the console's other lines (``warning: ...``, as the
    report's warnings are printed); info/debug lines and other libraries' records keep the level
    and the logger's name."""

    def __init__(self) -> None:
        super().__init__("%(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        from fairaudit.sources.urls import redact  # a database URL's password: never shown

        if record.levelno == logging.WARNING and record.name.split(".")[0] in _OWN_LOGGERS:
            return redact(f"warning: {record.getMessage()}")
        return redact(super().format(record))


def _setup_logging(debug: bool, quiet: bool) -> None:
    """Warnings (errors with --quiet) from everyone; with --verbose, fairaudit's own info log;
    with --debug, its debug log — never third-party debug logs (Great Expectations alone writes
    thousands of lines)."""
    ctx = click.get_current_context(silent=True)
    verbose = bool(ctx and ctx.find_root().meta.get("fairaudit.verbose"))
    level = logging.ERROR if quiet else logging.WARNING
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", force=True)
    for handler in logging.getLogger().handlers:
        handler.setFormatter(_ConsoleFormatter())
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
            click.echo(_redact(f"error: {exc}"), err=True)
            sys.exit(exc.exit_code)
        except BrokenPipeError as exc:
            if not _stdout_closed():
                _internal(exc, debug)
            # stdout closed under output that did not go through say(): the command did not
            # finish, as a process ended by SIGPIPE (the shell's 128 + 13)
            _silence_stdout()
            sys.exit(EXIT_PIPE)
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
            _internal(exc, debug)
        finally:
            _restore_sigterm(previous)
        sys.exit(code or EXIT_OK)

    return wrapper


def _redact(text: str) -> str:
    from fairaudit.sources.urls import redact

    return redact(text)


def _internal(exc: BaseException, debug: bool) -> None:
    _traceback(debug)
    click.echo(
        _redact(f"internal error: {type(exc).__name__}: {exc}\n")
        + ("" if debug else "run again with --debug for the traceback, and ")
        + "please report it",
        err=True,
    )
    sys.exit(EXIT_INTERNAL)


def _stdout_closed() -> bool:
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        return True
    except (OSError, ValueError):
        return False
    return False


def _traceback(debug: bool) -> None:
    if debug:
        import traceback

        click.echo(_redact(traceback.format_exc().rstrip()), err=True)


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
    """--engine / --scheduler / --workers (they override the chain's [engine] table) and
    --max-memory (over its options.max_memory)."""
    fn = click.option("--max-memory", metavar="SIZE", default=None,
                      help="Memory the run may plan to use, e.g. 16G; a step that would need "
                      "more (the bootstrap of many groups, the in-memory rows) exits 2 before "
                      "it starts [default: 80% of the memory available].")(fn)
    fn = click.option("--workers", type=int, default=None,
                      help="Count and assign on a local Dask cluster of N worker processes.")(fn)
    fn = click.option("--scheduler", metavar="ADDRESS", default=None,
                      help="Count and assign every row on a Dask cluster (tcp://host:8786; "
                      "default: env DASK_SCHEDULER_ADDRESS). Needs pip install "
                      "'fairaudit-clusters[dask]'.")(fn)
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
                     help="Privacy ledger, an existing file [default: "
                     "$XDG_STATE_HOME/fairaudit/ledger.json]."),
        click.option("--new-ledger", is_flag=True, default=None,
                     help="Start a new ledger at --ledger PATH if it does not exist (without "
                     "it a missing ledger exits 2: a typo must not start a fresh budget)."),
        click.option("--privacy-source", default=None, metavar="NAME",
                     help="The data source (population) whose budget the release spends "
                     "[default: the input's folder, hive partition folders stripped]."),
        click.option("--allow-large-epsilon", is_flag=True, default=None,
                     help="Accept an --epsilon above 10 (at most 1000): weak protection."),
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
                   domain, delta, new_ledger=None, allow_large_epsilon=None) -> dict[str, Any]:
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
            "domain": domain, "delta": delta, "new_ledger": new_ledger,
            "allow_large_epsilon": allow_large_epsilon}


def run(args: Sequence[str] | None = None) -> None:
    """The program's entry point (the ``fairaudit`` script, ``python -m fairaudit``): :func:`main`,
    then leave without tearing the interpreter down.

    Once the command has returned, everything it wrote is closed (outputs are written
    atomically, the progress thread and any Dask client stopped), so the exit runs the
    ``atexit`` handlers (logging's flush among them), flushes stdout and stderr and ends the
    process with the command's exit code, skipping the interpreter's module-by-module teardown
    of numpy, polars and the rest: 60 ms of CPU of a 0.45 s audit (issue 25,
    docs/benchmarks.md). Code that calls :func:`main` itself (tests, ``CliRunner``) keeps the
    ordinary exit."""
    import atexit
    import os

    try:
        main(args=list(args) if args is not None else None, prog_name="fairaudit")
    except SystemExit as exc:
        code = exc.code
    else:  # pragma: no cover - click always exits in standalone mode
        code = 0
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message"): Python prints it and exits 1
        sys.stderr.write(f"{code}\n")
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # started with the descriptor closed (``>&-``): nothing to flush
            continue
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can be said
            pass
    os._exit(code)


def _host(disabled: Sequence[str]) -> Any:
    from fairaudit.core.plugins import Host

    return Host.create(blocked=disabled)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
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
    # OpenMP threads (scikit-learn's k-means, the twins' fits) sleep while they wait instead of
    # spinning: on a shared or busy machine spinning made k-means fits 100x slower (issue 25,
    # docs/benchmarks.md). Set before any OpenMP runtime loads; a user's own value is kept.
    import os

    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _split(values: Sequence[str]) -> tuple[str, ...]:
    out: list[str] = []
    for v in values:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return tuple(out)


def _default_json(out: Path) -> Path:
    return out.with_suffix(".json")


def _write_outputs(label_inputs: Sequence[tuple[str, str]],
                   pairs: Sequence[tuple[str, str | None, Callable[[], str]]]) -> None:
    """The outputs of a command that reads saved documents (``compare``, ``history``,
    ``export``): checked against its inputs (``(label, path)``) and each other, rendered, then
    written as one unit (:func:`fairaudit.report.outputs.write_outputs`). ``pairs`` are
    ``(option, path or None, render)``; a failed render writes nothing."""
    from fairaudit.report.outputs import InputRef, check_outputs, write_outputs

    given = check_outputs({label: path for label, path, _ in pairs},
                          [InputRef(label, path) for label, path in label_inputs])
    write_outputs([(given[label], make()) for label, path, make in pairs if path is not None])


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _comparison_summary(cmp: Any) -> None:
    s = cmp["summary"]
    say(f"fairaudit compare: {cmp['status'].upper()}  ({s['compared']} results compared, "
               f"{s['significant']} significant change(s): {s['worse']} worse, {s['better']} "
               f"better; {s['gate_failures']} headline gate(s) failed)")
    for c in cmp["changes"]:
        if not c["headline"] or not (c["significant"] or c["gate"] == "fail"):
            continue
        attr = f"[{c['attribute']}]" if c["attribute"] else ""
        tag = "FAIL" if c["gate"] == "fail" else c["direction"].upper()
        say(f"  {tag:6} {c['labelling']} {c['metric']}{attr}: {_fmt(c['baseline'])} -> "
                   f"{_fmt(c['current'])} (change {c['delta']:+.3f}, interval "
                   f"[{c['ci'][0]:+.3f}, {c['ci'][1]:+.3f}])")
    for n in cmp["notes"]:
        say(f"  note: {n}")
