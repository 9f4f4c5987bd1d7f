"""The audit JSON document of a run, built from the stages' typed state (``build_document``),
and the one decision of what is published (``publish_document``: the analyst's exact report, or
a ``--publish`` release's document).
"""


from __future__ import annotations

import copy
import math
import platform
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import numpy as np

from fairaudit import __version__
from fairaudit.core.components import (
    Direction,
)
from fairaudit.core.contingency import (
    JointTable,
)
from fairaudit.core.data import ROW_ID
from fairaudit.core.fit_quality import cluster_silhouettes, degenerate_warnings
from fairaudit.core.spec import ChainSpec
from fairaudit.errors import FairauditError
from fairaudit.report.results import (
    SCHEMA_VERSION,
    Status,
)


def jsonable(x: Any) -> Any:
    if isinstance(x, Mapping):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return jsonable(x.tolist())
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating | float):
        f = float(x)
        return None if math.isnan(f) or math.isinf(f) else f
    if isinstance(x, str | int | bool) or x is None:
        return x
    if isinstance(x, Direction | Status):
        return x.value
    return repr(x)


def json_params(params: Mapping[str, Any]) -> dict[str, Any]:
    return jsonable(dict(params))


def _composition(joint: JointTable) -> dict:
    """Exact group x cluster tables of a labelling."""
    out = {}
    for attribute, t in joint.tables().items():
        counts = t.counts
        sizes = counts.sum(axis=0)
        pop = counts.sum(axis=1) / max(counts.sum(), 1)
        share = counts / np.where(sizes > 0, sizes, 1)
        out[attribute] = {
            "groups": list(t.groups),
            "clusters": [int(k) for k in t.clusters],
            "counts": [[int(v) for v in row] for row in counts],
            "population_share": [float(p) for p in pop],
            "cluster_share": [[float(v) for v in row] for row in share],
            "noise": [int(v) for v in t.noise],
        }
    return out


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"fairaudit": __version__}
    for pkg in ("polars", "numpy", "scipy", "scikit-learn", "great-expectations", "pluggy",
                "jinja2"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def build_document(*, spec, path, roles, n_input, joint_full, data, sample_info, labellings, joints,
              results, checks, preprocessing, notes, status, host, timings, total, fingerprint):
    mc = spec.options.min_cell
    groups = {}
    for a in joint_full.attribute_names:
        sizes = joint_full.group_sizes(a)
        tot = sum(sizes.values())
        groups[a] = [
            {"group": g, "n": n, "share": n / tot if tot else None, "small": n < mc}
            for g, n in sizes.items()
        ]
    exclusions = {}
    if joint_full.null_rows:
        exclusions["null value in a sensitive or labels column"] = joint_full.null_rows
    if data is not None:
        for k, v in data.exclusions.items():
            exclusions[k] = max(v, exclusions.get(k, 0))
    lab_docs = []
    for lab in labellings:
        joint = joints[lab.name]
        clean = joint.cluster >= 0
        sizes: dict[int, int] = {}
        for c, n in zip(joint.cluster[clean], joint.counts[clean], strict=True):
            sizes[int(c)] = sizes.get(int(c), 0) + int(n)
        n_noise = int(joint.counts[~clean].sum())
        lab_docs.append({
            "name": lab.name,
            "origin": lab.origin,
            "component": lab.component,
            "column": lab.column,
            "params": json_params(lab.params),
            "n_rows": int(joint.n),
            "n_clusters": len(sizes),
            "n_noise": n_noise,
            "cluster_sizes": [{"cluster": c, "n": n} for c, n in sorted(sizes.items())],
            "notes": list(lab.notes),
            "extras": jsonable(lab.extras),
            "fit": jsonable(lab.fit) if lab.fit else None,
            "warnings": degenerate_warnings(sizes, params=lab.params, fit=lab.fit,
                                            component=lab.component,
                                            separation=cluster_silhouettes(results, lab.name),
                                            memberships=lab.memberships,
                                            names=joint.cluster_names),
            "composition": _composition(joint),
        })
    res_docs = []
    for r in results:
        d = r.to_json()
        d["per_cluster"] = [dict(r) for r in d["per_cluster"]]
        d["detail"] = jsonable(d["detail"])
        res_docs.append(d)
    # the rows the metrics were computed on: every labelling's, the largest when they differ
    # (a labels column of every row beside clusterers fitted after --on-nonfinite drop)
    rows_audited = max((d["n_rows"] for d in lab_docs), default=int(joint_full.n))
    plugins = [
        {"name": p.name, "package": p.package, "version": p.version, "builtin": p.builtin}
        for p in sorted(host.plugins.values(), key=lambda p: p.name)
    ]
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "fairaudit", "version": __version__},
        "status": status.value,
        "input": {
            "path": str(path),
            "format": _format_of(path, spec.data.reader_options.get("format")),
            "rows": int(n_input),
            "rows_audited": rows_audited,
            "fingerprint": fingerprint,
            "columns": [c for c in (data.frame.columns if data is not None else [])
                        if c != ROW_ID] or list(roles.sensitive)
                       + ([roles.labels] if roles.labels else []),
            "sensitive": list(roles.sensitive),
            "attributes": list(joint_full.attribute_names),
            "ordinal": {k: list(v) for k, v in roles.ordinal.items()},
            "labels": roles.labels,
            "features": list(data.roles.features) if data is not None else [],
            "excluded_columns": dict(data.roles.excluded) if data is not None
            else dict(roles.excluded),
            "exclusions": exclusions,
            "sample": sample_info,
            "groups": groups,
        },
        "chain": spec.to_json(),
        "preprocessing": preprocessing,
        "labellings": lab_docs,
        "results": res_docs,
        "checks": checks,
        "notes": notes,
        "environment": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "versions": _versions(),
            "plugins": plugins,
        },
        "timing": {
            "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "total_seconds": round(total, 4),
            "steps": [
                {"kind": t.kind, "step": t.step, "labelling": t.labelling,
                 "seconds": round(t.seconds, 4)}
                for t in timings
            ],
        },
    }


def frame_fingerprint(frame: Any) -> str:
    import hashlib

    import polars as pl

    if isinstance(frame, pl.LazyFrame):
        return "unavailable (lazy in-memory table)"
    h = hashlib.sha256()
    h.update(str(frame.schema).encode())
    h.update(frame.hash_rows(seed=0).to_numpy().tobytes())
    return "rowhash:" + h.hexdigest()


def _format_of(path: Any, given: str | None = None) -> str:
    if not isinstance(path, str):
        return "polars"
    from fairaudit.core.io import resolve_input

    try:
        return resolve_input(path, given).format
    except FairauditError:
        return "plugin"


def publish_document(doc: dict[str, Any], spec: ChainSpec, *, joints: Mapping[str, JointTable],
             joint_full: JointTable, release: Any = None) -> dict[str, Any]:
    """The document this run writes, made from the exact one (``doc``, not changed).

    The one place where what is published is decided; the price of fairness, the sentences and
    the verdicts are computed afterwards from its result alone. ``joints`` (labelling name ->
    joint count table, noise as cluster -1) and ``joint_full`` (the input's groups) are the
    counts every group-related number of ``doc`` derives from.

    The default is the analyst's report: exact values everywhere, small groups included, for
    people allowed to see the data (``privacy.mode = "exact"``, docs/privacy.md).
    With ``--publish``, ``release`` (:class:`fairaudit.privacy.publish.Release`) made ``joints`` and
    ``joint_full`` from noisy counts before anything was computed from them; its document drops
    what is not a function of those counts and declares ``privacy.mode = "dp"``.
    """
    if release is not None:  # Release.document edits what it is given: give it a copy
        return release.document(copy.deepcopy(doc))
    del joints, joint_full  # the exact report publishes ``doc`` as it is
    return {**doc, "privacy": {"mode": "exact"}}


# ---------------------------------------------------------------------------- helpers
