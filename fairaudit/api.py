"""The Python entry point: ``fairaudit.audit(...)`` does what ``fairaudit audit`` does.

    >>> import fairaudit
    >>> run = fairaudit.audit("customers.parquet", sensitive=["sex", "race"], labels="segment",
    ...                       fail_under={"balance": 0.8})
    >>> run.status, run.exit_code
    >>> fairaudit.write_report(run, "audit.html")          # + audit.json beside it
    >>> run.to_polars(), run.verdicts                       # results as data
    >>> fairaudit.load("audit.json") == run                 # the same run back
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairaudit.report.results import AuditRun

if TYPE_CHECKING:
    from fairaudit.core.spec import ChainSpec


def audit(
    data: Any,
    *,
    sensitive: Sequence[str] | str = (),
    labels: str | None = None,
    cluster: Iterable[str | tuple[str, Mapping[str, Any]]] = (),
    features: Sequence[str] | None = None,
    exclude: Sequence[str] = (),
    k: int | None = None,
    seed: int = 0,
    sample: int | None = None,
    fail_under: Mapping[str, float] | None = None,
    fail_over: Mapping[str, float] | None = None,
    warn_under: Mapping[str, float] | None = None,
    warn_over: Mapping[str, float] | None = None,
    audit: Iterable[str | tuple[str, Mapping[str, Any]]] = (),
    skip_audit: Sequence[str] = (),
    min_cell: int | None = None,
    suppress: bool | None = None,
    bootstrap: int | None = None,
    ci_method: str | None = None,
    on_null: str | None = None,
    on_nonfinite: str | None = None,
    max_drop: float | None = None,
    max_memory: int | str | None = None,
    separator: str | None = None,
    null_values: Sequence[str] | str | None = None,
    default_nulls: bool | None = None,
    decimal_comma: bool | None = None,
    table: str | None = None,
    query: str | None = None,
    key: str | None = None,
    format: str | None = None,
    version: int | None = None,
    timing: bool | None = None,
    chain: str | Path | ChainSpec | None = None,
    disabled_plugins: Sequence[str] = (),
    scheduler: str | None = None,
    workers: int | None = None,
    engine: str | None = None,
    twins: bool | None = None,
    baseline: str | Path | Mapping[str, Any] | AuditRun | None = None,
    tolerance: Mapping[str, float] | None = None,
    baseline_missing: str | None = None,
    publish: bool | None = None,
    epsilon: float | None = None,
    privacy_budget: float | None = None,
    ledger: str | Path | None = None,
    privacy_source: str | None = None,
    dp_categories: Mapping[str, Sequence[str]] | None = None,
    dp_clusters: Sequence[str] | None = None,
    dp_fitted: str | None = None,
    dp_domain: str | None = None,
    delta: float | None = None,
    new_ledger: bool | None = None,
    allow_large_epsilon: bool | None = None,
    progress: bool = False,
) -> AuditRun:
    """Audit ``data``: a path, directory or glob; a polars DataFrame/LazyFrame; a pandas
    DataFrame (converted column by column, pyarrow not needed); or any object with the Arrow
    PyCapsule stream interface (``__arrow_c_stream__``: a pyarrow Table or RecordBatchReader, a
    DuckDB relation, ...), imported by polars without pyarrow.

    Every parameter is checked before any work (:mod:`fairaudit.core.params`): a bad value raises
    :class:`~fairaudit.errors.ConfigError` naming it and what was expected (``bootstrap`` at most
    10,000, ``min_cell`` at least 1, ``sensitive`` a column name or a list of them, ...).

    ``cluster`` names clusterers as ``("kmeans", {"n_clusters": 4})`` (values, never parsed) or,
    as a shorthand, the text ``"kmeans:n_clusters=4"`` of ``--cluster`` (values read as TOML
    literals); ``audit`` names auditors the same way (instead of the defaults) and ``skip_audit`` leaves
    auditors out (e.g. ``["proxy"]``). ``fail_under`` / ``fail_over`` (exit code 1) and
    ``warn_under`` / ``warn_over`` (reported, exit code 0) map ``METRIC[@ci][[attribute]]`` to a
    bound, as on the CLI. ``timing=True`` adds the timing block to the JSON (not reproducible).
    ``twins`` (default: on, except over a ``chain`` file, which keeps its own setting) also fits
    each fair clusterer with ``fair=False`` (the price of fairness). ``ci_method``
    (``"calibrated"``, the default, or ``"conservative"``) chooses the intervals of the
    min-of-ratios metrics (docs/metrics.md, "Uncertainty").
    Returns the :class:`~fairaudit.report.results.AuditRun` (its ``exit_code`` is what the CLI exits with).
    ``scheduler`` (a Dask scheduler address) or ``workers`` (a local Dask cluster of that many
    processes) count and assign every row on Dask (``pip install 'fairaudit-clusters[dask]'``); the
    results are identical to the local engine's. They override the chain's ``[engine]`` table;
    ``engine="local"`` runs locally whatever the chain says, ``engine="dask"`` without an
    address uses the chain's, else ``DASK_SCHEDULER_ADDRESS``.
    ``chain`` is a chain TOML file or a :class:`~fairaudit.core.spec.ChainSpec` built in Python
    (the same frozen object the file and the flags build); the other arguments add to it.
    ``baseline`` (an earlier audit: path, JSON document or run) also compares with it and gates on
    both (``run.doc["comparison"]``; ``tolerance`` maps ``METRIC[[ATTR]]`` to an allowed
    worsening); a chain's ``[compare]`` table does the same. ``baseline_missing="skip"`` audits
    without comparing (with a note) when the baseline file does not exist yet.
    ``min_cell`` (>= 1, default 10): groups with fewer rows are too small to judge. The report
    has exact values, small groups included (for people allowed to see the data);
    ``suppress`` is retired: ``False`` is accepted with a :class:`FutureWarning`, ``True``
    raises :class:`~fairaudit.errors.ConfigError`.
    ``publish=True`` makes a differentially private release instead of the analyst's exact
    report (docs/privacy.md): ``epsilon`` (default 1.0, at most 10 unless
    ``allow_large_epsilon=True``) is what it spends from the budget of the data source
    (``privacy_source``; default the input's folder, hive partition folders stripped; an
    in-memory table must name it) recorded in the ``ledger`` (default
    ``$XDG_STATE_HOME/fairaudit/ledger.json``; another path must exist, or ``new_ledger=True``);
    ``privacy_budget`` sets that budget on the source's first release and can only hold later
    runs to less (raise it with ``fairaudit ledger raise``); ``dp_categories`` /
    ``dp_clusters`` declare the public group and cluster names; ``dp_fitted="conditional"``
    accepts publishing clusterings fitted on the same rows; ``dp_domain="private"`` chooses the
    released cells privately (a threshold; ``delta``, default 1e-7). They override a chain's
    ``[privacy]`` table; bad values raise ``ConfigError`` naming the parameter.
    ``separator`` (a CSV's field separator), ``null_values`` (cell texts read as missing, added
    to the defaults ``""``, ``NA``, ``N/A``, ``#N/A``, ``<NA>``, ``NULL``, ``null``, ``NaN``,
    ``nan``, ``?``; in Parquet and in-memory tables they apply to text columns) and
    ``default_nulls=False`` (only empty cells and ``null_values`` are missing in a CSV, e.g.
    where ``NA`` is Namibia) and ``decimal_comma=True`` (a CSV's numbers written ``3,5``, with
    ``separator=";"``) are reader options, as ``--separator``, ``--null-values``,
    ``--no-default-nulls`` and ``--decimal-comma``.
    ``data`` may also be a database URL (``"postgresql://me@db/crm"``, ``"duckdb:///f.duckdb"``,
    ``"sqlite:///f.db"``, a SQLAlchemy ``Engine``) with ``table="people"`` or
    ``query="SELECT ..."``: the counts run in the database, a seeded sample (ordered by ``key``
    when given) is drawn there; an object-store path (``"s3://bucket/seg/*.parquet"``); or a
    Delta table (``format="delta"``, ``version=3``). See docs/sources.md.
    ``progress=True`` shows the progress of long steps on stderr while it runs (bars on a
    terminal, a line every 10 s otherwise; :func:`fairaudit.core.progress.show_progress`).
    """
    from fairaudit.core import params
    from fairaudit.core.build import chain_from_flags
    from fairaudit.core.chain import threshold_from
    from fairaudit.core.io import as_polars
    from fairaudit.core.plugins import Host
    from fairaudit.core.runner import run_chain
    from fairaudit.core.spec import API_NAMES, retired_suppress
    from fairaudit.errors import ConfigError

    # every parameter checked in one place (fairaudit.core.params) before any work
    v = params.check_all({
        "sensitive": sensitive, "labels": labels, "features": features, "exclude": exclude,
        "seed": seed, "sample": sample, "k": k, "min_cell": min_cell, "bootstrap": bootstrap,
        "ci_method": ci_method, "on_null": on_null, "on_nonfinite": on_nonfinite,
        "max_drop": max_drop, "max_memory": max_memory,
        "timing": timing, "twins": twins, "fail_under": fail_under, "fail_over": fail_over,
        "warn_under": warn_under, "warn_over": warn_over, "tolerance": tolerance,
        "cluster": cluster, "audit": audit, "skip_audit": skip_audit,
        "disabled_plugins": disabled_plugins, "chain": chain, "engine": engine,
        "scheduler": scheduler, "workers": workers, "separator": separator,
        "null_values": null_values, "default_nulls": default_nulls,
        "decimal_comma": decimal_comma, "table": table, "query": query, "key": key,
        "format": format, "version": version, "baseline": baseline,
        "baseline_missing": baseline_missing, "publish": publish, "ledger": ledger,
        "privacy_source": privacy_source, "dp_categories": dp_categories,
        "dp_clusters": dp_clusters,
    })
    if not isinstance(progress, bool):
        raise ConfigError(f"progress: expected True or False; got {progress!r}")
    problem = retired_suppress(suppress, "suppress=")
    if problem is not None:
        raise ConfigError(f"suppress: {problem}")
    if tolerance and baseline is None and chain is None:
        raise ConfigError("tolerance: needs baseline= (or a [compare] table in the chain)")
    from fairaudit.sources.urls import url_of

    data = as_polars(url_of(data))
    thresholds = [
        threshold_from(key, value, bound, f"{arg}[{key!r}]", severity)
        for arg, bound, severity in (("fail_under", "min", "error"), ("fail_over", "max", "error"),
                                     ("warn_under", "min", "warning"),
                                     ("warn_over", "max", "warning"))
        for key, value in (v[arg] or {}).items()
    ]
    host = Host.create(blocked=v["disabled_plugins"])
    spec = chain_from_flags(
        host.registry, sensitive=v["sensitive"], labels=v["labels"], features=v["features"],
        exclude=v["exclude"], clusters=v["cluster"], k=v["k"], seed=v["seed"],
        sample=v["sample"], thresholds=thresholds, min_cell=v["min_cell"],
        bootstrap=v["bootstrap"], ci_method=v["ci_method"], on_null=v["on_null"],
        on_nonfinite=v["on_nonfinite"], max_drop=v["max_drop"], max_memory=v["max_memory"],
        audits=v["audit"], skip_audits=v["skip_audit"],
        timing=v["timing"], base=_base_chain(v["chain"]), twins=v["twins"],
        privacy={"publish": v["publish"], "epsilon": epsilon, "budget": privacy_budget,
                 "ledger": None if v["ledger"] is None else str(v["ledger"]),
                 "source": v["privacy_source"],
                 "categories": None if v["dp_categories"] is None else
                 {str(a): tuple(str(g) for g in gs) for a, gs in v["dp_categories"].items()},
                 "clusters": None if v["dp_clusters"] is None else
                 tuple(str(c) for c in v["dp_clusters"]),
                 "fitted": dp_fitted, "domain": dp_domain, "delta": delta,
                 "new_ledger": new_ledger, "allow_large_epsilon": allow_large_epsilon},
        privacy_names=API_NAMES, surface="api",
        reader_options={"separator": v["separator"], "null_values": v["null_values"],
                        "default_nulls": v["default_nulls"],
                        "decimal_comma": v["decimal_comma"], "table": v["table"],
                        "query": v["query"], "key": v["key"], "format": v["format"],
                        "version": v["version"]},
    )
    from fairaudit.core.engines import engine_for
    from fairaudit.ops.baseline import attach_comparison, check_baseline, resolve

    options = resolve(v["baseline"], v["tolerance"], spec, missing=v["baseline_missing"],
                      option="baseline")
    check_baseline(options)  # a bad baseline fails before the run
    runner = engine_for(spec.engine, name=v["engine"], scheduler=v["scheduler"],
                        workers=v["workers"], env_default=False)
    from fairaudit.core.progress import show_progress

    try:
        with show_progress() if progress is True else contextlib.nullcontext():
            run = run_chain(spec, host, data_path=data, engine=runner)
    finally:
        runner.close()
    return attach_comparison(run, options) if options is not None else run


def _base_chain(chain: Any) -> Any:
    """The chain ``fairaudit.audit`` builds on: a ChainSpec as given, a TOML file's, or none."""
    from fairaudit.core.chain import load_chain
    from fairaudit.core.spec import ChainSpec

    if chain is None or isinstance(chain, ChainSpec):
        return chain
    return load_chain(chain)


def load(path: str | Path) -> AuditRun:
    """The :class:`~fairaudit.report.results.AuditRun` of a saved audit JSON document (what
    ``fairaudit.write_report`` or ``fairaudit audit --json`` wrote): the same run back, with its
    view, ``to_polars()``, ``verdicts`` and ``exit_code``; ``write_report`` renders it again.

    Raises :class:`~fairaudit.errors.InputError` naming the file when it is missing, too large,
    not JSON, or not a valid audit document (the shipped schema); a comparison or history file
    is refused by name."""
    from fairaudit.errors import ConfigError
    from fairaudit.ops.compare import load_audit

    if isinstance(path, bool) or not isinstance(path, str | os.PathLike) or not str(path):
        raise ConfigError(f"path: expected the path of an audit JSON file; got "
                          f"{type(path).__name__}")
    return AuditRun(load_audit(Path(path)))


def write_report(run: AuditRun, html_path: str | Path, json_path: str | Path | None = None,
                 ) -> tuple[Path, Path]:
    """Write the HTML report and the JSON document as a pair (both or neither; see
    :mod:`fairaudit.report.outputs`). Returns both paths.

    Raises :class:`~fairaudit.errors.ConfigError` (nothing written) when a path is the run's
    input (``run.doc["input"]["path"]``: file, folder or glob), when both paths are the same
    file, or when a folder does not exist or is not writable.
    """
    from fairaudit.core.plugins import Host
    from fairaudit.errors import ConfigError
    from fairaudit.report.outputs import check_outputs, input_refs, output_path, write_outputs
    from fairaudit.report.render import render_html

    if not isinstance(run, AuditRun):
        raise ConfigError(f"run: expected an AuditRun (what fairaudit.audit returns); got "
                          f"{type(run).__name__}")
    if html_path is None:
        raise ConfigError("html_path: expected a file path; got None")
    html_out = output_path("html_path", html_path)
    if html_out is None:  # pragma: no cover - refused above
        raise ConfigError("html_path: expected a file path; got None")
    json_out = output_path("json_path", json_path) or html_out.with_suffix(".json")
    source = (run.doc.get("input") or {}).get("path")
    check_outputs({"html_path": html_out, "json_path": json_out}, input_refs(source))
    html = render_html(run, Host.create())
    write_outputs([(json_out, json.dumps(run.to_json(), indent=2, ensure_ascii=False)),
                   (html_out, html)])
    return html_out, json_out
