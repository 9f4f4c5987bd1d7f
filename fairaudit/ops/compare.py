"""Compare two audits: what changed since the baseline, and is the change real?

``fairaudit compare BASELINE.json CURRENT.json`` and ``fairaudit audit … --baseline BASE.json``
both call :func:`compare`. For every result present in both audits (same labelling, metric and
attribute) it reports the baseline and current values, the change ``delta = current − baseline``
with a confidence interval for the change, whether that interval excludes 0 (``significant``) and
whether the change is ``better`` or ``worse`` given the metric's direction.

The interval for a change is MOVER (method of variance estimates recovery; Newcombe 1998, Zou &
Donner 2008). It needs only each audit's point estimate and its own interval, so it works with
whatever interval method the audits used, and no replicates are stored in the JSON. The two runs
are treated as independent samples (a nightly audit of a new extract). For ``d = c − b``::

    L = d − sqrt((c − l_c)² + (u_b − b)²)
    U = d + sqrt((u_c − c)² + (b − l_b)²)

A metric without an interval in either audit gets ``ci = null`` and ``significant = null``: it is
reported, never judged significant by accident, and never gated.

Gate: a *headline* change fails when it is significantly worse by more than its tolerance, i.e.
its whole interval lies beyond ``−tolerance`` in the bad direction (``U < −tol`` for
higher-is-better, ``L > tol`` for lower-is-better; default tolerance 0). Two audits that cannot
be compared (other attributes, auditor parameters, versions, interval methods or levels, min_cell)
raise :class:`IncomparableError` (exit 2) naming every reason.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairaudit.errors import ConfigError, InputError
from fairaudit.report.values import check_document, finite

__all__ = [
    "COMPARE_SCHEMA_VERSION",
    "IncomparableError",
    "compare",
    "load_audit",
    "mover_interval",
    "parse_tolerances",
]

COMPARE_SCHEMA_VERSION = "1.0"
MOVER_REFERENCE = (
    "MOVER (method of variance estimates recovery): Newcombe, Stat Med 1998; Zou & Donner, "
    "Stat Med 2008 — each audit's own estimate and interval, the two runs taken as independent"
)


class IncomparableError(InputError):
    """The two audits cannot be compared; ``reasons`` lists why (exit 2)."""

    def __init__(self, reasons: Sequence[str], names: tuple[str, str] | None = None):
        self.reasons = tuple(reasons)
        which = f" (baseline {names[0]}, current {names[1]})" if names else ""
        lines = [f"the two audits cannot be compared{which}:"] + [f"  - {r}" for r in self.reasons]
        super().__init__("\n".join(lines))


def privacy_mode(doc: Mapping[str, Any]) -> str:
    """``"dp"`` for a published release, else ``"exact"`` (documents before the privacy block
    hold exact values)."""
    return "dp" if (doc.get("privacy") or {}).get("mode") == "dp" else "exact"


def check_one_mode(named: Sequence[tuple[str, Mapping[str, Any]]], what: str) -> None:
    """Refuse to mix published (differentially private) releases with exact audits: a
    published number is only meaningful against another release, and setting it beside exact
    values would publish those. ``named``: (file or label, document) pairs; ``what``: the
    command. :class:`InputError` (exit 2) naming the files of each mode."""
    by_mode: dict[str, list[str]] = {}
    for name, doc in named:
        by_mode.setdefault(privacy_mode(doc), []).append(name)
    if len(by_mode) > 1:
        raise InputError(
            f"{what}: mixes published (--publish, differentially private) releases "
            f"({', '.join(by_mode['dp'])}) with exact audits ({', '.join(by_mode['exact'])}); "
            "a published release is only meaningful against another release — give audits of "
            "one kind")


# ----------------------------------------------------------------------------- loading
def load_audit(source: str | Path | Mapping[str, Any], *, what: str = "audit") -> dict[str, Any]:
    """An audit JSON document from a path or a mapping (an :class:`AuditRun` ``doc``).

    Raises :class:`InputError` naming the file when it is missing, not JSON, or not a fairaudit
    audit document (a comparison or history file, say)."""
    from fairaudit.ops.audit_json import read_json, schema_problem

    if isinstance(source, Mapping):
        doc, where = dict(source), f"the {what} document"
    elif hasattr(source, "doc") and isinstance(source.doc, Mapping):
        doc, where = dict(source.doc), f"the {what} run"
    elif isinstance(source, str | os.PathLike) and os.fspath(source):
        p = Path(source)
        where = str(p)
        if not p.exists():
            raise InputError(f"{p}: no such file (expected the {what} JSON written by "
                             "`fairaudit audit --json`)")
        doc = read_json(p)
    else:
        raise ConfigError(f"{what}: expected the path of an audit JSON, its document (a mapping) "
                          f"or an AuditRun; got {type(source).__name__} {source!r:.40}")
    if isinstance(doc, Mapping) and doc.get("kind") in ("fairaudit-comparison",
                                                        "fairaudit-history"):
        raise InputError(f"{where}: this is a {doc['kind']} file, not an audit JSON")
    try:
        check_document(doc)
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None
    problem = schema_problem(doc)
    if problem is not None:
        raise InputError(f"{where}: not a valid fairaudit audit JSON document: {problem}")
    return dict(doc)


# ----------------------------------------------------------------------------- tolerances
_TOL = re.compile(r"^\s*(?P<metric>\*|[A-Za-z0-9_.\-]+)(?:\[(?P<attr>[^\]]+)\])?\s*=\s*(?P<v>.+)$")


def parse_tolerances(items: Sequence[str] | Mapping[str, float] | None, *,
                     option: str = "--tolerance") -> dict[str, float]:
    """``["balance=0.02", "wd[sex]=0.01", "*=0.005"]`` (or a mapping) -> ``{key: delta}``.

    Keys are ``METRIC``, ``METRIC[ATTRIBUTE]`` or ``*`` (every headline metric); the most
    specific key wins. A tolerance must be a finite number >= 0."""
    if not items:
        return {}
    pairs = list(items.items()) if isinstance(items, Mapping) else []
    if not isinstance(items, Mapping):
        for text in items:
            m = _TOL.match(str(text))
            if not m:
                raise ConfigError(f"{option} {text!r}: expected METRIC=DELTA, METRIC[ATTR]=DELTA "
                                  "or *=DELTA, e.g. balance=0.02")
            key = m["metric"] + (f"[{m['attr']}]" if m["attr"] else "")
            pairs.append((key, m["v"]))
    out: dict[str, float] = {}
    for key, v in pairs:
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise ConfigError(f"{option} {key}: expected a number; got {v!r}") from None
        if not math.isfinite(x) or x < 0:
            raise ConfigError(f"{option} {key}: the tolerance must be a finite number >= 0 "
                              f"(a change of the metric); got {v!r}")
        out[str(key).strip()] = x
    return out


def _tolerance_for(tol: Mapping[str, float], metric: str, attribute: str | None) -> float:
    if attribute is not None and f"{metric}[{attribute}]" in tol:
        return tol[f"{metric}[{attribute}]"]
    return tol.get(metric, tol.get("*", 0.0))


# ----------------------------------------------------------------------------- the interval
def mover_interval(b: float, b_ci: Sequence[float], c: float, c_ci: Sequence[float]
                   ) -> tuple[float, float]:
    """MOVER interval for ``c − b`` from two independent estimates and their intervals.

    An interval that does not contain its own estimate (a biased percentile bootstrap) is widened
    to contain it first, so the distance from estimate to bound is never negative."""
    lb, ub = min(b_ci[0], b), max(b_ci[1], b)
    lc, uc = min(c_ci[0], c), max(c_ci[1], c)
    d = c - b
    lower = d - math.sqrt((c - lc) ** 2 + (ub - b) ** 2)
    upper = d + math.sqrt((uc - c) ** 2 + (b - lb) ** 2)
    return lower, upper


# ----------------------------------------------------------------------------- comparability
def interval_of(doc: Mapping[str, Any], r: Mapping[str, Any]) -> tuple[str | None, float | None]:
    """(method, level) of result ``r``'s interval: ``detail.interval`` when the audit wrote it,
    else the row bootstrap of fairaudit 0.1 (``chain.options.bootstrap`` replicates)."""
    if r.get("ci") is None:
        return None, None
    info = (r.get("detail") or {}).get("interval") or {}
    opts = (doc.get("chain") or {}).get("options") or {}
    method = info.get("method") or ("bootstrap-percentile" if opts.get("bootstrap") else None)
    level = finite(info.get("level")) or finite(opts.get("ci_level"))
    return method, level


def versions_of(doc: Mapping[str, Any]) -> dict[str, str]:
    out = {"fairaudit": str((doc.get("tool") or {}).get("version"))}
    for p in (doc.get("environment") or {}).get("plugins") or []:
        if p.get("package"):
            out.setdefault(str(p["package"]), str(p.get("version")))
    return out


def _auditors(doc: Mapping[str, Any]) -> dict[str, Any]:
    return {str(s.get("name") or s.get("use")): {"use": s.get("use"), "params": s.get("params")}
            for s in (doc.get("chain") or {}).get("audit") or []}


def incomparable_reasons(base: Mapping[str, Any], cur: Mapping[str, Any], *,
                         allow_version_change: bool = False) -> list[str]:
    """Every reason the two audits cannot be compared (empty when they can)."""
    reasons: list[str] = []
    ba, ca = list(base["input"].get("attributes") or []), list(cur["input"].get("attributes") or [])
    if set(ba) != set(ca):
        reasons.append(f"other attributes: the baseline audits {ba}, the current run {ca} "
                       "(audit the same --sensitive columns)")
    b_aud, c_aud = _auditors(base), _auditors(cur)
    for name in sorted(set(b_aud) & set(c_aud)):
        if b_aud[name] != c_aud[name]:
            reasons.append(f"other metric definitions: auditor {name!r} is {b_aud[name]} in the "
                           f"baseline and {c_aud[name]} in the current run")
    if not allow_version_change:
        bv, cv = versions_of(base), versions_of(cur)
        for pkg in sorted(set(bv) & set(cv)):
            if bv[pkg] != cv[pkg]:
                reasons.append(f"other versions: {pkg} {bv[pkg]} (baseline) vs {cv[pkg]} "
                               "(current) may define metrics differently; re-run the baseline "
                               "with this version or pass --allow-version-change")
    b_opt = (base.get("chain") or {}).get("options") or {}
    c_opt = (cur.get("chain") or {}).get("options") or {}
    if b_opt.get("min_cell") != c_opt.get("min_cell"):
        reasons.append(f"other min_cell: {b_opt.get('min_cell')} (baseline) vs "
                       f"{c_opt.get('min_cell')} (current) changes which groups are judged")
    b_res = {_key(r): r for r in base["results"]}
    seen: set[tuple[Any, ...]] = set()
    bl0, cl0 = finite(b_opt.get("ci_level")), finite(c_opt.get("ci_level"))
    if bl0 is not None and cl0 is not None and abs(bl0 - cl0) > 1e-12:
        seen.add(("lvl", bl0, cl0))
        reasons.append(f"other CI levels: {bl0:g} (baseline) vs {cl0:g} (current)")
    for r in cur["results"]:
        other = b_res.get(_key(r))
        if other is None:
            continue
        bm, bl = interval_of(base, other)
        cm, cl = interval_of(cur, r)
        if bm is None or cm is None:
            continue
        if bm != cm and ("method", bm, cm) not in seen:
            seen.add(("method", bm, cm))
            reasons.append(f"other interval methods: {bm!r} (baseline) vs {cm!r} (current), "
                           f"e.g. for {r['metric']}")
        if bl is not None and cl is not None and abs(bl - cl) > 1e-12 and ("lvl", bl, cl) not in seen:
            seen.add(("lvl", bl, cl))
            reasons.append(f"other CI levels: {bl:g} (baseline) vs {cl:g} (current)")
    return reasons


# ----------------------------------------------------------------------------- comparing
def _key(r: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    return (r.get("labelling"), r.get("metric"), r.get("attribute"))


def _verdict(ci: Sequence[float] | None, direction: str | None) -> str | None:
    """``better`` / ``worse`` from the interval of the change, never from the point estimate
    alone: ``within noise`` when the interval holds 0; None without an interval."""
    if ci is None or direction not in ("higher_is_better", "lower_is_better"):
        return None
    if ci[0] <= 0 <= ci[1]:
        return "within noise"
    up = ci[0] > 0
    return "better" if up == (direction == "higher_is_better") else "worse"


@dataclass(frozen=True)
class _Side:
    value: float | None
    ci: tuple[float, float] | None


def _side(r: Mapping[str, Any]) -> _Side:
    v = finite(r.get("value"))
    ci = r.get("ci")
    if ci is None or len(ci) != 2 or finite(ci[0]) is None or finite(ci[1]) is None:
        return _Side(v, None)
    return _Side(v, (float(ci[0]), float(ci[1])))


def _change(br: Mapping[str, Any], cr: Mapping[str, Any], tol: Mapping[str, float],
            alignment: Any) -> dict[str, Any]:
    b, c = _side(br), _side(cr)
    direction = cr.get("direction") or br.get("direction")
    headline = bool(cr.get("headline"))
    delta = None if b.value is None or c.value is None else c.value - b.value
    ci = None
    why = None
    if delta is None:
        why = ("the metric is undefined in the "
               + ("baseline" if b.value is None else "current") + " run")
    elif b.ci is None or c.ci is None:
        which = [n for n, s in (("baseline", b), ("current", c)) if s.ci is None]
        why = f"no confidence interval in the {' and '.join(which)} audit"
    else:
        lo, hi = mover_interval(b.value, b.ci, c.value, c.ci)
        ci = [lo, hi]
    significant = None if ci is None else bool(ci[0] > 0 or ci[1] < 0)
    verdict = _verdict(ci, direction)
    tolerance = _tolerance_for(tol, str(cr.get("metric")), cr.get("attribute"))
    gate = None
    if headline and ci is not None and direction in ("higher_is_better", "lower_is_better"):
        worse = ci[1] < -tolerance if direction == "higher_is_better" else ci[0] > tolerance
        gate = "fail" if worse else "pass"
    out: dict[str, Any] = {
        "labelling": cr.get("labelling"),
        "metric": cr.get("metric"),
        "attribute": cr.get("attribute"),
        "auditor": cr.get("auditor"),
        "headline": headline,
        "metric_direction": direction,
        "baseline": b.value,
        "baseline_ci": list(b.ci) if b.ci else None,
        "current": c.value,
        "current_ci": list(c.ci) if c.ci else None,
        "delta": delta,
        "ci": ci,
        "significant": significant,
        "direction": verdict,
        "tolerance": tolerance if headline else None,
        "gate": gate,
        "note": why,
        "clusters": _cluster_changes(br, cr, alignment),
    }
    return out


def _cluster_changes(br: Mapping[str, Any], cr: Mapping[str, Any], alignment: Any
                     ) -> list[dict[str, Any]]:
    if alignment is None:
        return []
    bvals = {str(r.get("cluster")): r for r in br.get("per_cluster") or [] if "value" in r}
    cvals = {str(r.get("cluster")): r for r in cr.get("per_cluster") or [] if "value" in r}
    out = []
    for bk, ck, _ in alignment.pairs:
        brow, crow = bvals.get(str(bk)), cvals.get(str(ck))
        if brow is None or crow is None:
            continue
        bv, cv = finite(brow.get("value")), finite(crow.get("value"))
        out.append({"baseline_cluster": bk, "current_cluster": ck, "baseline": bv, "current": cv,
                    "delta": None if bv is None or cv is None else cv - bv})
    return out


def _run_info(doc: Mapping[str, Any], source: Any) -> dict[str, Any]:
    inp = doc.get("input") or {}
    return {
        "file": str(source) if isinstance(source, str | Path) else None,
        "created": (doc.get("timing") or {}).get("created"),
        "input_path": inp.get("path"),
        "fingerprint": inp.get("fingerprint"),
        "rows_audited": inp.get("rows_audited"),
        "status": doc.get("status"),
        "tool_version": (doc.get("tool") or {}).get("version"),
        "privacy": privacy_summary(doc),
    }


def privacy_summary(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The mode of an audit, and for a published release its mechanism, epsilon and delta (what
    the compare and history pages show of each run)."""
    p = doc.get("privacy") or {}
    if privacy_mode(doc) != "dp":
        return {"mode": "exact"}
    return {"mode": "dp", "mechanism": p.get("mechanism"), "epsilon": p.get("epsilon"),
            "delta": p.get("delta")}


def compare(baseline: str | Path | Mapping[str, Any], current: str | Path | Mapping[str, Any], *,
            tolerance: Sequence[str] | Mapping[str, float] | None = None,
            allow_version_change: bool = False) -> dict[str, Any]:
    """Compare two audits (paths, documents or runs); returns the comparison document.

    Raises :class:`InputError` when a file is not an audit JSON and :class:`IncomparableError`
    when the audits cannot be compared (both exit 2 on the CLI)."""
    from fairaudit import __version__
    from fairaudit.ops.align import align_clusters

    tol = parse_tolerances(tolerance)
    base = load_audit(baseline, what="baseline")
    cur = load_audit(current, what="current")
    names = (str(baseline) if isinstance(baseline, str | Path) else "the baseline",
             str(current) if isinstance(current, str | Path) else "the current run")
    check_one_mode([(names[0], base), (names[1], cur)], "compare")
    reasons = incomparable_reasons(base, cur, allow_version_change=allow_version_change)
    if reasons:
        raise IncomparableError(reasons, names)
    b_labs = {str(lab.get("name")): lab for lab in base["labellings"]}
    c_labs = {str(lab.get("name")): lab for lab in cur["labellings"]}
    alignments = {n: align_clusters(b_labs[n], c_labs[n]) for n in c_labs if n in b_labs}
    b_res = {_key(r): r for r in base["results"]}
    c_keys = {_key(r) for r in cur["results"]}
    if not any(k in b_res for k in c_keys):
        raise IncomparableError([
            "no result in common: the baseline has labellings "
            f"{sorted(b_labs)} and the current run {sorted(c_labs)} (same --labels column or "
            "clusterer names, and the same auditors, are needed)"], names)
    changes = [
        _change(b_res[_key(r)], r, tol, alignments.get(str(r.get("labelling"))))
        for r in cur["results"] if _key(r) in b_res
    ]
    only_b = [dict(zip(("labelling", "metric", "attribute"), k, strict=True),
                   headline=bool(b_res[k].get("headline"))) for k in b_res if k not in c_keys]
    only_c = [dict(zip(("labelling", "metric", "attribute"), _key(r), strict=True),
                   headline=bool(r.get("headline"))) for r in cur["results"] if _key(r) not in b_res]
    notes: list[str] = []
    methods = sorted({m for d in (base, cur) for r in d["results"]
                      for m in [interval_of(d, r)[0]] if m})
    no_ci = [c for c in changes if c["ci"] is None]
    if no_ci:
        notes.append(f"{len(no_ci)} change(s) have no interval (a metric without a confidence "
                     "interval, or undefined in one run): reported, never called significant, "
                     "never gated")
    lost = [o for o in only_b if o["headline"]]
    if lost:
        notes.append(f"{len(lost)} headline result(s) of the baseline are missing from the "
                     "current run: " + ", ".join(_label(o) for o in lost[:10]))
    undefined = [c for c in changes if c["headline"] and c["current"] is None
                 and c["baseline"] is not None]
    if undefined:
        notes.append("headline metric(s) undefined in the current run but not in the baseline: "
                     + ", ".join(_label(c) for c in undefined[:10]))
    for n in sorted(set(b_labs) - set(c_labs)):
        notes.append(f"labelling {n!r} is only in the baseline")
    for n in sorted(set(c_labs) - set(b_labs)):
        notes.append(f"labelling {n!r} is only in the current run")
    if base["input"].get("fingerprint") and base["input"].get("fingerprint") == \
            cur["input"].get("fingerprint"):
        notes.append("both audits read the same input (same fingerprint)")
    failed = [c for c in changes if c["gate"] == "fail"]
    status = "fail" if failed else ("warn" if lost or undefined else "pass")
    level = next((lv for d in (cur, base) for r in d["results"]
                  for lv in [interval_of(d, r)[1]] if lv is not None), None)
    return {
        "schema_version": COMPARE_SCHEMA_VERSION,
        "kind": "fairaudit-comparison",
        "tool": {"name": "fairaudit", "version": __version__},
        "status": status,
        "baseline": _run_info(base, baseline),
        "current": _run_info(cur, current),
        "interval": {"method": "mover", "level": level, "audit_methods": methods,
                     "reference": MOVER_REFERENCE},
        "gate": {"rule": "a headline metric fails when its change is significantly worse by "
                         "more than the tolerance (the whole interval of the change lies beyond "
                         "-tolerance in the bad direction)",
                 "tolerances": tol, "failed": len(failed)},
        "alignment": [a.to_json() for a in alignments.values()],
        "changes": changes,
        "only_in_baseline": only_b,
        "only_in_current": only_c,
        "summary": {
            "compared": len(changes),
            "significant": sum(1 for c in changes if c["significant"]),
            "better": sum(1 for c in changes if c["significant"] and c["direction"] == "better"),
            "worse": sum(1 for c in changes if c["significant"] and c["direction"] == "worse"),
            "without_ci": len(no_ci),
            "gate_failures": len(failed),
        },
        "notes": notes,
    }


def _label(c: Mapping[str, Any]) -> str:
    attr = f"[{c['attribute']}]" if c.get("attribute") else ""
    return f"{c['labelling']} {c['metric']}{attr}"


def exit_code(comparison: Mapping[str, Any]) -> int:
    """1 when a headline gate failed, else 0."""
    return 1 if comparison.get("status") == "fail" else 0
