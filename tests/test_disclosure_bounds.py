"""Published bounds of withheld values (fairaudit.disclosure_bounds, docs/privacy.md "Bounds").

Two promises:

* **They reveal nothing.** The bounds are computed from published entries only: replacing every
  suppressed count of the cube by garbage leaves the ranges (and so every bound) unchanged. The
  published numbers themselves are what tests/test_disclosure.py's attacker checks.
* **They hold.** Every exact value (from the same audit without suppression) lies inside its
  published bounds, a value published because its bounds pin it down equals the exact value,
  and the ranges contain every true count.
"""

from __future__ import annotations

import copy
import json

import numpy as np
import polars as pl
import pytest

import fairaudit
from fairaudit.contingency import joint_from_frame
from fairaudit.disclosure import cube_from_joint
from fairaudit.disclosure_bounds import published_ranges
from fairaudit.suppression import Spec, protect_cube, published_attr_sets

MC = 10


def random_frame(seed: int, n: int | None = None) -> pl.DataFrame:
    """People in segments: a skewed race attribute with groups of a few people, sex, and
    segments of very different sizes (some below min_cell), sometimes with noise (-1)."""
    rng = np.random.default_rng(seed)
    n = n or int(rng.integers(300, 3000))
    races = ["A", "B", "C", "D", "E"]
    p = rng.dirichlet([4, 2, 1, 0.3, 0.2])
    race = rng.choice(races, size=n, p=p)
    sex = rng.choice(["F", "M"], size=n, p=[0.35, 0.65])
    k = int(rng.integers(2, 7))
    sizes = rng.dirichlet(np.full(k, 0.8))
    seg = rng.choice(np.arange(k), size=n, p=sizes)
    # segments depend on race a little, so that the tables are not all fair
    shift = (race == "B") & (rng.random(n) < 0.3)
    seg = np.where(shift, 0, seg)
    if rng.random() < 0.4:
        seg = np.where(rng.random(n) < 0.03, -1, seg)
    return pl.DataFrame({"race": race, "sex": sex, "segment": seg.astype(np.int64)})


def _protected_cube(df: pl.DataFrame):
    joint = joint_from_frame(df, label="segment", sensitive=["race", "sex"])
    cube, _ = cube_from_joint(joint)
    protect_cube(cube, MC, totals_free=True)  # one labelling: it may move group totals
    return cube


def _garbage(cube, rng):
    """The same cube with every suppressed entry replaced by a random number."""
    other = copy.deepcopy(cube)
    for spec, mask in other.supp.items():
        v = other.values[spec].copy()
        v[mask] = rng.integers(0, 10_000, size=int(mask.sum()))
        other.values[spec] = v
    return other


@pytest.mark.parametrize("seed", range(10))
def test_ranges_read_only_published_entries_and_contain_the_truth(seed):
    cube = _protected_cube(random_frame(seed))
    fake = _garbage(cube, np.random.default_rng(seed))
    L = cube.X.shape[-1]
    for R in published_attr_sets(cube.d):
        tot = cube.values[Spec(R, "all")].reshape(-1)
        small = (tot >= 1) & (tot < MC)  # what the report announces as too small to judge
        real = published_ranges(cube, R, MC, small)
        other = published_ranges(fake, R, MC, small)
        for field in ("cells_lo", "cells_hi", "all_lo", "all_hi", "clean_lo", "clean_hi",
                      "sizes_lo", "sizes_hi"):
            np.testing.assert_array_equal(getattr(real, field), getattr(other, field), field)
        truth = cube.values[Spec(R, "each")].reshape(-1, L)
        assert np.all(real.cells_lo <= truth) and np.all(truth <= real.cells_hi)
        assert np.all(real.all_lo <= tot) and np.all(tot <= real.all_hi)
        sizes = cube.values[Spec((), "each")]
        assert np.all(real.sizes_lo <= sizes) and np.all(sizes <= real.sizes_hi)


def _results(run) -> dict:
    return {(r["labelling"], r["metric"], r["attribute"]): r for r in run.doc["results"]
            if r.get("attribute") is not None}


@pytest.mark.parametrize("seed", range(8))
def test_published_bounds_contain_the_exact_values(seed):
    df = random_frame(100 + seed)
    common = dict(sensitive=["race", "sex"], labels="segment", bootstrap=0, min_cell=MC)
    exact = _results(fairaudit.audit(df, suppress=False, **common))
    run = fairaudit.audit(df, **common)
    published = _results(run)
    wholesale = {lab["name"] for lab in run.doc["labellings"] if lab.get("withheld")}
    n_bounds = n_rows = 0
    for key, r in published.items():
        e = exact[key]
        if e["value"] is None:
            continue
        if r.get("withheld"):
            assert r["value"] is None and r["ci"] is None
            if r.get("bounds") is not None:
                lo, hi = r["bounds"]
                assert lo - 1e-9 <= e["value"] <= hi + 1e-9, (key, r["bounds"], e["value"])
                n_bounds += 1
        elif r["value"] is not None:
            assert r["value"] == pytest.approx(e["value"], abs=1e-12), key
        exact_rows = {row["cluster"]: row for row in e.get("per_cluster") or ()}
        for row in r.get("per_cluster") or ():
            if row.get("bounds") is not None:
                v = exact_rows[row["cluster"]]["value"]
                lo, hi = row["bounds"]
                assert v is not None and lo - 1e-9 <= v <= hi + 1e-9, (key, row)
                n_rows += 1
    # a labelling withheld wholesale (no safe pattern of cells) publishes no bounds either
    partly = [r for r in published.values()
              if r.get("withheld") and r["labelling"] not in wholesale]
    assert n_bounds > 0 or not partly


def test_every_headline_of_the_bundled_sample_has_a_number_or_bounds():
    """Issue 12: with the default disclosure control every headline read "withheld"."""
    from conftest import EXAMPLE_DATA

    df = pl.read_parquet(EXAMPLE_DATA).select("race", "sex", "age")
    age = df.get_column("age").to_numpy()
    df = df.with_columns(pl.Series("segment", np.digitize(age, [25, 30, 45, 60, 70])
                                   .astype(np.int64)))
    run = fairaudit.audit(df, sensitive=["race", "sex"], labels="segment", bootstrap=0)
    heads = [r for r in run.doc["results"]
             if r["metric"] in ("balance", "wd", "fairness_cce") and r.get("attribute")]
    assert heads
    for r in heads:
        assert r["value"] is not None or r.get("bounds") is not None, r
    assert any(r.get("bounds") for r in heads)  # this table does hide counts


def test_a_plugin_auditor_without_bounds_keeps_its_values_withheld():
    from fairaudit.components import CountingAuditor

    assert CountingAuditor.bounds(object.__new__(CountingAuditor), None) == {}


@pytest.mark.parametrize("seed", [0, 1, 3, 4])
def test_price_of_fairness_quotes_only_published_values(seed):
    """Attack: the twins entries ("Price of fairness") once quoted exact fair/twin values of
    targets that `results` withheld. Now a withheld target gives its published bounds and the
    range of the gain that follows from them, and that range contains the exact gain."""
    base = random_frame(300 + seed, n=2500).drop("segment")
    rng = np.random.default_rng(seed)
    df = base.with_columns(
        pl.Series("x1", rng.normal(size=base.height) + (base["race"] == "B").to_numpy()),
        pl.Series("x2", rng.normal(size=base.height)),
    )
    common = dict(sensitive=["race", "sex"], features=["x1", "x2"], bootstrap=0,
                  cluster=["ffcm:n_clusters=3", "fairden:n_clusters=3"], seed=seed,
                  audit=["balance", "distribution"], min_cell=MC)
    exact = {(t["fair"], t["attribute"]): t
             for t in fairaudit.audit(df, suppress=False, **common).doc["twins"]}
    run = fairaudit.audit(df, **common)
    published = _results(run)
    withheld = ranged = 0
    for t in run.doc["twins"]:
        if t["target_metric"] is None:
            continue
        metric = t["target_metric"]
        f = published[(t["fair"], metric, t["attribute"])]
        w = published[(t["twin"], metric, t["attribute"])]
        if not (f.get("withheld") or w.get("withheld")):
            assert t["fair_value"] == f["value"] and t["twin_value"] == w["value"]
            continue
        withheld += 1
        assert t["withheld"] is True and t["gain"] is None
        for r, value, bounds in ((f, t["fair_value"], t["fair_bounds"]),
                                 (w, t["twin_value"], t["twin_bounds"])):
            if r.get("withheld"):
                assert value is None
                assert bounds == (r.get("bounds") and list(r["bounds"]))
        e = exact[(t["fair"], t["attribute"])]["gain"]
        if t["gain_bounds"] is not None and e is not None:
            lo, hi = t["gain_bounds"]
            assert lo - 1e-9 <= e <= hi + 1e-9
            ranged += 1
        text = json.dumps(t)
        for key in ("fair_value", "twin_value"):  # no exact withheld value anywhere in it
            v = exact[(t["fair"], t["attribute"])][key]
            if v is not None and (f if key == "fair_value" else w).get("withheld"):
                assert repr(v) not in text
    assert withheld > 0  # the draws do hide counts
    # seed 1 withholds its labellings wholesale (no bounds); the others publish bounds
    assert (ranged > 0) == (seed != 1)
