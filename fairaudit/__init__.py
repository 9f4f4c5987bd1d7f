"""fairaudit: audit the fairness of clusterings of tabular data about people."""

from __future__ import annotations

__version__ = "0.1.0"
