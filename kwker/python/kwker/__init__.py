"""Kwker: fast sorting for NumPy arrays on a C++ core with runtime-dispatched SIMD engines.

    kwker.sort(a, axis=None, *, descending=False, nans_first=False, threads=None)
    kwker.argsort(a, axis=None, *, descending=False, nans_first=False, threads=None)
    kwker.sort_segments(values, offsets, *, ..., return_indices=False)
    kwker.topk(a, k, axis=-1, *, largest=True, sorted=True)

See docs/python-api.md and docs/runtime-controls.md.
"""
from . import _backend

_backend.init()

from ._api import argsort, sort, sort_segments, topk  # noqa: E402
from ._runtime import (  # noqa: E402
    ALGORITHMS as _ALGORITHMS,
    ENGINES,
    available_isas,
    config,
    get_algorithms,
    get_isa,
    get_max_threads,
    release_scratch,
    reset_counters,
    runtime_info,
    self_check,
    set_algorithms,
    set_isa,
    set_max_threads,
    set_scratch_limit,
    set_scratch_policy,
)

__version__ = _backend.impl.version()


def _warn_isa_cap():
    # The C library records a bad KWKER_ISA instead of failing; say it once, at import.
    import warnings
    try:
        warning = runtime_info().get("isa_cap", {}).get("warning")
    except Exception:  # import must never fail over a diagnostic
        return
    if warning:
        warnings.warn(warning, RuntimeWarning, stacklevel=3)


_warn_isa_cap()
del _warn_isa_cap

__all__ = [
    "sort", "argsort", "sort_segments", "topk",
    "set_isa", "get_isa", "available_isas", "set_max_threads", "get_max_threads",
    "set_scratch_policy", "release_scratch", "set_scratch_limit", "set_algorithms",
    "get_algorithms", "config", "runtime_info", "self_check", "reset_counters", "ENGINES",
    "__version__",
]
