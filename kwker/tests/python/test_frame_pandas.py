"""kwker.frame for pandas equals pandas' own sort_values / sort_index (kind="stable")."""
import copy

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import assume, given, settings, strategies as st  # noqa: E402

import kwker.frame as kf  # noqa: E402
from kwker.testing.frames import pandas_frames  # noqa: E402

NAN, INF = np.nan, np.inf
FAST = settings(max_examples=120, deadline=None, derandomize=True)


@pytest.fixture(autouse=True)
def _kwker_on(monkeypatch):
    monkeypatch.delenv("KWKER_DISABLE", raising=False)


def _pandas(call):
    """pandas' own result; pandas 3.1 fails itself on -0.0 and 0.0 in one Arrow float column
    of a several-column sort or MultiIndex ("Categorical categories must be unique"), and such
    an example has nothing to compare with."""
    try:
        return call()
    except ValueError as exc:
        assume("categories must be unique" not in str(exc))
        raise


def _same(got, exp):
    if isinstance(exp, pd.DataFrame):
        pd.testing.assert_frame_equal(got, exp, check_exact=True)
    else:
        pd.testing.assert_series_equal(got, exp, check_exact=True)
    # pandas' equals is not reflexive for Arrow NaN (NaN != NaN there): only compare with it
    # where it holds for the expected frame itself
    assert got.equals(exp) or not exp.equals(exp.copy(deep=True))


@FAST
@given(pandas_frames())
def test_frames_match_pandas_row_for_row(case):
    df, by, ascending, na_position = case
    before = copy.deepcopy(df)
    exp = _pandas(lambda: df.sort_values(by, ascending=ascending, na_position=na_position,
                                         kind="stable"))
    got = kf.sort_values(df, by, ascending=ascending, na_position=na_position)
    _same(got, exp)
    assert got is not df
    pos = kf.arg_sort(df, by, ascending=ascending, na_position=na_position)
    assert pos.dtype == np.int64
    _same(df.iloc[pos], exp)
    _same(df, before)                      # the input is never modified


@FAST
@given(pandas_frames(max_keys=1), st.booleans())
def test_series_match_pandas(case, ignore_index):
    df, by, ascending, na_position = case
    s = df[by[0]]
    asc = ascending[0] if isinstance(ascending, list) else ascending
    before = s.copy(deep=True)
    exp = s.sort_values(ascending=asc, na_position=na_position, kind="stable",
                        ignore_index=ignore_index)
    _same(kf.sort_values(s, ascending=asc, na_position=na_position, ignore_index=ignore_index),
          exp)
    _same(s, before)


@FAST
@given(pandas_frames(max_keys=2))
def test_sort_index_matches_pandas_flat_and_multiindex(case):
    df, by, ascending, na_position = case
    if isinstance(ascending, list) and len(ascending) != len(by):
        ascending = ascending[0]
    indexed = _pandas(lambda: df.set_index(by))
    for level in (None, 0) if len(by) > 1 else (None,):
        asc = ascending[:1] if level is not None and isinstance(ascending, list) else ascending
        exp = _pandas(lambda: indexed.sort_index(level=level, ascending=asc,
                                                 na_position=na_position, kind="stable"))
        got = kf.sort_index(indexed, level=level, ascending=asc, na_position=na_position)
        # assert_index_equal calls two Arrow NaN index entries different: compare the index
        # as columns (and its type separately)
        assert type(got.index) is type(exp.index)
        _same(got.reset_index(), exp.reset_index())


@FAST
@given(pandas_frames(max_keys=3))
def test_key_callable_and_ignore_index(case):
    df, by, ascending, na_position = case

    def key(s):
        return s.rank(method="dense", na_option="keep") if s.dtype.kind in "iuf" else s
    exp = _pandas(lambda: df.sort_values(by, ascending=ascending, na_position=na_position,
                                         kind="stable", key=key, ignore_index=True))
    _same(kf.sort_values(df, by, ascending=ascending, na_position=na_position, key=key,
                         ignore_index=True), exp)


# ---- pandas' null rules, one named case each

def _order(obj, **kw):
    return kf.sort_values(obj, **kw).index.tolist()


def test_nan_goes_last_in_both_directions_by_default():
    s = pd.Series([2.0, NAN, 1.0, NAN, 3.0])
    assert _order(s) == [2, 0, 4, 1, 3]
    assert _order(s, ascending=False) == [4, 0, 2, 1, 3]


def test_na_position_first_puts_nan_first_in_both_directions():
    s = pd.Series([2.0, NAN, 1.0, NAN])
    assert _order(s, na_position="first") == [1, 3, 2, 0]
    assert _order(s, ascending=False, na_position="first") == [1, 3, 0, 2]


def test_none_nat_and_pd_na_are_all_missing():
    assert _order(pd.Series(["b", None, "a"], dtype=object)) == [2, 0, 1]
    assert _order(pd.Series(pd.to_datetime(["2021", None, "2020"]))) == [2, 0, 1]
    assert _order(pd.Series([2, pd.NA, 1], dtype="Int64"), na_position="first") == [1, 2, 0]
    assert _order(pd.Series(["b", pd.NA, "a"], dtype="string[python]"),
                  ascending=False) == [0, 2, 1]


def test_descending_ties_keep_input_order():
    assert _order(pd.Series([5, 3, 5, 1]), ascending=False) == [0, 2, 1, 3]


def test_categoricals_sort_by_category_order_not_by_label():
    s = pd.Series(pd.Categorical(["lo", "hi", None, "mid"], categories=["hi", "mid", "lo"]))
    assert _order(s) == [1, 3, 0, 2]
    assert _order(s.cat.as_ordered(), ascending=False) == [0, 3, 1, 2]


def test_several_columns_with_na_first_follow_the_installed_pandas_on_nan_vs_inf():
    df = pd.DataFrame({"a": [NAN, -INF, NAN, 1.0, -INF], "b": [3, 2, 1, 0, -1]})
    exp = df.sort_values(["a", "b"], na_position="first", kind="stable")
    _same(kf.sort_values(df, ["a", "b"], na_position="first"), exp)


def test_arrow_float_nan_is_apart_from_null():
    import pyarrow as pa
    s = pd.Series(pd.arrays.ArrowExtensionArray(pa.array([1.0, NAN, None, 2.0])))
    for asc in (True, False):
        for na in ("first", "last"):
            _same(kf.sort_values(s, ascending=asc, na_position=na),
                  s.sort_values(ascending=asc, na_position=na, kind="stable"))


def test_zero_and_one_row_frames():
    for n in (0, 1):
        df = pd.DataFrame({"a": np.arange(n, dtype=float), "b": ["x"] * n})
        _same(kf.sort_values(df, ["a", "b"]), df.sort_values(["a", "b"], kind="stable"))


def test_index_level_names_can_be_keys():
    df = pd.DataFrame({"v": [3, 1, 2]}, index=pd.Index([1, 1, 0], name="lvl"))
    _same(kf.sort_values(df, ["lvl", "v"]), df.sort_values(["lvl", "v"], kind="stable"))


def test_large_frame_matches_pandas():
    rng = np.random.default_rng(7)
    n = 200_000
    df = pd.DataFrame({"a": rng.integers(0, 50, n).astype("int32"),
                       "b": np.where(rng.random(n) < 0.05, NAN, rng.random(n)),
                       "p": rng.integers(0, 10**9, n)})
    for by, asc in ((["a", "b"], [True, False]), ("b", True), (["b", "a"], False)):
        _same(kf.sort_values(df, by, ascending=asc),
              df.sort_values(by, ascending=asc, kind="stable"))


# ---- bad input

def test_missing_column_is_a_key_error_naming_it():
    df = pd.DataFrame({"a": [1, 2]})
    with pytest.raises(KeyError, match="no column or index level named 'nope'"):
        kf.sort_values(df, ["a", "nope"])


def test_ascending_length_mismatch_is_a_value_error():
    df = pd.DataFrame({"a": [1, 2], "b": [3, 4]})
    with pytest.raises(ValueError, match=r"^Length of ascending \(1\) != length of by \(2\) "
                                         r"\(kwker.frame.sort_values: give one ascending"):
        kf.sort_values(df, ["a", "b"], ascending=[True])


@pytest.mark.parametrize("values, what", [
    ([[1], [2, 3]], "list"),
    ([{"x": 1}, {"y": 2}], "dict"),
    ([1, "a", 2.5], "int, str"),
])
def test_unsupported_object_columns_are_type_errors_naming_column_and_type(values, what):
    df = pd.DataFrame({"bad": pd.Series(values, dtype=object), "ok": range(len(values))})
    before = df.copy(deep=True)
    with pytest.raises(TypeError, match=rf"column 'bad' has type object holding .*{what}"):
        kf.sort_values(df, ["ok", "bad"])
    _same(df, before)


def test_arrow_struct_column_is_a_type_error():
    import pyarrow as pa
    s = pd.Series(pd.arrays.ArrowExtensionArray(pa.array([{"x": 1}, {"x": 0}])), name="st")
    with pytest.raises(TypeError, match=r"column 'st' has type struct<x: int64>"):
        kf.sort_values(s)


def test_key_that_changes_the_length_is_a_value_error():
    df = pd.DataFrame({"a": [3, 1, 2]})
    with pytest.raises(ValueError, match="key= returned 2 values for 3 rows of 'a'"):
        kf.sort_values(df, "a", key=lambda s: s.iloc[:2])


def test_key_cannot_write_into_the_callers_frame():
    df = pd.DataFrame({"a": [3.0, 1.0, 2.0]})
    before = df.copy(deep=True)

    def vandal(s):
        s.iloc[0] = -100.0
        return s
    kf.sort_values(df, "a", key=vandal)
    _same(df, before)


def test_bad_na_position_and_wrong_object():
    with pytest.raises(ValueError, match="na_position must be 'first' or 'last'"):
        kf.sort_values(pd.Series([1]), na_position="middle")
    with pytest.raises(TypeError, match="expected a pandas DataFrame or Series, got builtins.list"):
        kf.sort_values([3, 1])
    with pytest.raises(TypeError, match="a DataFrame needs by"):
        kf.sort_values(pd.DataFrame({"a": [1]}))


# ---- the strategies of kwker.frame._keys.order agree

@FAST
@given(pandas_frames(max_rows=60))
def test_every_multi_column_strategy_gives_the_same_permutation(case):
    from kwker.frame import _keys, _pandas_keys
    df, by, ascending, na_position = case
    asc = ascending if isinstance(ascending, list) else [ascending] * len(by)
    keys = [_pandas_keys.column_key(df[c], c, a, na_position, len(by) > 1)
            for c, a in zip(by, asc)]
    perms = [_keys.order(keys, len(df), strategy=s) for s in _keys.STRATEGIES]
    for p in perms[1:]:
        assert np.array_equal(p, perms[0])


def test_nearly_unique_first_key_takes_the_tie_refinement_path():
    from kwker.frame import _keys, _pandas_keys, _ties
    rng = np.random.default_rng(11)
    n = 300_000
    a = rng.integers(0, 2**40, n)
    a[rng.integers(0, n, 3000)] = a[rng.integers(0, n, 3000)]      # some planted ties
    df = pd.DataFrame({"a": a, "b": np.where(rng.random(n) < 0.1, NAN, rng.random(n).round(1)),
                       "c": rng.choice(["x", "y"], n)})
    keys = [_pandas_keys.column_key(df[c], c, True, "last", True) for c in "abc"]
    assert _ties.few(_keys.plan(keys)[0], n)
    for asc in (True, [False, True, False]):
        _same(kf.sort_values(df, ["a", "b", "c"], ascending=asc),
              df.sort_values(["a", "b", "c"], ascending=asc, kind="stable"))


def test_period_columns():
    p = pd.DataFrame({"p": pd.period_range("2020", periods=4, freq="D")[[2, 0, 3, 1]],
                      "i": range(4)})
    p.loc[1, "p"] = pd.NaT
    for asc in (True, False):
        for na in ("first", "last"):
            for by in ("p", ["p", "i"]):
                _same(kf.sort_values(p, by, ascending=asc, na_position=na),
                      p.sort_values(by, ascending=asc, na_position=na, kind="stable"))
