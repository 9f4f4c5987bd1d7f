"""The checks of a CSV input before polars reads it: UTF-8, the header (read with a bound, unique
names, the right separator), the same number of fields on every row, and the header's names as
:mod:`csv` reads them. Each problem is an :class:`~fairaudit.errors.InputError` naming the file
(and the line).
"""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairaudit.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

log = logging.getLogger(__name__)

_CHUNK = 8 * 1024 * 1024


def separator_hint(only_column: str, sep: str = ",") -> str | None:
    """What to do when a CSV was read as one column whose name holds another separator
    (a ``;`` or tab file read with ``,``), or ``None`` when no other separator is in it."""
    other = next((c for c in (";", "\t", "|", ",") if c != sep and c in only_column), None)
    if other is None:
        return None
    how = (f"pass --separator '{other}'" if other != "\t" else
           "name the file .tsv or pass a tab character to --separator")
    return f"the separator looks like {other!r}, not {sep!r}; {how}"


def csv_header(path: Path, sep: str) -> list[str]:
    """The header of a CSV, read with a bound (the first :data:`MAX_HEADER_CHARS` characters:
    a 2 GB file without a line end is refused at once, before it is read whole), with unique
    names of at most :data:`MAX_NAME_CHARS` characters."""
    import csv

    head = _first_record_text(path, sep)
    if len(head) > MAX_HEADER_CHARS and "\n" not in head and "\r" not in head:
        raise InputError(
            f"{path}: the first {MAX_HEADER_CHARS:,} characters hold no line end; a CSV starts "
            "with a line of column names: is this a CSV file (not a binary or sparse file)?")
    with _csv_field_limit():
        try:
            header = next(csv.reader(io.StringIO(head), delimiter=sep), None)
        except csv.Error as exc:
            raise InputError(f"{path}: the header line cannot be read as CSV ({exc})") from None
    if len(head) > MAX_HEADER_CHARS and len(sep.join(header or ())) >= MAX_HEADER_CHARS - 2:
        raise InputError(
            f"{path}: the header line is longer than {MAX_HEADER_CHARS:,} characters (no line "
            "end found); a CSV starts with a line of column names: is this a CSV file?")
    long = next((h for h in header or () if len(h) > MAX_NAME_CHARS), None)
    if long is not None:
        raise InputError(
            f"{path}: a header cell is {len(long):,} characters long ({long[:40]!r}...); column "
            f"names are at most {MAX_NAME_CHARS:,} characters: is the first line a header?")
    if not header:
        raise InputError(f"{path}: the file is empty (no header line)")
    if len(header) == 1:  # one column whose name holds the others: another separator
        hint = separator_hint(header[0], sep)
        if hint is not None:
            raise InputError(f"{path}: the header was read as one column, "
                             f"{header[0].lstrip(chr(0xFEFF))[:60]!r}: "
                             f"{hint}")
    seen: set[str] = set()
    for name in header:
        if name in seen:
            title = sum(1 for h in header if not h.strip()) >= len(header) - 1
            hint = (" (the first line looks like a title row above the header, as in an "
                    "Excel export: remove it)") if title else ""
            raise InputError(f"{path}: the header names column {name!r} twice; column names "
                             f"must be unique{hint}")
        seen.add(name)
    return header


def _first_record_text(path: Path, sep: str) -> str:
    """The start of a CSV, read in 1 MiB pieces until its first record (the header, quoted line
    ends included) is complete, or :data:`MAX_HEADER_CHARS` + 1 characters were read."""
    import csv

    pieces: list[str] = []
    size = 0
    text = ""
    with open(path, encoding="utf-8", errors="replace", newline="") as fh, _csv_field_limit():
        while size <= MAX_HEADER_CHARS:
            chunk = fh.read(1 << 20)
            pieces.append(chunk)
            size += len(chunk)
            if not chunk:
                break
            if "\n" in chunk or "\r" in chunk:
                text = "".join(pieces)
                buf = io.StringIO(text)
                try:
                    next(csv.reader(buf, delimiter=sep), None)
                except csv.Error:
                    break  # the caller reports it
                if buf.tell() < len(text):
                    break
    return "".join(pieces)


def check_csv_shape(path: Path, sep: str, header: list[str]) -> None:
    """Every row of a CSV has as many fields as its header.

    Fast path: count separators and quotes per line with polars; only when a line differs (a
    ragged row, a quoted field holding the separator or a line end, an unclosed quote, a
    carriage return alone ending a line) is the file re-read with :mod:`csv` to find the first
    row whose field count really differs, named by its line number."""
    import polars as pl

    line = pl.col("line")
    try:
        n_odd, n_cr = (
            pl.scan_csv(str(path), has_header=False, separator="\x1f", quote_char=None, glob=False,
                        new_columns=["line"], infer_schema=False)
            .filter((line.str.count_matches(sep, literal=True) != len(header) - 1)
                    | (line.str.count_matches('"', literal=True) % 2 == 1))
            .select(pl.len(), line.str.strip_chars_end("\r").str.contains("\r", literal=True).sum())
            .collect(engine="streaming")
            .row(0)
        )
    except Exception:  # the exact pass below decides
        log.debug("fast CSV shape check failed on %s", path, exc_info=True)
        n_odd, n_cr = 1, 0
    if not n_odd:
        return
    _exact_shape(path, sep, header)
    if n_cr:  # csv reads a lone \r as a line end; polars (and most tools) do not
        raise InputError(f"{path}: {n_cr:,} line(s) hold a carriage return (\\r) alone as a "
                         "line end (old Mac line ends), which is not read as one; convert the "
                         "line ends to \\n (e.g. tr '\\r' '\\n' < in.csv > out.csv)")


def _exact_shape(path: Path, sep: str, header: list[str]) -> None:
    import csv

    with open(path, encoding="utf-8", newline="") as fh, _csv_field_limit():
        reader = csv.reader(fh, delimiter=sep)
        try:
            next(reader, None)
            end = reader.line_num
            for row in reader:
                start, end = end + 1, reader.line_num
                if row and len(row) != len(header):
                    # a quote left open on the last line runs to the end of the file: one
                    # field holding the line end
                    spans = (f" (the row runs from line {start}: a quote opened on that "
                             "line is closed late or never)"
                             if end > start or any("\n" in f or "\r" in f for f in row)
                             else "")
                    raise InputError(
                        f"{path}, line {end}: {len(row)} field(s) where the header "
                        f"has {len(header)}{spans}; every row needs one value per column"
                    )
        except csv.Error as exc:
            raise InputError(f"{path}, line {reader.line_num}: cannot be read as CSV ({exc})"
                             ) from None


MAX_HEADER_CHARS = 16 * 1024 * 1024
"""The longest CSV header line read (16 Mi characters: 100,000 columns of long names); a first
line without a line end within it is not a header (a binary or sparse file named .csv)."""
MAX_NAME_CHARS = 65_536
"""The longest column name of a CSV header (a longer cell is data, or a file without header)."""


@contextlib.contextmanager
def _csv_field_limit() -> Any:
    """:mod:`csv`'s field size limit (131,072 characters by default, process-wide) raised while
    fairaudit reads a CSV's header and shape: a long text cell is data, not an error."""
    import csv

    old = csv.field_size_limit()
    csv.field_size_limit(max(old, 2**31 - 1))
    try:
        yield
    finally:
        csv.field_size_limit(old)


def check_utf8(path: Path) -> None:
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


def header_names(lf: pl.LazyFrame, header: Sequence[str]) -> pl.LazyFrame:
    """The columns named as the CSV header says: polars keeps a quoted name's doubled quotes
    (``"a""b"`` reads as ``a""b``); the header parsed by :mod:`csv` has ``a"b``."""
    names = lf.collect_schema().names()
    fixed = {p: h for p, h in zip(names, header, strict=False)
             if p != h and p.replace('""', '"') == h and h not in names}
    return lf.rename(fixed) if fixed else lf
