"""The one group-by behind the counting metrics: joint tables, marginals, nulls, bootstrap.

Expected tables are counted by hand (or, for the property tests, with plain Python counters),
never by the code under test.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairaudit.core.contingency import joint_from_frame, resample_joint
from fairaudit.errors import InputError

# 10 rows: cluster, sex, race
ROWS = [
    (0, "F", "a"),
    (0, "F", "a"),
    (0, "M", "b"),
    (0, "F", "b"),
    (1, "M", "a"),
    (1, "M", "a"),
    (1, "M", "b"),
    (1, "F", "a"),
    (-1, "F", "b"),  # noise
    (-1, "M", "a"),  # noise
]


def _frame(rows=ROWS) -> pl.DataFrame:
    c, s, r = zip(*rows, strict=True)
    return pl.DataFrame({"seg": list(c), "sex": list(s), "race": list(r)})


def _as_dict(table) -> dict[tuple[str, int], int]:
    return {
        (g, k): int(table.counts[i, j])
        for i, g in enumerate(table.groups)
        for j, k in enumerate(table.clusters)
    }


def test_hand_computed_single_attribute_table():
    joint = joint_from_frame(_frame(), label="seg", sensitive=["sex"])
    t = joint.table("sex")
    assert t.groups == ("F", "M")
    assert t.clusters == (0, 1)
    # cluster 0: F F M F -> F 3, M 1; cluster 1: M M M F -> F 1, M 3
    assert t.counts.tolist() == [[3, 1], [1, 3]]
    assert t.noise.tolist() == [1, 1]
    assert t.n == 8 and t.n_noise == 2
    assert joint.attribute_names == ("sex",)
    assert joint.null_rows == 0


def test_hand_computed_marginals_and_intersection():
    joint = joint_from_frame(_frame(), label="seg", sensitive=["sex", "race"])
    assert joint.attribute_names == ("sex", "race", "sex|race")
    assert joint.n == 10  # noise cells included in the joint table
    tables = joint.tables()
    assert _as_dict(tables["sex"]) == {("F", 0): 3, ("F", 1): 1, ("M", 0): 1, ("M", 1): 3}
    # race: cluster 0: a a b b; cluster 1: a a b a
    assert _as_dict(tables["race"]) == {("a", 0): 2, ("a", 1): 3, ("b", 0): 2, ("b", 1): 1}
    inter = tables["sex|race"]
    assert _as_dict(inter) == {
        ("F|a", 0): 2, ("F|a", 1): 1,
        ("F|b", 0): 1, ("F|b", 1): 0,
        ("M|a", 0): 0, ("M|a", 1): 2,
        ("M|b", 0): 1, ("M|b", 1): 1,
    }  # fmt: skip
    assert dict(zip(inter.groups, inter.noise.tolist(), strict=True)) == {
        "F|a": 0, "F|b": 1, "M|a": 1, "M|b": 0,
    }  # fmt: skip
    # group sizes include noise rows
    assert joint.group_sizes("sex") == {"F": 5, "M": 5}
    assert joint.group_sizes("sex|race") == {"F|a": 3, "F|b": 2, "M|a": 3, "M|b": 2}
    # every attribute's table counts the same rows per cluster
    for t in tables.values():
        assert t.counts.sum(axis=0).tolist() == [4, 4]


def test_nulls_are_counted_and_left_out():
    rows = [*ROWS, (0, None, "a"), (1, "F", None), (None, "M", "b")]
    c, s, r = zip(*rows, strict=True)
    frame = pl.DataFrame({"seg": list(c), "sex": list(s), "race": list(r)})
    joint = joint_from_frame(frame, label="seg", sensitive=["sex", "race"])
    assert joint.null_rows == 3
    assert joint.n == 10
    assert _as_dict(joint.table("sex")) == {("F", 0): 3, ("F", 1): 1, ("M", 0): 1, ("M", 1): 3}


def test_lazy_and_eager_inputs_agree_and_labels_array_matches_a_column():
    frame = _frame()
    a = joint_from_frame(frame.lazy(), label="seg", sensitive=["sex", "race"])
    b = joint_from_frame(
        frame.drop("seg"), label=None, sensitive=["sex", "race"],
        labels_array=frame.get_column("seg").to_numpy(),
    )  # fmt: skip
    for name in a.attribute_names:
        assert _as_dict(a.table(name)) == _as_dict(b.table(name))


def test_no_labels_gives_group_sizes_in_one_cluster():
    joint = joint_from_frame(_frame(), label=None, sensitive=["sex"])
    t = joint.table("sex")
    assert t.clusters == (0,)
    assert t.counts[:, 0].tolist() == [5, 5]


def test_ordinal_order_is_kept_and_unknown_values_are_named():
    frame = pl.DataFrame({"seg": [0, 0, 1, 1], "age": ["old", "young", "mid", "young"]})
    joint = joint_from_frame(
        frame, label="seg", sensitive=["age"], ordinal={"age": ["young", "mid", "old"]}
    )
    t = joint.table("age")
    assert t.groups == ("young", "mid", "old")
    assert t.ordinal
    assert t.counts.tolist() == [[1, 1], [0, 1], [1, 0]]
    with pytest.raises(InputError, match="age") as exc:
        joint_from_frame(frame, label="seg", sensitive=["age"], ordinal={"age": ["young", "old"]})
    assert "mid" in str(exc.value)


def test_float_labels_that_are_integral_are_accepted():
    frame = _frame().with_columns(pl.col("seg").cast(pl.Float64))
    joint = joint_from_frame(frame, label="seg", sensitive=["sex"])
    assert joint.table("sex").counts.tolist() == [[3, 1], [1, 3]]


@pytest.mark.parametrize(
    ("values", "dtype"),
    [([0.5, 1.0, 0.0], pl.Float64), ([1.0, float("nan"), 0.0], pl.Float64),
     ([[1], [2], [1]], pl.List(pl.Int64))],
)
def test_non_integral_labels_are_refused_naming_the_column(values, dtype):
    frame = pl.DataFrame({"my_labels": pl.Series(values, dtype=dtype), "sex": ["F", "M", "F"]})
    with pytest.raises(InputError, match="my_labels"):
        joint_from_frame(frame, label="my_labels", sensitive=["sex"])


@pytest.mark.parametrize("dtype", [pl.String, pl.Categorical])
def test_named_labels_get_ids_in_name_order_and_minus_one_is_noise(dtype):
    frame = pl.DataFrame({"seg": pl.Series(["b", "a", "-1", "b", None], dtype=pl.String)
                          .cast(dtype), "sex": ["F", "M", "F", "M", "F"]})
    joint = joint_from_frame(frame, label="seg", sensitive=["sex"])
    assert joint.cluster_names == ("a", "b")
    assert joint.null_rows == 1
    t = joint.table("sex")
    assert t.clusters == (0, 1)
    assert t.counts.tolist() == [[0, 1], [1, 1]]  # F: a=0, b=1; M: a=1, b=1
    assert t.noise.tolist() == [1, 0]


def test_integer_labels_have_no_names():
    assert joint_from_frame(_frame(), label="seg", sensitive=["sex"]).cluster_names is None


def test_labels_below_minus_one_are_refused():
    frame = pl.DataFrame({"seg": [0, -2, 1], "sex": ["F", "M", "F"]})
    with pytest.raises(InputError, match="-2"):
        joint_from_frame(frame, label="seg", sensitive=["sex"])


def test_cell_order_is_canonical():
    """The same rows in another order give the identical joint table."""
    frame = _frame()
    a = joint_from_frame(frame, label="seg", sensitive=["sex", "race"])
    b = joint_from_frame(frame.reverse(), label="seg", sensitive=["sex", "race"])
    assert np.array_equal(a.cluster, b.cluster)
    assert np.array_equal(a.codes, b.codes)
    assert np.array_equal(a.counts, b.counts)


# ----------------------------------------------------------------------- property tests
_rows = st.lists(
    st.tuples(
        st.integers(-1, 3),
        st.sampled_from(["F", "M", "X"]),
        st.sampled_from(["a", "b"]),
    ),
    min_size=1,
    max_size=60,
)


def _counter(rows, which: int | None) -> Counter:
    out: Counter = Counter()
    for c, s, r in rows:
        if c < 0:
            continue
        g = {0: s, 1: r, None: f"{s}|{r}"}[which]
        out[(g, c)] += 1
    return out


def _nonzero(d: dict) -> dict:
    return {k: v for k, v in d.items() if v}


@settings(max_examples=60, deadline=None)
@given(rows=_rows)
def test_tables_match_a_plain_python_count(rows):
    joint = joint_from_frame(_frame(rows), label="seg", sensitive=["sex", "race"])
    assert joint.n == len(rows)
    for which, name in ((0, "sex"), (1, "race"), (None, "sex|race")):
        expected = _counter(rows, which)
        if not expected:
            assert joint.table(name).counts.size == 0
            continue
        assert _nonzero(_as_dict(joint.table(name))) == dict(expected)


def _cells(joint) -> Counter:
    """Joint cells by name: (cluster, group of each attribute) -> count, noise included."""
    out: Counter = Counter()
    for k, codes, n in zip(joint.cluster, joint.codes, joint.counts, strict=True):
        names = tuple(joint.categories[j][int(c)] for j, c in enumerate(codes))
        out[(int(k), *names)] += int(n)
    return out


@settings(max_examples=60, deadline=None)
@given(rows=_rows, cut=st.integers(0, 60))
def test_tables_of_partitions_add_up_to_the_whole(rows, cut):
    cut = min(cut, len(rows))
    parts = [p for p in (rows[:cut], rows[cut:]) if p]
    whole = joint_from_frame(_frame(rows), label="seg", sensitive=["sex", "race"])
    joints = [joint_from_frame(_frame(p), label="seg", sensitive=["sex", "race"]) for p in parts]
    # the joint table (noise cells included) of the whole is the sum of the parts'
    assert _cells(whole) == sum((_cells(j) for j in joints), Counter())
    for name in whole.attribute_names:
        total: Counter = Counter()
        sizes: Counter = Counter()
        for j in joints:
            total.update(_nonzero(_as_dict(j.table(name))))
            sizes.update(j.group_sizes(name))
        # every attribute's group x cluster table (noise apart) adds up, and so do group sizes
        assert _nonzero(_as_dict(whole.table(name))) == dict(total)
        assert whole.group_sizes(name) == dict(sizes)


@settings(max_examples=40, deadline=None)
@given(rows=_rows, seed=st.integers(0, 2**32 - 1))
def test_bootstrap_counts_marginals_match_the_resampled_cells(rows, seed):
    joint = joint_from_frame(_frame(rows), label="seg", sensitive=["sex", "race"])
    B = 7
    res = resample_joint(joint, B, np.random.default_rng(seed))
    assert res.shape == (B, joint.counts.size)
    clean = joint.cluster >= 0
    # noise cells are kept as observed; non-noise cells keep their total
    assert np.array_equal(res[:, ~clean], np.tile(joint.counts[~clean], (B, 1)))
    assert (res[:, clean].sum(axis=1) == joint.counts[clean].sum()).all()
    for name in joint.attribute_names:
        observed = joint.table(name)
        boot = joint.bootstrap_counts(name, res)
        assert boot.shape == (B, len(observed.groups), len(observed.clusters))
        for j, k in enumerate(observed.clusters):
            cells_k = res[:, clean & (joint.cluster == k)].sum(axis=1)
            assert np.array_equal(boot[:, :, j].sum(axis=1), cells_k)
        # replicate with the observed counts gives back the observed table
        same = joint.bootstrap_counts(name, joint.counts[None, :])
        assert np.array_equal(same[0], observed.counts)


def test_bootstrap_is_seeded():
    joint = joint_from_frame(_frame(), label="seg", sensitive=["sex", "race"])
    a = resample_joint(joint, 20, np.random.default_rng(5))
    b = resample_joint(joint, 20, np.random.default_rng(5))
    c = resample_joint(joint, 20, np.random.default_rng(6))
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_partitions_of_named_labels_add_up_by_name():
    from fairaudit.core.contingency import sum_joint_tables

    a = pl.DataFrame({"seg": ["b", "c", "-1"], "sex": ["F", "M", "F"]})
    b = pl.DataFrame({"seg": ["a", "b", "b"], "sex": ["F", "M", "F"]})
    parts = [joint_from_frame(f, label="seg", sensitive=["sex"]) for f in (a, b)]
    total = sum_joint_tables(parts)
    whole = joint_from_frame(pl.concat([a, b]), label="seg", sensitive=["sex"])
    assert total.cluster_names == whole.cluster_names == ("a", "b", "c")
    assert total.table("sex").counts.tolist() == whole.table("sex").counts.tolist()
    assert total.table("sex").noise.tolist() == whole.table("sex").noise.tolist()


def test_joint_from_slices_equals_one_group_by(tmp_path):
    """Counting a Parquet input slice by slice (for the rows-read progress) gives the same
    table as one group-by: null keys, named labels, no labels."""
    import numpy as np
    import polars as pl

    from fairaudit.core.contingency import joint_from_frame, joint_from_slices

    rng = np.random.default_rng(3)
    n = 1_003
    sex = np.array(["f", "m", None], dtype=object)[rng.choice(3, n, p=[0.45, 0.5, 0.05])]
    frame = pl.DataFrame({
        "seg": np.array(["low", "mid", "high", "-1"])[rng.integers(0, 4, n)],
        "k": rng.integers(-1, 5, n),
        "sex": list(sex),
        "race": np.array(["a", "b", "c"])[rng.integers(0, 3, n)],
    })
    path = tmp_path / "t.parquet"
    frame.write_parquet(path, row_group_size=100)
    for label in ("seg", "k", None):
        seen: list[int] = []
        one = joint_from_frame(pl.scan_parquet(path), label=label, sensitive=["sex", "race"])
        sliced = joint_from_slices(pl.scan_parquet(path), n, label=label,
                                   sensitive=["sex", "race"], slice_rows=97,
                                   on_rows=seen.append)
        for f in ("attributes", "categories", "null_rows", "cluster_names"):
            assert getattr(one, f) == getattr(sliced, f), (label, f)
        for f in ("cluster", "codes", "counts"):
            np.testing.assert_array_equal(getattr(one, f), getattr(sliced, f))
        assert one.n + one.null_rows == n
        assert seen[-1] == n and seen == sorted(seen) and len(seen) == 11
