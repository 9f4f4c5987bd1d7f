"""Issue 38: the assignment pass computes each batch's feature matrix and sensitive codes once
for every labelling, FairDen keeps its search structures between batches, and the labels stay
those of the straightforward path (kept here as the oracle: every step on fresh, unshared data,
names built row by row, trees rebuilt per call)."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairaudit.cluster._mr_assign import mutual_reachability_assign
from fairaudit.cluster.fairden import FairDen
from fairaudit.core.assign import FittedStep, assign_all_rows
from fairaudit.core.contingency import joint_from_frame, sum_joint_tables
from fairaudit.core.data import ROW_ID, AuditData, ColumnRoles, _codes
from fairaudit.errors import MissingArtifactError


# ------------------------------------------------------------------ the old paths (oracles)
def old_codes(column: pl.Series, order=None) -> tuple[np.ndarray, tuple[str, ...]]:
    """``AuditData.sensitive_codes`` before issue 38, for one column."""
    values = column.cast(str).to_numpy().astype(str)
    if order:
        lookup = {v: i for i, v in enumerate(order)}
        return np.array([lookup[v] for v in values], dtype=np.int64), tuple(order)
    uniq, inv = np.unique(values, return_inverse=True)
    return inv.astype(np.int64), tuple(str(u) for u in uniq)


def old_group_predict(est: FairDen, Xs: np.ndarray, S: np.ndarray) -> np.ndarray:
    """``FairDen.predict`` with groups before issue 38: names row by row, a tree per call."""
    mu = int(est.min_pts_)
    fit_groups = est._fit_groups
    names = np.asarray(["|".join(str(v) for v in row) for row in S.astype(object)],
                       dtype=object)
    out = np.empty(Xs.shape[0], dtype=np.int64)
    unseen = np.ones(Xs.shape[0], dtype=bool)
    for g in np.unique(fit_groups):
        rows = np.flatnonzero(names == g)
        if rows.size == 0:
            continue
        mine = np.flatnonzero(fit_groups == g)
        out[rows] = mutual_reachability_assign(
            est._fit_X[mine], est._fit_core[mine], est._fit_labels[mine], Xs[rows],
            min(mu, mine.size))
        unseen[rows] = False
    if unseen.any():
        out[unseen] = mutual_reachability_assign(est._fit_X, est._fit_core, est._fit_labels,
                                                 Xs[unseen], mu)
    return out


# ------------------------------------------------------------------ sensitive codes
_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                max_size=4)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), _text), min_size=1, max_size=40))
def test_codes_equal_numpy_unique_of_the_strings(values):
    col = pl.Series("s", values, dtype=pl.String)
    got, levels = _codes(col, None)
    want, want_levels = old_codes(col)
    assert levels == want_levels
    np.testing.assert_array_equal(got, want)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-3, 3), min_size=1, max_size=30), st.booleans())
def test_codes_of_numbers_and_declared_orders(values, ordinal):
    col = pl.Series("s", values)
    order = tuple(str(v) for v in sorted(set(values), reverse=True)) if ordinal else None
    got, levels = _codes(col, order)
    want, want_levels = old_codes(col, order)
    assert levels == want_levels
    np.testing.assert_array_equal(got, want)


def test_a_value_outside_the_declared_order_is_a_key_error_as_before():
    col = pl.Series("s", ["low", "high", "mid"])
    with pytest.raises(KeyError, match="mid"):
        _codes(col, ("low", "high"))
    with pytest.raises(KeyError, match="mid"):
        old_codes(col, ("low", "high"))


# ------------------------------------------------------------------ shared arrays
def _audit_data(n: int = 50) -> AuditData:
    rng = np.random.default_rng(1)
    frame = pl.DataFrame({ROW_ID: np.arange(n, dtype=np.uint32), "x": rng.normal(size=n),
                          "y": rng.integers(0, 5, n), "sex": rng.choice(["f", "m"], n)})
    return AuditData(frame=frame, roles=ColumnRoles(sensitive=("sex",), features=("x", "y")),
                     features=frame.select("x", "y"))


def test_shared_data_computes_its_arrays_once_and_lends_them_read_only():
    data = _audit_data()
    plain = data.feature_matrix()
    assert plain.flags.writeable and plain.flags.c_contiguous
    assert data.feature_matrix() is not plain  # unshared: fresh arrays, as before
    shared = data.shared()
    X = shared.feature_matrix()
    np.testing.assert_array_equal(X, plain)
    assert X.flags.c_contiguous and not X.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        X[0, 0] = 1.0
    assert shared.without_sensitive().feature_matrix() is X  # a view shares them
    codes = shared.sensitive_codes()
    assert shared.sensitive_codes() is codes and not codes.codes.flags.writeable
    with pytest.raises(MissingArtifactError):
        shared.without_sensitive().sensitive_codes()  # the view still hides the groups
    from fairaudit.core.data import Labelling

    lab = Labelling(name="k", labels=np.zeros(data.n_rows, dtype=np.int64), origin="clusterer")
    assert shared.with_labelling(lab).feature_matrix() is X
    # any other change is other data: nothing is shared
    other = shared.replace(features=data.features.with_columns(pl.col("x") * 2))
    np.testing.assert_array_equal(other.feature_matrix()[:, 0], 2 * plain[:, 0])
    assert shared.filter_rows(np.arange(data.n_rows) % 2 == 0, "t").feature_matrix().shape == (
        25, 2)


# ------------------------------------------------------------------ FairDen's group predict
def _blobs(n: int, seed: int):
    rng = np.random.default_rng(seed)
    c = rng.integers(0, 3, n)
    X = np.array([[0, 0, 0], [4, 0, 1], [0, 4, -1]], dtype=float)[c] + rng.normal(size=(n, 3))
    sex = (rng.random(n) < 0.4 + 0.2 * (c == 1)).astype(np.int64)
    race = rng.choice(3, n, p=[0.6, 0.3, 0.1])
    return X, np.column_stack([sex, race])


def test_fairden_group_predict_equals_the_old_path_batch_after_batch():
    X, S = _blobs(900, 0)
    est = FairDen(3, min_pts=7, random_state=0).fit(X, sensitive=S)
    assert est.rounding_ is not None  # the group-aware predict
    Xn, Sn = _blobs(2500, 1)
    Sn[:40, 1] = 7  # a group the fit never saw: matched with every fitted row
    for lo in range(0, 2500, 800):  # batches: the cached trees serve every call
        sl = slice(lo, lo + 800)
        np.testing.assert_array_equal(est.predict(Xn[sl], sensitive=Sn[sl]),
                                      old_group_predict(est, Xn[sl], Sn[sl]))
    # text groups take the row-by-row names, with the same result
    St = Sn.astype(str)
    np.testing.assert_array_equal(est.predict(Xn, sensitive=St),
                                  old_group_predict(est, Xn, St))
    # a new fit gets new search structures (the old ones belong to the old fitted rows)
    est.fit(X[::-1].copy(), sensitive=S[::-1].copy())
    np.testing.assert_array_equal(est.predict(Xn, sensitive=Sn),
                                  old_group_predict(est, Xn, Sn))


# ------------------------------------------------------------------ the whole pass
def _table(n: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    X, S = _blobs(n, seed)
    return pl.DataFrame({
        "a": X[:, 0], "b": X[:, 1], "c": X[:, 2],
        "job": rng.choice(["x", "y", "z"], n),
        "sex": np.array(["f", "m"])[S[:, 0]], "race": np.array(["p", "q", "r"])[S[:, 1]],
    })


def _fitted(sample: pl.DataFrame):
    from fairaudit_builtins.centroid import FFCMClusterer
    from fairaudit_builtins.clusterers import KMeansClusterer
    from fairaudit_builtins.encoding import EncodePreprocessor
    from fairaudit_builtins.fairden import FairDenClusterer

    frame = sample.with_row_index(ROW_ID)
    roles = ColumnRoles(sensitive=("sex", "race"), features=("a", "b", "c", "job"))
    template = AuditData(frame=frame, roles=roles, features=frame.select(roles.features))
    enc = EncodePreprocessor()
    data = enc.fit_transform(template.without_sensitive()).replace(include_sensitive=True)
    pre = [FittedStep("encode", enc, False, "encode")]
    clu = []
    for name, comp, sees in [
        ("kmeans", KMeansClusterer(n_clusters=3, random_state=0), False),
        ("fairden", FairDenClusterer(n_clusters=3, min_pts=7, random_state=0), True),
        ("fairden-unfair", FairDenClusterer(n_clusters=3, min_pts=7, random_state=0,
                                            fair=False), True),
        ("ffcm", FFCMClusterer(n_clusters=3, random_state=0), True),
    ]:
        comp.fit(data if sees else data.without_sensitive())
        clu.append(FittedStep(name, comp, sees, name.split("-")[0]))
    return template, pre, clu


def _cells(joint) -> dict:
    """A joint table as {(cluster, group names...): rows} (independent of the cells' order)."""
    return {
        (int(k), *(joint.categories[a][int(c)] for a, c in enumerate(row))): int(n)
        for k, row, n in zip(joint.cluster, joint.codes, joint.counts, strict=True) if n
    }


def test_the_pass_counts_what_each_predict_on_fresh_data_gives():
    """The oracle of the pass: each labelling's predict on the whole table, on fresh data (no
    shared arrays, no batches), counted at once — the same tables, cell by cell."""
    df = _table(3000, 2)
    template, pre, clu = _fitted(df.head(700))
    res = assign_all_rows(df.lazy(), template, pre, clu, batch_rows=900)
    assert res.rows_assigned == df.height
    frame = df.with_row_index(ROW_ID)
    base = dataclasses.replace(template, frame=frame, features=frame.select(
        list(template.roles.features)))
    for step in pre:
        base = step.component.transform(base.without_sensitive()).replace(include_sensitive=True)
    for step in clu:
        view = base if step.sees_sensitive else base.without_sensitive()
        labels = np.asarray(step.component.predict(view), dtype=np.int64)
        want = joint_from_frame(frame, label=None, sensitive=("sex", "race"), ordinal={},
                                labels_array=labels)
        assert _cells(res.joints[step.label]) == _cells(want), step.label
    # --timing's parts of the pass: reading, preparing, and each labelling's predict and count
    parts = set(res.seconds)
    assert {("read", None), ("prepare", None)} <= parts
    assert {("predict", s.label) for s in clu} | {("count", s.label) for s in clu} <= parts
    assert all(v >= 0 for v in res.seconds.values())


def test_batches_of_the_pass_add_up_like_one_count():
    df = _table(1200, 3)
    template, pre, clu = _fitted(df.head(500))
    one = assign_all_rows(df.lazy(), template, pre, clu, batch_rows=10_000)
    many = assign_all_rows(df.lazy(), template, pre, clu, batch_rows=250)
    for name, joint in one.joints.items():
        assert _cells(joint) == _cells(many.joints[name]), name
    assert sum_joint_tables([one.joints["kmeans"]]).n == df.height


def test_ffcm_predict_with_a_group_the_fit_never_saw_equals_the_old_formula():
    df = _table(1500, 4)
    template, pre, clu = _fitted(df.head(600))
    ffcm = next(s.component for s in clu if s.label == "ffcm")
    new = df.tail(400).with_columns(
        pl.when(pl.int_range(pl.len()) < 50).then(pl.lit("unseen")).otherwise(pl.col("race"))
        .alias("race"))
    frame = new.with_row_index(ROW_ID)
    data = dataclasses.replace(template, frame=frame, features=frame.select(
        list(template.roles.features)))
    data = pre[0].component.transform(data.without_sensitive()).replace(include_sensitive=True)
    from fairaudit_builtins.centroid import _fitted_codes

    est = ffcm.estimator_
    X = data.feature_matrix()
    want = est.predict(X).astype(np.int64)  # the old formula: every row, then the known ones
    codes = _fitted_codes(data, ffcm._categories)
    known = (codes >= 0).all(axis=1)
    assert 0 < known.sum() < known.size
    want[known] = est.predict(X[known], sensitive=codes[known])
    np.testing.assert_array_equal(ffcm.predict(data), want)
    np.testing.assert_array_equal(ffcm.predict(data.shared()), want)
