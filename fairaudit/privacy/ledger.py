"""The privacy ledger: what each published release of a data source spent (docs/privacy.md).

One JSON file, keyed by data source (``[privacy] source``, else the input's absolute path). Each
source lists its releases: the data's fingerprint, a hash of the options, the epsilon OpenDP's
accounting gave, and the published document. Publishing unchanged data with unchanged options
returns that document again and spends nothing; any other release adds its epsilon, and one that
would pass the budget is refused (exit 2) before anything is computed.

Overlapping runs (scheduled audits) take an exclusive lock (``fcntl.flock`` on ``LEDGER.lock``)
for the whole release, so two runs never both spend the last of a budget; the file is replaced
atomically (temporary file beside it, then ``os.replace``). The ledger holds fingerprints of the
data: keep it with the data, not with the published reports.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fairaudit.core.limits import read_limited
from fairaudit.errors import ConfigError

VERSION = 1
MAX_LEDGER_BYTES = 256 * 1024 * 1024
"""A ledger holds one small entry per release: 256 MiB is far more than years of them."""


def default_path() -> Path:
    """``$XDG_STATE_HOME/fairaudit/ledger.json`` (``~/.local/state/fairaudit/ledger.json``)."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "fairaudit" / "ledger.json"


def options_hash(options: Mapping[str, Any]) -> str:
    text = json.dumps(options, sort_keys=True, default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


class Ledger:
    """An open, locked ledger (use :func:`open_ledger`)."""

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = path
        self.data = data

    def source(self, key: str) -> dict[str, Any]:
        return self.data["sources"].setdefault(key, {"releases": []})

    def spent(self, key: str) -> float:
        return math.fsum(float(r["epsilon"]) for r in self.source(key)["releases"])

    def spent_delta(self, key: str) -> float:
        return math.fsum(float(r.get("delta", 0.0)) for r in self.source(key)["releases"])

    def find(self, key: str, fingerprint: str, options: str) -> dict[str, Any] | None:
        """The stored release of unchanged data and options (``None`` when the fingerprint is
        unavailable: such data is never taken as unchanged)."""
        if not fingerprint.startswith(("sha256", "rowhash")):
            return None
        for r in self.source(key)["releases"]:
            if r["fingerprint"] == fingerprint and r["options"] == options:
                return r
        return None

    def sources_of(self, fingerprint: str) -> list[str]:
        """The sources whose releases were made from data with this fingerprint (none when the
        fingerprint is unavailable)."""
        if not fingerprint.startswith(("sha256", "rowhash")):
            return []
        return [k for k, s in self.data["sources"].items()
                if any(r["fingerprint"] == fingerprint for r in s["releases"])]

    def check_same_data(self, key: str, fingerprint: str) -> None:
        """The budget follows the data: a release of data already recorded under another source
        is refused (naming another source must not start a fresh budget)."""
        others = [k for k in self.sources_of(fingerprint) if k != key]
        if others:
            raise ConfigError(
                f"privacy budget: ledger {self.path}: this data (fingerprint {fingerprint[:23]}…) "
                f"was already released under source {others[0]!r}; publishing it as source "
                f"{key!r} would start a fresh budget for the same people — publish it under "
                f"{others[0]!r} (--privacy-source {others[0]!r}, [privacy] source)")

    def check_budget(self, key: str, epsilon: float, budget: float | None) -> None:
        if budget is None:
            return
        spent = self.spent(key)
        if spent + epsilon > budget * (1 + 1e-12):
            left = max(budget - spent, 0.0)
            raise ConfigError(
                f"privacy budget: ledger {self.path}: source {key!r} has spent epsilon "
                f"{spent:.6g} of its budget {budget:.6g} ({left:.6g} left); this release "
                f"needs {epsilon:.6g} — lower --epsilon, or publish no more of this source")

    def record(self, key: str, *, fingerprint: str, options: str, epsilon: float,
               budget: float | None, document: Mapping[str, Any], delta: float = 0.0
               ) -> dict[str, Any]:
        entry = {
            "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "fingerprint": fingerprint,
            "options": options,
            "epsilon": float(epsilon),
            "delta": float(delta),
            "document": dict(document),
        }
        src = self.source(key)
        src["releases"].append(entry)
        if budget is not None:
            src["budget"] = float(budget)
        self._write()
        return entry

    def _write(self) -> None:
        from fairaudit.report.outputs import write_output

        text = json.dumps(self.data, indent=1, ensure_ascii=False) + "\n"  # key order kept
        write_output(self.path, text)  # atomic; only a regular file is replaced


def _read(path: Path) -> dict[str, Any]:
    if not path.exists() or path.stat().st_size == 0:
        return {"version": VERSION, "sources": {}}
    try:
        data = json.loads(read_limited(path, MAX_LEDGER_BYTES, "privacy ledger", ConfigError))
    except (OSError, ValueError) as exc:  # ConfigError (size, kind, UTF-8) or bad JSON
        raise ConfigError(f"ledger {path}: not a readable fairaudit ledger ({exc}); it is left "
                          "untouched — restore it from a backup or name another --ledger"
                          ) from None
    ok = (isinstance(data, dict) and data.get("version") == VERSION
          and isinstance(data.get("sources"), dict)
          and all(isinstance(s, dict) and isinstance(s.get("releases"), list)
                  and all(isinstance(r, dict) and {"fingerprint", "options", "epsilon"} <= set(r)
                          for r in s["releases"])
                  for s in data["sources"].values()))
    if not ok:
        raise ConfigError(f"ledger {path}: not a fairaudit ledger (version {VERSION}: sources -> "
                          "releases); it is left untouched — restore it or name another --ledger")
    return data


@contextlib.contextmanager
def open_ledger(path: str | Path, *, create_folder: bool = True) -> Iterator[Ledger]:
    """The ledger at ``path`` (created when missing; its folder too when ``create_folder``, the
    default location), locked exclusively until the block ends. An explicitly named ledger whose
    folder does not exist is refused (a typo must not start a fresh, empty ledger)."""
    import fcntl

    from fairaudit.report.outputs import regular_target

    path = Path(path).expanduser()
    lock_path = path.with_name(path.name + ".lock")
    regular_target("ledger", path)  # never a device, FIFO or folder (nor its .lock: a FIFO
    regular_target("ledger lock", lock_path)  # there would block the open below forever)
    if not create_folder and not path.parent.is_dir():
        raise ConfigError(f"ledger {path}: its folder {path.parent} does not exist; create it, "
                          "or name an existing ledger (--ledger, [privacy] ledger, ledger=)")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = open(lock_path, "a")  # noqa: SIM115 - held for the block
    except OSError as exc:
        raise ConfigError(f"ledger {path}: cannot be created or locked ({exc})") from None
    try:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        yield Ledger(path, _read(path))
    finally:
        fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
        lock.close()
