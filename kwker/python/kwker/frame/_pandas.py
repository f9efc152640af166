"""kwker.frame for pandas: sort_values, arg_sort and sort_index, equal to pandas' own
sort_values(kind="stable") / sort_index(kind="stable"), with the row order computed by Kwker.

The caller's object is only read: keys are encoded into new arrays, and the result is built
with pandas' own `take`, so dtypes, column order, index and attrs come out as pandas makes them.
"""
import numpy as np

from . import _keys, _lazy, _pandas_args, _pandas_index, _pandas_keys, _pandas_take, _switch


class _NoBy:
    """The default of `by`: left out (a Series), so that by=None names a column labelled None,
    as in pandas."""

    def __repr__(self):
        return "<by left out>"


NO_BY = _NoBy()


def _pd():
    return _lazy.require("pandas", "sorting a pandas object")


def _check_obj(obj, func):
    pd = _pd()
    if isinstance(obj, (pd.DataFrame, pd.Series)):
        return pd
    hint = (" (a Polars object: use kwker.frame.sort)" if type(obj).__module__.startswith("polars")
            else "")
    raise TypeError(f"kwker.frame.{func}: expected a pandas DataFrame or Series, got "
                    f"{type(obj).__module__}.{type(obj).__name__}{hint}")


# ---- which columns

def _resolve(obj, labels, func):
    """[(label, column)] for the `by` labels: columns, or index level names, as pandas'
    _get_label_or_level_values finds them (a column first; None is never a level name)."""
    pd = _pd()
    out = []
    for label in labels:
        in_cols = _has_label(obj.columns, label)
        in_levels = label is not None and _has_label(obj.index.names, label)
        if in_cols and in_levels:
            raise ValueError(f"'{label}' is both an index level and a column label, which is "
                             "ambiguous." + _pandas_args.hint(func, "rename one of them"))
        if in_cols:
            col = obj[label]
            if isinstance(col, pd.DataFrame):
                multi = ("\nFor a multi-index, the label must be a tuple with elements "
                         "corresponding to each level."
                         if isinstance(obj.columns, pd.MultiIndex) else "")
                raise ValueError(f"The column label '{label}' is not unique.{multi}" +
                                 _pandas_args.hint(func, f"{col.shape[1]} columns have it; "
                                                         "rename the duplicates"))
            out.append((label, col))
        elif in_levels:
            out.append((label, obj.index.get_level_values(label)))
        else:
            raise _pandas_args.LabelError(
                label, f"kwker.frame.{func}: no column or index level named {label!r}; the "
                       f"columns are {list(obj.columns)[:20]}")
    return out


def _has_label(labels, label):
    try:
        return label in labels
    except TypeError:               # an unhashable label
        return False


def _mapped(col, label, key, is_series, func):
    """The column after the user's key= callable, which sees a copy (never the caller's data),
    as pandas' ensure_key_mapped calls it."""
    pd = _pd()
    arg = col.copy() if is_series else pd.Series(col.array if hasattr(col, "array") else col,
                                                 name=label, copy=True)
    if not callable(key):
        raise TypeError(f"'{type(key).__name__}' object is not callable" +
                        _pandas_args.hint(func, "key must be a callable or None"))
    result = key(arg)
    if len(result) != len(arg):
        raise ValueError("User-provided `key` function must not change the shape of the "
                         "array." + _pandas_args.hint(
                             func, f"key= returned {len(result)} values for {len(arg)} rows of "
                                   f"{label!r}; return one value per row"))
    if isinstance(result, (pd.Series, pd.Index)):
        return result
    return pd.Series(result) if not isinstance(result, pd.api.extensions.ExtensionArray) \
        else pd.Series(result, copy=False)


def _columns(obj, by, ascending, na_position, key, func):
    """[(label, column)] and the direction of each, with pandas' checks in pandas' order."""
    pd = _check_obj(obj, func)
    if isinstance(obj, pd.Series):
        if by is not NO_BY and by is not None:
            raise TypeError(f"kwker.frame.{func}: by= is for DataFrames; a Series sorts by its "
                            "values (leave by out)")
        asc = [_pandas_args.series_ascending(ascending, func)]
        _pandas_args.na_position(na_position, func)
        cols = [(obj.name, obj)]
    else:
        if by is NO_BY:
            raise TypeError(f"kwker.frame.{func}: a DataFrame needs by (a column label or a "
                            "list of them)")
        labels = by if isinstance(by, list) else [by]
        asc = _pandas_args.frame_ascending(ascending, len(labels), func)
        if not labels:
            return [], []                         # pandas: a copy, nothing else is checked
        cols = _resolve(obj, labels, func)
        _pandas_args.na_position(na_position, func)
        if len(cols) > 1:
            asc = _pandas_args.orders(asc, len(cols), func)
        else:
            asc = [bool(asc[0] if isinstance(asc, list) else asc)]
    if key:
        cols = [(label, _mapped(c, label, key, isinstance(obj, pd.Series), func))
                for label, c in cols]
    return cols, asc


def _indexer(obj, by, ascending, na_position, key, func):
    cols, asc = _columns(obj, by, ascending, na_position, key, func)
    several = len(cols) > 1
    keys = []
    for (label, c), a in zip(cols, asc):
        k = _pandas_keys.column_key(c, label, a, na_position, several)
        keys.extend(k if isinstance(k, list) else [k])
    return _keys.order(keys, len(obj))


def _finish(obj, perm, ignore_index, method):
    pd = _pd()
    n = len(obj)
    if perm.size == n and (n == 0 or (perm[0] == 0 and perm[-1] == n - 1
                                      and np.array_equal(perm, np.arange(n)))):
        result = obj.copy(deep=False)            # pandas returns a copy when nothing moves
    else:
        result = _pandas_take.take(obj, perm, pd)
    if ignore_index:
        result.index = pd.RangeIndex(n)
    return result.__finalize__(obj, method=method)


# ---- public

def sort_values(obj, by=NO_BY, *, ascending=True, na_position="last", ignore_index=False,
                key=None):
    """What pandas' obj.sort_values(by, ascending=..., kind="stable", ...) returns, sorted by
    Kwker. `by` is for DataFrames (a label or list of labels, columns or index levels; None
    is the label None); a Series leaves it out."""
    if _switch.off():
        _check_obj(obj, "sort_values")
        kw = {} if by is NO_BY or (by is None and not hasattr(obj, "columns")) else {"by": by}
        return obj.sort_values(**kw, ascending=ascending, kind="stable",
                               na_position=na_position, ignore_index=ignore_index, key=key)
    perm = _indexer(obj, by, ascending, na_position, key, "sort_values")
    return _finish(obj, perm, bool(ignore_index), "sort_values")


def arg_sort(obj, by=NO_BY, *, ascending=True, na_position="last", key=None):
    """The int64 row positions that sort_values would put in order, without building the frame
    (obj.iloc[arg_sort(obj, by)] equals sort_values(obj, by))."""
    if _switch.off():
        return _pandas_positions(obj, by, ascending, na_position, key)
    return _indexer(obj, by, ascending, na_position, key, "arg_sort")


def _pandas_positions(obj, by, ascending, na_position, key):
    """arg_sort with pandas' own sort (KWKER_DISABLE=1): sorts a frame of positions."""
    pd = _check_obj(obj, "arg_sort")
    cols, asc = _columns(obj, by, ascending, na_position, None, "arg_sort")
    if not cols:
        return np.arange(len(obj), dtype=np.int64)
    frame = pd.DataFrame({i: pd.Series(c.array if hasattr(c, "array") else c, copy=False)
                          for i, (_, c) in enumerate(cols)})
    names = [label for label, _ in cols]
    mapper = None if not key else (lambda s: key(s.rename(names[s.name])))
    out = frame.sort_values(list(range(len(cols))), ascending=asc, kind="stable",
                            na_position=na_position, key=mapper)
    return out.index.to_numpy(dtype=np.int64)


def sort_index(obj, *, level=None, ascending=True, na_position="last", sort_remaining=True,
               ignore_index=False, key=None):
    """What pandas' obj.sort_index(level=..., ascending=..., kind="stable", ...) returns, sorted
    by Kwker; MultiIndex levels order by their values, as pandas orders them."""
    if _switch.off():
        _check_obj(obj, "sort_index")
        return obj.sort_index(level=level, ascending=ascending, kind="stable",
                              na_position=na_position, sort_remaining=sort_remaining,
                              ignore_index=ignore_index, key=key)
    pd = _check_obj(obj, "sort_index")
    perm = _pandas_index.indexer(obj, level, ascending, na_position, sort_remaining, key, pd)
    if perm is None:                           # already in order: pandas copies, sorts nothing
        result = obj.copy(deep=False)
        if ignore_index:
            result.index = pd.RangeIndex(len(obj))
        return result
    result = _finish(obj, perm, bool(ignore_index), "sort_index")
    if not ignore_index and isinstance(result.index, pd.MultiIndex) and \
            hasattr(result.index, "_sort_levels_monotonic"):
        result.index = result.index._sort_levels_monotonic()    # as pandas' sort_index does
    return result


__all__ = ["sort_values", "arg_sort", "sort_index", "NO_BY"]
