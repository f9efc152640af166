"""kwker.frame.sort for Polars equals Polars' own sort(..., maintain_order=True)."""
import numpy as np
import pytest

pl = pytest.importorskip("polars")
pytest.importorskip("pyarrow")
pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from polars.testing import assert_frame_equal, assert_series_equal  # noqa: E402

import kwker.frame as kf  # noqa: E402
from kwker.testing.frames import polars_frames  # noqa: E402

NAN = float("nan")
FAST = settings(max_examples=120, deadline=None, derandomize=True)


@pytest.fixture(autouse=True)
def _kwker_on(monkeypatch):
    monkeypatch.delenv("KWKER_DISABLE", raising=False)


def _same(got, exp):
    if isinstance(exp, pl.DataFrame):
        assert_frame_equal(got, exp, check_exact=True)
    else:
        assert_series_equal(got, exp, check_exact=True)
    assert got.equals(exp, null_equal=True) if isinstance(exp, pl.DataFrame) else \
        got.equals(exp, check_dtypes=True, check_names=True, null_equal=True)


@FAST
@given(polars_frames())
def test_frames_match_polars_row_for_row(case):
    df, by, descending, nulls_last = case
    before = df.clone()
    exp = df.sort(by, descending=descending, nulls_last=nulls_last, maintain_order=True)
    _same(kf.sort(df, by, descending=descending, nulls_last=nulls_last), exp)
    lazy = kf.sort(df.lazy(), by, descending=descending, nulls_last=nulls_last)
    assert isinstance(lazy, pl.LazyFrame)
    _same(lazy.collect(), exp)
    _same(df, before)


@FAST
@given(polars_frames(max_keys=1))
def test_series_match_polars(case):
    df, by, descending, nulls_last = case
    s = df.get_column(by[0])
    d = descending[0] if isinstance(descending, list) else descending
    nl = nulls_last[0] if isinstance(nulls_last, list) else nulls_last
    exp = df.sort(by[0], descending=d, nulls_last=nl, maintain_order=True).get_column(by[0])
    _same(kf.sort(s, descending=d, nulls_last=nl), exp)


def test_large_numeric_series_keep_signed_zeros_and_nans_in_input_order():
    rng = np.random.default_rng(3)
    v = rng.choice([0.0, -0.0, NAN, 1.0, -1.0, 2.5], 50_000)
    s = pl.Series("x", v)
    for d in (False, True):
        # with a second column, Polars' maintain_order keeps equal keys (here -0.0 and 0.0)
        # in input order; a one-column frame is value-sorted and need not
        exp = s.to_frame().with_row_index().sort("x", descending=d, maintain_order=True) \
            .get_column("x")
        got = kf.sort(s, descending=d)
        _same(got, exp)
        assert np.array_equal(np.signbit(got.to_numpy()), np.signbit(exp.to_numpy()))


def test_large_frame_matches_polars():
    rng = np.random.default_rng(5)
    n = 200_000
    b = rng.random(n)
    df = pl.DataFrame({"a": rng.integers(0, 50, n).astype("int32"),
                       "b": pl.Series(b).set(pl.Series(rng.random(n) < 0.05), None),
                       "p": rng.integers(0, 10**9, n)})
    for by, d, nl in ((["a", "b"], [False, True], [True, False]), ("b", False, False)):
        _same(kf.sort(df, by, descending=d, nulls_last=nl),
              df.sort(by, descending=d, nulls_last=nl, maintain_order=True))


# ---- Polars' null and NaN rules, one named case each

def _order(df, by, **kw):
    return kf.sort(df.with_row_index("i"), by, **kw).get_column("i").to_list()


FRAME = pl.DataFrame({"x": [2.0, None, NAN, 1.0, None, NAN]})


def test_nulls_come_first_by_default_in_both_directions():
    assert _order(FRAME, "x") == [1, 4, 3, 0, 2, 5]
    assert _order(FRAME, "x", descending=True) == [1, 4, 2, 5, 0, 3]


def test_nulls_last_puts_nulls_last_in_both_directions():
    assert _order(FRAME, "x", nulls_last=True) == [3, 0, 2, 5, 1, 4]
    assert _order(FRAME, "x", descending=True, nulls_last=True) == [2, 5, 0, 3, 1, 4]


def test_nan_is_the_largest_value_not_a_null():
    s = pl.Series([NAN, float("inf"), -1.0])
    assert kf.sort(s).to_list()[:2] == [-1.0, float("inf")]
    assert np.isnan(kf.sort(s, descending=True).to_list()[0])


def test_per_column_descending_and_nulls_last():
    df = pl.DataFrame({"a": [1, 1, None, 2], "b": [None, 3, 4, 5]})
    assert _order(df, ["a", "b"], descending=[True, False], nulls_last=[True, False]) == \
        [3, 0, 1, 2]


def test_categorical_orders_by_string_and_enum_by_category_order():
    s = pl.Series(["b", "a", "c"], dtype=pl.Categorical)
    assert kf.sort(s).to_list() == ["a", "b", "c"]
    e = pl.Series(["b", "a", "c"], dtype=pl.Enum(["c", "b", "a"]))
    assert kf.sort(e).to_list() == ["c", "b", "a"]


def test_expressions_as_keys():
    df = pl.DataFrame({"a": [3, -4, 1]})
    _same(kf.sort(df, pl.col("a").abs()), df.sort(pl.col("a").abs(), maintain_order=True))


def test_zero_and_one_row_frames():
    for n in (0, 1):
        df = pl.DataFrame({"a": list(range(n)), "s": ["x"] * n}, schema={"a": pl.Int64,
                                                                         "s": pl.String})
        _same(kf.sort(df, ["a", "s"]), df.sort(["a", "s"], maintain_order=True))


# ---- bad input

def test_missing_column_is_a_key_error_naming_it():
    with pytest.raises(KeyError, match="no column named 'nope'"):
        kf.sort(pl.DataFrame({"a": [1]}), ["a", "nope"])


def test_flag_length_mismatch_is_a_value_error():
    df = pl.DataFrame({"a": [1], "b": [2]})
    with pytest.raises(ValueError, match="descending has 3 entries but by has 2"):
        kf.sort(df, ["a", "b"], descending=[True, False, True])
    with pytest.raises(ValueError, match="nulls_last has 1 entries but by has 2"):
        kf.sort(df, ["a", "b"], nulls_last=[True])


@pytest.mark.parametrize("col, what", [
    (pl.Series("bad", [[1], [2, 3]]), r"List\(Int64\)"),
    (pl.Series("bad", [{"x": 1}, {"x": 0}]), r"Struct\("),
    (pl.Series("bad", [[1, 2], [3, 4]], dtype=pl.Array(pl.Int64, 2)), r"Array\(Int64"),
])
def test_nested_columns_are_type_errors_naming_column_and_type(col, what):
    df = pl.DataFrame([col, pl.Series("ok", [1, 2])])
    before = df.clone()
    with pytest.raises(TypeError, match=rf"column 'bad' has type {what}"):
        kf.sort(df, ["ok", "bad"])
    _same(df, before)


def test_wrong_object():
    import pandas as pd
    with pytest.raises(TypeError, match="a pandas object: use kwker.frame.sort_values"):
        kf.sort(pd.DataFrame({"a": [1]}), "a")
    with pytest.raises(TypeError, match="a DataFrame needs by="):
        kf.sort(pl.DataFrame({"a": [1]}))


def test_decimal_columns():
    import decimal
    d = decimal.Decimal
    df = pl.DataFrame({"d": pl.Series([d("1.5"), None, d("-2.25"), d("1.5")],
                                      dtype=pl.Decimal(10, 2)), "i": [0, 1, 2, 3]})
    for desc in (False, True):
        for nl in (False, True):
            _same(kf.sort(df, "d", descending=desc, nulls_last=nl),
                  df.sort("d", descending=desc, nulls_last=nl, maintain_order=True))
