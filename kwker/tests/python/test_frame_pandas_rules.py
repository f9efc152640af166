"""kwker.frame for pandas accepts what pandas accepts and refuses what pandas refuses, with
pandas' exception type and words first (issue 32: what pandas' own sort tests found)."""
import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

import kwker.frame as kf  # noqa: E402


@pytest.fixture(autouse=True)
def _kwker_on(monkeypatch):
    monkeypatch.delenv("KWKER_DISABLE", raising=False)


def _same(got, exp):
    if isinstance(exp, pd.DataFrame):
        pd.testing.assert_frame_equal(got, exp, check_exact=True)
    else:
        pd.testing.assert_series_equal(got, exp, check_exact=True)


def _raised(fn):
    try:
        fn()
    except Exception as e:
        return type(e), str(e)
    return None


def _same_error(ours, pandas):
    """Ours is pandas' exception type, and its message starts with pandas' message."""
    got, want = _raised(ours), _raised(pandas)
    assert want is not None and got is not None, (got, want)
    assert issubclass(got[0], want[0]), (got, want)
    assert got[1].startswith(want[1]) and "kwker.frame" in got[1], (got, want)


def test_by_an_empty_list_returns_a_copy():
    df = pd.DataFrame({"a": [3, 1, 2]})
    out = kf.sort_values(df, [])
    _same(out, df.sort_values([], kind="stable"))
    assert out is not df
    assert kf.arg_sort(df, []).tolist() == [0, 1, 2]


def test_a_column_labelled_none_sorts():
    df = pd.DataFrame([[3, 1], [2, 2]], columns=[None, "c"])
    _same(kf.sort_values(df, None), df.sort_values(None, kind="stable"))
    _same(kf.sort_values(df, [None, "c"], ascending=False),
          df.sort_values([None, "c"], ascending=False, kind="stable"))
    no_none = pd.DataFrame({"a": [1]})
    _same_error(lambda: kf.sort_values(no_none, None),
                lambda: no_none.sort_values(None, kind="stable"))
    with pytest.raises(TypeError, match="a DataFrame needs by"):
        kf.sort_values(no_none)                   # by left out: pandas' missing argument
    s = pd.Series([2, 1])
    _same(kf.sort_values(s, None), s.sort_values(kind="stable"))   # a Series has no by


@pytest.mark.parametrize("ascending", [None, [True, None], [False, "True"], "yes", 1.0])
def test_sort_index_refuses_ascending_values_pandas_refuses(ascending):
    df = pd.DataFrame({"v": range(6)}, index=[3, 1, 2, 0, 5, 4])
    _same_error(lambda: kf.sort_index(df, ascending=ascending),
                lambda: df.sort_index(ascending=ascending, kind="stable"))


@pytest.mark.parametrize("ascending", [[True, 1], [0], 2, np.True_, (False,)])
def test_sort_index_accepts_what_pandas_accepts(ascending):
    df = pd.DataFrame({"v": range(6)}, index=[3, 1, 2, 0, 5, 4])
    _same(kf.sort_index(df, ascending=ascending),
          df.sort_index(ascending=ascending, kind="stable"))


def test_sort_values_ascending_rules_and_words():
    df = pd.DataFrame({"a": [2, 1, 2], "b": [0, 1, 2]})
    s = df["a"]
    for bad in ("False", None, [True, "x"]):
        _same_error(lambda: kf.sort_values(df, "a", ascending=bad),
                    lambda: df.sort_values("a", ascending=bad, kind="stable"))
    _same_error(lambda: kf.sort_values(df, ["a", "b"], ascending=[True] * 5),
                lambda: df.sort_values(["a", "b"], ascending=[True] * 5, kind="stable"))
    _same_error(lambda: kf.sort_values(df, ["a", "b"], ascending=1),
                lambda: df.sort_values(["a", "b"], ascending=1, kind="stable"))
    for bad in ([], [True, False], None, "foobar"):
        _same_error(lambda: kf.sort_values(s, ascending=bad),
                    lambda: s.sort_values(ascending=bad, kind="stable"))
    for good in ([False], 0, np.False_):
        _same(kf.sort_values(s, ascending=good), s.sort_values(ascending=good, kind="stable"))
    _same_error(lambda: kf.sort_values(s, na_position="middle"),
                lambda: s.sort_values(na_position="middle", kind="stable"))


def test_other_errors_in_pandas_words():
    df = pd.DataFrame({"a": [1, 2], "b": [3, 4]}, index=pd.Index([0, 1], name="a"))
    _same_error(lambda: kf.sort_values(df, "a"), lambda: df.sort_values("a", kind="stable"))
    dup = pd.DataFrame([[1, 2]], columns=["x", "x"])
    _same_error(lambda: kf.sort_values(dup, "x"), lambda: dup.sort_values("x", kind="stable"))
    _same_error(lambda: kf.sort_values(df, "zz"), lambda: df.sort_values("zz", kind="stable"))
    _same_error(lambda: kf.sort_values(df, "b", key=lambda c: c.iloc[:1]),
                lambda: df.sort_values("b", key=lambda c: c.iloc[:1], kind="stable"))
    mi = pd.DataFrame({"v": [1, 2]}, index=pd.MultiIndex.from_tuples([(1, 2), (0, 1)]))
    _same_error(lambda: kf.sort_index(mi, level=[0, 1], ascending=[True]),
                lambda: mi.sort_index(level=[0, 1], ascending=[True], kind="stable"))
    _same_error(lambda: kf.sort_index(mi, level="nope"),
                lambda: mi.sort_index(level="nope", kind="stable"))
    with pytest.raises(KeyError) as info:
        kf.sort_values(df, "zz")
    assert info.value.args == ("zz",)             # pandas' KeyError(label)


@pytest.mark.parametrize("dtype, values", [
    ("Sparse[uint8]", [3, 0, 1, 0, 2]),
    ("Sparse[bool]", [True, False, True, False, False]),
    (pd.SparseDtype("float64", np.nan), [1.5, np.nan, -2.0, np.nan, 0.0]),
])
def test_sparse_columns_sort_as_pandas(dtype, values):
    df = pd.DataFrame({"s": pd.array(values, dtype=dtype), "i": [4, 3, 2, 1, 0]})
    for asc in (True, False):
        for na in ("first", "last"):
            for by in ("s", ["s", "i"]):
                _same(kf.sort_values(df, by, ascending=asc, na_position=na),
                      df.sort_values(by, ascending=asc, na_position=na, kind="stable"))


def test_interval_index_and_columns_sort_as_pandas():
    idx = pd.IntervalIndex.from_tuples([(2, 3), (0, 5), (0, 1), np.nan, (2, 4)])
    s = pd.Series(range(5), index=idx)
    for asc in (True, False):
        for na in ("first", "last"):
            _same(kf.sort_index(s, ascending=asc, na_position=na),
                  s.sort_index(ascending=asc, na_position=na, kind="stable"))
    df = pd.DataFrame({"iv": pd.array(idx), "k": [1, 1, 0, 0, 1]})
    for by in ("iv", ["k", "iv"]):
        _same(kf.sort_values(df, by), df.sort_values(by, kind="stable"))


def test_sort_index_key_and_sort_remaining():
    mi = pd.MultiIndex.from_tuples([("b", 2), ("a", 9), ("B", 1), ("a", 1)], names=["l", "n"])
    df = pd.DataFrame({"v": range(4)}, index=mi)
    for kw in ({"level": "l", "sort_remaining": False}, {"level": "l"},
               {"key": lambda i: -i if i.dtype.kind in "iu" else i.str.lower()},
               {"level": "n", "key": lambda i: -i, "ascending": False}):
        _same(kf.sort_index(df, **kw), df.sort_index(**kw, kind="stable"))
    flat = pd.Series([1, 2, 3], index=["b", "A", "c"])
    _same(kf.sort_index(flat, key=lambda i: i.str.lower()),
          flat.sort_index(key=lambda i: i.str.lower(), kind="stable"))
    _same(kf.sort_index(flat, level="anything"),       # pandas ignores level on a flat index
          flat.sort_index(level="anything", kind="stable"))


def test_sort_index_of_an_index_in_order_is_a_copy_as_in_pandas():
    df = pd.DataFrame({"v": [1, 2, 3]}, index=[1, 2, 2])
    out = kf.sort_index(df, ascending=[])          # all([]) and monotonic: nothing sorted
    _same(out, df.sort_index(ascending=[], kind="stable"))
    assert out is not df
