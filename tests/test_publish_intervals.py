"""The published (``--publish``) intervals: the three failures of the percentile intervals
reproduced (random labels called "unfair", a zero-width interval), the intervals as pure
post-processing of the release, and their coverage by simulation (tests/dp_sims.py; the
figures in docs/privacy.md come from benchmarks/dp_coverage.py)."""

from __future__ import annotations

import json
import logging
import math

import dp_sims
import numpy as np
import polars as pl
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import fairaudit
from fairaudit.privacy import dp

log = logging.getLogger(__name__)


@pytest.fixture(autouse=True)
def _state_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def seeded_noise(monkeypatch, seed: int, fix=None):
    """The release's noise drawn from a seeded generator (same distribution and scale as
    OpenDP's), so that a failure is reproduced exactly; ``fix(counts, noise)`` may set some
    cells' noise."""
    def add(mech, counts):
        counts = np.asarray(counts, dtype=np.int64)
        noise = dp.discrete_laplace(np.random.default_rng(seed), mech.scale, counts.shape)
        if fix is not None:
            fix(counts, noise)
        return counts + noise

    monkeypatch.setattr(dp, "add_noise", add)


def publish_frame(tmp_path, frame: pl.DataFrame, sensitive, **kw):
    path = tmp_path / "people.parquet"
    frame.write_parquet(path)
    return fairaudit.audit(str(path), sensitive=sensitive, labels="segment", publish=True,
                           ledger=str(tmp_path / "ledger.json"), new_ledger=True,
                           **{"privacy_budget": 100.0, **kw})


def result(run, metric: str, attribute: str) -> dict:
    (r,) = [r for r in run.doc["results"] if r["metric"] == metric
            and r["attribute"] == attribute]
    return r


def verdict(run, attribute: str) -> str:
    (v,) = [v for v in run.doc["verdicts"] if v["attribute"] == attribute]
    return v["verdict"]


def random_labels_12_groups(seed: int) -> pl.DataFrame:
    """3,000 rows, an attribute of 12 equal groups, labels drawn at random into 8 segments."""
    rng = np.random.default_rng(seed)
    group = np.repeat([f"g{i:02d}" for i in range(12)], 250)
    rng.shuffle(group)
    return pl.DataFrame({"group": group, "segment": rng.integers(0, 8, 3000)})


def random_labels_intersection(seed: int) -> pl.DataFrame:
    """6,000 rows, two attributes of 8 and 6 unequal groups (48 intersections), labels drawn at
    random into 6 segments."""
    rng = np.random.default_rng(seed)
    a = rng.choice([f"a{i}" for i in range(8)], 6000, p=dp_sims.A8 / dp_sims.A8.sum())
    b = rng.choice([f"b{i}" for i in range(6)], 6000, p=dp_sims.B6 / dp_sims.B6.sum())
    return pl.DataFrame({"religious": a, "educ": b, "segment": rng.integers(0, 6, 6000)})


# ---------------------------------------------------------------------------- the failures
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_labels_96_cells_are_not_called_unfair(tmp_path, monkeypatch, seed):
    """Was: `balance 0.553 [0.181, 0.553]`, "unfair" (the exact report: [0.327, 1.000])."""
    seeded_noise(monkeypatch, seed)
    run = publish_frame(tmp_path, random_labels_12_groups(seed), ["group"], epsilon=0.5,
                        audit=["balance"])
    r = result(run, "balance", "group")
    log.info("seed %d: balance %.3f %s", seed, r["value"], r["ci"])
    assert r["ci"][1] >= 0.8 and r["ci"][1] > r["value"] + 0.2, r["ci"]
    assert verdict(run, "group") != "unfair"
    assert r["detail"]["interval"]["method"] == "release-score-max-bootstrap"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_labels_intersection_of_48_groups_is_not_called_unfair(tmp_path, monkeypatch,
                                                                      seed):
    """Was: `balance 0.107 [0.000, 0.107]`, "unfair", for the intersection (48 x 6 cells)."""
    seeded_noise(monkeypatch, seed)
    run = publish_frame(tmp_path, random_labels_intersection(seed), ["religious", "educ"],
                        epsilon=0.5, audit=["balance", "distribution"])
    for attr in ("religious|educ", "religious", "educ"):
        r = result(run, "balance", attr)
        log.info("seed %d %s: balance %.3f %s", seed, attr, r["value"], r["ci"])
        assert r["ci"][1] >= 0.8, (attr, r["ci"])
        assert verdict(run, attr) != "unfair", attr
        wd = result(run, "wd", attr)
        assert wd["ci"][0] <= 0.1, (attr, wd["ci"])


def test_a_cell_released_as_zero_gives_no_zero_width_interval(tmp_path, monkeypatch):
    """Was: `balance 0.000 [0.000, 0.000]` for a cell whose exact count is 5 of 100 (balance
    about 0.2): a released 0 must open the interval to the values the other cells allow, not
    close it."""
    rng = np.random.default_rng(4)
    race = np.array(["a"] * 3600 + ["b"] * 2300 + ["c"] * 100)
    segment = np.concatenate([rng.integers(0, 4, 5900), np.repeat([0, 1, 2, 3],
                                                                  [5, 35, 30, 30])])

    def release_as_zero(counts, noise):  # cube (segment, race): cell (0, c) is index 2
        assert counts[2] == 5
        noise[2] = -5

    seeded_noise(monkeypatch, 4, release_as_zero)
    run = publish_frame(tmp_path, pl.DataFrame({"race": race, "segment": segment}), ["race"],
                        epsilon=0.5, audit=["balance"])
    comp = run.doc["labellings"][0]["composition"]["race"]
    assert comp["counts"][comp["groups"].index("c")][comp["clusters"].index(0)] == 0
    r = result(run, "balance", "race")
    exact = 5 / (100 * (5 + (segment[:5900] == 0).sum()) / 6000)
    log.info("balance %.3f %s (exact %.3f)", r["value"], r["ci"], exact)
    assert r["value"] == 0.0
    assert r["ci"][0] == 0.0 and r["ci"][1] > exact + 0.1, r["ci"]  # contains the exact value
    # a released 0 where 25 people are expected under independence is evidence (about 4 sd of
    # sampling and noise): the verdict may rightly be "unfair" here, as the exact one is


# ---------------------------------------------------------------------------- post-processing
def test_intervals_are_post_processing_of_the_release(tmp_path, monkeypatch):
    """Two different tables whose noisy cubes are made equal publish identical intervals (and
    JSON) on a many-cell table, where the new intervals differ most from the percentile ones;
    the interval code receives the release's public noise variance, nothing else."""
    from fairaudit.privacy.publish import Release

    target: dict[str, np.ndarray] = {}

    def fixed(mech, counts):  # noise = target - counts: the same noisy cube for both tables
        if "cube" not in target:
            target["cube"] = counts + dp.discrete_laplace(np.random.default_rng(0), mech.scale,
                                                          np.shape(counts))
        return target["cube"]

    monkeypatch.setattr(dp, "add_noise", fixed)
    seen = []
    original = Release.interval_options

    def spy(self, labelling):
        out = original(self, labelling)
        seen.append(out)
        return out

    monkeypatch.setattr(Release, "interval_options", spy)
    docs = []
    for seed in (1, 2):
        run = fairaudit.audit(_write(tmp_path, random_labels_12_groups(seed)),
                              sensitive=["group"], labels="segment", publish=True, epsilon=0.5,
                              audit=["balance", "distribution", "capacity"],
                              ledger=str(tmp_path / f"l{seed}.json"), new_ledger=True,
                              privacy_budget=1.0)
        doc = run.to_json()
        doc["privacy"]["ledger"].pop("path")
        docs.append(json.dumps(doc, sort_keys=True))
    assert docs[0] == docs[1]
    assert not random_labels_12_groups(1).equals(random_labels_12_groups(2))
    methods = {r["detail"]["interval"]["method"] for r in json.loads(docs[0])["results"]
               if r.get("ci")}
    assert {"release-score-max-bootstrap", "release-score-intersection"} <= methods
    scale = json.loads(docs[0])["privacy"]["noise_scale"]
    assert seen and all(o == {"noise": dp.discrete_laplace_variance(scale)} for o in seen)


def _write(tmp_path, frame: pl.DataFrame) -> str:
    path = tmp_path / "people.parquet"
    frame.write_parquet(path)
    return str(path)


def test_same_release_and_seed_give_the_same_intervals():
    """A stored release is reproducible: its intervals are a function of the released cube and
    the published seed."""
    x = np.random.default_rng(3).multinomial(3000, dp_sims.REGIMES["null-12x8-e0.5"].cube
                                             .reshape(-1)).reshape(8, 12)
    rel = dp_sims.release_of(x, 0.5)
    first = [(r.metric, r.ci) for r in dp_sims.published_results(rel, "race", 100, [7, 1])]
    again = [(r.metric, r.ci) for r in dp_sims.published_results(rel, "race", 100, [7, 1])]
    assert first == again and all(ci is not None for _, ci in first)


def test_noise_variance_is_the_discrete_laplace_one():
    rng = np.random.default_rng(0)
    for scale in (0.7, 2.0, 10.0):
        draws = dp.discrete_laplace(rng, scale, (200_000,))
        assert draws.var() == pytest.approx(dp.discrete_laplace_variance(scale), rel=0.03)
    assert dp.discrete_laplace_variance(50.0) == pytest.approx(2 * 50.0**2, rel=1e-3)


def test_without_noise_the_cells_are_the_score_intervals():
    """With no noise the noisy cells' share bounds are Wilson's (the exact tables' method)."""
    from fairaudit.metrics.noisy_cells import noisy_wilson_interval
    from fairaudit.metrics.score import wilson_interval

    x = np.array([0.0, 1, 5, 17, 40])
    n = np.array([40.0, 40, 40, 40, 40])
    for alpha in (0.025, 0.001):
        lo, hi = noisy_wilson_interval(x, n, alpha, 0.0)
        wl, wh = wilson_interval(x, n, alpha)
        np.testing.assert_allclose(lo, wl, atol=1e-12)
        np.testing.assert_allclose(hi, wh, atol=1e-12)
    lo_n, hi_n = noisy_wilson_interval(x, n, 0.025, 8.0)
    assert np.all(lo_n <= wilson_interval(x, n, 0.025)[0] + 1e-12)
    assert np.all(hi_n >= wilson_interval(x, n, 0.025)[1] - 1e-12)


def test_balance_cells_bound_their_estimate_and_widen_with_noise():
    from fairaudit.metrics.noisy_cells import BalanceCells

    T = np.array([[30.0, 25, 0, 40], [300, 310, 280, 290], [5, 60, 55, 50]])
    q = T * T.sum() / np.outer(T.sum(axis=1), T.sum(axis=0))
    quiet = BalanceCells(0.0, *T.shape).bounds(T, 0.025)
    noisy = BalanceCells(8.0, *T.shape).bounds(T, 0.025)
    for lo, hi in (quiet, noisy):
        assert np.all(lo <= q + 1e-9) and np.all(q <= hi + 1e-9)
    assert np.all(noisy[0] <= quiet[0] + 1e-9) and np.all(noisy[1] >= quiet[1] - 1e-9)
    assert noisy[1][0, 2] > 0.3  # a cell released as 0 is not pinned at 0


# ---------------------------------------------------------------------------- coverage
BALANCE_FAMILY = ("balance", "balance_mean", "fairness_cce", "balance_prime", "cce",
                  "fce_fair")
DISTANCES = ("ed", "ed_max", "ed_sum", "wd", "wd_max", "wd_sum")


def seeded_stream(monkeypatch, seed: int):
    """Every release's noise from one seeded stream (OpenDP's distribution and scale): the
    coverage tests are reproducible; the benchmark uses OpenDP's own noise."""
    rng = np.random.default_rng(seed)
    monkeypatch.setattr(dp, "add_noise", lambda mech, counts: np.asarray(counts, np.int64)
                        + dp.discrete_laplace(rng, mech.scale, np.shape(counts)))


@pytest.mark.parametrize("regime", ["null-12x8-e0.5", "rare-cell-e0.5"])
def test_coverage_quick(regime, monkeypatch):
    """60 releases: random labels are not called unfair, and the balance family and the
    distances cover (a quick check; the figures come from the slow test and the benchmark)."""
    seeded_stream(monkeypatch, 5)
    stats = dp_sims.coverage(regime, sims=60, seed=5)
    log.info("%s: %s", regime, {m: round(s["coverage"], 3) for m, s in stats.items()})
    for m in BALANCE_FAMILY + DISTANCES:
        assert stats[m]["coverage"] >= 0.85, (m, stats[m]["coverage"])
    if regime.startswith("null"):
        assert stats["balance"]["unfair"] <= 1 and stats["wd"]["unfair"] == 0


PUBLIC = [name for name, r in dp_sims.REGIMES.items() if r.domain == "public"]
SIMS = 200
"""Releases per regime in the slow test (issue 33: 400 before; the full figures come from
benchmarks/dp_coverage.py). The floors below widened by 2.7 x the growth of the binomial sd
(1.1 -> 1.5 points at 95 %)."""
FLOOR = 0.91
"""95 % less 2.7 binomial sd of 200 draws (0.908)."""
WEAK_DISTANCES = {("null-48x6", "wd"): 0.86, ("null-48x6", "wd_sum"): 0.86,
                  ("null-48x6", "wd_max"): 0.88, ("sparse-48x8", "wd"): 0.77,
                  ("sparse-48x8", "wd_sum"): 0.77, ("sparse-48x8", "wd_max"): 0.85}
"""The weighted distances in many-cell random-label tables: the triangle bounds over a
multinomial bootstrap undercover there in exact tables too (docs/privacy.md)."""
WEAK_SMALL_GROUP = {("zip200", "ed_max"): 0.88, ("zip200", "wd_max"): 0.88}
"""A 4-group attribute with a group of 61 people, random labels, 5,000 rows (beside a 200- or
20-group attribute): the largest distances cover 92-92.5 % (400 releases). balance and
fairness_cce cover 93-95 % since the calibrated intervals' tie rule counts the large groups'
cells (before it: 85-92 %, and 88-89 % without noise: the analyst's construction, not the
release; docs/privacy.md, docs/metrics.md "Random labels")."""


@pytest.mark.slow
@pytest.mark.parametrize("regime", PUBLIC)
def test_coverage_by_regime(regime, monkeypatch):
    """SIMS releases per regime (binomial sd about 1.5 points at 95 %), the noise seeded: every
    metric of the balance and CCE families and every distance covers at least 91 % (95 % less
    2.7 sd; the weighted distances of many-cell random-label tables: WEAK_DISTANCES), and
    random labels are called unfair in at most 2.5 % of releases."""
    seeded_stream(monkeypatch, 2026)
    stats = dp_sims.coverage(regime, sims=SIMS, seed=2026)
    log.info("%s: %s", regime, {m: round(s["coverage"], 4) for m, s in stats.items()})
    family = regime.rsplit("-", 1)[0]
    for m in BALANCE_FAMILY + DISTANCES:
        floor = WEAK_DISTANCES.get((family, m), WEAK_SMALL_GROUP.get((family, m), FLOOR))
        assert stats[m]["coverage"] >= floor, (m, stats[m]["coverage"])
    if math.isclose(stats["balance"]["truth"], 1.0):  # random labels
        assert stats["balance"]["unfair_rate"] <= 0.025
        assert stats["wd"]["unfair_rate"] <= 0.025


PRIVATE_FLOOR = {"private-20k-e1": 0.70, "private-100k-e1": 0.89}
"""Measured (400 releases, docs/privacy.md): 79 % and 94 %."""


@pytest.mark.slow
@pytest.mark.parametrize("regime", list(PRIVATE_FLOOR))
def test_private_domain_coverage(regime, monkeypatch):
    """--dp-domain private: the distances cover; the balance family covers the population value
    only as often as the 1 % group's cells are all released (a group with an unreleased cell is
    left out as too small to judge: docs/privacy.md)."""
    stats = dp_sims.coverage(regime, sims=200, seed=2026)
    log.info("%s: %s", regime, {m: round(s["coverage"], 4) for m, s in stats.items()})
    for m in DISTANCES:
        assert stats[m]["coverage"] >= 0.95 - 2.5 * 0.016, (m, stats[m]["coverage"])
    assert stats["balance"]["coverage"] >= PRIVATE_FLOOR[regime], stats["balance"]["coverage"]


# ---------------------------------------------------------------------------- properties
@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 60), min_size=2, max_size=5), min_size=2, max_size=5)
       .filter(lambda t: len({len(r) for r in t}) == 1),
       st.sampled_from([0.0, 1.8, 7.9, 200.0, 20_000.0]))
def test_noisy_intervals_contain_the_estimate_and_widen_with_noise(rows, s2):
    """Every released-table interval contains its estimate and starts at 0 or above (the host
    clips the upper end to the metric's range, as for the exact tables); more noise never
    narrows the conservative ones."""
    from fairaudit.metrics import counting, noisy_intervals

    T = np.array(rows, dtype=np.float64)
    assume(np.all(T.sum(axis=0) > 0) and np.all(T.sum(axis=1) > 0))
    est = {"balance": counting.balance_min(T), "fairness_cce": counting.fairness_cce(T),
           "balance_prime": counting.balance_prime(T), "cce": counting.cce(T),
           "fce_fair": counting.fce_fair(T)}
    ivs = {"balance": noisy_intervals.balance_interval(T, 0.95, None, s2),
           "fairness_cce": noisy_intervals.fairness_cce_interval(T, 0.95, None, s2),
           "balance_prime": noisy_intervals.balance_prime_interval(T, 0.95, None, s2),
           "cce": noisy_intervals.cce_interval(T, 0.95, s2),
           "fce_fair": noisy_intervals.fce_fair_interval(T, 0.95, s2)}
    for m, iv in ivs.items():
        v = float(np.asarray(est[m]).reshape(-1)[0])
        assert -1e-9 <= iv.lower <= v + 1e-9 <= iv.upper + 2e-9, (m, iv, v)
    scale = 1.0 if s2 == 0 else math.sqrt(s2 / 2)  # replicates of a release of that noise
    reps = dp.parametric_replicates(T.ravel(), scale, 40, np.random.default_rng(0))
    for m, fn in (("balance", noisy_intervals.balance_interval),
                  ("fairness_cce", noisy_intervals.fairness_cce_interval),
                  ("balance_prime", noisy_intervals.balance_prime_interval)):
        iv = fn(T, 0.95, reps.reshape(40, *T.shape), s2)
        v = float(np.asarray(est[m]).reshape(-1)[0])
        assert -1e-9 <= iv.lower <= v + 1e-9 <= iv.upper + 2e-9, (m, iv, v)
        assert iv.method == noisy_intervals.CALIBRATED_METHOD
    quiet = noisy_intervals.balance_interval(T, 0.95, None, 0.0)
    assert ivs["balance"].lower <= quiet.lower + 1e-9
    assert ivs["balance"].upper >= quiet.upper - 1e-9
    mean = noisy_intervals.balance_mean_interval(T, 0.95, s2)
    v = float(np.asarray(counting.balance_mean(T)).reshape(-1)[0])
    assert mean.lower <= v + 1e-9 <= mean.upper + 2e-9
