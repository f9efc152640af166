"""The fused decode step for Llama-family models (Llama, Mistral without sliding windows, Qwen2,
SmolLM): optimize() attaches a Decoder to the model, and the model's forward sends every
one-token step that carries a KV cache to one native call (kwker/decoder/decoder_step.cc, as a
decoder package or the generic library). Everything else (the prompt, calls asking for
attentions or hidden states, gradients, caches of another kind) runs the model's own forward
with Kwker's per-layer kernels, so generate() works unchanged: sampling, several sequences,
beam search and a reused cache included.

The KV cache stays transformers' own Cache object: each layer's keys and values become views of
a Kwker buffer with spare capacity, which the native step extends in place (a cache that was
replaced or reordered since the last step is copied into a new buffer first).
"""
import ctypes
import functools
import weakref
from sys import getrefcount

import torch

from . import _package

FAMILY = ("llama", "mistral", "qwen2")
_STATIC_ROPE = ("default", "linear", "llama3", "yarn")
_P = ctypes.c_void_p


class _Layer(ctypes.Structure):
    _fields_ = [(n, _P) for n in ("attn_norm", "mlp_norm", "qkv", "qkv_bias", "o", "o_bias",
                                  "gate_up", "gate_up_bias", "down", "down_bias")]


class _Model(ctypes.Structure):
    _fields_ = ([(n, ctypes.c_int) for n in ("abi", "layers", "hidden", "heads", "kv_heads",
                                             "head_dim", "inter", "vocab", "mode", "group",
                                             "lm_mode", "lm_group", "threads")]
                + [(n, ctypes.c_float) for n in ("eps", "scaling", "rope_scale")]
                + [(n, _P) for n in ("inv_freq", "final_norm", "lm_head", "lm_head_bias",
                                     "layer", "runner")])


class _Call(ctypes.Structure):
    _fields_ = [("batch", ctypes.c_int), ("past", ctypes.c_int64), ("cap", ctypes.c_int64),
                ("x", _P), ("positions", _P), ("mask", _P), ("k_cache", _P), ("v_cache", _P),
                ("logits", _P)]


def _torch_runner():
    """The compiled extension's runner that puts Kwker's parallel work on torch's intra-op
    threads (kwker_set_thread_runner): generate() runs torch ops between decode steps, and torch's
    OpenMP workers spin for a while after each; a second pool beside them cost a quarter of
    every step. None when the extension lacks it (Kwker's own pool then runs)."""
    from ._linear import ops
    try:
        return int(ops().thread_runner()) or None
    except (AttributeError, RuntimeError):
        return None


class NotInFamily(Exception):
    """The model cannot take the fused decode step; the message says why."""


def _ptr(t):
    return None if t is None else t.data_ptr()


def _f32(t, what):
    if t.dtype != torch.float32:
        raise NotInFamily(f"{what} is {t.dtype}, the decode step takes float32")
    return t.detach().contiguous()


def _eps(norm, what):
    for attr in ("variance_epsilon", "eps"):
        if hasattr(norm, attr):
            return float(getattr(norm, attr))
    raise NotInFamily(f"{what} is {type(norm).__name__}, not an RMSNorm")


def _kwker_linears(names, mods, mode, group, code):
    from ._linear import KwkerLinear
    for name, mod in zip(names, mods):
        if not isinstance(mod, KwkerLinear):
            raise NotInFamily(f"{name} is {type(mod).__name__}, not a Kwker linear layer")
        if mod.mode != mode or mod.group != group or mod._code != code:
            raise NotInFamily(f"{name} runs mode {mod.mode} ({mod.storage or 'its layout'}), "
                              f"the others {mode}")


_PROJECTIONS = (("self_attn", ("q_proj", "k_proj", "v_proj", "o_proj")),
                ("mlp", ("gate_proj", "up_proj", "down_proj")))


def _one_storage(layers):
    """The step runs every layer's projections in one kernel mode: where "high" layers are stored
    differently (some exact GGUF blocks or float16, some float32), all of them become float32 storage (the
    same results, bit for bit; only the bytes read per token grow). The LM head keeps its own."""
    from ._linear import KwkerLinear
    mods = [(getattr(layer, part), name) for layer in layers for part, names in _PROJECTIONS
            for name in names]
    kinds = {getattr(getattr(parent, name), "storage", None) for parent, name in mods
             if isinstance(getattr(parent, name), KwkerLinear)}
    if len(kinds) > 1 and kinds <= {"float32", "exact-q4_1", "exact-q8_0", "float16"}:
        for parent, name in mods:
            setattr(parent, name, getattr(parent, name).as_float32_storage())


def _fuse(mods):
    """One packed tensor holding the layers' rows one after another, and the layers' own
    buffers re-pointed into it (same bytes, so the per-layer path and the decode step share
    memory). Packed panels hold 4 rows, so when every layer's row count is a multiple of 4 the
    packed bytes simply follow each other; otherwise the rows are unpacked and packed again."""
    from ._linear import ops
    first = mods[0]
    biases = [m.bias for m in mods]
    if any(b is not None for b in biases):
        bias = torch.cat([b if b is not None else torch.zeros(m.out_features)
                          for b, m in zip(biases, mods)])
    else:
        bias = None
    if all(m.out_features % 4 == 0 for m in mods):
        fused = torch.cat([m.packed for m in mods])
        off = 0
        for m in mods:
            n = m.packed.numel()
            m.packed = fused[off:off + n]
            off += n
        return fused, bias
    parts = [m.unpack() for m in mods]
    values, scales, mins = (torch.cat([p[i] for p in parts]) for i in range(3))
    fused = ops().linear_pack(first._code, values, scales if scales.numel() else None,
                              mins if mins.numel() else None, first.group)
    return fused, bias


def describe(model):
    """The shapes and parts of a Llama-family causal LM, or NotInFamily naming what differs."""
    cfg = getattr(model, "config", None)
    kind = getattr(cfg, "model_type", None)
    if kind not in FAMILY:
        raise NotInFamily(f"model_type {kind!r} is not one the decode step knows "
                          f"({', '.join(FAMILY)})")
    inner = getattr(model, "model", None)
    if inner is None or not hasattr(inner, "layers") or not hasattr(model, "lm_head"):
        raise NotInFamily(f"{type(model).__name__} is not a causal-LM wrapper with "
                          ".model.layers and .lm_head")
    act = getattr(cfg, "hidden_act", None)
    if act != "silu":
        raise NotInFamily(f"the MLP activation is {act!r}; the decode step implements silu")
    window = getattr(cfg, "sliding_window", None)
    if window and (kind == "mistral" or getattr(cfg, "use_sliding_window", False)):
        raise NotInFamily(f"sliding-window attention (sliding_window={window}) is not in the "
                          "decode step")
    rot = getattr(inner, "rotary_emb", None)
    rope = getattr(rot, "rope_type", None)
    if rot is None or rope not in _STATIC_ROPE:
        raise NotInFamily(f"rotary embedding of type {rope!r}; the decode step takes "
                          f"{', '.join(_STATIC_ROPE)}")
    return inner, rot


class Decoder:
    """The native decode step of one optimized model: fused weights, the model description
    passed to the library, and the library (package or generic)."""

    def __init__(self, model, threads, cache_dir=None, generic_only=False):
        inner, rot = describe(model)
        layers = list(inner.layers)
        _one_storage(layers)
        first = layers[0].self_attn
        from ._linear import KwkerLinear
        if not isinstance(model.lm_head, KwkerLinear):
            raise NotInFamily("the LM head is not a Kwker linear layer")
        q0 = first.q_proj
        if not isinstance(q0, KwkerLinear):
            raise NotInFamily(f"layers.0.self_attn.q_proj is {type(q0).__name__}, not a Kwker "
                              "linear layer")
        mode_name, group, code = q0.mode, q0.group, q0._code
        heads = int(model.config.num_attention_heads)
        kv_heads = int(getattr(model.config, "num_key_value_heads", None) or heads)
        head_dim = int(getattr(first, "head_dim", 0) or model.config.hidden_size // heads)
        hidden = int(model.config.hidden_size)
        keep, descs = [], []
        for i, layer in enumerate(layers):
            att, mlp = layer.self_attn, layer.mlp
            if hasattr(att, "q_norm") or hasattr(att, "k_norm"):
                raise NotInFamily("attention with q/k norms (Qwen3-style) is not in the step")
            names = [f"layers.{i}.self_attn.{p}" for p in ("q_proj", "k_proj", "v_proj",
                                                           "o_proj")]
            projs = [att.q_proj, att.k_proj, att.v_proj, att.o_proj]
            mlps = [mlp.gate_proj, mlp.up_proj, mlp.down_proj]
            _kwker_linears(names + [f"layers.{i}.mlp.{p}" for p in ("gate_proj", "up_proj",
                                                                     "down_proj")],
                           projs + mlps, mode_name, group, code)
            if (att.q_proj.out_features != heads * head_dim
                    or att.k_proj.out_features != kv_heads * head_dim):
                raise NotInFamily(f"layer {i}'s projections do not match {heads} heads of "
                                  f"{head_dim}")
            qkv, qkv_bias = _fuse(projs[:3])
            gu, gu_bias = _fuse(mlps[:2])
            parts = dict(attn_norm=_f32(layer.input_layernorm.weight, f"layer {i} norm"),
                         mlp_norm=_f32(layer.post_attention_layernorm.weight, f"layer {i} norm"),
                         qkv=qkv, qkv_bias=qkv_bias, o=att.o_proj.packed, o_bias=att.o_proj.bias,
                         gate_up=gu, gate_up_bias=gu_bias, down=mlp.down_proj.packed,
                         down_bias=mlp.down_proj.bias)
            keep.append(parts)
            descs.append(_Layer(**{k: _ptr(v) for k, v in parts.items()}))
        self.eps = _eps(layers[0].input_layernorm, "the input norm")
        self._keep = keep
        self._final = _f32(inner.norm.weight, "the final norm")
        self._inv_freq = _f32(rot.inv_freq.float(), "inv_freq")
        self._layers = (_Layer * len(descs))(*descs)
        self.shapes = {"layers": len(layers), "hidden": hidden, "heads": heads,
                       "kv_heads": kv_heads, "head_dim": head_dim,
                       "inter": int(layers[0].mlp.gate_proj.out_features),
                       "vocab": int(model.lm_head.out_features),
                       "mode": int(code), "group": int(group),
                       "lm_mode": int(model.lm_head._code), "lm_group": int(model.lm_head.group)}
        self._desc = _Model(abi=_package.ABI, threads=int(threads), eps=self.eps,
                            scaling=float(getattr(first, "scaling", head_dim ** -0.5)),
                            rope_scale=float(getattr(rot, "attention_scaling", 1.0)),
                            inv_freq=_ptr(self._inv_freq), final_norm=_ptr(self._final),
                            lm_head=_ptr(model.lm_head.packed),
                            lm_head_bias=_ptr(model.lm_head.bias),
                            layer=ctypes.cast(self._layers, _P).value,
                            runner=_torch_runner(), **self.shapes)
        self._lm_head = model.lm_head.packed
        self._embed = inner.embed_tokens
        import kwker
        self.lib, self.info = _package.load(self.shapes, kwker.get_isa(), cache_dir,
                                            generic_only)
        self.steps = 0
        self._state = None
        self._err = ctypes.create_string_buffer(1024)
        from ._linear import ops
        self._extend = getattr(ops(), "kv_extend", None)  # None: an older extension, new views

    def __deepcopy__(self, memo):
        # The description holds raw pointers into the original model's tensors: a copied
        # model gets no decoder here and builds its own on first use (_FusedForward).
        return None

    # -- the KV cache ------------------------------------------------------------------------
    def _adopt(self, layers, batch, past):
        """(K, V) for every layer at once, shape (layers, batch, kv_heads, cap, head_dim), with
        room for one more token: the buffers this decoder made for these layers when they are
        still the layers' storage, else new ones holding a copy of the layers' tensors. One
        buffer for all layers lets a step hand out its 2 x layers views with two unbind() calls
        (a Python slice per layer cost half a millisecond per token)."""
        kv = getattr(layers[0], "_kwker_kv", None)
        if kv is not None and past and past < kv[0].shape[3] and kv[0].shape[1] == batch:
            big_k, big_v = kv[0], kv[1]
            if all(getattr(layer, "_kwker_kv", None) is not None
                   and layer._kwker_kv[0] is big_k and layer._kwker_kv[2] == i
                   and layer.keys.data_ptr() == big_k[i].data_ptr()
                   and layer.values.data_ptr() == big_v[i].data_ptr()
                   and layer.keys.stride() == big_k[i].stride()
                   and layer.values.stride() == big_v[i].stride()
                   for i, layer in enumerate(layers)):
                return big_k, big_v
        shape = (len(layers), batch, self.shapes["kv_heads"], max(64, 2 * (past + 1)),
                 self.shapes["head_dim"])
        big_k, big_v = torch.empty(shape), torch.empty(shape)
        for i, layer in enumerate(layers):
            if past:
                big_k[i, :, :, :past].copy_(layer.keys)
                big_v[i, :, :, :past].copy_(layer.values)
            layer._kwker_kv = (big_k, big_v, i)
        return big_k, big_v

    def _current(self, layers, batch):
        """The state of the previous step when `layers` are the cache it extended, untouched
        since (recognised by identity, without reading a tensor), else None."""
        st = self._state
        if (st is not None and st["first"]() is layers[0] and st["batch"] == batch
                and st["past"] < st["cap"] and len(layers) == len(st["views"])):
            for layer, (k, v) in zip(layers, st["views"]):
                if layer.keys is not k() or layer.values is not v():
                    return None
            return st
        return None

    def usable_cache(self, cache, batch):
        """The cache's layers when the step can extend them, else None."""
        from transformers.cache_utils import DynamicLayer
        layers = getattr(cache, "layers", None)
        if not layers or len(layers) != self.shapes["layers"]:
            return None
        if self._current(layers, batch) is not None:
            return layers
        past = None
        for layer in layers:
            if type(layer) is not DynamicLayer or not getattr(layer, "is_initialized", False):
                return None
            k, v = layer.keys, layer.values
            if k.dim() != 4 or k.dtype != torch.float32 or v.dtype != torch.float32:
                return None
            if (k.shape[0] != batch or k.shape[1] != self.shapes["kv_heads"]
                    or k.shape[3] != self.shapes["head_dim"] or v.shape != k.shape):
                return None
            if past is None:
                past = k.shape[2]
            elif k.shape[2] != past:
                return None
        return layers

    # -- the step ----------------------------------------------------------------------------
    def _buffers(self, layers, batch):
        """(pointer arrays, past, cap) of the layers' buffers: the previous step's state when
        the cache is the one it extended, else the layers adopted (and copied) anew."""
        st = self._current(layers, batch)
        if st is not None:
            return st
        past = int(layers[0].keys.shape[-2]) if layers[0].keys.dim() == 4 else 0
        big_k, big_v = self._adopt(layers, batch, past)
        n = len(layers)
        # Weak references only: a finished generation's cache must not stay alive here.
        st = {"first": weakref.ref(layers[0]), "batch": batch, "past": past,
              "cap": int(big_k.shape[3]), "views": (), "k": weakref.ref(big_k),
              "v": weakref.ref(big_v),
              "kp": (_P * n)(*[big_k[i].data_ptr() for i in range(n)]),
              "vp": (_P * n)(*[big_v[i].data_ptr() for i in range(n)])}
        self._state = st
        return st

    def step(self, input_ids, attention_mask, position_ids, layers):
        batch = int(input_ids.shape[0])
        st = self._buffers(layers, batch)
        past = st["past"]
        mask = None
        if attention_mask is not None:
            am = attention_mask.reshape(batch, -1)
            if am.shape[1] != past + 1:
                return None
            if not bool(am.all()):
                mask = (am != 0).to(torch.uint8).contiguous()
        # The embedding table read directly: the step bypasses every submodule's hooks anyway,
        # and nn.Embedding's __call__ cost more than the lookup.
        emb = self._embed
        x = (torch.nn.functional.embedding(input_ids, emb.weight)
             if type(emb) is torch.nn.Embedding and emb.max_norm is None
             else emb(input_ids)).reshape(batch, -1)
        if x.dtype != torch.float32 or not x.is_contiguous():
            x = x.to(torch.float32).contiguous()
        if position_ids is not None:
            pos = position_ids.reshape(batch, -1)[:, -1].to(torch.int64).contiguous()
        else:
            pos = torch.full((batch,), past, dtype=torch.int64)
        logits = torch.empty(batch, self.shapes["vocab"])
        call = _Call(batch=batch, past=past, cap=st["cap"], x=x.data_ptr(),
                     positions=pos.data_ptr(), mask=_ptr(mask),
                     k_cache=ctypes.addressof(st["kp"]), v_cache=ctypes.addressof(st["vp"]),
                     logits=logits.data_ptr())
        rc = self.lib.kwd_step(ctypes.byref(self._desc), ctypes.byref(call), self._err,
                               len(self._err))
        if rc != 0:
            self._state = None
            raise RuntimeError(f"kwker.cpu_backend decode step ({self.info['kind']}, "
                               f"{self.shapes}): {self._err.value.decode(errors='replace')}")
        views = ([layer.keys for layer in layers] + [layer.values for layer in layers]
                 if st["views"] and self._extend is not None else ())
        if views and all(getrefcount(v) <= _OWN_REFS for v in views):
            # The layers hold this decoder's views (_current checked them) and nothing else
            # does: one call grows them all by the position just written, keeping their
            # identity. A view a script kept from an earlier step gets fresh ones instead,
            # so that it keeps its length, as with transformers' own cache.
            self._extend(views, past + 1)
        else:
            keys = st["k"]()[:, :, :, :past + 1].unbind(0)
            values = st["v"]()[:, :, :, :past + 1].unbind(0)
            ref = weakref.ref
            for layer, k, v in zip(layers, keys, values):
                layer.keys, layer.values = k, v
            st["views"] = [(ref(k), ref(v)) for k, v in zip(keys, values)]
        st["past"] = past + 1
        self.steps += 1
        return logits.view(batch, 1, -1)


def _output(logits, cache):
    from transformers.modeling_outputs import CausalLMOutputWithPast
    fields = CausalLMOutputWithPast.__dataclass_fields__
    key = "cache" if "cache" in fields else "past_key_values"
    return CausalLMOutputWithPast(logits=logits, **{key: cache})


# References to a cache view when only its layer holds it, as counted in Decoder.step: the
# layer's attribute, the step's list, the generator's variable and getrefcount's argument.
_OWN_REFS = 4

_UNSUPPORTED = ("inputs_embeds", "labels", "output_attentions", "output_hidden_states")


class _FusedForward:
    """The optimized model's forward: one-token cached calls go to its decoder, the rest to
    the model class's own forward. An object rather than a closure so that copy.deepcopy of the
    model gives a copy whose forward belongs to the copy (its decoder is rebuilt on first use,
    since the native description points at the original's weights)."""

    def __init__(self, model, threads):
        import inspect
        self.model, self.threads = model, threads
        self.__signature__ = inspect.signature(type(model).forward.__get__(model))
        self.__wrapped__ = type(model).forward.__get__(model)

    def __call__(self, *args, **kwargs):
        model = self.model
        dec = model.__dict__.get("_kwker_decoder", False)
        if dec is None:                      # a deep copy: build this model's own, once
            try:
                dec = Decoder(model, self.threads)
            except (NotInFamily, OSError, RuntimeError):
                dec = False
            model._kwker_decoder = dec
        out = _try_step(dec, args, kwargs) if dec else None
        return type(model).forward(model, *args, **kwargs) if out is None else out

    def __deepcopy__(self, memo):
        copied = memo.get(id(self.model), self.model)
        return _FusedForward(copied, self.threads)


def attach(model, decoder, threads=0):
    """Routes the model's one-token cached calls to the decoder; the rest to its own forward."""
    model.forward = _FusedForward(model, threads)
    model._kwker_decoder = decoder
    return model


def _try_step(decoder, args, kwargs):
    if torch.is_grad_enabled() or len(args) > 1:
        return None
    if any(kwargs.get(k) not in (None, False) for k in _UNSUPPORTED):
        return None
    if kwargs.get("use_cache") is False or kwargs.get("return_dict") is False:
        return None
    ids = args[0] if args else kwargs.get("input_ids")
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or ids.shape[1] != 1:
        return None
    cache = kwargs.get("cache", kwargs.get("past_key_values"))
    if cache is None:
        return None
    layers = decoder.usable_cache(cache, int(ids.shape[0]))
    if layers is None:
        return None
    logits = decoder.step(ids, kwargs.get("attention_mask"), kwargs.get("position_ids"), layers)
    return None if logits is None else _output(logits, cache)
