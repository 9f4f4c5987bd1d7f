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
plain timestamped line (``fairaudit: progress: [21:04:05] ...``) every ``interval`` seconds (default 10; ``FAIRAUDIT_PROGRESS_INTERVAL``) naming each
task running longer than that, with its elapsed time and latest counts, and a closing line for a
task it reported on. A heartbeat thread writes these lines (refreshes the bars) also while a
step reports nothing, so a silent 40-second fit still shows it is running; the thread stops
with the handler (on errors and ``KeyboardInterrupt`` too). Progress never reaches the JSON
document or the report.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

__all__ = ["LOGGER_NAME", "Meter", "ProgressHandler", "show_progress", "step", "what_of"]

LOGGER_NAME = "fairaudit.progress"
_log = logging.getLogger(LOGGER_NAME)
log = logging.getLogger(__name__)
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

    def close(self, done: int | None = None, *, failed: bool = False) -> None:
        """The closing record (the count done, by default the total when there is one);
        ``failed``: the task stopped on an error or an interrupt (the display says so)."""
        if self._closed:
            return
        if done is not None:
            self.done = int(done)
        elif self.total is not None and not failed:
            self.done = self.total
        self._closed = True
        self._emit(force=True, closed=True, failed=failed)

    def __enter__(self) -> Meter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close(None if exc[0] is None else self.done, failed=exc[0] is not None)

    def _emit(self, *, force: bool, closed: bool = False, failed: bool = False) -> None:
        if not self._log.isEnabledFor(logging.INFO):
            return
        now = time.monotonic()
        if not force and now - self._last < self.every:
            return
        self._last = now
        info = {"task": self.task, "done": self.done, "total": self.total, "unit": self.unit}
        if closed:
            info["closed"] = True
        if failed:
            info["failed"] = True
        if self.total is None:
            self._log.info("%s %d %s", self.task, self.done, self.unit, extra={"progress": info})
        else:
            self._log.info("%s %d/%d", self.task, self.done, self.total,
                           extra={"progress": info})


def what_of(kind: str, name: str, labelling: str | None = None) -> str:
    """The task name of a run's step: ``"clusterer ffcm"``, ``"auditor balance on kmeans"``
    (a clusterer's own labelling is not named twice)."""
    return f"{kind} {name}" + (f" on {labelling}" if labelling and labelling != name else "")


@contextlib.contextmanager
def step(task: str) -> Iterator[None]:
    """A step of the run without counts of its own (a clusterer's fit, a preprocessor): one
    record as it starts, a closing one as it ends, so the plain output says what is running."""
    meter = Meter(task, 1, "step")
    try:
        yield
    except BaseException:
        meter.close(0, failed=True)
        raise
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


MIN_BEAT = 0.25
"""Seconds: the shortest gap between two heartbeat lines (when ``interval`` is smaller)."""


class ProgressHandler(logging.Handler):
    """Shows progress records: tqdm bars on a terminal, periodic plain lines otherwise.

    A heartbeat thread (started with the first record, stopped by :meth:`close`) keeps the
    display alive while a task runs without reporting: a step that takes 40 s and counts nothing
    still gets a plain line every ``interval`` seconds naming it, its elapsed time and the latest
    counts of the tasks open inside it; on a terminal the bars' clocks keep ticking."""

    def __init__(self, stream: IO[str] | None = None, *, interval: float | None = None,
                 bars: bool | None = None, delay: float = 1.0, heartbeat: bool = True) -> None:
        """``interval``: seconds between plain lines of a task; ``bars``: draw bars (default:
        when ``stream`` is a terminal); ``delay``: a bar appears once its task ran this long;
        ``heartbeat``: lines (or bar refreshes) between records, from a daemon thread."""
        super().__init__(logging.INFO)
        self.delay = delay
        self.stream = stream if stream is not None else sys.stderr
        if interval is None:
            interval = _env_interval()
        self.interval = max(0.0, interval)
        self.bars = _is_tty(self.stream) if bars is None else bars
        self._tasks: dict[str, _Task] = {}
        self._heartbeat = heartbeat
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

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
                self._start_heartbeat()
            task.done = int(info.get("done") or 0)
            total = info.get("total")
            task.total = None if total is None else int(total)
            task.unit = str(info.get("unit") or "")
            failed = bool(info.get("failed"))
            closed = failed or bool(info.get("closed")) or (
                task.total is not None and task.done >= task.total and task.done > 0)
            if self.bars:
                self._bar(name, task, closed)
            elif closed:
                self._closing_line(name, task, now, failed)
            if closed:
                self._tasks.pop(name, None)
            elif not self.bars:
                self._tick(now, self.interval)
        except Exception:  # a progress display must never break the run
            self.handleError(record)

    # ------------------------------------------------------------------ plain lines
    def _closing_line(self, name: str, task: _Task, now: float, failed: bool) -> None:
        elapsed = now - task.started
        if task.reported or elapsed >= self.interval:
            if failed:
                self._write(f"{name}: stopped after {_secs(elapsed)}")
            else:
                self._write(f"{_counts(name, task)}, done in {_secs(elapsed)}")

    def _tick(self, now: float, gap: float) -> None:
        """One line naming every open task that ran past the interval (the outer step first,
        then the counts inside it), when one of them had no line for ``gap`` seconds."""
        running = [(name, t) for name, t in self._tasks.items()
                   if now - t.started >= self.interval]
        if not any(now - t.last_line >= gap for _, t in running):
            return
        for _, t in running:
            t.last_line = now
            t.reported = True
        self._write("; ".join(f"{_counts(name, t)}, {_secs(now - t.started)} elapsed"
                              for name, t in running))

    def _write(self, text: str) -> None:
        self.acquire()
        try:
            stamp = time.strftime("%H:%M:%S")  # local time, as a log reader expects
            self.stream.write(f"fairaudit: progress: [{stamp}] {text}\n")
            self.stream.flush()
        finally:
            self.release()

    # ------------------------------------------------------------------ heartbeat
    def _start_heartbeat(self) -> None:
        if not self._heartbeat or self._thread is not None or self._stop.is_set():
            return
        self._thread = threading.Thread(target=self._beat, name="fairaudit-progress",
                                        daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        gap = max(self.interval, MIN_BEAT)
        while not self._stop.wait(min(gap, 1.0)):
            self.acquire()
            try:
                if self._stop.is_set():
                    return
                now = time.monotonic()
                if self.bars:
                    for task in self._tasks.values():
                        if task.bar is not None and now - task.started >= self.delay:
                            task.bar.refresh()  # the elapsed clock of a silent step
                else:
                    self._tick(now, gap)
            except Exception:  # never let the display thread die loudly mid-run
                pass
            finally:
                self.release()

    # ------------------------------------------------------------------ bars
    def _bar(self, name: str, task: _Task, closed: bool) -> None:
        if task.bar is None:
            if closed and time.monotonic() - task.started < self.delay:
                return  # opened and closed at once: nothing to draw
            from tqdm import tqdm

            fmt = "{desc}: {elapsed}" if task.unit == "step" else None
            task.bar = tqdm(total=task.total, desc=name, unit=f" {task.unit}" if task.unit else "",
                            file=self.stream, leave=False, dynamic_ncols=True, mininterval=0.2,
                            unit_scale=True, delay=self.delay, bar_format=fmt)
        bar = task.bar
        if bar.total != task.total:
            bar.total = task.total
        bar.update(max(0, task.done - bar.n))
        if closed:
            bar.close()

    def close(self) -> None:
        """Stop the heartbeat (waits for its thread) and close the open bars."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5.0)
        self.acquire()
        try:
            for task in self._tasks.values():
                if task.bar is not None:
                    task.bar.close()
            self._tasks.clear()
        finally:
            self.release()
        super().close()


def _env_interval() -> float:
    raw = os.environ.get("FAIRAUDIT_PROGRESS_INTERVAL", "")
    try:
        return float(raw) if raw.strip() else DEFAULT_INTERVAL
    except ValueError:
        log.warning("FAIRAUDIT_PROGRESS_INTERVAL=%r is not a number of seconds; using %g",
                    raw, DEFAULT_INTERVAL)
        return DEFAULT_INTERVAL


def _counts(name: str, task: _Task) -> str:
    unit = f" {task.unit}" if task.unit and task.unit != "step" else ""
    if task.total is None:  # open-ended: nothing counted yet (a CSV read in one pass) says
        return f"{name}: {task.done:,}{unit}" if task.done else name  # no "0 rows"
    if task.unit == "step":
        return f"{name}"
    pct = f" ({100.0 * task.done / task.total:.0f}%)" if task.total else ""
    return f"{name}: {task.done:,} of {task.total:,}{unit}{pct}"


def _secs(s: float) -> str:
    return f"{s:.1f} s" if s < 120 else f"{int(s // 60)} min {int(s % 60):02d} s"


def _is_tty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def show_progress(enabled: bool = True, *, stream: IO[str] | None = None,
                  interval: float | None = None, heartbeat: bool = True
                  ) -> Iterator[ProgressHandler | None]:
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
    handler = (ProgressHandler(stream, interval=interval, heartbeat=heartbeat) if enabled
               else None)
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
