"""AVX-512 specific checks; skipped with a reason on CPUs without the engine."""
import numpy as np
import pytest

import kwker

pytestmark = [
    pytest.mark.avx512,
    pytest.mark.skipif("avx512" not in kwker.available_isas(),
                       reason="this CPU does not run the avx512 engine (needs AVX-512 F/BW/DQ/VL)"),
]


def test_avx512_is_default_and_validated():
    info = kwker.runtime_info()
    assert info["engines"]["default"] == "avx512"
    feats = info["cpu"]["features"]
    assert all(feats[f] for f in ("avx512f", "avx512bw", "avx512dq", "avx512vl"))
    assert kwker.self_check("avx512")["ok"] is True


def test_avx512_matches_portable_bit_for_bit():
    rng = np.random.default_rng(7)
    for dtype in ("int8", "uint16", "int32", "float16", "float32", "float64", "uint64"):
        a = rng.integers(0, 255, 70_000).astype(dtype)
        if a.dtype.kind == "f":
            a[::17] = np.nan
            a[::13] = -0.0
        with kwker.config(isa="portable"):
            s0, i0 = kwker.sort(a, descending=True), kwker.argsort(a, nans_first=True)
        with kwker.config(isa="avx512"):
            kwker.reset_counters()
            s1, i1 = kwker.sort(a, descending=True), kwker.argsort(a, nans_first=True)
            assert kwker.runtime_info()["counters"]["avx512"]["calls"] >= 2
        assert np.array_equal(s0.view(np.uint8), s1.view(np.uint8)), dtype
        assert np.array_equal(i0, i1), dtype
