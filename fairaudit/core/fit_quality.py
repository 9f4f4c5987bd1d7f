"""Fit diagnostics of a fitted clusterer and warnings about degenerate labellings (issue 13).

Host side, no algorithm imported: :func:`fit_diagnostics` reads what a fitted clusterer exposes
(``objective_`` / ``inertia_``, ``n_iter_``, ``converged_``, its ``max_iter`` parameter, on the
component or on the estimator it wraps as ``estimator_``); :func:`degenerate_warnings` judges one
labelling from its cluster sizes. The runner stores both in the JSON as ``labellings[i].fit`` and
``labellings[i].warnings``; report sections never star a labelling with warnings "best".

Rules (``docs/metrics.md``, "Degenerate labellings"):

* ``dominant_cluster`` — one cluster holds more than :data:`DOMINANT_SHARE` (90 %) of the
  clustered (non-noise) rows; a labelling with a single cluster is dominant by definition.
* ``tiny_cluster`` — a cluster holds less than :data:`TINY_SHARE` (1 %) of the clustered rows,
  unless it is *forced*: by the number of clusters (with k clusters an even split gives 1/k per
  cluster, so for k > 50 the bound becomes half an even share, 1/(2k)), or by the data (the
  cluster is a well separated group: its mean silhouette in the ``quality`` auditor's sample is
  at least :data:`SEPARATED` — "reasonable structure" or better on Kaufman & Rousseeuw's scale).
  Noise (label -1) is never a cluster.
* ``empty_cluster`` — fewer non-empty clusters than the method fitted or was asked for (the
  fitted k, ``n_clusters_fitted``, when the method reports one, else the ``n_clusters``
  parameter), or every row is noise.
* ``not_converged`` — the clusterer set ``converged_ = False``, or stopped at ``max_iter``
  (``n_iter_ >= max_iter``).
* ``uniform_memberships`` — a fuzzy labelling whose memberships are almost uniform: the modified
  partition coefficient (Dave 1996), ``(c * mean_i sum_k u_ik^2 - 1) / (c - 1)``, is below
  :data:`UNIFORM_MPC`. Every row then belongs to every cluster about equally, and its hard label
  comes from tiny differences (fuzzy c-means on many features, Winkler, Klawonn & Kruse 2011).
* ``clusterer_warning`` — the clusterer itself raised a ``UserWarning`` (``warnings.warn``) in
  ``fit`` or, assigning every row after a sampled fit, in ``predict``
  (:func:`recording_warnings`; kept in ``fit["warnings"]`` / ``fit["predict_warnings"]``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fairaudit.report.words import cluster_label

DOMINANT_SHARE = 0.90
"""A cluster holding more than this share of the clustered rows makes a labelling degenerate."""
TINY_SHARE = 0.01
"""A cluster holding less than this share of the clustered rows is tiny (unless forced)."""
MANY_CLUSTERS = 50
"""Above this many clusters the tiny bound becomes half an even share, 1/(2k)."""
SEPARATED = 0.5
"""A tiny cluster whose own mean silhouette reaches this is a genuine small group (forced)."""

UNIFORM_MPC = 0.05
"""A fuzzy labelling whose modified partition coefficient is below this is near-uniform."""

CODES = ("dominant_cluster", "tiny_cluster", "empty_cluster", "not_converged",
         "uniform_memberships", "clusterer_warning")
MAX_RAISED = 5
"""At most this many distinct warnings a clusterer raised are kept per phase (fit, predict)."""


def recording_warnings(fn: Any, *args: Any) -> tuple[Any, list[str]]:
    """``fn(*args)`` and the distinct messages of the ``UserWarning`` s it raised (scikit-learn's
    ``ConvergenceWarning`` included), in order, at most :data:`MAX_RAISED` (then a count of the
    rest): a clusterer's ``warnings.warn`` in ``fit`` or ``predict`` belongs in its labelling's
    ``warnings``, not only on stderr. Other categories (deprecations, numpy's RuntimeWarning)
    are passed on as they were raised."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(*args)
    messages: list[str] = []
    for w in caught:
        if not issubclass(w.category, UserWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
            continue
        text = str(w.message)
        if text not in messages:
            messages.append(text)
    if len(messages) > MAX_RAISED:
        messages = [*messages[:MAX_RAISED],
                    f"and {len(messages) - MAX_RAISED} more warning(s) of the same kind"]
    return out, messages


def modified_partition_coefficient(memberships: Any) -> float | None:
    """Dave's modified partition coefficient of an n x c membership matrix over its non-empty
    clusters: 0 when every row is equally in every cluster, 1 for a crisp partition (``None``
    for fewer than two non-empty clusters or no rows)."""
    import numpy as np

    u = np.asarray(memberships, dtype=float)
    if u.ndim != 2 or u.shape[0] == 0:
        return None
    # clusters with almost no membership (empty ones: under a tenth of an even share) are left
    # out and the rows renormalised: a near-uniform spread over the others is what matters
    used = u.mean(axis=0) >= 0.1 / u.shape[1]
    u = u[:, used]
    if u.shape[1] < 2:
        return None
    u = u / np.maximum(u.sum(axis=1, keepdims=True), 1e-300)
    c = u.shape[1]
    pc = float(np.mean(np.sum(u * u, axis=1)))
    return (c * pc - 1.0) / (c - 1.0)


def _number(x: Any) -> float | None:
    import math

    if x is None or isinstance(x, bool):
        return None
    obj = getattr(x, "objective", None)  # e.g. FCE's per-iteration records
    if obj is not None:
        x = obj
    try:
        import numpy as np

        arr = np.asarray(x, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        return None
    if arr.size == 0:
        return None
    v = float(arr[-1])
    return v if math.isfinite(v) else None


def _last(x: Any) -> Any:
    """The final value of a scalar or of a per-iteration history."""
    if isinstance(x, list | tuple) and x:
        return x[-1]
    return x


def _attr(comp: Any, name: str) -> Any:
    value = getattr(comp, name, None)
    if value is None:
        value = getattr(getattr(comp, "estimator_", None), name, None)
    return value


def fit_diagnostics(comp: Any) -> dict[str, Any]:
    """What a fitted clusterer says about its own fit (JSON-ready; ``None`` = not reported).

    ``objective``: the method's own objective at the end of the fit (``objective_``, the last
    entry when it is a history, else ``inertia_``), with ``objective_name`` naming the attribute;
    ``n_iter``, ``max_iter`` and ``converged`` (``converged_`` when set, else
    ``n_iter < max_iter`` when both are known).
    """
    out: dict[str, Any] = {
        "objective": None, "objective_name": None, "n_iter": None, "max_iter": None,
        "converged": None,
    }
    for name in ("objective_", "inertia_"):
        value = _number(_last(_attr(comp, name)))
        if value is not None:
            out["objective"] = value
            out["objective_name"] = name.rstrip("_")
            break
    n_iter = _attr(comp, "n_iter_")
    if isinstance(n_iter, int | float) and not isinstance(n_iter, bool):
        out["n_iter"] = int(n_iter)
    params = comp.get_params() if hasattr(comp, "get_params") else {}
    max_iter = params.get("max_iter", _attr(comp, "max_iter"))
    if isinstance(max_iter, int) and not isinstance(max_iter, bool):
        out["max_iter"] = int(max_iter)
    converged = getattr(comp, "converged_", None)
    if converged is None:
        converged = getattr(getattr(comp, "estimator_", None), "converged_", None)
    if converged is not None:
        out["converged"] = bool(converged)
    elif out["n_iter"] is not None and out["max_iter"] is not None:
        out["converged"] = out["n_iter"] < out["max_iter"]
    return out


def _k(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    return None


def tiny_bound(k: int) -> float:
    """Share under which a cluster of a k-cluster labelling is tiny: 1 %, or 1/(2k) for k > 50."""
    return TINY_SHARE if k <= MANY_CLUSTERS else 1.0 / (2 * k)


def degenerate_warnings(
    sizes: Mapping[int, int],
    *,
    params: Mapping[str, Any] | None = None,
    fit: Mapping[str, Any] | None = None,
    component: str | None = None,
    separation: Mapping[int, float | None] | None = None,
    memberships: Any = None,
    names: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Warnings ``[{"code", "message", "clusters"}]`` for one labelling.

    ``sizes`` maps each non-noise cluster to its row count (noise left out). ``params`` are the
    labelling's parameters (``n_clusters``, ``n_clusters_fitted``), ``fit`` its
    :func:`fit_diagnostics`, ``separation`` the mean silhouette per cluster (see
    :func:`cluster_silhouettes`; a tiny cluster reaching :data:`SEPARATED` is forced by the data),
    ``memberships`` the n x c fuzzy memberships of a fuzzy clusterer (or ``None``), ``names``
    the clusters' own names (a labels column of strings), used in the messages.
    """
    params = params or {}
    fit = fit or {}
    who = component or "the clusterer"
    out: list[dict[str, Any]] = []

    def name(c: int) -> str:
        return cluster_label({"cluster_names": names} if names else None, c)

    def share(n: int, total: int) -> str:
        return f" ({100.0 * n / total:.1f} %)" if n / total >= 0.001 else " (under 0.1 %)"

    total = int(sum(sizes.values()))
    requested = _k(params.get("n_clusters"))
    fitted = _k(params.get("n_clusters_fitted"))
    expected = fitted if fitted is not None else requested
    if total == 0:
        return [{"code": "empty_cluster", "clusters": [],
                 "message": "every row is noise: the labelling has no cluster"}]
    k = len(sizes)
    if expected is not None and k < expected:
        out.append({
            "code": "empty_cluster", "clusters": [],
            "message": f"{who} fitted {expected} clusters but only {k} are non-empty",
        })
    elif fitted is not None and requested is not None and fitted < requested:
        out.append({
            "code": "empty_cluster", "clusters": [],
            "message": f"{who} was asked for {requested} clusters and fitted only {fitted}",
        })
    big, n_big = max(sizes.items(), key=lambda kv: kv[1])
    if n_big > DOMINANT_SHARE * total:
        out.append({
            "code": "dominant_cluster", "clusters": [int(big)],
            "message": (
                f"{name(big)} holds {n_big:,} of {total:,} clustered rows"
                f"{share(n_big, total)}: one cluster dominates (over "
                f"{DOMINANT_SHARE:.0%}), so the labelling hardly separates anyone"
            ),
        })
    bound = tiny_bound(max(k, expected or 0))
    separation = separation or {}

    def separated(c: int) -> bool:
        v = separation.get(int(c))
        return v is not None and v >= SEPARATED

    tiny = sorted(c for c, n in sizes.items() if n < bound * total and not separated(c))
    if tiny and k > 1:
        parts = [f"{name(c)}: {sizes[c]:,} rows{share(sizes[c], total)}" for c in tiny]
        out.append({
            "code": "tiny_cluster", "clusters": [int(c) for c in tiny],
            "message": (
                f"{len(tiny)} cluster{'s' if len(tiny) > 1 else ''} under {bound:.1%} of the "
                f"{total:,} clustered rows ({'; '.join(parts)}); fairness figures of so few "
                "rows are fragile — check whether it is a genuine small group"
            ),
        })
    if fit.get("converged") is False:
        n_iter, max_iter = fit.get("n_iter"), fit.get("max_iter")
        if n_iter is not None and max_iter is not None and n_iter >= max_iter:
            why = f"stopped at max_iter = {max_iter} iterations before converging"
        else:
            why = "reports that it did not converge"
        out.append({"code": "not_converged", "clusters": [], "message": f"{who} {why}"})
    for phase, key in (("fitting", "warnings"), ("assigning every row (predict)",
                                                 "predict_warnings")):
        for text in fit.get(key) or ():
            out.append({"code": "clusterer_warning", "clusters": [],
                        "message": f"{who} warned while {phase}: {text}"})
    mpc = modified_partition_coefficient(memberships) if memberships is not None else None
    if mpc is not None and mpc < UNIFORM_MPC:
        out.append({
            "code": "uniform_memberships", "clusters": [],
            "message": (
                f"{who}'s memberships are almost uniform (modified partition coefficient "
                f"{max(mpc, 0.0):.3f}; 0 = every row equally in every cluster): the fuzzy "
                "partition carries little structure and the hard labels come from tiny "
                "differences — typical of fuzzy c-means on many features; lower the fuzzifier "
                "m or use fewer features"
            ),
        })
    return out


def cluster_silhouettes(results: Any, labelling: str) -> dict[int, float | None]:
    """Mean silhouette per cluster of ``labelling`` from the ``quality`` auditor's results
    (:class:`~fairaudit.report.results.MetricResult`), or ``{}`` when it did not run."""
    for r in results:
        if r.auditor == "quality" and r.metric == "silhouette" and r.labelling == labelling:
            return {int(row["cluster"]): row.get("value") for row in r.per_cluster
                    if "cluster" in row}
    return {}
