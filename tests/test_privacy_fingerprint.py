"""The privacy ledger's fingerprint and sketch (fairaudit.privacy.fingerprint) against their
exact counterparts: the fingerprint against the sorted multiset of the audited rows' values,
the sketch's overlap against the exact share of common values."""

from __future__ import annotations

import io

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairaudit.privacy import fingerprint as fpm
from fairaudit.privacy.fingerprint import (
    ColumnSketch,
    fingerprint_frame,
    hash_values,
    overlap,
)


def content(df, cols) -> str:
    return fingerprint_frame(df.lazy(), cols, sketch=False).content


def exact_rows(df: pl.DataFrame, cols) -> list[tuple]:
    """The exact counterpart: the sorted rows of the audited columns, each value as what it is
    (an integral number as int, NaN as None)."""
    def value(v):
        if isinstance(v, float):
            if v != v:
                return None
            if v == int(v):
                return ("n", int(v))
            return ("f", v)
        if isinstance(v, bool):
            return ("n", int(v))
        if isinstance(v, int):
            return ("n", v)
        return ("t", v) if v is not None else None
    rows = [tuple(value(v) for v in r) for r in df.select(cols).iter_rows()]
    return sorted(rows, key=repr)


small_tables = st.lists(
    st.tuples(st.sampled_from(["a", "b", "ab", "", None]), st.integers(0, 3),
              st.sampled_from([0.0, 1.0, 2.5, float("nan"), None])),
    min_size=0, max_size=12)


@settings(max_examples=150, deadline=None)
@given(small_tables, small_tables)
def test_equal_fingerprints_exactly_when_the_audited_multisets_are_equal(a, b):
    """Drawn from a tiny domain, pairs of tables often hold the same rows in another order: the
    fingerprints agree exactly when the sorted rows do."""
    def frame(rows):
        return pl.DataFrame(rows, schema={"g": pl.String, "c": pl.Int64, "x": pl.Float64},
                            orient="row")
    fa, fb = frame(a), frame(b)
    cols = ["g", "c", "x"]
    assert (content(fa, cols) == content(fb, cols)) == (exact_rows(fa, cols) ==
                                                         exact_rows(fb, cols))


@settings(max_examples=60, deadline=None)
@given(small_tables, st.randoms(use_true_random=False))
def test_row_order_does_not_matter(rows, rnd):
    df = pl.DataFrame(rows, schema={"g": pl.String, "c": pl.Int64, "x": pl.Float64},
                      orient="row")
    shuffled = rows[:]
    rnd.shuffle(shuffled)
    other = pl.DataFrame(shuffled, schema=df.schema, orient="row")
    assert content(df, ["g", "c", "x"]) == content(other, ["g", "c", "x"])


def test_formats_encodings_names_and_extra_columns_do_not_matter():
    rng = np.random.default_rng(0)
    n = 500
    df = pl.DataFrame({"race": rng.choice(["A", "B", "C, D", 'say "hi"'], n),
                       "seg": rng.integers(0, 5, n), "x": rng.normal(size=n)})
    cols = ["race", "seg"]
    ref = content(df, cols)
    buf = io.BytesIO()
    df.write_csv(buf, quote_style="always")
    crlf = buf.getvalue().replace(b"\n", b"\r\n")
    assert content(pl.read_csv(io.BytesIO(crlf)), cols) == ref
    pq = io.BytesIO()
    df.write_parquet(pq)
    assert content(pl.read_parquet(io.BytesIO(pq.getvalue())), cols) == ref
    assert content(df.rename({"race": "Race "}), ["Race ", "seg"]) == ref
    assert content(df.with_columns(pl.lit(1).alias("extra")), cols) == ref
    assert content(df.with_columns(pl.col("race").cast(pl.Categorical)), cols) == ref
    assert content(df.with_columns(pl.col("seg").cast(pl.UInt8)), cols) == ref
    assert content(df.with_columns(pl.col("seg").cast(pl.Float64)), cols) == ref
    assert content(df.with_columns(pl.col("race").cast(pl.Enum(sorted(set(df["race"]))))),
                   cols) == ref
    # what is audited, and in which role order, does matter
    assert content(df, ["seg", "race"]) != ref
    assert content(df, ["race"]) != ref
    assert content(df.slice(1), cols) != ref
    assert content(df.with_columns(pl.when(pl.int_range(pl.len()) == 3).then(9)
                                   .otherwise(pl.col("seg")).alias("seg")), cols) != ref


def test_the_pass_is_streaming_and_batch_boundaries_do_not_matter(monkeypatch):
    rng = np.random.default_rng(1)
    df = pl.DataFrame({"g": rng.choice(["a", "b"], 1000), "id": rng.permutation(10**6)[:1000]})
    whole = fingerprint_frame(df.lazy(), ["g"])
    monkeypatch.setattr(fpm, "BATCH_ROWS", 37)
    parts = fingerprint_frame(df.lazy(), ["g"])
    assert parts.content == whole.content
    assert [s.column for s in parts.sketch] == [s.column for s in whole.sketch] == ["id"]
    assert np.array_equal(parts.sketch[0].hashes, whole.sketch[0].hashes)


def test_the_hash_is_stable():
    """The ledger outlives fairaudit versions: these values must never change (a change would
    make every stored release unrecognisable and charge it again)."""
    got = hash_values(pl.Series(["", "a", "fairaudit", None])).tolist()
    assert got == HASHES_TEXT
    assert hash_values(pl.Series([0, 1, -1, 2**40])).tolist() == HASHES_INT
    assert hash_values(pl.Series([0.0, 1.0, 0.5, float("nan")])).tolist()[:3] == \
        [HASHES_INT[0], HASHES_INT[1], HASH_HALF]
    assert hash_values(pl.Series([float("nan")]))[0] == hash_values(pl.Series([None]))[0]


HASHES_TEXT = [6341470659804223015, 10850635689199900256, 9503122801510102197,
               11400714819323198485]  # "", "a", "fairaudit", null (issue 34's first release)
HASHES_INT = [5272463233947570727, 3847398142028685078, 18280701212104791470,
              11423048070798503474]  # 0, 1, -1, 2**40
HASH_HALF = 12410997497069314006  # 0.5


# ---------------------------------------------------------------------------- the sketch
def _sketch(values) -> ColumnSketch:
    df = pl.DataFrame({"id": values})
    (s,) = fingerprint_frame(df.lazy(), ["id"]).sketch
    return s


@pytest.mark.parametrize("share", [0.0, 0.3, 0.6, 0.95, 1.0])
def test_the_sketch_estimates_the_share_of_common_identifiers(share):
    """Against the exact share: B holds ``share`` of A's identifiers and as many new ones."""
    rng = np.random.default_rng(int(share * 100))
    ids = rng.choice(10**12, size=40_000, replace=False).astype(np.int64) + 10**12
    a, fresh = ids[:20_000], ids[20_000:]
    k = int(share * 20_000)
    b = np.concatenate([a[:k], fresh[: 20_000 - k]])
    exact = len(set(a) & set(b)) / 20_000
    est = overlap(_sketch(a), _sketch(b))
    assert est is not None
    assert abs(est - exact) <= 0.12  # about 3 standard errors of 256 hashes
    if share == 0.0:
        assert est == 0.0


def test_a_subset_and_a_night_with_one_person_fewer_are_the_same_people():
    rng = np.random.default_rng(3)
    ids = [f"user{i}@example.org" for i in rng.choice(10**9, size=5000, replace=False)]
    whole = _sketch(ids)
    assert overlap(whole, _sketch(ids[1:])) == pytest.approx(1.0, abs=0.02)
    assert overlap(whole, _sketch(ids[:1000])) >= 0.9  # a fifth of the table
    assert overlap(_sketch(ids[:1000]), whole) >= 0.9


def test_small_columns_are_sketched_completely_and_compared_exactly():
    a = _sketch([f"p{i}" for i in range(100)])
    b = _sketch([f"p{i}" for i in range(50, 150)])
    assert a.complete and b.complete and a.hashes.size == 100
    assert overlap(a, b) == pytest.approx(0.5)


def test_counters_low_cardinality_and_booleans_are_not_sketched():
    rng = np.random.default_rng(4)
    n = 3000
    df = pl.DataFrame({"row": np.arange(n), "customer": np.arange(10_000, 10_000 + n),
                       "sex": rng.choice(["F", "M"], n), "flag": rng.random(n) < 0.5,
                       "sparse_id": rng.choice(10**9, n, replace=False),
                       "email": [f"u{i}@x.org" for i in range(n)]})
    kept = {s.column for s in fingerprint_frame(df.lazy(), ["sex"]).sketch}
    assert kept == {"sparse_id", "email"}


def test_sketch_round_trips_and_rejects_bad_json():
    s = _sketch(np.arange(5000) * 7919 + 13)
    again = ColumnSketch.from_json(s.to_json())
    assert again.column == s.column and np.array_equal(again.hashes, s.hashes)
    for bad in ({"column": "id"}, {"column": "id", "complete": 1, "hashes": ""},
                {"column": "id", "complete": True, "hashes": "!!"},
                {"column": "id", "complete": True, "hashes": "AAAA"}):
        with pytest.raises(ValueError):
            ColumnSketch.from_json(bad)


def test_few_distinct_texts_hash_as_each_value_alone():
    """A long column of few texts takes the per-distinct path: the same hashes as one by one."""
    from fairaudit.privacy.fingerprint import hash_text

    rng = np.random.default_rng(5)
    s = pl.Series(rng.choice(["a", "bb", "", None, "é"], 20_000).tolist(), dtype=pl.String)
    one_by_one = np.concatenate([hash_text(s[i:i + 1000]) for i in range(0, 20_000, 1000)])
    assert np.array_equal(hash_text(s), one_by_one)


def test_a_count_table_has_the_fingerprint_of_the_rows_it_counts(monkeypatch):
    """A database source moves only the GROUP BY of the audited columns with its counts: the
    fingerprint of that table (``counts=``) is the fingerprint of the rows, in any batching."""
    rng = np.random.default_rng(7)
    n = 3000
    df = pl.DataFrame({"race": rng.choice(["A", "B", ""], n), "sex": rng.choice(["F", "M"], n),
                       "seg": rng.integers(0, 6, n)}).with_columns(pl.col("race").replace("", None))
    cols = ["race", "sex", "seg"]
    cube = df.group_by(cols).len("n").sample(fraction=1.0, shuffle=True, seed=3)
    counted = fingerprint_frame(cube.lazy(), cols, counts="n")
    assert counted.content == content(df, cols) and counted.sketch == ()
    monkeypatch.setattr(fpm, "BATCH_ROWS", 5)
    assert fingerprint_frame(cube.lazy(), cols, counts="n").content == content(df, cols)
    assert fingerprint_frame(cube.with_columns(pl.col("n") + (pl.int_range(pl.len()) == 0))
                             .lazy(), cols, counts="n").content != content(df, cols)
    for bad, match in ((cube.with_columns(pl.col("n").cast(pl.Float64)), "integer"),
                       (cube.with_columns(n=-pl.col("n").cast(pl.Int64)), "negative")):
        with pytest.raises(ValueError, match=match):
            fingerprint_frame(bad.lazy(), cols, counts="n")
    with pytest.raises(ValueError, match="audited"):
        fingerprint_frame(cube.lazy(), [*cols, "n"], counts="n")
