"""The published (differentially private) release: what it declares, what it contains, the
ledger, the refusals, and the DP tests (differencing, empirical privacy audit, post-processing,
accounting against OpenDP's own). docs/privacy.md states what these tests prove."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest

import fairaudit
from fairaudit.core.contingency import JointTable
from fairaudit.core.spec import PrivacySpec
from fairaudit.errors import ConfigError
from fairaudit.privacy import dp
from fairaudit.privacy.publish import Release

log = logging.getLogger(__name__)


@pytest.fixture(autouse=True)
def _state_home(tmp_path, monkeypatch):
    """The default ledger lives under $XDG_STATE_HOME: never the user's own in tests."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def small_group_table(n: int = 2400, seed: int = 3) -> pl.DataFrame:
    """race with an 18-person group 'c', sex, and a 4-segment labels column."""
    rng = np.random.default_rng(seed)
    race = np.array(["a"] * (n // 2) + ["b"] * (n - n // 2 - 18) + ["c"] * 18)
    rng.shuffle(race)
    sex = rng.choice(["F", "M"], size=n)
    segment = rng.integers(0, 4, size=n)
    return pl.DataFrame({"race": race, "sex": sex, "segment": segment,
                         "x": rng.normal(size=n)})


@pytest.fixture
def small_path(tmp_path: Path) -> Path:
    p = tmp_path / "people.parquet"
    small_group_table().write_parquet(p)
    return p


def publish(path, ledger, **kw):
    kw.setdefault("privacy_budget", 100.0)  # a source's first release sets its budget
    return fairaudit.audit(str(path), sensitive=["race", "sex"], labels="segment",
                           publish=True, ledger=str(ledger), new_ledger=True, **kw)


RELEASE_METHODS = {"release-score-max-bootstrap", "release-score-intersection",
                   "bootstrap-triangle", "bootstrap-triangle-max", "bootstrap-percentile"}
"""A release's interval methods: noisy per-cell bounds (balance and CCE families), the triangle
bounds over the parametric replicates (distances), their percentiles (the smooth metrics)."""


def headlines(doc):
    return [r for r in doc["results"] if r.get("headline")]


# ---------------------------------------------------------------------------- the release
def test_publish_declares_mechanism_epsilon_and_every_headline_with_a_ci(small_path, tmp_path):
    run = publish(small_path, tmp_path / "l.json", epsilon=0.8)
    p = run.doc["privacy"]
    assert p["mode"] == "dp" and p["delta"] == 0.0
    assert "OpenDP" in p["mechanism"] and "Laplace" in p["mechanism"]
    assert 0 < p["epsilon"] <= 0.8 and p["epsilon"] == pytest.approx(0.8, rel=1e-6)
    assert "one row = one person" in p["unit"]
    assert p["spent"] == p["epsilon"] and p["ledger"]["releases"] == 1
    assert p["cubes"][0]["domain"]["race"].startswith("observed")
    assert run.doc["checks"] == [] and "timing" not in run.doc
    assert run.doc["input"]["fingerprint"].startswith("dp-release:")
    hs = headlines(run.doc)
    assert hs
    for r in hs:  # a number with an interval, judged on the release
        assert r["value"] is not None and r["ci"] is not None, r
        assert r["ci"][0] <= r["value"] <= r["ci"][1]
        assert r["detail"]["interval"]["method"] in RELEASE_METHODS, r
    # non-count auditors are left out, with a line saying so
    assert {r["auditor"] for r in run.doc["results"]} <= {"balance", "distribution", "capacity"}
    assert any("left out" in n for n in run.doc["notes"])
    import jsonschema

    schema = json.loads((Path(fairaudit.__file__).parent / "schema" / "audit.schema.json")
                        .read_text())
    jsonschema.validate(json.loads(json.dumps(run.to_json())), schema)
    html = fairaudit.write_report(run, tmp_path / "r.html")[0].read_text()
    assert "Published release (differential privacy)" in html and "&epsilon; = 0.8" in html


def test_gates_judge_the_published_values_and_intervals(small_path, tmp_path):
    run = publish(small_path, tmp_path / "l.json", audit=["balance", "distribution"],
                  fail_under={"balance@ci[sex]": 0.5}, fail_over={"wd[sex]": 0.5})
    results = {(r["metric"], r["attribute"]): r for r in run.doc["results"]}
    gates = {g["metric"]: g for g in run.doc["gates"]}
    assert gates["balance"]["judged"] == results[("balance", "sex")]["ci"][0]
    assert gates["wd"]["judged"] == results[("wd", "sex")]["value"]
    assert run.doc["status"] == ("fail" if any(g["status"] == "fail" for g in gates.values())
                                 else "pass")


def test_exact_report_declares_exact_mode(small_path):
    run = fairaudit.audit(str(small_path), sensitive=["race"], labels="segment",
                          audit=["balance"])
    assert run.doc["privacy"]["mode"] == "exact"


def _exact_cells(path):
    df = pl.read_parquet(path)
    return df.group_by(["segment", "race", "sex"]).len()


def test_published_counts_are_the_noisy_ones_not_the_exact_small_counts(small_path, tmp_path,
                                                                        monkeypatch):
    """With noise +3 on every cell, no exact count of the 18-person group survives anywhere."""
    monkeypatch.setattr(dp, "add_noise", lambda mech, counts: counts + 3)
    run = publish(small_path, tmp_path / "l.json")
    doc = run.doc
    sizes = {g["group"]: g["n"] for g in doc["input"]["groups"]["race"]}
    assert sizes["c"] != 18
    # every (cluster, race, sex) cell count published is the exact one moved by the noise
    exact = {(int(s), r, x): int(n) for s, r, x, n in _exact_cells(small_path).iter_rows()}
    comp = doc["labellings"][0]["composition"]["race|sex"]
    for gi, g in enumerate(comp["groups"]):
        r, x = g.split("|")
        for ki, k in enumerate(comp["clusters"]):
            assert comp["counts"][gi][ki] != exact.get((k, r, x), 0), (g, k)


def test_same_data_again_is_free_and_identical_changed_data_adds(small_path, tmp_path):
    ledger = tmp_path / "l.json"
    first = publish(small_path, ledger, epsilon=0.5, privacy_budget=2.0)
    again = publish(small_path, ledger, epsilon=0.5, privacy_budget=2.0)
    assert json.dumps(again.to_json()) == json.dumps(first.to_json())
    book = json.loads(ledger.read_text())
    (src,) = book["sources"].values()
    assert len(src["releases"]) == 1
    small_group_table(seed=4).write_parquet(small_path)  # new data, same source
    third = publish(small_path, ledger, epsilon=0.5, privacy_budget=2.0)
    assert third.doc["privacy"]["spent"] == pytest.approx(1.0)
    assert third.doc["privacy"]["ledger"]["releases"] == 2
    (src,) = json.loads(ledger.read_text())["sources"].values()
    assert [r["epsilon"] for r in src["releases"]] == pytest.approx([0.5, 0.5])


def test_budget_passed_exits_2_naming_ledger_spent_and_left(small_path, tmp_path, run_cli):
    ledger = tmp_path / "l.json"
    args = [small_path, "-s", "race,sex", "--labels", "segment", "--publish", "--ledger",
            ledger, "--new-ledger", "--privacy-budget", "1.5", "-q"]
    assert run_cli("audit", *args, "--epsilon", "1").exit_code == 0
    small_group_table(seed=9).write_parquet(small_path)
    res = run_cli("audit", *args, "--epsilon", "1")
    assert res.exit_code == 2
    assert str(ledger) in res.output and "spent epsilon 1" in res.output
    assert "0.5 left" in res.output
    source = str(small_path.parent.resolve())  # the default source: the input's folder
    assert len(json.loads(ledger.read_text())["sources"][source]["releases"]) == 1


def test_corrupt_ledger_exits_2_naming_the_file_and_keeps_it(small_path, tmp_path, run_cli):
    ledger = tmp_path / "l.json"
    ledger.write_text("{not json")
    res = run_cli("audit", small_path, "-s", "race", "--labels", "segment", "--publish",
                  "--ledger", ledger, "-q")
    assert res.exit_code == 2 and str(ledger) in res.output
    assert ledger.read_text() == "{not json"


def test_default_ledger_is_under_xdg_state_home(small_path, tmp_path):
    run = fairaudit.audit(str(small_path), sensitive=["race"], labels="segment", publish=True,
                          privacy_budget=1.0)
    assert run.doc["privacy"]["ledger"]["path"] == str(
        tmp_path / "state" / "fairaudit" / "ledger.json")


# ---------------------------------------------------------------------------- refusals
@pytest.mark.parametrize(("flags", "name"), [
    (["--epsilon", "0"], "--epsilon"),
    (["--epsilon", "-1"], "--epsilon"),
    (["--epsilon", "nan"], "--epsilon"),
    (["--epsilon", "inf"], "--epsilon"),
    (["--epsilon", "1", "--privacy-budget", "0.5"], "--privacy-budget"),
    (["--privacy-budget", "-2"], "--privacy-budget"),
    (["--dp-categories", "race"], "--dp-categories"),
    (["--bootstrap", "0"], "--bootstrap"),
    (["--dp-domain", "private", "--delta", "0.5"], "--delta"),
    (["--dp-categories", "sex=F,M"], "--dp-categories"),
])
def test_cli_refuses_bad_privacy_values(small_path, run_cli, flags, name):
    res = run_cli("audit", small_path, "-s", "race", "--labels", "segment", "--publish", *flags)
    assert res.exit_code == 2 and name in res.output


@pytest.mark.parametrize(("kw", "name"), [
    ({"epsilon": 0}, "epsilon="), ({"epsilon": float("inf")}, "epsilon="),
    ({"epsilon": 2.0, "privacy_budget": 1.0}, "privacy_budget="),
    ({"dp_fitted": "maybe"}, "dp_fitted="),
])
def test_api_refuses_bad_privacy_values(small_path, kw, name):
    with pytest.raises(ConfigError, match=name):
        fairaudit.audit(str(small_path), sensitive=["race"], labels="segment", publish=True,
                        **kw)


@pytest.mark.parametrize(("table", "path"), [
    ("publish = true\nepsilon = -0.5", "privacy.epsilon"),
    ("publish = true\nepsilon = 1.0\nbudget = 0.1", "privacy.budget"),
    ("publish = true\nepsilom = 1.0", "privacy.epsilom"),
    ("publish = 'yes'", "privacy.publish"),
])
def test_chain_refuses_bad_privacy_values(small_path, tmp_path, run_cli, table, path):
    chain = tmp_path / "c.toml"
    chain.write_text('[data]\nsensitive = ["race"]\nlabels = "segment"\n[[audit]]\n'
                     f'use = "balance"\n[privacy]\n{table}\n')
    res = run_cli("run", chain, small_path, "-q")
    assert res.exit_code == 2 and path in res.output


def test_chain_privacy_table_publishes(small_path, tmp_path, run_cli):
    chain = tmp_path / "c.toml"
    ledger = tmp_path / "l.json"
    chain.write_text('[data]\nsensitive = ["race", "sex"]\nlabels = "segment"\n[[audit]]\n'
                     f'use = "balance"\n[privacy]\npublish = true\nepsilon = 0.7\n'
                     f'ledger = "{ledger}"\nnew_ledger = true\nbudget = 2.0\n'
                     'source = "applicants"\n'
                     '[privacy.categories]\nsex = ["F", "M", "X"]\n')
    res = run_cli("run", chain, small_path, "-o", tmp_path / "o.html", "-q")
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "o.json").read_text())
    assert doc["privacy"]["epsilon"] == pytest.approx(0.7)
    assert doc["privacy"]["ledger"]["source"] == "applicants"
    assert list(json.loads(ledger.read_text())["sources"]) == ["applicants"]
    assert doc["privacy"]["cubes"][0]["domain"]["sex"] == "declared"
    assert doc["privacy"]["cubes"][0]["cells"] == 4 * 3 * 3  # segments x race x (F, M, X)


def test_fitted_clusterings_are_refused_unless_conditional(small_path, tmp_path):
    with pytest.raises(ConfigError, match="--dp-fitted conditional"):
        fairaudit.audit(str(small_path), sensitive=["race"], cluster=["kmeans:n_clusters=3"],
                        publish=True, ledger=str(tmp_path / "l.json"))
    run = fairaudit.audit(str(small_path), sensitive=["race"], cluster=["kmeans:n_clusters=3"],
                          audit=["balance"], publish=True, dp_fitted="conditional",
                          ledger=str(tmp_path / "l.json"), twins=False, new_ledger=True,
                          privacy_budget=1.0)
    (cube,) = run.doc["privacy"]["cubes"]
    assert "conditional" in cube["scope"] or "given the clustering" in cube["scope"]
    lab = run.doc["labellings"][0]
    assert lab["fit"] is None and lab["extras"] == {} and lab["notes"] == []


def test_published_run_refuses_an_exact_baseline(small_path, tmp_path):
    exact = fairaudit.audit(str(small_path), sensitive=["race"], labels="segment",
                            audit=["balance"])
    with pytest.raises(ConfigError, match="exact values"):
        fairaudit.audit(str(small_path), sensitive=["race"], labels="segment",
                        audit=["balance"], publish=True, ledger=str(tmp_path / "l.json"),
                        new_ledger=True, privacy_budget=1.0, baseline=exact.doc)


# ---------------------------------------------------------------------------- DP tests
def _joint(counts: np.ndarray) -> JointTable:
    """A (clusters x groups) count table as a one-attribute joint table."""
    K, G = counts.shape
    cl = np.repeat(np.arange(K), G)
    codes = np.tile(np.arange(G), K)[:, None]
    c = counts.reshape(-1)
    keep = c > 0
    names = tuple(chr(ord("a") + g) for g in range(G))
    return JointTable(("race",), (names,), cl[keep], codes[keep], c[keep].astype(np.int64))


LAB = SimpleNamespace(name="seg", origin="column", column="seg")
TRUE = np.array([[400, 300, 3], [350, 320, 1], [200, 180, 2]])  # group c: 6 people


def _release(counts, epsilon=1.0, domain="public"):
    return Release([LAB], {"seg": _joint(counts)},
                   PrivacySpec(publish=True, epsilon=epsilon, domain=domain), {})


def test_differencing_no_longer_pins_a_cell():
    """Two releases of D, and one of D minus a known person of group c in cluster 1: the
    attacker's estimate of that person's cell (difference of the published cells) is off by
    the noise: its error has the spread of two noises, and it equals the truth only about as
    often as a noise draw is 0."""
    removed = TRUE.copy()
    removed[1, 2] -= 1
    est_diff, est_avg = [], []
    for _ in range(400):
        a, b, c = _release(TRUE), _release(TRUE), _release(removed)
        cell = lambda r: int(r.dense["seg"].reshape(TRUE.shape)[1, 2])  # noqa: E731
        est_diff.append(cell(a) - cell(c))          # person's contribution: 1
        est_avg.append((cell(a) + cell(b)) / 2)      # averaging two releases: true value 1
    est_diff, est_avg = np.array(est_diff), np.array(est_avg)
    scale = dp.mechanism(1.0, 1).scale
    sd_one = math.sqrt(2 * math.exp(-1 / scale)) / (1 - math.exp(-1 / scale))
    log.info(f"differencing: sd {est_diff.std():.2f} (two noises: {math.sqrt(2) * sd_one:.2f}), "
          f"right {np.mean(est_diff == 1):.2f}; average of two: right {np.mean(est_avg == 1):.2f}")
    assert est_diff.std() > 0.5 * math.sqrt(2) * sd_one  # not pinned: the spread of the noise
    assert np.mean(est_diff == 1) < 0.5    # right no more often than a lucky draw
    assert np.mean(est_avg == 1) < 0.6
    # nor by the integer program over everything published: the cube itself is noisy
    assert len({tuple(_release(TRUE).dense["seg"]) for _ in range(20)}) > 10


def _clopper_pearson_upper(k: int, n: int, alpha: float) -> float:
    from scipy.stats import beta

    return 1.0 if k >= n else float(beta.ppf(1 - alpha, k + 1, n - k))


def _cell(rel: Release, cluster: int, group: str) -> int:
    joint = rel.joints["seg"]
    if group not in joint.categories[0]:
        return 0
    g = joint.categories[0].index(group)
    hit = (joint.cluster == cluster) & (joint.codes[:, 0] == g)
    return int(joint.counts[hit].sum())


@pytest.mark.parametrize(("domain", "true"), [("public", TRUE),
                                              ("private", TRUE + np.array([0, 0, 14]))])
def test_empirical_privacy_audit_stays_below_declared_epsilon(domain, true):
    """Jagielski et al. (2020): many releases on D and on D minus one person; the best
    threshold test on the published cell gives a Clopper-Pearson lower bound on epsilon that
    must not exceed the declared epsilon (and the attack must have real power). In the private
    domain the person's cell sits at the threshold, where a cell appears or not."""
    eps = 1.0
    removed = true.copy()
    removed[1, 2] -= 1
    trials = 4000
    on_d = np.array([_cell(_release(true, eps, domain), 1, "c") for _ in range(trials)])
    on_d1 = np.array([_cell(_release(removed, eps, domain), 1, "c") for _ in range(trials)])
    delta = _release(true, eps, domain).mechanism.delta if domain == "private" else 0.0
    alpha = 0.001 / 2
    best = 0.0
    for t in range(int(min(on_d.min(), on_d1.min())), int(max(on_d.max(), on_d1.max())) + 1):
        # test "the person is in": published cell >= t
        fpr = _clopper_pearson_upper(int((on_d1 >= t).sum()), trials, alpha)
        fnr = _clopper_pearson_upper(int((on_d < t).sum()), trials, alpha)
        for a, b in ((1 - fnr - delta, fpr), (1 - fpr - delta, fnr)):  # test and mirror
            if a > 0 and b > 0:
                best = max(best, math.log(a / b))
    declared = _release(true, eps, domain).mechanism.epsilon
    log.info(f"{domain}: empirical epsilon lower bound {best:.3f} (declared {declared})")
    assert best <= declared
    assert best > 0.3 * declared  # the audit is not vacuous


def test_post_processing_only_the_noisy_counts_reach_the_json(tmp_path, monkeypatch):
    """Two different tables, noise chosen so that their noisy cubes are equal: identical JSON."""
    a = small_group_table(seed=1)
    b = small_group_table(seed=2)
    path = tmp_path / "t.parquet"
    target: dict[str, np.ndarray] = {}

    def fixed(mech, counts):  # noise = target - counts: the same noisy cube for both tables
        if "cube" not in target:
            target["cube"] = counts + np.random.default_rng(0).integers(-3, 4, counts.size)
        return target["cube"]

    monkeypatch.setattr(dp, "add_noise", fixed)
    docs = []
    for table, ledger in ((a, "la.json"), (b, "lb.json")):
        table.write_parquet(path)
        run = publish(path, tmp_path / ledger)
        doc = run.to_json()
        doc["privacy"]["ledger"].pop("path")
        docs.append(json.dumps(doc, sort_keys=True))
    assert docs[0] == docs[1]
    assert not pl.read_parquet(path).equals(a)  # the tables did differ


def test_epsilon_equals_opendp_accounting():
    """The recorded epsilon is OpenDP's: the release's measurement at its d_in, equal to
    OpenDP's basic composition of one discrete Laplace measurement per cube, and the cube's
    L1 stability is OpenDP's count_by_categories map."""
    import opendp.prelude as odp

    odp.enable_features("contrib")
    lab2 = SimpleNamespace(name="seg2", origin="column", column="seg2")
    rel = Release([LAB, lab2], {"seg": _joint(TRUE), "seg2": _joint(TRUE[::-1].copy())},
                  PrivacySpec(publish=True, epsilon=1.3), {})
    m = rel.mechanism
    assert m.d_in == 2 and m.epsilon <= 1.3 and m.epsilon == pytest.approx(1.3, rel=1e-6)
    dom = odp.vector_domain(odp.atom_domain(T="i64"))
    met = odp.l1_distance(T="i64")
    per_cube = odp.m.make_laplace(dom, met, scale=m.scale)
    composed = odp.c.make_composition([per_cube, per_cube])
    assert composed.map(1) == pytest.approx(m.epsilon, rel=1e-12)
    count = odp.t.make_count_by_categories(odp.vector_domain(odp.atom_domain(T=str)),
                                           odp.symmetric_distance(), categories=["a", "b"])
    assert count.map(1) == 1 == dp.cube_stability()


def test_ledger_records_opendp_epsilon(small_path, tmp_path):
    import opendp.prelude as odp

    odp.enable_features("contrib")
    ledger = tmp_path / "l.json"
    run = publish(small_path, ledger, epsilon=0.9)
    p = run.doc["privacy"]
    meas = odp.m.make_laplace(odp.vector_domain(odp.atom_domain(T="i64")),
                              odp.l1_distance(T="i64"), scale=p["noise_scale"])
    (src,) = json.loads(ledger.read_text())["sources"].values()
    assert src["releases"][0]["epsilon"] == meas.map(p["d_in"]) == p["epsilon"]


# ---------------------------------------------------------------------------- post-processing
def test_nonnegative_integer_keeps_total_and_sign():
    rng = np.random.default_rng(0)
    y = rng.integers(-20, 60, size=(50, 30))
    x = dp.nonnegative_integer(y)
    assert (x >= 0).all()
    assert (x.sum(axis=1) == np.maximum(y.sum(axis=1), 0)).all()
    assert np.array_equal(dp.nonnegative_integer(np.array([3, 0, 5])), [3, 0, 5])
    assert np.array_equal(dp.nonnegative_integer(np.array([-4, -1])), [0, 0])


def test_released_margins_agree():
    rel = _release(TRUE, 0.5)
    joint = rel.joints["seg"]
    cube = rel.dense["seg"].reshape(TRUE.shape)
    t = joint.table("race")
    assert t.counts.sum() == cube.sum() == joint.n
    assert dict(zip(t.groups, (t.counts.sum(axis=1) + t.noise).tolist(), strict=True)) == {
        g: int(v) for g, v in zip("abc", cube.sum(axis=0), strict=True) if v > 0}


# ---------------------------------------------------------------------------- coverage
# The coverage of the published intervals (dense, many-cell and sparse tables, random labels)
# is simulated in tests/test_publish_intervals.py (tests/dp_sims.py; docs/privacy.md).


def test_compare_history_export_read_published_releases(small_path, tmp_path):
    """They read the published JSON only (post-processing); releases are told apart by the hash
    of their cubes, never by the data's fingerprint."""
    from fairaudit.ops.compare import compare
    from fairaudit.ops.export import export_rows
    from fairaudit.ops.history import build_history, history_csv

    first = publish(small_path, tmp_path / "l.json", epsilon=0.5).to_json()
    small_group_table(seed=8).write_parquet(small_path)
    second = publish(small_path, tmp_path / "l.json", epsilon=0.5).to_json()
    assert first["input"]["fingerprint"] != second["input"]["fingerprint"]
    cmp = compare(first, second)
    assert cmp["status"] in ("pass", "warn", "fail", "not_evaluated")
    assert not any("same input" in n for n in cmp.get("notes", []))
    rows = export_rows(second)
    assert rows and all(r["input_fingerprint"].startswith("dp-release:") for r in rows)
    (tmp_path / "a.json").write_text(json.dumps(first))
    (tmp_path / "b.json").write_text(json.dumps(second))
    hist = build_history([tmp_path / "a.json", tmp_path / "b.json"])
    assert "dp-release:" in history_csv(hist)


def test_too_sparse_a_cube_is_refused_naming_the_cells():
    g = tuple(f"g{i:03d}" for i in range(250))
    joint = JointTable(("a", "b"), (g, g), np.zeros(1, np.int64), np.zeros((1, 2), np.int64),
                       np.ones(1, np.int64))
    # the joint cube (62,500 cells) and each attribute's own (250 each)
    with pytest.raises(ConfigError, match="63,000 cells"):
        Release([LAB], {"seg": joint}, PrivacySpec(publish=True), {})


# ---------------------------------------------------------------------------- private domain
def test_private_domain_never_names_a_group_held_by_one_person():
    """A group only one person holds: with the observed domain (assumed public) its name is
    published; with --dp-domain private it is not, over 300 releases (each may show it with
    probability below delta)."""
    one = np.array([[400, 300, 0], [350, 320, 1], [200, 180, 0]])
    public = Release([LAB], {"seg": _joint(one)}, PrivacySpec(publish=True), {})
    assert "c" in public.joints["seg"].categories[0]  # the stated assumption, visible
    spec = PrivacySpec(publish=True, domain="private", delta=1e-7)
    for _ in range(300):
        rel = Release([LAB], {"seg": _joint(one)}, spec, {})
        assert rel.joints["seg"].categories[0] == ("a", "b")
        assert set(rel.joints["seg"].table("race").groups) == {"a", "b"}


def test_private_domain_accounting_is_opendps(small_path, tmp_path):
    import opendp.prelude as odp

    odp.enable_features("contrib")
    ledger = tmp_path / "l.json"
    run = publish(small_path, ledger, epsilon=0.9, dp_domain="private", delta=1e-6)
    p = run.doc["privacy"]
    meas = odp.m.make_laplace_threshold(
        odp.map_domain(odp.atom_domain(T=str), odp.atom_domain(T="i64")),
        odp.l01inf_distance(odp.absolute_distance(T="i64")), scale=p["noise_scale"],
        threshold=p["threshold"])
    eps, delta = meas.map((1, 1, 1))
    assert (p["epsilon"], p["delta"]) == (eps, delta)
    assert eps == pytest.approx(0.9, rel=1e-6) and 0 < delta <= 1e-6
    assert p["spent_delta"] == delta
    (src,) = json.loads(ledger.read_text())["sources"].values()
    assert src["releases"][0]["delta"] == delta
    assert "c" not in {g["group"] for g in run.doc["input"]["groups"]["race"]}
    assert all(v.startswith("chosen privately") for v in p["cubes"][0]["domain"].values())


def _rare_cell_table(groups: tuple[str, ...] = ("a", "b", "c")) -> pl.DataFrame:
    """Group 'c' holds 57 people in segment 0 and 3 in segment 1 (below any release threshold)."""
    rng = np.random.default_rng(5)
    big = [g for g in groups if g != "c"]
    race = list(rng.choice(big, size=2400)) + ["c"] * 60
    segment = list(rng.integers(0, 3, size=2400)) + [0] * 57 + [1] * 3
    return pl.DataFrame({"race": race, "segment": segment})


@pytest.mark.parametrize("groups", [("a", "b", "c"), ("a", "c")])
def test_private_domain_unreleased_cell_is_unknown_not_zero(tmp_path, groups):
    """A cell below the threshold is not released: its group is too small to judge for that
    labelling (never computed as 0, never called absent); with fewer than two groups left the
    verdict is too little data."""
    path = tmp_path / "rare.parquet"
    _rare_cell_table(groups).write_parquet(path)
    run = fairaudit.audit(str(path), sensitive=["race"], labels="segment", audit=["balance"],
                          publish=True, dp_domain="private", delta=1e-6, bootstrap=100,
                          ledger=str(tmp_path / "l.json"), new_ledger=True, privacy_budget=1.0)
    (res,) = [r for r in run.doc["results"] if r["metric"] == "balance"]
    small = res["detail"]["too_small"]
    assert small["unreleased"] == ["c"] and "c" in small["groups"]
    assert small["unreleased_reason"] == "cells below the private release threshold"
    assert "absent" not in res["explanation"] and "holds 0" not in res["explanation"]
    if len(groups) == 3:
        assert res["value"] > 0.3 and res["ci"][0] > 0  # a versus b only
    else:
        assert res["value"] is None or math.isnan(res["value"])
        assert any("too little data" in n for n in res["notes"])
        assert "cells below the private release threshold" in res["explanation"]
    assert "unknown, not zero" in res["explanation"]


def test_another_source_name_does_not_start_a_fresh_budget(small_path, tmp_path, run_cli):
    ledger = tmp_path / "l.json"
    args = [small_path, "-s", "race,sex", "--labels", "segment", "--publish", "--ledger",
            ledger, "--new-ledger", "--privacy-budget", "1", "--epsilon", "1", "-q",
            "--bootstrap", "50"]
    assert run_cli("audit", *args).exit_code == 0
    res = run_cli("audit", *args, "--privacy-source", "other")
    assert res.exit_code == 2, res.output
    source = str(small_path.parent.resolve())  # the default: the input's folder
    assert str(ledger) in res.output and "'other'" in res.output
    assert repr(source) in res.output
    assert list(json.loads(ledger.read_text())["sources"]) == [source]


def test_named_ledger_in_a_missing_folder_exits_2(small_path, tmp_path, run_cli):
    ledger = tmp_path / "nonexistent" / "l.json"
    res = run_cli("audit", small_path, "-s", "race", "--labels", "segment", "--publish",
                  "--ledger", ledger, "-q", "--bootstrap", "50")
    assert res.exit_code == 2 and str(ledger.parent) in res.output
    assert not ledger.parent.exists()


def test_free_republish_says_the_ledger_s_current_totals(small_path, tmp_path, run_cli):
    """A stored release is returned byte-identical (its privacy.spent is as of that release);
    the console states the ledger's totals now."""
    ledger = tmp_path / "l.json"
    args = ["-s", "race,sex", "--labels", "segment", "--publish", "--ledger", ledger,
            "--new-ledger", "--privacy-budget", "3", "--epsilon", "1", "--bootstrap", "50"]
    first = run_cli("audit", small_path, *args, "-o", tmp_path / "a.html")
    assert first.exit_code == 0, first.output
    assert "has spent epsilon 1 of its budget 3" in first.output
    second = tmp_path / "other.parquet"  # the same folder: the same (default) source
    small_group_table(seed=11).write_parquet(second)
    assert run_cli("audit", second, *args, "-o", tmp_path / "b.html").exit_code == 0
    again = run_cli("audit", small_path, *args, "-o", tmp_path / "c.html")
    assert again.exit_code == 0, again.output
    assert (tmp_path / "c.json").read_text() == (tmp_path / "a.json").read_text()
    out = " ".join(again.output.split())
    assert "returned the stored release of" in out and "at no cost" in out
    assert "privacy.spent 1 is as of that release" in out
    assert "has now spent epsilon 2 of its budget 3 (2 release(s))" in out


@pytest.mark.parametrize(("flags", "name"), [
    (["--epsilon", "0.5"], "--epsilon"),
    (["--privacy-budget", "2", "--ledger", "l.json"], "--ledger"),
    (["--dp-domain", "private"], "--dp-domain"),
    (["--dp-categories", "race=a,b,c"], "--dp-categories"),
])
def test_privacy_options_without_publish_exit_2(small_path, run_cli, flags, name):
    res = run_cli("audit", small_path, "-s", "race", "--labels", "segment", "-q", *flags)
    assert res.exit_code == 2, res.output
    assert name in res.output and "needs --publish" in res.output


def test_chain_and_api_privacy_keys_without_publish_are_refused(small_path, tmp_path, run_cli):
    chain = tmp_path / "c.toml"
    chain.write_text('[data]\nsensitive = ["race"]\nlabels = "segment"\n[[audit]]\n'
                     'use = "balance"\n[privacy]\nepsilon = 0.5\n')
    res = run_cli("run", chain, small_path, "-q")
    assert res.exit_code == 2 and "privacy.epsilon" in res.output
    assert "needs privacy.publish = true" in res.output
    with pytest.raises(ConfigError, match="dp_domain=: needs publish="):
        fairaudit.audit(str(small_path), sensitive=["race"], labels="segment",
                        dp_domain="private")
    with pytest.raises(ConfigError, match="epsilon=: needs publish="):
        fairaudit.audit(str(small_path), sensitive=["race"], labels="segment", publish=False,
                        epsilon=0.5)


def test_chain_privacy_table_serves_a_publish_given_on_the_command_line(small_path, tmp_path,
                                                                       run_cli):
    """A chain's [privacy] table without publish = true holds the options for a --publish given
    on the command line; without --publish the same chain is refused (never silently exact)."""
    chain = tmp_path / "c.toml"
    chain.write_text('[data]\nsensitive = ["race"]\nlabels = "segment"\n[[audit]]\n'
                     'use = "balance"\n[privacy]\nepsilon = 0.5\n')
    res = run_cli("audit", small_path, "--chain", chain, "--publish", "--ledger",
                  tmp_path / "l.json", "--new-ledger", "--privacy-budget", "1", "--bootstrap",
                  "50", "-o", tmp_path / "r.html", "-q")
    assert res.exit_code == 0, res.output
    p = json.loads((tmp_path / "r.json").read_text())["privacy"]
    assert p["mode"] == "dp" and p["epsilon"] == pytest.approx(0.5)
    res = run_cli("audit", small_path, "--chain", chain, "-q")
    assert res.exit_code == 2 and "privacy.epsilon" in res.output


def test_one_declared_group_is_refused(small_path, run_cli):
    res = run_cli("audit", small_path, "-s", "race,sex", "--labels", "segment", "--publish",
                  "--dp-categories", "sex=F", "-q")
    assert res.exit_code == 2 and "--dp-categories" in res.output
    assert "at least two" in res.output


def test_declared_groups_say_rows_outside_are_left_out(small_path, tmp_path, run_cli):
    """Declared groups leave rows out (race 'c'): the privacy block, console and banner say so,
    with no count; the statement is made whether or not any row is outside (data-independent)."""
    res = run_cli("audit", small_path, "-s", "race,sex", "--labels", "segment", "--publish",
                  "--dp-categories", "race=a,b", "--ledger", tmp_path / "l.json",
                  "--new-ledger", "--privacy-budget", "1", "--bootstrap", "50", "-o",
                  tmp_path / "r.html")
    assert res.exit_code == 0, res.output
    said = "rows outside the declared groups of race are left out of this release"
    p = json.loads((tmp_path / "r.json").read_text())["privacy"]
    assert p["outside_declared"].startswith(said)
    assert said in " ".join(res.output.split())
    assert said in (tmp_path / "r.html").read_text()
    assert not any(ch.isdigit() for ch in p["outside_declared"])


def test_compare_history_export_refuse_mixing_exact_and_published(small_path, tmp_path,
                                                                   run_cli):
    exact = fairaudit.audit(str(small_path), sensitive=["race"], labels="segment",
                            audit=["balance"], bootstrap=50)
    published = publish(small_path, tmp_path / "l.json", audit=["balance"], bootstrap=50)
    a, b = tmp_path / "exact.json", tmp_path / "published.json"
    a.write_text(json.dumps(exact.to_json()))
    b.write_text(json.dumps(published.to_json()))
    for cmd in (["compare", a, b], ["history", a, b, "--out", tmp_path / "h.html"],
                ["export", a, b, "--csv", tmp_path / "e.csv"]):
        res = run_cli(*cmd)
        out = " ".join(res.output.split())
        assert res.exit_code == 2, (cmd, res.output)
        assert str(a) in out and str(b) in out and "published" in out, out
    assert not (tmp_path / "h.html").exists() and not (tmp_path / "e.csv").exists()


def test_compare_and_history_pages_show_the_releases(small_path, tmp_path, run_cli):
    first = publish(small_path, tmp_path / "l.json", audit=["balance"], epsilon=0.5,
                    bootstrap=50)
    small_group_table(seed=8).write_parquet(small_path)
    second = publish(small_path, tmp_path / "l.json", audit=["balance"], epsilon=0.5,
                     bootstrap=50)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(first.to_json()))
    b.write_text(json.dumps(second.to_json()))
    res = run_cli("compare", a, b, "--out", tmp_path / "d.html")
    assert res.exit_code in (0, 1), res.output
    res = run_cli("history", a, b, "--out", tmp_path / "h.html")
    assert res.exit_code == 0, res.output
    for page in ("d.html", "h.html"):
        html = (tmp_path / page).read_text()
        assert "Published releases (differential privacy)" in html, page
        assert "&epsilon; = 0.5" in html and "OpenDP" in html, page


def test_published_summary_and_explanations_speak_of_the_release(small_path, tmp_path):
    run = publish(small_path, tmp_path / "l.json", audit=["balance", "distribution"],
                  bootstrap=50)
    html = fairaudit.write_report(run, tmp_path / "r.html")[0].read_text()
    assert "Data checks failed" not in html
    assert "left out of a published release" in html
    # a count quoted from a release says it is noisy, with the noise's sd per cell
    import math

    from fairaudit.metrics.noisy_cells import discrete_laplace_variance

    sd = math.sqrt(discrete_laplace_variance(run.doc["privacy"]["noise_scale"]))
    assert f"(published counts, noise sd {sd:.1f} per cell)" in html
    texts = [r["explanation"] for r in run.doc["results"] if r.get("ci") and r.get("explanation")]
    assert texts
    for t in texts:
        assert "one person more or less" not in t and "is set by" not in t, t
    assert any("parametric bootstrap of the release" in t for t in texts)
    assert all("covers sampling and the noise" in t for t in texts
               if "interval" in t), texts


def test_a_renamed_copy_of_the_data_is_the_same_release(small_path, tmp_path, run_cli):
    """The budget follows the data: a copy under another file name is the same audited rows, so
    it gets the stored release back at no cost (it was a new source with a fresh budget); under
    another source name it is refused (tests/test_privacy_attacks.py has every kind of copy)."""
    import shutil

    ledger = tmp_path / "l.json"
    copy = tmp_path / "renamed.parquet"
    shutil.copyfile(small_path, copy)
    args = ["-s", "race,sex", "--labels", "segment", "--publish", "--ledger", ledger,
            "--new-ledger", "--privacy-budget", "1", "--epsilon", "1", "--bootstrap", "50"]
    assert run_cli("audit", small_path, *args, "-o", tmp_path / "a.html").exit_code == 0
    res = run_cli("audit", copy, *args, "-o", tmp_path / "copy.html")
    assert res.exit_code == 0, res.output
    assert "at no cost" in " ".join(res.output.split())
    assert (tmp_path / "copy.json").read_text() == (tmp_path / "a.json").read_text()
    (src,) = json.loads(ledger.read_text())["sources"].values()
    assert len(src["releases"]) == 1


def test_changing_only_the_budget_returns_the_stored_release(small_path, tmp_path, run_cli):
    """The budget is not part of what a release is: the same data and options with another
    budget flag give the stored release at no cost (was a second noisy draw, spending again)."""
    ledger = tmp_path / "l.json"
    args = ["-s", "race,sex", "--labels", "segment", "--publish", "--ledger", ledger,
            "--new-ledger", "--epsilon", "1", "--bootstrap", "50"]
    assert run_cli("audit", small_path, *args, "--privacy-budget", "5", "-o",
                   tmp_path / "a.html").exit_code == 0
    res = run_cli("audit", small_path, *args, "--privacy-budget", "4", "-o", tmp_path / "b.html")
    assert res.exit_code == 0, res.output
    assert "at no cost" in " ".join(res.output.split())
    (src,) = json.loads(ledger.read_text())["sources"].values()
    assert len(src["releases"]) == 1
    a = json.loads((tmp_path / "a.json").read_text())
    b = json.loads((tmp_path / "b.json").read_text())
    assert a["results"] == b["results"]


def test_fingerprint_follows_the_bytes_and_the_paths_below_a_folder(tmp_path):
    from fairaudit.core.io import fingerprint

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.csv").write_text("g,s\n1,2\n")
    (tmp_path / "y.csv").write_text("g,s\n1,2\n")
    assert fingerprint(str(tmp_path / "a" / "x.csv")) == fingerprint(str(tmp_path / "y.csv"))
    for top in ("d1", "d2"):  # a folder of hive parts: its name is not data, the keys are
        for year in (2023, 2024):
            part = tmp_path / top / f"year={year}"
            part.mkdir(parents=True)
            pl.DataFrame({"g": ["a", "b"], "s": [1, 2]}).write_parquet(part / "p.parquet")
    assert fingerprint(str(tmp_path / "d1")) == fingerprint(str(tmp_path / "d2"))
    (tmp_path / "d2" / "year=2024").rename(tmp_path / "d2" / "year=2025")
    assert fingerprint(str(tmp_path / "d1")) != fingerprint(str(tmp_path / "d2"))


def test_a_release_states_no_bias_of_the_exact_counts(small_path, tmp_path):
    """The bias statement of the analyst's report (detail.bias, issue 40) comes from the exact
    table's replicates: a release carries none (its intervals are the noisy cubes')."""
    run = publish(small_path, tmp_path / "ledger.json")
    assert not any("bias" in (r.get("detail") or {}) for r in run.doc["results"])
