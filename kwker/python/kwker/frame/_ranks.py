"""Dictionary ranks: strings and other non-numeric values become integer ranks, so that Kwker's
integer kernels sort them. Only the dictionary (the distinct values) is ordered by a string
compare (Arrow's, or Python's for non-string objects); the rows are then sorted by rank."""
import numpy as np

from . import _lazy


def arrow_ranks(arr, name, lib):
    """(ranks uint32/int64, null mask or None, ndistinct) of a pyarrow Array/ChunkedArray."""
    pa = _lazy.require("pyarrow", "sorting an Arrow-backed column")
    pc = _lazy.require("pyarrow.compute", "sorting an Arrow-backed column")
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        enc = arr
    else:
        try:
            enc = pc.dictionary_encode(arr)
        except pa.ArrowNotImplementedError as exc:
            raise unsupported(name, str(arr.type), lib) from exc
    dictionary, indices = enc.dictionary, enc.indices
    try:
        dict_order = pc.sort_indices(dictionary).to_numpy()
    except pa.ArrowNotImplementedError as exc:
        raise unsupported(name, str(arr.type), lib) from exc
    rank = np.empty(len(dictionary), np.uint32)
    rank[dict_order] = np.arange(len(dictionary), dtype=np.uint32)
    null = None
    if indices.null_count:
        null = indices.is_null().to_numpy(zero_copy_only=False)
        indices = indices.fill_null(0)
    idx = indices.to_numpy(zero_copy_only=False)
    return rank[idx] if len(rank) else np.zeros(len(idx), np.uint32), null, len(dictionary)


def object_ranks(values, null, name, lib):
    """Ranks of an object array's non-null values (Python's ordering, as NumPy's argsort of
    the objects gives); raises TypeError for unhashable or mutually incomparable values."""
    pd = _lazy.require("pandas", "sorting an object column")
    valid = values if null is None else values[~null]
    try:
        codes, uniques = pd.factorize(valid, use_na_sentinel=True)
    except TypeError as exc:
        raise unsupported(name, _types(valid), lib, detail=str(exc)) from exc
    uniques = np.asarray(uniques, dtype=object)
    try:
        dict_order = _string_order(uniques)
        if dict_order is None:
            dict_order = np.argsort(uniques, kind="stable")
    except TypeError as exc:
        raise unsupported(name, _types(valid), lib, detail=str(exc)) from exc
    rank = np.empty(len(uniques), np.int64)
    rank[dict_order] = np.arange(len(uniques))
    # Values equal under == (1 and 1.0, say) are one dictionary entry, so they tie, as in a
    # stable sort of the objects themselves.
    out = np.zeros(len(values), np.int64)
    if null is None:
        out[:] = rank[codes]
    else:
        out[~null] = rank[codes]
    return out, len(uniques)


def _string_order(uniques):
    """Arrow's byte-order sort of the dictionary when every entry is a str (UTF-8 byte order
    is code-point order, Python's str order); None otherwise."""
    if not len(uniques) or not all(type(u) is str for u in uniques):
        return None
    try:
        pa = _lazy.require("pyarrow", "ranking strings")
        arr = pa.array(uniques, type=pa.large_string())
    except (ImportError, UnicodeEncodeError, ValueError, TypeError):
        return None                 # lone surrogates and the like: Python's compare instead
    pc = _lazy.require("pyarrow.compute", "ranking strings")
    return pc.sort_indices(arr).to_numpy()


def _types(values):
    names = sorted({type(v).__name__ for v in values[:10_000]})
    return "object holding " + ", ".join(names)


def unsupported(name, what, lib, detail=None, fix=None):
    extra = f" ({detail})" if detail else ""
    fix = fix or ("Sort by a column of numbers, strings, dates, booleans or categories, or "
                  "convert this one first (for example to strings with .astype(str)).")
    return TypeError(
        f"kwker.frame: column {name!r} has type {what}, which {lib} cannot order{extra}. {fix}")
