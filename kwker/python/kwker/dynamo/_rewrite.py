"""The "kwker" candidate: a Dynamo graph with its sort-family calls rewritten to kwker_torch::*, and,
in a CPU-backend mode, its linear calls rewritten to Kwker's linear kernels (_linear.py).

torch.sort / Tensor.sort / argsort / msort / topk / kthvalue nodes (functions or methods, any
argument spelling) become calls of Kwker's graph operators (kwker._torch.ops); a call with out= stays as it is.
The rewritten graph shares the original's parameters and buffers (no weight is copied); in a
CPU-backend mode it also holds the packed weights as buffers.
"""
import inspect
import operator

import torch
import torch.fx

from kwker._torch.ops import ops


def _sort(input, dim=-1, descending=False, stable=None, *, out=None):
    pass


def _argsort(input, dim=-1, descending=False, stable=None, *, out=None):
    pass


def _msort(input, *, out=None):
    pass


def _topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    pass


def _kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    pass


_SIGS = {name: inspect.signature(fn) for name, fn in
         (("sort", _sort), ("argsort", _argsort), ("msort", _msort), ("topk", _topk),
          ("kthvalue", _kthvalue))}
_FUNCTIONS = {torch.sort: "sort", torch.argsort: "argsort", torch.msort: "msort",
              torch.topk: "topk", torch.kthvalue: "kthvalue",
              torch.Tensor.sort: "sort", torch.Tensor.argsort: "argsort",
              torch.Tensor.msort: "msort", torch.Tensor.topk: "topk",
              torch.Tensor.kthvalue: "kthvalue"}


def _which(node):
    if node.op == "call_function":
        return _FUNCTIONS.get(node.target)
    if node.op == "call_method" and node.target in _SIGS:
        return node.target
    return None


def sort_nodes(gm):
    """The sort-family nodes of a graph."""
    return [n for n in gm.graph.nodes if _which(n)]


def rewrite(gm, example_inputs=None, spec=None):
    """A new GraphModule with every sort-family call going to kwker_torch::* (and, with spec, a
    _linear.Spec, every linear call on the model's weights going to Kwker's linear kernels),
    and how many calls changed. With spec, the module's `_kwker_packs` keeps the packed weights
    fresh (see _linear.Packs)."""
    from . import _linear
    linears, packs = _linear.plan(gm, example_inputs, spec) if spec else ({}, None)
    graph = torch.fx.Graph()
    env = {}
    pairs = set()  # rewritten nodes returning (values, indices)
    changed = 0
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is getattr and node.args[0] in pairs \
                and node.args[1] in ("values", "indices"):
            # symbolic_trace keeps torch.return_types' field access; kwker_torch::* return tuples
            env[node] = graph.call_function(operator.getitem, (env[node.args[0]],
                                                               int(node.args[1] == "indices")))
            continue
        if node in linears:
            env[node] = _linear.emit(graph, env, gm, node, linears[node], spec)
            changed += 1
            continue
        name = _which(node)
        bound = None
        if name:
            try:
                bound = _SIGS[name].bind(*node.args, **node.kwargs)
            except TypeError:
                bound = None
        if bound is None or bound.arguments.get("out") is not None:
            env[node] = graph.node_copy(node, lambda n: env[n])
            continue
        a = {k: (env[v] if isinstance(v, torch.fx.Node) else v)
             for k, v in bound.arguments.items()}
        x = a["input"]
        if name == "sort":
            new = graph.call_function(ops.sort, (x, a.get("dim", -1), a.get("descending", False)))
        elif name == "argsort":
            new = graph.call_function(ops.argsort,
                                      (x, a.get("dim", -1), a.get("descending", False)))
        elif name == "msort":
            pair = graph.call_function(ops.sort, (x, 0, False))
            new = graph.call_function(operator.getitem, (pair, 0))
        elif name == "topk":
            new = graph.call_function(ops.topk, (x, a["k"], a.get("dim", -1),
                                                 a.get("largest", True), a.get("sorted", True)))
        else:
            new = graph.call_function(ops.kthvalue, (x, a["k"], a.get("dim", -1),
                                                     a.get("keepdim", False)))
        new.meta = dict(node.meta)
        env[node] = new
        if name in ("sort", "topk", "kthvalue"):
            pairs.add(node)
        changed += 1
    root = gm
    if linears:  # a copy of gm (sharing its parameters) that also holds the packed weights
        root = torch.fx.GraphModule(gm, gm.graph)
        for _, _, bname, _, packed in linears.values():
            if bname not in root._buffers:
                root.register_buffer(bname, packed)
    out = torch.fx.GraphModule(root, graph)
    out._kwker_packs = packs
    out.recompile()
    return out, changed
