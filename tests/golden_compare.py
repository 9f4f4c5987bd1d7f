"""How the golden tests compare an output with its golden file: numbers within a stated
tolerance, everything else exactly.

Floating-point reductions (BLAS kernels, SIMD paths, thread counts, another CPU) move the last
bits of a float between machines with the same package versions; nothing else of the output may
move. So:

* **JSON** is compared as a parsed structure: the same keys, the same list lengths, the same
  types, strings, integers, booleans and nulls exactly, and floats within
  ``|a - b| <= RTOL * max(|a|, |b|) + ATOL`` (``RTOL = 1e-6``, ``ATOL = 1e-12``). A headline value
  that changes in its 5th significant digit (a relative change of at least 1e-5) fails; one that
  moves in its 8th (1e-7) passes.
* **Text** (the HTML report, the compare/history pages, CSV, and every JSON string such as the
  sentences) is split into numbers and the text between them. The text must be identical
  (a verdict word, a group name, a sentence's wording, the document's shape). An integer (no
  decimal point, no exponent: a count such as "11 of the 37") must be identical. A decimal number
  may differ by the float tolerance above or by one unit of its last printed digit, whichever is
  larger: a float printed to three decimals ("0.933") flips its last digit when the value sits
  on a rounding boundary and moves in its 8th digit; the JSON's numeric fields still pin the
  value itself to RTOL. A minus sign belongs to the number it precedes (not after a letter,
  digit or point: a hyphen), so a value near zero may change sign within ATOL.

``first_differences`` returns readable differences (empty when the outputs agree).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

RTOL = 1e-6
ATOL = 1e-12
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
"""A number in text: a minus sign is part of it unless a letter, digit or point comes before
(then it is a hyphen: 2026-12-03, sex-race), so that a float near zero whose last bits flip its
sign (an eigenvalue of -2.2e-15 and of 2.2e-15) is compared as the numbers it is."""


def floats_close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= RTOL * max(abs(a), abs(b)) + ATOL


def _last_digit(token: str) -> float:
    """One unit of the last printed digit of a decimal token ("0.933" -> 0.001)."""
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


def _tokens_close(a: str, b: str) -> bool:
    if a == b:
        return True
    decimal = ("." in a or "e" in a.lower()) and ("." in b or "e" in b.lower())
    if not decimal:
        return False  # integers (counts) are exact
    x, y = float(a), float(b)
    return floats_close(x, y) or abs(x - y) <= max(_last_digit(a), _last_digit(b)) * (1 + 1e-9)


def text_differences(expected: str, got: str, *, limit: int = 10) -> list[str]:
    """Differences between two texts: numbers within tolerance, the rest exactly."""
    exp_parts, got_parts = _NUMBER.split(expected), _NUMBER.split(got)
    exp_nums, got_nums = _NUMBER.findall(expected), _NUMBER.findall(got)
    out: list[str] = []
    if exp_parts != got_parts or len(exp_nums) != len(got_nums):
        out.append(_first_text_change(expected, got))
        return out
    for i, (a, b) in enumerate(zip(exp_nums, got_nums, strict=True)):
        if not _tokens_close(a, b):
            where = sum(len(p) for p in exp_parts[: i + 1]) + sum(len(n) for n in exp_nums[:i])
            line = expected.count("\n", 0, where) + 1
            out.append(f"line {line}: number {a} is now {b}")
            if len(out) >= limit:
                break
    return out


def _same_line(a: str, b: str) -> bool:
    nums_a, nums_b = _NUMBER.findall(a), _NUMBER.findall(b)
    return (_NUMBER.split(a) == _NUMBER.split(b) and len(nums_a) == len(nums_b)
            and all(_tokens_close(x, y) for x, y in zip(nums_a, nums_b, strict=True)))


def _first_text_change(expected: str, got: str) -> str:
    exp, now = expected.splitlines(), got.splitlines()
    for i in range(max(len(exp), len(now))):
        a = exp[i] if i < len(exp) else "<end>"
        b = now[i] if i < len(now) else "<end>"
        if not _same_line(a, b):
            return f"line {i + 1}:\n  golden: {a[:300]}\n  now:    {b[:300]}"
    return "the texts differ in their line breaks"


def json_differences(expected: Any, got: Any, path: str = "$", *,
                     limit: int = 10) -> list[str]:
    """Differences between two parsed JSON documents (see the module docstring)."""
    out: list[str] = []
    _walk(expected, got, path, out, limit)
    return out


def _walk(a: Any, b: Any, path: str, out: list[str], limit: int) -> None:
    if len(out) >= limit:
        return
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        if a is not b and a != b or type(a) is not type(b):
            out.append(f"{path}: {json.dumps(a)} is now {json.dumps(b)}")
        return
    if isinstance(a, float) and isinstance(b, float):
        if not floats_close(a, b):
            out.append(f"{path}: {a!r} is now {b!r}")
        return
    if type(a) is not type(b):
        out.append(f"{path}: {type(a).__name__} {_short(a)} is now {type(b).__name__} {_short(b)}")
        return
    if isinstance(a, dict):
        if a.keys() != b.keys():
            gone, new = sorted(a.keys() - b.keys()), sorted(b.keys() - a.keys())
            out.append(f"{path}: keys removed {gone}, added {new}")
            return
        for k in sorted(a):
            _walk(a[k], b[k], f"{path}.{k}", out, limit)
    elif isinstance(a, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} items are now {len(b)}")
            return
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _walk(x, y, f"{path}[{i}]", out, limit)
    elif isinstance(a, str):
        if a != b and text_differences(a, b):
            out.append(f"{path}: {a[:200]!r} is now {b[:200]!r}")
    elif a != b:  # int
        out.append(f"{path}: {a} is now {b}")


def _short(x: Any) -> str:
    text = json.dumps(x)
    return text if len(text) <= 80 else text[:77] + "..."
