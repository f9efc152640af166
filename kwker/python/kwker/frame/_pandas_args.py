"""pandas' own argument rules and wording, for kwker.frame's pandas functions.

kwker.frame accepts what pandas accepts and refuses what pandas refuses. Where pandas raises,
kwker.frame raises the same exception type, and its message starts with pandas' own words (so
programs and tests that match pandas' message keep working), followed by Kwker's hint in
parentheses. The rules follow pandas 3 (pandas/util/_validators.py, pandas/core/sorting.py).
"""
from collections import abc

import numpy as np


def hint(func, text):
    return f" (kwker.frame.{func}: {text})"


class LabelError(KeyError):
    """pandas' KeyError for a missing label: args[0] is the label, as in pandas; the message
    says, after pandas' repr of the label, what kwker.frame looked for."""

    def __init__(self, label, detail):
        super().__init__(label)
        self.detail = detail

    def __str__(self):
        return f"{self.args[0]!r} ({self.detail})"


def validate_bool(value, what, func):
    """pandas' validate_bool_kwarg(value, what, int_allowed=True): a bool or an int."""
    if isinstance(value, (bool, np.bool_, int)):
        return value
    raise ValueError(f'For argument "{what}" expected type bool, received type '
                     f"{type(value).__name__}." +
                     hint(func, f"give {what} as True or False, or a list of them"))


def ascending(value, func):
    """pandas' validate_ascending: a bool, or a sequence of bools (returned as a list)."""
    if not isinstance(value, abc.Sequence):
        return validate_bool(value, "ascending", func)
    return [validate_bool(v, "ascending", func) for v in value]


def series_ascending(value, func):
    """Series.sort_values' ascending: a bool, or a list-like of exactly one."""
    from pandas.api.types import is_list_like
    if is_list_like(value):
        if len(value) != 1:
            raise ValueError(f"Length of ascending ({len(value)}) must be 1 for Series" +
                             hint(func, "a Series sorts by its values: give one bool"))
        value = value[0]
    return bool(validate_bool(value, "ascending", func))


def frame_ascending(value, nby, func):
    """DataFrame.sort_values' ascending, checked against the number of `by` labels."""
    value = ascending(value, func)
    if isinstance(value, list) and len(value) != nby:
        raise ValueError(f"Length of ascending ({len(value)}) != length of by ({nby})" +
                         hint(func, "give one ascending flag per by label, or one bool"))
    return value


def na_position(value, func):
    if value not in ("first", "last"):
        raise ValueError(f"invalid na_position: {value}" +
                         hint(func, "na_position must be 'first' or 'last'"))


def orders(value, count, func, what="by label"):
    """The per-key directions of a several-key sort, as pandas' lexsort_indexer reads them:
    a bool for every key, or a list zipped strictly with the keys; anything else (an int, a
    NumPy bool) fails in pandas with 'object is not reversible', and so here."""
    if isinstance(value, bool):
        return [value] * count
    try:
        rev = list(reversed(value))
    except TypeError as exc:
        raise TypeError(f"{exc}" + hint(func, "give ascending as True or False, or a list of "
                                              f"them, one per {what}")) from None
    if len(rev) != count:
        side = "shorter" if len(rev) < count else "longer"
        raise ValueError(f"zip() argument 2 is {side} than argument 1" +
                         hint(func, f"ascending has {len(rev)} entries for {count} keys; give "
                                    f"one per {what}, or one bool"))
    return [bool(v) for v in value]
