"""The CPU backend's declaration in the integration contract (kwker._integrations), and its state
for status() and the doctor. Imports no torch, so the doctor can read it from any process.

AMX: Linux grants the AMX tile state per process (arch_prctl ARCH_REQ_XCOMP_PERM, Linux 5.16+).
The avx512 engine's prompt kernels (16 rows and more: "medium", int8, int4) use AMX tiles where
the CPU has them, Linux grants them and KWKER_AMX is not 0 (the library asks for the permission
itself); status() reports what the CPU and the kernel offer, and the kernel each mode's prompt
and decode calls run (kwker_linear_kernel), so the doctor can say why AMX is off.
"""
import ctypes
import functools
import os

from kwker import _integrations
from kwker._torch import extension
from kwker._torch import linear as _linear

NAME = "cpu_backend"
AMX_ENV = "KWKER_AMX"
_VALID_AMX = ("", "0", "1")

_SYS_ARCH_PRCTL = 158          # x86-64
_ARCH_REQ_XCOMP_PERM = 0x1023
_XFEATURE_XTILEDATA = 18

_state = {"optimized_models": 0, "layers": 0, "last_mode": None, "decoder": None}


def amx_setting():
    """KWKER_AMX as given: "" (unset), "0" or "1"; anything else is rejected with the fix."""
    value = os.environ.get(AMX_ENV, "")
    if value not in _VALID_AMX:
        raise ValueError(f"{AMX_ENV}={value!r} is not valid: set {AMX_ENV}=0 to keep the CPU "
                         f"backend off AMX, or unset it")
    return value


@functools.lru_cache(maxsize=None)
def _amx_permission():
    """(granted, why): asks the kernel for the AMX tile state once per process."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        rc = libc.syscall(_SYS_ARCH_PRCTL, _ARCH_REQ_XCOMP_PERM, _XFEATURE_XTILEDATA)
    except (OSError, AttributeError) as e:
        return False, f"arch_prctl could not be called ({e})"
    if rc == 0:
        return True, "granted by arch_prctl"
    err = ctypes.get_errno()
    return False, (f"arch_prctl(ARCH_REQ_XCOMP_PERM) failed with {os.strerror(err)} (Linux older "
                   "than 5.16, or a sandbox blocking it)")


def amx_status(cpu_features, kernels=None):
    """{"cpu", "on", "permission", "reason"} for the doctor's amx-off rule."""
    has = bool(cpu_features.get("amx"))
    out = {"cpu": has, "on": False, "kernels_built": False, "permission": None, "reason": None}
    if not has:
        out["reason"] = "this CPU has no AMX"
        return out
    try:
        setting = amx_setting()
    except ValueError as e:
        out["reason"] = str(e)
        return out
    if setting == "0":
        out["reason"] = "KWKER_AMX=0 is set"
        return out
    granted, why = _amx_permission()
    out["permission"] = why
    out["kernels_built"] = True
    kernels = linear_kernels() if kernels is None else kernels
    out["on"] = granted and any(k.startswith("amx") for k in kernels.get("prompt", {}).values())
    if not granted:
        out["reason"] = why
    elif not out["on"]:
        out["reason"] = (f"the selected engine ({kernels.get('engine')}) has no AMX kernels; "
                         "they run on the avx512 engine (check KWKER_ISA)")
    return out


# The modes (in the order of the C library's mode codes) and activation settings: kwker._torch's,
# shared with the compile backend (that module imports no torch).
MODES, ACTIVATIONS = _linear.MODES, _linear.ACTIVATIONS

# A prompt's row count for the query: far above the library's own threshold (kLinPromptRows,
# 16), which the library alone decides.
PROMPT_ROWS = 1 << 16


_kernel_fn = []


def kernel_fn():
    """The C library's kwker_linear_kernel(mode, rows) (loaded once), or None when the library
    is too old to have it."""
    if not _kernel_fn:
        try:
            from kwker import _locate
            fn = ctypes.CDLL(_locate.library_path()).kwker_linear_kernel
        except (OSError, AttributeError, ImportError):
            return None
        fn.restype, fn.argtypes = ctypes.c_char_p, [ctypes.c_int, ctypes.c_int64]
        _kernel_fn.append(fn)
    return _kernel_fn[0]


def linear_kernels():
    """{"engine", "decode": {mode: kernel}, "prompt": {mode: kernel}}: what kwker_linear runs
    now for one row and for a prompt (kwker_linear_kernel; {} when the library is too old)."""
    fn = kernel_fn()
    if fn is None:
        return {}
    out = {"decode": {m: fn(i, 1).decode() for i, m in enumerate(MODES)},
           "prompt": {m: fn(i, PROMPT_ROWS).decode() for i, m in enumerate(MODES)}}
    out["engine"] = out["decode"]["high"]
    return out


def _amx_with_backend(amx, available, why):
    """AMX is off for the backend when the backend itself is off (mismatched torch extensions)."""
    if amx.get("on") and not available:
        amx = dict(amx, on=False, reason=f"the CPU backend is off: {why}")
    return amx


def _decoder_packages():
    """Whether decoder packages can be compiled here, and what the fused decode step did in
    this process (kwker.cpu_backend._package: no torch, so the doctor can ask)."""
    from . import _package
    stats = _package.stats()
    cmd, why = _package.compiler()
    return {"compiler": " ".join(cmd) if cmd else None, "compiler_reason": why,
            "compiled": stats["compiled"], "loaded": stats["loaded"],
            "generic": stats["generic"], "rebuilt": stats["rebuilt"], "last": _state["decoder"]}


def record_optimized(mode, layers):
    """optimize() / load_gguf() converted a model with `layers` linear layers in `mode`."""
    _state["optimized_models"] += 1
    _state["layers"] += layers
    _state["last_mode"] = mode


def record_decoder(info):
    """What the last model's decode step runs ({"kind", "key", "reason"})."""
    _state["decoder"] = info


def _report():
    """The CPU backend's own fields: whether its compiled operators load into this torch, the
    engine and CPU features its kernels use, AMX, and what optimize() did in this process."""
    from kwker import _runtime
    available, why = extension.availability()
    info = {}
    try:
        info = _runtime.runtime_info()
    except Exception:  # the doctor must never fail on a status query
        pass
    feats = info.get("cpu", {}).get("features", {})
    kernels = linear_kernels()
    return {
        "available": available,
        "reason": why or None,
        "engine": info.get("engines", {}).get("selected"),
        "vnni": bool(feats.get("avx512_vnni") or feats.get("avx_vnni")),
        "bf16": bool(feats.get("avx512_bf16")),
        "amx": _amx_with_backend(amx_status(feats, kernels), available, why),
        "linear_kernels": kernels,
        "decoder_packages": _decoder_packages(),
        **_state,
    }


def _summary(s):
    if not s.get("available"):
        return f"off: {s.get('reason')}"
    amx = s.get("amx") or {}
    return (f"engine {s.get('engine')}; AMX {'on' if amx.get('on') else 'off'}; "
            f"{s.get('optimized_models', 0)} model(s) optimized in this process")


def _install():
    from kwker._torch import ops
    ops.compiled()      # the linear operator; status() and the doctor then say it is in use


# optimize() and load_gguf() install it (loading the compiled operators); there is nothing
# process-wide to undo (a loaded library stays loaded, and optimized models are the caller's).
INTEGRATION = _integrations.register(
    NAME, _install, None, framework=("torch", "transformers", "gguf"), extra="llm",
    extras={"torch": "torch"},
    report=_report, summary=_summary)


def status():
    """The CPU backend's state (what the doctor shows): the contract's common fields, then
    _report()'s."""
    return INTEGRATION.status()
