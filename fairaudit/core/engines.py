"""Engines: where the two passes over every row run — counting and assigning.

The runner needs exactly two things from the whole input, however large: the joint count table
(one group-by) and, for clusterers fitted on a sample, the counts of every row assigned by the
fitted models. Both are sums over partitions of the data, so an engine only has to run a
function per partition and add the partial tables (:func:`fairaudit.core.contingency.sum_joint_tables`):

* :class:`LocalEngine` — polars on this machine (a streaming group-by; batches for assignment).
* :class:`DaskEngine` — one task per input file on a Dask cluster (``pip install
  'fairaudit-clusters[dask]'``). Workers read their files themselves; only partial count tables (a few
  hundred cells) travel back. The sum is the same table the local engine counts, so every
  number of the audit — bootstrap included — is identical.

Everything else (the in-memory sample for fitting and for feature-based auditors, the input
checks on that sample) runs on the client, as with the local engine.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from fairaudit.core.assign import Assignment, FittedStep, assign_all_rows
from fairaudit.core.contingency import (
    JointTable,
    joint_from_frame,
    joint_from_slices,
    sum_joint_tables,
)
from fairaudit.core.data import AuditData, ColumnRoles
from fairaudit.core.progress import Meter
from fairaudit.errors import ConfigError, InputError

log = logging.getLogger(__name__)

SLICE_ROWS = 4_000_000
"""A Parquet input of more rows is counted in slices of this many (a slice reads only its row
groups, so this costs nothing measurable), and the progress display says how many were read."""


def _input_format(path: Any) -> str | None:
    """The format of the input files (``None`` for an in-memory table or a bad path: the read
    reports a bad path itself)."""
    if not isinstance(path, str | os.PathLike):
        return None
    from fairaudit.core.io import resolve_input

    try:
        return resolve_input(str(path)).format
    except (InputError, OSError):
        return None


def _parquet_rows(lf: Any) -> int | None:
    """The row count of a Parquet scan (from the files' metadata: no data is read)."""
    import polars as pl

    try:
        return int(lf.select(pl.len()).collect().item())
    except Exception:  # the count reports a broken file itself
        return None


class LocalEngine:
    """Polars on this machine."""

    name = "local"

    def count(self, lf: Any, *, path: Any, roles: ColumnRoles,
              reader_options: Mapping[str, Any]) -> tuple[JointTable, int]:
        total = _parquet_rows(lf) if _input_format(path) == "parquet" else None
        with Meter("read rows", total, "rows") as meter:
            if total is not None and total > SLICE_ROWS:  # Parquet: rows read, slice by slice
                joint = joint_from_slices(lf, total, label=roles.labels,
                                          sensitive=roles.sensitive, ordinal=roles.ordinal,
                                          slice_rows=SLICE_ROWS, on_rows=meter.update)
            else:  # one streaming group-by (a CSV is read once: no count midway)
                joint = joint_from_frame(lf, label=roles.labels, sensitive=roles.sensitive,
                                         ordinal=roles.ordinal)
            n = joint.n + joint.null_rows  # every row is in one cell (null keys included)
            meter.close(n)
        return joint, n

    def assign(self, lf: Any, *, path: Any, reader_options: Mapping[str, Any],
               template: AuditData, preprocessors: Sequence[FittedStep],
               clusterers: Sequence[FittedStep], on_nonfinite: str,
               total: int | None = None) -> Assignment:
        return assign_all_rows(lf, template, preprocessors, clusterers,
                               on_nonfinite=on_nonfinite, total=total)

    def close(self) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}


# ------------------------------------------------------------------------------ Dask
def _read_part(file: str, options: Mapping[str, Any]) -> Any:
    from fairaudit.core.io import scan_builtin
    from fairaudit.sources import read_source

    lf = read_source(file, options)  # an object-store file (s3://...), else a local one
    return lf if lf is not None else scan_builtin(file, options)


def _count_part(file: str, options: Mapping[str, Any], roles: ColumnRoles
                ) -> tuple[JointTable, int]:
    """Worker task: the joint table and row count of one input file."""
    return LocalEngine().count(_read_part(file, options), path=file, roles=roles,
                               reader_options=options)


def _assign_part(file: str, options: Mapping[str, Any], template: AuditData,
                 preprocessors: Sequence[FittedStep], clusterers: Sequence[FittedStep],
                 on_nonfinite: str) -> Assignment:
    """Worker task: assign every row of one input file with the fitted models."""
    return assign_all_rows(_read_part(file, options), template, preprocessors, clusterers,
                           on_nonfinite=on_nonfinite)


class DaskEngine:
    """One task per input file on a Dask distributed cluster.

    ``scheduler``: the address of a running scheduler (``tcp://host:8786``); ``workers``: start
    a local cluster of that many worker processes instead. Input files must be readable by the
    workers under the same path.
    """

    name = "dask"

    def __init__(self, scheduler: str | None = None, workers: int | None = None, *,
                 where: str = "--scheduler/--workers"):
        if not scheduler and not workers:
            raise ConfigError("the Dask engine needs a scheduler address or a number of workers")
        from fairaudit.errors import require_extra

        require_extra("distributed", "dask", f"{where} (the Dask engine)")
        self.scheduler = scheduler
        self.workers = workers
        self._client: Any = None
        self._cluster: Any = None

    def client(self) -> Any:
        if self._client is None:
            from distributed import Client, LocalCluster

            # distributed sets its own loggers to INFO on import: keep the terminal for
            # fairaudit's messages (its warnings and errors still come through)
            for name in ("distributed", "dask"):
                logging.getLogger(name).setLevel(logging.WARNING)

            if self.scheduler:
                try:
                    self._client = Client(self.scheduler, timeout="30s")
                except OSError as exc:
                    raise InputError(
                        f"cannot reach the Dask scheduler at {self.scheduler}: {exc}"
                    ) from exc
            else:
                self._cluster = LocalCluster(n_workers=int(self.workers), threads_per_worker=1,
                                             processes=True, dashboard_address=None)
                self._client = Client(self._cluster)
        return self._client

    def _files(self, path: Any, options: Mapping[str, Any]) -> list[str]:
        if not isinstance(path, str):
            raise ConfigError(
                "the Dask engine reads files on the workers: give a path, directory or glob, "
                "not an in-memory table"
            )
        from fairaudit.core.io import resolve_input
        from fairaudit.sources.urls import is_object_store

        if is_object_store(path):
            from fairaudit.sources.objectstore import list_files

            return list_files(path)
        return [str(f) for f in resolve_input(path).files]

    def _run(self, fn: Callable[..., Any], files: list[str], what: str,
             *args: Any) -> list[Any]:
        from distributed import as_completed

        client = self.client()
        futures = [client.submit(fn, f, *args, key=f"fairaudit-{what}-{i}-{os.getpid()}",
                                 pure=False) for i, f in enumerate(files)]
        index = {fut.key: i for i, fut in enumerate(futures)}
        out: list[Any] = [None] * len(files)
        done = 0
        meter = Meter(f"{what} (dask)", len(files), "files")
        try:
            for fut in as_completed(futures):
                out[index[fut.key]] = fut.result()  # re-raises a worker's InputError
                done += 1
                meter.update(done)
            meter.close()
        finally:
            for fut in futures:
                fut.cancel()
        return out

    def count(self, lf: Any, *, path: Any, roles: ColumnRoles,
              reader_options: Mapping[str, Any]
              ) -> tuple[JointTable, int]:
        files = self._files(path, reader_options)
        parts = self._run(_count_part, files, "count", dict(reader_options), roles)
        return sum_joint_tables([p[0] for p in parts]), sum(p[1] for p in parts)

    def assign(self, lf: Any, *, path: Any, reader_options: Mapping[str, Any],
               template: AuditData, preprocessors: Sequence[FittedStep],
               clusterers: Sequence[FittedStep], on_nonfinite: str,
               total: int | None = None) -> Assignment:
        files = self._files(path, reader_options)
        client = self.client()
        # ship the (sample-sized) template and the fitted models once, not once per task
        [t, pre, clu] = client.scatter([template, list(preprocessors), list(clusterers)],
                                       broadcast=True)
        parts: list[Assignment] = self._run(_assign_part, files, "assign",
                                            dict(reader_options), t, pre, clu, on_nonfinite)
        joints: dict[str, list[JointTable]] = {}
        skipped: dict[str, int] = {}
        raised: dict[str, list[str]] = {}
        seconds: dict[tuple[str, str | None], float] = {}  # summed over the workers
        for p in parts:
            for key, sec in p.seconds.items():
                seconds[key] = seconds.get(key, 0.0) + sec
            for name, j in p.joints.items():
                joints.setdefault(name, []).append(j)
            for k, v in p.rows_skipped.items():
                skipped[k] = skipped.get(k, 0) + v
            for name, texts in p.warnings.items():
                raised.setdefault(name, []).extend(
                    t for t in texts if t not in raised.get(name, []))
        return Assignment(
            joints={k: sum_joint_tables(v) for k, v in joints.items()},
            rows_assigned=sum(p.rows_assigned for p in parts),
            rows_skipped=skipped,
            cannot_predict=dict(parts[0].cannot_predict) if parts else {},
            warnings=raised,
            seconds=seconds,
        )

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()
        self._client = self._cluster = None

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "scheduler": self.scheduler, "workers": self.workers}


def make_engine(scheduler: str | None = None, workers: int | None = None, *,
                where: str = "--scheduler/--workers") -> Any:
    """The engine for these options: Dask when a scheduler address or a worker count is
    given, else the local engine. ``where`` names the option in errors."""
    if scheduler and workers:
        raise ConfigError(f"{where}: give a scheduler address (a running Dask cluster) or a "
                          "number of workers (a local cluster), not both")
    if scheduler or workers:
        return DaskEngine(scheduler=scheduler, workers=workers, where=where)
    return LocalEngine()


ENV_SCHEDULER = "DASK_SCHEDULER_ADDRESS"


def engine_for(chain_engine: Any = None, *, name: str | None = None,
               scheduler: str | None = None, workers: int | None = None,
               env: Mapping[str, str] | None = None, env_default: bool = True) -> Any:
    """The engine of a run, first match wins:

    1. ``name="local"`` (``--engine local``): the local engine, whatever else says Dask;
    2. ``scheduler`` or ``workers`` (``--scheduler`` / ``--workers``, the Python API's keywords);
    3. ``DASK_SCHEDULER_ADDRESS`` in ``env`` — always on the command line (``env_default``),
       and for the Python API only when the chain or ``name`` asks for Dask without saying where;
    4. the chain's ``[engine]`` table (``chain_engine``, a :class:`fairaudit.core.spec.EngineSpec`);
    5. the local engine — but ``name = "dask"`` (``--engine dask`` or the chain) with no
       address and no worker count anywhere is an error.
    """
    env = os.environ if env is None else env
    if name is not None and name not in ("local", "dask"):
        raise ConfigError(f"--engine: expected 'local' or 'dask'; got {name!r}")
    if name == "local":
        if scheduler or workers:
            raise ConfigError("--engine local runs on this machine: drop --scheduler/--workers")
        return LocalEngine()
    if scheduler or workers:
        return make_engine(scheduler, workers)
    wants_dask = name == "dask" or getattr(chain_engine, "name", "local") == "dask"
    env_scheduler = env.get(ENV_SCHEDULER) or None
    if env_scheduler and (env_default or wants_dask):
        return make_engine(env_scheduler, None, where=ENV_SCHEDULER)
    if chain_engine is not None and chain_engine.name == "dask" and (
        chain_engine.scheduler or chain_engine.workers
    ):
        return make_engine(chain_engine.scheduler, chain_engine.workers,
                           where="engine.scheduler" if chain_engine.scheduler
                           else "engine.workers")
    if wants_dask:
        where = "--engine dask" if name == "dask" else "engine.name = 'dask'"
        raise ConfigError(
            f"{where}: say where to run: a scheduler address (--scheduler, engine.scheduler or "
            f"{ENV_SCHEDULER}) or a number of local workers (--workers, engine.workers)"
        )
    return LocalEngine()
