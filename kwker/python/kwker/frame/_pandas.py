"""kwker.frame for pandas: sort_values, arg_sort and sort_index, equal to pandas' own
sort_values(kind="stable") / sort_index(kind="stable"), with the row order computed by Kwker.

The caller's object is only read: keys are encoded into new arrays, and the result is built
with pandas' own `take`, so dtypes, column order, index and attrs come out as pandas makes them.
"""
import numpy as np

from . import _keys, _lazy, _pandas_keys, _pandas_take, _switch

_NA_POSITIONS = ("first", "last")


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


def _check_na_position(na_position, func):
    if na_position not in _NA_POSITIONS:
        raise ValueError(f"kwker.frame.{func}: na_position must be 'first' or 'last', got "
                         f"{na_position!r}")


def _flag(value, what, func):
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and value in (0, 1):
        return bool(value)
    raise ValueError(f"kwker.frame.{func}: {what} must be True or False (or a list of them), "
                     f"got {value!r}")


def _flags(value, count, what, func, of="by"):
    """A list of `count` booleans from a bool or a list of bools."""
    if isinstance(value, (list, tuple)):
        if len(value) != count:
            raise ValueError(f"kwker.frame.{func}: {what} has {len(value)} entries but {of} has "
                             f"{count}; give one {what} flag per {of} entry, or one bool")
        return [_flag(v, what, func) for v in value]
    return [_flag(value, what, func)] * count


# ---- which columns

def _resolve(obj, by, func):
    """[(label, column)] for the `by` labels: columns, or index level names as pandas allows."""
    pd = _pd()
    labels = by if isinstance(by, list) else [by]
    out = []
    for label in labels:
        in_cols = _has_label(obj.columns, label)
        in_levels = label is not None and label in obj.index.names
        if in_cols and in_levels:
            raise ValueError(f"kwker.frame.{func}: {label!r} is both an index level and a "
                             "column label, which is ambiguous; rename one of them")
        if in_cols:
            col = obj[label]
            if isinstance(col, pd.DataFrame):
                raise ValueError(f"kwker.frame.{func}: the column label {label!r} is not unique "
                                 f"({col.shape[1]} columns have it); rename the duplicates")
            out.append((label, col))
        elif in_levels:
            out.append((label, obj.index.get_level_values(label)))
        else:
            raise KeyError(f"kwker.frame.{func}: no column or index level named {label!r}; "
                           f"the columns are {list(obj.columns)[:20]}")
    return out


def _has_label(columns, label):
    try:
        return label in columns
    except TypeError:               # an unhashable label
        return False


def _mapped(col, label, key, is_series, func):
    """The column after the user's key= callable, which sees a copy (never the caller's data)."""
    pd = _pd()
    arg = col.copy() if is_series else pd.Series(col.array if hasattr(col, "array") else col,
                                                 name=label, copy=True)
    result = key(arg)
    try:
        length = len(result)
    except TypeError:
        length = None
    if length != len(arg):
        raise ValueError(f"kwker.frame.{func}: key= returned {length} values for "
                         f"{len(arg)} rows of {label!r}; key must return one value per row "
                         "(a Series or array of the same length)")
    if isinstance(result, (pd.Series, pd.Index)):
        return result
    return pd.Series(result) if not isinstance(result, pd.api.extensions.ExtensionArray) \
        else pd.Series(result, copy=False)


def _indexer(obj, by, ascending, na_position, key, func):
    pd = _check_obj(obj, func)
    _check_na_position(na_position, func)
    if key is not None and not callable(key):
        raise TypeError(f"kwker.frame.{func}: key must be a callable or None, got "
                        f"{type(key).__name__}")
    if isinstance(obj, pd.Series):
        if by is not None:
            raise TypeError(f"kwker.frame.{func}: by= is for DataFrames; a Series sorts by its "
                            "values (leave by out)")
        asc = _flags(ascending, 1, "ascending", func, of="a Series (its values)")
        cols = [(obj.name, obj)]
    else:
        if by is None:
            raise TypeError(f"kwker.frame.{func}: a DataFrame needs by= (a column label or a "
                            "list of them)")
        cols = _resolve(obj, by, func)
        asc = _flags(ascending, len(cols), "ascending", func)
    if key is not None:
        cols = [(label, _mapped(c, label, key, isinstance(obj, pd.Series), func))
                for label, c in cols]
    several = len(cols) > 1
    keys = [_pandas_keys.column_key(c, label, a, na_position, several)
            for (label, c), a in zip(cols, asc)]
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

def sort_values(obj, by=None, *, ascending=True, na_position="last", ignore_index=False,
                key=None):
    """What pandas' obj.sort_values(by, ascending=..., kind="stable", ...) returns, sorted by
    Kwker. `by` is for DataFrames (a label or list of labels, columns or index levels)."""
    if _switch.off():
        _check_obj(obj, "sort_values")
        kw = {} if by is None else {"by": by}
        return obj.sort_values(**kw, ascending=ascending, kind="stable",
                               na_position=na_position, ignore_index=ignore_index, key=key)
    perm = _indexer(obj, by, ascending, na_position, key, "sort_values")
    return _finish(obj, perm, _flag(ignore_index, "ignore_index", "sort_values"), "sort_values")


def arg_sort(obj, by=None, *, ascending=True, na_position="last", key=None):
    """The int64 row positions that sort_values would put in order, without building the frame
    (obj.iloc[arg_sort(obj, by)] equals sort_values(obj, by))."""
    if _switch.off():
        return _pandas_positions(obj, by, ascending, na_position, key)
    return _indexer(obj, by, ascending, na_position, key, "arg_sort")


def _pandas_positions(obj, by, ascending, na_position, key):
    """arg_sort with pandas' own sort (KWKER_DISABLE=1): sorts a frame of positions."""
    pd = _check_obj(obj, "arg_sort")
    _check_na_position(na_position, "arg_sort")
    cols = [(obj.name, obj)] if isinstance(obj, pd.Series) else _resolve(obj, by, "arg_sort")
    frame = pd.DataFrame({i: pd.Series(c.array if hasattr(c, "array") else c, copy=False)
                          for i, (_, c) in enumerate(cols)})
    names = [label for label, _ in cols]
    mapper = None if key is None else (lambda s: key(s.rename(names[s.name])))
    asc = ascending if not isinstance(obj, pd.Series) else (
        ascending[0] if isinstance(ascending, (list, tuple)) and len(ascending) == 1
        else ascending)
    out = frame.sort_values(list(range(len(cols))), ascending=asc, kind="stable",
                            na_position=na_position, key=mapper)
    return out.index.to_numpy(dtype=np.int64)


def sort_index(obj, *, level=None, ascending=True, na_position="last", ignore_index=False):
    """What pandas' obj.sort_index(level=..., ascending=..., kind="stable", ...) returns, sorted
    by Kwker; MultiIndex levels order by their values, as pandas orders them."""
    if _switch.off():
        _check_obj(obj, "sort_index")
        return obj.sort_index(level=level, ascending=ascending, kind="stable",
                              na_position=na_position, ignore_index=ignore_index)
    pd = _check_obj(obj, "sort_index")
    _check_na_position(na_position, "sort_index")
    index = obj.index
    if isinstance(index, pd.MultiIndex):
        keys = _multiindex_keys(index, level, ascending, na_position)
    else:
        if level is not None:
            _check_level(index, level)
        # pandas reads a list here by its truth value (any non-empty list sorts ascending)
        asc = bool(ascending) if isinstance(ascending, (list, tuple)) else \
            _flag(ascending, "ascending", "sort_index")
        keys = [_pandas_keys.column_key(index, index.name, asc, na_position, False)]
    perm = _keys.order(keys, len(obj))
    result = _finish(obj, perm, _flag(ignore_index, "ignore_index", "sort_index"), "sort_index")
    if not ignore_index and isinstance(result.index, pd.MultiIndex) and \
            hasattr(result.index, "_sort_levels_monotonic"):
        result.index = result.index._sort_levels_monotonic()    # as pandas' sort_index does
    return result


def _check_level(index, level):
    for lev in level if isinstance(level, (list, tuple)) else [level]:
        try:
            index._get_level_number(lev)
        except (KeyError, IndexError) as exc:
            raise KeyError(f"kwker.frame.sort_index: the index has no level {lev!r} "
                           f"(levels: {list(index.names)})") from exc


def _level_number(mi, lev):
    try:
        return mi._get_level_number(lev)
    except (KeyError, IndexError) as exc:
        raise KeyError(f"kwker.frame.sort_index: the index has no level {lev!r} "
                       f"(levels: {list(mi.names)})") from exc


def _multiindex_keys(mi, level, ascending, na_position):
    if level is None:
        nums = list(range(mi.nlevels))
        asc = _flags(ascending, len(nums), "ascending", "sort_index", of="the index levels")
    else:
        wanted = level if isinstance(level, (list, tuple)) else [level]
        nums = [_level_number(mi, lev) for lev in wanted]
        if isinstance(ascending, (list, tuple)):
            asc = _flags(ascending, len(nums), "ascending", "sort_index", of="level")
        else:   # pandas sorts the remaining levels too, in the same direction
            nums += [i for i in range(mi.nlevels) if i not in nums]
            asc = _flags(ascending, len(nums), "ascending", "sort_index")
    return [_level_key(mi, i, a, na_position) for i, a in zip(nums, asc)]


def _level_key(mi, i, ascending, na_position):
    """Key of MultiIndex level i: its codes mapped to the rank of each level value."""
    lev = mi.levels[i]
    codes = np.asarray(mi.codes[i])
    null = codes < 0
    if len(lev):
        lev_key = _pandas_keys.column_key(lev, mi.names[i], True, "last", False)
        rank = np.empty(len(lev), np.int64)
        rank[_keys.order([lev_key], len(lev))] = np.arange(len(lev))
        ranks = rank[np.where(null, 0, codes)]
    else:
        ranks = np.zeros(len(codes), np.int64)
    return _keys.Key(ranks, not ascending, null if null.any() else None,
                     na_position == "first", ncodes=len(lev))


__all__ = ["sort_values", "arg_sort", "sort_index"]
