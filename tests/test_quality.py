"""Quality beside fairness (issue 13): the ``quality`` auditor, fit diagnostics, degenerate
labellings (warnings, never starred best), twins and the price of fairness."""

from __future__ import annotations

import math
import tomllib

import numpy as np
import polars as pl
import pytest
from fixture_plugins import load_fixture_plugin
from sklearn.metrics import silhouette_score

from fairaudit.core.build import chain_from_flags
from fairaudit.core.chain import parse_chain
from fairaudit.core.fit_quality import degenerate_warnings, fit_diagnostics, tiny_bound
from fairaudit.core.plugins import Host, make_plugin_manager
from fairaudit.core.runner import run_chain
from fairaudit.core.twins import expand_twins, find_twins, price_of_fairness


@pytest.fixture
def qhost():
    pm = make_plugin_manager(entrypoints=False)
    pm.register(load_fixture_plugin("quality_fixtures"), name="quality_fixtures")
    return Host(pm)


def _chain(text: str):
    return parse_chain(tomllib.loads(text), source="quality.toml")


def _codes(lab) -> list[str]:
    return [w["code"] for w in lab["warnings"]]


# ----------------------------------------------------------------------------- degenerate rules
def test_dominant_cluster_over_90_percent_of_clustered_rows():
    w = degenerate_warnings({0: 901, 1: 99})
    assert [x["code"] for x in w] == ["dominant_cluster"]
    assert w[0]["clusters"] == [0] and "901 of 1,000" in w[0]["message"]
    assert degenerate_warnings({0: 900, 1: 100}) == []  # exactly 90 % is not over
    assert _codes({"warnings": degenerate_warnings({5: 10})}) == ["dominant_cluster"]


def test_tiny_cluster_under_one_percent_and_the_forced_rule():
    assert [x["code"] for x in degenerate_warnings({0: 500, 1: 495, 2: 5})] == ["tiny_cluster"]
    assert degenerate_warnings({0: 500, 1: 490, 2: 10}) == []  # exactly 1 % is not under
    # 100 clusters of 1 % each (and one of 0.6 %): forced by k; the bound is 1/(2k) = 0.5 %
    sizes = {c: 100 for c in range(99)} | {99: 60}
    assert tiny_bound(100) == pytest.approx(0.005)
    assert degenerate_warnings(sizes) == []
    sizes[99] = 40
    assert [x["code"] for x in degenerate_warnings(sizes)] == ["tiny_cluster"]
    assert tiny_bound(50) == 0.01


def test_a_well_separated_tiny_cluster_is_forced_by_the_data():
    sizes = {0: 500, 1: 495, 2: 5}
    assert degenerate_warnings(sizes, separation={0: 0.1, 1: 0.1, 2: 0.5}) == []
    assert degenerate_warnings(sizes, separation={2: 0.49})[0]["code"] == "tiny_cluster"
    assert degenerate_warnings(sizes, separation={2: None})[0]["code"] == "tiny_cluster"


def test_tiny_outlier_group_end_to_end(qhost, tmp_path, synthetic):
    """The last 10 rows (0.5 %) sit far away: a genuine small group, not flagged; the same
    share of ordinary rows is flagged."""
    n = synthetic.height
    far = synthetic.with_columns(
        pl.when(pl.int_range(pl.len()) >= n - 10).then(100.0).otherwise(pl.col("x1")).alias("x1")
    )
    path = tmp_path / "far.parquet"
    far.write_parquet(path)
    spec = _chain(
        '[data]\nsensitive = ["sex"]\nfeatures = ["x1", "x2"]\n'
        '[[cluster]]\nuse = "shares"\nparams = { n_clusters = 3, shares = [0.5, 0.495, 0.005] }\n'
        '[[audit]]\nuse = "quality"\n'
    )
    run = run_chain(spec, qhost, data_path=str(path))
    assert run.labellings[0]["warnings"] == []
    sil = run.results_for(metric="silhouette")[0]
    assert next(r for r in sil["per_cluster"] if r["cluster"] == 2)["value"] > 0.9
    plain = tmp_path / "plain.parquet"
    synthetic.write_parquet(plain)
    run = run_chain(spec, qhost, data_path=str(plain))
    assert _codes(run.labellings[0]) == ["tiny_cluster"]


def test_tiny_cluster_warning_gives_its_exact_size():
    w = degenerate_warnings({0: 500, 1: 496, 2: 4})
    assert "cluster 2: 4 rows (0.4 %)" in w[0]["message"]


def test_empty_clusters_against_fitted_or_requested_k():
    w = degenerate_warnings({0: 50, 1: 50}, params={"n_clusters": 3}, component="x")
    assert [x["code"] for x in w] == ["empty_cluster"]
    assert "fitted 3 clusters but only 2" in w[0]["message"]
    # the fitted k wins over the requested one (FairDen's noise rule may raise k)
    assert degenerate_warnings({0: 50, 1: 50}, params={"n_clusters": 3,
                                                        "n_clusters_fitted": 2}) != []
    assert degenerate_warnings({0: 50, 1: 50, 2: 50},
                               params={"n_clusters": 2, "n_clusters_fitted": 3}) == []
    assert degenerate_warnings({0: 50, 1: 50}, params={"n_clusters": "auto",
                                                        "n_clusters_fitted": 2}) == []
    assert [x["code"] for x in degenerate_warnings({})] == ["empty_cluster"]  # all noise


def test_not_converged():
    stop = {"converged": False, "n_iter": 300, "max_iter": 300}
    w = degenerate_warnings({0: 50, 1: 50}, fit=stop, component="ffcm")
    assert w == [{"code": "not_converged", "clusters": [],
                  "message": "ffcm stopped at max_iter = 300 iterations before converging"}]
    w = degenerate_warnings({0: 50, 1: 50}, fit={"converged": False})
    assert "reports that it did not converge" in w[0]["message"]
    assert degenerate_warnings({0: 50, 1: 50}, fit={"converged": None}) == []


class _Est:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class _Comp:
    def __init__(self, params=None, **kw):
        self._params = params or {}
        self.__dict__.update(kw)

    def get_params(self):
        return dict(self._params)


def test_fit_diagnostics_reads_objective_iterations_and_convergence():
    d = fit_diagnostics(_Comp({"max_iter": 10}, objective_=np.array([3.0, 2.0]), n_iter_=10))
    assert d == {"objective": 2.0, "objective_name": "objective", "n_iter": 10,
                 "max_iter": 10, "converged": False}
    d = fit_diagnostics(_Comp({"max_iter": 10}, inertia_=7.5, n_iter_=4))
    assert (d["objective"], d["objective_name"], d["converged"]) == (7.5, "inertia", True)
    # on the wrapped estimator, FCE-like per-iteration records, explicit converged_
    recs = (_Est(objective=5.0), _Est(objective=4.0))
    d = fit_diagnostics(_Comp({}, estimator_=_Est(objective_=recs, n_iter_=2, converged_=True)))
    assert (d["objective"], d["n_iter"], d["converged"]) == (4.0, 2, True)
    d = fit_diagnostics(_Comp({}, converged_=False))
    assert d["converged"] is False and d["objective"] is None
    assert fit_diagnostics(_Comp({}))["converged"] is None
    assert fit_diagnostics(_Comp({}, objective_=float("nan")))["objective"] is None


# ----------------------------------------------------------------------------- end to end
def test_degenerate_labellings_are_warned_and_never_starred(qhost, parquet_path):
    spec = _chain(
        '[data]\nsensitive = ["sex"]\nfeatures = ["x1", "x2"]\n'
        '[[cluster]]\nuse = "shares"\nname = "dominant"\n'
        'params = { n_clusters = 2, shares = [0.95, 0.05] }\n'
        '[[cluster]]\nuse = "shares"\nname = "tiny"\n'
        'params = { n_clusters = 3, shares = [0.5, 0.495, 0.005] }\n'
        '[[cluster]]\nuse = "shares"\nname = "empty"\n'
        'params = { n_clusters = 3, shares = [0.5, 0.5] }\n'
        '[[cluster]]\nuse = "stuck"\nname = "stuck"\n'
        '[[cluster]]\nuse = "shares"\nname = "fine"\nparams = { shares = [0.6, 0.4] }\n'
        '[[audit]]\nuse = "balance"\n[[audit]]\nuse = "quality"\n'
    )
    run = run_chain(spec, qhost, data_path=str(parquet_path))
    labs = {lab["name"]: lab for lab in run.labellings}
    assert _codes(labs["dominant"]) == ["dominant_cluster"]
    assert _codes(labs["tiny"]) == ["tiny_cluster"]
    assert labs["tiny"]["warnings"][0]["clusters"] == [2]
    assert _codes(labs["empty"]) == ["empty_cluster"]
    assert _codes(labs["stuck"]) == ["not_converged"]
    assert labs["stuck"]["fit"]["objective"] == 4.5
    assert labs["fine"]["warnings"] == []

    from fairaudit_builtins.sections import headline_table

    table = headline_table(run)
    names = table["labellings"]
    for row in table["rows"]:
        for name, cell in zip(names, row["cells"], strict=True):
            if cell["best"]:
                assert name == "fine", (row["metric"], name)
    # the summary shows a visible warning naming every degenerate labelling
    from fairaudit.report.render import render_html

    html = render_html(run, qhost)
    block = html[html.index('id="degenerate-warning"'):]
    block = block[: block.index("</div>")]
    for name, code in (("dominant", "dominant_cluster"), ("tiny", "tiny_cluster"),
                       ("empty", "empty_cluster"), ("stuck", "not_converged")):
        assert name in block and code in block
    assert "<strong>fine</strong>" not in block
    quality = html[html.index("Clustering quality"):]
    assert "objective = 4.5" in quality and "not converged" in quality
    assert "is degenerate and is never marked best" in quality
    # the document with warnings and fit diagnostics follows the published schema
    import importlib.resources
    import json

    import jsonschema

    schema = json.loads(
        importlib.resources.files("fairaudit").joinpath("schema/audit.schema.json").read_text()
    )
    jsonschema.validate(json.loads(json.dumps(run.to_json())), schema)


def test_best_goes_to_the_best_non_degenerate_labelling():
    from fairaudit_builtins.sections import mark_best

    cells = [{"present": True, "value": 0.9, "degenerate": True},
             {"present": True, "value": 0.5}, {"present": True, "value": 0.7}]
    mark_best(cells, "higher_is_better")
    assert [c.get("best", False) for c in cells] == [False, False, True]


def test_quality_auditor_is_the_sklearn_silhouette_on_the_stated_sample(host, parquet_path):
    spec = _chain(
        '[data]\nsensitive = ["sex"]\nfeatures = ["x1", "x2"]\nseed = 3\n'
        '[[cluster]]\nuse = "kmeans"\nparams = { n_clusters = 3 }\n'
        '[[cluster]]\nuse = "dbscan"\nparams = { eps = 0.3, min_samples = 10 }\n'
        '[[audit]]\nuse = "quality"\nparams = { sample_size = 500 }\n'
    )
    run = run_chain(spec, host, data_path=str(parquet_path))
    frame = pl.read_parquet(parquet_path)
    X = frame.select(["x1", "x2"]).to_numpy()
    seen_rows = set()
    for lab in ("kmeans", "dbscan"):
        sil = run.results_for(auditor="quality", metric="silhouette", labelling=lab)[0]
        d = sil["detail"]
        assert d["rows_sampled"] == 500 and d["sample_size"] == 500
        seen_rows.add(d["seed"])
        # the same seeded rows for every labelling; noise left out and counted
        from fairaudit.core.data import sample_rows

        rows = sample_rows(len(frame), 500, d["seed"])
        doc_lab = next(x for x in run.labellings if x["name"] == lab)
        assert doc_lab["n_rows"] + doc_lab["n_noise"] >= 0
        assert any("500 of 2,000 rows" in n for n in sil["notes"])
        assert sil["headline"] and sil["attribute"] is None
        assert sil["n_rows"] == d["rows_used"] == 500 - d["noise_left_out"]
    assert len(seen_rows) == 1
    # recompute kmeans' silhouette on those rows with scikit-learn
    from sklearn.cluster import KMeans

    km_params = next(x for x in run.labellings if x["name"] == "kmeans")["params"]
    km = KMeans(3, n_init=km_params["n_init"], max_iter=km_params["max_iter"],
                random_state=km_params["random_state"]).fit(X)
    expected = silhouette_score(X[rows], km.labels_[rows])
    got = run.results_for(auditor="quality", metric="silhouette", labelling="kmeans")[0]
    assert got["value"] == pytest.approx(expected, abs=1e-9)
    # DCSI only for the density-based labelling; objective of k-means in labellings[i].fit
    assert run.results_for(auditor="quality", metric="dcsi", labelling="dbscan")
    assert not run.results_for(auditor="quality", metric="dcsi", labelling="kmeans")
    km_fit = next(x for x in run.labellings if x["name"] == "kmeans")["fit"]
    assert km_fit["objective_name"] == "inertia"
    assert km_fit["objective"] == pytest.approx(km.inertia_, rel=1e-9)
    db = run.results_for(auditor="quality", metric="silhouette", labelling="dbscan")[0]
    if db["detail"]["noise_left_out"]:
        assert any("noise rows of the sample were left out" in n for n in db["notes"])


def test_quality_runs_on_a_labels_audit_with_feature_columns(run_cli, parquet_path, tmp_path):
    res = run_cli("audit", parquet_path, "--sensitive", "sex", "--labels", "segment",
                  "--exclude", "customer_id", "--json", tmp_path / "a.json",
                  "--out", tmp_path / "a.html")
    assert res.exit_code == 0, res.output
    import json

    doc = json.loads((tmp_path / "a.json").read_text())
    sil = [r for r in doc["results"] if r["metric"] == "silhouette"]
    assert len(sil) == 1 and sil[0]["labelling"] == "segment"
    assert 0.3 < sil[0]["value"] <= 1  # three well separated planted segments
    assert doc["labellings"][0]["warnings"] == []
    assert "Clustering quality" in (tmp_path / "a.html").read_text()


def test_quality_left_out_without_feature_columns(run_cli, tmp_path, synthetic):
    path = tmp_path / "nofeat.parquet"
    synthetic.select(["sex", "race", "segment"]).write_parquet(path)
    res = run_cli("audit", path, "--sensitive", "sex,race", "--labels", "segment",
                  "--json", tmp_path / "b.json", "--out", tmp_path / "b.html")
    assert res.exit_code == 0, res.output
    import json

    doc = json.loads((tmp_path / "b.json").read_text())
    assert not [r for r in doc["results"] if r["auditor"] == "quality"]


# ----------------------------------------------------------------------------- twins
def test_expand_twins_adds_a_fair_false_step_after_the_others(qhost):
    text = (
        '[data]\nsensitive = ["sex"]\nfeatures = ["x1", "x2"]\n[options]\ntwins = true\n'
        '[[cluster]]\nuse = "fairsplit"\n'
        '[[cluster]]\nuse = "shares"\n'
        '[[audit]]\nuse = "balance"\n'
    )
    out = expand_twins(_chain(text), qhost.registry)
    assert [s.label for s in out.cluster] == ["fairsplit", "shares", "fairsplit-unfair"]
    twin = out.cluster[-1]
    assert twin.params == {"fair": False} and twin.twin_of == "fairsplit"
    assert expand_twins(out, qhost.registry).cluster == out.cluster  # never twice
    # off unless asked for; an explicit fair = false step of the same params is the twin
    assert len(expand_twins(_chain(text.replace("twins = true", "twins = false")),
                            qhost.registry).cluster) == 2
    explicit = text + '[[cluster]]\nuse = "fairsplit"\nname = "plain"\nparams = { fair = false }\n'
    assert [s.label for s in expand_twins(_chain(explicit), qhost.registry).cluster] == [
        "fairsplit", "shares", "plain"]


def test_twins_share_params_seed_and_input_and_give_the_price_of_fairness(qhost, parquet_path):
    spec = _chain(
        '[data]\nsensitive = ["sex", "race"]\nfeatures = ["x1", "x2"]\nseed = 11\n'
        '[options]\ntwins = true\n'
        '[[cluster]]\nuse = "fairsplit"\n'
        '[[cluster]]\nuse = "shares"\n'
        '[[audit]]\nuse = "balance"\n[[audit]]\nuse = "quality"\n'
    )
    run = run_chain(spec, qhost, data_path=str(parquet_path))
    labs = {lab["name"]: lab for lab in run.labellings}
    fair, twin = labs["fairsplit"], labs["fairsplit-unfair"]
    assert twin["params"] == {**fair["params"], "fair": False}
    assert fair["params"]["random_state"] is not None
    assert twin["extras"]["seen_labellings"] == fair["extras"]["seen_labellings"] == []
    assert run.doc["chain"]["options"]["twins"] is True
    entries = run.doc["twins"]
    assert [e["attribute"] for e in entries] == ["sex", "race", "sex|race"]
    for e in entries:
        assert (e["fair"], e["twin"], e["target_metric"]) == ("fairsplit", "fairsplit-unfair",
                                                               "balance")
        fv = run.results_for(metric="balance", labelling="fairsplit", attribute=e["attribute"])
        tv = run.results_for(metric="balance", labelling="fairsplit-unfair",
                             attribute=e["attribute"])
        assert e["gain"] == pytest.approx(fv[0]["value"] - tv[0]["value"])
        if e["attribute"] == "sex":  # sex is planted in the segments; race is not
            assert e["gain"] > 0.3
        fq = run.results_for(metric="silhouette", labelling="fairsplit")[0]["value"]
        tq = run.results_for(metric="silhouette", labelling="fairsplit-unfair")[0]["value"]
        assert e["quality_loss"] == pytest.approx(tq - fq) and e["quality_loss"] > 0
    from fairaudit.report.render import render_html

    html = render_html(run, qhost)
    assert "Price of fairness" in html and "fairsplit-unfair" in html
    import importlib.resources
    import json

    import jsonschema

    schema = json.loads(
        importlib.resources.files("fairaudit").joinpath("schema/audit.schema.json").read_text()
    )
    jsonschema.validate(json.loads(json.dumps(run.to_json())), schema)


def test_twin_fit_without_the_option_is_the_same_as_the_fair_steps(qhost, parquet_path):
    """Turning twins on does not change the fair labellings or the audit seed."""
    base = ('[data]\nsensitive = ["sex"]\nfeatures = ["x1", "x2"]\nseed = 5\n'
            '[[cluster]]\nuse = "fairsplit"\n[[audit]]\nuse = "balance"\n')
    a = run_chain(_chain(base), qhost, data_path=str(parquet_path))
    b = run_chain(_chain(base.replace("seed = 5\n", "seed = 5\n[options]\ntwins = true\n")),
                  qhost, data_path=str(parquet_path))
    ra = a.results_for(metric="balance", labelling="fairsplit")
    rb = b.results_for(metric="balance", labelling="fairsplit")
    assert [(r["value"], r["ci"]) for r in ra] == [(r["value"], r["ci"]) for r in rb]


def test_pairing_rules_on_documents():
    def lab(name, comp, **params):
        return {"name": name, "origin": "clusterer", "component": comp, "params": params}

    labs = [
        lab("a", "ffcm", n_clusters=4, random_state=1),
        lab("b", "ffcm", n_clusters=4, random_state=1, fair=False, n_clusters_fitted=3),
        lab("c", "ffcm", n_clusters=5, random_state=1, fair=False),  # other params
        lab("d", "fcm", n_clusters=4, random_state=1, fair=False),  # other component
        lab("e", "fairden", n_clusters=4, fair=True),  # no twin
        {"name": "seg", "origin": "column", "component": None, "params": {}},
    ]
    assert find_twins(labs) == [("a", "b")]

    def res(labelling, auditor, metric, value, attribute=None, direction="lower_is_better"):
        return {"auditor": auditor, "metric": metric, "labelling": labelling, "value": value,
                "attribute": attribute, "direction": direction}

    doc = {
        "input": {"attributes": ["sex", "race"]},
        "labellings": labs[:2],
        "results": [
            res("a", "distribution", "ed", 0.10, "race"), res("b", "distribution", "ed", 0.25,
                                                              "race"),
            res("a", "distribution", "ed", 0.02, "sex"), res("b", "distribution", "ed", 0.01,
                                                             "sex"),
            res("a", "balance", "balance", 0.9, "sex", "higher_is_better"),
            res("b", "balance", "balance", 0.5, "sex", "higher_is_better"),
            res("a", "quality", "silhouette", 0.20, direction="higher_is_better"),
            res("b", "quality", "silhouette", None, direction="higher_is_better"),
        ],
    }
    out = price_of_fairness(doc)
    assert [(e["attribute"], e["target_metric"]) for e in out] == [("sex", "ed"), ("race", "ed")]
    assert out[0]["gain"] == pytest.approx(-0.01) and out[1]["gain"] == pytest.approx(0.15)
    assert out[0]["quality_loss"] is None and out[0]["fair_quality"] == 0.2
    # a clusterer may name its own target
    doc["labellings"][0] = {**labs[0], "extras": {"fairness_target": {"auditor": "balance",
                                                                      "metric": "balance"}}}
    out = price_of_fairness(doc)
    assert [(e["attribute"], e["target_metric"], e["gain"]) for e in out] == [
        ("sex", "balance", pytest.approx(0.4))
    ]
    # LOFKM: AvgLCD when the lcd auditor ran, else balance
    doc = {"input": {"attributes": ["sex"]},
           "labellings": [lab("f", "lofkm", k=2), lab("t", "lofkm", k=2, fair=False)],
           "results": [res("f", "balance", "balance", 0.8, "sex", "higher_is_better"),
                       res("t", "balance", "balance", 0.7, "sex", "higher_is_better")]}
    assert price_of_fairness(doc)[0]["target_metric"] == "balance"
    doc["results"] += [res("f", "lcd", "avg_lcd", 0.3), res("t", "lcd", "avg_lcd", 0.5)]
    e = price_of_fairness(doc)[0]
    assert (e["target_metric"], e["attribute"]) == ("avg_lcd", None)
    assert e["gain"] == pytest.approx(0.2)
    assert not math.isnan(e["gain"])


def test_twins_flag_reaches_the_chain(host):
    spec = chain_from_flags(host.registry, sensitive=["sex"], twins=True)
    assert spec.options.twins is True
    from fairaudit.core.spec import DEFAULT_TWINS

    default = chain_from_flags(host.registry, sensitive=["sex"])
    assert default.source == "flags:default" and default.options.twins is DEFAULT_TWINS
    assert chain_from_flags(host.registry, sensitive=["sex"], twins=False).options.twins is False
    # named clusterers (flags or the API) get twins too; a chain of plain clusterers has none
    named = chain_from_flags(host.registry, sensitive=["sex"], clusters=["kmeans"], twins=None)
    assert named.options.twins is DEFAULT_TWINS
    from fairaudit.core.twins import expand_twins

    assert [s.label for s in expand_twins(named, host.registry).cluster] == ["kmeans"]
    bad = parse_chain({"data": {"sensitive": ["sex"]}, "options": {"twins": "yes"}})
    assert any("options.twins" in p for p, _ in bad.problems)
    assert np.isfinite(1.0)


def test_twins_through_the_cli_and_the_api(monkeypatch, run_cli, parquet_path, tmp_path):
    import json

    from fixture_plugins import FakeEntryPoint, install_fake_entry_points

    install_fake_entry_points(monkeypatch, FakeEntryPoint("qfix", "quality_fixtures"))
    args = ("audit", parquet_path, "--sensitive", "sex", "--features", "x1,x2",
            "--cluster", "fairsplit", "--bootstrap", "0")
    res = run_cli(*args, "--twins", "--json", tmp_path / "t.json", "--out", tmp_path / "t.html")
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "t.json").read_text())
    assert [lab["name"] for lab in doc["labellings"]] == ["fairsplit", "fairsplit-unfair"]
    assert doc["twins"] and doc["twins"][0]["gain"] > 0.3
    assert "Price of fairness" in (tmp_path / "t.html").read_text()
    # on by default for a fair clusterer named on the command line; --no-twins leaves it out
    res = run_cli(*args, "--json", tmp_path / "d.json", "--out", tmp_path / "d.html")
    doc = json.loads((tmp_path / "d.json").read_text())
    assert [lab["name"] for lab in doc["labellings"]] == ["fairsplit", "fairsplit-unfair"]
    res = run_cli(*args, "--no-twins", "--json", tmp_path / "n.json", "--out", tmp_path / "n.html")
    doc = json.loads((tmp_path / "n.json").read_text())
    assert [lab["name"] for lab in doc["labellings"]] == ["fairsplit"] and doc["twins"] == []

    from fairaudit.api import audit

    run = audit(str(parquet_path), sensitive="sex", features=["x1", "x2"],
                cluster=["fairsplit"], bootstrap=0, twins=True)
    assert [e["twin"] for e in run.doc["twins"]] == ["fairsplit-unfair"]


def test_modified_partition_coefficient_hand_computed():
    from fairaudit.core.fit_quality import modified_partition_coefficient as mpc

    assert mpc(np.full((4, 2), 0.5)) == pytest.approx(0.0)        # uniform
    assert mpc(np.eye(3)) == pytest.approx(1.0)                    # crisp
    # rows (0.8, 0.2) and (0.5, 0.5): PC = (0.68 + 0.5) / 2 = 0.59 -> (2 * 0.59 - 1) / 1 = 0.18
    assert mpc(np.array([[0.8, 0.2], [0.5, 0.5]])) == pytest.approx(0.18)
    assert mpc(np.ones((3, 1))) is None


def test_uniform_memberships_are_degenerate():
    near = np.column_stack([np.full(100, 0.51), np.full(100, 0.49)])
    w = degenerate_warnings({0: 50, 1: 50}, component="fcm", memberships=near)
    assert [x["code"] for x in w] == ["uniform_memberships"]
    assert "fcm's memberships are almost uniform" in w[0]["message"]
    crisp = np.column_stack([np.r_[np.full(50, 0.9), np.full(50, 0.1)],
                             np.r_[np.full(50, 0.1), np.full(50, 0.9)]])
    assert degenerate_warnings({0: 50, 1: 50}, memberships=crisp) == []


def test_fcm_on_many_noise_features_is_flagged_end_to_end():
    """30 features of noise: fuzzy c-means (m = 2) gives memberships near 1/2 (the
    UCI Student Performance case); the labelling is warned about and never starred."""
    import fairaudit

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 30))
    df = pl.DataFrame({f"x{i}": X[:, i] for i in range(30)}).with_columns(
        pl.Series("sex", rng.choice(["F", "M"], size=400)))
    run = fairaudit.audit(df, sensitive="sex", cluster=["fcm:n_clusters=2"], bootstrap=0)
    lab = run.doc["labellings"][0]
    assert "uniform_memberships" in _codes(lab)


def test_a_named_fair_method_is_audited_on_its_own_target(host):
    """LOFKM's target is AvgLCD (the lcd auditor), which the default auditors leave out: a
    flag-built chain naming lofkm adds it, so the price of fairness is not judged on balance."""
    spec = chain_from_flags(host.registry, sensitive=["sex"], clusters=["lofkm"])
    uses = [s.use for s in spec.audit]
    assert "lcd" in uses and uses.count("lcd") == 1
    # only with the default auditors; named auditors are kept as given, --skip-audit still works
    named = chain_from_flags(host.registry, sensitive=["sex"], clusters=["lofkm"],
                             audits=["balance"])
    assert [s.use for s in named.audit] == ["balance"]
    skipped = chain_from_flags(host.registry, sensitive=["sex"], clusters=["lofkm"],
                               skip_audits=["lcd"])
    assert "lcd" not in [s.use for s in skipped.audit]
    plain = chain_from_flags(host.registry, sensitive=["sex"], clusters=["kmeans"])
    assert "lcd" not in [s.use for s in plain.audit]
