"""Short inputs through the Python API, on every backend x engine, against the NumPy-only
reference: rows, segments, top-k and 1-D calls of lengths around every path boundary (the
tiny networks, one register, one network, two networks and a merge, the quicksort), with ties,
NaNs, +-0.0, descending and nans_first. (The native suite covers every length 0-130 on every
engine; this checks the same paths through both backends and the fast last-axis calls.)"""
import numpy as np
import pytest

from kwker import _runtime

LENGTHS = sorted(set(range(0, 21)) | {31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 130, 170,
                                      255, 256, 257, 380, 511, 512, 513, 1000, 1024, 1025})
FLAGS = ((False, False), (True, True))


def _mixed(ref, dtype, n, rng):
    """Ties, NaNs, +-0 and extremes mixed in one array (for floats and datetimes)."""
    parts = [ref.make(dtype, d, n, rng) for d in ref.distributions(dtype)]
    pick = rng.integers(0, len(parts), n)
    return np.ascontiguousarray(np.choose(pick, parts) if n else parts[0])


@pytest.mark.parametrize("dtype", ["bool", "int8", "int16", "uint16", "int32", "uint32", "int64",
                                   "uint64", "float16", "float32", "float64", "datetime64[ns]"])
def test_rows_segments_topk_and_1d_of_every_short_length(kw, ref, rng, dtype):
    for cols in LENGTHS:
        rows = max(3, 70 // max(cols, 1) + 3)
        m = _mixed(ref, dtype, rows * cols, rng).reshape(rows, cols)
        for desc, nf in FLAGS:
            what = f"{dtype} cols={cols} desc={desc} nans_first={nf}"
            want_idx = np.stack([ref.argsort(r, desc, nf) for r in m]) if cols else \
                np.zeros((rows, 0), np.int64)
            want_val = np.stack([ref.sort(r, desc, nf) for r in m]) if cols else m.copy()
            ref.same(kw.sort(m, axis=1, descending=desc, nans_first=nf), want_val, what)
            np.testing.assert_array_equal(
                kw.argsort(m, axis=1, descending=desc, nans_first=nf), want_idx, err_msg=what)
            offsets = np.arange(0, rows * cols + 1, max(cols, 1))[: rows + 1]
            flat = m.reshape(-1)
            if cols:
                v, i = kw.sort_segments(flat, offsets, descending=desc, nans_first=nf,
                                        return_indices=True)
                np.testing.assert_array_equal(
                    i, (want_idx + offsets[:-1, None]).reshape(-1), err_msg=what)
                ref.same(kw.sort_segments(flat, offsets, descending=desc, nans_first=nf),
                         want_val.reshape(-1), what)
            if not nf and cols:
                k = min(cols, 5)
                tv, ti = kw.topk(m, k, axis=1, largest=desc)
                np.testing.assert_array_equal(ti, want_idx[:, :k], err_msg=what)
            if cols and rows:
                row = np.ascontiguousarray(m[0])
                ref.same(kw.sort(row, descending=desc, nans_first=nf), want_val[0], what)
                np.testing.assert_array_equal(kw.argsort(row, descending=desc, nans_first=nf),
                                              want_idx[0], err_msg=what)


def test_every_knob_boundary_with_the_knob_default_and_forced_off(kw, ref, rng):
    """Sizes at each size knob +-1 (its value on this engine), with the knobs at their
    defaults and with every short path switched off, through the last-axis fast paths."""
    knobs = [k for k in _runtime.TUNING_KNOBS if "network" in k or "pair" in k or "tiny" in k]
    sizes = sorted({v + d for v in (_runtime.get_tuning(k) for k in knobs) for d in (-1, 0, 1)
                    if 0 <= v + d <= 2048})
    for off in (False, True):
        with _runtime.tuning(**{k: 0 for k in knobs} if off else {}):
            for dtype in ("int16", "float32", "float64", "uint64"):
                for n in sizes:
                    a = _mixed(ref, dtype, n, rng)
                    what = f"{dtype} n={n} forced_off={off}"
                    ref.same(kw.sort(a), ref.sort(a), what)
                    np.testing.assert_array_equal(kw.argsort(a), ref.argsort(a), err_msg=what)
                    m = np.stack([a, a[::-1]])
                    np.testing.assert_array_equal(kw.argsort(m, axis=1, descending=True),
                                                  np.stack([ref.argsort(r, True) for r in m]),
                                                  err_msg=what)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_sorts_stay_exact_when_denormals_read_as_zero(kw, ref, rng, dtype):
    """On AVX-512, float sorts compare the values as floats where that order is the total order.
    torch.set_flush_denormal(True) sets MXCSR's DAZ bit, which makes float comparisons read
    denormals as zero: the sorts must see it and keep the exact order (integer keys)."""
    torch = pytest.importorskip("torch")
    tiny = np.finfo(dtype).smallest_subnormal
    for n in (16, 65, 200, 512, 1000, 5000):
        a = np.concatenate([rng.integers(1, 50, n // 2).astype(dtype) * tiny,
                            rng.standard_normal(n - n // 2).astype(dtype)])
        a[::7] = 0.0
        a = np.ascontiguousarray(rng.permutation(a))
        m = np.ascontiguousarray(np.stack([a, a[::-1], rng.permutation(a)]))
        want = ref.sort(a, False, False)
        want_rows = np.stack([ref.sort(r, False, False) for r in m])
        if not torch.set_flush_denormal(True):
            pytest.skip("this CPU cannot flush denormals")
        try:
            got, got_rows = kw.sort(a), kw.sort(m, axis=1)
        finally:
            torch.set_flush_denormal(False)
        ref.same(got, want, f"{dtype} n={n} with DAZ")
        ref.same(got_rows, want_rows, f"{dtype} rows of {n} with DAZ")
