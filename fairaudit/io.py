"""Opening inputs lazily, checking them early, and fingerprinting them.

The built-in reader (``fairaudit_builtins.io``) uses :func:`scan_builtin`; other formats come from
plugins through the ``fairaudit_read_table`` hook. The input is only ever read, never written.
"""

from __future__ import annotations

import contextlib
import glob as _glob
import hashlib
import logging
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairaudit.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

log = logging.getLogger(__name__)

_PARQUET_MAGIC = b"PAR1"
_FULL_HASH_LIMIT = 512 * 1024 * 1024
_CHUNK = 8 * 1024 * 1024


@dataclass(frozen=True)
class InputFiles:
    """What a path, directory or glob resolves to."""

    spec: str
    files: tuple[Path, ...]
    format: str  # "parquet" | "csv"


def resolve_input(spec: str) -> InputFiles:
    """Resolve ``spec`` (file, directory of parquet files, or glob) or raise a clear error."""
    has_glob = any(ch in spec for ch in "*?[")
    if has_glob:
        files = tuple(sorted(Path(p) for p in _glob.glob(spec, recursive=True) if Path(p).is_file()))
        if not files:
            raise InputError(f"{spec}: the pattern matches no files")
    else:
        path = Path(spec)
        if not path.exists():
            raise InputError(f"{spec}: no such file or directory")
        if path.is_dir():
            files = tuple(sorted(p for p in path.rglob("*.parquet") if p.is_file()))
            if not files:
                raise InputError(f"{spec}: the directory contains no .parquet files")
        else:
            files = (path,)
    fmt = _sniff(files[0])
    others = {f for f in files if _sniff(f) != fmt}
    if others:
        raise InputError(
            f"{spec}: mixes formats ({fmt} and {_sniff(next(iter(others)))}); give one format"
        )
    return InputFiles(spec, files, fmt)


def _sniff(path: Path) -> str:
    suffix = path.suffix.lower()
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror})") from exc
    if head == _PARQUET_MAGIC:
        return "parquet"
    if suffix == ".parquet" or suffix == ".pq":
        raise InputError(f"{path}: not a Parquet file (it does not start with the PAR1 marker)")
    if suffix in (".csv", ".tsv", ".txt"):
        return "csv"
    raise InputError(
        f"{path}: unrecognised input format; expected a Parquet file (.parquet), a directory or "
        "glob of Parquet files, or a CSV file (.csv/.tsv)"
    )


def scan_builtin(spec: str, options: Mapping[str, Any]) -> pl.LazyFrame:
    """Open Parquet (file, directory, glob) or CSV lazily, and check it can be read."""
    import polars as pl

    inp = resolve_input(spec)
    if inp.format == "parquet":
        try:
            lf = pl.scan_parquet([str(f) for f in inp.files])
            schema = lf.collect_schema()
        except Exception as exc:  # polars raises ComputeError / OSError variants
            raise InputError(f"{spec}: cannot be read as Parquet: {_first_line(exc)}") from exc
    else:
        path = inp.files[0]
        _check_utf8(path)
        sep = options.get("separator") or ("\t" if path.suffix.lower() == ".tsv" else ",")
        try:
            lf = pl.scan_csv(
                [str(f) for f in inp.files],
                separator=sep,
                infer_schema_length=10_000,
                null_values=list(options.get("null_values", ["", "NA", "?"])),
            )
            schema = lf.collect_schema()
        except Exception as exc:
            raise InputError(f"{spec}: cannot be read as CSV: {_first_line(exc)}") from exc
    if len(schema) == 0:
        raise InputError(f"{spec}: the table has no columns")
    return lf


def _check_utf8(path: Path) -> None:
    decoder = __import__("codecs").getincrementaldecoder("utf-8")()
    offset = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                pos = offset + exc.start
                raise InputError(
                    f"{path}: not valid UTF-8 (byte {pos}: 0x{chunk[exc.start]:02x}); convert it, "
                    "e.g. iconv -f latin1 -t utf-8"
                ) from None
            offset += len(chunk)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def fingerprint(spec: str) -> str:
    """A content hash of the input files (sha256). Large files hash their size, head and tail."""
    try:
        inp = resolve_input(spec)
    except InputError:
        return "unavailable"
    h = hashlib.sha256()
    partial = False
    for f in inp.files:
        size = f.stat().st_size
        h.update(f.name.encode())
        h.update(size.to_bytes(8, "little"))
        with open(f, "rb") as fh:
            if size <= _FULL_HASH_LIMIT:
                while chunk := fh.read(_CHUNK):
                    h.update(chunk)
            else:
                partial = True
                h.update(fh.read(_CHUNK))
                fh.seek(size - _CHUNK)
                h.update(fh.read(_CHUNK))
    return ("sha256-sampled:" if partial else "sha256:") + h.hexdigest()


def atomic_write_text(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary sibling file and ``os.replace``."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        try:  # keep the mode of the file being replaced; a new file gets rw-r--r--
            mode = os.stat(path).st_mode & 0o777
        except OSError:
            mode = 0o644
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path
