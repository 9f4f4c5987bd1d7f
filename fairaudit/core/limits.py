"""Size and nesting limits of the documents fairaudit reads (chain TOML, audit JSON).

Checked on the raw text before parsing, so a file that would exhaust memory or the stack (a JSON
array nested 100,000 deep, a chain nested 5,000 deep) is refused with a clear error instead.
"""

from __future__ import annotations

import re
from pathlib import Path

from fairaudit.errors import InputError

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
    """The UTF-8 text of ``path``, refused when larger than ``max_bytes``."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise error(f"{path}: cannot be read ({exc.strerror})") from None
    if size > max_bytes:
        raise error(f"{path}: {size:,} bytes; a {what} is at most {max_bytes:,} bytes")
    try:
        return path.read_text(encoding="utf-8")
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
