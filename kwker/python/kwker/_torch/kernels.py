"""Kwker's kernels for torch's sort family, on CPU tensors, with torch's results.

Every function returns what torch's own kernel returns with `stable=True` (for topk and
kthvalue: the first k of that stable order), in the same layout torch gives: sort's outputs
take the input's strides (torch.empty_like), topk's and kthvalue's are contiguous. Order: NaN
is the largest value and -0.0 ties with 0.0 (KWKER_NAN_LARGEST), ties keep their input order.

`accepts_*` say whether a call is one Kwker handles; the dispatcher-facing wrappers
(kwker.torch_ops._python_ops, and the graph operators of ops.py) send everything else to torch's own kernel, so torch's errors stay torch's.
The functions take the checked arguments (dim already in range) and never raise for them.
"""
import functools
import math
import os

import torch

from kwker import _backend, _runtime

CODES = {
    torch.bool: 0, torch.int8: 1, torch.int16: 2, torch.int32: 3, torch.int64: 4,
    torch.uint8: 5, torch.uint16: 6, torch.uint32: 7, torch.uint64: 8,
    torch.float16: 9, torch.float32: 10, torch.float64: 11, torch.bfloat16: 12,
}
DESCENDING, NAN_LARGEST = 1, 4
# torch sorts 1-D integer tensors of at least GRAIN_SIZE elements ascending with a radix sort
# that has no uint16/32/64 kernel: it raises there, and so must the override (torch's error).
RADIX_MIN = 32768
_NO_RADIX = (torch.uint16, torch.uint32, torch.uint64)
# torch's stable radix sort ran 1-D ascending 8- and 16-bit integer keys faster than Kwker's
# counting sorts from about this many on, on AMD (Zen 5); on Intel (a Xeon with AMX) Kwker's
# 8-bit counting and 16-bit radix sorts ran 1.1-2.9x torch's there, so the handoff is AMD's
# (and other vendors') only (ops.cc's kNarrowRadixMin and torch_narrow_radix_cpu).
NARROW_RADIX_MIN = 65536
_NARROW = (torch.uint8, torch.int8, torch.int16)


@functools.cache
def _torch_radix_cpu():
    """Whether this CPU is one where torch's radix sort of narrow keys is the faster one."""
    return _runtime.runtime_info().get("cpu", {}).get("vendor") != "GenuineIntel"


# torch's topk and kthvalue have no kernel for these: the overrides leave them to its error.
SELECT_DTYPES = frozenset(CODES) - {torch.bool, torch.uint16, torch.uint32, torch.uint64}
# Wide unsigned tensors go through most torch ops as the signed type of the same width.
_SIGNED = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}

# Test-only: KWKER_TEST_CORRUPT_TORCH_OP=<op> makes that op's kernel return a wrong index, so
# tests can prove that the self-check keeps a differing override off (like the core's
# KWKER_TEST_CORRUPT_ENGINE). Read at every call of the op's kernel.
CORRUPT_ENV = "KWKER_TEST_CORRUPT_TORCH_OP"


def _corrupt(op, idx):
    if os.environ.get(CORRUPT_ENV) == op and idx.numel() >= 2:
        flat = idx.view(-1) if idx.is_contiguous() else idx.reshape(-1)
        flat[0], flat[1] = flat[1].clone(), flat[0].clone()
        if not idx.is_contiguous():
            idx.copy_(flat.view(idx.shape))


# Named tensors (torch < 2.13) go to torch's kernel, which propagates the names.
_has_names = getattr(torch.Tensor, "has_names", None)


def _plain_cpu(t):
    """A dense CPU tensor of a dtype Kwker sorts, without names."""
    return (t.device.type == "cpu" and t.layout == torch.strided and t.dtype in CODES
            and not (_has_names is not None and _has_names(t)))


def _dim(t, dim):
    """dim wrapped into [0, ndim), or None when out of range (torch raises for it)."""
    nd = t.dim()
    if nd == 0 or not -nd <= dim < nd:
        return None
    return dim + nd if dim < 0 else dim


def accepts_sort(t, dim, descending):
    if not _plain_cpu(t) or _dim(t, dim) is None:
        return False
    if t.dtype in _NO_RADIX and t.dim() == 1 and not descending and t.numel() >= RADIX_MIN:
        return False
    return True


def torch_radix_faster(t, stable, descending):
    """Whether torch's own stable radix sort is the faster one for this call."""
    return (stable is True and not descending and t.dtype in _NARROW and t.dim() == 1 and
            t.numel() >= NARROW_RADIX_MIN and _torch_radix_cpu())


def accepts_unique(t):
    """torch.unique flattens and sorts with the same radix path: it raises for wide unsigned
    tensors of RADIX_MIN elements or more, and so must the override."""
    return _plain_cpu(t) and not (t.dtype in _NO_RADIX and t.numel() >= RADIX_MIN)


def accepts_select(t, k, dim, lowest):
    """topk (lowest 0) and kthvalue (lowest 1): an int k with lowest <= k <= the dim's size."""
    d = _dim(t, dim) if t.dtype in SELECT_DTYPES and _plain_cpu(t) else None
    return d is not None and type(k) is int and lowest <= k <= t.shape[d]


def _threads(threads):
    """Kwker's threads for a call: torch's intra-op thread count, so torch.set_num_threads caps
    Kwker's kernels too (the self-check passes 0: Kwker's own budget)."""
    return torch.get_num_threads() if threads is None else threads


def sort(self, dim, descending, threads=None):
    """(values, indices) of torch.sort(self, dim=dim, descending=descending, stable=True)."""
    x = self.detach()
    d = _dim(x, dim)
    vals = torch.empty_like(x)
    idx = torch.empty_like(x, dtype=torch.int64)
    if x.numel() == 0:
        return vals, idx
    code = CODES[x.dtype]
    flags = NAN_LARGEST | (DESCENDING if descending else 0)
    if d != x.dim() - 1 and x.is_contiguous():
        # Down the columns where they lie (kwker_sort_cols): no transposed copy either way.
        _backend.impl.sort_cols_ptr(code, x.data_ptr(), vals.data_ptr(), idx.data_ptr(),
                                    *_columns(x, d), flags, _threads(threads))
        _corrupt("sort", idx)
        return vals, idx
    cols = x.shape[d]
    src = x.movedim(d, -1)
    direct = src.is_contiguous() and vals.movedim(d, -1).is_contiguous()
    if not direct:
        src = src.contiguous()
        v = torch.empty(src.shape, dtype=x.dtype)
        i = torch.empty(src.shape, dtype=torch.int64)
    else:
        v, i = vals, idx
    _backend.impl.sort_pairs_ptr(code, src.data_ptr(), v.data_ptr(), i.data_ptr(),
                                 x.numel() // cols, cols, flags, _threads(threads))
    if not direct:
        vals.movedim(d, -1).copy_(v)
        idx.movedim(d, -1).copy_(i)
    _corrupt("sort", idx)
    return vals, idx


def _columns(x, d):
    """(outer, rows, inner) of a contiguous x along dim d: the C column calls' matrices."""
    outer, rows = math.prod(x.shape[:d]), x.shape[d]
    return outer, rows, x.numel() // (outer * rows)


def _rows(x, d):
    """x with dim d moved last, contiguous, and (rows, cols)."""
    src = x.movedim(d, -1).contiguous()
    cols = src.shape[-1]
    return src, (src.numel() // cols if cols else 0), cols


def topk(self, k, dim, largest, threads=None):
    """(values, indices) of torch.topk: the first k of the stable order (largest: descending).
    Always sorted, which is also a valid answer for sorted=False."""
    x = self.detach()
    d = _dim(x, dim)
    flags = NAN_LARGEST | (DESCENDING if largest else 0)
    if d != x.dim() - 1 and x.is_contiguous() and x.numel() and k:
        # Down the columns where they lie (kwker_topk_cols): no transposed copy either way.
        shape = list(x.shape)
        shape[d] = k
        v = torch.empty(shape, dtype=x.dtype)
        i = torch.empty(shape, dtype=torch.int64)
        _backend.impl.topk_cols_ptr(CODES[x.dtype], x.data_ptr(), *_columns(x, d), k, flags,
                                    True, v.data_ptr(), i.data_ptr(), _threads(threads))
        _corrupt("topk", i)
        return v, i
    src, rows, cols = _rows(x, d)
    shape = src.shape[:-1] + (k,)
    v = torch.empty(shape, dtype=x.dtype)
    i = torch.empty(shape, dtype=torch.int64)
    if v.numel():
        _backend.impl.topk_rows_ptr(CODES[x.dtype], src.data_ptr(), rows, cols, k, flags, True,
                                    v.data_ptr(), i.data_ptr(), _threads(threads))
    if d != x.dim() - 1:
        v, i = v.movedim(-1, d).contiguous(), i.movedim(-1, d).contiguous()
    _corrupt("topk", i)
    return v, i


def kthvalue(self, k, dim, keepdim, threads=None):
    """(values, indices) of torch.kthvalue: position k - 1 of the stable ascending order."""
    x = self.detach()
    d = _dim(x, dim)
    if d != x.dim() - 1 and x.is_contiguous() and x.numel():
        shape = list(x.shape)
        shape[d] = 1
        v = torch.empty(shape, dtype=x.dtype)
        i = torch.empty(shape, dtype=torch.int64)
        _backend.impl.kth_cols_ptr(CODES[x.dtype], x.data_ptr(), *_columns(x, d), k - 1,
                                   NAN_LARGEST, v.data_ptr(), i.data_ptr(), _threads(threads))
        if not keepdim:
            v, i = v.squeeze(d), i.squeeze(d)
        if os.environ.get(CORRUPT_ENV) == "kthvalue" and i.numel():
            i.view(-1)[0] += 1
        return v, i
    src, rows, cols = _rows(x, d)
    v = torch.empty(src.shape[:-1], dtype=x.dtype)
    i = torch.empty(src.shape[:-1], dtype=torch.int64)
    if rows:
        _backend.impl.kth_rows_ptr(CODES[x.dtype], src.data_ptr(), rows, cols, k - 1,
                                   NAN_LARGEST, v.data_ptr(), i.data_ptr(), _threads(threads))
    if keepdim:
        v, i = v.unsqueeze(d), i.unsqueeze(d)
    if os.environ.get(CORRUPT_ENV) == "kthvalue" and i.numel():
        i.view(-1)[0] += 1
    return v, i


def unique(self, return_inverse, return_counts, threads=None):
    """(output, inverse, counts) of torch.unique(sorted=True) (aten::_unique2): each run of
    equal values in the stable order is one output element, represented by its first element
    (so of -0.0 and 0.0 the one that comes first in the input); every NaN is its own run."""
    x = self.detach().reshape(-1)
    n = x.numel()
    empty = torch.empty(0, dtype=torch.int64)
    inverse = torch.empty(self.shape, dtype=torch.int64) if return_inverse else empty
    if n == 0:
        return x.clone(), inverse, empty.clone() if return_counts else empty
    x = x.contiguous()
    v = torch.empty(n, dtype=x.dtype)
    i = torch.empty(n, dtype=torch.int64)
    _backend.impl.sort_pairs_ptr(CODES[x.dtype], x.data_ptr(), v.data_ptr(), i.data_ptr(), 1,
                                 n, NAN_LARGEST, _threads(threads))
    v = v.view(_SIGNED.get(v.dtype, v.dtype))  # equality is bitwise for integers
    starts = torch.ones(n, dtype=torch.bool)
    torch.ne(v[1:], v[:-1], out=starts[1:])
    first = starts.nonzero().view(-1)
    out = v.index_select(0, first).view(x.dtype)
    counts = empty
    if return_counts:
        ends = torch.empty_like(first)
        ends[:-1] = first[1:]
        ends[-1] = n
        counts = ends - first
        if os.environ.get(CORRUPT_ENV) == "unique":
            counts[0] += 1
    if return_inverse:
        group = torch.cumsum(starts, 0, dtype=torch.int64).sub_(1)
        inverse.view(-1).index_copy_(0, i, group)
    return out, inverse, counts
