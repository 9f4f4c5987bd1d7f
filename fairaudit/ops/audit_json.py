"""Reading a saved audit JSON: size and nesting limits, then the shipped schema.

``render``, ``compare``, ``history``, ``export`` and ``--baseline`` read audit documents through
:func:`read_audit`; a document that does not match ``fairaudit/schema/audit.schema.json`` is an
:class:`~fairaudit.errors.InputError` naming the file and the first problem (its JSON path and
what was expected), never an AttributeError deep in a renderer.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fairaudit.core.limits import MAX_JSON_BYTES, MAX_JSON_DEPTH, check_nesting, read_limited
from fairaudit.errors import InputError

SCHEMA_PATH = Path(__file__).parent.parent / "schema" / "audit.schema.json"


def read_json(path: Path) -> Any:
    """The parsed JSON of ``path`` (refused when too large or nested too deeply)."""
    text = read_limited(path, MAX_JSON_BYTES, "JSON document")
    check_nesting(text, str(path), MAX_JSON_DEPTH)
    try:
        return json.loads(text, parse_int=_bounded_int, parse_float=_finite_float,
                          parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc})") from None
    except _HugeNumber as exc:
        raise InputError(f"{path}: {exc.args[0]}; an audit JSON holds counts and metrics "
                         f"(integers of at most {MAX_INT_DIGITS} digits, finite numbers; "
                         "undefined values are null)") from None
    except RecursionError:  # pragma: no cover - the nesting check comes first
        raise InputError(f"{path}: nested too deeply to read") from None


MAX_INT_DIGITS = 30
"""The longest integer an audit JSON holds (a row count has at most 19 digits); a longer one
is refused while parsing, before Python's 4,300-digit limit raises deep in a renderer."""


class _HugeNumber(Exception):
    pass


def _bounded_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise _HugeNumber(f"a number with {digits:,} digits")
    return int(text)


MAX_ABS_NUMBER = 1e100
"""The largest magnitude of a number in an audit JSON (metrics, shares, objectives are far
smaller); beyond it arithmetic on the numbers (squares, sums) could overflow."""


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or abs(value) > MAX_ABS_NUMBER:
        raise _HugeNumber(f"the number {text[:40]} is out of range (at most "
                          f"{MAX_ABS_NUMBER:g} in magnitude)")
    return value


def _no_constant(text: str) -> Any:
    raise _HugeNumber(f"{text} is not a JSON number")


@functools.lru_cache(maxsize=1)
def _validator() -> Any:
    import jsonschema

    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def schema_problem(doc: Mapping[str, Any]) -> str | None:
    """The first way ``doc`` departs from the audit schema (``path: what``), or None."""
    from jsonschema.exceptions import best_match

    error = best_match(_validator().iter_errors(doc))
    if error is None:
        return shape_problem(doc)
    where = _json_path(error.absolute_path)
    if error.validator == "required":
        missing = next((k for k in error.validator_value if k not in error.instance), None)
        key = f"{where}.{missing}" if where else str(missing)
        return f"{key}: missing (required by the audit JSON schema)"
    if error.validator == "type":
        want = error.validator_value
        want = " or ".join(want) if isinstance(want, list) else want
        return f"{where or '(top level)'}: expected {want}; got {_short(error.instance)}"
    message = error.message if len(error.message) <= 160 else error.message[:157] + "..."
    return f"{where or '(top level)'}: {message}"


def shape_problem(doc: Mapping[str, Any]) -> str | None:
    """The first array whose length disagrees with the arrays it belongs with (what a schema
    cannot say): each labelling's ``composition`` tables are groups x clusters. ``path: what``,
    or None. Run after :func:`schema_problem` (the types are known to be right)."""
    for i, lab in enumerate(doc.get("labellings") or ()):
        for attr, comp in (lab.get("composition") or {}).items():
            where = f"labellings[{i}].composition.{attr}"
            n_g, n_k = len(comp["groups"]), len(comp["clusters"])
            for key, rows, cols in (("counts", n_g, n_k), ("cluster_share", n_g, n_k),
                                    ("population_share", n_g, None), ("noise", n_g, None)):
                value = comp[key]
                if len(value) != rows:
                    return (f"{where}.{key}: {len(value)} rows for the {rows} groups of "
                            f"{where}.groups")
                for r, row in enumerate(value if cols is not None else ()):
                    if len(row) != cols:
                        return (f"{where}.{key}[{r}]: {len(row)} values for the {cols} clusters "
                                f"of {where}.clusters")
    return None


def _json_path(parts: Any) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    kind = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(value), "a number")
    return text if len(text) <= 40 else kind


_NAMED_DATE = re.compile(r"(?<!\d)(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})"
                         r"(?:[T_-](?P<H>\d{2}):?(?P<M>\d{2}):?(?P<S>\d{2}))?(?!\d)")
"""A date in a file name (``runs/2026-11-22.json``), with a time when there is one
(``runs/2026-11-22-031500.json``, as the README's nightly recipe writes them)."""


def run_date(doc: Mapping[str, Any], path: Path | None) -> tuple[str, str]:
    """When an audit ran: ``timing.created`` if the document has it, else a date in the file's
    name (``runs/2026-11-22.json``, midnight UTC; ``runs/2026-11-22-031500.json``, as the
    README's nightly recipe writes them, with its time, UTC),
    else the file's modification time; and which of the three it is."""
    created = (doc.get("timing") or {}).get("created")
    if isinstance(created, str) and created:
        try:
            dt.datetime.fromisoformat(created.replace("Z", "+00:00"))
            return created, "timing.created"
        except ValueError:
            pass
    if path is None:
        raise InputError("an audit document without timing.created and without a file: no date")
    named = _NAMED_DATE.search(path.name)
    if named:
        try:
            day = dt.date(*(int(named[k]) for k in ("y", "m", "d")))
        except ValueError:  # 2026-13-45: not a date
            day = None
        if day is not None:
            at = dt.time()
            if named["H"] is not None:  # 2026-11-22-031500 / 2026-11-22T03:15:00: the time too
                with contextlib.suppress(ValueError):
                    at = dt.time(int(named["H"]), int(named["M"]), int(named["S"]))
            return f"{day.isoformat()}T{at.isoformat()}Z", "file name"
    ts = dt.datetime.fromtimestamp(path.stat().st_mtime, tz=dt.UTC).replace(microsecond=0)
    return ts.isoformat().replace("+00:00", "Z"), "file mtime"
