"""Benchmark: information loss of complementary suppression (issue 12, item 2).

    python benchmarks/bench_suppression.py [--exact-json FILE] [--min-cell 10] [--no-demo]

Protects, with both the current choice of complementary cells (``value``: partner cells weighed
by the people they hide, more candidate levels, a pruning pass) and the earlier one (``legacy``:
fewest new cells among the three largest levels), in the same run:

* the tables of ``tests/test_disclosure.py`` (hand-made, COMPAS-like, the Adult sample cut into
  age segments, two labellings on it, two labellings sharing totals, 12 random tables), and
* the bundled demo (``fairaudit audit examples/data/adult_sample.parquet --sensitive sex,race``,
  five labellings sharing group totals), rebuilt from an *unprotected* JSON of it
  (``--exact-json``, made with ``--no-suppress``; without it the demo is audited here first,
  which takes a minute or two).

For every labelling it prints, over the group x cluster cells of all its tables (each attribute
and the intersection):

* ``visible``: the share of the cells that are not themselves sensitive (0 or >= min_cell) that
  stay published;
* ``hidden people``: the people in the suppressed cells that are not sensitive;
* ``LP width``: the attacker's range (max - min of the linear programme over everything
  published, ``tests/test_disclosure.py``) summed over every suppressed cell; and
* ``recovered``: sensitive cells the attacker pins below the promised range (must be 0);

plus the wall time of :func:`fairaudit.disclosure.protect` on the whole document. A labelling
withheld wholesale (no cube found) counts as 0 % visible with all its people hidden, and its
margins as hidden; it has no suppressed cells to measure the LP width of.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def _tables():
    import polars as pl
    import test_disclosure as td
    from conftest import EXAMPLE_DATA

    from fairaudit.contingency import joint_from_frame

    out = {}
    cells = {(0, 0): 120, (0, 1): 80, (0, 2): 60, (1, 0): 3, (1, 1): 7, (1, 2): 8,
             (2, 0): 40, (2, 1): 45, (2, 2): 30}
    j = td._joint(cells, ["race"], [["a", "b", "c"]])
    out["hand-made 3x3"] = (j, {"seg": j})
    full = joint_from_frame(td.compas_like(), label="segment", sensitive=["race", "sex"])
    out["compas-like"] = (full, {"segment": full})
    df = pl.read_parquet(EXAMPLE_DATA).select("race", "sex", "age")
    age = df.get_column("age").to_numpy()
    rng = np.random.default_rng(0)
    df = df.with_columns(pl.Series("segment", np.digitize(age, [30, 45, 60]).astype(np.int64)),
                         pl.Series("other", rng.integers(0, 5, size=df.height)))
    full = joint_from_frame(df, label="segment", sensitive=["race", "sex"])
    out["adult, age segments"] = (full, {"segment": full})
    other = joint_from_frame(df, label="other", sensitive=["race", "sex"])
    out["adult, two labellings"] = (full, {"segment": full, "other": other})
    cdf = td.compas_like()
    cdf = cdf.with_columns(pl.Series("other", np.random.default_rng(3).integers(0, 4,
                                                                                size=cdf.height)))
    full = joint_from_frame(cdf, label="segment", sensitive=["race"])
    other = joint_from_frame(cdf, label="other", sensitive=["race"])
    out["compas, two labellings"] = (full, {"segment": full, "other": other})
    for seed in range(12):
        j = _random_table(seed)
        out[f"random {seed}"] = (j, {"seg": j})
    return out


def _random_table(seed: int):
    """The random tables of ``tests/test_disclosure.py::test_random_tables``."""
    import test_disclosure as td

    return td.random_table(seed)


def _demo(exact_json: Path | None):
    """The demo's labellings as joint tables, from an unprotected JSON of the demo."""
    import test_disclosure as td

    if exact_json is None:
        tmp = Path(tempfile.mkdtemp())
        exact_json = tmp / "exact.json"
        subprocess.run([sys.executable, "-m", "fairaudit.cli", "audit",
                        str(ROOT / "examples/data/adult_sample.parquet"), "--sensitive",
                        "sex,race", "--no-suppress", "--quiet", "--out", str(tmp / "r.html"),
                        "--json", str(exact_json)], check=False)
    doc = json.loads(exact_json.read_text())
    joints = {}
    for lab in doc["labellings"]:
        comp = lab["composition"]
        attrs = [a for a in comp if "|" not in a]
        cats = [list(comp[a]["groups"]) for a in attrs]
        inter = comp["|".join(attrs)] if len(attrs) > 1 else comp[attrs[0]]
        cells = {}
        for g, row, nz in zip(inter["groups"], inter["counts"], inter["noise"], strict=True):
            codes = tuple(c.index(p) for c, p in zip(cats, g.split("|"), strict=True))
            for k, v in zip(inter["clusters"], row, strict=True):
                cells[(*codes, int(k))] = int(v)
            cells[(*codes, -1)] = int(nz or 0)
        joints[lab["name"]] = td._joint(cells, attrs, cats)
    first = next(iter(joints.values()))
    return {"demo (5 labellings)": (first, joints)}


def _margins(lab: dict, exact: bool = False) -> list:
    """Cluster sizes, group totals (population shares: exact counts from the rows, or the
    published share) and noise counts, in one order."""
    out = [c["n"] for c in lab.get("cluster_sizes") or ()]
    for comp in lab["composition"].values():
        out += ([sum(r) for r in comp["counts"]] if exact else list(comp["population_share"]))
        out += list(comp["noise"])
    return out


def measure(full, joints, mc: int) -> list[dict]:
    import test_disclosure as td

    from fairaudit.disclosure import protect

    raw = td.make_doc(full, joints)
    exact = {lab["name"]: [row[:] for comp in lab["composition"].values()
                           for row in comp["counts"]] for lab in raw["labellings"]}
    margins = {lab["name"]: _margins(lab, exact=True) for lab in raw["labellings"]}
    t0 = time.perf_counter()
    doc = protect(raw, mc)
    seconds = time.perf_counter() - t0
    att = td.Attacker(doc, joints, full)
    rows = []
    for lab in doc["labellings"]:
        name = lab["name"]
        _, _, ks, j = att.blocks[name]
        kpos = {k: i for i, k in enumerate(ks)}
        safe = visible = hidden_people = 0
        width = 0.0
        ex_rows = iter(exact[name])
        for attr, comp in lab["composition"].items():
            for gi, g in enumerate(comp["groups"]):
                ex = next(ex_rows)
                attrs, codes = att._codes(j, attr, g)
                for ki, k in enumerate(comp["clusters"]):
                    v, pub = ex[ki], comp["counts"][gi][ki]
                    sensitive = 1 <= v < mc
                    if not sensitive:
                        safe += 1
                        visible += pub is not None
                        if pub is None:
                            hidden_people += v
                    if pub is None:
                        lo, hi = att.bounds(att._mask(name, attrs, codes, kpos[k]))
                        width += hi - lo
        recovered = sum(1 for _, row, x in td.sensitive_cells(att, name, j, mc)
                        if not (lambda b: b[0] <= x - 1 + 1e-6 and b[1] >= mc - 1e-6)(
                            att.bounds(row)))
        pub = _margins(lab) if not lab.get("withheld") else [None] * len(margins[name])
        hidden_margins = sum(1 for v, p in zip(margins[name], pub, strict=True)
                             if p is None and not 1 <= v < mc)
        if lab.get("withheld"):  # every count withheld: no cells in the document
            safe, visible = 1, 0
            hidden_people = sum(v for row in exact[name] for v in row if not 1 <= v < mc)
        rows.append({"labelling": name, "visible": visible / max(safe, 1),
                     "hidden_margins": hidden_margins,
                     "hidden_people": hidden_people, "lp_width": width,
                     "recovered": recovered, "seconds": seconds})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exact-json", type=Path, default=None,
                    help="an unprotected (--no-suppress) JSON of the demo audit")
    ap.add_argument("--no-demo", action="store_true", help="only the tables of the tests")
    ap.add_argument("--min-cell", type=int, default=10)
    args = ap.parse_args()

    from fairaudit import suppression

    tables = _tables()
    if not args.no_demo:
        tables.update(_demo(args.exact_json))
    print(f"# {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}, "
          f"{platform.processor() or platform.machine()}, python {platform.python_version()}, "
          f"min_cell {args.min_cell}")
    head = (f"{'table':24} {'labelling':15} {'visible %':>17} {'hidden people':>15} "
            f"{'LP width':>17} {'margins':>10} {'recov':>5} {'protect s':>13}")
    print(head)
    print(f"{'':24} {'':15} {'legacy -> new':>17} {'legacy -> new':>15} {'legacy -> new':>17}"
          f" {'hidden':>10} {'':>5} {'legacy -> new':>13}")
    tot = {s: {"visible": [], "hidden_people": 0, "lp_width": 0.0, "hidden_margins": 0, "recovered": 0, "s": 0.0}
           for s in ("legacy", "value")}
    for name, (full, joints) in tables.items():
        res = {}
        for strategy in ("legacy", "value"):
            suppression._STRATEGY = strategy
            res[strategy] = measure(full, joints, args.min_cell)
        suppression._STRATEGY = "value"
        for old, new in zip(res["legacy"], res["value"], strict=True):
            for s, r in (("legacy", old), ("value", new)):
                tot[s]["visible"].append(r["visible"])
                tot[s]["hidden_people"] += r["hidden_people"]
                tot[s]["lp_width"] += r["lp_width"]
                tot[s]["hidden_margins"] += r["hidden_margins"]
                tot[s]["recovered"] += r["recovered"]
            print(f"{name:24} {old['labelling']:15} "
                  f"{100 * old['visible']:7.1f} -> {100 * new['visible']:5.1f} "
                  f"{old['hidden_people']:6d} -> {new['hidden_people']:5d} "
                  f"{old['lp_width']:7.0f} -> {new['lp_width']:6.0f} "
                  f"{old['hidden_margins']:4d} -> {new['hidden_margins']:3d} "
                  f"{old['recovered'] + new['recovered']:5d} "
                  f"{old['seconds']:5.2f} -> {new['seconds']:5.2f}")
        tot["legacy"]["s"] += res["legacy"][0]["seconds"]
        tot["value"]["s"] += res["value"][0]["seconds"]
    o, n = tot["legacy"], tot["value"]
    print(f"{'all (mean visible)':40} {100 * np.mean(o['visible']):7.1f} -> "
          f"{100 * np.mean(n['visible']):5.1f} {o['hidden_people']:6d} -> "
          f"{n['hidden_people']:5d} {o['lp_width']:7.0f} -> {n['lp_width']:6.0f} "
          f"{o['hidden_margins']:4d} -> {n['hidden_margins']:3d} "
          f"{o['recovered'] + n['recovered']:5d} {o['s']:5.2f} -> {n['s']:5.2f}")


if __name__ == "__main__":
    main()
