"""What Polars' own sort tests check, written for kwker.frame.sort (issue 32).

Polars' wheel ships no tests (py-polars/tests/unit/operations/test_sort.py lives in its
repository), so these are our equivalents of the behaviours those tests check, each compared
with Polars itself: empty and all-null inputs (the Null dtype), every dtype (nested ones and
Object refused with a clear error, of Polars' exception type where Polars raises), the
SORTED_ASC / SORTED_DESC flags of the result, the chunks of an input that is already sorted,
and the error types and words of Polars' sort.
"""
import datetime as dt
import decimal

import pytest

pl = pytest.importorskip("polars")
pytest.importorskip("pyarrow")
from polars.testing import assert_frame_equal, assert_series_equal  # noqa: E402

import kwker.frame as kf  # noqa: E402


@pytest.fixture(autouse=True)
def _kwker_on(monkeypatch):
    monkeypatch.delenv("KWKER_DISABLE", raising=False)


def _flags(obj):
    if isinstance(obj, pl.Series):
        return obj.flags
    return {c: obj[c].flags for c in obj.columns}


def _same(got, exp):
    """Equal values and dtypes, the same sorted flags and the same chunks as Polars' result."""
    if isinstance(exp, pl.Series):
        assert_series_equal(got, exp, check_exact=True)
        assert got.n_chunks() == exp.n_chunks()
    else:
        assert_frame_equal(got, exp, check_exact=True)
        assert got.n_chunks("all") == exp.n_chunks("all")
    assert _flags(got) == _flags(exp)


def _both(obj, by=None, **kw):
    if isinstance(obj, pl.Series):
        return kf.sort(obj, **kw), obj.sort(**kw)
    return kf.sort(obj, by, **kw), obj.sort(by, maintain_order=True, **kw)


def _raised(fn):
    try:
        fn()
    except Exception as e:
        return type(e), str(e)
    return None


def _same_error(ours, polars):
    got, want = _raised(ours), _raised(polars)
    assert want is not None and got is not None, (got, want)
    assert issubclass(got[0], want[0]), (got, want)
    assert got[1].startswith(want[1].split("\n")[0]) and "kwker.frame.sort" in got[1]


COLUMNS = {
    "i8": pl.Series([3, None, -1, 3, 0], dtype=pl.Int8),
    "u64": pl.Series([2**63, 1, None, 1, 0], dtype=pl.UInt64),
    "i128": pl.Series([2**100, -(2**90), None, 5, 5], dtype=pl.Int128),
    "f32": pl.Series([1.5, float("nan"), None, -0.0, 0.0], dtype=pl.Float32),
    "bool": pl.Series([True, None, False, True, False]),
    "str": pl.Series(["b", "", None, "é", "a"]),
    "bin": pl.Series([b"\x01", b"", None, b"\x00", b"\x01"]),
    "date": pl.Series([dt.date(2024, 1, 2), None, dt.date(1970, 1, 1), dt.date(2024, 1, 2),
                       dt.date(1900, 5, 5)]),
    "dt_tz": pl.Series([dt.datetime(2024, 1, 1, 5), None, dt.datetime(2023, 1, 1),
                        dt.datetime(2024, 1, 1, 5), dt.datetime(2020, 1, 1)]).dt.replace_time_zone(
                            "Europe/Paris"),
    "dur": pl.Series([dt.timedelta(days=1), None, dt.timedelta(0), dt.timedelta(seconds=-1),
                      dt.timedelta(days=1)]),
    "time": pl.Series([dt.time(5), None, dt.time(0, 1), dt.time(23), dt.time(5)]),
    "dec": pl.Series([decimal.Decimal("1.5"), None, decimal.Decimal("-2.25"),
                      decimal.Decimal("1.5"), decimal.Decimal("0")], dtype=pl.Decimal(10, 2)),
    "cat": pl.Series(["z", None, "a", "m", "a"], dtype=pl.Categorical),
    "enum": pl.Series(["z", None, "a", "m", "a"], dtype=pl.Enum(["m", "z", "a"])),
    "null": pl.Series([None] * 5),
}


@pytest.mark.parametrize("name", list(COLUMNS))
def test_every_dtype_sorts_as_polars_with_its_flags(name):
    df = pl.DataFrame({name: COLUMNS[name], "row": range(5)})
    for desc in (False, True):
        for nl in (False, True):
            _same(*_both(df, name, descending=desc, nulls_last=nl))
            _same(*_both(df, [name, "row"], descending=[desc, not desc], nulls_last=nl))
            _same(*_both(df[name], descending=desc, nulls_last=nl))


@pytest.mark.parametrize("col", [
    pl.Series("bad", [[2], [1, 3]]),
    pl.Series("bad", [{"x": 1}, {"x": 0}]),
    pl.Series("bad", [[1, 2], [0, 4]], dtype=pl.Array(pl.Int64, 2)),
])
def test_nested_dtypes_are_refused_with_the_column_and_its_type(col):
    df = pl.DataFrame([col, pl.Series("ok", [1, 2])])
    with pytest.raises(TypeError, match=rf"column 'bad' has type {col.dtype.base_type()}.*which "
                                        r"kwker.frame cannot order.*Polars' own df.sort\("):
        kf.sort(df, "bad")
    with pytest.raises(TypeError, match="column 'bad'"):
        kf.sort(df["bad"])


def test_object_columns_are_polars_invalid_operation_errors():
    df = pl.DataFrame({"o": pl.Series([object(), object()], dtype=pl.Object)})
    _same_error(lambda: kf.sort(df, "o"), lambda: df.sort("o"))
    with pytest.raises(TypeError):
        kf.sort(df, "o")


def test_empty_and_all_null_inputs():
    empty = pl.DataFrame({"a": pl.Series([], dtype=pl.Int64), "s": pl.Series([], dtype=pl.String)})
    _same(*_both(empty, "a"))
    _same(*_both(empty, ["s", "a"], descending=True))
    _same(*_both(empty["s"]))
    nulls = pl.DataFrame({"n": [None, None, None], "v": [3, 1, 2]})
    _same(*_both(nulls, "n"))
    _same(*_both(nulls, ["n", "v"]))
    _same(*_both(nulls["n"]))
    typed = pl.DataFrame({"f": pl.Series([None, None], dtype=pl.Float64), "v": [2, 1]})
    _same(*_both(typed, "f", nulls_last=True))
    assert kf.sort(typed, []).equals(typed.sort([]))          # by nothing: unchanged


def _chunked(parts, flag=None):
    df = pl.concat([pl.DataFrame(p) for p in parts], rechunk=False)
    return df if flag is None else df.with_columns(pl.col("a").set_sorted(descending=flag))


def test_already_sorted_input_keeps_its_chunks_as_polars_does():
    asc = _chunked([{"a": [None, 1], "b": [5, 6]}, {"a": [3, 4], "b": [1, 1]}], flag=False)
    desc = _chunked([{"a": [4, 3], "b": [5, 6]}, {"a": [1, None], "b": [1, 1]}], flag=True)
    unflagged = _chunked([{"a": [1, 2], "b": [5, 6]}, {"a": [3, 4], "b": [1, 1]}])
    for df in (asc, desc, unflagged):
        assert df.n_chunks("all") == [2, 2]
        for d in (False, True):
            for nl in (False, True):
                _same(*_both(df, "a", descending=d, nulls_last=nl))
                _same(*_both(df, pl.col("a"), descending=d, nulls_last=nl))
                _same(*_both(df, ["a", "b"], descending=d, nulls_last=nl))
                _same(*_both(df["a"], descending=d, nulls_last=nl))
    got = kf.sort(asc, "a")
    assert got.n_chunks("all") == [2, 2]                 # the case: chunks kept


def test_sorted_flags_follow_polars_and_feed_its_fast_paths():
    df = pl.DataFrame({"k": [3, 1, 2, 1], "v": [1.0, 2.0, 3.0, 4.0], "s": ["c", "a", "b", "a"]})
    for by in ("k", ["k", "v"], ["s", "k"], pl.col("k"), pl.col("k") * -1, [pl.col("v").abs()]):
        for d in (False, True):
            _same(*_both(df, by, descending=d))
    lazy = kf.sort(df.lazy(), "k").collect()
    assert lazy["k"].flags == df.lazy().sort("k").collect()["k"].flags == {
        "SORTED_ASC": True, "SORTED_DESC": False}
    out = kf.sort(df, "k")
    assert out["k"].search_sorted(2) == 2
    right = pl.DataFrame({"k": [1, 2], "w": ["x", "y"]}).sort("k")
    assert_frame_equal(out.join(right, on="k", how="left"),
                       df.sort("k", maintain_order=True).join(right, on="k", how="left"))


def test_errors_are_polars_types_with_polars_words():
    df = pl.DataFrame({"a": [3, 1, 2], "b": [1, 2, 3]})
    calls = [
        (lambda m: m(df, "zz"), lambda: df.sort("zz")),
        (lambda m: m(df, ["a", "b"], descending=[True]), lambda: df.sort(["a", "b"],
                                                                          descending=[True])),
        (lambda m: m(df, ["a", "b"], nulls_last=[True]), lambda: df.sort(["a", "b"],
                                                                          nulls_last=[True])),
        (lambda m: m(df, "a", descending=1), lambda: df.sort("a", descending=1)),
        (lambda m: m(df, "a", nulls_last="x"), lambda: df.sort("a", nulls_last="x")),
        (lambda m: m(df, ["a", "b"], descending=[True, "x"]),
         lambda: df.sort(["a", "b"], descending=[True, "x"])),
        (lambda m: m(df, pl.col("a").head(1)), lambda: df.sort(pl.col("a").head(1))),
        (lambda m: m(df["a"], descending="x"), lambda: df["a"].sort(descending="x")),
    ]
    for ours, polars in calls:
        _same_error(lambda: ours(kf.sort), polars)
    with pytest.raises(KeyError, match="no column named 'zz'"):
        kf.sort(df, "zz")                                  # kwker.frame's documented type too
    with pytest.raises(pl.exceptions.ColumnNotFoundError):
        kf.sort(df.lazy(), "zz").collect()
