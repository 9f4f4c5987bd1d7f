"""Results as data: a run's results as tidy frames and its verdicts as typed records.

Read from the audit document alone (``run.doc``, or a saved JSON through ``fairaudit.load``), so
a run and its saved document give the same frames and records:

* :func:`result_rows` / :func:`results_frame` — one row per metric result (``level="metric"``:
  ``labelling, attribute, metric, value, ci_low, ci_high, status, verdict`` then ``auditor,
  headline, direction, threshold, judged, n_rows``), or one row per cluster of each result
  (``level="cluster"``: ``labelling, attribute, auditor, metric, cluster, cluster_name, n, value,
  worst_group, detail``; ``detail`` is the JSON text of the row's other keys, e.g. LCD's
  ``worst_row``). ``verdict`` is the metric's own verdict where the verdict rule judged it (a
  headline metric with a bound), else null; the attribute's verdict is in :func:`verdicts`.
* :func:`verdicts` — a :class:`Verdict` per labelling and attribute (``attribute``,
  ``labelling``, ``verdict``, ``decided_by``, ``sentence``), the sentence being the report's own
  reading of the verdict (:func:`fairaudit.report.answer.entry_text`).
* :func:`pandas_frame` — a polars frame as a pandas one (``pip install
  'fairaudit-clusters[pandas]'``), column by column: pyarrow is not needed.

The verdict records are built here from the run's JSON document (the serialisation of the typed
:class:`~fairaudit.report.model.AuditDocument` the run's stages pass along).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from fairaudit.report.answer import ORDER, entry_text, twin_names
from fairaudit.report.values import finite

if TYPE_CHECKING:
    import pandas
    import polars

__all__ = ["LEVELS", "DecidedBy", "Verdict", "VerdictWord", "pandas_frame", "result_rows",
           "results_frame", "verdicts"]

VerdictWord = Literal["fair", "borderline", "too little data", "unfair"]
"""The four verdicts (:data:`fairaudit.report.answer.ORDER`, worst first)."""

LEVELS = ("metric", "cluster")
"""The levels of :func:`results_frame`: a row per metric result, or per cluster of each."""

_METRIC_COLUMNS: dict[str, str] = {
    "labelling": "str", "attribute": "str", "metric": "str", "value": "float",
    "ci_low": "float", "ci_high": "float", "status": "str", "verdict": "str", "auditor": "str",
    "headline": "bool", "direction": "str", "threshold": "str", "judged": "float",
    "n_rows": "int",
}
_CLUSTER_COLUMNS: dict[str, str] = {
    "labelling": "str", "attribute": "str", "auditor": "str", "metric": "str", "cluster": "int",
    "cluster_name": "str", "n": "int", "value": "float", "worst_group": "str", "detail": "str",
}
_REASON = re.compile(r"^(" + "|".join(map(re.escape, ORDER)) + r"): (\S+) [\u2265\u2264] ")


@dataclass(frozen=True)
class DecidedBy:
    """The result that set a verdict and, where the document names it, its deciding cell: the
    cluster (by its name when the labels column names its clusters), the group, the count there
    and the count expected."""

    metric: str
    value: float | None
    ci_low: float | None
    ci_high: float | None
    cluster: int | None = None
    cluster_name: str | None = None
    group: str | None = None
    count: float | None = None
    expected: float | None = None
    group_total: float | None = None
    text: str | None = None
    """The deciding cell in words (``cluster 1 holds 264 of the 1,352 “Female” people, ...``)."""


@dataclass(frozen=True)
class Verdict:
    """The verdict on one attribute in one labelling (``run.verdicts``)."""

    attribute: str
    labelling: str
    verdict: VerdictWord
    decided_by: DecidedBy | None
    sentence: str
    """The reading of the verdict, as the report and the console give it: the deciding cell in
    words, then its number and interval."""
    reasons: tuple[str, ...] = ()
    """Each judged headline metric's own verdict and why (``unfair: balance ≥ 0.8 ...``)."""
    twin: bool = False
    """The labelling is a ``fair = false`` twin, fitted for comparison (never counted)."""


def _int(x: Any) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def _str(x: Any) -> str | None:
    return None if x is None else str(x)


def _decided_by(by: Any) -> DecidedBy | None:
    if not isinstance(by, Mapping) or not by.get("metric"):
        return None
    ci = by.get("ci")
    lo, hi = (finite(ci[0]), finite(ci[1])) if isinstance(ci, Sequence) and len(ci) == 2 else (
        None, None)
    return DecidedBy(
        metric=str(by["metric"]), value=finite(by.get("value")), ci_low=lo, ci_high=hi,
        cluster=_int(by.get("cluster")), cluster_name=_str(by.get("cluster_name")),
        group=_str(by.get("group")), count=finite(by.get("count")),
        expected=finite(by.get("expected")), group_total=finite(by.get("group_total")),
        text=_str(by.get("text")))


def verdicts(doc: Mapping[str, Any]) -> tuple[Verdict, ...]:
    """The document's verdicts as records, in its order."""
    twins = twin_names(doc)
    out = []
    for v in doc.get("verdicts") or ():
        word = str(v.get("verdict"))
        if word not in ORDER:
            continue  # not a verdict this version knows: say nothing rather than wrong
        out.append(Verdict(
            attribute=str(v.get("attribute")), labelling=str(v.get("labelling")),
            verdict=cast(VerdictWord, word), decided_by=_decided_by(v.get("decided_by")),
            sentence=entry_text(v), reasons=tuple(str(r) for r in v.get("reasons") or ()),
            twin=str(v.get("labelling")) in twins))
    return tuple(out)


def _metric_verdicts(doc: Mapping[str, Any]) -> dict[tuple[str, str, str], str]:
    """``(labelling, attribute, metric) -> verdict`` of each judged headline metric, read from
    the verdicts' reasons (``"unfair: balance ≥ 0.8 (default bound): ..."``)."""
    out: dict[tuple[str, str, str], str] = {}
    for v in doc.get("verdicts") or ():
        for reason in v.get("reasons") or ():
            m = _REASON.match(str(reason))
            if m:
                out.setdefault((str(v.get("labelling")), str(v.get("attribute")), m[2]), m[1])
    return out


def _threshold_text(th: Any) -> str | None:
    """``balance@ci[sex] >= 0.8`` (as :meth:`fairaudit.report.results.Threshold.describe`)."""
    if not isinstance(th, Mapping) or th.get("metric") is None:
        return None
    on = th.get("on", "value")
    what = str(th["metric"]) + (f"@{on}" if on != "value" else "")
    if th.get("attribute"):
        what += f"[{th['attribute']}]"
    value = finite(th.get("value"))
    return f"{what} {'>=' if th.get('bound') == 'min' else '<='} {value:g}" if value is not None \
        else what


def _names(doc: Mapping[str, Any]) -> dict[str, Sequence[str]]:
    out: dict[str, Sequence[str]] = {}
    for lab in doc.get("labellings") or ():
        names = lab.get("cluster_names") if isinstance(lab, Mapping) else None
        if isinstance(names, Sequence) and not isinstance(names, str) and names:
            out[str(lab.get("name"))] = [str(n) for n in names]
    return out


def result_rows(doc: Mapping[str, Any], level: str = "metric") -> list[dict[str, Any]]:
    """The rows of :func:`results_frame` as plain dicts (see the module docstring)."""
    if level not in LEVELS:
        from fairaudit.errors import ConfigError

        raise ConfigError(f"level: expected one of {', '.join(map(repr, LEVELS))}; got {level!r}")
    rows: list[dict[str, Any]] = []
    if level == "metric":
        judged = _metric_verdicts(doc)
        for r in doc.get("results") or ():
            ci = r.get("ci")
            lo, hi = (finite(ci[0]), finite(ci[1])) if isinstance(ci, Sequence) and len(ci) == 2 \
                else (None, None)
            key = (str(r.get("labelling")), str(r.get("attribute")), str(r.get("metric")))
            rows.append({
                "labelling": _str(r.get("labelling")), "attribute": _str(r.get("attribute")),
                "metric": _str(r.get("metric")), "value": finite(r.get("value")),
                "ci_low": lo, "ci_high": hi, "status": _str(r.get("status")),
                "verdict": judged.get(key) if r.get("headline") else None,
                "auditor": _str(r.get("auditor")), "headline": bool(r.get("headline")),
                "direction": _str(r.get("direction")),
                "threshold": _threshold_text(r.get("threshold")),
                "judged": finite(r.get("judged")), "n_rows": _int(r.get("n_rows")),
            })
        return rows
    names = _names(doc)
    fixed = {"cluster", "n", "value", "worst_group"}
    for r in doc.get("results") or ():
        lab = str(r.get("labelling"))
        for c in r.get("per_cluster") or ():
            cluster = _int(c.get("cluster"))
            own = names.get(lab)
            rest = {k: v for k, v in c.items() if k not in fixed}
            rows.append({
                "labelling": lab, "attribute": _str(r.get("attribute")),
                "auditor": _str(r.get("auditor")), "metric": _str(r.get("metric")),
                "cluster": cluster,
                "cluster_name": own[cluster] if own is not None and cluster is not None
                and 0 <= cluster < len(own) else None,
                "n": _int(c.get("n")), "value": finite(c.get("value")),
                "worst_group": _str(c.get("worst_group")),
                "detail": json.dumps(rest, sort_keys=True, ensure_ascii=False) if rest else None,
            })
    return rows


def results_frame(doc: Mapping[str, Any], level: str = "metric") -> polars.DataFrame:
    """The document's results as a tidy polars frame, one row per metric result
    (``level="metric"``) or per cluster of each result (``level="cluster"``); the columns and
    their types are fixed, whatever the document holds (an empty frame keeps them)."""
    import polars as pl

    rows = result_rows(doc, level)
    kinds = _METRIC_COLUMNS if level == "metric" else _CLUSTER_COLUMNS
    dtypes = {"str": pl.String, "float": pl.Float64, "int": pl.Int64, "bool": pl.Boolean}
    schema = {name: dtypes[kind] for name, kind in kinds.items()}
    return pl.DataFrame(rows, schema=schema)


def pandas_frame(frame: polars.DataFrame) -> pandas.DataFrame:
    """``frame`` as a pandas DataFrame, column by column (no pyarrow): floats keep NaN for
    null, integer columns with nulls become pandas' nullable ``Int64``, text stays text."""
    from fairaudit.errors import require_extra

    pd = require_extra("pandas", "pandas", "run.to_pandas()")
    import polars as pl

    columns: dict[str, Any] = {}
    for name, s in zip(frame.columns, frame.get_columns(), strict=True):
        if s.dtype == pl.Int64:
            columns[name] = pd.array(s.to_list(), dtype="Int64")
        elif s.dtype in (pl.Float64, pl.Boolean):
            columns[name] = s.to_numpy()
        else:
            columns[name] = pd.Series(s.to_list(), dtype=object)
    return pd.DataFrame(columns, index=pd.RangeIndex(frame.height))
