"""The near-copy check on a release's noisy cube (fairaudit.privacy.nearcopy): the same people
under another source name are recognised, other people of the same population are not, and the
Chernoff bound bounds (docs/privacy.md, "The ledger")."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

import fairaudit
from fairaudit.privacy import dp, nearcopy

REGIMES = [  # rows, cells, Dirichlet concentration (smaller: more skewed), noise scale
    pytest.param(1500, 80, 1.0, 1.0, id="dense-1500x80"),
    pytest.param(649, 131, 0.3, 1.0, id="student-649x131"),
    pytest.param(5000, 20, 0.2, 1.0, id="skewed-5000x20"),
    pytest.param(3000, 80, 1.0, 2.0, id="two-cubes-3000x80"),
]


def _release(rng, counts, scale):
    rel = dp.nonnegative_integer(counts + dp.discrete_laplace(rng, scale, counts.shape))
    return {(str(i), "0"): int(x) for i, x in enumerate(rel) if x > 0}


def _cube(counts):
    return {(str(i), "0"): int(x) for i, x in enumerate(counts) if x > 0}


@pytest.mark.parametrize(("n", "cells", "alpha", "scale"), REGIMES)
def test_same_people_are_recognised_and_other_people_of_the_population_are_not(
        n, cells, alpha, scale):
    """200 releases per regime (the release's own noise and post-processing): the same table
    minus 3 people is recognised in at least 95 %; another sample of the same population and
    size (the hardest honest case: two regions of one customer base) never."""
    rng = np.random.default_rng(cells)
    p = rng.dirichlet(np.full(cells, alpha))
    v = dp.discrete_laplace_variance(scale) + 1 / 12
    same = other = 0
    trials = 200
    for _ in range(trials):
        old = rng.multinomial(n, p)
        released = _release(rng, old, scale)
        fewer = old.copy()
        for idx in rng.choice(cells, size=3, p=old / n):
            fewer[idx] -= fewer[idx] > 0
        same += nearcopy.within_noise(_cube(fewer), released, v)
        other += nearcopy.within_noise(_cube(rng.multinomial(n, p)), released, v)
    assert same >= 0.95 * trials
    assert other == 0


def test_too_small_to_tell_is_not_decided():
    """300 rows in 12 cells, or noise that dominates the counts (scale 3, 6,400 cells of 20,000
    rows): the same people and other people cannot be told apart — never refused."""
    rng = np.random.default_rng(3)
    for n, cells, scale in ((300, 12, 1.0), (20_000, 6400, 3.0)):
        old = rng.multinomial(n, rng.dirichlet(np.ones(cells)))
        v = dp.discrete_laplace_variance(scale) + 1 / 12
        assert not nearcopy.within_noise(_cube(old), _release(rng, old, scale), v)


def test_the_chernoff_bound_bounds_the_probability():
    """The exact counterpart: the probability that sum w_c Z_c² falls below t, by 200,000
    draws, is at most the bound (and the bound is not vacuous where it should not be)."""
    rng = np.random.default_rng(0)
    w = np.array([40.0, 12.0, 3.0, 3.0, 1.0, 0.5, 25.0, 8.0])
    draws = (rng.standard_normal((200_000, w.size)) ** 2 * w).sum(axis=1)
    for t in (2.0, 10.0, 30.0, 60.0, 200.0):
        assert (draws <= t).mean() <= nearcopy.other_people_below(t, w) + 1e-3
    assert nearcopy.other_people_below(2.0, w) < 0.01
    assert nearcopy.other_people_below(1e4, w) == 1.0
    assert nearcopy.other_people_below(5.0, []) == 1.0


def test_the_exact_cube_is_the_published_composition_s():
    """exact_cube names groups and clusters as a release does: against the analyst's exact
    composition of the same table (nulls and noise rows left out)."""
    rng = np.random.default_rng(5)
    n = 600
    df = pl.DataFrame({"race": rng.choice(["A", "B", "C"], n), "sex": rng.choice(["F", "M"], n),
                       "seg": rng.integers(-1, 4, n)}).with_columns(
        pl.when(pl.int_range(pl.len()) < 9).then(None).otherwise(pl.col("sex")).alias("sex"))
    doc = fairaudit.audit(df, sensitive=["race", "sex"], labels="seg", audit=["balance"],
                          bootstrap=0).doc
    comp = doc["labellings"][0]["composition"]["race|sex"]
    want = {(g, str(c)): k for g, row in zip(comp["groups"], comp["counts"], strict=True)
            for c, k in zip(comp["clusters"], row, strict=True) if k}
    assert nearcopy.exact_cube(df.lazy(), ["race", "sex"], "seg") == want


@pytest.fixture(autouse=True)
def _state_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def _categories(n: int, seed: int) -> pl.DataFrame:
    """Categories only: no near-unique column, so the sketch has nothing to compare."""
    rng = np.random.default_rng(seed)
    return pl.DataFrame({"race": rng.choice(["A", "B", "C", "D"], n, p=[0.5, 0.3, 0.15, 0.05]),
                         "sex": rng.choice(["F", "M"], n), "seg": rng.integers(0, 8, n)})


def test_a_templated_source_name_without_identifiers_is_recognised_by_its_counts(
        tmp_path, run_cli):
    """A nightly job that names each night's source after its date, on a table with no
    identifier: the second night (one person fewer, rows reordered) is refused as the first
    night's people; a table of other people of the same population under a new name is not."""
    night1 = _categories(3000, seed=1)
    night1.write_parquet(tmp_path / "n1.parquet")
    night1.slice(1).reverse().write_csv(tmp_path / "n2.csv")
    _categories(3000, seed=2).write_parquet(tmp_path / "other.parquet")
    ledger = tmp_path / "l.json"
    base = ["-s", "race,sex", "--labels", "seg", "--publish", "--bootstrap", "20", "--ledger",
            ledger, "--privacy-budget", "2", "-q"]
    res = run_cli("audit", tmp_path / "n1.parquet", *base, "--new-ledger", "--privacy-source",
                  "customers-2026-12-01", "-o", tmp_path / "a.html")
    assert res.exit_code == 0, res.output
    res = run_cli("audit", tmp_path / "n2.csv", *base, "--privacy-source",
                  "customers-2026-12-02", "-o", tmp_path / "b.html")
    out = " ".join(res.output.split())
    assert res.exit_code == 2, out
    assert "'customers-2026-12-01'" in out and "within the noise" in out
    assert not (tmp_path / "b.html").exists()
    res = run_cli("audit", tmp_path / "other.parquet", *base, "--privacy-source", "suppliers",
                  "-o", tmp_path / "c.html")
    assert res.exit_code == 0, res.output
    assert sorted(json.loads(ledger.read_text())["sources"]) == ["customers-2026-12-01",
                                                                 "suppliers"]


@pytest.mark.parametrize("doc", [
    {}, {"privacy": [], "labellings": []}, {"privacy": {"mode": "dp", "noise_scale": 1.0}},
    {"privacy": {"mode": "dp", "noise_scale": 1.0}, "labellings": [{"composition": {"a": 1}}]},
    {"privacy": {"mode": "dp", "noise_scale": "1"}, "labellings": [{"composition": {}}]},
    {"privacy": {"mode": "dp", "noise_scale": 1.0},
     "labellings": [{"composition": {"a": {"groups": ["x"], "clusters": [0]}}}]},
    {"privacy": {"mode": "dp", "noise_scale": 1.0},
     "labellings": [{"composition": {"a": {"groups": ["x"], "clusters": [0],
                                           "counts": [["many"]]}}}]},
])
def test_a_stored_document_of_another_shape_is_not_compared(doc):
    """The ledger checks a stored document only to be an object (a version-1 ledger's, a
    hand-edited one): the check passes over what it cannot read instead of failing (exit 3)."""
    assert nearcopy.released_cube(doc, 1) is None
