"""The privacy ledger: per data source, its budget and every release it paid for
(docs/privacy.md, "The ledger").

One JSON file (format ``fairaudit-ledger``, version 2), validated whole on every read: a field
missing, unknown, of the wrong type, negative or not finite, a key twice, an empty file or
another version is refused (exit 2) naming the file and the field, and the file is left as it
is. Version 1 (fairaudit before issue 34) is read and upgraded on the next write.

* ``sources[NAME].budget``: the total epsilon the source may spend, set by its first release
  and changed only by ``fairaudit ledger raise`` / ``lower`` (each change in
  ``budget_history`` with when, from, to and why).
* ``sources[NAME].releases``: per release its creation time, the input it read, the data's
  fingerprint and sketch (:mod:`fairaudit.privacy.fingerprint`), a hash of the options, the
  epsilon and delta OpenDP's accounting gave, and the published document.

The path is resolved (``~``, ``.``/``..``, symbolic links) before it is locked or replaced, so a
link and its target are one ledger and the link stays a link; a ledger that does not exist is
created only at the default location or when asked (``--new-ledger``). Runs that overlap take
an exclusive lock (``filelock``: ``fcntl`` on POSIX, ``msvcrt`` on Windows) on ``LEDGER.lock``
beside the real file for the whole release; the file is replaced atomically (a temporary file
in the same folder, ``fsync``, ``os.replace``). The ledger holds fingerprints and sketches of
the data: keep it with the data (it is created readable by its owner only), not with the
reports.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fairaudit.core.limits import read_limited
from fairaudit.errors import ConfigError

log = logging.getLogger(__name__)

FORMAT = "fairaudit-ledger"
VERSION = 2
MAX_LEDGER_BYTES = 256 * 1024 * 1024
"""A ledger holds one small entry per release: 256 MiB is far more than years of them."""
_TOP = {"format", "version", "sources"}
_SOURCE = {"budget", "budget_history", "releases"}
_CHANGE = {"at", "from", "to", "how", "reason"}
_RELEASE = {"created", "input", "fingerprint", "options", "epsilon", "delta", "sketch",
            "document"}
_NEW = "--new-ledger ([privacy] new_ledger = true, new_ledger=True)"


def default_path() -> Path:
    """``$XDG_STATE_HOME/fairaudit/ledger.json`` (``~/.local/state/fairaudit/ledger.json``)."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "fairaudit" / "ledger.json"


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------------------- validation
class _Bad(Exception):
    """A field of the ledger is wrong: ``(field, problem)``."""


def _number(v: Any, where: str, *, lo: float, lo_open: bool, hi: float | None = None,
            null: bool = False) -> float | None:
    if v is None and null:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or \
            v < lo or (lo_open and v == lo) or (hi is not None and v >= hi):
        bound = f"> {lo:g}" if lo_open else f">= {lo:g}"
        if hi is not None:
            bound += f" and < {hi:g}"
        raise _Bad(where, f"must be a finite number {bound}{' or null' if null else ''}; "
                   f"got {v!r}")
    return float(v)


def _fields(d: Any, where: str, expected: set[str], what: str) -> None:
    if not isinstance(d, dict):
        raise _Bad(where, f"must be an object ({what}); got {type(d).__name__}")
    for k in sorted(set(d) - expected, key=str):
        raise _Bad(where, f"unknown field {k!r} (a {what} has {', '.join(sorted(expected))})")
    for k in sorted(expected - set(d)):
        raise _Bad(where, f"missing {k!r} (a {what} has {', '.join(sorted(expected))})")


def _text(v: Any, where: str, *, null: bool = False) -> None:
    if not (isinstance(v, str) and v) and not (v is None and null):
        raise _Bad(where, f"must be a non-empty text{' or null' if null else ''}; got {v!r}")


def _check_release(r: Any, where: str) -> None:
    from fairaudit.privacy.fingerprint import ColumnSketch

    _fields(r, where, _RELEASE, "release")
    _text(r["created"], f"{where}.created")
    _text(r["input"], f"{where}.input", null=True)
    _text(r["fingerprint"], f"{where}.fingerprint")
    _text(r["options"], f"{where}.options")
    _number(r["epsilon"], f"{where}.epsilon", lo=0.0, lo_open=True)
    _number(r["delta"], f"{where}.delta", lo=0.0, lo_open=False, hi=1.0)
    if not isinstance(r["sketch"], list):
        raise _Bad(f"{where}.sketch", "must be a list of column sketches")
    for j, s in enumerate(r["sketch"]):
        try:
            ColumnSketch.from_json(s)
        except ValueError as exc:
            raise _Bad(f"{where}.sketch[{j}]", str(exc)) from None
    if not isinstance(r["document"], dict):
        raise _Bad(f"{where}.document", "must be an object (the published document)")


def _check(data: Any) -> None:
    """Every field of a version-2 ledger, or :class:`_Bad` naming the first wrong one."""
    if not isinstance(data, dict):
        raise _Bad("(top level)", f"expected a JSON object; got {type(data).__name__}")
    _fields(data, "(top level)", _TOP, "ledger")
    if data["format"] != FORMAT:
        raise _Bad("format", f"must be {FORMAT!r}; got {data['format']!r}")
    if not isinstance(data["sources"], dict):
        raise _Bad("sources", "must be an object: source name -> source")
    for key, src in data["sources"].items():
        where = f"sources[{key!r}]"
        _fields(src, where, _SOURCE, "source")
        _number(src["budget"], f"{where}.budget", lo=0.0, lo_open=True, null=True)
        if not isinstance(src["budget_history"], list):
            raise _Bad(f"{where}.budget_history", "must be a list of budget changes")
        for i, ch in enumerate(src["budget_history"]):
            w = f"{where}.budget_history[{i}]"
            _fields(ch, w, _CHANGE, "budget change")
            _text(ch["at"], f"{w}.at")
            _number(ch["from"], f"{w}.from", lo=0.0, lo_open=True, null=True)
            _number(ch["to"], f"{w}.to", lo=0.0, lo_open=True)
            _text(ch["how"], f"{w}.how")
            _text(ch["reason"], f"{w}.reason", null=True)
        if not isinstance(src["releases"], list):
            raise _Bad(f"{where}.releases", "must be a list of releases")
        for i, r in enumerate(src["releases"]):
            _check_release(r, f"{where}.releases[{i}]")


def _upgrade_v1(data: dict[str, Any]) -> dict[str, Any]:
    """A version-1 ledger (sources -> releases, an optional budget) as version 2; its fields
    are checked as strictly. Its fingerprints hashed file bytes: they never match a version-2
    fingerprint, so data released under version 1 is charged again when published again."""
    if set(data) != {"version", "sources"} or not isinstance(data["sources"], dict):
        raise _Bad("(top level)", "a version-1 ledger has exactly version and sources")
    out: dict[str, Any] = {"format": FORMAT, "version": VERSION, "sources": {}}
    for key, src in data["sources"].items():
        where = f"sources[{key!r}]"
        if not isinstance(src, dict) or not set(src) <= {"releases", "budget"} or \
                not isinstance(src.get("releases"), list):
            raise _Bad(where, "a version-1 source has releases and an optional budget")
        budget = _number(src.get("budget"), f"{where}.budget", lo=0.0, lo_open=True, null=True)
        releases = []
        for i, r in enumerate(src["releases"]):
            w = f"{where}.releases[{i}]"
            old = {"created", "fingerprint", "options", "epsilon", "delta", "document"}
            if not isinstance(r, dict) or not set(r) <= old or \
                    not {"created", "fingerprint", "options", "epsilon", "document"} <= set(r):
                raise _Bad(w, "a version-1 release has created, fingerprint, options, epsilon, "
                           "document and an optional delta")
            releases.append({"created": r["created"], "input": None,
                             "fingerprint": r["fingerprint"], "options": r["options"],
                             "epsilon": r["epsilon"], "delta": r.get("delta", 0.0),
                             "sketch": [], "document": r["document"]})
        history = [] if budget is None else [
            {"at": releases[0]["created"] if releases else now(), "from": None, "to": budget,
             "how": "recorded by a version-1 ledger", "reason": None}]
        out["sources"][key] = {"budget": budget, "budget_history": history,
                               "releases": releases}
    return out


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _Bad("(object)", f"the key {k!r} twice in one object")
        out[k] = v
    return out


def read(path: Path) -> dict[str, Any]:
    """The ledger at ``path`` (a regular file), checked; :class:`ConfigError` naming the file
    and the field otherwise (the file is not touched)."""
    def bad(problem: str) -> ConfigError:
        return ConfigError(f"ledger {path}: {problem}; it is left untouched — restore it from a "
                           "backup, or name another ledger (--ledger)")

    try:
        raw = read_limited(path, MAX_LEDGER_BYTES, "privacy ledger", ConfigError).encode("utf-8")
    except UnicodeError as exc:
        raise bad(f"not UTF-8 ({exc})") from None
    except ConfigError as exc:  # too large, not a regular file, not UTF-8
        raise bad(str(exc)) from None
    except OSError as exc:
        raise bad(f"cannot be read ({exc.strerror or exc})") from None
    if not raw.strip():
        raise bad(f"empty ({len(raw)} bytes): not a fairaudit ledger (a ledger is never empty; "
                  "a new one is written whole)")
    try:
        data = json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except _Bad as exc:
        raise bad(f"{exc.args[1]}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise bad(f"not JSON ({exc})") from None
    try:
        version = data.get("version") if isinstance(data, dict) else None
        if version == 1 and not isinstance(version, bool) and "format" not in data:
            data = _upgrade_v1(data)
            log.info("ledger %s: version 1, upgraded to version %d on its next write", path,
                     VERSION)
        elif isinstance(data, dict) and (version != VERSION or isinstance(version, bool)):
            raise _Bad("version", f"is {version!r}; this fairaudit reads version {VERSION} "
                       "(and upgrades version 1)")
        _check(data)
    except _Bad as exc:
        field, problem = exc.args
        raise bad(f"{field}: {problem}") from None
    return data


# ---------------------------------------------------------------------------- the file
def resolve(path: str | Path | None, *, create: bool) -> tuple[Path, Path, bool]:
    """``(as given, the real file, whether it exists)``: ``~``, ``.``/``..`` and every
    symbolic link resolved. :class:`ConfigError` for a link to nothing, a loop, something that
    is not a regular file, a missing ledger not asked for (``create``), a missing folder."""
    default = path is None
    given = default_path() if default else Path(os.path.expanduser(str(path)))
    try:
        real = Path(os.path.realpath(given, strict=True))
    except FileNotFoundError:
        real = Path(os.path.realpath(given))
        if os.path.islink(given):
            raise ConfigError(
                f"ledger {given}: a symbolic link to {real}, which does not exist; a link is "
                "never followed into a new ledger — point it at the ledger, or name the real "
                "path") from None
        if not real.parent.is_dir():
            if not default:
                raise ConfigError(
                    f"ledger {given}: its folder {real.parent} does not exist; create it, or "
                    "name an existing ledger (--ledger, [privacy] ledger, ledger=)") from None
            try:
                real.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ConfigError(f"ledger {given}: its folder cannot be created ({exc})"
                                  ) from None
        if not (create or default):
            raise ConfigError(
                f"ledger {given} does not exist: a missing ledger would start every source's "
                f"budget afresh, so it is created only when asked — add {_NEW} to start a new "
                "ledger there, or name the existing one") from None
        return given, real, False
    except OSError as exc:  # a loop of links, a path through a file
        raise ConfigError(f"ledger {given}: cannot be resolved ({exc.strerror or exc}); name "
                          "the ledger's real path") from None
    if not real.is_file():
        raise ConfigError(f"ledger {given}: {real} is not a regular file; name a ledger file")
    return given, real, True


class Ledger:
    """An open, locked ledger (use :func:`open_ledger`)."""

    def __init__(self, path: Path, given: Path, data: dict[str, Any], *,
                 new: bool = False) -> None:
        self.path = path
        """The real file (links resolved)."""
        self.given = given
        self.data = data
        self.new = new
        """No ledger was there: the first write starts one (every source a fresh budget)."""

    # ---------------------------------------------------------------- reading
    def keys(self) -> list[str]:
        return list(self.data["sources"])

    def source(self, key: str) -> dict[str, Any] | None:
        return self.data["sources"].get(key)

    def releases(self, key: str) -> list[dict[str, Any]]:
        src = self.source(key)
        return [] if src is None else src["releases"]

    def spent(self, key: str) -> float:
        return math.fsum(float(r["epsilon"]) for r in self.releases(key))

    def spent_delta(self, key: str) -> float:
        return math.fsum(float(r["delta"]) for r in self.releases(key))

    def budget(self, key: str) -> float | None:
        src = self.source(key)
        return None if src is None else src["budget"]

    def find(self, key: str, fingerprint: str, options: str) -> dict[str, Any] | None:
        """The stored release of the same data and options under ``key``."""
        for r in self.releases(key):
            if r["fingerprint"] == fingerprint and r["options"] == options:
                return r
        return None

    # ---------------------------------------------------------------- writing
    def _source(self, key: str) -> dict[str, Any]:
        return self.data["sources"].setdefault(
            key, {"budget": None, "budget_history": [], "releases": []})

    def set_budget(self, key: str, to: float, *, how: str, reason: str | None = None) -> None:
        src = self._source(key)
        src["budget_history"].append({"at": now(), "from": src["budget"], "to": float(to),
                                      "how": how, "reason": reason})
        src["budget"] = float(to)

    def add_release(self, key: str, entry: Mapping[str, Any]) -> None:
        self._source(key)["releases"].append(dict(entry))

    def write(self) -> None:
        """Replace the file atomically through the one safe writer (the real file: a link to it
        stays a link; never a device, FIFO or folder); a new ledger is its owner's only."""
        from fairaudit.report.outputs import write_output

        text = json.dumps(self.data, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
        write_output(self.path, text)
        if self.new:
            with contextlib.suppress(OSError):
                os.chmod(self.path, 0o600)
            log.warning("ledger %s: a new ledger was started (there was none): its sources "
                        "start with fresh budgets. A scheduled job must keep this file between "
                        "runs (a container's or CI runner's home does not): point --ledger at "
                        "lasting storage", self.given)
            self.new = False
        with contextlib.suppress(OSError):  # the rename itself survives a crash
            folder = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(folder)
            finally:
                os.close(folder)


@contextlib.contextmanager
def open_ledger(path: str | Path | None, *, create: bool = False,
                wait: bool = True) -> Iterator[Ledger]:
    """The ledger at ``path`` (``None``: the default location, created when missing), locked
    exclusively until the block ends; ``create``: a missing ledger may be started there
    (``--new-ledger``). ``wait=False``: refuse instead of waiting for another run's lock."""
    from filelock import FileLock, Timeout

    from fairaudit.report.outputs import regular_target

    given, real, exists = resolve(path, create=create)
    lock_path = real.with_name(real.name + ".lock")
    regular_target("ledger", real)  # never a device, FIFO or folder (nor its .lock: a FIFO
    regular_target("ledger lock", lock_path)  # there would block the lock below forever)
    lock = FileLock(str(lock_path), thread_local=False)
    try:
        try:
            lock.acquire(timeout=0.5)
        except Timeout:
            if not wait:
                raise ConfigError(f"ledger {given} is locked by another release ({lock_path})"
                                  ) from None
            log.warning("ledger %s is locked by another release (%s); waiting for it", given,
                        lock_path)
            lock.acquire()
    except OSError as exc:
        raise ConfigError(f"ledger {given}: cannot be locked ({exc})") from None
    try:
        new = not (exists or real.exists())
        data = {"format": FORMAT, "version": VERSION, "sources": {}} if new else read(real)
        yield Ledger(real, given, data, new=new)
    finally:
        lock.release()


def change_budget(path: str | Path | None, key: str, to: float, *, raising: bool,
                  reason: str | None) -> dict[str, Any]:
    """Raise (``raising``) or lower the recorded budget of source ``key`` to ``to``, recorded in
    its ``budget_history`` with when, from, to and ``reason`` (required to raise). Returns
    ``{"from", "to", "spent"}``. :class:`ConfigError` for an unknown source, a "raise" that does
    not raise or a "lower" that does not lower."""
    import difflib

    verb = "raise" if raising else "lower"
    if raising and not (reason and reason.strip()):
        raise ConfigError("ledger raise: --reason: say why the budget is raised (it is recorded "
                          "with the change)")
    if path is None and not default_path().exists():
        raise ConfigError(f"ledger {default_path()} does not exist: no release has been "
                          "published with the default ledger; name one with --ledger")
    with open_ledger(path) as book:
        if book.source(key) is None:
            close = difflib.get_close_matches(key, book.keys(), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else (
                f"; it has {', '.join(map(repr, book.keys()))}" if book.keys() else
                "; it has no source yet")
            raise ConfigError(f"ledger {verb}: ledger {book.given} has no source {key!r}{hint}")
        old = book.budget(key)
        if old is not None and raising and to <= old:
            raise ConfigError(f"ledger raise: --to {to:g} is not above the budget {old:g} of "
                              f"source {key!r}; lowering is `fairaudit ledger lower`")
        if old is not None and not raising and to >= old:
            raise ConfigError(f"ledger lower: --to {to:g} is not below the budget {old:g} of "
                              f"source {key!r}; raising is `fairaudit ledger raise ... --reason`")
        book.set_budget(key, to, how=f"fairaudit ledger {verb}", reason=reason)
        book.write()
        return {"from": old, "to": float(to), "spent": book.spent(key), "path": str(book.given)}
