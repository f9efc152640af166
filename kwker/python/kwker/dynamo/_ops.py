"""kwker::sort / argsort / topk / kthvalue / linear: the operators a rewritten graph calls.

Defined with a plain torch.library.Library ("DEF") and one Python kernel for every backend:
torch.library.custom_op would add about 24 us of dispatch per call. Each kernel runs Kwker's
kernel for what it handles (the compiled one when this torch has it: it splits rows over
torch's own threads; else kwker.torch_ops._kernels) and torch's own function for the rest
(other devices, dtypes, torch's errors), so a rewritten graph computes what the original does
(with the stable order where torch leaves ties unspecified). A fake kernel gives Inductor the
output shapes and strides, so the rewritten graph can also be compiled.

kwker::linear is the CPU backend's compiled torch.ops.kwker_torch.linear as Inductor can trace
it: the compiled operator is registered as CompositeImplicitAutograd, which tracing would enter
with fake tensors. The eager "kwker" candidate calls the compiled operator directly (no Python
in between); only "kwker-inductor" goes through this one.
"""
import torch

from kwker.torch_ops import _compiled
from kwker.torch_ops import _kernels as K


def _kernels():
    """The kernels: compiled ones taking torch's thread count, or the Python ones."""
    if _compiled.availability()[0]:
        try:
            ns = _compiled.load()
        except RuntimeError:
            ns = None
        if ns is not None:
            def t():
                return torch.get_num_threads()
            return (lambda x, d, desc: tuple(ns.sort(x, d, desc, t())),
                    lambda x, k, d, largest: tuple(ns.topk(x, k, d, largest, t())),
                    lambda x, k, d, keep: tuple(ns.kthvalue(x, k, d, keep, t())))
    return K.sort, K.topk, K.kthvalue


_k_sort, _k_topk, _k_kthvalue = _kernels()

_lib = torch.library.Library("kwker", "DEF")
_lib.define("sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor, Tensor)")
_lib.define("argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor")
_lib.define("topk(Tensor self, int k, int dim=-1, bool largest=True, bool sorted=True) "
            "-> (Tensor, Tensor)")
_lib.define("kthvalue(Tensor self, int k, int dim=-1, bool keepdim=False) -> (Tensor, Tensor)")


def _sort(self, dim=-1, descending=False):
    if K.accepts_sort(self, dim, descending):
        return _k_sort(self, dim, descending)
    v, i = torch.sort(self, dim=dim, descending=descending, stable=True)
    return v, i


def _argsort(self, dim=-1, descending=False):
    return _sort(self, dim, descending)[1]


def _topk(self, k, dim=-1, largest=True, sorted=True):
    if K.accepts_select(self, k, dim, 0):
        return _k_topk(self, k, dim, largest)
    v, i = torch.topk(self, k, dim=dim, largest=largest, sorted=sorted)
    return v, i


def _kthvalue(self, k, dim=-1, keepdim=False):
    if K.accepts_select(self, k, dim, 1):
        return _k_kthvalue(self, k, dim, keepdim)
    v, i = torch.kthvalue(self, k, dim=dim, keepdim=keepdim)
    return v, i


_lib.define("linear(Tensor x, Tensor packed, Tensor? bias, int mode, int n, int group, "
            "int threads) -> Tensor")


def _linear(x, packed, bias, mode, n, group, threads):
    from kwker.cpu_backend._linear import _linear_op
    return _linear_op()(x, packed, bias, mode, n, group, threads)


for _name, _fn in (("sort", _sort), ("argsort", _argsort), ("topk", _topk),
                   ("kthvalue", _kthvalue), ("linear", _linear)):
    _lib.impl(_name, _fn, "CompositeExplicitAutograd")


def _reduced_shape(x, dim, size, keep=True):
    shape = list(x.shape)
    d = dim % x.dim() if x.dim() else 0
    if keep:
        shape[d] = size
    else:
        del shape[d]
    return shape


@torch.library.register_fake("kwker::sort")
def _sort_fake(self, dim=-1, descending=False):
    return torch.empty_like(self), torch.empty_like(self, dtype=torch.int64)


@torch.library.register_fake("kwker::argsort")
def _argsort_fake(self, dim=-1, descending=False):
    return torch.empty_like(self, dtype=torch.int64)


@torch.library.register_fake("kwker::topk")
def _topk_fake(self, k, dim=-1, largest=True, sorted=True):
    shape = _reduced_shape(self, dim, k)
    return self.new_empty(shape), self.new_empty(shape, dtype=torch.int64)


@torch.library.register_fake("kwker::kthvalue")
def _kthvalue_fake(self, k, dim=-1, keepdim=False):
    shape = _reduced_shape(self, dim, 1, keep=keepdim)
    return self.new_empty(shape), self.new_empty(shape, dtype=torch.int64)


@torch.library.register_fake("kwker::linear")
def _linear_fake(x, packed, bias, mode, n, group, threads):
    return x.new_empty((*x.shape[:-1], n), dtype=torch.float32)


ops = torch.ops.kwker
