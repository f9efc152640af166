"""Backend loader: the _fast extension (default) or ctypes over libkwker.

Both expose the same functions (see _ctypes_backend.CtypesBackend); `impl` is the active one and
`sort_last` / `argsort_last` its fast paths. KWKER_BACKEND=ctypes forces ctypes; without it a _fast that fails to
import falls back to ctypes (the reason is kept in `fallback_reason` and shown by the doctor).
Tests switch in-process with use("fast" | "ctypes").
"""
import os

EXPECTED_ABI = 1
BACKENDS = ("fast", "ctypes")

name = None            # "fast" | "ctypes"
impl = None            # the _fast module or a CtypesBackend
sort_last = None       # impl.sort_last, bound once for the hot path in _api.sort
argsort_last = None    # impl.argsort_last, the same for _api.argsort
sort_axis = None       # impl.sort_axis / argsort_axis: along an axis before the last
argsort_axis = None
topk_last = None       # impl.topk_last: _api.topk along the last axis
segments = None        # impl.segments: _api.sort_segments in one call
fallback_reason = None  # why the default fast backend was not used, or None

_loaded = {}


def _check_abi(backend, where):
    got = backend.abi_version()
    if got != EXPECTED_ABI:
        raise ImportError(
            f"libkwker ABI mismatch: {where} reports ABI version {got}, this kwker Python "
            f"package needs {EXPECTED_ABI}. The native library and the Python package come "
            "from different builds; reinstall kwker (pip install --force-reinstall kwker) or "
            "unset KWKER_LIBRARY")


def _load(which):
    if which in _loaded:
        return _loaded[which]
    if which == "fast":
        from kwker import _fast as backend
        _check_abi(backend, f"the libkwker linked by {backend.__file__}")
    elif which == "ctypes":
        from . import _ctypes_backend, _locate
        path = _locate.library_path()
        backend = _ctypes_backend.load(path)
        _check_abi(backend, path)
    else:
        raise ValueError(f"unknown kwker backend {which!r}; valid backends: "
                         + ", ".join(BACKENDS))
    _loaded[which] = backend
    return backend


def use(which):
    """Make `which` ("fast" or "ctypes") the active backend for every kwker call."""
    return activate(which, _load(which))


def activate(which, backend):
    """Make `backend` (of kind `which`) the active one. `python -m kwker bench --before`
    switches between ctypes backends over two libraries with it."""
    global name, impl, sort_last, argsort_last, sort_axis, argsort_axis, topk_last, segments
    backend.set_backend_name(which)
    name, impl = which, backend
    sort_last, argsort_last = backend.sort_last, backend.argsort_last
    sort_axis, argsort_axis = backend.sort_axis, backend.argsort_axis
    topk_last, segments = backend.topk_last, backend.segments
    return backend


def available():
    """The backends that load in this process."""
    out = []
    for which in BACKENDS:
        try:
            _load(which)
            out.append(which)
        except ImportError:
            pass
    return out


def init():
    """Pick the backend at import time from KWKER_BACKEND."""
    global fallback_reason
    requested = os.environ.get("KWKER_BACKEND", "")
    if requested not in ("",) + BACKENDS:
        raise ImportError(
            f"KWKER_BACKEND={requested!r} is not a kwker backend; set it to 'fast' or "
            "'ctypes', or unset it (the default is 'fast', falling back to 'ctypes')")
    if requested:
        use(requested)
        return
    try:
        use("fast")
    except ImportError as exc:
        fallback_reason = f"the _fast extension did not load ({exc}); using ctypes"
        use("ctypes")
