"""Runtime controls: engine (ISA), thread budget, scratch memory, optional algorithms.

All of them are process-wide settings held by libkwker, shared by both backends.
"""
import contextlib
import json
import operator

from . import _backend
from ._errors import E_SELF_CHECK_FAILED, OK, exception_for

ENGINES = ("portable", "sse4.2", "avx2", "avx512")
ALGORITHMS = {"adaptive": 0, "radix": 1, "parallel": 2, "presorted": 4}
_OPTIONAL_MASK = 7


def _engine_name(name, func):
    if not isinstance(name, str):
        raise TypeError(f"kwker.{func}: engine name must be a str, got {type(name).__name__}")
    return name


def available_isas():
    """The engines this CPU runs, in the order portable, sse4.2, avx2, avx512 (best last)."""
    impl = _backend.impl
    return [e for e in ENGINES if impl.isa_supported(e)]


def set_isa(name):
    """Use engine `name` for every later call; None restores the best engine and ignores
    KWKER_ISA from then on."""
    if name is not None:
        _engine_name(name, "set_isa")
    try:
        _backend.impl.set_isa(name)
    except ValueError as exc:
        msg = str(exc)
        runs = available_isas()
        if not all(e in msg for e in runs):
            msg = f"{msg} (engines this CPU runs: {', '.join(runs)})"
        raise ValueError(msg) from None


def get_isa():
    """The engine in use: 'portable', 'sse4.2', 'avx2' or 'avx512'."""
    return _backend.impl.get_isa()


def _positive_int(value, what):
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{what} must be an int, got {type(value).__name__}")
    return operator.index(value)


def set_max_threads(n):
    """Cap the threads every sort may use (n >= 1)."""
    n = _positive_int(n, "kwker.set_max_threads: n")
    if n < 1:
        raise ValueError(f"kwker.set_max_threads: n must be >= 1, got {n}")
    _backend.impl.set_max_threads(min(n, 2**31 - 1))


def get_max_threads():
    """The effective thread budget (the cap, else what affinity and cgroups allow)."""
    return _backend.impl.get_max_threads()


def set_scratch_policy(*, cache_bytes):
    """Keep up to cache_bytes of scratch memory cached between calls (0: free after each)."""
    n = _positive_int(cache_bytes, "kwker.set_scratch_policy: cache_bytes")
    if n < 0:
        raise ValueError(f"kwker.set_scratch_policy: cache_bytes must be >= 0, got {n}")
    _backend.impl.set_scratch_cache(n)


def release_scratch():
    """Free the cached scratch memory now."""
    _backend.impl.release_scratch()


def set_scratch_limit(nbytes):
    """Cap scratch memory per call: None = unlimited, 0 = in-place algorithms only."""
    if nbytes is None:
        n = -1
    else:
        n = _positive_int(nbytes, "kwker.set_scratch_limit: nbytes")
        if n < 0:
            raise ValueError(f"kwker.set_scratch_limit: nbytes must be >= 0 or None "
                             f"(unlimited), got {n}")
    _backend.impl.set_scratch_limit(n)


def _algorithm_mask(names):
    if isinstance(names, str):
        raise TypeError("kwker.set_algorithms takes a set of names, e.g. "
                        "{'adaptive', 'radix'}, not a single string")
    names = set(names)
    unknown = sorted(str(n) for n in names if n not in ALGORITHMS)
    valid = ", ".join(repr(n) for n in ALGORITHMS)
    if unknown:
        raise ValueError(f"kwker.set_algorithms: unknown algorithm name(s) "
                         f"{', '.join(map(repr, unknown))}; valid names: {valid}")
    if "adaptive" not in names:
        raise ValueError("kwker.set_algorithms: 'adaptive' is always on and must be in the "
                         f"set; valid names: {valid}")
    mask = 0
    for n in names:
        mask |= ALGORITHMS[n]
    return mask


def set_algorithms(names):
    """Enable exactly these algorithm paths ('adaptive' required; 'radix', 'parallel',
    'presorted' optional)."""
    _backend.impl.set_algorithms(_algorithm_mask(names))


def get_algorithms():
    """{'available': [...all names...], 'enabled': [...names switched on...]}."""
    mask = _backend.impl.get_algorithms()
    enabled = [n for n, bit in ALGORITHMS.items() if bit == 0 or mask & bit]
    return {"available": list(ALGORITHMS), "enabled": enabled}


# The engines' algorithm thresholds (runtime/tuning.h, docs/design.md). Results never depend on
# them, only speed; they are set by kwker/bench/thresholds.py to measure the crossovers.
TUNING_KNOBS = (
    "sort_network_max_16", "sort_network_max_32", "sort_network_max_64",
    "sort_pair_min_16", "sort_pair_max_16", "sort_pair_min_32", "sort_pair_max_32",
    "sort_pair_min_64", "sort_pair_max_64",
    "argsort_network_max_16", "argsort_network_max_32", "argsort_network_max_64",
    "sort_tiny_max", "argsort_tiny_max", "presorted_min", "count16_sort_min",
    "count16_argsort_min", "radix64_argsort_max_bits", "sort_float_min_32",
    "sort_float_min_64", "sort_float_max_32", "sort_float_max_64", "sort_float_pair_min_32",
    "sort_float_pair_min_64", "sort16_compress_min", "radix64_argsort_min",
    "radix32_pairs_min", "sort_float_rows_max")


def get_tuning(name):
    """The value of tuning knob `name` in effect for the current engine."""
    return _backend.impl.get_tuning(name)


def set_tuning(name, value):
    """Override knob `name` for every engine; None restores the engines' measured defaults."""
    _backend.impl.set_tuning(name, -1 if value is None else int(value))


@contextlib.contextmanager
def tuning(**knobs):
    """Override knobs inside a with-block; the defaults come back afterwards. An unknown knob
    or a bad value raises before the block runs, with the knobs set before it restored."""
    done = []
    try:
        for name, value in knobs.items():
            set_tuning(name, value)
            done.append(name)
        yield
    finally:
        for name in done:
            set_tuning(name, None)


def runtime_info():
    """The library's runtime report (kwker.runtime_info schema, version 1) as a dict."""
    return json.loads(_backend.impl.runtime_info())


def reset_counters():
    """Zero the per-engine call counters reported in runtime_info()['counters']."""
    _backend.impl.reset_counters()


def self_check(engine):
    """Run `engine` on the library's fixed battery against the scalar reference.

    Returns the report dict ('ok' False when a case mismatched). Raises ValueError when the
    engine cannot run on this CPU."""
    _engine_name(engine, "self_check")
    impl = _backend.impl
    status, text = impl.self_check(engine)
    if status not in (OK, E_SELF_CHECK_FAILED):
        raise exception_for(status, impl.last_error())
    report = json.loads(text)
    if status == E_SELF_CHECK_FAILED:
        report["ok"] = False
    return report


_UNSET = object()


def _snapshot():
    info = runtime_info()
    return {
        "isa": (info["isa_cap"]["source"], info["engines"]["selected"]),
        "max_threads": info["threads"]["max_threads"],
        "budget": info["threads"]["budget"],
        "algorithms": _backend.impl.get_algorithms(),
        "scratch_limit": info["scratch"]["limit_bytes"],
        "scratch_cache": info["scratch"]["cache_limit_bytes"],
    }


def _clear_max_threads(budget):
    # The header documents n >= 1 only; 0 is asked to mean "no cap" (see the report to the
    # lead). A library that refuses 0 gets the budget as an explicit cap instead.
    try:
        _backend.impl.set_max_threads(0)
    except ValueError:
        _backend.impl.set_max_threads(budget)


def _restore(state):
    impl = _backend.impl
    source, selected = state["isa"]
    if source is None:
        impl.set_isa(None)
    else:  # set_isa or KWKER_ISA: pin the engine that was selected
        impl.set_isa(selected)
    if state["max_threads"] is not None:
        impl.set_max_threads(state["max_threads"])
    else:
        _clear_max_threads(state["budget"])
    impl.set_algorithms(state["algorithms"])
    impl.set_scratch_limit(state["scratch_limit"])
    impl.set_scratch_cache(state["scratch_cache"])


@contextlib.contextmanager
def config(*, isa=_UNSET, max_threads=_UNSET, algorithms=_UNSET, scratch_limit=_UNSET,
           scratch_cache=_UNSET):
    """Apply runtime controls inside a `with` block and restore the previous state on exit.

    Options not given are left as they are. The settings are process-wide: other threads
    see them while the block runs."""
    state = _snapshot()
    try:
        if isa is not _UNSET:
            set_isa(isa)
        if max_threads is not _UNSET:
            if max_threads is None:
                _clear_max_threads(state["budget"])
            else:
                set_max_threads(max_threads)
        if algorithms is not _UNSET:
            set_algorithms(algorithms)
        if scratch_limit is not _UNSET:
            set_scratch_limit(scratch_limit)
        if scratch_cache is not _UNSET:
            set_scratch_policy(cache_bytes=scratch_cache)
        yield
    finally:
        _restore(state)

