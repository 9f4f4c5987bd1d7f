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

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairaudit.errors import ConfigError

log = logging.getLogger(__name__)

__all__ = ["BaselineOptions", "attach_comparison", "baseline_from_table", "resolve"]

_KEYS = {"baseline", "tolerance", "allow_version_change", "missing"}
MISSING = ("error", "skip")
"""What a run does when the baseline file does not exist (yet): ``"error"`` (exit 2, the
default) or ``"skip"`` (audit without comparing, with a note: the first night of a schedule)."""


@dataclass(frozen=True)
class BaselineOptions:
    baseline: str | Path | Mapping[str, Any] | Any
    tolerance: Mapping[str, float] = field(default_factory=dict)
    allow_version_change: bool = False
    source: str = "--baseline"
    missing: str = "error"

    def absent(self) -> bool:
        """Whether the baseline is a path that does not exist and ``missing = "skip"``."""
        return (self.missing == "skip" and isinstance(self.baseline, str | Path)
                and not Path(self.baseline).exists())


def baseline_from_table(table: Any, source: str) -> BaselineOptions:
    """The options of a chain's ``[compare]`` table (``source`` names the chain in errors)."""
    from fairaudit.ops.compare import parse_tolerances

    if not isinstance(table, Mapping):
        raise ConfigError(f"{source}: compare: must be a table with baseline = \"audit.json\"")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(f"{source}: compare.{unknown[0]}: unknown key (expected one of "
                          f"{', '.join(sorted(_KEYS))})")
    base = table.get("baseline")
    if not isinstance(base, str) or not base.strip():
        raise ConfigError(f"{source}: compare.baseline: expected the path of the baseline "
                          "audit JSON")
    tol = table.get("tolerance", {})
    if not isinstance(tol, Mapping):
        raise ConfigError(f"{source}: compare.tolerance: expected a table, e.g. "
                          "{balance = 0.02, \"wd[race]\" = 0.01}; got " + repr(tol)[:40])
    allow = table.get("allow_version_change", False)
    if not isinstance(allow, bool):
        raise ConfigError(f"{source}: compare.allow_version_change: expected true or false")
    missing = table.get("missing", "error")
    if missing not in MISSING:
        raise ConfigError(f"{source}: compare.missing: expected 'error' or 'skip'; got "
                          f"{missing!r}")
    return BaselineOptions(base, parse_tolerances(tol, option=f"{source}: compare.tolerance"),
                           allow, source=f"{source} [compare]", missing=missing)


def resolve(cli_baseline: Any, cli_tolerance: Sequence[str] | Mapping[str, float] | None,
            spec: Any = None, *, missing: str | None = None, option: str = "--baseline",
            allow_version_change: bool = False) -> BaselineOptions | None:
    """The baseline of a run: ``cli_baseline`` (``--baseline``, ``baseline=``) over the chain's
    ``[compare]`` table (``spec.compare``); tolerances are merged, the given ones win.
    ``missing`` (``--baseline-missing``) overrides the table's."""
    table = getattr(spec, "compare", None)
    if missing is not None and cli_baseline is None and table is None:
        raise ConfigError(f"{option}-missing: needs {option} (or a [compare] table in the "
                          "chain): without a baseline it would be ignored")
    if cli_baseline is None and table is None and not cli_tolerance:
        return None  # nothing to compare (and fairaudit.ops.compare stays unimported)
    from fairaudit.ops.compare import parse_tolerances

    if missing is not None and missing not in MISSING:
        raise ConfigError(f"{option}-missing: expected 'error' or 'skip'; got {missing!r}")
    from_chain = None if table is None else baseline_from_table(table, spec.source)
    tol_option = "--tolerance" if option == "--baseline" else "tolerance"
    tol = parse_tolerances(cli_tolerance, option=tol_option)
    if cli_baseline is None:
        if from_chain is None:
            if tol:
                raise ConfigError(f"{tol_option} needs {option} (or a [compare] table in the "
                                  "chain)")
            return None
        return BaselineOptions(from_chain.baseline, {**from_chain.tolerance, **tol},
                               from_chain.allow_version_change or allow_version_change,
                               from_chain.source, missing or from_chain.missing)
    merged = {**(from_chain.tolerance if from_chain else {}), **tol}
    return BaselineOptions(cli_baseline, merged, allow_version_change, option,
                           missing or (from_chain.missing if from_chain else "error"))


def check_baseline(options: BaselineOptions | None) -> None:
    """A bad baseline fails before the run: it must be an audit JSON (or be absent, with
    ``missing = "skip"``)."""
    if options is None or options.absent():
        return
    from fairaudit.errors import InputError
    from fairaudit.ops.compare import load_audit

    if isinstance(options.baseline, str | Path) and not Path(options.baseline).exists():
        how = ('[compare] missing = "skip"' if options.source.endswith("[compare]") else
               'baseline_missing="skip"' if options.source == "baseline" else
               "--baseline-missing skip")
        raise InputError(f"{options.baseline}: no such file ({options.source}: the baseline "
                         f"audit JSON); before a first baseline exists, {how} audits without "
                         "comparing")

    load_audit(options.baseline, what="baseline")


def attach_comparison(run: Any, options: BaselineOptions) -> Any:
    """The run with ``doc["comparison"]`` added and its status combined (see module doc); a
    baseline that does not exist yet, with ``missing = "skip"``, adds a note instead."""
    from fairaudit.errors import ConfigError
    from fairaudit.ops.compare import compare, load_audit
    from fairaudit.report.results import AuditRun

    if options.absent():
        note = (f"no baseline yet: {options.baseline} does not exist ({options.source}), so this "
                "run is not compared; promote an approved run by copying its JSON there")
        log.warning("%s", note)
        return AuditRun({**run.doc, "notes": [*run.doc.get("notes", []), note]},
                        ledger_now=run.ledger_now)

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
