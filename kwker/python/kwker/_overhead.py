"""What one small call costs through each backend, measured in this process on this build.

The doctor's fast-path warning and the benchmark's overhead rows both use `measure()`, so the
figure a user reads is what this build does on this machine, not a number from a document.
"""
import time

import numpy as np

from . import _backend

_N = 8  # elements per call: small enough that the call overhead is all there is


def _per_call(fn, batches=5, calls=400):
    fn()
    best = float("inf")
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


def measure():
    """Seconds per call of kwker.sort on an 8-element float64 array through every backend that
    loads here ({"fast": s or None, "ctypes": s or None}), and of np.sort on the same array."""
    import kwker
    a = np.random.default_rng(0).random(_N)
    out = {"elements": _N, "numpy": _per_call(lambda: np.sort(a))}
    before = _backend.name
    try:
        for which in _backend.BACKENDS:
            try:
                _backend.use(which)
            except ImportError:
                out[which] = None
                continue
            out[which] = _per_call(lambda: kwker.sort(a))
    finally:
        _backend.use(before)
    return out
