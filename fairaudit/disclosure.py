"""Disclosure control: one pass over the finished audit document, :func:`protect`.

Everything the report publishes about groups is a linear function of one table per labelling:
the *cube* of row counts per (group of every sensitive attribute, cluster), with noise as one
more cluster level. The document publishes marginals of it: every attribute's group x cluster
table (each attribute alone and the intersection), its noise column, its row totals (as
population shares and, for the input, group sizes), the cluster sizes and the totals. Per-cluster
metric values, worst groups and headline values are functions of those tables.

**Sensitive.** A published count ``x`` with ``1 <= x < min_cell`` (a *primary* cell). Zeros are
not sensitive: they say that nobody of a group is in a cluster, which a fairness audit must be
able to say (tau-ARGUS and sdcTable treat zeros the same way by default). Totals of the whole
table are not cells about a group and are always published.

**Method** (primary + complementary suppression, the hypercube method of tau-ARGUS's GHMITER
and sdcTable's ``HYPERCUBE``, generalised to linked tables). For every primary cell the pass
picks a *hypercube*: an alternative level on every dimension the cell's table keeps (another
group, another cluster), the cell's own level on the others. Adding ``+t`` on the corners with
an even number of alternatives and ``-t`` on the others changes no published sum of which the
cube is not wholly part, so after suppressing every published cell the cube does touch, the
published numbers are consistent with the primary cell's count moving by ``t``. The cube is
chosen so that ``t`` can go down by 1 and up to ``min_cell - x`` while every cell stays >= 0
(several cubes on other levels of the summed dimensions add their room); among those the one
that hides the fewest people wins (each new cell weighs 1 + log2(1 + count) times its table's
weight; cells already suppressed are free), and a last pass publishes again the complementary
cells no protection needs (:mod:`fairaudit.suppression`).

**Guarantee.** For every primary cell with count ``x``, every integer count from ``x - 1`` up to
``min_cell`` is consistent with all published counts, shares and totals: nobody can tell its
count, nor whether it is below ``min_cell``. (Group totals below ``min_cell`` are announced as
too small by design, so for them the remaining range is ``max(1, x-1) .. min_cell-1``.) The
test suite plays the attacker with a linear programme over every published number
(``tests/test_disclosure.py``).

**Derived values.** A per-cluster value (balance, Ed, Wd, CCE..., its worst group) is a function
of its cluster's column and the table's row totals: it is published only when all of those are.
A result value and its confidence interval depend on the whole table: they are withheld
(``null``, ``"withheld": true`` and a note) when any count of the table is suppressed. Thresholds
are judged on the exact values before this pass, so gates keep working; a gate's PASS/FAIL is the
one thing published about a withheld value.

When a labelling has too many small cells for the search (over :data:`fairaudit.suppression.MAX_PRIMARIES`, e.g.
thousands of tiny clusters) or no cube exists, every count of that labelling except its total is
withheld, which satisfies the guarantee trivially.

With ``min_cell = 0`` or suppression off, :func:`protect` only removes the working data the runner
attached (``_joint``) and publishes exact values.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fairaudit.suppression import (
    MAX_CUBE_CELLS,
    Cube,
    Infeasible,
    Spec,
    labelling_specs,
    protect_cube,
    published_attr_sets,
    totals_cube,
)

log = logging.getLogger(__name__)

__all__ = ["protect"]

_SEP = "|"

REASON_CELL = "suppressed to protect counts below min_cell={mc} (disclosure control)"
REASON_GROUP = "group below min_cell={mc}"
BOUNDS_NOTE = (
    "exact value withheld: it depends on counts suppressed for disclosure control; it lies "
    "within the published bounds, which follow from the published counts alone (the threshold "
    "was judged on the exact value)"
)
PINNED_NOTE = (
    "interval withheld: it depends on counts suppressed for disclosure control; the value "
    "itself follows from the published counts"
)
WITHHELD_NOTE = (
    "value withheld: it depends on counts suppressed for disclosure control "
    "(cells below min_cell={mc}); the threshold was judged on the exact value"
)


# ============================================================================ from the runner
def cube_from_joint(joint: Any) -> tuple[Cube, list[int]]:
    """The cube of a :class:`~fairaudit.contingency.JointTable` and its cluster ids (the noise
    level is last)."""
    clean = joint.cluster >= 0
    ks = np.unique(joint.cluster[clean])
    kidx = np.where(clean, np.searchsorted(ks, joint.cluster), len(ks))
    shape = tuple(len(c) for c in joint.categories) + (len(ks) + 1,)
    if int(np.prod(shape, dtype=np.float64)) > MAX_CUBE_CELLS:
        raise Infeasible
    X = np.zeros(shape, dtype=np.int64)
    if joint.counts.size:
        np.add.at(X, (*joint.codes.T, kidx), joint.counts)
    has_noise = bool((~clean).any() and joint.counts[~clean].sum() > 0)
    cube = Cube(X, labelling_specs(len(shape) - 1, has_noise), len(ks) if has_noise else None)
    if not has_noise:  # without noise, "clean" totals are the "all" totals
        cube.noise = None
    cube.init()
    return cube, [int(k) for k in ks]


def _attr_names(joint: Any) -> list[str]:
    names = list(joint.attributes)
    if len(names) >= 2:
        names.append(_SEP.join(names))
    return names


def _group_key(joint: Any, R: tuple[int, ...], name: str) -> tuple[int, ...] | None:
    """Cube codes of a group name of attribute set ``R``."""
    if len(R) == 1:
        cats = joint.categories[R[0]]
        return (cats.index(name),) if name in cats else None
    return _intersection_lookup(joint).get(name)


def _intersection_lookup(joint: Any) -> dict[str, tuple[int, ...]]:
    """Intersection group names -> codes (cached on the table object for this pass)."""
    cached = getattr(joint, "_fairaudit_names", None)
    if cached is None:
        cached = {}
        for codes in {tuple(int(c) for c in row) for row in joint.codes}:
            cached[_SEP.join(joint.categories[j][c] for j, c in enumerate(codes))] = codes
        object.__setattr__(joint, "_fairaudit_names", cached)
    return cached


# ============================================================================ the pass
def protect(doc: dict[str, Any], min_cell: int,
            auditors: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Apply disclosure control to the finished document (in place; also returned).

    ``doc`` is the runner's document with exact counts, with the joint tables attached as
    ``doc["input"]["_joint"]`` and ``labellings[i]["_joint"]`` (removed here). ``min_cell <= 0``
    publishes everything exactly. ``auditors`` (name -> counting auditor) give the published
    bounds of withheld values (:meth:`~fairaudit.components.CountingAuditor.bounds`).
    """
    inp = doc.get("input") or {}
    joint_full = inp.pop("_joint", None)
    joints = [lab.pop("_joint", None) for lab in doc.get("labellings") or ()]
    doc.setdefault("suppressed", [])
    if min_cell <= 1 or joint_full is None:
        return doc
    mc = int(min_cell)
    suppressed: list[dict[str, Any]] = []

    # ---- the input's group sizes and every labelling: grouped by identical row totals
    full_cube = None
    try:
        full_cube, _ = cube_from_joint(joint_full)
    except Infeasible:
        pass
    lab_cubes: list[tuple[Cube, list[int]] | None] = []
    for j in joints:
        try:
            lab_cubes.append(cube_from_joint(j) if j is not None else None)
        except Infeasible:
            lab_cubes.append(None)

    def totals_key(c: Cube | None) -> bytes | None:
        return None if c is None else c.X.sum(axis=-1).tobytes() + str(c.X.shape[:-1]).encode()

    groups: dict[bytes, list[int]] = {}
    full_key = totals_key(full_cube)
    for i, lc in enumerate(lab_cubes):
        k = totals_key(lc[0]) if lc else None
        if k is not None:
            groups.setdefault(k, []).append(i)
    totals_supp: dict[bytes, dict[Spec, np.ndarray] | None] = {}
    totals_choice: dict[bytes, dict] = {}
    keys = set(groups) | ({full_key} if full_key is not None else set())
    for k in keys:
        src = full_cube if k == full_key else lab_cubes[groups[k][0]][0]  # type: ignore[index]
        tc = totals_cube(src.X)  # type: ignore[union-attr]
        try:
            totals_choice[k] = protect_cube(tc, mc, single=True)
            totals_supp[k] = tc.supp
        except Infeasible:
            totals_supp[k] = None  # every group total withheld
            totals_choice[k] = {}

    # ---- labellings (they may suppress more group totals: applied to the input's below)
    applied: list[tuple[dict, Any, Cube | None, list[int]]] = []
    for i, lab in enumerate(doc.get("labellings") or ()):
        joint = joints[i]
        lc = lab_cubes[i]
        cube, ks = (lc if lc is not None else (None, []))
        if cube is not None and joint is not None:
            k = totals_key(cube)
            ts = totals_supp.get(k)  # type: ignore[arg-type]
            try:
                if ts is None:
                    raise Infeasible
                for R in published_attr_sets(cube.d):
                    cube.supp[Spec(R, "all")] |= ts[Spec(R, "all")]
                forced = {
                    (Spec(s.attrs, "all"), idx): ch
                    for (s, idx), ch in totals_choice.get(k, {}).items()  # type: ignore[arg-type]
                }
                protect_cube(cube, mc, forced=forced,
                             totals_free=len(groups.get(k, ())) == 1)  # type: ignore[arg-type]
                for R in published_attr_sets(cube.d):
                    ts[Spec(R, "all")] |= cube.supp[Spec(R, "all")]
            except Infeasible:
                cube = None
        applied.append((lab, joint, cube, ks))

    # ---- input.groups
    if full_cube is not None and joint_full is not None:
        ts = totals_supp[full_key]  # type: ignore[index]
        names = _attr_names(joint_full)
        for R, attr in zip(published_attr_sets(full_cube.d), names, strict=True):
            for g in (inp.get("groups") or {}).get(attr) or ():
                key = _group_key(joint_full, R, g["group"])
                hide = ts is None or key is None or bool(ts[Spec(R, "all")][key])
                if hide:
                    small = bool(g.get("small"))
                    g["n"] = None
                    g["share"] = None
                    suppressed.append({"labelling": None, "attribute": attr, "group": g["group"],
                                       "cluster": None,
                                       "reason": (REASON_GROUP if small else REASON_CELL)
                                       .format(mc=mc)})
    for lab, joint, cube, ks in applied:
        if cube is None:
            _withhold_labelling(lab, mc, suppressed)
            _withhold_results(doc, lab["name"], mc)
        else:
            _apply_labelling(doc, lab, joint, cube, ks, mc, suppressed, auditors or {})
        _protect_extras(lab, doc, mc)
    doc["suppressed"] = suppressed
    return doc


def _withhold_labelling(lab: dict[str, Any], mc: int, suppressed: list) -> None:
    """Every count of the labelling withheld; the JSON stays lean (no columns of nulls)."""
    for comp in (lab.get("composition") or {}).values():
        comp["clusters"] = []
        comp["counts"] = [[] for _ in comp.get("counts") or ()]
        comp["cluster_share"] = [[] for _ in comp.get("cluster_share") or ()]
        comp["population_share"] = [None for _ in comp.get("population_share") or ()]
        comp["noise"] = [None for _ in comp.get("noise") or ()]
    lab["cluster_sizes"] = []
    lab["withheld"] = True
    if lab.get("n_noise"):
        lab["n_noise"] = None
    suppressed.append({
        "labelling": lab["name"], "attribute": None, "group": None, "cluster": None,
        "reason": f"every count of this labelling withheld: no safe pattern of suppressed cells "
                  f"was found for its cells below min_cell={mc} (more than 3,000 of them, or a "
                  "group too small to hide)",
    })


def _apply_labelling(doc, lab, joint, cube: Cube, ks: list[int], mc: int, suppressed,
                     auditors: Mapping[str, Any]) -> None:
    kpos = {k: i for i, k in enumerate(ks)}
    noise = len(ks)
    names = _attr_names(joint)
    sizes_spec = Spec((), "each")
    size_hidden = cube.supp[sizes_spec]
    for c in lab.get("cluster_sizes") or ():
        if size_hidden[kpos[int(c["cluster"])]]:
            c["n"] = None
            c["suppressed"] = True
            suppressed.append({"labelling": lab["name"], "attribute": None, "group": None,
                               "cluster": int(c["cluster"]),
                               "reason": REASON_CELL.format(mc=mc)})
    if cube.noise is not None and size_hidden[noise]:
        lab["n_noise"] = None
    public_sizes = {k: int(cube.values[sizes_spec][kpos[k]]) for k in ks
                    if not size_hidden[kpos[k]]}
    for R, attr in zip(published_attr_sets(cube.d), names, strict=True):
        comp = (lab.get("composition") or {}).get(attr)
        if not comp:
            continue
        each = cube.supp[Spec(R, "each")]
        tot = cube.supp[Spec(R, "clean" if cube.noise is not None else "all")]
        hidden_rows: set[str] = set()            # groups with any suppressed number
        hidden_in: dict[int, set[str]] = {}       # cluster -> groups with a suppressed cell
        hidden_totals: set[str] = set()           # groups whose population share is hidden
        for gi, g in enumerate(comp["groups"]):
            key = _group_key(joint, R, g)
            if key is None:
                continue
            if tot[key]:
                comp["population_share"][gi] = None
                hidden_rows.add(g)
                hidden_totals.add(g)
            if cube.noise is not None and each[key + (noise,)]:
                comp["noise"][gi] = None
                hidden_rows.add(g)
            for ki, k in enumerate(comp["clusters"]):
                kk = kpos[int(k)]
                if each[key + (kk,)]:
                    comp["counts"][gi][ki] = None
                    comp["cluster_share"][gi][ki] = None
                    hidden_rows.add(g)
                    hidden_in.setdefault(int(k), set()).add(g)
                    suppressed.append({"labelling": lab["name"], "attribute": attr, "group": g,
                                       "cluster": int(k), "reason": REASON_CELL.format(mc=mc)})
                elif size_hidden[kk]:
                    comp["cluster_share"][gi][ki] = None
        bounder = _Bounder(cube, R, joint, kpos, mc, auditors)
        for r in doc.get("results") or ():
            if r.get("labelling") == lab["name"] and r.get("attribute") == attr:
                _protect_result(r, mc, hidden_rows, hidden_in, hidden_totals, public_sizes,
                                bounder, comp["groups"])
    hidden_sizes = {k for k in ks if size_hidden[kpos[k]]}
    if hidden_sizes:
        for r in doc.get("results") or ():
            if r.get("labelling") == lab["name"]:
                for row in r.get("per_cluster") or ():
                    if row.get("cluster") in hidden_sizes:
                        row["n"] = None


_DETAIL_KEEP = ("interval", "too_small")


def _left_out(r: Mapping[str, Any]) -> set[str]:
    """Groups a counting auditor left out as too small (they do not enter its values)."""
    ts = (r.get("detail") or {}).get("too_small")
    return set(ts.get("groups") or ()) if isinstance(ts, Mapping) else set()


class _Bounder:
    """Published bounds of the results of one published table (docs/privacy.md, "Bounds")."""

    def __init__(self, cube: Cube, R: tuple[int, ...], joint: Any, kpos: Mapping[int, int],
                 mc: int, auditors: Mapping[str, Any]) -> None:
        self.cube, self.R, self.joint, self.kpos, self.mc = cube, R, joint, kpos, mc
        self.auditors = auditors
        self._ranges: tuple[tuple[int, ...], Any] | None = None
        self._cache: dict[tuple, Mapping[str, Any]] = {}

    def _flat(self, codes: tuple[int, ...]) -> int:
        dims = tuple(self.cube.X.shape[j] for j in self.R)
        return int(np.ravel_multi_index(codes, dims))

    def bounds(self, r: Mapping[str, Any], groups: Sequence[str], left_out: set[str]
               ) -> Any | None:
        """The auditor's MetricBounds for result ``r`` from published numbers, or None."""
        from fairaudit.disclosure_bounds import published_ranges, table_box

        comp = self.auditors.get(r.get("auditor"))
        if comp is None or not hasattr(comp, "bounds"):
            return None
        rows = []
        for g in groups:
            if g in left_out:
                continue
            key = _group_key(self.joint, self.R, g)
            if key is None:
                return None
            rows.append(self._flat(key))
        rows.sort()  # the table's group order: categories, or the intersection's code order
        clusters = [self.kpos[int(row["cluster"])] for row in r.get("per_cluster") or ()
                    if row.get("cluster") is not None and int(row["cluster"]) in self.kpos]
        small = []
        for g in left_out:  # announced in the result as too small to judge
            k = _group_key(self.joint, self.R, g)
            if k is not None:
                small.append(self._flat(k))
        key = (r.get("auditor"), tuple(rows), tuple(clusters), tuple(sorted(small)))
        if key not in self._cache:
            if self._ranges is None or self._ranges[0] != tuple(sorted(small)):
                mask = np.zeros(self.cube.values[Spec(self.R, "all")].size, dtype=bool)
                mask[small] = True
                self._ranges = (tuple(sorted(small)),
                                published_ranges(self.cube, self.R, self.mc, mask))
            attr = _attr_names(self.joint)[published_attr_sets(self.cube.d).index(self.R)]
            ordinal = attr in (self.joint.ordinal or {})
            box = table_box(self._ranges[1], rows, sorted(set(clusters)) or None, ordinal)
            try:
                self._cache[key] = comp.bounds(box) if box is not None else {}
            except Exception:  # a plugin's bounds must not break the audit: just withhold
                log.warning("auditor %r: bounds failed; values stay withheld", r.get("auditor"),
                            exc_info=True)
                self._cache[key] = {}
        return self._cache[key].get(r.get("metric"))


def _inside(value: Any, lo: float, hi: float) -> bool:
    if value is None:
        return False
    v = float(value)
    tol = 1e-9 * max(1.0, abs(v))
    return np.isfinite(v) and lo - tol <= v <= hi + tol


def _protect_result(r: dict[str, Any], mc: int, hidden_rows: set[str],
                    hidden_in: Mapping[int, set[str]], hidden_totals: set[str],
                    public_sizes: Mapping[int, int], bounder: _Bounder | None = None,
                    groups: Sequence[str] = ()) -> None:
    """Withhold what of one result depends on suppressed numbers of its table.

    The value depends on the rows the auditor kept (groups left out as too small do not enter
    it): it is published when all of those rows are. A bootstrap interval resamples the whole
    table, small groups included: it is published only when nothing of the table is hidden.
    A per-cluster value depends on its cluster's column and the kept rows' totals.

    In place of a withheld value the result publishes ``bounds``: an interval computed from
    the published numbers alone that contains it (:class:`_Bounder`). When the bounds pin the
    value down, the value is published (it is then a function of published numbers).
    """
    left_out = _left_out(r)
    b = None
    if bounder is not None and (hidden_rows or left_out):
        b = bounder.bounds(r, groups, left_out)
        if b is not None and not _inside(r.get("value"), b.lower, b.upper):
            log.warning("bounds [%s, %s] of %s do not contain its value; not published",
                        b.lower, b.upper, r.get("metric"))
            b = None
    if left_out:  # their sizes are suppressed: so is their sum (it would be one more equation)
        ts = r["detail"]["too_small"]
        r["detail"]["too_small"] = dict(ts, rows=None)
        r["notes"] = _scrub_notes(list(r.get("notes") or ()), mc)
    kept_hidden = hidden_rows - left_out
    method = str(((r.get("detail") or {}).get("interval") or {}).get("method", ""))
    value_ok = not kept_hidden
    ci_ok = value_ok and (not hidden_rows or not method.startswith("bootstrap"))
    if not value_ok and b is not None and _pinned(r.get("value"), b.lower, b.upper):
        value_ok = True  # the published numbers determine it
        ci_ok = False    # its interval still reads the hidden counts
    if not value_ok or not ci_ok:
        _withhold_value(r, mc, ci_only=value_ok)
        if not value_ok and b is not None:
            r["bounds"] = [float(b.lower), float(b.upper)]
            r["notes"] = [BOUNDS_NOTE if n == WITHHELD_NOTE.format(mc=mc) else n
                          for n in r.get("notes") or ()]
        elif value_ok and kept_hidden:
            r.setdefault("notes", []).append(PINNED_NOTE)
    pc_bounds: dict[int, tuple[float, float]] = {}
    if b is not None and b.per_cluster is not None:
        ks = [row.get("cluster") for row in r.get("per_cluster") or ()]
        lo, hi = b.per_cluster
        if len(lo) == len(ks):
            pc_bounds = {k: (float(a), float(c)) for k, a, c in zip(ks, lo, hi, strict=True)}
    every_column = bool(hidden_totals - left_out)
    for row in r.get("per_cluster") or ():
        k = row.get("cluster")
        column_hidden = bool(hidden_in.get(k, set()) - left_out)
        # a per-cluster "n" over the kept rows only: the cluster size minus the left-out
        # groups' cells, so it is published only when it adds nothing
        n = row.get("n")
        if n is not None and public_sizes.get(k) != n and (column_hidden or left_out):
            row["n"] = None
        if every_column or column_hidden:
            exact = row.get("value")
            _withhold_row(row)
            rb = pc_bounds.get(k)
            if rb is not None and _inside(exact, *rb):
                row["bounds"] = [rb[0], rb[1]]


def _pinned(value: Any, lo: float, hi: float) -> bool:
    """The bounds leave no room: the value follows from the published numbers."""
    return value is not None and hi - lo <= 1e-12 * max(1.0, abs(float(value)))


def _withhold_row(row: dict[str, Any]) -> None:
    for key in list(row):
        if key not in ("cluster", "metric", "n"):
            del row[key]
    row["value"] = None
    row["withheld"] = True


def _scrub_notes(notes: list[str], mc: int) -> list[str]:
    """Notes may quote how many people small groups hold: keep the words, not the count."""
    import re

    return [re.sub(r"\([\d,]+ people\)", f"(each fewer than {mc} people)", n)
            if n.startswith("too small to judge") else n for n in notes]


def _withhold_value(r: dict[str, Any], mc: int, *, ci_only: bool = False) -> None:
    on_value = (r.get("threshold") or {}).get("on", "value") == "value"
    if not (ci_only and on_value):  # a gate's judged number is the value or a CI end
        r["judged"] = None
    if ci_only:
        r["ci"] = None
    else:
        r["value"] = None
        r["ci"] = None
        r["withheld"] = True
        note = WITHHELD_NOTE.format(mc=mc)
        if note not in r.get("notes", []):
            r.setdefault("notes", []).append(note)
    r["notes"] = _scrub_notes(list(r.get("notes") or ()), mc)
    detail = r.get("detail") or {}
    kept = {k: v for k, v in detail.items() if k in _DETAIL_KEEP}
    if isinstance(kept.get("too_small"), Mapping):
        kept["too_small"] = dict(kept["too_small"], rows=None)
    if isinstance(kept.get("interval"), Mapping):
        kept["interval"] = {k: v for k, v in kept["interval"].items()
                            if k in ("method", "level", "replicates")}
    r["detail"] = kept


def _withhold_results(doc, labelling: str, mc: int) -> None:
    """Every result of a labelling whose counts are all withheld (lean: no per-cluster rows)."""
    for r in doc.get("results") or ():
        if r.get("labelling") != labelling or r.get("attribute") is None:
            continue
        _withhold_value(r, mc)
        r["per_cluster"] = []


def _protect_extras(lab: dict[str, Any], doc: Mapping[str, Any], mc: int) -> None:
    """Counts that built-in clusterers repeat in ``extras`` follow the protected tables.

    * ``composition`` (FFCM / FCM: hard and soft group shares per cluster): a share is kept
      only where the labelling's own count of that group and cluster is published; sizes only
      where the cluster size is.
    * ``excluded_groups`` (FairDen: groups too small for the fair clustering): a size is kept
      only when the input publishes it; their total likewise.
    * ``projection`` (FairDen: labels of a sample of rows): dropped when it covers every row
      and a cluster size is suppressed (counting its labels would give the size back).
    """
    extras = lab.get("extras")
    if not isinstance(extras, dict):
        return
    withheld = bool(lab.get("withheld"))
    sizes = {c.get("cluster"): c.get("n") for c in lab.get("cluster_sizes") or ()}
    comp_all = lab.get("composition") or {}
    soft = extras.get("composition")
    if isinstance(soft, Mapping):
        for attr, clusters in soft.items():
            comp = comp_all.get(attr) or {}
            col = {c: i for i, c in enumerate(comp.get("clusters") or ())}
            row = {g: i for i, g in enumerate(comp.get("groups") or ())}
            for c in clusters or ():
                k = c.get("cluster")
                if withheld or sizes.get(k) is None:
                    c["hard_size"] = None
                    c["soft_size"] = None
                for g in c.get("groups") or ():
                    gi, ki = row.get(g.get("group")), col.get(k)
                    known = (not withheld and gi is not None and ki is not None
                             and comp["counts"][gi][ki] is not None)
                    if not known:
                        g["hard_share"] = None
                        g["soft_share"] = None
                    if withheld or gi is None or comp["population_share"][gi] is None:
                        g["population_share"] = None
    excluded = extras.get("excluded_groups")
    if isinstance(excluded, list) and excluded:
        public = {g.get("group"): g.get("n") for rows in
                  ((doc.get("input") or {}).get("groups") or {}).values() for g in rows}
        hidden = False
        for g in excluded:
            if isinstance(g, dict) and (public.get(g.get("group")) is None
                                        or (g.get("size") or 0) < mc):
                g["size"] = None
                hidden = True
        if hidden and "n_excluded_rows" in extras:
            extras["n_excluded_rows"] = None
    proj = extras.get("projection")
    if isinstance(proj, Mapping) and proj.get("label") is not None:
        every_row = len(proj.get("label") or ()) >= int(lab.get("n_rows") or 0)
        if every_row and (withheld or any(v is None for v in sizes.values())):
            extras["projection"] = None
    _scrub_labelling_notes(lab, extras, withheld)


def _scrub_labelling_notes(lab: dict[str, Any], extras: Mapping[str, Any], withheld: bool) -> None:
    """FairDen's notes quote the rows it excluded and the rows that became noise: where those
    counts are withheld (``n_excluded_rows`` / ``n_noise`` nulled), the notes keep the words,
    not the count."""
    import re

    notes = lab.get("notes")
    if not notes:
        return
    noise_hidden = withheld or lab.get("n_noise") is None
    excluded_hidden = withheld or ("n_excluded_rows" in extras
                                   and extras.get("n_excluded_rows") is None)
    out = []
    for n in notes:
        if noise_hidden:
            n = re.sub(r"^[\d,]+ rows are noise", "Some rows are noise", n)
        if excluded_hidden:
            n = re.sub(r"^[\d,]+ rows of sensitive groups", "Rows of sensitive groups", n)
        out.append(n)
    lab["notes"] = out


def protect_gates(doc: dict[str, Any]) -> dict[str, Any]:
    """The gate summary (``doc["gates"]``) quotes each gated result's value and judged number:
    where :func:`protect` withheld or nulled them, the gate shows only its PASS/FAIL."""
    by_key = {(r.get("labelling"), r.get("metric"), r.get("attribute")): r
              for r in doc.get("results") or ()}
    for g in doc.get("gates") or ():
        r = by_key.get((g.get("labelling"), g.get("metric"), g.get("attribute")))
        if r is None:
            continue
        if r.get("withheld"):
            g["withheld"] = True
            if r.get("bounds") is not None:
                g["bounds"] = list(r["bounds"])
        for key in ("value", "ci", "judged"):
            if key in g and r.get(key) is None:
                g[key] = None
    return doc
