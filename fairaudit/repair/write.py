"""The writer of a repair: the repaired table, its HTML report and its JSON, through the
project's one safe output path (:mod:`fairaudit.report.outputs`): never over the input, all
three files or none."""

from __future__ import annotations

import copy
import json as _json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairaudit.errors import ConfigError

if TYPE_CHECKING:
    from fairaudit.repair.spec import RepairSpec

__all__ = ["check_paths", "serialise", "table_format", "write_repair"]

_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "csv"}


def table_format(out: Path, input_format: str | None, label: str) -> str:
    """The format the table is written in: the input's (the suffix of ``out`` must agree), or
    for a table in memory the suffix's."""
    fmt = _FORMATS.get(out.suffix.lower())
    if input_format is not None:
        if fmt != input_format:
            want = ".parquet" if input_format == "parquet" else ".csv"
            raise ConfigError(f"{label} {out}: the input is {input_format.upper()}; the repaired "
                              f"table is written in the input's format: give a {want} path")
        return fmt
    if fmt is None:
        raise ConfigError(f"{label} {out}: expected a .parquet or .csv path")
    return fmt


def check_paths(spec: RepairSpec, input_path: Any, input_format: str | None,
                out: Any = None, report: Any = None, js: Any = None
                ) -> tuple[Path, Path, Path]:
    """The three output paths, checked before any work: the input is never written, no two
    outputs are the same file, every folder exists and is writable."""
    from fairaudit.report.outputs import check_outputs, input_refs

    o, r, j = spec.paths()
    o = Path(out) if out is not None else o
    if o is None:
        raise ConfigError(f"{spec.label('out')}: give the path of the repaired table "
                          "(.parquet or .csv)")
    r = Path(report) if report is not None else (r if spec.report else o.with_suffix(".html"))
    j = Path(js) if js is not None else (j if spec.json else r.with_suffix(".json"))
    table_format(o, input_format, spec.label("out"))
    check_outputs({spec.label("out"): o, spec.label("report"): r, spec.label("json"): j},
                  input_refs(input_path, "DATA"))
    return o, r, j


def write_repair(result: Any, out: Any = None, report: Any = None, js: Any = None
                 ) -> tuple[Path, Path, Path]:
    """Write ``result`` (a :class:`~fairaudit.repair.result.RepairResult`): the table (every
    input row plus the new column), the report and the JSON, as one unit."""
    from fairaudit.repair.render import render_repair_html
    from fairaudit.report.outputs import write_outputs

    src_format = (result.doc.get("input") or {}).get("format")
    o, r, j = check_paths(result.spec, result.input_path, src_format, out, report, js)
    fmt = table_format(o, src_format, result.spec.label("out"))
    data = serialise(result.table, fmt, result.separator if fmt == result.format else ",")
    doc = copy.deepcopy(dict(result.doc))
    doc["output"].update({"path": str(o), "format": fmt, "report": str(r), "json": str(j)})
    doc["after"].setdefault("input", {})["path"] = str(o)
    html = render_repair_html(doc)
    write_outputs([(j, _json.dumps(doc, indent=2, ensure_ascii=False)), (r, html), (o, data)])
    return o, r, j


def serialise(table: Any, fmt: str, separator: str = ",") -> bytes:
    """The table as the bytes of a Parquet or CSV file."""
    import io

    buf = io.BytesIO()
    if fmt == "parquet":
        table.write_parquet(buf)
    else:
        table.write_csv(buf, separator=separator)
    return buf.getvalue()
