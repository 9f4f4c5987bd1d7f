"""Output paths: the input is sacred, and the HTML report and its JSON are written as a pair.

Two promises, kept here for every command that writes (``audit``, ``run``, ``demo``,
``render``, ``fairaudit.write_report``; later commands call the same functions):

1. **Nothing we write can replace what we read.** :func:`check_outputs` runs *before* any
   computation and refuses (``ConfigError``, exit 2, naming both paths) an output that

   * resolves (after symlinks, and hard links through ``os.path.samefile``) to an input file,
   * lies inside an input folder (a partitioned dataset directory),
   * matches the input glob (as a file today, or as a file a later run of the same glob would
     read), or
   * is the same file as another output (``--out`` equal to ``--json``).

   It also checks that every output folder exists and that a file can be created in it (a
   real probe, so it holds for root and for read-only mounts alike), so a run never computes
   for minutes and then fails to write.

2. **Both or neither.** :func:`write_outputs` writes every file to a temporary sibling first
   (same folder, so the final rename is atomic), then renames them one after the other. If a
   later rename fails, the earlier targets are restored from the copies kept aside: a reader
   never sees a new JSON next to an old HTML.
"""

from __future__ import annotations

import contextlib
import fnmatch
import glob as _glob
import logging
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairaudit.errors import ConfigError

log = logging.getLogger(__name__)

__all__ = ["InputRef", "check_outputs", "input_refs", "write_outputs"]

_GLOB_CHARS = "*?["


@dataclass(frozen=True)
class InputRef:
    """Something an audit reads: a file, a folder, or a glob pattern (``label`` names it)."""

    label: str
    spec: str


def input_refs(data: Any, label: str = "input") -> list[InputRef]:
    """The input(s) behind ``data`` (a path, folder, glob, or an in-memory table: none)."""
    if data is None or not isinstance(data, str | os.PathLike):
        return []
    spec = os.fspath(data)
    if not spec or spec.startswith("<"):  # "<in-memory table>" in a saved document
        return []
    from fairaudit.sources.urls import local_file_of

    local = local_file_of(spec)  # a database file (sqlite:///f.db), none for a server or store
    return [] if local is None else [InputRef(label, local)]


def _real(path: str | os.PathLike) -> str:
    """Absolute path with every symlink resolved (also for paths that do not exist yet)."""
    return os.path.realpath(os.path.abspath(os.fspath(path)))


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _inside(path: str, folder: str) -> bool:
    folder = folder.rstrip(os.sep) + os.sep
    return path.startswith(folder)


def _conflict(out: str, ref: InputRef) -> str | None:
    """Why writing ``out`` would touch the input ``ref`` (None: it would not)."""
    real_out = _real(out)
    spec = ref.spec
    if any(ch in spec for ch in _GLOB_CHARS):
        pattern = os.path.abspath(os.path.expanduser(spec))
        if fnmatch.fnmatch(os.path.abspath(out), pattern) or fnmatch.fnmatch(real_out, pattern):
            return f"it matches the input pattern {spec}"
        for match in _glob.glob(os.path.expanduser(spec), recursive=True):
            real_in = _real(match)
            if real_out == real_in or _same_file(out, match):
                return f"it is the input file {match} (matched by {spec})"
            if os.path.isdir(match) and _inside(real_out, real_in):
                return f"it lies inside the input folder {match} (matched by {spec})"
        return None
    real_in = _real(spec)
    if os.path.isdir(real_in):
        if _inside(real_out, real_in) or real_out == real_in:
            return f"it lies inside the input folder {spec}"
        return None
    if real_out == real_in or _same_file(out, spec):
        return f"it is the input file {spec}" + (
            f" (both resolve to {real_in})" if os.path.abspath(out) != os.path.abspath(spec)
            else ""
        )
    return None


def _probe_folder(label: str, path: Path) -> None:
    folder = path.parent if str(path.parent) else Path(".")
    if path.exists() and path.is_dir():
        raise ConfigError(f"{label} {path}: is a folder; give a file name")
    if not folder.exists():
        raise ConfigError(f"{label} {path}: the folder {folder} does not exist")
    if not folder.is_dir():
        raise ConfigError(f"{label} {path}: {folder} is not a folder")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".probe", dir=folder)
    except OSError as exc:
        raise ConfigError(
            f"{label} {path}: cannot write in the folder {folder} ({exc.strerror or exc})"
        ) from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def check_outputs(
    outputs: Mapping[str, str | os.PathLike | None],
    inputs: Iterable[InputRef] = (),
) -> dict[str, Path]:
    """Refuse outputs that would overwrite an input or each other; probe their folders.

    ``outputs`` maps an option name (``"--out"``, ``"--json"``) to a path (``None`` = not
    written). Raises :class:`~fairaudit.errors.ConfigError` naming both paths. Returns the
    outputs that are written, as paths.
    """
    given = {k: Path(os.fspath(v)) for k, v in outputs.items() if v is not None}
    refs = list(inputs)
    for label, path in given.items():
        for ref in refs:
            why = _conflict(os.fspath(path), ref)
            if why:
                raise ConfigError(
                    f"{label} {path}: refusing to write there: {why}; the input "
                    f"({ref.label} {ref.spec}) is only ever read. Choose another output path."
                )
    items = list(given.items())
    for i, (la, pa) in enumerate(items):
        for lb, pb in items[i + 1:]:
            if _real(pa) == _real(pb) or _same_file(os.fspath(pa), os.fspath(pb)):
                raise ConfigError(
                    f"{la} {pa} and {lb} {pb} are the same file: one would overwrite the "
                    "other; give different paths"
                )
    for label, path in items:
        _probe_folder(label, path)
    return given


def _temp_sibling(path: Path, text: str | bytes) -> str:
    from fairaudit.core.io import write_temp_sibling

    return write_temp_sibling(path, text)


def _keep_aside(path: Path) -> str | None:
    """A hard link (or copy) of an existing target, to restore it if a later rename fails."""
    if not path.exists():
        return None
    folder = path.parent if str(path.parent) else Path(".")
    fd, backup = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".old", dir=folder)
    os.close(fd)
    os.unlink(backup)
    try:
        os.link(path, backup)
    except OSError:
        import shutil

        shutil.copy2(path, backup)
    return backup


def write_outputs(files: Sequence[tuple[str | os.PathLike, str | bytes]]) -> list[Path]:
    """Write ``(path, text)`` pairs as one unit: all of them, or none (old files kept). A
    ``bytes`` content is written as it is (``fairaudit repair``'s Parquet table).

    Every text is written to a temporary file next to its target first; only then are the
    temporaries renamed over the targets, in order. When a rename fails, the targets already
    replaced get their previous content back (or are removed when they did not exist), the
    temporaries are deleted, and a ``ConfigError`` names the file that could not be written.
    """
    targets = [Path(os.fspath(p)) for p, _ in files]
    temps: list[str] = []
    try:
        for path, (_, text) in zip(targets, files, strict=True):
            temps.append(_temp_sibling(path, text))
    except OSError as exc:
        for tmp in temps:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise ConfigError(
            f"{targets[len(temps)]}: cannot be written ({exc.strerror or exc}); nothing was "
            "written"
        ) from None
    done: list[tuple[Path, str | None]] = []
    try:
        for path, tmp in zip(targets, temps, strict=True):
            backup = _keep_aside(path) if len(targets) > 1 else None
            try:
                os.replace(tmp, path)
            except OSError:
                if backup is not None:
                    with contextlib.suppress(OSError):
                        os.unlink(backup)
                raise
            done.append((path, backup))
    except OSError as exc:
        failed = targets[len(done)]
        for path, backup in reversed(done):
            with contextlib.suppress(OSError):
                if backup is not None:
                    os.replace(backup, path)
                else:
                    os.unlink(path)
        for tmp in temps[len(done):]:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise ConfigError(
            f"{failed}: cannot be written ({exc.strerror or exc}); the previous files were "
            "left as they were"
        ) from None
    for _, backup in done:
        if backup is not None:
            with contextlib.suppress(OSError):
                os.unlink(backup)
    return targets
