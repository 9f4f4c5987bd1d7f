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
    _guard_outputs,
    _handle_errors,
    _host,
    _setup_logging,
    _write_outputs,
    main,
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
    from fairaudit.core.plugins import blaming_plugins
    from fairaudit.ops.compare import load_audit
    from fairaudit.report.outputs import InputRef, check_outputs
    from fairaudit.report.render import write_html
    from fairaudit.report.results import AuditRun

    _setup_logging(debug, quiet)
    p = Path(audit_json)
    check_outputs({"--out": out}, [InputRef("AUDIT.json", audit_json)])
    run_obj = AuditRun(load_audit(p))
    host = _host(disabled)
    with blaming_plugins(host):  # a plugin's report section
        write_html(run_obj, Path(out), host, template_dirs=[Path(t) for t in template_dirs])
    if not quiet:
        click.echo(f"report: {Path(out).resolve()}")
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
