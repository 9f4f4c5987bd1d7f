"""Audit and compare in one step: ``fairaudit audit … --baseline BASE.json``.

The baseline can be given on the command line (``--baseline``, ``--tolerance``), in the chain
TOML, or to :func:`fairaudit.audit` (``baseline=``, ``tolerance=``)::

    [compare]
    baseline = "audits/approved.json"   # relative to the working directory, like data.path
    tolerance = {balance = 0.02, "wd[race]" = 0.01, "*" = 0.0}
    allow_version_change = false

:func:`attach_comparison` runs :func:`fairaudit.ops.compare.compare` on the finished audit, stores the
comparison document under ``doc["comparison"]`` (the report shows it as a section) and gates on
both: the audit's ``status`` becomes ``fail`` when the comparison failed (exit 1), and ``warn``
when it warned and nothing else failed. ``doc["comparison"]["status"]`` keeps the comparison's own
verdict, ``doc["comparison"]["audit_status"]`` the thresholds' verdict before it was combined.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairaudit.errors import ConfigError

__all__ = ["BaselineOptions", "attach_comparison", "baseline_from_chain_file"]

_KEYS = {"baseline", "tolerance", "allow_version_change"}


@dataclass(frozen=True)
class BaselineOptions:
    baseline: str | Path | Mapping[str, Any] | Any
    tolerance: Mapping[str, float] = field(default_factory=dict)
    allow_version_change: bool = False
    source: str = "--baseline"


def baseline_from_chain_file(path: str | Path | None) -> BaselineOptions | None:
    """The ``[compare]`` table of a chain TOML file, or ``None`` when it has none."""
    if path is None:
        return None
    import tomllib

    from fairaudit.ops.compare import parse_tolerances

    p = Path(path)
    try:
        doc = tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None  # load_chain reports these with their own message
    table = doc.get("compare")
    if table is None:
        return None
    if not isinstance(table, Mapping):
        raise ConfigError(f"{p}: compare: must be a table with baseline = \"audit.json\"")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(f"{p}: compare.{unknown[0]}: unknown key (expected one of "
                          f"{', '.join(sorted(_KEYS))})")
    base = table.get("baseline")
    if not isinstance(base, str) or not base.strip():
        raise ConfigError(f"{p}: compare.baseline: expected the path of the baseline audit JSON")
    tol = table.get("tolerance", {})
    if not isinstance(tol, Mapping):
        raise ConfigError(f"{p}: compare.tolerance: expected a table, e.g. "
                          "{balance = 0.02, \"wd[race]\" = 0.01}")
    allow = table.get("allow_version_change", False)
    if not isinstance(allow, bool):
        raise ConfigError(f"{p}: compare.allow_version_change: expected true or false")
    return BaselineOptions(base, parse_tolerances(tol, option=f"{p}: compare.tolerance"), allow,
                           source=f"{p} [compare]")


def resolve(cli_baseline: str | None, cli_tolerance: Sequence[str], chain_file: str | None,
            allow_version_change: bool = False) -> BaselineOptions | None:
    """Command-line flags over the chain's ``[compare]`` table (tolerances are merged)."""
    if cli_baseline is None and chain_file is None and not cli_tolerance:
        return None  # nothing to compare (and fairaudit.ops.compare stays unimported)
    from fairaudit.ops.compare import parse_tolerances

    from_chain = baseline_from_chain_file(chain_file)
    tol = parse_tolerances(cli_tolerance)
    if cli_baseline is None:
        if from_chain is None:
            if tol:
                raise ConfigError("--tolerance needs --baseline (or a [compare] table in the "
                                  "chain)")
            return None
        return BaselineOptions(from_chain.baseline, {**from_chain.tolerance, **tol},
                               from_chain.allow_version_change or allow_version_change,
                               from_chain.source)
    merged = {**(from_chain.tolerance if from_chain else {}), **tol}
    return BaselineOptions(cli_baseline, merged, allow_version_change, "--baseline")


def attach_comparison(run: Any, options: BaselineOptions) -> Any:
    """The run with ``doc["comparison"]`` added and its status combined (see module doc)."""
    from fairaudit.errors import ConfigError
    from fairaudit.ops.compare import compare, load_audit
    from fairaudit.report.results import AuditRun

    if (run.doc.get("privacy") or {}).get("mode") == "dp":
        base = load_audit(options.baseline, what="baseline")
        if (base.get("privacy") or {}).get("mode") != "dp":
            raise ConfigError(
                f"{options.source}: a published (--publish) release can only be "
                "compared with another published release; this baseline holds exact values, "
                "and the comparison would publish them")
    cmp = compare(options.baseline, run.doc, tolerance=dict(options.tolerance),
                  allow_version_change=options.allow_version_change)
    cmp["current"]["file"] = None
    doc = dict(run.doc)
    audit_status = doc.get("status")
    cmp["audit_status"] = audit_status
    cmp["source"] = options.source
    doc["comparison"] = cmp
    if cmp["status"] == "fail":
        doc["status"] = "fail"
    elif cmp["status"] == "warn" and audit_status in ("pass", "not_evaluated"):
        doc["status"] = "warn"
    return AuditRun(doc, ledger_now=run.ledger_now)


def guard_paths(options: BaselineOptions | None, outputs: Sequence[Path | None]) -> None:
    """The baseline file is an input: no output may be written over it."""
    if options is None or not isinstance(options.baseline, str | Path):
        return
    b = Path(options.baseline).resolve()
    for out in outputs:
        if out is not None and Path(out).resolve() == b:
            raise ConfigError(
                f"{out}: this is also the baseline ({options.source}); write each run to its "
                "own file (e.g. runs/$(date +%F).json) and keep the approved baseline apart")
