"""Hypothesis strategies for kwker.frame's tests: pandas and Polars frames with every supported
column type, nulls, NaNs, infinities, signed zeros and many duplicates (values come from small
pools so that ties, which decide stability, are common). Needs hypothesis (the test extra)."""
import datetime as dt

import numpy as np
from hypothesis import strategies as st

NAN, INF = float("nan"), float("inf")
FLOATS = [0.0, -0.0, 1.5, -2.0, 1e300, -1e-300, INF, -INF, NAN, 3.0]
INTS = [0, 1, -1, 7, -128, 127, 2**40, -(2**40)]
WORDS = ["", "a", "B", "ab", "é", "zz", "a\u00a0", "日本", "ß"]
TZ = "Europe/Paris"


def _pick(pool, null_rate):
    return st.one_of(st.none(), st.sampled_from(pool)) if null_rate else st.sampled_from(pool)


# ---- pandas

def _pd_column(kind, values, pd, pa):
    """A pandas Series of dtype `kind` from Python values (None = missing)."""
    if kind == "float64":
        return pd.Series([NAN if v is None else v for v in values], dtype="float64")
    if kind == "float32":
        return pd.Series([NAN if v is None else v for v in values], dtype="float32")
    if kind in ("int8", "int64", "uint64", "bool"):
        return pd.Series(values, dtype=kind)
    if kind in ("Int8", "Int64", "UInt64", "Float32", "Float64", "boolean"):
        return pd.Series(pd.array(values, dtype=kind))
    if kind.startswith("datetime64"):
        return pd.Series(_seconds(values, "M8", kind[11:-1]))
    if kind == "datetime_tz":
        return pd.Series(_seconds(values, "M8", "ms")).dt.tz_localize("UTC") \
            .dt.tz_convert(TZ)
    if kind == "timedelta":
        return pd.Series(_seconds(values, "m8", "ns"))
    if kind in ("category", "category_ordered"):
        cats = ["q", "b", "x", "a"]
        return pd.Series(pd.Categorical(values, categories=cats,
                                        ordered=kind == "category_ordered"))
    if kind == "str":
        return pd.Series(values, dtype="str")
    if kind == "object":
        return pd.Series(values, dtype=object)
    if kind in ("string[python]", "string[pyarrow]"):
        return pd.Series(values, dtype=kind)
    if kind == "int64[pyarrow]":
        return pd.Series(pd.arrays.ArrowExtensionArray(pa.array(values, pa.int64())))
    if kind == "double[pyarrow]":     # real NaNs (not nulls) stay NaN in an Arrow array
        return pd.Series(pd.arrays.ArrowExtensionArray(pa.array(values, pa.float64())))
    if kind == "timestamp[pyarrow]":
        return pd.Series(pd.arrays.ArrowExtensionArray(pa.array(values, pa.timestamp("s"))))
    raise ValueError(kind)


def _seconds(values, kind, unit):
    nat = np.datetime64("NaT") if kind == "M8" else np.timedelta64("NaT")
    make = np.datetime64 if kind == "M8" else np.timedelta64
    return np.array([nat if v is None else make(v, "s") for v in values],
                    dtype=f"{kind}[{unit}]")


PANDAS_POOLS = {
    "float64": FLOATS, "float32": [0.0, -0.0, 1.5, -2.0, INF, -INF, NAN],
    "int8": [0, 1, -1, 127, -128], "int64": INTS, "uint64": [0, 1, 2**63, 2**64 - 1, 5],
    "bool": [True, False],
    "Int8": [0, 1, -1, 127, -128], "Int64": INTS, "UInt64": [0, 1, 2**63, 2**64 - 1],
    "Float32": [0.0, -0.0, 1.5, -2.0, INF, -INF], "Float64": [0.0, 1.5, -2.0, INF, -INF, 1e300],
    "boolean": [True, False],
    "datetime64[s]": [0, 1, -86400 * 365 * 300, 10**9], "datetime64[ns]": [0, 1, 10**9, -10**9],
    "datetime_tz": [0, 3600, 1711846800, 1711850400, -10**8],
    "timedelta": [0, 1, -5, 10**6],
    "category": ["q", "b", "x", "a"], "category_ordered": ["q", "b", "x", "a"],
    "str": WORDS, "object": WORDS, "string[python]": WORDS, "string[pyarrow]": WORDS,
    "int64[pyarrow]": INTS, "double[pyarrow]": FLOATS, "timestamp[pyarrow]": [0, 1, 10**9],
}
NOT_NULLABLE = {"int8", "int64", "uint64", "bool"}


@st.composite
def pandas_frames(draw, max_rows=25, max_keys=4):
    """(DataFrame, by, ascending, na_position): 0..max_rows rows, 1..max_keys key columns."""
    import pandas as pd
    import pyarrow as pa
    n = draw(st.integers(0, max_rows))
    nkeys = draw(st.integers(1, max_keys))
    kinds = draw(st.lists(st.sampled_from(sorted(PANDAS_POOLS)), min_size=nkeys,
                          max_size=nkeys))
    data = {}
    for i, kind in enumerate(kinds):
        nullable = kind not in NOT_NULLABLE and draw(st.booleans())
        values = draw(st.lists(_pick(PANDAS_POOLS[kind], nullable), min_size=n, max_size=n))
        data[f"k{i}_{kind}"] = _pd_column(kind, values, pd, pa)
    data["payload"] = pd.Series(np.arange(n) * 10, dtype="int64")
    index = draw(st.sampled_from(["range", "shuffled", "strings"]))
    df = pd.DataFrame(data)
    if index == "shuffled":
        df.index = pd.Index(draw(st.permutations(list(range(100, 100 + n)))), dtype="int64")
    elif index == "strings":
        df.index = pd.Index([f"r{i % 7}" for i in range(n)], dtype="str")
    by = list(df.columns[:nkeys])
    ascending = draw(st.one_of(st.booleans(), st.lists(st.booleans(), min_size=nkeys,
                                                       max_size=nkeys)))
    na_position = draw(st.sampled_from(["first", "last"]))
    return df, by, ascending, na_position


# ---- Polars

def _pl_column(kind, values, pl):
    dtypes = {"Int8": pl.Int8, "Int16": pl.Int16, "Int32": pl.Int32, "Int64": pl.Int64,
              "UInt8": pl.UInt8, "UInt32": pl.UInt32, "UInt64": pl.UInt64,
              "Float32": pl.Float32, "Float64": pl.Float64, "Boolean": pl.Boolean,
              "String": pl.String, "Categorical": pl.Categorical, "Binary": pl.Binary,
              "Enum": pl.Enum(["q", "b", "x", "a"]), "Date": pl.Date,
              "Datetime": pl.Datetime("us", TZ), "Duration": pl.Duration("ms"),
              "Time": pl.Time, "Int128": pl.Int128}
    if kind == "Binary":
        values = [None if v is None else v.encode() for v in values]
    return pl.Series(values, dtype=dtypes[kind], strict=False)


_D = dt.date
POLARS_POOLS = {
    "Int8": [0, 1, -1, 127, -128], "Int16": [0, 300, -300], "Int32": [0, 2**31 - 1, -2**31, 5],
    "Int64": INTS, "UInt8": [0, 1, 255], "UInt32": [0, 2**32 - 1, 7], "UInt64": [0, 2**64 - 1, 9],
    "Float32": [0.0, -0.0, 1.5, -2.0, INF, -INF, NAN], "Float64": FLOATS,
    "Boolean": [True, False], "String": WORDS, "Categorical": WORDS, "Binary": WORDS,
    "Enum": ["q", "b", "x", "a"], "Date": [_D(2020, 1, 1), _D(1900, 5, 5), _D(2100, 1, 1)],
    "Datetime": [dt.datetime(2024, 3, 31, 1, 30, tzinfo=dt.timezone.utc),
                 dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc),
                 dt.datetime(2024, 3, 31, 0, 30, tzinfo=dt.timezone.utc)],
    "Duration": [dt.timedelta(0), dt.timedelta(seconds=-1), dt.timedelta(days=3)],
    "Time": [dt.time(0, 0), dt.time(23, 59, 59), dt.time(12)],
    "Int128": [0, 2**100, -(2**100), 5],
}


@st.composite
def polars_frames(draw, max_rows=25, max_keys=4):
    """(DataFrame, by, descending, nulls_last)."""
    import polars as pl
    n = draw(st.integers(0, max_rows))
    nkeys = draw(st.integers(1, max_keys))
    kinds = draw(st.lists(st.sampled_from(sorted(POLARS_POOLS)), min_size=nkeys,
                          max_size=nkeys))
    cols = {}
    for i, kind in enumerate(kinds):
        values = draw(st.lists(_pick(POLARS_POOLS[kind], draw(st.booleans())), min_size=n,
                               max_size=n))
        cols[f"k{i}_{kind}"] = _pl_column(kind, values, pl)
    cols["payload"] = pl.Series(list(range(n)), dtype=pl.Int64)
    df = pl.DataFrame(cols)
    by = df.columns[:nkeys]
    flags = st.one_of(st.booleans(), st.lists(st.booleans(), min_size=nkeys, max_size=nkeys))
    return df, by, draw(flags), draw(flags)
