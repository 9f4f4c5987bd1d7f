"""Limits: the size and nesting of the documents fairaudit reads (chain TOML, audit JSON), and
the memory a run may plan to use.

Documents are checked on the raw text before parsing, and read with a bound whatever the file
is (``/dev/zero`` is refused, a pipe is read up to the bound), so a file that would exhaust
memory or the stack (a JSON array nested 100,000 deep, a chain nested 5,000 deep) is refused
with a clear error instead. The memory a run's large steps need (the bootstrap replicates, the
in-memory rows) is estimated before they start and compared with ``--max-memory`` (default: 80 %
of the memory available): above it, exit 2 naming what needs less and the bound.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from fairaudit.errors import InputError

if TYPE_CHECKING:
    from fairaudit.core.contingency import JointTable

MAX_JSON_BYTES = 1 << 30
"""An audit JSON larger than 1 GiB is not one fairaudit wrote (a large audit is a few MB)."""
MAX_JSON_DEPTH = 64
"""Audit JSON documents nest about 8 deep; 64 leaves room for plugins' ``detail``."""
MAX_TOML_BYTES = 1 << 20
MAX_TOML_DEPTH = 32

_JSON_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_TOML_SKIP = re.compile(
    r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*'
)


def read_limited(path: Path, max_bytes: int, what: str, error: type[Exception] = InputError
                 ) -> str:
    """The UTF-8 text of ``path``, refused when larger than ``max_bytes``.

    Never reads more than ``max_bytes + 1`` bytes, whatever ``path`` is: a regular file is
    refused by its size first; a pipe or FIFO (``<(...)`` in a shell) is read up to the bound (a
    FIFO without a writer is refused instead of waiting for one); a device (``/dev/zero``), a
    socket or a folder is refused."""
    import stat

    from fairaudit.core.io import file_kind

    path = Path(path)
    try:
        st = os.stat(path)
    except OSError as exc:
        raise error(f"{path}: cannot be read ({exc.strerror})") from None
    fifo = stat.S_ISFIFO(st.st_mode)
    if not (stat.S_ISREG(st.st_mode) or fifo):
        raise error(f"{path}: is {file_kind(st.st_mode)}, not a regular file; a {what} is read "
                    "from a file")
    if st.st_size > max_bytes:
        raise error(f"{path}: {st.st_size:,} bytes; a {what} is at most {max_bytes:,} bytes")
    try:
        # a FIFO opened without O_NONBLOCK waits for a writer; opened with it, then read
        # blocking, it reads what its writer sends, or nothing when there is none
        fd = os.open(path, os.O_RDONLY | (os.O_NONBLOCK if fifo else 0))
        if fifo:
            os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise error(f"{path}: cannot be read ({exc.strerror})") from None
    if fifo and not data:  # no writer (yet): an empty document would be taken for a real one
        raise error(f"{path}: is a FIFO that gave no data (no process writes to it); a {what} "
                    "is read from a file, or from a pipe whose writer is running")
    if len(data) > max_bytes:
        raise error(f"{path}: more than {max_bytes:,} bytes; a {what} is at most "
                    f"{max_bytes:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise error(f"{path}: not valid UTF-8 text") from None


def nesting_depth(text: str, toml: bool = False) -> int:
    """The deepest nesting of ``[``/``{`` in ``text`` outside strings (and TOML comments)."""
    import numpy as np

    bare = (_TOML_SKIP if toml else _JSON_STRINGS).sub("", text)
    codes = np.frombuffer(bare.encode("utf-8"), dtype=np.uint8)
    step = np.zeros(codes.shape, dtype=np.int64)
    step[(codes == ord("[")) | (codes == ord("{"))] = 1
    step[(codes == ord("]")) | (codes == ord("}"))] = -1
    return int(np.cumsum(step).max()) if step.size else 0


def check_nesting(text: str, where: str, max_depth: int, *, toml: bool = False,
                  error: type[Exception] = InputError) -> None:
    depth = nesting_depth(text, toml=toml)
    if depth > max_depth:
        raise error(f"{where}: nested {depth:,} levels deep; fairaudit reads documents nested at "
                    f"most {max_depth} deep")


# --------------------------------------------------------------------------- memory of a run
MEMORY_SHARE = 0.8
"""Without ``--max-memory``, a run may plan to use this share of the memory available when it
starts (``MemAvailable``)."""
FALLBACK_MEMORY = 8 * 1024**3
"""The bound when the available memory cannot be read (not Linux): 8 GiB."""
_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024**2, "mb": 1024**2,
          "mib": 1024**2, "g": 1024**3, "gb": 1024**3, "gib": 1024**3, "t": 1024**4,
          "tb": 1024**4, "tib": 1024**4}
_SIZE = re.compile(r"^\s*(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>[a-zA-Z]*)\s*$")


def parse_size(value: object) -> int | None:
    """Bytes of ``"8G"``, ``"512 MiB"``, ``"1.5GB"`` or a number of bytes; None when it is not
    a size (units are powers of 1024)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    if isinstance(value, float):
        return int(value) if value >= 1 and value == value and value != float("inf") else None
    if not isinstance(value, str):
        return None
    m = _SIZE.match(value)
    if m is None or m["unit"].lower() not in _UNITS:
        return None
    n = int(float(m["n"]) * _UNITS[m["unit"].lower()])
    return n if n > 0 else None


def format_size(n: float) -> str:
    """``12.3 GB``, ``512 MB``: a size for a message (powers of 1024)."""
    for unit, size in (("TB", 1024**4), ("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} bytes"


def available_memory() -> int | None:
    """``MemAvailable`` of ``/proc/meminfo`` in bytes (Linux); None when unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def memory_bound(max_memory: int | None) -> tuple[int, str]:
    """The bytes a run may plan to use, and how the bound was set (for messages)."""
    if max_memory is not None:
        return int(max_memory), f"--max-memory {format_size(max_memory)}"
    avail = available_memory()
    if avail is None:
        return FALLBACK_MEMORY, f"the default of {format_size(FALLBACK_MEMORY)}"
    return int(avail * MEMORY_SHARE), (f"{MEMORY_SHARE:.0%} of the {format_size(avail)} of "
                                       "memory available")


def check_memory(needed: float, max_memory: int | None, what: str, lower: str) -> None:
    """A :class:`ResourceError` (exit 2) when ``needed`` bytes exceed the bound: ``what`` says
    what needs them, ``lower`` how to need less; the message names ``--max-memory``."""
    from fairaudit.errors import ResourceError

    bound, how = memory_bound(max_memory)
    if needed <= bound:
        return
    raise ResourceError(
        f"{what}: about {format_size(needed)} of memory needed, more than the bound ({how}); "
        f"{lower}, or raise the bound with --max-memory {format_size(needed * 1.25)} "
        "(chain: options.max_memory; Python: max_memory=)")


# --------------------------------------------------------------- the bootstrap's memory
def bootstrap_bytes(joint: JointTable, n_boot: int, min_cell: int) -> tuple[float, str, int]:
    """Peak bytes of one labelling's bootstrap (every attribute's B x groups x clusters
    replicate tables held at once, as the auditors share them, plus the draw of the largest),
    the attribute with the largest table and its groups: estimated from the joint table before
    any replicate is drawn."""
    cells = int(joint.counts.size)
    held, largest, name, groups = 0, 0, "", 0
    for attribute in joint.attribute_names:
        t = joint.table(attribute)
        g = int((t.counts.sum(axis=1) >= min_cell).sum()) if t.counts.size else 0
        size = g * int(t.counts.shape[1]) if t.counts.size else 0
        held += size
        if size >= largest:
            largest, name, groups = size, attribute, g
    # 8-byte replicates: the tables held; while the largest is built, its draw (B x cells) and
    # the three copies bootstrap_counts makes of it; the intervals' temporaries: up to 30
    # tables for small tables, down to 4 for large ones (blocks of fixed size), measured with
    # tracemalloc (tests/test_hostile_inputs.py checks the estimate against the peak)
    per_table = 30.0 if largest <= 2000 else max(4.0, 30.0 * 2000 / largest)
    need = 8.0 * n_boot * (held + 4 * cells + per_table * largest) + _FIXED_BYTES
    return need, name, groups


_FIXED_BYTES = 16 * 1024**2
"""Temporaries of fixed size (the intervals' blocks of statistics, a few MB)."""


def check_bootstrap_memory(joints: Mapping[str, JointTable], n_boot: int, min_cell: int,
                           max_memory: int | None) -> None:
    """Exit 2 before any replicate is drawn when the bootstrap of a labelling would need more
    memory than ``--max-memory`` allows (the replicates of every joint table are held at once)."""
    worst: tuple[float, str, str, int] | None = None
    for name, joint in joints.items():
        need, attribute, groups = bootstrap_bytes(joint, n_boot, min_cell)
        if worst is None or need > worst[0]:
            worst = (need, name, attribute, groups)
    if worst is None:
        return
    need, name, attribute, groups = worst
    fits = max(0, int(n_boot * 0.9 * _bound_of(max_memory) / need)) if need else n_boot
    check_memory(
        need, max_memory,
        f"the confidence intervals of {name!r} (--bootstrap {n_boot:,} replicates of every "
        f"table; {groups:,} groups of {attribute!r} with at least --min-cell rows)",
        (f"lower --bootstrap (about {fits:,} would fit)" if fits >= 1 else "use --bootstrap 0")
        + f", or bin {attribute!r} into fewer groups")


def _bound_of(max_memory: int | None) -> int:
    return memory_bound(max_memory)[0]
