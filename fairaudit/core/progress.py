"""Progress of long steps: emitted as log records, shown by a handler the caller installs.

Convention (shared with the algorithm code): progress is reported only through the standard
``logging`` module, on the logger ``fairaudit.progress``::

    logging.getLogger("fairaudit.progress").info(
        "<task> %d/%d", done, total,
        extra={"progress": {"task": "<short name>", "done": done, "total": total,
                            "unit": "<unit>"}})

about once per second, plus a closing record (``done == total``, or ``"closed": True`` for a
task without a total). :class:`Meter` emits such records with the throttling built in.

Nothing is shown unless a caller installs :func:`show_progress` (the CLI does, unless
``--quiet``; Python users pass ``fairaudit.audit(..., progress=True)`` or use the context
manager). The handler draws bars (tqdm) when the stream is a terminal and otherwise writes a
plain line per running task every ``interval`` seconds (default 10; ``FAIRAUDIT_PROGRESS_INTERVAL``)
with its counts and elapsed time, and a closing line for a task it reported on. Progress never
reaches the JSON document or the report.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

__all__ = ["LOGGER_NAME", "Meter", "ProgressHandler", "show_progress", "step", "what_of"]

LOGGER_NAME = "fairaudit.progress"
_log = logging.getLogger(LOGGER_NAME)
DEFAULT_INTERVAL = 10.0
"""Seconds between two plain lines of one task (not a terminal)."""


class Meter:
    """Counts of one task, emitted as progress records at most every ``every`` seconds, plus
    the closing record (:meth:`close`, or leaving the ``with`` block).

    ``total=None``: the count is open-ended (e.g. rows read from a stream)."""

    def __init__(self, task: str, total: int | None, unit: str, *, every: float = 1.0,
                 logger: logging.Logger | None = None) -> None:
        self.task, self.total, self.unit, self.every = task, total, unit, every
        self.done = 0
        self._log = logger or _log
        self._last = -1.0e9
        self._closed = False
        self._emit(force=True)

    def update(self, done: int) -> None:
        """Set the count done so far (emits when ``every`` seconds have passed)."""
        self.done = int(done)
        self._emit(force=False)

    def advance(self, n: int = 1) -> None:
        self.update(self.done + n)

    def close(self, done: int | None = None) -> None:
        """The closing record (the count done, by default the total when there is one)."""
        if self._closed:
            return
        if done is not None:
            self.done = int(done)
        elif self.total is not None:
            self.done = self.total
        self._closed = True
        self._emit(force=True, closed=True)

    def __enter__(self) -> Meter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close(None if exc[0] is None else self.done)

    def _emit(self, *, force: bool, closed: bool = False) -> None:
        if not self._log.isEnabledFor(logging.INFO):
            return
        now = time.monotonic()
        if not force and now - self._last < self.every:
            return
        self._last = now
        info = {"task": self.task, "done": self.done, "total": self.total, "unit": self.unit}
        if closed:
            info["closed"] = True
        if self.total is None:
            self._log.info("%s %d %s", self.task, self.done, self.unit, extra={"progress": info})
        else:
            self._log.info("%s %d/%d", self.task, self.done, self.total,
                           extra={"progress": info})


def what_of(kind: str, name: str, labelling: str | None = None) -> str:
    """The task name of a run's step: ``"clusterer ffcm"``, ``"auditor balance on kmeans"``."""
    return f"{kind} {name}" + (f" on {labelling}" if labelling else "")


@contextlib.contextmanager
def step(task: str) -> Iterator[None]:
    """A step of the run without counts of its own (a clusterer's fit, a preprocessor): one
    record as it starts, a closing one as it ends, so the plain output says what is running."""
    meter = Meter(task, 1, "step")
    try:
        yield
    finally:
        meter.close()


@dataclass
class _Task:
    started: float
    last_line: float = -1.0e9
    reported: bool = False
    bar: Any = None
    done: int = 0
    total: int | None = None
    unit: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


class ProgressHandler(logging.Handler):
    """Shows progress records: tqdm bars on a terminal, periodic plain lines otherwise."""

    def __init__(self, stream: IO[str] | None = None, *, interval: float | None = None,
                 bars: bool | None = None, delay: float = 1.0) -> None:
        """``interval``: seconds between plain lines of a task; ``bars``: draw bars (default:
        when ``stream`` is a terminal); ``delay``: a bar appears once its task ran this long."""
        super().__init__(logging.INFO)
        self.delay = delay
        self.stream = stream if stream is not None else sys.stderr
        if interval is None:
            interval = float(os.environ.get("FAIRAUDIT_PROGRESS_INTERVAL", DEFAULT_INTERVAL))
        self.interval = max(0.0, interval)
        self.bars = _is_tty(self.stream) if bars is None else bars
        self._tasks: dict[str, _Task] = {}

    def emit(self, record: logging.LogRecord) -> None:
        info = getattr(record, "progress", None)
        if not isinstance(info, dict) or "task" not in info:
            return
        try:
            now = time.monotonic()
            name = str(info["task"])
            task = self._tasks.get(name)
            if task is None:
                task = self._tasks[name] = _Task(started=now)
            task.done = int(info.get("done") or 0)
            total = info.get("total")
            task.total = None if total is None else int(total)
            task.unit = str(info.get("unit") or "")
            closed = bool(info.get("closed")) or (
                task.total is not None and task.done >= task.total and task.done > 0)
            if self.bars:
                self._bar(name, task, closed)
            else:
                self._line(name, task, now, closed)
            if closed:
                self._tasks.pop(name, None)
        except Exception:  # a progress display must never break the run
            self.handleError(record)

    # ------------------------------------------------------------------ plain lines
    def _line(self, name: str, task: _Task, now: float, closed: bool) -> None:
        elapsed = now - task.started
        if closed:
            if task.reported or elapsed >= self.interval:
                self._write(f"{_counts(name, task)}, done in {_secs(elapsed)}")
            return
        if elapsed >= self.interval and now - task.last_line >= self.interval:
            task.last_line = now
            task.reported = True
            self._write(f"{_counts(name, task)}, {_secs(elapsed)} elapsed")

    def _write(self, text: str) -> None:
        self.acquire()
        try:
            self.stream.write(f"fairaudit: progress: {text}\n")
            self.stream.flush()
        finally:
            self.release()

    # ------------------------------------------------------------------ bars
    def _bar(self, name: str, task: _Task, closed: bool) -> None:
        if task.bar is None:
            from tqdm import tqdm

            task.bar = tqdm(total=task.total, desc=name, unit=f" {task.unit}" if task.unit else "",
                            file=self.stream, leave=False, dynamic_ncols=True, mininterval=0.2,
                            unit_scale=True, delay=self.delay)
        bar = task.bar
        if bar.total != task.total:
            bar.total = task.total
        bar.update(max(0, task.done - bar.n))
        if closed:
            bar.close()

    def close(self) -> None:
        for task in self._tasks.values():
            if task.bar is not None:
                task.bar.close()
        self._tasks.clear()
        super().close()


def _counts(name: str, task: _Task) -> str:
    unit = f" {task.unit}" if task.unit and task.unit != "step" else ""
    if task.total is None:
        return f"{name}: {task.done:,}{unit}"
    if task.unit == "step":
        return f"{name}"
    pct = f" ({100.0 * task.done / task.total:.0f}%)" if task.total else ""
    return f"{name}: {task.done:,}/{task.total:,}{unit}{pct}"


def _secs(s: float) -> str:
    return f"{s:.1f} s" if s < 120 else f"{int(s // 60)} min {int(s % 60):02d} s"


def _is_tty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def show_progress(enabled: bool = True, *, stream: IO[str] | None = None,
                  interval: float | None = None) -> Iterator[ProgressHandler | None]:
    """Show the progress of everything run inside the block (and nothing after it).

    Installs a :class:`ProgressHandler` on the ``fairaudit.progress`` logger with propagation
    off (so progress records do not reach other log handlers), and restores the logger as it
    was on the way out. ``enabled=False`` silences progress for the block (``--quiet``).

        >>> from fairaudit.core.progress import show_progress
        >>> with show_progress():
        ...     run = fairaudit.audit("customers.parquet", sensitive=["sex"], labels="segment")
    """
    logger = logging.getLogger(LOGGER_NAME)
    saved = (logger.level, logger.propagate, list(logger.handlers))
    handler = ProgressHandler(stream, interval=interval) if enabled else None
    logger.handlers = [handler] if handler is not None else []
    logger.propagate = False
    logger.setLevel(logging.INFO if enabled else logging.CRITICAL + 1)
    try:
        yield handler
    finally:
        if handler is not None:
            handler.close()
        logger.setLevel(saved[0])
        logger.propagate = saved[1]
        logger.handlers = saved[2]
