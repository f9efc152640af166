"""Axes, layouts and inputs: N-d, non-contiguous, strided, read-only, big-endian, 0-d, empty,
lists; and that nothing writes to the caller's array."""
import numpy as np
import pytest

import kwker
from kwker import _backend


def _inputs(rng):
    base = (rng.standard_normal((4, 5, 6)) * 10).round()
    base[0, 0, :3] = np.nan
    yield "c", base
    yield "fortran", np.asfortranarray(base)
    yield "strided", base[:, ::2, ::-1]
    yield "transposed", base.transpose(2, 0, 1)
    ro = base.copy()
    ro.setflags(write=False)
    yield "readonly", ro
    yield "bigendian", base.astype(">f8")
    yield "int-bigendian", rng.integers(-9, 9, (4, 5, 3)).astype(">i4")
    yield "empty-axis", np.zeros((3, 0, 2))
    yield "emptyall", np.zeros((0,))


def test_axes_match_numpy(kw, rng):
    for label, a in _inputs(rng):
        before = a.copy()
        got = kw.sort(a)
        np.testing.assert_array_equal(got, np.sort(a, axis=None), err_msg=label)
        assert got.dtype.isnative and got.ndim == 1
        np.testing.assert_array_equal(kw.argsort(a), np.argsort(a, axis=None, kind="stable"),
                                      err_msg=label)
        for axis in range(-a.ndim, a.ndim):
            got = kw.sort(a, axis=axis)
            assert got.dtype.isnative and got.flags.c_contiguous
            np.testing.assert_array_equal(got, np.sort(a, axis=axis), err_msg=f"{label} {axis}")
            np.testing.assert_array_equal(kw.argsort(a, axis=axis),
                                          np.argsort(a, axis=axis, kind="stable"),
                                          err_msg=f"{label} {axis}")
        np.testing.assert_array_equal(a, before, err_msg=f"{label} was modified")


def test_descending_along_axis(kw, rng):
    a = rng.integers(0, 5, (7, 9)).astype(np.int16)
    for axis in (0, 1, -1):
        idx = kw.argsort(a, axis=axis, descending=True)
        # stable descending: sort the negated keys stably
        np.testing.assert_array_equal(idx, np.argsort(-a.astype(np.int32), axis=axis,
                                                      kind="stable"))
        np.testing.assert_array_equal(kw.sort(a, axis=axis, descending=True),
                                      np.take_along_axis(a, idx, axis))


def test_zero_d_and_lists(kw):
    np.testing.assert_array_equal(kw.sort(np.float32(3)), np.array([3], np.float32))
    np.testing.assert_array_equal(kw.argsort(np.array(7)), np.array([0]))
    with pytest.raises(np.exceptions.AxisError):
        kw.sort(np.array(1.0), axis=0)
    with pytest.raises(np.exceptions.AxisError):
        kw.argsort(np.array(1.0), axis=-1)
    np.testing.assert_array_equal(kw.sort([3, 1, 2]), [1, 2, 3])
    np.testing.assert_array_equal(kw.argsort((2.0, 1.0)), [1, 0])
    np.testing.assert_array_equal(kw.sort([[3, 1], [0, 2]], axis=1), [[1, 3], [0, 2]])
    assert kw.sort([]).shape == (0,)


def test_fast_path_returns_copy(kw):
    for dtype in ("f4", "f8", "i8", "u2", "?", "e", "i1"):
        a = np.arange(50, 0, -1).astype(dtype)
        before = a.copy()
        out = kw.sort(a)
        assert out is not a and not np.shares_memory(out, a)
        np.testing.assert_array_equal(a, before)
        np.testing.assert_array_equal(out, np.sort(a))
    ro = np.arange(10.0)[::-1].copy()
    ro.setflags(write=False)
    np.testing.assert_array_equal(kw.sort(ro), np.arange(10.0))


def test_subclass_and_other_array_likes(kw):
    m = np.ma.masked_array([3.0, 1.0, 2.0])
    out = kw.sort(m)
    assert type(out) is np.ndarray
    np.testing.assert_array_equal(out, [1, 2, 3])
    np.testing.assert_array_equal(kw.sort(memoryview(np.array([2, 1], np.int32))), [1, 2])


def test_datetime_units_and_nat(kw):
    for unit in ("D", "s", "ms", "ns", "Y"):
        a = np.array(["2001-01-01", "NaT", "1999-12-31", "2001-01-01", "NaT", "1970"],
                     dtype=f"datetime64[{unit}]")
        got = kw.sort(a)
        assert got.dtype == a.dtype
        np.testing.assert_array_equal(got, np.sort(a))
        np.testing.assert_array_equal(kw.argsort(a), np.argsort(a, kind="stable"))
        np.testing.assert_array_equal(kw.argsort(a, nans_first=True), [1, 4, 5, 2, 0, 3])
    t = np.array([5, -3, "NaT", 0], dtype="m8[ms]")
    np.testing.assert_array_equal(kw.sort(t, descending=True), t[[0, 3, 1, 2]])


def test_nan_and_zero_rules(kw):
    a = np.array([0.0, np.nan, -0.0, 1.0, -np.nan, 0.0, -1.0])
    assert list(kw.argsort(a)) == [6, 0, 2, 5, 3, 1, 4]  # -0.0 == 0.0: input order
    assert list(kw.argsort(a, descending=True)) == [3, 0, 2, 5, 6, 1, 4]
    assert list(kw.argsort(a, nans_first=True)) == [1, 4, 6, 0, 2, 5, 3]
    s = kw.sort(a)
    assert np.signbit(s[1]) and not np.signbit(s[2]) and not np.signbit(s[3])  # -0.0 first
    assert np.isnan(s[-2:]).all()
    d = kw.sort(a, descending=True)
    assert list(d[:5]) == [1.0, 0.0, 0.0, -0.0, -1.0] and not np.signbit(d[1])


def test_nan_payloads_survive_sort(kw):
    # A sort is a permutation of its input: NaN sign and payload survive, in input order.
    a = np.array([np.nan, 806.0, np.nan, -1.0], np.float32)
    a[2] = -a[2]
    bits = a.view(np.uint32)
    got = kw.sort(a).view(np.uint32).tolist()
    assert got == [bits[3], bits[1], bits[0], bits[2]]
    first = kw.sort(a, nans_first=True, descending=True).view(np.uint32).tolist()
    assert first == [bits[0], bits[2], bits[1], bits[3]]
    rows = kw.sort(np.stack([a, a[::-1]]), axis=1).view(np.uint32)
    assert rows[0].tolist() == got and rows[1].tolist() == [bits[3], bits[1], bits[2], bits[0]]


_FIELD_DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                 "uint64", "float16", "float32", "float64", "intc", "uintc", "long", "ulong",
                 "longlong", "ulonglong", "datetime64[ns]", "datetime64[D]", "timedelta64[s]")


def _field_inputs(rng, dtype):
    """An ndarray of `dtype` in every layout the fast paths read in place or must decline."""
    dt = np.dtype(dtype)
    if dt.kind in "mM":
        a = rng.integers(-10**6, 10**6, 60).astype(np.int64).view(dt)
        a[::7] = np.array("NaT", dtype=dt)
    elif dt.kind == "b":
        a = rng.integers(0, 2, 60).astype(dt)
    elif dt.kind == "f":  # signs, zeros of both signs and NaN: a wrong code misorders them
        a = (rng.standard_normal(60) * 100).astype(dt)
        a[::9], a[1::11], a[2::13] = np.nan, -0.0, 0.0
    else:  # the whole range: a signed / unsigned or width mix-up misorders it
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, 60, dtype=dt, endpoint=True)
    yield "c", a
    yield "rows", a.reshape(6, 10)
    yield "strided", a[::3]
    yield "fortran", np.asfortranarray(a.reshape(6, 10))
    yield "swapped", a.astype(dt.newbyteorder())
    raw = np.zeros(a.nbytes + 1, np.uint8)
    unaligned = raw[1:].view(dt)  # misaligned for every itemsize above 1
    unaligned[:] = a
    yield "unaligned", unaligned
    ro = a.copy()
    ro.setflags(write=False)
    yield "readonly", ro


@pytest.mark.parametrize("dtype", _FIELD_DTYPES)
def test_fast_paths_read_every_dtype_and_layout(backend, rng, dtype):
    """The fast paths (kwker._fast reads exact ndarrays' fields in place, datetime64 and
    timedelta64 included, which export no buffer) give NumPy's results for every dtype and
    layout, and decline what they cannot read in place (the general path takes it)."""
    for label, a in _field_inputs(rng, dtype):
        before = a.copy()
        for axis in (None, -1, 0):
            if axis is not None and a.ndim == 1 and axis == 0:
                continue
            got = kwker.sort(a, axis=axis)
            assert got.dtype == a.dtype.newbyteorder("=") and got.flags.c_contiguous
            np.testing.assert_array_equal(got, np.sort(a, axis=axis), err_msg=f"{label} {axis}")
            np.testing.assert_array_equal(kwker.argsort(a, axis=axis),
                                          np.argsort(a, axis=axis, kind="stable"),
                                          err_msg=f"{label} {axis}")
        for k, largest, sorted_ in ((5, True, True), (0, True, True), (6, False, False)):
            v, i = kwker.topk(a, k, largest=largest, sorted=sorted_)
            want = kwker.argsort(a, axis=-1, descending=largest)[..., :k]
            if not sorted_:
                want = np.sort(want, axis=-1)
            np.testing.assert_array_equal(i, want, err_msg=f"{label} topk {k}")
            np.testing.assert_array_equal(v, np.take_along_axis(a, want, -1),
                                          err_msg=f"{label} topk {k}")
        np.testing.assert_array_equal(a, before, err_msg=f"{label} was modified")
    if backend == "fast":  # the ctypes backend's fast path keeps to the NumPy dtypes it maps
        native = next(_field_inputs(rng, dtype))[1]
        assert _backend.sort_last(native) is not None, f"{dtype}: the fast path declined"
        assert _backend.argsort_last(native) is not None, f"{dtype}: the fast path declined"
        assert _backend.sort_axis(native.reshape(6, 10), 0) is not None
        assert _backend.topk_last(native.reshape(6, 10), 3, 1, True) is not None


def _option_inputs(ref, rng, dtype):
    """1-D, strided 1-D (a slice, a reversed slice, a matrix column) and 2-D / 3-D inputs with
    NaN / NaT where the dtype has them."""
    dist = "nan_heavy" if np.dtype(dtype).kind == "f" else (
        "nat_heavy" if np.dtype(dtype).kind in "mM" else "few")
    a = ref.make(dtype, dist, 240, rng)
    yield "1-D", a
    yield "slice", a[1::3]
    yield "reversed", a[::-2]
    yield "column", a.reshape(40, 6)[:, 4]
    yield "2-D", a.reshape(12, 20)
    yield "3-D", a.reshape(4, 6, 10)


@pytest.mark.parametrize("dtype", ["int16", "uint32", "float32", "float64", "datetime64[ns]"])
def test_fast_paths_take_the_options(backend, ref, rng, dtype):
    """descending, nans_first and threads go through the one-call fast paths (sort_last /
    argsort_last / sort_axis / argsort_axis with their options, axis=None of N-d arrays
    flattened, strided 1-D arrays gathered) with the documented order, every axis."""
    for label, a in _option_inputs(ref, rng, dtype):
        before = a.copy()
        for desc in (False, True):
            for nf in (False, True):
                for threads in (None, 1, 2):
                    opts = dict(descending=desc, nans_first=nf, threads=threads)
                    what = f"{label} {opts}"
                    ref.same(kwker.sort(a, **opts), ref.sort(a, desc, nf), what)
                    np.testing.assert_array_equal(kwker.argsort(a, **opts),
                                                  ref.argsort(a, desc, nf), err_msg=what)
                    for axis in range(-a.ndim, a.ndim):
                        moved = np.moveaxis(a, axis, -1)
                        order = np.stack([ref.argsort(r, desc, nf)
                                          for r in moved.reshape(-1, moved.shape[-1])])
                        want_idx = np.moveaxis(order.reshape(moved.shape), -1, axis)
                        got_idx = kwker.argsort(a, axis=axis, **opts)
                        np.testing.assert_array_equal(got_idx, want_idx, err_msg=f"{what} {axis}")
                        ref.same(kwker.sort(a, axis=axis, **opts),
                                 np.take_along_axis(a, want_idx, axis), f"{what} {axis}")
        np.testing.assert_array_equal(a, before, err_msg=f"{label} was modified")
    if backend == "fast":
        flat = next(_option_inputs(ref, rng, dtype))[1]
        for arr in (flat, flat[::3], flat.reshape(12, 20)):
            assert _backend.sort_last(arr, 1, 1, True) is not None
            assert _backend.argsort_last(arr, 2, 2, True) is not None
        assert _backend.sort_axis(flat.reshape(12, 20), 0, 3, 1) is not None


def test_fast_path_option_errors(backend):
    """Bad options raise the general path's errors before any C call."""
    a = np.arange(10.0)
    with pytest.raises(ValueError, match="threads must be >= 1"):
        kwker.sort(a, threads=0)
    with pytest.raises(TypeError, match="threads must be an int"):
        kwker.argsort(a, threads=1.5)
    with pytest.raises(TypeError, match="threads must be an int"):
        kwker.sort(a, threads=True)
    with pytest.raises(np.exceptions.AxisError):
        kwker.sort(a, axis=1, descending=True)
    with pytest.raises(np.exceptions.AxisError):
        kwker.argsort(a.reshape(2, 5), axis=-3, threads=1)
    assert kwker.sort(a, threads=2**40).tolist() == list(range(10))  # capped, as before
