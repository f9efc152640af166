"""Polars' own rules around a sort, which kwker.frame.sort follows (Polars 2.1):

- Errors: the exception Polars raises, with Polars' message first and Kwker's hint after it
  in parentheses. Where kwker.frame documented a built-in type (KeyError for a missing
  column, ValueError for a flag list of the wrong length or a key of the wrong length,
  TypeError for a column it cannot order), the exception is both: it subclasses Polars' class
  and the built-in one.
- Flags: descending / nulls_last are a bool, or a list of bools with one per key (a DataFrame);
  a Series takes bools only.
- Already sorted: a sort by one key whose column carries Polars' sorted flag in the asked
  direction, with its nulls already at the asked end, returns a clone, with its chunks.
- Sorted flags: the result's first key column (a column, not a computed expression; an
  all-null key column does not count) is flagged SORTED_ASC / SORTED_DESC as Polars flags
  it (not a Categorical, which Polars orders by string); a sorted Series likewise.
"""
from . import _lazy

_CLASSES = {}


def _pl():
    return _lazy.require("polars", "sorting a Polars object")


def error(polars_name, builtin, message, hint):
    """An exception of Polars' class `polars_name` (and of `builtin`, when given)."""
    pl = _pl()
    base = getattr(pl.exceptions, polars_name)
    text = f"{message} (kwker.frame.sort: {hint})"
    if builtin is None:
        return base(text)
    key = (polars_name, builtin)
    if key not in _CLASSES:
        _CLASSES[key] = type(polars_name, (base, builtin), {
            "__module__": __name__, "__str__": Exception.__str__,
            "__doc__": f"Polars' {polars_name}, also a {builtin.__name__} (kwker.frame)."})
    return _CLASSES[key](text)


def column_not_found(name, columns):
    valid = "[" + ", ".join(f'"{c}"' for c in columns) + "]"
    return error("ColumnNotFoundError", KeyError,
                 f'unable to find column "{name}"; valid columns: {valid}',
                 f"no column named {name!r}; sort by one of the columns, or an expression")


def flags(value, count, what):
    """Polars' reading of descending / nulls_last for `count` keys."""
    if isinstance(value, bool):
        return [value] * count
    if isinstance(value, str):
        raise TypeError("Can't extract `str` to `Vec`" + _hint(what))
    try:
        length = len(value)
    except TypeError:
        raise TypeError(f"object of type '{type(value).__name__}' has no len()" +
                        _hint(what)) from None
    if length != count:
        raise ValueError(f"the length of `{what}` ({length}) does not match the length of "
                         f"`by` ({count})" + _hint(what, f"{what} has {length} entries but by "
                                                         f"has {count}"))
    for v in value:
        if not isinstance(v, bool):
            raise TypeError(f"'{type(v).__name__}' object is not an instance of 'bool'" +
                            _hint(what))
    return list(value)


def series_flag(value, what):
    if not isinstance(value, bool):
        raise TypeError(f"'{type(value).__name__}' object is not an instance of 'bool'" +
                        _hint(what))
    return value


def _hint(what, detail=None):
    lead = f"{detail}; " if detail else ""
    return (f" (kwker.frame.sort: {lead}give {what} as True or False, or a list with one "
            "per by entry)")


def shape_mismatch(height, length):
    return error("ShapeError", ValueError,
                 f"sort expressions must have same length as DataFrame, got DataFrame height: "
                 f"{height} and Series length: {length}",
                 "a sort key needs one value per row")


def not_sortable(name, dtype):
    return error("InvalidOperationError", TypeError,
                 f"column '{name}' has a dtype of '{dtype}', which does not support sorting",
                 "sort by a column of numbers, strings, dates, booleans or categories")


# ---- already sorted, and the sorted flag

def _is_sorted_as(s, descending, nulls_last):
    f = s.flags
    if not (f["SORTED_DESC"] if descending else f["SORTED_ASC"]):
        return False
    nulls = s.null_count()
    if nulls == 0 or nulls == len(s):
        return True
    return s[-1] is None if nulls_last else s[0] is None


def already_sorted(keys, descending, nulls_last):
    """Polars' fast path: one key, flagged sorted in the asked direction, nulls in place."""
    return len(keys) == 1 and _is_sorted_as(keys[0][1], descending[0], nulls_last[0])


def flag_first_key(out, keys, descending):
    """Flags the result's first key column as Polars' sort does (in place; returns out)."""
    pl = _pl()
    for (name, s, is_column), desc in zip(keys, descending):
        dtype = s.dtype
        if dtype == pl.Null:
            continue                                  # an all-null key: every row ties
        if is_column and not isinstance(dtype, pl.Categorical):
            idx = out.get_column_index(name)
            out.replace_column(idx, out.to_series(idx).set_sorted(descending=desc))
        return out
    return out


def flag_series(s, descending):
    pl = _pl()
    if s.dtype == pl.Null or isinstance(s.dtype, pl.Categorical):
        return s
    return s.set_sorted(descending=descending)
