"""``fairaudit repair``: the nearest fair segmentation (docs/repair.md); also what ``fairaudit
run`` does with a chain that has a ``[repair]`` table."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from fairaudit.cli.base import _common, _handle_errors, _host, _setup_logging, _split, main, say


@main.command()
@click.argument("data", metavar="DATA")
@click.option("--sensitive", "-s", multiple=True, metavar="A,B",
              help="Sensitive columns (comma-separated or repeated).")
@click.option("--labels", metavar="COL", help="The column holding the segments to repair.")
@click.option("--target", "targets", multiple=True, metavar="METRIC[[ATTR]]=VALUE",
              help="What every segment must meet (repeatable), e.g. balance=0.8 or "
              "balance[race]=0.9; metrics: balance, balance_prime, fairness_cce, cce (at "
              "least), wd, wd_max (at most).")
@click.option("--out", "-o", "out", type=click.Path(dir_okay=False), metavar="FILE",
              help="The repaired table: every input row plus the new column, in the input's "
              "format (.parquet or .csv).")
@click.option("--report", type=click.Path(dir_okay=False), metavar="FILE.html",
              help="HTML report [default: next to --out, .html].")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), metavar="FILE.json",
              help="JSON document [default: next to the report, .json].")
@click.option("--as", "column", metavar="NAME", help="Name of the new column [default: "
              "<labels>_fair].")
@click.option("--intersection", is_flag=True, default=None,
              help="Also hold the intersection of the sensitive attributes to the targets.")
@click.option("--keep-sizes", type=float, default=None, metavar="SHARE",
              help="Keep each segment's size within +-SHARE of its size, e.g. 0.05.")
@click.option("--objective", type=click.Choice(["moves", "cost"]), default=None,
              help="moves: the fewest people moved; cost: the least distance added to the "
              "receiving segments' centroids (needs --features) [default: moves].")
@click.option("--features", multiple=True, metavar="COLS",
              help="Numeric columns: who moves is whoever's move adds the least distance "
              "(without them: a seeded random choice); --objective cost minimises it.")
@click.option("--seed", type=int, default=None, help="Seed of the random choice and the "
              "audits' bootstrap [default: 0].")
@click.option("--min-cell", type=int, default=None,
              help="Groups with fewer people are not held to the targets, as the audit does "
              "not judge them [default: 10].")
@click.option("--bootstrap", type=int, default=None,
              help="Bootstrap replicates of the audits' intervals [default: 200].")
@click.option("--ci-method", type=click.Choice(["calibrated", "conservative"]), default=None,
              help="Interval method of the audits [default: calibrated].")
@click.option("--time-limit", type=float, default=None, metavar="SECONDS",
              help="Time the solver may take [default: 60].")
@click.option("--chain", "chain_file", type=click.Path(dir_okay=False), metavar="FILE",
              help="Take [data], [options], [[audit]] and [repair] from this chain file; "
              "flags override it.")
@click.option("--separator", metavar="CHAR", default=None,
              help="CSV field separator [default: ',' (tab for .tsv)].")
@click.option("--null-values", metavar="TEXT,...", default=None,
              help="Cell texts read as missing, added to the defaults.")
@click.option("--decimal-comma", is_flag=True, default=None,
              help="A CSV's numbers are written with a decimal comma.")
@click.option("--default-nulls/--no-default-nulls", default=None,
              help="With --no-default-nulls only empty cells (and --null-values) are missing "
              "in a CSV [default: on].")
@_common
@_handle_errors
def repair(data: str, sensitive, labels, targets, out, report, json_out, column, intersection,
           keep_sizes, objective, features, seed, min_cell, bootstrap, ci_method, time_limit,
           chain_file, separator, null_values, decimal_comma, default_nulls, quiet: bool,
           debug: bool, disabled: Sequence[str]) -> int:
    """Repair the segmentation in --labels: move the fewest people so that every segment of
    DATA meets the --target, and write every row plus the new column, with the audit before
    and after.

    \b
    Example:
      fairaudit repair customers.parquet --sensitive sex,race --labels segment \\
          --target balance=0.8 --out customers_fair.parquet
    """
    from fairaudit.repair.chain import spec_from

    _setup_logging(debug, quiet)
    host = _host(disabled)
    given: dict[str, Any] = {
        "sensitive": _split(sensitive) or None, "labels": labels,
        "target": list(targets) or None, "column": column, "intersection": intersection,
        "keep_sizes": keep_sizes, "objective": objective,
        "features": _split(features) or None, "seed": seed, "min_cell": min_cell,
        "bootstrap": bootstrap, "ci_method": ci_method, "time_limit": time_limit,
        "out": out, "report": report, "json": json_out}
    reader = {"separator": separator, "null_values": null_values,
              "decimal_comma": decimal_comma, "default_nulls": default_nulls}
    if given["out"] is None and chain_file is None:
        raise click.UsageError("--out: give the path of the repaired table (.parquet or .csv)")
    spec, audit_chain, _ = spec_from(given, reader, "cli", chain_file)
    if spec.out is None:
        raise click.UsageError("--out: give the path of the repaired table (.parquet or .csv)")
    return run_repair_command(spec, data, host, audit_chain, quiet)


def run_repair_command(spec: Any, data: Any, host: Any, audit_chain: Any, quiet: bool) -> int:
    """Repair, write, and say what happened (``fairaudit repair`` and ``fairaudit run``)."""
    from fairaudit.core.progress import show_progress
    from fairaudit.repair.api import run_and_write

    with show_progress(enabled=not quiet):
        result = run_and_write(spec, data, audit_chain=audit_chain, host=host)
    if not quiet:
        for line in summary_lines(result.doc):
            say(line)
    return 0


def run_chain_repair(chain_file: str, data: str | None, report: str | None,
                     json_out: str | None, host: Any, quiet: bool) -> int:
    """``fairaudit run CHAIN.toml [DATA]`` for a chain with a ``[repair]`` table."""
    import dataclasses

    from fairaudit.repair.chain import READER_KEYS, spec_from

    spec, audit_chain, data_path = spec_from({}, {k: None for k in READER_KEYS}, "chain",
                                             chain_file)
    spec = dataclasses.replace(spec, report=report if report is not None else spec.report,
                               json=json_out if json_out is not None else spec.json)
    if spec.out is None:
        from fairaudit.errors import ConfigError

        raise ConfigError(f"{chain_file}: repair.out: give the path of the repaired table")
    return run_repair_command(spec, data if data is not None else data_path, host, audit_chain,
                              quiet)


def summary_lines(doc: Any) -> list[str]:
    """What the console says after a repair."""
    s = doc["solution"]
    n = doc["input"]["rows_repaired"]
    lines = [f"fairaudit repair: {s['moves']:,} of {n:,} people change segment "
             f"({s['share_moved']:.2%})"]
    c = doc.get("cost")
    if s["objective"] == "cost":
        proof = "proven the least" if s["optimal"] else "not proven the least"
        bound = ("no lower bound (the LP did not finish)" if s["lp_bound"] is None
                 else f"LP bound {s['lp_bound']:,.3f}")
        lines[0] += f"; distance added {s['value']:,.3f}, {bound}, {proof}"
    else:
        proof = ("proven the fewest" if s["optimal"]
                 else f"at least {s['lower_bound']:,.0f} needed; not proven the fewest")
        lines[0] += f"; LP bound {s['lp_bound']:,.2f}, {proof}"
    if c:
        lines.append(f"  distance added: {c['distance_added']:.3f} ({c['per_move']:.3f} per "
                     f"person moved; features {', '.join(c['features'])})")
    for t in doc["targets"]:
        op = ">=" if t["direction"] == "higher" else "<="
        ci = t.get("after_ci")
        ci_txt = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci and ci[0] is not None else ""
        lines.append(f"  {t['metric']}[{t['attribute']}] {op} {t['target']:g}: "
                     f"{t['before']:.3f} -> {t['after']:.3f}{ci_txt}"
                     f"{'' if t['met_after'] else '  NOT MET'}")
    for note in doc.get("notes") or []:
        lines.append(f"  note: {note}")
    lines.append(doc["meaning"])
    out = doc["output"]
    lines += [f"table:  {Path(out['path']).resolve()}  (new column {out['column']})",
              f"report: {Path(out['report']).resolve()}", f"json:   {Path(out['json']).resolve()}"]
    return lines
