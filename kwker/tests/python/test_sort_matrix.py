"""Correctness matrix: every dtype x distribution x size x order option, per backend x engine.

The matrix loops inside a few tests (one pytest item per backend x engine) so the suite stays
fast; a failure message names the case.
"""
import hashlib

import numpy as np
import pytest

FLAG_SETS = [(False, False), (True, False), (False, True), (True, True)]  # (descending, nans_first)


def check_case(kw, ref, a, descending, nans_first, label, refs=None):
    """refs: a dict that keeps the reference results by input (its bytes' digest) and options,
    for inputs that every backend x engine item makes again, identical (the references are
    NumPy's, so they do not depend on the item)."""
    key = None if refs is None else (a.dtype.str, hashlib.sha1(a.tobytes()).hexdigest(),
                                      descending, nans_first)
    if key is None or key not in refs:
        want_sorted = ref.sort(a, descending, nans_first)
        want = ref.argsort(a, descending, nans_first)
        if key is not None:
            refs[key] = (want_sorted, want)
    else:
        want_sorted, want = refs[key]
    got = kw.sort(a, descending=descending, nans_first=nans_first)
    ref.same(got, want_sorted, f"sort {label}")
    idx = kw.argsort(a, descending=descending, nans_first=nans_first)
    assert idx.dtype == np.int64, label
    if not np.array_equal(idx, want):
        i = int(np.flatnonzero(idx != want)[0])
        raise AssertionError(f"argsort {label}: first difference at {i}: {idx[i]} != {want[i]}")
    if not descending and not nans_first:
        # NumPy places NaN/NaT last too, so it must agree exactly.
        np.testing.assert_array_equal(idx, np.argsort(a, kind="stable"), err_msg=label)
        s = np.sort(a)
        nan = ref.nan_mask(s)
        assert np.array_equal(got[~nan], s[~nan]) and np.array_equal(ref.nan_mask(got), nan), label


def test_dense_small_sizes(kw, ref, rng):
    """Sizes 0..300 for every dtype; distribution and order options rotate with the size."""
    for dtype in ref.DTYPES:
        dists = ref.distributions(dtype)
        for n in range(301):
            dist = dists[n % len(dists)]
            desc, nf = FLAG_SETS[(n // len(dists)) % 4]
            a = ref.make(dtype, dist, n, rng)
            check_case(kw, ref, a, desc, nf, f"{dtype} {dist} n={n} desc={desc} nf={nf}")


def test_every_distribution_and_flag(kw, ref, rng):
    for dtype in ref.DTYPES:
        for dist in ref.distributions(dtype):
            for n in (0, 1, 2, 3, 7, 16, 17, 33, 64, 129, 256, 257):
                a = ref.make(dtype, dist, n, rng)
                for desc, nf in FLAG_SETS:
                    check_case(kw, ref, a, desc, nf, f"{dtype} {dist} n={n} desc={desc} nf={nf}")


LARGE = (1000, 5000, 20000, 100_000, 300_000, 1_100_000)


@pytest.fixture(scope="module")
def large_refs():
    """The large inputs' references, computed by the first item and reused by the others (they
    were ~90% of each item's time); dropped with the module."""
    refs = {}
    yield refs
    refs.clear()


def test_threshold_sizes(kw, ref, rng, large_refs):
    """Sizes across the algorithm thresholds (radix, parallel) for representative dtypes."""
    plan = {
        "float32": ("uniform", "nan_heavy", "sorted"),
        "float64": ("uniform", "zeros"),
        "int64": ("uniform", "few", "reversed"),
        "uint8": ("uniform",),
        "int16": ("uniform",),
        "float16": ("uniform",),
        "datetime64[ns]": ("nat_heavy",),
    }
    for dtype, dists in plan.items():
        for dist in dists:
            for n in LARGE:
                if n > 300_000 and dtype not in ("float32", "int64"):
                    continue
                a = ref.make(dtype, dist, n, rng)
                desc, nf = FLAG_SETS[LARGE.index(n) % 4]
                check_case(kw, ref, a, desc, nf, f"{dtype} {dist} n={n} desc={desc} nf={nf}",
                           large_refs)


def _prefix_tie_inputs(dtype, n, rng):
    """32-bit inputs whose keys span the whole key range, so the packed 32-bit argsort words
    (core/pack-inl.h, Pack32) drop low key bits, with keys that tie on the kept bits: separate
    runs of 2, 3, 17 and 33 consecutive keys (each re-sorting branch), runs of equal keys, and one
    dense cluster that holds most keys (the words give up and the exact 64-bit packing sorts it)."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        wide = (rng.standard_normal(n) * 1e30).astype(dt)

        def near(group, k):  # k ULPs above 2**group
            base = np.array(np.float32(2.0 ** group)).view(np.uint32)
            return (base + np.arange(k, dtype=np.uint32)).view(np.float32)
    else:
        info = np.iinfo(dt)
        wide = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)

        def near(group, k):
            return (np.int64(info.max // 3) + group * 2**24 + np.arange(k)).astype(dt)
    cases = {}
    a = wide.copy()
    pos = rng.permutation(n)
    at = 0
    for group, length in enumerate((2, 3, 17, 33)):
        if at + length > n // 8:
            break
        a[pos[at:at + length]] = rng.permutation(near(group, length))
        at += length
    cases["near ties"] = a
    b = wide.copy()
    b[rng.random(n) < 0.3] = near(5, 1)[0]
    cases["equal runs"] = b
    c = rng.choice(near(6, 64), n).astype(dt)
    c[:2] = wide[:2]
    cases["dense cluster"] = c
    return cases


def test_packed_prefix_ties(kw, ref, rng):
    """Stable argsort and the pair sort (values and indices, torch.sort's kernel) of 32-bit keys
    whose packed words tie on their prefixes, at the sizes of the 32-bit word path and past it."""
    from kwker import _backend, _dtypes

    for dtype in ("float32", "int32", "uint32"):
        for n in (129, 500, 1000, 2047, 2048, 2049):
            for name, a in _prefix_tie_inputs(dtype, n, rng).items():
                for desc in (False, True):
                    label = f"{dtype} {name} n={n} desc={desc}"
                    want = ref.argsort(a, desc, False)
                    got = kw.argsort(a, descending=desc)
                    assert np.array_equal(got, want), f"argsort {label}"
                    vals, idx = np.empty_like(a), np.empty(n, np.int64)
                    _backend.impl.sort_pairs_ptr(_dtypes.CODES[a.dtype], a.ctypes.data,
                                                 vals.ctypes.data, idx.ctypes.data, 1, n,
                                                 int(desc), 1)
                    assert np.array_equal(idx, want), f"pair sort indices {label}"
                    assert np.array_equal(vals.view(np.uint32), a[want].view(np.uint32)), \
                        f"pair sort values {label}"


def test_int64_short_sorts_near_the_double_map_edges(kw, rng):
    """int64 register sorts that the avx2 engine runs as doubles (core/coded-inl.h,
    I64AsF64Ops): keys around 0 (-1 maps to the negative denormal 1, next to +0.0), at the edge
    of the mapped range (+-0x7FF0000000000000) and just past it (the integer keys then), for
    every length of the short paths."""
    lim = 0x7FF0000000000000
    edge = np.array([-2, -1, 0, 1, 2, lim, -lim, lim - 1, -lim + 1], np.int64)
    past = np.array([lim + 1, -lim - 1, np.iinfo(np.int64).min, np.iinfo(np.int64).max], np.int64)
    for n in list(range(2, 140)) + [200, 256, 257]:
        for name, m in (("edge", rng.choice(edge, (3, n))),
                        ("edge+past", rng.choice(np.concatenate([edge, past]), (3, n))),
                        ("small", rng.integers(-3, 3, (3, n)))):
            m = m.astype(np.int64)
            assert np.array_equal(kw.sort(m, axis=1), np.sort(m, axis=1)), f"rows {name} n={n}"
            assert np.array_equal(kw.sort(m[0]), np.sort(m[0])), f"1-D {name} n={n}"


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint64", "int16",
                                   "datetime64[ns]"])
def test_argsort_of_non_increasing_input_keeps_ties_in_index_order(kw, ref, rng, dtype):
    """A non-increasing input is argsorted by its reversal with each run of equal keys put back
    in index order: runs at the start, the end, across the tie scan's blocks of 256, long and
    short, and none at all."""
    for n in (300, 700, 5000, 70000):
        base = ref.make(dtype, "few" if n == 700 else "uniform", n, rng)
        runs = np.sort(base)[::-1].copy()
        if n != 5000:  # runs of equal keys: cut the values down to a few hundred distinct
            keys = np.sort(rng.integers(0, max(2, n // 7), n))[::-1]
            runs = np.sort(base)[::-1][np.clip(keys, 0, n - 1)]
            runs = np.sort(runs)[::-1].copy()
        for a in (runs, np.concatenate([runs[:1].repeat(300), runs])):
            np.testing.assert_array_equal(kw.argsort(a), ref.argsort(a), err_msg=f"{dtype} {n}")
            np.testing.assert_array_equal(kw.argsort(a, descending=True),
                                          ref.argsort(a, descending=True))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_argsort_of_non_increasing_floats_ties_zeros_and_nans(kw, ref, rng, dtype):
    """The reversal's tie filter for floats: runs of NaN (several payloads) and of zeros of both
    signs tie in the stable order (argsort's zeros tie), each kept in index order."""
    nan = np.array(np.nan, dtype)
    other_nan = -np.abs(nan)  # a NaN with the sign bit set
    zeros = np.where(np.arange(60) % 3 == 0, -0.0, 0.0).astype(dtype)
    high = np.sort(rng.random(300).astype(dtype) + 1)[::-1]
    low = np.sort(-rng.random(300).astype(dtype) - 1)[::-1]
    a = np.concatenate([np.where(np.arange(40) % 2 == 0, nan, other_nan).astype(dtype), high,
                        zeros, low])
    assert a.size >= 700
    np.testing.assert_array_equal(kw.argsort(a), ref.argsort(a), err_msg=dtype)
    np.testing.assert_array_equal(kw.argsort(a, nans_first=True), ref.argsort(a, nans_first=True))
