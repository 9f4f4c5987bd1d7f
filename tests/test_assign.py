"""Out-of-sample assignment: a clusterer fitted on a sample is audited on every row."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from fixture_plugins import load_fixture_plugin

from fairaudit.core.build import chain_from_flags
from fairaudit.core.contingency import joint_from_frame, sum_joint_tables
from fairaudit.core.plugins import Host, make_plugin_manager
from fairaudit.core.runner import run_chain


@pytest.fixture
def xhost():
    pm = make_plugin_manager(entrypoints=False)
    pm.register(load_fixture_plugin("extras"), name="extras")
    return Host(pm)


def _data(n: int = 6000, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    sex = rng.choice(["f", "m"], size=n)
    x1 = rng.normal(size=n) + np.where(sex == "f", 0.4, -0.2)  # the rule is unfair on purpose
    return pl.DataFrame({"x1": x1, "x2": rng.normal(size=n), "sex": sex})


def _counts(run, lab: str) -> dict[tuple[str, int], int]:
    comp = next(x for x in run.labellings if x["name"] == lab)["composition"]["sex"]
    return {(g, k): c for g, row in zip(comp["groups"], comp["counts"], strict=True)
            for k, c in zip(comp["clusters"], row, strict=True)}


def _run(host, df, clusters, preprocess=(), sample=500):
    spec = chain_from_flags(host.registry, sensitive=["sex"], features=["x1", "x2"],
                            clusters=list(clusters), sample=sample, bootstrap=0)
    if preprocess is not None:
        import dataclasses

        from fairaudit.core.spec import StepSpec

        spec = dataclasses.replace(spec, preprocess=tuple(
            StepSpec("preprocess", p, f"preprocess[{i}]", {}, p) for i, p in enumerate(preprocess)
        ))
    return run_chain(spec, host, data_path=df)


def test_every_row_is_assigned_and_counted(xhost):
    df = _data()
    run = _run(xhost, df, ["sign_predict"])
    got = _counts(run, "sign_predict")
    oracle = df.with_columns((pl.col("x1") > 0).cast(pl.Int64).alias("k"))
    for (g, k), c in got.items():
        assert c == oracle.filter((pl.col("sex") == g) & (pl.col("k") == k)).height
    lab = next(x for x in run.labellings if x["name"] == "sign_predict")
    assert lab["n_rows"] == df.height
    assert lab["extras"]["assignment"] == {"rows_fitted": 500, "rows_assigned": df.height,
                                           "rows_not_assigned": {}}
    assert any("every one of the 6,000 rows was assigned" in n for n in lab["notes"])
    assert "assigned all 6,000 rows" in run.doc["input"]["sample"]["note"]


def test_fitted_preprocessors_are_applied_to_every_batch(xhost):
    df = _data()
    run = _run(xhost, df, ["sign_predict"], preprocess=["negate"])
    got = _counts(run, "sign_predict")
    oracle = df.with_columns((-pl.col("x1") > 0).cast(pl.Int64).alias("k"))
    for (g, k), c in got.items():
        assert c == oracle.filter((pl.col("sex") == g) & (pl.col("k") == k)).height


def test_a_clusterer_without_predict_keeps_its_sample_and_says_so(xhost):
    run = _run(xhost, _data(), ["sign", "sign_predict"])
    sign = next(x for x in run.labellings if x["name"] == "sign")
    assert sign["n_rows"] == 500
    assert any("cannot assign new rows" in n for n in sign["notes"])
    other = next(x for x in run.labellings if x["name"] == "sign_predict")
    assert other["n_rows"] == 6000


def test_batches_add_up_to_the_whole(xhost):
    import fairaudit.core.assign as A

    df = _data(3000)
    whole = _run(xhost, df, ["sign_predict"])
    old = A.BATCH_ROWS
    try:
        A.BATCH_ROWS = 700
        parts = _run(xhost, df, ["sign_predict"])
    finally:
        A.BATCH_ROWS = old
    assert _counts(whole, "sign_predict") == _counts(parts, "sign_predict")


def test_sum_joint_tables_equals_one_count():
    df = _data(1000).with_columns(pl.Series("k", np.arange(1000) % 3))
    parts = [joint_from_frame(df.slice(i, 250), label="k", sensitive=["sex"])
             for i in range(0, 1000, 250)]
    # a part where one group is missing: categories differ between parts
    parts.append(joint_from_frame(pl.DataFrame({"k": [0, 1], "sex": ["x", "x"]}), label="k",
                                  sensitive=["sex"]))
    total = sum_joint_tables(parts)
    ref = joint_from_frame(pl.concat([df.select("k", "sex"),
                                      pl.DataFrame({"k": [0, 1], "sex": ["x", "x"]})]),
                           label="k", sensitive=["sex"])
    assert total.categories == ref.categories
    np.testing.assert_array_equal(total.cluster, ref.cluster)
    np.testing.assert_array_equal(total.codes, ref.codes)
    np.testing.assert_array_equal(total.counts, ref.counts)
