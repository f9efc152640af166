"""Frame equality as pandas and Polars define it, for `python -m kwker audit`.

Pickled frames of equal content differ in bytes (block layout, cached flags, Arrow chunking),
so audit compares pandas and Polars objects with the libraries' own strict checks instead:
values (NaN equal to NaN, nulls to nulls), dtypes, names, index and column types.
"""


def is_frame_like(value):
    """True for pandas / Polars objects that `same` compares (imports nothing)."""
    mod = type(value).__module__.split(".")[0]
    return mod in ("pandas", "polars") and type(value).__name__ in (
        "DataFrame", "Series", "Index", "RangeIndex", "MultiIndex", "DatetimeIndex",
        "CategoricalIndex", "TimedeltaIndex", "PeriodIndex", "IntervalIndex")


def same(a, b):
    """True when a and b are equal frames / series / indexes by their library's definition."""
    if type(a) is not type(b):
        return False
    if type(a).__module__.startswith("polars"):
        from polars import testing as plt
        check = plt.assert_frame_equal if type(a).__name__ == "DataFrame" else \
            plt.assert_series_equal
        try:
            check(a, b, check_exact=True)
        except AssertionError:
            return False
        return True
    from pandas import testing as pdt
    name = type(a).__name__
    try:
        if name == "DataFrame":
            pdt.assert_frame_equal(a, b, check_exact=True, check_flags=True, check_freq=True)
        elif name == "Series":
            pdt.assert_series_equal(a, b, check_exact=True, check_flags=True, check_freq=True)
        else:
            pdt.assert_index_equal(a, b, exact=True, check_exact=True)
    except AssertionError:
        return False
    return True
