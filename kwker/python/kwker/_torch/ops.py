"""kwker_torch: Kwker's one torch operator namespace, and the only module that registers in it
from Python.

    kwker_torch::sort / argsort / topk / kthvalue   what a graph rewritten by the compile backend
        calls: Kwker's kernel for what it handles (the compiled one when this torch has it: it
        splits rows over torch's own threads; else the Python kernels of kernels.py) and torch's
        own function for the rest (other devices, dtypes, torch's errors), so a rewritten graph
        computes what the original does, with the stable order where torch leaves ties
        unspecified. Defined here with a plain torch.library.Library (torch.library.custom_op
        would add about 24 us of dispatch per call), one kernel for every backend, and a fake
        kernel so that Inductor can compile the rewritten graph.
    kwker_torch::linear, linear_pack, linear_unpack, thread_runner   the CPU backend's linear
        operator (python/_torch_ops/linear_ops.cc), on the CPU key; its fake kernel is
        registered here when the extension loads, so Inductor traces it as one extern call.
    kwker_torch::sort_kernel ... unique_kernel, enable, disable_all, built_for   the compiled
        extension's bare kernels and the switch of kwker.torch_ops' overrides (ops.cc).

The compiled extension defines its operators with TORCH_LIBRARY(kwker_torch); this module adds
its own in a FRAGMENT of the same namespace, so they exist with or without the extension.

kwker::sort, argsort, topk, kthvalue and linear, the names of the compile backend's operators
before there was one namespace, stay for one release as deprecated aliases (a FutureWarning once
per process), so that saved graphs and exported programs that name them still load.
"""
import threading
import warnings

import torch

from . import extension
from . import kernels as K

NAMESPACE = "kwker_torch"
DEPRECATED_NAMESPACE = "kwker"   # the aliases go in the release after 0.1

_lock = threading.Lock()
_compiled = []      # torch.ops.kwker_torch once the extension is loaded
_linear = []        # its linear operator's default overload (called per layer: no lookups)
_fakes_done = []


def compiled(who="kwker.cpu_backend",
             otherwise="or leave the model to torch (the CPU backend needs them)"):
    """torch.ops.kwker_torch with the compiled extension loaded (once per process); RuntimeError
    naming `who` and saying why when it cannot load."""
    if not _compiled:
        ns = extension.load(who, otherwise)
        with _lock:
            if not _compiled:
                _compiled.append(ns)
    return _compiled[0]


def linear_op():
    """kwker_torch::linear's default overload: y = x W^T + b on packed weights."""
    if not _linear:
        _linear.append(compiled().linear.default)
    return _linear[0]


def register_compiled():
    """Called by extension.load once the library is loaded: the fake kernel of
    kwker_torch::linear (the operator exists only from then on)."""
    with _lock:
        if _fakes_done:
            return

        @torch.library.register_fake(f"{NAMESPACE}::linear")
        def _linear_fake(x, packed, bias, mode, n, group, threads):
            return x.new_empty((*x.shape[:-1], n), dtype=torch.float32)
        _fakes_done.append(True)    # only once registered: a failure is retried, not hidden


# --- the graph operators -----------------------------------------------------------------------

_chosen = []


def _kernels():
    """(sort, topk, kthvalue): the compiled kernels taking torch's thread count, or the Python
    ones; chosen on the first call, so importing this module loads no extension."""
    if _chosen:
        return _chosen[0]
    picked = (K.sort, K.topk, K.kthvalue)
    if extension.availability()[0]:
        try:
            ns = compiled()
        except RuntimeError:
            ns = None
        if ns is not None:
            def t():
                return torch.get_num_threads()
            picked = (lambda x, d, desc: tuple(ns.sort_kernel(x, d, desc, t())),
                      lambda x, k, d, largest: tuple(ns.topk_kernel(x, k, d, largest, t())),
                      lambda x, k, d, keep: tuple(ns.kthvalue_kernel(x, k, d, keep, t())))
    _chosen.append(picked)
    return picked


SCHEMAS = {
    "sort": "sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor, Tensor)",
    "argsort": "argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor",
    "topk": "topk(Tensor self, int k, int dim=-1, bool largest=True, bool sorted=True) "
            "-> (Tensor, Tensor)",
    "kthvalue": "kthvalue(Tensor self, int k, int dim=-1, bool keepdim=False) -> (Tensor, Tensor)",
}
LINEAR_SCHEMA = ("linear(Tensor x, Tensor packed, Tensor? bias, int mode, int n, int group, "
                 "int threads) -> Tensor")


def _sort(self, dim=-1, descending=False):
    if K.accepts_sort(self, dim, descending):
        return _kernels()[0](self, dim, descending)
    v, i = torch.sort(self, dim=dim, descending=descending, stable=True)
    return v, i


def _argsort(self, dim=-1, descending=False):
    return _sort(self, dim, descending)[1]


def _topk(self, k, dim=-1, largest=True, sorted=True):
    if K.accepts_select(self, k, dim, 0):
        return _kernels()[1](self, k, dim, largest)
    v, i = torch.topk(self, k, dim=dim, largest=largest, sorted=sorted)
    return v, i


def _kthvalue(self, k, dim=-1, keepdim=False):
    if K.accepts_select(self, k, dim, 1):
        return _kernels()[2](self, k, dim, keepdim)
    v, i = torch.kthvalue(self, k, dim=dim, keepdim=keepdim)
    return v, i


_lib = torch.library.Library(NAMESPACE, "FRAGMENT")
for _name, _fn in (("sort", _sort), ("argsort", _argsort), ("topk", _topk),
                   ("kthvalue", _kthvalue)):
    _lib.define(SCHEMAS[_name])
    _lib.impl(_name, _fn, "CompositeExplicitAutograd")


def _reduced_shape(x, dim, size, keep=True):
    shape = list(x.shape)
    d = dim % x.dim() if x.dim() else 0
    if keep:
        shape[d] = size
    else:
        del shape[d]
    return shape


@torch.library.register_fake(f"{NAMESPACE}::sort")
def _sort_fake(self, dim=-1, descending=False):
    return torch.empty_like(self), torch.empty_like(self, dtype=torch.int64)


@torch.library.register_fake(f"{NAMESPACE}::argsort")
def _argsort_fake(self, dim=-1, descending=False):
    return torch.empty_like(self, dtype=torch.int64)


@torch.library.register_fake(f"{NAMESPACE}::topk")
def _topk_fake(self, k, dim=-1, largest=True, sorted=True):
    shape = _reduced_shape(self, dim, k)
    return self.new_empty(shape), self.new_empty(shape, dtype=torch.int64)


@torch.library.register_fake(f"{NAMESPACE}::kthvalue")
def _kthvalue_fake(self, k, dim=-1, keepdim=False):
    shape = _reduced_shape(self, dim, 1, keep=keepdim)
    return self.new_empty(shape), self.new_empty(shape, dtype=torch.int64)


# --- the deprecated kwker:: aliases ------------------------------------------------------------

_warned = set()


def _alias(name):
    def call(*args):
        if name not in _warned:
            _warned.add(name)
            warnings.warn(f"torch.ops.{DEPRECATED_NAMESPACE}.{name} is deprecated and goes in the "
                          f"next release: it is torch.ops.{NAMESPACE}.{name} now (Kwker's one "
                          "operator namespace); kwker.dynamo.migrate(graph) renames the calls "
                          "of a GraphModule or an ExportedProgram, then save it again",
                          FutureWarning, stacklevel=2)
        if name == "linear":
            return linear_op()(*args)
        return getattr(torch.ops.kwker_torch, name).default(*args)
    return call


# CompositeImplicitAutograd: tracing an old graph enters the alias and records the new operator.
_old = torch.library.Library(DEPRECATED_NAMESPACE, "DEF")
for _name, _schema in (*SCHEMAS.items(), ("linear", LINEAR_SCHEMA)):
    _old.define(_schema)
    _old.impl(_name, _alias(_name), "CompositeImplicitAutograd")



def migrate(obj):
    """Points every call of a deprecated kwker:: operator in a GraphModule or an ExportedProgram
    (its graph_module) at the kwker_torch operator of the same schema, in place, submodules
    included; returns how many calls it renamed. Exporting again does not: torch.export keeps a
    custom operator's name even where it could decompose it."""
    root = getattr(obj, "graph_module", obj)
    if not isinstance(root, torch.fx.GraphModule):
        raise TypeError(f"kwker.dynamo.migrate: expected a torch.fx.GraphModule or a "
                        f"torch.export.ExportedProgram, got {type(obj).__name__}")
    renamed = 0
    for mod in root.modules():
        if not isinstance(mod, torch.fx.GraphModule):
            continue
        changed = 0
        for node in mod.graph.nodes:
            new = _renamed(node.target) if node.op == "call_function" else None
            if new is not None:
                node.target, changed = new, changed + 1
        if changed:
            mod.recompile()
            renamed += changed
    return renamed


def _renamed(target):
    if isinstance(target, torch._ops.OpOverload) and target.namespace == DEPRECATED_NAMESPACE:
        packet = _new_packet(target._schema.name.split("::", 1)[1])
        return getattr(packet, target._overloadname)
    if isinstance(target, torch._ops.OpOverloadPacket) and \
            target._qualified_op_name.startswith(DEPRECATED_NAMESPACE + "::"):
        return _new_packet(target._qualified_op_name.split("::", 1)[1])
    return None


def _new_packet(name):
    if name == "linear":
        compiled()          # the compiled operator exists only once the extension is loaded
    return getattr(torch.ops.kwker_torch, name)


ops = torch.ops.kwker_torch
