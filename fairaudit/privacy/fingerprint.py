"""What the privacy ledger knows about the data of a release (docs/privacy.md, "The ledger").

Two things, computed in one streaming pass over a polars ``LazyFrame`` (any source: a file, a
folder of parts, a database query, an in-memory table):

* **the content fingerprint** of the *audited* columns — the sensitive columns, the labels column
  and the features a clusterer uses, in that role order: an order-independent hash of the
  multiset of their rows. Each value is hashed by what it is (:func:`hash_values`: a number the
  same whether stored as int64, uint8 or 3.0 read from a CSV, NaN as null, text, categoricals and
  enums by their UTF-8 text), the values of a row combined in role order, and the row hashes
  summed (mod 2^64, in four independent lanes). Row order, file format (CSV, Parquet, Arrow, a
  DataFrame), line endings, quoting, column names and columns nobody audits do not change it;
  any audited value, a row more or less, or another column in a role does. Equal fingerprints
  mean equal count cubes, so returning the stored release of an equal fingerprint is
  post-processing: it reveals nothing new.
* **a sketch of the near-unique columns** (identifiers, e-mail addresses, exact amounts and
  timestamps): for each column whose distinct values are at least half of its values, the 256
  smallest hashes of its distinct values (a bottom-k sketch; Broder 1997, Cohen and Kaplan
  2007). Two sketches estimate how much of one table's values appear in another, whatever the
  columns are called: the ledger uses it to recognise the same people under another source
  name (a near-copy, a night's table with one person fewer, a subset). It cannot recognise
  people whose identifiers were changed, tables without a near-unique column, or an overlap
  below about a tenth of the larger table. Integer columns that fill at least half of their
  range (row numbers, counters such as customer 10,000, 10,001, ...) are left out: unrelated
  tables share them.

The hash is this module's own (a polynomial over the value's UTF-8 bytes, mixed by SplitMix64),
not polars' (which is not stable across polars versions): a ledger written today is read by
later versions. ``fingerprint_frame`` is the one entry point; sources other than files (issue 36)
call it on the ``LazyFrame`` of their query, or on their ``GROUP BY``'s counts (``counts=``:
the same fingerprint as the rows counted, without moving the rows).
"""

from __future__ import annotations

import base64
import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

SCHEME = "audited-v1"
SKETCH_K = 256
"""Hashes kept per sketched column: the overlap estimate's standard error is about
sqrt(p (1 - p) / m) over the m hashes in the common range."""
NEAR_UNIQUE = 0.5
"""A column is sketched when its distinct values are at least this share of its values."""
MIN_ROWS = 20
MAX_SKETCHED = 16
"""At most this many columns are sketched (the most distinct first)."""
MIN_SAMPLE = 8
"""Overlaps estimated from fewer common-range hashes are not estimated at all."""
BATCH_ROWS = 200_000

_U = np.uint64
_MASK = (1 << 64) - 1
_BASE = _U(0x100000001B3)  # odd multiplier of the polynomial over the bytes
_NULL = _U(0x9E3779B97F4A7C15)
_FEW = 2048
_LANES = (0x243F6A8885A308D3, 0x13198A2E03707344, 0xA4093822299F31D0, 0x082EFA98EC4E6C89)


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser, element-wise on uint64 (wrapping arithmetic)."""
    x = x ^ (x >> _U(30))
    x = x * _U(0xBF58476D1CE4E5B9)
    x = x ^ (x >> _U(27))
    x = x * _U(0x94D049BB133111EB)
    return x ^ (x >> _U(31))


@functools.lru_cache(maxsize=8)
def _powers(n: int) -> np.ndarray:
    """``_BASE ** i`` mod 2^64 for i < n (n rounded up to a power of two: few cache entries)."""
    size = 1 << max(int(n) - 1, 1).bit_length()
    out = np.ones(size, dtype=np.uint64)
    step, power = 1, _BASE
    with np.errstate(over="ignore"):
        while step < size:  # out[step:2 step] = out[:step] * BASE^step
            out[step:2 * step] = out[:step] * power
            power = power * power
            step *= 2
    return out


def hash_text(values: Any) -> np.ndarray:
    """A stable 64-bit hash of each value of a polars String Series (null: a constant of its
    own): the polynomial of the UTF-8 bytes, then SplitMix64 of that and the length."""
    import polars as pl

    s = values.cast(pl.String)
    n = len(s)
    if n > 4 * _FEW and s.head(_FEW).n_unique() <= _FEW // 8:  # few distinct texts (a
        uniq = s.drop_nulls().unique()                          # category): hash each once
        if len(uniq) <= n // 8:
            table = pl.Series(hash_text(uniq), dtype=pl.UInt64)
            out = s.fill_null(uniq[0] if len(uniq) else "").replace_strict(
                uniq, table, return_dtype=pl.UInt64).to_numpy().copy()
            out[s.is_null().to_numpy()] = _NULL
            return out
    lens = s.str.len_bytes().fill_null(0).to_numpy().astype(np.int64)
    total = int(lens.sum())
    h = np.zeros(n, dtype=np.uint64)
    if total:
        joined = s.fill_null("").str.join("").item().encode("utf-8")
        buf = np.frombuffer(joined, dtype=np.uint8).astype(np.uint64) + _U(1)
        ends = np.cumsum(lens)
        exponent = np.repeat(ends - 1, lens) - np.arange(total, dtype=np.int64)
        with np.errstate(over="ignore"):
            terms = buf * _powers(int(lens.max()))[exponent]
        filled = lens > 0
        h[filled] = np.add.reduceat(terms, (ends - lens)[filled])
    out = _mix(h ^ _mix(lens.astype(np.uint64) + _U(0x632BE59BD9B4E019)))
    out[s.is_null().to_numpy()] = _NULL
    return out


_TAGS = {"number": 0x6A09E667F3BCC908, "float": 0xBB67AE8584CAA73B, "date": 0x3C6EF372FE94F82B,
         "time": 0xA54FF53A5F1D36F1}


def _numbers(x: np.ndarray, tag: str) -> np.ndarray:
    return _mix(x.astype(np.int64).view(np.uint64) ^ _U(_TAGS[tag]))


def hash_values(values: Any) -> np.ndarray | None:
    """A stable 64-bit hash of each value of a polars Series, by what the value is rather than
    how it was stored: a number hashes the same as an integer (int64, uint8, 3.0 read from a
    CSV) or as a float that is not integral; NaN is null; text, categoricals and enums hash their
    UTF-8 text; booleans as 0 and 1; dates, datetimes (in microseconds) and durations by their
    value. None for a type without such a value (nested columns)."""
    import polars as pl

    dtype = values.dtype
    null = values.is_null().to_numpy()
    if dtype == pl.String or isinstance(dtype, pl.Categorical | pl.Enum):
        return hash_text(values)
    if dtype == pl.Binary:
        return hash_text(values.bin.encode("hex"))
    if dtype == pl.Null:
        return np.full(len(values), _NULL, dtype=np.uint64)
    if dtype.is_nested() or dtype == pl.Object:
        return None
    if dtype.is_float() or dtype.is_decimal():
        f = values.cast(pl.Float64).fill_null(np.nan).to_numpy()
        null = np.isnan(f)
        integral = ~null & np.isfinite(f) & (np.abs(f) < 2.0**63) & (f == np.round(f))
        out = _mix(np.where(null, 0.0, f + 0.0).view(np.uint64) ^ _U(_TAGS["float"]))
        out[integral] = _numbers(f[integral], "number")
    elif dtype.is_integer() or dtype == pl.Boolean:
        raw = values.fill_null(0).to_numpy()
        if dtype == pl.UInt64:  # its upper half as negative int64 bits: still one per value
            raw = raw.astype(np.uint64).view(np.int64)
        out = _numbers(raw.astype(np.int64), "number")
    elif dtype == pl.Date:
        out = _numbers(values.cast(pl.Int32).fill_null(0).to_numpy(), "date")
    elif isinstance(dtype, pl.Datetime):
        out = _numbers(values.dt.epoch("us").fill_null(0).to_numpy(), "date")
    else:  # Time, Duration: their physical integer
        out = _numbers(values.to_physical().cast(pl.Int64).fill_null(0).to_numpy(), "time")
    out[null] = _NULL
    return out


@dataclass(frozen=True)
class ColumnSketch:
    """The smallest hashes of one column's distinct values."""

    column: str
    hashes: np.ndarray
    """Sorted, distinct, at most :data:`SKETCH_K`."""
    complete: bool
    """Every distinct value is in ``hashes`` (the column has fewer than ``SKETCH_K``)."""

    def to_json(self) -> dict[str, Any]:
        raw = np.ascontiguousarray(self.hashes, dtype="<u8").tobytes()
        return {"column": self.column, "complete": self.complete,
                "hashes": base64.b64encode(raw).decode("ascii")}

    @classmethod
    def from_json(cls, d: Any) -> ColumnSketch:
        """Raises ``ValueError`` naming what is wrong."""
        if not isinstance(d, dict) or set(d) != {"column", "complete", "hashes"}:
            raise ValueError("expected {column, complete, hashes}")
        if not isinstance(d["column"], str) or not isinstance(d["complete"], bool) \
                or not isinstance(d["hashes"], str):
            raise ValueError("column must be text, complete true or false, hashes base64 text")
        try:
            raw = base64.b64decode(d["hashes"], validate=True)
        except ValueError:
            raise ValueError("hashes is not base64") from None
        if len(raw) % 8 or len(raw) > 8 * SKETCH_K:
            raise ValueError(f"hashes must hold at most {SKETCH_K} 8-byte values")
        h = np.frombuffer(raw, dtype="<u8").astype(np.uint64)
        if h.size > 1 and not (np.diff(h.astype(np.float64)) >= 0).all():
            raise ValueError("hashes must be sorted")
        return cls(d["column"], h, d["complete"])


def overlap(a: ColumnSketch, b: ColumnSketch) -> float | None:
    """Estimated share of the smaller column's distinct values found in the other (None when
    the sketches share too small a range to say): both sketches are complete below the smaller
    of their largest kept hashes, so their intersection there estimates the overlap."""
    inf = np.iinfo(np.uint64).max
    tau = min(inf if a.complete or not a.hashes.size else int(a.hashes[-1]),
              inf if b.complete or not b.hashes.size else int(b.hashes[-1]))
    x = a.hashes[a.hashes <= _U(tau)]
    y = b.hashes[b.hashes <= _U(tau)]
    m = min(x.size, y.size)
    if m < MIN_SAMPLE:
        return None
    return float(np.intersect1d(x, y, assume_unique=True).size / m)


@dataclass(frozen=True)
class DataFingerprint:
    content: str
    """``audited-v1:`` + sha256 of the audited rows' multiset (see the module docstring)."""
    sketch: tuple[ColumnSketch, ...]

    def sketch_json(self) -> list[dict[str, Any]]:
        return [s.to_json() for s in self.sketch]


class _Bottom:
    """The running bottom-k sketch of one column, and what decides whether it is kept."""

    def __init__(self, column: str, integer: bool) -> None:
        self.column = column
        self.hashes = np.zeros(0, dtype=np.uint64)
        self.values = 0
        self.integer = integer
        self.lo: int | None = None
        self.hi: int | None = None

    def add(self, h: np.ndarray, raw: Any) -> None:
        h = h[h != _NULL]
        self.values += h.size
        if self.hashes.size >= SKETCH_K:
            h = h[h < self.hashes[-1]]
        if h.size > 8 * SKETCH_K:  # the smallest occurrences first (linear), then distinct
            h = np.partition(h, 8 * SKETCH_K)[: 8 * SKETCH_K]
        if h.size:
            self.hashes = np.union1d(self.hashes, h)[:SKETCH_K]
        if self.integer and raw.len() > raw.null_count():
            lo, hi = int(raw.min()), int(raw.max())
            self.lo = lo if self.lo is None else min(self.lo, lo)
            self.hi = hi if self.hi is None else max(self.hi, hi)

    def distinct(self) -> float:
        if self.hashes.size < SKETCH_K:
            return float(self.hashes.size)
        return (SKETCH_K - 1) / (float(self.hashes[-1]) / 2.0**64)

    def counter(self) -> bool:
        """An integer column that fills at least half of its range: a row number or a counter
        (customer 10,000, 10,001, ...), which unrelated tables share."""
        return (self.integer and self.lo is not None and self.hi is not None
                and self.distinct() >= 0.5 * (self.hi - self.lo + 1))

    def kept(self, rows: int) -> bool:
        del rows
        return (self.values >= MIN_ROWS and self.distinct() >= NEAR_UNIQUE * self.values
                and not self.counter())


def _batches(lf: Any) -> Any:
    collect = getattr(lf, "collect_batches", None)
    if collect is not None:
        try:
            yield from collect(chunk_size=BATCH_ROWS, maintain_order=False)
            return
        except TypeError:  # pragma: no cover - an older signature
            pass
    yield from lf.collect().iter_slices(BATCH_ROWS)  # pragma: no cover - polars < 1.30


def fingerprint_frame(lf: Any, audited: Sequence[str], *, sketch: bool = True,
                      counts: str | None = None, meter: Any = None) -> DataFingerprint:
    """The content fingerprint of ``lf``'s ``audited`` columns (in this order) and the sketch of
    its near-unique columns (every column of ``lf`` is a candidate), in one streaming pass.
    ``meter`` (a :class:`fairaudit.core.progress.Meter`) is advanced by the rows read.

    ``counts`` names a column of row counts: each row of ``lf`` then stands for that many rows
    (a ``GROUP BY`` of the audited columns with ``COUNT(*)``, which is all a database source
    moves for a labels audit), and the fingerprint is the one of the rows it counts. Such a
    frame has no identifiers: nothing is sketched."""
    import polars as pl

    schema = lf.collect_schema()
    audited = list(audited)
    if not audited:
        raise ValueError("fingerprint_frame: no audited column")
    if counts is not None:
        if counts not in schema.names() or not schema[counts].is_integer():
            raise ValueError(f"fingerprint_frame: counts column {counts!r} must be an integer "
                             "column of the frame")
        if counts in audited:
            raise ValueError(f"fingerprint_frame: counts column {counts!r} is audited")
        sketch = False
    sketched: dict[str, _Bottom] = {}
    if sketch:
        for c in schema.names():
            dtype = schema[c]
            if not (dtype.is_nested() or dtype in (pl.Boolean, pl.Null, pl.Object)):
                sketched[c] = _Bottom(c, dtype.is_integer())
    needed = list(dict.fromkeys([*audited, *sketched]))  # each column read and hashed once
    alias = {c: f"c{j}" for j, c in enumerate(needed)}
    select = [pl.col(c).alias(alias[c]) for c in needed]
    if counts is not None:
        select.append(pl.col(counts).alias("n"))
    lanes = np.zeros(len(_LANES), dtype=np.uint64)
    rows = 0
    for batch in _batches(lf.select(select)):
        weight = None
        if counts is not None:
            weight = batch.get_column("n").cast(pl.Int64).to_numpy()
            if batch.get_column("n").null_count() or (weight < 0).any():
                raise ValueError(f"fingerprint_frame: counts column {counts!r} has a null or "
                                 "negative count")
        n = batch.height if weight is None else int(weight.sum())
        rows += n
        hashes = {}
        for c in needed:
            h = hash_values(batch.get_column(alias[c]))
            if h is None:
                raise ValueError(f"column {c!r} of type {schema[c]} cannot be fingerprinted")
            hashes[c] = h
        acc = [np.full(batch.height, _U(seed), dtype=np.uint64) for seed in _LANES]
        with np.errstate(over="ignore"):
            for i, c in enumerate(audited):
                for lane, seed in enumerate(_LANES):
                    acc[lane] = _mix(acc[lane] ^ (hashes[c] + _U((seed * (i + 1)) & _MASK)))
            for lane in range(len(_LANES)):
                if weight is not None:  # a row counted w times adds its hash w times (mod 2^64)
                    acc[lane] = acc[lane] * weight.astype(np.uint64)
                lanes[lane] += acc[lane].sum(dtype=np.uint64)
        for c, bottom in sketched.items():
            bottom.add(hashes[c], batch.get_column(alias[c]))
        if meter is not None:
            meter.update(rows)
    digest = hashlib.sha256(f"{SCHEME}|{len(audited)}|{rows}|".encode())
    digest.update(lanes.astype("<u8").tobytes())
    kept = sorted((b for b in sketched.values() if b.kept(rows)),
                  key=lambda b: -b.distinct() / max(b.values, 1))
    return DataFingerprint(
        f"{SCHEME}:{digest.hexdigest()}",
        tuple(ColumnSketch(b.column, b.hashes, b.hashes.size < SKETCH_K)
              for b in kept[:MAX_SKETCHED]))
