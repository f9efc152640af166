"""kwker.frame.sort_index for pandas: what sort_index(kind="stable") returns, ordered by Kwker.

pandas' steps (pandas/core/sorting.py, get_indexer_indexer), followed here in pandas' order:
- key= maps the index first (each chosen level of a MultiIndex), on a copy;
- an index already in the asked order is not sorted: the result is a copy (ascending all true
  and the index monotonic increasing, or all false and monotonic decreasing), unless level=
  is given for a MultiIndex;
- level= on a MultiIndex sorts by those levels, then, when ascending is one bool and
  sort_remaining is true, by the other levels in index order; a list ascending needs one flag
  per level;
- level= on a flat index is not looked up (pandas' Index.sortlevel); ascending must then be a
  bool or a list of one bool;
- a MultiIndex without level= sorts by every level, ascending zipped with the levels;
- a flat index reads a list ascending by its truth value (any non-empty list sorts ascending).
MultiIndex levels order by their values, and the result's index has its levels sorted
(_sort_levels_monotonic), as pandas' sort_index leaves it.
"""
import numpy as np

from . import _keys, _pandas_args, _pandas_keys

_F = "sort_index"


def indexer(obj, level, ascending, na_position, sort_remaining, key, pd):
    """The stable row permutation, or None when pandas would not sort (already in order)."""
    asc = _pandas_args.ascending(ascending, _F)
    index = obj.index
    if key:
        from pandas.core.sorting import ensure_key_mapped
        index = ensure_key_mapped(index, key, levels=level)
    multi = isinstance(index, pd.MultiIndex)
    if (np.all(asc) and index.is_monotonic_increasing) or \
            (not np.any(asc) and index.is_monotonic_decreasing):
        if level is None or not multi:
            return None
    if multi:
        keys = _multiindex_keys(index, level, asc, na_position, sort_remaining)
    else:
        if level is not None:
            asc = _sortlevel_flag(asc)
        _pandas_args.na_position(na_position, _F)
        keys = _pandas_keys.column_key(index, index.name, bool(asc), na_position, False)
    return _keys.order(keys if isinstance(keys, list) else [keys], len(obj))


def _sortlevel_flag(asc):
    """pandas' Index.sortlevel (level= on a flat index): a bool, or a list of one bool."""
    if not isinstance(asc, (list, bool)):
        raise TypeError("ascending must be a single bool value ora list of bool values of "
                        "length 1" + _pandas_args.hint(_F, "give ascending as True or False"))
    if isinstance(asc, list):
        if len(asc) != 1:
            raise TypeError("ascending must be a list of bool values of length 1" +
                            _pandas_args.hint(_F, "a flat index has one level"))
        asc = asc[0]
    if not isinstance(asc, bool):
        raise TypeError("ascending must be a bool value" +
                        _pandas_args.hint(_F, "give ascending as True or False"))
    return asc


def _level_number(mi, lev):
    try:
        return mi._get_level_number(lev)
    except KeyError as exc:
        raise _pandas_args.LabelError(exc.args[0] if exc.args else lev,
                                      f"kwker.frame.sort_index: the index has no level "
                                      f"{lev!r}; its levels are {list(mi.names)}") from exc
    except IndexError as exc:
        raise IndexError(f"{exc}" + _pandas_args.hint(
            _F, f"the index has {mi.nlevels} levels: {list(mi.names)}")) from exc


def _multiindex_keys(mi, level, asc, na_position, sort_remaining):
    if level is None:
        nums = list(range(mi.nlevels))
        _pandas_args.na_position(na_position, _F)
        flags = _pandas_args.orders(asc, len(nums), _F, what="index level")
    else:
        wanted = level if _is_list_like(level) else [level]
        nums = [_level_number(mi, lev) for lev in wanted]
        if isinstance(asc, list):
            if len(nums) != len(asc):
                raise ValueError("level must have same length as ascending" + _pandas_args.hint(
                    _F, f"{len(asc)} ascending flags for {len(nums)} levels"))
        elif sort_remaining:       # pandas sorts by the other levels too, in the same direction
            nums += [i for i in range(mi.nlevels) if i not in nums]
        _pandas_args.na_position(na_position, _F)
        flags = _pandas_args.orders(asc, len(nums), _F, what="level")
    return [_level_key(mi, i, a, na_position) for i, a in zip(nums, flags)]


def _is_list_like(value):
    from pandas.api.types import is_list_like
    return is_list_like(value)


def _level_key(mi, i, ascending, na_position):
    """Key of MultiIndex level i: its codes mapped to the rank of each level value."""
    lev = mi.levels[i]
    codes = np.asarray(mi.codes[i])
    null = codes < 0
    if len(lev):
        lev_key = _pandas_keys.column_key(lev, mi.names[i], True, "last", False)
        rank = np.empty(len(lev), np.int64)
        rank[_keys.order(lev_key if isinstance(lev_key, list) else [lev_key], len(lev))] = \
            np.arange(len(lev))
        ranks = rank[np.where(null, 0, codes)]
    else:
        ranks = np.zeros(len(codes), np.int64)
    return _keys.Key(ranks, not ascending, null if null.any() else None,
                     na_position == "first", ncodes=len(lev))
