"""The commands around a run: ``plugins`` and ``describe`` (what is installed), ``render`` (HTML
from a saved JSON), ``compare``, ``history`` and ``export``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import click

from fairaudit.cli.base import (
    EXIT_OK,
    _common,
    _comparison_summary,
    _handle_errors,
    _host,
    _setup_logging,
    main,
    say,
)


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
        say(json.dumps(rows, indent=2))
        return EXIT_OK
    w = max(len(r["name"]) for r in rows) if rows else 4
    say(f"{'NAME':<{w}}  {'KIND':<12}  {'PLUGIN':<24}  PACKAGE")
    for r in rows:
        say(f"{r['name']:<{w}}  {r['kind']:<12}  {r['plugin']:<24}  "
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
        say(f"{info.name}  ({info.kind}, plugin {info.plugin}, "
                   f"{info.package} {info.version})")
        desc = getattr(cls, "description", "") or (inspect.getdoc(cls) or "")
        if desc:
            say(textwrap.indent(textwrap.fill(desc, 88), "  "))
        if hasattr(cls, "requires"):
            say(f"  requires: {', '.join(sorted(cls.requires)) or '-'}")
            say(f"  provides: {', '.join(sorted(cls.provides)) or '-'}")
        if getattr(cls, "max_rows", None):
            say(f"  max_rows: {cls.max_rows:,} (larger inputs are sampled)")
        if hasattr(cls, "param_specs"):
            specs = cls.param_specs()
            say("  parameters:" if specs else "  parameters: none")
            for p in specs:
                default = "(required)" if p.required else f"= {p.default!r}"
                line = f"    {p.name} {default}"
                if p.constraint:
                    line += f"  [{p.constraint}]"
                say(line)
                if p.doc:
                    say(textwrap.indent(textwrap.fill(p.doc, 80), "        "))
        for m in getattr(cls, "metrics", ()):
            flag = " (headline)" if m.headline else ""
            say(f"  metric {m.name}: {m.direction.value}{flag} — {m.description}")
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
    from fairaudit.core.plugins import blaming_plugins
    from fairaudit.ops.compare import load_audit
    from fairaudit.report.outputs import InputRef, check_outputs
    from fairaudit.report.render import write_html
    from fairaudit.report.results import AuditRun

    _setup_logging(debug, quiet)
    target = check_outputs({"--out": out}, [InputRef("AUDIT.json", audit_json)])["--out"]
    run_obj = AuditRun(load_audit(Path(audit_json)))
    host = _host(disabled)
    with blaming_plugins(host):  # a plugin's report section
        write_html(run_obj, target, host, template_dirs=[Path(t) for t in template_dirs])
    if not quiet:
        say(f"report: {target.resolve()}")
    return EXIT_OK


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
    from fairaudit.report.outputs import InputRef, check_outputs, write_outputs

    _setup_logging(debug, quiet)
    given = check_outputs({"--json": json_out, "--out": out},
                          [InputRef("BASELINE.json", baseline), InputRef("CURRENT.json", current)])
    cmp = run_compare(baseline, current, tolerance=tolerances,
                      allow_version_change=allow_version_change)
    files = []
    if "--json" in given:
        files.append((given["--json"], json.dumps(cmp, indent=2, ensure_ascii=False)))
    if "--out" in given:
        from fairaudit.report.diffreport import render_comparison_html

        files.append((given["--out"], render_comparison_html(cmp)))
    write_outputs(files)
    if not quiet:
        _comparison_summary(cmp)
        for label, flag in (("report", "--out"), ("json", "--json")):
            if flag in given:
                say(f"{label + ':':7} {given[flag].resolve()}")
    return exit_code(cmp)


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
    from fairaudit.report.outputs import InputRef, check_outputs, write_outputs

    _setup_logging(debug, quiet)
    if out is None and json_out is None and csv_out is None:
        out = "history.html"
    # a folder's audits are its *.json files: a history page may be written beside them
    files_in = [str(f) for a in audits for f in (sorted(Path(a).glob("*.json"))
                                                 if Path(a).is_dir() else [Path(a)])]
    given = check_outputs({"--out": out, "--json": json_out, "--csv": csv_out},
                          [InputRef("AUDIT.json", f) for f in files_in])
    hist = build_history(audits)
    files = []
    if "--json" in given:
        files.append((given["--json"], json.dumps(hist, indent=2, ensure_ascii=False)))
    if "--csv" in given:
        files.append((given["--csv"], history_csv(hist)))
    if "--out" in given:
        from fairaudit.report.diffreport import render_history_html

        files.append((given["--out"], render_history_html(hist)))
    write_outputs(files)
    if not quiet:
        runs = hist["runs"]
        failed = sum(1 for r in runs if r["gate_failed"])
        say(f"fairaudit history: {len(runs)} run(s) from {runs[0]['date']} to "
                   f"{runs[-1]['date']}, {failed} with a failed gate, "
                   f"{len(hist['series'])} headline series")
        for n in hist["notes"]:
            say(f"  note: {n}")
        if hist["skipped"]:
            say(f"  skipped {len(hist['skipped'])} file(s) that are not audit JSON")
        for label, flag in (("report", "--out"), ("json", "--json"), ("csv", "--csv")):
            if flag in given:
                say(f"{label + ':':7} {given[flag].resolve()}")
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
    from fairaudit.report.outputs import InputRef, check_outputs, write_output

    _setup_logging(debug, quiet)
    out = check_outputs({"--csv": csv_out}, [InputRef("AUDIT.json", a) for a in audits])["--csv"]
    docs = []
    for a in audits:
        doc = load_audit(a)
        if headline_only:
            doc = dict(doc, results=[r for r in doc["results"] if r.get("headline")])
        docs.append((doc, a))
    text = export_csv(docs)
    write_output(out, text)
    if not quiet:
        say(f"csv:    {out.resolve()} ({text.count(chr(10)) - 1} rows)")
    return EXIT_OK
