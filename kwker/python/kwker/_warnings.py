"""Doctor warnings: every known reason Kwker may run below its best, each with its cause and fix.

A warning is a rule over *facts*. `facts()` gathers the facts from the running process (probes
never raise); `evaluate(facts)` applies every registered rule. Tests replace facts the machine
cannot produce (CPU flags, the torch version, the GIL state...) and keep the rules as they are.
Later integrations (PyTorch operators, the CPU backend) report their state through
`register_status(name, fn)`, which the torch and AMX rules read.
"""
import os
import platform
import sys
import sysconfig

ENGINES = ("portable", "sse4.2", "avx2", "avx512")

_STATUS = {}  # integration name -> callable returning its status dict
_RULES = []   # (id, fn(facts) -> str | None, fix)


def register_status(name, fn):
    """An integration reports its state (e.g. {"built_for_torch": "2.13"}) for the doctor."""
    _STATUS[name] = fn


def rule(rule_id, fix):
    def deco(fn):
        _RULES.append((rule_id, fn, fix))
        return fn
    return deco


def _safe(fn, default=None):
    try:
        return fn()
    except Exception:
        return default


def _statuses():
    return {name: _safe(fn, {}) for name, fn in _STATUS.items()}


def _torch_version():
    import importlib.metadata as md
    return _safe(lambda: md.version("torch"))


def facts(runtime, backend, self_check=None):
    """The inputs of every rule, read from this process. `self_check` is the doctor's
    per-engine self-check report, when it ran one."""
    f = {
        "machine": platform.machine(),
        "runtime": runtime or {},
        "backend": backend,
        "torch_version": _torch_version(),
        "status": _statuses(),
        "kernel": platform.release(),
        "free_threaded_build": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
        "gil_enabled": _safe(lambda: sys._is_gil_enabled(), True),
        "environ": {k: v for k, v in os.environ.items() if k.startswith("KWKER_")},
        "self_check": self_check or {},
        "backend_fallback": _safe(_fallback_reason),
        "overhead": None,
    }
    if backend != "fast":  # only the fast-path rule needs it; it costs ~20 ms
        from . import _overhead
        f["overhead"] = _safe(_overhead.measure)
    return f


def _fallback_reason():
    from . import _backend
    return _backend.fallback_reason


def evaluate(f):
    """[{"id", "message", "fix"}] for every rule that fires; a broken rule reports itself.
    A rule returns its message, or (message, fix) where the fix depends on the facts."""
    out = []
    for rule_id, fn, fix in _RULES:
        try:
            message = fn(f)
        except Exception as exc:
            message, fix = f"this check failed ({type(exc).__name__}: {exc})", "report it"
        if isinstance(message, tuple):
            message, this_fix = message
        else:
            this_fix = fix
        if message:
            out.append({"id": rule_id, "message": message, "fix": this_fix})
    return out


@rule("self-check-failed", "Use an engine that passed until this is fixed (KWKER_ISA=<engine> "
                           "or kwker.set_isa), and please report it with "
                           "python -m kwker support-bundle.")
def _self_check_failed(f):
    checks = f["self_check"]
    if not isinstance(checks, dict) or "error" in checks:
        return None
    bad = [e for e, r in checks.items() if isinstance(r, dict) and r.get("ok") is not True]
    if not bad:
        return None
    good = [e for e, r in checks.items() if isinstance(r, dict) and r.get("ok") is True]
    which = "engine " + bad[0] if len(bad) == 1 else "engines " + ", ".join(bad)
    message = (f"the self-check of {which} gave wrong results or failed to run: do not trust "
               "sorts on " + ("it" if len(bad) == 1 else "them"))
    if good:
        fix = (f"Use an engine that passed until this is fixed: KWKER_ISA={good[-1]} (or "
               f"kwker.set_isa({good[-1]!r})), and please report it with "
               "python -m kwker support-bundle.")
        return message, fix
    return message, ("No engine passed: please report it with python -m kwker support-bundle "
                     "and use numpy.sort meanwhile.")


@rule("engine-capped", "Unset KWKER_ISA, or call kwker.set_isa(None).")
def _engine_capped(f):
    eng = f["runtime"].get("engines", {})
    cap = f["runtime"].get("isa_cap", {})
    selected, supported = eng.get("selected"), eng.get("supported") or []
    if not selected or not supported or selected == supported[-1]:
        return None
    if selected == eng.get("default"):  # e.g. avx512 not validated yet: not a user's cap
        return None
    source = {"KWKER_ISA": "KWKER_ISA in the environment",
              "set_isa": "a kwker.set_isa(...) call"}.get(cap.get("source"), "a cap")
    return (f"the engine is capped at {selected} by {source} although this CPU runs "
            f"{supported[-1]}")


@rule("no-avx2", "On a VM, ask for a CPU model that passes AVX2 / AVX-512 through "
                 "(\"host-passthrough\"); results are correct but slower.")
def _no_avx2(f):
    if f["machine"] not in ("x86_64", "AMD64"):
        return None
    cpu = f["runtime"].get("cpu", {}).get("features", {})
    if cpu.get("avx2", True):
        return None
    engine = "sse4.2" if cpu.get("sse4.2") else "portable"
    return (f"this x86-64 CPU has no AVX2: Kwker is using its {engine} engine. This happens "
            "on pre-2013 CPUs, low-power cores, and virtual machines that hide CPU features "
            "(some hypervisor CPU models, emulators, -cpu qemu64)")


@rule("torch-ops-version", "Install the Kwker wheel built for your torch (its version ends in "
                           "+torch2.M), or the torch version the wheel names.")
def _torch_ops_version(f):
    built = f["status"].get("torch_ops", {}).get("built_for_torch")
    have = f["torch_version"]
    if not built or not have:
        return None
    if have.split("+")[0].split(".")[:2] == built.split(".")[:2]:
        return None
    return (f"the compiled PyTorch operators were built for torch {built}, not {have}; the "
            "Python-registered operators stay, the drop-in kernels and the CPU backend are off "
            "(optimize() returns models unchanged; torch.compile(backend=\"kwker\") with a "
            "CPU-backend mode compiles in float32)")


@rule("torch-ops-mismatch", "Nothing is wrong in your results (torch's own kernels run); "
                            "please report it with python -m kwker support-bundle. "
                            "KWKER_SELF_CHECK=force re-runs the check after an upgrade.")
def _torch_ops_mismatch(f):
    off = f["status"].get("torch_ops", {}).get("self_check_failed") or []
    if not off:
        return None
    return ("these PyTorch overrides differ from this torch's own kernels and stay off: "
            + ", ".join(sorted(off)))


@rule("amx-off", "Use Linux 5.16 or newer, allow arch_prctl in the sandbox, unset KWKER_AMX=0, "
                 "or install matching torch extensions; int8/int4 decode still runs on AVX-512.")
def _amx_off(f):
    amx = f["status"].get("cpu_backend", {}).get("amx")
    if not f["runtime"].get("cpu", {}).get("features", {}).get("amx") or amx is None:
        return None
    if amx.get("on"):
        return None
    reason = amx.get("reason") or "unknown reason"
    if f["environ"].get("KWKER_AMX") == "0":
        reason = "KWKER_AMX=0 is set"
    return f"the CPU has AMX but the CPU backend's AMX kernels are off ({reason})"


@rule("decoder-generic", "Install a C++ compiler (e.g. apt install g++) or point CXX at one; "
                        "packages are compiled once per model and cached in KWKER_CACHE_DIR. "
                        "Results are the same either way.")
def _decoder_generic(f):
    dp = f["status"].get("cpu_backend", {}).get("decoder_packages") or {}
    last = dp.get("last") or {}
    if last.get("kind") == "generic" and "was asked for" not in (last.get("reason") or ""):
        why = last.get("reason")
    elif isinstance(dp, dict) and dp.get("compiler_reason") and "compiler" in dp \
            and dp["compiler"] is None:
        why = dp["compiler_reason"]
    else:
        return None
    return ("the CPU backend's decode step runs its generic precompiled kernels, not a decoder "
            f"package specialised for the model ({why})")


@rule("cpu-subset", "Usually what you want; check taskset -p $$ or your container's CPU "
                    "settings if it is not.")
def _cpu_subset(f):
    th = f["runtime"].get("threads", {})
    total, aff, cg = th.get("hardware"), th.get("affinity"), th.get("cgroup_limit")
    if not total:
        return None
    usable = min(x for x in (aff or total, cg or total) if x)
    if usable >= total:
        return None
    limit = ("a CPU affinity mask" if aff and aff < total else "a container CPU limit")
    n = int(usable) if float(usable).is_integer() else usable
    return f"this process may run on {n} of {total} CPUs ({limit} is in force)"


@rule("fast-path-missing", "The fast path needs CPython 3.11 or newer, or 3.13t; reinstall the "
                           "wheel for this interpreter (only many small calls are affected).")
def _fast_missing(f):
    if f["backend"] == "fast":
        return None
    o = f.get("overhead") or {}
    ctypes_s, fast_s = o.get("ctypes"), o.get("fast")
    cost = ""
    if ctypes_s and fast_s:
        cost = (f", which costs {ctypes_s * 1e6:.1f} us per call here against "
                f"{fast_s * 1e6:.1f} us with _fast (measured now, {o['elements']}-element sort)")
    elif ctypes_s:
        cost = (f", which costs {ctypes_s * 1e6:.1f} us per call here (measured now, "
                f"{o['elements']}-element sort; np.sort takes {o['numpy'] * 1e6:.1f} us)")
    if f["environ"].get("KWKER_BACKEND") == "ctypes":
        message = ("the compiled per-call fast path (_fast) is off because KWKER_BACKEND=ctypes "
                   "is set: calls go through ctypes" + cost)
        fix = ("Unset KWKER_BACKEND to use the fast path"
               + (" (it loads in this environment)." if fast_s else
                  "; if it then fails to load, reinstall the wheel for this interpreter."))
        return message, fix
    message = "the compiled per-call fast path (_fast) is not loaded: calls go through ctypes" + cost
    if f.get("backend_fallback"):
        message += f" ({f['backend_fallback']})"
    return message


@rule("gil-enabled", "Find the module without free-threading support (python -X gil=0 says "
                     "which), or unset PYTHON_GIL=1; Kwker itself runs without the GIL.")
def _gil_enabled(f):
    if not f["free_threaded_build"] or not f["gil_enabled"]:
        return None
    return "free-threaded Python with the GIL enabled"
