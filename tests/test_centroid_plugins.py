"""Plugin adapters of the centroid clusterers: fair twins (``fair=false``), convergence and
``predict(data)`` mirroring ``fit``."""

from __future__ import annotations

import numpy as np
import pytest

from fairaudit.core.components import Clusterer
from fairaudit.metrics import ed_score
from fairaudit.testing import make_data


@pytest.fixture
def classes():
    from fairaudit_builtins.centroid import FCMClusterer, FFCMClusterer, LOFKMClusterer
    from fairaudit_builtins.clusterers import KMeansClusterer

    return {"ffcm": FFCMClusterer, "fcm": FCMClusterer, "lofkm": LOFKMClusterer,
            "kmeans": KMeansClusterer}


def test_base_clusterer_predict_says_it_cannot():
    class Plain(Clusterer):
        name = "plain"

    with pytest.raises(NotImplementedError, match="plain cannot assign new rows"):
        Plain().predict(make_data(20))


@pytest.mark.parametrize(
    ("name", "params"),
    [("kmeans", {"n_clusters": 3}), ("fcm", {"n_clusters": 3}), ("ffcm", {"n_clusters": 3}),
     ("lofkm", {"n_clusters": 3}), ("lofkm", {"n_clusters": 3, "fair": False}),
     ("ffcm", {"n_clusters": 3, "fair": False}), ("ffcm", {"n_clusters": 3, "variant": "paper"})],
)
def test_predict_on_the_fitted_rows_gives_labels(classes, name, params):
    data = make_data(300, seed=1, with_labels=False)
    comp = classes[name](random_state=0, **params)
    if name == "ffcm":
        c = comp.fit(data)
    else:
        c = comp.fit(data.without_sensitive())
    view = data if name == "ffcm" else data.without_sensitive()
    pred = c.predict(view)
    assert pred.dtype == np.int64 and pred.shape == (300,)
    if name == "ffcm" and params.get("variant") == "paper":
        # a new row "joins" a cluster; a fitted row already sits in one (the O(1/|C|) stay/add
        # difference of eq. 3): agreement is near-total, not exact
        assert (pred == c.labels_).mean() > 0.95
    else:
        np.testing.assert_array_equal(pred, c.labels_)
    assert c.converged_


def test_ffcm_twin_through_params_is_fcm(classes):
    data = make_data(300, seed=2, with_labels=False)
    twin = classes["ffcm"](n_clusters=3, fair=False, random_state=0).fit(data)
    fcm = classes["fcm"](n_clusters=3, random_state=0).fit(data.without_sensitive())
    np.testing.assert_array_equal(twin.labels_, fcm.labels_)
    assert twin.extras_["fair"] is False
    fair = classes["ffcm"](n_clusters=3, random_state=0).fit(data)
    s = data.sensitive_codes().codes[:, 0]
    # well separated blobs leave no boundary rows to move: never less fair than the twin
    assert ed_score(fair.labels_, s) <= ed_score(twin.labels_, s)


def test_ffcm_predict_maps_groups_by_name(classes):
    data = make_data(300, seed=3, with_labels=False)
    c = classes["ffcm"](n_clusters=3, random_state=0).fit(data)
    # rows of one group only: its codes are 0 in the new data but not in the fitted data
    mask = data.frame.get_column("sex").to_numpy() == "M"
    sub = data.replace(frame=data.frame.filter(mask), features=data.features.filter(mask))
    np.testing.assert_array_equal(c.predict(sub), c.labels_[mask])


def test_cli_fair_false_twins(run_cli, parquet_path, tmp_path):
    import json

    res = run_cli(
        "audit", parquet_path, "-s", "sex", "--features", "x1,x2",
        "--cluster", "ffcm:n_clusters=3", "--cluster", "ffcm:n_clusters=3,fair=false",
        "--cluster", "lofkm:n_clusters=3,fair=false", "--bootstrap", "0", "-o", "r.html",
    )
    assert res.exit_code in (0, 1), res.output
    doc = json.loads((tmp_path / "r.json").read_text())
    params = [lab.get("params", {}) for lab in doc["labellings"]]
    assert sum(1 for p in params if p.get("fair") is False) == 2
    bad = run_cli("audit", parquet_path, "-s", "sex", "--cluster", "ffcm:fair=maybe")
    assert bad.exit_code == 2
    assert "fair" in bad.output


def test_ffcm_predict_rows_of_an_unseen_group_get_the_nearest_centre(classes):
    import polars as pl

    data = make_data(300, seed=4, with_labels=False)
    c = classes["ffcm"](n_clusters=3, random_state=0).fit(data)
    frame = data.frame.with_columns(pl.lit("z").alias("race"))  # a race the fit never saw
    new = data.replace(frame=frame)
    np.testing.assert_array_equal(c.predict(new), c.estimator_.predict(data.feature_matrix()))


def test_ffcm_says_when_the_twin_is_returned(classes):
    """Two far blobs, each exactly half F and half M: the twin's Ed is 0, no fit can be strictly
    fairer, every weight is rejected and the labelling's notes say the labels are the twin's."""
    import polars as pl

    from fairaudit.api import audit

    rng = np.random.default_rng(0)
    x = np.r_[rng.normal(0, 0.3, 200), rng.normal(10, 0.3, 200)]
    frame = pl.DataFrame({"x1": x, "x2": rng.normal(0, 0.3, 400),
                          "sex": np.tile(["F", "M"], 200)})
    run = audit(frame, sensitive=["sex"], cluster=["ffcm:n_clusters=2"], bootstrap=0,
                audit=["distribution"], seed=0)
    lab = next(lab for lab in run.doc["labellings"] if lab["name"] == "ffcm")
    assert lab["extras"]["fair"] is False and lab["extras"]["fair_table"] is None
    assert any("labels are its twin's" in n for n in lab.get("notes") or ())
    # a fit that kept the term says which table it used, and no such note
    data = make_data(300, seed=1, with_labels=False)
    fair = classes["ffcm"](n_clusters=3, random_state=0).fit(data)
    assert fair.extras_["fair"] is True
    assert fair.extras_["fair_table"] in ("soft", "hard")
    assert not any("twin's" in n for n in fair.notes_)
