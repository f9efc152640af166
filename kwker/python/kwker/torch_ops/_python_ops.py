"""The Python-registered operators: torch.library kernels that work with any torch version.

Each kernel is registered on the BackendSelect dispatch key rather than on CPU. BackendSelect
sits below autograd (so gradients through sort and topk keep working) and above every backend
key, and a kernel there receives the dispatch key set: whatever Kwker does not take (other
devices, dtypes Kwker does not sort, named tensors, sizes below the measured threshold, calls
torch itself rejects) is redispatched below BackendSelect, to torch's own kernel, so its result
and its errors stay torch's. A kernel registered on CPU would hide torch's CPU kernel from
Python for good. (The compiled operators, _torch_ops.so, register on CPU and reach torch's
kernel through at::cpu:: in C++.)

One torch.library.Library owns every registration; close() destroys it, which restores the
dispatcher exactly as it was.
"""
import torch

from . import _kernels as K

_BS = torch._C.DispatchKey.BackendSelect
_aten = torch.ops.aten
_CODES = K.CODES
_LONG = torch.int64

# The aten overloads each Kwker op takes over; argsort, msort and Tensor.sort reach sort.stable,
# torch.sort(out=...) sort.values_stable, torch.kthvalue kthvalue.values, torch.unique
# (sorted=True, no dim) _unique2.
OVERLOADS = {
    "sort": ("sort.stable", "sort.values_stable"),
    "topk": ("topk", "topk.values"),
    "kthvalue": ("kthvalue.values",),
    "unique": ("_unique2",),
}


def _out_ok(out, dtype, shape):
    return out.device.type == "cpu" and out.layout == torch.strided and out.dtype == dtype \
        and out.shape == shape


def _copy_out(values, indices, v, i):
    values.copy_(v)
    indices.copy_(i)
    return values, indices


def _sort_kernels(thr):
    stable_op, out_op = _aten.sort.stable, _aten.sort.values_stable

    def sort_stable(keyset, self, *, stable=None, dim=-1, descending=False):
        code = _CODES.get(self.dtype)
        if code is not None and self.numel() >= thr[code] and K.accepts_sort(self, dim, descending):
            return K.sort(self, dim, descending)
        return stable_op.redispatch(keyset.remove(_BS), self, stable=stable, dim=dim,
                                    descending=descending)

    def sort_values_stable(keyset, self, *, stable=None, dim=-1, descending=False, values,
                           indices):
        code = _CODES.get(self.dtype)
        if code is not None and self.numel() >= thr[code] and \
                K.accepts_sort(self, dim, descending) and \
                _out_ok(values, self.dtype, self.shape) and _out_ok(indices, _LONG, self.shape):
            return _copy_out(values, indices, *K.sort(self, dim, descending))
        return out_op.redispatch(keyset.remove(_BS), self, stable=stable, dim=dim,
                                 descending=descending, values=values, indices=indices)

    return {"sort.stable": sort_stable, "sort.values_stable": sort_values_stable}


def _topk_kernels(thr):
    fn_op, out_op = _aten.topk.default, _aten.topk.values

    def topk(keyset, self, k, dim=-1, largest=True, sorted=True):
        code = _CODES.get(self.dtype)
        if code is not None and self.numel() >= thr[code] and K.accepts_select(self, k, dim, 0):
            return K.topk(self, k, dim, largest)
        return fn_op.redispatch(keyset.remove(_BS), self, k, dim, largest, sorted)

    def topk_values(keyset, self, k, dim=-1, largest=True, sorted=True, *, values, indices):
        code = _CODES.get(self.dtype)
        if code is not None and self.numel() >= thr[code] and K.accepts_select(self, k, dim, 0):
            v, i = K.topk(self, k, dim, largest)
            if _out_ok(values, self.dtype, v.shape) and _out_ok(indices, _LONG, i.shape):
                return _copy_out(values, indices, v, i)
        return out_op.redispatch(keyset.remove(_BS), self, k, dim, largest, sorted,
                                 values=values, indices=indices)

    return {"topk": topk, "topk.values": topk_values}


def _kthvalue_kernels(thr):
    out_op = _aten.kthvalue.values

    def kthvalue_values(keyset, self, k, dim=-1, keepdim=False, *, values, indices):
        code = _CODES.get(self.dtype)
        if code is not None and self.numel() >= thr[code] and K.accepts_select(self, k, dim, 1):
            v, i = K.kthvalue(self, k, dim, keepdim)
            # The functional torch.kthvalue passes empty outputs to be resized; any other
            # shape goes to torch, which resizes with its warning or raises.
            fresh = values.numel() == 0 and indices.numel() == 0 and \
                values.dtype == self.dtype and indices.dtype == _LONG
            if fresh:
                values.resize_(v.shape)
                indices.resize_(i.shape)
            if fresh or (_out_ok(values, self.dtype, v.shape) and
                         _out_ok(indices, _LONG, i.shape)):
                return _copy_out(values, indices, v, i)
        return out_op.redispatch(keyset.remove(_BS), self, k, dim, keepdim, values=values,
                                 indices=indices)

    return {"kthvalue.values": kthvalue_values}


def _unique_kernels(thr):
    op = _aten._unique2.default

    def unique2(keyset, self, sorted=True, return_inverse=False, return_counts=False):
        code = _CODES.get(self.dtype)
        if sorted and code is not None and self.numel() >= thr[code] and K.accepts_unique(self):
            return K.unique(self, return_inverse, return_counts)
        return op.redispatch(keyset.remove(_BS), self, sorted, return_inverse, return_counts)

    return {"_unique2": unique2}


_MAKERS = {"sort": _sort_kernels, "topk": _topk_kernels, "kthvalue": _kthvalue_kernels,
           "unique": _unique_kernels}


class PythonOps:
    """The Python-registered overrides of `ops`, with thresholds {op: [min elements by dtype
    code]}; close() removes them all."""

    kind = "python"

    def __init__(self, ops, thresholds):
        self._lib = torch.library.Library("aten", "IMPL")
        try:
            for op in ops:
                for overload, fn in _MAKERS[op](thresholds[op]).items():
                    self._lib.impl(overload, fn, "BackendSelect", with_keyset=True)
        except BaseException:
            self._lib._destroy()
            raise

    def close(self):
        self._lib._destroy()


class PythonKernels:
    """The kernels themselves, without thresholds or fallbacks (the self-check runs these)."""

    kind = "python"
    sort = staticmethod(K.sort)
    topk = staticmethod(K.topk)
    kthvalue = staticmethod(K.kthvalue)
    unique = staticmethod(K.unique)
