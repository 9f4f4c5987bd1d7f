"""Run a chain: ``load`` (read the input, validate the chain against its columns), then the
stages of :mod:`fairaudit.core.stages` over a frozen state:

    load -> count -> materialise -> check -> preprocess -> cluster -> assign -> noise -> audit
         -> gate -> document -> publish -> twins -> explain -> verdicts

The runner knows components only through the registry. Counting auditors never see rows: a
labels column in the input is counted with one streaming group-by over the whole input; the
labels of clusterers (fitted in memory, on a seeded sample when the input is large) with one
group-by of the in-memory rows. With ``--publish`` the stages run inside the privacy ledger's
guard (:func:`fairaudit.privacy.publish.run_published`).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from typing import Any

from fairaudit.core.inputs import resolve_roles, source_name
from fairaudit.core.plugins import blaming_plugins
from fairaudit.core.spec import ChainSpec
from fairaudit.core.stages import RunState, run_stages
from fairaudit.core.steps import DATA_LABELLING, Clock
from fairaudit.core.twins import expand_twins
from fairaudit.core.validate import validate_chain
from fairaudit.errors import ConfigError, InputError
from fairaudit.report.results import AuditRun

log = logging.getLogger(__name__)

__all__ = ["DATA_LABELLING", "check_chain", "run_chain"]


def run_chain(
    spec: ChainSpec,
    host: Any,
    *,
    data_path: Any = None,
    engine: Any = None,
) -> AuditRun:
    """Run ``spec`` on ``data_path`` (or ``spec.data.path``) and return the :class:`AuditRun`.

    ``data_path`` is a path, directory or glob (read through the ``fairaudit_read_table`` hook),
    or an in-memory ``polars.DataFrame`` / ``LazyFrame``. ``engine`` runs the passes over every
    row (:mod:`fairaudit.core.engines`; default: polars on this machine).

    A CSV column whose type was inferred from its first rows but holds a cell of another kind
    further down (``age`` numbers, then ``unknown`` at row 15,000) is read again as text, with a
    warning naming the file, column and value; nothing has been written by then.
    """
    import polars as pl

    from fairaudit.core.io import csv_parse_failure, csv_read_error, text_column_note

    text: tuple[str, ...] = tuple(spec.data.reader_options.get("text_columns", ()))
    while True:
        try:
            with blaming_plugins(host):
                run = _run_chain(spec, host, data_path=data_path, engine=engine)
            _note_null_markers(run, spec, data_path)
            return run
        except pl.exceptions.ComputeError as exc:
            failure = csv_parse_failure(exc)
            path = data_path if data_path is not None else spec.data.path
            if failure is None or failure[0] in text:
                err = csv_read_error(exc, path, spec.data.reader_options.get("format"))
                if err is None:
                    raise
                raise err from exc
            text += (failure[0],)
            log.warning("%s", text_column_note(source_name(path), failure))
            spec = dataclasses.replace(spec, data=dataclasses.replace(
                spec.data, reader_options={**spec.data.reader_options, "text_columns": text}))


def check_chain(spec: ChainSpec, registry: Any, columns: Any = None) -> ChainSpec:
    """The checks of a chain: :func:`validate_chain` on the chain with its ``fair = false``
    twins, then a ``--publish`` release's rules (:func:`fairaudit.privacy.publish.prepare`).
    Without ``columns`` it is what ``fairaudit validate`` runs and what ``fairaudit run`` and
    ``audit`` check before they read their input; a run checks again with the input's columns.
    Returns the checked spec (a release's: its counting auditors)."""
    checked = validate_chain(expand_twins(spec, registry), registry, columns=columns)
    if checked.privacy.publish:
        from fairaudit.privacy.publish import prepare

        return prepare(checked, registry)
    return checked


def _note_null_markers(run: AuditRun, spec: ChainSpec, data_path: Any) -> None:
    """When rows were left out for a null sensitive/labels value in a CSV, say which default
    markers made them null ('NA' may be Namibia). Not in a published release (it would publish
    exact counts)."""
    from fairaudit.core.io import default_null_markers, null_markers_note

    doc = run.doc
    excl = (doc.get("input") or {}).get("exclusions") or {}
    path = data_path if data_path is not None else spec.data.path
    if spec.privacy.publish or not any(excl.values()) or not isinstance(path, str | bytes | os.PathLike):
        return
    columns = [*spec.data.sensitive, *([spec.data.labels] if spec.data.labels else [])]
    found = default_null_markers(str(path), spec.data.reader_options, columns)
    if found:
        note = null_markers_note(found)
        log.warning("%s", note)
        doc.setdefault("notes", []).append(note)


def _run_chain(spec: ChainSpec, host: Any, *, data_path: Any, engine: Any) -> AuditRun:
    from fairaudit.core.engines import LocalEngine
    from fairaudit.sources import source_engine

    engine = engine if engine is not None else LocalEngine()
    path = data_path if data_path is not None else spec.data.path
    with source_engine(path, spec, engine) as engine:  # a database counts in the database
        return _load_and_run(spec, host, data_path=data_path, engine=engine)


def _load_and_run(spec: ChainSpec, host: Any, *, data_path: Any, engine: Any) -> AuditRun:
    import polars as pl

    from fairaudit.core.io import BackgroundFingerprint, with_null_markers

    started = time.perf_counter()
    clock = Clock(host)
    path = data_path if data_path is not None else spec.data.path
    in_memory = isinstance(path, pl.DataFrame | pl.LazyFrame)
    if not in_memory and not path:
        raise ConfigError("no input data: give DATA on the command line or data.path in the chain")

    def _load():
        if in_memory:
            return with_null_markers(path.lazy(), spec.data.reader_options.get("null_values", ()))
        lf = host.read_table(path, dict(spec.data.reader_options))
        if lf is None:
            raise InputError(f"{path}: no installed reader handles this input")
        return lf

    lf = clock.run("load", "read", None, _load)
    schema = lf.collect_schema()
    columns = list(schema.names())
    if not columns:
        raise InputError(f"{source_name(path)}: the table has no columns")
    spec = check_chain(spec, host.registry, columns)
    roles = resolve_roles(spec, schema)

    # the input's content hash for the document, on a thread from the ``hash`` stage on
    hashing = (None if in_memory
               else BackgroundFingerprint(path, spec.data.reader_options.get("format")))
    state = RunState(spec=spec, host=host, engine=engine, clock=clock, path=path, lf=lf,
                     roles=roles, in_memory=in_memory, started=started, fingerprint=hashing)
    if spec.privacy.publish:  # the ledger's guard: source, people, budget (docs/privacy.md)
        from fairaudit.privacy.accounting import run_published

        return run_published(spec, path, lf, roles, lambda: _run(state))
    return _run(state)


def _run(state: RunState) -> AuditRun:
    """The stages after ``load``; the finished run goes to the ``fairaudit_run_finished`` hook."""
    run = run_stages(state)
    state.host.run_finished(run=run)
    return run
