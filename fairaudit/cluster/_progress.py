"""Progress of the clusterers' long loops, through stdlib logging only (issue 25).

Each record goes to the ``fairaudit.progress`` logger at INFO with a ``progress`` dict in
``extra``: ``{"task": short name, "done": int, "total": int, "unit": "sweeps" | "rows" | ...}``.
The host turns these into a progress display (or plain log lines); without a handler that
accepts INFO on that logger nothing is formatted and the loops pay one cached boolean test.

Records are throttled: at most one a second per loop, plus one when the loop ends. A loop that
stops before ``total`` (a converged iteration under its ``max_iter`` cap) reports its end with
``done == total`` = the steps it took, so a display can close the bar.
"""

from __future__ import annotations

import logging
import time

__all__ = ["Progress", "logger"]

logger = logging.getLogger("fairaudit.progress")

INTERVAL = 1.0
"""Seconds between two records of one loop (its last record is always sent)."""


class Progress:
    """Throttled progress records of one loop: ``update(done)`` inside it, ``close()`` after."""

    __slots__ = ("enabled", "task", "total", "unit", "_last", "_sent")

    def __init__(self, task: str, total: int, unit: str) -> None:
        self.enabled = logger.isEnabledFor(logging.INFO)
        self.task = task
        self.total = int(total)
        self.unit = unit
        self._last = time.monotonic()
        self._sent = -1

    def update(self, done: int) -> None:
        """Report ``done`` of ``total`` if a second has passed since the last record."""
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last >= INTERVAL and done != self._sent:
            self._emit(int(done), self.total)
            self._last = now

    def close(self, done: int | None = None) -> None:
        """The loop has ended after ``done`` steps (default ``total``): one last record."""
        if not self.enabled:
            return
        done = self.total if done is None else int(done)
        if done == self._sent == self.total:  # the last update already said so
            return
        self._emit(done, min(done, self.total))

    def _emit(self, done: int, total: int) -> None:
        self._sent = done
        logger.info(
            "%s %d/%d", self.task, done, total,
            extra={"progress": {"task": self.task, "done": done, "total": total,
                                "unit": self.unit}},
        )
