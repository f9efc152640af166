"""Building pandas' sorted object from a permutation, with the gathers on Kwker's threads.

pandas' own `take` gathers one column at a time through its generic 2-D take (measured 34.5 ns
per row for three numeric columns at 1e7 rows, against 21.8 for np.take and about 12 with two
threads). Columns of NumPy numeric dtypes are gathered here with `_gather.take`; every other
column (object, extension and Arrow arrays) with its own array's take. The frame is then
assembled without copies, with the caller's columns Index and a taken index, as take makes it.
"""
import numpy as np

from . import _gather

_THREADED = set("biufc")


def _column(arr, perm, pd):
    if isinstance(arr, np.ndarray) and arr.dtype.kind in _THREADED:
        return _gather.take(arr, perm)
    if isinstance(arr, np.ndarray):
        return np.take(arr, perm)
    return arr.take(perm)


def _values(series, pd):
    """The column's NumPy array when it is a plain NumPy-backed column, else its array
    (string[python] and other NumpyExtensionArray subclasses keep their own take)."""
    arr = series.array
    if type(arr) is pd.arrays.NumpyExtensionArray:
        return series.to_numpy(copy=False)
    return arr


# Where pandas' own take is the faster one: below a million rows (there the column-by-column
# assembly costs 0.1-0.4 ms a call whatever the size, against pandas' 0.02-0.07 ms up to 10,000
# rows, and the threaded gathers stop paying at about 100,000), and for frames of more than three
# columns, whose same-dtype columns pandas keeps in one 2-D block and takes in one loop (at 1e6
# rows, 4 and 6 columns: 23 / 29 ms column by column against pandas' 14 / 21 ms; 1 to 3 columns:
# 5.7 / 7.4 / 11.9 ms against 9.1 / 9.3 / 12.2 ms). 2-vCPU AMD EPYC (Zen 5), 2026-12-06.
OWN_TAKE_MIN_ROWS = 1_000_000
OWN_TAKE_MAX_COLUMNS = 3


def take(obj, perm, pd):
    """obj.take(perm), with the same dtypes, columns and index."""
    small = len(perm) < OWN_TAKE_MIN_ROWS
    if obj.ndim == 2 and (small or obj.shape[1] > OWN_TAKE_MAX_COLUMNS):
        return obj.take(perm)
    index = obj.index.take(perm)
    if isinstance(obj, pd.Series):  # built as pandas' sort_values builds it (13 us at 100 rows,
        values = _values(obj, pd)    # Series.take 16 us), gathered on Kwker's threads from 1e6
        values = values[perm] if small else _column(values, perm, pd)
        return pd.Series(values, index=index, name=obj.name, dtype=obj.dtype, copy=False)
    data = {}
    for i in range(obj.shape[1]):
        col = obj.iloc[:, i]
        # an explicit dtype keeps object columns object (pandas 3 would infer str)
        data[i] = pd.Series(_column(_values(col, pd), perm, pd), index=index, dtype=col.dtype,
                            copy=False)
    out = pd.DataFrame(data, index=index, copy=False)
    out.columns = obj.columns
    return out
