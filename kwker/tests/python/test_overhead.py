"""Per-call overhead of the fast path against np.sort (benchmark marker: run with -m benchmark)."""
import timeit

import numpy as np
import pytest

import kwker
from kwker import _backend


@pytest.mark.benchmark
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_small_sort_overhead(dtype):
    _backend.use("fast")
    a = np.random.default_rng(0).standard_normal(1000).astype(dtype) * 1000
    a = a.astype(dtype)
    t_np = min(timeit.repeat(lambda: np.sort(a), number=2000, repeat=7))
    t_kw = min(timeit.repeat(lambda: kwker.sort(a), number=2000, repeat=7))
    ratio = t_kw / t_np
    print(f"{dtype}: kwker/np.sort = {ratio:.2f} ({t_kw / 2000 * 1e6:.2f} us vs "
          f"{t_np / 2000 * 1e6:.2f} us)")
    assert ratio <= 1.2
