"""pandas columns -> Keys, with pandas' own rules (sort_values(kind="stable")).

pandas' rules, as pandas 3 implements them (pandas/core/sorting.py):
- NaN, None, NaT and pd.NA are all "missing" and go where na_position says, in both
  directions; everything else is ordered by value, ties kept in input order.
- Categoricals order by category order (ordered or not), strings by code point.
- Arrow-backed floats keep NaN apart from null: a one-column sort (Arrow's sort) puts NaN
  beside the nulls, a several-column sort (via Categorical) orders NaN as the largest value.
- Several columns, na_position="first": pandas 3.1 encodes NaN of a NumPy float column as
  -inf, so NaN ties with -inf (ascending) or +inf (descending). `quirks.nan_ties_inf` probes
  the installed pandas once and Kwker follows whichever rule it has.
"""
import numpy as np

from . import _lazy, _quirks, _ranks
from ._keys import Key


def column_key(col, name, ascending, na_position, several):
    """The Key of one pandas column (Series, Index or array) under pandas' rules."""
    pd = _lazy.require("pandas", "sorting a pandas object")
    arr = pd.api.extensions.ExtensionArray
    values = col.array if hasattr(col, "array") else col
    desc = not ascending
    first = na_position == "first"
    # NumpyExtensionArray includes string[python] (an object array of str and pd.NA)
    if isinstance(values, (np.ndarray, pd.arrays.NumpyExtensionArray)):
        return _numpy_key(np.asarray(values), name, desc, first, several)
    if isinstance(values, pd.Categorical):
        codes = np.asarray(values.codes)
        null = codes < 0
        return Key(codes, desc, null if null.any() else None, first,
                   ncodes=len(values.categories))
    if isinstance(values, pd.arrays.DatetimeArray):
        if values.tz is not None:
            values = values.tz_convert(None)          # UTC instants keep their order
        return Key(np.asarray(values), desc, nans_first=first)
    if isinstance(values, pd.arrays.TimedeltaArray):
        return Key(np.asarray(values), desc, nans_first=first)
    if isinstance(values, pd.arrays.PeriodArray):
        null = np.asarray(values.isna())
        return Key(values.asi8, desc, null if null.any() else None, first)
    if isinstance(values, pd.arrays.ArrowExtensionArray) or _is_arrow_string(values, pd):
        return _arrow_key(values.__arrow_array__(), name, desc, first, several)
    if _is_masked(values, pd):
        data, mask = values._data, values._mask
        # pandas sorts the unmasked values with NumPy's argsort after reversing them for a
        # descending sort, so an unmasked NaN ends up last ascending and first descending.
        return Key(data, desc, mask if mask.any() else None, first, nans_first=desc)
    if isinstance(values, arr) and _sorts_by_values_for_argsort(values, pd):
        return _extension_key(values, name, desc, first)
    if isinstance(values, arr):
        raise _ranks.unsupported(name, str(values.dtype), "kwker.frame")
    raise _ranks.unsupported(name, type(values).__name__, "kwker.frame")


def _sorts_by_values_for_argsort(values, pd):
    """True for extension arrays that pandas' stable sort orders by _values_for_argsort()
    with isna() as the missing values: ExtensionArray.argsort itself, and IntervalArray's,
    which hands every stable sort to it (sparse, interval and third-party arrays)."""
    base = pd.api.extensions.ExtensionArray.argsort
    own = type(values).argsort
    return own is base or (isinstance(values, pd.arrays.IntervalArray)
                           and own is pd.arrays.IntervalArray.argsort)


def _extension_key(values, name, desc, first):
    """pandas' ExtensionArray.argsort: the values of _values_for_argsort() (a sparse array's
    dense values; Interval objects, which compare by (left, right)), missing where isna().
    One column or several alike: the order of those values, missing at na_position."""
    v = np.asarray(values._values_for_argsort())
    null = np.asarray(values.isna(), dtype=bool)
    null = null if null.any() else None
    if v.dtype.kind in "fiubmM":
        return Key(v, desc, null, first, nans_first=first)
    ranks, nd = _ranks.object_ranks(v.astype(object, copy=False), null, name, "pandas")
    return Key(ranks, desc, null, first, ncodes=nd)


def _is_masked(values, pd):
    return isinstance(values, (pd.arrays.IntegerArray, pd.arrays.FloatingArray,
                               pd.arrays.BooleanArray))


def _is_arrow_string(values, pd):
    return isinstance(values, pd.arrays.ArrowStringArray)


def _numpy_key(v, name, desc, first, several):
    kind = v.dtype.kind
    if kind == "f":
        if several and first and _quirks.nan_ties_inf():
            v = np.where(np.isnan(v), -np.inf if not desc else np.inf, v)
            return Key(v, desc)
        return Key(v, desc, nans_first=first)
    if kind in "iub":
        return Key(v, desc)
    if kind in "mM":
        return Key(v, desc, nans_first=first)
    if kind == "O":
        pd = _lazy.require("pandas", "sorting an object column")
        null = np.asarray(pd.isna(v))
        ranks, nd = _ranks.object_ranks(v, null if null.any() else None, name, "pandas")
        return Key(ranks, desc, null if null.any() else None, first, ncodes=nd)
    if kind in "US":
        ranks, nd = _ranks.object_ranks(v.astype(object), None, name, "pandas")
        return Key(ranks, desc, ncodes=nd)
    raise _ranks.unsupported(name, str(v.dtype), "kwker.frame")


def _arrow_key(a, name, desc, first, several):
    pa = _lazy.require("pyarrow", "sorting an Arrow-backed column")
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks() if a.num_chunks != 1 else a.chunk(0)
    t = a.type
    null = a.is_null().to_numpy(zero_copy_only=False) if a.null_count else None
    if pa.types.is_floating(t):
        v = _buffer(a, np.dtype(t.to_pandas_dtype()))
        # one column: Arrow's sort puts NaN next to the nulls; several: NaN is the largest
        return Key(v, desc, null, first, nans_first=(desc if several else first))
    if pa.types.is_integer(t):
        return Key(_buffer(a, np.dtype(t.to_pandas_dtype())), desc, null, first)
    if pa.types.is_boolean(t):
        return Key(a.fill_null(False).to_numpy(zero_copy_only=False), desc, null, first)
    if pa.types.is_temporal(t) and not pa.types.is_interval(t):
        width = t.bit_width
        return Key(_buffer(a, np.dtype(f"int{width}")), desc, null, first)
    ranks, null, nd = _ranks.arrow_ranks(a, name, "pandas")
    return Key(ranks, desc, null, first, ncodes=nd)


def _buffer(a, dtype):
    """The values buffer of a primitive Arrow array as NumPy, without a copy."""
    buf = a.buffers()[1]
    return np.frombuffer(buf, dtype=dtype, count=len(a) + a.offset)[a.offset:]
