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
import warnings

import torch

from kwker._torch import kernels as K

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
    return _out_fits(out, dtype) and out.shape == shape


def _out_fits(out, dtype):
    """An out= tensor torch would resize rather than refuse: a dense CPU tensor of the result's
    dtype (anything else goes to torch, which raises its own error)."""
    return out.device.type == "cpu" and out.layout == torch.strided and out.dtype == dtype


def _copy_out(values, indices, v, i):
    values.copy_(v)
    indices.copy_(i)
    return values, indices


def _resize_out(out, result):
    """out= as torch's structured kernels treat it: resized to the result's shape when it
    differs (at::native::resize_output, with its deprecation warning, in its words, when out
    had elements), taking the result's strides when resized; kept as it is otherwise."""
    if out.shape != result.shape:
        if out.numel() != 0:
            warnings.warn(
                f"An output with one or more elements was resized since it had shape "
                f"{list(out.shape)}, which does not match the required output shape "
                f"{list(result.shape)}. This behavior is deprecated, and in a future PyTorch "
                "release outputs will not be resized unless they have zero elements. You can "
                "explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
                "with t.resize_(0).", UserWarning, stacklevel=_caller_level())
        out.resize_(result.shape)
        out.as_strided_(result.shape, result.stride())


def _caller_level():
    """The warnings stacklevel of the first frame outside torch and this package (the line
    that called torch.sort), where torch's own warning from C++ points."""
    import os
    import sys
    skip = (os.path.dirname(torch.__file__), os.path.dirname(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(skip):
        frame, level = frame.f_back, level + 1
    return level


def _into_out(values, indices, v, i):
    _resize_out(values, v)
    _resize_out(indices, i)
    return _copy_out(values, indices, v, i)


def _sort_kernels(thr):
    stable_op, out_op = _aten.sort.stable, _aten.sort.values_stable

    def sort_stable(keyset, self, *, stable=None, dim=-1, descending=False):
        code = _CODES.get(self.dtype)
        if code is not None and self.numel() >= thr[code] and \
                K.accepts_sort(self, dim, descending) and \
                not K.torch_radix_faster(self, stable, descending):
            return K.sort(self, dim, descending)
        return stable_op.redispatch(keyset.remove(_BS), self, stable=stable, dim=dim,
                                    descending=descending)

    def sort_values_stable(keyset, self, *, stable=None, dim=-1, descending=False, values,
                           indices):
        code = _CODES.get(self.dtype)
        # out= tensors of another shape (torch.empty(0), say) are resized as torch resizes
        # them, so torch.sort(x, out=...) gives the same stable order as torch.sort(x).
        if code is not None and self.numel() >= thr[code] and \
                K.accepts_sort(self, dim, descending) and \
                not K.torch_radix_faster(self, stable, descending) and \
                _out_fits(values, self.dtype) and _out_fits(indices, _LONG):
            return _into_out(values, indices, *K.sort(self, dim, descending))
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
        if code is not None and self.numel() >= thr[code] and \
                K.accepts_select(self, k, dim, 0) and _out_fits(values, self.dtype) and \
                _out_fits(indices, _LONG):
            return _into_out(values, indices, *K.topk(self, k, dim, largest))
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
