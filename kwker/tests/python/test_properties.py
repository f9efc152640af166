"""hypothesis properties, per backend (the engine matrix is covered by test_sort_matrix)."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import kwker

DTYPES = st.sampled_from(["bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                          "uint32", "uint64", "float16", "float32", "float64"])
ARRAYS = DTYPES.flatmap(lambda dt: hnp.arrays(dt, st.integers(0, 200)))
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
FLAGS = st.booleans()


@SETTINGS
@given(a=ARRAYS, desc=FLAGS, nf=FLAGS)
def test_sort_is_sorted_permutation(backend, ref, a, desc, nf):
    got = kwker.sort(a, descending=desc, nans_first=nf)
    ref.same(got, ref.sort(a, desc, nf))
    keep = ~ref.nan_mask(a)  # NaN bits are canonicalised by libkwker (see test_layout)
    assert sorted(ref.bits(got[~ref.nan_mask(got)]).tolist()) == \
        sorted(ref.bits(a[keep]).tolist())


@SETTINGS
@given(a=ARRAYS, desc=FLAGS, nf=FLAGS)
def test_argsort_is_stable(backend, ref, a, desc, nf):
    idx = kwker.argsort(a, descending=desc, nans_first=nf)
    assert sorted(idx.tolist()) == list(range(a.size))
    np.testing.assert_array_equal(idx, ref.argsort(a, desc, nf))


@SETTINGS
@given(a=ARRAYS, data=st.data(), largest=FLAGS, srt=FLAGS)
def test_topk_is_argsort_prefix(backend, a, data, largest, srt):
    k = data.draw(st.integers(0, a.size))
    v, i = kwker.topk(a, k, largest=largest, sorted=srt)
    prefix = kwker.argsort(a, descending=largest)[:k]
    np.testing.assert_array_equal(i, prefix if srt else np.sort(prefix))
    np.testing.assert_array_equal(v.view(np.uint8), a[i].view(np.uint8))


@SETTINGS
@given(a=ARRAYS, data=st.data(), desc=FLAGS)
def test_segments_sort_each_slice(backend, ref, a, data, desc):
    cuts = sorted(data.draw(st.lists(st.integers(0, a.size), max_size=8)))
    got, idx = kwker.sort_segments(a, cuts, descending=desc, return_indices=True)
    want = np.arange(a.size)
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        want[lo:hi] = ref.argsort(a[lo:hi], desc) + lo
    np.testing.assert_array_equal(idx, want)
    ref.same(got, a[idx])
