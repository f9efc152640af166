"""The CPU backend's linear layers as kwker.cpu_backend.optimize and the compile backend's
CPU-backend modes both build them: the modes, schemes and activation settings, their checks,
the codes the compiled operator takes, and packing a weight (imports no torch until pack()).

The modes are listed in the order of the C library's mode codes (KWKER_LINEAR_HIGH = 0 ... INT4
= 3), so a mode's index is its code.
"""
MODES = ("high", "medium", "int8", "int4")
# activations= of optimize() / load_gguf() / KwkerLinear: "float" (default), or "int8" (the int8 /
# int4 layers quantise x at every row count: W8A8 / W4A8).
ACTIVATIONS = ("float", "int8")
# The quantisation schemes of each mode (the first is the default); quant.py implements them.
SCHEMES = {"int8": ("q8_0", "per_channel"), "int4": ("q4_1", "q4_0")}

MODE_CODES = {m: i for i, m in enumerate(MODES)}
# "high" stored as exact GGUF blocks (kwker.h: KWKER_LINEAR_HIGH_Q4 / _HIGH_Q8; quant.exact_blocks)
# or as exact float16 values (KWKER_LINEAR_HIGH_F16; quant.exact_float16).
STORAGE_CODES = {"exact-q4_1": 4, "exact-q8_0": 5, "float16": 8}
# int8 / int4 with activations="int8" (kwker.h: KWKER_LINEAR_INT8_A8 / _INT4_A8: W8A8 / W4A8).
A8_CODES = {"int8": 6, "int4": 7}
# Added to an int4 code (float or int8 activations, group 32) whose blocks are GGUF Q4_0's
# (quant.q4_0_blocks): kwker.h's KWKER_LINEAR_Q4_0 layout, GGUF's own 18 bytes per 32 weights
# instead of 24, with the same results bit for bit.
Q4_0_FLAG = 16


def check_mode(mode, where="optimize"):
    if mode not in MODES:
        raise ValueError(f"kwker.cpu_backend.{where}: unknown mode {mode!r}; use one of "
                         f"{', '.join(repr(m) for m in MODES)} (\"high\" = float32)")
    return mode


def check_options(mode, group_size, scheme, threads, where="optimize"):
    """(group, scheme) as the kernels take them, or ValueError naming the bad option and the fix."""
    check_mode(mode, where)
    if mode == "int4":
        if (isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 32
                or group_size % 32 or group_size > 4096):
            raise ValueError(f"kwker.cpu_backend.{where}: int4 group_size={group_size!r} does not "
                             "divide into the kernels' 32-element blocks; use a multiple of 32 up "
                             "to 4096 (32 = GGUF Q4_0/Q4_1, 64, 128)")
    if scheme is not None:
        allowed = SCHEMES.get(mode, ())
        if scheme not in allowed:
            raise ValueError(f"kwker.cpu_backend.{where}: scheme {scheme!r} is not one of mode "
                             f"{mode!r}'s ({', '.join(allowed) or 'none: leave scheme=None'})")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)
                                or threads < 1):
        raise ValueError(f"kwker.cpu_backend.{where}: threads must be an int >= 1, or None for "
                         f"Kwker's thread budget (got {threads!r})")
    return (group_size if mode == "int4" else 32), (scheme or (SCHEMES[mode][0]
                                                               if mode in SCHEMES else None))


def pack(weight, mode, scheme, group):
    """The float weight [n, k] quantised in `mode` and packed for the linear kernels (a uint8
    tensor kwker_torch::linear takes with MODE_CODES[mode])."""
    from . import ops, quant
    values, scales, mins = quant.quantize(weight, mode, scheme, group)
    return ops.compiled().linear_pack(MODE_CODES[mode], values, scales, mins, group)
