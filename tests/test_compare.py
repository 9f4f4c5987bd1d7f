"""fairaudit compare: the MOVER interval, comparability, gates, alignment, CLI and --baseline."""

from __future__ import annotations

import copy
import itertools
import json
import math
from pathlib import Path

import pytest
from audit_sims import chain_file, population, resample_audit

from fairaudit.errors import ConfigError, InputError
from fairaudit.ops.compare import (
    IncomparableError,
    compare,
    incomparable_reasons,
    mover_interval,
    parse_tolerances,
)

N_RESAMPLES = 12


# ----------------------------------------------------------------------------- the interval
def test_mover_hand_computed():
    lo, hi = mover_interval(0.5, (0.4, 0.6), 0.3, (0.25, 0.4))
    assert lo == pytest.approx(-0.2 - math.sqrt(0.05**2 + 0.1**2))
    assert hi == pytest.approx(-0.2 + math.sqrt(0.1**2 + 0.1**2))


def test_mover_same_estimates_is_symmetric_and_wider_than_either():
    lo, hi = mover_interval(0.7, (0.6, 0.75), 0.7, (0.6, 0.75))
    assert lo == pytest.approx(-hi)
    assert hi == pytest.approx(math.sqrt(0.1**2 + 0.05**2))


def test_mover_widens_an_interval_that_excludes_its_estimate():
    # a biased bootstrap interval [0.0, 0.53] around 0.59: the distance to a bound is never < 0
    lo, hi = mover_interval(0.59, (0.0, 0.53), 0.59, (0.0, 0.53))
    assert lo < 0 < hi


# ----------------------------------------------------------------------------- simulations
@pytest.mark.slow
def test_resamples_of_the_same_population_are_not_flagged():
    """Every pair of 12 audits of seeded resamples of one population (66 pairs x 45 results):
    the share of changes called significant stays at or under the nominal 5 %, and the gate
    (one-sided) under 2.5 %. Measured with 24 audits (276 pairs): 0.7 % of all changes, 0.5 % of
    headline changes significant, 0.4 % of headline gates failed (docs/cli.md)."""
    docs = [resample_audit(i) for i in range(N_RESAMPLES)]
    sig = tot = hsig = htot = gate = 0
    for a, b in itertools.combinations(docs, 2):
        cmp = compare(a, b)
        assert cmp["summary"]["compared"] == 45
        for c in cmp["changes"]:
            if c["significant"] is None:
                continue
            tot += 1
            sig += c["significant"]
            if c["headline"]:
                htot += 1
                hsig += c["significant"]
                gate += c["gate"] == "fail"
    assert tot == 66 * 45 and htot == 66 * 9
    assert sig / tot <= 0.05, sig / tot
    assert hsig / htot <= 0.05, hsig / htot
    assert gate / htot <= 0.025, gate / htot


@pytest.mark.slow
def test_planted_shift_is_flagged_with_the_right_metric_and_attribute():
    shifted = resample_audit(0, shift=True)
    for i in range(4):
        cmp = compare(resample_audit(i), shifted)
        failed = {(c["metric"], c["attribute"]) for c in cmp["changes"] if c["gate"] == "fail"}
        assert ("balance", "race") in failed and ("fairness_cce", "race") in failed
        assert {a for _, a in failed} <= {"race", "sex|race"}  # nothing about sex alone
        assert cmp["status"] == "fail"
        bal = next(c for c in cmp["changes"]
                   if (c["metric"], c["attribute"]) == ("balance", "race"))
        assert bal["direction"] == "worse" and bal["significant"] and bal["ci"][1] < 0
    # a tolerance larger than the change lets it pass
    cmp = compare(resample_audit(0), shifted, tolerance=["*=1"])
    assert cmp["status"] == "pass" and cmp["summary"]["gate_failures"] == 0


# ----------------------------------------------------------------------------- documents
@pytest.fixture(scope="module")
def doc() -> dict:
    return resample_audit(0)


def test_without_ci_never_significant(doc):
    cur = copy.deepcopy(doc)
    for r in cur["results"]:
        if r["metric"] == "balance" and r["attribute"] == "race":
            r["value"] = 0.0
            r["ci"] = None
    cmp = compare(doc, cur)
    c = next(c for c in cmp["changes"] if (c["metric"], c["attribute"]) == ("balance", "race"))
    assert c["delta"] < 0 and c["ci"] is None and c["significant"] is None and c["gate"] is None
    assert "no confidence interval in the current audit" in c["note"]
    assert any("no interval" in n for n in cmp["notes"])


def test_undefined_value_and_missing_headline_warn(doc):
    cur = copy.deepcopy(doc)
    cur["results"] = [r for r in cur["results"]
                      if not (r["metric"] == "wd" and r["attribute"] == "sex")]
    for r in cur["results"]:
        if r["metric"] == "balance" and r["attribute"] == "sex":
            r["value"], r["ci"] = None, None
    cmp = compare(doc, cur)
    assert cmp["status"] == "warn"
    assert {"labelling": "segment", "metric": "wd", "attribute": "sex", "headline": True} in \
        cmp["only_in_baseline"]
    assert any("undefined in the current run" in n for n in cmp["notes"])


@pytest.mark.parametrize("edit, reason", [
    (lambda d: d["input"].__setitem__("attributes", ["sex"]), "other attributes"),
    (lambda d: d["chain"]["audit"][0].__setitem__("params", {"aggregate": "mean"}),
     "other metric definitions"),
    (lambda d: d["tool"].__setitem__("version", "9.9.9"), "other versions"),
    (lambda d: d["chain"]["options"].__setitem__("min_cell", 5), "other min_cell"),
    (lambda d: d["chain"]["options"].__setitem__("ci_level", 0.9), "other CI levels"),
    (lambda d: [r["detail"].get("interval", {}).__setitem__("level", 0.9)
                for r in d["results"]], "other CI levels"),
    (lambda d: [r["detail"].__setitem__("interval", {"method": "exact-test", "level": 0.95})
                for r in d["results"]], "other interval methods"),
])
def test_incomparable_audits_say_why(doc, edit, reason):
    cur = copy.deepcopy(doc)
    edit(cur)
    with pytest.raises(IncomparableError) as info:
        compare(doc, cur)
    assert reason in str(info.value)
    assert info.value.exit_code == 2


def test_nothing_in_common_is_not_a_pass(doc):
    cur = copy.deepcopy(doc)
    for r in cur["results"]:
        r["labelling"] = "other"
    cur["labellings"][0]["name"] = "other"
    with pytest.raises(IncomparableError, match="no result in common"):
        compare(doc, cur)


def test_version_change_can_be_allowed(doc):
    cur = copy.deepcopy(doc)
    cur["tool"]["version"] = "9.9.9"
    assert incomparable_reasons(doc, cur, allow_version_change=True) == []


def test_not_an_audit(tmp_path, doc):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"hello": 1}))
    with pytest.raises(InputError, match="bad.json"):
        compare(bad, doc)
    (tmp_path / "text.json").write_text("not json")
    with pytest.raises(InputError, match="not valid JSON"):
        compare(doc, tmp_path / "text.json")
    with pytest.raises(InputError, match="no such file"):
        compare(doc, tmp_path / "missing.json")
    with pytest.raises(InputError, match="fairaudit-comparison"):
        compare(compare(doc, doc), doc)


def test_tolerance_parsing():
    assert parse_tolerances(["balance=0.02", "wd[race]=0.01", "*=0"]) == {
        "balance": 0.02, "wd[race]": 0.01, "*": 0.0}
    for bad in ("balance", "balance=-1", "balance=nan", "balance=x", "=1"):
        with pytest.raises(ConfigError, match="--tolerance"):
            parse_tolerances([bad])


def test_most_specific_tolerance_wins():
    shifted, base = resample_audit(0, shift=True), resample_audit(1)
    cmp = compare(base, shifted, tolerance={"*": 1.0, "balance[race]": 0.0})
    failed = {(c["metric"], c["attribute"]) for c in cmp["changes"] if c["gate"] == "fail"}
    assert failed == {("balance", "race")}


# ----------------------------------------------------------------------------- alignment
def _as_clusterer(doc: dict, perm: dict[int, int]) -> dict:
    """The same audit as if a clusterer had produced it, with cluster ids renamed by perm."""
    d = copy.deepcopy(doc)
    lab = d["labellings"][0]
    lab.update(origin="clusterer", component="kmeans", column=None)
    lab["cluster_sizes"] = sorted(({"cluster": perm[r["cluster"]], "n": r["n"]}
                                   for r in lab["cluster_sizes"]), key=lambda r: r["cluster"])
    for comp in lab["composition"].values():
        order = sorted(range(len(comp["clusters"])), key=lambda j: perm[comp["clusters"][j]])
        comp["clusters"] = [perm[comp["clusters"][j]] for j in order]
        for key in ("counts", "cluster_share"):
            comp[key] = [[row[j] for j in order] for row in comp[key]]
    for r in d["results"]:
        for row in r["per_cluster"]:
            row["cluster"] = perm[row["cluster"]]
    return d


def test_permuted_cluster_ids_are_aligned_back():
    from fairaudit.ops.align import align_clusters

    base = _as_clusterer(resample_audit(0, shift=True), {0: 0, 1: 1, 2: 2})
    perm = {0: 2, 1: 0, 2: 1}
    cur = _as_clusterer(resample_audit(1, shift=True), perm)
    al = align_clusters(base["labellings"][0], cur["labellings"][0])
    assert al.method == "hungarian" and "group composition" in al.similarity
    assert {(b, c) for b, c, _ in al.pairs} == set(perm.items())
    cmp = compare(base, cur)
    bal = next(c for c in cmp["changes"] if (c["metric"], c["attribute"]) == ("balance", "race"))
    assert {(r["baseline_cluster"], r["current_cluster"]) for r in bal["clusters"]} == \
        set(perm.items())
    assert all(abs(r["delta"]) < 0.5 for r in bal["clusters"])


def test_segments_are_matched_by_name(doc):
    cmp = compare(doc, resample_audit(1))
    (al,) = cmp["alignment"]
    assert al["method"] == "name" and al["similarity"] is None
    assert [(p["baseline"], p["current"]) for p in al["pairs"]] == [(0, 0), (1, 1), (2, 2)]


def test_prototypes_are_used_when_present():
    from fairaudit.ops.align import align_clusters

    base = _as_clusterer(resample_audit(0), {0: 0, 1: 1, 2: 2})["labellings"][0]
    cur = _as_clusterer(resample_audit(0), {0: 0, 1: 1, 2: 2})["labellings"][0]
    base["extras"] = {"prototypes": [[0.0, 0.0], [5.0, 5.0], [-5.0, 5.0]]}
    cur["extras"] = {"prototypes": [[-5.1, 5.0], [0.1, 0.0], [5.0, 4.9]]}
    al = align_clusters(base, cur)
    assert "prototype" in al.similarity
    assert {(b, c) for b, c, _ in al.pairs} == {(0, 1), (1, 2), (2, 0)}


# ----------------------------------------------------------------------------- CLI
def _write(tmp: Path, name: str, d: dict) -> Path:
    p = tmp / name
    p.write_text(json.dumps(d))
    return p


def test_cli_compare_exit_codes_and_outputs(run_cli, tmp_path):
    base = _write(tmp_path, "base.json", resample_audit(1))
    same = _write(tmp_path, "same.json", resample_audit(2))
    shifted = _write(tmp_path, "shifted.json", resample_audit(0, shift=True))
    res = run_cli("compare", base, same, "--out", "d.html", "--json", "d.json")
    assert res.exit_code == 0, res.output
    diff = json.loads((tmp_path / "d.json").read_text())
    assert diff["kind"] == "fairaudit-comparison" and diff["status"] == "pass"
    html = (tmp_path / "d.html").read_text()
    assert "Content-Security-Policy" in html and "<script" not in html
    assert "Hungarian" not in html and "matched by their label" in html
    res = run_cli("compare", base, shifted, "--json", "d2.json")
    assert res.exit_code == 1
    assert "FAIL" in res.output and "balance[race]" in res.output
    res = run_cli("compare", base, shifted, "--tolerance", "*=1", "-q")
    assert res.exit_code == 0 and res.output == ""
    # not an audit, not comparable, output over an input: exit 2, nothing written
    res = run_cli("compare", base, "d.json")
    assert res.exit_code == 2 and "not an audit JSON" in res.output
    other = copy.deepcopy(resample_audit(2))
    other["input"]["attributes"] = ["sex"]
    res = run_cli("compare", base, _write(tmp_path, "other.json", other))
    assert res.exit_code == 2 and "other attributes" in res.output
    before = base.read_text()
    res = run_cli("compare", base, same, "--json", "base.json")
    assert res.exit_code == 2 and "is the input file" in res.output
    assert base.read_text() == before


def test_schema_validates_comparison(doc):
    jsonschema = pytest.importorskip("jsonschema")
    import fairaudit

    schema = json.loads((Path(fairaudit.__file__).parent / "schema" /
                         "compare.schema.json").read_text())
    jsonschema.validate(compare(doc, resample_audit(0, shift=True)), schema)


# ----------------------------------------------------------------------------- --baseline
@pytest.fixture(scope="module")
def data_files(tmp_path_factory):
    import numpy as np

    folder = tmp_path_factory.mktemp("baseline")
    for name, shift in (("before", False), ("after", True)):
        pop = population(shift=shift)
        idx = np.random.default_rng(7).integers(0, pop.height, 3000)
        pop[idx].write_parquet(folder / f"{name}.parquet")
    chain_file(folder)
    return folder


def test_audit_with_baseline_gates_on_both(run_cli, data_files, tmp_path):
    d = data_files
    common = ["-s", "sex,race", "--labels", "segment", "--chain", d / "compare_chain.toml"]
    assert run_cli("audit", d / "before.parquet", *common, "-o", "base.html", "-q").exit_code == 0
    res = run_cli("audit", d / "after.parquet", *common, "-o", "now.html",
                  "--baseline", "base.json")
    assert res.exit_code == 1, res.output
    doc = json.loads((tmp_path / "now.json").read_text())
    assert doc["status"] == "fail" and doc["comparison"]["status"] == "fail"
    assert doc["comparison"]["audit_status"] == "not_evaluated"
    html = (tmp_path / "now.html").read_text()
    assert 'id="sec-comparison"' in html
    # only the comparison failed: console and report say so, not "a threshold failed"
    worse = doc["comparison"]["summary"]["gate_failures"]
    assert worse > 0
    headline = res.output.splitlines()[0]
    assert "gates: no threshold set; baseline comparison failed: " \
        f"{worse} headline metric" in headline
    assert "error-severity threshold failed" not in html
    assert "comparison with the baseline" in html and f"{worse} headline metric" in html
    assert "Worse than baseline" in html
    res = run_cli("audit", d / "after.parquet", *common, "-o", "now2.html", "-q",
                  "--baseline", "base.json", "--tolerance", "*=1")
    assert res.exit_code == 0
    # the baseline is an input: never written over
    res = run_cli("audit", d / "after.parquet", *common, "-o", "base.html", "--baseline",
                  "base.json")
    assert res.exit_code == 2 and "also the baseline" in res.output
    # a bad baseline fails before the run (exit 2)
    (tmp_path / "junk.json").write_text("[]")
    res = run_cli("audit", d / "after.parquet", *common, "-o", "x.html", "--baseline", "junk.json")
    assert res.exit_code == 2 and not (tmp_path / "x.html").exists()


def test_chain_compare_table_and_api(data_files, tmp_path):
    import polars as pl

    import fairaudit

    d = data_files
    base = fairaudit.audit(pl.read_parquet(d / "before.parquet"), sensitive=["sex", "race"],
                           labels="segment", chain=d / "compare_chain.toml")
    base_path = _write(tmp_path, "base.json", base.to_json())
    after = pl.read_parquet(d / "after.parquet")
    run = fairaudit.audit(after, sensitive=["sex", "race"], labels="segment",
                          chain=d / "compare_chain.toml", baseline=base_path)
    assert run.exit_code == 1 and run.doc["comparison"]["status"] == "fail"
    run = fairaudit.audit(after, sensitive=["sex", "race"], labels="segment",
                          chain=d / "compare_chain.toml", baseline=base.doc,
                          tolerance={"*": 1.0})
    assert run.exit_code == 0
    chain = tmp_path / "with_compare.toml"
    chain.write_text((d / "compare_chain.toml").read_text()
                     + f'\n[compare]\nbaseline = "{base_path}"\ntolerance = {{balance = 0.0}}\n')
    run = fairaudit.audit(after, sensitive=["sex", "race"], labels="segment", chain=chain)
    assert run.exit_code == 1 and "[compare]" in run.doc["comparison"]["source"]
    bad = tmp_path / "bad.toml"
    bad.write_text('[compare]\nbaseline = "x.json"\ntolerence = {}\n')
    with pytest.raises(ConfigError, match="compare.tolerence"):
        fairaudit.audit(after, sensitive=["sex", "race"], labels="segment", chain=bad)


def test_page_states_the_alignment_rule():
    from fairaudit.report.diffreport import render_comparison_html

    base = _as_clusterer(resample_audit(0, shift=True), {0: 0, 1: 1, 2: 2})
    cur = _as_clusterer(resample_audit(1, shift=True), {0: 2, 1: 0, 2: 1})
    html = render_comparison_html(compare(base, cur))
    assert "Hungarian method" in html and "group composition" in html
    assert "<script" not in html and html.count("<svg") == 1


def test_better_or_worse_is_decided_by_the_interval_of_the_change_not_the_point():
    """Issue 23: a change whose interval holds 0 is "within noise", whatever its sign."""
    from fairaudit.ops.compare import _verdict

    assert _verdict([0.01, 0.2], "higher_is_better") == "better"
    assert _verdict([0.01, 0.2], "lower_is_better") == "worse"
    assert _verdict([-0.3, -0.01], "higher_is_better") == "worse"
    assert _verdict([-0.05, 0.2], "higher_is_better") == "within noise"
    assert _verdict(None, "higher_is_better") is None


def test_price_of_fairness_reads_fairer_only_from_the_interval_of_the_gain():
    from fairaudit_builtins.quality import TwinsSection

    from fairaudit.core.twins import price_of_fairness

    def res(lab, value, ci):
        return {"auditor": "balance", "metric": "balance", "labelling": lab, "attribute": "g",
                "value": value, "ci": ci, "direction": "higher_is_better", "detail": {}}

    def doc(fair_ci):
        return {"labellings": [{"name": "fairx", "component": "fairden", "origin": "clusterer",
                                "params": {"fair": True},
                                "extras": {"fairness_target": {"auditor": "balance",
                                                               "metric": "balance"}}},
                               {"name": "fairx-twin", "component": "fairden",
                                "origin": "clusterer", "params": {"fair": False}}],
                "results": [res("fairx", 0.7, fair_ci), res("fairx-twin", 0.6, [0.5, 0.7])],
                "input": {"attributes": ["g"]}}

    d = doc([0.4, 0.9])
    wide = price_of_fairness(d)[0]
    assert wide["gain"] == pytest.approx(0.1)  # a positive point gain ...
    assert wide["gain_ci"][0] < 0 < wide["gain_ci"][1]  # ... whose interval holds 0

    class Run:
        def __init__(self, doc):
            self.doc = doc

    d["twins"] = [wide]
    e = TwinsSection().context(Run(d))["entries"][0]
    assert e["fairer"] is False and "no clear gain" in e["verdict"]
    d2 = doc([0.69, 0.71])
    d2["results"][1]["ci"] = [0.59, 0.61]
    d2["twins"] = price_of_fairness(d2)
    e2 = TwinsSection().context(Run(d2))["entries"][0]
    assert e2["fairer"] is True and e2["verdict"].startswith("fairer")
