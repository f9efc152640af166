"""sort_segments and topk against NumPy references."""
import zlib

import numpy as np
import pytest

import kwker


def _ref_segments(values, offsets, descending, nans_first, ref):
    """Indices: the stable reference argsort inside each segment, identity elsewhere."""
    idx = np.arange(values.size)
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        idx[lo:hi] = ref.argsort(values[lo:hi], descending, nans_first) + lo
    return idx


def test_segments_random(kw, ref, rng):
    for dtype in ("float64", "int32", "uint8", "float16", "datetime64[s]"):
        for n in (0, 1, 10, 257, 5000):
            vals = ref.make(dtype, "few" if n % 2 else "uniform", n, rng)
            if vals.dtype.kind == "f" and n:
                vals[rng.random(n) < 0.1] = np.nan
            cuts = np.sort(rng.integers(0, n + 1, rng.integers(0, 12)))
            for desc, nf in ((False, False), (True, False), (False, True)):
                before = vals.copy()
                got, idx = kw.sort_segments(vals, cuts, descending=desc, nans_first=nf,
                                            return_indices=True)
                want = _ref_segments(vals, cuts, desc, nf, ref)
                np.testing.assert_array_equal(idx, want, err_msg=f"{dtype} n={n}")
                ref.same(got, vals[idx], f"{dtype} n={n}")
                only = kw.sort_segments(vals, cuts, descending=desc, nans_first=nf)
                # sort_segments orders by the total order (-0.0 first); compare as values
                np.testing.assert_array_equal(only, vals[idx])
                if cuts.size:
                    assert np.array_equal(ref.bits(only[:cuts[0]]), ref.bits(vals[:cuts[0]]))
                    assert np.array_equal(ref.bits(only[cuts[-1]:]), ref.bits(vals[cuts[-1]:]))
                np.testing.assert_array_equal(ref.bits(vals), ref.bits(before))


def test_segments_edge_offsets(kw):
    v = np.array([5, 4, 3, 2, 1])
    np.testing.assert_array_equal(kw.sort_segments(v, []), v)
    np.testing.assert_array_equal(kw.sort_segments(v, [2]), v)
    np.testing.assert_array_equal(kw.sort_segments(v, [0, 5]), [1, 2, 3, 4, 5])
    np.testing.assert_array_equal(kw.sort_segments(v, [1, 1, 4, 4]), [5, 2, 3, 4, 1])
    np.testing.assert_array_equal(kw.sort_segments(v, np.array([0, 2, 5], np.uint32)),
                                  [4, 5, 1, 2, 3])


def test_segments_bad_offsets(kw):
    v = np.arange(5.0)
    with pytest.raises(ValueError, match=r"offsets\[2\] = 1 < offsets\[1\] = 3"):
        kw.sort_segments(v, [0, 3, 1])
    with pytest.raises(ValueError, match=r"offsets\[1\] = 6 is outside \[0, 5\]"):
        kw.sort_segments(v, [0, 6])
    with pytest.raises(ValueError, match=r"offsets\[0\] = -1"):
        kw.sort_segments(v, [-1, 2])
    with pytest.raises(TypeError, match="integer"):
        kw.sort_segments(v, [0.0, 2.0])
    with pytest.raises(ValueError, match="1-D"):
        kw.sort_segments(v.reshape(5, 1), [0, 2])


def _ref_topk(a, k, axis, largest, sorted_):
    idx = np.argsort(-a if largest else a, axis=axis, kind="stable")
    idx = np.take(idx, np.arange(k), axis=axis)
    if not sorted_:
        idx = np.sort(idx, axis=axis)
    return np.take_along_axis(a, idx, axis), idx


def test_topk(kw, rng):
    for dtype in ("float32", "float64", "int64", "int8"):
        a = (rng.integers(-20, 20, (6, 40))).astype(dtype)
        if a.dtype.kind == "f":
            a[rng.random(a.shape) < 0.3] = np.nan
        for axis in (-1, 0):
            n = a.shape[axis]
            for k in (0, 1, 5, n):
                for largest in (True, False):
                    for sorted_ in (True, False):
                        v, i = kw.topk(a, k, axis, largest=largest, sorted=sorted_)
                        # reference: first k of the stable argsort, NaNs last either way
                        full = kw.argsort(a, axis=axis, descending=largest)
                        want = np.take(full, np.arange(k), axis=axis)
                        if not sorted_:
                            want = np.sort(want, axis=axis)
                        np.testing.assert_array_equal(i, want, err_msg=f"{dtype} {axis} {k}")
                        np.testing.assert_array_equal(v, np.take_along_axis(a, want, axis))
                        if a.dtype.kind != "f":
                            _, ri = _ref_topk(a.astype(np.int64), k, axis, largest, sorted_)
                            np.testing.assert_array_equal(i, ri)


def test_topk_of_long_rows_selects_by_threshold(kw, ref, rng):
    # Rows of 2048 keys or more take the sampled-threshold selection (core/select-inl.h): the
    # answer is still the first k of the stable order, on every engine, sorted or not, for
    # ties, NaN and adversarial orders (sorted rows: the strided sample sees only part).
    for dtype in ("float32", "float64", "int16", "uint8", "int64"):
        for dist in ("uniform", "sorted", "reversed", "few", "nan_heavy"):
            if dist == "nan_heavy" and np.dtype(dtype).kind != "f":
                continue
            a = np.stack([ref.make(dtype, dist, 5000, rng) for _ in range(3)])
            for largest in (True, False):
                full = np.stack([ref.argsort(r, descending=largest) for r in a])
                for k in (1, 50, 625, 700):
                    v, i = kw.topk(a, k, largest=largest)
                    np.testing.assert_array_equal(i, full[:, :k], err_msg=f"{dtype} {dist} {k}")
                    np.testing.assert_array_equal(ref.bits(v), ref.bits(
                        np.take_along_axis(a, i, -1)))
    one = ref.make("float32", "uniform", 300000, rng)  # one long row: the pass split in threads
    v, i = kw.topk(one, 100)
    np.testing.assert_array_equal(i, ref.argsort(one, descending=True)[:100])


def test_topk_along_an_axis_before_the_last_selects_down_the_columns(kw, ref, rng):
    # Along axis 0 / 1 of C-order arrays kwker_topk_cols selects where the keys lie: small k in
    # place (long columns, narrow rows of 10 taken in blocks, rising and falling columns that
    # every row or no row enters), larger k by gathered blocks. The answer is the first k of
    # each column's stable order, the values the input's bits; F-order and byte-swapped inputs
    # agree with it too.
    for dtype in ("float32", "float64", "int64", "int16", "uint8"):
        for dist in ("uniform", "sorted", "reversed", "few", "nan_heavy"):
            if dist == "nan_heavy" and np.dtype(dtype).kind != "f":
                continue
            for shape, axis in (((3000, 70), 0), ((3000, 10), 0), ((2, 300, 40), 1)):
                a = ref.make(dtype, dist, int(np.prod(shape)), rng).reshape(shape)
                for largest in (True, False):
                    moved = np.moveaxis(a, axis, -1)
                    full = np.stack([ref.argsort(r, descending=largest)
                                     for r in moved.reshape(-1, shape[axis])])
                    full = full.reshape(moved.shape)
                    for k in (1, 5, 16, 17):
                        for sorted_ in (True, False):
                            v, i = kw.topk(a, k, axis, largest=largest, sorted=sorted_)
                            want = full[..., :k] if sorted_ else np.sort(full[..., :k], -1)
                            want = np.moveaxis(want, -1, axis)
                            np.testing.assert_array_equal(
                                i, want, err_msg=f"{dtype} {dist} {shape} {k} {largest}")
                            np.testing.assert_array_equal(
                                ref.bits(v), ref.bits(np.take_along_axis(a, i, axis)))
    a = rng.standard_normal((500, 30)).astype(np.float32)
    want = kw.topk(a, 7, 0)
    for other in (np.asfortranarray(a), a.astype(">f4")):
        v, i = kw.topk(other, 7, 0)
        np.testing.assert_array_equal(i, want[1])
        np.testing.assert_array_equal(v, want[0])


_COLS_CASES = (((1000, 300), 0), ((40000, 7), 0), ((3, 200, 50), 1), ((61, 37), 0))
_cols_refs = {}


def _cols_ref(ref, dtype, dist, shape, axis, descending, nans_first):
    """The input and its reference sort / stable argsort along axis, computed once for every
    backend and engine the test runs on."""
    key = (dtype, dist, shape, axis, descending, nans_first)
    if key not in _cols_refs:
        rng = np.random.default_rng(zlib.crc32(repr((dtype, dist, shape)).encode()))
        a = ref.make(dtype, dist, int(np.prod(shape)), rng).reshape(shape)
        moved = np.moveaxis(a, axis, -1)
        rows = moved.reshape(-1, shape[axis])
        want_i = np.stack([ref.argsort(r, descending, nans_first) for r in rows])
        want_v = np.stack([ref.sort(r, descending, nans_first) for r in rows])
        _cols_refs[key] = (a, np.moveaxis(want_i.reshape(moved.shape), -1, axis),
                           np.moveaxis(want_v.reshape(moved.shape), -1, axis))
    return _cols_refs[key]


def test_sort_and_argsort_along_an_axis_before_the_last_work_down_the_columns(kw, ref, rng):
    # Along axis 0 / 1 of C-order arrays kwker_sort_cols sorts the columns where they lie (blocks
    # of columns gathered into rows in the core): the values bit for bit those of the reference's
    # stable sort of each column, the indices its stable order, in both orders and with NaNs
    # first; past the thread threshold (1,000 x 300), a narrow matrix (one block: 40,000 x 7), a
    # middle axis, and under a scratch limit of 0 (each column sorted where it lies).
    for dtype in ("float32", "float64", "int64", "int16", "uint8"):
        for dist in ("uniform", "few", "nan_heavy"):
            if dist == "nan_heavy" and np.dtype(dtype).kind != "f":
                continue
            for shape, axis in _COLS_CASES:
                for descending, nans_first in ((False, False), (True, False), (True, True)):
                    a, want_i, want_v = _cols_ref(ref, dtype, dist, shape, axis, descending,
                                                  nans_first)
                    label = f"{dtype} {dist} {shape} axis={axis} {descending} {nans_first}"
                    i = kw.argsort(a, axis, descending=descending, nans_first=nans_first)
                    np.testing.assert_array_equal(i, want_i, err_msg=label)
                    v = kw.sort(a, axis, descending=descending, nans_first=nans_first)
                    np.testing.assert_array_equal(ref.bits(v), ref.bits(want_v), err_msg=label)
    a = ref.make("float32", "nan_heavy", 300 * 40, rng).reshape(300, 40)
    want_v, want_i = kw.sort(a, 0), kw.argsort(a, 0)
    kw.set_scratch_limit(0)
    try:
        for other in (a, np.asfortranarray(a), a.astype(">f4")):
            np.testing.assert_array_equal(ref.bits(kw.sort(other, 0)), ref.bits(want_v))
            np.testing.assert_array_equal(kw.argsort(other, 0), want_i)
    finally:
        kw.set_scratch_limit(None)


def test_topk_nans_picked_last(kw):
    a = np.array([np.nan, 1.0, np.nan, 3.0, 2.0])
    v, i = kw.topk(a, 4)
    assert list(i) == [3, 4, 1, 0]
    v, i = kw.topk(a, 4, largest=False, sorted=False)
    assert list(i) == [0, 1, 3, 4]


def test_topk_errors(kw):
    a = np.arange(5)
    with pytest.raises(ValueError, match="k = 6"):
        kw.topk(a, 6)
    with pytest.raises(ValueError, match="k = -1"):
        kw.topk(a, -1)
    with pytest.raises(TypeError):
        kw.topk(a, 1.5)
    with pytest.raises(np.exceptions.AxisError):
        kw.topk(a, 1, axis=1)
    v, i = kw.topk(np.zeros((3, 0)), 0)
    assert v.shape == (3, 0) and i.shape == (3, 0)
    v, i = kw.topk(np.arange(6).reshape(2, 3), 2, axis=None)
    assert list(i) == [5, 4]


@pytest.mark.parametrize("dtype", ["int8", "uint16", "float32", "float64", "int64",
                                   "datetime64[ns]"])
def test_sort_segments_fast_path(backend, ref, rng, dtype):
    """int64 offsets and a C-contiguous native ndarray take one C call (kwker._fast.segments):
    the same results as the general path (lists of offsets), inputs untouched, and bad offsets
    still raise the Python layer's messages."""
    from kwker import _backend
    v = ref.make(dtype, "nan_heavy" if np.dtype(dtype).kind == "f" else "few", 300, rng)
    cuts = np.sort(rng.choice(np.arange(1, 290), 20, replace=False))
    off = np.concatenate(([3], cuts, [295])).astype(np.int64)
    before = v.copy()
    for desc in (False, True):
        for nf in (False, True):
            got = kwker.sort_segments(v, off, descending=desc, nans_first=nf)
            vals, idx = kwker.sort_segments(v, off, descending=desc, nans_first=nf,
                                            return_indices=True, threads=1)
            want = kwker.sort_segments(v, off.tolist(), descending=desc, nans_first=nf)
            ref.same(got, want, f"{desc} {nf}")
            ref.same(vals, want, f"{desc} {nf} indices")
            ref.same(v[idx], want, f"{desc} {nf} take")
            for i in range(off.size - 1):
                seg = slice(off[i], off[i + 1])
                want_i = off[i] + ref.argsort(v[seg], desc, nf)
                np.testing.assert_array_equal(idx[seg], want_i)
            np.testing.assert_array_equal(idx[:3], [0, 1, 2])
            np.testing.assert_array_equal(idx[295:], np.arange(295, 300))
    np.testing.assert_array_equal(v, before)
    if backend == "fast":
        assert _backend.segments(v, off, 0, 0, False) is not None
        assert _backend.segments(v, off.astype(np.int32), 0, 0, False) is None  # general path
    with pytest.raises(ValueError, match=r"offsets\[1\] = 400 is outside \[0, 300\]"):
        kwker.sort_segments(v, np.array([0, 400], np.int64))
    with pytest.raises(ValueError, match=r"non-decreasing, but offsets\[2\] = 5 < offsets\[1\]"):
        kwker.sort_segments(v, np.array([0, 9, 5], np.int64), return_indices=True)
    np.testing.assert_array_equal(v, before)
    empty = v[:0]
    assert kwker.sort_segments(empty, np.zeros(2, np.int64)).size == 0
    one = kwker.sort_segments(v, np.array([7], np.int64), return_indices=True)
    np.testing.assert_array_equal(one[1], np.arange(300))
