"""The golden comparison rule (``tests/golden_compare.py``) catches every real change and lets the
last bits of floating point move: shown on the shipped golden files themselves."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from golden_compare import json_differences, text_differences

GOLDEN = Path(__file__).resolve().parent / "golden"


@pytest.fixture(scope="module")
def labels_doc() -> dict:
    return json.loads((GOLDEN / "labels.json").read_text(encoding="utf-8"))


def _headline(doc: dict) -> dict:
    return next(r for r in doc["results"] if r.get("headline") and isinstance(r["value"], float))


def _scale_floats(x, factor):
    if isinstance(x, float):
        return x * factor
    if isinstance(x, list):
        return [_scale_floats(v, factor) for v in x]
    if isinstance(x, dict):
        return {k: _scale_floats(v, factor) for k, v in x.items()}
    return x


def test_a_golden_equals_itself(labels_doc):
    assert json_differences(labels_doc, copy.deepcopy(labels_doc)) == []


@pytest.mark.parametrize("rel", [1e-8, 3e-8, -5e-8, 1e-7])
def test_every_float_moving_in_its_8th_digit_passes(labels_doc, rel):
    assert json_differences(labels_doc, _scale_floats(labels_doc, 1 + rel)) == []


@pytest.mark.parametrize("rel", [1e-4, 2e-5, -1.5e-5])
def test_a_headline_value_changing_in_its_5th_digit_fails(labels_doc, rel):
    doc = copy.deepcopy(labels_doc)
    result = _headline(doc)
    result["value"] *= 1 + rel
    diffs = json_differences(labels_doc, doc)
    i = labels_doc["results"].index(_headline(labels_doc))
    assert diffs and diffs[0].startswith(f"$.results[{i}].value: "), diffs


def test_a_changed_verdict_word_count_or_key_fails(labels_doc):
    doc = copy.deepcopy(labels_doc)
    verdict = doc["verdicts"][0]
    verdict["verdict"] = "fair" if verdict["verdict"] != "fair" else "unfair"
    assert any(d.startswith("$.verdicts[0].verdict: ") for d in json_differences(labels_doc, doc))

    doc = copy.deepcopy(labels_doc)
    doc["input"]["rows"] += 1
    assert json_differences(labels_doc, doc) == [
        f"$.input.rows: {labels_doc['input']['rows']} is now {doc['input']['rows']}"]

    doc = copy.deepcopy(labels_doc)
    doc["results"][0]["new_field"] = 1
    assert json_differences(labels_doc, doc)

    doc = copy.deepcopy(labels_doc)
    doc["results"].pop()
    assert json_differences(labels_doc, doc)

    doc = copy.deepcopy(labels_doc)
    doc["results"][0]["n_rows"] = float(doc["results"][0]["n_rows"])  # int -> float
    assert json_differences(labels_doc, doc)


def test_sentences_compare_words_and_counts_exactly_and_printed_decimals_to_their_last_digit():
    base = "Segment 0 holds 87 of the 895 M people, 282 expected (balance 0.308; CI [0.259, 0.365])"
    assert text_differences(base, base) == []
    # a printed decimal on a rounding boundary may flip its last digit ...
    assert text_differences(base, base.replace("0.308", "0.309")) == []
    # ... but no more than that
    assert text_differences(base, base.replace("0.308", "0.310"))
    assert text_differences(base, base.replace("87 of", "88 of"))  # a count
    assert text_differences(base, base.replace("holds", "keeps"))  # a word
    assert text_differences(base, base.replace(" M ", " F "))  # a group
    assert text_differences(base, base + ".")  # the shape
    # full-precision floats in text (the report's raw JSON) within the relative tolerance
    raw = '"soft_size": 23.00000000000145, "x": 0.782903557'
    assert text_differences(raw, '"soft_size": 23.000000000000746, "x": 0.782903543') == []
    assert text_differences(raw, '"soft_size": 23.00000000000145, "x": 0.782913557')


def test_a_float_near_zero_may_flip_its_sign_within_the_absolute_tolerance():
    """A zero eigenvalue computed as -2.2e-15 on one machine and 2.2e-15 on another is the same
    number to the stated tolerance (ATOL 1e-12); a sign is part of a number, a hyphen is not."""
    row = "<td>[-2.220446049250313e-15, 0.14627987189246683, 0.34168689879324077]</td>"
    assert text_differences(row, row.replace("[-2.2", "[2.2").replace("683", "594")) == []
    assert text_differences("x = -0.5", "x = 0.5")  # a real change of sign
    assert text_differences("a count of -3", "a count of 3")  # integers exactly
    day = "run of 2026-12-03, sex-race cells 1-4"
    assert text_differences(day, day) == []
    assert text_differences(day, day.replace("2026-12-03", "2026-12-04"))
    assert text_differences(day, day.replace("1-4", "1-5"))


def test_the_html_golden_catches_a_changed_word_or_number_and_ignores_a_last_digit_flip():
    import re

    html = (GOLDEN / "labels.html").read_text(encoding="utf-8")
    assert text_differences(html, html) == []
    assert text_differences(html, html.replace("unfair", "fair", 1))
    m = re.search(r"(?<![\d.])0\.(\d{3})(?![\d.])", html)
    assert m, "a three-decimal number in the report"
    digits = int(m.group(1))

    def with_(value: int) -> str:
        return html[: m.start()] + f"0.{value:03d}" + html[m.end():]

    flip = digits + 1 if digits < 999 else digits - 1
    assert text_differences(html, with_(flip)) == []
    assert text_differences(html, with_((digits + 500) % 1000))
