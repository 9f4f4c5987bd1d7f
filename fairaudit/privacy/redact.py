"""Nothing exact on the side of a published run (docs/privacy.md, "What the console says").

A release leaves out the input's row and exclusion counts on purpose; the run that makes it
must not print them either. Inside :func:`no_exact_counts` every log record made in this thread
(any logger, any level: ``-v`` and ``--debug`` included) has its numbers masked (``#``) before
any handler sees it, its traceback text too (line numbers kept), and its progress counts
dropped (a progress display then shows the task and its elapsed time only); warnings shown
with :func:`warnings.showwarning` are masked the same way, and so is the message of an error
raised from inside the block. The record factory is installed once and costs one context
variable lookup per record outside such a block.

What it cannot reach: output written directly to ``sys.stderr`` by other libraries, and
records made in threads or processes started by a component (their context is not this one).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import re
import warnings
from collections.abc import Iterator
from typing import Any

_ACTIVE: contextvars.ContextVar[bool] = contextvars.ContextVar("fairaudit_published",
                                                              default=False)
_NUMBER = re.compile(r"(?<![\w.#])(?<!line )[-+]?\d[\d,_]*(?:\.\d+)?(?:[eE][-+]?\d+)?")
MASK = "#"
_installed = False


def mask(text: str) -> str:
    """``text`` with every number that stands alone masked: ``7,214 rows`` -> ``# rows``,
    ``(n=7)`` -> ``(n=#)``; numbers inside names (``race_2020``) and traceback line numbers
    are kept."""
    return _NUMBER.sub(MASK, text)


def active() -> bool:
    return _ACTIVE.get()


class _MaskedRecord(logging.LogRecord):
    """A record made inside :func:`no_exact_counts`: its ``progress`` counts are dropped (the
    property shadows the ``extra`` value set on the instance)."""

    @property
    def progress(self) -> Any:
        info = self.__dict__.get("progress")
        if not isinstance(info, dict):
            return info
        done, total = info.get("done"), info.get("total")
        closed = bool(info.get("closed")) or (
            total is not None and done is not None and done >= total and done > 0)
        out: dict[str, Any] = {"task": mask(str(info.get("task", ""))), "done": 0,
                               "total": None, "unit": "step"}
        if closed:
            out["closed"] = True
        if info.get("failed"):
            out["failed"] = True
        return out


def _masked(record: logging.LogRecord) -> logging.LogRecord:
    try:
        text = record.getMessage()
    except Exception:  # a record whose arguments do not fit its format: keep the format
        text = str(record.msg)
    if record.exc_info and record.exc_info[0] is not None:
        text += "\n" + logging.Formatter().formatException(record.exc_info)
    if record.stack_info:
        text += "\n" + str(record.stack_info)
    record.msg, record.args = mask(text), None
    record.exc_info, record.exc_text, record.stack_info = None, None, None
    record.__class__ = _MaskedRecord
    return record


def _install() -> None:
    global _installed
    if _installed:
        return
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        return _masked(record) if _ACTIVE.get() else record

    logging.setLogRecordFactory(factory)
    _installed = True


def _mask_error(exc: BaseException) -> None:
    """The error's message, and those of its causes (a ``--debug`` traceback prints them)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if exc.args and all(isinstance(a, str) for a in exc.args):
            exc.args = tuple(mask(a) for a in exc.args)
        exc = exc.__cause__ or exc.__context__


@contextlib.contextmanager
def no_exact_counts() -> Iterator[None]:
    """Mask the numbers of every log record, progress record, warning and error of the block."""
    _install()
    token = _ACTIVE.set(True)
    with warnings.catch_warnings():
        shown = warnings.showwarning

        def show(message: Any, category: Any, filename: str, lineno: int, file: Any = None,
                 line: str | None = None) -> None:
            shown(mask(str(message)), category, filename, lineno, file, line)

        warnings.showwarning = show
        try:
            yield
        except Exception as exc:
            _mask_error(exc)
            raise
        finally:
            _ACTIVE.reset(token)
