"""kwker.sort, argsort, sort_segments, topk: layout normalisation around the C calls.

Every function copies (or reads) the caller's data, never writes it. The C API wants C-contiguous
native-endian data, so a call copies only to fix layout or byte order; along an axis before the
last the C calls work down the columns (kwker_sort_cols, kwker_topk_cols) without moving it.
"""
import numpy as np

from . import _args, _backend, _dtypes

_ndarray = np.ndarray
_INT64 = np.dtype(np.int64)


def sort(a, axis=None, *, descending=False, nans_first=False, threads=None):
    """Sorted copy of `a` (flattened when axis is None, else along `axis`)."""
    # The default call (axis None on a 1-D array) is tested inline: a function call is a tenth
    # of the whole call's time for a short array.
    if type(a) is not _ndarray:  # lists, subclasses, other array types: as NumPy sees them
        a = _args.as_array(a)
    if not descending and not nans_first and threads is None:
        if a.ndim == 1 if axis is None else _last_axis(a, axis):
            out = _backend.sort_last(a)  # native arrays: one C call, no Python work
            if out is not None:
                return out
        elif type(axis) is int and -a.ndim <= axis < a.ndim:
            out = _backend.sort_axis(a, axis)  # the same before the last axis
            if out is not None:
                return out
        elif axis is None:
            out = _backend.sort_last(a, 0, 0, True)  # N-d: flattened in C order
            if out is not None:
                return out
    else:
        out = _fast_with_options(_backend.sort_last, _backend.sort_axis, a, axis,
                                 _args.flags(descending, nans_first),
                                 _args.threads(threads, "sort"))
        if out is not None:
            return out
    fl = _args.flags(descending, nans_first)
    th = _args.threads(threads, "sort")
    arr = _args.as_array(a)
    code, native = _dtypes.resolve(arr.dtype, "sort")
    impl = _backend.impl
    if axis is None:
        src = _contiguous_native(arr, native).reshape(-1)
        out = np.empty(src.shape, native)
        impl.sort_copy(code, _dtypes.c_view(src, code), _dtypes.c_view(out, code), fl, th)
        return out
    ax = _args.axis(axis, arr.ndim, "sort")
    src = _contiguous_native(arr, native)
    if ax != arr.ndim - 1:
        # Down the columns where they lie (kwker_sort_cols): no transposed copies. A copy made
        # here for layout or byte order is ours, so it is sorted in place.
        work = src if src is not arr else np.empty(src.shape, native)
        if src.size:
            outer, rows, cols = _around(src.shape, ax)
            impl.sort_cols(code, _dtypes.c_view(src, code), _dtypes.c_view(work, code), outer,
                           rows, cols, fl, th)
        return work
    work = np.empty(src.shape, native)
    cols = work.shape[-1]
    if work.size:
        impl.sort_rows(code, _dtypes.c_view(src, code), _dtypes.c_view(work, code),
                       work.size // cols, cols, fl, th)
    return work


def _fast_with_options(last, along, a, axis, fl, th):
    """The one-call fast paths with options (flags and threads already checked), or None where
    they decline or the axis is for the general path to check."""
    if axis is None:
        return last(a, fl, th, True)  # a 1-D array as a whole, an N-d one flattened
    if _last_axis(a, axis):
        return last(a, fl, th)
    if type(axis) is int and -a.ndim <= axis < a.ndim:
        return along(a, axis, fl, th)
    return None


def _around(shape, ax):
    """(outer, rows, cols) of a C-order array seen along axis ax: the axis's length, and the
    products of the lengths before and after it."""
    outer = 1
    for length in shape[:ax]:
        outer *= length
    cols = 1
    for length in shape[ax + 1:]:
        cols *= length
    return outer, shape[ax], cols


def _last_axis(a, axis):
    """Whether `axis` means the last axis of `a` (None means it for a 1-D array only)."""
    if axis is None:
        return a.ndim == 1
    return axis == -1 or (type(axis) is int and axis == a.ndim - 1 and axis >= 0)


def _contiguous_native(arr, native):
    # Input only: the C call reads it, so a copy is needed only to fix layout or byte order.
    return np.ascontiguousarray(arr, dtype=native)


def argsort(a, axis=None, *, descending=False, nans_first=False, threads=None):
    """Stable argsort (int64): of the flattened array when axis is None, else along `axis`."""
    if type(a) is not _ndarray:  # lists, subclasses, other array types: as NumPy sees them
        a = _args.as_array(a)
    if not descending and not nans_first and threads is None:
        if a.ndim == 1 if axis is None else _last_axis(a, axis):
            out = _backend.argsort_last(a)  # native arrays: one C call
            if out is not None:
                return out
        elif type(axis) is int and -a.ndim <= axis < a.ndim:
            out = _backend.argsort_axis(a, axis)
            if out is not None:
                return out
        elif axis is None:
            out = _backend.argsort_last(a, 0, 0, True)
            if out is not None:
                return out
    else:
        out = _fast_with_options(_backend.argsort_last, _backend.argsort_axis, a, axis,
                                 _args.flags(descending, nans_first),
                                 _args.threads(threads, "argsort"))
        if out is not None:
            return out
    fl = _args.flags(descending, nans_first)
    th = _args.threads(threads, "argsort")
    arr = _args.as_array(a)
    code, native = _dtypes.resolve(arr.dtype, "argsort")
    impl = _backend.impl
    if axis is None:
        data = _contiguous_native(arr.reshape(-1), native)
        out = np.empty(data.size, _INT64)
        if data.size:
            impl.argsort(code, _dtypes.c_view(data, code), out, fl, th)
        return out
    ax = _args.axis(axis, arr.ndim, "argsort")
    data = _contiguous_native(arr, native)
    out = np.empty(data.shape, _INT64)
    if not data.size:
        return out
    if ax != arr.ndim - 1:
        outer, rows, cols = _around(data.shape, ax)  # down the columns (kwker_sort_cols)
        impl.argsort_cols(code, _dtypes.c_view(data, code), outer, rows, cols, out, fl, th)
        return out
    cols = data.shape[-1]
    impl.argsort_rows(code, _dtypes.c_view(data, code), data.size // cols, cols, out, fl, th)
    return out


def _check_offsets(offsets, n):
    off = np.asarray(offsets)
    if off.ndim != 1:
        raise ValueError(f"kwker.sort_segments: offsets must be 1-D, got shape {off.shape}")
    if off.size and off.dtype.kind not in "iu":
        raise TypeError(f"kwker.sort_segments: offsets must be an integer array, got dtype "
                        f"{off.dtype}; convert with np.asarray(offsets, dtype=np.int64)")
    bad = np.flatnonzero((off < 0) | (off > n))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"kwker.sort_segments: offsets[{i}] = {int(off[i])} is outside "
                         f"[0, {n}] (len(values) = {n}); every offset must index into values")
    off = off.astype(_INT64, copy=False)
    dec = np.flatnonzero(off[1:] < off[:-1])
    if dec.size:
        i = int(dec[0]) + 1
        raise ValueError(f"kwker.sort_segments: offsets must be non-decreasing, but "
                         f"offsets[{i}] = {int(off[i])} < offsets[{i - 1}] = {int(off[i - 1])}")
    return np.ascontiguousarray(off)


def sort_segments(values, offsets, *, descending=False, nans_first=False,
                  return_indices=False, threads=None):
    """Sort each values[offsets[i]:offsets[i+1]] independently; the rest is copied unchanged.

    Returns the new values, or (values, indices) with indices into the original values when
    return_indices is true."""
    fl = _args.flags(descending, nans_first)
    th = _args.threads(threads, "sort_segments")
    if type(values) is _ndarray and type(offsets) is _ndarray:
        out = _backend.segments(values, offsets, fl, th, return_indices)  # one C call
        if out is not None:
            return out
    arr = _args.as_array(values)
    if arr.ndim != 1:
        raise ValueError(f"kwker.sort_segments: values must be 1-D, got shape {arr.shape}; "
                         "flatten it (values.ravel()) and adjust the offsets")
    code, native = _dtypes.resolve(arr.dtype, "sort_segments")
    off = _check_offsets(offsets, arr.size)
    impl = _backend.impl
    if return_indices:
        data = _contiguous_native(arr, native)
        idx = np.arange(arr.size, dtype=_INT64)
        if off.size >= 2 and arr.size:
            impl.argsort_segments(code, _dtypes.c_view(data, code), off, idx, fl, th)
        return data[idx], idx
    out = arr.astype(native, order="C", copy=True)
    if off.size >= 2 and arr.size:
        impl.sort_segments(code, _dtypes.c_view(out, code), off, fl, th)
    return out


def topk(a, k, axis=-1, *, largest=True, sorted=True):
    """(values, indices) of the k largest (or smallest) entries along `axis`.

    The first k entries of argsort(a, axis, descending=largest): NaNs last, ties by lower
    index. sorted=False returns the same entries in index order. axis=None uses the flattened
    array."""
    arr = _args.as_array(a)
    if type(k) is int and arr.ndim and _last_axis(arr, axis) and 0 <= k <= arr.shape[-1]:
        out = _backend.topk_last(arr, k, _args.DESCENDING if largest else 0, sorted)
        if out is not None:  # native C-ordered arrays: one C call
            return out
    code, native = _dtypes.resolve(arr.dtype, "topk")
    if isinstance(k, bool) or not hasattr(k, "__index__"):
        raise TypeError(f"kwker.topk: k must be an int, got {type(k).__name__}")
    k = int(k.__index__())
    if axis is None:
        arr, ax = arr.reshape(-1), 0
    else:
        ax = _args.axis(axis, arr.ndim, "topk")
    cols = arr.shape[ax]
    if not 0 <= k <= cols:
        raise ValueError(f"kwker.topk: k = {k} is out of range for axis {ax} of length {cols}; "
                         f"k must be in [0, {cols}]")
    fl = _args.DESCENDING if largest else 0
    moved = arr if ax == arr.ndim - 1 else np.moveaxis(arr, ax, -1)
    if ax != arr.ndim - 1 and not (moved.flags.c_contiguous and moved.dtype == native):
        # Along an axis before the last: down the columns of the C-order array where they lie
        # (kwker_topk_cols), the results already in place, instead of a transposed copy.
        data = _contiguous_native(arr, native)
        shape = data.shape[:ax] + (k,) + data.shape[ax + 1:]
        values = np.empty(shape, native)
        indices = np.empty(shape, _INT64)
        if values.size:
            _backend.impl.topk_cols(code, _dtypes.c_view(data, code), *_around(data.shape, ax), k,
                                    fl, bool(sorted), _dtypes.c_view(values, code), indices, 0)
        return values, indices
    data = _contiguous_native(moved, native)
    shape = data.shape[:-1] + (k,)
    values = np.empty(shape, native)
    indices = np.empty(shape, _INT64)
    if values.size:
        _backend.impl.topk_rows(code, _dtypes.c_view(data, code), data.size // cols, cols, k,
                                fl, bool(sorted), _dtypes.c_view(values, code), indices, 0)
    if ax == arr.ndim - 1:
        return values, indices
    return (np.ascontiguousarray(np.moveaxis(values, -1, ax)),
            np.ascontiguousarray(np.moveaxis(indices, -1, ax)))
