"""The document's primitive values, below every other module of the report: how a number is
written into the audit JSON (:func:`finite`), the schema version and the first check of a
document (:func:`check_document`), and the note prefix :data:`TARGET_NOTE`.

They live here, not in :mod:`fairaudit.report.results`, so that the modules the run's own views
read (:mod:`fairaudit.report.answer`, :mod:`fairaudit.report.summary`, and through the twins'
pairing :mod:`fairaudit.ops.compare`) do not import the result model that shows them:
``AuditRun`` -> view -> answer -> values, never back. ``results`` exports these names as before.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["SCHEMA_VERSION", "TARGET_NOTE", "check_document", "finite"]

SCHEMA_VERSION = "1.1"
"""The audit JSON's schema version (``fairaudit/schema/audit.schema.json``); a reader reads
documents of the same major version."""

TARGET_NOTE = "Fairness target: "
"""A clusterer's note (``notes_``, in ``labellings[i].notes``) that starts with this says it
balanced something other than each sensitive attribute the user named (e.g. their
intersection): the console shows it among the warnings, not only the report and the JSON."""


def finite(x: Any) -> float | None:
    """``x`` as a float, or ``None`` when it is null, a bool, NaN, infinite or not a number.

    JSON has no NaN: undefined values are written as null. Auditors and report sections use this
    for every number they put into the JSON document."""
    if x is None or isinstance(x, bool):
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def check_document(doc: Any) -> None:
    """Raise :class:`~fairaudit.errors.InputError` unless ``doc`` is an audit JSON document of
    this major schema version (the first check of ``AuditRun.from_json`` and of every reader)."""
    from fairaudit.errors import InputError

    if not isinstance(doc, Mapping) or "schema_version" not in doc or "results" not in doc:
        raise InputError("not a fairaudit audit JSON document (no 'schema_version'/'results')")
    major = str(doc["schema_version"]).split(".")[0]
    if major != SCHEMA_VERSION.split(".")[0]:
        raise InputError(
            f"audit JSON has schema_version {doc['schema_version']}; this fairaudit reads "
            f"{SCHEMA_VERSION.split('.')[0]}.x"
        )
