"""load_gguf(): a GGUF file as a transformers model whose linear layers hold the file's own
quantised blocks, packed for Kwker's kernels without re-quantising:

  Q4_0 -> int4 (scheme q4_0: min = -8 d), Q4_1 -> int4 (q4_1), Q8_0 -> int8 (q8_0), group 32
  BF16 -> medium, F32 -> high, F16 -> high stored as float16 (exact: float32's results from
  half the bytes) or, with mode="medium", bfloat16 (lossy)

The float16 scales and minimums become float32 exactly, and the 4-bit / 8-bit values are copied
bit for bit. The rest of the model (embeddings, norms) comes from transformers' own GGUF loader
(gguf_file=), which dequantises the file to float32 while it builds the model: that transient
copy is freed once the packed layers replace the float ones. Every packed layer is compared with
the layer transformers built (which also finds the row order llama.cpp's converter gives Q and K),
so a file whose tensors do not match its model fails loudly instead of answering wrongly.
`mode=` converts every layer to that mode from the file's values (the loss check_accuracy shows).
"""
import os

import numpy as np

from ._optimize import (MODES, check_activations, check_decoder, check_options, decoder_for,
                        linear_layers, _replace)
from . import _status
from ._status import INTEGRATION

# GGUF tensor names of a Llama-family block -> transformers module names.
_NAMES = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
          "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
          "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
_NATIVE = {"Q4_0": ("int4", "q4_0"), "Q4_1": ("int4", "q4_1"), "Q8_0": ("int8", "q8_0"),
           "BF16": ("medium", None), "F32": ("high", None), "F16": ("high", None)}


def _hf_name(gguf_name):
    if gguf_name == "output.weight":
        return "lm_head"
    parts = gguf_name.split(".")
    if len(parts) == 4 and parts[0] == "blk" and parts[2] in _NAMES and parts[3] == "weight":
        return f"model.layers.{parts[1]}.{_NAMES[parts[2]]}"
    return None


def _blocks(t, n, k):
    """(values, scales, mins) of a Q4_0 / Q4_1 / Q8_0 tensor [n, k] from its raw blocks."""
    kind = t.tensor_type.name
    raw = np.ascontiguousarray(t.data).view(np.uint8).reshape(n, -1)
    nb = k // 32
    size = {"Q4_0": 18, "Q4_1": 20, "Q8_0": 34}[kind]
    blk = raw.reshape(n, nb, size)
    d = blk[:, :, 0:2].copy().view(np.float16).reshape(n, nb).astype(np.float32)
    if kind == "Q8_0":
        q = blk[:, :, 2:].copy().view(np.int8).reshape(n, k)
        return q, d, None
    off = 4 if kind == "Q4_1" else 2
    m = (blk[:, :, 2:4].copy().view(np.float16).reshape(n, nb).astype(np.float32)
         if kind == "Q4_1" else -8.0 * d)
    qs = blk[:, :, off:]
    q = np.concatenate([qs & 15, qs >> 4], axis=2).reshape(n, k)  # elements 0..15, 16..31
    return q.astype(np.uint8), d, m


def _row_orders(n, heads):
    """Candidate row permutations: none, and the inverse of llama.cpp's Q/K interleave."""
    yield None
    for h in sorted(set(heads)):
        if h and n % (2 * h) == 0:
            idx = np.arange(n).reshape(h, n // h // 2, 2).swapaxes(1, 2).reshape(n)
            yield idx


def _field(reader, key):
    f = reader.get_field(key)
    return None if f is None else f.contents()


def layer_activations(activations, keeps_file_blocks, want):
    """The activations a layer computes with. "auto" (load_gguf's default): a layer that keeps
    its file's Q8_0 / Q4_0 / Q4_1 blocks quantises x per 32-block as ggml computes those formats
    (their dot products take Q8 activations in llama.cpp, on every CPU), so Kwker gives the
    file's own arithmetic; a layer mode= re-quantised keeps float activations, as optimize()."""
    if want not in ("int8", "int4"):
        return "float"
    if activations == "auto":
        return "int8" if keeps_file_blocks else "float"
    return activations


def load_gguf(path, mode=None, *, threads=None, decoder="auto", activations="auto",
              **from_pretrained):
    """See kwker.cpu_backend.load_gguf."""
    torch = INTEGRATION.require("torch", "load_gguf()")
    if mode is not None:
        check_options(mode, 32, None, threads, where="load_gguf")
    check_activations(activations, mode, where="load_gguf")
    check_decoder(decoder, where="load_gguf")
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"kwker.cpu_backend.load_gguf: {path} does not exist")
    gguf = INTEGRATION.require("gguf", "load_gguf()")
    INTEGRATION.require("accelerate", "load_gguf()")
    AutoModelForCausalLM = INTEGRATION.require("transformers", "load_gguf()").AutoModelForCausalLM
    try:
        reader = gguf.GGUFReader(path)
        tensors = {t.name: t for t in reader.tensors}
        for t in tensors.values():
            if t.data.nbytes < t.n_bytes:
                raise ValueError(f"tensor {t.name} has {t.data.nbytes} of {t.n_bytes} bytes")
    except Exception as e:
        raise ValueError(f"kwker.cpu_backend.load_gguf: {path} is not a complete GGUF file ({e}); "
                         "download or convert it again") from e
    arch = _field(reader, "general.architecture")
    heads = [_field(reader, f"{arch}.attention.head_count"),
             _field(reader, f"{arch}.attention.head_count_kv")]
    folder, name = os.path.split(os.path.abspath(path))
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32,
                                                 **from_pretrained)
    model.eval()
    if INTEGRATION.off("optimize() and load_gguf() return models unchanged"):
        return model    # transformers' own float32 model of the file, as without Kwker
    INTEGRATION.install()
    from ._linear import KwkerLinear
    t_arg = 0 if threads is None else threads
    by_name = {}
    for gname, t in tensors.items():
        hf = _hf_name(gname)
        if hf is not None:
            by_name[hf] = t
    if "lm_head" not in by_name and "token_embd.weight" in tensors:
        by_name["lm_head"] = tensors["token_embd.weight"]  # tied LM head
    new, kinds = {}, {}
    with torch.no_grad():
        for name, lin in linear_layers(model):
            t = by_name.get(name)
            kind = t.tensor_type.name if t is not None else None
            native = _NATIVE.get(kind)
            want = mode or (native[0] if native else "high")
            if kind == "F16" and mode == "medium":
                native = None  # F16 -> bfloat16 is a conversion (lossy)
            n, k = lin.weight.shape
            as_stored = bool(native) and native[0] == want   # the file's own format
            keeps = as_stored and want in ("int8", "int4")      # ... and its blocks
            act = layer_activations(activations, keeps, want)
            if keeps and k % 32 == 0:
                q, d, m = _blocks(t, n, k)
                new[name] = _exact_layer(lin, q, d, m, want, native[1], t_arg, heads, name, act)
            else:
                new[name] = KwkerLinear.from_linear(lin, mode=want, group=32, threads=t_arg,
                                                    scheme=native[1] if as_stored else None,
                                                    activations=act)
            store = getattr(new[name], "storage", None)
            kinds[name] = f"{kind or 'float'} -> {want}" + (
                f" ({store})" if store not in (None, "float32") else "") + (
                " (x int8)" if act == "int8" else "")
    for name, mod in new.items():
        _replace(model, name, mod)
    model._kwker_cpu_backend = {"mode": mode, "gguf": path, "layers": len(new),
                                "activations": activations,
                                "formats": sorted(set(kinds.values())),
                                "decoder": decoder_for(model, t_arg, decoder)}
    _status.record_optimized(mode or "as stored", len(new))
    return model


def _exact_layer(lin, q, d, m, mode, scheme, threads, heads, name, activations="float"):
    """The file's blocks as a packed layer, rows in the order transformers' layer has them."""
    import torch
    from ._linear import KwkerLinear
    from kwker._torch.quant import dequantize
    w = lin.weight.detach()
    n = w.shape[0]

    def tensors(order, rows=slice(None)):
        qq, dd, mm = (q, d, m) if order is None else (q[order], d[order],
                                                      None if m is None else m[order])
        return (torch.from_numpy(np.ascontiguousarray(qq[rows])),
                torch.from_numpy(np.ascontiguousarray(dd[rows])),
                None if mm is None else torch.from_numpy(np.ascontiguousarray(mm[rows])))

    def max_diff(vals, sc, mi, rows=slice(None)):
        return float((dequantize(vals, sc, mi, mode, 32) - w[rows]).abs().max())

    probe = slice(0, min(n, 64))  # enough rows to tell the row orders apart, cheaply
    for order in _row_orders(n, heads):
        if max_diff(*tensors(order, probe), rows=probe) <= 1e-6:
            vals, sc, mi = tensors(order)
            if max_diff(vals, sc, mi) <= 1e-6:
                return KwkerLinear(vals, sc, mi, lin.bias, mode=mode, group=32, threads=threads,
                                   scheme=scheme, activations=activations)
    raise ValueError(f"kwker.cpu_backend.load_gguf: the file's tensor for {name} does not match "
                     "the layer transformers built from it (an architecture this loader does not "
                     "map); use optimize() on the transformers model instead")


_ = MODES
