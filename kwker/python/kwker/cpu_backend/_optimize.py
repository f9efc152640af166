"""optimize(): every nn.Linear of a model (the LM head included, tied or not) becomes a
KwkerLinear running Kwker's kernels. Arguments are checked and every layer is packed before the
model changes, so bad input or a failure leaves the model as it was."""
import copy
import sys

from kwker._torch import extension
# MODES, SCHEMES and the checks are kwker._torch.linear's (shared with the compile backend).
from kwker._torch.linear import ACTIVATIONS, MODES, SCHEMES, check_mode, check_options  # noqa: F401

from . import _attention, _status
from ._status import INTEGRATION


def check_activations(activations, mode, where="optimize"):
    """activations="int8" (W8A8 / W4A8) applies to the int8 / int4 layers; "float" is
    optimize()'s default. load_gguf also takes "auto" (its default: each layer computes as the
    file's format does, see _gguf.layer_activations); mode None (load_gguf: each layer keeps its
    file's format) takes any."""
    choices = ACTIVATIONS + ("auto",) if where == "load_gguf" else ACTIVATIONS
    if activations not in choices:
        extra = ("; 'auto' (the default) follows each layer's format in the file"
                 if where == "load_gguf" else "")
        raise ValueError(f"kwker.cpu_backend.{where}: activations={activations!r} is not one of "
                         "'float' (x stays float32 in the decode step) or 'int8' "
                         f"(x quantised per 32-block at every row count, int8 / int4 modes){extra}")
    if activations == "int8" and mode not in (None, "int8", "int4"):
        raise ValueError(f"kwker.cpu_backend.{where}: activations='int8' quantises x for int8 / "
                         f"int4 weights; mode {mode!r} keeps float activations (leave "
                         "activations='float', or use mode='int8' or 'int4')")
    return activations


def linear_layers(model):
    """[(qualified name, module)] of the nn.Linear layers optimize() replaces. Layers that
    nn.MultiheadAttention reads by weight (it never calls their forward) are left alone."""
    import torch
    skip = set()
    for name, mod in model.named_modules():
        if isinstance(mod, torch.nn.MultiheadAttention):
            skip.add(f"{name}.out_proj" if name else "out_proj")
    return [(n, m) for n, m in model.named_modules()
            if isinstance(m, torch.nn.Linear) and n not in skip]


def check_decoder(decoder, where="optimize"):
    if decoder not in DECODER_CHOICES:
        raise ValueError(f"kwker.cpu_backend.{where}: decoder={decoder!r} is not one of "
                         f"{', '.join(repr(d) for d in DECODER_CHOICES)} (\"auto\": the fused "
                         "decode step where the model allows it)")
    return decoder


def decoder_for(model, threads, choice):
    """Attaches the fused decode step where the model is in the Llama family; returns what runs
    ({"kind": "package" | "generic" | "per-layer", "reason": ...})."""
    from . import _decoder
    if choice == "off":
        info = {"kind": "per-layer", "key": None, "reason": "decoder=\"off\" was asked for"}
    else:
        try:
            dec = _decoder.Decoder(model, threads, generic_only=choice == "generic")
        except _decoder.NotInFamily as e:
            info = {"kind": "per-layer", "key": None,
                    "reason": f"not a Llama-family decoder the fused step covers: {e}"}
        else:
            _decoder.attach(model, dec, threads)
            info = dict(dec.info)
    _status.record_decoder(info)
    return info


def _replace(model, name, new):
    parent_name, _, attr = name.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    setattr(parent, attr, new)


DECODER_CHOICES = ("auto", "generic", "off")


def optimize(model, mode="high", *, threads=None, group_size=32, inplace=False, scheme=None,
             decoder="auto", exact_blocks=True, activations="float"):
    """Returns `model` with its nn.Linear layers running Kwker's kernels in `mode`:

    "high"   float32 weights and results (differences from torch only from summation order)
    "medium" bfloat16 weights, float32 accumulation
    "int8"   int8 weights, one scale per block of 32 along K (GGUF Q8_0); scheme="per_channel"
             for one scale per output row
    "int4"   4-bit weights in groups of `group_size` with a scale and a minimum (GGUF Q4_1);
             scheme="q4_0" for the symmetric Q4_0 form

    A copy is optimized unless inplace=True (which saves a copy's memory). threads: the most
    threads each layer uses (None: Kwker's budget, kwker.set_max_threads). With KWKER_DISABLE=1
    the model comes back unchanged (a DisabledWarning, once per process); when the compiled
    operators do not match this torch, unchanged too, with a one-line notice on stderr (python
    -m kwker doctor says why).

    decoder: for Llama-family causal LMs (Llama, Mistral, Qwen2, SmolLM), "auto" runs each
    generated token as one native call: a decoder package compiled for the architecture, mode
    and engine and cached in KWKER_CACHE_DIR/decoder (the generic precompiled step where no C++
    compiler runs); "generic" always takes the precompiled step; "off" keeps per-layer kernels.
    model._kwker_cpu_backend["decoder"] says what ran and why.

    exact_blocks ("high" only): a layer whose float32 weights are exactly GGUF Q4_1 / Q8_0 / Q4_0
    blocks (as transformers dequantises a GGUF file) is stored as those blocks, 24 or 36 bytes
    per 32 weights instead of 128, with the same results bit for bit (the kernels rebuild the
    same float32 weights), and one whose weights are each exactly a float16 (an F16 file, a
    float16 checkpoint loaded as float32) as float16, half the bytes, again with float32's
    results bit for bit; False keeps every layer in float32. model._kwker_cpu_backend["storage"]
    counts the layers of each storage.

    activations (int8 / int4): "float" (default) keeps x in float32 in the decode step (fewer
    than 16 rows) and quantises it per 32-block to int8 for prompts; "int8" quantises it in the
    decode step too (W8A8 / W4A8, llama.cpp's scheme): byte multiply-adds, about 1.3-1.8x the
    decode speed on AVX2, at the prompt kernels' accuracy (docs/cpu-backend.md).
    """
    torch = INTEGRATION.require("torch", "optimize()")
    group, scheme = check_options(mode, group_size, scheme, threads)
    check_activations(activations, mode)
    check_decoder(decoder)
    if not isinstance(exact_blocks, bool):
        raise TypeError(f"kwker.cpu_backend.optimize: exact_blocks must be True or False (got "
                        f"{exact_blocks!r})")
    _status.amx_setting()  # a KWKER_AMX typo fails here, before anything is built
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"kwker.cpu_backend.optimize: expected a torch.nn.Module, got "
                        f"{type(model).__name__}")
    if INTEGRATION.off("optimize() and load_gguf() return models unchanged"):
        return model
    available, why = extension.availability()
    if not available:
        print(f"kwker.cpu_backend: {why}; the CPU backend is off and optimize() returns the model "
              "unchanged (see python -m kwker doctor)", file=sys.stderr)
        return model
    INTEGRATION.install()
    layers = linear_layers(model)
    if not layers:
        raise ValueError(f"kwker.cpu_backend.optimize: {type(model).__name__} has no "
                         "torch.nn.Linear layers, so there is nothing to optimize (the CPU "
                         "backend replaces linear layers)")
    for name, lin in layers:
        if lin.weight.device.type != "cpu" or not lin.weight.dtype.is_floating_point:
            raise ValueError(f"kwker.cpu_backend.optimize: layer {name!r} holds "
                             f"{lin.weight.dtype} weights on {lin.weight.device}; the CPU backend "
                             "takes floating-point weights on the CPU (model.to('cpu'))")
    from ._linear import KwkerLinear
    target = model if inplace else copy.deepcopy(model)
    t = 0 if threads is None else threads
    with torch.no_grad():
        new = {name: KwkerLinear.from_linear(target.get_submodule(name), mode=mode, group=group,
                                             threads=t, scheme=scheme,
                                             exact_blocks=exact_blocks, activations=activations)
               for name, _ in layers}
    for name, mod in new.items():
        _replace(target, name, mod)
    # "medium": a prompt's attention in bfloat16 where its linear inputs are (_attention.py).
    wrapped = _attention.install(target) if mode == "medium" else None
    info = decoder_for(target, t, decoder)  # may move "high" layers to one storage
    storage = {}
    for name, _ in layers:
        kind = getattr(target.get_submodule(name), "storage", None) or mode
        storage[kind] = storage.get(kind, 0) + 1
    target._kwker_cpu_backend = {"mode": mode, "group_size": group, "scheme": scheme,
                                 "activations": activations,
                                 "layers": len(new), "storage": storage, "decoder": info,
                                 "prompt_attention": (
                                     f"bfloat16 where the prompt kernel rounds x (wraps "
                                     f"{wrapped!r})" if wrapped else "the model's own")}
    _status.record_optimized(mode, len(new))
    return target
