"""What PyTorch's own sort tests check, written for kwker.torch_ops (issue 32).

torch's wheel ships no tests (test/test_sort_and_select.py lives in its repository), so these
are our equivalents of the behaviours that file checks, run with the overrides installed
(both implementations, every size taken by Kwker) and compared with torch itself:
- out=: empty outputs are resized, so torch.sort(x, out=(torch.empty(0), ...)) gives exactly
  torch.sort(x) (the stable order) and goes through Kwker; outputs of another shape are resized
  with torch's own deprecation warning; 0-dim outputs of a strided input are restrided to dense
  strides (torch's test_sort_restride); outputs of the right shape keep their strides
  (non-contiguous ones are written in place); a wrong dtype is torch's error; topk's out= alike;
- empty and one-element tensors along every dim; every dtype equal to torch's stable sort;
  NaN last ascending and first descending; complex and other dtypes stay torch's (its error).
"""
import warnings

import pytest
import torch

import kwker

KINDS = ("python", "compiled")
DTYPES = (torch.bool, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8,
          torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _install(ops, kind):
    assert ops.install(compiled=kind == "compiled") is True
    assert ops.status()["implementation"] == kind


def _calls():
    return sum(c["calls"] for c in kwker.runtime_info()["counters"].values())


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    assert got.stride() == want.stride() or got.numel() == 0, (got.stride(), want.stride())
    a, b = got.contiguous(), want.contiguous()
    if a.dtype == torch.bool:
        a, b = a.view(torch.uint8), b.view(torch.uint8)
    assert torch.equal(a, b) or (a.dtype.is_floating_point and torch.equal(a.isnan(), b.isnan())
                                 and torch.equal(a.nan_to_num(), b.nan_to_num()))


def _ties(dtype, shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 5, shape, generator=g)
    if dtype.is_floating_point:
        x = x.to(dtype)
        x.view(-1)[::7] = float("nan")
        x.view(-1)[1::9] = -0.0
        return x
    return x.to(dtype) if dtype != torch.bool else (x > 2)


@pytest.mark.parametrize("kind", KINDS)
def test_empty_out_tensors_are_resized_and_sorted_by_kwker(torch_ops, no_thresholds, kind):
    x = _ties(torch.float32, (3000,))
    want = torch.sort(x, stable=True)
    _install(torch_ops, kind)
    for descending in (False, True):
        ref = torch.sort(x, descending=descending, stable=True)
        v, i = torch.empty(0), torch.empty(0, dtype=torch.long)
        kwker.reset_counters()
        with warnings.catch_warnings():
            warnings.simplefilter("error")          # torch does not warn for empty outputs
            r = torch.sort(x, descending=descending, out=(v, i))
        assert _calls() >= 1, "the out= call did not reach Kwker"
        assert r[0] is v and r[1] is i
        _same(v, ref.values)
        _same(i, ref.indices)
        got = torch.sort(x, descending=descending)        # the functional call, same override
        _same(got.values, v)
        _same(got.indices, i)
    _same(torch.sort(x, out=(torch.empty(0), torch.empty(0, dtype=torch.long)))[1],
          want.indices)


@pytest.mark.parametrize("kind", KINDS)
def test_out_of_another_shape_is_resized_with_torchs_warning(torch_ops, no_thresholds, kind):
    x = _ties(torch.float64, (40, 70))
    ref = torch.sort(x, dim=0, stable=True)

    def call():
        v, i = torch.empty(5, dtype=torch.float64), torch.empty(5, dtype=torch.long)
        with warnings.catch_warnings(record=True) as log:
            warnings.simplefilter("always")
            torch.sort(x, dim=0, out=(v, i))
        return v, i, [str(w.message).split(".")[0] for w in log]

    want_v, want_i, want_log = call()      # torch's own resize: shape, strides, its warning
    assert want_log and "resized" in want_log[0]
    _install(torch_ops, kind)
    kwker.reset_counters()
    v, i, log = call()
    assert _calls() >= 1
    assert log == want_log
    _same(v, ref.values)
    _same(i, ref.indices)
    assert (v.stride(), i.stride()) == (want_v.stride(), want_i.stride())


@pytest.mark.parametrize("kind", KINDS)
def test_zero_dim_outputs_are_restrided_dense(torch_ops, no_thresholds, kind):
    # torch's test_sort_restride: a strided 3-element input, 0-dim outputs
    x = torch.randn(3, 5, dtype=torch.float64)[:, 0]
    _install(torch_ops, kind)
    v, i = torch.tensor(0.0, dtype=torch.float64), torch.tensor(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                  # torch's resize warning (one element)
        torch.sort(x, out=(v, i))
    assert v.stride() == (1,) and i.stride() == (1,)
    assert torch.equal(x[i], v)
    _same(i, torch.sort(x, stable=True).indices)


@pytest.mark.parametrize("kind", KINDS)
def test_right_shaped_outputs_keep_their_strides(torch_ops, no_thresholds, kind):
    x = _ties(torch.int32, (30, 20))
    ref = torch.sort(x, dim=1, stable=True)
    _install(torch_ops, kind)
    v = torch.empty(20, 30, dtype=torch.int32).t()           # non-contiguous, right shape
    i = torch.empty(20, 30, dtype=torch.long).t()
    r = torch.sort(x, dim=1, out=(v, i))
    assert r[0] is v and v.stride() == (1, 30) and i.stride() == (1, 30)
    assert torch.equal(v, ref.values) and torch.equal(i, ref.indices)


@pytest.mark.parametrize("kind", KINDS)
def test_out_errors_stay_torchs(torch_ops, no_thresholds, kind):
    x = torch.randn(50)

    def error(fn):
        try:
            fn()
        except Exception as e:
            return type(e), str(e).split("\n")[0]
        return None

    calls = {
        "values dtype": lambda: torch.sort(x, out=(torch.empty(0, dtype=torch.float64),
                                                   torch.empty(0, dtype=torch.long))),
        "indices dtype": lambda: torch.sort(x, out=(torch.empty(0), torch.empty(0))),
        "topk values dtype": lambda: torch.topk(x, 3, out=(torch.empty(0, dtype=torch.int32),
                                                           torch.empty(0, dtype=torch.long))),
    }
    want = {name: error(fn) for name, fn in calls.items()}
    assert all(w is not None for w in want.values())
    _install(torch_ops, kind)
    assert {name: error(fn) for name, fn in calls.items()} == want


@pytest.mark.parametrize("kind", KINDS)
def test_topk_out_is_resized_like_sort(torch_ops, no_thresholds, kind):
    x = _ties(torch.float32, (8, 500))
    _install(torch_ops, kind)
    want = torch.topk(x, 7, dim=1)
    v, i = torch.empty(0), torch.empty(0, dtype=torch.long)
    kwker.reset_counters()
    torch.topk(x, 7, dim=1, out=(v, i))
    assert _calls() >= 1
    _same(v, want.values)
    _same(i, want.indices)


@pytest.mark.parametrize("kind", KINDS)
def test_empty_and_single_element_tensors_every_dim(torch_ops, no_thresholds, kind):
    shapes = ((0,), (1,), (0, 3), (3, 0), (1, 1), (2, 0, 4))
    refs = {(s, d, desc): torch.sort(torch.empty(s), dim=d, descending=desc, stable=True)
            for s in shapes for d in range(-len(s), len(s)) for desc in (False, True)}
    _install(torch_ops, kind)
    for (s, d, desc), ref in refs.items():
        got = torch.sort(torch.empty(s), dim=d, descending=desc)
        assert got.values.shape == ref.values.shape == s
        assert got.indices.dtype == torch.long
        if 1 in s and 0 not in s:
            assert torch.equal(got.indices, ref.indices)


@pytest.mark.parametrize("kind", KINDS)
def test_every_dtype_equals_torchs_stable_sort_nan_last(torch_ops, no_thresholds, kind):
    cases = [(dt, d) for dt in DTYPES for d in (0, 1)]
    inputs = {(dt, d): _ties(dt, (60, 50), seed=d) for dt, d in cases}
    refs = {c: (torch.sort(x, dim=c[1], stable=True),
                torch.sort(x, dim=c[1], descending=True, stable=True))
            for c, x in inputs.items()}
    _install(torch_ops, kind)
    for c, x in inputs.items():
        asc, desc = refs[c]
        got = torch.sort(x, dim=c[1])
        _same(got.values, asc.values)
        _same(got.indices, asc.indices)
        got = torch.sort(x, dim=c[1], descending=True)
        _same(got.values, desc.values)
        _same(got.indices, desc.indices)
        if x.dtype.is_floating_point:
            v = got.values.select(c[1], 0)
            assert bool(v.isnan().any()), "NaN comes first descending"
            assert bool(torch.sort(x, dim=c[1]).values.select(c[1], -1).isnan().any())


@pytest.mark.parametrize("kind", KINDS)
def test_dtypes_kwker_does_not_sort_are_torchs(torch_ops, no_thresholds, kind):
    c = torch.randn(10, dtype=torch.complex64)
    try:
        torch.sort(c)
        want = None
    except Exception as e:
        want = (type(e), str(e))
    _install(torch_ops, kind)
    kwker.reset_counters()
    try:
        torch.sort(c)
        got = None
    except Exception as e:
        got = (type(e), str(e))
    assert got == want and _calls() == 0
