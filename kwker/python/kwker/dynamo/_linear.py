"""The compile backend's CPU-backend modes: a graph's linear calls on Kwker's linear kernels.

A linear call (torch._C._nn.linear, which is what Dynamo records for nn.Linear and F.linear, or
an nn.Linear call_module of a symbolically traced graph) whose weight is a parameter or buffer
of the model (a graph input Dynamo marked static, or a get_attr) becomes a call of
torch.ops.kwker_torch.linear, the operator behind kwker.cpu_backend's KwkerLinear, on weights
packed once, here, at compile time, in the requested mode (kwker._torch.linear.pack, the same
quantisation and packing as kwker.cpu_backend.optimize, so the two give the same numbers). The
operator has a fake kernel, so "kwker-inductor" compiles the rewritten graph as it is. A linear whose weight is computed
in the graph or passed by the caller stays torch's.

The packed weights are buffers of the rewritten GraphModule (get_attr), so they stay out of the
graph's inputs and Inductor reads them as it reads parameters; the graphs of one model share
them (_SHARED). `Packs.refresh` re-packs, in place, a weight that changed after the compile
(its version counter or storage moved, as after load_state_dict), so a compiled model never
computes with stale weights.
"""
import weakref

import torch
import torch.fx
from torch.utils.weak import WeakIdKeyDictionary

from kwker._torch import linear as _lin
from kwker._torch.linear import MODE_CODES

_LINEAR_FUNCTIONS = (torch._C._nn.linear, torch.nn.functional.linear)


class Spec:
    """What a CPU-backend mode packs: mode, group (int4), scheme (int8/int4), threads."""

    def __init__(self, mode, group, scheme, threads):
        self.mode, self.group, self.scheme, self.threads = mode, group, scheme, threads

    def key(self):
        return {"mode": self.mode, "group_size": self.group, "scheme": self.scheme,
                "threads": self.threads}


def _pack(w, spec):
    return _lin.pack(w, spec.mode, spec.scheme, spec.group)


def _static(x):
    """A parameter or buffer of the model, as Dynamo passes them (static graph inputs)."""
    return isinstance(x, torch.nn.Parameter) or (
        isinstance(x, torch.Tensor) and getattr(x, "_dynamo_static_input_type", None) is not None)


# float64 stays torch's: the kernels compute in float32, which "high" must not silently lose.
_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def _usable(w):
    return (isinstance(w, torch.Tensor) and w.dim() == 2 and w.device.type == "cpu"
            and w.dtype in _DTYPES and not isinstance(w, torch._subclasses.FakeTensor))


# weight tensor -> {spec key: _Entry}: the graphs Dynamo compiles for one model (new input
# shapes, graph breaks) share one packed copy of each weight per mode. Both levels are weak:
# a packed copy lives as long as a compiled graph uses it, and never keeps a model alive.
_SHARED = WeakIdKeyDictionary()


class _Entry:
    """A packed weight and the (version, data pointer) of the float weight it was packed from."""
    __slots__ = ("packed", "version", "ptr", "__weakref__")

    def __init__(self, packed, w):
        self.packed, self.version, self.ptr = packed, w._version, w.data_ptr()


def _shared(w, spec):
    """The shared packed form of weight `w` in `spec`'s mode, and whether it was packed now."""
    per_spec = _SHARED.get(w)
    if per_spec is None:
        per_spec = _SHARED[w] = weakref.WeakValueDictionary()
    key = tuple(sorted(spec.key().items()))
    entry = per_spec.get(key)
    if entry is not None:
        return entry, False
    with torch.no_grad():
        entry = _Entry(_pack(w, spec), w)
    per_spec[key] = entry
    return entry, True


class Packs:
    """The packed weights of one rewritten graph: (where, entry, spec) with `where` the graph
    input's index or a getter. refresh(args) runs before each call (a version counter and a data
    pointer compared: about 0.5 us a weight on the busy 2-core project machine). `new`: how many were packed for this graph (the
    rest were shared with an earlier graph)."""

    def __init__(self):
        self.weights = []
        self.repacks = 0
        self.new = 0

    def refresh(self, args):
        for where, entry, spec in self.weights:
            w = args[where] if where.__class__ is int else where()
            if w._version != entry.version or w.data_ptr() != entry.ptr:
                with torch.no_grad():
                    entry.packed.copy_(_pack(w, spec))
                entry.version, entry.ptr = w._version, w.data_ptr()
                self.repacks += 1


def _weight_source(gm, node, example_inputs, placeholders):
    """(tensor, where) for a linear's weight node when it is the model's, else None; where: the
    graph input's index, or a getter."""
    if node.op == "placeholder" and example_inputs is not None:
        i = placeholders.index(node)
        w = example_inputs[i] if i < len(example_inputs) else None
        if _static(w) and _usable(w):
            return w, i
    elif node.op == "get_attr":
        try:
            w = gm.get_parameter(node.target)
        except AttributeError:
            try:
                w = gm.get_buffer(node.target)
            except AttributeError:
                return None
        if _usable(w):
            return w, (lambda gm=gm, name=node.target: _get(gm, name))
    return None


def _get(gm, name):
    try:
        return gm.get_parameter(name)
    except AttributeError:
        return gm.get_buffer(name)


def _linear_call(gm, node):
    """(input, weight, bias) nodes/values of a linear call, or None."""
    if node.op == "call_function" and node.target in _LINEAR_FUNCTIONS:
        args = list(node.args) + [None] * (3 - len(node.args))
        x = node.kwargs.get("input", args[0])
        w = node.kwargs.get("weight", args[1])
        b = node.kwargs.get("bias", args[2])
        return x, w, b
    if node.op == "call_module":
        mod = gm.get_submodule(node.target)
        if type(mod) is torch.nn.Linear and len(node.args) == 1 and not node.kwargs:
            return node.args[0], ("module", node.target, "weight"), \
                (None if mod.bias is None else ("module", node.target, "bias"))
    return None


def linear_nodes(gm, example_inputs):
    """The linear calls this mode can take over: [(node, x, weight tensor, where, bias)]."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    found = []
    for node in gm.graph.nodes:
        call = _linear_call(gm, node)
        if call is None:
            continue
        x, w, b = call
        if isinstance(w, tuple):  # an nn.Linear module of a symbolically traced graph
            name = f"{w[1]}.weight"
            tensor = gm.get_parameter(name)
            if not _usable(tensor):
                continue
            src = (tensor, lambda gm=gm, name=name: gm.get_parameter(name))
        elif isinstance(w, torch.fx.Node):
            src = _weight_source(gm, w, example_inputs, placeholders)
        else:
            src = None
        if src is None or not isinstance(x, torch.fx.Node):
            continue
        found.append((node, x, src[0], src[1], b))
    return found


def plan(gm, example_inputs, spec):
    """{linear node: (x node, bias (node/None/module ref), buffer name, n, packed weight)} and
    the Packs that keep them fresh. Each distinct weight is packed once (tied weights and the
    other graphs of the same model share it)."""
    packs = Packs()
    by_weight = {}
    out = {}
    for node, x, w, where, b in linear_nodes(gm, example_inputs):
        key = id(w)
        if key not in by_weight:
            entry, fresh = _shared(w, spec)
            packs.new += fresh
            name = f"_kwker_packed_{len(by_weight)}"
            by_weight[key] = (name, entry.packed)
            packs.weights.append((where, entry, spec))
        name, packed = by_weight[key]
        out[node] = (x, b, name, w.shape[0], packed)
    return out, packs


def emit(graph, env, gm, node, entry, spec):
    """The replacement of one linear node in the new graph."""
    x, b, name, n, _ = entry
    xs = env[x]
    if isinstance(b, tuple):  # nn.Linear module's bias
        bias = graph.get_attr(f"{b[1]}.bias")
    elif isinstance(b, torch.fx.Node):
        bias = env[b]
    else:
        bias = b
    packed = graph.get_attr(name)
    meta = x.meta.get("example_value") if hasattr(x, "meta") else None
    f32 = isinstance(meta, torch.Tensor) and meta.dtype == torch.float32
    xin = xs if f32 else graph.call_method("float", (xs,))
    y = graph.call_function(torch.ops.kwker_torch.linear.default,
                            (xin, packed, bias, MODE_CODES[spec.mode], n, spec.group,
                             spec.threads))
    if not f32:
        y = graph.call_method("type_as", (y, xs))
    y.meta = dict(node.meta)
    return y
