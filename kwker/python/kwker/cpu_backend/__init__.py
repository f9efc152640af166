"""Kwker's CPU inference backend: a model's linear layers on Kwker's kernels, in float32
("high"), bfloat16 ("medium"), int8 or int4 weights, with the accuracy cost measured.

    import kwker.cpu_backend as cb
    fast = cb.optimize(model, mode="int8")          # a copy; inplace=True changes model itself
    report = cb.check_accuracy(model, ids, mode="int8")
    model = cb.load_gguf("model.gguf")                # GGUF blocks packed as they are

The kernels live in Kwker's C++ core beside the sorts (same engines, same dispatch, KWKER_ISA
caps them) and give identical results on every engine in a given mode. See docs/cpu-backend.md.
Importing this module imports no torch (the doctor reads status() from any process).
"""
from ._status import status  # noqa: F401  (registers the doctor status)
from ._optimize import MODES, optimize  # noqa: F401

__all__ = ["MODES", "optimize", "check_accuracy", "load_gguf", "status"]


def check_accuracy(model, *inputs, mode="high", **options):
    from ._accuracy import check_accuracy as run
    return run(model, *inputs, mode=mode, **options)


check_accuracy.__doc__ = """Runs `model` and optimize(model, mode) on the same inputs and returns
an AccuracyReport (a dict, printed as a table): max abs / rel error, cosine similarity; for
language models (token-id inputs, outputs with logits) the share of positions whose top-1 token
agrees and the perplexity of the given text before and after. See _accuracy.py."""


def load_gguf(path, mode=None, **options):
    from ._gguf import load_gguf as run
    return run(path, mode=mode, **options)


load_gguf.__doc__ = """Loads a GGUF file into a transformers model whose linear layers hold the
file's blocks packed for Kwker's kernels: Q4_0 / Q4_1 -> int4, Q8_0 -> int8, BF16 -> medium,
F32 -> high, F16 -> high (exact; mode="medium" stores bfloat16, lossy). mode= converts every
layer to another mode. decoder= as for optimize() (the fused decode step; "off" keeps per-layer
kernels). activations="auto" (the default): layers that keep the file's Q8_0 / Q4_0 / Q4_1
blocks quantise x per 32-block in the decode step too (W8A8 / W4A8, the scheme llama.cpp runs
these formats in), layers mode= re-quantises keep float x; "float" keeps x float32 everywhere
(weight-only), "int8" quantises x for every int8 / int4 layer. See _gguf.py."""
