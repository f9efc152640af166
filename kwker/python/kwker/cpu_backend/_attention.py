"""The prompt's attention in "medium" mode, in bfloat16 like the prompt's linear layers.

Where the library's "medium" prompt kernel rounds x to bfloat16 (amx-bf16 or avx512-bf16, from
16 rows), a prompt's attention spends most of the prefill time the linear layers no longer do:
torch's float32 attention took about twice its bfloat16 attention on the 2-core Xeon with AMX.
So a Hugging Face model optimized in "medium" runs its attention through this wrapper: for the
same calls whose linear inputs are rounded (batch x query length >= 16 rows, and the prompt
kernel rounds), q, k and v are rounded to bfloat16, the model's own attention implementation
runs on them (torch's bfloat16 SDPA accumulates in float32) and its output comes back as float32;
otherwise the model's attention runs unchanged. KWKER_AMX=0 (or KWKER_ISA below avx512) gives
the float kernels back for the linears and float32 attention with them, in one setting.

The wrapper is registered through transformers' AttentionInterface (the documented way to add an
attention implementation), so it applies to any model that dispatches through it; the model's
previous implementation is kept on each attention module (`_kwker_inner_attention`).
"""
from . import _status

NAME = "kwker_medium_bf16"
ROUNDING_KERNELS = ("amx-bf16", "avx512-bf16")
_MEDIUM = _status.MODES.index("medium")  # its C mode code


def rounds_prompt(rows=_status.PROMPT_ROWS):
    """Whether a "medium" linear call of `rows` rows rounds x to bfloat16 now: the library
    decides (its prompt kernels start at 16 rows; KWKER_AMX is read at every call)."""
    fn = _status.kernel_fn()
    name = fn(_MEDIUM, rows) if fn is not None else None
    return (name.decode() if name else "") in ROUNDING_KERNELS


def _inner(module):
    """The attention function the model used before optimize(): by name from transformers'
    registry, or the model file's own eager_attention_forward for "eager"."""
    from importlib import import_module

    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
    name = getattr(module, "_kwker_inner_attention", "sdpa")
    eager = getattr(import_module(type(module).__module__), "eager_attention_forward", None)
    if name == "eager" and eager is not None:
        return eager
    return ALL_ATTENTION_FUNCTIONS.get_interface(name, eager)


def _attention(module, query, key, value, attention_mask, **kwargs):
    import torch
    inner = _inner(module)
    if query.dtype != torch.float32 or not rounds_prompt(query.shape[0] * query.shape[-2]):
        return inner(module, query, key, value, attention_mask, **kwargs)
    bf = torch.bfloat16
    mask = attention_mask
    if mask is not None and mask.dtype == torch.float32:
        mask = mask.to(bf)  # additive 0 / -inf masks are exact in bfloat16
    out, weights = inner(module, query.to(bf), key.to(bf), value.to(bf), mask, **kwargs)
    return out.to(torch.float32), None if weights is None else weights.to(torch.float32)


def install(model):
    """Routes `model`'s attention through the wrapper; returns the implementation it wraps, or
    None where the model does not dispatch through transformers' AttentionInterface."""
    config = getattr(model, "config", None)
    inner = getattr(config, "_attn_implementation", None)
    if inner is None or not hasattr(model, "set_attn_implementation"):
        return None
    if inner == NAME:  # an optimized model optimized again: keep what it wrapped
        return getattr(model, "_kwker_inner_attention", "sdpa")
    try:
        from transformers import AttentionInterface
        from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
    except ImportError:
        return None
    if inner != "eager" and inner not in ALL_ATTENTION_FUNCTIONS.valid_keys():
        return None  # an implementation this wrapper cannot call by name (e.g. a hub kernel)
    AttentionInterface.register(NAME, _attention)
    for mod in model.modules():
        if hasattr(mod, "layer_idx") and hasattr(mod, "config"):
            mod._kwker_inner_attention = inner
    model._kwker_inner_attention = inner
    model.set_attn_implementation(NAME)
    if model.config._attn_implementation != NAME:
        return None
    return inner
