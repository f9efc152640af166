"""kwker.torch_ops through torch's dispatcher: results equal torch's own stable results bit for
bit on every entry point (sort, argsort, msort, Tensor.sort, out=, topk, kthvalue, unique),
with the Python-registered and the compiled operators; fallbacks keep torch's results and
errors; autograd works; uninstall restores the dispatcher exactly; KWKER_DISABLE=1."""
import os
import subprocess
import sys

import pytest

from kwker import _integrations  # noqa: E402
import torch

import kwker

KINDS = ("python", "compiled")
OVERLOADS = ("sort.stable", "sort.values_stable", "topk", "topk.values", "kthvalue.values",
             "_unique2", "sort", "argsort.stable", "msort", "kthvalue")


def _dispatch_state():
    return {name: torch._C._dispatch_dump(f"aten::{name}") for name in OVERLOADS}


def _install(ops_module, kind, **kw):
    if kind == "compiled":
        from kwker._torch import extension
        ok, why = extension.availability()
        assert ok, f"the compiled operators must load in the test environment: {why}"
    assert ops_module.install(compiled=kind == "compiled", **kw) is True
    assert ops_module.status()["implementation"] == kind


def _bits(t):
    t = t.contiguous()
    if t.dtype == torch.bool:
        t = t.view(torch.uint8)
    width = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return t.view(width)


def same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype,
                                                                got.shape, want.shape)
    assert got.stride() == want.stride() or got.numel() == 0, (got.stride(), want.stride())
    assert torch.equal(_bits(got), _bits(want))


def _stable_sort(x, dim=-1, descending=False):
    if x.dim() == 1:  # through a 2-D view: torch's 1-D radix path rejects wide unsigned types
        v, i = torch.sort(x.unsqueeze(0), dim=1, descending=descending, stable=True)
        return v.squeeze(0), i.squeeze(0)
    return torch.sort(x, dim=dim, descending=descending, stable=True)


def _mixed(dtype, shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    n = 1
    for s in shape:
        n *= s
    if dtype.is_floating_point:
        x = (torch.randn(n, generator=g, dtype=torch.float64) * 50).to(dtype)
        pick = torch.randint(0, 10, (n,), generator=g)
        x[pick == 0] = float("nan")
        x[pick == 1] = -0.0
        x[pick == 2] = 0.0
        x[pick == 3] = float("inf")
        x[pick == 4] = x[0]
    elif dtype == torch.bool:
        x = torch.randint(0, 2, (n,), generator=g).bool()
    else:
        x = torch.randint(-100, 100, (n,), generator=g).to(dtype)
    return x.reshape(shape)


DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
          torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool)


@pytest.mark.parametrize("kind", KINDS)
def test_every_entry_point_equals_torch_stable(torch_ops, no_thresholds, kind):
    refs = {}
    cases = [(dt, shape, d) for dt in DTYPES for shape, d in
             (((3000,), 0), ((40, 70), 1), ((40, 70), 0), ((5, 6, 7), 1),
              # a dim before the last of a larger tensor: down the columns in the core
              # (kwker_sort_cols / kwker_kth_cols: blocks of columns, the last one partial,
              # claimed by the threads)
              ((300, 130), 0), ((4, 50, 90), 1))]
    for dt, shape, d in cases:
        x = _mixed(dt, shape, seed=len(refs))
        refs[(dt, shape, d)] = (x, _stable_sort(x, d), _stable_sort(x, d, True),
                                torch.unique(x, return_inverse=True, return_counts=True)
                                if not dt.is_floating_point else None)
    _install(torch_ops, kind)
    kwker.reset_counters()
    for (dt, shape, d), (x, asc, desc, uniq) in refs.items():
        for stable in (None, False, True):
            got = torch.sort(x, dim=d, stable=stable) if stable is not None else torch.sort(x, d)
            same(got[0], asc[0])
            same(got[1], asc[1])
            got = x.sort(dim=d, descending=True, stable=stable)
            same(got[0], desc[0])
            same(got[1], desc[1])
        same(torch.argsort(x, dim=d), asc[1])
        same(torch.argsort(x, dim=d, descending=True, stable=True), desc[1])
        if d == 0:
            same(torch.msort(x), asc[0])
        v, i = torch.empty_like(x), torch.empty(x.shape, dtype=torch.int64)
        r = torch.sort(x, dim=d, out=(v, i))
        assert r[0] is v and r[1] is i
        same(v, asc[0])
        same(i, asc[1])
        if dt != torch.bool:
            k = min(7, x.shape[d])
            for largest, ref in ((True, desc), (False, asc)):
                tv, ti = torch.topk(x, k, dim=d, largest=largest)
                same(tv, ref[0].narrow(d, 0, k).contiguous())
                same(ti, ref[1].narrow(d, 0, k).contiguous())
            ov, oi = torch.empty(0, dtype=dt), torch.empty(0, dtype=torch.int64)
            tv, ti = torch.topk(x, k, dim=d)
            ov.resize_(tv.shape), oi.resize_(ti.shape)
            torch.topk(x, k, dim=d, out=(ov, oi))
            same(ov, tv)
            same(oi, ti)
            for kk in (1, x.shape[d] // 2 + 1, x.shape[d]):
                for keepdim in (False, True):
                    kv, ki = torch.kthvalue(x, kk, dim=d, keepdim=keepdim)
                    want_v = asc[0].narrow(d, kk - 1, 1)
                    want_i = asc[1].narrow(d, kk - 1, 1)
                    if not keepdim:
                        want_v, want_i = want_v.squeeze(d), want_i.squeeze(d)
                    same(kv, want_v.contiguous())
                    same(ki, want_i.contiguous())
        if uniq is not None:  # no -0.0/0.0 ties: torch's own unique is deterministic here
            got = torch.unique(x, return_inverse=True, return_counts=True)
            for g, w in zip(got, uniq):
                same(g, w)
            same(torch.unique(x), uniq[0])
    calls = sum(c["calls"] for c in kwker.runtime_info()["counters"].values())
    assert calls >= len(refs) * 10, f"Kwker's kernels ran {calls} times: the overrides were off"


@pytest.mark.parametrize("kind", KINDS)
def test_float_unique_follows_the_stable_order(torch_ops, no_thresholds, kind):
    x = torch.tensor([1.0, float("nan"), 0.0, -0.0, float("nan"), 1.0, -0.0, 2.0])
    _install(torch_ops, kind)
    out, inv, counts = torch.unique(x, return_inverse=True, return_counts=True)
    # -0.0 and 0.0 are one value represented by the first in input order (0.0); every NaN is
    # its own value, as in torch.
    assert _bits(out).tolist() == _bits(torch.tensor([0.0, 1.0, 2.0, float("nan"),
                                                      float("nan")])).tolist()
    assert inv.tolist() == [1, 3, 0, 0, 4, 1, 0, 2]
    assert counts.tolist() == [3, 2, 1, 1, 1]
    assert torch.unique(x, sorted=False).numel() == 5  # sorted=False: torch's own kernel


@pytest.mark.parametrize("kind", KINDS)
def test_install_and_uninstall_restore_the_dispatcher_exactly(torch_ops, kind):
    before = _dispatch_state()
    _install(torch_ops, kind)
    during = _dispatch_state()
    changed = {k for k in before if before[k] != during[k]}
    assert {"sort.stable", "sort.values_stable", "topk", "topk.values", "kthvalue.values",
            "_unique2"} <= changed
    torch_ops.uninstall()
    assert _dispatch_state() == before
    assert torch_ops.status()["installed"] is False


@pytest.mark.parametrize("kind", KINDS)
def test_a_second_install_with_another_subset_changes_the_set(torch_ops, kind):
    before = _dispatch_state()
    _install(torch_ops, kind, ops=["sort"])
    one = _dispatch_state()
    assert one["sort.stable"] != before["sort.stable"] and one["topk"] == before["topk"]
    _install(torch_ops, kind, ops=["topk", "kthvalue"])
    two = _dispatch_state()
    assert two["sort.stable"] == before["sort.stable"]
    assert two["topk"] != before["topk"] and two["kthvalue.values"] != before["kthvalue.values"]
    assert torch_ops.status()["ops_on"] == ["topk", "kthvalue"]
    assert torch_ops.install(compiled=kind == "compiled", ops=["topk", "kthvalue"]) is True
    assert _dispatch_state() == two
    torch_ops.uninstall()
    assert _dispatch_state() == before


def test_kwker_disable_makes_install_a_no_op(torch_ops, monkeypatch):
    before = _dispatch_state()
    monkeypatch.setenv("KWKER_DISABLE", "1")
    with pytest.warns(_integrations.DisabledWarning, match="KWKER_DISABLE=1 is set"):
        assert torch_ops.install() is False
    assert _dispatch_state() == before
    st = torch_ops.status()
    assert st["installed"] is False and st["disabled_by_env"] is True


def test_compiled_operators_built_for_another_torch_fall_back_to_python(torch_ops, monkeypatch):
    # The running torch's version is what decides: pretend it is another minor than the one
    # the compiled operators were built for (the wheel smoke test does it with a real wheel).
    from kwker._torch import extension
    built = extension.build_info()
    assert built is not None and built.get("torch_minor"), "the test build has compiled operators"
    monkeypatch.setattr(extension, "running_torch", lambda: "2.99.0")
    want = f"the compiled PyTorch operators were built for torch {built['torch']}, not 2.99.0"
    st = torch_ops.status()
    assert st["compiled_available"] is False and st["compiled_reason"] == want
    with pytest.raises(RuntimeError, match="built for torch .*, not 2.99.0.*compiled=False"):
        torch_ops.install(compiled=True)
    assert torch_ops.status()["installed"] is False
    x = _mixed(torch.float32, (3, 3000))
    want_v, want_i = _stable_sort(x, dim=1)  # torch's own kernel: nothing is installed yet
    assert torch_ops.install() is True  # compiled=None: the Python-registered operators
    st = torch_ops.status()
    assert st["implementation"] == "python" and st["compiled_reason"] == want
    assert st["ops_on"], st
    v, i = torch.sort(x, dim=1, stable=True)
    same(v, want_v)
    same(i, want_i)


def test_bad_arguments_say_what_to_pass(torch_ops):
    with pytest.raises(ValueError, match=r"unknown op\(s\) 'argsorted'; valid ops: sort, topk, "
                                         r"kthvalue, unique"):
        torch_ops.install(ops=["argsorted"])
    with pytest.raises(TypeError, match="compiled must be None, True or False"):
        torch_ops.install(compiled="yes")
    with pytest.raises(TypeError, match="ops must be None or a list"):
        torch_ops.install(ops=3)
    assert torch_ops.status()["installed"] is False


def _error(fn):
    try:
        fn()
    except Exception as e:
        return type(e), str(e)
    return None


@pytest.mark.parametrize("kind", KINDS)
def test_what_kwker_does_not_take_goes_to_torch_with_its_errors(torch_ops, no_thresholds, kind):
    wide = torch.randint(0, 1000, (40000,), dtype=torch.int32).to(torch.uint32)
    calls = {
        "complex": lambda: torch.sort(torch.randn(10, dtype=torch.complex64)),
        "uint32 radix": lambda: torch.sort(wide),
        "uint32 unique": lambda: torch.unique(wide),
        "bool topk": lambda: torch.topk(torch.ones(10, dtype=torch.bool), 2),
        "uint16 kthvalue": lambda: torch.kthvalue(wide[:50].to(torch.uint16), 2),
        "k too large": lambda: torch.topk(torch.randn(5), 6),
        "kthvalue k=0": lambda: torch.kthvalue(torch.randn(5), 0),
        "dim out of range": lambda: torch.sort(torch.randn(3, 4), dim=2),
        "bad out dtype": lambda: torch.sort(torch.randn(5), out=(torch.empty(5),
                                                                torch.empty(5))),
    }
    want = {name: _error(fn) for name, fn in calls.items()}
    assert all(w is not None for w in want.values()), want
    _install(torch_ops, kind)
    for name, fn in calls.items():
        assert _error(fn) == want[name], name
    # Meta tensors, scalars and the descending wide-unsigned sort go to torch and work.
    m = torch.empty(4, 5, device="meta")
    assert torch.sort(m, dim=1)[0].device.type == "meta"
    assert torch.sort(torch.tensor(3.0))[1].item() == 0
    same(torch.sort(wide, descending=True)[0], _stable_sort(wide, descending=True)[0])


@pytest.mark.parametrize("kind", KINDS)
def test_gradients_flow_through_sort_topk_and_kthvalue(torch_ops, no_thresholds, kind):
    x0 = torch.randn(6, 50, dtype=torch.float64)

    def grads():
        x = x0.clone().requires_grad_(True)
        v, _ = torch.sort(x, dim=1, descending=True)
        t, _ = torch.topk(x, 5, dim=0)
        k, _ = torch.kthvalue(x, 3, dim=1)
        (v[:, :3].sum() * 2 + t.square().sum() + k.sum()).backward()
        return x.grad

    want = grads()
    _install(torch_ops, kind)
    kwker.reset_counters()
    got = grads()
    assert torch.equal(got, want)
    assert sum(c["calls"] for c in kwker.runtime_info()["counters"].values()) >= 3


def _kwker_calls():
    return sum(c["calls"] for c in kwker.runtime_info()["counters"].values())


@pytest.mark.parametrize("kind", KINDS)
def test_below_the_threshold_torch_runs_and_above_kwker(torch_ops, kind):
    from kwker.torch_ops import _thresholds
    thr = _thresholds.table(kind, ["sort"])["sort"][10]  # float32
    _install(torch_ops, kind)
    kwker.reset_counters()
    if thr > 1:
        torch.sort(torch.randn(thr - 1))
        assert _kwker_calls() == 0
    torch.sort(torch.randn(max(thr, 1)))
    assert _kwker_calls() == 1


def test_narrow_columns_select_on_torch_and_sort_on_kwker(torch_ops):
    """Along dim 0 of a large contiguous tensor whose rows are narrow (under 256 bytes), the
    compiled k-th value and top-k with k above 16 leave the call to torch's kernel (Kwker would
    gather the columns into rows first), a top-k with a small k stays Kwker's (selected down the
    columns in place, kwker_topk_cols), and so does the sort; wider rows stay on Kwker for all."""
    _install(torch_ops, "compiled")
    narrow, wide = torch.randn(100000, 10), torch.randn(2000, 300)
    for x, wide_rows in ((narrow, False), (wide, True)):
        for call, on_kwker in ((lambda: torch.topk(x, 5, dim=0), True),
                               (lambda: torch.topk(x, 16, dim=0, largest=False), True),
                               (lambda: torch.topk(x, 17, dim=0), wide_rows),
                               (lambda: torch.kthvalue(x, 7, dim=0), wide_rows)):
            kwker.reset_counters()
            v, i = call()
            assert (_kwker_calls() > 0) == on_kwker, x.shape
            assert torch.equal(x.gather(0, i.reshape(-1, x.shape[1])).reshape(v.shape), v)
        for k in (1, 5, 16, 17):
            for largest in (True, False):
                v, i = torch.topk(x, k, dim=0, largest=largest)
                ref = torch.sort(x, dim=0, descending=largest, stable=True)
                assert torch.equal(v, ref[0][:k]) and torch.equal(i, ref[1][:k]), (x.shape, k)
        kwker.reset_counters()
        v, i = torch.sort(x, dim=0)
        assert _kwker_calls() > 0
        assert torch.equal(v, torch.sort(x, dim=0, stable=True)[0]) and torch.equal(x.gather(0, i), v)


@pytest.mark.parametrize("kind", KINDS)
def test_stable_1d_sorts_of_narrow_integers_go_to_torchs_radix_sort(torch_ops, kind):
    """torch.sort(t, stable=True) of a 1-D uint8 / int8 / int16 tensor of 65,536 keys or more,
    ascending, is torch's radix sort, faster than Kwker's on AMD: there the override leaves it
    to torch; on Intel, where Kwker's ran faster, it stays Kwker's (the rule of this CPU's
    vendor is tested here, compiled and Python operators alike). Descending, shorter, 2-D, bool
    and 32-bit keys stay on Kwker everywhere."""
    _install(torch_ops, kind)
    handoff = kwker.runtime_info()["cpu"]["vendor"] != "GenuineIntel"
    g = torch.Generator().manual_seed(3)
    for dt in (torch.uint8, torch.int8, torch.int16, torch.bool, torch.int32):
        x = torch.randint(0, 2 if dt == torch.bool else 100, (70000,), generator=g).to(dt)
        narrow = handoff and dt in (torch.uint8, torch.int8, torch.int16)
        for call, on_kwker in ((lambda: torch.sort(x, stable=True), not narrow),
                               (lambda: torch.argsort(x, stable=True), not narrow),
                               (lambda: torch.sort(x, stable=True, descending=True), True),
                               (lambda: torch.sort(x[:60000], stable=True), True),
                               (lambda: torch.sort(x.reshape(2, 35000), stable=True), True)):
            kwker.reset_counters()
            got = call()
            assert (_kwker_calls() > 0) == on_kwker, dt
            i = got if isinstance(got, torch.Tensor) else got[1]
            flat = i.reshape(-1)
            assert flat.numel() and torch.all(flat >= 0)
        v, i = torch.sort(x, stable=True)
        assert torch.equal(x[i], v) and torch.equal(i, torch.argsort(x.long(), stable=True))


@pytest.mark.parametrize("kind", KINDS)
def test_each_operator_switches_at_its_own_threshold(torch_ops, kind):
    """Every (operator, dtype) whose measured threshold is above 1 element: one below it torch's
    kernel runs (no Kwker call), at it Kwker's."""
    from kwker.torch_ops import _thresholds
    ops = ["sort", "topk", "kthvalue"]
    table = _thresholds.table(kind, ops)
    calls = {"sort": lambda t: torch.sort(t), "topk": lambda t: torch.topk(t, 1),
             "kthvalue": lambda t: torch.kthvalue(t, 1)}
    _install(torch_ops, kind, ops=ops)
    checked = 0
    for op in ops:
        for code, thr in enumerate(table[op]):
            dtype = getattr(torch, _thresholds._NAMES.get(code, ""), None)
            if thr <= 1 or thr > 1 << 20 or not isinstance(dtype, torch.dtype) \
                    or dtype in (torch.bool, torch.uint16, torch.uint32, torch.uint64):
                continue  # (torch's own topk / kthvalue reject the wide unsigned types)
            x = (torch.randn(thr) * 100).to(dtype)
            kwker.reset_counters()
            calls[op](x[:thr - 1])
            assert _kwker_calls() == 0, (op, dtype, thr)
            calls[op](x)
            assert _kwker_calls() >= 1, (op, dtype, thr)
            checked += 1
    if not checked:
        pytest.skip(f"every {kind} threshold here is 1 element: nothing switches")


@pytest.mark.parametrize("kind", KINDS)
def test_torch_thread_count_caps_kwker(torch_ops, kind):
    _install(torch_ops, kind)
    saved = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        kwker.reset_counters()
        torch.sort(torch.randn(300000))
        used = max(c["max_threads"] for c in kwker.runtime_info()["counters"].values())
        assert used == 1
    finally:
        torch.set_num_threads(saved)


def test_import_reads_no_torch_and_status_works_without_it():
    code = ("import sys, kwker.torch_ops as t; s = t.status(); "
            "print('torch' in sys.modules, s['installed'], s['built_for_torch'] is not None)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=dict(os.environ)).stdout.split()
    assert out == ["False", "False", "True"]


@pytest.mark.parametrize("backend", ["fast", "ctypes"])
def test_kernels_through_either_backend(backend, no_thresholds):
    from kwker import _backend
    from kwker._torch import kernels as K
    _backend.use(backend)
    x = _mixed(torch.float32, (50, 3000), seed=9)
    asc, desc = _stable_sort(x, 1), _stable_sort(x, 1, True)
    v, i = K.sort(x, 1, False)
    same(v, asc[0])
    same(i, asc[1])
    v, i = K.topk(x, 60, 1, True)
    same(i, desc[1][:, :60].contiguous())
    v, i = K.kthvalue(x, 1500, 1, False)
    same(i, asc[1][:, 1499].contiguous())
    y = x.reshape(-1)[:100].nan_to_num().abs()  # no NaN, no -0.0: torch's unique is stable
    u = K.unique(y, True, True)
    want = torch.unique(y, return_inverse=True, return_counts=True)
    for g, w in zip(u, want):
        same(g, w)


def test_small_compiled_results_reuse_freed_buffers_safely(torch_ops):
    """Results up to 64 KiB come from a per-thread list of freed buffers (ops.cc): a reused
    buffer never aliases a live result, buffers freed on another thread or grown by resize_ stay
    correct, and every size class up to the limit and just past it gives torch's results."""
    import threading
    _install(torch_ops, "compiled")
    import numpy as np
    xs = [torch.rand(n, generator=torch.Generator().manual_seed(n)) for n in (1000, 1000, 700)]
    refs = [torch.from_numpy(np.argsort(x.numpy(), kind="stable")) for x in xs]  # not torch's
    keep = [torch.sort(x) for x in xs[:2]]
    for _ in range(3):  # freed and taken again while the kept results live
        v, i = torch.sort(xs[2])
        assert torch.equal(i, refs[2])
        del v, i
    for (v, i), x, ref in zip(keep, xs, refs):
        assert torch.equal(v, x[ref]) and torch.equal(i, ref)
        assert v.data_ptr() % 64 == 0 and i.data_ptr() % 64 == 0
    assert keep[0][1].data_ptr() != keep[1][1].data_ptr()
    made = []  # made here, freed on another thread, then the lists used again here
    t = threading.Thread(target=lambda: made.clear())
    made.extend(torch.sort(x) for x in xs)
    t.start()
    t.join()
    v, i = keep[0]
    v.resize_(50_000)  # grows past the small sizes: a normal tensor, moved to a new buffer
    v[1000:] = 0
    assert torch.equal(v[:1000], xs[0][refs[0]])
    del keep, v, i
    for n in (1, 7, 8, 9, 8191, 8192, 8193, 16384, 100_000):  # int64 indices: 8 B .. 800 KB
        x = torch.randn(n, generator=torch.Generator().manual_seed(n))
        v, i = torch.sort(x)
        ref = torch.from_numpy(np.argsort(x.numpy(), kind="stable"))
        assert torch.equal(v, x[ref]) and torch.equal(i, ref), n


def test_large_compiled_results_come_from_kwkers_cache_and_go_back(torch_ops):
    x = torch.rand(3_000_000)
    ref = torch.sort(x, stable=True)  # torch's own
    _install(torch_ops, "compiled")
    kwker.release_scratch()
    v, i = torch.sort(x)  # 12 MB of values, 24 MB of indices: both from Kwker's buffers
    held = kwker.runtime_info()["scratch"]["in_use_bytes"]
    assert held >= 36_000_000
    assert torch.equal(v, ref.values) and torch.equal(i, ref.indices)
    v.resize_(3000, 1000)  # a normal, resizable tensor (it moves to a new buffer)
    assert v.shape == (3000, 1000)
    del v, i
    info = kwker.runtime_info()["scratch"]
    assert info["in_use_bytes"] < held and info["cached_bytes"] >= 24_000_000
    with kwker.config(scratch_limit=0):  # no Kwker buffers: torch's allocator, same results
        v, i = torch.sort(x)
        assert kwker.runtime_info()["scratch"]["in_use_bytes"] < held
        assert torch.equal(i, ref.indices)
    kwker.release_scratch()


@pytest.mark.parametrize("kind", KINDS)
def test_strided_inputs_give_torchs_values_indices_and_strides(torch_ops, no_thresholds, kind):
    """Views users sort (a slice t[::k], a matrix column, a transposed matrix along either dim, a
    permuted 3-D tensor, an expanded row): the same values, indices and result strides as
    torch's own sort, every dtype of the strided 1-D gather (1, 2, 4 and 8 bytes)."""
    views = []
    for dt in (torch.float32, torch.float64, torch.float16, torch.int8, torch.int64, torch.bool):
        base = _mixed(dt, (40, 30), seed=3)
        flat = base.reshape(-1)
        views += [(f"{dt} t[::3]", flat[::3], 0), (f"{dt} t[5::7]", flat[5::7], 0),
                  (f"{dt} column", base[:, 4], 0), (f"{dt} .t() dim 0", base.t(), 0),
                  (f"{dt} .t() dim 1", base.t(), 1)]
    cube = _mixed(torch.float32, (6, 7, 8), seed=4).permute(2, 0, 1)
    views += [("permuted dim 0", cube, 0), ("permuted dim 2", cube, 2),
              ("expanded", _mixed(torch.int32, (1, 50), seed=5).expand(4, 50), 1)]
    want = {label: (_stable_sort(x, d), _stable_sort(x, d, True)) for label, x, d in views}
    _install(torch_ops, kind)
    for label, x, d in views:
        asc, desc = want[label]
        for got, ref in ((torch.sort(x, dim=d, stable=True), asc),
                         (torch.sort(x, dim=d, descending=True, stable=True), desc)):
            try:
                same(got[0], ref[0])
                same(got[1], ref[1])
            except AssertionError as exc:
                raise AssertionError(f"{label}: {exc}") from None


@pytest.mark.parametrize("kind", KINDS)
def test_sort_out_tensors_of_every_layout_and_alias(torch_ops, no_thresholds, kind):
    """torch.sort(x, out=(v, i)): contiguous out tensors of the result's shape take the result
    directly (no copy); out tensors that are strided, of another shape, or share memory with the
    input (values written over x itself) give torch's result all the same, and the returned
    tensors are the out tensors."""
    x0 = _mixed(torch.int32, (6, 500), seed=11)
    asc = _stable_sort(x0, 1)
    _install(torch_ops, kind)

    def run(x, v, i):
        r = torch.sort(x, dim=1, stable=True, out=(v, i))
        assert r[0] is v and r[1] is i
        same(v.contiguous(), asc[0])
        same(i.contiguous(), asc[1])

    run(x0, torch.empty_like(x0), torch.empty(x0.shape, dtype=torch.int64))
    run(x0, torch.empty(500, 6, dtype=torch.int32).t(), torch.empty(500, 6, dtype=torch.int64).t())
    with pytest.warns(UserWarning, match="resized"):
        run(x0, torch.empty(3, dtype=torch.int32), torch.empty(3, dtype=torch.int64))
    x = x0.clone()  # values into the input itself: torch's kernel sorts a copy
    run(x, x, torch.empty(x.shape, dtype=torch.int64))


@pytest.mark.parametrize("kind", KINDS)
def test_one_row_right_after_torchs_own_sort(torch_ops, kind):
    """A 1-D sort on Kwker right after torch's own kernel ran on its OpenMP team (Kwker's work
    then runs on that team, torch_runner.h): the stable order of integers above the radix
    threshold and of floats, bit for bit, with torch at one and at two threads."""
    g = torch.Generator().manual_seed(7)
    xs = [torch.randint(-2**31, 2**31 - 1, (300_000,), dtype=torch.int32, generator=g),
          torch.randint(-50, 50, (200_001,), dtype=torch.int32, generator=g),
          torch.randn(150_000, generator=g)]
    want = [_stable_sort(x) for x in xs]
    before = torch.get_num_threads()
    try:
        for threads in (2, 1):
            torch.set_num_threads(threads)
            for x, ref in zip(xs, want):
                torch_ops.uninstall()
                torch.sort(x.flip(0), stable=True)  # torch's kernel on its team first
                _install(torch_ops, kind)
                got = torch.sort(x, stable=True)
                same(got[0], ref[0])
                same(got[1], ref[1])
    finally:
        torch.set_num_threads(before)
