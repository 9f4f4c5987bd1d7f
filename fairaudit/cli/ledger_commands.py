"""``fairaudit ledger``: what each data source of a privacy ledger spent, and the only way to
raise its budget (docs/privacy.md, "The ledger"; docs/cli.md, "fairaudit ledger")."""

from __future__ import annotations

import json
from collections.abc import Sequence

import click

from fairaudit.cli.base import EXIT_OK, _common, _handle_errors, _setup_logging, main, say

_LEDGER = click.option("--ledger", "ledger_path", type=click.Path(dir_okay=False),
                       default=None, metavar="PATH",
                       help="The ledger [default: $XDG_STATE_HOME/fairaudit/ledger.json].")


@main.group()
def ledger() -> None:
    """The privacy ledger of published releases: show it, raise or lower a source's budget."""


@ledger.command()
@_LEDGER
@click.option("--source", "only", default=None, metavar="NAME", help="Only this data source.")
@click.option("--json", "as_json", is_flag=True,
              help="Machine-readable: per source its budget, spent, releases and history.")
@_common
@_handle_errors
def show(ledger_path: str | None, only: str | None, as_json: bool, quiet: bool, debug: bool,
         disabled: Sequence[str]) -> int:
    """What each data source has spent: its budget, every release and every budget change."""
    from fairaudit.errors import ConfigError
    from fairaudit.privacy.ledger import default_path, open_ledger

    del disabled
    _setup_logging(debug, quiet)
    if ledger_path is None and not default_path().exists():
        say(f"ledger {default_path()}: none yet (no release was published with the "
            "default ledger)")
        return EXIT_OK
    with open_ledger(ledger_path) as book:
        keys = book.keys()
        if only is not None:
            if only not in keys:
                raise ConfigError(f"--source: ledger {book.given} has no source {only!r}; it "
                                  f"has {', '.join(map(repr, keys)) or 'none'}")
            keys = [only]
        rows = [_summary(book, k) for k in keys]
        path = str(book.path)
    if as_json:
        say(json.dumps({"ledger": path, "sources": rows}, indent=1))
        return EXIT_OK
    say(f"ledger {path}: {len(rows)} source(s)")
    for s in rows:
        budget = "no budget" if s["budget"] is None else f"budget {s['budget']:.6g}"
        left = "" if s["left"] is None else f", {s['left']:.6g} left"
        say(f"source {s['source']!r}: {budget}; spent epsilon {s['spent']:.6g}"
            f" (delta {s['spent_delta']:.3g}) in {len(s['releases'])} release(s){left}")
        for r in s["releases"]:
            say(f"  release {r['created']}: epsilon {r['epsilon']:.6g}, delta "
                f"{r['delta']:.3g}; input {r['input'] or '(in memory)'}; data "
                f"{r['fingerprint'][:23]}…; options {r['options'][:19]}…")
        for h in s["budget_history"]:
            was = "" if h["from"] is None else f"{h['from']:.6g} -> "
            why = f" ({h['reason']})" if h["reason"] else ""
            say(f"  budget {h['at']}: {was}{h['to']:.6g}, {h['how']}{why}")
    return EXIT_OK


def _summary(book, key: str) -> dict:
    src = book.source(key)
    budget, spent = src["budget"], book.spent(key)
    return {"source": key, "budget": budget, "spent": spent, "spent_delta": book.spent_delta(key),
            "left": None if budget is None else max(budget - spent, 0.0),
            "releases": [{k: r[k] for k in ("created", "input", "epsilon", "delta",
                                            "fingerprint", "options")}
                         for r in src["releases"]],
            "budget_history": list(src["budget_history"])}


def _change(raising: bool, source: str, to: float, reason: str | None,
            ledger_path: str | None) -> int:
    from fairaudit.core.params import check
    from fairaudit.privacy.ledger import change_budget

    to = check("budget_to", to, "cli")
    if reason is not None or raising:
        reason = check("budget_reason", reason if reason is not None else "", "cli")
    done = change_budget(ledger_path, source, to, raising=raising, reason=reason)
    was = "no budget" if done["from"] is None else f"{done['from']:.6g}"
    say(f"ledger {done['path']}: source {source!r}: budget {was} -> {done['to']:.6g} "
        f"(spent {done['spent']:.6g})")
    if done["spent"] >= done["to"]:
        click.echo(f"note: source {source!r} has spent its whole budget: no further release of "
                   "it can be made", err=True)
    return EXIT_OK


def _budget_command(name: str, raising: bool, summary: str, to_help: str,
                    reason_help: str) -> None:
    """``fairaudit ledger raise`` / ``lower``: the same arguments, the direction differs."""

    @ledger.command(name, help=summary, short_help=summary.split(":")[0])
    @click.argument("source")
    @click.option("--to", "to", type=float, required=True, metavar="EPS", help=to_help)
    @click.option("--reason", default=None, metavar="TEXT", help=reason_help)
    @_LEDGER
    @_common
    @_handle_errors
    def command(source: str, to: float, reason: str | None, ledger_path: str | None,
                quiet: bool, debug: bool, disabled: Sequence[str]) -> int:
        del disabled
        _setup_logging(debug, quiet)
        return _change(raising, source, to, reason, ledger_path)


_budget_command(
    "raise", True, "Raise SOURCE's budget to EPS: the only way to raise it (recorded with when "
    "and why).", "The source's new budget (total epsilon), above the recorded one.",
    "Why (required; recorded with the change, e.g. who signed it off).")
_budget_command(
    "lower", False, "Lower SOURCE's budget to EPS (always allowed; recorded with when).",
    "The source's new budget (total epsilon), below the recorded one.",
    "Why (optional; recorded).")
