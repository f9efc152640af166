"""The ctypes backend: the same functions as the _fast extension, over libkwker via ctypes.

Used when KWKER_BACKEND=ctypes or when _fast does not import. Every function takes NumPy
arrays that the caller (_api) already made C-contiguous and native-endian.
"""
import ctypes

import numpy as np
from ctypes import POINTER, c_char_p, c_int, c_int64, c_size_t, c_uint, c_void_p

from . import _dtypes
from ._errors import E_BUFFER_TOO_SMALL, OK, exception_for

_SIGNATURES = {
    "kwker_abi_version": (c_int, []),
    "kwker_version": (c_char_p, []),
    "kwker_last_error": (c_char_p, []),
    "kwker_sort_copy": (c_int, [c_int, c_void_p, c_void_p, c_int64, c_uint, c_int]),
    "kwker_argsort": (c_int, [c_int, c_void_p, c_int64, c_void_p, c_uint, c_int]),
    "kwker_sort_rows_copy": (c_int, [c_int, c_void_p, c_void_p, c_int64, c_int64, c_uint,
                                     c_int]),
    "kwker_argsort_rows": (c_int, [c_int, c_void_p, c_int64, c_int64, c_void_p, c_uint, c_int]),
    "kwker_sort_segments": (c_int, [c_int, c_void_p, c_int64, c_void_p, c_int64, c_uint, c_int]),
    "kwker_argsort_segments": (c_int, [c_int, c_void_p, c_int64, c_void_p, c_int64, c_void_p,
                                       c_uint, c_int]),
    "kwker_topk_rows": (c_int, [c_int, c_void_p, c_int64, c_int64, c_int64, c_uint, c_int,
                                c_void_p, c_void_p, c_int]),
    "kwker_topk_cols": (c_int, [c_int, c_void_p, c_int64, c_int64, c_int64, c_int64, c_uint,
                                c_int, c_void_p, c_void_p, c_int]),
    "kwker_sort_cols": (c_int, [c_int, c_void_p, c_void_p, c_void_p, c_int64, c_int64, c_int64,
                                c_uint, c_int]),
    "kwker_kth_cols": (c_int, [c_int, c_void_p, c_int64, c_int64, c_int64, c_int64, c_uint,
                               c_void_p, c_void_p, c_int]),
    "kwker_sort_pairs_rows": (c_int, [c_int, c_void_p, c_void_p, c_void_p, c_int64, c_int64,
                                      c_uint, c_int]),
    "kwker_kth_rows": (c_int, [c_int, c_void_p, c_int64, c_int64, c_int64, c_uint, c_void_p,
                               c_void_p, c_int]),
    "kwker_set_isa": (c_int, [c_char_p]),
    "kwker_get_isa": (c_char_p, []),
    "kwker_isa_supported": (c_int, [c_char_p]),
    "kwker_set_max_threads": (c_int, [c_int]),
    "kwker_get_max_threads": (c_int, []),
    "kwker_set_scratch_cache": (c_int, [c_int64]),
    "kwker_release_scratch": (c_int, []),
    "kwker_set_scratch_limit": (c_int, [c_int64]),
    "kwker_set_algorithms": (c_int, [c_uint]),
    "kwker_get_algorithms": (c_uint, []),
    "kwker_reset_counters": (c_int, []),
    "kwker_set_backend_name": (c_int, [c_char_p]),
    "kwker_runtime_info": (c_int, [c_char_p, c_size_t, POINTER(c_size_t)]),
    "kwker_self_check": (c_int, [c_char_p, c_char_p, c_size_t, POINTER(c_size_t)]),
    "kwker_set_tuning": (c_int, [c_char_p, c_int64]),
    "kwker_get_tuning": (c_int, [c_char_p, POINTER(c_int64)]),
}


_from_buffer = ctypes.c_char.from_buffer
_addressof = ctypes.addressof


def _ptr(arr):
    """Data address of a contiguous array. from_buffer is ~7x cheaper than arr.ctypes.data but
    needs a writable, non-empty buffer; anything else takes the slow route."""
    try:
        return _addressof(_from_buffer(arr))
    except (TypeError, ValueError, BufferError):
        return arr.ctypes.data


class MissingFunction(AttributeError):
    """A call to a C function the loaded libkwker does not have (an older build, loaded with
    missing_ok for `python -m kwker bench --before`)."""


class _Lib:
    """The CDLL with the functions it lacks standing in as callables that raise
    MissingFunction, so the rest of an older library stays usable."""

    def __init__(self, lib, path, missing):
        self._lib, self._path, self._missing = lib, path, missing

    def __getattr__(self, fn):
        if fn in self._missing:
            def absent(*args):
                raise MissingFunction(f"{self._path} has no {fn} (a build older than this C "
                                      "API); use a libkwker built from a newer commit")
            return absent
        return getattr(self._lib, fn)


class CtypesBackend:
    name = "ctypes"

    def __init__(self, path, missing_ok=False):
        lib = ctypes.CDLL(path)
        self.missing = []  # C functions this library lacks (only with missing_ok)
        for fn, (res, args) in _SIGNATURES.items():
            try:
                f = getattr(lib, fn)
            except AttributeError:
                if not missing_ok:
                    raise
                self.missing.append(fn)
                continue
            f.restype = res
            f.argtypes = args
        self.lib = _Lib(lib, path, set(self.missing)) if self.missing else lib
        self.path = path
        self._codes = _dtypes.CODES

    # ---- helpers ----
    def _raise(self, status):
        msg = self.lib.kwker_last_error()
        raise exception_for(status, msg.decode("utf-8", "replace") if msg else "")

    def _check(self, status):
        if status != OK:
            self._raise(status)

    # ---- version ----
    def abi_version(self):
        return self.lib.kwker_abi_version()

    def version(self):
        return self.lib.kwker_version().decode()

    def last_error(self):
        msg = self.lib.kwker_last_error()
        return msg.decode("utf-8", "replace") if msg else ""

    # ---- sorting ----
    def _last_axis(self, a):
        """(code, rows, cols) of a C-contiguous array of a native dtype, or None to decline."""
        code = self._codes.get(a.dtype)
        if code is None or a.ndim < 1 or not a.flags.c_contiguous:
            return None
        cols = a.shape[-1]
        return code, (a.size // cols if cols else 0), cols

    def sort_last(self, a, flags=0, threads=0, flat=False):
        """Fast path: sorted along the last axis (a 1-D array as a whole; flat: any C-contiguous
        array as one run), or None. Strided arrays are declined (_fast gathers them)."""
        got = self._last_axis(a)
        if got is None:
            return None
        code, rows, cols = got
        if flat:
            rows, cols = (1, a.size) if a.size else (0, 0)
        r = np.empty(a.size if flat else a.shape, a.dtype)
        if r.size:
            self._check(self.lib.kwker_sort_rows_copy(code, _ptr(a), _ptr(r), rows, cols, flags,
                                                      threads))
        return r

    def argsort_last(self, a, flags=0, threads=0, flat=False):
        """Fast path: stable argsort along the last axis (flat: as sort_last), or None."""
        got = self._last_axis(a)
        if got is None:
            return None
        code, rows, cols = got
        if flat:
            rows, cols = (1, a.size) if a.size else (0, 0)
        r = np.empty(a.size if flat else a.shape, np.int64)
        if r.size:
            self._check(self.lib.kwker_argsort_rows(code, _ptr(a), rows, cols, _ptr(r), flags,
                                                    threads))
        return r

    def topk_last(self, a, k, flags, sorted):
        """Fast path: (values, indices) of kwker_topk_rows along the last axis, or None."""
        got = self._last_axis(a)
        if got is None or not 0 <= k <= a.shape[-1]:
            return None
        code, rows, cols = got
        values = np.empty(a.shape[:-1] + (k,), a.dtype)
        indices = np.empty(values.shape, np.int64)
        if values.size:
            self._check(self.lib.kwker_topk_rows(code, _ptr(a), rows, cols, k, flags,
                                                 bool(sorted), _ptr(values), _ptr(indices), 0))
        return values, indices

    def segments(self, values, offsets, flags, threads, return_indices):
        """Fast path of sort_segments: None, always: through ctypes a call costs microseconds
        of its own (troubleshooting.md), so _api.py's checks of the offsets and its general path
        serve here."""
        return None

    def _axis(self, a, axis):
        """(code, outer, rows, cols) of a C-contiguous native array along an axis before the
        last (the caller checked -a.ndim <= axis < a.ndim), or None to decline."""
        code = self._codes.get(a.dtype)
        ax = axis + a.ndim if axis < 0 else axis
        if code is None or ax >= a.ndim - 1 or not a.flags.c_contiguous:
            return None
        outer = 1
        for length in a.shape[:ax]:
            outer *= length
        return code, outer, a.shape[ax], (a.size // (outer * a.shape[ax]) if a.size else 0)

    def sort_axis(self, a, axis, flags=0, threads=0):
        """Fast path: sorted along an axis before the last (kwker_sort_cols), or None."""
        got = self._axis(a, axis)
        if got is None:
            return None
        code, outer, rows, cols = got
        r = np.empty_like(a)
        if r.size:
            self._check(self.lib.kwker_sort_cols(code, _ptr(a), _ptr(r), None, outer, rows, cols,
                                                 flags, threads))
        return r

    def argsort_axis(self, a, axis, flags=0, threads=0):
        """Fast path: stable argsort along an axis before the last, or None."""
        got = self._axis(a, axis)
        if got is None:
            return None
        code, outer, rows, cols = got
        r = np.empty(a.shape, np.int64)
        if r.size:
            self._check(self.lib.kwker_sort_cols(code, _ptr(a), None, _ptr(r), outer, rows, cols,
                                                 flags, threads))
        return r

    def sort_copy(self, code, src, dst, flags, threads):
        self._check(self.lib.kwker_sort_copy(code, _ptr(src), _ptr(dst), src.size, flags,
                                             threads))

    def argsort(self, code, arr, out, flags, threads):
        self._check(self.lib.kwker_argsort(code, _ptr(arr), arr.size, _ptr(out),
                                           flags, threads))

    def sort_rows(self, code, src, dst, rows, cols, flags, threads):
        self._check(self.lib.kwker_sort_rows_copy(code, _ptr(src), _ptr(dst), rows, cols,
                                                  flags, threads))

    def argsort_rows(self, code, arr, rows, cols, out, flags, threads):
        self._check(self.lib.kwker_argsort_rows(code, _ptr(arr), rows, cols,
                                                _ptr(out), flags, threads))

    def sort_segments(self, code, arr, offsets, flags, threads):
        self._check(self.lib.kwker_sort_segments(code, _ptr(arr), arr.size,
                                                 _ptr(offsets), offsets.size, flags,
                                                 threads))

    def argsort_segments(self, code, arr, offsets, out, flags, threads):
        self._check(self.lib.kwker_argsort_segments(code, _ptr(arr), arr.size,
                                                    _ptr(offsets), offsets.size,
                                                    _ptr(out), flags, threads))

    def topk_rows(self, code, arr, rows, cols, k, flags, sorted_, out_values, out_indices,
                  threads):
        self._check(self.lib.kwker_topk_rows(code, _ptr(arr), rows, cols, k, flags,
                                             1 if sorted_ else 0, _ptr(out_values),
                                             _ptr(out_indices), threads))

    def topk_cols(self, code, arr, outer, rows, cols, k, flags, sorted_, out_values,
                  out_indices, threads):
        self._check(self.lib.kwker_topk_cols(code, _ptr(arr), outer, rows, cols, k, flags,
                                             1 if sorted_ else 0, _ptr(out_values),
                                             _ptr(out_indices), threads))

    def sort_cols(self, code, src, dst, outer, rows, cols, flags, threads):
        self._check(self.lib.kwker_sort_cols(code, _ptr(src), _ptr(dst), None, outer, rows, cols,
                                             flags, threads))

    def argsort_cols(self, code, arr, outer, rows, cols, out, flags, threads):
        self._check(self.lib.kwker_sort_cols(code, _ptr(arr), None, _ptr(out), outer, rows, cols,
                                             flags, threads))

    # ---- kwker.torch_ops: raw addresses of contiguous CPU tensors (see _fast's *_ptr) ----
    def sort_pairs_ptr(self, code, src, vals, idx, rows, cols, flags, threads):
        self._check(self.lib.kwker_sort_pairs_rows(code, src or None, vals or None, idx or None,
                                                   rows, cols, flags, threads))

    def topk_rows_ptr(self, code, src, rows, cols, k, flags, sorted_, vals, idx, threads):
        self._check(self.lib.kwker_topk_rows(code, src or None, rows, cols, k, flags,
                                             1 if sorted_ else 0, vals or None, idx or None,
                                             threads))

    def topk_cols_ptr(self, code, src, outer, rows, cols, k, flags, sorted_, vals, idx,
                      threads):
        self._check(self.lib.kwker_topk_cols(code, src or None, outer, rows, cols, k, flags,
                                             1 if sorted_ else 0, vals or None, idx or None,
                                             threads))

    def sort_cols_ptr(self, code, src, vals, idx, outer, rows, cols, flags, threads):
        self._check(self.lib.kwker_sort_cols(code, src or None, vals or None, idx or None,
                                             outer, rows, cols, flags, threads))

    def kth_cols_ptr(self, code, src, outer, rows, cols, rank, flags, vals, idx, threads):
        self._check(self.lib.kwker_kth_cols(code, src or None, outer, rows, cols, rank, flags,
                                            vals or None, idx or None, threads))

    def kth_rows_ptr(self, code, src, rows, cols, rank, flags, vals, idx, threads):
        self._check(self.lib.kwker_kth_rows(code, src or None, rows, cols, rank, flags,
                                            vals or None, idx or None, threads))

    # ---- runtime controls ----
    def set_isa(self, name):
        self._check(self.lib.kwker_set_isa(None if name is None else name.encode()))

    def get_isa(self):
        return self.lib.kwker_get_isa().decode()

    def isa_supported(self, name):
        return bool(self.lib.kwker_isa_supported(name.encode()))

    def set_max_threads(self, n):
        self._check(self.lib.kwker_set_max_threads(n))

    def get_max_threads(self):
        return self.lib.kwker_get_max_threads()

    def set_scratch_cache(self, nbytes):
        self._check(self.lib.kwker_set_scratch_cache(nbytes))

    def release_scratch(self):
        self._check(self.lib.kwker_release_scratch())

    def set_scratch_limit(self, nbytes):
        self._check(self.lib.kwker_set_scratch_limit(nbytes))

    def set_algorithms(self, mask):
        self._check(self.lib.kwker_set_algorithms(mask))

    def get_algorithms(self):
        return int(self.lib.kwker_get_algorithms())

    def reset_counters(self):
        self._check(self.lib.kwker_reset_counters())

    def set_tuning(self, name, value):
        self._check(self.lib.kwker_set_tuning(name.encode(), value))

    def get_tuning(self, name):
        v = c_int64(0)
        self._check(self.lib.kwker_get_tuning(name.encode(), ctypes.byref(v)))
        return v.value

    def set_backend_name(self, name):
        self._check(self.lib.kwker_set_backend_name(name.encode()))

    def _json_call(self, fn, *lead):
        """Call a (…, buf, cap, needed) query, growing the buffer once if it is too small."""
        needed = c_size_t(0)
        cap = 8192
        for _ in range(3):
            buf = ctypes.create_string_buffer(cap)
            st = fn(*lead, buf, cap, ctypes.byref(needed))
            if st != E_BUFFER_TOO_SMALL:
                return st, buf.value.decode("utf-8", "replace")
            cap = max(needed.value, cap * 2)
        self._raise(st)

    def runtime_info(self):
        st, text = self._json_call(self.lib.kwker_runtime_info)
        self._check(st)
        return text

    def self_check(self, name):
        """(status, json text); the caller decides what a failing status means."""
        return self._json_call(self.lib.kwker_self_check, name.encode())


def load(path, missing_ok=False):
    """The ctypes backend over the libkwker at `path`. missing_ok: a library without some of
    the C functions this Python code knows loads anyway (`missing` lists them; calling one raises
    MissingFunction), as `--before` needs for a previous build."""
    return CtypesBackend(path, missing_ok)

