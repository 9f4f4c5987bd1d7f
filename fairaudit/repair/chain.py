"""A chain file's repair: ``[data]`` (path, sensitive, labels, features, seed, reader options),
``[options]`` (min_cell, bootstrap, ci_method), ``[[audit]]`` (the auditors of the before and
after audits) and ``[repair]`` (targets, outputs, objective...)::

    [data]
    path = "customers.parquet"
    sensitive = ["sex", "race"]
    labels = "segment"

    [repair]
    target = {balance = 0.8}
    out = "customers_fair.parquet"
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fairaudit.errors import ChainValidationError, ConfigError

__all__ = ["chain_values", "check_chain_repair", "spec_from", "with_default_audits"]


def chain_values(path: str | Path) -> tuple[dict[str, Any], dict[str, Any], Any, str | None]:
    """(repair parameters, reader options, the chain for the audits or None, data path) of
    the chain file ``path``; ConfigError when it has no ``[repair]`` table."""
    from fairaudit.core.chain import load_chain
    from fairaudit.repair.spec import load_repair_table

    table = load_repair_table(path)
    if table is None:
        raise ConfigError(f"{path}: no [repair] table (e.g. [repair] target = {{balance = 0.8}} "
                          "out = \"repaired.parquet\")")
    chain = load_chain(path)
    if chain.problems:
        raise ChainValidationError(chain.problems, str(path))
    if chain.cluster:
        raise ConfigError(f"{path}: [repair] repairs the segmentation in data.labels; remove "
                          "the [[cluster]] steps (repair the labels a clusterer wrote instead)")
    d, o = chain.data, chain.options
    values: dict[str, Any] = {
        "sensitive": d.sensitive or None, "labels": d.labels,
        "features": d.features or None, "seed": d.seed, "min_cell": o.min_cell,
        "bootstrap": o.bootstrap, "ci_method": o.ci_method,
    }
    values.update({k: table[k] for k in table})
    return values, dict(d.reader_options), chain if chain.audit else None, d.path


def spec_from(given: dict[str, Any], reader: dict[str, Any], surface: str,
              chain_file: str | Path | None = None) -> tuple[Any, Any, str | None]:
    """(RepairSpec, the chain for the audits or None, the chain's data path) from the values a
    surface was given, a chain file's filling in what was not (the one merge of the CLI, the
    chain and the API)."""
    from fairaudit.core import params
    from fairaudit.repair.spec import repair_spec

    audit_chain, data_path = None, None
    if chain_file is not None:
        values, reader_c, audit_chain, data_path = chain_values(chain_file)
        given = {"target": None, **values, **{k: v for k, v in given.items() if v is not None}}
        reader = {k: (v if v is not None else reader_c.get(k)) for k, v in reader.items()}
    checked = params.check_all(reader, surface)
    spec = repair_spec(surface=surface, reader_options={k: v for k, v in checked.items()
                                                        if v is not None}, **given)
    return spec, audit_chain, data_path


def check_chain_repair(path: str | Path) -> Any:
    """The :class:`~fairaudit.repair.spec.RepairSpec` of the chain's ``[repair]`` table, every
    value checked (``fairaudit validate``); ConfigError naming the key otherwise."""
    return spec_from({}, {k: None for k in READER_KEYS}, "chain", path)[0]


READER_KEYS = ("separator", "null_values", "default_nulls", "decimal_comma")


def with_default_audits(chain: Any) -> Any:
    """``chain`` with the repair's default auditors when it names none (what the before and
    after audits run)."""
    import dataclasses

    from fairaudit.core.spec import StepSpec
    from fairaudit.repair.spec import DEFAULT_AUDITS

    if chain.audit:
        return chain
    return dataclasses.replace(chain, audit=tuple(StepSpec("audit", a, f"repair audit[{i}]")
                                                  for i, a in enumerate(DEFAULT_AUDITS)))
