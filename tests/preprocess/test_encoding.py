"""Tests for fairaudit.preprocess.encoding.CategoricalEncoder.

The oracle is a plain-Python encoder written from the specification (row loops, dict counts), so
the fast polars expressions are checked against an independent implementation.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairaudit.preprocess import CategoricalEncoder
from fairaudit.preprocess.encoding import OTHER_LEVEL


def oracle_encode(
    df: pl.DataFrame,
    cats: list[str],
    ordinal: dict[str, list],
    max_levels: int,
    min_frequency: float,
    standardize: bool = True,
) -> dict[str, list[float]]:
    """Reference encoder from the spec, row by row."""
    n = df.height
    out: dict[str, list[float]] = {}
    for col in df.columns:
        values = df.get_column(col).to_list()
        if col in ordinal:
            codes = [float(ordinal[col].index(v)) for v in values]
            mean = sum(codes) / n
            std = math.sqrt(sum((c - mean) ** 2 for c in codes) / n)
            if std == 0:
                continue
            if standardize:
                codes = [(c - mean) / std for c in codes]
            out[col] = codes
        elif col in cats:
            keys = [str(v).lower() if isinstance(v, bool) else str(v) for v in values]
            counts = Counter(keys)
            if len(counts) <= 1:
                continue
            by_freq = sorted(counts, key=lambda lv: (-counts[lv], lv))
            rare = {lv for lv in by_freq if counts[lv] < min_frequency * n}
            if len(rare) == 1 and len(by_freq) <= max_levels:
                rare = set()
            kept = [lv for lv in by_freq if lv not in rare]
            if len(kept) + (1 if rare else 0) > max_levels:
                kept = kept[: max_levels - 1]
                rare = set(by_freq) - set(kept)
            levels = sorted(kept) + ([OTHER_LEVEL] if rare else [])
            if len(levels) <= 1:
                continue
            for lv in levels:
                if lv == OTHER_LEVEL:
                    out[f"{col}={lv}"] = [1.0 if k in rare else 0.0 for k in keys]
                else:
                    out[f"{col}={lv}"] = [1.0 if k == lv else 0.0 for k in keys]
        else:
            xs = [float(v) for v in values]
            mean = sum(xs) / n
            std = math.sqrt(sum((x - mean) ** 2 for x in xs) / n)
            if max(xs) == min(xs):
                continue
            out[col] = [(x - mean) / std for x in xs] if standardize else xs
    return out


@pytest.fixture
def table() -> pl.DataFrame:
    rng = np.random.default_rng(0)
    n = 2000
    return pl.DataFrame(
        {
            "colour": rng.choice(["red", "green", "blue"], n, p=[0.5, 0.3, 0.2]),
            "income": rng.lognormal(size=n),
            "kind": pl.Series(rng.choice(["p", "q"], n)).cast(pl.Categorical),
            "flag": rng.random(n) < 0.3,
            "edu": rng.choice(["low", "mid", "high"], n),
            "age": rng.integers(18, 90, n),
            "zip": np.where(
                rng.random(n) < 0.96,
                rng.choice(["z1", "z2"], n),
                rng.choice([f"r{i}" for i in range(40)], n),
            ),
        }
    )


def test_matches_oracle_on_mixed_table(table: pl.DataFrame) -> None:
    ordinal = {"edu": ["low", "mid", "high"]}
    enc = CategoricalEncoder(ordinal=ordinal, min_frequency=0.01)
    got = enc.fit_transform(table)
    expected = oracle_encode(table, ["colour", "kind", "flag", "zip"], ordinal, 50, 0.01)
    assert list(got.columns) == list(expected)
    assert enc.feature_names_out_ == tuple(expected)
    for name, values in expected.items():
        np.testing.assert_allclose(got.get_column(name).to_numpy(), values, atol=1e-9)
    assert all(dtype == pl.Float64 for dtype in got.schema.values())
    assert got.null_count().row(0) == (0,) * got.width


def test_fitted_attributes(table: pl.DataFrame) -> None:
    enc = CategoricalEncoder(ordinal={"edu": ["low", "mid", "high"]}).fit(table)
    assert enc.categorical_columns_ == ("colour", "kind", "flag", "zip")
    assert enc.numeric_columns_ == ("income", "age")
    assert enc.ordinal_columns_ == ("edu",)
    for name, source in enc.source_columns_.items():
        assert name == source or name.startswith(source + "=")
    assert set(enc.source_columns_) == set(enc.feature_names_out_)
    # every zip level outside z1/z2 is rare (each < 1 %): all of them merged
    seen = set(table.get_column("zip").unique().to_list())
    assert set(enc.bucketed_["zip"]) == seen - {"z1", "z2"}
    assert enc.levels_["zip"] == ("z1", "z2", OTHER_LEVEL)
    assert any("zip" in note and OTHER_LEVEL in note for note in enc.notes_)
    assert enc.levels_["flag"] == ("false", "true")


def test_one_hot_blocks_sum_to_one_and_numeric_standardised(table: pl.DataFrame) -> None:
    enc = CategoricalEncoder()
    got = enc.fit_transform(table)
    for col in enc.categorical_columns_:
        block = got.select([n for n, s in enc.source_columns_.items() if s == col]).to_numpy()
        np.testing.assert_array_equal(block.sum(axis=1), 1.0)
        assert set(np.unique(block)) <= {0.0, 1.0}
    for col in enc.numeric_columns_:
        x = got.get_column(col).to_numpy()
        assert abs(x.mean()) < 1e-9 and abs(x.std() - 1.0) < 1e-9


def test_max_levels_caps_columns() -> None:
    n = 3000
    rng = np.random.default_rng(1)
    # thousands of levels, all frequent enough for min_frequency=0 -> max_levels must cap
    df = pl.DataFrame({"id_like": [f"v{i}" for i in rng.integers(0, 1500, n)], "x": rng.random(n)})
    enc = CategoricalEncoder(max_levels=10, min_frequency=0.0).fit(df)
    assert len(enc.levels_["id_like"]) == 10
    assert enc.levels_["id_like"][-1] == OTHER_LEVEL
    assert len(enc.bucketed_["id_like"]) == df.get_column("id_like").n_unique() - 9
    got = enc.transform(df)
    expected = oracle_encode(df, ["id_like"], {}, 10, 0.0)
    assert list(got.columns) == list(expected)
    for name, values in expected.items():
        np.testing.assert_allclose(got.get_column(name).to_numpy(), values, atol=1e-9)
    assert any("id_like" in note for note in enc.notes_)


def test_single_rare_level_is_kept() -> None:
    df = pl.DataFrame({"c": ["a"] * 500 + ["b"] * 499 + ["rare"], "x": np.arange(1000.0)})
    enc = CategoricalEncoder(min_frequency=0.01).fit(df)
    assert enc.levels_["c"] == ("a", "b", "rare")
    assert enc.bucketed_ == {}


def test_drops_uninformative_columns_with_notes() -> None:
    df = pl.DataFrame(
        {
            "one": ["u"] * 10,
            "const": [3.0] * 10,
            "ordc": ["lo"] * 10,
            "x": np.arange(10.0),
        }
    )
    enc = CategoricalEncoder(ordinal={"ordc": ["lo", "hi"]}).fit(df)
    assert enc.feature_names_out_ == ("x",)
    assert set(enc.dropped_columns_) == {"one", "const", "ordc"}
    assert len(enc.notes_) == 3
    for col in ("one", "const", "ordc"):
        assert any(f"'{col}'" in note for note in enc.notes_)


def test_explicit_categorical_list_encodes_integers() -> None:
    df = pl.DataFrame({"occ": [1, 2, 3, 1, 2, 3], "x": [0.0, 1, 2, 3, 4, 5]})
    enc = CategoricalEncoder(categorical=["occ"], min_frequency=0.0)
    got = enc.fit_transform(df)
    assert enc.feature_names_out_ == ("occ=1", "occ=2", "occ=3", "x")
    np.testing.assert_array_equal(got.get_column("occ=2").to_numpy(), [0, 1, 0, 0, 1, 0])


def test_ordinal_numeric_column_and_no_standardize() -> None:
    df = pl.DataFrame({"grade": [10, 20, 30, 20], "x": [1.0, 2.0, 3.0, 5.0]})
    enc = CategoricalEncoder(ordinal={"grade": [10, 20, 30]}, standardize=False)
    got = enc.fit_transform(df)
    np.testing.assert_array_equal(got.get_column("grade").to_numpy(), [0, 1, 2, 1])
    np.testing.assert_array_equal(got.get_column("x").to_numpy(), [1, 2, 3, 5])


def test_unseen_levels_go_to_other_or_raise() -> None:
    train = pl.DataFrame({"c": ["a"] * 60 + ["b"] * 38 + ["r1", "r2"], "x": np.arange(100.0)})
    enc = CategoricalEncoder(min_frequency=0.05).fit(train)
    assert enc.levels_["c"] == ("a", "b", OTHER_LEVEL)
    got = enc.transform(pl.DataFrame({"c": ["new", "a"], "x": [0.0, 1.0]}))
    np.testing.assert_array_equal(got.get_column("c=__other__").to_numpy(), [1, 0])
    enc2 = CategoricalEncoder(min_frequency=0.0).fit(train)
    with pytest.raises(ValueError, match=r"'c'.*not seen in fit.*'new'"):
        enc2.transform(pl.DataFrame({"c": ["new", "a"], "x": [0.0, 1.0]}))


def test_categorical_dtype_with_different_dictionary_at_transform() -> None:
    train = pl.DataFrame({"c": pl.Series(["a", "b", "c", "a"]).cast(pl.Categorical)})
    test = pl.DataFrame({"c": pl.Series(["c", "c", "a"]).cast(pl.Categorical)})
    enc = CategoricalEncoder(min_frequency=0.0).fit(train)
    got = enc.transform(test)
    np.testing.assert_array_equal(got.to_numpy(), [[0, 0, 1], [0, 0, 1], [1, 0, 0]])


@pytest.mark.parametrize(
    ("frame", "match"),
    [
        (pl.DataFrame({"c": ["a", None, "b"], "x": [1.0, 2.0, 3.0]}), r"'c' \(1 nulls\)"),
        (pl.DataFrame({"c": ["a", "b", "b"], "x": [1.0, None, 3.0]}), r"'x' \(1 nulls\)"),
        (pl.DataFrame({"c": ["a", "b", "b"], "x": [1.0, float("nan"), 3.0]}), r"non-finite.*'x'"),
        (pl.DataFrame({"c": ["a", "b", "b"], "x": [1.0, float("inf"), 3.0]}), r"non-finite.*'x'"),
    ],
)
def test_bad_values_raise_naming_column(frame: pl.DataFrame, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        CategoricalEncoder().fit(frame)


def test_transform_checks_nulls_and_finite() -> None:
    enc = CategoricalEncoder().fit(pl.DataFrame({"x": [1.0, 2.0, 3.0]}))
    with pytest.raises(ValueError, match=r"non-finite.*'x'"):
        enc.transform(pl.DataFrame({"x": [1.0, float("nan")]}))
    with pytest.raises(ValueError, match=r"'x' \(1 nulls\)"):
        enc.transform(pl.DataFrame({"x": [1.0, None]}))
    with pytest.raises(ValueError, match=r"missing"):
        enc.transform(pl.DataFrame({"y": [1.0]}))


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"max_levels": 1}, "'max_levels' parameter of CategoricalEncoder must be an int >= 2"),
        ({"min_frequency": 1.5}, "'min_frequency' parameter"),
        ({"categorical": "all"}, "'categorical' parameter"),
        ({"categorical": ["nope"]}, "names column 'nope'"),
        ({"ordinal": {"nope": ["a"]}}, "names column 'nope'"),
        ({"ordinal": {"c": []}}, "non-empty list"),
        ({"ordinal": {"c": ["a", "b"]}, "categorical": ["c"]}, "both 'categorical' and 'ordinal'"),
    ],
)
def test_bad_params(params: dict, match: str) -> None:
    df = pl.DataFrame({"c": ["a", "b"], "x": [1.0, 2.0]})
    with pytest.raises(ValueError, match=match):
        CategoricalEncoder(**params).fit(df)


def test_ordinal_unknown_value_raises() -> None:
    df = pl.DataFrame({"edu": ["low", "phd"], "x": [1.0, 2.0]})
    with pytest.raises(ValueError, match=r"'edu'.*not among its declared levels.*'phd'"):
        CategoricalEncoder(ordinal={"edu": ["low", "high"]}).fit(df)


def test_unsupported_dtype_and_reserved_level() -> None:
    from datetime import date

    with pytest.raises(ValueError, match=r"'d' has dtype Date"):
        CategoricalEncoder().fit(pl.DataFrame({"d": [date(2020, 1, 1)], "x": [1.0]}))
    with pytest.raises(ValueError, match="reserved"):
        CategoricalEncoder().fit(pl.DataFrame({"c": ["__other__", "a"]}))


def test_init_stores_params_verbatim() -> None:
    ordinal = {"a": ["x", "y"]}
    enc = CategoricalEncoder(ordinal=ordinal, max_levels=7)
    assert enc.ordinal is ordinal and enc.max_levels == 7
    assert not [k for k in vars(enc) if k.endswith("_")]
    with pytest.raises(ValueError, match="not fitted"):
        enc.transform(pl.DataFrame({"a": ["x"]}))


_level = st.sampled_from(["a", "b", "c", "d", "e", "f"])


@settings(max_examples=60, deadline=None)
@given(
    cat1=st.lists(_level, min_size=1, max_size=60),
    data=st.data(),
    max_levels=st.integers(2, 6),
    min_frequency=st.sampled_from([0.0, 0.05, 0.2, 0.4]),
    standardize=st.booleans(),
)
def test_property_matches_oracle(cat1, data, max_levels, min_frequency, standardize) -> None:
    n = len(cat1)
    cat2 = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    num = data.draw(st.lists(st.integers(-5, 5).map(float), min_size=n, max_size=n))
    df = pl.DataFrame({"c1": cat1, "c2": cat2, "x": num})
    enc = CategoricalEncoder(
        max_levels=max_levels, min_frequency=min_frequency, standardize=standardize
    )
    expected = oracle_encode(df, ["c1", "c2"], {}, max_levels, min_frequency, standardize)
    if not expected:
        with pytest.raises(ValueError, match="every column was dropped"):
            enc.fit(df)
        return
    got = enc.fit_transform(df)
    assert list(got.columns) == list(expected)
    for name, values in expected.items():
        np.testing.assert_allclose(got.get_column(name).to_numpy(), values, atol=1e-9)
    assert len(enc.levels_.get("c1", ())) <= max_levels
    # transform on the same data equals fit_transform
    assert enc.transform(df).equals(got)


def test_encode_plugin_adapter() -> None:
    from fairaudit_builtins.encoding import EncodePreprocessor

    from fairaudit.testing import check_component, make_data

    check_component(EncodePreprocessor)
    data = make_data()
    data = data.replace(features=data.frame.select("x0", "x1", "race"))
    step = EncodePreprocessor(min_frequency=0.0)
    out = step.fit_transform(data)
    assert out.features.columns == ["x0", "x1", "race=a", "race=b", "race=c"]
    assert step.report_["source_columns"]["race=b"] == "race"
    assert data.features.columns == ["x0", "x1", "race"]  # input untouched


def test_standardisation_does_not_depend_on_the_frames_chunks():
    """The same rows in one chunk or in many (a sample read by polars' streaming engine comes
    in chunks that vary from run to run) give bit-identical means and scales: the audit's
    numbers must not change between two runs of the same audit."""
    import numpy as np
    import polars as pl

    from fairaudit.preprocess.encoding import CategoricalEncoder

    rng = np.random.default_rng(4)
    n = 50_000
    df = pl.DataFrame({"a": rng.normal(1e6, 3.0, n), "b": rng.exponential(0.1, n) * 1e-3,
                       "c": rng.integers(0, 10**9, n), "g": rng.choice(["x", "y", "z"], n)})
    one = CategoricalEncoder().fit(df.rechunk())
    for cuts in ([7, 12_000, 31_001], list(range(0, n, 997))[1:]):
        bounds = [0, *cuts, n]
        parts = pl.concat([df.slice(a, b - a) for a, b in zip(bounds[:-1], bounds[1:], strict=True)],
                          rechunk=False)
        assert parts.n_chunks() == len(bounds) - 1
        many = CategoricalEncoder().fit(parts)
        assert many.means_ == one.means_ and many.scales_ == one.scales_
        values = df.get_column("a").to_numpy()
        assert one.means_["a"] == float(values.mean()) and one.scales_["a"] == float(values.std())
