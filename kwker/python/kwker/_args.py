"""Argument checks shared by the API functions (flags, threads, axis)."""
import operator

import numpy as np

try:
    from numpy.exceptions import AxisError
except ImportError:  # numpy < 1.25
    from numpy import AxisError

DESCENDING = 1
NANS_FIRST = 2


def flags(descending, nans_first):
    return (DESCENDING if descending else 0) | (NANS_FIRST if nans_first else 0)


def threads(value, func):
    """threads=None -> 0 (the process budget); else an int >= 1."""
    if value is None:
        return 0
    if type(value) is int and 0 < value < 2**31:  # the common case, without the checks below
        return value
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"kwker.{func}: threads must be an int >= 1 or None, "
                        f"got {type(value).__name__}")
    n = operator.index(value)
    if n < 1:
        raise ValueError(f"kwker.{func}: threads must be >= 1 (or None for the process "
                         f"budget set by kwker.set_max_threads), got {n}")
    return min(n, 2**31 - 1)


def axis(value, ndim, func):
    """Normalise an int axis against ndim, raising numpy's AxisError like numpy does."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"kwker.{func}: axis must be an int or None, "
                        f"got {type(value).__name__}")
    ax = operator.index(value)
    if not -ndim <= ax < ndim:
        raise AxisError(ax, ndim)
    return ax % ndim


def as_array(a):
    return a if type(a) is np.ndarray else np.asarray(a)
