"""Output paths: the one place where fairaudit writes a file.

Every command and function that writes (``audit``, ``run``, ``demo``, ``render``, ``compare``,
``history``, ``export``, ``--summary-md``, the privacy ledger, ``fairaudit.write_report``) goes
through :func:`check_outputs` (before any work) and :func:`write_outputs` (at the end). Their
promises:

1. **Nothing we write can replace what we read.** :func:`check_outputs` runs *before* any
   computation and refuses (:class:`~fairaudit.errors.OutputError`, exit 2, naming both paths)
   an output that

   * resolves (after symlinks, and hard links through ``os.path.samefile``) to an input file,
   * lies inside an input folder (a partitioned dataset directory),
   * matches the input glob (as a file today, or as a file a later run of the same glob would
     read; an input path that exists is a file, never a pattern: ``sel[2].csv``), or
   * is the same file as another output (``--out`` equal to ``--json``).

   It also checks that every output folder exists and that a file can be created in it (a
   real probe, so it holds for root and for read-only mounts alike), so a run never computes
   for minutes and then fails to write.

2. **Only regular files are replaced.** An output path that is (or, through symlinks, resolves
   to) a folder, a character or block device (``/dev/null``), a FIFO or a socket is refused, at
   the check and again when writing. A symlink to a regular file is resolved first: the file it
   points to gets the new content, the link stays.

3. **All or nothing.** :func:`write_outputs` writes every file of a run (HTML, JSON, the
   Markdown summary) to a temporary sibling first (same folder, so the final rename is atomic),
   then renames them one after the other. When a write or a rename fails (a full disk: exit 2,
   the message says so), the targets already replaced get their previous content back and every
   temporary is removed: a reader never sees a new JSON next to an old HTML.

4. **Nothing half-written on Ctrl-C or SIGTERM.** A signal while the temporaries are written
   removes them (the previous files stay); a signal while they are renamed is held until the
   renames are done (a few system calls), then acts as usual. No ``.tmp`` or ``.old`` file is
   left behind either way.

Content is text (written as UTF-8 with ``\\n`` line ends), bytes, or a function that writes to a
binary file object (``lambda fh: frame.write_parquet(fh)``), so any writer of any format can use
the same guarantees.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import glob as _glob
import logging
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from fairaudit.errors import OutputError

log = logging.getLogger(__name__)

__all__ = ["Content", "InputRef", "check_outputs", "input_refs", "output_path", "regular_target",
           "write_output", "write_outputs"]

Content = str | bytes | Callable[[IO[bytes]], Any]
"""What :func:`write_outputs` writes: text (UTF-8), bytes, or a function writing to a binary
file object."""


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


_DESCRIPTOR_ALIAS = re.compile(
    r"/(?:dev/(?:stdin|stdout|stderr|fd/\d+)|proc/(?:self|thread-self|\d+)/fd/\d+)")
"""Paths that name an open descriptor of a process (``/dev/stdout``, ``/proc/self/fd/1``)."""


def output_path(label: str, value: str | os.PathLike | None) -> Path | None:
    """``value`` as an output path (``None`` stays ``None``); an empty path, or one that ends
    in a path separator (a folder), is an :class:`OutputError` naming ``label``."""
    if value is None:
        return None
    if not isinstance(value, str | os.PathLike):
        raise OutputError(f"{label}: expected a file path; got {type(value).__name__}")
    text = os.fspath(value)
    if not isinstance(text, str) or not text.strip():
        raise OutputError(f"{label}: expected a file path; got {text!r}")
    if text == "-":  # stdout in many tools; here a file literally named "-" would appear
        raise OutputError(f"{label} -: standard output is not an output of fairaudit (its "
                          "files are written whole or not at all); give a file path (./- for a "
                          "file named '-')")
    if _DESCRIPTOR_ALIAS.fullmatch(os.path.abspath(text)):
        raise OutputError(f"{label} {text}: names a descriptor this process inherited (standard "
                          "output, a redirection), not a file: fairaudit writes a file whole or "
                          "not at all by replacing it, which would cut it from the shell's "
                          "redirection (`>> log` would lose the log); give the file's own path")
    if text.endswith(("/", os.sep)) or Path(text).name in ("", ".", ".."):
        raise OutputError(f"{label} {text}: names a folder; give a file name "
                          f"(e.g. {text.rstrip('/' + os.sep) or '.'}/report.html)")
    return Path(text)


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
    from fairaudit.core.io import is_pattern

    real_out = _real(out)
    spec = ref.spec
    if is_pattern(spec):
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


def regular_target(label: str, path: Path) -> str:
    """The real path ``path`` is written to; an :class:`OutputError` when it exists and is not a
    regular file (a folder, a device such as ``/dev/null``, a FIFO, a socket)."""
    from fairaudit.core.io import file_kind

    real = _real(path)
    try:  # the path itself, followed: /dev/stdout's link to "pipe:[...]" resolves to no name
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return real
    except OSError as exc:
        raise OutputError(f"{label} {path}: cannot be inspected ({exc.strerror or exc})"
                          ) from None
    if not stat.S_ISREG(mode):
        via = f" ({real})" if real != os.path.abspath(path) else ""
        hint = "give a file name" if stat.S_ISDIR(mode) else \
            "fairaudit replaces only regular files; give a file path"
        raise OutputError(f"{label} {path}: is {file_kind(mode)}{via}, not a regular file; {hint}")
    return real


def _probe_folder(label: str, path: Path) -> None:
    real = Path(regular_target(label, path))
    folder = real.parent
    if not folder.exists():
        shown = path.parent if str(path.parent) else Path(".")
        raise OutputError(f"{label} {path}: the folder {shown} does not exist")
    if not folder.is_dir():
        raise OutputError(f"{label} {path}: {folder} is not a folder")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".probe", dir=folder)
    except OSError as exc:
        raise OutputError(
            f"{label} {path}: cannot write in the folder {folder} ({exc.strerror or exc})"
        ) from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def check_outputs(
    outputs: Mapping[str, str | os.PathLike | None],
    inputs: Iterable[InputRef] = (),
) -> dict[str, Path]:
    """Refuse outputs that would overwrite an input, each other, or something that is not a
    regular file; probe their folders.

    ``outputs`` maps an option name (``"--out"``, ``"--json"``) to a path (``None`` = not
    written). Raises :class:`~fairaudit.errors.OutputError` naming the option and the paths.
    Returns the outputs that are written, as paths.
    """
    given = {k: output_path(k, v) for k, v in outputs.items() if v is not None}
    given = {k: v for k, v in given.items() if v is not None}
    refs = list(inputs)
    for label, path in given.items():
        for ref in refs:
            why = _conflict(os.fspath(path), ref)
            if why:
                raise OutputError(
                    f"{label} {path}: refusing to write there: {why}; the input "
                    f"({ref.label} {ref.spec}) is only ever read. Choose another output path."
                )
    items = list(given.items())
    for i, (la, pa) in enumerate(items):
        for lb, pb in items[i + 1:]:
            if _real(pa) == _real(pb) or _same_file(os.fspath(pa), os.fspath(pb)):
                raise OutputError(
                    f"{la} {pa} and {lb} {pb} are the same file: one would overwrite the "
                    "other; give different paths"
                )
    for label, path in items:
        _probe_folder(label, path)
    return given


# --------------------------------------------------------------------------- signals
_HELD = ("SIGINT", "SIGTERM")


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM for the few system calls inside (creating a temporary and
    recording it; the renames; the clean-up), then act on a signal that came meanwhile as its
    previous handler would have. Only the main thread receives Python's signals: elsewhere this
    does nothing."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    previous: dict[int, Any] = {}

    def hold(signum: int, frame: Any) -> None:
        pending.append(signum)

    for name in _HELD:
        sig = getattr(signal, name, None)
        if sig is None:  # pragma: no cover - not POSIX
            continue
        old = signal.getsignal(sig)
        if old is None:  # a handler set outside Python: cannot be restored, leave it
            continue
        try:
            signal.signal(sig, hold)
        except (ValueError, OSError):  # pragma: no cover - not the main interpreter
            continue
        previous[sig] = old
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
        if pending:
            _deliver(pending[0], previous[pending[0]])


def _deliver(signum: int, handler: Any) -> None:
    """Act on a signal held by :func:`_signals_held` as ``handler`` (its previous one) would."""
    import signal

    if handler == signal.SIG_IGN:
        return
    if handler == signal.SIG_DFL:
        os.kill(os.getpid(), signum)
        return
    handler(signum, None)


# --------------------------------------------------------------------------- writing
def _describe(exc: OSError) -> str:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"{exc.strerror or 'no space left'}: free some space or write elsewhere"
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return f"{exc.strerror or 'not allowed'}: choose a folder you can write in"
    return str(exc.strerror or exc)


def _write_content(fh: IO[bytes], content: Content) -> None:
    """Write one output's content to the open temporary ``fh``."""
    if isinstance(content, str):
        fh.write(content.encode("utf-8"))
    elif isinstance(content, bytes | bytearray | memoryview):
        fh.write(content)
    elif callable(content):
        content(fh)
    else:
        raise TypeError(f"output content must be str, bytes or a function; got "
                        f"{type(content).__name__}")


def _new_temp(real: str) -> tuple[int, str]:
    folder, name = os.path.split(real)
    return tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder or ".")


def _fill(fd: int, real: str, content: Content) -> None:
    """Write ``content`` into the temporary ``fd`` (synced), with the mode of the file it will
    replace (a new file: rw-r--r--, as ``umask 022`` gives)."""
    with os.fdopen(fd, "wb") as fh:
        _write_content(fh, content)
        fh.flush()
        os.fsync(fh.fileno())
        try:
            mode = os.stat(real).st_mode & 0o777
        except OSError:
            mode = 0o644
        os.fchmod(fh.fileno(), mode)


def _keep_aside(real: str) -> str | None:
    """A hard link (or copy) of an existing target, to restore it if a later rename fails."""
    if not os.path.exists(real):
        return None
    folder, name = os.path.split(real)
    fd, backup = tempfile.mkstemp(prefix=f".{name}.", suffix=".old", dir=folder or ".")
    os.close(fd)
    os.unlink(backup)
    try:
        os.link(real, backup)
    except OSError:
        import shutil

        shutil.copy2(real, backup)
    return backup


def _unlink_all(paths: Iterable[str | None]) -> None:
    for p in paths:
        if p is not None:
            with contextlib.suppress(OSError):
                os.unlink(p)


def write_outputs(files: Sequence[tuple[str | os.PathLike, Content]]) -> list[Path]:
    """Write ``(path, content)`` pairs as one unit: all of them, or none (old files kept).

    Every content is written to a temporary file next to its target (the target's real path:
    symlinks resolved) first; only then are the temporaries renamed over the targets, in order.
    A target that is not a regular file is refused before anything is written. When a write or
    a rename fails, the targets already replaced get their previous content back (or are
    removed when they did not exist), the temporaries are deleted, and an
    :class:`~fairaudit.errors.OutputError` names the file that could not be written and why.
    Returns the paths as given.
    """
    paths = [output_path("output", p) or Path() for p, _ in files]
    reals = [regular_target(str(p), p) for p in paths]
    if len(set(reals)) != len(reals):
        dup = next(p for p, r in zip(paths, reals, strict=True) if reals.count(r) > 1)
        raise OutputError(f"{dup}: given for two outputs; give different paths")
    temps: list[str] = []
    current = 0
    try:
        for real, (_, content) in zip(reals, files, strict=True):
            current = len(temps)
            with _signals_held():
                fd, tmp = _new_temp(real)
                temps.append(tmp)
            _fill(fd, real, content)
    except BaseException as exc:
        with _signals_held():
            _unlink_all(temps)
        if isinstance(exc, OSError):
            raise OutputError(f"{paths[current]}: cannot be written ({_describe(exc)}); nothing "
                              "was written, the previous files are as they were") from None
        raise
    with _signals_held():
        _commit(paths, reals, temps)
    return paths


def _commit(paths: Sequence[Path], reals: Sequence[str], temps: Sequence[str]) -> None:
    """Rename every temporary over its target; on a failure put the previous files back."""
    done: list[tuple[str, str | None]] = []
    backup: str | None = None
    try:
        for real, tmp in zip(reals, temps, strict=True):
            backup = _keep_aside(real) if len(reals) > 1 else None
            os.replace(tmp, real)
            done.append((real, backup))
            backup = None
    except BaseException as exc:
        _unlink_all([backup])
        for real, old in reversed(done):
            with contextlib.suppress(OSError):
                if old is not None:
                    os.replace(old, real)
                else:
                    os.unlink(real)
        _unlink_all(temps[len(done):])
        if isinstance(exc, OSError):
            raise OutputError(f"{paths[len(done)]}: cannot be written ({_describe(exc)}); the "
                              "previous files were left as they were") from None
        raise
    _unlink_all(old for _, old in done)


def write_output(path: str | os.PathLike, content: Content) -> Path:
    """Write one file atomically (see :func:`write_outputs`)."""
    return write_outputs([(path, content)])[0]
