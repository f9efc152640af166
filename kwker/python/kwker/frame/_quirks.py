"""Behaviours of the installed library that differ between its versions, probed once."""
import functools

from . import _lazy


@functools.lru_cache(maxsize=None)
def nan_ties_inf():
    """True when pandas' several-column sort with na_position="first" encodes NaN of a NumPy
    float column as -inf (pandas 3.1), so that NaN and -inf tie in input order."""
    pd = _lazy.require("pandas", "sorting a pandas object")
    nan, inf = float("nan"), float("inf")
    df = pd.DataFrame({"a": [-inf, nan], "b": [0, 0]})
    got = df.sort_values(["a", "b"], na_position="first", kind="stable").index.tolist()
    return got == [0, 1]
