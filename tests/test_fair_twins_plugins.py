"""fairden / fce plugins: the ``fair`` parameter from the CLI, and ``predict(data)``."""

from __future__ import annotations

import json

import numpy as np
import pytest
from fairaudit_builtins.fairden import FairDenClusterer

from fairaudit.core.components import Clusterer
from fairaudit.testing import check_component, make_data


def test_cli_fair_false_twins(run_cli, tmp_path, monkeypatch):
    from conftest import make_synthetic

    import fairaudit.report.render

    monkeypatch.setattr(fairaudit.report.render, "render_html", lambda run, host=None, **kw: "<html/>")
    data = tmp_path / "small.parquet"
    make_synthetic(n=400, seed=2).write_parquet(data)
    result = run_cli(
        "audit", str(data), "--sensitive", "sex", "--features", "x1,x2",
        "--out", str(tmp_path / "r.html"), "--bootstrap", "20",
        "--cluster", "fairden:n_clusters=3,min_pts=5",
        "--cluster", "fairden:n_clusters=3,min_pts=5,fair=false",
        "--cluster", "fce:n_clusters=3,n_bases=3",
        "--cluster", "fce:n_clusters=3,n_bases=3,fair=false",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "r.json").read_text())
    fair_flags = [
        (lab["params"]["fair"], lab.get("component") or lab["name"]) for lab in doc["labellings"]
    ]
    assert [f for f, _ in fair_flags] == [True, False, True, False]
    twin = doc["labellings"][1]
    assert any("fair=false" in n for n in twin["notes"])
    assert twin["extras"]["fair"] is False


def test_bad_fair_value_is_a_config_error(run_cli, parquet_path, tmp_path):
    result = run_cli(
        "audit", str(parquet_path), "--sensitive", "sex", "--features", "x1,x2",
        "--out", str(tmp_path / "r.html"), "--cluster", "fairden:fair=maybe",
    )  # fmt: skip
    assert result.exit_code == 2
    assert "fair" in result.output


def test_fairden_plugin_predict_mirrors_fit():
    check_component(FairDenClusterer)
    data = make_data(n=300, with_labels=False)
    step = FairDenClusterer(3, min_pts=5, random_state=0).fit(data)
    np.testing.assert_array_equal(step.predict(data), step.labels_)
    twin = FairDenClusterer(3, min_pts=5, random_state=0, fair=False).fit(data)
    assert twin.extras_["fair"] is False and twin.estimator_.constrained_ is False
    other = make_data(n=120, seed=5, with_labels=False)
    p = step.predict(other)
    assert p.shape == (120,) and p.dtype == np.int64 and p.max() < step.estimator_.n_clusters_
    with pytest.raises(RuntimeError, match="before fit"):
        FairDenClusterer().predict(data)


def test_clusterer_base_predict_raises():
    class NoPredict(Clusterer):
        name = "nopredict"

        def fit(self, data):  # pragma: no cover - not called
            return self

    with pytest.raises(NotImplementedError, match="nopredict cannot assign new rows"):
        NoPredict().predict(make_data(n=10))


def test_python_api_and_chain_toml_fair_false(tmp_path):
    from conftest import make_synthetic

    import fairaudit

    data = tmp_path / "d.parquet"
    make_synthetic(n=300, seed=3).write_parquet(data)
    run = fairaudit.audit(
        str(data),
        sensitive="sex",
        features=["x1", "x2"],
        cluster=[("fairden", {"n_clusters": 3, "min_pts": 5, "fair": False})],
        bootstrap=20,
    )
    assert run.labellings[0]["params"]["fair"] is False
    chain = tmp_path / "c.toml"
    chain.write_text(
        '[data]\nsensitive = ["sex"]\nfeatures = ["x1", "x2"]\n\n'
        '[[cluster]]\nuse = "fce"\nparams = { n_clusters = 3, n_bases = 3, fair = false }\n\n'
        '[[audit]]\nuse = "capacity"\n'
    )
    run = fairaudit.audit(str(data), sensitive="sex", chain=chain)
    assert run.labellings[0]["params"]["fair"] is False


def test_dbscan_plugin_predict_oracle():
    from fairaudit_builtins.clusterers import DBSCANClusterer

    data = make_data(n=300, with_labels=False)
    step = DBSCANClusterer(eps=0.9, min_samples=5).fit(data)
    X = data.feature_matrix()
    pred = step.predict(data)
    # brute force: nearest core sample within eps, else noise
    d = np.sqrt(((X[:, None, :] - step.core_X_[None, :, :]) ** 2).sum(axis=2))
    j = d.argmin(axis=1)
    want = np.where(d[np.arange(len(X)), j] <= 0.9, step.core_labels_[j], -1)
    np.testing.assert_array_equal(pred, want)
    # training rows: cores and noise exactly; border points up to DBSCAN's first-reach order
    assert (pred == step.labels_).mean() > 0.97
    assert (pred[step.labels_ == -1] == -1).all()


def test_fce_default_bases_skip_other_consensuses():
    from fairaudit_builtins.consensus import FCEClusterer

    from fairaudit.core.data import Labelling

    data = make_data(n=200)
    rng = np.random.default_rng(1)
    data = data.with_labelling(
        Labelling(
            name="noisy", labels=rng.integers(0, 3, 200), origin="clusterer", component="kmeans"
        )
    )
    first = FCEClusterer(3, random_state=0).fit(data)
    data = data.with_labelling(
        Labelling(name="fce-3", labels=first.labels_, origin="clusterer", component="fce")
    )
    twin = FCEClusterer(3, random_state=0, fair=False).fit(data)
    assert twin.extras_["bases"] == first.extras_["bases"] == ["planted", "noisy"]


def _host_run(df, clusters, sample=300, labels=None):
    from fairaudit.core.build import chain_from_flags
    from fairaudit.core.plugins import Host

    host = Host.create()
    spec = chain_from_flags(
        host.registry, sensitive=["sex"], features=["x1", "x2"], clusters=list(clusters),
        sample=sample, bootstrap=0, labels=labels,
    )  # fmt: skip
    from fairaudit.core.runner import run_chain

    return run_chain(spec, host, data_path=df)


def _unfair_frame(n=1500, seed=0):
    import polars as pl

    rng = np.random.default_rng(seed)
    blob = rng.integers(0, 3, n)
    X = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])[blob] + rng.normal(size=(n, 2))
    sex = np.where(rng.random(n) < np.where(blob == 0, 0.8, 0.3), "f", "m")
    return pl.DataFrame({"x1": X[:, 0], "x2": X[:, 1], "sex": sex, "seg": blob})


def test_host_assigns_every_row_with_fairden_fce_dbscan():
    df = _unfair_frame()
    run = _host_run(
        df,
        ["fairden:n_clusters=3,min_pts=5", "fairden:n_clusters=3,min_pts=5,fair=false",
         "fce:n_clusters=3", "dbscan:eps=0.5"],
    )  # fmt: skip
    for lab in run.labellings:
        assert lab["n_rows"] == df.height, lab["name"]
        assert lab["extras"]["assignment"]["rows_assigned"] == df.height
    fce = next(x for x in run.labellings if x["name"].startswith("fce"))
    assert fce["extras"]["bases"] == [x["name"] for x in run.labellings[:2]]


def test_host_fce_with_a_labels_column_base():
    df = _unfair_frame(seed=1)
    run = _host_run(df, ["fairden:n_clusters=3,min_pts=5", "fce:n_clusters=3"], labels="seg")
    fce = next(x for x in run.labellings if x["name"].startswith("fce"))
    assert "seg" in fce["extras"]["bases"]
    assert fce["n_rows"] == df.height


def test_host_drops_fce_when_a_base_cannot_predict():
    from fixture_plugins import load_fixture_plugin

    from fairaudit.core.build import chain_from_flags
    from fairaudit.core.plugins import Host, make_plugin_manager
    from fairaudit.core.runner import run_chain

    pm = make_plugin_manager(entrypoints=False)
    pm.register(load_fixture_plugin("extras"), name="extras")
    host = Host(pm)
    df = _unfair_frame(seed=2)
    spec = chain_from_flags(
        host.registry, sensitive=["sex"], features=["x1", "x2"],
        clusters=["sign", "sign_predict", "fce:n_clusters=2"], sample=300, bootstrap=0,
    )  # fmt: skip
    run = run_chain(spec, host, data_path=df)
    fce = next(x for x in run.labellings if x["name"].startswith("fce"))
    assert fce["n_rows"] == 300
    assert any("cannot assign new rows" in n for n in fce["notes"])
