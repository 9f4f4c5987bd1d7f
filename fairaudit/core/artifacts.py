"""The closed set of artifact keys that components declare in ``requires`` / ``provides``.

A chain is valid only when every key a step requires is provided by the input data or by an
earlier step. Keeping the set closed means a typo in a plugin is an error, not a silent no-op.
"""

from __future__ import annotations

FEATURES = "features"
"""Numeric feature matrix (after preprocessing)."""
CATEGORICAL = "categorical"
"""Raw categorical feature columns (kept beside the encoded matrix, e.g. for FairDen's Goodall)."""
SENSITIVE = "sensitive"
"""Sensitive attributes. Given to a component only when it declares it in ``requires``."""
LABELS = "labels"
"""A hard labelling (int per row, -1 = noise)."""
LABELLINGS = "labellings"
"""Several earlier labellings (consensus clusterers such as FCE combine them)."""
PROTOTYPES = "prototypes"
"""Cluster prototypes / centres (k x d)."""
MEMBERSHIPS = "memberships"
"""Soft memberships (n x k, rows sum to 1)."""
WEIGHTS = "weights"
"""Per-row weights."""

ARTIFACTS: frozenset[str] = frozenset(
    {FEATURES, CATEGORICAL, SENSITIVE, LABELS, LABELLINGS, PROTOTYPES, MEMBERSHIPS, WEIGHTS}
)
"""Every key a component may name."""

INPUT_ARTIFACTS: frozenset[str] = frozenset({FEATURES, CATEGORICAL, SENSITIVE})
"""Keys the input data provides before any step runs."""
