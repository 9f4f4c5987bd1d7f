"""The Python entry point: ``fairaudit.audit(...)`` does what ``fairaudit audit`` does.

    >>> import fairaudit
    >>> run = fairaudit.audit("customers.parquet", sensitive=["sex", "race"], labels="segment",
    ...                       fail_under={"balance": 0.8})
    >>> run.status, run.exit_code
    >>> fairaudit.write_report(run, "audit.html")          # + audit.json beside it
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from fairaudit.results import AuditRun


def audit(
    data: Any,
    *,
    sensitive: Sequence[str] | str,
    labels: str | None = None,
    cluster: Iterable[str | tuple[str, Mapping[str, Any]]] = (),
    features: Sequence[str] | None = None,
    exclude: Sequence[str] = (),
    k: int | None = None,
    seed: int = 0,
    sample: int | None = None,
    fail_under: Mapping[str, float] | None = None,
    fail_over: Mapping[str, float] | None = None,
    min_cell: int | None = None,
    suppress: bool | None = None,
    bootstrap: int | None = None,
    chain: str | Path | None = None,
    disabled_plugins: Sequence[str] = (),
    scheduler: str | None = None,
    workers: int | None = None,
    baseline: str | Path | Mapping[str, Any] | AuditRun | None = None,
    tolerance: Mapping[str, float] | None = None,
) -> AuditRun:
    """Audit ``data`` (a path, directory or glob, or a polars DataFrame/LazyFrame).

    ``cluster`` names clusterers as ``"kmeans:n_clusters=4"`` or ``("kmeans", {"n_clusters": 4})``.
    ``fail_under`` / ``fail_over`` map ``METRIC[@ci][[attribute]]`` to a bound, as on the CLI.
    Returns the :class:`~fairaudit.results.AuditRun` (its ``exit_code`` is what the CLI exits with).
    ``scheduler`` (a Dask scheduler address) or ``workers`` (a local Dask cluster of that many
    processes) count and assign every row on Dask (``pip install 'fairaudit[dask]'``); the
    results are identical to the local engine's.
    ``baseline`` (an earlier audit: path, JSON document or run) also compares with it and gates on
    both (``run.doc["comparison"]``; ``tolerance`` maps ``METRIC[[ATTR]]`` to an allowed
    worsening); a chain's ``[compare]`` table does the same.
    """
    from fairaudit.chain import chain_from_flags, load_chain, parse_threshold_flag
    from fairaudit.plugins import Host
    from fairaudit.runner import run_chain

    host = Host.create(blocked=disabled_plugins)
    if isinstance(sensitive, str):
        sensitive = [s.strip() for s in sensitive.split(",") if s.strip()]
    thresholds = [
        parse_threshold_flag(f"{m}={v}", "min", "fail_under") for m, v in (fail_under or {}).items()
    ] + [parse_threshold_flag(f"{m}={v}", "max", "fail_over") for m, v in (fail_over or {}).items()]
    clusters = []
    for c in cluster:
        if isinstance(c, str):
            clusters.append(c)
        else:
            name, params = c
            clusters.append(name + (":" + ",".join(f"{a}={json.dumps(b)}" for a, b in
                                                   params.items()) if params else ""))
    spec = chain_from_flags(
        host.registry, sensitive=sensitive, labels=labels, features=features, exclude=exclude,
        clusters=clusters, k=k, seed=seed, sample=sample, thresholds=thresholds,
        min_cell=min_cell, suppress=suppress, bootstrap=bootstrap,
        base=load_chain(chain) if chain else None,
    )
    from fairaudit.baseline import BaselineOptions, attach_comparison, resolve

    options = resolve(None, (), str(chain) if chain else None)
    if baseline is not None:
        options = BaselineOptions(baseline, {**(options.tolerance if options else {}),
                                             **(tolerance or {})})
    elif tolerance:
        from fairaudit.errors import ConfigError

        raise ConfigError("tolerance= needs baseline= (or a [compare] table in the chain)")
    if options is not None:
        from fairaudit.compare import load_audit

        load_audit(options.baseline, what="baseline")  # a bad baseline fails before the run
    from fairaudit.engines import make_engine

    engine = make_engine(scheduler=scheduler, workers=workers)
    try:
        run = run_chain(spec, host, data_path=data if not isinstance(data, Path) else str(data),
                        engine=engine)
    finally:
        engine.close()
    return attach_comparison(run, options) if options is not None else run


def write_report(run: AuditRun, html_path: str | Path, json_path: str | Path | None = None,
                 ) -> tuple[Path, Path]:
    """Write the HTML report and the JSON document (atomically). Returns both paths."""
    from fairaudit.io import atomic_write_text
    from fairaudit.plugins import Host
    from fairaudit.report import render_html

    html_path = Path(html_path)
    json_path = Path(json_path) if json_path else html_path.with_suffix(".json")
    atomic_write_text(json_path, json.dumps(run.to_json(), indent=2, ensure_ascii=False))
    html = render_html(run, Host.create())
    atomic_write_text(json_path, json.dumps(run.to_json(), indent=2, ensure_ascii=False))
    atomic_write_text(html_path, html)
    return html_path, json_path
