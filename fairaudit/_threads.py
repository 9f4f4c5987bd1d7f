"""Threads for numpy work: the cores a process may use, and a function over contiguous ranges
of [0, n) on one thread per core with BLAS held to one thread each (numpy's products and
reductions release the GIL, and a BLAS call per thread on top would oversubscribe the cores).
Used by FairDen's product scans (``cluster._bichromatic``) and the silhouette
(``metrics.quality``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any


def cores() -> int:
    """The cores this process may run on: its CPU affinity where the system tells it (a
    container or ``taskset`` limit), else the machine's count."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


_CONTROLLER: list = []


def _controller():  # noqa: ANN202 - threadpoolctl's ThreadpoolController (imported lazily)
    """One ``ThreadpoolController`` a process: finding the loaded BLAS libraries costs about a
    millisecond, which ``threadpool_limits`` paid on every call (thousands of small scans in
    FairDen's Borůvka rounds). It sees the libraries loaded when it is made: numpy's BLAS,
    which the scans' products use, is loaded with numpy."""
    if not _CONTROLLER:
        from threadpoolctl import ThreadpoolController

        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0]


def over_ranges(fn: Callable[[int, int], Any], n: int, workers: int = -1,
                min_span: int = 1) -> list[Any]:
    """``[fn(a, b), ...]`` over ``workers`` contiguous ranges of [0, n) (-1: one per core; at
    least ``min_span`` items a range), in threads, BLAS at one thread each."""
    import numpy as np

    n_w = cores() if workers == -1 else max(1, workers)
    n_w = max(1, min(n_w, n // max(1, min_span)))
    cuts = np.linspace(0, n, n_w + 1).astype(np.int64).tolist()
    with _controller().limit(limits=1, user_api="blas"):
        if n_w == 1:
            return [fn(0, n)]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(n_w) as ex:
            return list(ex.map(fn, cuts[:-1], cuts[1:]))
